"""The sketched first pass of `nearest` (index/snapshot_sketch.py) gives exactly the answer of
scoring every row: same ids, same cosines, same order, ties and floors included — on a
fresh snapshot and through the refreshes that patch it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from carryd.index import snapshot_sketch
from carryd.index.recall import nearest
from carryd.index.snapshot import StoredVectors, apply_changes, build_snapshot, scope_of, stats_of
from carryd.index.snapshot_sketch import shortlist, sketch_of
from carryd.index.store import entry_row

from tests.calibrations import MINILM

DIM = 48


def corpus(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors near a low-dimensional subspace (as one person's memories are), with
    exact duplicates, so that ties straddle the cut."""
    basis = rng.standard_normal((6, DIM))
    matrix = rng.standard_normal((count, 6)) @ basis + 0.15 * rng.standard_normal((count, DIM))
    if count > 100:
        matrix[count // 2 : count // 2 + 40] = matrix[7]  # 41 identical rows
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix.astype(np.float32)


def queries(rng: np.random.Generator, matrix: np.ndarray) -> list[np.ndarray]:
    near = [
        matrix[int(i)] + 0.05 * rng.standard_normal(DIM) for i in rng.integers(0, len(matrix), 12)
    ]
    far = [rng.standard_normal(DIM) for _ in range(4)]
    out = [np.asarray(q / np.linalg.norm(q), dtype=np.float32) for q in near + far]
    return [*out, matrix[7].copy()]  # a query that ties 41 rows exactly


def test_the_shortlist_gives_exactly_the_full_scan_answer() -> None:
    rng = np.random.default_rng(3)
    matrix = corpus(rng, 3000)
    ids = [f"mem_{n:05d}" for n in rng.permutation(len(matrix))]
    sketch = sketch_of(matrix, len(matrix), min_rows=0)
    assert sketch is not None
    masks = [None, rng.random(len(matrix)) < 0.5, np.zeros(len(matrix), dtype=bool)]
    pruned = asked = 0
    for query in queries(rng, matrix):
        for mask in masks:
            for floor in (-1.0, 0.0, 0.3, 0.9):
                for limit in (1, 5, 50, 2500, 5000):
                    exact = nearest(matrix, ids, query, mask=mask, floor=floor, limit=limit)
                    fast = nearest(
                        matrix, ids, query, mask=mask, floor=floor, limit=limit, sketch=sketch
                    )
                    assert fast == exact, (floor, limit)
                    rows = shortlist(
                        sketch, len(matrix), query, mask=mask, floor=floor, limit=limit
                    )
                    asked += 1
                    pruned += rows is not None and rows.size < len(matrix) // 4
    # The fixture exercises the shortlist, not only the fallback to the full scan.
    assert pruned > asked // 2


def _raw(entry_id: str, workspace: str | None) -> tuple:
    return (
        entry_id, f"{workspace or 'notes'}/{entry_id}.md", workspace, 1, 2,
        json.dumps(["h"]), "cache parser", "heading", "t", "l", None, 2,
    )  # fmt: skip


def test_a_refreshed_snapshot_keeps_its_sketch_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_sketch, "SKETCH_MIN_ROWS", 100)
    rng = np.random.default_rng(5)
    matrix = corpus(rng, 400)
    ids = [f"mem_{n:04d}" for n in range(len(matrix))]
    rows = {
        entry_id: _raw(entry_id, ("shop", "ops", None)[n % 3]) for n, entry_id in enumerate(ids)
    }
    stored = dict(zip(ids, matrix, strict=True))
    snapshot = build_snapshot(
        1,
        rows,
        stats_of(len(rows), 2 * len(rows)),
        decode=entry_row,
        calibration=MINILM,
        vectors=StoredVectors(dim=DIM, ids=ids, matrix=matrix),
        epoch="e",
    )
    assert snapshot.sketch is not None
    checks = queries(rng, matrix)
    # One edit (written in place to a spare row), then bigger ones until the buffer is
    # compacted or grown, with ids added and removed on the way.
    for generation, size in enumerate((1, 3, 30, 60, 120), start=2):
        changed: dict[str, tuple | None] = {}
        for entry_id in rng.choice(sorted(rows), size, replace=False):
            stored[entry_id] = corpus(rng, 1)[0]
            changed[entry_id] = rows[entry_id]
        gone = sorted(rows)[generation]
        del rows[gone], stored[gone]
        changed[gone] = None
        new_id = f"mem_new{generation}"
        rows[new_id] = _raw(new_id, "shop")
        stored[new_id] = corpus(rng, 1)[0]
        changed[new_id] = rows[new_id]
        snapshot = apply_changes(
            snapshot,
            generation,
            changed,
            decode=entry_row,
            calibration=MINILM,
            vectors={i: stored[i].tobytes() for i in changed if i in stored},
            dim=DIM,
        )
        assert snapshot is not None and snapshot.sketch is not None and snapshot.matrix is not None
        count = len(snapshot.vector_ids)
        expected = snapshot.matrix @ snapshot.sketch.basis.T
        assert np.allclose(snapshot.sketch.projected[:count], expected, atol=1e-5)
        for workspace in (None, "shop"):
            mask = scope_of(snapshot, workspace).vector_mask
            for query in checks:
                for limit in (3, 40):
                    args = (snapshot.matrix, snapshot.vector_ids, query)
                    exact = nearest(*args, mask=mask, floor=0.0, limit=limit)
                    assert exact == nearest(
                        *args, mask=mask, floor=0.0, limit=limit, sketch=snapshot.sketch
                    )
                    live = {i for i, _ in exact}
                    assert live <= set(rows)  # dead rows (replaced, removed) never answer


def test_small_snapshots_have_no_sketch() -> None:
    matrix = corpus(np.random.default_rng(1), 50)
    assert sketch_of(matrix, len(matrix)) is None  # below SKETCH_MIN_ROWS: a full scan is ~free
