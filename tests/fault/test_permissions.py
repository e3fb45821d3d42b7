"""carryd's state is private to its user whatever the umask: `.carryd/` 0700, the index with
its `-wal`/`-shm`, carries, manifests and state files 0600 (other local users used to read
memory text from a 0644 index in a 0755 folder)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


def run_with_umask(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    def set_umask() -> None:
        os.umask(umask)

    return subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=set_umask,
    )


def test_state_is_private_under_a_permissive_umask(tmp_path: Path, use_model: Path) -> None:
    root = tmp_path / "ex"
    shutil.copytree(EXAMPLES, root)
    for command in (["index"], ["carry"]):
        result = run_with_umask(0o000, *command, "--root", str(root))
        assert result.returncode == 0, result.stderr
    state = root / ".carryd"
    modes = {
        str(path.relative_to(root)): path.stat().st_mode & 0o777
        for path in [state, *state.rglob("*")]
    }
    assert modes[".carryd"] == 0o700
    assert {name for name in modes if name.endswith((".md", ".json"))}, "carries were written"
    loose = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (root / name).is_dir() else 0o600)
    }
    assert loose == {}
