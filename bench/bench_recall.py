"""Recall quality, negative controls and latency on the development sets (not run by CI).

    .venv/bin/python bench/bench_recall.py [--data ../shared/data/dev] [--model DIR]...
        [--sets locomo,cmrc-trial] [--reference-calibration] [--latency-entries 10000]
        [--no-latency]

For each model (--model, repeatable; default: the offline test model and, when
`tests.testmodel` has it, the second test model) and each set, the memory root is copied into
a temp folder (the shared data is read-only) and indexed once with the real pipeline
(`sync_root`), which measures the semantic calibration on that corpus and stores it
(`carryd.daemon.indexer.calibrating`); --reference-calibration replaces it by the model's reference
calibration (what a corpus too small to measure gets). Query embeddings are cached for the
run. Then, for every query of `queries.jsonl` (LoCoMo with its per-query workspace, CMRC at root
level):

- recall@1/5/10 (share of the query's gold entries in the top k; a hit matches a gold entry
  when the path is equal and the line ranges overlap) and MRR@10, for
  - lexical-only: our BM25 arm (`carryd.index.lexical`, our tokenizer) over full text,
  - semantic-only: cosine of the query against the L0 vectors, best first,
  - fused (ours): `Recaller.recall(..., min_confidence=0)` exactly as `carryd recall` runs,
  - plain BM25: textbook BM25 with a plain tokenizer (lowercased ``\\w+`` words, single CJK
    characters; no stemming, no identifier parts, no bigrams),
  - plain equal-weight RRF: ``Σ 1/(60 + rank)`` over both arms' top 50, no gating;
  - fused + decomposed: a trial of query decomposition without an LLM for multi-hop questions
    (a question about two named people asked once per person, fused with the original by RRF;
    `decompose`). Not used by recall: on LoCoMo it touches 10 questions (5 multi-hop) and moved
    multi-hop R@5/R@10 .233/.390 → .228/.389 with the test MiniLM and .255/.383 → .255/.381
    with the second model, while single-hop and temporal lost up to 1.7 points (splitting
    clauses on "and"/"or" too was worse: it broke "black and white");
- the same per LoCoMo category (multi-hop, open-domain, single-hop, temporal);
- the reliability of the confidence: the top-10 fused hits of every real query binned by
  confidence against the share that are relevant (overlap a gold entry), with the expected
  calibration error, for the held-out half of the set (`fit_half`: anything fitted is fitted
  on the other half) and, for reference, the fitting half and the whole set; --fit refits the
  confidence weights (`fit_confidence`: on every fused hit of the fitting half, not only the top
  10, since the gate is a low probability that most hits near it sit below rank 10);
- the inject threshold: the share of real queries with a gold entry whose confidence passes
  `min_confidence` next to the share of negative-control queries (bench/negative_queries_*.jsonl:
  things the root does not contain) that still get an `inject` hit, and the same for a sweep
  of gates;
- latency: p50/p95 of a warm `Recaller.recall` (model loaded, query embedding included) on a
  root of about --latency-entries entries (LoCoMo's sessions copied into enough workspaces).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from carryd.daemon.config import Settings, parse_settings  # noqa: E402
from carryd.daemon.indexer.calibrating import (  # noqa: E402
    CORPUS_KEY,
    reference_for,
    stored_calibration,
)
from carryd.daemon.indexer.indexing import load_embedder_for, open_store, sync_root  # noqa: E402
from carryd.daemon.recall.recalling import Recaller  # noqa: E402
from carryd.index.entries import parse_entries  # noqa: E402
from carryd.index.fusion import (  # noqa: E402
    SEMANTIC_WEIGHTS,
    Arm,
    ArmCandidate,
    fuse,
)
from carryd.index.lexical import LexicalStats, idf, query_terms, search  # noqa: E402
from carryd.index.store import Batch  # noqa: E402

SETS = {
    "locomo": "negative_queries_locomo.jsonl",
    "cmrc-trial": "negative_queries_cmrc.jsonl",
}
# The fused rows: the config defaults, and other divisors (rank-space priority) for comparison:
# with nomination gated by the semantic floor the divisors move recall@5 by a point at most.
FUSED = {
    "fused (ours)": {},
    "fused, lex 8 / sem 2": {"lexical_divisor": 8.0, "semantic_divisor": 2.0},
}
DECOMPOSED = "fused + decomposed"
METHODS = (
    "lexical-only",
    "semantic-only",
    *FUSED,
    DECOMPOSED,
    "plain BM25",
    "plain RRF (equal)",
)
TOP = 10
ARM_DEPTH = 50
# The weights are fitted on the top FIT_DEPTH fused hits of each answer: the depth recall fuses by
# default (`candidates_per_arm`), where the gate decides. Deeper, the rows are mostly turns that
# share only a speaker's name with the question, and they set the weights' slope for the rows
# that matter (on LoCoMo with every hit up to 100, gold passing 56.0% on the fitting half with the
# test MiniLM at the rule's gate, replayed on the bench's evidence, against 61.3% with the top 50).
FIT_DEPTH = 50
# Round gates swept (inject when P(relevant) >= gate); the default is chosen from these by the
# rule below, on the fitting half of the real queries, and reported on the held-out half.
GATES = (0.01, 0.02, 0.03, 0.04, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
GOLD_PASS_BAR = 0.65
NEGATIVE_BAR = 0.05
GATE_RULE = (
    f"among the swept gates at which no set and model injects more than {NEGATIVE_BAR:.0%} of its"
    f" negative controls, the highest at which, on the fitting half of every set with every"
    f" model, at least {GOLD_PASS_BAR:.0%} of real queries have a gold entry passing; if none"
    f" of them keeps gold there, the lowest of them (abstaining, S15, comes before recall)"
)


@dataclasses.dataclass(frozen=True)
class Span:
    path: str
    line_start: int
    line_end: int

    def overlaps(self, other: Span) -> bool:
        return (
            self.path == other.path
            and self.line_start <= other.line_end
            and other.line_start <= self.line_end
        )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def metrics(ranked: Sequence[Span], gold: Sequence[Span]) -> tuple[float, float, float, float]:
    """Given a ranked list and the gold spans, return recall@1, @5, @10 and MRR@10."""

    def found(depth: int) -> float:
        top = ranked[:depth]
        return sum(any(g.overlaps(hit) for hit in top) for g in gold) / len(gold)

    reciprocal = next(
        (
            1.0 / position
            for position, hit in enumerate(ranked[:TOP], 1)
            if any(g.overlaps(hit) for g in gold)
        ),
        0.0,
    )
    return found(1), found(5), found(10), reciprocal


def fit_half(item: dict[str, Any]) -> int:
    """Given a query, return its half of the set (0: the half confidence constants may be
    fitted on, 1: held out from any fit): LoCoMo by conversation, CMRC by the gold entry's
    article."""
    key = item.get("workspace") or item["gold"][0]["path"]
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % 2


def reliability(
    pairs: Sequence[tuple[float, bool]], bins: int = 10
) -> tuple[list[tuple[float, float, int, float, float]], float]:
    """Given (confidence, relevant) pairs, return the bins (low, high, count, mean confidence,
    share relevant) and the expected calibration error (count-weighted |confidence - share|)."""
    table = []
    error = 0.0
    for index in range(bins):
        low, high = index / bins, (index + 1) / bins
        chosen = [(c, r) for c, r in pairs if low <= c < high or (index == bins - 1 and c >= high)]
        if not chosen:
            continue
        mean = statistics.fmean(c for c, _ in chosen)
        share = statistics.fmean(float(r) for _, r in chosen)
        error += len(chosen) / len(pairs) * abs(mean - share)
        table.append((low, high, len(chosen), mean, share))
    return table, error


def calibration_line(store: Any, embedder: Any, *, reference: bool) -> str:
    """Given the indexed store and its model, return a line on the semantic calibration the
    recallers will read (the stored one), after replacing it with the model's reference
    calibration when `reference` asks."""
    if reference:
        record = reference_for(embedder, store)
        store.apply(Batch(identity=embedder.identity.key(), meta=((CORPUS_KEY, record.to_json()),)))
    stored = stored_calibration(store)
    assert stored is not None and stored.identity == embedder.identity.key()
    return f"semantic calibration: {stored.summary()}"


# --- the plain BM25 baseline ---------------------------------------------------------------

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


# --- fitting the confidence and choosing the gate ------------------------------------------

# (half, share, saturation, place, relevant): one fused hit's evidence and label; share and
# saturation are None when the hit holds no query term, place when the model has no cosine for it.
FitRow = tuple[int, float | None, float | None, float | None, bool]


def _logistic_fit(features: Any, labels: Any, iterations: int = 100) -> Any:
    """Given a design matrix (a column of ones first) and 0/1 labels, return the weights of
    the maximum-likelihood logistic model (Newton's method; a tiny ridge keeps it defined)."""
    import numpy as np

    weights = np.zeros(features.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(features @ weights, -60, 60)))
        gradient = features.T @ (p - labels) / len(labels) + 1e-4 * weights
        hessian = (features * (p * (1 - p))[:, None]).T @ features / len(labels)
        step = np.linalg.solve(hessian + 1e-4 * np.eye(len(weights)), gradient)
        weights = weights - step
        if float(np.abs(step).max()) < 1e-9:
            break
    return weights


