"""A big sync in a child process (`indexer.sync_child`): the index it leaves is the one
the daemon's own sync would leave, a small sync stays in the daemon, a child that fails or is
stopped loses nothing. Real child processes, the real test model, real SQLite."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.config import Settings, parse_settings
from carryd.daemon.indexer import sync_child
from carryd.daemon.indexer.indexing import SyncReport, open_store, sync_root
from carryd.daemon.indexer.interruptible import StopSync
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.indexer.sync_child import sync_root_forked
from carryd.daemon.running.daemon_state import DaemonState
from carryd.daemon.running.worker import Indexer
from carryd.daemon.state import indexing_file
from carryd.index.embed import Embedder

WORDS = "ledger carry vector sqlite handoff plan recall anchor budget index".split()


def build_root(root: Path, files: int, per_file: int = 20) -> Path:
    for number in range(files):
        sections = [
            f"## Note {number}-{k}: the {WORDS[(number + k) % 10]}\n"
            f"The {WORDS[(number * 3 + k) % 10]} of note {number}-{k} was tried and kept.\n"
            for k in range(per_file)
        ]
        path = root / ("alpha" if number % 2 else "beta") / f"notes-{number:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(sections), encoding="utf-8")
    return root


def settings_for(root: Path, model_dir: Path) -> Settings:
    return parse_settings({"root": str(root), "model": {"model_path": str(model_dir)}})


def index_contents(settings: Settings, embedder: Embedder) -> tuple[object, ...]:
    """Return the index's entry rows, postings and vectors (bytes), each keyed by entry id."""
    store = open_store(settings)
    try:
        rows = {row.id: row for row in store.entries()}
        vectors = store.vector_blobs(embedder.identity.key(), rows)
        return rows, store.postings_of(rows), sorted(vectors)
    finally:
        store.close()


def child_pids(caplog: pytest.LogCaptureFixture) -> list[int]:
    return [
        int(found.group(1))
        for record in caplog.records
        if (found := re.search(r"indexing in a child process \(pid (\d+)\)", record.getMessage()))
    ]


@pytest.fixture
def embedder(model_dir: Path) -> Embedder:
    loaded, degraded = load_embedder_for(settings_for(Path("/nonexistent"), model_dir))
    assert loaded is not None, degraded
    return loaded


