"""One index writer at a time per memory root, across processes.

A sync reads files, plans against the files table, embeds and commits; two syncs interleaving
(the daemon's batch and a `carryd index`, or three `carryd index` runs) can commit what one of
them read before the other's newer read, and the index then disagrees with a file until the
next reconcile (issue 11, "Lost updates with concurrent writers"). So every writer (the daemon's
worker, `carryd index`, `carryd verify`'s repair) holds an exclusive flock on
`<state>/index.lock` for the whole sync: from reading the files table to the last commit.

The kernel drops the lock when its holder dies (even by kill -9), so a crashed writer never
blocks the next one; the file stays (unlinking it would let two writers lock two files). The
holder writes its pid and what it does into the file, so a waiting writer can say whom it waits
for. Within a process the lock is reentrant per thread (a repair that syncs inside a verify),
and other threads of the process wait like other processes do.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from carryd.daemon.state import refuse_redirected_state
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)


class IndexBusy(CarrydError):
    """Another writer held the index lock for longer than the caller could wait."""


LOCK_FILE = "index.lock"

_guard = threading.Lock()
_thread_locks: dict[Path, threading.RLock] = {}
_held: dict[Path, tuple[int, int]] = {}  # path -> (descriptor, depth), for the holding thread


def lock_path(settings: Settings) -> Path:
    return Path(settings.state_path) / LOCK_FILE


def holder(settings: Settings) -> str | None:
    """Given settings, return who holds the index lock ("pid N: what"), or None when free."""
    path = lock_path(settings)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _describe(descriptor)
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def index_lock(
    settings: Settings,
    *,
    purpose: str | None = None,
    on_wait: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> Iterator[None]:
    """Given settings, hold the root's index lock for the block (waiting for another writer;
    `on_wait(message)` is told once, else the message is logged as a warning). With a
    `timeout` (seconds), IndexBusy is raised when the lock stays taken that long."""
    refuse_redirected_state(settings)
    path = lock_path(settings)
    with _guard:
        thread_lock = _thread_locks.setdefault(path, threading.RLock())
    with thread_lock:
        if path in _held:  # this thread already holds it (reentrant)
            descriptor, depth = _held[path]
            _held[path] = (descriptor, depth + 1)
            try:
                yield
            finally:
                descriptor, depth = _held[path]
                _held[path] = (descriptor, depth - 1)
            return
        descriptor = _acquire(path, purpose or _command(), on_wait, timeout)
        _held[path] = (descriptor, 1)
        try:
            yield
        finally:
            del _held[path]
            os.close(descriptor)  # closing drops the flock


def _acquire(
    path: Path, purpose: str, on_wait: Callable[[str], None] | None, timeout: float | None
) -> int:
    # carryd's state is private, and made inside the root: never the root itself (parents).
    path.parent.mkdir(mode=0o700, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _describe(descriptor) or "unknown"
            if timeout is not None:
                _wait_until(descriptor, time.monotonic() + timeout, path, who)
            else:
                message = (
                    f"waiting for another carryd writer ({who}) to finish with the index "
                    f"(lock {path})"
                )
                (on_wait or log.warning)(message)
                started = time.monotonic()
                fcntl.flock(descriptor, fcntl.LOCK_EX)  # Ctrl-C interrupts the wait
                log.info("index lock taken after %.1f s", time.monotonic() - started)
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"pid {os.getpid()}: {purpose}\n".encode(), 0)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _wait_until(descriptor: int, deadline: float, path: Path, who: str) -> None:
    while True:
        time.sleep(0.02)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise IndexBusy(
                    f"another carryd writer ({who}) holds the index lock {path}"
                ) from None


def _describe(descriptor: int) -> str | None:
    try:
        text = os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None


def _command() -> str:
    arguments = [os.path.basename(sys.argv[0] or "python"), *sys.argv[1:2]]
    return " ".join(argument for argument in arguments if argument)
