"""`carryd plan archive`: move settled PLAN.md history into `handoff/archive/` losslessly (P8).

"Settled" history is every history block of the plan (see `carryd.carry.plan`: the regions
under 历史 / History / 踩坑记录 / Changelog / … headings): all of it moves, verbatim, to the
end of `<workspace>/<archive_dir>/PLAN-history.md` under a dated header; the current state
stays in PLAN.md. Per workspace, in this order:

1. read PLAN.md; no history → nothing is touched (not even the archive folder);
2. compute the new plan and the appended archive text (pure, `carry.plan.archive_plan`) and
   check that the union of the new PLAN.md and the appended text holds every non-blank line
   the plan held (a multiset comparison);
3. write the archive (temp + fsync + os.replace), read it back and check it is the old archive
   plus the appended text;
4. check PLAN.md did not change meanwhile, then write it (temp + fsync + os.replace).

A failure in step 3 or 4 restores the archive's previous bytes, so a run never leaves history
in two places or in none. A second run finds no history and moves nothing (idempotent).
The daemon's scheduler calls `archive_plans(settings)` when `daemon.archive_plan` is on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

from carryd.carry.plan import archive_plan, missing_lines
from carryd.daemon.carries.carrying import list_workspaces
from carryd.daemon.config import Settings
from carryd.daemon.files import write_atomic

log = logging.getLogger(__name__)

ARCHIVE_NAME = "PLAN-history.md"

ArchiveReason = Literal[
    "moved",  # history blocks moved to the archive
    "would_move",  # --dry-run: history blocks the archive would take; nothing written
    "no_history",  # the plan has no history section: nothing touched
    "no_plan",  # the workspace has no PLAN.md
    "unreadable",  # PLAN.md or the archive could not be read or is not UTF-8
    "not_lossless",  # the check found a line that would be lost: nothing touched
    "plan_changed",  # PLAN.md changed while archiving: archive restored, plan untouched
    "write_failed",  # writing failed: archive restored, plan untouched
]


@dataclass(frozen=True)
class ArchiveResult:
    workspace: str
    plan_path: str  # relative to the root
    archive_path: str  # relative to the root
    reason: ArchiveReason
    moved_blocks: tuple[tuple[int, int], ...] = ()  # line ranges in the old PLAN.md
    moved_lines: int = 0  # non-blank lines moved
    detail: str = ""

    @property
    def changed(self) -> bool:
        return self.reason == "moved"

    @property
    def ok(self) -> bool:
        return self.reason in ("moved", "would_move", "no_history", "no_plan")

    def describe(self) -> str:
        """Return one line for the terminal saying what happened."""
        if self.reason in ("moved", "would_move"):
            spans = ", ".join(f"{start}-{end}" for start, end in self.moved_blocks)
            verb = "moved" if self.reason == "moved" else "would move (dry run)"
            return (
                f"{self.workspace}: {verb} {len(self.moved_blocks)} history block(s), "
                f"{self.moved_lines} line(s) (PLAN.md lines {spans}) → {self.archive_path}"
            )
        if self.reason == "no_history":
            return f"{self.workspace}: {self.plan_path} has no history to archive"
        if self.reason == "no_plan":
            return f"{self.workspace}: no {self.plan_path}"
        return f"{self.workspace}: not archived ({self.reason}): {self.detail}"


def archive_plans(
    settings: Settings,
    workspaces: Iterable[str] | None = None,
    *,
    today: date | None = None,
    dry_run: bool = False,
) -> list[ArchiveResult]:
    """Given settings (and optionally some workspaces), archive each plan's history (with
    dry_run: say what would move, write nothing)."""
    names = list_workspaces(settings) if workspaces is None else list(workspaces)
    day = today or date.today()
    return [archive_workspace(settings, name, today=day, dry_run=dry_run) for name in names]


def archive_workspace(
    settings: Settings, workspace: str, *, today: date, dry_run: bool = False
) -> ArchiveResult:
    """Given one workspace, move its plan's history into the archive; return what happened."""
    root = settings.root_path
    plan_relative = f"{workspace}/{settings.carry.plan_file}"
    archive_relative = f"{workspace}/{settings.carry.archive_dir}/{ARCHIVE_NAME}"
    plan_path = root / plan_relative
    archive_path = root / archive_relative

    def result(reason: ArchiveReason, detail: str = "") -> ArchiveResult:
        return ArchiveResult(workspace, plan_relative, archive_relative, reason, detail=detail)

    if not plan_path.is_file():
        return result("no_plan")
    try:
        plan_bytes = plan_path.read_bytes()
        plan_text = plan_bytes.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return result("unreadable", f"{plan_relative}: {error}")

    header = f"## Archived from {settings.carry.plan_file} on {today.isoformat()}"
    planned = archive_plan(plan_text, header=header)
    if not planned.moved_blocks:
        return result("no_history")

    try:
        old_archive = archive_path.read_bytes() if archive_path.exists() else b""
        old_archive_text = old_archive.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return result("unreadable", f"{archive_relative}: {error}")
    if not old_archive_text or old_archive_text.endswith("\n\n"):
        separator = ""
    else:
        separator = "\n" if old_archive_text.endswith("\n") else "\n\n"
    new_archive_text = old_archive_text + separator + planned.appended

    lost = missing_lines(plan_text, [planned.new_plan, planned.appended])
    if lost:
        return result("not_lossless", f"{len(lost)} line(s) would be lost, e.g. {lost[0]!r}")
    if dry_run:
        return ArchiveResult(
            workspace,
            plan_relative,
            archive_relative,
            "would_move",
            moved_blocks=planned.moved_blocks,
            moved_lines=planned.moved_lines,
        )

    try:
        archive_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(archive_path, new_archive_text.encode("utf-8"))
        written = archive_path.read_bytes().decode("utf-8")
        appended_back = written[len(old_archive_text) :]
        if not written.startswith(old_archive_text) or missing_lines(
            plan_text, [planned.new_plan, appended_back]
        ):
            _restore(archive_path, old_archive)
            return result("write_failed", f"{archive_relative}: read-back check failed")
        if plan_path.read_bytes() != plan_bytes:
            _restore(archive_path, old_archive)
            return result("plan_changed", f"{plan_relative} changed while archiving; run again")
        write_atomic(plan_path, planned.new_plan.encode("utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        _restore(archive_path, old_archive)
        return result("write_failed", f"{error}")
    log.info("archived %d history block(s) of %s", len(planned.moved_blocks), plan_relative)
    return ArchiveResult(
        workspace,
        plan_relative,
        archive_relative,
        "moved",
        moved_blocks=planned.moved_blocks,
        moved_lines=planned.moved_lines,
    )


def _restore(path: Path, previous: bytes) -> None:
    try:
        if previous:
            write_atomic(path, previous)
        elif path.exists():
            path.unlink()
    except OSError as error:  # the history is still in PLAN.md, so nothing is lost
        log.warning("%s: could not restore the archive: %s", path, error)
