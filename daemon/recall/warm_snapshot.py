"""The warm snapshot: one process's cached view of the index for recall (entry rows, the L0
matrix with per-scope masks, the lexical statistics and the semantic calibration), refreshed
only when `store.generation()` moves — from the change log when it covers the gap, else in
full. `Recaller` (`carryd.daemon.recall.recalling`) and the daemon's worker share one.
"""

from __future__ import annotations

import gc
import logging
import sqlite3
import sys
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from carryd.daemon.indexer.calibrating import calibration_in_use
from carryd.index.errors import CarrydError
from carryd.index.fusion import SemanticCalibration
from carryd.index.snapshot import (
    Snapshot,
    StoredVectors,
    apply_changes,
    build_snapshot,
    stats_of,
    with_resident,
)
from carryd.index.store import entry_row
from carryd.index.sync import EntryRow

if TYPE_CHECKING:
    from carryd.daemon.recall.serving_model import ServingModel
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)

# What can go wrong inside the model or the vector table at query time: our own errors,
# onnxruntime's (RuntimeError subclasses), numpy shape/dtype problems and SQLite errors.
SEMANTIC_FAILURES = (CarrydError, RuntimeError, ValueError, OSError, sqlite3.Error)

RefreshKind = Literal["full", "log"]


class WarmSnapshot:
    """The one warm snapshot of a store in this process, shared by every `Recaller` over it
    (the daemon's worker and query thread): one copy of the rows and vectors, not one per
    thread. Thread-safe: a refresh happens under a lock, and a snapshot, once made, is never
    changed (`carryd.index.snapshot`), so a query keeps using the one it got.

    A refresh reads the store's change log (`Store.changes_since`): only the ids written since
    the snapshot's generation are re-read, so an edit costs what changed, not what is stored.
    A full load happens first, and whenever the log cannot say (another index file, a log that
    started later, a vector problem to report, a new semantic calibration). In the daemon it
    also reads the common terms' postings, which the snapshot then keeps up to date
    (`carryd.index.snapshot_postings`): no query reads a common term from the store.

    The semantic calibration comes with the snapshot: the one the index stores for the model
    (`carryd.daemon.indexer.calibrating.calibration_in_use`), read again at every refresh (one meta
    row); recall reads cosines with the calibration its snapshot was built with.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        *,
        resident_min_df: int | None = None,
        freeze_heap: bool = False,
        serving: ServingModel | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        # Which model's vectors to load, decided again at every refresh (None: `embedder`'s
        # always): while a model change re-embeds, the old model's (`serving_model`).
        self._serving = serving
        # Terms held by this many entries keep their postings in the snapshot (the daemon:
        # `snapshot_postings.RESIDENT_MIN_DF`); None: none (a one-shot CLI recall would pay
        # for reading them all to answer one question).
        self._resident_min_df = resident_min_df
        # The daemon's: after a full load, what is alive is moved out of the collector's
        # reach (`_frozen_heap`).
        self._freeze_heap = freeze_heap
        self._calibration: SemanticCalibration | None = None
        self.calibration_problem: str | None = None  # why there is none, with a model
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self.refreshes: Counter[RefreshKind] = Counter()  # how each refresh was done

    def current(self) -> Snapshot:
        """Return the snapshot of the store's current generation (refreshed when it moved)."""
        return self.calibrated()[0]

    def calibrated(self) -> tuple[Snapshot, SemanticCalibration | None]:
        """Return the snapshot of the store's current generation and the semantic calibration
        it was built with (None: no semantic arm)."""
        snapshot, calibration, _ = self.served()
        return snapshot, calibration

    def served(self) -> tuple[Snapshot, SemanticCalibration | None, Embedder | None]:
        """Return the snapshot of the store's current generation, the semantic calibration it
        was built with and the model whose vectors it holds (a query embeds with that one)."""
        with self._lock:
            generation = self._store.generation()
            snapshot = self._snapshot
            if snapshot is None or snapshot.generation != generation:
                snapshot = self._snapshot = self._refresh(generation)
            return snapshot, self._calibration, self._embedder

    def _refresh(self, generation: int) -> Snapshot:
        """Given the store's generation, return the snapshot for it: from the change log when
        the last one is healthy, the calibration the same and the log covers the gap, else
        loaded in full (which entries the model reads follows the calibration)."""
        previous = self._snapshot
        if self._serving is not None:
            chosen = self._serving.choose()
            if _key_of(chosen) != _key_of(self._embedder):
                self._embedder = chosen  # another model's vectors: loaded in full
                previous = None
        calibration = self._read_calibration()
        if calibration != self._calibration:
            self._calibration = calibration
            previous = None
        if previous is not None and previous.vector_problem is None:
            try:
                patched = self._from_log(generation, previous)
            except SEMANTIC_FAILURES as error:
                log.info("recall: incremental refresh failed, reloading: %s", error)
                patched = None
            if patched is not None:
                self.refreshes["log"] += 1
                return patched
        self.refreshes["full"] += 1
        loaded = self._load(generation)
        if self._freeze_heap:
            _frozen_heap()
        return loaded

    def _load(self, generation: int) -> Snapshot:
        # The epoch and generation before the values: a commit in between makes the values
        # newer than the generation, and the next refresh re-reads what it logged (the same
        # values again: harmless).
        epoch = self._store.change_log_epoch()
        raw = self._store.raw_entry_rows()
        snapshot = build_snapshot(
            generation,
            raw,
            stats_of(len(raw), sum(values[_DOC_LEN] for values in raw.values())),
            decode=_decode,
            calibration=self._calibration,
            vectors=self._stored_vectors(),
            epoch=epoch,
        )
        if snapshot.vector_problem and self.calibration_problem is None:
            # (With no model its own reason is said once; "run `carryd index`" cannot help.)
            log.warning("recall: %s", snapshot.vector_problem)
        if self._resident_min_df is not None:
            snapshot = with_resident(snapshot, self._store.common_postings(self._resident_min_df))
        return snapshot

    def _read_calibration(self) -> SemanticCalibration | None:
        """Return the semantic calibration for the model (None: no model, or none can be had
        and the semantic arm is off, `calibration_problem` says why)."""
        if self._embedder is None:
            return None
        try:
            calibration = calibration_in_use(self._store, self._embedder).calibration
        except SEMANTIC_FAILURES as error:
            if self.calibration_problem is None:
                # Info: every answer's `degraded` says it to the person already; the
                # daemon's log (INFO) keeps it once.
                log.info("recall: no semantic calibration, lexical-only: %s", error)
            self.calibration_problem = f"no semantic calibration: {error}"
            return None
        self.calibration_problem = None
        return calibration

    def _stored_vectors(self) -> StoredVectors | None:
        """Return the model's vectors as stored (None: no model), or why they cannot be read."""
        if self._embedder is None:
            return None
        identity = self._embedder.identity
        try:
            ids, matrix = self._store.vectors(identity.key())
        except SEMANTIC_FAILURES as error:
            return StoredVectors(dim=identity.dim, problem=f"vector store unreadable: {error}")
        return StoredVectors(dim=identity.dim, ids=ids, matrix=matrix)

    def _from_log(self, generation: int, previous: Snapshot) -> Snapshot | None:
        """Given the last snapshot, return the one for `generation` from the ids the change
        log names, or None when only a full load can say what to do."""
        if generation < previous.generation:
            return None  # another index file (rebuilt): its log is not ours
        ids = self._store.changes_since(previous.generation, previous.epoch)
        if ids is None:
            return None
        found = self._store.raw_rows_by_id(ids) if ids else {}
        changed = {entry_id: found.get(entry_id) for entry_id in ids}
        vectors: dict[str, bytes] | None = None
        dim = 0
        if self._embedder is not None:
            identity = self._embedder.identity
            dim = identity.dim
            present = [entry_id for entry_id in ids if entry_id in found]
            fetched = self._store.vector_blobs(identity.key(), present) if present else []
            vectors = {entry_id: blob for entry_id, _, blob in fetched}
        # The resident postings are patched from the changed entries' own postings.
        postings = self._store.postings_of(ids) if ids and previous.resident else {}
        return apply_changes(
            previous,
            generation,
            changed,
            decode=_decode,
            calibration=self._calibration,
            vectors=vectors,
            dim=dim,
            postings=postings,
        )


