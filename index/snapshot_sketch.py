"""A low-dimensional sketch of the warm snapshot's vectors: a certified first pass for
`nearest` at large sizes. Pure.

For a basis P with orthonormal rows (r × d) and any vectors x, q::

    x·q = (Px)·(Pq) + (x − PᵀPx)·(q − PᵀPq)
    |x·q − (Px)·(Pq)| ≤ ‖x − PᵀPx‖ · ‖q − PᵀPq‖          (Cauchy–Schwarz)

so the r-wide projections give every row's cosine within a bound that is known per row.
`nearest` scores the projections (a sixth of the bytes at r = 64 of 384: the full scan reads
150 MB at 100,000 vectors and is memory-bound), keeps every row whose upper bound reaches the
limit-th best lower bound, and scores only those exactly: the rows that can be in the answer
are all kept, so the answer is the full scan's, bit for bit (the same float32 dot products on
the same rows). `SLACK` covers float32 rounding in both dot products and in the basis.

Why not a float16 or int8 first pass: numpy has no fast kernel for either (an int8 or
float16 matrix-vector product runs 2-20× slower than float32 `einsum` here, measured at
100,000 × 384), so fewer bytes read cost more time. A projection stays in float32.

P is the top right-singular vectors of a fixed random sample of the rows (uncentred: what is bounded
is the residual of x itself). Memory entries of one person are far from isotropic, so a few
dozen directions carry most of each vector and the residuals are small; where they are not,
the shortlist is large and `nearest` falls back to the full scan (same answer, a little later).
Built only from `SKETCH_MIN_ROWS` vectors on (below that the full scan takes a millisecond);
a refresh projects only the vectors it adds (the basis stays: the bound holds for any P).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SKETCH_DIM", "SKETCH_MIN_ROWS", "Sketch", "shortlist", "sketch_of"]

SKETCH_MIN_ROWS = 20_000
SKETCH_DIM = 64
SAMPLE_ROWS = 4096
# Relative to ‖x‖·‖q‖: float32 dot products over 384 terms err by ~2e-5 at most.
SLACK = 1e-4
# A shortlist past this share of the rows is not worth gathering: score them all.
SHORTLIST_SHARE = 0.25
_CHUNK = 2048  # rows projected at a time: small temporaries, no heap left behind


@dataclass(frozen=True)
class Sketch:
    """The projections of a vector buffer's rows, aligned with it row for row (spare rows
    included: a refresh writes a new vector's projection where it writes the vector)."""

    basis: np.ndarray  # float32 [r, d], orthonormal rows
    projected: np.ndarray  # float32 [capacity, r]: P x
    residual: np.ndarray  # float32 [capacity]: ‖x − PᵀPx‖
    norm: np.ndarray  # float32 [capacity]: ‖x‖

    def written(self, block: np.ndarray, at: int) -> Sketch:
        """Given new vectors and the buffer row they were written to, write their
        projections to the same rows (spare rows no older snapshot reads); return self."""
        if len(block):
            self._fill(block, at)
        return self

    def regathered(self, keep: np.ndarray, block: np.ndarray, capacity: int) -> Sketch:
        """Given the rows a compaction keeps (in order), the vectors it appends and the new
        buffer's capacity, return the sketch of the compacted buffer (same basis)."""
        import numpy as np

        width = self.basis.shape[0]
        fresh = Sketch(
            basis=self.basis,
            projected=np.empty((capacity, width), dtype=np.float32),
            residual=np.empty(capacity, dtype=np.float32),
            norm=np.empty(capacity, dtype=np.float32),
        )
        kept = len(keep)
        fresh.projected[:kept] = self.projected[keep]
        fresh.residual[:kept] = self.residual[keep]
        fresh.norm[:kept] = self.norm[keep]
        return fresh.written(block, kept)

    def _fill(self, block: np.ndarray, at: int) -> None:
        import numpy as np

        for start in range(0, len(block), _CHUNK):
            part = np.asarray(block[start : start + _CHUNK], dtype=np.float32)
            projected = part @ self.basis.T
            rest = part - projected @ self.basis
            end = at + start + len(part)
            self.projected[at + start : end] = projected
            self.residual[at + start : end] = np.sqrt(np.einsum("ij,ij->i", rest, rest))
            self.norm[at + start : end] = np.sqrt(np.einsum("ij,ij->i", part, part))


def sketch_of(buffer: np.ndarray, count: int, *, min_rows: int | None = None) -> Sketch | None:
    """Given a vector buffer and how many of its rows are used, return the sketch of it
    (None below `min_rows`, `SKETCH_MIN_ROWS` by default, or for vectors too narrow)."""
    import numpy as np

    dim = buffer.shape[1]
    width = min(SKETCH_DIM, dim // 4)
    if count < max(SKETCH_MIN_ROWS if min_rows is None else min_rows, 1) or width < 1:
        return None
    # A fixed pseudo-random sample: a stride would alias with any period in the rows (a
    # root whose files repeat a template sampled 626 distinct rows of 4,167).
    picked = np.random.default_rng(0).choice(count, min(count, SAMPLE_ROWS), replace=False)
    sample = buffer[np.sort(picked)]
    # The right singular vectors are the Gram matrix's eigenvectors: d x d, no U to hold.
    gram = (sample.T @ sample).astype(np.float64)
    _, vectors = np.linalg.eigh(gram)  # ascending eigenvalues
    basis = np.ascontiguousarray(vectors[:, ::-1][:, :width].T, dtype=np.float32)
    capacity = len(buffer)
    sketch = Sketch(
        basis=basis,
        projected=np.empty((capacity, width), dtype=np.float32),
        residual=np.empty(capacity, dtype=np.float32),
        norm=np.empty(capacity, dtype=np.float32),
    )
    return sketch.written(buffer[:count], 0)


def shortlist(
    sketch: Sketch,
    count: int,
    vector: np.ndarray,
    *,
    mask: np.ndarray | None,
    floor: float,
    limit: int,
) -> np.ndarray | None:
    """Given the sketch of the first `count` rows, a query vector, the row mask, the cosine
    floor and the answer's size, return the ascending rows that can be in the answer — every
    row whose exact cosine could reach the limit-th best — or None when that is too many to
    be worth gathering (score every row instead).

    Why it is complete: let t be the limit-th largest lower bound among rows in the mask
    whose lower bound clears the floor. Those `limit` rows have cosines ≥ t above the floor,
    so the limit-th best cosine of the answer c ≥ t, and every row in the answer (cosine ≥ c,
    ties included) has an upper bound ≥ c ≥ t. With fewer such rows, t is the floor.
    """
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    projected_query = sketch.basis @ query
    rest = query - projected_query @ sketch.basis
    query_residual = float(np.sqrt(rest @ rest))
    query_norm = float(np.sqrt(query @ query))
    approx = np.einsum("ij,j->i", sketch.projected[:count], projected_query)
    bound = sketch.residual[:count] * np.float32(query_residual * (1.0 + SLACK))
    bound += sketch.norm[:count] * np.float32(SLACK * query_norm + SLACK)
    upper = approx + bound
    possible = upper > floor
    if mask is not None:
        possible &= mask
    lower = approx - bound
    sure = lower[possible & (lower > floor)]
    if sure.size >= limit:
        threshold = np.partition(sure, sure.size - limit)[sure.size - limit]
        possible &= upper >= threshold
    rows = np.flatnonzero(possible)
    if rows.size > SHORTLIST_SHARE * count:
        return None
    return rows
