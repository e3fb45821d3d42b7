"""What the fault tests share: a memory root to torment, a real `carryd run` subprocess, the
CLI as a subprocess, and the checks every trial ends with (verify clean, carries intact)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from carryd.daemon.config import Settings, load_settings
from carryd.daemon.control import request
from carryd.daemon.indexer.index_lock import holder
from carryd.daemon.indexer.verifying import verify_root
from carryd.daemon.layout import check_carry, list_workspaces

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 90.0
WORKSPACES = ("proj", "ops")
WORDS = "ledger carry vector sqlite handoff plan recall anchor budget index".split()


def note_text(number: int, version: int, sections: int = 8) -> str:
    lines = [f"Note {number} version {version} opens with a sentence.", ""]
    for section in range(sections):
        word = WORDS[(number + section + version) % len(WORDS)]
        lines += [
            f"## Topic {number}-{section} on {word} v{version % 3}",
            "",
            f"The {word} notes of {number}-{section} say what was tried (v{version}).",
            "",
        ]
    return "\n".join(lines)


def plan_text(version: int) -> str:
    return f"# Plan\n\n## Current state\n- step {version} of the rollout\n\n## History\n- began\n"


def ledger_text(version: int) -> str:
    return (
        "# Handoff ledger\n\n## Task status\n- in progress\n\n## Goal\n- ship the fix\n\n"
        f"## Tried approaches and failure reasons\n- attempt {version}: failed, too slow\n\n"
        f"## Progress and next steps\n- [ ] step {version + 1}: measure again\n"
    )


def make_root(root: Path, notes: int = 6) -> Path:
    (root / "MEMORY.md").parent.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Defaults\n\nPrefer small commits.\n", encoding="utf-8")
    for workspace in WORKSPACES:
        (root / workspace / "handoff").mkdir(parents=True)
        (root / workspace / "PLAN.md").write_text(plan_text(0), encoding="utf-8")
        (root / workspace / "handoff" / "LEDGER.md").write_text(ledger_text(0), encoding="utf-8")
        for number in range(notes):
            path = root / workspace / f"note-{number}.md"
            path.write_text(note_text(number, 0), encoding="utf-8")
    return root


def editable(root: Path) -> list[Path]:
    return sorted(
        path for path in root.rglob("*.md") if ".carryd" not in path.parts and path.is_file()
    )


class Burst:
    """A thread rewriting the root's Markdown (notes, PLAN.md, LEDGER.md) every `every` s."""

    def __init__(self, root: Path, rng: random.Random, every: float = 0.05) -> None:
        self.root, self.rng, self.every = root, rng, every
        self.files = editable(root)
        self.edits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="burst", daemon=True)

    def __enter__(self) -> Burst:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            path = self.rng.choice(self.files)
            self.edits += 1
            version = self.edits
            if path.name == "PLAN.md":
                text = plan_text(version)
            elif path.name == "LEDGER.md":
                text = ledger_text(version)
            else:
                number = int(path.stem.split("-")[-1]) if "-" in path.stem else 0
                text = (
                    note_text(number, version)
                    if path.name != "MEMORY.md"
                    else (f"# Defaults\n\nPrefer small commits ({version}).\n")
                )
            path.write_text(text, encoding="utf-8")
            self._stop.wait(self.every)


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}


def cli(root: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment(),
    )


def start_cli(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "carryd.daemon.cli", *args, "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


class Daemon:
    """A `carryd run` subprocess on the root, its output in a log file."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root, self.log = root, log
        self.settings = load_settings(None, root=str(root))
        handle = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(root)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=environment(),
        )
        handle.close()

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_ready(self) -> Daemon:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"daemon exited {self.process.returncode}:\n{self.text()}")
            return request(self.settings, "ping", {}, timeout=1.0) is not None

        wait_for(ready, READY_TIMEOUT, "the daemon to serve")
        return self

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def ensure_dead(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def settle(settings: Settings, quiet: float = 1.0, timeout: float = 60.0) -> None:
    """Wait until no writer holds the index lock and the daemon (if any) has nothing queued,
    for `quiet` seconds in a row."""
    calm_since: list[float | None] = [None]

    def calm() -> bool:
        answer = request(settings, "status", {}, timeout=2.0)
        busy = holder(settings) is not None or bool(answer and answer.get("queued"))
        now = time.monotonic()
        if busy:
            calm_since[0] = None
            return False
        if calm_since[0] is None:
            calm_since[0] = now
        return now - calm_since[0] >= quiet

    wait_for(calm, timeout, "the writers to settle")


def assert_index_and_carries_sound(settings: Settings) -> None:
    """Verify is clean, every carry is intact (matches its manifest) and present, and no temp
    file or carry of a missing workspace is left in the carry folder."""
    report = verify_root(settings)
    assert report.ok, [difference.to_json() for difference in report.problems]
    workspaces = list_workspaces(settings)
    for workspace in workspaces:
        check = check_carry(settings, workspace)
        assert check.state in ("fresh", "fallback"), (workspace, check.state, check.detail)
        manifest = json.loads(check.manifest_path.read_text(encoding="utf-8"))
        assert manifest["sha256"] == check.sha256
    names = sorted(path.name for path in settings.carry_dir.iterdir())
    assert names == sorted(f"{w}{s}" for w in workspaces for s in (".json", ".md")), names
