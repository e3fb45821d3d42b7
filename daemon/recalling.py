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
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.index.errors import CarrydError, UsageError
from carryd.index.fusion import (
    Arm,
    ArmCandidate,
    ArmEvidence,
    FusedHit,
    Neighbour,
    SemanticCalibration,
    calibration_for,
    fuse,
)
from carryd.index.lexical import LexicalStats, TermPostings, query_terms, search_rows
from carryd.index.store import entry_row

if TYPE_CHECKING:
    import numpy as np
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import EntryRow, Store

log = logging.getLogger(__name__)

# What can go wrong inside the model or the vector table at query time: our own errors,
# onnxruntime's (RuntimeError subclasses), numpy shape/dtype problems and SQLite errors.
_SEMANTIC_FAILURES = (CarrydError, RuntimeError, ValueError, OSError, sqlite3.Error)


_TERM_CACHE_SIZE = 20_000


@dataclass(frozen=True)
class _Scope:
    """One query scope: its entry ids and boolean masks over the lexical and vector rows."""

    allowed: frozenset[str]
    lexical_mask: np.ndarray
    vector_mask: np.ndarray | None


@dataclass(frozen=True)
class _Snapshot:
    """Everything a query needs from the store, as of one generation.

    Never changed once built (a query on another thread may hold it): a refresh builds a new
    one, sharing the unchanged parts of the old.
    """

    generation: int
    rows: Mapping[str, EntryRow]
    entry_ids: tuple[str, ...]  # ascending: the lexical arrays' row order
    row_of: Mapping[str, int]
    doc_lengths: np.ndarray  # float64, by row
    workspace_codes: np.ndarray  # int64, by row: `workspace_code_of[row.workspace]`
    workspace_code_of: Mapping[str | None, int]  # None (root level) is always 0
    stats: LexicalStats
    vector_ids: tuple[str, ...]
    matrix: np.ndarray | None  # float32 [n, dim], rows aligned with vector_ids
    vector_rows: np.ndarray  # int64, by vector row: the entry row it belongs to
    vector_readable: np.ndarray | None  # bool, by vector row: the model reads its entry's L0
    vector_problem: str | None


@dataclass(frozen=True)
class _Keys:
    """What a snapshot was built from, to tell what changed at the next generation.

    `entries`: id → the stored row as SQLite returned it; `vectors`: id → the L0 hash of its
    vector of this model, for exactly the vectors in the matrix; `reads`: id → whether the
    model reads the entry's L0.
    """

    entries: Mapping[str, tuple[Any, ...]]
    vectors: Mapping[str, str]
    reads: Mapping[str, bool]


