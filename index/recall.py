"""Hybrid recall over a warm snapshot (pure): two arms, fused in rank space, typed hits.

`recall(snapshot, query_terms, query_vector, scope, options)`

1. runs the **lexical arm**: BM25 over the full-text postings of the query's terms;
2. runs the **semantic arm**: the query vector against the **L0** vectors only, through
   `nearest` — the one vector-search seam (exact cosine; from 20,000 vectors on, only the
   rows a low-dimensional sketch cannot rule out are scored, `snapshot_sketch`; an ANN index
   would replace this one function) — top `candidates_per_arm` among those above the model's
   calibrated floor;
3. reads the cosine of **every** candidate the model reads on the calibration's ramp (the
   semantic arm's nominees and the lexical arm's candidates below the floor alike: `_places`),
   the semantic evidence each hit's confidence combines with its lexical evidence;
4. reads what makes the question specific that the scope lacks (`carryd.index.absence`):
   the evidence of absence every hit's confidence reads, in both arms;
5. fuses them in rank space and decides per hit from absolute confidences (`fuse`).

The shell (`carryd.daemon.recall.recalling`) reads the store, embeds the query (or passes None: no
model, or a model that cannot read the query), redacts and serialises; nothing here does IO.
Each `RecallHit` carries what carry's selection needs, the entry's explicit slot included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from carryd.index.absence import absent_terms, unmet_names
from carryd.index.fusion import (
    Arm,
    ArmCandidate,
    ArmEvidence,
    Decision,
    FusedHit,
    MatchReason,
    Neighbour,
    SemanticCalibration,
    fuse,
)
from carryd.index.l0 import L0Source
from carryd.index.lexical import TermPostings, search_rows
from carryd.index.nearest_patch import cosines_of
from carryd.index.snapshot import Scope, Snapshot
from carryd.index.snapshot_sketch import Sketch, shortlist
from carryd.index.sync import EntryRow

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "QueryTerms",
    "RecallAnswer",
    "RecallHit",
    "RecallOptions",
    "nearest",
    "recall",
]


@dataclass(frozen=True)
class RecallOptions:
    """How to rank and cut one query's answer (from the recall settings and the request)."""

    limit: int
    min_confidence: float
    candidates_per_arm: int
    lexical_divisor: float
    semantic_divisor: float
    rrf_k: int
    parent_propagation: bool
    calibration: SemanticCalibration | None  # None: no model, no semantic arm
    # The semantic arm's search, called as `nearest` is (None: `nearest`): the daemon passes
    # one that answers a repeated question from what it remembers (`nearest_patch`).
    vector_search: Callable[..., tuple[tuple[str, float], ...]] | None = None


@dataclass(frozen=True)
class QueryTerms:
    """The query's text, its distinct terms and the postings of those the index holds."""

    text: str
    terms: tuple[str, ...]
    postings: Mapping[str, TermPostings]


@dataclass(frozen=True)
class RecallHit:
    """One recalled entry: where it lives, its L0 (not redacted: the edge redacts), its
    score, confidence, decision and the evidence of each arm, and its explicit slot."""

    id: str
    workspace: str | None
    path: str  # relative to the root
    line_start: int
    line_end: int
    l0: str
    l0_source: L0Source
    score: float
    confidence: float
    decision: Decision
    match_reason: MatchReason
    lexical: ArmEvidence | None = None
    semantic: ArmEvidence | None = None
    parent_of: str | None = None
    slot: str | None = None
    place: float | None = None  # the semantic evidence confidence read (`FusedHit.place`)


@dataclass(frozen=True)
class RecallAnswer:
    """A query's answer: only `inject` hits, best first; `degraded` says why an arm is out;
    `absent`: the question's specific terms the scope lacks (`carryd.index.absence`), which
    lowered every hit's confidence, and `unmet`: its names the root lacks, which lowered every
    hit but a paraphrase (in process only: the JSON answer's confidences say it)."""

    query: str
    workspace: str | None
    degraded: str | None
    hits: tuple[RecallHit, ...]
    absent: tuple[str, ...] = ()
    unmet: tuple[str, ...] = ()


