"""The real daemon as a subprocess on a temp root, with the real offline model.

Every daemon a test starts is stopped in teardown (SIGTERM, then SIGKILL if it hangs).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.config import Settings
from carryd.daemon.control import request

from tests.fault.helpers import wait_for

pytestmark = pytest.mark.slow

READY_TIMEOUT = 90.0

MEMORY = """# Preferences
- Prefer small commits and run the linter before pushing.
"""

NOTES = """# SQLite WAL
WAL mode lets readers continue while a writer commits a transaction.

# Watchdog
Inotify watches are recursive in watchdog; moves arrive as paired events.
"""

PLAN = """# Plan

## Current state
- building the daemon, step {token}

## History
- started the project
"""

LEDGER = """# Handoff ledger

## Task status
- in progress

## Goal
- ship the carryd daemon

## Tried approaches and failure reasons
- polling the folder every second: failed, too much idle CPU

## Progress and next steps
- write the end-to-end tests
"""


def make_root(root: Path) -> Path:
    (root / "proj" / "handoff").mkdir(parents=True)
    (root / "MEMORY.md").write_text(MEMORY)
    (root / "proj" / "notes.md").write_text(NOTES)
    (root / "proj" / "PLAN.md").write_text(PLAN.format(token="alpha-0"))
    (root / "proj" / "handoff" / "LEDGER.md").write_text(LEDGER)
    return root


def carryd(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def status(root: Path) -> tuple[int, dict[str, Any]]:
    result = carryd(root, "status", "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def indexed_paths(settings: Settings) -> set[str]:
    from carryd.index.store import Store

    with Store.open(settings.db_path) as store:
        return {row.path for row in store.entries()}


class Daemon:
    """A `carryd run` subprocess and its log."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        self.settings = Settings(root=str(root))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Daemon:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(self.root)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        handle.close()
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_ready(self) -> Daemon:
        def ready() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"daemon exited {self.process.returncode}:\n{self.text()}")
            # READY comes before the start-up reconcile ends; these tests want it done.
            answer = request(self.settings, "status", {}, timeout=1.0)
            return answer is not None and answer.get("state") == "running"

        wait_for(ready, READY_TIMEOUT, "the daemon to serve its socket and reconcile")
        return self

    def wait_log(self, needle: str, timeout: float = 30.0, *, after: int = 0) -> None:
        wait_for(lambda: needle in self.text()[after:], timeout, f"{needle!r} in the log")

    def signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def stop(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"daemon ignored SIGTERM for {timeout} s:\n{self.text()}"
            ) from None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[[Path], Daemon]]:
    started: list[Daemon] = []

    def start(root: Path) -> Daemon:
        daemon = Daemon(root, tmp_path / f"daemon-{len(started)}.log").start()
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.kill()


def carry_file(root: Path, workspace: str = "proj") -> Path:
    return root / ".carryd" / "carry" / f"{workspace}.md"


def assert_carries_whole(root: Path) -> None:
    carry_dir = root / ".carryd" / "carry"
    names = sorted(p.name for p in carry_dir.iterdir())
    assert all(name.endswith((".md", ".json")) for name in names), f"leftovers: {names}"
    for carry in carry_dir.glob("*.md"):
        data = carry.read_bytes()
        text = data.decode("utf-8")
        assert text.strip(), f"{carry} is empty"
        if carry.name.endswith(".inline.md"):  # the pre-built SessionStart variant
            manifest = json.loads(
                carry.with_name(carry.name[: -len(".inline.md")] + ".json").read_text()
            )
            assert manifest["inline"]["sha256"] == hashlib.sha256(data).hexdigest()
            continue
        manifest = json.loads(carry.with_suffix(".json").read_text())
        recorded = manifest.get("sha256")
        if recorded:
            assert recorded == hashlib.sha256(data).hexdigest(), (
                f"{carry} does not match its manifest"
            )


