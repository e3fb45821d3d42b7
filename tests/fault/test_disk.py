"""A full disk, a read-only disk and a corrupt index, on a real small tmpfs.

Neither a full nor a read-only disk is corruption: carryd says which it is, leaves the index
where it is (no `.corrupt-*` files, nothing re-embedded once space returns) and never prints a
traceback. A really corrupt index is moved aside and rebuilt, and `recall` says so instead of
answering from an empty index. Mounting needs root (CI runs as root); without it the tmpfs
tests skip and say why.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fault.conftest import carryd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 6 MB tmpfs, unmounted afterwards (skips when this machine cannot mount)."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command on this machine")
    mounted = _mount("-t", "tmpfs", "-o", "size=6m,mode=0755", "tmpfs", str(mountpoint))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        _mount("-o", "remount,rw", str(mountpoint))
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, timeout=30)


def make_root(parent: Path) -> Path:
    root = parent / "ex"
    shutil.copytree(EXAMPLES, root)
    return root


def many_entries(count: int) -> str:
    return "\n".join(
        f"## Decision {number}\n\nWe chose option {number} for the refund queue because "
        f"batch {number} kept failing with timeout {number * 7} ms under load.\n"
        for number in range(count)
    )


def fill(folder: Path) -> Path:
    """Given a folder on the tmpfs, write a filler file until the disk is full."""
    filler = folder / "filler.bin"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as handle:
        while True:
            try:
                handle.write(chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC
                break
    # Small blocks too, so not even one more page fits.
    with (folder / "filler-small.bin").open("wb", buffering=0) as handle:
        while True:
            try:
                handle.write(b"\0" * 512)
            except OSError:
                break
    return filler


def aside_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".carryd").glob("index.sqlite.*"))


def assert_clean_failure(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "cannot rollback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_a_full_disk_is_named_and_the_index_kept(tmpfs: Path, use_model: Path) -> None:
    root = make_root(tmpfs)
    first = carryd("index", "--root", str(root), "--json")
    assert first.returncode == 0, first.stderr
    entries = json.loads(first.stdout)["entries"]
    # Any write needs room: the write-ahead log was removed when the last index run closed.
    (root / "webshop" / "decisions.md").write_text("# Decisions\n\n" + many_entries(4))
    filler = fill(tmpfs)

    for _ in range(2):  # a later command too: no 0-byte `.corrupt-*` per command
        result = carryd("index", "--root", str(root), "--json")
        assert_clean_failure(result, "disk is full")
    assert aside_files(root) == []

    recall = carryd("recall", "refund currency", "--root", str(root), "--json")
    assert recall.returncode == 0, recall.stderr
    assert json.loads(recall.stdout)["hits"], "reads still work on a full disk"

    filler.unlink()
    again = json.loads(carryd("index", "--root", str(root), "--json").stdout)
    assert again["entries"] == entries + 5
    assert again["embedded"] == 5  # only the new file: nothing re-embedded
    assert aside_files(root) == []


def test_a_read_only_disk_is_named_and_run_exits_with_a_message(
    tmpfs: Path, use_model: Path
) -> None:
    root = make_root(tmpfs)
    assert carryd("index", "--root", str(root), "--json").returncode == 0
    assert carryd("carry", "--root", str(root)).returncode == 0
    (root / "webshop" / "new.md").write_text("# New\n\nA note written before the remount.\n")
    remounted = _mount("-o", "remount,ro", str(tmpfs))
    assert remounted.returncode == 0, remounted.stderr

    index = carryd("index", "--root", str(root), "--json")
    assert_clean_failure(index, "read-only")
    assert "delete" not in index.stderr.lower()

    run = carryd("run", "--root", str(root), timeout=90)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr
    assert "read-only" in run.stderr, run.stderr
    assert aside_files(root) == []


def test_the_daemon_status_names_a_full_disk(tmpfs: Path, use_model: Path) -> None:
    root = make_root(tmpfs)
    assert carryd("index", "--root", str(root), "--json").returncode == 0
    # Written while there is room, in an ignored folder; moved in (a rename needs no space).
    (root / ".git").mkdir()
    (root / ".git" / "decisions.md").write_text("# Decisions\n\n" + many_entries(4))
    log = (tmpfs.parent / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(root)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while json.loads(status(root))["daemon"]["state"] != "running":
            assert time.monotonic() < deadline, "the daemon never ran"
            assert daemon.poll() is None, (tmpfs.parent / "daemon.log").read_text()
            time.sleep(0.1)
        fill(tmpfs)
        os.rename(root / ".git" / "decisions.md", root / "webshop" / "decisions.md")
        deadline = time.monotonic() + 30
        while True:
            report = json.loads(status(root))
            message = (report.get("last_error") or {}).get("message", "")
            if message:
                break
            assert time.monotonic() < deadline, "the failed sync never reached the status"
            time.sleep(0.3)
        assert "disk is full" in message, message
        assert "cannot rollback" not in message
        assert daemon.poll() is None, "a full disk must not stop the daemon"
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
    assert aside_files(root) == []


def status(root: Path) -> str:
    result = carryd("status", "--root", str(root), "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_a_corrupt_index_is_reported_and_rebuilt_by_recall(tmp_path: Path, use_model: Path) -> None:
    root = make_root(tmp_path)
    assert carryd("index", "--root", str(root), "--json").returncode == 0
    os.truncate(root / ".carryd" / "index.sqlite", 100_000)
    status = carryd("status", "--root", str(root), "--json")
    assert status.returncode == 1, status.stdout
    report = json.loads(status.stdout)
    assert not report["healthy"]
    assert any("corrupt" in problem and "carryd index" in problem for problem in report["problems"])
    assert aside_files(root) == []  # status only looks
    recall = carryd("recall", "refund currency", "--root", str(root), "--json")
    assert recall.returncode == 0, recall.stderr
    assert "corrupt" in recall.stderr and "rebuilding" in recall.stderr
    answer = json.loads(recall.stdout)
    assert answer["hits"] and answer["degraded"] is None
    assert len(aside_files(root)) == 1


def test_an_index_the_user_may_not_read_is_named_not_moved_aside(
    tmp_path: Path, use_model: Path
) -> None:
    """EACCES (an index another user owns) is no corruption either. Root bypasses file modes,
    so the commands run without the capabilities that do (setpriv)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to meet a real EACCES")
    root = make_root(tmp_path)
    assert carryd("index", "--root", str(root), "--json").returncode == 0
    os.chown(root / ".carryd" / "index.sqlite", 65534, 65534)
    for command in (["index", "--json"], ["recall", "refund", "--json"]):
        result = subprocess.run(
            [
                setpriv,
                "--bounding-set=-dac_override,-dac_read_search,-fowner",
                sys.executable,
                "-m",
                "carryd.daemon.cli",
                *command,
                "--root",
                str(root),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert_clean_failure(result, "permission denied")
    assert aside_files(root) == []
