"""A sync's progress: the caller's callbacks (a phase's, `phase(name, done, total)`, for
reading, parsing, indexing terms and writing; the embedding's) and `<state>/indexing.json` for
`carryd status` while a sync that commits in several batches runs. Split from
`indexer.indexing`, which applies the plan."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from carryd.daemon import state

if TYPE_CHECKING:
    from carryd.daemon.config import Settings


# The phases of a sync before (or, with nothing to embed, instead of) the embedding: files
# read and hashed, files parsed, entries tokenised for the lexical index, files committed.
Phase = Literal["reading", "parsing", "indexing terms", "writing"]
PhaseCallback = Callable[[Phase, int, int], None]


class SyncProgress:
    """A sync's progress: the caller's callback, and `<state>/indexing.json` for `carryd
    status` while a sync that commits in several batches runs (removed when it finishes, so
    one left behind by a dead pid is an interrupted index)."""

    def __init__(
        self,
        settings: Settings,
        callback: Callable[[int, int], None] | None,
        phase_callback: PhaseCallback | None = None,
    ) -> None:
        self._settings = settings
        self._callback = callback
        self._phase_callback = phase_callback
        self._recorded = False
        self._started = time.time()

    def update(
        self, *, embedded: int, total: int, files_done: int, files: int, batches: int
    ) -> None:
        if self._callback is not None:
            self._callback(embedded, total)
        if not total:  # nothing embedded (no model, or nothing new): the commits are the work
            self.phase("writing", files_done, files)
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

    def phase(self, name: Phase, done: int, total: int) -> None:
        """`done` of the `total` items of phase `name` are through."""
        if self._phase_callback is not None:
            self._phase_callback(name, done, total)

    def of(self, name: Phase) -> Callable[[int, int], None]:
        """Given a phase, return its `(done, total)` callback."""
        return lambda done, total: self.phase(name, done, total)