def _key_of(embedder: Embedder | None) -> str | None:
    return None if embedder is None else embedder.identity.key()


def _frozen_heap() -> None:
    """Collect once, then move every object alive to the collector's permanent generation.

    A full load leaves ~160,000 long-lived objects at 100,000 entries (mostly the rows), and
    each of CPython's full collections walked them all: an 80-120 ms pause (load 5) that
    landed in some recall or edit. They hold no reference cycles, so nothing is lost by never
    walking them again; the next full load thaws them first, so that what the old snapshot
    left in cycles is collected then."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


# The BM25 document length's place in a stored entries row (`ENTRY_COLUMNS`).
_DOC_LEN = 11


def _decode(values: tuple[Any, ...]) -> EntryRow:
    """Given a stored entries row, return the `EntryRow` the warm snapshot keeps: path,
    workspace and L0 source interned (a file's entries share one path string, a workspace's
    one name), and the two content hashes left out (""), which no query reads: ~300 bytes
    less an entry (measured at 10,000), 30 MB at 100,000."""
    workspace = values[2]
    return entry_row(
        (
            values[0],
            sys.intern(values[1]),
            sys.intern(workspace) if workspace is not None else None,
            values[3],
            values[4],
            values[5],
            values[6],
            sys.intern(values[7]),
            "",
            "",
            values[10],
            values[11],
        )
    )
