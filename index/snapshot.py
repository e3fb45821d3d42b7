"""The warm recall snapshot: everything a query needs from the store, as of one generation.

Pure: the shell (`carryd.daemon.recall.recalling`) reads the store and hands the rows here; this
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

From `SKETCH_MIN_ROWS` vectors on, the snapshot also keeps a sketch of them (their
projections on a few dozen directions and the residual norms, `snapshot_sketch.py`), row for
row with the vector buffer: `nearest` scores only the rows its bounds cannot rule out, and a
refresh projects only the vectors it writes.

The daemon's snapshot also keeps the common terms' postings by row (`with_resident`,
`snapshot_postings.py`), patched by `apply_changes` like the rest.

Anything unusual (a vector of another width, no vectors at all) makes `apply_changes` return
None, and the caller takes the full load, which also says what is wrong.

The values and shared array helpers are in `snapshot_rows.py`, `apply_changes` in
`snapshot_patch.py`; every name stays importable from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from carryd.index.fusion import SemanticCalibration
from carryd.index.lexical import LexicalStats
from carryd.index.snapshot_patch import Layered as _Layered  # noqa: F401  (tests import it here)
from carryd.index.snapshot_patch import apply_changes
from carryd.index.snapshot_postings import resident_of
from carryd.index.snapshot_rows import (
    Decode,
    GrownIds,
    Scope,
    Snapshot,
    StoredVectors,
    doc_lengths_of,
    readable_rows,
    stats_of,
    with_spare,
    workspace_codes_of,
)
from carryd.index.snapshot_sketch import sketch_of

__all__ = [
    "Decode",
    "Scope",
    "Snapshot",
    "StoredVectors",
    "apply_changes",
    "build_snapshot",
    "scope_of",
    "stats_of",
    "with_resident",
]


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
    buffer = with_spare(matrix) if matrix is not None else None
    count = len(vector_ids)
    return Snapshot(
        generation=generation,
        epoch=epoch,
        rows=rows,
        entry_ids=entry_ids,
        row_of=row_of,
        doc_lengths=doc_lengths_of(rows, entry_ids),
        workspace_codes=workspace_codes_of(rows, entry_ids, code_of),
        workspace_code_of=code_of,
        stats=stats,
        doc_length_total=sum(row.doc_len for row in rows.values()),
        vector_ids=GrownIds(list(vector_ids)),
        matrix=buffer[:count] if buffer is not None else None,
        vector_rows=np.fromiter(
            (row_of[entry_id] for entry_id in vector_ids), dtype=np.int64, count=count
        ),
        vector_live=np.ones(count, dtype=bool),
        vector_readable=readable_rows(calibration, rows, vector_ids),
        vector_problem=problem,
        vector_of={entry_id: position for position, entry_id in enumerate(vector_ids)},
        buffer=buffer,
        sketch=sketch_of(buffer, count) if buffer is not None else None,
    )


def with_resident(
    snapshot: Snapshot, postings: Iterable[tuple[str, Sequence[str], Sequence[int]]]
) -> Snapshot:
    """Given a snapshot and (term, entry ids, term frequencies) of the terms to keep resident
    (read at the snapshot's generation), return the snapshot holding them by row."""
    return dataclasses.replace(snapshot, resident=resident_of(postings, snapshot.row_of))


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
