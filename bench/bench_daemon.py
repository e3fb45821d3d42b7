"""Benchmark the running daemon: edit→carry latency at 100 and 10,000 entries, idle RSS and CPU.

Not part of CI. Run from the repo root:

    .venv/bin/python bench/bench_daemon.py [--sizes 100 10000] [--trials 10] [--idle-seconds 60]

For each size it builds a temp memory root with that many entries (one workspace, files of
20 entries, plus PLAN.md and the ledger), starts `carryd run` as a subprocess with the real
offline test model, waits for the start-up reconcile, then edits PLAN.md's current state
`--trials` times and measures:

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


def make_root(root: Path, entries: int) -> None:
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
            a, b, c = (WORDS[(number * k) % len(WORDS)] for k in (1, 7, 13))
            sections.append(
                f"## Note {number}: {a} and {b}\n"
                f"Entry {number} says the {a} talks to the {b} through the {c}; "
                f"revision {number % 97} of file {file_number}.\n"
            )
        folder = workspace / "notes" / f"{file_number // 50:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{file_number:05d}.md").write_text("\n".join(sections))


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


def recall_latencies(root: Path, workspace: str, count: int) -> list[float]:
    """Given a root with a running daemon, return the wall seconds of `count` recall
    requests over its socket (alternately whole root and the workspace)."""
    from carryd.daemon import control
    from carryd.daemon.config import Settings

    settings = Settings(root=str(root))
    control.request(settings, "recall", {"query": "warm up"}, timeout=120)
    seconds = []
    for number in range(count):
        query = QUERIES[number % len(QUERIES)] + f" {number % 13}"
        params = {"query": query, "workspace": workspace if number % 2 else None}
        started = time.perf_counter()
        answer = control.request(settings, "recall", params, timeout=60)
        seconds.append(time.perf_counter() - started)
        assert answer is not None and "hits" in answer, answer
    return seconds


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run_size(
    entries: int | Path, model: Path, trials: int, idle_seconds: float, queries: int
) -> dict:
    label = entries if isinstance(entries, int) else entries.name
    with tempfile.TemporaryDirectory(prefix=f"carryd-bench-{label}-") as temp:
        root = Path(temp) / "root"
        if isinstance(entries, int):
            make_root(root, entries)
            workspace = "proj"
        else:
            workspace = prepare_prebuilt(entries, root)
        env = {**os.environ, "CARRYD_MODEL_PATH": str(model), "HF_HUB_OFFLINE": "1"}
        env.pop("CARRYD_CONFIG", None)
        env["XDG_CONFIG_HOME"] = str(Path(temp) / "config")  # defaults only
        log = (Path(temp) / "daemon.log").open("wb")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(root)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            wait_for(lambda: read_state(root).get("state") == "running", 1800, "the daemon")
            ready_seconds = time.monotonic() - started
            carry = root / ".carryd" / "carry" / f"{workspace}.md"
            plan = root / workspace / "PLAN.md"
            wall: list[float] = []
            daemon_times: list[float] = []
            for trial in range(trials):
                token = f"t-{entries}-{trial}"
                syncs_before = read_state(root).get("syncs", 0)
                begin = time.monotonic()
                plan.write_text(PLAN.format(token=token))
                wait_for(lambda t=token: t in carry.read_text(), 60, "the carry")
                wall.append(time.monotonic() - begin)
                state = wait_for(
                    lambda n=syncs_before: (s := read_state(root)).get("syncs", 0) > n and s,
                    60,
                    "daemon.json",
                )
                daemon_times.append(state["last_sync"]["seconds"])
                time.sleep(0.5)  # let the next trial start from an idle daemon
            state = read_state(root)
            counts_entries = state.get("last_sync", {}).get("entries")
            time.sleep(2.0)
            cpu_before, idle_start = cpu_seconds(process.pid), time.monotonic()
            time.sleep(idle_seconds)
            cpu_used = cpu_seconds(process.pid) - cpu_before
            idle_elapsed = time.monotonic() - idle_start
            idle_rss = rss_kib(process.pid)
            latencies = recall_latencies(root, workspace, queries) if queries else [0.0]
            result = {
                "entries": label,
                "indexed_entries": counts_entries,
                "ready_seconds": round(ready_seconds, 2),
                "wall_median_s": round(statistics.median(wall), 4),
                "wall_min_s": round(min(wall), 4),
                "daemon_median_s": round(statistics.median(daemon_times), 4),
                "idle_rss_mib": round(idle_rss / 1024, 1),
                "rss_after_queries_mib": round(rss_kib(process.pid) / 1024, 1),
                "recall_p50_ms": round(1000 * statistics.median(latencies), 1),
                "recall_p95_ms": round(1000 * percentile(latencies, 0.95), 1),
                "daemon_times_ms": [round(1000 * t, 1) for t in daemon_times],
                "load_average": [round(x, 1) for x in os.getloadavg()],
                "idle_cpu_percent": round(100 * cpu_used / idle_elapsed, 3),
                "idle_seconds": round(idle_elapsed, 1),
                "embedded_last": state.get("last_sync", {}).get("embedded"),
            }
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            log.close()
        result["exit_code"] = code
        return result


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
    args = parser.parse_args()
    model = args.model or build_test_model(Path(tempfile.gettempdir()) / "carryd-bench-model")
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
    results = []
    for size in [*args.sizes, *args.root]:
        result = run_size(size, model, args.trials, args.idle_seconds, args.queries)
        results.append(result)
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
