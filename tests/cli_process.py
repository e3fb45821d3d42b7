"""`carryd` as a user runs it: a whole process (`python -m carryd.daemon.cli`) with its own
environment, for tests of what a command prints, exits with and leaves behind."""

from __future__ import annotations

import subprocess
import sys


def carryd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Given the command's arguments (and an environment, else this one), run it to the end
    (at most 180 s) and return what it printed and its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
