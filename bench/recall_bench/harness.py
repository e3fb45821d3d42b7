"""One development set with one model: index a copy, rank every question by every method, and
keep the evidence of every hit (real questions, invented negatives, near misses); and the
independent near-miss set (bench/recall_nearmiss)."""

from __future__ import annotations

import collections
import dataclasses
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from carryd.daemon.config import Settings, parse_settings
from carryd.daemon.indexer.calibrating import CORPUS_KEY, reference_for, stored_calibration
from carryd.daemon.indexer.indexing import load_embedder_for, open_store, sync_root
from carryd.daemon.recall.recalling import Recaller, answer_json
from carryd.index.entries import parse_entries
from carryd.index.fusion import Arm, ArmCandidate, fuse
from carryd.index.lexical import LexicalStats, query_terms, search
from carryd.index.store import Batch

from recall_bench.baselines import DECOMPOSED, PlainBM25, decomposed_ranking
from recall_bench.fitting import CURRENT, summarise
from recall_bench.reports import print_set
from recall_bench.sets import (
    ARM_DEPTH,
    HELD_OUT,
    NEARMISS,
    REPO,
    SETS,
    TOP,
    Span,
    copy_root,
    gold_of,
    layout,
    metrics,
    read_jsonl,
)

# The fused rows: the config defaults, and other divisors (rank-space priority) for comparison:
# with nomination gated by the semantic floor the divisors move recall@5 by a point at most.
FUSED = {
    "fused (ours)": {},
    "fused, lex 8 / sem 2": {"lexical_divisor": 8.0, "semantic_divisor": 2.0},
}
METHODS = (
    "lexical-only",
    "semantic-only",
    *FUSED,
    DECOMPOSED,
    "plain BM25",
    "plain RRF (equal)",
)
EVIDENCE_DEPTH = 100  # the hits whose evidence is kept per question


def settings_for(root: Path, model: Path, **recall: Any) -> Settings:
    data: dict[str, Any] = {"root": str(root), "model": {"model_path": str(model)}}
    if recall:
        data["recall"] = recall
    return parse_settings(data)


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


@dataclasses.dataclass
class Indexed:
    """A set's copy, indexed, with everything the methods read."""

    settings: Settings
    store: Any
    embedder: Any
    recaller: Recaller
    variants: dict[str, Recaller]
    rows: dict[str, Any]
    span: dict[str, Span]
    plain: PlainBM25
    lengths: dict[str, int]
    stats: LexicalStats
    vector_ids: Sequence[str]
    matrix: Any

    def scope(self, workspace: str | None) -> set[str]:
        return {
            entry_id
            for entry_id, row in self.rows.items()
            if workspace is None or row.workspace in (None, workspace)
        }


def open_indexed(root: Path, model: Path, reference_calibration: bool) -> Indexed:
    """Index the copied root with the real pipeline and open everything the methods read."""
    settings = settings_for(root, model)
    started = time.perf_counter()
    report = sync_root(settings)
    print(
        f"  indexed {report.files} files, {report.entries} entries in"
        f" {time.perf_counter() - started:.1f} s (degraded: {report.degraded})"
    )
    embedder, degraded = load_embedder_for(settings)
    assert embedder is not None, degraded
    embedder = CachedQueries(embedder)
    store = open_store(settings)
    recaller = Recaller(settings, store, embedder, degraded)
    variants = {
        name: Recaller(
            dataclasses.replace(settings, recall=dataclasses.replace(settings.recall, **changes)),
            store,
            embedder,
            degraded,
        )
        for name, changes in FUSED.items()
    }
    rows = {row.id: row for row in store.entries()}
    print("  " + calibration_line(store, embedder, reference=reference_calibration))
    documents = {}
    for path in sorted({row.path for row in rows.values()}):
        text = (settings.root_path / path).read_text(encoding="utf-8")
        documents.update({entry.id: entry.text for entry in parse_entries(path, text)})
    doc_count, average = store.lexical_stats()
    vector_ids, matrix = store.vectors(embedder.identity.key())
    return Indexed(
        settings=settings,
        store=store,
        embedder=embedder,
        recaller=recaller,
        variants=variants,
        rows=rows,
        span={i: Span(row.path, row.line_start, row.line_end) for i, row in rows.items()},
        plain=PlainBM25(documents),
        lengths={entry_id: row.doc_len for entry_id, row in rows.items()},
        stats=LexicalStats(doc_count, average),
        vector_ids=vector_ids,
        matrix=matrix,
    )


