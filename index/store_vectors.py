"""The index's vector sets, as `Store` reads them (see `store.py`).

Two sets at most. The **serving** set (table `vectors`) is what recall searches: the vectors of
the model that built the index. When the configured model changes, the new model's vectors are
written into the **next** set (table `next_vectors`, meta `next_identity` names its model)
while the serving set keeps answering; once every entry has a vector in the next set it is
swapped in whole, in one transaction (`Batch.swap_next`), and the old set is gone.

Every read below takes a model identity key and reads the set that holds that model's
vectors: the next set for the model it is being built for, else the serving set. So a sync
for the new model sees its own vectors (what is done, what is missing) and a recall for the
old one sees the old ones, with the same calls.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from carryd.index.store_file import ENTRY_COLUMNS, IDS_IN, entry_row, ids_json
from carryd.index.store_verify import VectorIssue, vector_issues_of

if TYPE_CHECKING:
    import numpy as np
    from carryd.index.sync import EntryRow

log = logging.getLogger(__name__)


class VectorReads:
    """The vector queries of `Store` (its base: `Store` supplies `_query` and `meta`)."""

    _counts: tuple[int, dict[str, int]] | None = None

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def meta(self, key: str) -> str | None:
        raise NotImplementedError

    def next_identity(self) -> str:
        """Return the identity key of the model the next vector set is built for ("": none)."""
        return self.meta("next_identity") or ""

    def _table(self, identity_key: str) -> str:
        """Given an identity key, return the table that holds its vectors."""
        next_identity = self.next_identity()
        return "next_vectors" if next_identity and identity_key == next_identity else "vectors"

    def vectors(self, identity_key: str) -> tuple[list[str], np.ndarray]:
        """Given a model identity key, return (entry ids, float32 [n, dim]) of its vectors."""
        import numpy as np

        # Insertion (rowid) order: one pass over the identity index and no sort, ~20 ms for
        # 10,000 x 384 where ORDER BY entry_id takes ~100 ms.
        rows = self._query(
            f"SELECT entry_id, vector FROM {self._table(identity_key)} WHERE identity = ? "
            "ORDER BY rowid",
            (identity_key,),
        )
        lengths = {len(blob) for _, blob in rows}
        if len(lengths) > 1:
            # Only after tampering: keep the vectors of the dominant width, drop the rest.
            widths = [len(blob) for _, blob in rows]
            width = max(lengths, key=widths.count)
            log.warning("index has vectors of %d widths; using %d-byte ones", len(lengths), width)
            rows = [row for row in rows if len(row[1]) == width]
        ids = [entry_id for entry_id, _ in rows]
        if not rows:
            return ids, np.zeros((0, _dim_of(identity_key)), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        return ids, matrix.reshape(len(rows), -1)

    def vector_keys(self, identity_key: str) -> dict[str, str]:
        """Given a model identity, return id -> the L0 hash of every vector of it."""
        rows = self._query(
            f"SELECT entry_id, l0_hash FROM {self._table(identity_key)} WHERE identity = ?",
            (identity_key,),
        )
        return dict(rows)

    def vector_blobs(self, identity_key: str, ids: Iterable[str]) -> list[tuple[str, str, bytes]]:
        """Given an identity and entry ids, return (id, L0 hash, float32 blob) of their vectors."""
        # "+identity": look the ids up by primary key; the identity index matches every row.
        return self._query(
            f"SELECT entry_id, l0_hash, vector FROM {self._table(identity_key)} "
            f"WHERE +identity = ? AND entry_id IN {IDS_IN}",
            (identity_key, ids_json(ids)),
        )

    def vector_hashes(self, identity_key: str, ids: Iterable[str]) -> dict[str, str]:
        """Given an identity and entry ids, return id -> L0 hash of their vectors of it."""
        rows = self._query(
            # "+identity": look ids up by primary key; the identity index matches every row.
            f"SELECT entry_id, l0_hash FROM {self._table(identity_key)} "
            f"WHERE +identity = ? AND entry_id IN {IDS_IN}",
            (identity_key, ids_json(ids)),
        )
        return {entry_id: l0_hash for entry_id, l0_hash in rows}

    def missing_vectors(self, identity_key: str) -> list[EntryRow]:
        """Given an identity, return the entries without a vector of it for their current L0."""
        rows = self._query(
            f"SELECT {', '.join('e.' + c for c in ENTRY_COLUMNS.split(', '))} FROM entries e "
            f"LEFT JOIN {self._table(identity_key)} v "
            "ON v.entry_id = e.id AND v.identity = ? AND v.l0_hash = e.l0_hash "
            "WHERE v.entry_id IS NULL ORDER BY e.path, e.line_start",
            (identity_key,),
        )
        return [entry_row(row) for row in rows]

    def vector_identities(self) -> dict[str, int]:
        """Return identity key -> number of vectors stored with it in the serving set."""
        rows = self._query("SELECT identity, count(*) FROM vectors GROUP BY identity")
        return {identity: count for identity, count in rows}

    def vector_count(self, identity_key: str) -> int:
        """Given an identity, return how many vectors of it its set holds."""
        rows = self._query(
            f"SELECT count(*) FROM {self._table(identity_key)} WHERE identity = ?",
            (identity_key,),
        )
        return int(rows[0][0])

    def vector_issues(self, identity_key: str | None, dim: int | None) -> list[VectorIssue]:
        """Given the serving set's identity and dim (None: unknown), return every vector of it
        that does not fit: no entry, another identity, another width, or an L0 hash that is not
        the entry's.

        Only `verify` asks, when damage made outside carryd is suspected: such damage moves
        no generation, so the counts kept since the last scan are dropped (counted again)."""
        self._counts = None
        rows = self._query(
            "SELECT v.entry_id, e.path, v.identity, length(v.vector), v.l0_hash, e.l0_hash "
            "FROM vectors v LEFT JOIN entries e ON e.id = v.entry_id ORDER BY v.entry_id"
        )
        return vector_issues_of(rows, identity_key, dim)


def _dim_of(identity_key: str) -> int:
    try:
        dim = json.loads(identity_key).get("dim", 0)
    except (ValueError, AttributeError):
        return 0
    return dim if isinstance(dim, int) else 0
