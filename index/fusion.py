"""Given each arm's ranked candidates, return the fused hits — each with its decision and the
per-arm evidence behind it (one function, no separate trace that could drift).

Two questions, answered separately (seed P3):

**Decide** (inject or not) with absolute numbers only. A hit's confidence is a probability of
relevance in [0, 1]. For an entry holding a query term it is read from both arms' evidence by
one logistic model, in log-odds:

    confidence = σ(w0 + w_share·share + w_saturation·saturation + w_place·place)

- `share`, `saturation`: the lexical evidence (the share of the query's IDF mass the entry holds,
  and BM25 over its upper bound), see `carryd.index.lexical`;
- `place`: the semantic evidence, the cosine between the query's vector and the entry's L0
  read on the ramp of the corpus's unrelated-L0 cosines (`SemanticCalibration.place`, measured
  on the corpus by `carryd.index.calibration`). **Every lexical candidate the model reads gets
  one**, not only those the semantic arm nominated: a lexical candidate whose cosine is far
  below the floor is evidence against it, one just under the floor evidence for it.

Without a place (no model, a model that cannot read the query or the entry) the confidence is
the lexical arm's own (`carryd.index.lexical.confidence`, fitted on the same rows without the
place). A nominee of the semantic arm that holds no query term gets the semantic arm's own
vote, ``σ(SEMANTIC_WEIGHTS · (1, place))``: the data the combined model is fitted on has almost
no such entries (see `SEMANTIC_WEIGHTS`). An arm's `ArmEvidence.confidence` is what that arm
alone says; the hit's `place` is the semantic evidence its confidence read.

So the confidence depends on the query (its terms' IDF, its vector), on the entry (its terms,
their frequencies, its length, its L0 vector), on corpus-wide statistics (IDF, the average
length, the calibration's quantiles) and on one thing of the scope: whether it lacks what makes
the question specific, or the root lacks a name the question gives (`ABSENCE_WEIGHT`,
`carryd.index.absence`; a paraphrase the model reads keeps its confidence there) — never on
the other candidates, the limit or the ranks, so a hit's confidence is the same whether the
query returns 1 or 50 candidates.

Why log-odds and one model, not a noisy-OR of two per-arm probabilities: the arms are not
independent (a turn sharing a question's words usually shares its meaning), and a noisy-OR can
only raise a hit, so a semantic arm that finds a lexical hit unrelated could not lower it. On
LoCoMo the noisy-OR (with the lexical arm's matched IDF mass, see `carryd.index.lexical`) kept
gold passing at 54–56% held out at the lowest gate keeping the negative controls out; the
combined model raised it (`bench/bench_recall.py`, figures in the closing note). One wrinkle,
known: an entry whose only lexical match is a common word is judged by the combined model,
which may rate it below the vote the same cosine earns an entry matching nothing.

**Rank** in rank space only: ``score(d) = Σ_arms 1 / (k + rank_arm(d) / divisor_arm)``
with k = 60 and 1-based ranks; an arm's priority is its divisor (2 low, 4 medium, 8 high),
never a multiplicative weight (score-space weighting collapses RRF's tiny dynamic range into
near-lexicographic order). The fused score is never thresholded. Ties break by id, so the same
query always gives the same order.

**Fewer than 3 candidates**: there is no rank structure worth fusing, so hits are ordered by
their raw confidence (then the raw cosine, the raw BM25 and the id) and `score` is that
confidence — not normalised, so two candidates never collapse to one shared score.

**Parent propagation** (workspace / file / topic block), off by default: only when the direct
candidates are fewer than `PROPAGATION_MIN_CANDIDATES`, the caller-supplied neighbours of each
direct candidate join at the end of the list with match reason ``parent_topic`` /
``parent_file`` / ``parent_workspace`` and an inherited confidence of the source's confidence
times `PARENT_DECAY[level]` (so they inject only when their parent is very sure).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.index.tokenize import cjk_share

__all__ = [
    "RRF_K",
    "MIN_FUSION_CANDIDATES",
    "PROPAGATION_MIN_CANDIDATES",
    "PARENT_DECAY",
    "ArmName",
    "Decision",
    "MatchReason",
    "ParentLevel",
    "RankMode",
    "ArmCandidate",
    "Arm",
    "ArmEvidence",
    "FusedHit",
    "Neighbour",
    "SemanticCalibration",
    "CalibrationSource",
    "ABSENCE_WEIGHT",
    "COMBINED_WEIGHTS",
    "SEMANTIC_WEIGHTS",
    "absent_confidence",
    "combined_confidence",
    "CJK_SHARE_UNREADABLE",
    "fuse",
]

RRF_K = 60
MIN_FUSION_CANDIDATES = 3
PROPAGATION_MIN_CANDIDATES = 3

ArmName = Literal["lexical", "semantic"]
Decision = Literal["inject", "below_threshold"]
ParentLevel = Literal["topic", "file", "workspace"]
MatchReason = Literal[
    "lexical+semantic",
    "lexical",
    "semantic",
    "parent_topic",
    "parent_file",
    "parent_workspace",
]
RankMode = Literal["rrf", "raw"]
# corpus: measured on the user's L0s; reference: on carryd's reference notes (a corpus too small
# to measure); prior: set by hand (tests, benches).
CalibrationSource = Literal["prior", "corpus", "reference"]

PARENT_DECAY: Mapping[ParentLevel, float] = {"topic": 0.5, "file": 0.35, "workspace": 0.2}
_PARENT_REASON: Mapping[ParentLevel, MatchReason] = {
    "topic": "parent_topic",
    "file": "parent_file",
    "workspace": "parent_workspace",
}
_LEVEL_ORDER: Mapping[ParentLevel, int] = {"topic": 0, "file": 1, "workspace": 2}


# --- semantic calibration -----------------------------------------------------------------

# P(relevant | evidence) = σ(w0 + w_share·share + w_saturation·saturation + w_place·place) for an
# entry holding a query term: fitted by maximum likelihood on the fitting half of both development
# sets with the test MiniLM (`bench/bench_recall.py --fit`; the top 50 fused hits of each answer
# that hold a query term and whose L0 the model reads). Model-free because the place is: the
# second test model (paraphrase-MiniLM-L3) was never fitted on.
COMBINED_WEIGHTS = (-4.855, 4.129, 0.674, 0.752)
# P(relevant | place) = σ(w0 + w1·place) for a nominee holding no query term: the semantic arm's
# own vote (σ(w0) ≈ 0.13 at the ramp's start, ≈ 0.2 at place 2.5; fitted with the earlier
# noisy-OR, when semantic nominees were the only semantic evidence). The combined model cannot
# be read there: the development sets hold almost no such candidates (7 of about 24,000 LoCoMo
# candidates; a question names a speaker, and every turn does), while in a root of notes on
# unrelated subjects a paraphrase sharing no word with its note is the semantic arm's reason to
# exist (tests/daemon/test_calibrating.py). A lone vote is a hint, not an answer: in conversation
# memory many turns resemble a question and one of them is the answer.
SEMANTIC_WEIGHTS = (-1.943, 0.251)
# The log-odds every hit of an answer loses when the scope lacks what makes the question specific
# (its names, identifiers, numbers, or terms that belong elsewhere: `carryd.index.absence`), in
# both arms, and every hit but a paraphrase when the question names what the root lacks
# (`unmet_names`, `_paraphrase`): the log of the likelihood ratio of that evidence between a
# question asked in the workspace holding its answer and one asked in a workspace that does not,
# counted per question on the fitting half of both development sets with the test MiniLM
# (Jeffreys' half counts): 6 of 648 real questions, 628 of 648 near misses (`bench/bench_recall.py
# --fit`, `fit_absence`). (A maximum-likelihood fit over hits gave −2.409, which the development
# near misses cleared by 0.03 log-odds and the held-out independent root did not.)
ABSENCE_WEIGHT = -4.572


@dataclass(frozen=True)
class SemanticCalibration:
    """How to read one embedding model's cosines as an absolute confidence.

    Every model has its own cosine range (all-MiniLM spreads unrelated text over 0.0–0.6, E5
    squeezes everything into 0.7–0.9), so a cosine is read by its place on the model's ramp,
    ``place = (cosine - ramp_from) / (ceiling - ramp_from)`` (0 where 4% of unrelated
    query-shaped pairs lie above, 1 where 0.5% do, for a measured calibration: see
    `carryd.index.calibration`), which the combined model reads with
    model-free weights (`COMBINED_WEIGHTS`; `SEMANTIC_WEIGHTS` for a nominee alone). The
    semantic arm nominates only entries above `floor`, so a near-random cosine never enters
    the ranking; it still counts, as evidence, for a candidate the lexical arm found.

    `carryd.index.calibration.calibrate` measures the three cosines on the user's own corpus
    (quantiles of the cosines between unrelated texts), or on carryd's reference notes when the
    corpus is too small, with no per-model number (`source`).

    `multilingual`: an English-only model cannot read Chinese, so for such a model the semantic
    arm abstains on a query whose letters are mostly CJK and never nominates an entry whose L0 is
    mostly CJK (`reads`); the lexical arm alone answers there.
    """

    name: str
    floor: float  # cosine at and below which the arm does not nominate
    ceiling: float  # cosine at and above which confidence is 1
    multilingual: bool
    # cosine at and below which confidence is 0 (None: the floor). Set below the floor when the
    # arm should nominate only what it is fairly sure of, while the ramp stays the model's.
    ramp_from: float | None = None
    source: CalibrationSource = "prior"

    def place(self, cosine: float) -> float:
        """Given a cosine similarity, return its place on this model's ramp (0 at its start,
        1 at its ceiling; below 0 and above 1 outside it)."""
        start = self.floor if self.ramp_from is None else self.ramp_from
        span = max(self.ceiling - start, 1e-6)
        return (cosine - start) / span

    def confidence(self, cosine: float) -> float:
        """Given a cosine similarity, return the semantic arm's own probability of relevance
        (what a nominee holding no query term gets: `SEMANTIC_WEIGHTS`)."""
        intercept, slope = SEMANTIC_WEIGHTS
        logit = intercept + slope * self.place(cosine)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))

    def reads(self, text: str) -> bool:
        """Given a query or an L0, return whether this model's cosine for it means anything."""
        return self.multilingual or cjk_share(text) < CJK_SHARE_UNREADABLE


