"""Benchmark the running daemon: edit→carry latency at 100 and 10,000 entries, idle RSS and CPU.

Not part of CI. Run from the repo root:

    .venv/bin/python bench/bench_daemon.py [--sizes 100 10000] [--trials 10] [--idle-seconds 60]

For each size it builds a temp memory root with that many entries (one workspace, files of
20 entries, plus PLAN.md and the ledger), starts `carryd run` as a subprocess with the real
offline test model, waits for the start-up reconcile, then edits PLAN.md's current state
`--trials` times and measures (all sizes' daemons run at once and take turns, edit by edit
and query by query, so each ratio compares the same minutes of machine load):

- wall latency: from the write until the new token is in the carry file (includes the
  debounce quiet period, `daemon.debounce_ms`, 300 ms by default);
- daemon time: the batch's own sync + carry duration, as the daemon records it in daemon.json.

The bar (DESIGN.md): the 10,000-entry latency within 1.5× of the 100-entry one. After the
trials the daemon is left idle for `--idle-seconds` and its RSS (VmRSS, /proc/<pid>/status)
and CPU (utime+stime, /proc/<pid>/stat) are read. Then `--queries` recall requests go to the
warm daemon over its socket (the query embedding included, as a host's `carryd recall` sees
it) and their p50/p95 are printed.

Large roots: `--root DIR` (repeatable) benchmarks an already indexed root instead of a
generated size — a copy of it, so the original stays as it was. Make one with this bench's
generator and `carryd index`, or keep bench_index.py's cold root (`--keep DIR`): at 100,000
entries a cold index takes most of an hour on a shared machine, too long to repeat per run.
The root's workspace for the edits is `proj` when it has one, else its first workspace;
PLAN.md and the ledger are added to it when missing.

The machine these run on is shared: the load average is printed with every size, and the
ratios (10,000 or 100,000 against 100, same run) are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.testmodel import build_test_model  # noqa: E402

WORDS = (
    "cache parser socket ledger watcher index vector lexical carry budget anchor plan "
    "sqlite embed token fusion recall daemon schedule archive"
).split()

PLAN = "# Plan\n\n## Current state\n- benchmark step {token}\n\n## History\n- started\n"
LEDGER = (
    "# Handoff ledger\n\n## Task status\n- measuring\n\n## Goal\n- keep carries fresh\n\n"
    "## Tried approaches and failure reasons\n- none yet\n\n## Progress and next steps\n"
    "- run the benchmark\n"
)


def make_root(root: Path, entries: int, distinct: int | None = None) -> None:
    workspace = root / "proj"
    (workspace / "handoff").mkdir(parents=True)
    (workspace / "PLAN.md").write_text(PLAN.format(token="t-start"))
    (workspace / "handoff" / "LEDGER.md").write_text(LEDGER)
    per_file = 20
    for file_number in range((entries + per_file - 1) // per_file):
        sections = []
        for entry in range(per_file):
            number = file_number * per_file + entry
            if number >= entries:
                break
            # With `distinct`, note N repeats note N % distinct word for word (another file).
            key = number if distinct is None else number % distinct
            a, b, c = (WORDS[(key * k) % len(WORDS)] for k in (1, 7, 13))
            sections.append(
                f"## Note {key}: {a} and {b}\n"
                f"Entry {key} says the {a} talks to the {b} through the {c}; "
                f"revision {key % 97} of file {key // per_file}.\n"
            )
        folder = workspace / "notes" / f"{file_number // 50:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{file_number:05d}.md").write_text("\n".join(sections))


def build_indexed_root(dest: Path, entries: int, distinct: int, model: Path) -> None:
    """Write a root of `entries` entries whose L0s repeat every `distinct` notes, and index
    it with the real sync and the real model, embedding each distinct L0 text once (the
    vectors stored are the model's for exactly those texts). For a 100,000-entry root in
    minutes: a cold index of 100,000 distinct L0s is bench_index.py's job, and takes most of
    an hour on a shared machine."""
    import dataclasses

    import numpy as np
    from carryd.daemon.config import ModelSettings, Settings
    from carryd.daemon.indexer.indexing import load_embedder_for, sync_root

    make_root(dest, entries, distinct)
    settings = dataclasses.replace(
        Settings(root=str(dest)),
        model=dataclasses.replace(ModelSettings(), model_path=str(model)),
    )
    embedder, degraded = load_embedder_for(settings)
    assert embedder is not None, degraded
    cache: dict[str, np.ndarray] = {}

    class OncePerText:
        identity = embedder.identity

        def embed_passages(self, texts):  # type: ignore[no-untyped-def]
            missing = sorted({text for text in texts if text not in cache})
            if missing:
                cache.update(zip(missing, embedder.embed_passages(missing), strict=True))
            return np.stack([cache[text] for text in texts])

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return embedder.embed_query(text)

    started = time.monotonic()
    report = sync_root(settings, embedder=OncePerText())
    print(
        json.dumps(
            {
                "built": str(dest),
                "entries": report.entries,
                "distinct_l0s_embedded": len(cache),
                "seconds": round(time.monotonic() - started, 1),
            }
        ),
        flush=True,
    )


def read_state(root: Path) -> dict:
    try:
        return json.loads((root / ".carryd" / "daemon.json").read_text())
    except (OSError, ValueError):
        return {}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of stat(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.005)


QUERIES = [
    "how does the cache talk to the parser",
    "socket ledger",
    "vector index budget",
    "which note says the daemon talks to the watcher",
    "revision 42 of the recall file",
    "embed token fusion",
    "schedule archive",
    "plan anchor carry",
]


def prepare_prebuilt(source: Path, root: Path) -> str:
    """Given an indexed root, copy it to `root` and return the workspace the edits go to
    (PLAN.md and the ledger added when it has none)."""
    shutil.copytree(source, root, symlinks=True)
    workspaces = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    workspace = "proj" if "proj" in workspaces else workspaces[0]
    plan = root / workspace / "PLAN.md"
    if not plan.exists():
        plan.write_text(PLAN.format(token="t-start"))
    ledger = root / workspace / "handoff" / "LEDGER.md"
    if not ledger.exists():
        ledger.parent.mkdir(parents=True, exist_ok=True)
        ledger.write_text(LEDGER)
    return workspace


def recall_latencies(root: Path, workspace: str, count: int, first: int = 0) -> list[float]:
    """Given a root with a running daemon, return the wall seconds of `count` recall
    requests over its socket (alternately whole root and the workspace)."""
    from carryd.daemon import control
    from carryd.daemon.config import Settings

    settings = Settings(root=str(root))
    seconds = []
    for number in range(first, first + count):
        # Every request a text of its own: the daemon keeps query vectors by text, and a
        # repeated text would time the cache, not the embedding a new question costs.
        query = QUERIES[number % len(QUERIES)] + f" {number}"
        params = {"query": query, "workspace": workspace if number % 2 else None}
        started = time.perf_counter()
        answer = control.request(settings, "recall", params, timeout=60)
        seconds.append(time.perf_counter() - started)
        assert answer is not None and "hits" in answer, answer
    return seconds


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Running:
    """One size's root and its daemon, started and measured alongside the other sizes."""

    def __init__(self, entries: int | Path, model: Path, temp: Path) -> None:
        self.label = entries if isinstance(entries, int) else entries.name
        self.root = temp / f"root-{self.label}"
        if isinstance(entries, int):
            make_root(self.root, entries)
            self.workspace = "proj"
        else:
            self.workspace = prepare_prebuilt(entries, self.root)
        env = {**os.environ, "CARRYD_MODEL_PATH": str(model), "HF_HUB_OFFLINE": "1"}
        env.pop("CARRYD_CONFIG", None)
        env["XDG_CONFIG_HOME"] = str(temp / f"config-{self.label}")  # defaults only
        self.log = (temp / f"daemon-{self.label}.log").open("wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(self.root)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.ready_seconds = 0.0
        self.wall: list[float] = []
        self.daemon_times: list[float] = []
        self.latencies: list[float] = []
        self.result: dict = {}

    def wait_ready(self) -> None:
        wait_for(lambda: read_state(self.root).get("state") == "running", 3600, "the daemon")
        self.ready_seconds = time.monotonic() - self.started

    def edit(self, trial: int) -> None:
        """Edit PLAN.md's current state; record the wall time to the carry and the daemon's
        own time for that batch (daemon.json)."""
        carry = self.root / ".carryd" / "carry" / f"{self.workspace}.md"
        token = f"t-{self.label}-{trial}"
        syncs_before = read_state(self.root).get("syncs", 0)
        begin = time.monotonic()
        (self.root / self.workspace / "PLAN.md").write_text(PLAN.format(token=token))
        wait_for(lambda: token in carry.read_text(), 120, "the carry")
        self.wall.append(time.monotonic() - begin)
        state = wait_for(
            lambda: (s := read_state(self.root)).get("syncs", 0) > syncs_before and s,
            120,
            "daemon.json",
        )
        self.daemon_times.append(state["last_sync"]["seconds"])

    def idle(self, seconds: float) -> None:
        cpu_before, idle_start = cpu_seconds(self.process.pid), time.monotonic()
        time.sleep(seconds)
        cpu_used = cpu_seconds(self.process.pid) - cpu_before
        idle_elapsed = time.monotonic() - idle_start
        state = read_state(self.root)
        self.result = {
            "entries": self.label,
            "indexed_entries": state.get("last_sync", {}).get("entries"),
            "ready_seconds": round(self.ready_seconds, 2),
            "wall_median_s": round(statistics.median(self.wall), 4),
            "wall_min_s": round(min(self.wall), 4),
            "daemon_median_s": round(statistics.median(self.daemon_times), 4),
            "daemon_times_ms": [round(1000 * t, 1) for t in self.daemon_times],
            "idle_rss_mib": round(rss_kib(self.process.pid) / 1024, 1),
            "idle_cpu_percent": round(100 * cpu_used / idle_elapsed, 3),
            "idle_seconds": round(idle_elapsed, 1),
            "embedded_last": state.get("last_sync", {}).get("embedded"),
        }

    def finish(self) -> dict:
        if self.latencies:
            self.result["recall_p50_ms"] = round(1000 * statistics.median(self.latencies), 1)
            self.result["recall_p95_ms"] = round(1000 * percentile(self.latencies, 0.95), 1)
            self.result["rss_after_queries_mib"] = round(rss_kib(self.process.pid) / 1024, 1)
        self.result["load_average"] = [round(x, 1) for x in os.getloadavg()]
        return self.result

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.log.close()
        self.result["exit_code"] = code


def run_sizes(
    sizes: list[int | Path], model: Path, trials: int, idle_seconds: float, queries: int
) -> list[dict]:
    """Start every size's daemon, then alternate them edit by edit and query by query, so
    every ratio compares minutes of the same machine load."""
    with tempfile.TemporaryDirectory(prefix="carryd-bench-daemon-") as folder:
        temp = Path(folder)
        running: list[Running] = []
        try:
            for size in sizes:
                running.append(Running(size, model, temp))
            for one in running:
                one.wait_ready()
            time.sleep(2.0)
            for trial in range(trials):
                for one in running if trial % 2 else reversed(running):
                    one.edit(trial)
                    time.sleep(0.5)  # let the next edit start from an idle machine
            time.sleep(2.0)
            for one in running:
                one.idle(idle_seconds)
            for one in running:
                recall_latencies(one.root, one.workspace, 1, 10**6)  # warm up: first query
            for number in range(queries):
                for one in running if number % 2 else reversed(running):
                    one.latencies += recall_latencies(one.root, one.workspace, 1, number)
            return [one.finish() for one in running]
        finally:
            for one in running:
                one.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 10_000])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--model", type=Path, help="offline model folder (default: build one)")
    parser.add_argument(
        "--root",
        type=Path,
        action="append",
        default=[],
        help="an indexed root to benchmark (a copy of it), after the --sizes (repeatable)",
    )
    parser.add_argument("--queries", type=int, default=200, help="recall requests per size")
    parser.add_argument(
        "--build-root",
        nargs=3,
        metavar=("DIR", "ENTRIES", "DISTINCT"),
        help="only write and index a root for --root: ENTRIES entries, DISTINCT distinct L0s",
    )
    args = parser.parse_args()
    model = args.model or build_test_model(Path(tempfile.gettempdir()) / "carryd-bench-model")
    if args.build_root:
        folder, entries, distinct = args.build_root
        build_indexed_root(Path(folder), int(entries), int(distinct), model)
        return 0
    print(
        json.dumps(
            {
                "cpus": os.cpu_count(),
                "load_average": [round(x, 1) for x in os.getloadavg()],
                "note": "a shared machine: read the ratios within this run",
            }
        ),
        flush=True,
    )
    results = run_sizes(
        [*args.sizes, *args.root], model, args.trials, args.idle_seconds, args.queries
    )
    for result in results:
        print(json.dumps(result), flush=True)
    small = results[0] if results else None
    for large in results[1:]:
        assert small is not None
        print(
            json.dumps(
                {
                    "sizes": [small["entries"], large["entries"]],
                    "wall_ratio": round(large["wall_median_s"] / small["wall_median_s"], 3),
                    "edit_work_ratio": round(
                        large["daemon_median_s"] / small["daemon_median_s"], 3
                    ),
                    "target": "daemon work within 1.5x",
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
