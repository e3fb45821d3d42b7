"""The running daemon's own record: `DaemonState`, kept in memory and mirrored to
`<state>/daemon.json` (written temp + os.replace, so a reader never sees half a file).

`carryd status` renders it (`carryd.daemon.status`); the hooks read it to judge freshness.
"""

from __future__ import annotations

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
    from carryd.daemon.carrying import CarryResult
    from carryd.daemon.config import Settings
    from carryd.daemon.indexing import SyncReport
    from carryd.daemon.verifying import VerifyReport

log = logging.getLogger(__name__)

STATE_FILE = "daemon.json"


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


def _report_fields(report: SyncReport | None) -> dict[str, Any]:
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
        report: SyncReport | None,
        carries: Iterable[CarryResult],
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

    def record_verify(self, report: VerifyReport) -> None:
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


def pid_alive(pid: object) -> bool:
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


# --- an index run in progress ------------------------------------------------------------

INDEXING_FILE = "indexing.json"


def indexing_file(settings: Settings) -> Path:
    return Path(settings.state_path) / INDEXING_FILE


def write_indexing(settings: Settings, data: dict[str, Any]) -> None:
    """Given the progress of the running sync, record it for `carryd status` (best effort)."""
    try:
        write_json_atomic(indexing_file(settings), data)
    except OSError as error:
        log.debug("cannot record indexing progress in %s: %s", indexing_file(settings), error)


def clear_indexing(settings: Settings) -> None:
    """Given settings, forget the progress record (the sync finished)."""
    try:
        indexing_file(settings).unlink()
    except FileNotFoundError:
        pass
    except OSError as error:
        log.debug("cannot remove %s: %s", indexing_file(settings), error)


def read_indexing(settings: Settings) -> dict[str, Any] | None:
    """Given settings, return the progress record of a sync that has not finished (running,
    or interrupted when its pid is gone), or None."""
    try:
        data = json.loads(indexing_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- the last index run ------------------------------------------------------------------

LAST_INDEX_FILE = "last-index.json"


def record_last_index(settings: Settings, *, identity: str, degraded: str | None) -> None:
    """Given the model a sync used (its status name) and why it made no vectors (None: it
    did, or had none to make), remember it: with no daemon, status judges the model by it."""
    try:
        write_json_atomic(
            settings.state_path / LAST_INDEX_FILE,
            {"at": time.time(), "pid": os.getpid(), "identity": identity, "degraded": degraded},
        )
    except OSError as error:
        log.debug("cannot record the index run: %s", error)


def read_last_index(settings: Settings) -> dict[str, Any] | None:
    """Given settings, return what the last `carryd index` recorded about the model."""
    try:
        data = json.loads((settings.state_path / LAST_INDEX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
