"""The pure recall core: the warm snapshot (build and patch) and `recall` over it.

No store and no model: rows are given as the store returns them, vectors as arrays.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from carryd.index.lexical import LexicalStats, TermPostings, query_terms
from carryd.index.recall import QueryTerms, RecallOptions, nearest, recall
from carryd.index.snapshot import StoredVectors, apply_changes, build_snapshot, scope_of
from carryd.index.store import entry_row

from tests.calibrations import MINILM

DIM = 4


def raw(entry_id: str, path: str, workspace: str | None, l0: str, *, slot: str | None = None):  # type: ignore[no-untyped-def]
    """An entries row exactly as the store returns it (`ENTRY_COLUMNS` order)."""
    return (
        entry_id,
        path,
        workspace,
        1,
        3,
        json.dumps([l0]),
        l0,
        "heading",
        "t-" + l0,
        "h-" + l0,
        slot,
        len(l0.split()),
    )


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


ROWS = {
    "mem_a": raw("mem_a", "shop/notes.md", "shop", "money is integer cents", slot="money"),
    "mem_b": raw("mem_b", "MEMORY.md", None, "prefer python scripts"),
    "mem_c": raw("mem_c", "ops/notes.md", "ops", "redis restarts nightly"),
}
VECTORS = {"mem_a": unit(1, 0, 0, 0), "mem_b": unit(0, 1, 0, 0), "mem_c": unit(0, 0, 1, 0)}


def stored(vectors: dict[str, np.ndarray], rows: dict[str, tuple[object, ...]]) -> StoredVectors:
    ids = sorted(vectors)
    return StoredVectors(
        dim=DIM,
        ids=ids,
        matrix=np.stack([vectors[i] for i in ids]),
    )


def snapshot_of(rows, vectors, generation=1):  # type: ignore[no-untyped-def]
    return build_snapshot(
        generation,
        rows,
        LexicalStats(doc_count=len(rows), avg_doc_len=4.0),
        decode=entry_row,
        calibration=MINILM,
        vectors=stored(vectors, rows),
    )


def test_nearest_ranks_by_cosine_above_the_floor_ties_by_id_within_the_mask() -> None:
    matrix = np.stack([unit(1, 0, 0, 0), unit(1, 0, 0, 0), unit(1, 1, 0, 0), unit(0, 1, 0, 0)])
    ids = ("z", "a", "m", "b")
    query = unit(1, 0, 0, 0)
    assert nearest(matrix, ids, query, mask=None, floor=0.5, limit=10) == (
        ("a", pytest.approx(1.0)),
        ("z", pytest.approx(1.0)),
        ("m", pytest.approx(2**-0.5)),
    )
    assert [i for i, _ in nearest(matrix, ids, query, mask=None, floor=0.5, limit=1)] == ["a"]
    mask = np.array([True, False, True, True])
    assert [i for i, _ in nearest(matrix, ids, query, mask=mask, floor=0.5, limit=10)] == [
        "z",
        "m",
    ]


def test_vectors_of_another_width_need_the_full_load_which_says_so() -> None:
    first = snapshot_of(ROWS, VECTORS)
    wide = np.zeros(DIM + 1, dtype=np.float32).tobytes()
    assert (
        apply_changes(
            first,
            2,
            {i: ROWS[i] for i in sorted(ROWS)},
            decode=entry_row,
            calibration=MINILM,
            vectors={i: wide for i in sorted(ROWS)},
            dim=DIM,
        )
        is None
    )
    wrong = StoredVectors(dim=DIM + 1, ids=sorted(VECTORS), matrix=np.stack(list(VECTORS.values())))
    loaded = build_snapshot(
        2, ROWS, LexicalStats(3, 4.0), decode=entry_row, calibration=MINILM, vectors=wrong
    )
    assert loaded.matrix is None and "run `carryd index`" in (loaded.vector_problem or "")


def options(**changes: object) -> RecallOptions:
    base = dict(
        limit=10,
        min_confidence=0.0,
        candidates_per_arm=50,
        lexical_divisor=4.0,
        semantic_divisor=4.0,
        rrf_k=60,
        parent_propagation=False,
        calibration=MINILM,
    )
    base.update(changes)
    return RecallOptions(**base)  # type: ignore[arg-type]


def terms_for(snapshot, text: str, postings: dict[str, dict[str, int]]) -> QueryTerms:  # type: ignore[no-untyped-def]
    wanted = query_terms(text)
    return QueryTerms(
        text=text,
        terms=wanted,
        postings={t: TermPostings.of(postings.get(t, {}), snapshot.row_of) for t in wanted},
    )


def test_recall_returns_typed_hits_that_carry_the_slot_and_stay_in_scope() -> None:
    snapshot = snapshot_of(ROWS, VECTORS)
    postings = {"cent": {"mem_a": 1}, "redis": {"mem_c": 1}}  # the terms as tokenised
    query = terms_for(snapshot, "cents redis", postings)
    answer = recall(snapshot, query, None, scope_of(snapshot, "shop"), options())
    assert [hit.id for hit in answer.hits] == ["mem_a"]  # ops is another workspace
    (hit,) = answer.hits
    assert (hit.slot, hit.workspace, hit.path, hit.match_reason) == (
        "money",
        "shop",
        "shop/notes.md",
        "lexical",
    )
    assert hit.semantic is None and hit.lexical is not None
    everywhere = recall(snapshot, query, None, scope_of(snapshot, None), options())
    assert {hit.id for hit in everywhere.hits} == {"mem_a", "mem_c"}


def test_every_lexical_candidate_the_model_reads_is_judged_with_its_cosine() -> None:
    # "cents redis" holds a word of mem_a and of mem_c alike; the query vector is mem_a's
    # meaning, far from mem_c's. Neither cosine needs to clear the semantic arm's floor for the
    # confidence to read it: mem_c's lexical match is discounted by its unrelated cosine.
    snapshot = snapshot_of(ROWS, VECTORS)
    postings = {"cent": {"mem_a": 1}, "redis": {"mem_c": 1}}
    query = terms_for(snapshot, "cents redis", postings)
    vector = unit(1, 0, 0.2, 0)  # cosine 0.98 with mem_a, 0.20 with mem_c (floor 0.60)
    answer = recall(snapshot, query, vector, scope_of(snapshot, None), options())
    by_id = {hit.id: hit for hit in answer.hits}
    lexical_only = recall(snapshot, query, None, scope_of(snapshot, None), options())
    alone = {hit.id: hit for hit in lexical_only.hits}
    assert by_id["mem_c"].semantic is None  # not nominated ...
    assert by_id["mem_c"].place == pytest.approx(MINILM.place(float(VECTORS["mem_c"] @ vector)))
    # ... and yet read: the same lexical evidence, a lower confidence than without a model.
    assert by_id["mem_c"].confidence < alone["mem_c"].confidence
    assert by_id["mem_a"].confidence > alone["mem_a"].confidence
    assert alone["mem_c"].place is None


def test_the_semantic_arm_uses_the_query_vector_and_says_when_it_cannot() -> None:
    snapshot = snapshot_of(ROWS, VECTORS)
    query = terms_for(snapshot, "scripts language", {})
    answer = recall(snapshot, query, unit(0, 1, 0, 0), scope_of(snapshot, None), options())
    assert [hit.id for hit in answer.hits] == ["mem_b"]
    assert answer.hits[0].match_reason == "semantic" and answer.degraded is None
    bad = recall(snapshot, query, unit(1, 0, 0), scope_of(snapshot, None), options())
    assert bad.hits == () and "semantic arm failed" in (bad.degraded or "")
