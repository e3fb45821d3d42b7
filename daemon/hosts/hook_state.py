"""What hooks remember between calls: each host session's usage (from the status line) and
trigger mark under `<root>/.carryd/sessions/`, and which setup problems the person was already
told (`hook-notices.json` in the user state folder, once a day per problem).

Best effort throughout: a read-only root or state folder costs at most a repeated instruction
or notice, never the hook's answer.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.hosts.handoff_trigger import TRANSCRIPT_TAIL_BYTES, SessionMark

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

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


def read_statusline(settings: Settings, key: str) -> float | None:
    """Given a session, return the usage its status line last reported (0–1), or None."""
    data = _read_session_file(settings, key, "statusline")
    value = data.get("fraction") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(max(float(value), 0.0), 1.0)


def record_statusline(settings: Settings, key: str, fraction: float) -> None:
    """Given a session's usage from the status line, keep it for the prompt hook (only when it
    changed: the status line runs after every message)."""
    if read_statusline(settings, key) == round(fraction, 4):
        return
    _write_session_file(settings, key, "statusline", {"fraction": round(fraction, 4)})


def read_mark(settings: Settings, key: str) -> SessionMark:
    return SessionMark.from_json(_read_session_file(settings, key, "trigger"))


def write_mark(settings: Settings, key: str, mark: SessionMark) -> None:
    _write_session_file(settings, key, "trigger", mark.to_json())


def read_tail(path: object) -> str | None:
    """Given a transcript path from the hook input, return its last bytes as text (or None)."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            return stream.read().decode("utf-8", errors="replace")
    except OSError:
        return None


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
    import platformdirs  # only when there is a problem to tell

    return Path(platformdirs.user_state_dir("carryd")) / "hook-notices.json"


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
