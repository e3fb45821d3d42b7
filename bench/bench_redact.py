"""Benchmark redaction on adversarial lines against ordinary prose of the same size.

Not part of CI. Run from the repo root:

    .venv/bin/python bench/bench_redact.py [--size 1000000] [--timeout 120]

Each input is `--size` characters: ordinary prose (carryd's own README and docs repeated, with
their line breaks) and lines built to make a backtracking regex engine go quadratic — a long
run after a trigger (`" -u " + "=" * N`, `"token=" * N`, `"mysql -p" * N`, `"key: " * N`, …),
and megabyte-long base64, hex and word runs. Each is redacted in a child process (so a case
that never finishes is stopped at `--timeout` and reported, instead of hanging the bench),
best of `--runs`, and printed as seconds and as a ratio to the prose measured in the same run.

The bar (issue 22): every adversarial input within 3x of prose.
"""

from __future__ import annotations

import argparse
import base64
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BAR = 3.0


def _prose(size: int) -> str:
    text = "".join(
        (REPO / name).read_text(encoding="utf-8")
        for name in ("README.md", "docs/layout.md", "config.example.toml")
    )
    return (text * (size // len(text) + 1))[:size]


def _repeat(piece: str, size: int, head: str = "") -> str:
    return (head + piece * (size // len(piece) + 1))[:size]


def inputs(size: int) -> dict[str, str]:
    """Given a size, return the named inputs of that many characters."""
    rng = random.Random(22)
    return {
        "prose": _prose(size),
        "' -u ' + '=' * N": _repeat("=", size, " -u "),
        "'token=' * N": _repeat("token=", size),
        "'mysql -p' * N": _repeat("mysql -p", size),
        "'key: ' * N": _repeat("key: ", size),
        "'key: \\n' * N (lines)": _repeat("key: \n", size),
        "'password: ' * N": _repeat("password: ", size),
        "'密码：' * N": _repeat("密码：", size),
        "'Authorization: Bearer ' * N": _repeat("Authorization: Bearer ", size),
        "'pass:' * N": _repeat("pass:", size),
        "'ghp_' * N": _repeat("ghp_", size),
        "'--password ' * N": _repeat("--password ", size),
        "'x://' + 'a:' * N": _repeat("a:", size, "x://"),
        "'Cookie: ' + 'a=b;' * N": _repeat("a=b;", size, "Cookie: "),
        "'word ' * N (seed phrase)": _repeat("word ", size, "seed phrase: "),
        "'[1,' * N": _repeat("1,", size, "["),
        "'-----BEGIN PRIVATE KEY-----' * N": _repeat("-----BEGIN PRIVATE KEY-----", size),
        "long base64 line": base64.b64encode(rng.randbytes(size * 3 // 4)).decode()[:size],
        "long hex line": rng.randbytes(size // 2 + 1).hex()[:size],
        "base64 lines of 64": _repeat(base64.b64encode(rng.randbytes(48)).decode() + "\n", size),
        "'a' * N": "a" * size,
    }


def _time_one(name: str, size: int, runs: int) -> float:
    """Given an input's name, return the best of `runs` redaction times in seconds."""
    from carryd.index.redact import redact

    redact("warm up: password: abc123x")  # the first call loads the rules
    text = inputs(size)[name]
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - started)
    return best


def _measure(name: str, size: int, runs: int, timeout: float) -> float | None:
    """Given an input's name, return its time measured in a child process (None: timed out)."""
    command = [sys.executable, __file__, "--child", name, "--size", str(size), "--runs", str(runs)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child is not None:
        print(_time_one(arguments.child, arguments.size, arguments.runs))
        return 0
    names = list(inputs(1000))
    prose = _measure("prose", arguments.size, arguments.runs, arguments.timeout)
    assert prose is not None, "prose itself timed out"
    print(f"{'input':40s} {'seconds':>9s} {'x prose':>8s}")
    print(f"{'prose (' + str(arguments.size) + ' chars)':40s} {prose:9.3f} {1.0:8.2f}")
    worst = 0.0
    for name in names[1:]:
        seconds = _measure(name, arguments.size, arguments.runs, arguments.timeout)
        if seconds is None:
            print(f"{name:40s} {'>' + str(arguments.timeout):>9s} {'TIMEOUT':>8s}")
            worst = float("inf")
            continue
        ratio = seconds / prose
        worst = max(worst, ratio)
        print(f"{name:40s} {seconds:9.3f} {ratio:8.2f}{'  over the bar' if ratio > BAR else ''}")
    print(f"worst ratio {worst:.2f} (bar {BAR:.0f}x): {'met' if worst <= BAR else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
