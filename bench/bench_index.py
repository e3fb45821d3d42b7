"""Index benchmarks (not run by CI): cold throughput vs raw fastembed, and one-entry edit cost.

    .venv/bin/python bench/bench_index.py [--entries 5000] [--small 100] [--large 10000]

(1) Cold indexing throughput: a generated root whose L0 abstracts are L0-sized texts, indexed
    from scratch by `sync_root` (scan, parse, tokenize, embed, SQLite) with a warm model, as a
    ratio to raw fastembed `embed()` on the very same L0 texts in the same run. Target ≥ 0.9.
(2) One-entry edit: change one heading in a 100-entry and in a 10,000-entry root and time the
    sync of that one file (what the daemon does for one watcher event: `paths=[file]`, one
    embedding, no carry) and a full reconcile (stat walk of the root). Target: within 1.5×.

Runs offline with the test model (`tests/testmodel.build_test_model`). Medians of several runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from carryd.daemon.config import ModelSettings, Settings  # noqa: E402
from carryd.daemon.indexer.indexing import load_embedder_for, sync_root  # noqa: E402
from carryd.index.entries import parse_entries  # noqa: E402
from carryd.index.store import Store  # noqa: E402

from tests.testmodel import build_test_model  # noqa: E402

WORDS = (
    "ledger carry vector sqlite handoff plan recall anchor budget index watcher daemon socket "
    "embedding abstract heading sentence workspace memory root fallback truncate redact token "
    "compaction threshold prefix cache latency throughput schema migration retry timeout"
).split()
PER_FILE = 20


def build_root(root: Path, entries: int, seed: int = 7, distinct: int | None = None) -> Path:
    """Given a folder and an entry count, write a memory root of that many entries (with
    `distinct`, file N repeats file N mod distinct/20 word for word: each L0 recurs)."""
    files = max(1, entries // PER_FILE)
    period = files if distinct is None else max(1, distinct // PER_FILE)
    rng = random.Random(seed)
    texts: list[str] = []
    for number in range(files):
        if number >= period:
            text = texts[number % period]
        else:
            lines: list[str] = []
            for section in range(PER_FILE):
                heading = " ".join(rng.choices(WORDS, k=rng.randint(3, 7)))
                sentence = " ".join(rng.choices(WORDS, k=rng.randint(6, 12))).capitalize() + "."
                detail = " ".join(rng.choices(WORDS, k=rng.randint(20, 60))) + "."
                lines += [f"## {heading} {number}-{section}", "", sentence + " " + detail, ""]
            text = "\n".join(lines)
            texts.append(text)
        folder = root / f"ws{number % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"notes-{number:04d}.md").write_text(text, encoding="utf-8")
    return root


def settings_for(root: Path, model: Path) -> Settings:
    return dataclasses.replace(
        Settings(root=str(root)), model=dataclasses.replace(ModelSettings(), model_path=str(model))
    )


def cold_throughput(
    work: Path, model: Path, entries: int, repeats: int, *, quick: bool, keep: Path | None
) -> None:
    template = build_root(work / "cold-template", entries)
    embedder, degraded = load_embedder_for(settings_for(template, model))
    assert embedder is not None, degraded
    raw_model = embedder._model  # noqa: SLF001 — the very fastembed TextEmbedding we wrap
    prefix = embedder.identity.passage_prefix
    # The L0s exactly as the sync will embed them: `parse_entries` makes them (redacted), the
    # sync embeds them as parsed. Parsing instead of a throwaway sync saves a whole cold
    # index at 100,000 entries.
    l0s = [
        entry.l0
        for path in sorted(template.rglob("*.md"))
        for entry in parse_entries(
            path.relative_to(template).as_posix(), path.read_text(encoding="utf-8")
        )
    ]
    texts = [prefix + l0 for l0 in l0s]

    class TimedEmbedder:
        """The same embedder, clocking its own calls: the share of a sync spent embedding is
        then measured inside one run, immune to load changing between runs."""

        identity = embedder.identity
        seconds = 0.0

        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            started = time.perf_counter()
            try:
                return embedder.embed_passages(texts)
            finally:
                TimedEmbedder.seconds += time.perf_counter() - started

        def embed_query(self, text: str) -> np.ndarray:
            return embedder.embed_query(text)

    shares: list[float] = []

    def carryd_sync(repeat: int) -> float:
        root = work / f"cold-{repeat}"
        shutil.copytree(template, root)  # copying and cleanup stay outside the clock
        TimedEmbedder.seconds = 0.0
        started = time.perf_counter()
        try:
            report = sync_root(settings_for(root, model), embedder=TimedEmbedder())
            elapsed = time.perf_counter() - started
            assert report.embedded == len(texts), (report.embedded, len(texts))
            shares.append(TimedEmbedder.seconds / elapsed)
        finally:
            if keep is not None and not keep.exists():
                shutil.move(root, keep)  # the indexed root, for bench_daemon.py --root
            else:
                shutil.rmtree(root)
        return elapsed

    def clocked(function: Callable[[], object]) -> Callable[[int], float]:
        def run(repeat: int) -> float:
            started = time.perf_counter()
            function()
            return time.perf_counter() - started

        return run

    contenders = {
        "carryd sync_root": carryd_sync,
        "raw fastembed embed()": clocked(lambda: list(raw_model.embed(texts))),
        "carryd embedder alone": clocked(lambda: embedder.embed_passages(l0s)),
    }
    if quick:
        del contenders["carryd embedder alone"]
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    print(
        f"(1) cold indexing, {len(texts)} entries, {repeats} round(s), load average "
        "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg()),
        flush=True,
    )
    for repeat in range(repeats):
        # Rotate the order each round so a load change on this shared machine hits them all.
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            seconds[name].append(contenders[name](repeat))
            print(
                f"    {name}: {seconds[name][-1]:.1f} s, load average "
                "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg()),
                flush=True,
            )
    rates = {name: len(texts) / statistics.median(values) for name, values in seconds.items()}
    print(f"    median of {repeats} (rotated order):")
    for name, rate in rates.items():
        print(f"    {name:22s} {rate:8.1f} per s  ({statistics.median(seconds[name]):.2f} s)")
    ours = rates["carryd sync_root"]
    print(
        f"    ratio to raw fastembed       {ours / rates['raw fastembed embed()']:.2f}  (>= 0.90)"
    )
    if "carryd embedder alone" in rates:
        print(
            f"    ratio to the embedding alone {ours / rates['carryd embedder alone']:.2f}  "
            "(across runs: noisy on a loaded machine)"
        )
    print(
        f"    share of sync time spent embedding, same run: {statistics.median(shares):.2f}  "
        "(the rest is scan, parse, redact, tokenize, SQLite)"
    )


def interleaved_throughput(
    work: Path,
    model: Path,
    entries: int,
    sample_every: int,
    keep: Path | None,
    distinct: int | None = None,
) -> None:
    """Cold indexing at a size too large to run twice on a shared machine: one cold
    `sync_root`, and after every `sample_every`-th chunk the sync embeds, raw fastembed
    `embed()` on that very chunk's texts (alternately before and after carryd's call), so both
    rates come from the same minutes of machine load. The raw seconds are taken out of the
    sync's clock.

    With `distinct`, the root's L0s recur (`build_root`) and each distinct text is embedded
    once: the sync's own work (scan, parse, redact, tokenize, SQLite with 100,000 rows) is
    measured in full, the embedding of N texts at the rate measured in this run, and the
    ratio printed is the projection for N distinct L0s (labelled so)."""
    root = build_root(work / "cold-interleaved", entries, distinct=distinct)
    settings = settings_for(root, model)
    embedder, degraded = load_embedder_for(settings)
    assert embedder is not None, degraded
    raw_model = embedder._model  # noqa: SLF001 — the very fastembed TextEmbedding we wrap
    prefix = embedder.identity.passage_prefix
    embedder.embed_passages(["warm up the session"])  # a lazy model loads here, off the clock
    list(raw_model.embed([prefix + "warm up the session"]))
    clock = {
        "embed": 0.0,
        "raw": 0.0,
        "sampled_embed": 0.0,
        "sampled": 0,
        "calls": 0,
        "embedded": 0,
        "asked": 0,
    }
    memo: dict[str, np.ndarray] = {}

    class InterleavedEmbedder:
        identity = embedder.identity

        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            if distinct is not None:
                clock["asked"] += len(texts)
                missing = sorted({text for text in texts if text not in memo})
                # Slices of 256: raw and carryd alternate over several calls, not one.
                for start in range(0, len(missing), 256):
                    part = missing[start : start + 256]
                    memo.update(zip(part, self._embed(part), strict=True))
                return np.stack([memo[text] for text in texts])
            return self._embed(texts)

        def _embed(self, texts: Sequence[str]) -> np.ndarray:
            call = int(clock["calls"])
            clock["calls"] += 1
            sampled = call % sample_every == 0
            raw_first = sampled and (call // sample_every) % 2 == 1
            if raw_first:
                clock["raw"] += _timed(lambda: list(raw_model.embed([prefix + t for t in texts])))
            started = time.perf_counter()
            matrix = embedder.embed_passages(texts)
            seconds = time.perf_counter() - started
            clock["embed"] += seconds
            clock["embedded"] += len(texts)
            if sampled:
                clock["sampled_embed"] += seconds
                clock["sampled"] += len(texts)
                if not raw_first:
                    clock["raw"] += _timed(
                        lambda: list(raw_model.embed([prefix + t for t in texts]))
                    )
            return matrix

        def embed_query(self, text: str) -> np.ndarray:
            return embedder.embed_query(text)

    load_before = os.getloadavg()
    started = time.perf_counter()
    report = sync_root(settings, embedder=InterleavedEmbedder())
    total = time.perf_counter() - started
    sync_seconds = total - clock["raw"]
    raw = clock["sampled"] / clock["raw"]
    if distinct is not None:
        # The sync's own seconds as measured, plus embedding every entry's L0 at the rate
        # carryd's embedder had in this run.
        own = sync_seconds - clock["embed"]
        embed_rate = clock["embedded"] / clock["embed"]
        sync_seconds = own + report.entries / embed_rate
        print(
            f"    {report.entries} entries, {int(clock['embedded'])} distinct L0s embedded; "
            f"the sync's own work (no embedding): {own:.1f} s, "
            f"{1000 * own / report.entries:.2f} ms an entry; PROJECTED for all distinct:"
        )
    ours = report.entries / sync_seconds
    print(
        f"(1) cold indexing, {report.entries} entries, one run, raw fastembed on every "
        f"{sample_every}th chunk interleaved ({int(clock['sampled'])} L0s); load average "
        "{:.1f} {:.1f} {:.1f} before, {:.1f} {:.1f} {:.1f} after".format(
            *load_before, *os.getloadavg()
        )
    )
    print(f"    carryd sync_root       {ours:8.1f} per s  ({sync_seconds:.1f} s)")
    print(f"    raw fastembed embed()  {raw:8.1f} per s  (sampled chunks, {clock['raw']:.1f} s)")
    print(f"    ratio to raw fastembed       {ours / raw:.2f}  (>= 0.90)")
    print(
        "    carryd embedder / raw on the same sampled chunks "
        f"{clock['raw'] / clock['sampled_embed']:.2f}"
    )
    embed_seconds = (
        clock["embed"] if distinct is None else report.entries * clock["embed"] / clock["embedded"]
    )
    print(
        f"    share of sync time spent embedding: {embed_seconds / sync_seconds:.2f}  "
        "(the rest is scan, parse, redact, tokenize, SQLite)"
    )
    if keep is not None and not keep.exists():
        shutil.move(root, keep)


def _timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def edit_cost(work: Path, model: Path, sizes: tuple[int, int], repeats: int) -> None:
    embedder, degraded = load_embedder_for(settings_for(work, model))
    assert embedder is not None, degraded
    stores: dict[int, tuple[Settings, Store, Path]] = {}
    for size in sizes:
        root = build_root(work / f"edit-{size}", size)
        settings = settings_for(root, model)
        store = Store.open(settings.db_path)
        started = time.perf_counter()
        sync_root(settings, store=store, embedder=embedder)
        print(f"    built the {size}-entry root in {time.perf_counter() - started:.1f} s")
        stores[size] = (settings, store, root / "ws0" / "notes-0000.md")
    timings = {(size, mode): [] for size in sizes for mode in ("paths", "reconcile")}
    try:
        for repeat in range(repeats):
            # Sizes alternate edit by edit, so both see the same machine load.
            for mode in ("paths", "reconcile"):
                for size in sizes if repeat % 2 else reversed(sizes):
                    settings, store, target = stores[size]
                    text = target.read_text(encoding="utf-8")
                    first = text.index("\n")
                    target.write_text(f"## edited {mode} {repeat}" + text[first:], "utf-8")
                    paths = [target.relative_to(settings.root_path).as_posix()]
                    started = time.perf_counter()
                    report = sync_root(
                        settings,
                        store=store,
                        embedder=embedder,
                        paths=paths if mode == "paths" else None,
                    )
                    timings[size, mode].append(time.perf_counter() - started)
                    assert report.embedded == 1, report
    finally:
        for _, store, _ in stores.values():
            store.close()
    small, large = sizes
    print(f"(2) one-entry edit (one heading, re-embeds 1 L0, no carry), median of {repeats}:")
    for mode, label in (("paths", "sync of the edited file"), ("reconcile", "full reconcile")):
        a = statistics.median(timings[small, mode]) * 1000
        b = statistics.median(timings[large, mode]) * 1000
        print(
            f"    {label:24s} {small:>6} entries {a:7.1f} ms   {large:>6} entries {b:7.1f} ms"
            f"   ratio {b / a:.2f}  (target <= 1.5)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=5000, help="cold benchmark size")
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="cold runs")
    parser.add_argument("--edits", type=int, default=21, help="edit runs per size and mode")
    parser.add_argument(
        "--quick", action="store_true", help="cold: skip the 'embedder alone' contender"
    )
    parser.add_argument("--no-edit", action="store_true", help="skip (2), the edit cost")
    parser.add_argument(
        "--keep", type=Path, help="cold: keep one indexed root here (for bench_daemon.py --root)"
    )
    parser.add_argument("--model", type=Path, help="offline model folder (default: build one)")
    parser.add_argument(
        "--interleave",
        type=int,
        metavar="N",
        help="cold: one sync, raw fastembed on every Nth chunk in the same run (for 100,000)",
    )
    parser.add_argument(
        "--distinct",
        type=int,
        metavar="K",
        help="with --interleave: L0s recur every K entries, each embedded once; the ratio "
        "is projected from the measured sync work and embedding rate",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="carryd-bench-") as folder:
        work = Path(folder)
        model = args.model or build_test_model(work / "model")
        print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
        print(f"cpus: {os.cpu_count()} (a shared machine: read ratios, not absolute rates)")
        if args.interleave:
            interleaved_throughput(
                work, model, args.entries, args.interleave, args.keep, args.distinct
            )
        else:
            cold_throughput(
                work, model, args.entries, args.repeats, quick=args.quick, keep=args.keep
            )
        if not args.no_edit:
            edit_cost(work, model, (args.small, args.large), args.edits)
    print("load average at end:   {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