def recall(
    snapshot: Snapshot,
    query_terms: QueryTerms,
    query_vector: np.ndarray | Callable[[], np.ndarray | None] | None,
    scope: Scope,
    options: RecallOptions,
) -> RecallAnswer:
    """Given a snapshot, the query's terms (with postings) and vector (None: no semantic arm;
    or a callable returning it, asked once the lexical arm is done) and a scope, return the
    answer.

    The threshold decides each hit's `decision`; only `inject` hits are returned
    (`min_confidence=0` therefore returns every ranked candidate), at most `limit`.
    `degraded` is set only when the semantic arm could not use the vector it was given.
    """
    if not query_terms.text.strip() or options.limit <= 0:
        return RecallAnswer(query_terms.text, scope.workspace, None, ())
    per_arm = max(options.candidates_per_arm, options.limit)
    arms = [_lexical_arm(query_terms, snapshot, scope, options, per_arm)]
    # A callable is asked only now: the shell embeds the query while the lexical arm runs.
    vector = query_vector() if callable(query_vector) else query_vector
    semantic, problem = _semantic_arm(vector, snapshot, scope, options, per_arm)
    places = None
    if semantic is not None and vector is not None and options.calibration is not None:
        arms.append(semantic)
        places = _places(vector, snapshot, scope, options.calibration, arms)
    neighbours = _neighbours(snapshot, scope.allowed, arms) if options.parent_propagation else None
    absent = absent_terms(
        query_terms.text,
        query_terms.terms,
        query_terms.postings,
        None if scope.workspace is None else scope.lexical_mask,
    )
    unmet = unmet_names(query_terms.text, query_terms.terms, query_terms.postings)
    fused = fuse(
        arms,
        min_confidence=options.min_confidence,
        k=options.rrf_k,
        neighbours=neighbours,
        places=places,
        absent=bool(absent),
        unmet=bool(unmet),
    )
    chosen = [hit for hit in fused if hit.decision == "inject"][: options.limit]
    hits = tuple(_hit(hit, snapshot.rows[hit.id]) for hit in chosen)
    return RecallAnswer(query_terms.text, scope.workspace, problem, hits, absent, unmet)


def nearest(
    matrix: np.ndarray,
    ids: Sequence[str],
    vector: np.ndarray,
    *,
    mask: np.ndarray | None,
    floor: float,
    limit: int,
    sketch: Sketch | None = None,
) -> tuple[tuple[str, float], ...]:
    """Given unit vectors (rows aligned with `ids`), a unit query vector, an optional row mask
    and a cosine floor, return up to `limit` (id, cosine) above the floor, best first, ties by
    id. The one vector-search seam: an ANN index answers this same question.

    With a `sketch` of the matrix (large snapshots) only the rows its bounds cannot rule out
    are scored (`snapshot_sketch.shortlist`): the same answer, bit for bit, as scoring all."""
    import numpy as np

    if limit <= 0:
        return ()
    rows = None
    if sketch is not None and sketch.basis.shape[1] == matrix.shape[1]:
        rows = shortlist(sketch, matrix.shape[0], vector, mask=mask, floor=floor, limit=limit)
    if rows is not None:
        # The same float32 dot product, row by row, as the full scan below.
        cosines = np.einsum("ij,j->i", matrix[rows], vector)
        eligible = cosines > floor
        return _best(ids, rows[eligible], cosines[eligible], limit)
    # einsum, not `@`: a multi-threaded BLAS gemv right after onnxruntime's run fights
    # its spinning threads for the cores (10-30 ms instead of ~1 ms at 10,000 rows).
    cosines = np.einsum("ij,j->i", matrix, vector)
    eligible = cosines > floor
    if mask is not None:
        eligible &= mask
    positions = np.flatnonzero(eligible)
    return _best(ids, positions, cosines[positions], limit)


