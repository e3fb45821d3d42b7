"""`carryd status`: is the daemon running, is the model loaded, are the carries fresh.

The daemon's own record (`DaemonState`, daemon.json) lives in `carryd.daemon.state`, carry
freshness in `carryd.daemon.layout`; this module renders them.
- `status_report()`: asks the daemon over the control socket when one answers, else reads
  daemon.json; then looks at the index counts and every workspace's carry on disk itself.
  It never loads the embedding model, so it is instant.

Health (the exit code): 0 when the model is usable and every carry is fresh and planned
(not a fallback); 1 when the model is degraded, a carry is missing, stale (a source file is
newer than the carry) or a fallback.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon import control
from carryd.daemon.errors import ConfigError
from carryd.daemon.layout import carry_report, list_workspaces
from carryd.daemon.model import model_identity_text
from carryd.daemon.state import pid_alive, read_state

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)


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


def status_report(settings: Settings, *, now: float | None = None) -> dict[str, Any]:
    """Given settings, return the whole status (the JSON `carryd status --json` prints)."""
    if not settings.root_path.is_dir():
        raise ConfigError(f"root {settings.root_path}: not a folder (pass --root DIR)")
    now = time.time() if now is None else now
    live = None
    with contextlib.suppress(OSError):
        live = control.request(settings, "status", {}, timeout=2.0)
    recorded = live if live is not None else read_state(settings)
    daemon = _daemon_section(live, recorded, now)
    model = _model_section(settings, live, recorded)
    counts = live.get("counts") if live is not None else None
    if counts is None:
        try:
            counts = index_counts(settings)
        except Exception as error:  # noqa: BLE001 — status must report a broken index, not die
            counts = None
            daemon["index_error"] = f"{type(error).__name__}: {error}"
    checked = (recorded or {}).get("carries_checked") or {}
    carries = [
        carry_report(settings, workspace, checked_at=checked.get(workspace), now=now)
        for workspace in list_workspaces(settings)
    ]
    problems = _problems(daemon, model, carries)
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


def _daemon_section(
    live: dict[str, Any] | None, recorded: dict[str, Any] | None, now: float
) -> dict[str, Any]:
    """Given the live answer (None: no daemon answered) and the last record, return whether
    the daemon runs and what it did."""
    running = live is not None or (
        recorded is not None
        and recorded.get("state") not in ("stopped", None)
        and pid_alive(recorded.get("pid"))
    )
    return {
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


def _model_section(
    settings: Settings, live: dict[str, Any] | None, recorded: dict[str, Any] | None
) -> dict[str, Any]:
    """Given the live answer and the last record, return the model's identity and health
    (judged without loading it when no daemon answers)."""
    if live is not None and isinstance(live.get("model"), dict):
        return dict(live["model"])
    reason = probe_model(settings)
    remembered = (recorded or {}).get("model") or {}
    if reason is None and remembered.get("identity") == model_identity_text(settings):
        reason = remembered.get("degraded")
    return {"identity": model_identity_text(settings), "loaded": False, "degraded": reason}


def _problems(
    daemon: dict[str, Any], model: dict[str, Any], carries: list[dict[str, Any]]
) -> list[str]:
    """Given the daemon, model and carry sections, return what makes the status unhealthy."""
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
    return problems


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
