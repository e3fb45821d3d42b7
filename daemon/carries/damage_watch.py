"""The carries a batch finds damaged, checked by bytes only when their files moved.

After every sync the daemon rewrites any carry found damaged (cut short, its manifest garbage),
whatever the sync touched (`carryd.daemon.layout.carry_damage`: the carry and its manifest read,
hashed and parsed). Reading every workspace's carry on every edit made an edit's work grow with
the number of workspaces; a carry found intact is now checked again only when the stamps of its
two files (inode, size, modification time) have moved — a cut, a rewrite or a replacement moves
them. The periodic reconcile rewrites every carry in any case.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from carryd.daemon.layout import carry_damage

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

Stamp = tuple[int, ...]


class CarryDamageWatch:
    """Which carries are damaged, remembering the stamps of those last found intact."""

    def __init__(self) -> None:
        self._intact: dict[str, Stamp] = {}

    def damaged(self, settings: Settings, workspaces: Iterable[str]) -> list[str]:
        """Given workspaces, return those whose carry is damaged now, in the order given."""
        found = []
        for workspace in workspaces:
            # Stamped before reading: a write in between moves the stamp, and is read next time.
            stamp = _stamp(settings, workspace)
            if stamp is not None and self._intact.get(workspace) == stamp:
                continue
            if carry_damage(settings, workspace):
                found.append(workspace)
                self._intact.pop(workspace, None)
            elif stamp is not None:
                self._intact[workspace] = stamp
        return found


def _stamp(settings: Settings, workspace: str) -> Stamp | None:
    """Given a workspace, return the stamps of its carry and manifest (None: one is missing)."""
    stamp: list[int] = []
    for suffix in (".md", ".json"):
        try:
            status = (settings.carry_dir / f"{workspace}{suffix}").stat()
        except OSError:
            return None
        stamp += (status.st_ino, status.st_size, status.st_mtime_ns)
    return tuple(stamp)
