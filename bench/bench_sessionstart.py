"""How long a SessionStart hook takes with a fresh carry and no daemon (issue 10 item 7).

The target: ≤ 150 ms median wall time for `carryd hook claude-code session-start`, the way a
host runs it (the venv's `carryd` script, a new process, JSON on stdin, cwd = the project),
on a root whose carry the daemon (or `carryd carry`) has written — full carry AND the
pre-built inline variant — and with no daemon running. Such a hook reads a file and loads no
model; this bench checks that too (the answer is the pre-built inline text, byte for byte,
and a run in one process leaves fastembed and onnxruntime out of `sys.modules`).

It prints wall and CPU medians (the hook process's user + system time), their spread, the
machine's load average and the same figures for a bare `python -c pass`, so a loaded, shared
machine can be told from a slow hook. Not part of CI.

    .venv/bin/python bench/bench_sessionstart.py [--scenario bench/p9/scenarios/X] [--runs 30]
"""

from __future__ import annotations

import argparse
import contextlib
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

# Run as `python bench/bench_sessionstart.py`: bench/ is on sys.path, and the P9 bench already
# knows how to build the measured checkout's test model.
from bench_p9 import build_model

HERE = Path(__file__).resolve().parent
DEFAULT_SCENARIO = HERE / "p9" / "scenarios" / "mixed-payments-recon"  # the longest ledger


def carryd_command() -> list[str]:
    """The command a host runs: the venv's `carryd` script when there is one."""
    script = Path(sys.executable).parent / "carryd"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "carryd.daemon.cli"]


def timed(
    command: list[str], *, env: dict[str, str], stdin: str, cwd: Path
) -> tuple[float, float, str]:
    """Run once; return (wall s, CPU s of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, env=env, input=stdin, capture_output=True, text=True, cwd=cwd, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} exited {done.returncode}: {done.stderr[-500:]}")
    return wall, cpu, done.stdout


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p10_ms": round(ordered[len(ordered) // 10] * 1000, 1),
        "p90_ms": round(ordered[(len(ordered) * 9) // 10] * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
    }


IN_PROCESS_CHECK = """
import io, json, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))
from carryd.daemon.cli.dispatch import main
main(["hook", "claude-code", "session-start", "--root", sys.argv[1]])
heavy = sorted(m for m in ("fastembed", "onnxruntime", "tokenizers") if m in sys.modules)
print(json.dumps({"heavy_modules": heavy}), file=sys.stderr)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--model-cache", type=Path, help="where to build the test model")
    args = parser.parse_args(argv)

    scenario = json.loads((args.scenario / "scenario.json").read_text("utf-8"))
    workspace = scenario["workspace"]
    cache = args.model_cache or Path(tempfile.gettempdir()) / f"carryd-p9-model-{os.getuid()}"
    model = build_model(cache)
    with tempfile.TemporaryDirectory(prefix="carryd-ss-") as work_name:
        work = Path(work_name)
        root = work / "root"
        shutil.copytree(args.scenario / "root", root)
        config = work / "config.toml"
        config.write_text("# empty: carryd's defaults\n", "utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CARRYD_")}
        env.update({"CARRYD_MODEL_PATH": str(model), "CARRYD_CONFIG": str(config)})
        command = carryd_command()
        for step in (["index", "--root", str(root)], ["carry", "--root", str(root)]):
            subprocess.run(
                [*command, *step], env=env, capture_output=True, text=True, check=True, cwd=work
            )
        carry_dir = root / ".carryd" / "carry"
        manifest = json.loads((carry_dir / f"{workspace}.json").read_text("utf-8"))
        full = (carry_dir / f"{workspace}.md").read_text("utf-8")
        inline_path = carry_dir / f"{workspace}.inline.md"
        inline = inline_path.read_text("utf-8") if inline_path.is_file() else None

        hook_input = json.dumps(
            {
                "session_id": "bench",
                "hook_event_name": "SessionStart",
                "source": "clear",
                "cwd": str(root / workspace),
            }
        )
        hook = [*command, "hook", "claude-code", "session-start", "--root", str(root)]
        _, _, first = timed(hook, env=env, stdin=hook_input, cwd=root / workspace)
        context = json.loads(first)["hookSpecificOutput"]["additionalContext"]
        used = (
            "inline"
            if inline is not None and context.startswith(inline.rstrip("\n"))
            else "full"
            if context.startswith(full.rstrip("\n"))
            else "re-planned"
        )
        check = subprocess.run(
            [sys.executable, "-c", IN_PROCESS_CHECK, str(root), hook_input],
            env=env,
            capture_output=True,
            text=True,
            cwd=root / workspace,
            check=False,
        )
        heavy = None
        for line in check.stderr.splitlines():
            with contextlib.suppress(ValueError):
                heavy = json.loads(line)["heavy_modules"]

        load_before = os.getloadavg()
        hook_wall: list[float] = []
        hook_cpu: list[float] = []
        bare_wall: list[float] = []
        bare_cpu: list[float] = []
        for _ in range(args.runs):  # interleaved: both see the same load
            wall, cpu, _ = timed(hook, env=env, stdin=hook_input, cwd=root / workspace)
            hook_wall.append(wall)
            hook_cpu.append(cpu)
            wall, cpu, _ = timed([sys.executable, "-c", "pass"], env=env, stdin="", cwd=work)
            bare_wall.append(wall)
            bare_cpu.append(cpu)
        load_after = os.getloadavg()

    result = {
        "scenario": scenario["id"],
        "runs": args.runs,
        "command": " ".join(Path(part).name if i == 0 else part for i, part in enumerate(hook)),
        "full_carry_chars": len(full),
        "inline_chars": len(inline) if inline is not None else None,
        "manifest_inline": manifest.get("inline"),
        "answer_from": used,
        "answer_chars": len(context),
        "heavy_modules_after_hook": heavy,
        "hook_wall": summary(hook_wall),
        "hook_cpu": summary(hook_cpu),
        "python_pass_wall": summary(bare_wall),
        "python_pass_cpu": summary(bare_cpu),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "target_ms": 150,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"SessionStart, fresh carry, no daemon — {result['scenario']}, {args.runs} runs")
    print(f"  answer from: {used} ({len(context)} chars; full carry {len(full)} chars)")
    print(f"  heavy modules loaded by the hook: {heavy}")
    for name in ("hook_wall", "hook_cpu", "python_pass_wall", "python_pass_cpu"):
        s = result[name]
        print(
            f"  {name:<17} median {s['median_ms']:7.1f} ms   p10 {s['p10_ms']:7.1f}   "
            f"p90 {s['p90_ms']:7.1f}   min {s['min_ms']:7.1f}"
        )
    print(
        f"  load average {result['loadavg_before']} → {result['loadavg_after']} "
        f"on {result['cpus']} CPUs; target ≤ 150 ms median wall"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
