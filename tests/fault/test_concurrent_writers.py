"""Concurrent writers (issue 11, "Lost updates with concurrent writers"): with the daemon
running and a writer rewriting notes every 50 ms, three overlapping `carryd index` runs must
leave no file whose index differs from the file once the writers stop. Every index writer
holds the root's index lock (a waiting CLI says so), and a sync never records a file whose
bytes changed between being read and being committed."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.fault.helpers import (
    Burst,
    Daemon,
    assert_index_and_carries_sound,
    cli,
    make_root,
    settle,
    start_cli,
)

pytestmark = pytest.mark.fault


def test_three_overlapping_index_runs_with_the_daemon_and_a_writer(
    tmp_path: Path, use_model: Path
) -> None:
    root = make_root(tmp_path / "root", notes=10)
    assert cli(root, "index").returncode == 0
    daemon = Daemon(root, tmp_path / "daemon.log").wait_ready()
    try:
        with Burst(root, random.Random(7), every=0.05):
            runs = []
            for _ in range(3):
                runs.append(start_cli(root, "index", "--json"))
                time.sleep(0.4)
            results = [(run.wait(180), *run.communicate()) for run in runs]
        for code, _, stderr in results:
            assert code == 0, stderr
        waited = [
            stderr for _, _, stderr in results if "waiting for another carryd writer" in stderr
        ]
        assert waited, "overlapping writers never waited for each other"
        assert "holds" not in waited[0] and "pid " in waited[0]
        settle(daemon.settings)
        assert_index_and_carries_sound(daemon.settings)
        assert daemon.stop() == 0
    finally:
        daemon.ensure_dead()
