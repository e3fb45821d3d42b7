"""Freshness follows content, not clocks, and every `next:` that `carryd status` prints is a
command that fixes what it names.

Before: a file with an mtime in 2100 kept its workspace's carry STALE forever while `status`
said to run `carryd carry`, which answered "unchanged"; and plainly editing a note, then
running `carryd index`, left the carry STALE with `next: carryd carry`, which did not clear it
either (only starting the daemon did). Here every `next` is run as printed and the state it
leaves is checked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from tests.fault.conftest import carryd
from tests.fault.helpers import make_root

YEAR_2100 = 4102444800.0
NOT_RUN_HERE = ("run", "service", "status")  # the daemon is another test's; status is the probe


def status(root: Path) -> dict[str, object]:
    result = carryd("status", "--json", "--root", str(root))
    report: dict[str, object] = json.loads(result.stdout)
    return report


def commands_of(step: str) -> list[list[str]]:
    """Given one `next` line, return the carryd commands it names, in order."""
    found = []
    for quoted in re.findall(r"`([^`]+)`", step):
        words = shlex.split(quoted)
        if words and words[0] == "carryd" and words[1] not in NOT_RUN_HERE:
            found.append(words[1:])
    return found


def follow_next(root: Path, rounds: int = 4) -> list[str]:
    """Run the first command of every `next` step until status has none; return the steps
    followed. Each step must be gone after its command ran (it fixed what it named)."""
    followed: list[str] = []
    for _ in range(rounds):
        steps = list(status(root)["next"])  # type: ignore[call-overload]
        if not steps:
            return followed
        step = steps[0]
        commands = commands_of(step)
        assert commands, f"a next step names no command to run: {step!r}"
        result = carryd(*commands[0])
        assert result.returncode == 0, (step, result.stdout, result.stderr)
        after = status(root)["next"]
        assert step not in after, f"{commands[0]} did not fix {step!r}; next is now {after}"  # type: ignore[operator]
        followed.append(step)
    raise AssertionError(f"status still has next steps after {rounds} rounds: {followed}")


def stale(root: Path) -> list[str]:
    return [
        carry["workspace"]
        for carry in status(root)["carries"]  # type: ignore[attr-defined]
        if carry["stale"]
    ]


def test_every_next_fixes_what_it_names_from_a_new_root(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path / "root")
    followed = follow_next(root)
    assert any("carryd index" in step for step in followed), followed
    report = status(root)
    assert report["healthy"], report["problems"]
    assert stale(root) == []


def test_an_edit_then_index_leaves_a_next_that_clears_the_stale_carry(
    tmp_path: Path, use_model: Path
) -> None:
    root = make_root(tmp_path / "root")
    follow_next(root)
    note = root / "proj" / "note-2.md"
    note.write_text(note.read_text() + "\nOne more line about the rollout.\n")
    assert carryd("index", "--root", str(root)).returncode == 0
    assert stale(root) == ["proj"]
    followed = follow_next(root)
    assert followed and all("carryd carry" in step for step in followed), followed
    assert stale(root) == []


def test_a_future_mtime_does_not_keep_a_carry_stale(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path / "root")
    note = root / "ops" / "note-1.md"
    os.utime(note, (YEAR_2100, YEAR_2100))
    follow_next(root)
    assert stale(root) == []
    result = carryd("status", "--root", str(root))
    assert result.returncode == 0, result.stdout
    assert "STALE" not in result.stdout
    # Touched without a change (its mtime moves again): still fresh.
    os.utime(note, (YEAR_2100 + 60, YEAR_2100 + 60))
    assert stale(root) == []
    # A real edit, with the clock still in 2100: stale, and `next` fixes it.
    note.write_text(note.read_text() + "\nThe rollout moved to Friday.\n")
    os.utime(note, (YEAR_2100 + 120, YEAR_2100 + 120))
    assert stale(root) == ["ops"]
    follow_next(root)
    assert stale(root) == []


def test_a_new_file_with_an_old_mtime_makes_the_carry_stale(
    tmp_path: Path, use_model: Path
) -> None:
    """`cp -p` keeps an old mtime: content decides, so the new file still counts."""
    root = make_root(tmp_path / "root")
    follow_next(root)
    copied = root / "proj" / "copied.md"
    copied.write_text("# Copied\n\nA note copied in with its old date.\n")
    os.utime(copied, (1_000_000_000, 1_000_000_000))
    assert stale(root) == ["proj"]
    follow_next(root)
    assert stale(root) == []
