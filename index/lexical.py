"""Given a query's terms and the store's postings, return BM25-ranked entries with an absolute
lexical confidence.

**Ranking** is Okapi BM25 (k1=1.2, b=0.3) with Lucene's always-positive IDF
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``, over postings of the entries' full text.
Repeated query terms count once (a query is a set of needs, not a document).

Why b=0.3 and not the textbook 0.75: memory entries' lengths vary far more than the news
articles 0.75 was tuned on, and a short entry is not more specific, just short. A heading-only
entry (``# 纽西兰鸡毛松``, a file's title, 11 terms) against its paragraph (600 terms, the
title's name twice plus the question's other words) got 1.7× the weight per matched term at
b=0.75, and the CJK unigram+bigram terms let the name alone match 11 times, so the title
outranked the paragraph that answers: the lexical arm's CMRC recall@1 fell to .938 against a
plain unigram BM25's .948. Lowering b fixes the cause instead of the symptom (unigrams only,
or down-weighting bigrams, gained only .002–.01): CMRC recall@1 .938 → .979, LoCoMo .343 →
.380 (recall@5 .533 → .551) — the same direction on both halves of each set split by article
or conversation, flat between b=0.2 and 0.5 (bench/bench_recall.py).

**Confidence** (the inject decision) is a probability that the entry is relevant. It must not
depend on which other candidates came back, so it is computed from this entry, the query and
corpus-wide statistics only — never normalised over the result list::

    share      = Σ_{t ∈ q ∩ d} idf(t) / Σ_{t ∈ q} idf(t)       the share of the query's IDF mass
                 the entry holds (how much of what the question is *about* the entry mentions)
    saturation = BM25(q, d) / (Σ_{t ∈ q} idf(t) · (k1 + 1))   BM25 against its upper bound: the
                 same share, damped by term frequency and length
    confidence = σ(w0 + w1·share + w2·saturation)           (logistic; both weights positive, so
                                                               more evidence never lowers it)

Query terms the root has never seen keep their full IDF in the denominator, so a query about
something absent scores low: that is what keeps a negative control ("When did Caroline get her
pilot's license?" in a root that never mentions pilots) below the gate while a question whose
words the entry holds passes. Both features are shares, not amounts: the earlier third feature,
the matched IDF mass itself, rose with every common word a long question shares with a turn, and
on LoCoMo it ranked the negative controls' best hits above half of the gold entries.

This is the lexical arm's probability alone — what recall uses when there is no semantic evidence
for the entry (no model, a model that cannot read the query or the entry). When there is, the
two arms' evidence is combined in log-odds by one fitted model (`carryd.index.fusion`), not by
multiplying two probabilities: the arms are not independent (a turn that shares the question's
words usually shares its meaning too).

The weights (`CONFIDENCE_WEIGHTS`) are fitted by maximum likelihood on the fitting half of both
development sets (LoCoMo split by conversation, CMRC by article; the top 50 fused hits of each
real query, relevant = overlaps a gold entry; `bench/bench_recall.py --fit`, the test MiniLM) and
reported on the held-out half. A probability is honest about LoCoMo's one-gold-turn labels: few
conversation turns are more likely the answer than not, so the inject gate is a low probability
(`recall.min_confidence`, see `carryd.daemon.config`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from carryd.index.tokenize import terms

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "K1",
    "B",
    "CONFIDENCE_WEIGHTS",
    "LexicalHit",
    "LexicalStats",
    "TermPostings",
    "confidence",
    "idf",
    "query_terms",
    "search",
    "search_rows",
]

K1 = 1.2
B = 0.3  # length normalisation: see the module docstring
# P(relevant | lexical evidence) = σ(w0 + w1·share + w2·saturation): see the module docstring.
CONFIDENCE_WEIGHTS = (-6.348, 4.499, 8.996)


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
    confidence: float  # absolute probability of relevance from this arm alone, in [0, 1]
    matched: tuple[str, ...]  # query terms the entry contains, in query order
    share: float = 0.0  # the share of the query's IDF mass the entry holds
    saturation: float = 0.0  # BM25 over its upper bound for the query


def query_terms(query: str) -> tuple[str, ...]:
    """Given a query, return its distinct terms in first-seen order."""
    return tuple(dict.fromkeys(terms(query)))


def idf(document_frequency: int, doc_count: int) -> float:
    """Given a term's document frequency and the corpus size, return its (positive) IDF."""
    return math.log(1.0 + (doc_count - document_frequency + 0.5) / (document_frequency + 0.5))