def ranked_by_method(
    run: Indexed, item: dict[str, Any], answer: dict[str, Any]
) -> dict[str, list[str]]:
    """Given a question and its fused answer (limit EVIDENCE_DEPTH), return each method's
    top TOP ids."""
    import numpy as np

    query, workspace = item["query"], item.get("workspace")
    allowed = run.scope(workspace)
    terms = query_terms(query)
    lexical = [
        hit.id
        for hit in search(
            terms,
            run.store.postings(terms),
            run.lengths,
            run.stats,
            allowed=allowed,
            limit=ARM_DEPTH,
        )
    ]
    cosines = run.matrix @ np.asarray(run.embedder.embed_query(query), dtype=np.float32)
    order = sorted(
        (position for position, entry_id in enumerate(run.vector_ids) if entry_id in allowed),
        key=lambda position: (-float(cosines[position]), run.vector_ids[position]),
    )
    semantic = [run.vector_ids[position] for position in order[:ARM_DEPTH]]
    return {
        "lexical-only": lexical,
        "semantic-only": semantic,
        **{
            name: [
                hit["id"]
                for hit in variant.recall(
                    query, workspace=workspace, limit=TOP, min_confidence=0.0
                )["hits"]
            ]
            for name, variant in run.variants.items()
        },
        "plain BM25": run.plain.rank(query, allowed, TOP),
        "plain RRF (equal)": plain_rrf(lexical, semantic),
        DECOMPOSED: decomposed_ranking(
            run.recaller, query, workspace, [hit["id"] for hit in answer["hits"][:50]]
        ),
    }


def plain_rrf(lexical: list[str], semantic: list[str]) -> list[str]:
    arms = [
        Arm("lexical", 1.0, tuple(ArmCandidate(i, r, 0.0, 0.0) for r, i in enumerate(lexical, 1))),
        Arm(
            "semantic", 1.0, tuple(ArmCandidate(i, r, 0.0, 0.0) for r, i in enumerate(semantic, 1))
        ),
    ]
    if len({*lexical, *semantic}) < 3:  # the raw-order rule would apply; plain RRF has none
        return lexical + [i for i in semantic if i not in lexical]
    return [hit.id for hit in fuse(arms, min_confidence=0.0)]


