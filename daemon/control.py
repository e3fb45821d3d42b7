"""The daemon's control socket: newline-delimited JSON over `<root>/.carryd/carryd.sock`.

One request per line, one answer per line:

    → {"method": "recall", "params": {"query": "…", "workspace": "w"}}
    ← {"ok": true, "result": {…}}
    ← {"ok": false, "error": {"kind": "usage"|"error"|"internal", "message": "…"}}

Methods (registered by `carryd.daemon.running.run`): `ping`, `status`, `recall`, `expand`.

`ControlServer` owns an accept thread (a selector over the listening socket and a wake-up
pipe, so it costs nothing while idle) and one thread per connection; `stop()` closes every
connection and joins every thread. The socket is created mode 0600 (owner only).

`request()` is the client: it answers None, fast, whenever no daemon answers (no socket,
connection refused, a stale socket left by a crashed daemon, a timeout, a daemon-internal
failure), so that callers fall back to doing the work in-process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import socket
import stat
import struct
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from carryd.daemon.errors import UsageError
from carryd.daemon.state import refuse_redirected_state
from carryd.index.errors import CarrydError
from carryd.index.state_folder import refuse_linked_folder

log = logging.getLogger(__name__)

Handler = Callable[[Mapping[str, Any]], dict[str, Any]]
ErrorKind = Literal["usage", "error", "internal"]

MAX_LINE_BYTES = 4 * 1024 * 1024
CONNECT_TIMEOUT = 0.1
SOCKET_MODE = 0o600
# sockaddr_un.sun_path holds 108 bytes on Linux, 104 on macOS (with the NUL).
_MAX_SUN_PATH = 100


class ControlError(CarrydError):
    """The control socket cannot be created safely (path, owner or mode)."""


# --- addresses ---------------------------------------------------------------------------


@contextlib.contextmanager
def _unix_address(path: Path) -> Iterator[str]:
    """Given a socket path, yield an address `bind`/`connect` accept, even for long paths.

    Temp roots easily exceed sun_path's ~104 bytes; on Linux the folder is then reached
    through /proc/self/fd/<dirfd>/, which the kernel resolves like any path.
    """
    if len(os.fsencode(str(path))) < _MAX_SUN_PATH or not sys.platform.startswith("linux"):
        yield str(path)
        return
    directory = os.open(str(path.parent), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def _connect(path: Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(timeout)
        with _unix_address(path) as address:
            sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def socket_answers(path: Path, *, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Given a socket path, return whether something listens there (False for a stale file)."""
    try:
        sock = _connect(path, timeout)
    except OSError:
        return False
    sock.close()
    return True


# --- client ------------------------------------------------------------------------------


def request(
    settings: Any, method: str, params: Mapping[str, Any], *, timeout: float = 5.0
) -> dict[str, Any] | None:
    """Given settings, a method and its params, return the running daemon's answer.

    None when no daemon answers (so the caller works in-process). A request the daemon
    rejects raises `UsageError` (bad params, exit 2) or `CarrydError` (exit 1), exactly as
    the in-process path would.
    """
    path = Path(settings.socket_path)
    if not os.path.lexists(path):
        return None
    refuse_redirected_state(settings)  # a linked or foreign `.carryd` or socket: named, refused
    try:
        sock = _connect(path, min(timeout, CONNECT_TIMEOUT))
    except OSError as error:
        log.debug("no daemon at %s: %s", path, error)
        return None
    try:
        _refuse_foreign_peer(sock, path)
        sock.settimeout(timeout)
        line = json.dumps({"method": method, "params": dict(params)}, ensure_ascii=False)
        sock.sendall(line.encode("utf-8") + b"\n")
        answer = _read_line(sock)
    except OSError as error:
        log.warning("daemon at %s did not answer %r: %s; working in-process", path, method, error)
        return None
    finally:
        sock.close()
    if answer is None:
        log.warning("daemon at %s closed the connection; working in-process", path)
        return None
    try:
        message = json.loads(answer)
    except ValueError:
        log.warning("daemon at %s answered garbage; working in-process", path)
        return None
    if not isinstance(message, dict):
        return None
    if message.get("ok") is True and isinstance(message.get("result"), dict):
        return message["result"]
    failure = message["error"] if isinstance(message.get("error"), dict) else {}
    kind, text = failure.get("kind"), str(failure.get("message", "unknown daemon error"))
    if kind == "usage":
        raise UsageError(text)
    if kind == "error":
        raise CarrydError(text)
    log.warning("daemon at %s failed on %r: %s; working in-process", path, method, text)
    return None


def _refuse_foreign_peer(sock: socket.socket, path: Path) -> None:
    """Given a connected socket, raise ControlError unless the process serving it runs as
    this user (SO_PEERCRED; where the platform has none, the socket file's owner, checked
    before, is the guard): another user's process must not answer recall or expand."""
    if not hasattr(socket, "SO_PEERCRED"):
        return
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", credentials)
    if uid != os.geteuid():
        raise ControlError(
            f"{path}: the process answering carryd's control socket (pid {pid}) runs as uid "
            f"{uid}, not as you (uid {os.geteuid()}); carryd does not trust its answers: stop "
            f"it, or remove the socket"
        )


