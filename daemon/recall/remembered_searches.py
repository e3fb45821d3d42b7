"""The vector searches one recaller answered, remembered across snapshots: a repeated question
— the carry asks the same few after every edit — is answered from the ids the edit changed,
not from another pass over every vector (`carryd.index.nearest_patch`, which says why the
answer is the same).

Each search is remembered with twice the items its answer needs (what `nearest` gives for the
larger limit, cut, is exactly what it gives for the smaller one), so that edits touching its
best rows leave enough known; when they do not, the next ask makes a full pass again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from carryd.index.fusion import SemanticCalibration
from carryd.index.nearest_patch import Found, Remembered, cosines_of, patched, remembered
from carryd.index.recall import nearest

if TYPE_CHECKING:
    import numpy as np
    from carryd.index.snapshot import Snapshot
    from carryd.index.snapshot_sketch import Sketch

# Searches remembered (least recently asked go first): the carry's few questions per workspace.
SEARCHES_KEPT = 64
# A search whose pending changes pass this many ids is forgotten: patching it would cost more
# than the pass it saves.
PENDING_MAX = 256

VectorSearch = Callable[..., Found]


@dataclass
class _Search:
    """One remembered search: what is known, under which floor and calibration, and the ids
    changed since it was made (to patch it with on the next ask)."""

    known: Remembered
    floor: float
    calibration: SemanticCalibration | None
    pending: set[str] = field(default_factory=set)


class RememberedSearches:
    """The vector searches of one recaller, by (query, workspace)."""

    def __init__(self, size: int = SEARCHES_KEPT) -> None:
        self._size = size
        self._searches: OrderedDict[Hashable, _Search] = OrderedDict()
        self._lock = threading.Lock()

    def moved(self, changed: Collection[str] | None) -> None:
        """Given the ids changed between the recaller's last snapshot and its new one (None:
        unknown — another index file, a log that cannot say), note them on every search."""
        with self._lock:
            if changed is None:
                self._searches.clear()
                return
            for key, search in list(self._searches.items()):
                search.pending.update(changed)
                if len(search.pending) > PENDING_MAX:
                    del self._searches[key]

    def search(
        self, key: Hashable, snapshot: Snapshot, calibration: SemanticCalibration | None
    ) -> VectorSearch:
        """Given a question's key (its text and scope), the snapshot it is asked on and the
        calibration, return the search for the semantic arm (`RecallOptions.vector_search`)."""

        def search(
            matrix: np.ndarray,
            ids: Sequence[str],
            vector: np.ndarray,
            *,
            mask: np.ndarray | None,
            floor: float,
            limit: int,
            sketch: Sketch | None = None,
        ) -> Found:
            with self._lock:
                held = self._searches.get(key)
            if (
                held is not None
                and mask is not None
                and held.floor == floor
                and held.calibration == calibration
            ):
                fresh = cosines_of(
                    matrix, snapshot.vector_of, held.pending, vector, mask=mask, floor=floor
                )
                known = patched(held.known, held.pending, fresh, keep=2 * limit)
                answer = known.answer(limit)
                if answer is not None:
                    self._keep(key, _Search(known, floor, calibration))
                    return answer
            asked = 2 * limit
            found = nearest(matrix, ids, vector, mask=mask, floor=floor, limit=asked, sketch=sketch)
            self._keep(key, _Search(remembered(found, asked), floor, calibration))
            return found[:limit]

        return search

    def _keep(self, key: Hashable, search: _Search) -> None:
        with self._lock:
            self._searches[key] = search
            self._searches.move_to_end(key)
            while len(self._searches) > self._size:
                self._searches.popitem(last=False)