def evidence(
    run: Indexed, kind: str, item: dict[str, Any], gold: Sequence[Span]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Given a question (real, invented or near) asked in its workspace, return its fused
    answer (every candidate, limit EVIDENCE_DEPTH) and the evidence record `summarise` reads:
    per hit (share, saturation, place, relevant, lowered by the evidence of absence), and the
    question's terms that evidence read (`carryd.index.absence`: specific terms the scope
    lacks, names the root lacks)."""
    typed = run.recaller.answer(
        item["query"], workspace=item.get("workspace"), limit=EVIDENCE_DEPTH, min_confidence=0.0
    )
    answer = answer_json(typed)

    def row(hit: dict[str, Any]) -> list[Any]:
        lexical = hit["arms"]["lexical"]
        share = saturation = None
        if lexical is not None:
            share, saturation = lexical["share"], lexical["saturation"]
        relevant = any(g.overlaps(run.span[hit["id"]]) for g in gold)
        place = hit.get("place")
        paraphrase = lexical is None and place is not None and place >= 1.0
        lowered = bool(typed.absent) or (bool(typed.unmet) and not paraphrase)
        return [share, saturation, place, relevant, lowered]

    record = {
        "kind": kind,
        "half": item.get("half"),
        "category": item.get("category"),
        "absent": [*typed.absent, *typed.unmet],
        "hits": [row(hit) for hit in answer["hits"]],
    }
    return answer, record


def evaluate_set(
    name: str, data_dir: Path, model: Path, work: Path, *, reference_calibration: bool = False
) -> dict[str, Any]:
    """Given one development set, return every figure the report prints for it."""
    print(f"\n== {name}")
    source = data_dir / name / "memory"
    workspaces = sorted(p.name for p in source.iterdir() if p.is_dir())
    plan = layout(name, read_jsonl(data_dir / name / "queries.jsonl"), workspaces)
    root = work / name
    copy_root(source, root, plan.place)
    negatives = read_jsonl(REPO / "bench" / SETS[name])
    run = open_indexed(root, model, reference_calibration)
    try:
        return _measure(run, plan.queries, negatives, plan.near_misses)
    finally:
        run.store.close()


def _measure(
    run: Indexed,
    queries: list[dict[str, Any]],
    negatives: list[dict[str, Any]],
    near_misses: list[dict[str, Any]],
) -> dict[str, Any]:
    results: dict[str, dict[str, list[tuple[float, float, float, float]]]] = (
        collections.defaultdict(lambda: collections.defaultdict(list))
    )
    trace: list[dict[str, Any]] = []
    calibration_pairs: list[tuple[int, float, bool]] = []
    for item in queries:
        gold = gold_of(item)
        answer, record = evidence(run, "real", item, gold)
        trace.append(record)
        for method, ids in ranked_by_method(run, item, answer).items():
            figures = metrics([run.span[i] for i in ids], gold)
            for key in ("all", f"half {item['half']}"):
                results[key][method].append(figures)
            category = item.get("category", "all")
            results[f"{category}"][method].append(figures)
            results[f"{category}, half {item['half']}"][method].append(figures)
        # Reliability: every hit of the answer a user sees (top 10, any confidence).
        calibration_pairs.extend(
            (item["half"], hit["confidence"], any(g.overlaps(run.span[hit["id"]]) for g in gold))
            for hit in answer["hits"][:TOP]
        )
    for item in negatives:
        trace.append(evidence(run, "invented", {**item, "half": None}, [])[1])
    near_examples = []
    for item in near_misses:
        answer, record = evidence(run, "near", item, [])
        trace.append(record)
        injected = [
            hit for hit in answer["hits"] if hit["confidence"] >= run.settings.recall.min_confidence
        ]
        if injected and len(near_examples) < 8:
            near_examples.append((item, injected[0], record["absent"]))
    figures = summarise(trace, CURRENT)
    figures.update(
        {
            "results": {k: dict(v) for k, v in results.items()},
            "calibration_pairs": calibration_pairs,
            "trace": trace,
            "threshold": run.settings.recall.min_confidence,
            "near_examples": near_examples,
            "queries": len(queries),
            "negatives": len(negatives),
            "near_misses": len(near_misses),
        }
    )
    print_set(figures)
    return figures


# --- the independent near-miss set -----------------------------------------------------------


def independent(which: str, model: Path, work: Path, gate: float) -> dict[str, float]:
    """Given a root of bench/recall_nearmiss ("dev", "dev2", "test"), index it with the model
    and return the share of answerable questions whose gold passes `gate`, the share of near
    misses that inject a hit, and fused R@5 of the answerable ones. A development root prints
    them per workspace too, and the near misses that inject; "test" is held out: one summary
    line, nothing per question or workspace, and its evidence is never kept."""
    folder = NEARMISS / which
    root = work / f"nearmiss-{which}"
    shutil.copytree(folder / "root", root)
    run = open_indexed(root, model, False)
    held_out = which == HELD_OUT
    by_workspace: dict[str, dict[str, list[float]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    try:
        shown = 0
        for item in read_jsonl(folder / "queries.jsonl"):
            gold = gold_of(item)
            answer = run.recaller.recall(
                item["query"], workspace=item["workspace"], limit=EVIDENCE_DEPTH, min_confidence=0.0
            )
            passing = [hit for hit in answer["hits"] if hit["confidence"] >= gate]
            figures = by_workspace[item["workspace"]]
            if item["kind"] == "answerable":
                figures["gold"].append(
                    any(any(g.overlaps(run.span[h["id"]]) for g in gold) for h in passing)
                )
                figures["r5"].append(
                    metrics([run.span[h["id"]] for h in answer["hits"][:TOP]], gold)[1]
                )
            else:
                figures["near"].append(bool(passing))
                if not held_out and passing and shown < 12:
                    shown += 1
                    print(
                        f"   near miss injected: {item['query']!r} in {item['workspace']} →"
                        f" {passing[0]['l0'][:60]!r} ({passing[0]['confidence']:.3f})"
                    )
    finally:
        run.store.close()
    if not held_out:
        for workspace in sorted(by_workspace):
            _independent_line(f"{which} / {workspace}", by_workspace[workspace], gate, "    ")
    return _independent_line(which, _pooled(by_workspace.values()), gate, "  ")


def _pooled(parts: Any) -> dict[str, list[float]]:
    pooled: dict[str, list[float]] = collections.defaultdict(list)
    for part in parts:
        for key, values in part.items():
            pooled[key].extend(values)
    return pooled


def _independent_line(
    name: str, lists: dict[str, list[float]], gate: float, indent: str
) -> dict[str, float]:
    """Print and return one line of the independent set's figures."""

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) if values else float("nan")

    figures = {
        "gold_passing": mean(lists["gold"]),
        "near_injected": mean(lists["near"]),
        "r5": mean(lists["r5"]),
        "answerable": len(lists["gold"]),
        "near": len(lists["near"]),
    }
    print(
        f"{indent}independent near-miss {name} at gate {gate:.2f}: answerable gold passing"
        f" {figures['gold_passing']:.1%} of {figures['answerable']}, near misses injected"
        f" {figures['near_injected']:.1%} of {figures['near']}, fused R@5 {figures['r5']:.3f}"
    )
    return figures
