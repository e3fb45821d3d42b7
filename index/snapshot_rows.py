"""The warm snapshot's values (`StoredVectors`, `Snapshot`, `Scope`) and the by-row arrays that
building (`snapshot.py`) and patching (`snapshot_patch.py`) both derive. Pure.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from carryd.index.fusion import SemanticCalibration
from carryd.index.lexical import LexicalStats, TermPostings
from carryd.index.snapshot_sketch import Sketch
from carryd.index.sync import EntryRow

if TYPE_CHECKING:
    import numpy as np

# Turns an entries row as stored into its `EntryRow` (the store's `entry_row`).
Decode = Callable[[tuple[Any, ...]], EntryRow]

# Spare vector rows kept past the used ones: a sixteenth more (1 MiB at 10,000 384-d
# vectors), at least this many. A compaction copies every vector, so at most one per
# 1/16 of the rows changed: each change costs 16 row copies, amortised.
SPARE_ROWS = 64
SPARE_SHARE = 16


class GrownIds(Sequence[str]):
    """The first `count` ids of a list that refreshes only append to, as they write the vector
    buffer's spare rows: a refresh adding a vector appends its id instead of copying the
    100,000 before it (a tuple copy, ~1 ms an edit), and no snapshot sees past its count."""

    __slots__ = ("_ids", "_count")

    def __init__(self, ids: list[str], count: int | None = None) -> None:
        self._ids = ids
        self._count = len(ids) if count is None else count

    def appended(self, more: Sequence[str]) -> GrownIds:
        """Given ids to append, return the ids with them (this one unchanged)."""
        if len(self._ids) != self._count:  # another refresh appended past us: copy ours
            return GrownIds([*self._ids[: self._count], *more])
        self._ids.extend(more)
        return GrownIds(self._ids, self._count + len(more))

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self._ids[: self._count][index]
        position = operator.index(index)
        if position < 0:
            position += self._count
        if not 0 <= position < self._count:
            raise IndexError(index)
        return self._ids[position]

    def __iter__(self) -> Iterator[str]:
        return itertools.islice(self._ids, self._count)


@dataclass(frozen=True)
class StoredVectors:
    """One model's vectors as the shell read them from the store (or why it could not).

    `ids` and `matrix` hold every stored vector of the model (entries that are gone included:
    `build_snapshot` drops those).
    """

    dim: int  # the width the model makes
    ids: Sequence[str] = ()
    matrix: np.ndarray | None = None  # float32 [len(ids), width]
    problem: str | None = None  # the vector table could not be read: why


@dataclass(frozen=True)
class Snapshot:
    """Everything a query needs from the store, as of one generation of one change log."""

    generation: int
    epoch: str | None  # the store's change log it can be refreshed from (None: full loads)
    rows: Mapping[str, EntryRow]  # as `decode` made them (the daemon's leaves hashes out)
    entry_ids: tuple[str, ...]  # ascending: the lexical arrays' row order
    row_of: Mapping[str, int]
    doc_lengths: np.ndarray  # float64, by row
    workspace_codes: np.ndarray  # int64, by row: `workspace_code_of[row.workspace]`
    workspace_code_of: Mapping[str | None, int]  # None (root level) is always 0
    stats: LexicalStats
    doc_length_total: int  # the exact sum of `doc_lengths` (for the patched stats)
    # Vector rows: `matrix` is the used part of `buffer`; a dead row (its vector replaced or
    # its entry gone) has `vector_live` False and is never a candidate.
    vector_ids: Sequence[str]  # (a `GrownIds`)
    matrix: np.ndarray | None  # float32 [n, dim], rows aligned with vector_ids
    vector_rows: np.ndarray  # int64, by vector row: the entry row it belongs to (-1: dead)
    vector_live: np.ndarray  # bool, by vector row
    vector_readable: np.ndarray | None  # bool, by vector row: the model reads its entry's L0
    vector_problem: str | None
    vector_of: Mapping[str, int]  # entry id -> its live vector row
    buffer: np.ndarray | None  # float32 [capacity, dim]; rows past `len(vector_ids)` spare
    # The buffer's projections, row for row (`snapshot_sketch`): large snapshots only.
    sketch: Sketch | None = None
    # The common terms' postings by row, kept up to date by every refresh (empty: the shell
    # keeps none, `snapshot_postings`): a query never reads them from the store again.
    resident: Mapping[str, TermPostings] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """One query scope: its workspace, entry ids and boolean masks over the rows."""

    workspace: str | None
    lexical_mask: np.ndarray
    vector_mask: np.ndarray | None
    entry_ids: tuple[str, ...] = ()  # the snapshot's row order, for `allowed`

    @functools.cached_property
    def allowed(self) -> frozenset[str]:
        """The ids in scope: made on first use (only parent propagation asks), as a set of
        100,000 ids costs ~10 ms a scope on every refresh."""
        return frozenset(itertools.compress(self.entry_ids, self.lexical_mask))


def stats_of(doc_count: int, doc_length_total: int) -> LexicalStats:
    """Given the entry count and the sum of their lengths, return the BM25 statistics exactly
    as the store computes them (`count(*)`, `avg(doc_len)`)."""
    return LexicalStats(
        doc_count=doc_count, avg_doc_len=doc_length_total / doc_count if doc_count else 0.0
    )


def with_spare(matrix: np.ndarray) -> np.ndarray:
    """Given vectors, return a buffer holding them first, with spare rows after."""
    import numpy as np

    count = matrix.shape[0]
    spare = max(count // SPARE_SHARE, SPARE_ROWS)
    buffer = np.empty((count + spare, matrix.shape[1]), dtype=np.float32)
    buffer[:count] = matrix
    return buffer


def readable_rows(
    calibration: SemanticCalibration | None, rows: Mapping[str, EntryRow], ids: Sequence[str]
) -> np.ndarray | None:
    """Given the ids of vector rows, return whether the model reads each one's L0 (None: no
    calibration, no semantic arm). `cjk_share` is ~35 µs an L0: only new rows are asked."""
    import numpy as np

    if calibration is None:
        return None
    return np.fromiter(
        (calibration.reads(rows[entry_id].l0) for entry_id in ids), dtype=bool, count=len(ids)
    )


def doc_lengths_of(rows: Mapping[str, EntryRow], entry_ids: Sequence[str]) -> np.ndarray:
    """Given the rows in row order, return each one's BM25 document length."""
    import numpy as np

    return np.fromiter(
        (rows[entry_id].doc_len for entry_id in entry_ids), dtype=np.float64, count=len(entry_ids)
    )


def workspace_code(code_of: dict[str | None, int], workspace: str | None) -> int:
    """Given the workspace codes so far, return the workspace's (a new one gets the next)."""
    code = code_of.get(workspace)
    if code is None:
        code = code_of[workspace] = len(code_of)
    return code


def workspace_codes_of(
    rows: Mapping[str, EntryRow], entry_ids: Sequence[str], code_of: dict[str | None, int]
) -> np.ndarray:
    """Given the rows in row order, return each one's workspace code (adding new ones)."""
    import numpy as np

    return np.fromiter(
        (workspace_code(code_of, rows[entry_id].workspace) for entry_id in entry_ids),
        dtype=np.int64,
        count=len(entry_ids),
    )
