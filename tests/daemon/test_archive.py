"""daemon.archive: `carryd plan archive` on temp roots — lossless, idempotent, selective."""

from __future__ import annotations

import argparse
from collections import Counter
from datetime import date
from pathlib import Path

import pytest
from carryd.daemon.carries.archive import archive_plans
from carryd.daemon.cli.commands import cmd_plan
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import Settings
from carryd.daemon.errors import UsageError

PLAN = """\
# PLAN — proj

## 当前状态
- P6 进行中

## 下一步
- plan archive

## 历史
### 2.2.5
- 踩坑：WAL 未 checkpoint
- 踩坑：WAL 未 checkpoint
## 2.2.4
- old

# 附录
tail
"""
NO_HISTORY = "# PLAN\n\n## Now\n- shipping\n"
DAY = date(2026, 9, 10)


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "PLAN.md").write_text(PLAN, encoding="utf-8")
    (root / "quiet").mkdir()
    (root / "quiet" / "PLAN.md").write_text(NO_HISTORY, encoding="utf-8")
    (root / "empty").mkdir()
    (root / ".carryd").mkdir()
    (root / ".carryd" / "PLAN.md").write_text(PLAN, encoding="utf-8")  # never a workspace
    return root


def nonblank(text: str) -> Counter[str]:
    return Counter(line for line in text.splitlines() if line.strip())


def test_archive_moves_history_losslessly_and_is_idempotent(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    settings = Settings(root=str(root))
    results = {r.workspace: r for r in archive_plans(settings, today=DAY)}
    assert sorted(results) == ["empty", "proj", "quiet"]
    moved = results["proj"]
    assert moved.reason == "moved" and moved.changed
    assert moved.moved_blocks == ((9, 14),) and moved.moved_lines == 6
    assert moved.archive_path == "proj/handoff/archive/PLAN-history.md"

    plan = (root / "proj" / "PLAN.md").read_text(encoding="utf-8")
    archive = (root / "proj" / "handoff" / "archive" / "PLAN-history.md").read_text("utf-8")
    assert plan == (
        "# PLAN — proj\n\n## 当前状态\n- P6 进行中\n\n## 下一步\n- plan archive\n\n# 附录\ntail\n"
    )
    assert archive.startswith("## Archived from PLAN.md on 2026-09-10\n\n## 历史\n### 2.2.5\n")
    assert nonblank(PLAN) - (nonblank(plan) + nonblank(archive)) == Counter()  # nothing lost
    assert (root / ".carryd" / "PLAN.md").read_text("utf-8") == PLAN

    assert results["quiet"].reason == "no_history"
    assert (root / "quiet" / "PLAN.md").read_text("utf-8") == NO_HISTORY
    assert not (root / "quiet" / "handoff").exists()  # a plan without history is not touched
    assert results["empty"].reason == "no_plan"

    again = archive_plans(settings, today=date(2026, 9, 11))
    assert [r.reason for r in again] == ["no_plan", "no_history", "no_history"]
    assert (root / "proj" / "PLAN.md").read_text("utf-8") == plan
    assert (root / "proj" / "handoff" / "archive" / "PLAN-history.md").read_text("utf-8") == archive


def test_archive_appends_to_an_existing_archive(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    archive_file = root / "proj" / "handoff" / "archive" / "PLAN-history.md"
    archive_file.parent.mkdir(parents=True)
    archive_file.write_text("## Archived from PLAN.md on 2026-08-01\n\nolder history", "utf-8")
    (result,) = archive_plans(Settings(root=str(root)), ["proj"], today=DAY)
    assert result.reason == "moved"
    archive = archive_file.read_text("utf-8")
    assert archive.startswith("## Archived from PLAN.md on 2026-08-01\n\nolder history\n\n")
    assert "\n\n## Archived from PLAN.md on 2026-09-10\n\n## 历史\n" in archive


def test_unreadable_plan_is_reported_and_untouched(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "proj" / "PLAN.md").write_bytes(b"## \xe5\x8e\x86\xe5\x8f\xb2\n\xff\xfe\n")
    (result,) = archive_plans(Settings(root=str(root)), ["proj"], today=DAY)
    assert result.reason == "unreadable" and not result.ok
    assert (root / "proj" / "PLAN.md").read_bytes() == b"## \xe5\x8e\x86\xe5\x8f\xb2\n\xff\xfe\n"
    assert not (root / "proj" / "handoff").exists()


def test_configured_names_are_used(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    (root / "w" / "whiteboard.md").write_text(PLAN, encoding="utf-8")
    settings = Settings(root=str(root))
    carry = type(settings.carry)(plan_file="whiteboard.md", archive_dir="old")
    settings = Settings(root=str(root), carry=carry)
    (result,) = archive_plans(settings, today=DAY)
    assert result.reason == "moved"
    assert (
        (root / "w" / "old" / "PLAN-history.md")
        .read_text("utf-8")
        .startswith("## Archived from whiteboard.md on 2026-09-10")
    )


def test_cli_prints_what_moved_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_root(tmp_path)
    assert main(["plan", "archive", "--root", str(root), "--workspace", "proj"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("proj: moved 1 history block(s), 6 line(s) (PLAN.md lines 9-14) → ")
    assert (root / "quiet" / "PLAN.md").read_text("utf-8") == NO_HISTORY  # not selected
    today = date.today().isoformat()
    archive = (root / "proj" / "handoff" / "archive" / "PLAN-history.md").read_text("utf-8")
    assert archive.startswith(f"## Archived from PLAN.md on {today}\n")

    assert main(["plan", "archive", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "proj: proj/PLAN.md has no history to archive" in out
    assert "quiet: quiet/PLAN.md has no history" in out
    assert "empty" not in out  # workspaces without a plan are not listed unless asked for


def test_cli_rejects_an_unknown_workspace(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    assert main(["plan", "archive", "--root", str(root), "--workspace", "nope"]) == 2
    args = argparse.Namespace(action="archive", workspace="../proj")
    with pytest.raises(UsageError):
        cmd_plan(args, Settings(root=str(root)))


def test_cli_exit_1_when_a_plan_fails(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "proj" / "PLAN.md").write_bytes(b"\xff")
    assert main(["plan", "archive", "--root", str(root)]) == 1


def test_archive_moves_a_log_of_dated_entries_whatever_its_heading(tmp_path: Path) -> None:
    """Issue 20 item 1: a `## Log` of dated entries is the plan's history, and archived."""
    root = tmp_path / "root"
    (root / "edge").mkdir(parents=True)
    plan = (
        "# Plan\n\n## Goal\n- all routes on edge-b\n\n## Log\n"
        "- 2026-11-01: inventory done\n- 2026-11-03: one NLB failed, two NLBs\n"
        "- 2026-11-05: weights 10%\n\n## Open questions\n- who signs the CR?\n"
    )
    (root / "edge" / "PLAN.md").write_text(plan, encoding="utf-8")
    [result] = archive_plans(Settings(root=str(root)), today=DAY)
    assert result.reason == "moved" and result.moved_blocks == ((6, 9),)
    left = (root / "edge" / "PLAN.md").read_text(encoding="utf-8")
    archive = (root / "edge" / "handoff" / "archive" / "PLAN-history.md").read_text("utf-8")
    assert "## Log" not in left and "who signs the CR?" in left and "all routes on edge-b" in left
    assert "2026-11-03: one NLB failed, two NLBs" in archive
    assert nonblank(plan) == nonblank(left) + nonblank(archive) - nonblank(archive.split("\n")[0])
