"""The memory root's layout as a daemon service: which folders are workspaces, the store,
and how fresh each workspace's carry is.

ONE workspace predicate for every command (carry, hooks, status line, the daemon):
a workspace is a top-level folder of the root that is not carryd's state folder, not an
ignored folder, not hidden, and not a folder of root-level memory (`notes/`).

The `notes/` choice: its files are indexed as root-level memory (`workspace_of` gives them no
workspace, so their authority is the user's default), `carryd carry` never wrote a carry for
it, and recall scoped to "notes" would find only root-level entries. The hooks used to count
it as a workspace (a session started inside `notes/` got a carry planned for a workspace
that holds no memory of its own); they now say "unknown workspace" there, as for any folder
that is not a workspace, and map the project in `[workspaces]` to hand it a real one.

Kept cheap to import: the status line asks the predicate after every message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from carryd.daemon.errors import ConfigError, UsageError
from carryd.daemon.state import read_state
from carryd.index.layout import ROOT_LEVEL_DIRS  # not index.entries: markdown-it, ~50 ms

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.store import Store

log = logging.getLogger(__name__)

CarryState = Literal["fresh", "stale", "fallback", "missing"]

__all__ = [
    "CarryFreshness",
    "carry_report",
    "carry_state",
    "check_workspace",
    "is_workspace",
    "list_workspaces",
    "open_store",
]


def _is_workspace_name(settings: Settings, name: str) -> bool:
    """Given a folder name, return whether the name may be a workspace (no file access)."""
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        return False
    skip = {settings.index.state_dir, *settings.index.ignore_dirs, *ROOT_LEVEL_DIRS}
    return name not in skip


def is_workspace(settings: Settings, name: str) -> bool:
    """Given a name, return whether it is a workspace of the root (a folder that exists)."""
    return _is_workspace_name(settings, name) and (settings.root_path / name).is_dir()


def list_workspaces(settings: Settings) -> list[str]:
    """Given settings, return the root's workspaces, sorted (see `is_workspace`)."""
    root = settings.root_path
    try:
        children = list(root.iterdir())
    except OSError as error:
        log.warning("%s: cannot list the memory root: %s", root, error.strerror or error)
        return []
    names = (child.name for child in children if child.is_dir())
    return sorted(name for name in names if _is_workspace_name(settings, name))


def check_workspace(settings: Settings, workspace: str) -> None:
    """Given a workspace name, raise UsageError unless it is a top-level folder of the root."""
    if not workspace or "/" in workspace or "\\" in workspace or workspace in (".", ".."):
        raise UsageError(f"{workspace!r} is not a workspace name (a top-level folder of the root)")
    if not (settings.root_path / workspace).is_dir():
        raise UsageError(f"{settings.root_path / workspace}: no such workspace folder")


def open_store(settings: Settings) -> Store:
    """Given the settings, return the root's index store (created or recovered as needed)."""
    from carryd.index.store import Store  # lazy: SQLite is not needed to name workspaces

    root = settings.root_path
    if not root.is_dir():
        raise ConfigError(f"{root}: the memory root is not a folder; pass --root DIR or fix 'root'")
    return Store.open(settings.db_path)


# --- freshness -------------------------------------------------------------------------


def _source_files(root: Path, workspace: str, settings: Settings) -> Iterable[Path]:
    """Given a workspace, yield the files its carry is planned from (and root-level memory:
    Markdown at the root and in the root-level folders such as `notes/`)."""
    skip = set(settings.index.ignore_dirs) | {settings.index.state_dir}
    for entry in root.iterdir():
        if entry.is_file() and entry.name.lower().endswith(".md"):
            yield entry
    sidecar = root / workspace / settings.carry.sidecar_file
    if sidecar.is_file():
        yield sidecar
    for folder in (workspace, *ROOT_LEVEL_DIRS):
        if folder in skip:
            continue
        for directory, subdirs, files in os.walk(root / folder):
            subdirs[:] = [d for d in subdirs if d not in skip]
            for name in files:
                if name.lower().endswith(".md"):
                    yield Path(directory, name)


def carry_report(
    settings: Settings, workspace: str, *, checked_at: float | None, now: float
) -> dict[str, Any]:
    """Given a workspace, return its carry's path, size, hash, fallback and freshness."""
    root = settings.root_path
    carry_path = settings.carry_dir / f"{workspace}.md"
    manifest_path = settings.carry_dir / f"{workspace}.json"
    newest: tuple[float, str] | None = None
    for source in _source_files(root, workspace, settings):
        with contextlib.suppress(OSError):
            mtime = source.stat().st_mtime
            if newest is None or mtime > newest[0]:
                newest = (mtime, source.relative_to(root).as_posix())
    info: dict[str, Any] = {
        "workspace": workspace,
        "path": str(carry_path),
        "exists": carry_path.is_file(),
        "bytes": None,
        "sha256": None,
        "fallback": None,
        "reason": None,
        "written_at": None,
        "age_seconds": None,
        "newest_source": None if newest is None else {"path": newest[1], "mtime": newest[0]},
        "behind_seconds": None,
        "stale": True,
    }
    if not info["exists"]:
        info["reason"] = "no carry file yet"
        return info
    data = carry_path.read_bytes()
    info["bytes"] = len(data)
    info["sha256"] = hashlib.sha256(data).hexdigest()
    fresh_as_of = carry_path.stat().st_mtime
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        fresh_as_of = max(fresh_as_of, manifest_path.stat().st_mtime)
    except (OSError, ValueError):
        manifest = None
    if isinstance(manifest, dict):
        info["fallback"] = bool(manifest.get("fallback", False))
        info["reason"] = manifest.get("reason", manifest.get("fallback_reason"))
    else:
        info["fallback"] = None
        info["reason"] = "manifest missing or unreadable"
    if checked_at is not None:
        # The daemon re-planned this carry then and found its bytes unchanged.
        fresh_as_of = max(fresh_as_of, checked_at)
    info["written_at"] = fresh_as_of
    info["age_seconds"] = round(max(now - fresh_as_of, 0.0), 3)
    behind = 0.0 if newest is None else newest[0] - fresh_as_of
    info["behind_seconds"] = round(max(behind, 0.0), 3)
    info["stale"] = behind > 0
    return info


@dataclass(frozen=True)
class CarryFreshness:
    state: CarryState
    detail: str | None  # the newest source for "stale", the reason for "fallback"


def carry_state(settings: Settings, workspace: str, *, now: float | None = None) -> CarryFreshness:
    """Given a workspace, return its carry's freshness from the files' mtimes and its manifest.

    Nothing is recomputed: the carry is fresh when no source file is newer than it (or than the
    daemon's last check that found it unchanged), as `carryd status` judges it.
    """
    recorded = read_state(settings) or {}
    checked = recorded.get("carries_checked") or {}
    checked_at = checked.get(workspace) if isinstance(checked, dict) else None
    report = carry_report(
        settings,
        workspace,
        checked_at=checked_at if isinstance(checked_at, int | float) else None,
        now=time.time() if now is None else now,
    )
    if not report.get("exists"):
        return CarryFreshness("missing", None)
    if report.get("stale"):
        newest = report.get("newest_source") or {}
        return CarryFreshness("stale", newest.get("path"))
    if report.get("fallback"):
        return CarryFreshness("fallback", report.get("reason"))
    return CarryFreshness("fresh", None)
