"""The warm recall snapshot: everything a query needs from the store, as of one generation.

Pure: the shell (`carryd.daemon.recalling`) reads the store and hands the rows here; this
module builds the snapshot (`build_snapshot`) or patches the last one with only what changed
(`vectors_to_fetch`, then `patch_snapshot`), and derives a query scope's masks (`scope_of`).
A snapshot is never changed once built (a query on another thread may hold it): a refresh
builds a new one, sharing the unchanged parts of the old.

The comparison is by state, not by events: a snapshot keeps the stored values it was built
from (`entry_keys`, `vector_keys`), so any number of commits in between is caught at the next
refresh. Anything unusual (a vector problem, vectors of another width) makes `patch_snapshot`
return None, and the caller takes the full load, which also says what is wrong.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    "build_snapshot",
    "patch_snapshot",
    "scope_of",
    "vectors_to_fetch",
]

# Turns an entries row as stored into its `EntryRow` (the store's `entry_row`).
Decode = Callable[[tuple[Any, ...]], EntryRow]


@dataclass(frozen=True)
class StoredVectors:
    """One model's vectors as the shell read them from the store (or why it could not).

    `ids` and `matrix` hold every stored vector of the model (entries that are gone included:
    `build_snapshot` drops those); `keys` maps id → the L0 hash of its vector.
    """

    dim: int  # the width the model makes
    ids: Sequence[str] = ()
    matrix: np.ndarray | None = None  # float32 [len(ids), width]
    keys: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None  # the vector table could not be read: why


@dataclass(frozen=True)
class Snapshot:
    """Everything a query needs from the store, as of one generation, and what it was built
    from (the keys a later refresh compares against)."""

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
    # The keys: id → the stored row as SQLite returned it; id → the L0 hash of exactly the
    # vectors in the matrix; id → whether the model reads the entry's L0.
    entry_keys: Mapping[str, tuple[Any, ...]]
    vector_keys: Mapping[str, str]
    reads: Mapping[str, bool]


@dataclass(frozen=True)
class Scope:
    """One query scope: its workspace, entry ids and boolean masks over the rows."""

    workspace: str | None
    allowed: frozenset[str]
    lexical_mask: np.ndarray
    vector_mask: np.ndarray | None


def build_snapshot(
    generation: int,
    raw_rows: Mapping[str, tuple[Any, ...]],
    stats: LexicalStats,
    *,
    decode: Decode,
    calibration: SemanticCalibration | None,
    vectors: StoredVectors | None,
) -> Snapshot:
    """Given the store's rows of one generation (and the model's vectors, None: no model),
    return the snapshot for it from scratch."""
    import numpy as np

    rows = {entry_id: decode(values) for entry_id, values in raw_rows.items()}
    vector_ids: tuple[str, ...] = ()
    matrix = None
    problem = None
    vector_keys: Mapping[str, str] = {}
    if vectors is not None and vectors.problem is not None:
        problem = vectors.problem
    elif vectors is not None:
        keep = [position for position, entry_id in enumerate(vectors.ids) if entry_id in rows]
        vector_ids = tuple(vectors.ids[position] for position in keep)
        if keep and vectors.matrix is not None:
            matrix = np.ascontiguousarray(vectors.matrix[keep], dtype=np.float32)
        if matrix is not None and matrix.shape[1] != vectors.dim:
            problem = (
                f"vector store holds {matrix.shape[1]}-d vectors, the model makes "
                f"{vectors.dim}-d: run `carryd index`"
            )
            vector_ids, matrix = (), None
        elif rows and matrix is None:
            problem = "no vectors for this model yet: run `carryd index`"
        vector_keys = vectors.keys
    # Only the vectors in the matrix are compared next time (see `patch_snapshot`).
    kept_keys = {
        entry_id: vector_keys[entry_id] for entry_id in vector_ids if entry_id in vector_keys
    }
    reads = _reads(calibration, {}, rows)
    entry_ids = tuple(sorted(rows))
    code_of: dict[str | None, int] = {None: 0}
    return _snapshot_of(
        generation,
        rows,
        entry_ids,
        {entry_id: row for row, entry_id in enumerate(entry_ids)},
        _doc_lengths(rows, entry_ids),
        _codes(rows, entry_ids, code_of),
        code_of,
        stats,
        vector_ids,
        matrix,
        problem,
        keys=(raw_rows, kept_keys, reads),
        calibrated=calibration is not None,
    )


def vectors_to_fetch(
    previous: Snapshot, entry_ids: Iterable[str], vector_keys: Mapping[str, str]
) -> list[str]:
    """Given the last snapshot, the entry ids now stored and the model's vector keys now,
    return the ids whose vectors must be fetched (new or changed since), sorted."""
    present = set(entry_ids)
    return sorted(
        entry_id
        for entry_id, key in vector_keys.items()
        if entry_id in present and previous.vector_keys.get(entry_id) != key
    )


def patch_snapshot(
    previous: Snapshot,
    generation: int,
    raw_rows: Mapping[str, tuple[Any, ...]],
    stats: LexicalStats,
    *,
    decode: Decode,
    calibration: SemanticCalibration | None,
    vector_keys: Mapping[str, str] | None,
    fetched: Sequence[tuple[str, str, bytes]] = (),
    dim: int = 0,
) -> Snapshot | None:
    """Given the last snapshot and the store's rows now, return the snapshot for `generation`
    re-deriving only what changed, or None when only a full load can say what to do.

    `vector_keys` is the model's id → L0 hash now (None: no model); `fetched` holds
    (id, L0 hash, float32 blob) of exactly the ids `vectors_to_fetch` named, `dim` the width.
    """
    old_raw = previous.entry_keys
    changed = [entry_id for entry_id, values in raw_rows.items() if old_raw.get(entry_id) != values]
    removed = old_raw.keys() - raw_rows.keys()
    rows = dict(previous.rows)
    for entry_id in removed:
        del rows[entry_id]
    fresh = {entry_id: decode(raw_rows[entry_id]) for entry_id in changed}
    rows.update(fresh)
    code_of = dict(previous.workspace_code_of)
    entry_ids, row_of, doc_lengths, codes = _patched_rows(previous, rows, fresh, removed, code_of)
    vector_ids, matrix, kept_keys = previous.vector_ids, previous.matrix, previous.vector_keys
    if vector_keys is not None:
        patched = _patched_vectors(previous, rows, vector_keys, fetched, dim)
        if patched is None:
            return None
        vector_ids, matrix, kept_keys = patched
    reads = _reads(calibration, previous.reads, fresh, removed)
    return _snapshot_of(
        generation,
        rows,
        entry_ids,
        row_of,
        doc_lengths,
        codes,
        code_of,
        stats,
        vector_ids,
        matrix,
        None,
        keys=(raw_rows, kept_keys, reads),
        calibrated=calibration is not None,
    )


def _patched_rows(
    previous: Snapshot,
    rows: Mapping[str, EntryRow],
    fresh: Mapping[str, EntryRow],
    removed: Iterable[str],
    code_of: dict[str | None, int],
) -> tuple[tuple[str, ...], Mapping[str, int], np.ndarray, np.ndarray]:
    """Given the new rows and which changed, return the row order and by-row arrays."""
    import numpy as np

    changed = list(fresh)
    if not list(removed) and all(entry_id in previous.row_of for entry_id in changed):
        # The same ids: the row order stands; patch the changed rows' values.
        row_of = previous.row_of
        doc_lengths, codes = previous.doc_lengths, previous.workspace_codes
        if changed:
            at = np.fromiter((row_of[entry_id] for entry_id in changed), np.int64, len(changed))
            doc_lengths = doc_lengths.copy()
            doc_lengths[at] = [fresh[entry_id].doc_len for entry_id in changed]
            codes = codes.copy()
            codes[at] = [_code(code_of, fresh[entry_id].workspace) for entry_id in changed]
        return previous.entry_ids, row_of, doc_lengths, codes
    entry_ids = tuple(sorted(rows))
    row_of = {entry_id: row for row, entry_id in enumerate(entry_ids)}
    return entry_ids, row_of, _doc_lengths(rows, entry_ids), _codes(rows, entry_ids, code_of)


def _patched_vectors(
    previous: Snapshot,
    rows: Mapping[str, EntryRow],
    vector_keys: Mapping[str, str],
    fetched: Sequence[tuple[str, str, bytes]],
    dim: int,
) -> tuple[tuple[str, ...], np.ndarray | None, Mapping[str, str]] | None:
    """Given the model's vector keys now and the fetched vectors, return the vector ids,
    matrix and keys of the patched snapshot (None: only a full load can tell)."""
    import numpy as np

    now = {entry_id: key for entry_id, key in vector_keys.items() if entry_id in rows}
    replaced = set(vectors_to_fetch(previous, rows, now))
    vector_ids, matrix = previous.vector_ids, previous.matrix
    # By the ids in the matrix, not by the old keys: a row is kept only while its vector is
    # still there and unchanged, so no id can end up in two rows.
    keep = [
        position
        for position, entry_id in enumerate(vector_ids)
        if entry_id in now and entry_id not in replaced
    ]
    kept_keys: Mapping[str, str] = previous.vector_keys
    if replaced or len(keep) != len(vector_ids):
        if any(len(blob) != 4 * dim for _, _, blob in fetched):
            return None
        kept_ids = [vector_ids[position] for position in keep]
        blocks = [previous.matrix[keep]] if previous.matrix is not None and keep else []
        if fetched:
            blocks.append(
                np.frombuffer(b"".join(blob for _, _, blob in fetched), dtype=np.float32).reshape(
                    len(fetched), dim
                )
            )
        vector_ids = tuple(kept_ids) + tuple(entry_id for entry_id, _, _ in fetched)
        matrix = np.ascontiguousarray(np.concatenate(blocks)) if blocks else None
        # The keys of exactly the matrix's rows, as fetched: a vector replaced or deleted
        # meanwhile is seen as changed next time.
        for entry_id in replaced:
            del now[entry_id]
        now.update({entry_id: l0_hash for entry_id, l0_hash, _ in fetched})
        kept_keys = now
    if rows and matrix is None:
        return None  # the full load says "no vectors for this model yet"
    return vector_ids, matrix, kept_keys


def scope_of(snapshot: Snapshot, workspace: str | None) -> Scope:
    """Given a workspace (or None for the whole root), return its ids and row masks.

    With a workspace only its own and root-level entries are in scope, never another
    workspace's.
    """
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
    if snapshot.matrix is not None and snapshot.vector_readable is not None:
        # An English-only model's cosine to a Chinese L0 means nothing: such entries are
        # left to the lexical arm (see SemanticCalibration.reads).
        vector_mask = lexical_mask[snapshot.vector_rows] & snapshot.vector_readable
    return Scope(
        workspace=workspace, allowed=allowed, lexical_mask=lexical_mask, vector_mask=vector_mask
    )


def _reads(
    calibration: SemanticCalibration | None,
    old: Mapping[str, bool],
    changed: Mapping[str, EntryRow],
    removed: Iterable[str] = (),
) -> dict[str, bool]:
    """Given the last answers, return whether the model reads each entry's L0, computing
    it only for changed entries (`cjk_share` is ~35 µs an L0: 0.35 s at 10,000)."""
    if calibration is None:
        return {}
    reads = dict(old)
    for entry_id in removed:
        reads.pop(entry_id, None)
    for entry_id, row in changed.items():
        reads[entry_id] = calibration.reads(row.l0)
    return reads


def _snapshot_of(
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
    problem: str | None,
    *,
    keys: tuple[Mapping[str, tuple[Any, ...]], Mapping[str, str], Mapping[str, bool]],
    calibrated: bool,
) -> Snapshot:
    import numpy as np

    entry_keys, vector_keys, reads = keys
    count = len(vector_ids)
    return Snapshot(
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
            if calibrated
            else None
        ),
        vector_problem=problem,
        entry_keys=entry_keys,
        vector_keys=vector_keys,
        reads=reads,
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
