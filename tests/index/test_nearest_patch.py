"""A remembered vector search patched with what an edit changed gives `nearest`'s answer.

Vectors on a small integer grid make equal cosines common, so ties (broken by id) are tested
too; rows drop out of the mask, die and come back, as edits, moves and deletes make them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from carryd.index.nearest_patch import Remembered, cosines_of, patched, remembered
from carryd.index.recall import nearest
from hypothesis import given, settings
from hypothesis import strategies as st

DIM = 3
LIMIT = 3
FLOOR = 0.1
QUERY = np.asarray([1.0, 1.0, 0.0], dtype=np.float32) / np.float32(np.sqrt(2.0))

ids = st.sampled_from([f"mem_{n:02d}" for n in range(16)])
grid = st.tuples(*[st.integers(-1, 2)] * DIM).filter(any)
# An id's state: its vector, and whether it is a candidate (in scope, readable); None: gone.
state = st.none() | st.tuples(grid, st.sampled_from([True, True, True, False]))


def unit(values: tuple[int, ...]) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def rows_of(rows: dict[str, Any]) -> tuple[np.ndarray, list[str], dict[str, int], np.ndarray]:
    """The vector rows of a snapshot holding `rows` (in an order unrelated to the ids)."""
    present = sorted((entry_id for entry_id in rows if rows[entry_id] is not None), reverse=True)
    matrix = np.zeros((len(present), DIM), dtype=np.float32)
    for position, entry_id in enumerate(present):
        matrix[position] = unit(rows[entry_id][0])
    mask = np.fromiter((rows[i][1] for i in present), dtype=bool, count=len(present))
    return matrix, present, {entry_id: n for n, entry_id in enumerate(present)}, mask


def full(rows: dict[str, Any], limit: int) -> tuple[tuple[str, float], ...]:
    matrix, present, _, mask = rows_of(rows)
    return nearest(matrix, present, QUERY, mask=mask, floor=FLOOR, limit=limit)


@settings(max_examples=300, deadline=None)
@given(
    start=st.dictionaries(ids, state, min_size=10),
    edits=st.lists(st.dictionaries(ids, state, min_size=1, max_size=3), min_size=1, max_size=8),
)
def test_a_patched_search_answers_as_a_full_pass(
    start: dict[str, Any], edits: list[dict[str, Any]]
) -> None:
    rows = dict(start)
    known: Remembered = remembered(full(rows, 2 * LIMIT), 2 * LIMIT)
    for edit in edits:
        rows.update(edit)
        matrix, _, vector_of, mask = rows_of(rows)
        fresh = cosines_of(matrix, vector_of, edit, QUERY, mask=mask, floor=FLOOR)
        known = patched(known, set(edit), fresh, keep=2 * LIMIT)
        # What is known is always a prefix of the full pass's order ...
        assert known.found == full(rows, 2 * LIMIT)[: len(known.found)]
        answer = known.answer(LIMIT)
        if answer is None:
            assert not known.complete and len(known.found) < LIMIT
            known = remembered(full(rows, 2 * LIMIT), 2 * LIMIT)  # what the daemon does
        else:
            # ... and an answer it gives is the full pass's, ties and cosines alike.
            assert answer == full(rows, LIMIT)


def test_an_edit_outside_the_best_rows_keeps_them_known() -> None:
    rows = {f"mem_{n}": ((2, 2 - n % 3, n % 2), True) for n in range(8)}
    known = remembered(full(rows, 2 * LIMIT), 2 * LIMIT)
    worst = min(rows, key=lambda i: float(unit(rows[i][0]) @ QUERY))
    rows[worst] = ((0, 0, 1), True)  # far below the floor now
    matrix, _, vector_of, mask = rows_of(rows)
    fresh = cosines_of(matrix, vector_of, [worst], QUERY, mask=mask, floor=FLOOR)
    after = patched(known, {worst}, fresh, keep=2 * LIMIT)
    assert after.answer(LIMIT) == full(rows, LIMIT)
    assert len(after.found) == len(known.found) - (worst in dict(known.found))


def test_a_row_that_falls_past_the_cut_is_not_placed_before_rows_never_remembered() -> None:
    """mem_00 was the best row; edited, its cosine falls below mem_04's, which the remembered
    six never held: it cannot be placed, and what is known shrinks to the five that stay."""
    grid_rows = [(2, 2, 0), (2, 1, 0), (1, 2, 0), (2, 2, 1), (1, 1, 1), (2, 1, 1), (1, 2, 1)]
    rows = {f"mem_{n:02d}": (vector, True) for n, vector in enumerate(grid_rows)}
    known = remembered(full(rows, 2 * LIMIT), 2 * LIMIT)
    assert "mem_04" not in dict(known.found) and not known.complete
    rows["mem_00"] = ((1, 0, 1), True)
    matrix, _, vector_of, mask = rows_of(rows)
    fresh = cosines_of(matrix, vector_of, ["mem_00"], QUERY, mask=mask, floor=FLOOR)
    assert fresh and fresh[0][0] == "mem_00"  # still a candidate, far down
    after = patched(known, {"mem_00"}, fresh, keep=2 * LIMIT)
    assert after.found == full(rows, 2 * LIMIT)[:5]
    assert after.answer(LIMIT) == full(rows, LIMIT)