def confidence(share: float, saturation: float) -> float:
    """Given the share of the query's IDF mass an entry holds and its BM25 over the query's
    upper bound, return the probability that the entry is relevant (lexical evidence alone)."""
    if share <= 0.0:
        return 0.0
    intercept, w_share, w_saturation = CONFIDENCE_WEIGHTS
    logit = intercept + w_share * share + w_saturation * saturation
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


@dataclass(frozen=True)
class TermPostings:
    """One term's postings over a fixed row order: ascending row numbers and their tfs."""

    rows: np.ndarray  # int64, ascending, unique
    frequencies: np.ndarray  # float64, aligned with rows

    @classmethod
    def of(cls, posting: Mapping[str, int], row_of: Mapping[str, int]) -> TermPostings:
        """Given {entry id: tf} and the row of each id, return the arrays (unknown ids dropped)."""
        import numpy as np

        pairs = sorted(
            (row_of[entry_id], frequency)
            for entry_id, frequency in posting.items()
            if entry_id in row_of and frequency > 0
        )
        return cls(
            rows=np.fromiter((row for row, _ in pairs), dtype=np.int64, count=len(pairs)),
            frequencies=np.fromiter(
                (frequency for _, frequency in pairs), dtype=np.float64, count=len(pairs)
            ),
        )


def patched_postings(
    postings: TermPostings, changed_rows: np.ndarray, now: Mapping[int, int]
) -> TermPostings:
    """Given a term's postings, the rows of the entries an edit changed (ascending) and the
    term's frequency in each changed row now (rows absent: it no longer holds the term),
    return the postings after the edit — what `TermPostings.of` would build from scratch,
    at the cost of the change, not of the term's length (the same object when the edit
    touched none of its rows)."""
    rows, frequencies = without_rows(postings.rows, postings.frequencies, changed_rows)
    rows, frequencies = with_rows(
        rows, frequencies, sorted((row, tf) for row, tf in now.items() if tf > 0)
    )
    if rows is postings.rows:
        return postings
    return TermPostings(rows=rows, frequencies=frequencies)


