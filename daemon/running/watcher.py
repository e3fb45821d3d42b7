"""Watch the memory root with watchdog and turn events into `Change`s for the worker.

The callback only classifies and enqueues (no IO, no sync). `changes_for` is the pure part:

- Markdown files (`*.md`) and each workspace's sidecar (`<ws>/handoff/sidecar.json`) count;
  everything under `<state_dir>/` or an ignored folder (`index.ignore_dirs`) does not.
- An editor's atomic save (write a temp file, rename it over the original) arrives as a
  move whose destination is the Markdown file: the destination is enqueued, the temp ignored.
- A move enqueues both paths (the source is deleted, the destination created).
- A folder that appears (created, moved in, or a symbolic link to one created) or leaves
  (deleted, moved out) is handed to the sync as a folder: it walks one that exists and drops
  every indexed file under one that does not, without relying on per-file events the OS may
  never send.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from carryd.daemon.running.worker import Change

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)


def relative_path(root: str, path: str | bytes) -> str | None:
    """Given the root and an absolute event path, return it POSIX-relative (None outside)."""
    text = os.fsdecode(path)
    if not text:
        return None
    relative = os.path.relpath(text, root)
    if relative == "." or relative.startswith(".." + os.sep) or relative == "..":
        return None
    return PurePosixPath(*Path(relative).parts).as_posix()


def is_ignored(relative: str, state_dir: str, ignore_dirs: tuple[str, ...]) -> bool:
    """Given a relative path, return whether carryd never looks at it."""
    parts = PurePosixPath(relative).parts
    if not parts or parts[0] == state_dir:
        return True
    return any(part in ignore_dirs for part in parts[:-1]) or parts[-1] in ignore_dirs


def is_relevant_file(relative: str, sidecar_file: str) -> bool:
    """Given a relative file path, return whether a change to it matters to carryd."""
    if relative.lower().endswith(".md"):
        return True
    parts = PurePosixPath(relative).parts
    return len(parts) >= 2 and "/".join(parts[1:]) == sidecar_file


def changes_for(
    event_type: str,
    src_path: str,
    dest_path: str,
    is_directory: bool,
    *,
    root: str,
    state_dir: str,
    ignore_dirs: tuple[str, ...],
    sidecar_file: str,
) -> tuple[Change, ...]:
    """Given one watchdog event's fields, return the changes the worker must see."""
    if event_type in ("opened", "closed_no_write"):
        return ()
    if event_type == "moved":
        sides = [(src_path, "removed"), (dest_path, "added")]
    elif event_type == "deleted":
        sides = [(src_path, "removed")]
    elif event_type == "created":
        sides = [(src_path, "added")]
    else:  # modified, closed (after write), attrib
        if is_directory:
            return ()  # a folder's own mtime: its files report themselves
        sides = [(src_path, "added")]
    changes: list[Change] = []
    for path, side in sides:
        relative = relative_path(root, path)
        if relative is None or is_ignored(relative, state_dir, ignore_dirs):
            continue
        if is_directory:
            changes.append(Change(relative, "tree_removed" if side == "removed" else "tree_added"))
        elif is_relevant_file(relative, sidecar_file):
            changes.append(Change(relative))
    return tuple(changes)


# Events that can matter; opened / closed-without-write would otherwise arrive for every
# file the sync itself reads.
def _event_filter() -> list[type[Any]]:
    from watchdog import events

    return [
        events.FileCreatedEvent,
        events.FileModifiedEvent,
        events.FileMovedEvent,
        events.FileDeletedEvent,
        events.FileClosedEvent,
        events.DirCreatedEvent,
        events.DirMovedEvent,
        events.DirDeletedEvent,
    ]


class Watcher:
    """Own a watchdog observer on the root; every relevant event goes to `enqueue`."""

    def __init__(self, settings: Settings, enqueue: Callable[[Change], None]) -> None:
        self._root = str(settings.root_path.resolve())
        self._enqueue = enqueue
        self._settings = settings
        self._observer: Any = None

    def reload(self, settings: Settings) -> None:
        """Use new ignore rules from the next event on (the root itself never changes)."""
        self._settings = settings

    def dispatch(self, event: Any) -> None:
        """The watchdog callback: classify and enqueue, nothing else."""
        settings = self._settings
        source = os.fsdecode(event.src_path)
        destination = os.fsdecode(getattr(event, "dest_path", "") or "")
        is_directory = event.is_directory
        if not is_directory and event.event_type in ("created", "moved"):
            # A symbolic link to a folder arrives as a file event: one lstat tells, so the new
            # folder is walked now rather than at the next reconcile.
            landed = destination if event.event_type == "moved" else source
            is_directory = os.path.islink(landed) and os.path.isdir(landed)
        elif not is_directory and event.event_type == "deleted":
            # What a deleted path was can no longer be asked; if it is no Markdown file it may
            # have been a link to a folder, so the sync drops whatever was indexed under it
            # (nothing, for an editor's temp file: then it writes nothing).
            relative = relative_path(self._root, source)
            is_directory = relative is not None and not is_relevant_file(
                relative, settings.carry.sidecar_file
            )
        changes = changes_for(
            event.event_type,
            source,
            destination,
            is_directory,
            root=self._root,
            state_dir=settings.index.state_dir,
            ignore_dirs=settings.index.ignore_dirs,
            sidecar_file=settings.carry.sidecar_file,
        )
        for change in changes:
            self._enqueue(change)

    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class _Handler(FileSystemEventHandler):
            def dispatch(self, event: Any) -> None:
                watcher.dispatch(event)

        self._observer = Observer()
        self._observer.name = "carryd-watcher"
        self._observer.schedule(
            _Handler(), self._root, recursive=True, event_filter=_event_filter()
        )
        self._observer.start()
        log.info("watching %s", self._root)

    def stop(self, timeout: float | None = None) -> None:
        """Stop the observer and join it and its emitter threads."""
        if self._observer is None:
            return
        observer, self._observer = self._observer, None
        emitters = list(getattr(observer, "emitters", ()))
        observer.stop()
        observer.join(timeout)
        for emitter in emitters:
            emitter.join(timeout)
