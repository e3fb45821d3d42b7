"""What hooks remember between calls: each host session's usage (from the status line) and
trigger mark under `<root>/.carryd/sessions/`, and which setup problems the person was already
told (`hook-notices.json` in the user state folder, once a day per problem).

Best effort throughout: a read-only root or state folder costs at most a repeated instruction
or notice, never the hook's answer.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
import zlib
from pathlib import Path

from carryd.daemon.hosts.handoff_trigger import TRANSCRIPT_TAIL_BYTES, SessionMark
from carryd.daemon.hosts.hook_settings import LazyLog, state_dir

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any

    from carryd.daemon.config import Settings

log = LazyLog(__name__)

__all__ = [
    "read_mark",
    "read_statusline",
    "read_tail",
    "record_statusline",
    "session_key",
    "tell_once",
    "write_mark",
]

SESSIONS_DIR = "sessions"
SAFE_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
# A notice about the same problem is repeated at most once a day.
NOTICE_TTL_SECONDS = 24 * 3600
# Session state older than this is dropped when a new session's state is first written.
SESSION_TTL_SECONDS = 14 * 24 * 3600
NOTICE_CHARS = 300


# --- per-session state ------------------------------------------------------------------------


def session_key(data: dict[str, Any]) -> str | None:
    """Given hook input, return a file-safe key for its session (None when nothing names it):
    the id itself when it is a plain one (hosts use UUIDs), else a readable part and a checksum
    (hashlib would load OpenSSL, ~5 ms of every prompt)."""
    session = data.get("session_id")
    if not isinstance(session, str) or not session:
        # No id: the transcript names the session as well (one file per session).
        session = data.get("transcript_path")
    if not isinstance(session, str) or not session:
        return None
    if len(session) <= 64 and set(session) <= SAFE_KEY_CHARS:
        return session
    checksum = zlib.crc32(session.encode("utf-8", errors="replace"))
    readable = "".join(c if c in SAFE_KEY_CHARS else "_" for c in session[:40])
    return f"{readable}-{checksum:08x}"


def read_statusline(settings: Settings, key: str) -> dict[str, Any] | None:
    """Given a session, return what its status line last reported: `used` tokens, the model's
    `window`, the `model` id and when (`at`), or None."""
    data = _read_session_file(settings, key, "statusline")
    if not isinstance(data, dict):
        return None
    used, window, at = data.get("used"), data.get("window"), data.get("at")
    if not isinstance(used, int | float) or not isinstance(window, int | float):
        return None
    if not _count(used) or not _count(window):
        return None
    model = data.get("model") if isinstance(data.get("model"), str) else None
    when = float(at) if isinstance(at, int | float) else 0.0
    return {"used": int(used), "window": int(window), "model": model, "at": when}


def record_statusline(
    settings: Settings, key: str, *, used: int, window: int, model: str | None
) -> None:
    """Given a session's usage from the status line, keep it for the other hooks (rewritten
    only when it changed: the status line runs after every message)."""
    before = read_statusline(settings, key)
    if before and (before["used"], before["window"], before["model"]) == (used, window, model):
        return
    record = {"used": used, "window": window, "model": model, "at": time.time()}
    _write_session_file(settings, key, "statusline", record)


def read_hint(settings: Settings, key: str, asked: str, *, ttl: float) -> str | None:
    """Given a session and what its status line asks (the folder and whether it is at the
    hand-off point), return the carry hint it got for the same question less than `ttl`
    seconds ago while the workspace's carry, manifest, ledger and plan stayed as they were,
    or None."""
    data = _read_session_file(settings, key, "hint")
    if not isinstance(data, dict) or data.get("asked") != asked:
        return None
    at, hint, workspace = data.get("at"), data.get("hint"), data.get("workspace")
    if not isinstance(at, int | float) or not isinstance(hint, str):
        return None
    if not 0 <= time.time() - at < ttl:
        return None
    if isinstance(workspace, str) and data.get("stamp") != _stamp(settings, workspace):
        return None
    return hint


def record_hint(settings: Settings, key: str, asked: str, hint: str, workspace: str | None) -> None:
    record = {"asked": asked, "hint": hint, "at": time.time(), "workspace": workspace}
    if workspace is not None:
        record["stamp"] = _stamp(settings, workspace)
    _write_session_file(settings, key, "hint", record)


def _stamp(settings: Settings, workspace: str) -> list[list[int]]:
    """The size and mtime of the files a carry hint depends on most."""
    folder = settings.root_path / workspace
    files = (
        settings.carry_dir / f"{workspace}.md",
        settings.carry_dir / f"{workspace}.json",
        folder / settings.carry.ledger_file,
        folder / settings.carry.plan_file,
    )
    stamp = []
    for path in files:
        try:
            info = os.stat(path)
            stamp.append([info.st_size, info.st_mtime_ns])
        except OSError:
            stamp.append([-1, -1])
    return stamp


def _count(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def read_mark(settings: Settings, key: str) -> SessionMark:
    return SessionMark.from_json(_read_session_file(settings, key, "trigger"))


def write_mark(settings: Settings, key: str, mark: SessionMark) -> None:
    _write_session_file(settings, key, "trigger", mark.to_json())


def read_tail(path: object, limit: int = TRANSCRIPT_TAIL_BYTES) -> tuple[str, float] | None:
    """Given a transcript path from the hook input, return its last `limit` bytes as text and
    its mtime, or None: only a regular file is read (a FIFO, a device such as /dev/zero or
    /dev/urandom, a folder or a socket never is), opened without blocking and read bounded."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW_FIFO)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(0, info.st_size - limit)
        chunks, wanted = [], info.st_size - start
        os.lseek(handle, start, os.SEEK_SET)
        while wanted > 0:
            chunk = os.read(handle, min(wanted, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace"), info.st_mtime
    except OSError:
        return None
    finally:
        os.close(handle)


# O_NOCTTY: a terminal device named as a transcript never becomes the hook's terminal.
_NOFOLLOW_FIFO = getattr(os, "O_NOCTTY", 0)


def _read_session_file(settings: Settings, key: str, kind: str) -> Any:
    try:
        path = settings.state_path / SESSIONS_DIR / f"{key}.{kind}.json"
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_session_file(settings: Settings, key: str, kind: str, data: dict[str, Any]) -> None:
    """Write one session's state (owner-only, temp + rename)."""
    try:
        folder = settings.state_path / SESSIONS_DIR
        for directory in (settings.state_path, folder):  # carryd's state is owner-only
            if not directory.is_dir():
                directory.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{key}.{kind}.json"
        if not path.exists():
            _prune(folder, time.time())
        _replace(path, json.dumps(data).encode("utf-8"))
    except OSError as error:
        log.warning("carryd hook: cannot keep session state: %s", error)


def _prune(folder: Path, now: float) -> None:
    for entry in os.scandir(folder):
        try:
            if entry.is_file() and now - entry.stat().st_mtime > SESSION_TTL_SECONDS:
                os.unlink(entry.path)
        except OSError:
            continue


def _replace(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(handle, data)
    finally:
        os.close(handle)
    os.replace(temporary, path)


# --- telling the person once ------------------------------------------------------------------


def notices_path() -> Path:
    folder = state_dir()
    if folder is None:
        import platformdirs  # only when there is a problem to tell, off Linux

        folder = Path(platformdirs.user_state_dir("carryd"))
    return folder / "hook-notices.json"


def notice_text(text: str) -> str:
    """Given a problem's description, return it as one short line that names carryd."""
    line = " ".join(text.split())
    if not line.startswith("carryd"):
        line = f"carryd: {line}"
    return line if len(line) <= NOTICE_CHARS else line[: NOTICE_CHARS - 1] + "…"


def tell_once(key: str, problem: str, *, now: float | None = None) -> str | None:
    """Given a problem and a key naming it, return the notice for the person the first time
    (and again after a day), None otherwise; the notice also goes to stderr."""
    now = time.time() if now is None else now
    path = notices_path()
    try:
        told = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        told = {}
    if not isinstance(told, dict):
        told = {}
    told = {
        k: v for k, v in told.items() if isinstance(v, int | float) and now - v < NOTICE_TTL_SECONDS
    }
    if key in told:
        return None
    told[key] = now
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _replace(path, json.dumps(told).encode("utf-8"))
    except OSError as error:
        log.warning("carryd hook: cannot remember notices: %s", error)
    notice = notice_text(problem)
    print(notice, file=sys.stderr)
    return notice
