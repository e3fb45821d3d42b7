"""Benchmark what a host pays per hook call: the status line, the prompt-submit and
post-tool-use hooks (the write-side triggers) and a SessionStart with a fresh carry — each a
whole `carryd` process, as the host runs it — and how long `carryd mcp` takes to answer
`initialize` from a cold start.

Not part of CI. Run from the repo root:

    .venv/bin/python bench/bench_hooks.py [--runs 30] [--carryd .venv/bin/carryd]

It copies `examples/memory` to a temp root, indexes it and writes its carries with the real
offline test model, compiles carryd's bytecode (a wheel install ships it; an editable install
with PYTHONDONTWRITEBYTECODE would compile every module on every call), then runs each hook
`--runs` times after one warm-up, with the hosts' documented stdin shapes, and prints the
median / min / max wall time and CPU time (user + sys of the child, from getrusage).

The bars (issue 21): each per-message hook ≤ 2× a bare `python -c pass` measured in the same
run (`ratio`: median wall time over the bare interpreter's; `cpu ratio`: the same for the
child's CPU time, which waiting for a core does not inflate), and `carryd mcp`
answering `initialize` in ≤ 0.5 s. Wall time on a loaded machine is inflated by waiting for
a core: read the CPU column too, and the load average printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.testmodel import build_test_model  # noqa: E402

SESSION = "0c0ffee0-1234-4abc-9def-000000000001"


def hook_inputs(root: Path) -> dict[str, tuple[list[str], str]]:
    """The hook commands and their stdin, in the shapes the hosts document."""
    cwd = str(root / "webshop")
    status = {
        "hook_event_name": "Status",
        "session_id": SESSION,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
        "workspace": {"current_dir": cwd, "project_dir": cwd},
        "context_window": {"context_window_size": 200000, "used_percentage": 62.0},
    }
    prompt = {
        "session_id": SESSION,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "go on with the refund fix",
    }
    tool = {
        "session_id": SESSION,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": "3 passed"},
    }
    start = {
        "session_id": SESSION,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "source": "clear",
    }
    return {
        "status line": (["claude-code", "statusline"], json.dumps(status)),
        "prompt-submit": (["claude-code", "prompt-submit"], json.dumps(prompt)),
        "post-tool-use": (["claude-code", "post-tool-use"], json.dumps(tool)),
        "session-start (fresh carry)": (["claude-code", "session-start"], json.dumps(start)),
    }


def measure(command: list[str], stdin: str, runs: int, env: dict[str, str]) -> dict[str, float]:
    """Run a command `runs` times (after one warm-up); return median/min/max wall and CPU ms."""
    walls, cpus = [], []
    for run in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            command, input=stdin.encode(), capture_output=True, env=env, check=False
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{command} failed: {done.stderr.decode()}")
        if run == 0:
            continue
        walls.append(wall * 1000)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return {
        "wall_median": statistics.median(walls),
        "wall_min": min(walls),
        "wall_max": max(walls),
        "cpu_median": statistics.median(cpus),
    }


def measure_mcp_initialize(carryd: str, root: Path, runs: int, env: dict[str, str]) -> list[float]:
    """Start `carryd mcp` `runs` times (after one warm-up); return the wall ms from the start
    of the process to the `initialize` answer."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    times = []
    for run in range(runs + 1):
        start = time.perf_counter()
        process = subprocess.Popen(
            [carryd, "mcp", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        elapsed = time.perf_counter() - start
        process.stdin.close()
        process.wait(timeout=60)
        process.stdout.close()
        if "result" not in answer:
            raise SystemExit(f"carryd mcp did not initialize: {answer}")
        if run:
            times.append(elapsed * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--carryd", default=str(Path(sys.executable).parent / "carryd"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="carryd-bench-hooks-"))
    try:
        model = build_test_model(work / "model")
        root = work / "memory"
        shutil.copytree(REPO / "examples" / "memory", root)
        env = dict(os.environ, CARRYD_MODEL_PATH=str(model), XDG_CONFIG_HOME=str(work / "cfg"))
        env.pop("CARRYD_HOOKS_OFF", None)
        for step in (["index", "--root", str(root)], ["carry", "--root", str(root)]):
            subprocess.run([args.carryd, *step], env=env, check=True, capture_output=True)
        compile_env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "daemon", "index", "carry"],
            cwd=REPO,
            env=compile_env,
            check=True,
            capture_output=True,
        )
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{os.cpu_count()} cores; {args.runs} runs each after one warm-up")  # fmt: skip
        print(
            f"{'hook':32} {'wall median':>12} {'min':>8} {'max':>8} {'cpu median':>11} {'ratio':>6}"
        )
        # What any Python process costs here: the floor under every hook figure below.
        bare = measure([sys.executable, "-c", "pass"], "", args.runs, env)
        print(
            f"{'(python -c pass)':32} {bare['wall_median']:9.1f} ms {bare['wall_min']:5.1f} ms "
            f"{bare['wall_max']:5.1f} ms {bare['cpu_median']:8.1f} ms"
        )
        for name, (words, stdin) in hook_inputs(root).items():
            command = [args.carryd, "hook", *words, "--root", str(root)]
            result = measure(command, stdin, args.runs, env)
            ratio = result["wall_median"] / bare["wall_median"]
            cpu_ratio = result["cpu_median"] / bare["cpu_median"]
            print(
                f"{name:32} {result['wall_median']:9.1f} ms {result['wall_min']:5.1f} ms "
                f"{result['wall_max']:5.1f} ms {result['cpu_median']:8.1f} ms {ratio:5.2f}x "
                f"{cpu_ratio:8.2f}x"
            )
        mcp = measure_mcp_initialize(args.carryd, root, max(5, args.runs // 3), env)
        print(
            f"{'mcp initialize (cold start)':32} {statistics.median(mcp):9.1f} ms "
            f"{min(mcp):5.1f} ms {max(mcp):5.1f} ms {'':>11} "
            f"{statistics.median(mcp) / bare['wall_median']:5.2f}x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
