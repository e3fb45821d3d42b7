"""Given a sample of a corpus's L0 vectors, return the semantic calibration measured on it.

A cosine means different things for different models (all-MiniLM puts unrelated text at
0.0–0.6, E5 at 0.75–0.85), and a per-model constant is a guess for every model nobody measured.
So carryd measures what "unrelated" looks like for *this* model on *this* corpus: the cosines
between texts of different files, sampled at random, and reads a query's cosine against their
upper tail. Model-free quantile levels give the three cosines of a `SemanticCalibration`:

    ramp_from = q(RAMP_FROM)   (place 0; 4% of unrelated (pseudo-query, L0) pairs lie above)
    floor     = q(FLOOR)       (the arm nominates only above; 2% of unrelated L0 pairs do)
    ceiling   = q(CEILING)     (place 1; 0.5% of unrelated (pseudo-query, L0) pairs lie above)

Chosen on LoCoMo with two English models (bench/bench_recall.py; the test all-MiniLM-L6-v2 and
paraphrase-MiniLM-L3-v2, whose unrelated cosines differ: 0.37 ± 0.16 vs 0.30 ± 0.17): with
these levels both keep the negative controls at 1 of 32 injected (the one a lexical hit
injects), and both rank better than with the hand-made MiniLM ramp (fewer weak semantic votes).
A fixed distance in standard deviations did not transfer (the second model's negatives sit
higher in its distribution: 19% injected at the MiniLM-equivalent z), quantiles of the tail did.

**The ramp is read on query-shaped pairs.** Recall reads a *query's* cosine to an L0, and a
query is not an L0: it is a short text without the heading scaffolding a corpus's L0s share
("Caroline — …" on every turn of a conversation). Cosines between L0s run higher than a
question's cosines to the same L0s, and by how much depends on the model (on LoCoMo the L0
pairs put the test MiniLM-L6's ramp 0.06 above paraphrase-MiniLM-L3's, while the questions,
and the pseudo-queries below, sit at about the same height for both), so a ramp read on L0
pairs rates one model's hits surer than the other's at the same evidence. So `ramp_from` and
`ceiling` are the same quantiles of the cosines between *pseudo-queries* and L0s of other
files: each the opening `QUERY_WORDS` words of a sampled L0 without its heading
(`pseudo_query`), embedded as a query. The `floor` stays
the L0 pairs' quantile: it decides what the arm nominates (ranking), which the development
sets showed right as it is. Without pseudo-queries (`queries=None`) the L0 pairs give all
three. On LoCoMo this took the test MiniLM's gold entries passing the shared gate from 60.5% to
65.4% on the held-out half, paraphrase-MiniLM-L3's from 65.4% to 66.7%, with the negative
controls still at most 1 of 32 (bench/bench_recall.py, figures in the closing note).

Why different files: within a file, neighbouring entries share their subject; across files most
pairs do not, and the few that do (a recurring topic) only widen the spread, which makes the arm
more cautious, not less. Only L0s the model reads are sampled (an English-only model's cosines
between two Chinese L0s are noise, not "unrelated").

Too small a corpus to measure (a few files): the same quantiles of the cosines between the
notes of a fixed reference set shipped with carryd (`carryd.index.calibration_reference`),
measured on the model itself (`reference_calibration`). Whether the model reads Chinese is
measured there too (`reads_chinese`), so no model name decides anything.

Pure and deterministic: the pairs come from a seeded generator, so the same vectors and files
give the same calibration (and the same inject decisions) on every run. The daemon stores it
beside the model identity (`StoredCalibration`, `carryd.daemon.indexer.calibrating`): measured again
only when the model identity changes or the corpus has doubled or halved
(`needs_measuring`), never per edit.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from carryd.index.calibration_reference import REFERENCE_VERSION
from carryd.index.fusion import CJK_SHARE_UNREADABLE, CalibrationSource, SemanticCalibration
from carryd.index.l0 import ELLIPSIS, HEADING_SEPARATOR
from carryd.index.tokenize import cjk_share

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CEILING",
    "FLOOR",
    "MEASURE_VERSION",
    "QUERY_SAMPLE",
    "QUERY_WORDS",
    "QueryRamp",
    "MIN_PAIRS",
    "PAIRS",
    "RAMP_FROM",
    "GROWTH",
    "READS_CHINESE_SHARE",
    "StoredCalibration",
    "UnrelatedCosines",
    "unrelated_cosines",
    "calibrate",
    "measure_corpus",
    "needs_measuring",
    "pseudo_query",
    "query_ramp",
    "reads_chinese",
    "reference_calibration",
    "sample_ids",
]

RAMP_FROM = 0.96
FLOOR = 0.98
CEILING = 0.995
SAMPLE = 4_000  # L0s read to measure a corpus: 8M possible pairs, ~6 MB of vectors at 384 dims
PAIRS = 20_000  # the 99.5% quantile from 100 pairs above it; ~5 ms at 384 dims
MIN_PAIRS = 200  # fewer distinct unrelated pairs than this: too little to measure (reference)
_SEED = 20261130
# Pseudo-queries (see the module docstring): the opening words of an L0 without its heading, about
# a question's length; how many sampled L0s are embedded as queries to measure a corpus.
QUERY_WORDS = 8
QUERY_SAMPLE = 400
# How the calibration is measured: a stored record of an older method is measured again.
MEASURE_VERSION = 2
# Measured again when the corpus has grown or shrunk by this factor since (never per edit).
GROWTH = 2.0
# A model reads Chinese when at least this share of English notes find their own translation
# first among the Chinese notes (random: 1 in 12) ...
READS_CHINESE_SHARE = 2 / 3


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


@dataclass(frozen=True)
class QueryRamp:
    """The ramp read on cosines between pseudo-queries and L0s of other files."""

    ramp_from: float  # quantile RAMP_FROM
    ceiling: float  # quantile CEILING
    pairs: int


def pseudo_query(l0: str, source: str) -> str:
    """Given an L0 and where it came from (`carryd.index.l0`), return the query-shaped text
    the calibration embeds for it: its opening `QUERY_WORDS` words, without the heading an L0
    of source "heading" starts with (a text without spaces, as Chinese, stays whole: an L0 is
    about 100 characters at most)."""
    text = l0.split(HEADING_SEPARATOR, 1)[-1] if source == "heading" else l0
    return " ".join(text.rstrip(ELLIPSIS).split()[:QUERY_WORDS])


def query_ramp(
    queries: np.ndarray,
    query_groups: Sequence[str],
    vectors: np.ndarray,
    groups: Sequence[str],
    *,
    pairs: int = PAIRS,
    seed: int = _SEED,
) -> QueryRamp | None:
    """Given unit pseudo-query vectors with the file each came from, and unit L0 vectors with
    theirs (only L0s the model reads), return the RAMP_FROM and CEILING quantiles of the cosines
    of random (pseudo-query, L0) pairs from different files, or None when there are too few
    such pairs to tell."""
    import numpy as np

    if len(query_groups) == 0 or len(groups) == 0:
        return None
    left = np.asarray(queries, dtype=np.float64)
    right = np.asarray(vectors, dtype=np.float64)
    query_codes = np.asarray(query_groups, dtype=object).astype(str)
    codes = np.asarray(groups, dtype=object).astype(str)
    generator = np.random.default_rng(seed)
    first = generator.integers(0, len(query_codes), size=2 * pairs)
    second = generator.integers(0, len(codes), size=2 * pairs)
    keep = query_codes[first] != codes[second]
    first, second = first[keep][:pairs], second[keep][:pairs]
    if first.size < MIN_PAIRS:
        return None
    a, b = left[first], right[second]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosines = np.einsum("ij,ij->i", a, b) / np.where(norms > 0, norms, 1.0)
    ramp_from, ceiling = np.quantile(cosines, [RAMP_FROM, CEILING])
    return QueryRamp(ramp_from=float(ramp_from), ceiling=float(ceiling), pairs=int(cosines.size))


def sample_ids(ids: Iterable[str], size: int = SAMPLE, seed: int = _SEED) -> list[str]:
    """Given the ids of a corpus's L0 vectors, return a seeded sample of at most `size` of
    them (sorted first, so the same corpus gives the same sample in any order)."""
    import numpy as np

    ordered = sorted(ids)
    if len(ordered) <= size:
        return ordered
    chosen = np.random.default_rng(seed).choice(len(ordered), size=size, replace=False)
    return [ordered[position] for position in sorted(chosen.tolist())]


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
    queries: np.ndarray | None = None,
    query_groups: Sequence[str] = (),
) -> SemanticCalibration | None:
    """Given a model's name, a sample of its L0 vectors with each one's file (and whether the
    model reads it), and optionally pseudo-query vectors with each one's file, return the
    calibration measured on them — or `fallback` when the corpus is too small to measure (a
    few files)."""
    measured = measure_corpus(
        name,
        vectors,
        groups,
        multilingual=multilingual,
        readable=readable,
        queries=queries,
        query_groups=query_groups,
    )
    return fallback if measured is None else measured[0]


def measure_corpus(
    name: str,
    vectors: np.ndarray,
    groups: Sequence[str],
    *,
    multilingual: bool,
    readable: Sequence[bool] | None = None,
    queries: np.ndarray | None = None,
    query_groups: Sequence[str] = (),
) -> tuple[SemanticCalibration, UnrelatedCosines] | None:
    """`calibrate`, with the distribution of L0 pairs the calibration was read from (for its
    record), or None when the corpus is too small to measure. With pseudo-queries (vectors of
    `pseudo_query` texts of L0s the model reads) the ramp is read on them (`query_ramp`)."""
    measured = unrelated_cosines(vectors, groups, readable=readable)
    if measured is None:
        return None
    ramp = _ramp(queries, query_groups, vectors, groups, readable)
    return _calibration(name, measured, multilingual, "corpus", ramp), measured


def _ramp(
    queries: np.ndarray | None,
    query_groups: Sequence[str],
    vectors: np.ndarray,
    groups: Sequence[str],
    readable: Sequence[bool] | None,
) -> QueryRamp | None:
    """The pseudo-queries' ramp against the L0s the model reads (None: no pseudo-queries)."""
    import numpy as np

    if queries is None:
        return None
    rows = [row for row in range(len(groups)) if readable is None or readable[row]]
    matrix = np.asarray(vectors)[rows] if rows else np.zeros((0, 1))
    return query_ramp(queries, query_groups, matrix, [groups[row] for row in rows])


