"""The running daemon's own record: `DaemonState`, kept in memory and mirrored to
`<state>/daemon.json` (`carryd.daemon.state` writes and reads the file itself).

`carryd status` renders it (`carryd.daemon.running.status`); the hooks read it to judge freshness.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from carryd.daemon.state import state_file, write_json_atomic

if TYPE_CHECKING:
    from carryd.daemon.carries.writing import CarryResult
    from carryd.daemon.config import Settings
    from carryd.daemon.indexer.indexing import SyncReport
    from carryd.daemon.indexer.verifying import VerifyReport

log = logging.getLogger(__name__)


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
