"""`carryd run` against systemd's clock and the user's Ctrl-C (issue 11, "the first hour"):
a real `carryd run` subprocess, a notify socket bound here as systemd's would be.

- READY=1 comes as soon as the daemon serves, before the start-up reconcile of a cold root
  ends (a 7,850-entry root used to take 88 s to READY against systemd's 90 s start timeout);
  status says `reconciling` until it is done.
- While the model loads (or downloads) the daemon asks systemd for more start-up time, and a
  SIGINT stops it at once, without waiting for the load and without reconciling afterwards.
  A model folder whose config.json is a FIFO nobody writes stands for a load that hangs (a
  download over a dead link): the loader blocks in open(2), as in a socket read.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from carryd.daemon.config import Settings
from carryd.daemon.control import request

pytestmark = pytest.mark.slow

TIMEOUT = 120.0


@pytest.fixture
def notify_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A datagram socket in the abstract namespace, named in $NOTIFY_SOCKET as systemd does."""
    name = f"carryd-startup-{os.getpid()}-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(TIMEOUT)
    monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
    yield sock
    sock.close()


def start_daemon(root: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(root)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def stopped(process: subprocess.Popen[bytes], timeout: float) -> int:
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the daemon did not stop within {timeout} s") from None


def receive_until(sock: socket.socket, needle: str) -> list[tuple[float, str]]:
    """Return the (arrival time, datagram) received up to and including one holding needle."""
    messages = []
    while True:
        text = sock.recv(4096).decode()
        messages.append((time.monotonic(), text))
        if needle in text:
            return messages


def big_root(root: Path, entries: int) -> Path:
    """A cold root of `entries` entries over 40 notes files in one workspace."""
    (root / "proj").mkdir(parents=True)
    per_file = entries // 40
    for number in range(40):
        sections = [
            f"# Topic {number}-{index}\n"
            f"Decision {number}.{index}: route the {index}th job of batch {number} through "
            f"queue q{(number * 7 + index) % 13} and keep retries at {index % 5}.\n"
            for index in range(per_file)
        ]
        (root / "proj" / f"notes-{number:02}.md").write_text("\n".join(sections))
    return root


def test_ready_comes_before_the_start_up_reconcile_ends(
    tmp_path: Path, use_model: Path, notify_socket: socket.socket
) -> None:
    root = big_root(tmp_path / "root", 400)
    started = time.monotonic()
    process = start_daemon(root, tmp_path / "daemon.log")
    try:
        before_ready = receive_until(notify_socket, "READY=1")
        ready_at, ready = before_ready[-1]
        # Serving already: the control socket answers, and status says the reconcile goes on.
        answer = request(Settings(root=str(root)), "status", {}, timeout=10.0)
        assert answer is not None and answer["state"] == "reconciling"
        done_at, done = receive_until(notify_socket, "STATUS=watching")[-1]
        assert "READY=1" not in done
        assert "reconciling" in ready
        answer = request(Settings(root=str(root)), "status", {}, timeout=10.0)
        assert answer is not None and answer["state"] == "running"
        assert answer["counts"]["entries"] == 400
        print(
            f"READY after {ready_at - started:.1f} s, reconcile done after "
            f"{done_at - started:.1f} s"
        )
        assert done_at > ready_at
        process.send_signal(signal.SIGTERM)
        assert stopped(process, 30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_the_model_load_is_prompt_and_never_reconciles(
    tmp_path: Path,
    model_dir: Path,
    notify_socket: socket.socket,
    monkeypatch: pytest.MonkeyPatch,
    signum: signal.Signals,
) -> None:
    hanging = tmp_path / "model"
    shutil.copytree(model_dir, hanging)
    (hanging / "config.json").unlink()
    os.mkfifo(hanging / "config.json")  # nobody writes: loading the model hangs
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(hanging))
    root = big_root(tmp_path / "root", 200)
    log = tmp_path / "daemon.log"
    process = start_daemon(root, log)
    try:
        # Loading: systemd is asked for more time (the load may be a minutes-long download).
        extend = receive_until(notify_socket, "EXTEND_TIMEOUT_USEC=")[-1][1]
        assert "READY=1" not in extend
        time.sleep(0.5)
        asked = time.monotonic()
        process.send_signal(signum)
        code = stopped(process, 10)
        seconds = time.monotonic() - asked
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text(errors="replace")
    assert code == 0, text
    assert seconds <= 3.0, f"took {seconds:.1f} s to stop:\n{text}"
    assert "reconcile" not in text, text
    assert not (root / ".carryd" / "index.sqlite").exists()  # no index was even opened
    assert "Traceback" not in text


def test_a_stop_during_the_start_up_reconcile_waits_for_one_batch_and_resumes(
    tmp_path: Path, use_model: Path, notify_socket: socket.socket
) -> None:
    root = big_root(tmp_path / "root", 1_200)
    log = tmp_path / "daemon.log"
    process = start_daemon(root, log)
    try:
        receive_until(notify_socket, "READY=1")
        time.sleep(2.0)  # into the embedding of the one 1,200-L0 chunk
        asked = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = stopped(process, 60)
        seconds = time.monotonic() - asked
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text(errors="replace")
    assert code == 0, text
    assert "the next sync resumes it" in text, text
    print(f"stopped {seconds:.1f} s after SIGTERM mid-reconcile")
    assert seconds <= 15.0, f"took {seconds:.1f} s to stop:\n{text}"  # one batch of 64, busy CI
    # The next run picks up where the stop left it and ends with index and files agreeing.
    result = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    verify = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "verify", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_the_interruptible_embedder_gives_the_same_vectors_and_stops_between_slices(
    model_dir: Path,
) -> None:
    import numpy as np
    from carryd.daemon.config import parse_settings
    from carryd.daemon.indexer.interruptible import InterruptibleEmbedder, StopSync
    from carryd.daemon.indexer.model import load_embedder_for

    embedder, why = load_embedder_for(parse_settings({"model": {"model_path": str(model_dir)}}))
    assert embedder is not None, why
    texts = [f"note {n}: " + "word " * (n % 17) for n in range(150)]
    stop = [False]
    sliced = InterruptibleEmbedder(embedder, slice_size=64, stopping=lambda: stop[0])
    assert np.array_equal(sliced.embed_passages(texts), embedder.embed_passages(texts))
    stop[0] = True
    with pytest.raises(StopSync):
        sliced.embed_passages(texts)