def test_a_big_sync_runs_in_a_child_and_leaves_the_index_an_own_sync_would(
    tmp_path, model_dir, embedder, monkeypatch, caplog
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(sync_child, "CHILD_BYTES", 1)
    forked = settings_for(build_root(tmp_path / "forked", 15), model_dir)
    shutil.copytree(tmp_path / "forked", tmp_path / "here")
    here = settings_for(tmp_path / "here", model_dir)
    seen: list[tuple[int, int]] = []
    store = open_store(forked)
    try:
        report = sync_root_forked(
            forked,
            store=store,
            embedder=embedder,
            paths=None,
            progress=lambda done, total: seen.append((done, total)),
        )
    finally:
        store.close()
    (pid,) = child_pids(caplog)
    assert pid != os.getpid()
    assert (report.entries, report.embedded, report.files) == (300, 300, 15)
    assert report.touched_workspaces == {"alpha", "beta"}
    assert (0, 300) in seen and (300, 300) in seen  # the child's progress reached the daemon
    own = sync_root(here, embedder=embedder)
    assert own.embedded == 300
    assert index_contents(forked, embedder) == index_contents(here, embedder)


def forked(settings: Settings, embedder: Embedder, **options: Any) -> tuple[SyncReport, int]:
    """Sync the whole root with `sync_root_forked`; return its report and the vectors stored."""
    with open_store(settings) as store:
        report = sync_root_forked(settings, store=store, embedder=embedder, paths=None, **options)
        return report, store.counts()["vectors"]


def vectors_stored(settings: Settings) -> int:
    with open_store(settings) as store:
        return store.counts()["vectors"]


def test_a_small_sync_stays_in_the_daemon(tmp_path, model_dir, embedder, caplog) -> None:
    caplog.set_level(logging.INFO)
    settings = settings_for(build_root(tmp_path / "root", 3), model_dir)  # ~4 KB of notes
    report, vectors = forked(settings, embedder)
    assert report.embedded == vectors == 60
    assert child_pids(caplog) == []


def test_a_new_model_re_embeds_in_a_child_without_reading_a_file(
    tmp_path, model_dir, embedder, monkeypatch, caplog
) -> None:
    """Entries indexed without vectors (no model then) count as work: the catch-up is big."""
    caplog.set_level(logging.INFO)
    settings = settings_for(build_root(tmp_path / "root", 5), model_dir)
    sync_root(settings, embedder=None)
    monkeypatch.setattr(sync_child, "CHILD_EMBEDDINGS", 50)
    report, vectors = forked(settings, embedder)
    assert report.embedded == vectors == 100
    assert len(child_pids(caplog)) == 1


def test_a_child_that_fails_leaves_the_whole_sync_to_the_daemon(
    tmp_path, model_dir, embedder, monkeypatch, caplog
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(sync_child, "CHILD_BYTES", 1)
    settings = settings_for(build_root(tmp_path / "root", 4), model_dir)
    failing = (sys.executable, "-c", "raise SystemExit(3)")
    report, vectors = forked(settings, embedder, command=failing)
    assert report.embedded == vectors == 80
    assert any(
        "ended without finishing (exit 3)" in record.getMessage() for record in caplog.records
    )


def test_a_stop_stops_the_child_after_its_batch_and_the_next_sync_finishes(
    tmp_path, model_dir, embedder, monkeypatch
) -> None:
    """A stop asked while the child embeds (the daemon's SIGTERM) ends the child after the
    batch it is committing: what it committed stays, its progress record is gone, and the next
    sync embeds only the rest."""
    monkeypatch.setattr(sync_child, "CHILD_BYTES", 1)
    settings = settings_for(build_root(tmp_path / "root", 40), model_dir)  # 800: 4 batches

    def stop_after_first_batch(done: int, total: int) -> None:
        if done:
            raise StopSync(f"stop asked after {done} of {total}")

    with pytest.raises(StopSync):
        forked(settings, embedder, progress=stop_after_first_batch)
    committed = vectors_stored(settings)
    assert 0 < committed < 800
    assert not indexing_file(settings).exists()
    rest, vectors = forked(settings, embedder)
    assert vectors == 800 and rest.embedded == 800 - committed


def test_the_daemons_indexer_syncs_big_batches_in_a_child(
    tmp_path, model_dir, embedder, monkeypatch, caplog
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(sync_child, "CHILD_BYTES", 1)
    settings = settings_for(build_root(tmp_path / "root", 4), model_dir)
    store = open_store(settings)
    indexer = Indexer(
        settings,
        store=store,
        embedder=embedder,
        degraded=None,
        state=DaemonState(settings),
        child_syncs=True,
    )
    try:
        indexer.run("reconcile")
        assert store.counts()["vectors"] == 80
    finally:
        indexer.close()
        store.close()
    assert len(child_pids(caplog)) == 1
    carries = {path.name for path in settings.carry_dir.iterdir()}
    assert {"alpha.md", "beta.md"} <= carries  # the daemon's sync after the child wrote them


def test_an_index_found_corrupt_while_sizing_the_sync_is_still_recovered_by_it(
    tmp_path, model_dir, embedder, monkeypatch
) -> None:
    """Sizing a sync reads the files table first: an index damaged under the running daemon
    must reach the sync's own recovery (moved aside, rebuilt), not fail the batch."""
    monkeypatch.setattr(sync_child, "CHILD_BYTES", 1)
    settings = settings_for(build_root(tmp_path / "root", 4), model_dir)
    sync_root(settings, embedder=None)
    with open_store(settings) as store:
        settings.db_path.write_bytes(b"garbage, not SQLite " * 200)
        report = sync_root_forked(settings, store=store, embedder=embedder, paths=None)
        assert store.counts()["vectors"] == 80
    assert report.entries == 80 and any("moved" in note for note in report.notes)
