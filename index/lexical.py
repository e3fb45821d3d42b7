"""Given a query's terms and the store's postings, return BM25-ranked entries with an absolute
lexical confidence.

**Ranking** is Okapi BM25 (k1=1.2, b=0.75) with Lucene's always-positive IDF
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``, over postings of the entries' full text.
Repeated query terms count once (a query is a set of needs, not a document).

**Confidence** (the inject decision) must not depend on which other candidates came back, so it
is computed from this entry, the query and corpus-wide statistics only — never normalised over
the result list. It is the IDF-weighted share of the query that the entry contains, with a
small BM25 component to tell apart entries that cover the query equally::

    coverage   = Σ_{t ∈ q ∩ d} idf(t)            / Σ_{t ∈ q} idf(t)
    saturation = Σ_{t ∈ q ∩ d} idf(t)·s(tf_t, |d|) / Σ_{t ∈ q} idf(t)
                 where s = tf·(k1+1) / (tf + k1·(1 - b + b·|d|/avgdl)) / (k1+1) ∈ [0, 1)
    raw        = (1 - SATURATION_WEIGHT)·coverage + SATURATION_WEIGHT·saturation
    confidence = min(1, raw / FULL_CONFIDENCE_AT)

(``saturation`` is BM25 divided by its own upper bound for this query.) Query terms the root has
never seen keep their full IDF in the denominator, so a query about something absent scores low.

Calibration (bench/bench_recall.py, development sets; chosen per set, not per query): an entry
holding 80% of the query's information is as sure as the lexical arm gets (`FULL_CONFIDENCE_AT`),
so the default threshold 0.5 sits at raw 0.4 — where the negative-control queries (about things
the roots do not contain) stop: their best lexical hit reaches raw 0.23–0.27 on CMRC and
0.30–0.32 on LoCoMo (one outlier at 0.37, a query naming a speaker), while the gold entry of a
real query passes raw 0.4 for 81% of CMRC and 51% of LoCoMo questions.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from carryd.index.tokenize import terms

__all__ = [
    "K1",
    "B",
    "SATURATION_WEIGHT",
    "FULL_CONFIDENCE_AT",
    "LexicalHit",
    "LexicalStats",
    "idf",
    "query_terms",
    "search",
]

K1 = 1.2
B = 0.75
# Share of the confidence that comes from BM25-vs-its-upper-bound rather than plain coverage.
SATURATION_WEIGHT = 0.2
# The raw coverage score at which the lexical confidence reaches 1 (see the calibration above).
FULL_CONFIDENCE_AT = 0.8


@dataclass(frozen=True)
class LexicalStats:
    """Corpus-wide statistics of the lexical index (the whole root, not a query's scope)."""

    doc_count: int
    avg_doc_len: float


@dataclass(frozen=True)
class LexicalHit:
    """One entry the lexical arm found, with the evidence behind its rank and confidence."""

    id: str
    rank: int  # 1-based, in this arm
    bm25: float
    confidence: float  # absolute, in [0, 1]
    matched: tuple[str, ...]  # query terms the entry contains, in query order


def query_terms(query: str) -> tuple[str, ...]:
    """Given a query, return its distinct terms in first-seen order."""
    return tuple(dict.fromkeys(terms(query)))


def idf(document_frequency: int, doc_count: int) -> float:
    """Given a term's document frequency and the corpus size, return its (positive) IDF."""
    return math.log(1.0 + (doc_count - document_frequency + 0.5) / (document_frequency + 0.5))


def search(
    query: Iterable[str],
    postings: Mapping[str, Mapping[str, int]],
    doc_lengths: Mapping[str, int],
    stats: LexicalStats,
    *,
    allowed: Collection[str] | None = None,
    limit: int | None = None,
    k1: float = K1,
    b: float = B,
) -> tuple[LexicalHit, ...]:
    """Given query terms, their postings (term → {entry id: tf}) and the entries' lengths,
    return the matching entries best first (BM25, ties by id), each with its confidence.

    `allowed` restricts the result to a scope (IDF stays corpus-wide, so a scope never
    changes a hit's confidence); `limit` cuts the ranked list.
    """
    unique = tuple(dict.fromkeys(query))
    if not unique:
        return ()
    doc_count = max(stats.doc_count, 1)
    avg_len = stats.avg_doc_len if stats.avg_doc_len > 0 else 1.0
    weights = {term: idf(len(postings.get(term, {})), doc_count) for term in unique}
    total_weight = sum(weights.values())
    bm25: dict[str, float] = {}
    covered: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    for term in unique:
        weight = weights[term]
        for entry_id, frequency in postings.get(term, {}).items():
            if frequency <= 0 or (allowed is not None and entry_id not in allowed):
                continue
            length = doc_lengths.get(entry_id, avg_len)
            norm = k1 * (1.0 - b + b * length / avg_len)
            term_score = weight * frequency * (k1 + 1.0) / (frequency + norm)
            bm25[entry_id] = bm25.get(entry_id, 0.0) + term_score
            covered[entry_id] = covered.get(entry_id, 0.0) + weight
            matched.setdefault(entry_id, []).append(term)
    ranked = sorted(bm25, key=lambda entry_id: (-bm25[entry_id], entry_id))
    if limit is not None:
        ranked = ranked[:limit]
    upper_bound = total_weight * (k1 + 1.0)
    hits = []
    for rank, entry_id in enumerate(ranked, start=1):
        coverage = covered[entry_id] / total_weight
        saturation = bm25[entry_id] / upper_bound
        raw = (1.0 - SATURATION_WEIGHT) * coverage + SATURATION_WEIGHT * saturation
        confidence = raw / FULL_CONFIDENCE_AT
        hits.append(
            LexicalHit(
                id=entry_id,
                rank=rank,
                bm25=bm25[entry_id],
                confidence=min(1.0, max(0.0, confidence)),
                matched=tuple(matched[entry_id]),
            )
        )
    return tuple(hits)
