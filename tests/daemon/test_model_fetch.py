"""The first hour offline: no model cached and no network answers in about a second, is
remembered, and says how to fix it (issue 11). Nothing here touches the network: the hub is a
closed or silent port on 127.0.0.1 (HF_ENDPOINT), or downloads are off (conftest's
HF_HUB_OFFLINE)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.indexer.model_fetch import MARKER, DownloadGuard, probe_target, reachable
from carryd.index.embed import DEFAULT_IDENTITY, FastEmbedder, ModelIdentity
from carryd.index.errors import EmbedderUnavailable

REPO = Path(__file__).resolve().parents[2]
FIXES = ("CARRYD_MODEL_PATH", "model.allow_download = false")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_hub() -> Iterator[socket.socket]:
    """A listening socket nobody accepts from: a connection to it would be seen in its queue."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def was_contacted(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "alpha").mkdir(parents=True)
    (root / "alpha" / "notes.md").write_text(
        "## Refund currency\n\nThe refund job used the wrong currency.\n", encoding="utf-8"
    )
    return root


def index(root: Path, *extra: str, **env: str) -> tuple[dict[str, Any], float]:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **env}
    environment.pop("HF_HUB_OFFLINE", None)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(root), "--json", *extra],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), seconds


def marker_file() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "carryd" / "models" / MARKER


def test_no_network_is_told_fast_remembered_and_retried_when_due(
    root: Path, tmp_path: Path, silent_hub: socket.socket
):
    # First run: the hub's port is closed. One connect probe, not fastembed's ~40 s of retries.
    first, seconds = index(root, HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert (first["entries"], first["embedded"]) == (1, 0)  # indexed anyway, lexical-only
    assert "no network" in first["degraded"] and "Xenova/multilingual-e5-small" in first["degraded"]
    assert all(fix in first["degraded"] for fix in FIXES)
    assert seconds < 15  # a Python start, an index and a refused connect; was ~40 s
    record = json.loads(marker_file().read_text())
    assert record["model"] == "Xenova/multilingual-e5-small" and "no network" in record["reason"]

    # Second run, within the hour: the failure is remembered, the network is not even probed.
    port = silent_hub.getsockname()[1]
    second, _ = index(root, HF_ENDPOINT=f"http://127.0.0.1:{port}")
    assert not was_contacted(silent_hub)
    assert "download failed at" in second["degraded"] and str(marker_file()) in second["degraded"]
    assert all(fix in second["degraded"] for fix in FIXES)

    # With model.download_retry_minutes = 0 every run tries again: a fresh probe.
    config = tmp_path / "config.toml"
    config.write_text("[model]\ndownload_retry_minutes = 0\n", encoding="utf-8")
    third, _ = index(root, "--config", str(config), HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert "no network" in third["degraded"] and "download failed at" not in third["degraded"]


def test_hf_hub_offline_answers_at_once_and_remembers_nothing(tmp_path: Path):
    # conftest sets HF_HUB_OFFLINE=1: the guard says so without probing or writing a marker.
    guard = DownloadGuard(tmp_path / "cache", probe=("127.0.0.1", closed_port()))
    embedder = FastEmbedder(DEFAULT_IDENTITY, cache_dir=tmp_path / "cache", download_guard=guard)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as raised:
        embedder.embed_query("anything")
    assert time.monotonic() - started < 5.0
    assert "HF_HUB_OFFLINE" in str(raised.value) and all(fix in str(raised.value) for fix in FIXES)
    assert not guard.marker.exists()


def test_the_guard_remembers_per_model_and_forgets_after_the_retry_time(tmp_path: Path):
    guard = DownloadGuard(tmp_path, retry_minutes=60, probe=("127.0.0.1", closed_port()))
    other = ModelIdentity("org/other-model", "model.onnx", "", "", 384, "mean")
    message = guard.download_failed(DEFAULT_IDENTITY, "ValueError: Could not load model")
    assert "Could not load model" in message and all(fix in message for fix in FIXES)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HF_HUB_OFFLINE")
        remembered = guard.before_download(DEFAULT_IDENTITY)
        assert remembered is not None and "download failed at" in remembered
        fresh = guard.before_download(other)  # another model: probed, not remembered
        assert fresh is not None and "no network" in fresh
        record = json.loads(guard.marker.read_text())
        guard.marker.write_text(json.dumps({**record, "failed_at": time.time() - 3601}))
        overdue = guard.before_download(other)
        assert overdue is not None and "download failed at" not in overdue
    guard.download_succeeded(DEFAULT_IDENTITY)
    assert not guard.marker.exists()


def test_the_probe_goes_where_the_download_would():
    assert probe_target({}) == ("huggingface.co", 443)
    assert probe_target({"HF_ENDPOINT": "http://127.0.0.1:8080"}) == ("127.0.0.1", 8080)
    assert probe_target({"HF_ENDPOINT": "https://hub.example"}) == ("hub.example", 443)
    proxied = {"HTTPS_PROXY": "http://proxy.local:3128"}
    assert probe_target(proxied) == ("proxy.local", 3128)
    assert probe_target({"https_proxy": "proxy.local:8080"}) == ("proxy.local", 8080)


def test_a_closed_port_is_unreachable_quickly_and_a_listening_one_reachable(
    silent_hub: socket.socket,
):
    started = time.monotonic()
    problem = reachable("127.0.0.1", closed_port(), timeout=1.0)
    assert problem is not None and "127.0.0.1" in problem
    assert time.monotonic() - started < 1.6
    assert reachable("127.0.0.1", silent_hub.getsockname()[1], timeout=1.0) is None


def test_a_download_about_to_start_is_announced(
    tmp_path: Path,
    silent_hub: socket.socket,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    # The download can take minutes: the user is told before it starts, not left in silence.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    guard = DownloadGuard(tmp_path / "cache", probe=silent_hub.getsockname()[:2])
    with caplog.at_level("WARNING", logger="carryd.daemon.indexer.model_fetch"):
        assert guard.before_download(DEFAULT_IDENTITY) is None
    assert f"downloading {DEFAULT_IDENTITY.name}" in caplog.text
    assert str(tmp_path / "cache") in caplog.text
