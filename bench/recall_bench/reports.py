"""The reliability of the confidence and the tables the bench prints."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


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


def means(rows: Sequence[tuple[float, float, float, float]]) -> list[float]:
    return [statistics.fmean(column) for column in zip(*rows, strict=True)]


def _table(results: dict[str, list[tuple[float, float, float, float]]], indent: str) -> None:
    print(f"{indent}{'method':20s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR@10':>7s}")
    for method, rows in results.items():
        values = means(rows)
        print(f"{indent}{method:20s} " + " ".join(f"{value:6.3f}" for value in values))


def print_set(figures: dict[str, Any]) -> None:
    """Print one (model, set)'s tables: every method on all questions and on the held-out
    half, fused per category on both halves, the reliability of the confidence, the gate
    sweep with the near misses and the negatives, and the near misses that inject."""
    from recall_bench.fitting import gate_sweep

    results = figures["results"]
    print(f"  all {figures['queries']} questions:")
    _table(results["all"], "   ")
    if "half 1" in results:
        print("  held-out half:")
        _table(results["half 1"], "   ")
    categories = sorted(
        key for key in results if key not in ("all", "half 0", "half 1") and "," not in key
    )
    if len(categories) > 1:
        print("  fused (ours) per category: R@1 R@5 R@10 MRR@10 (questions), all / held-out half")
        for category in categories:
            rows = results[category]["fused (ours)"]
            held = results.get(f"{category}, half 1", {}).get("fused (ours)", [])
            line = " ".join(f"{value:6.3f}" for value in means(rows))
            held_line = " ".join(f"{value:6.3f}" for value in means(held)) if held else "-"
            print(f"   {category:12s} ({len(rows):3d}) {line}  /  ({len(held):3d}) {held_line}")
    pairs = figures["calibration_pairs"]
    held_out = [(c, r) for half, c, r in pairs if half == 1]
    table, ece = reliability(held_out)
    _, ece_fit = reliability([(c, r) for half, c, r in pairs if half == 0])
    print(
        f"  reliability of the top-10 fused hits of the held-out half ({len(held_out)} hits):"
        f" ECE {ece:.3f} (fitting half {ece_fit:.3f})"
    )
    for low, high, count, mean, share in table:
        print(f"   {low:4.1f}-{high:4.1f}  {count:6d} {mean:9.3f} {share:8.3f}")
    figures["ece"] = ece
    gate_sweep(figures)
    for item, hit, absent in figures["near_examples"]:
        print(
            f"  near miss with an inject hit: {item['query']!r} in {item['workspace']} →"
            f" {hit['l0'][:60]!r} (confidence {hit['confidence']:.3f}; absent {absent})"
        )
