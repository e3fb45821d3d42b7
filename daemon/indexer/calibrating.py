"""The semantic calibration as a daemon service: measured when the index is synced, stored in
the index's meta table beside the model identity, read by recall and status.

- `refresh_calibration` (the sync's hook, under the index lock; `measured_calibration` is its
  measuring half, which a model change's swap stores in its own transaction): when the stored
  calibration is for another model identity, was never measured, or the corpus has doubled or
  halved since (`needs_measuring`), measure it again on a seeded sample of the store's L0
  vectors (`carryd.index.calibration.measure_corpus`) and store it. A corpus too small to
  measure gets the reference calibration (below). An edit never re-measures.
- The reference calibration (`reference_for`): carryd's reference notes embedded by the model
  and measured the same way, once per model identity — kept in the meta table and in this
  process. It also says whether the model reads Chinese, which every calibration carries.
- `calibration_in_use` (recall): the stored calibration of the current model identity, else
  its stored reference, else the reference measured now (not stored: recall never writes).
- `stored_calibration` (status): what is stored, without loading the model.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from carryd.index.calibration import (
    MEASURE_VERSION,
    QUERY_SAMPLE,
    StoredCalibration,
    measure_corpus,
    needs_measuring,
    pseudo_query,
    reference_calibration,
    sample_ids,
)
from carryd.index.calibration_reference import REFERENCE_VERSION, TRANSLATIONS, UNRELATED
from carryd.index.errors import EmbedderUnavailable
from carryd.index.fusion import CJK_SHARE_UNREADABLE
from carryd.index.store import Batch
from carryd.index.tokenize import cjk_share

if TYPE_CHECKING:
    import numpy as np
    from carryd.index.calibration import UnrelatedCosines
    from carryd.index.embed import Embedder
    from carryd.index.fusion import SemanticCalibration
    from carryd.index.store import Store

__all__ = [
    "CORPUS_KEY",
    "REFERENCE_KEY",
    "calibration_in_use",
    "reference_for",
    "refresh_calibration",
    "stored_calibration",
]

log = logging.getLogger(__name__)

CORPUS_KEY = "calibration"  # meta: the calibration recall uses (corpus, or reference)
REFERENCE_KEY = "calibration_reference"  # meta: the model measured on the reference notes

# What embedding the reference notes can raise: our own unavailability, onnxruntime's errors
# (RuntimeError subclasses) and shape problems.
_EMBED_FAILURES = (EmbedderUnavailable, RuntimeError, ValueError, OSError)

# Reference calibrations measured in this process, by model identity key.
_measured: dict[str, StoredCalibration] = {}
_measuring = threading.Lock()


def stored_calibration(store: Store) -> StoredCalibration | None:
    """Given a store, return the calibration stored in it (for whichever model), or None."""
    return StoredCalibration.from_json(store.meta(CORPUS_KEY))


def reference_for(embedder: Embedder, store: Store | None = None) -> StoredCalibration:
    """Given a model (and the store that may keep its reference calibration), return the model
    measured on carryd's reference notes: from this process, the store, or embedded now.
    Raises what embedding raises (`EmbedderUnavailable`, onnxruntime's errors)."""
    key = embedder.identity.key()
    with _measuring:
        known = _measured.get(key)
        if known is None and store is not None:
            kept = StoredCalibration.from_json(store.meta(REFERENCE_KEY))
            if _current(kept, key):
                known = kept
        if known is None:
            known = _measure_reference(embedder)
        _measured[key] = known
        return known


def _current(stored: StoredCalibration | None, key: str) -> bool:
    return (
        stored is not None
        and stored.identity == key
        and stored.reference_version == REFERENCE_VERSION
        and stored.method == MEASURE_VERSION
    )


def _measure_reference(embedder: Embedder) -> StoredCalibration:
    """Given a model, embed the reference notes and return the calibration measured on them."""
    vectors = embedder.embed_passages(list(UNRELATED))
    english = embedder.embed_passages([english for english, _ in TRANSLATIONS])
    chinese = embedder.embed_passages([chinese for _, chinese in TRANSLATIONS])
    queries = _embed_queries(embedder, [pseudo_query(text, "firstSentence") for text in UNRELATED])
    measured = reference_calibration(
        embedder.identity.name, vectors, UNRELATED, english, chinese, queries
    )
    if measured is None:  # cannot happen with the shipped notes: each is its own subject
        raise ValueError("the reference notes are too few to measure the model on")
    calibration, cosines = measured
    log.info(
        "model %s measured on the reference notes: unrelated cosines %.2f ± %.2f",
        embedder.identity.name,
        cosines.mean,
        cosines.spread,
    )
    return StoredCalibration.of(embedder.identity.key(), calibration, cosines, entries=0)


def refresh_calibration(store: Store, embedder: Embedder, entries: int) -> StoredCalibration | None:
    """Given a synced store, its model and its entry count, measure and store the calibration
    when `needs_measuring` says so; return the calibration stored now (None: the model failed,
    and recall measures the reference itself)."""
    stored = stored_calibration(store)
    if not needs_measuring(stored, embedder.identity.key(), entries) or entries <= 0:
        return stored  # (no entries: nothing to recall; measured once there is)
    measured = measured_calibration(store, embedder, entries)
    if measured is None:
        return None  # the model failed: recall measures the reference itself
    record, meta = measured
    store.apply(Batch(identity=embedder.identity.key(), meta=meta))
    return record


def measured_calibration(
    store: Store, embedder: Embedder, entries: int
) -> tuple[StoredCalibration, tuple[tuple[str, str], ...]] | None:
    """Given a store, a model whose vectors it holds (its serving set, or the next set about
    to be swapped in) and the entry count, return the calibration measured again and the meta
    rows that store it, or None when `needs_measuring` says no (or the model failed)."""
    key = embedder.identity.key()
    stored = stored_calibration(store)
    if not needs_measuring(stored, key, entries) or entries <= 0:
        return None  # (no entries: nothing to recall; measured once there is)
    try:
        reference = reference_for(embedder, store)
    except _EMBED_FAILURES as error:
        log.info("semantic calibration not measured: %s", error)
        return None
    measured = _measure_corpus(store, embedder, reference.calibration.multilingual)
    if measured is None:
        record = StoredCalibration(
            identity=key,
            calibration=reference.calibration,
            entries=entries,
            pairs=reference.pairs,
            mean=reference.mean,
            spread=reference.spread,
        )
    else:
        calibration, cosines = measured
        record = StoredCalibration.of(key, calibration, cosines, entries)
    log.info("semantic calibration: %s", record.summary())
    return record, ((CORPUS_KEY, record.to_json()), (REFERENCE_KEY, reference.to_json()))


def _measure_corpus(
    store: Store, embedder: Embedder, multilingual: bool
) -> tuple[SemanticCalibration, UnrelatedCosines] | None:
    """Given a store and its model, return the calibration measured on a seeded sample of its
    L0 vectors (with the distribution), or None when the corpus is too small to measure."""
    import numpy as np

    identity = embedder.identity
    key = identity.key()
    sample = sample_ids(store.vector_keys(key))
    rows = store.entries_by_id(sample)
    blobs = {entry_id: blob for entry_id, _, blob in store.vector_blobs(key, sample)}
    chosen = [entry_id for entry_id in sample if entry_id in rows and entry_id in blobs]
    if not chosen:
        return None
    matrix = np.vstack([np.frombuffer(blobs[entry_id], dtype=np.float32) for entry_id in chosen])
    readable = [
        multilingual or cjk_share(rows[entry_id].l0) < CJK_SHARE_UNREADABLE for entry_id in chosen
    ]
    # The pseudo-queries: a seeded sample of the L0s the model reads, each cut to a query's shape.
    asked = sample_ids([i for i, read in zip(chosen, readable, strict=True) if read], QUERY_SAMPLE)
    texts = [pseudo_query(rows[entry_id].l0, rows[entry_id].l0_source) for entry_id in asked]
    kept = [position for position, text in enumerate(texts) if text]
    return measure_corpus(
        identity.name,
        matrix,
        [rows[entry_id].path for entry_id in chosen],
        multilingual=multilingual,
        readable=readable,
        queries=_embed_queries(embedder, [texts[position] for position in kept]),
        query_groups=[rows[asked[position]].path for position in kept],
    )


def _embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Given texts, return their query vectors (one row each; [0, dim] for none)."""
    import numpy as np

    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.vstack([embedder.embed_query(text) for text in texts])


def calibration_in_use(store: Store, embedder: Embedder) -> StoredCalibration:
    """Given a store and the model recall embeds queries with, return the calibration to read
    its cosines with: the one stored for this model identity, else the model's reference
    calibration. Raises what embedding raises when the reference must be measured now."""
    stored = stored_calibration(store)
    if stored is not None and stored.identity == embedder.identity.key():
        return stored
    return reference_for(embedder, store)
