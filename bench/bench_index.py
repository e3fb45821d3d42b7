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
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from carryd.daemon.config import ModelSettings, Settings  # noqa: E402
from carryd.daemon.indexing import load_embedder_for, sync_root  # noqa: E402
from carryd.index.store import Store  # noqa: E402
from tests.testmodel import build_test_model  # noqa: E402

WORDS = (
    "ledger carry vector sqlite handoff plan recall anchor budget index watcher daemon socket "
    "embedding abstract heading sentence workspace memory root fallback truncate redact token "
    "compaction threshold prefix cache latency throughput schema migration retry timeout"
).split()
PER_FILE = 20


def build_root(root: Path, entries: int, seed: int = 7) -> Path:
    """Given a folder and an entry count, write a memory root of that many entries."""
    rng = random.Random(seed)
    files = max(1, entries // PER_FILE)
    for number in range(files):
        folder = root / f"ws{number % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        lines: list[str] = []
        for section in range(PER_FILE):
            heading = " ".join(rng.choices(WORDS, k=rng.randint(3, 7)))
            sentence = " ".join(rng.choices(WORDS, k=rng.randint(6, 12))).capitalize() + "."
            detail = " ".join(rng.choices(WORDS, k=rng.randint(20, 60))) + "."
            lines += [f"## {heading} {number}-{section}", "", sentence + " " + detail, ""]
        (folder / f"notes-{number:04d}.md").write_text("\n".join(lines), encoding="utf-8")
    return root


def settings_for(root: Path, model: Path) -> Settings:
    return dataclasses.replace(
        Settings(root=str(root)), model=dataclasses.replace(ModelSettings(), model_path=str(model))
    )


def cold_throughput(work: Path, model: Path, entries: int, repeats: int) -> None:
    template = build_root(work / "cold-template", entries)
    embedder, degraded = load_embedder_for(settings_for(template, model))
    assert embedder is not None, degraded
    raw_model = embedder._model  # noqa: SLF001 — the very fastembed TextEmbedding we wrap
    ours, raw, alone = [], [], []
    texts: list[str] = []
    for repeat in range(repeats):
        root = work / f"cold-{repeat}"
        shutil.copytree(template, root)
        settings = settings_for(root, model)
        started = time.perf_counter()
        sync_root(settings, embedder=embedder)
        ours.append(time.perf_counter() - started)
        prefix = embedder.identity.passage_prefix
        if not texts:
            with Store.open(settings.db_path) as store:
                texts = [prefix + row.l0 for row in store.entries()]
        started = time.perf_counter()
        list(raw_model.embed(texts))
        raw.append(time.perf_counter() - started)
        started = time.perf_counter()
        embedder.embed_passages([row_l0[len(prefix) :] for row_l0 in texts])
        alone.append(time.perf_counter() - started)
        shutil.rmtree(root)
    ours_rate = len(texts) / statistics.median(ours)
    raw_rate = len(texts) / statistics.median(raw)
    print(f"(1) cold indexing, {len(texts)} entries, median of {repeats}:")
    print(
        f"    carryd sync_root      {ours_rate:8.1f} entries/s  ({statistics.median(ours):.2f} s)"
    )
    print(f"    raw fastembed embed() {raw_rate:8.1f} texts/s    ({statistics.median(raw):.2f} s)")
    alone_rate = len(texts) / statistics.median(alone)
    print(
        f"    carryd embedder alone {alone_rate:8.1f} texts/s    ({statistics.median(alone):.2f} s)"
        "  (length-sorted batches)"
    )
    print(f"    ratio to raw fastembed {ours_rate / raw_rate:.2f}  (target >= 0.90)")
    print(
        f"    ratio to the embedding alone {ours_rate / alone_rate:.2f}  "
        "(what scan, parse, tokenize and SQLite cost)"
    )


def edit_cost(work: Path, model: Path, sizes: tuple[int, int], repeats: int) -> None:
    embedder, degraded = load_embedder_for(settings_for(work, model))
    assert embedder is not None, degraded
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        root = build_root(work / f"edit-{size}", size)
        settings = settings_for(root, model)
        started = time.perf_counter()
        with Store.open(settings.db_path) as store:
            sync_root(settings, store=store, embedder=embedder)
            built = time.perf_counter() - started
            target = root / "ws0" / "notes-0000.md"
            relative = target.relative_to(root).as_posix()
            timings: dict[str, list[float]] = {"paths": [], "reconcile": []}
            for repeat in range(repeats):
                for mode in ("paths", "reconcile"):
                    text = target.read_text(encoding="utf-8")
                    first = text.index("\n")
                    target.write_text(f"## edited {mode} {repeat}" + text[first:], "utf-8")
                    paths = [relative] if mode == "paths" else None
                    started = time.perf_counter()
                    report = sync_root(settings, store=store, embedder=embedder, paths=paths)
                    seconds = time.perf_counter() - started
                    assert report.embedded == 1, report
                    timings[mode].append(seconds)
        results[size] = {mode: statistics.median(values) for mode, values in timings.items()}
        print(f"    built the {size}-entry root in {built:.1f} s")
    small, large = sizes
    print(f"(2) one-entry edit (one heading, re-embeds 1 L0, no carry), median of {repeats}:")
    for mode, label in (("paths", "sync of the edited file"), ("reconcile", "full reconcile")):
        a, b = results[small][mode] * 1000, results[large][mode] * 1000
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
    parser.add_argument("--edits", type=int, default=9, help="edit runs per size and mode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="carryd-bench-") as folder:
        work = Path(folder)
        model = build_test_model(work / "model")
        cold_throughput(work, model, args.entries, args.repeats)
        edit_cost(work, model, (args.small, args.large), args.edits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