def test_daemon_end_to_end(
    tmp_path: Path, use_model: Path, daemons: Callable[[Path], Daemon]
) -> None:
    root = make_root(tmp_path / "root")
    daemon = daemons(root).wait_ready()
    settings = daemon.settings

    # Reconciled before serving: the carry is there, planned from the files.
    carry = carry_file(root)
    assert carry.is_file()
    assert "alpha-0" in carry.read_text()
    mode = settings.socket_path.lstat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600

    code, report = status(root)
    assert report["daemon"]["running"] and report["daemon"]["pid"] == daemon.pid
    assert report["model"]["loaded"] and report["model"]["degraded"] is None
    assert report["counts"]["entries"] >= 5 and report["counts"]["vectors"] >= 5
    assert code == 0, report["problems"]

    # Editing an entry updates the carry within 2 s.
    started = time.monotonic()
    (root / "proj" / "PLAN.md").write_text(PLAN.format(token="beta-1"))
    wait_for(lambda: "beta-1" in carry.read_text(), 2.0, "the carry to show the edit")
    edit_seconds = time.monotonic() - started

    # An editor's atomic save: write a temp file, rename it over the original.
    temp = root / "proj" / ".PLAN.md.swp"
    temp.write_text(PLAN.format(token="gamma-2"))
    os.replace(temp, root / "proj" / "PLAN.md")
    wait_for(lambda: "gamma-2" in carry.read_text(), 2.0, "the carry to show the atomic save")

    # Recall goes through the warm daemon.
    result = carryd(root, "recall", "readers continue while a writer commits", "--json")
    assert result.returncode == 0, result.stderr
    assert any(hit["path"] == "proj/notes.md" for hit in json.loads(result.stdout)["hits"])

    # Deleting a file removes its entries; deleting a folder removes everything under it.
    (root / "proj" / "logs").mkdir()
    (root / "proj" / "logs" / "day1.md").write_text("# Day one\nSet up the repository.\n")
    (root / "proj" / "logs" / "day2.md").write_text("# Day two\nWrote the watcher.\n")
    wait_for(lambda: "proj/logs/day2.md" in indexed_paths(settings), 5.0, "the new folder")
    (root / "proj" / "notes.md").unlink()
    wait_for(lambda: "proj/notes.md" not in indexed_paths(settings), 5.0, "the deleted file")
    for path in (root / "proj" / "logs").iterdir():
        path.unlink()
    (root / "proj" / "logs").rmdir()
    wait_for(
        lambda: not any(p.startswith("proj/logs/") for p in indexed_paths(settings)),
        5.0,
        "the deleted folder's entries to go",
    )

    # A burst of 200 saves to one file: a few syncs, not 200.
    before = status(root)[1]["daemon"]["syncs"]
    plan = root / "proj" / "PLAN.md"
    for number in range(200):
        plan.write_text(PLAN.format(token=f"burst-{number}"))
        time.sleep(0.002)
    wait_for(lambda: "burst-199" in carry.read_text(), 5.0, "the burst's last save in the carry")
    wait_for(lambda: status(root)[1]["daemon"]["queued"] == 0, 5.0, "the queue to drain")
    after = status(root)[1]["daemon"]["syncs"]
    assert 1 <= after - before <= 5, f"{after - before} syncs for a burst of 200 saves"
    state = json.loads((root / ".carryd" / "daemon.json").read_text())
    assert state["syncs"] >= after

    # A second daemon on the same root refuses, naming the first one's pid.
    second = carryd(root, "run", timeout=60)
    assert second.returncode == 1
    assert f"pid {daemon.pid}" in second.stderr and "already serves" in second.stderr

    # SIGHUP re-reads the config: changes are logged; a bad config keeps the old settings.
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "carryd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[daemon]\ndebounce_ms = 200\n")
    mark = len(daemon.text())
    daemon.signal(signal.SIGHUP)
    daemon.wait_log("daemon.debounce_ms", after=mark)
    config.write_text("[daemon]\ndebounce_ms = 'soon'\n")
    mark = len(daemon.text())
    daemon.signal(signal.SIGHUP)
    daemon.wait_log("keeping the running settings", after=mark)
    assert request(settings, "ping", {}) is not None
    config.unlink()

    # SIGTERM: exit 0, socket gone, state says stopped.
    assert daemon.stop() == 0
    assert not settings.socket_path.exists()
    assert json.loads((root / ".carryd" / "daemon.json").read_text())["state"] == "stopped"
    assert_carries_whole(root)

    # With the daemon down, a source newer than the carry makes status report it stale.
    time.sleep(0.01)  # mtime granularity: the edit must be newer than the last carry check
    (root / "proj" / "PLAN.md").write_text(PLAN.format(token="written-while-down"))
    (root / "proj" / "offline.md").write_text("# Offline note\nzebra-offline-token here.\n")
    code, report = status(root)
    assert code == 1
    assert not report["daemon"]["running"]
    (proj,) = [c for c in report["carries"] if c["workspace"] == "proj"]
    assert proj["stale"] and proj["newest_source"]["path"] in ("proj/PLAN.md", "proj/offline.md")
    assert any("stale" in problem for problem in report["problems"])

    # Files created while the daemon was down are picked up at start; the carry is fresh again.
    restarted = daemons(root).wait_ready()
    assert "proj/offline.md" in indexed_paths(settings)
    assert "written-while-down" in carry.read_text()
    code, report = status(root)
    assert code == 0, report["problems"]
    assert restarted.stop() == 0
    print(f"edit→carry latency: {edit_seconds:.3f} s")


