"""The carry folder: write a built carry's files and tidy what no writer will touch again.

A workspace's carry is `<workspace>.md`, its manifest `<workspace>.json` and, when the carry
does not fit the hook's inline budget, its SessionStart variant `<workspace>.inline.md`. Each is
written atomically (temp file in the same folder, fsync, `os.replace`) and only when its bytes
change; the manifest is rewritten only when it says something new apart from its timestamp.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.carry.planner import SegmentDecision
from carryd.carry.render import CarryBudgets, CarryPlan
from carryd.carry.select import MemoryDecision
from carryd.daemon.carries.sources import SourceFile
from carryd.daemon.files import write_atomic
from carryd.daemon.layout import recorded_inputs, source_inputs
from carryd.daemon.version import carryd_version
from carryd.index.redact import redact

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class CarryResult:
    workspace: str
    path: Path  # the carry file
    changed: bool  # the .md bytes changed (and were written)
    sha256: str
    bytes: int
    fallback: bool
    reason: str | None  # why the carry fell back (None when it did not)


@dataclass(frozen=True)
class BuiltCarry:
    """One workspace's carry, built but not written, with everything its manifest records."""

    workspace: str
    text: str
    fallback: bool
    reason: str | None
    budgets: CarryBudgets
    sources: tuple[SourceFile, ...]
    queries: tuple[str, ...]
    recall_degraded: str | None
    plan: CarryPlan | None  # the planned carry (None when it fell back)
    segment_decisions: tuple[SegmentDecision, ...]
    warnings: tuple[str, ...]
    # The SessionStart variant, planned from the same inputs under the hook's inline budget
    # (issue 10 item 7): None when not needed (the carry fits that budget as it is) or not
    # pre-built (a fallback, or the required parts do not fit).
    inline_text: str | None = None
    inline_budget: int | None = None


# --- writing ----------------------------------------------------------------------------------


def inline_path(settings: Settings, workspace: str) -> Path:
    """Given a workspace, return where its pre-built SessionStart variant is written."""
    return settings.carry_dir / f"{workspace}.inline.md"


def write_built_carry(settings: Settings, built: BuiltCarry) -> CarryResult:
    carry_path = settings.carry_dir / f"{built.workspace}.md"
    manifest_path = settings.carry_dir / f"{built.workspace}.json"
    data = built.text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    changed = _read_existing(carry_path) != data
    manifest = manifest_of(settings, built, sha256=digest, size=len(data))
    # What it was planned from, by content: `layout.check_carry` judges freshness by it.
    previous = recorded_inputs(settings, built.workspace)
    manifest["inputs"] = source_inputs(settings, built.workspace, previous)
    # The inline variant first: a hook trusts it only when the manifest names its hash.
    inline_file = inline_path(settings, built.workspace)
    if built.inline_text is not None:
        inline_data = built.inline_text.encode("utf-8")
        if _read_existing(inline_file) != inline_data:
            write_atomic(inline_file, inline_data, parents=False)
    else:
        with contextlib.suppress(FileNotFoundError):
            inline_file.unlink()
    if changed:
        write_atomic(carry_path, data, parents=False)
    if changed or _manifest_outdated(manifest_path, manifest):
        write_atomic(manifest_path, _manifest_bytes(manifest), parents=False)
    return CarryResult(
        workspace=built.workspace,
        path=carry_path,
        changed=changed,
        sha256=digest,
        bytes=len(data),
        fallback=built.fallback,
        reason=built.reason,
    )


def _read_existing(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _manifest_outdated(path: Path, manifest: Mapping[str, Any]) -> bool:
    """Given the manifest's path and the new manifest, return whether it must be written.

    Only when it is missing, unreadable, or says something else than the new one apart from
    its timestamp (sources touched, a decision moved): an unchanged carry is not rewritten.
    """
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    if not isinstance(old, dict):
        return True
    new = json.loads(_manifest_bytes(manifest))  # compare as JSON, as it would be stored
    old.pop("generated_at", None)
    new.pop("generated_at", None)
    return bool(old != new)


# --- the manifest -----------------------------------------------------------------------------


def manifest_of(settings: Settings, built: BuiltCarry, *, sha256: str, size: int) -> dict[str, Any]:
    """Given a built carry and its hash, return its manifest (every string redacted)."""
    plan = built.plan
    memory: dict[str, Any] = {
        "queries": list(built.queries),
        "degraded": built.recall_degraded,
        "decisions": [_memory_json(d) for d in plan.memory_decisions] if plan else [],
        "excluded_already_in_carry": list(plan.memory_excluded) if plan else [],
    }
    budgets = built.budgets
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "workspace": built.workspace,
        "carry": f"{settings.index.state_dir}/carry/{built.workspace}.md",
        "sha256": sha256,
        "bytes": size,
        "chars": len(built.text),
        "fallback": built.fallback,
        "reason": built.reason,
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "carryd_version": carryd_version(),
        "budgets": {
            "total_chars": budgets.total_chars,
            "ledger_chars": budgets.ledger_chars,
            "plan_chars": budgets.plan_chars,
            "memory": dataclasses.asdict(budgets.memory),
            # What this carry was planned within: what the flat injection would cost for the
            # same files (never more than total_chars; see carry.render.cost_ceiling).
            "planned_within_chars": plan.budget_chars if plan else budgets.total_chars,
        },
        "sources": [dataclasses.asdict(source) for source in built.sources],
        "segments": [dataclasses.asdict(decision) for decision in built.segment_decisions],
        "anchors": {
            "shown": plan.anchors_shown if plan else 0,
            "total": plan.anchors_total if plan else 0,
        },
        "memory": memory,
        "inline": _inline_json(settings, built),
        # Ledger headings outside the section table, carried at the lowest weight (issue 10).
        "unrecognised_sections": list(plan.unrecognised_sections) if plan else [],
        "warnings": list(built.warnings),
    }
    redacted: dict[str, Any] = _redacted(manifest)
    return redacted


