"""Damaged carry files (issue 11, "A damaged carry is injected"): a carry cut short, a garbage
manifest, a carry whose manifest is gone. `carryd status` names the damaged file and exits 1;
the SessionStart hook never injects the damaged bytes (it re-plans the carry and, with no
daemon running, rewrites it); `carryd carry` repairs what it finds. Real index, real model."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import load_settings
from carryd.daemon.layout import check_carry

pytestmark = pytest.mark.fault

REPO = Path(__file__).resolve().parents[2]
_BUILT: dict[str, Path] = {}


def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def ex(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, use_model: Path) -> Path:
    """An indexed and carried copy of examples/memory (built once, copied per test)."""
    if "ex" not in _BUILT:
        built = tmp_path_factory.mktemp("ex") / "ex"
        shutil.copytree(REPO / "examples" / "memory", built)
        assert run("index", "--root", str(built))[0] == 0
        assert run("carry", "--root", str(built))[0] == 0
        _BUILT["ex"] = built
    root = tmp_path / "ex"
    shutil.copytree(_BUILT["ex"], root, symlinks=True)
    return root


def carried_here(root: Path, workspace: str) -> bytes:
    """The carry this copy's writer makes. A carry names its root (issue 10 item 6) and the
    root's path counts against the budget, so a copy's carry is written in the copy."""
    assert run("carry", "--root", str(root))[0] == 0
    carry = (root / ".carryd" / "carry" / f"{workspace}.md").read_bytes()
    assert str(root).encode() in carry
    return carry


def status(root: Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = run("status", "--root", str(root), "--json")
    return code, json.loads(out)


def session_start(root: Path, workspace: str) -> str:
    payload = {"hook_event_name": "SessionStart", "source": "clear", "cwd": f"/src/{workspace}"}
    code, out, _ = run(
        "hook", "claude-code", "session-start", "--root", str(root), stdin=json.dumps(payload)
    )
    assert code == 0
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])


def carry_of(root: Path, workspace: str) -> dict[str, Any]:
    _, report = status(root)
    [carry] = [c for c in report["carries"] if c["workspace"] == workspace]
    return carry


def test_an_intact_carried_root_is_healthy(ex: Path) -> None:
    code, report = status(ex)
    assert {c["workspace"]: c["state"] for c in report["carries"]} == {
        "tooling": "fresh",
        "webshop": "fresh",
    }
    assert code == 0 and report["healthy"], report["problems"]


def test_a_truncated_carry_is_reported_and_never_injected(ex: Path) -> None:
    carry = ex / ".carryd" / "carry" / "tooling.md"
    whole = carried_here(ex, "tooling")
    os.truncate(carry, 100)
    damaged = carry.read_bytes()

    code, report = status(ex)
    assert code == 1 and not report["healthy"]
    [problem] = [p for p in report["problems"] if "tooling" in p]
    assert "damaged" in problem and str(carry) in problem
    assert carry_of(ex, "tooling")["state"] == "damaged"
    code, text, _ = run("status", "--root", str(ex))
    assert code == 1 and "DAMAGED" in text and str(carry) in text

    context = session_start(ex, "tooling")
    assert context.rstrip().split("\n\nFull carry:")[0].encode() != damaged.rstrip()
    assert len(context.encode()) > len(damaged)
    # No daemon runs: the hook rebuilt the file it points at.
    assert carry.read_bytes() == whole
    assert check_carry(load_settings(None, root=str(ex)), "tooling").state == "fresh"
    assert status(ex)[0] == 0


def test_a_garbage_manifest_is_reported_and_the_writer_repairs_it(ex: Path) -> None:
    manifest = ex / ".carryd" / "carry" / "webshop.json"
    manifest.write_bytes(b"\x00garbage{{{" * 10)
    code, report = status(ex)
    assert code == 1
    assert any("webshop" in p and str(manifest) in p for p in report["problems"])
    assert carry_of(ex, "webshop")["state"] == "damaged"

    assert run("carry", "--root", str(ex))[0] == 0
    assert json.loads(manifest.read_text(encoding="utf-8"))["workspace"] == "webshop"
    assert carry_of(ex, "webshop")["state"] == "fresh"
    assert status(ex)[0] == 0


@pytest.mark.parametrize(
    "damage",
    ["manifest_gone", "same_size_other_bytes", "not_utf8", "manifest_of_another_carry"],
)
def test_other_damage_is_caught_and_the_hook_injects_a_current_carry(ex: Path, damage: str) -> None:
    carry = ex / ".carryd" / "carry" / "webshop.md"
    manifest = carry.with_suffix(".json")
    whole = carried_here(ex, "webshop")
    if damage == "manifest_gone":
        manifest.unlink()
    elif damage == "same_size_other_bytes":
        carry.write_bytes(whole[:-10] + b"X" * 10)
    elif damage == "not_utf8":
        carry.write_bytes(b"\xff\xfe" + whole[2:])
    else:
        shutil.copy(ex / ".carryd" / "carry" / "tooling.json", manifest)
    assert carry_of(ex, "webshop")["state"] == "damaged"
    assert status(ex)[0] == 1
    context = session_start(ex, "webshop")
    assert "\ufffd" not in context and "XXXXXXXXXX" not in context
    assert carry.read_bytes() == whole
    assert carry_of(ex, "webshop")["state"] == "fresh"