CJK_SHARE_UNREADABLE = 0.5


# --- fusion ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmCandidate:
    """One entry as an arm saw it: its 1-based rank there, raw score and absolute confidence."""

    id: str
    rank: int
    raw: float  # BM25 for the lexical arm, cosine for the semantic arm
    confidence: float  # what this arm alone says
    matched: tuple[str, ...] = ()  # lexical: the query terms the entry contains
    share: float = 0.0  # lexical: the share of the query's IDF mass the entry holds
    saturation: float = 0.0  # lexical: BM25 over its upper bound


@dataclass(frozen=True)
class Arm:
    """One arm's ranked candidates and its rank divisor (its priority in fusion)."""

    name: ArmName
    divisor: float
    candidates: tuple[ArmCandidate, ...]


@dataclass(frozen=True)
class ArmEvidence:
    """What one arm contributed to one hit."""

    rank: int
    raw: float
    confidence: float
    divisor: float
    contribution: float  # 1 / (k + rank / divisor)
    matched: tuple[str, ...] = ()
    share: float = 0.0
    saturation: float = 0.0


@dataclass(frozen=True)
class Neighbour:
    """An entry sharing a parent (topic block, file or workspace) with a direct candidate."""

    id: str
    level: ParentLevel


@dataclass(frozen=True)
class FusedHit:
    """One ranked hit: its score (ranking only), confidence and decision, and why."""

    id: str
    score: float
    confidence: float
    decision: Decision
    match_reason: MatchReason
    rank_mode: RankMode
    lexical: ArmEvidence | None
    semantic: ArmEvidence | None
    parent_of: str | None = None  # the direct candidate a propagated hit came from
    place: float | None = None  # the semantic evidence confidence read (None: none)


