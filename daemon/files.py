"""Given a path and bytes, replace the file so that another process sees the old file or the
new one, never half of either (STYLE.md: every file another process reads is written
temp + fsync + `os.replace`). One implementation for carries, manifests, daemon.json,
archived plans and service units.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, parents: bool = True) -> None:
    """Given a path and bytes, write them via a temp file in the same folder, fsync, and
    `os.replace`; then fsync the folder so the rename survives a crash.

    `mode` sets the new file's permission bits; None keeps an existing file's bits (a user's
    PLAN.md stays as it was) and gives a new file 0600 (carryd's own state is owner-only).
    `parents=False` creates the file's folder but never its ancestors: carryd's state goes
    into a root that exists, and a root deleted under the daemon is not brought back.
    """
    if not path.parent.is_dir():
        path.parent.mkdir(parents=parents, exist_ok=True)
        # A new folder takes its parent's permissions (inside `.carryd/`, 0700), not the umask's.
        with contextlib.suppress(OSError):
            os.chmod(path.parent, path.parent.parent.stat().st_mode & 0o777)
    if mode is None and path.exists():
        mode = path.stat().st_mode & 0o7777
    import tempfile  # ~7 ms with shutil and the compressors: not on a hook that only reads

    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
