"""Given a sample of a corpus's L0 vectors, return the semantic calibration measured on it.

A cosine means different things for different models (all-MiniLM puts unrelated text at
0.0–0.6, E5 at 0.75–0.85), and a per-model constant is a guess for every model nobody measured.
So carryd measures what "unrelated" looks like for *this* model on *this* corpus: the cosines
between L0s of different files, sampled at random. Their mean and standard deviation are the
calibration's `null_mean` and `null_spread`; a query's cosine is then read as a distance above
them (`SemanticCalibration.z`), with model-free weights.

Why different files: within a file, neighbouring entries share their subject; across files most
pairs do not, and the few that do (a recurring topic) only widen the spread, which makes the arm
more cautious, not less. Only L0s the model reads are sampled (an English-only model's cosines
between two Chinese L0s are noise, not "unrelated").

Pure and deterministic: the pairs come from a seeded generator, so the same vectors and files
give the same calibration (and the same inject decisions) on every run. Store it beside the
model identity: it changes only when the model or the corpus changes substantially.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from carryd.index.fusion import SemanticCalibration

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MIN_PAIRS", "PAIRS", "UnrelatedCosines", "unrelated_cosines", "calibrate"]

PAIRS = 20_000  # enough for a mean and spread to ±0.005; ~2 ms at 384 dims
MIN_PAIRS = 200  # fewer distinct unrelated pairs than this: too little to measure, use a prior
_SEED = 20261130


@dataclass(frozen=True)
class UnrelatedCosines:
    """The distribution of cosines between unrelated L0s: its mean, spread and sample size."""

    mean: float
    spread: float  # standard deviation
    pairs: int


def unrelated_cosines(
    vectors: np.ndarray,
    groups: Sequence[str],
    *,
    readable: Sequence[bool] | None = None,
    pairs: int = PAIRS,
    seed: int = _SEED,
) -> UnrelatedCosines | None:
    """Given unit L0 vectors (one row each), the file of each row and optionally whether the
    model reads each L0, return the cosines of random pairs from different files summarised,
    or None when the corpus holds too few such pairs to tell."""
    import numpy as np

    rows = np.arange(len(groups))
    if readable is not None:
        rows = rows[np.asarray(readable, dtype=bool)]
    if rows.size < 2:
        return None
    codes = np.unique(np.asarray(groups, dtype=object)[rows].astype(str), return_inverse=True)[1]
    sizes = np.bincount(codes)
    distinct = (rows.size * rows.size - int((sizes * sizes).sum())) // 2
    if distinct < MIN_PAIRS:
        return None
    generator = np.random.default_rng(seed)
    first = generator.integers(0, rows.size, size=2 * pairs)
    second = generator.integers(0, rows.size, size=2 * pairs)
    keep = codes[first] != codes[second]
    first, second = first[keep][:pairs], second[keep][:pairs]
    if first.size < MIN_PAIRS:
        return None
    matrix = np.asarray(vectors, dtype=np.float64)
    left, right = matrix[rows[first]], matrix[rows[second]]
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    cosines = np.einsum("ij,ij->i", left, right) / np.where(norms > 0, norms, 1.0)
    return UnrelatedCosines(
        mean=float(cosines.mean()), spread=float(cosines.std()), pairs=int(cosines.size)
    )


def calibrate(
    name: str,
    vectors: np.ndarray,
    groups: Sequence[str],
    *,
    multilingual: bool,
    readable: Sequence[bool] | None = None,
    fallback: SemanticCalibration | None = None,
) -> SemanticCalibration | None:
    """Given a model's name, a sample of its L0 vectors with each one's file (and whether the
    model reads it), return the calibration measured on them — or `fallback` when the corpus
    is too small to measure (a few files)."""
    measured = unrelated_cosines(vectors, groups, readable=readable)
    if measured is None:
        return fallback
    return SemanticCalibration(
        name=name,
        null_mean=measured.mean,
        null_spread=measured.spread,
        multilingual=multilingual,
        source="corpus",
    )
