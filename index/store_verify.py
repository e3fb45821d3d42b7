"""Given the vector table joined to its entries, return what does not fit (for `carryd verify`).

Pure: `Store.vector_issues` reads the rows, this classifies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["VectorIssue", "vector_issues_of"]


@dataclass(frozen=True)
class VectorIssue:
    """A vector that does not fit the index (for `verify`)."""

    kind: Literal["orphaned", "wrong_identity", "wrong_dim", "stale"]
    entry_id: str
    path: str | None
    detail: str


def vector_issues_of(
    rows: Iterable[Sequence[Any]], identity_key: str | None, dim: int | None
) -> list[VectorIssue]:
    """Given (entry id, path or None, identity, byte width, vector's L0 hash, entry's L0 hash)
    rows and the current identity and dim (None: unknown), return every vector that does not
    fit: no entry, another identity, another width, or an L0 hash that is not the entry's."""
    issues: list[VectorIssue] = []
    for entry_id, path, identity, width, vector_hash, entry_hash in rows:
        if path is None:
            issues.append(VectorIssue("orphaned", entry_id, None, "vector without an entry"))
        elif identity_key is not None and identity != identity_key:
            issues.append(
                VectorIssue("wrong_identity", entry_id, path, f"vector of model {identity}")
            )
        elif dim is not None and width != 4 * dim:
            issues.append(
                VectorIssue(
                    "wrong_dim", entry_id, path, f"vector has {width / 4:g} dims, not {dim}"
                )
            )
        elif vector_hash != entry_hash:
            issues.append(
                VectorIssue("stale", entry_id, path, "vector embeds another L0 than the entry's")
            )
    return issues
