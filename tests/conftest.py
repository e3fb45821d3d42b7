"""Test isolation by construction, and the real offline model.

- Every carryd path (config, cache, root) points into tmp dirs; nothing reaches the network
  (HF_HUB_OFFLINE) and a test that asks for the default model gets a clear error, not a download.
- `model_dir` is the real int8 all-MiniLM-L6-v2 folder built from PyPI packages; it is always
  available, so end-to-end tests never skip.
- A test that leaves threads running fails.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testmodel import build_test_model

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real offline test model folder (built once per session)."""
    return build_test_model(tmp_path_factory.getbasetemp() / "test-model")


@pytest.fixture(autouse=True)
def isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    for name in ("CARRYD_ROOT", "CARRYD_CONFIG", "CARRYD_MODEL_PATH", "CARRYD_HOOKS_OFF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(home / ".cache" / "fastembed"))
    yield


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    leaked = [
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.is_alive() and not thread.daemon
    ]
    for thread in leaked:
        thread.join(timeout=2.0)
    still = [thread.name for thread in leaked if thread.is_alive()]
    assert not still, f"test leaked running threads: {still}"


@pytest.fixture
def use_model(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point CARRYD_MODEL_PATH at the real offline model for this test (and its subprocesses)."""
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(model_dir))
    return model_dir
