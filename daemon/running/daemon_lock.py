"""`<state>/daemon.lock`: one daemon per root, and the refusal that names the one running."""

from __future__ import annotations

import fcntl
import os
from typing import TYPE_CHECKING

from carryd.daemon.errors import DaemonRunning
from carryd.daemon.state import refuse_redirected_state

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

LOCK_FILE = "daemon.lock"


class DaemonLock:
    """An exclusive flock on `<state>/daemon.lock` holding the owner's pid.

    The kernel drops the lock when the process dies (even by kill -9), so a crashed
    daemon never blocks the next one. The file itself stays: unlinking it would let two
    daemons lock two different files.
    """

    def __init__(self, settings: Settings) -> None:
        self.path = settings.state_path / LOCK_FILE
        self.root = settings.root_path
        self.settings = settings
        self._descriptor: int | None = None

    def acquire(self) -> None:
        refuse_redirected_state(self.settings)
        self.path.parent.mkdir(mode=0o700, exist_ok=True)  # in the root; never the root itself
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            raise DaemonRunning(
                f"another carryd daemon (pid {holder}) already serves {self.root} "
                f"(lock {self.path}); stop it first, or see `carryd status --root {self.root}`"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> DaemonLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
