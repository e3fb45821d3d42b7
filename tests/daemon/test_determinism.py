"""Same input files → byte-identical carry, in any process, with any PYTHONHASHSEED, whatever
order the files were created in (and so whatever order a directory listing returns)."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.daemon.test_carrying import FILES, SECRETS

CLI = [sys.executable, "-m", "carryd.daemon.cli"]


def make_root(root: Path, order: list[str]) -> Path:
    for relative in order:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FILES[relative], encoding="utf-8")
        time.sleep(0.01)  # different mtimes too
    return root


def carryd(root: Path, seed: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run(
        [*CLI, *args, "--root", str(root)],
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )


def test_two_processes_with_different_hash_seeds_write_the_same_bytes(
    tmp_path: Path, use_model: Path
) -> None:
    names = sorted(FILES)
    first = make_root(tmp_path / "a", names)
    second = make_root(tmp_path / "b", list(reversed(names)))
    outputs = []
    for root, seed in ((first, "1"), (second, "4242")):
        indexed = carryd(root, seed, "index")
        assert indexed.returncode == 0, indexed.stderr
        written = carryd(root, seed, "carry")
        assert written.returncode == 0, written.stderr
        outputs.append(
            {
                name: (root / ".carryd" / "carry" / f"{name}.md").read_bytes()
                for name in ("tooling", "webshop")
            }
        )
    for name in ("tooling", "webshop"):
        # The carry names its root (issue 10 item 6: its commands run as written), so two
        # roots differ there and only there; a given root gives the same bytes (below).
        first_text, second_text = (
            out[name].decode("utf-8").replace(str(root), "<root>")
            for out, root in zip(outputs, (first, second), strict=True)
        )
        difference = "".join(
            difflib.unified_diff(
                first_text.splitlines(keepends=True), second_text.splitlines(keepends=True)
            )
        )
        assert first_text == second_text, difference
    webshop = outputs[0]["webshop"].decode("utf-8")
    assert "<recalled_memory>" in webshop  # recall really took part
    for secret in SECRETS:
        assert secret not in webshop
    # --print in a third process, another seed: the same bytes again.
    printed = carryd(first, "777", "carry", "--print", "--workspace", "webshop")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == outputs[0]["webshop"]
