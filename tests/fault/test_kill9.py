"""`kill -9` of a real `carryd run` at random points of an edit burst (issue 11's fault suite).

Seeded: each trial starts the daemon on the same root (its start-up reconcile is the
recovery from the previous kill), rewrites notes, PLAN.md and LEDGER.md every 30 ms, and kills
the daemon with SIGKILL at a random moment of the burst, which lands in a sync, an embedding,
a carry write or idle time. After every kill the index must open without recovery; after every
restart `verify` must be clean and every carry must match its manifest, with no temp file
and no carry of a vanished workspace left behind.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest
from carryd.daemon.layout import check_carry, list_workspaces
from carryd.index.store import Store

from tests.fault.helpers import (
    Burst,
    Daemon,
    assert_index_and_carries_sound,
    make_root,
    settle,
)

pytestmark = pytest.mark.fault

TRIALS = 10
SEED = 20261130


def test_kill_9_at_random_points_of_an_edit_burst(tmp_path: Path, use_model: Path) -> None:
    rng = random.Random(SEED)
    root = make_root(tmp_path / "root")
    outcomes: list[str] = []
    daemon = Daemon(root, tmp_path / "daemon-0.log").wait_ready()
    settings = daemon.settings
    try:
        for trial in range(TRIALS):
            if trial == TRIALS // 2:
                # A workspace renamed while no daemon runs: its old carry must go.
                daemon.kill9()
                shutil.move(root / "ops", root / "ops2")
                daemon = Daemon(root, tmp_path / f"daemon-{trial}-rename.log").wait_ready()
            kill_after = rng.uniform(0.05, 1.5)
            with Burst(root, rng, every=0.03) as burst:
                time.sleep(kill_after)
                daemon.kill9()
            doing = (daemon.text().strip().splitlines() or ["(no log)"])[-1]
            outcomes.append(
                f"trial {trial}: killed after {kill_after:.2f} s, {burst.edits} edits; "
                f"last log line: {doing[-90:]}"
            )
            if trial == 3:
                # As if the kill came between a writer's temp file and its rename.
                (settings.carry_dir / ".proj.md.x9k2a.tmp").write_bytes(b"half a carry")
            with Store.open(settings.db_path) as store:
                assert store.recovered is None, store.recovered  # WAL: no torn index
            # Atomic writes: every carry is whole; a kill between a carry and its manifest
            # leaves a pair that disagrees, which the check calls damaged (never injected).
            for workspace in list_workspaces(settings):
                check = check_carry(settings, workspace)
                if check.state == "missing":
                    # READY comes before the start-up reconcile: a kill right after a start
                    # (or a workspace the burst just created) can precede the first carry.
                    continue
                data = check.path.read_bytes()
                assert data.decode("utf-8").endswith("\n"), (workspace, data[-80:])
                if check.state == "damaged":
                    outcomes[-1] += f"; {workspace} carry and manifest disagree (damaged)"
            daemon = Daemon(root, tmp_path / f"daemon-{trial + 1}.log").wait_ready()
            settle(settings, quiet=0.5)
            assert_index_and_carries_sound(settings)
        assert daemon.stop() == 0
        assert_index_and_carries_sound(settings)
    finally:
        daemon.ensure_dead()
    print("\n".join(outcomes))
