"""The real-host suite (`pytest -m hosts`): Claude Code, Gemini CLI and Codex CLI as installed by
`npm ci --prefix tests/hosts`, each set up with `carryd setup HOST`, talking to a fake model API
on 127.0.0.1 that records what they send. Every test here is marked `hosts` and runs by default
(`.ci/run`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.fake_api import FakeApi
from tests.hosts.sandbox import Sandbox


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.hosts)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    """The fake model API, also the hosts' HTTPS proxy: what a host sends elsewhere is refused
    there (`outside` lists it: seen are the hosts' own update, plugin-catalogue and telemetry
    hosts, never a model request), so nothing leaves the machine."""
    with FakeApi() as server:
        yield server


@pytest.fixture(scope="session")
def indexed_root(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    """A memory root indexed once with the real model, which each sandbox copies."""
    home = tmp_path_factory.mktemp("template") / "home"
    return Sandbox(home=home, api=FakeApi(), model_dir=model_dir).build().root


@pytest.fixture
def box(tmp_path: Path, api: FakeApi, use_model: Path, indexed_root: Path) -> Sandbox:
    """A sandbox HOME with an indexed memory root, its carry and its project directory."""
    return Sandbox(home=tmp_path / "home", api=api, model_dir=use_model).build(indexed_root)
