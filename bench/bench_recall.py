"""Recall quality, negative controls and latency on the development sets (not run by CI).

    .venv/bin/python bench/bench_recall.py [--data ../shared/data/dev] [--model DIR]...
        [--sets locomo,cmrc-trial] [--reference-calibration] [--latency-entries 10000]
        [--no-latency] [--fit] [--save FILE] [--replay FILE] [--no-independent]
        [--independent dev,dev2,test]

The modules are in `bench/recall_bench/` (sets, baselines, fitting, reports, harness, timing).

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
  things the root does not contain) that still get an `inject` hit, and of **near misses**:
  a real question asked in a workspace that does not hold its answer (LoCoMo: every question
  in every other conversation's workspace, its people absent and its topic words present;
  CMRC: the articles are copied into four workspaces, two per half, and each question is also
  asked in the other workspace of its half, a workspace of unrelated articles; the real CMRC
  questions are asked of the whole root as before), by half, for a sweep of gates;
- the independent near-miss sets (bench/recall_nearmiss, written without sight of carryd):
  each development root (`dev`, `dev2`: another author's) reported on its own, per workspace
  and with the near misses that inject; the test root (held out) through one summary line
  only; --independent names the roots (`--sets none --independent dev,dev2`: only those);
- --replay FILE: the gate and the fit again from the evidence --save kept, without a model
  (seconds: to iterate on the absence weight and the gate offline);
- latency: p50/p95 of a warm `Recaller.recall` (model loaded, query embedding included) on a
  root of about --latency-entries entries (LoCoMo's sessions copied into enough workspaces).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from recall_bench.fitting import CURRENT, choose_gate, refit, summarise  # noqa: E402
from recall_bench.harness import evaluate_set, independent, settings_for  # noqa: E402
from recall_bench.sets import INDEPENDENT, SETS, default_data  # noqa: E402
from recall_bench.timing import EXAMPLE_QUERIES, latency, progressive_loading  # noqa: E402


def arguments(argv: Iterable[str] | None) -> argparse.Namespace:
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
        help="fit the confidence and absence weights on the fitting half (model 1, every set)"
        " and report them on the held-out halves of every model",
    )
    parser.add_argument("--save", type=Path, help="write each set's evidence as JSON")
    parser.add_argument(
        "--replay", type=Path, help="choose the gate (and --fit) from evidence --save wrote"
    )
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--latency-entries", type=int, default=10_000)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--no-independent", action="store_true")
    parser.add_argument(
        "--independent",
        default=",".join(INDEPENDENT),
        help="the independent roots to score, of bench/recall_nearmiss (default: every one there;"
        " `test` is held out: one summary line)",
    )
    parser.add_argument(
        "--lexical-only",
        action="store_true",
        help="only our lexical arm against plain BM25, in memory, without a model (seconds)",
    )
    return parser.parse_args(list(argv) if argv is not None else None)


def replay(path: Path, fit: bool) -> int:
    """The gate (and the fit) again from saved evidence."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    every = {tuple(key.split(" / ", 1)): summarise(trace, CURRENT) for key, trace in saved.items()}
    choose_gate(every)  # type: ignore[arg-type]
    if fit:
        weights = refit(every)  # type: ignore[arg-type]
        print("\n== with the fitted weights")
        every = {tuple(k.split(" / ", 1)): summarise(t, weights) for k, t in saved.items()}
        choose_gate(every)  # type: ignore[arg-type]
    return 0


def summary_table(every: dict[tuple[str, str], dict[str, Any]], gate: float) -> None:
    """The closing table: per (model, set) at the gate, held-out half."""
    from recall_bench.fitting import _injected, _near, _passing
    from recall_bench.reports import means

    print(f"\n== summary at gate {gate:.2f} (held-out half unless said)")
    print(
        "  model / set: near-miss injected (held-out) | invented injected | gold passing"
        " (held-out) | ECE (held-out) | fused R@1 R@5 R@10 MRR held-out per category"
    )
    for (model, name), one in every.items():
        print(
            f"  {model} / {name}: near {_near(one, gate, 1):.1%} | invented"
            f" {_injected(one, gate):.1%} | gold {_passing(one, gate, 1):.1%} | ECE"
            f" {one.get('ece', float('nan')):.3f}"
        )
        results = one["results"]
        for key in sorted(results):
            if key == "half 1" or key.endswith(", half 1"):
                values = " ".join(f"{v:.3f}" for v in means(results[key]["fused (ours)"]))
                print(f"     {key.replace(', half 1', '').replace('half 1', 'all'):12s} {values}")


def team_sets(
    every: dict[tuple[str, str], dict[str, Any]], args: argparse.Namespace, threshold: float
) -> None:
    """The gate rule, the fit and the summary table over the team's development sets."""
    gate = choose_gate(every)
    if args.fit:
        refit(every)
    if args.save is not None:
        args.save.write_text(
            json.dumps({f"{m} / {n}": one["trace"] for (m, n), one in every.items()}),
            encoding="utf-8",
        )
    summary_table(every, threshold)
    if gate is not None and gate != threshold:
        print(f"  (the gate rule picks {gate:.2f}; the configured gate is {threshold:.2f})")


def main(argv: Iterable[str] | None = None) -> int:
    args = arguments(argv)
    if args.replay is not None:
        return replay(args.replay, args.fit)
    if args.lexical_only:
        from recall_bench.baselines import lexical_only

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
        names = [name for name in args.sets.split(",") if name and name != "none"]
        for number, model in enumerate(models):
            print(f"\n######## model: {model}")
            for name in names:
                every[(f"model {number + 1}", name)] = evaluate_set(
                    name,
                    args.data,
                    model,
                    work / f"m{number}",
                    reference_calibration=args.reference_calibration,
                )
        threshold = settings_for(work, models[0]).recall.min_confidence
        if every:
            team_sets(every, args, threshold)
        if not args.no_independent:
            roots = [which for which in args.independent.split(",") if which]
            for number, model in enumerate(models):
                print(f"\n== independent near-miss sets, model {number + 1}")
                for which in roots:
                    independent(which, model, work / f"i{number}", threshold)
        model = models[0]
        progressive_loading(REPO / "examples" / "memory", model, work, EXAMPLE_QUERIES)
        if not args.no_latency:
            latency(args.data, model, work, args.latency_entries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