def _inline_json(settings: Settings, built: BuiltCarry) -> dict[str, Any] | None:
    """Given a built carry, return its inline variant's manifest entry (None: not pre-built)."""
    if built.inline_text is None:
        return None
    data = built.inline_text.encode("utf-8")
    return {
        "carry": f"{settings.index.state_dir}/carry/{built.workspace}.inline.md",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "chars": len(built.inline_text),
        "budget_chars": built.inline_budget,
    }


def _memory_json(decision: MemoryDecision) -> dict[str, Any]:
    return dataclasses.asdict(decision)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


def _manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


# --- the command ------------------------------------------------------------------------------


def carry_paths(settings: Settings, workspace: str) -> tuple[Path, Path]:
    """Given a workspace, return its carry file and manifest paths."""
    return settings.carry_dir / f"{workspace}.md", settings.carry_dir / f"{workspace}.json"


# --- tidying ----------------------------------------------------------------------------------


CARRY_SUFFIXES = (".md", ".inline.md", ".json")  # a workspace's files in the carry folder


def tidy_carry_dir(settings: Settings, workspaces: Iterable[str]) -> list[Path]:
    """Given the root's workspaces, remove from the carry folder what no writer will touch
    again; return what was removed. Call it holding the index lock (no writer is mid-write).

    - `.<name>.<random>.tmp`: a writer killed between creating its temp file and renaming it;
    - `<name>.md`, `<name>.inline.md` and `<name>.json` of a workspace that was deleted or
      renamed, when the manifest names that workspace (a file a user put there is left alone).
    """
    carry_dir = settings.carry_dir
    keep = set(workspaces)
    try:
        children = list(carry_dir.iterdir())
    except FileNotFoundError:
        return []
    gone = {
        child.name[: -len(".json")]
        for child in children
        if child.name.endswith(".json") and not child.name.startswith(".")
    }
    gone = {owner for owner in gone - keep if _manifest_names(carry_dir, owner)}
    stale = [
        child
        for child in children
        if (child.name.startswith(".") and child.name.endswith(".tmp"))
        or child.name in {f"{owner}{suffix}" for owner in gone for suffix in CARRY_SUFFIXES}
    ]
    removed: list[Path] = []
    for child in stale:
        if child.is_file() and not child.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                child.unlink()
                removed.append(child)
    removed += _old_state_temps(settings.state_path)
    for path in removed:
        log.info("removed %s (%s)", path, _why_removed(path))
    return removed


# A temp file of daemon.json or indexing.json this old is no write in flight (those writers
# do not hold the index lock, so only age tells).
STATE_TEMP_AGE = 60.0


def _old_state_temps(state_path: Path) -> list[Path]:
    removed: list[Path] = []
    now = time.time()
    with contextlib.suppress(OSError):
        for child in state_path.iterdir():
            if not (child.name.startswith(".") and child.name.endswith(".tmp")):
                continue
            with contextlib.suppress(OSError):
                if child.is_file() and now - child.stat().st_mtime > STATE_TEMP_AGE:
                    child.unlink()
                    removed.append(child)
    return removed


def _manifest_names(carry_dir: Path, owner: str) -> bool:
    """Given a file stem, return whether `<stem>.json` is a carry manifest of that workspace
    (so `<stem>.md` and `<stem>.json` are carryd's, not a file a user put there)."""
    try:
        data = json.loads((carry_dir / f"{owner}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("workspace") == owner


def _why_removed(path: Path) -> str:
    if path.name.endswith(".tmp"):
        return "a temp file a killed writer left"
    return "the carry of a workspace that is gone"
