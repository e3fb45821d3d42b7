"""A sync's interruption: `StopSync`, and the daemon's embedder for syncs, which embeds passages
in slices and stops between two slices once a stop is asked (the daemon's own syncs and its
indexing child, `carryd.daemon.indexer.sync_child`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from carryd.index.embed import Embedder

if TYPE_CHECKING:
    import numpy as np


class StopSync(Exception):
    """Raised by a sync's progress callback to stop between two embedding chunks: what was
    committed stays, and the next sync embeds only what is still missing."""


class InterruptibleEmbedder:
    """The worker's embedder: embeds passages in slices of the model's batch size and raises
    StopSync between two slices once a stop is asked, so SIGTERM during a cold reconcile waits
    for one batch, not for the sync's whole chunk (thousands of L0s, minutes on a busy machine).

    The passages are sorted by length once, as the model itself sorts them, so every slice is
    exactly one of the batches the model would have run: the vectors are the same bytes.
    """

    def __init__(self, embedder: Embedder, *, slice_size: int, stopping: Callable[[], bool]):
        self.identity = embedder.identity
        self._embedder = embedder
        self._slice = max(1, slice_size)
        self._stopping = stopping

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        order = sorted(range(len(texts)), key=lambda position: len(texts[position]))
        slices = []
        for start in range(0, len(order), self._slice):
            if self._stopping():
                raise StopSync(f"stop asked after {start} of {len(texts)} passages")
            part = order[start : start + self._slice]
            slices.append(self._embedder.embed_passages([texts[position] for position in part]))
        if not slices:
            return self._embedder.embed_passages(texts)
        vectors = np.concatenate(slices)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result

    def embed_query(self, text: str) -> np.ndarray:
        return self._embedder.embed_query(text)