class Recaller:
    """Answer recall and expand requests against one store, caching between generations."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        degraded: str | None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._embedder = embedder
        self._degraded: str | None = None
        if embedder is None:
            self._degraded = degraded or "no embedding model: lexical-only recall"
        self._calibration: SemanticCalibration | None = (
            calibration_for(embedder.identity.name) if embedder is not None else None
        )
        self._snapshot: _Snapshot | None = None
        self._keys: _Keys | None = None
        self._scopes: dict[str | None, _Scope] = {}
        self._term_postings: dict[str, TermPostings] = {}
        self._lock = threading.Lock()

    # --- caches --------------------------------------------------------------------------

    def _current(
        self,
    ) -> tuple[_Snapshot, dict[str | None, _Scope], dict[str, TermPostings]]:
        """Return the cached snapshot and its caches, refreshed when the generation has moved."""
        with self._lock:
            generation = self._store.generation()
            if self._snapshot is None or self._snapshot.generation != generation:
                self._snapshot, self._keys = self._refresh(generation)
                self._scopes = {}
                self._term_postings = {}
            return self._snapshot, self._scopes, self._term_postings

    def _refresh(self, generation: int) -> tuple[_Snapshot, _Keys]:
        """Given the store's generation, return the snapshot for it and its keys.

        Incremental when a healthy snapshot exists: only entries and vectors whose stored
        values differ from the keys of the last one are decoded, fetched and re-derived. The
        comparison is by state, not by events, so any number of commits in between (even one
        landing during the refresh: its generation is newer than the one read first) is
        caught at the next call. Anything unusual (no snapshot yet, a vector problem, vectors
        of another width) takes the full load, which also says what is wrong.
        """
        previous, keys = self._snapshot, self._keys
        if previous is not None and keys is not None and previous.vector_problem is None:
            try:
                patched = self._patched(generation, previous, keys)
            except _SEMANTIC_FAILURES as error:
                log.info("recall: incremental refresh failed, reloading: %s", error)
                patched = None
            if patched is not None:
                return patched
        return self._load(generation)

    def _load(self, generation: int) -> tuple[_Snapshot, _Keys]:
        import numpy as np

        # Keys before values: a commit in between makes the values newer than the keys, and
        # the next refresh (the generation moved) sees the keys differ and re-reads them.
        raw = self._store.raw_entry_rows()
        rows = {entry_id: entry_row(values) for entry_id, values in raw.items()}
        doc_count, avg_len = self._store.lexical_stats()
        vector_ids: tuple[str, ...] = ()
        vector_keys: dict[str, str] = {}
        matrix = None
        problem = None
        if self._embedder is not None:
            try:
                identity_key = self._embedder.identity.key()
                vector_keys = self._store.vector_keys(identity_key)
                ids, vectors = self._store.vectors(identity_key)
                keep = [position for position, entry_id in enumerate(ids) if entry_id in rows]
                vector_ids = tuple(ids[position] for position in keep)
                matrix = np.ascontiguousarray(vectors[keep], dtype=np.float32) if keep else None
                if matrix is not None and matrix.shape[1] != self._embedder.identity.dim:
                    problem = (
                        f"vector store holds {matrix.shape[1]}-d vectors, the model makes "
                        f"{self._embedder.identity.dim}-d: run `carryd index`"
                    )
                    vector_ids, matrix = (), None
                elif rows and matrix is None:
                    problem = "no vectors for this model yet: run `carryd index`"
            except _SEMANTIC_FAILURES as error:
                problem = f"vector store unreadable: {error}"
                vector_ids, matrix = (), None
            if problem:
                log.warning("recall: %s", problem)
        # Only the vectors in the matrix are compared next time (see `_patched`).
        vector_keys = {
            entry_id: vector_keys[entry_id] for entry_id in vector_ids if entry_id in vector_keys
        }
        reads = self._reads({}, rows, rows)
        entry_ids = tuple(sorted(rows))
        code_of: dict[str | None, int] = {None: 0}
        snapshot = self._snapshot_of(
            generation,
            rows,
            entry_ids,
            {entry_id: row for row, entry_id in enumerate(entry_ids)},
            np.fromiter(
                (rows[entry_id].doc_len for entry_id in entry_ids),
                dtype=np.float64,
                count=len(entry_ids),
            ),
            _codes(rows, entry_ids, code_of),
            code_of,
            LexicalStats(doc_count=doc_count, avg_doc_len=avg_len),
            vector_ids,
            matrix,
            reads,
            problem,
        )
        return snapshot, _Keys(entries=raw, vectors=vector_keys, reads=reads)

    def _patched(
        self, generation: int, previous: _Snapshot, keys: _Keys
    ) -> tuple[_Snapshot, _Keys] | None:
        """Given the last snapshot and its keys, return the snapshot for `generation` built by
        re-deriving only what changed, or None when only a full load can say what to do."""
        import numpy as np

        raw = self._store.raw_entry_rows()
        old_raw = keys.entries
        changed = [entry_id for entry_id, values in raw.items() if old_raw.get(entry_id) != values]
        removed = old_raw.keys() - raw.keys()
        rows = dict(previous.rows)
        for entry_id in removed:
            del rows[entry_id]
        fresh = {entry_id: entry_row(raw[entry_id]) for entry_id in changed}
        rows.update(fresh)
        doc_count, avg_len = self._store.lexical_stats()

        code_of = dict(previous.workspace_code_of)
        if not removed and all(entry_id in previous.row_of for entry_id in changed):
            # The same ids: the row order stands; patch the changed rows' values.
            entry_ids, row_of = previous.entry_ids, previous.row_of
            doc_lengths = previous.doc_lengths
            codes = previous.workspace_codes
            if changed:
                at = np.fromiter((row_of[entry_id] for entry_id in changed), np.int64, len(changed))
                doc_lengths = doc_lengths.copy()
                doc_lengths[at] = [fresh[entry_id].doc_len for entry_id in changed]
                codes = codes.copy()
                codes[at] = [_code(code_of, fresh[entry_id].workspace) for entry_id in changed]
        else:
            entry_ids = tuple(sorted(rows))
            row_of = {entry_id: row for row, entry_id in enumerate(entry_ids)}
            doc_lengths = np.fromiter(
                (rows[entry_id].doc_len for entry_id in entry_ids),
                dtype=np.float64,
                count=len(entry_ids),
            )
            codes = _codes(rows, entry_ids, code_of)

        vector_ids, matrix, vector_keys = previous.vector_ids, previous.matrix, keys.vectors
        if self._embedder is not None:
            identity = self._embedder.identity
            now = self._store.vector_keys(identity.key())
            for entry_id in now.keys() - rows.keys():  # vectors without an entry: unused
                del now[entry_id]
            wanted = sorted(
                entry_id for entry_id, key in now.items() if vector_keys.get(entry_id) != key
            )
            replaced = set(wanted)
            # By the ids in the matrix, not by the old keys: a row is kept only while its
            # vector is still there and unchanged, so no id can end up in two rows.
            keep = [
                position
                for position, entry_id in enumerate(vector_ids)
                if entry_id in now and entry_id not in replaced
            ]
            if wanted or len(keep) != len(vector_ids):
                fetched = self._store.vector_blobs(identity.key(), wanted)
                if any(len(blob) != 4 * identity.dim for _, _, blob in fetched):
                    return None
                kept_ids = [vector_ids[position] for position in keep]
                blocks = [previous.matrix[keep]] if previous.matrix is not None and keep else []
                if fetched:
                    blocks.append(
                        np.frombuffer(
                            b"".join(blob for _, _, blob in fetched), dtype=np.float32
                        ).reshape(len(fetched), identity.dim)
                    )
                vector_ids = tuple(kept_ids) + tuple(entry_id for entry_id, _, _ in fetched)
                matrix = np.ascontiguousarray(np.concatenate(blocks)) if blocks else None
                # The keys of exactly the matrix's rows, as fetched: a vector replaced or
                # deleted meanwhile is seen as changed next time.
                for entry_id in replaced:
                    del now[entry_id]
                now.update({entry_id: l0_hash for entry_id, l0_hash, _ in fetched})
                vector_keys = now
            if rows and matrix is None:
                return None  # the full load says "no vectors for this model yet"

        reads = self._reads(keys.reads, rows, fresh, removed)
        snapshot = self._snapshot_of(
            generation,
            rows,
            entry_ids,
            row_of,
            doc_lengths,
            codes,
            code_of,
            LexicalStats(doc_count=doc_count, avg_doc_len=avg_len),
            vector_ids,
            matrix,
            reads,
            None,
        )
        return snapshot, _Keys(entries=raw, vectors=vector_keys, reads=reads)

    def _reads(
        self,
        old: Mapping[str, bool],
        rows: Mapping[str, EntryRow],
        changed: Mapping[str, EntryRow],
        removed: Iterable[str] = (),
    ) -> dict[str, bool]:
        """Given the last answers, return whether the model reads each entry's L0, computing
        it only for changed entries (`cjk_share` is ~35 µs an L0: 0.35 s at 10,000)."""
        if self._calibration is None:
            return {}
        calibration = self._calibration
        reads = dict(old)
        for entry_id in removed:
            reads.pop(entry_id, None)
        for entry_id, row in changed.items():
            reads[entry_id] = calibration.reads(row.l0)
        return reads

    def _snapshot_of(
        self,
        generation: int,
        rows: Mapping[str, EntryRow],
        entry_ids: tuple[str, ...],
        row_of: Mapping[str, int],
        doc_lengths: np.ndarray,
        codes: np.ndarray,
        code_of: Mapping[str | None, int],
        stats: LexicalStats,
        vector_ids: tuple[str, ...],
        matrix: np.ndarray | None,
        reads: Mapping[str, bool],
        problem: str | None,
    ) -> _Snapshot:
        import numpy as np

        count = len(vector_ids)
        return _Snapshot(
            generation=generation,
            rows=rows,
            entry_ids=entry_ids,
            row_of=row_of,
            doc_lengths=doc_lengths,
            workspace_codes=codes,
            workspace_code_of=code_of,
            stats=stats,
            vector_ids=vector_ids,
            matrix=matrix,
            vector_rows=np.fromiter(
                (row_of[entry_id] for entry_id in vector_ids), dtype=np.int64, count=count
            ),
            vector_readable=(
                np.fromiter((reads[entry_id] for entry_id in vector_ids), dtype=bool, count=count)
                if self._calibration is not None
                else None
            ),
            vector_problem=problem,
        )

    def _scope(
        self,
        snapshot: _Snapshot,
        scopes: dict[str | None, _Scope],
        workspace: str | None,
    ) -> _Scope:
        """Given a workspace (or None for the whole root), return its ids and row masks."""
        cached = scopes.get(workspace)
        if cached is not None:
            return cached
        import numpy as np

        if workspace is None:
            lexical_mask = np.ones(len(snapshot.entry_ids), dtype=bool)
            allowed = frozenset(snapshot.rows)
        else:
            # Root-level entries (code 0) and the workspace's own; never another workspace's.
            lexical_mask = snapshot.workspace_codes == 0
            code = snapshot.workspace_code_of.get(workspace)
            if code is not None:
                lexical_mask |= snapshot.workspace_codes == code
            allowed = frozenset(itertools.compress(snapshot.entry_ids, lexical_mask))
        vector_mask = None
        if (
            snapshot.matrix is not None
            and self._calibration is not None
            and snapshot.vector_readable is not None
        ):
            # An English-only model's cosine to a Chinese L0 means nothing: such entries are
            # left to the lexical arm (see SemanticCalibration.reads).
            vector_mask = lexical_mask[snapshot.vector_rows] & snapshot.vector_readable
        scope = _Scope(allowed=allowed, lexical_mask=lexical_mask, vector_mask=vector_mask)
        scopes[workspace] = scope
        return scope

    # --- recall --------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> dict[str, Any]:
        """Given a query (and a scope), return the CLI contract's JSON answer.

        The threshold decides each hit's `decision`; only `inject` hits are returned
        (`min_confidence=0` therefore returns every ranked candidate), at most `limit`.
        """
        recall_settings = self._settings.recall
        threshold = recall_settings.min_confidence if min_confidence is None else min_confidence
        wanted = recall_settings.limit if limit is None else limit
        snapshot, scopes, term_postings = self._current()
        degraded = self._degraded or snapshot.vector_problem
        answer: dict[str, Any] = {"query": query, "workspace": workspace, "degraded": degraded}
        if not query.strip() or wanted <= 0:
            answer["hits"] = []
            return answer
        scope = self._scope(snapshot, scopes, workspace)
        per_arm = max(recall_settings.candidates_per_arm, wanted)
        arms = [self._lexical_arm(query, snapshot, scope, term_postings, per_arm)]
        semantic, problem = self._semantic_arm(query, snapshot, scope.vector_mask, per_arm)
        if semantic is not None:
            arms.append(semantic)
        elif problem:
            answer["degraded"] = problem
        neighbours = (
            self._neighbours(snapshot, scope.allowed, arms)
            if recall_settings.parent_propagation
            else None
        )
        fused = fuse(arms, min_confidence=threshold, k=recall_settings.rrf_k, neighbours=neighbours)
        chosen = [hit for hit in fused if hit.decision == "inject"][:wanted]
        answer["hits"] = [_hit_json(hit, snapshot.rows[hit.id]) for hit in chosen]
        return answer

    def _lexical_arm(
        self,
        query: str,
        snapshot: _Snapshot,
        scope: _Scope,
        term_postings: dict[str, TermPostings],
        limit: int,
    ) -> Arm:
        wanted_terms = query_terms(query)
        missing = [term for term in wanted_terms if term not in term_postings]
        if missing:
            fetched = self._store.postings(missing)
            for term in missing:
                if len(term_postings) >= _TERM_CACHE_SIZE:
                    term_postings.clear()  # crude but bounded; a generation change clears it too
                term_postings[term] = TermPostings.of(fetched.get(term, {}), snapshot.row_of)
        hits = search_rows(
            wanted_terms,
            {term: term_postings[term] for term in wanted_terms if term in term_postings},
            snapshot.entry_ids,
            snapshot.doc_lengths,
            snapshot.stats,
            allowed=scope.lexical_mask,
            limit=limit,
        )
        return Arm(
            "lexical",
            self._settings.recall.lexical_divisor,
            tuple(
                ArmCandidate(hit.id, hit.rank, hit.bm25, hit.confidence, hit.matched)
                for hit in hits
            ),
        )

    def _semantic_arm(
        self, query: str, snapshot: _Snapshot, mask: Any, limit: int
    ) -> tuple[Arm | None, str | None]:
        """Return the semantic arm, or None and why not (None, None: nothing to search)."""
        if self._embedder is None or self._calibration is None:
            return None, None
        if snapshot.matrix is None:
            return None, snapshot.vector_problem
        calibration = self._calibration
        if not calibration.reads(query):
            # The model cannot read this query (an English-only model, a Chinese query): the
            # arm abstains rather than adding near-random candidates to the fusion.
            return None, None
        import numpy as np

        try:
            vector = np.asarray(self._embedder.embed_query(query), dtype=np.float32)
            # einsum, not `@`: a multi-threaded BLAS gemv right after onnxruntime's run fights
            # its spinning threads for the cores (10-30 ms instead of ~1 ms at 10,000 rows).
            cosines = np.einsum("ij,j->i", snapshot.matrix, vector)
        except _SEMANTIC_FAILURES as error:
            log.warning("recall: semantic arm failed, answering lexical-only: %s", error)
            return None, f"semantic arm failed: {error}"
        # Only entries in scope whose cosine is above the model's floor are nominated.
        eligible = cosines > calibration.floor
        if mask is not None:
            eligible &= mask
        positions = np.flatnonzero(eligible)
        if positions.size == 0:
            return Arm("semantic", self._settings.recall.semantic_divisor, ()), None
        scoped = cosines[positions]
        if positions.size > limit:
            # Keep a margin over the cut so ties at the boundary are resolved by id below.
            top = np.argpartition(-scoped, limit - 1)[:limit]
            threshold = scoped[top].min()
            top = np.flatnonzero(scoped >= threshold)
        else:
            top = np.arange(positions.size)
        ordered = sorted(
            ((float(scoped[index]), snapshot.vector_ids[positions[index]]) for index in top),
            key=lambda item: (-item[0], item[1]),
        )[:limit]
        return (
            Arm(
                "semantic",
                self._settings.recall.semantic_divisor,
                tuple(
                    ArmCandidate(entry_id, rank, cosine, calibration.confidence(cosine))
                    for rank, (cosine, entry_id) in enumerate(ordered, start=1)
                ),
            ),
            None,
        )

    def _neighbours(
        self, snapshot: _Snapshot, allowed: frozenset[str], arms: Sequence[Arm]
    ) -> dict[str, tuple[Neighbour, ...]]:
        """Given the direct candidates, return each one's in-scope topic/file/workspace peers."""
        direct = {candidate.id for arm in arms for candidate in arm.candidates}
        out: dict[str, tuple[Neighbour, ...]] = {}
        for entry_id in sorted(direct):
            row = snapshot.rows[entry_id]
            peers: list[Neighbour] = []
            for other_id in sorted(allowed):
                if other_id == entry_id:
                    continue
                other = snapshot.rows[other_id]
                if other.path == row.path and other.heading_path[:-1] == row.heading_path[:-1]:
                    peers.append(Neighbour(other_id, "topic"))
                elif other.path == row.path:
                    peers.append(Neighbour(other_id, "file"))
                elif row.workspace is not None and other.workspace == row.workspace:
                    peers.append(Neighbour(other_id, "workspace"))
            out[entry_id] = tuple(peers)
        return out

    def slots(self, ids: Iterable[str]) -> dict[str, str | None]:
        """Given entry ids, return id → explicit slot (None: it has none) of each one the index
        holds, from the warm snapshot recall answers from (no file reads)."""
        snapshot, _, _ = self._current()
        rows = snapshot.rows
        return {entry_id: rows[entry_id].slot for entry_id in ids if entry_id in rows}

    # --- expand --------------------------------------------------------------------------

    def expand(self, ids: Sequence[str]) -> dict[str, Any]:
        """Given entry ids, return their full text from the current files.

        Answer: ``{"entries": [{"id", "workspace", "path", "line_start", "line_end",
        "heading_path", "text"}], "missing": [{"id", "reason"}]}`` in the order asked (a
        repeated id once). Reasons: ``unknown`` (not in the index), ``vanished`` (its file or
        the entry in it is gone), ``unreadable`` (the file cannot be read as UTF-8 text).
        """
        from carryd.index.entries import parse_entries
        from carryd.index.redact import redact

        wanted = list(dict.fromkeys(ids))
        rows = self._store.entries_by_id(wanted)
        root = self._settings.root_path
        parsed: dict[str, Mapping[str, Any] | str] = {}
        entries: list[dict[str, Any]] = []
        missing: list[dict[str, str]] = []
        for entry_id in wanted:
            row = rows.get(entry_id)
            if row is None:
                missing.append({"id": entry_id, "reason": "unknown"})
                continue
            if row.path not in parsed:
                parsed[row.path] = _read_entries(root, row.path, parse_entries)
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


