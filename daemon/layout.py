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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from carryd.daemon.errors import ConfigError, UsageError
from carryd.daemon.state import read_state, refuse_redirected_state
from carryd.index.layout import ROOT_LEVEL_DIRS  # not index.entries: markdown-it, ~50 ms

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.store import Store

log = logging.getLogger(__name__)

CarryState = Literal["fresh", "stale", "fallback", "missing", "damaged"]

__all__ = [
    "CarryCheck",
    "CarryFreshness",
    "carry_damage",
    "check_carry",
    "carry_report",
    "carry_state",
    "check_root",
    "check_workspace",
    "is_workspace",
    "list_workspaces",
    "recorded_inputs",
    "source_inputs",
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


_ROOT_PROBE_FOLDERS = 2000  # enough to find a note; a mistyped `--root ~` is not walked whole


def check_root(settings: Settings) -> None:
    """Given settings, raise ConfigError unless the root is a folder that holds Markdown or
    carryd's state folder: a mistyped `--root ~/memroy` must be an error naming it, not an
    empty root made in passing (`carryd init DIR` is how a new root is asked for)."""
    root = settings.root_path
    fix = f"pass --root DIR (the memory root), or `carryd init {root}` to start a new root there"
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise ConfigError(f"{root}: the memory root {what}; {fix}")
    if (root / settings.index.state_dir).is_dir() or _holds_markdown(settings):
        return
    raise ConfigError(
        f"{root}: holds no Markdown file and no {settings.index.state_dir}/, so it is not a "
        f"memory root yet; {fix}"
    )


def _holds_markdown(settings: Settings) -> bool:
    skip = {settings.index.state_dir, *settings.index.ignore_dirs}
    for count, (_, subdirs, files) in enumerate(os.walk(settings.root_path)):
        if any(name.lower().endswith(".md") for name in files):
            return True
        if count >= _ROOT_PROBE_FOLDERS:
            return False
        subdirs[:] = [d for d in subdirs if d not in skip and not d.startswith(".")]
    return False


def open_store(settings: Settings) -> Store:
    """Given the settings, return the root's index store (created or recovered as needed)."""
    from carryd.index.store import Store  # lazy: SQLite is not needed to name workspaces

    root = settings.root_path
    if not root.is_dir():
        raise ConfigError(f"{root}: the memory root is not a folder; pass --root DIR or fix 'root'")
    refuse_redirected_state(settings)
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


# What a carry was planned from, by content: {key: [sha256, size, mtime_ns]} for every file
# `_source_files` yields, the key a hash of the root-relative path (the manifest names no
# file beyond its `sources`). Freshness compares content, not clocks: a file with an mtime in
# the future, or touched without a change, does not make a carry stale; an edit does, and so
# do a new and a removed file, whatever their mtimes say.
Inputs = dict[str, list[Any]]


def _input_key(relative: str) -> str:
    return hashlib.sha256(relative.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _same_input(path: Path, record: object, info: os.stat_result) -> bool:
    """Given a source file, what a manifest recorded of it and its stat now, return whether
    its content is the recorded one (read and hashed only when the stat moved)."""
    if not isinstance(record, list) or len(record) != 3:
        return False
    if record[1] == info.st_size and record[2] == info.st_mtime_ns:
        return True
    try:
        return record[1] == info.st_size and _file_digest(path) == record[0]
    except OSError:
        return False


def source_inputs(settings: Settings, workspace: str, previous: object = None) -> Inputs:
    """Given a workspace (and the inputs its manifest recorded before, reused for files whose
    stat did not move), return its carry's inputs as they are on disk now."""
    root = settings.root_path
    known = previous if isinstance(previous, dict) else {}
    inputs: Inputs = {}
    for source in _source_files(root, workspace, settings):
        relative = source.relative_to(root).as_posix()
        key = _input_key(relative)
        with contextlib.suppress(OSError):
            info = source.stat()
            record = known.get(key)
            if isinstance(record, list) and record[1:] == [info.st_size, info.st_mtime_ns]:
                inputs[key] = record
            else:
                inputs[key] = [_file_digest(source), info.st_size, info.st_mtime_ns]
    return inputs


def recorded_inputs(settings: Settings, workspace: str) -> object:
    """Given a workspace, return the inputs its manifest recorded (None: none recorded)."""
    manifest, _ = _read_manifest(settings.carry_dir / f"{workspace}.json")
    return None if manifest is None else manifest.get("inputs")


def _changed_input(
    root: Path, sources: list[tuple[Path, os.stat_result]], inputs: dict[str, Any]
) -> str | None:
    """Given the source files now and a manifest's inputs, return what changed since (a
    root-relative path, or "a source file was removed"), None when nothing did."""
    for source, info in sources:
        relative = source.relative_to(root).as_posix()
        if not _same_input(source, inputs.get(_input_key(relative)), info):
            return relative
    if len(inputs) > len(sources):
        return "a source file was removed"
    return None


class CarryCheck(NamedTuple):
    """One workspace's carry on disk, judged by `check_carry`.

    `state` is one of:
    - "missing":  no carry file;
    - "damaged":  the .md does not match its manifest (sha256 or size), the manifest is
                  missing or not a carryd manifest, or the .md is not UTF-8: never inject it,
                  rebuild it (`detail` names the file and what is wrong);
    - "stale":    a source file's content differs from what the carry was planned from, or
                  a source was added or removed (`detail`: that source); a manifest from
                  before the inputs were recorded: a source is newer than the carry;
    - "fallback": intact and fresh, but a flat fallback (`detail`: the manifest's reason);
    - "fresh":    intact, fresh and planned.
    `content` holds the verified bytes when the state is "fresh", "fallback" or "stale", so a
    hook injects exactly the bytes that were checked (no second read that could race a writer).
    """

    workspace: str
    state: CarryState
    detail: str | None
    path: Path
    manifest_path: Path
    size: int | None = None  # bytes of the .md
    sha256: str | None = None
    fallback: bool | None = None
    reason: str | None = None  # the manifest's reason for a fallback
    written_at: float | None = None
    age_seconds: float | None = None
    newest_source: tuple[str, float] | None = None  # (root-relative path, mtime)
    behind_seconds: float | None = None
    content: bytes | None = None  # the verified bytes; left out of repr

    def __repr__(self) -> str:
        return f"CarryCheck({self.workspace!r}, {self.state!r}, {self.detail!r}, {self.path})"

    @property
    def usable(self) -> bool:
        """Whether the bytes on disk may be injected as they are (intact, fresh)."""
        return self.state in ("fresh", "fallback")

    @property
    def text(self) -> str | None:
        """The verified carry text (None when missing or damaged)."""
        return None if self.content is None else self.content.decode("utf-8")

    def to_json(self) -> dict[str, Any]:
        """Return the carry's section of `carryd status --json`."""
        newest = self.newest_source
        return {
            "workspace": self.workspace,
            "path": str(self.path),
            "state": self.state,
            "exists": self.state != "missing",
            "damaged": self.detail if self.state == "damaged" else None,
            "bytes": self.size,
            "sha256": self.sha256,
            "fallback": self.fallback,
            "reason": "no carry file yet" if self.state == "missing" else self.reason,
            "written_at": self.written_at,
            "age_seconds": self.age_seconds,
            "newest_source": None if newest is None else {"path": newest[0], "mtime": newest[1]},
            "behind_seconds": self.behind_seconds,
            "changed_source": self.detail if self.state == "stale" else None,
            "stale": self.state in ("missing", "stale"),
        }


# Backwards-compatible name for callers written before the integrity check.
CarryFreshness = CarryCheck

_CHECKED = object()  # check_carry's default: read the daemon's last check from daemon.json


def check_carry(
    settings: Settings,
    workspace: str,
    *,
    now: float | None = None,
    checked_at: float | None | object = _CHECKED,
) -> CarryCheck:
    """Given a workspace, return its carry judged: intact (the .md matches the manifest's
    sha256 and size), fresh (no source file newer than the carry, or than the daemon's last
    check that found it unchanged) and planned or a fallback. The one check that `carryd
    status`, the hooks and the writer use; nothing is re-planned and no model is loaded.
    """
    if checked_at is _CHECKED:
        recorded = read_state(settings) or {}
        checked = recorded.get("carries_checked") or {}
        checked_at = checked.get(workspace) if isinstance(checked, dict) else None
    checked_time = checked_at if isinstance(checked_at, int | float) else None
    now = time.time() if now is None else now
    root = settings.root_path
    carry_path = settings.carry_dir / f"{workspace}.md"
    manifest_path = settings.carry_dir / f"{workspace}.json"
    newest: tuple[str, float] | None = None
    sources: list[tuple[Path, os.stat_result]] = []
    for source in _source_files(root, workspace, settings):
        with contextlib.suppress(OSError):
            info = source.stat()
            sources.append((source, info))
            if newest is None or info.st_mtime > newest[1]:
                newest = (source.relative_to(root).as_posix(), info.st_mtime)
    base = CarryCheck(workspace, "missing", None, carry_path, manifest_path, newest_source=newest)
    try:
        data = carry_path.read_bytes()
        fresh_as_of = carry_path.stat().st_mtime
    except FileNotFoundError:
        return base
    except OSError as error:
        return base._replace(state="damaged", detail=f"{carry_path}: unreadable ({error.strerror})")
    digest = hashlib.sha256(data).hexdigest()
    base = base._replace(size=len(data), sha256=digest)
    manifest, problem = _integrity(carry_path, manifest_path, data, digest)
    if manifest is not None:
        fallback = manifest.get("fallback", False)
        reason = manifest.get("reason", manifest.get("fallback_reason"))
        base = base._replace(
            fallback=bool(fallback),
            reason=reason if isinstance(reason, str) else None,
        )
        with contextlib.suppress(OSError):
            fresh_as_of = max(fresh_as_of, manifest_path.stat().st_mtime)
    changed: str | None = None
    inputs = None if manifest is None else manifest.get("inputs")
    if isinstance(inputs, dict):
        # Content decides (see `source_inputs`); the clocks only say by how much.
        changed = _changed_input(root, sources, inputs)
        ahead = 0.0 if newest is None else newest[1] - fresh_as_of
        behind = 0.0 if changed is None else max(ahead, 0.001)
    else:  # a manifest from before the inputs were recorded: the clocks decide
        if checked_time is not None:
            # The daemon re-planned this carry then and found its bytes unchanged.
            fresh_as_of = max(fresh_as_of, checked_time)
        behind = max(0.0 if newest is None else newest[1] - fresh_as_of, 0.0)
        changed = newest[0] if newest and behind > 0 else None
    base = base._replace(
        written_at=fresh_as_of,
        age_seconds=round(max(now - fresh_as_of, 0.0), 3),
        behind_seconds=round(behind, 3),
    )
    if problem is not None:
        log.warning("carry %s is damaged: %s", workspace, problem)
        return base._replace(state="damaged", detail=problem)
    base = base._replace(content=data)
    if changed is not None:
        return base._replace(state="stale", detail=changed)
    if base.fallback:
        return base._replace(state="fallback", detail=base.reason)
    return base._replace(state="fresh")


def carry_damage(settings: Settings, workspace: str) -> str | None:
    """Given a workspace, return what is wrong with its carry's bytes (None: intact or no
    carry): `check_carry`'s integrity half alone, no source walk, for the daemon to find the
    carries to rewrite after each sync."""
    carry_path = settings.carry_dir / f"{workspace}.md"
    try:
        data = carry_path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{carry_path}: unreadable ({error.strerror})"
    digest = hashlib.sha256(data).hexdigest()
    return _integrity(carry_path, settings.carry_dir / f"{workspace}.json", data, digest)[1]


def _integrity(
    carry_path: Path, manifest_path: Path, data: bytes, digest: str
) -> tuple[dict[str, Any] | None, str | None]:
    """Given a carry's bytes and its manifest's path, return (the manifest or None, what is
    wrong or None): the manifest must be one, its sha256 and size the carry's, the carry
    UTF-8."""
    manifest, problem = _read_manifest(manifest_path)
    if manifest is not None:
        problem = _integrity_problem(carry_path, data, digest, manifest)
    if problem is None:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = f"{carry_path}: not UTF-8 (byte {error.start})"
    return manifest, problem


def _read_manifest(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Given a manifest's path, return (its JSON object, None) or (None, what is wrong)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, f"{path}: manifest missing"
    except OSError as error:
        return None, f"{path}: manifest unreadable ({error.strerror})"
    try:
        manifest = json.loads(raw)
    except ValueError:
        return None, f"{path}: manifest is not JSON ({len(raw)} bytes)"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sha256"), str):
        return None, f"{path}: not a carry manifest (no sha256)"
    return manifest, None


def _integrity_problem(
    carry_path: Path, data: bytes, digest: str, manifest: dict[str, Any]
) -> str | None:
    """Given the carry's bytes and its manifest, return how they disagree (None: they agree)."""
    expected_size = manifest.get("bytes")
    if isinstance(expected_size, int) and expected_size != len(data):
        return f"{carry_path}: {len(data)} bytes, its manifest says {expected_size}"
    if manifest["sha256"] != digest:
        return f"{carry_path}: sha256 {digest[:12]} differs from its manifest's"
    return None


def carry_report(
    settings: Settings, workspace: str, *, checked_at: float | None, now: float
) -> dict[str, Any]:
    """Given a workspace, return its carry's section of `carryd status --json`."""
    return check_carry(settings, workspace, checked_at=checked_at, now=now).to_json()


def carry_state(settings: Settings, workspace: str, *, now: float | None = None) -> CarryCheck:
    """Given a workspace, return `check_carry` (the name the hooks used before the check)."""
    return check_carry(settings, workspace, now=now)
