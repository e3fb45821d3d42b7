"""`carryd status`: is the daemon running, is the model loaded, are the carries fresh.

The daemon's own record (`DaemonState`, daemon.json) lives in `carryd.daemon.state`, carry
freshness in `carryd.daemon.layout`; this module renders them.
- `status_report()`: asks the daemon over the control socket when one answers, else reads
  daemon.json; then looks at the index counts and every workspace's carry on disk itself.
  It never loads the embedding model, so it is instant.

Health (the exit code): 0 when the model is usable, no index run is under way or was cut
short, and every carry is intact, fresh and planned (not a fallback); 1 when the model is
degraded (judged from the model folder's files, the daemon's record or the last `carryd index`),
an index run is in progress (`indexing`, with its counts) or was interrupted, or a carry is
missing, damaged (its bytes differ from its manifest), stale or a fallback. `next` says what
to run about each problem (`carryd carry`, `carryd index`, start the daemon).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon import control
from carryd.daemon.errors import ConfigError
from carryd.daemon.indexer.calibrating import stored_calibration
from carryd.daemon.indexer.model import load_embedder_for, model_cache_dir, model_identity_text
from carryd.daemon.indexer.model_fetch import guard_for, local_clock
from carryd.daemon.indexer.vector_sets import re_embedding_progress, re_embedding_text
from carryd.daemon.layout import carry_report, list_workspaces
from carryd.daemon.state import (
    pid_alive,
    read_indexing,
    read_last_index,
    read_skipped,
    read_state,
)

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)


def probe_model(settings: Settings) -> str | None:
    """Given settings, return why the model cannot load, judged without loading it (or None).

    Only a local folder can be judged this cheaply (its files: an ONNX file, tokenizer.json,
    a known dimension); the default model is judged by the daemon that loaded it (its
    daemon.json) or by the last `carryd index` that tried, else left unknown.
    """
    folder = settings.model.model_path
    if not folder:
        return None
    path = Path(folder).expanduser()
    if not path.is_dir():
        return f"model folder {path} does not exist"
    if not (path / settings.model.file).is_file() and not any(path.glob("**/*.onnx")):
        return f"model folder {path} holds no .onnx file"

    _, reason = load_embedder_for(settings, lazy=True)
    return None if reason is None else str(reason)


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


def index_calibration(
    settings: Settings,
) -> tuple[dict[str, Any] | None, dict[str, object] | None]:
    """Given settings, return (the semantic calibration the index stores: source, pairs,
    floor, ceiling, …, and whether it is the current model's; how far a model change's
    re-embedding is), each None when there is none. Reads a few meta rows in one open of the
    index; never loads the model (its identity is resolved from its files)."""
    if not settings.db_path.exists():
        return None, None
    from carryd.index.store import Store, diagnose

    if diagnose(settings.db_path) is not None:
        return None, None  # index_counts reports it
    with Store.open(settings.db_path) as store:
        stored = stored_calibration(store)
        re_embedding = re_embedding_progress(store)
    if stored is None:
        return None, re_embedding
    embedder, _ = load_embedder_for(settings, lazy=True)
    calibration = stored.calibration
    return {
        "source": calibration.source,
        "pairs": stored.pairs,
        "entries": stored.entries,
        "floor": calibration.floor,
        "ceiling": calibration.ceiling,
        "ramp_from": calibration.ramp_from,
        "reads_chinese": calibration.multilingual,
        "current_model": embedder is not None and embedder.identity.key() == stored.identity,
        "summary": stored.summary(),
    }, re_embedding


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
    try:
        calibration, re_embedding = index_calibration(settings)
    except Exception:  # noqa: BLE001 — status reports a broken index once, above
        calibration = re_embedding = None
    checked = (recorded or {}).get("carries_checked") or {}
    carries = [
        carry_report(settings, workspace, checked_at=checked.get(workspace), now=now)
        | {"unrecognised_sections": _unrecognised_sections(settings, workspace)}
        for workspace in list_workspaces(settings)
    ]
    indexing = _indexing_section(settings, now)
    problems = _problems(daemon, model, carries, indexing)
    return {
        "healthy": not problems,
        "problems": problems,
        "next": _next_steps(settings, daemon, counts, indexing, carries)
        + ([] if re_embedding is None or daemon["running"] else [_finish(settings)]),
        "root": str(settings.root_path),
        "daemon": daemon,
        "model": model,
        "indexing": indexing,
        "counts": counts,
        "calibration": calibration,
        "re_embedding": re_embedding,
        "skipped": read_skipped(settings),
        "last_sync": (recorded or {}).get("last_sync"),
        "last_verify": (recorded or {}).get("last_verify"),
        "last_error": (recorded or {}).get("last_error"),
        "carries": carries,
        "hand_off_points": hand_off_points(settings, now),
    }


def _unrecognised_sections(settings: Settings, workspace: str) -> list[str]:
    """Given a workspace, return the ledger headings its manifest says are outside the
    section table (carried at the lowest weight; issue 10 item 3), [] when none or unknown."""
    try:
        manifest = json.loads((settings.carry_dir / f"{workspace}.json").read_text("utf-8"))
        names = manifest.get("unrecognised_sections") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [str(name) for name in names] if isinstance(names, list) else []


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
    identity = model_identity_text(settings)
    remembered = {
        **((recorded or {}).get("model") or {}),
        "at": (recorded or {}).get("started_at"),
    }
    last_index = read_last_index(settings) or {}
    # The newer of the two judgements of this model wins: the daemon's, the last index run's.
    judged = sorted(
        (record for record in (remembered, last_index) if record.get("identity") == identity),
        key=lambda record: record.get("at") or 0,
    )
    if reason is None and judged:
        reason = judged[-1].get("degraded")
    section: dict[str, Any] = {"identity": identity, "loaded": False, "degraded": reason}
    failure = download_failure(settings)
    if failure is not None:
        section["download_failed"] = failure
        if reason is None:
            section["degraded"] = (
                f"the default model's download failed at {failure['at']} ({failure['reason']}); "
                f"carryd tries again after {failure['retry_after']}"
            )
    return section


def download_failure(settings: Settings) -> dict[str, str] | None:
    """Given settings, return the default model's remembered download failure (when, why,
    when carryd tries again), or None: none is remembered, or a local model folder is set."""
    if settings.model.model_path:
        return None
    guard = guard_for(model_cache_dir(settings), settings.model)
    remembered = guard.remembered_failure(settings.model.name)
    if remembered is None:
        return None
    failed_at, retry_at, why = remembered
    return {"at": local_clock(failed_at), "retry_after": local_clock(retry_at), "reason": why}


def _indexing_section(settings: Settings, now: float) -> dict[str, Any] | None:
    """Given settings, return the index run under way or cut short (None: none is)."""
    record = read_indexing(settings)
    if record is None:
        return None
    running = pid_alive(record.get("pid"))
    return {
        "running": running,
        "interrupted": not running,
        "pid": record.get("pid"),
        "embedded": record.get("embedded"),
        "to_embed": record.get("to_embed"),
        "files_committed": record.get("files_committed"),
        "files_to_commit": record.get("files_to_commit"),
        "started_at": record.get("started_at"),
        "updated_seconds_ago": (
            round(now - record["updated_at"], 3)
            if isinstance(record.get("updated_at"), int | float)
            else None
        ),
    }


def _indexing_text(indexing: dict[str, Any]) -> str:
    counts = (
        f"this run has embedded {indexing.get('embedded')} of the {indexing.get('to_embed')} "
        f"entries it embeds, committed {indexing.get('files_committed')} of "
        f"{indexing.get('files_to_commit')} files"
    )
    if indexing["running"]:
        return f"indexing in progress (pid {indexing.get('pid')}): {counts}; the index is partial"
    return f"an index run (pid {indexing.get('pid')}) stopped before finishing: {counts}"


def _finish(settings: Settings) -> str:
    return (
        f"`carryd index --root {settings.root_path}` finishes the re-embedding (it resumes "
        "where it stopped)"
    )


def _next_steps(
    settings: Settings,
    daemon: dict[str, Any],
    counts: dict[str, int] | None,
    indexing: dict[str, Any] | None,
    carries: list[dict[str, Any]],
) -> list[str]:
    """Given the sections, return the commands that would fix what is wrong, in order."""
    root = f" --root {settings.root_path}"
    steps: list[str] = []
    if indexing is not None and indexing["running"]:
        steps.append("wait for the index run to finish (`carryd status` shows its progress)")
    elif indexing is not None and indexing["interrupted"] and not daemon["running"]:
        steps.append(f"`carryd index{root}` finishes the index (it resumes where it stopped)")
    elif counts is None and not daemon["running"]:
        steps.append(f"`carryd index{root}` builds the index")
    unhappy = [c["workspace"] for c in carries if c["state"] in ("missing", "damaged", "stale")]
    if unhappy and not daemon["running"]:
        steps.append(
            f"`carryd carry{root}` writes the carries ({', '.join(unhappy)}); or start the "
            f"daemon (`carryd run{root}`, or `carryd service install{root}`) to keep every "
            "carry fresh"
        )
    elif unhappy:
        steps.append(
            "the daemon rewrites these carries on its next sync; `carryd carry` does it now"
        )
    return steps


def _problems(
    daemon: dict[str, Any],
    model: dict[str, Any],
    carries: list[dict[str, Any]],
    indexing: dict[str, Any] | None = None,
) -> list[str]:
    """Given the daemon, model, indexing and carry sections, return what makes the status
    unhealthy."""
    problems: list[str] = []
    if daemon.get("index_error"):
        problems.append(f"index: {daemon['index_error']}")
    if model.get("degraded"):
        problems.append(f"model degraded: {model['degraded']}")
    if indexing is not None:
        problems.append(_indexing_text(indexing))
    for carry in carries:
        if not carry["exists"]:
            problems.append(f"carry {carry['workspace']}: missing")
        elif carry["damaged"]:
            problems.append(f"carry {carry['workspace']}: damaged ({carry['damaged']})")
        elif carry["stale"]:
            source = carry.get("changed_source")
            problems.append(f"carry {carry['workspace']}: stale ({source} changed since)")
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


SKIPPED_SHOWN = 10


def _carry_line(carry: dict[str, Any]) -> str:
    """Given one carry's section of the report, return its status line."""
    if not carry["exists"]:
        return f"carry {carry['workspace']}: MISSING ({carry['path']})"
    if carry["damaged"]:
        return f"carry {carry['workspace']}: DAMAGED ({carry['damaged']})"
    flags = []
    if carry["stale"]:
        flags.append(f"STALE: {carry.get('changed_source')} changed since it was written")
    if carry["fallback"]:
        flags.append(f"FALLBACK: {carry['reason']}")
    if carry.get("unrecognised_sections"):
        names = ", ".join(f"'{name}'" for name in carry["unrecognised_sections"])
        flags.append(f"ledger sections outside the table, carried last: {names}")
    return (
        f"carry {carry['workspace']}: {carry['bytes']} bytes, sha256 {carry['sha256'][:12]}, "
        f"written {_ago(carry['age_seconds'])} ago"
        + (f" [{'; '.join(flags)}]" if flags else " [fresh]")
    )


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
            f"{counts.get('vectors', 0)} of them with a vector"
        )
    skipped = report.get("skipped") or []
    for item in skipped[:SKIPPED_SHOWN]:
        lines.append(f"skipped: {item.get('path')}: {item.get('reason')}")
    if len(skipped) > SKIPPED_SHOWN:
        lines.append(f"skipped: {len(skipped) - SKIPPED_SHOWN} more (`carryd status --json`)")
    if report.get("re_embedding"):
        lines.append(re_embedding_text(report["re_embedding"]))
    calibration = report.get("calibration")
    if calibration:
        lines.append(
            f"calibration: {calibration['summary']}"
            + ("" if calibration["current_model"] else " (another model's: the next sync measures)")
        )
    if report.get("indexing"):
        lines.append(f"indexing: {_indexing_text(report['indexing'])}")
    last = report["last_sync"]
    if last:
        lines.append(
            f"last sync: {_ago(now - last['at'])} ago ({last['kind']}, {last['seconds']:.3f} s); "
            f"{daemon.get('syncs') or 0} syncs, {daemon.get('queued') or 0} queued"
        )
    lines.extend(_carry_line(carry) for carry in report["carries"])
    if report["last_error"]:
        error = report["last_error"]
        lines.append(
            f"last error: {error['message']} ({error['where']}, {_ago(now - error['at'])} ago)"
        )
    for session in report.get("hand_off_points") or ():
        lines.append(
            f"hand-off ({session['host'] or 'host'} session {session['session'][:12]}, "
            f"{_ago(session['age_seconds'])} ago): compacts at ~{session['compacts']} tokens "
            f"({session['source']}), hand-off at {session['hand_off']}, used {session['used']}"
        )
    # The model's reason (often several hundred characters) is on the model line; once is enough.
    problems = [
        "model degraded (see the model line)" if problem.startswith("model degraded:") else problem
        for problem in report["problems"]
    ]
    lines.append("health: " + ("ok" if report["healthy"] else "; ".join(problems)))
    for step in report.get("next") or ():
        lines.append(f"next: {step}")
    return "\n".join(lines)


# The sessions whose hand-off points `carryd status` shows: the newest few of the last day.
HAND_OFF_SESSIONS_SHOWN = 5
HAND_OFF_SESSIONS_SECONDS = 24 * 3600


def hand_off_points(settings: Settings, now: float) -> list[dict[str, Any]]:
    """Given the settings, return the hand-off points the hooks judged recent sessions by
    (newest first): where the host compacts, the hand-off point, the usage and where the
    compaction point came from, from `<state>/sessions/*.trigger.json`."""
    folder = settings.state_path / "sessions"
    found: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(".trigger.json"):
            continue
        try:
            age = now - entry.stat().st_mtime
            data = json.loads(Path(entry.path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        point = data.get("point") if isinstance(data, dict) else None
        if not isinstance(point, dict) or age > HAND_OFF_SESSIONS_SECONDS:
            continue
        found.append(
            {
                "session": entry.name.removesuffix(".trigger.json"),
                "age_seconds": round(max(age, 0.0), 1),
                **{k: point.get(k) for k in ("host", "used", "compacts", "hand_off", "source")},
            }
        )
    found.sort(key=lambda item: float(item["age_seconds"]))
    return found[:HAND_OFF_SESSIONS_SHOWN]