def _read_entries(root: Path, path: str, parse: Any) -> Mapping[str, Any] | str:
    """Given the root and a relative path, return id → Entry of the file now, or a reason."""
    try:
        text = (root / path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return "vanished"
    except (OSError, UnicodeDecodeError):
        return "unreadable"
    return {entry.id: entry for entry in parse(path, text)}


def _code(code_of: dict[str | None, int], workspace: str | None) -> int:
    """Given the workspace codes so far, return the workspace's (a new one gets the next)."""
    code = code_of.get(workspace)
    if code is None:
        code = code_of[workspace] = len(code_of)
    return code


def _codes(
    rows: Mapping[str, EntryRow], entry_ids: Sequence[str], code_of: dict[str | None, int]
) -> np.ndarray:
    """Given the rows in row order, return each one's workspace code (adding new ones)."""
    import numpy as np

    return np.fromiter(
        (_code(code_of, rows[entry_id].workspace) for entry_id in entry_ids),
        dtype=np.int64,
        count=len(entry_ids),
    )


def _evidence_json(evidence: ArmEvidence | None, arm: str) -> dict[str, Any] | None:
    if evidence is None:
        return None
    out: dict[str, Any] = {
        "rank": evidence.rank,
        ("bm25" if arm == "lexical" else "cosine"): round(evidence.raw, 6),
        "confidence": round(evidence.confidence, 6),
        "divisor": evidence.divisor,
        "contribution": round(evidence.contribution, 8),
    }
    if arm == "lexical":
        out["matched"] = list(evidence.matched)
    return out


def _hit_json(hit: FusedHit, row: EntryRow) -> dict[str, Any]:
    from carryd.index.redact import redact

    out: dict[str, Any] = {
        "id": hit.id,
        "workspace": row.workspace,
        "path": row.path,
        "line_start": row.line_start,
        "line_end": row.line_end,
        "l0": redact(row.l0),
        "l0_source": row.l0_source,
        "score": round(hit.score, 8),
        "confidence": round(hit.confidence, 6),
        "decision": hit.decision,
        "match_reason": hit.match_reason,
        "arms": {
            "lexical": _evidence_json(hit.lexical, "lexical"),
            "semantic": _evidence_json(hit.semantic, "semantic"),
        },
    }
    if hit.parent_of is not None:
        out["parent_of"] = hit.parent_of
    return out


# --- the in-process shell ----------------------------------------------------------------


class _InProcess:
    """Open the store and the model once for a command; sync first only if no index exists."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._recaller: Recaller | None = None
        self._store: Store | None = None

    def recaller(self) -> Recaller:
        if self._recaller is None:
            from carryd.daemon.indexing import load_embedder_for, open_store, sync_root

            missing_index = not self._settings.db_path.exists()
            # Lazy: the ONNX session loads on the first query embedding, so `expand` never
            # pays for it; a model that then fails to load degrades that answer.
            embedder, degraded = load_embedder_for(self._settings, lazy=True)
            self._store = open_store(self._settings)
            if self._store.recovered:
                # A corrupt index was moved aside: say so, and rebuild rather than answer
                # from an empty index as if nothing were remembered.
                log.warning("%s", self._store.recovered)
            if missing_index or self._store.created:
                log.info("no index at %s yet: syncing the root once", self._settings.db_path)
                sync_root(self._settings, store=self._store, embedder=embedder)
            self._recaller = Recaller(self._settings, self._store, embedder, degraded)
        return self._recaller

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._recaller = None


def _ask_daemon(settings: Settings, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    try:
        from carryd.daemon import control
    except ImportError:  # the daemon's control module is optional for the in-process path
        return None
    return control.request(settings, method, params)


def _recall_params(
    query: str, workspace: str | None, limit: int | None, min_confidence: float | None
) -> dict[str, Any]:
    return {
        "query": query,
        "workspace": workspace,
        "limit": limit,
        "min_confidence": min_confidence,
    }


def _batch_requests(path: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Given a JSON-lines file ("-" for stdin), return its requests; a bad line is a UsageError."""
    try:
        if path == "-":
            lines = sys.stdin.read().splitlines()
        else:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the batch file: {error}") from error
    requests = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as error:
            raise UsageError(f"{path}:{number}: not a JSON object: {error}") from error
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise UsageError(f'{path}:{number}: expected {{"query": "…", "workspace"?: "…"}}')
        if not item["query"].strip():
            raise UsageError(f"{path}:{number}: the query is empty")
        workspace = item.get("workspace", args.workspace)
        if workspace is not None and not isinstance(workspace, str):
            raise UsageError(f"{path}:{number}: 'workspace' must be a string")
        limit = item.get("limit", args.limit)
        floor = item.get("min_confidence", args.min_confidence)
        requests.append(_recall_params(item["query"], workspace, limit, floor))
    return requests


def _answers(settings: Settings, requests: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    local = _InProcess(settings)
    try:
        for params in requests:
            answer = _ask_daemon(settings, "recall", params)
            if answer is None:
                answer = local.recaller().recall(
                    params["query"],
                    workspace=params["workspace"],
                    limit=params["limit"],
                    min_confidence=params["min_confidence"],
                )
            yield answer
    finally:
        local.close()


def _check_numbers(limit: int | None, min_confidence: float | None) -> None:
    if limit is not None and limit < 0:
        raise UsageError(f"--limit must not be negative, got {limit}")
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be between 0 and 1, got {min_confidence}")


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd recall QUERY | --batch FILE`: print the answer(s); exit 0."""
    query = getattr(args, "query", None)
    batch = getattr(args, "batch", None)
    if (query is None) == (batch is None):
        raise UsageError("give either a QUERY or --batch FILE (not both)")
    if query is not None and not query.strip():
        raise UsageError("the QUERY is empty")
    _check_numbers(args.limit, args.min_confidence)
    if batch is not None:
        requests = _batch_requests(batch, args)
        for params in requests:
            _check_numbers(params["limit"], params["min_confidence"])
        for answer in _answers(settings, requests):
            print(json.dumps(answer, ensure_ascii=False), flush=True)
        return 0
    params = _recall_params(query, args.workspace, args.limit, args.min_confidence)
    (answer,) = list(_answers(settings, [params]))
    if getattr(args, "json", False):
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    else:
        print(_listing(answer))
    return 0


def _listing(answer: Mapping[str, Any]) -> str:
    """Given a recall answer, return it as a short human-readable listing."""
    lines = []
    if answer.get("degraded"):
        lines.append(f"(degraded: {answer['degraded']})")
    hits = answer.get("hits", [])
    if not hits:
        lines.append("no memory above the confidence threshold")
    for position, hit in enumerate(hits, start=1):
        lines.append(
            f"{position}. {hit['id']}  {hit['path']}:{hit['line_start']}-{hit['line_end']}  "
            f"confidence {hit['confidence']:.2f} ({hit['match_reason']})"
        )
        lines.append(f"   {hit['l0']}")
    if hits:
        lines.append("full text: carryd expand ID...")
    return "\n".join(lines)


def cmd_expand(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd expand ID...`: print full text; exit 1 when any id is missing."""
    ids = list(args.ids)
    answer = _ask_daemon(settings, "expand", {"ids": ids})
    if answer is None:
        local = _InProcess(settings)
        try:
            answer = local.recaller().expand(ids)
        finally:
            local.close()
    if getattr(args, "json", False):
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    else:
        for entry in answer["entries"]:
            print(
                f"<!-- {entry['id']} {entry['path']}:{entry['line_start']}-{entry['line_end']} -->"
            )
            print(entry["text"].rstrip("\n"))
            print()
        for item in answer["missing"]:
            print(f"carryd: {item['id']}: {item['reason']}", file=sys.stderr)
    return 1 if answer["missing"] else 0