def combined_confidence(share: float, saturation: float, place: float) -> float:
    """Given a hit's lexical evidence (0, 0 when it holds no query term) and its cosine's place
    on the semantic ramp, return its probability of relevance (`COMBINED_WEIGHTS`)."""
    intercept, w_share, w_saturation, w_place = COMBINED_WEIGHTS
    logit = intercept + w_share * share + w_saturation * saturation + w_place * place
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def _confidence(
    lexical: ArmEvidence | None, semantic: ArmEvidence | None, place: float | None
) -> float:
    """Given a hit's per-arm evidence and the place of its cosine (None: the model has none for
    it), return its confidence: the combined model for an entry holding a query term that the
    model reads, else what its one arm says."""
    if lexical is not None:
        if place is None:
            return lexical.confidence
        return combined_confidence(lexical.share, lexical.saturation, place)
    return semantic.confidence if semantic is not None else 0.0


def absent_confidence(confidence: float, absent: bool) -> float:
    """Given a hit's confidence and whether the scope lacks what makes the question specific
    (`carryd.index.absence`), return the confidence recall decides on: `ABSENCE_WEIGHT` less in
    log-odds when it does, unchanged when it does not (0 stays 0)."""
    if not absent or confidence <= 0.0:
        return confidence
    if confidence >= 1.0:
        confidence = 1.0 - 1e-12
    logit = math.log(confidence / (1.0 - confidence)) + ABSENCE_WEIGHT
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def _paraphrase(lexical: ArmEvidence | None, place: float | None) -> bool:
    """Given a hit's lexical evidence and its cosine's place, return whether it reads as a
    paraphrase of a question naming what the root lacks: an entry holding none of the
    question's words that the model places at or above the ceiling of its ramp ("my plane to
    Portugal" for the note on the flight to Lisbon). A hit found by the question's other
    words shares its topic, not its subject (the quota of another cluster)."""
    return lexical is None and place is not None and place >= 1.0


