"""A sync's progress: the caller's callbacks (parsing, then embedding) and
`<state>/indexing.json` for `carryd status` while a sync that commits in several batches runs.
Split from `indexer.indexing`, which applies the plan."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from carryd.daemon import state

if TYPE_CHECKING:
    from carryd.daemon.config import Settings


class SyncProgress:
    """A sync's progress: the caller's callback, and `<state>/indexing.json` for `carryd
    status` while a sync that commits in several batches runs (removed when it finishes, so
    one left behind by a dead pid is an interrupted index)."""

    def __init__(
        self,
        settings: Settings,
        callback: Callable[[int, int], None] | None,
        parse_callback: Callable[[int, int], None] | None = None,
    ) -> None:
        self._settings = settings
        self._callback = callback
        self._parse_callback = parse_callback
        self._recorded = False
        self._started = time.time()

    def update(
        self, *, embedded: int, total: int, files_done: int, files: int, batches: int
    ) -> None:
        if self._callback is not None:
            self._callback(embedded, total)
        if batches <= 1:
            return  # one transaction: nothing half-built for status to see
        self._recorded = True  # once per batch: a few hundred embeddings apart
        state.write_indexing(
            self._settings,
            {
                "pid": os.getpid(),
                "started_at": self._started,
                "updated_at": time.time(),
                "embedded": embedded,
                "to_embed": total,
                "files_committed": files_done,
                "files_to_commit": files,
            },
        )

    def finished(self) -> None:
        """The sync ended (or failed and its process goes on): no run is in progress. Under
        the index lock any record left is this run's or a dead run's, so it always goes."""
        state.clear_indexing(self._settings)
        self._recorded = False

    def parsed(self, done: int, total: int) -> None:
        """`done` of the `total` changed files are parsed (before anything is embedded)."""
        if self._parse_callback is not None:
            self._parse_callback(done, total)
