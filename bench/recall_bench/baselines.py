"""The baselines recall is measured against, and trials it does not use: plain BM25, our lexical
arm in memory (no model), query decomposition for multi-hop questions."""

from __future__ import annotations

import collections
import math
import re
import statistics
from pathlib import Path

from carryd.daemon.recall.recalling import Recaller
from carryd.index.entries import parse_entries
from carryd.index.lexical import LexicalStats, query_terms, search

from recall_bench.sets import TOP, Span, metrics, read_jsonl

_PLAIN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)


def plain_terms(text: str) -> list[str]:
    return _PLAIN.findall(text.lower())


class PlainBM25:
    """Textbook BM25 (k1=1.2, b=0.75) over a plain tokenizer; the baseline, not our arm."""

    def __init__(self, documents: dict[str, str]) -> None:
        self.postings: dict[str, dict[str, int]] = collections.defaultdict(dict)
        self.lengths: dict[str, int] = {}
        for entry_id, text in documents.items():
            counts = collections.Counter(plain_terms(text))
            self.lengths[entry_id] = sum(counts.values())
            for term, frequency in counts.items():
                self.postings[term][entry_id] = frequency
        self.count = len(documents)
        self.average = sum(self.lengths.values()) / max(self.count, 1)

    def rank(self, query: str, allowed: set[str], depth: int) -> list[str]:
        scores: dict[str, float] = collections.defaultdict(float)
        for term in set(plain_terms(query)):
            posting = self.postings.get(term, {})
            weight = math.log(1 + (self.count - len(posting) + 0.5) / (len(posting) + 0.5))
            for entry_id, frequency in posting.items():
                if entry_id in allowed:
                    norm = 1.2 * (0.25 + 0.75 * self.lengths[entry_id] / self.average)
                    scores[entry_id] += weight * frequency * 2.2 / (frequency + norm)
        return sorted(scores, key=lambda entry_id: (-scores[entry_id], entry_id))[:depth]


def lexical_only(name: str, data_dir: Path) -> dict[str, list[float]]:
    """Given one development set, return R@1/5/10 and MRR@10 of our lexical arm and of plain
    BM25 computed in memory from the Markdown files: no model, no index, seconds (for
    iterating on the tokenizer and BM25; the same postings the store would hold)."""
    from carryd.index.redact import redact
    from carryd.index.tokenize import terms as our_terms

    root = data_dir / name / "memory"
    entries = {}
    for path in sorted(root.rglob("*.md")):
        relative = path.relative_to(root).as_posix()
        for entry in parse_entries(relative, path.read_text(encoding="utf-8")):
            entries[entry.id] = entry
    postings: dict[str, dict[str, int]] = collections.defaultdict(dict)
    lengths = {}
    for entry_id, entry in entries.items():
        counts = collections.Counter(our_terms(redact(entry.text)))
        lengths[entry_id] = sum(counts.values())
        for term, frequency in counts.items():
            postings[term][entry_id] = frequency
    stats = LexicalStats(len(lengths), sum(lengths.values()) / max(len(lengths), 1))
    plain = PlainBM25({entry_id: entry.text for entry_id, entry in entries.items()})
    span = {i: Span(e.path, e.line_start, e.line_end) for i, e in entries.items()}
    results: dict[str, list[tuple[float, float, float, float]]] = {"lexical": [], "plain": []}
    for item in read_jsonl(data_dir / name / "queries.jsonl"):
        workspace = item.get("workspace")
        allowed = {
            i for i, e in entries.items() if workspace is None or e.workspace in (None, workspace)
        }
        gold = [Span(g["path"], g["line_start"], g["line_end"]) for g in item["gold"]]
        wanted = query_terms(item["query"])
        hits = search(
            wanted,
            {t: postings.get(t, {}) for t in wanted},
            lengths,
            stats,
            allowed=allowed,
            limit=TOP,
        )
        results["lexical"].append(metrics([span[hit.id] for hit in hits], gold))
        ranked = plain.rank(item["query"], allowed, TOP)
        results["plain"].append(metrics([span[i] for i in ranked], gold))
    table = {
        method: [statistics.fmean(column) for column in zip(*rows, strict=True)]
        for method, rows in results.items()
    }
    print(f"\n== {name} (lexical only, in memory): {len(entries)} entries")
    for method, values in table.items():
        print(f"  {method:10s} " + " ".join(f"{value:6.3f}" for value in values))
    return table


# --- query decomposition without an LLM (multi-hop, a trial) --------------------------------

DECOMPOSED = "fused + decomposed"

_PAIR = re.compile(r"\b([A-Z][a-z]+) and ([A-Z][a-z]+)\b(?:\s+(?:both|together))?")


def decompose(query: str) -> list[str]:
    """Given a question, return the sub-questions it asks (none when it asks about one
    person): "Did Jon and Gina both ..." becomes "Did Jon ..." and "Did Gina ...". (Splitting
    clauses on "and" / "or" as well broke "black and white" and "colors and patterns" in
    single-hop questions, so only a pair of names is split.)"""
    pair = _PAIR.search(query)
    if pair is None:
        return []
    return [
        (query[: pair.start()] + who + query[pair.end() :]).strip()
        for who in (pair.group(1), pair.group(2))
    ]


def decomposed_ranking(
    recaller: Recaller, query: str, workspace: str | None, original: list[str]
) -> list[str]:
    """Given the original ranking, return it fused in rank space (RRF, k = 60) with the
    rankings of the query's sub-questions; unchanged when the query has none."""
    parts = decompose(query)
    if not parts:
        return original[:TOP]
    rankings = [original] + [
        [
            hit["id"]
            for hit in recaller.recall(p, workspace=workspace, limit=50, min_confidence=0.0)["hits"]
        ]
        for p in parts
    ]
    score: dict[str, float] = collections.defaultdict(float)
    for ranking in rankings:
        for rank, entry_id in enumerate(ranking, 1):
            score[entry_id] += 1.0 / (60 + rank)
    return sorted(score, key=lambda entry_id: (-score[entry_id], entry_id))[:TOP]
