"""Given the memory root the daemon serves, tell when the folder at that path is no longer
the one it started on: moved away and recreated (a new inode), or gone.

The watcher follows the folder it was given, not its path: after `mv ~/memory ~/memory.old
&& mkdir ~/memory` it kept indexing the moved tree, the new root got no carries, and
`carryd status` on the path said "daemon: not running" while it ran. `carryd run` checks
every `CHECK_EVERY` seconds and re-roots on the new folder (`running.run`), or exits with a
message when nothing comes back at the path within `GONE_GRACE` seconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

CHECK_EVERY = 2.0
GONE_GRACE = 10.0

RootChange = Literal["same", "replaced", "gone"]


def _identity(root: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(root)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


class RootIdentity:
    """The root's (device, inode) when the daemon started, and `change()` since."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started = _identity(root)

    def change(self) -> RootChange:
        """Return "same", "replaced" (another folder is at the path now) or "gone"."""
        now = _identity(self.root)
        if now is None:
            return "gone"
        return "same" if now == self.started else "replaced"
