"""Hybrid recall over the index, and expansion of ids to full text (the shell around
`carryd.index.lexical` and `carryd.index.fusion`).

`Recaller` is warm: it caches the entry rows, the L0 vector matrix (with per-scope row masks)
and the lexical statistics, and reloads them only when `store.generation()` moves. A query

1. runs the **lexical arm**: BM25 over the full-text postings (`Store.postings`);
2. runs the **semantic arm**: the query (with the model's query prefix, `embed_query`) against
   the **L0** vectors only, top `candidates_per_arm` by cosine among those above the model's
   calibrated floor — and not at all when the model cannot read the query (an English-only
   model and a Chinese query; `SemanticCalibration.reads`);
3. fuses them in rank space and decides per hit from absolute confidences (`fuse`).

Scope: with a workspace W only W's entries and root-level entries are candidates — another
workspace's entries never are; without one, the whole root. Everything leaving carryd (L0 in
answers, text in expansions) passes through `redact` (I3).

Fail-soft (I4): no model, a model that fails, or a vector table that cannot be read gives a
lexical-only answer with ``"degraded": "<why>"``; `recall` never raises on a well-formed query.

`cmd_recall` / `cmd_expand` ask a running daemon first (`carryd.daemon.control.request`) and
work in-process otherwise. In-process, the index is used as it is — recall never syncs on
every call — except when there is no index at all: then the root is synced once first, so
`carryd recall` works on a fresh root without a separate `carryd index`.

The answer's JSON shape (the CLI contract, and the daemon's socket) is `answer_json`; its names
are re-exported here.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.recall.answer_json import (  # noqa: F401 — re-exported
    answer_from_json,
    answer_json,
    hit_json,
)
from carryd.daemon.recall.remembered_searches import RememberedSearches
from carryd.daemon.recall.serving_model import ServingModel
from carryd.daemon.recall.warm_snapshot import (  # noqa: F401 — WarmSnapshot re-exported
    SEMANTIC_FAILURES,
    WarmSnapshot,
)
from carryd.index.entries import Entry, parse_entries
from carryd.index.errors import EmbedderUnavailable
from carryd.index.fusion import SemanticCalibration
from carryd.index.lexical import TermPostings, patched_postings, query_terms
from carryd.index.recall import QueryTerms, RecallAnswer, RecallOptions, recall
from carryd.index.redact import redact
from carryd.index.snapshot import (
    Scope,
    Snapshot,
    scope_of,
)

if TYPE_CHECKING:
    import numpy as np
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)

_SEMANTIC_FAILURES = SEMANTIC_FAILURES  # what a query's semantic arm survives


_TERM_CACHE_SIZE = 4096
# Query vectors kept by query text (1.5 KB each at 384-d): the carry asks the same few
# questions (the goal, the open steps) after every edit, and an embedding costs 4-20 ms.
_VECTOR_CACHE_SIZE = 256


class Recaller:
    """Answer recall and expand requests against one store, caching between generations.

    The shell around `carryd.index.snapshot` and `carryd.index.recall`: it reads the store,
    embeds the query, keeps its scope and postings caches over the warm snapshot (its own
    `WarmSnapshot`, or one shared with the other threads of the process), and serialises
    (redacted) at the edge.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        degraded: str | None,
        *,
        warm: WarmSnapshot | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        # The model of the snapshot in use (`WarmSnapshot.served`: while a model change
        # re-embeds, the old model, whose vectors recall still searches).
        self._embedder = embedder
        self._no_model = degraded or "no embedding model: lexical-only recall"
        self._degraded: str | None = None  # why the model in use cannot load
        self.warm = (
            warm
            if warm is not None
            else WarmSnapshot(store, embedder, serving=ServingModel(settings, store, embedder))
        )
        self._snapshot: Snapshot | None = None
        self._scopes: dict[str | None, Scope] = {}
        self._term_postings: dict[str, TermPostings] = {}
        self._query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._searches = RememberedSearches()
        self._lock = threading.Lock()

    # --- caches --------------------------------------------------------------------------

    def _current(
        self,
    ) -> tuple[
        Snapshot,
        SemanticCalibration | None,
        dict[str | None, Scope],
        dict[str, TermPostings],
        Embedder | None,
    ]:
        """Return the warm snapshot, its semantic calibration, this recaller's caches over it
        (emptied when the snapshot changed) and the model whose vectors it holds."""
        with self._lock:
            snapshot, calibration, embedder = self.warm.served()
            if embedder is not self._embedder:
                self._embedder, self._degraded = embedder, None
                self._query_vectors.clear()  # another model's query vectors
            previous = self._snapshot
            if snapshot is not previous:
                self._snapshot = snapshot
                self._scopes = {}
                changed = self._changed_since(previous, snapshot)
                self._term_postings = self._kept_postings(previous, snapshot, changed)
                self._searches.moved(changed)
            return snapshot, calibration, self._scopes, self._term_postings, embedder

    def _changed_since(self, previous: Snapshot | None, snapshot: Snapshot) -> list[str] | None:
        """Given the last snapshot this recaller used and the new one, return the ids written
        in between (None: the change log cannot say)."""
        if previous is None or snapshot.epoch != previous.epoch:
            return None
        try:
            return self._store.changes_since(previous.generation, previous.epoch)
        except _SEMANTIC_FAILURES:
            return None

    def _kept_postings(
        self, previous: Snapshot | None, snapshot: Snapshot, changed: list[str] | None
    ) -> dict[str, TermPostings]:
        """Given the last snapshot, the new one and the ids written in between, return the
        cached postings brought up to date for the new one when the row order stayed (an
        edit): a term a changed entry held or holds now is patched from the changed entries'
        own postings, never re-read whole (a rare term's read is cheap, but not free)."""
        if (
            previous is None
            or changed is None
            or not self._term_postings
            or snapshot.row_of is not previous.row_of
        ):
            return {}
        try:
            now = self._store.postings_of(changed) if changed else {}
        except _SEMANTIC_FAILURES:
            return {}
        import numpy as np

        rows = np.asarray(
            sorted(previous.row_of[i] for i in changed if i in previous.row_of), dtype=np.int64
        )
        row_of = snapshot.row_of
        return {
            term: patched_postings(
                postings,
                rows,
                {row_of[i]: tf for i, tf in now.get(term, {}).items() if i in row_of},
            )
            for term, postings in self._term_postings.items()
        }

    def _scope(
        self, snapshot: Snapshot, scopes: dict[str | None, Scope], workspace: str | None
    ) -> Scope:
        """Given a workspace (or None for the whole root), return its scope, cached."""
        cached = scopes.get(workspace)
        if cached is None:
            cached = scopes[workspace] = scope_of(snapshot, workspace)
        return cached

    def slots(self, ids: Iterable[str]) -> dict[str, str | None]:
        """Given entry ids, return id → explicit slot (None: it has none) of each one the index
        holds, from the warm snapshot recall answers from (no file reads)."""
        snapshot, _, _, _, _ = self._current()
        rows = snapshot.rows
        return {entry_id: rows[entry_id].slot for entry_id in ids if entry_id in rows}

    # --- recall --------------------------------------------------------------------------

    def answer(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> RecallAnswer:
        """Given a query (and a scope), return the typed answer (`carryd.index.recall`).

        Never raises on a well-formed query: a model or vector problem degrades the answer to
        the lexical arm and says why in `degraded`.
        """
        recall_settings = self._settings.recall
        snapshot, calibration, scopes, term_postings, embedder = self._current()
        options = RecallOptions(
            limit=recall_settings.limit if limit is None else limit,
            min_confidence=(
                recall_settings.min_confidence if min_confidence is None else min_confidence
            ),
            candidates_per_arm=recall_settings.candidates_per_arm,
            lexical_divisor=recall_settings.lexical_divisor,
            semantic_divisor=recall_settings.semantic_divisor,
            rrf_k=recall_settings.rrf_k,
            parent_propagation=recall_settings.parent_propagation,
            calibration=calibration,
            vector_search=self._searches.search((query, workspace), snapshot, calibration),
        )
        degraded = (
            (self._no_model if embedder is None else self._degraded)
            or self._vector_problem(snapshot, embedder)
            or self.warm.calibration_problem
        )
        if not query.strip() or options.limit <= 0:
            return RecallAnswer(query, workspace, degraded, ())
        scope = self._scope(snapshot, scopes, workspace)
        # The query embeds on a thread of its own while this one reads the postings and runs
        # the lexical arm (onnxruntime lets go of the GIL): a recall waits for the longer of
        # the two, not their sum.
        embedding = _Embedding(
            query,
            snapshot,
            functools.partial(self._query_vector, calibration=calibration, embedder=embedder),
        )
        terms = self._terms(query, snapshot, term_postings)
        answer = recall(snapshot, terms, embedding.vector, scope, options)
        problem = embedding.problem
        return dataclasses.replace(answer, degraded=answer.degraded or problem or degraded)

    def _vector_problem(self, snapshot: Snapshot, embedder: Embedder | None) -> str | None:
        """Given the snapshot, return why it has no vectors to search: the model's own reason
        when the model cannot load (then `carryd index` would make none either), else the
        snapshot's ("no vectors for this model yet: run `carryd index`")."""
        if snapshot.vector_problem is None or embedder is None:
            return snapshot.vector_problem
        try:
            getattr(embedder, "load", lambda: None)()
        except EmbedderUnavailable as error:
            self._degraded = str(error)
            return self._degraded
        return snapshot.vector_problem

    def recall(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> dict[str, Any]:
        """Given a query (and a scope), return the CLI contract's JSON answer (redacted)."""
        return answer_json(
            self.answer(query, workspace=workspace, limit=limit, min_confidence=min_confidence)
        )

    def _terms(
        self, query: str, snapshot: Snapshot, term_postings: dict[str, TermPostings]
    ) -> QueryTerms:
        """Given a query, return its terms with their postings: a common term's from the
        snapshot, another's read from the store once and kept (patched on edits)."""
        wanted_terms = query_terms(query)
        resident = snapshot.resident
        missing = [t for t in wanted_terms if t not in resident and t not in term_postings]
        if missing:
            fetched = self._store.postings(missing)
            for term in missing:
                if len(term_postings) >= _TERM_CACHE_SIZE:
                    term_postings.clear()  # crude but bounded; a generation change clears it too
                term_postings[term] = TermPostings.of(fetched.get(term, {}), snapshot.row_of)
        postings = {
            term: resident[term] if term in resident else term_postings[term]
            for term in wanted_terms
            if term in resident or term in term_postings
        }
        return QueryTerms(text=query, terms=wanted_terms, postings=postings)

    def _query_vector(
        self,
        query: str,
        snapshot: Snapshot,
        *,
        calibration: SemanticCalibration | None,
        embedder: Embedder | None,
        embed: bool = True,
    ) -> tuple[np.ndarray | None, str | None] | None:
        """Return the query's embedding, or None and why not (None, None: no semantic arm:
        no model, or none calibrated for it); with `embed=False`, None when only embedding
        the query can tell."""
        if embedder is None or calibration is None:
            return None, None
        if snapshot.matrix is None:
            return None, snapshot.vector_problem
        if not calibration.reads(query):
            # The model cannot read this query (an English-only model, a Chinese query): the
            # arm abstains rather than adding near-random candidates to the fusion.
            return None, None
        import numpy as np

        with self._lock:
            place = (embedder.identity.key(), query)
            cached = self._query_vectors.get(place)
            if cached is not None:
                self._query_vectors.move_to_end(place)
                return cached, None
        if not embed:
            return None
        try:
            vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        except _SEMANTIC_FAILURES as error:
            log.warning("recall: semantic arm failed, answering lexical-only: %s", error)
            return None, f"semantic arm failed: {error}"
        # The model and its query prefix are fixed for this recaller: the text decides.
        vector.setflags(write=False)
        with self._lock:
            self._query_vectors[place] = vector
            if len(self._query_vectors) > _VECTOR_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        return vector, None

    def close(self) -> None:
        """Nothing to close: the store and the model belong to the caller."""

    # --- expand --------------------------------------------------------------------------

    def expand(self, ids: Sequence[str]) -> dict[str, Any]:
        """Given entry ids, return their full text from the current files.

        Answer: ``{"entries": [{"id", "workspace", "path", "line_start", "line_end",
        "heading_path", "text"}], "missing": [{"id", "reason"}]}`` in the order asked (a
        repeated id once). Reasons: ``unknown`` (not in the index), ``vanished`` (its file or
        the entry in it is gone), ``unreadable`` (the file cannot be read as UTF-8 text).
        """
        wanted = list(dict.fromkeys(ids))
        rows = self._store.entries_by_id(wanted)
        root = self._settings.root_path
        parsed: dict[str, Mapping[str, Entry] | str] = {}
        entries: list[dict[str, Any]] = []
        missing: list[dict[str, str]] = []
        for entry_id in wanted:
            row = rows.get(entry_id)
            if row is None:
                missing.append({"id": entry_id, "reason": "unknown"})
                continue
            if row.path not in parsed:
                parsed[row.path] = _read_entries(root, row.path)
            by_id = parsed[row.path]
            if isinstance(by_id, str):
                missing.append({"id": entry_id, "reason": by_id})
                continue
            entry = by_id.get(entry_id)
            if entry is None:
                missing.append({"id": entry_id, "reason": "vanished"})
                continue
            entries.append(
                {
                    "id": entry.id,
                    "workspace": entry.workspace,
                    "path": entry.path,
                    "line_start": entry.line_start,
                    "line_end": entry.line_end,
                    "heading_path": list(entry.heading_path),
                    "text": redact(entry.text),
                }
            )
        return {"entries": entries, "missing": missing}


class _Helper:
    """One daemon thread that runs the query embeddings handed to it, started on first use
    and then kept (idle in a queue get, it costs nothing): starting a thread per recall made
    the recall wait until the new thread was scheduled, milliseconds on a loaded machine."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((future, function, args))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="carryd-embed", daemon=True
                )
                self._thread.start()
        return future

    def _serve(self) -> None:
        while True:
            future, function, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as error:  # noqa: BLE001 — handed to the asking thread
                future.set_exception(error)


_HELPER = _Helper()


class _Embedding:
    """A query's vector: known at once (kept, or no semantic arm), else made on the helper
    thread, which `vector()` waits for; an error in it is raised there, as if inline."""

    def __init__(
        self,
        query: str,
        snapshot: Snapshot,
        make: Callable[..., tuple[np.ndarray | None, str | None] | None],
    ) -> None:
        self._result = make(query, snapshot, embed=False)
        self._future: Future[tuple[np.ndarray | None, str | None]] | None = None
        if self._result is None:
            self._future = _HELPER.submit(make, query, snapshot)

    def vector(self) -> np.ndarray | None:
        if self._future is not None:
            self._result = self._future.result()
            self._future = None
        assert self._result is not None
        return self._result[0]

    @property
    def problem(self) -> str | None:
        self.vector()
        assert self._result is not None
        return self._result[1]


def _read_entries(root: Path, path: str) -> Mapping[str, Entry] | str:
    """Given the root and a relative path, return id → Entry of the file now, or a reason."""
    try:
        text = (root / path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return "vanished"
    except (OSError, UnicodeDecodeError):
        return "unreadable"
    return {entry.id: entry for entry in parse_entries(path, text)}
