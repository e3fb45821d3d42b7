"""Given a vector search's answer on one snapshot and the ids an edit changed since, return its
answer on the next snapshot without a pass over every vector, when that can be known. Pure.

Why: the carry asks the same few questions after every edit, and `nearest` reads every vector
(or its sketch) for each: 2-4 ms a question at 100,000 entries on a quiet machine, the largest
part of an edit's work that grows with the root. An edit changes a row or two.

`Remembered` holds the first items of the search's total order — cosine descending, then id
ascending: what `nearest` returns, for a larger limit than the answer needs — and whether they
are every row above the floor. After an edit that changed the ids C (`patched`):

- a row not in C kept its vector, its scope and its model-readability, hence its cosine and
  whether it is a candidate: the remembered items not in C are still, in order, the first of
  the unchanged rows, and every unchanged row not remembered comes after the last remembered
  item (the cut);
- each id in C that is a candidate now has its cosine computed again (`cosines_of`, the same
  float32 dot product as `nearest`) and is placed when it comes before the cut, or anywhere
  when the remembered items were every candidate;
- what results is again a prefix of the total order. When it is shorter than an answer needs,
  only a full pass can tell.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Remembered", "cosines_of", "patched", "remembered"]

Found = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Remembered:
    """The first items (id, cosine) of a vector search's total order, and whether they are all
    of its candidates (then nothing beyond them is above the floor)."""

    found: Found
    complete: bool

    def answer(self, limit: int) -> Found | None:
        """Given an answer's size, return its items, or None when they are not all known."""
        if len(self.found) >= limit or self.complete:
            return self.found[:limit]
        return None


def remembered(found: Found, asked: int) -> Remembered:
    """Given what `nearest` returned for `asked` items, return it remembered."""
    return Remembered(found, complete=len(found) < asked)


def _order(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])


def patched(
    previous: Remembered,
    changed: Collection[str],
    fresh: Iterable[tuple[str, float]],
    *,
    keep: int,
) -> Remembered:
    """Given a remembered search, the ids changed since and (id, cosine) of those of them that
    are candidates now, return what is known of the search now (at most `keep` items)."""
    kept = [item for item in previous.found if item[0] not in changed]
    new = list(fresh)
    if not previous.complete:
        cut = _order(previous.found[-1])  # every unchanged row not remembered comes after it
        new = [item for item in new if _order(item) < cut]
    merged = sorted(kept + new, key=_order)
    return Remembered(tuple(merged[:keep]), previous.complete and len(merged) <= keep)


def cosines_of(
    matrix: np.ndarray,
    vector_of: Mapping[str, int],
    ids: Iterable[str],
    vector: np.ndarray,
    *,
    mask: np.ndarray | None,
    floor: float,
) -> list[tuple[str, float]]:
    """Given the vector rows (`vector_of`: id → its live row), some ids, the query vector, the
    candidate mask (live, in scope, readable; None: every row) and the floor, return (id,
    cosine) of those ids that are candidates, computed as `nearest` computes them."""
    import numpy as np

    rows: Sequence[tuple[int, str]] = sorted(
        (vector_of[entry_id], entry_id) for entry_id in ids if entry_id in vector_of
    )
    rows = [(row, entry_id) for row, entry_id in rows if mask is None or mask[row]]
    if not rows:
        return []
    at = np.fromiter((row for row, _ in rows), dtype=np.int64, count=len(rows))
    cosines = np.einsum("ij,j->i", matrix[at], vector)
    eligible = cosines > floor  # (as `nearest` compares: the float32 array with the floor)
    return [
        (entry_id, float(cosine))
        for (_, entry_id), cosine, above in zip(rows, cosines, eligible, strict=True)
        if above
    ]
