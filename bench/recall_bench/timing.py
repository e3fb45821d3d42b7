"""Latency of a warm recall and P4's measurement (L0 answers against full text)."""

from __future__ import annotations

import math
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from carryd.daemon.indexer.indexing import load_embedder_for, open_store, sync_root
from carryd.daemon.recall.recalling import Recaller
from carryd.index.entries import parse_entries

from recall_bench.harness import settings_for
from recall_bench.sets import read_jsonl


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