def _read_line(sock: socket.socket) -> bytes | None:
    """Given a connected socket, return one line (without the newline), or None at EOF."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_LINE_BYTES:
            raise OSError("answer line too long")


# --- server ------------------------------------------------------------------------------


def answer_for(handlers: Mapping[str, Handler], line: bytes) -> dict[str, Any]:
    """Given the method table and one request line, return the answer object."""
    try:
        message = json.loads(line)
    except ValueError:
        return _failure("usage", "request is not JSON")
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return _failure("usage", 'request must be {"method": str, "params": {…}}')
    method = message["method"]
    params = message.get("params", {})
    if not isinstance(params, dict):
        return _failure("usage", f"{method}: params must be an object")
    handler = handlers.get(method)
    if handler is None:
        known = ", ".join(sorted(handlers))
        return _failure("usage", f"unknown method {method!r} (known: {known})")
    try:
        return {"ok": True, "result": handler(params)}
    except UsageError as error:
        return _failure("usage", str(error))
    except CarrydError as error:
        return _failure("error", str(error))
    except Exception as error:  # noqa: BLE001 — the per-request boundary: log, answer, go on
        log.exception("control method %s failed", method)
        return _failure("internal", f"{type(error).__name__}: {error}")


def _failure(kind: ErrorKind, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"kind": kind, "message": message}}


class ControlServer:
    """Serve `handlers` on a unix socket at `path` (mode 0600) until `stop()`.

    Each handler runs on its connection's thread, concurrently with the daemon's sync
    worker; handlers that touch SQLite must bring their own connection (see run.py).
    """

    def __init__(
        self,
        path: Path,
        handlers: Mapping[str, Handler],
        *,
        max_connections: int = 16,
        idle_timeout: float = 60.0,
    ) -> None:
        self.path = Path(path)
        self.handlers = dict(handlers)
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self._listener: socket.socket | None = None
        self._wake_read, self._wake_write = -1, -1
        self._accept_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._stopping = threading.Event()
        self._serial = 0

    # lifecycle

    def start(self) -> None:
        """Bind the socket (replacing a stale one), verify its mode, start accepting."""
        self._listener = bind_socket(self.path)
        self._listener.setblocking(False)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="carryd-control-accept"
        )
        self._accept_thread.start()
        log.info("control socket listening at %s", self.path)

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop accepting, close every connection, join every thread, remove the socket."""
        self._stopping.set()
        if self._wake_write >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_write, b"x")
        if self._accept_thread is not None:
            self._accept_thread.join(timeout)
        with self._lock:
            connections = dict(self._connections)
        for sock in connections.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in connections:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("control connection thread %s did not finish", thread.name)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for descriptor in (self._wake_read, self._wake_write):
            if descriptor >= 0:
                os.close(descriptor)
        self._wake_read = self._wake_write = -1

    def __enter__(self) -> ControlServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # threads

    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._listener:
                        self._accept_one()

    def _accept_one(self) -> None:
        assert self._listener is not None
        try:
            connection, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            log.warning("control socket accept failed: %s", error)
            return
        connection.setblocking(True)
        connection.settimeout(self.idle_timeout)
        with self._lock:
            self._reap()
            if self._stopping.is_set() or len(self._connections) >= self.max_connections:
                busy = _failure("internal", "daemon busy: too many control connections")
                with contextlib.suppress(OSError):
                    connection.sendall(json.dumps(busy).encode() + b"\n")
                connection.close()
                return
            self._serial += 1
            thread = threading.Thread(
                target=self._serve,
                args=(connection,),
                name=f"carryd-control-{self._serial}",
            )
            self._connections[thread] = connection
        thread.start()

    def _reap(self) -> None:
        """Forget finished connection threads (called with the lock held)."""
        for thread in [t for t in self._connections if not t.is_alive() and t.ident is not None]:
            thread.join()
            del self._connections[thread]

    def _serve(self, connection: socket.socket) -> None:
        buffer = b""
        try:
            while not self._stopping.is_set():
                newline = buffer.find(b"\n")
                if newline < 0:
                    if len(buffer) > MAX_LINE_BYTES:
                        self._send(connection, _failure("usage", "request line too long"))
                        return
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    continue
                line, buffer = buffer[:newline], buffer[newline + 1 :]
                if line.strip():
                    self._send(connection, answer_for(self.handlers, line))
        except OSError as error:  # timeouts, resets, our own shutdown() at stop
            log.debug("control connection ended: %s", error)
        finally:
            connection.close()

    @staticmethod
    def _send(connection: socket.socket, answer: dict[str, Any]) -> None:
        data = json.dumps(answer, ensure_ascii=False, default=str).encode("utf-8")
        connection.sendall(data + b"\n")


def bind_socket(path: Path) -> socket.socket:
    """Given the socket path, return a listening socket there, mode 0600, owned by us.

    A socket file nobody listens on (a crashed daemon's) is replaced; a live one is not
    (the caller holds the daemon lock, so that would be another root's misconfiguration).
    """
    refuse_linked_folder(path.parent)
    path.parent.mkdir(mode=0o700, exist_ok=True)  # in the root; never the root itself
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ControlError(f"{path}: exists and is not a socket; remove it and start again")
        if socket_answers(path):
            raise ControlError(f"{path}: another process already listens on this socket")
        log.info("removing stale control socket %s (left by a daemon that crashed)", path)
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        # The umask closes the window between bind() and chmod() in which the socket would
        # carry the default mode; chmod then makes the mode explicit whatever the umask was.
        previous = os.umask(0o177)
        try:
            with _unix_address(path) as address:
                listener.bind(address)
        finally:
            os.umask(previous)
        os.chmod(path, SOCKET_MODE)
        info = path.lstat()
        if (
            not stat.S_ISSOCK(info.st_mode)
            or stat.S_IMODE(info.st_mode) != SOCKET_MODE
            or info.st_uid != os.getuid()
        ):
            raise ControlError(
                f"{path}: socket mode {stat.S_IMODE(info.st_mode):o}, owner {info.st_uid}; "
                f"expected {SOCKET_MODE:o} owned by uid {os.getuid()}"
            )
        listener.listen(32)
    except BaseException:
        listener.close()
        raise
    return listener