def fit_confidence(
    rows: Sequence[FitRow],
) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """Given (half, share, saturation, place, relevant) per fused hit, return the lexical arm's
    weights (w0, w_share, w_saturation), fitted on every hit holding a query term as if there
    were no model, and the combined weights (w0, w_share, w_saturation, w_place), fitted on
    those of them with a place; both on the fitting half (half 0) only. (A nominee holding no
    query term keeps the semantic arm's own vote, `SEMANTIC_WEIGHTS`: too few of them here to
    fit anything on, see `carryd.index.fusion`.)

    The top FIT_DEPTH fused hits of the answer, not only the top 10: the gate is a low
    probability, and the hits near it are mostly below rank 10."""
    import numpy as np

    chosen = [row for row in rows if row[0] == 0]
    lexical = [row for row in chosen if row[1] is not None]
    combined = [row for row in lexical if row[3] is not None]
    lexical_weights = _logistic_fit(
        np.array([[1.0, row[1] or 0.0, row[2] or 0.0] for row in lexical]),
        np.array([float(row[4]) for row in lexical]),
    )
    combined_weights = _logistic_fit(
        np.array([[1.0, row[1] or 0.0, row[2] or 0.0, row[3] or 0.0] for row in combined]),
        np.array([float(row[4]) for row in combined]),
    )
    first = [round(float(value), 3) for value in lexical_weights]
    second = [round(float(value), 3) for value in combined_weights]
    return (first[0], first[1], first[2]), (second[0], second[1], second[2], second[3])


