"""A model change as a sync sees it: re-embed into a new vector set, swap it in when complete.

The index serves recall from one vector set, the vectors of the model that built it
(`carryd.index.store_vectors`). When a sync's model is another one (another folder, name, file,
dimension, pooling or prefix) and loads, its vectors go into the *next* set while the serving
set keeps answering recall (`carryd.daemon.recall.serving_model` embeds queries with the model
that made it). The sync embeds as any sync does, batch by batch, so an interrupted one (Ctrl-C,
kill -9, a stopped daemon) keeps what it committed and the next one embeds only what is
missing. When every entry has a vector in the next set, one transaction swaps it in and drops
the old one. A model that cannot load touches neither set (`sync_planning.usable_model`).

- `begin_vector_set` (before the sync plans): start the next set for a new model, go on with
  one begun earlier, or drop one the configuration left (the model changed back).
- `finish_vector_set` (after it applied): swap a complete next set in; otherwise record where
  the serving set's model is, so recall can load it again after another change.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from carryd.daemon.indexer.calibrating import measured_calibration
from carryd.daemon.indexer.model import model_spec
from carryd.index.store import Batch

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)

SPEC_KEY = "serving_model"  # meta: how to load the serving set's model (`model.model_spec`)
NEXT_SPEC_KEY = "next_model"  # meta: the same for the next set's model


@dataclass(frozen=True)
class VectorSetStart:
    """What `begin_vector_set` found: whether this sync embeds into the next set, and news."""

    re_embedding: bool = False
    notes: tuple[str, ...] = ()


def begin_vector_set(settings: Settings, store: Store, embedder: Embedder | None) -> VectorSetStart:
    """Given a sync's settings, store and (usable) model, prepare the vector set it writes: the
    next one when the serving set holds another model's vectors, else the serving one."""
    if embedder is None:
        return VectorSetStart()
    key = embedder.identity.key()
    next_identity = store.next_identity()
    if not next_identity and store.meta("vectors_complete") == key:
        return VectorSetStart()  # an edit's sync: the serving set is this model's (two reads)
    others = {other: n for other, n in store.vector_identities().items() if other != key}
    if not others:
        if next_identity == key:
            # Nothing left to serve (every old vector went with its entry): what is done of
            # the new set becomes the serving set, and the sync embeds the rest there.
            moved = ((SPEC_KEY, store.meta(NEXT_SPEC_KEY) or ""), (NEXT_SPEC_KEY, ""))
            store.apply(Batch(swap_next=True, vectors_complete="", meta=moved))
        elif next_identity:
            store.apply(Batch(next_identity=""))  # the model changed back: its set goes
            log.info("dropped the unfinished vector set of %s", identity_name(next_identity))
        return VectorSetStart()
    old = ", ".join(identity_name(other) for other in sorted(others))
    if next_identity != key:
        spec = model_spec(settings, embedder.identity) or ""
        store.apply(Batch(next_identity=key, meta=((NEXT_SPEC_KEY, spec),)))
        note = (
            f"model identity changed from {old} to {embedder.identity.name}: re-embedding every "
            f"entry into a new vector set; recall answers from the {sum(others.values())} "
            "vectors of the old model until it is complete"
        )
    else:
        note = (
            f"re-embedding for model {embedder.identity.name} goes on: "
            f"{store.vector_count(key)} of {store.counts()['entries']} entries done"
        )
    log.info("%s", note)
    return VectorSetStart(re_embedding=True, notes=(note,))


def finish_vector_set(
    settings: Settings, store: Store, embedder: Embedder | None, start: VectorSetStart
) -> tuple[str, ...]:
    """Given a sync's model and what `begin_vector_set` found, after the sync applied: swap in
    the next set when every entry has a vector in it, and return the news (none otherwise).
    A serving set complete for this model gets its model's whereabouts recorded (once)."""
    if embedder is None or store.read_only is not None:
        return ()
    key = embedder.identity.key()
    if not start.re_embedding:
        if store.meta("vectors_complete") == key:
            spec = _spec(settings, embedder)
            if spec is not None and store.meta(SPEC_KEY) != spec:
                store.apply(Batch(meta=((SPEC_KEY, spec),)))
        return ()
    if store.next_identity() != key or store.missing_vectors(key):
        return ()  # not complete yet: the next sync goes on
    old = ", ".join(identity_name(other) for other in sorted(store.vector_identities()))
    spec = store.meta(NEXT_SPEC_KEY) or ""
    # The new model's calibration, measured on the complete new set, lands with it: no recall
    # reads the new vectors with the old model's calibration, or none.
    measured = measured_calibration(store, embedder, store.counts()["entries"])
    calibration = measured[1] if measured is not None else ()
    store.apply(Batch(swap_next=True, meta=((SPEC_KEY, spec), (NEXT_SPEC_KEY, ""), *calibration)))
    note = (
        f"re-embedding for model {embedder.identity.name} complete: its vectors now answer "
        f"recall ({old} dropped)"
    )
    log.info("%s", note)
    return (note,)


# (model settings, keys written, identity key) -> spec: a sync per edit asks again.
_SPECS: dict[tuple[object, ...], str | None] = {}


def _spec(settings: Settings, embedder: Embedder) -> str | None:
    place = (settings.model, settings.model_keys_written, embedder.identity.key())
    if place not in _SPECS:
        _SPECS[place] = model_spec(settings, embedder.identity)
    return _SPECS[place]


def identity_name(key: str) -> str:
    """Given an identity key, return how a person reads it: name (file, dim)."""
    try:
        data = json.loads(key)
    except ValueError:
        return key
    return f"{data.get('name')} ({data.get('file')}, {data.get('dim')}-d)"


def re_embedding_progress(store: Store) -> dict[str, object] | None:
    """Given a store, return how far a model change's re-embedding is (`carryd status`):
    the new model, entries done and in all, and the model whose vectors answer meanwhile;
    None when no next vector set is being built."""
    next_identity = store.next_identity()
    if not next_identity:
        return None
    serving = sorted(store.vector_identities())
    return {
        "model": identity_name(next_identity),
        "done": store.vector_count(next_identity),
        "total": store.counts()["entries"],
        "serving": ", ".join(identity_name(key) for key in serving) or None,
    }


def re_embedding_text(progress: dict[str, object]) -> str:
    """Given `re_embedding_progress`, return status's line for it."""
    serving = progress.get("serving")
    meanwhile = f"; recall answers from {serving} meanwhile" if serving else ""
    return (
        f"re-embedding for model {progress['model']}: "
        f"{progress['done']}/{progress['total']}{meanwhile}"
    )
