"""`carryd status`: is the daemon running, is the model loaded, are the carries fresh.

Two halves:
- `DaemonState`: what the running daemon says about itself, kept in memory and mirrored to
  `<state>/daemon.json` (written temp + os.replace, so a reader never sees half a file).
- `status_report()`: asks the daemon over the control socket when one answers, else reads
  daemon.json; then looks at the index counts and every workspace's carry on disk itself.
  It never loads the embedding model, so it is instant.

Health (the exit code): 0 when the model is usable and every carry is fresh and planned
(not a fallback); 1 when the model is degraded, a carry is missing, stale (a source file is
newer than the carry) or a fallback.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.files import write_atomic

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

STATE_FILE = "daemon.json"


# --- the daemon's own record -------------------------------------------------------------


def state_file(settings: Settings) -> Path:
    return settings.state_path / STATE_FILE


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Given a path and a JSON object, replace the file in one step."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    write_atomic(path, text.encode("utf-8"))


def read_state(settings: Settings) -> dict[str, Any] | None:
    """Given settings, return the last daemon.json, or None when absent or unreadable."""
    try:
        data = json.loads(state_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _report_fields(report: Any) -> dict[str, Any]:
    if report is None:
        return {}
    to_json = getattr(report, "to_json", None)
    fields = dict(to_json()) if callable(to_json) else {}
    problems = fields.pop("problems", getattr(report, "problems", ()))
    fields["problems"] = len(problems) if isinstance(problems, list | tuple) else problems
    return fields


class DaemonState:
    """The running daemon's record of itself; every update is mirrored to daemon.json."""

    def __init__(
        self,
        settings: Settings,
        *,
        pid: int | None = None,
        queued: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = state_file(settings)
        self._clock = clock
        self._queued = queued
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {
            "pid": pid if pid is not None else os.getpid(),
            "root": str(settings.root_path),
            "config_file": settings.config_file,
            "state": "starting",
            "started_at": clock(),
            "model": None,
            "syncs": 0,
            "reconciles": 0,
            "events": 0,
            "queued": 0,
            "last_sync": None,
            "last_verify": None,
            "last_error": None,
            "carries_checked": {},
        }

    def set_queued_source(self, queued: Callable[[], int]) -> None:
        self._queued = queued

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            data = json.loads(json.dumps(self._data, default=str))
        data["queued"] = self._queued()
        data["uptime_seconds"] = round(self._clock() - data["started_at"], 3)
        return data

    def update(self, **fields: Any) -> None:
        with self._lock:
            self._data.update(fields)
            self._write_locked()

    def record_sync(
        self,
        *,
        kind: str,
        paths: int | None,
        events: int,
        report: Any,
        carries: Iterable[Any],
        seconds: float,
    ) -> None:
        now = self._clock()
        carries = list(carries)
        with self._lock:
            if kind == "batch":
                self._data["syncs"] += 1
            else:
                self._data["reconciles"] += 1
            self._data["events"] += events
            self._data["last_sync"] = {
                "kind": kind,
                "at": now,
                "seconds": round(seconds, 4),
                "paths": paths,
                "events": events,
                **_report_fields(report),
                "carries_written": len(carries),
                "carries_changed": sum(1 for c in carries if getattr(c, "changed", False)),
            }
            checked = self._data["carries_checked"]
            for carry in carries:
                checked[str(carry.workspace)] = now
                if getattr(carry, "fallback", False):
                    log.warning("carry %s fell back: %s", carry.workspace, carry.reason)
            self._write_locked()

    def record_verify(self, report: Any) -> None:
        with self._lock:
            self._data["last_verify"] = {
                "at": self._clock(),
                "ok": bool(report.ok),
                "problems": [str(p) for p in list(report.problems)[:20]],
            }
            self._write_locked()

    def record_error(self, where: str, error: BaseException) -> None:
        with self._lock:
            self._data["last_error"] = {
                "at": self._clock(),
                "where": where,
                "message": f"{type(error).__name__}: {error}",
            }
            self._write_locked()

    def write(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        data = dict(self._data)
        data["queued"] = self._queued()
        try:
            write_json_atomic(self._path, data)
        except OSError as error:
            log.warning("cannot write %s: %s", self._path, error)


# --- the report --------------------------------------------------------------------------


def pid_alive(pid: Any) -> bool:
    """Given a pid from daemon.json, return whether that process still exists."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def probe_model(settings: Settings) -> str | None:
    """Given settings, return why the model cannot load, judged without loading it (or None).

    Only a local folder can be judged this cheaply; the default model is judged by the
    daemon that loaded it (its daemon.json) or left unknown.
    """
    folder = settings.model.model_path
    if not folder:
        return None
    path = Path(folder).expanduser()
    if not path.is_dir():
        return f"model folder {path} does not exist"
    if not (path / settings.model.file).is_file() and not any(path.glob("**/*.onnx")):
        return f"model folder {path} holds no .onnx file"
    return None


def model_identity_text(settings: Settings, identity: Any = None) -> str:
    """Given settings (and the loaded model's identity, when there is one), return how status
    names the model. Without a loaded model the identity is resolved as the embedder would
    (a local folder's own files, else the configured default) without loading anything."""
    if identity is None:
        from carryd.daemon.indexing import load_embedder_for

        embedder, _ = load_embedder_for(settings, lazy=True)
        identity = getattr(embedder, "identity", None)
    model = settings.model
    name, file, dim, pooling = (
        (identity.name, identity.file, identity.dim, identity.pooling)
        if identity is not None
        else (model.name, model.file, model.dim, model.pooling)
    )
    where = f" from {model.model_path}" if model.model_path else ""
    return f"{name} ({file}, {dim}-d, {pooling}){where}"


def index_counts(settings: Settings) -> dict[str, int] | None:
    """Given settings, return the index's counts, or None when there is no index yet."""
    if not settings.db_path.exists():
        return None
    from carryd.index.errors import IndexCorrupt
    from carryd.index.store import Store, diagnose

    # Status only looks: a corrupt index is reported (and left for `carryd index` to move
    # aside and rebuild), never replaced by an empty one that then reads as healthy.
    verdict = diagnose(settings.db_path)
    if verdict is not None:
        raise IndexCorrupt(f"{settings.db_path} is {verdict[1]}; run `carryd index` to rebuild it")
    with Store.open(settings.db_path) as store:
        return dict(store.counts())


def _source_files(root: Path, workspace: str, settings: Settings) -> Iterable[Path]:
    """Given a workspace, yield the files its carry is planned from (and root-level memory:
    Markdown at the root and in the root-level folders such as `notes/`)."""
    from carryd.index.entries import ROOT_LEVEL_DIRS

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


def status_report(settings: Settings, *, now: float | None = None) -> dict[str, Any]:
    """Given settings, return the whole status (the JSON `carryd status --json` prints)."""
    from carryd.daemon.control import request
    from carryd.index.errors import ConfigError

    if not settings.root_path.is_dir():
        raise ConfigError(f"root {settings.root_path}: not a folder (pass --root DIR)")
    now = time.time() if now is None else now
    live = None
    with contextlib.suppress(OSError):
        live = request(settings, "status", {}, timeout=2.0)
    recorded = live if live is not None else read_state(settings)
    running = live is not None or (
        recorded is not None
        and recorded.get("state") not in ("stopped", None)
        and pid_alive(recorded.get("pid"))
    )
    daemon: dict[str, Any] = {
        "running": running,
        "answering": live is not None,
        "pid": recorded.get("pid") if recorded and running else None,
        "state": (recorded or {}).get("state") if running else "stopped",
        "started_at": recorded.get("started_at") if recorded and running else None,
        "uptime_seconds": (
            round(now - recorded["started_at"], 3)
            if recorded and running and isinstance(recorded.get("started_at"), int | float)
            else None
        ),
        "syncs": (recorded or {}).get("syncs"),
        "reconciles": (recorded or {}).get("reconciles"),
        "events": (recorded or {}).get("events"),
        "queued": (recorded or {}).get("queued", 0) if running else 0,
    }

    model: dict[str, Any]
    if live is not None and isinstance(live.get("model"), dict):
        model = dict(live["model"])
    else:
        reason = probe_model(settings)
        remembered = (recorded or {}).get("model") or {}
        if reason is None and remembered.get("identity") == model_identity_text(settings):
            reason = remembered.get("degraded")
        model = {
            "identity": model_identity_text(settings),
            "loaded": False,
            "degraded": reason,
        }

    counts = live.get("counts") if live is not None else None
    if counts is None:
        try:
            counts = index_counts(settings)
        except Exception as error:  # noqa: BLE001 — status must report a broken index, not die
            counts = None
            daemon["index_error"] = f"{type(error).__name__}: {error}"

    from carryd.daemon.carrying import list_workspaces

    checked = (recorded or {}).get("carries_checked") or {}
    carries = [
        carry_report(settings, workspace, checked_at=checked.get(workspace), now=now)
        for workspace in list_workspaces(settings)
    ]
    problems: list[str] = []
    if daemon.get("index_error"):
        problems.append(f"index: {daemon['index_error']}")
    if model.get("degraded"):
        problems.append(f"model degraded: {model['degraded']}")
    for carry in carries:
        if not carry["exists"]:
            problems.append(f"carry {carry['workspace']}: missing")
        elif carry["stale"]:
            source = carry["newest_source"]["path"]
            problems.append(
                f"carry {carry['workspace']}: stale ({source} is newer by "
                f"{carry['behind_seconds']} s)"
            )
        elif carry["fallback"]:
            problems.append(f"carry {carry['workspace']}: fallback ({carry['reason']})")
    return {
        "healthy": not problems,
        "problems": problems,
        "root": str(settings.root_path),
        "daemon": daemon,
        "model": model,
        "counts": counts,
        "last_sync": (recorded or {}).get("last_sync"),
        "last_verify": (recorded or {}).get("last_verify"),
        "last_error": (recorded or {}).get("last_error"),
        "carries": carries,
    }


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def render_text(report: dict[str, Any], *, now: float) -> str:
    """Given a status report, return it as a few human lines."""
    daemon = report["daemon"]
    lines = []
    if daemon["running"]:
        lines.append(
            f"daemon: running, pid {daemon['pid']}, up {_ago(daemon['uptime_seconds'])}"
            + ("" if daemon["answering"] else " (control socket not answering)")
        )
    else:
        lines.append("daemon: not running")
    lines.append(f"root: {report['root']}")
    model = report["model"]
    state = "loaded" if model.get("loaded") else "not loaded"
    if model.get("degraded"):
        state = f"DEGRADED ({model['degraded']}): lexical-only recall"
    lines.append(f"model: {model.get('identity')}: {state}")
    counts = report["counts"]
    if counts is None:
        lines.append("index: none yet (run `carryd index` or `carryd run`)")
    else:
        lines.append(
            f"index: {counts.get('files', 0)} files, {counts.get('entries', 0)} entries, "
            f"{counts.get('vectors', 0)} vectors"
        )
    last = report["last_sync"]
    if last:
        lines.append(
            f"last sync: {_ago(now - last['at'])} ago ({last['kind']}, {last['seconds']:.3f} s); "
            f"{daemon.get('syncs') or 0} syncs, {daemon.get('queued') or 0} queued"
        )
    for carry in report["carries"]:
        if not carry["exists"]:
            lines.append(f"carry {carry['workspace']}: MISSING ({carry['path']})")
            continue
        flags = []
        if carry["stale"]:
            flags.append(
                f"STALE: {carry['newest_source']['path']} newer by {carry['behind_seconds']} s"
            )
        if carry["fallback"]:
            flags.append(f"FALLBACK: {carry['reason']}")
        lines.append(
            f"carry {carry['workspace']}: {carry['bytes']} bytes, sha256 {carry['sha256'][:12]}, "
            f"written {_ago(carry['age_seconds'])} ago"
            + (f" [{'; '.join(flags)}]" if flags else " [fresh]")
        )
    if report["last_error"]:
        error = report["last_error"]
        lines.append(
            f"last error: {error['message']} ({error['where']}, {_ago(now - error['at'])} ago)"
        )
    lines.append("health: " + ("ok" if report["healthy"] else "; ".join(report["problems"])))
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """Print the status; return 0 when healthy, 1 when degraded or stale."""
    now = time.time()
    report = status_report(settings, now=now)
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        print(render_text(report, now=now))
    return 0 if report["healthy"] else 1
