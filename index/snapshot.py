"""The warm recall snapshot: everything a query needs from the store, as of one generation.

Pure: the shell (`carryd.daemon.recalling`) reads the store and hands the rows here; this
module builds the snapshot (`build_snapshot`) or applies what changed since the last one
(`apply_changes`, fed from the store's change log: `Store.changes_since`), and derives a
query scope's masks (`scope_of`). A snapshot is never changed once built (a query on another
thread may hold it): a refresh makes a new one, sharing the unchanged parts of the old.

Refreshing costs what changed, not what is stored:

- an edit that keeps the set of ids patches copies of the by-row arrays (a memcpy, not a
  Python loop) and decodes only the changed rows;
- vectors live in a buffer with spare rows: a changed vector is written to a spare row past
  the end every older snapshot sees (so none of them ever sees a row change) and its old row
  is marked dead; the buffer is compacted when dead rows reach a quarter of it, or grown when
  it is full (amortised: each vector is copied O(1) times);
- adding or removing ids re-derives the row order (ascending ids: lexical ties break by id),
  one pass over the ids.

Anything unusual (a vector of another width, no vectors at all) makes `apply_changes` return
None, and the caller takes the full load, which also says what is wrong.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from carryd.index.fusion import SemanticCalibration
from carryd.index.lexical import LexicalStats
from carryd.index.sync import EntryRow

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Decode",
    "Scope",
    "Snapshot",
    "StoredVectors",
    "apply_changes",
    "build_snapshot",
    "scope_of",
    "stats_of",
]

_V = TypeVar("_V")

# Turns an entries row as stored into its `EntryRow` (the store's `entry_row`).
Decode = Callable[[tuple[Any, ...]], EntryRow]

# Spare vector rows kept past the used ones: a sixteenth more (1 MiB at 10,000 384-d
# vectors), at least this many. A compaction copies every vector, so at most one per
# 1/16 of the rows changed: each change costs 16 row copies, amortised.
_SPARE_ROWS = 64
_SPARE_SHARE = 16


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
    vector_ids: tuple[str, ...]
    matrix: np.ndarray | None  # float32 [n, dim], rows aligned with vector_ids
    vector_rows: np.ndarray  # int64, by vector row: the entry row it belongs to (-1: dead)
    vector_live: np.ndarray  # bool, by vector row
    vector_readable: np.ndarray | None  # bool, by vector row: the model reads its entry's L0
    vector_problem: str | None
    vector_of: Mapping[str, int]  # entry id -> its live vector row
    buffer: np.ndarray | None  # float32 [capacity, dim]; rows past `len(vector_ids)` spare


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


def build_snapshot(
    generation: int,
    raw_rows: Mapping[str, tuple[Any, ...]],
    stats: LexicalStats,
    *,
    decode: Decode,
    calibration: SemanticCalibration | None,
    vectors: StoredVectors | None,
    epoch: str | None = None,
) -> Snapshot:
    """Given the store's rows of one generation (and the model's vectors, None: no model),
    return the snapshot for it from scratch."""
    import numpy as np

    rows = {entry_id: decode(values) for entry_id, values in raw_rows.items()}
    vector_ids: tuple[str, ...] = ()
    matrix = None
    problem = None
    if vectors is not None and vectors.problem is not None:
        problem = vectors.problem
    elif vectors is not None:
        keep = [position for position, entry_id in enumerate(vectors.ids) if entry_id in rows]
        vector_ids = tuple(vectors.ids[position] for position in keep)
        if keep and vectors.matrix is not None:
            matrix = np.asarray(vectors.matrix, dtype=np.float32)
            if len(keep) != len(vectors.ids):
                matrix = matrix[keep]  # (a copy: only when vectors of gone entries are left)
        if matrix is not None and matrix.shape[1] != vectors.dim:
            problem = (
                f"vector store holds {matrix.shape[1]}-d vectors, the model makes "
                f"{vectors.dim}-d: run `carryd index`"
            )
            vector_ids, matrix = (), None
        elif rows and matrix is None:
            problem = "no vectors for this model yet: run `carryd index`"
    entry_ids = tuple(sorted(rows))
    row_of = {entry_id: row for row, entry_id in enumerate(entry_ids)}
    code_of: dict[str | None, int] = {None: 0}
    buffer = _with_spare(matrix) if matrix is not None else None
    count = len(vector_ids)
    return Snapshot(
        generation=generation,
        epoch=epoch,
        rows=rows,
        entry_ids=entry_ids,
        row_of=row_of,
        doc_lengths=_doc_lengths(rows, entry_ids),
        workspace_codes=_codes(rows, entry_ids, code_of),
        workspace_code_of=code_of,
        stats=stats,
        doc_length_total=sum(row.doc_len for row in rows.values()),
        vector_ids=vector_ids,
        matrix=buffer[:count] if buffer is not None else None,
        vector_rows=np.fromiter(
            (row_of[entry_id] for entry_id in vector_ids), dtype=np.int64, count=count
        ),
        vector_live=np.ones(count, dtype=bool),
        vector_readable=_readable(calibration, rows, vector_ids),
        vector_problem=problem,
        vector_of={entry_id: position for position, entry_id in enumerate(vector_ids)},
        buffer=buffer,
    )


def stats_of(doc_count: int, doc_length_total: int) -> LexicalStats:
    """Given the entry count and the sum of their lengths, return the BM25 statistics exactly
    as the store computes them (`count(*)`, `avg(doc_len)`)."""
    return LexicalStats(
        doc_count=doc_count, avg_doc_len=doc_length_total / doc_count if doc_count else 0.0
    )


def apply_changes(
    previous: Snapshot,
    generation: int,
    changed: Mapping[str, tuple[Any, ...] | None],
    *,
    decode: Decode,
    calibration: SemanticCalibration | None,
    vectors: Mapping[str, bytes] | None,
    dim: int = 0,
) -> Snapshot | None:
    """Given the last snapshot and what the change log says changed since — id → its stored
    row now (None: deleted) for every logged id, and the model's vector blob now of each of
    those ids that has one (`vectors`; None: no model) — return the snapshot for
    `generation`, or None when only a full load can say what to do."""
    import numpy as np

    if vectors is not None and any(len(blob) != 4 * dim for blob in vectors.values()):
        return None
    removed = [entry_id for entry_id, values in changed.items() if values is None]
    removed = [entry_id for entry_id in removed if entry_id in previous.rows]
    fresh = {entry_id: decode(values) for entry_id, values in changed.items() if values is not None}
    added = [entry_id for entry_id in fresh if entry_id not in previous.rows]
    rows = (
        _Layered.of(previous.rows).changed(removed, fresh) if (removed or fresh) else previous.rows
    )
    total = (
        previous.doc_length_total
        - sum(previous.rows[entry_id].doc_len for entry_id in removed)
        - sum(previous.rows[entry_id].doc_len for entry_id in fresh if entry_id not in added)
        + sum(row.doc_len for row in fresh.values())
    )
    code_of = dict(previous.workspace_code_of)
    if removed or added:
        entry_ids = tuple(sorted(rows))
        row_of: Mapping[str, int] = {entry_id: row for row, entry_id in enumerate(entry_ids)}
        doc_lengths = _doc_lengths(rows, entry_ids)
        codes = _codes(rows, entry_ids, code_of)
    else:
        entry_ids, row_of = previous.entry_ids, previous.row_of
        doc_lengths, codes = previous.doc_lengths, previous.workspace_codes
        if fresh:
            at = np.fromiter((row_of[entry_id] for entry_id in fresh), np.int64, len(fresh))
            doc_lengths = doc_lengths.copy()
            doc_lengths[at] = [row.doc_len for row in fresh.values()]
            codes = codes.copy()
            codes[at] = [_code(code_of, row.workspace) for row in fresh.values()]
    base: dict[str, Any] = dict(
        generation=generation,
        epoch=previous.epoch,
        rows=rows,
        entry_ids=entry_ids,
        row_of=row_of,
        doc_lengths=doc_lengths,
        workspace_codes=codes,
        workspace_code_of=code_of,
        stats=stats_of(len(rows), total),
        doc_length_total=total,
    )
    if vectors is None:
        # No model: the snapshot has no vectors, and a refresh never adds any.
        return Snapshot(
            **base,
            vector_ids=(),
            matrix=None,
            vector_rows=np.zeros(0, dtype=np.int64),
            vector_live=np.zeros(0, dtype=bool),
            vector_readable=None,
            vector_problem=previous.vector_problem,
            vector_of={},
            buffer=None,
        )
    return _with_vectors(previous, base, rows, changed, vectors, calibration, dim)


def _with_vectors(
    previous: Snapshot,
    base: dict[str, Any],
    rows: Mapping[str, EntryRow],
    changed: Mapping[str, tuple[Any, ...] | None],
    vectors: Mapping[str, bytes],
    calibration: SemanticCalibration | None,
    dim: int,
) -> Snapshot | None:
    """Given the patched entry side and the changed ids' vectors now, return the snapshot
    with its vector rows patched (dead rows marked, new ones appended), or None."""
    import numpy as np

    row_of: Mapping[str, int] = base["row_of"]
    buffer, count = previous.buffer, len(previous.vector_ids)
    old_of = previous.vector_of
    dying_ids = [entry_id for entry_id in changed if entry_id in old_of]
    dying = [old_of[entry_id] for entry_id in dying_ids]
    appended = [
        entry_id for entry_id in sorted(changed) if entry_id in vectors and entry_id in rows
    ]
    if not dying and not appended and row_of is previous.row_of:
        return Snapshot(
            **base,
            vector_ids=previous.vector_ids,
            matrix=previous.matrix,
            vector_rows=previous.vector_rows,
            vector_live=previous.vector_live,
            vector_readable=previous.vector_readable,
            vector_problem=previous.vector_problem,
            vector_of=previous.vector_of,
            buffer=previous.buffer,
        )
    live = previous.vector_live.copy()
    if dying:
        live[np.asarray(dying, dtype=np.int64)] = False
    dead = count - int(np.count_nonzero(live))
    new_block = _blobs(vectors, appended, dim)
    new_readable = _readable(calibration, rows, appended)
    if buffer is None or count + len(appended) > len(buffer) or 4 * dead > count:
        # Compact (dead rows go) and leave spare rows: amortised over the changes since.
        keep = np.flatnonzero(live)
        vector_ids = tuple(previous.vector_ids[position] for position in keep.tolist())
        vector_ids += tuple(appended)
        blocks = [previous.matrix[keep]] if previous.matrix is not None and keep.size else []
        blocks += [new_block] if appended else []
        if not blocks:
            if rows:
                return None  # the full load says "no vectors for this model yet"
            buffer = None
        else:
            buffer = _with_spare(np.concatenate(blocks))
        live = np.ones(len(vector_ids), dtype=bool)
        vector_of: Mapping[str, int] = {
            entry_id: position for position, entry_id in enumerate(vector_ids)
        }
        readable = None
        if previous.vector_readable is not None and new_readable is not None:
            readable = np.concatenate([previous.vector_readable[keep], new_readable])
        vector_rows = np.fromiter(
            (row_of[entry_id] for entry_id in vector_ids), dtype=np.int64, count=len(vector_ids)
        )
    else:
        # Spare rows past `count`: no older snapshot's matrix reaches them.
        if appended:
            buffer[count : count + len(appended)] = new_block
        vector_ids = previous.vector_ids + tuple(appended)
        live = np.concatenate([live, np.ones(len(appended), dtype=bool)])
        vector_of = _Layered.of(old_of).changed(
            dying_ids, {entry_id: count + offset for offset, entry_id in enumerate(appended)}
        )
        readable = None
        if previous.vector_readable is not None and new_readable is not None:
            readable = np.concatenate([previous.vector_readable, new_readable])
        if row_of is previous.row_of:
            tail = np.fromiter((row_of[i] for i in appended), dtype=np.int64, count=len(appended))
            vector_rows = np.concatenate([previous.vector_rows, tail])
        else:
            # Ids came or went: every entry row moved. A dead vector row points at row 0; its
            # `vector_live` keeps it out of every scope.
            vector_rows = np.fromiter(
                (row_of.get(entry_id, 0) for entry_id in vector_ids),
                dtype=np.int64,
                count=len(vector_ids),
            )
    total = len(vector_ids)
    return Snapshot(
        **base,
        vector_ids=vector_ids,
        matrix=buffer[:total] if buffer is not None else None,
        vector_rows=vector_rows,
        vector_live=live,
        vector_readable=readable,
        vector_problem=None,
        vector_of=vector_of,
        buffer=buffer,
    )


class _Layered(Mapping[str, _V]):
    """A mapping made of a base dict shared along a chain of refreshes (never changed) and the
    changes since it (a small dict; `_GONE` marks a removed key), flattened into a new base
    once the changes pass a sixteenth of it: a refresh copies what changed, not the 100,000
    ids (a dict copy is 15-40 ms at 100,000 on a loaded machine)."""

    __slots__ = ("_base", "_top", "_size")

    def __init__(self, base: Mapping[str, _V], top: dict[str, object], size: int) -> None:
        self._base = base
        self._top = top
        self._size = size

    @classmethod
    def of(cls, mapping: Mapping[str, _V]) -> _Layered[_V]:
        return mapping if isinstance(mapping, _Layered) else cls(mapping, {}, len(mapping))

    def changed(self, removed: Iterable[str], fresh: Mapping[str, _V]) -> Mapping[str, _V]:
        """Given keys to remove and keys to set, return the new mapping (self unchanged)."""
        top = dict(self._top)
        size = self._size
        for key in removed:
            if key in self:
                size -= 1
            top[key] = _GONE
        for key, value in fresh.items():
            if key not in self:  # (removed and fresh keys are disjoint)
                size += 1
            top[key] = value
        layered: _Layered[_V] = _Layered(self._base, top, size)
        if len(top) > max(_SPARE_ROWS, len(self._base) // _SPARE_SHARE):
            return {key: layered[key] for key in layered}
        return layered

    def __getitem__(self, key: str) -> _V:
        if key in self._top:
            value = self._top[key]
            if value is _GONE:
                raise KeyError(key)
            return value  # type: ignore[return-value]
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        if key in self._top:
            return self._top[key] is not _GONE
        return key in self._base

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        top = self._top
        for key in self._base:
            if key not in top:
                yield key
        for key, value in top.items():
            if value is not _GONE:
                yield key


_GONE = object()


def _blobs(vectors: Mapping[str, bytes], ids: Sequence[str], dim: int) -> np.ndarray:
    import numpy as np

    joined = b"".join(vectors[entry_id] for entry_id in ids)
    return np.frombuffer(joined, dtype=np.float32).reshape(len(ids), dim)


def _with_spare(matrix: np.ndarray) -> np.ndarray:
    """Given vectors, return a buffer holding them first, with spare rows after."""
    import numpy as np

    count = matrix.shape[0]
    spare = max(count // _SPARE_SHARE, _SPARE_ROWS)
    buffer = np.empty((count + spare, matrix.shape[1]), dtype=np.float32)
    buffer[:count] = matrix
    return buffer


def _readable(
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


def scope_of(snapshot: Snapshot, workspace: str | None) -> Scope:
    """Given a workspace (or None for the whole root), return its ids and row masks.

    With a workspace only its own and root-level entries are in scope, never another
    workspace's.
    """
    import numpy as np

    if workspace is None:
        lexical_mask = np.ones(len(snapshot.entry_ids), dtype=bool)
    else:
        # Root-level entries (code 0) and the workspace's own; never another workspace's.
        lexical_mask = snapshot.workspace_codes == 0
        code = snapshot.workspace_code_of.get(workspace)
        if code is not None:
            lexical_mask |= snapshot.workspace_codes == code
    vector_mask = None
    if snapshot.matrix is not None:
        # Dead rows (a replaced vector, a removed entry) are never candidates.
        vector_mask = lexical_mask[snapshot.vector_rows] & snapshot.vector_live
        if snapshot.vector_readable is not None:
            # An English-only model's cosine to a Chinese L0 means nothing: such entries are
            # left to the lexical arm (see SemanticCalibration.reads).
            vector_mask &= snapshot.vector_readable
    return Scope(
        workspace=workspace,
        lexical_mask=lexical_mask,
        vector_mask=vector_mask,
        entry_ids=snapshot.entry_ids,
    )


def _doc_lengths(rows: Mapping[str, EntryRow], entry_ids: Sequence[str]) -> np.ndarray:
    import numpy as np

    return np.fromiter(
        (rows[entry_id].doc_len for entry_id in entry_ids), dtype=np.float64, count=len(entry_ids)
    )


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