def reads_chinese(english: np.ndarray, chinese: np.ndarray, floor: float) -> bool:
    """Given the vectors of English notes and of their Chinese translations (row i of each the
    same note) and the cosine above which the arm would nominate (the floor measured on all
    the reference notes, whatever their language), return whether the model reads Chinese:
    most English notes find their own translation first, and the typical translation's cosine
    lies above that floor (an English-only model's Chinese cosines are noise: it may find a
    translation by a shared digit, never with a cosine the arm would act on)."""
    import numpy as np

    cosines = np.asarray(english, dtype=np.float64) @ np.asarray(chinese, dtype=np.float64).T
    found = float((cosines.argmax(axis=1) == np.arange(len(cosines))).mean())
    return found >= READS_CHINESE_SHARE and statistics.median(np.diag(cosines)) > floor


def reference_calibration(
    name: str,
    vectors: np.ndarray,
    texts: Sequence[str],
    english: np.ndarray,
    chinese: np.ndarray,
    queries: np.ndarray | None = None,
) -> tuple[SemanticCalibration, UnrelatedCosines] | None:
    """Given a model's name, its vectors of the reference notes (`texts`, each its own
    subject), of the translation pairs and optionally of each note's `pseudo_query` (row i
    that of note i), return the calibration measured on them (source "reference") with the
    distribution it was read from, or None when the model reads too few of the notes to
    measure."""
    groups = [str(number) for number in range(len(texts))]
    everything = unrelated_cosines(vectors, groups)
    if everything is None:
        return None
    multilingual = reads_chinese(english, chinese, everything.floor)
    readable = [multilingual or cjk_share(text) < CJK_SHARE_UNREADABLE for text in texts]
    measured = unrelated_cosines(vectors, groups, readable=readable)
    if measured is None:
        return None
    ramp = None
    if queries is not None:
        read = [row for row in range(len(texts)) if readable[row]]
        ramp = _ramp(queries[read], [groups[row] for row in read], vectors, groups, readable)
    return _calibration(name, measured, multilingual, "reference", ramp), measured