def _best(
    ids: Sequence[str], positions: np.ndarray, scoped: np.ndarray, limit: int
) -> tuple[tuple[str, float], ...]:
    """Given candidate rows and their cosines, return the best `limit` as (id, cosine), ties
    by id."""
    import numpy as np

    if positions.size == 0:
        return ()
    if positions.size > limit:
        # Keep a margin over the cut so ties at the boundary are resolved by id below.
        top = np.argpartition(-scoped, limit - 1)[:limit]
        threshold = scoped[top].min()
        top = np.flatnonzero(scoped >= threshold)
    else:
        top = np.arange(positions.size)
    ordered = sorted(
        ((ids[positions[index]], float(scoped[index])) for index in top),
        key=lambda item: (-item[1], item[0]),
    )
    return tuple(ordered[:limit])


def _lexical_arm(
    query_terms: QueryTerms, snapshot: Snapshot, scope: Scope, options: RecallOptions, limit: int
) -> Arm:
    hits = search_rows(
        query_terms.terms,
        {
            term: query_terms.postings[term]
            for term in query_terms.terms
            if term in query_terms.postings
        },
        snapshot.entry_ids,
        snapshot.doc_lengths,
        snapshot.stats,
        allowed=scope.lexical_mask,
        limit=limit,
    )
    return Arm(
        "lexical",
        options.lexical_divisor,
        tuple(
            ArmCandidate(
                hit.id, hit.rank, hit.bm25, hit.confidence, hit.matched, hit.share, hit.saturation
            )
            for hit in hits
        ),
    )


def _semantic_arm(
    vector: np.ndarray | None, snapshot: Snapshot, scope: Scope, options: RecallOptions, limit: int
) -> tuple[Arm | None, str | None]:
    """Return the semantic arm, or None and why not (None, None: nothing to search)."""
    calibration = options.calibration
    if vector is None or calibration is None or snapshot.matrix is None:
        return None, None
    if vector.shape != (snapshot.matrix.shape[1],):
        problem = (
            f"semantic arm failed: the query vector has shape {vector.shape}, the index "
            f"holds {snapshot.matrix.shape[1]}-d vectors"
        )
        return None, problem
    search = options.vector_search or nearest
    found = search(
        snapshot.matrix,
        snapshot.vector_ids,
        vector,
        mask=scope.vector_mask,
        floor=calibration.floor,
        limit=limit,
        sketch=snapshot.sketch,
    )
    return (
        Arm(
            "semantic",
            options.semantic_divisor,
            tuple(
                ArmCandidate(entry_id, rank, cosine, calibration.confidence(cosine))
                for rank, (entry_id, cosine) in enumerate(found, start=1)
            ),
        ),
        None,
    )


def _places(
    vector: np.ndarray,
    snapshot: Snapshot,
    scope: Scope,
    calibration: SemanticCalibration,
    arms: Sequence[Arm],
) -> dict[str, float]:
    """Given the query vector and the arms' candidates, return id → the place of its cosine on
    the calibration's ramp for every candidate the model reads (a live, in-scope vector of an
    L0 the model reads: `scope.vector_mask`), nominated by the semantic arm or not."""
    places = {
        candidate.id: calibration.place(candidate.raw)
        for arm in arms
        if arm.name == "semantic"
        for candidate in arm.candidates
    }
    others = [
        candidate.id
        for arm in arms
        if arm.name != "semantic"
        for candidate in arm.candidates
        if candidate.id not in places
    ]
    if others and snapshot.matrix is not None:
        # The same float32 dot product, row by row, as `nearest` scores the nominees with.
        found = cosines_of(
            snapshot.matrix,
            snapshot.vector_of,
            others,
            vector,
            mask=scope.vector_mask,
            floor=float("-inf"),
        )
        places.update((entry_id, calibration.place(cosine)) for entry_id, cosine in found)
    return places


def _neighbours(
    snapshot: Snapshot, allowed: frozenset[str], arms: Sequence[Arm]
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


def _hit(hit: FusedHit, row: EntryRow) -> RecallHit:
    return RecallHit(
        id=hit.id,
        workspace=row.workspace,
        path=row.path,
        line_start=row.line_start,
        line_end=row.line_end,
        l0=row.l0,
        l0_source=row.l0_source,
        score=hit.score,
        confidence=hit.confidence,
        decision=hit.decision,
        match_reason=hit.match_reason,
        lexical=hit.lexical,
        semantic=hit.semantic,
        parent_of=hit.parent_of,
        slot=row.slot,
        place=hit.place,
    )