def test_degraded_model_is_reported_and_carries_still_written(
    tmp_path: Path, daemons: Callable[[Path], Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(empty))
    # Under systemd (Type=notify) the daemon says READY=1 once it serves, STOPPING=1 at stop.
    notify_name = f"carryd-e2e-{os.getpid()}-{time.monotonic_ns()}"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind("\0" + notify_name)
    notify.settimeout(READY_TIMEOUT)
    monkeypatch.setenv("NOTIFY_SOCKET", "@" + notify_name)
    root = make_root(tmp_path / "root")
    try:
        daemon = daemons(root).wait_ready()
        messages = [notify.recv(4096).decode()]
        while "READY=1" not in messages[-1]:
            messages.append(notify.recv(4096).decode())
        assert f"MAINPID={daemon.pid}" in messages[-1]
        run_degraded_checks(root, daemon)
        later = [notify.recv(4096).decode()]
        while "STOPPING=1" not in later[-1]:
            later.append(notify.recv(4096).decode())
        assert any(m.startswith("STATUS=watching") for m in later)  # the reconcile ended
    finally:
        notify.close()
    # Without a daemon the same truth comes from the model folder itself.
    code, report = status(root)
    assert code == 1 and report["model"]["degraded"]


def run_degraded_checks(root: Path, daemon: Daemon) -> None:
    assert "alpha-0" in carry_file(root).read_text()
    code, report = status(root)
    assert code == 1
    assert report["daemon"]["running"]
    assert report["model"]["loaded"] is False
    assert report["model"]["degraded"]
    assert any("model degraded" in problem for problem in report["problems"])
    result = carryd(root, "recall", "readers continue while a writer commits", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["degraded"]
    assert daemon.stop() == 0


def test_kill_9_mid_sync_then_restart_leaves_a_consistent_index(
    tmp_path: Path, use_model: Path, daemons: Callable[[Path], Daemon]
) -> None:
    root = make_root(tmp_path / "root")
    first = daemons(root).wait_ready()
    assert first.stop() == 0
    carry_before = carry_file(root).read_bytes()

    # Enough new entries that the start-up sync takes a while to embed them.
    bulk = root / "proj" / "bulk"
    bulk.mkdir()
    for file_number in range(60):
        sections = [
            f"# Topic {file_number}-{entry}\nNote {entry} of file {file_number}: "
            f"the {['cache', 'parser', 'socket', 'ledger'][entry % 4]} behaves as described.\n"
            for entry in range(20)
        ]
        (bulk / f"f{file_number:03d}.md").write_text("\n".join(sections))

    second = daemons(root)
    second.wait_log("reconcile: syncing all paths", timeout=READY_TIMEOUT)
    time.sleep(0.5)
    assert "reconcile done" not in second.text(), "the sync finished before the kill"
    second.signal(signal.SIGKILL)
    assert second.process is not None and second.process.wait(10) == -signal.SIGKILL
    assert carry_file(root).read_bytes() == carry_before  # untouched: never half-written
    assert_carries_whole(root)

    third = daemons(root).wait_ready()
    assert len([p for p in indexed_paths(third.settings) if p.startswith("proj/bulk/")]) == 60
    assert third.stop() == 0
    verify = carryd(root, "verify", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["ok"] is True
    assert_carries_whole(root)
