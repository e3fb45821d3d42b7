"""The state folder's records: `<state>/daemon.json` (the running daemon's record, which
`carryd.daemon.running.daemon_state.DaemonState` keeps), the progress of an index run and what
the last one recorded about the model. Each is written temp + os.replace, so a reader never
sees half a file.

`carryd status` renders them (`carryd.daemon.running.status`); the hooks read daemon.json to
judge freshness.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.files import write_atomic
from carryd.index.errors import IndexUnavailable
from carryd.index.state_folder import refuse_linked_folder

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

STATE_FILE = "daemon.json"


def refuse_redirected_state(settings: Settings) -> None:
    """Given settings, raise IndexUnavailable (naming the path) when `<root>/.carryd`, its
    carry folder or the control socket is a symbolic link or another user's: state stays in
    the root and belongs to the person running carryd. Every writer checks before it writes
    (the index and daemon locks, the store, the socket)."""
    if not settings.root_path.is_dir():
        raise IndexUnavailable(
            f"{settings.root_path}: the memory root is not a folder (moved, deleted or never "
            f"made); carryd does not create it: pass --root DIR, or `carryd init DIR` for a new one"
        )
    refuse_linked_folder(settings.state_path)
    refuse_linked_folder(settings.carry_dir, what="carryd's carry folder")
    refuse_linked_folder(settings.socket_path, what="carryd's control socket")


def state_file(settings: Settings) -> Path:
    return settings.state_path / STATE_FILE


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Given a path and a JSON object, replace the file in one step."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    write_atomic(path, text.encode("utf-8"), parents=False)


def read_state(settings: Settings) -> dict[str, Any] | None:
    """Given settings, return the last daemon.json, or None when absent or unreadable."""
    try:
        data = json.loads(state_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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


# --- the files the last whole-root sync skipped ------------------------------------------

SKIPPED_FILE = "skipped.json"


def record_skipped(settings: Settings, skipped: list[dict[str, str]]) -> None:
    """Given the files a whole-root sync skipped ({path, reason} each), remember them for
    `carryd status`: a skipped file is named there until it is fixed, not only once on stderr."""
    try:
        write_json_atomic(settings.state_path / SKIPPED_FILE, {"at": time.time(), "files": skipped})
    except OSError as error:
        log.debug("cannot record the skipped files: %s", error)


def read_skipped(settings: Settings) -> list[dict[str, str]]:
    """Given settings, return the files the last whole-root sync skipped ({path, reason})."""
    try:
        data = json.loads((settings.state_path / SKIPPED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    files = data.get("files") if isinstance(data, dict) else None
    return [item for item in files if isinstance(item, dict)] if isinstance(files, list) else []