def _calibration(
    name: str,
    measured: UnrelatedCosines,
    multilingual: bool,
    source: CalibrationSource,
    ramp: QueryRamp | None = None,
) -> SemanticCalibration:
    """The floor from the L0 pairs; the ramp from the pseudo-queries when there is one."""
    ramp_from = measured.ramp_from if ramp is None else ramp.ramp_from
    ceiling = measured.ceiling if ramp is None else ramp.ceiling
    lowest = measured.floor if ramp is None else ramp_from
    return SemanticCalibration(
        name=name,
        floor=measured.floor,
        ceiling=max(ceiling, lowest + 1e-6),
        multilingual=multilingual,
        ramp_from=ramp_from,
        source=source,
    )


@dataclass(frozen=True)
class StoredCalibration:
    """A calibration as the index keeps it: for which model identity (`ModelIdentity.key()`),
    measured at how many corpus entries, on how many pairs, with which reference set."""

    identity: str
    calibration: SemanticCalibration
    entries: int
    pairs: int
    mean: float
    spread: float
    reference_version: int = REFERENCE_VERSION
    method: int = MEASURE_VERSION  # how it was measured (see MEASURE_VERSION)

    def to_json(self) -> str:
        """Return the record as the JSON text stored in the index's meta table."""
        calibration = self.calibration
        return json.dumps(
            {
                "identity": self.identity,
                "name": calibration.name,
                "source": calibration.source,
                "floor": calibration.floor,
                "ceiling": calibration.ceiling,
                "ramp_from": calibration.ramp_from,
                "multilingual": calibration.multilingual,
                "entries": self.entries,
                "pairs": self.pairs,
                "mean": self.mean,
                "spread": self.spread,
                "reference_version": self.reference_version,
                "method": self.method,
            },
            sort_keys=True,
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | None) -> StoredCalibration | None:
        """Given stored JSON text (or None), return the record, or None when there is none or
        it cannot be read (it is then measured again)."""
        if not text:
            return None
        try:
            value: dict[str, Any] = json.loads(text)
            source = value["source"]
            if source not in ("corpus", "reference"):
                return None
            ramp_from = value["ramp_from"]
            return cls(
                identity=str(value["identity"]),
                calibration=SemanticCalibration(
                    name=str(value["name"]),
                    floor=float(value["floor"]),
                    ceiling=float(value["ceiling"]),
                    multilingual=bool(value["multilingual"]),
                    ramp_from=None if ramp_from is None else float(ramp_from),
                    source=source,
                ),
                entries=int(value["entries"]),
                pairs=int(value["pairs"]),
                mean=float(value["mean"]),
                spread=float(value["spread"]),
                reference_version=int(value["reference_version"]),
                method=int(value.get("method", 1)),
            )
        except (ValueError, KeyError, TypeError):
            return None

    @classmethod
    def of(
        cls,
        identity: str,
        calibration: SemanticCalibration,
        measured: UnrelatedCosines,
        entries: int,
    ) -> StoredCalibration:
        """Given a calibration and the distribution it was read from, return its record."""
        return cls(
            identity=identity,
            calibration=calibration,
            entries=entries,
            pairs=measured.pairs,
            mean=measured.mean,
            spread=measured.spread,
        )

    def summary(self) -> str:
        """Return the one line `carryd status` shows."""
        calibration = self.calibration
        ramp_from = calibration.floor if calibration.ramp_from is None else calibration.ramp_from
        if calibration.source == "corpus":
            where = f"{self.entries} entries"
        elif self.entries:
            where = f"the reference notes (a corpus of {self.entries} entries is too small)"
        else:
            where = "the reference notes"
        return (
            f"{calibration.source}, {self.pairs} unrelated pairs from {where}: "
            f"floor {calibration.floor:.3f}, ceiling {calibration.ceiling:.3f}, "
            f"ramp from {ramp_from:.3f}; reads Chinese: "
            + ("yes" if calibration.multilingual else "no")
        )


def needs_measuring(stored: StoredCalibration | None, identity: str, entries: int) -> bool:
    """Given the stored calibration (or None), the current model identity and the corpus's
    entry count, return whether to measure again: never measured, another model or reference
    set, or a corpus that has doubled or halved since (a calibration from a few entries is
    replaced as the corpus grows, but an edit never moves it)."""
    if stored is None or stored.identity != identity:
        return True
    if stored.reference_version != REFERENCE_VERSION or stored.method != MEASURE_VERSION:
        return True
    if stored.entries <= 0:
        return entries > 0
    return entries >= GROWTH * stored.entries or entries * GROWTH <= stored.entries
