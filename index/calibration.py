"""Given a sample of a corpus's L0 vectors, return the semantic calibration measured on it.

A cosine means different things for different models (all-MiniLM puts unrelated text at
0.0–0.6, E5 at 0.75–0.85), and a per-model constant is a guess for every model nobody measured.
So carryd measures what "unrelated" looks like for *this* model on *this* corpus: the cosines
between L0s of different files, sampled at random, and reads a query's cosine against their
upper tail. Model-free quantile levels give the three cosines of a `SemanticCalibration`:

    ramp_from = q(RAMP_FROM)   (confidence 0; 4% of unrelated pairs lie above)
    floor     = q(FLOOR)       (the arm nominates only above; 2% of unrelated pairs do)
    ceiling   = q(CEILING)     (confidence 1; 0.5% of unrelated pairs lie above)

Chosen on LoCoMo with two English models (bench/bench_recall.py; the test all-MiniLM-L6-v2 and
paraphrase-MiniLM-L3-v2, whose unrelated cosines differ: 0.37 ± 0.16 vs 0.30 ± 0.17): with
these levels both keep the negative controls at 1 of 32 injected (the one a lexical hit
injects), and both rank better than with the hand-made MiniLM ramp (fewer weak semantic votes).
A fixed distance in standard deviations did not transfer (the second model's negatives sit
higher in its distribution: 19% injected at the MiniLM-equivalent z), quantiles of the tail did.

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

__all__ = [
    "CEILING",
    "FLOOR",
    "MIN_PAIRS",
    "PAIRS",
    "RAMP_FROM",
    "UnrelatedCosines",
    "unrelated_cosines",
    "calibrate",
]

RAMP_FROM = 0.96
FLOOR = 0.98
CEILING = 0.995
PAIRS = 20_000  # the 99.5% quantile from 100 pairs above it; ~5 ms at 384 dims
MIN_PAIRS = 200  # fewer distinct unrelated pairs than this: too little to measure, use a prior
_SEED = 20261130


@dataclass(frozen=True)
class UnrelatedCosines:
    """The distribution of cosines between unrelated L0s: the quantiles a calibration uses,
    the mean and standard deviation (for the record) and the sample size."""

    ramp_from: float  # quantile RAMP_FROM
    floor: float  # quantile FLOOR
    ceiling: float  # quantile CEILING
    mean: float
    spread: float
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
    ramp_from, floor, ceiling = np.quantile(cosines, [RAMP_FROM, FLOOR, CEILING])
    return UnrelatedCosines(
        ramp_from=float(ramp_from),
        floor=float(floor),
        ceiling=float(ceiling),
        mean=float(cosines.mean()),
        spread=float(cosines.std()),
        pairs=int(cosines.size),
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
        floor=measured.floor,
        ceiling=max(measured.ceiling, measured.floor + 1e-6),
        multilingual=multilingual,
        ramp_from=measured.ramp_from,
        source="corpus",
    )
