"""The fault suite (`pytest -m fault`): carryd under hostile input and a hostile machine.

Every test here is marked `fault` and runs by default (`.ci/run`). `carryd()` drives the real
CLI in a subprocess, as a user or host would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fault)


def carryd(
    *args: str, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Given CLI arguments, run `carryd` (python -m) and return the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