def _decision(confidence: float, min_confidence: float) -> Decision:
    return "inject" if confidence >= min_confidence else "below_threshold"


def _reason(lexical: ArmEvidence | None, semantic: ArmEvidence | None) -> MatchReason:
    match (lexical is not None, semantic is not None):
        case (True, True):
            return "lexical+semantic"
        case (True, False):
            return "lexical"
        case _:
            return "semantic"


def fuse(
    arms: Sequence[Arm],
    *,
    min_confidence: float,
    k: float = RRF_K,
    limit: int | None = None,
    neighbours: Mapping[str, Sequence[Neighbour]] | None = None,
    places: Mapping[str, float] | None = None,
    absent: bool = False,
    unmet: bool = False,
) -> tuple[FusedHit, ...]:
    """Given the arms' candidates, return every candidate ranked (best first, ties by id),
    each with its absolute confidence, decision and per-arm evidence.

    `places` holds the semantic evidence of every candidate the model reads (id → the cosine's
    place on the calibration's ramp), whether the semantic arm nominated it or not; a candidate
    without one is judged on its lexical evidence alone. `absent`: the scope lacks what makes
    the question specific (`carryd.index.absence`): every confidence falls (`absent_confidence`).
    `unmet`: the question names what the whole root lacks (`carryd.index.absence.unmet_names`):
    every confidence falls the same, but for a paraphrase the model reads (`_paraphrase`).

    `neighbours` (direct candidate id → its neighbours) turns parent propagation on; it is
    used only when there are fewer than `PROPAGATION_MIN_CANDIDATES` direct candidates.
    `limit` cuts the ranked list (decisions are made before, per hit, so they do not move).
    """
    evidence: dict[str, dict[ArmName, ArmEvidence]] = {}
    for arm in arms:
        divisor = arm.divisor if arm.divisor > 0 else 1.0
        for candidate in arm.candidates:
            contribution = 1.0 / (k + candidate.rank / divisor)
            evidence.setdefault(candidate.id, {})[arm.name] = ArmEvidence(
                rank=candidate.rank,
                raw=candidate.raw,
                confidence=candidate.confidence,
                divisor=divisor,
                contribution=contribution,
                matched=candidate.matched,
                share=candidate.share,
                saturation=candidate.saturation,
            )
    mode: RankMode = "raw" if len(evidence) < MIN_FUSION_CANDIDATES else "rrf"
    hits: list[FusedHit] = []
    for entry_id, by_arm in evidence.items():
        lexical = by_arm.get("lexical")
        semantic = by_arm.get("semantic")
        place = places.get(entry_id) if places is not None else None
        lowered = absent or (unmet and not _paraphrase(lexical, place))
        confidence = absent_confidence(_confidence(lexical, semantic, place), lowered)
        score = sum(item.contribution for item in by_arm.values()) if mode == "rrf" else confidence
        hits.append(
            FusedHit(
                id=entry_id,
                score=score,
                confidence=confidence,
                decision=_decision(confidence, min_confidence),
                match_reason=_reason(lexical, semantic),
                rank_mode=mode,
                lexical=lexical,
                semantic=semantic,
                place=place,
            )
        )
    if mode == "rrf":
        hits.sort(key=lambda hit: (-hit.score, hit.id))
    else:
        hits.sort(key=_raw_order)
    if neighbours is not None and len(hits) < PROPAGATION_MIN_CANDIDATES:
        hits.extend(_propagate(hits, neighbours, min_confidence=min_confidence, mode=mode))
    return tuple(hits if limit is None else hits[:limit])


