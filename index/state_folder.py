"""Given one of carryd's state paths, refuse it when it would take the state out of the root.

An IO shell module (one `lstat`), kept apart from `store_file.py` so that the daemon's checks
(`carryd.daemon.state.refuse_redirected_state`, run by the status line and every hook) do not
import SQLite.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from carryd.index.errors import IndexUnavailable, describe_os_error


def refuse_linked_folder(folder: Path, *, what: str = "carryd's state folder") -> None:
    """Given one of carryd's state paths (`.carryd`, its carry folder, the socket), raise
    IndexUnavailable when it is a symbolic link or belongs to another user: carryd would write
    the index (and chmod, overwrite or trust what it finds) wherever the link points. An
    absent path is fine (carryd creates it)."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return
    except OSError as error:
        cause = describe_os_error(error, name_the_file=False)
        raise IndexUnavailable(f"{folder}: {what}: {cause}") from error
    if stat.S_ISLNK(info.st_mode):
        try:
            target = f" (to {os.readlink(folder)})"
        except OSError:
            target = ""
        raise IndexUnavailable(
            f"{folder}: {what} is a symbolic link{target}; carryd keeps its state inside the "
            f"memory root and does not follow it: remove the link"
        )
    if info.st_uid != os.geteuid():
        raise IndexUnavailable(
            f"{folder}: {what} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}); "
            f"carryd does not use another user's state: remove it or run as its owner"
        )