def row_confidence(row: FitRow, lexical: Sequence[float], combined: Sequence[float]) -> float:
    """Given one hit's evidence and a set of weights, return its confidence as recall reads it
    (`carryd.index.fusion`: the combined model for a hit holding a query term with a place, the
    lexical arm's without one, the semantic arm's vote for a nominee alone)."""
    if row[3] is not None and row[1] is None:
        logit = SEMANTIC_WEIGHTS[0] + SEMANTIC_WEIGHTS[1] * row[3]
    elif row[3] is not None:
        logit = (
            combined[0]
            + combined[1] * (row[1] or 0.0)
            + combined[2] * (row[2] or 0.0)
            + combined[3] * row[3]
        )
    elif row[1] is not None:
        logit = lexical[0] + lexical[1] * row[1] + lexical[2] * (row[2] or 0.0)
    else:
        return 0.0
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def refit(figures: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Fit the weights on the fitting half of every set with the first model, then print the
    held-out ECE those weights give on every (model, set)."""
    rows = [
        row for (model, _), one in figures.items() if model == "model 1" for row in one["fit_rows"]
    ]
    lexical, combined = fit_confidence(rows)
    print(f"\n== fit (fitting half, model 1): lexical {lexical}, combined {combined}")
    for (model, name), one in figures.items():
        for half, label in ((0, "fitting"), (1, "held-out")):
            pairs = [
                (row_confidence(row, lexical, combined), row[4])
                for row in one["fit_rows"]
                if row[0] == half
            ]
            print(f"  {model} / {name}: ECE {label} (every fused hit) {reliability(pairs)[1]:.3f}")


def choose_gate(figures: dict[tuple[str, str], dict[str, Any]]) -> float | None:
    """Given every (model, set)'s figures, return the gate GATE_RULE picks (None: no swept
    gate keeps the negative controls out) and print its figures on both halves."""

    def passing(one: dict[str, Any], gate: float, half: int) -> float:
        return statistics.fmean(v >= gate for h, v in one["gold_by_half"] if h == half)

    def injected(one: dict[str, Any], gate: float) -> float:
        return statistics.fmean(v >= gate for v in one["negative_best"])

    print(f"\n== inject gate: {GATE_RULE}")
    # Both bars are the issue's; the negative controls' is the hard one (an inject on a question
    # the root cannot answer puts noise in a carry), so gold is maximised only within it.
    safe = [
        gate
        for gate in GATES
        if all(injected(one, gate) <= NEGATIVE_BAR for one in figures.values())
    ]
    if not safe:
        print(f"  no swept gate keeps negatives <= {NEGATIVE_BAR:.0%} everywhere")
        return None
    meeting = [
        gate
        for gate in safe
        if all(passing(one, gate, 0) >= GOLD_PASS_BAR for one in figures.values())
    ]
    if meeting:
        gate = max(meeting)
        print(
            f"  negatives <= {NEGATIVE_BAR:.0%} from {min(safe):.2f}; gold bar met on every"
            f" fitting half up to {gate:.2f}"
        )
    else:
        gate = min(safe)
        print(
            f"  the lowest gate keeping negatives <= {NEGATIVE_BAR:.0%} everywhere: {gate:.2f};"
            f" no such gate keeps gold passing >= {GOLD_PASS_BAR:.0%} on every fitting half"
            " (the negative controls chose it: their figure below is a check that held, not an"
            " independent test)"
        )
    for (model, name), one in figures.items():
        print(
            f"  {model} / {name} at {gate:.2f}: gold passing {passing(one, gate, 0):.1%} fitting"
            f" half, {passing(one, gate, 1):.1%} held-out half; negative controls injected"
            f" {injected(one, gate):.1%} (bar {NEGATIVE_BAR:.0%})"
        )
    return gate


# --- one set -------------------------------------------------------------------------------


def settings_for(root: Path, model: Path, **recall: Any) -> Settings:
    data: dict[str, Any] = {"root": str(root), "model": {"model_path": str(model)}}
    if recall:
        data["recall"] = recall
    return parse_settings(data)


def index_copy(source: Path, work: Path, model: Path) -> tuple[Settings, float]:
    root = work / source.parent.name
    shutil.copytree(source, root)
    settings = settings_for(root, model)
    started = time.perf_counter()
    report = sync_root(settings)
    elapsed = time.perf_counter() - started
    print(
        f"  indexed {report.files} files, {report.entries} entries in {elapsed:.1f} s"
        f" (degraded: {report.degraded})"
    )
    return settings, elapsed


def evaluate_set(
    name: str, data_dir: Path, model: Path, work: Path, *, reference_calibration: bool = False
) -> dict[str, Any]:
    """Given one development set, return every figure the report prints for it."""
    import numpy as np

    print(f"\n== {name}")
    settings, _ = index_copy(data_dir / name / "memory", work, model)
    queries = read_jsonl(data_dir / name / "queries.jsonl")
    negatives = read_jsonl(REPO / "bench" / SETS[name])
    embedder, degraded = load_embedder_for(settings)
    if embedder is not None:
        embedder = CachedQueries(embedder)
    store = open_store(settings)
    try:
        recaller = Recaller(settings, store, embedder, degraded)
        variants = {
            name: Recaller(
                dataclasses.replace(
                    settings, recall=dataclasses.replace(settings.recall, **changes)
                ),
                store,
                embedder,
                degraded,
            )
            for name, changes in FUSED.items()
        }
        rows = {row.id: row for row in store.entries()}
        if embedder is not None:
            print("  " + calibration_line(store, embedder, reference=reference_calibration))
        span = {
            entry_id: Span(row.path, row.line_start, row.line_end) for entry_id, row in rows.items()
        }
        documents = {}
        for path in sorted({row.path for row in rows.values()}):
            text = (settings.root_path / path).read_text(encoding="utf-8")
            documents.update({entry.id: entry.text for entry in parse_entries(path, text)})
        plain = PlainBM25(documents)
        doc_count, average = store.lexical_stats()
        stats = LexicalStats(doc_count, average)
        lengths = {entry_id: row.doc_len for entry_id, row in rows.items()}
        assert embedder is not None, degraded
        vector_ids, matrix = store.vectors(embedder.identity.key())
        threshold = settings.recall.min_confidence

        def scope(workspace: str | None) -> set[str]:
            return {
                entry_id
                for entry_id, row in rows.items()
                if workspace is None or row.workspace in (None, workspace)
            }

        def lexical_ranked(query: str, allowed: set[str]) -> list[str]:
            terms = query_terms(query)
            hits = search(
                terms, store.postings(terms), lengths, stats, allowed=allowed, limit=ARM_DEPTH
            )
            return [hit.id for hit in hits]

        def semantic_ranked(query: str, allowed: set[str]) -> list[str]:
            cosines = matrix @ np.asarray(embedder.embed_query(query), dtype=np.float32)
            order = sorted(
                (position for position, entry_id in enumerate(vector_ids) if entry_id in allowed),
                key=lambda position: (-float(cosines[position]), vector_ids[position]),
            )
            return [vector_ids[position] for position in order[:ARM_DEPTH]]

        def plain_rrf(lexical: list[str], semantic: list[str]) -> list[str]:
            arms = [
                Arm(
                    "lexical",
                    1.0,
                    tuple(ArmCandidate(i, r, 0.0, 0.0) for r, i in enumerate(lexical, 1)),
                ),
                Arm(
                    "semantic",
                    1.0,
                    tuple(ArmCandidate(i, r, 0.0, 0.0) for r, i in enumerate(semantic, 1)),
                ),
            ]
            candidates = {*lexical, *semantic}
            if len(candidates) < 3:  # the raw-order rule would apply; plain RRF has none
                return lexical + [i for i in semantic if i not in lexical]
            return [hit.id for hit in fuse(arms, min_confidence=0.0)]

        def ramp() -> tuple[float, float] | None:
            """The semantic calibration's ramp (start, width) a cosine's place t is read on, as
            the recaller holds it after its first query (None: no semantic arm)."""
            stored = stored_calibration(store)
            if stored is None:
                return None
            calibration = stored.calibration
            start = calibration.floor if calibration.ramp_from is None else calibration.ramp_from
            return start, max(calibration.ceiling - start, 1e-6)

        def features(query: str) -> tuple[Any, tuple[float, float, int]]:
            """The model-free evidence behind each hit's confidence (for --fit), and the
            query's own: its IDF mass and the part of it the corpus lacks (unique-term units),
            its term count."""
            terms = tuple(dict.fromkeys(query_terms(query)))
            frequencies = {t: len(p) for t, p in store.postings(terms).items()}
            weights = {t: idf(frequencies.get(t, 0), max(doc_count, 1)) for t in terms}
            unit = idf(1, max(doc_count, 1))

            def of(hit: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
                lexical = hit["arms"]["lexical"]
                share = saturation = None
                if lexical is not None:
                    share, saturation = lexical["share"], lexical["saturation"]
                return share, saturation, hit.get("place")

            total = sum(weights.values()) / unit
            missing = sum(w for t, w in weights.items() if not frequencies.get(t)) / unit
            return of, (total, missing, len(terms))

        trace: list[dict[str, Any]] = []  # every hit's evidence, for --save

        position_of = {entry_id: position for position, entry_id in enumerate(vector_ids)}

        def traced(kind: str, item: dict[str, Any], hits: Any, gold: Any) -> None:
            of, query = features(item["query"])
            vector = np.asarray(embedder.embed_query(item["query"]), dtype=np.float32)
            read = ramp()

            def place_of(entry_id: str) -> float | None:  # any hit's place, nominated or not
                position = position_of.get(entry_id)
                if position is None or read is None:
                    return None
                return (float(matrix[position] @ vector) - read[0]) / read[1]

            trace.append(
                {
                    "kind": kind,
                    "half": fit_half(item) if kind == "real" else None,
                    "category": item.get("category"),
                    "query": query,
                    "hits": [
                        [
                            *of(hit),
                            any(g.overlaps(span[hit["id"]]) for g in gold),
                            place_of(hit["id"]),
                        ]
                        for hit in hits
                    ],
                }
            )

        results: dict[str, list[tuple[float, float, float, float]]] = {m: [] for m in METHODS}
        fit_rows: list[tuple[int, float | None, float | None, float | None, bool]] = []
        gold_by_half: list[tuple[int, float]] = []
        by_category: dict[str, dict[str, list[tuple[float, float, float, float]]]] = {}
        calibration_pairs: list[tuple[int, float, bool]] = []
        gold_confidences: list[float] = []
        gold_passes = []
        answered_gold = []
        for item in queries:
            workspace = item.get("workspace")
            gold = [Span(g["path"], g["line_start"], g["line_end"]) for g in item["gold"]]
            allowed = scope(workspace)
            lexical = lexical_ranked(item["query"], allowed)
            semantic = semantic_ranked(item["query"], allowed)
            answer = recaller.recall(
                item["query"], workspace=workspace, limit=100, min_confidence=0.0
            )
            ranked = {
                "lexical-only": lexical,
                "semantic-only": semantic,
                **{
                    name: [
                        hit["id"]
                        for hit in variant.recall(
                            item["query"], workspace=workspace, limit=TOP, min_confidence=0.0
                        )["hits"]
                    ]
                    for name, variant in variants.items()
                },
                "plain BM25": plain.rank(item["query"], allowed, TOP),
                "plain RRF (equal)": plain_rrf(lexical, semantic),
                DECOMPOSED: decomposed_ranking(
                    recaller, item["query"], workspace, [hit["id"] for hit in answer["hits"][:50]]
                ),
            }
            for method, ids in ranked.items():
                figures_ = metrics([span[i] for i in ids], gold)
                results[method].append(figures_)
                by_category.setdefault(item.get("category", "all"), {}).setdefault(
                    method, []
                ).append(figures_)
            # Reliability: every hit of the answer a user sees (top 10, any confidence).
            calibration_pairs.extend(
                (fit_half(item), hit["confidence"], any(g.overlaps(span[hit["id"]]) for g in gold))
                for hit in answer["hits"][:TOP]
            )
            feature_of = features(item["query"])[0]
            fit_rows.extend(  # the top FIT_DEPTH fused hits: see fit_confidence
                (
                    fit_half(item),
                    *feature_of(hit),
                    any(g.overlaps(span[hit["id"]]) for g in gold),
                )
                for hit in answer["hits"][:FIT_DEPTH]
            )
            gold_confidences.append(
                max(
                    (
                        hit["confidence"]
                        for hit in answer["hits"]
                        if any(g.overlaps(span[hit["id"]]) for g in gold)
                    ),
                    default=0.0,
                )
            )
            gold_by_half.append((fit_half(item), gold_confidences[-1]))
            traced("real", item, answer["hits"], gold)
            gold_passes.append(
                any(
                    hit["confidence"] >= threshold
                    and any(g.overlaps(span[hit["id"]]) for g in gold)
                    for hit in answer["hits"]
                )
            )
            default = recaller.recall(item["query"], workspace=workspace)
            answered_gold.append(
                any(any(g.overlaps(span[hit["id"]]) for g in gold) for hit in default["hits"])
            )
        # P4: five L0 abstracts against the same five entries expanded to full text.
        l0_chars = full_chars = 0
        for item in queries[:200]:
            hits = recaller.recall(
                item["query"], workspace=item.get("workspace"), limit=5, min_confidence=0.0
            )["hits"]
            if len(hits) < 5:
                continue
            expanded = recaller.expand([hit["id"] for hit in hits])["entries"]
            l0_chars += sum(len(hit["l0"]) for hit in hits)
            full_chars += sum(len(entry["text"]) for entry in expanded)
        p4 = 1 - l0_chars / max(full_chars, 1)
        print(
            f"  L0s: mean {statistics.fmean(len(row.l0) for row in rows.values()):.1f} chars; "
            f"sources {dict(collections.Counter(row.l0_source for row in rows.values()))}"
        )
        print(
            f"  P4: five-hit L0 answers {l0_chars} chars vs the same entries in full "
            f"{full_chars} chars: {p4:.1%} smaller"
        )
        negative_hits = []
        negative_best: list[float] = []
        for item in negatives:
            every = recaller.recall(
                item["query"], workspace=item.get("workspace"), limit=100, min_confidence=0.0
            )
            negative_best.append(max((hit["confidence"] for hit in every["hits"]), default=0.0))
            traced("negative", item, every["hits"], [])
            answer = recaller.recall(item["query"], workspace=item.get("workspace"))
            negative_hits.append(bool(answer["hits"]))
            if answer["hits"]:
                best = answer["hits"][0]
                arms = {
                    arm: round(evidence["confidence"], 2)
                    for arm, evidence in best["arms"].items()
                    if evidence is not None
                }
                print(
                    f"  negative with an inject hit: {item['query']!r} → {best['l0'][:60]!r}"
                    f" (confidence {best['confidence']:.2f}, arms {arms})"
                )
        table = {
            method: [statistics.fmean(column) for column in zip(*rows_, strict=True)]
            for method, rows_ in results.items()
        }
        print(f"  {'method':20s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR@10':>7s}")
        for method, values in table.items():
            print(
                f"  {method:20s} "
                + " ".join(f"{value:6.3f}" for value in values[:3])
                + f" {values[3]:7.3f}"
            )
        if len(by_category) > 1:
            print("  per category (R@1 R@5 R@10 MRR@10; queries):")
            for category, methods in sorted(by_category.items()):
                print(f"   {category} ({len(next(iter(methods.values())))})")
                for method, values in methods.items():
                    means = [statistics.fmean(column) for column in zip(*values, strict=True)]
                    print(f"     {method:20s} " + " ".join(f"{value:6.3f}" for value in means))
        held_out = [(c, r) for half, c, r in calibration_pairs if half == 1]
        _, ece_fit = reliability([(c, r) for half, c, r in calibration_pairs if half == 0])
        _, ece_all = reliability([(c, r) for _, c, r in calibration_pairs])
        table_, ece = reliability(held_out)
        print(
            f"  reliability of the top-{TOP} fused hits of the held-out half ({len(held_out)} "
            f"hits): ECE {ece:.3f} (fitting half {ece_fit:.3f}, all {ece_all:.3f})"
        )
        print(f"   {'confidence':>11s} {'hits':>6s} {'mean conf':>9s} {'relevant':>8s}")
        for low, high, count, mean, share in table_:
            print(f"   {low:4.1f}-{high:4.1f}  {count:6d} {mean:9.3f} {share:8.3f}")
        print(
            "  gate sweep: gate, real queries whose gold passes (fitting half / held-out half),"
            " negative controls injected"
        )
        for gate in GATES:
            fit_pass, held_pass = (
                statistics.fmean(value >= gate for half, value in gold_by_half if half == which)
                for which in (0, 1)
            )
            injected = statistics.fmean(value >= gate for value in negative_best)
            print(
                f"   {gate:4.2f}: gold {fit_pass:6.1%} / {held_pass:6.1%}  "
                f"negatives {injected:6.1%}"
            )
        figures = {
            "ece": ece,
            "queries": len(queries),
            "table": table,
            "threshold": threshold,
            "gold_passes": statistics.fmean(gold_passes),
            "default_answer_has_gold": statistics.fmean(answered_gold),
            "negatives": len(negatives),
            "negative_inject_share": statistics.fmean(negative_hits),
            "p4_reduction": p4,
            "fit_rows": fit_rows,
            "gold_by_half": gold_by_half,
            "negative_best": negative_best,
            "trace": trace,
        }
        print(
            f"  min_confidence {threshold}: real queries whose gold entry passes: "
            f"{figures['gold_passes']:.1%}; default answer (limit {settings.recall.limit}) holds a"
            f" gold entry: {figures['default_answer_has_gold']:.1%}; negative controls with an"
            f" inject hit: {figures['negative_inject_share']:.1%} of {len(negatives)}"
        )
        best_single = max(table["lexical-only"][1], table["semantic-only"][1])
        for name in FUSED:
            print(f"  {name} R@5 {table[name][1]:.3f} vs best single arm {best_single:.3f}")
        return figures
    finally:
        store.close()


# --- latency -------------------------------------------------------------------------------


def latency(
    data_dir: Path, model: Path, work: Path, entries: int, rounds: int = 200
) -> dict[str, float]:
    """Given a target size, build a root of about that many entries and time warm recalls."""
    print(f"\n== latency at ~{entries} entries")
    source = data_dir / "locomo" / "memory"
    per_copy = sum(
        len(parse_entries(path.relative_to(source).as_posix(), path.read_text(encoding="utf-8")))
        for path in source.rglob("*.md")
    )
    copies = max(1, math.ceil(entries / per_copy))
    root = work / "latency"
    for copy in range(copies):
        for conversation in sorted(p for p in source.iterdir() if p.is_dir()):
            shutil.copytree(conversation, root / f"{conversation.name}-{copy:02}")
    settings = settings_for(root, model)
    started = time.perf_counter()
    report = sync_root(settings)
    print(f"  indexed {report.entries} entries in {time.perf_counter() - started:.1f} s")
    queries = read_jsonl(data_dir / "locomo" / "queries.jsonl")
    embedder, degraded = load_embedder_for(settings)
    store = open_store(settings)
    try:
        recaller = Recaller(settings, store, embedder, degraded)
        recaller.recall("warm up", workspace=None)
        timings = []
        for position in range(rounds):
            item = queries[position % len(queries)]
            workspace = f"{item['workspace']}-{position % copies:02}" if position % 2 else None
            began = time.perf_counter()
            recaller.recall(item["query"], workspace=workspace)
            timings.append((time.perf_counter() - began) * 1000)
        embed_times = []
        for item in queries[:50]:
            began = time.perf_counter()
            embedder.embed_query(item["query"])  # type: ignore[union-attr]
            embed_times.append((time.perf_counter() - began) * 1000)
    finally:
        store.close()
    timings.sort()
    figures = {
        "entries": float(report.entries),
        "p50_ms": statistics.median(timings),
        "p95_ms": timings[int(0.95 * (len(timings) - 1))],
        "embed_p50_ms": statistics.median(embed_times),
    }
    print(
        f"  warm recall over {report.entries} entries: p50 {figures['p50_ms']:.1f} ms, "
        f"p95 {figures['p95_ms']:.1f} ms (query embedding alone p50 "
        f"{figures['embed_p50_ms']:.1f} ms)"
    )
    return figures


def progressive_loading(
    root_source: Path, model: Path, work: Path, queries: Sequence[str]
) -> float:
    """Given a memory root and queries, return how much smaller five L0 hits are than the full
    text of the same five entries (P4's measurement)."""
    print(f"\n== P4 on {root_source}")
    root = work / "p4"
    shutil.copytree(root_source, root)
    settings = settings_for(root, model)
    sync_root(settings)
    embedder, degraded = load_embedder_for(settings)
    store = open_store(settings)
    try:
        recaller = Recaller(settings, store, embedder, degraded)
        l0_chars = full_chars = 0
        for query in queries:
            hits = recaller.recall(query, limit=5, min_confidence=0.0)["hits"]
            expanded = recaller.expand([hit["id"] for hit in hits])["entries"]
            one_l0 = sum(len(hit["l0"]) for hit in hits)
            one_full = sum(len(entry["text"]) for entry in expanded)
            print(f"  {query!r}: {len(hits)} hits, L0 {one_l0} vs full {one_full} chars")
            if len(hits) == 5:
                l0_chars += one_l0
                full_chars += one_full
    finally:
        store.close()
    reduction = 1 - l0_chars / max(full_chars, 1)
    print(f"  five-hit answers: L0 {l0_chars} vs full {full_chars} chars: {reduction:.1%} smaller")
    return reduction


EXAMPLE_QUERIES = (
    "checkout refunds",
    "flaky checkout test",
    "what did we try and what failed",
    "refund currency mismatch",
    "python scripts",
    "automation language",
)


def default_data() -> Path:
    """The shared development sets: beside the repository (/work/main) or, from a worktree
    (/work/wt/NAME), two levels up."""
    for base in (REPO.parent, REPO.parent.parent):
        if (base / "shared" / "data" / "dev").is_dir():
            return base / "shared" / "data" / "dev"
    return REPO.parent / "shared" / "data" / "dev"


class CachedQueries:
    """The embedder with its query embeddings cached for the run: every method and variant
    embeds the same query, and the machine is shared (the passages are embedded once by sync)."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._queries: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_query(self, text: str) -> Any:
        if text not in self._queries:
            self._queries[text] = self._embedder.embed_query(text)
        return self._queries[text]


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument(
        "--model",
        type=Path,
        action="append",
        help="model folder, repeatable (default: the offline test model and the second one)",
    )
    parser.add_argument(
        "--reference-calibration",
        action="store_true",
        help="use each model's reference calibration instead of the one measured on the corpus",
    )
    parser.add_argument(
        "--fit",
        action="store_true",
        help="fit the confidence weights on the fitting half (model 1, every set) and report"
        " them on the held-out halves of every model",
    )
    parser.add_argument(
        "--save", type=Path, help="write each set's gold, negative and fit evidence as JSON"
    )
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--latency-entries", type=int, default=10_000)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument(
        "--lexical-only",
        action="store_true",
        help="only our lexical arm against plain BM25, in memory, without a model (seconds)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.lexical_only:
        for name in args.sets.split(","):
            lexical_only(name, args.data)
        return 0
    with tempfile.TemporaryDirectory(prefix="carryd-bench-") as temp:
        work = Path(temp)
        models = args.model
        if not models:
            from tests import testmodel

            models = [testmodel.build_test_model(work / "model")]
            second = getattr(testmodel, "build_second_model", None)
            if second is not None:
                models.append(second(work / "model2"))
        every: dict[tuple[str, str], dict[str, Any]] = {}
        for number, model in enumerate(models):
            print(f"\n######## model: {model}")
            for name in args.sets.split(","):
                every[(f"model {number + 1}", name)] = evaluate_set(
                    name,
                    args.data,
                    model,
                    work / f"m{number}",
                    reference_calibration=args.reference_calibration,
                )
        choose_gate(every)
        if args.fit:
            refit(every)
        if args.save is not None:
            keep = ("gold_by_half", "negative_best", "fit_rows", "trace")
            args.save.write_text(
                json.dumps(
                    {f"{m} / {n}": {k: one[k] for k in keep} for (m, n), one in every.items()}
                ),
                encoding="utf-8",
            )
        model = models[0]
        progressive_loading(REPO / "examples" / "memory", model, work, EXAMPLE_QUERIES)
        if not args.no_latency:
            latency(args.data, model, work, args.latency_entries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