def _raw_order(hit: FusedHit) -> tuple[float, float, float, str]:
    """Order by raw, unnormalised similarity: confidence, then cosine, then BM25, then id."""
    cosine = hit.semantic.raw if hit.semantic is not None else float("-inf")
    bm25 = hit.lexical.raw if hit.lexical is not None else float("-inf")
    return (-hit.confidence, -cosine, -bm25, hit.id)


def _propagate(
    direct: Sequence[FusedHit],
    neighbours: Mapping[str, Sequence[Neighbour]],
    *,
    min_confidence: float,
    mode: RankMode,
) -> list[FusedHit]:
    """Given the (too few) direct hits, return their parents' other entries, best first."""
    seen = {hit.id for hit in direct}
    best: dict[str, tuple[int, int, float, FusedHit]] = {}
    for position, hit in enumerate(direct):
        for neighbour in neighbours.get(hit.id, ()):
            if neighbour.id in seen:
                continue
            confidence = hit.confidence * PARENT_DECAY[neighbour.level]
            key = (_LEVEL_ORDER[neighbour.level], position)
            current = best.get(neighbour.id)
            if current is not None and current[:2] <= key:
                continue
            best[neighbour.id] = (
                key[0],
                key[1],
                confidence,
                FusedHit(
                    id=neighbour.id,
                    score=hit.score * PARENT_DECAY[neighbour.level],
                    confidence=confidence,
                    decision=_decision(confidence, min_confidence),
                    match_reason=_PARENT_REASON[neighbour.level],
                    rank_mode=mode,
                    lexical=None,
                    semantic=None,
                    parent_of=hit.id,
                ),
            )
    ordered = sorted(best.values(), key=lambda item: (item[0], item[1], -item[2], item[3].id))
    return [item[3] for item in ordered]