def without_rows(
    rows: np.ndarray, frequencies: np.ndarray, gone: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Given a term's ascending rows, their frequencies and ascending rows to drop, return
    both without them (the same arrays when it holds none of them). An edit drops a row or
    two from terms tens of thousands of rows long: one binary search call, then a few Python
    comparisons, not a pass over the term."""
    import numpy as np

    size = rows.size
    if not gone.size or not size:
        return rows, frequencies
    hit = [
        at
        for at, row in zip(rows.searchsorted(gone).tolist(), gone.tolist(), strict=True)
        if at < size and rows[at] == row
    ]
    if not hit:
        return rows, frequencies
    return np.delete(rows, hit), np.delete(frequencies, hit)


def with_rows(
    rows: np.ndarray, frequencies: np.ndarray, added: Sequence[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Given a term's ascending rows and their frequencies, and (row, tf) ascending of rows it
    does not hold, return both with those inserted, in the arrays' own types (the same arrays
    when there are none)."""
    import numpy as np

    if not added:
        return rows, frequencies
    new_rows = np.fromiter((row for row, _ in added), rows.dtype, len(added))
    new_frequencies = np.fromiter((tf for _, tf in added), frequencies.dtype, len(added))
    at = np.searchsorted(rows, new_rows)
    return np.insert(rows, at, new_rows), np.insert(frequencies, at, new_frequencies)


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
    changes a hit's confidence); `limit` cuts the ranked list. (The id-keyed form of
    `search_rows`, which a warm caller uses with its cached arrays.)
    """
    import numpy as np

    ids = sorted({*doc_lengths, *(i for posting in postings.values() for i in posting)})
    row_of = {entry_id: row for row, entry_id in enumerate(ids)}
    average = stats.avg_doc_len if stats.avg_doc_len > 0 else 1.0
    lengths = np.fromiter(
        (doc_lengths.get(entry_id, average) for entry_id in ids), dtype=np.float64, count=len(ids)
    )
    mask = None
    if allowed is not None:
        mask = np.fromiter((i in allowed for i in ids), dtype=bool, count=len(ids))
    arrays = {term: TermPostings.of(posting, row_of) for term, posting in postings.items()}
    return search_rows(query, arrays, ids, lengths, stats, allowed=mask, limit=limit, k1=k1, b=b)


def search_rows(
    query: Iterable[str],
    postings: Mapping[str, TermPostings],
    ids: Sequence[str],
    doc_lengths: np.ndarray,
    stats: LexicalStats,
    *,
    allowed: np.ndarray | None = None,
    limit: int | None = None,
    k1: float = K1,
    b: float = B,
) -> tuple[LexicalHit, ...]:
    """Given query terms, their postings as row arrays, the ids of the rows (ascending, so that
    a tie broken by row is broken by id), every row's length and an optional boolean scope
    mask, return the matching entries best first, each with its confidence.

    Vectorised so that a common term's thousands of postings cost microseconds, and only the
    kept hits are sorted and explained.
    """
    import numpy as np

    unique = tuple(dict.fromkeys(query))
    if not unique or not len(ids):
        return ()
    doc_count = max(stats.doc_count, 1)
    avg_len = stats.avg_doc_len if stats.avg_doc_len > 0 else 1.0
    empty = TermPostings(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
    present = {term: postings.get(term, empty) for term in unique}
    weights = {term: idf(int(present[term].rows.size), doc_count) for term in unique}
    total_weight = sum(weights.values())
    scores = np.zeros(len(ids), dtype=np.float64)
    covered = np.zeros(len(ids), dtype=np.float64)
    for term in unique:
        posting = present[term]
        if not posting.rows.size:
            continue
        weight = weights[term]
        frequency = posting.frequencies
        norm = k1 * (1.0 - b + b * doc_lengths[posting.rows] / avg_len)
        # Rows are unique within a term, so fancy-index addition is exact.
        scores[posting.rows] += weight * frequency * (k1 + 1.0) / (frequency + norm)
        covered[posting.rows] += weight
    candidates = _candidates(present.values(), scores, allowed)
    if limit is not None and candidates.size > limit:
        if limit <= 0:
            return ()
        part = np.argpartition(-scores[candidates], limit - 1)[:limit]
        cut = scores[candidates[part]].min()
        candidates = candidates[scores[candidates] >= cut]  # keep ties at the cut for the id order
    order = candidates[np.lexsort((candidates, -scores[candidates]))]
    if limit is not None:
        order = order[:limit]
    matched_by_term = {
        term: _holds(present[term].rows, order) for term in unique if present[term].rows.size
    }
    upper_bound = total_weight * (k1 + 1.0)
    hits = []
    for position, row in enumerate(order.tolist()):
        share = float(covered[row]) / total_weight
        saturation = float(scores[row]) / upper_bound
        hits.append(
            LexicalHit(
                id=ids[row],
                rank=position + 1,
                bm25=float(scores[row]),
                confidence=confidence(share, saturation),
                matched=tuple(term for term, found in matched_by_term.items() if found[position]),
                share=share,
                saturation=saturation,
            )
        )
    return tuple(hits)


def _candidates(
    postings: Iterable[TermPostings], scores: np.ndarray, allowed: np.ndarray | None
) -> np.ndarray:
    """Given a query's postings, every row's score and the scope mask, return the ascending
    rows in scope with a positive score: from the postings' own rows when they are few (the
    carry's questions are of rarer words, and three passes over 100,000 rows cost more than
    the rest of the arm), else by a pass over every row."""
    import numpy as np

    parts = [posting.rows for posting in postings if posting.rows.size]
    if 16 * sum(part.size for part in parts) >= scores.size:
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        return np.flatnonzero(scores > 0.0)
    rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if allowed is not None:
        rows = rows[allowed[rows]]
    return rows[scores[rows] > 0.0]


def _holds(rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Given a term's rows (ascending) and some rows, return whether the term holds each one:
    a binary search, where `isin` sorted a common term's tens of thousands of rows per query."""
    import numpy as np

    # In the rows' own integer type: searching int64 values in int32 rows casts every row.
    at = np.minimum(rows.searchsorted(wanted.astype(rows.dtype, copy=False)), rows.size - 1)
    return np.asarray(rows[at] == wanted)  # `==` on arrays is typed Any
