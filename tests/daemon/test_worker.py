"""The work queue: debounce and coalescing on a fake clock, event classification, the thread."""

from __future__ import annotations

import contextlib
import threading
import tomllib

import pytest
from carryd.daemon.config import parse_settings
from carryd.daemon.running.scheduler import Scheduler, planned_jobs
from carryd.daemon.running.watcher import changes_for
from carryd.daemon.running.worker import (
    Batch,
    Change,
    Debouncer,
    TaskName,
    Worker,
    workspaces_for_carry,
)
from hypothesis import given, settings
from hypothesis import strategies as st

QUIET = 0.3
MAX_DELAY = 3.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def batch(
    *paths: str, events: int, added: tuple[str, ...] = (), removed: tuple[str, ...] = ()
) -> Batch:
    return Batch(
        paths=frozenset(paths),
        trees_added=frozenset(added),
        trees_removed=frozenset(removed),
        events=events,
    )


# --- Debouncer ---------------------------------------------------------------------------


def test_burst_of_200_saves_to_one_path_is_one_batch() -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    for step in range(200):  # 200 saves, 10 ms apart: 2 s of continuous writing
        debouncer.add(Change("ws/notes.md"), 0.01 * step)
        assert debouncer.take(0.01 * step) is None
    last = 0.01 * 199
    assert debouncer.take(last + QUIET - 0.001) is None
    assert debouncer.take(last + QUIET) == batch("ws/notes.md", events=200)
    assert debouncer.take(last + 10) is None
    assert len(debouncer) == 0


def test_different_paths_in_one_burst_coalesce_into_one_batch() -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    debouncer.add(Change("ws/a.md"), 0.0)
    debouncer.add(Change("ws/b.md"), 0.1)
    debouncer.add(Change("MEMORY.md"), 0.2)
    debouncer.add(Change("ws/a.md"), 0.25)
    # a.md alone has been quiet long enough at 0.55, but b.md's burst is still settling
    # when the batch would be due: everything waits until all are quiet.
    assert debouncer.next_due() == pytest.approx(0.55)
    assert debouncer.take(0.5) is None
    assert debouncer.take(0.55) == batch("ws/a.md", "ws/b.md", "MEMORY.md", events=4)


def test_continuous_writing_is_flushed_after_max_delay() -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    taken = []
    for step in range(1000):  # a log file appended every 50 ms for 50 s
        now = 0.05 * step
        debouncer.add(Change("ws/log.md"), now)
        got = debouncer.take(now)
        if got is not None:
            taken.append(now)
    assert len(taken) == pytest.approx(50 / MAX_DELAY, abs=2)


def test_continuous_activity_elsewhere_does_not_starve_a_quiet_path() -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    debouncer.add(Change("ws/quiet.md"), 0.0)
    first = None
    for step in range(200):
        now = 0.05 * step
        debouncer.add(Change("ws/busy.md"), now)
        got = debouncer.take(now)
        if got is not None and first is None:
            first = (now, got)
    assert first is not None
    now, got = first
    assert now == pytest.approx(MAX_DELAY)
    assert "ws/quiet.md" in got.paths  # ready: quiet for long
    assert "ws/busy.md" in got.paths  # pending for max_delay: flushed too


def test_moves_and_deletes_reach_the_batch() -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    for change in changes_for("moved", "/r/ws/old.md", "/r/ws/new.md", False, **WATCH):
        debouncer.add(change, 0.0)
    for change in changes_for("deleted", "/r/ws/gone.md", "", False, **WATCH):
        debouncer.add(change, 0.0)
    for change in changes_for("deleted", "/r/ws/logs", "", True, **WATCH):
        debouncer.add(change, 0.0)
    got = debouncer.take(1.0)
    assert got == batch("ws/old.md", "ws/new.md", "ws/gone.md", events=4, removed=("ws/logs",))
    assert got.sync_paths == ["ws/gone.md", "ws/logs", "ws/new.md", "ws/old.md"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a.md", "w/b.md", "w/c.md", "x/d.md"]), st.floats(0, 0.2)),
        min_size=1,
        max_size=200,
    )
)
def test_every_event_lands_in_exactly_one_batch(events: list[tuple[str, float]]) -> None:
    debouncer = Debouncer(QUIET, MAX_DELAY)
    now = 0.0
    seen: list[Batch] = []
    for path, gap in events:
        now += gap
        debouncer.add(Change(path), now)
        got = debouncer.take(now)
        if got is not None:
            seen.append(got)
    got = debouncer.take(now + QUIET)
    if got is not None:
        seen.append(got)
    assert len(debouncer) == 0
    assert sum(b.events for b in seen) == len(events)
    assert set().union(*(b.paths for b in seen)) == {path for path, _ in events}
    # A burst never produces more batches than it spans max_delay windows (+1).
    assert len(seen) <= now / MAX_DELAY + 1 + sum(1 for _, gap in events if gap >= QUIET)


# --- classification ----------------------------------------------------------------------

WATCH = {
    "root": "/r",
    "state_dir": ".carryd",
    "ignore_dirs": (".git", "node_modules"),
    "sidecar_file": "handoff/sidecar.json",
}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (("modified", "/r/ws/a.md", "", False), (Change("ws/a.md"),)),
        (("closed", "/r/MEMORY.md", "", False), (Change("MEMORY.md"),)),
        (("created", "/r/ws/a.MD", "", False), (Change("ws/a.MD"),)),
        (("deleted", "/r/ws/a.md", "", False), (Change("ws/a.md"),)),
        # editor atomic save: write a temp file, rename it over the original
        (("created", "/r/ws/.a.md.swp", "", False), ()),
        (("modified", "/r/ws/a.md~", "", False), ()),
        (("moved", "/r/ws/.a.md.tmp123", "/r/ws/a.md", False), (Change("ws/a.md"),)),
        # a real move or rename: both sides
        (("moved", "/r/ws/a.md", "/r/ws/b.md", False), (Change("ws/a.md"), Change("ws/b.md"))),
        # moved out of the watched tree (arrives as a delete) / into it (as a create)
        (("moved", "/r/ws/a.md", "/r/ws/a.txt", False), (Change("ws/a.md"),)),
        (("moved", "/r/ws/a.md", "/r/.git/x.md", False), (Change("ws/a.md"),)),
        # the sidecar is not Markdown but feeds the carry
        (
            ("modified", "/r/ws/handoff/sidecar.json", "", False),
            (Change("ws/handoff/sidecar.json"),),
        ),
        (("modified", "/r/ws/other.json", "", False), ()),
        (("modified", "/r/sidecar.json", "", False), ()),
        # carryd's own state and ignored folders
        (("modified", "/r/.carryd/carry/ws.md", "", False), ()),
        (("moved", "/r/.carryd/carry/.ws.md.tmp", "/r/.carryd/carry/ws.md", False), ()),
        (("modified", "/r/ws/node_modules/pkg/README.md", "", False), ()),
        (("created", "/r/.git", "", True), ()),
        (("modified", "/r/outside/../../etc/x.md", "", False), ()),
        # folders
        (("modified", "/r/ws", "", True), ()),
        (("created", "/r/ws/logs", "", True), (Change("ws/logs", "tree_added"),)),
        (("deleted", "/r/ws/logs", "", True), (Change("ws/logs", "tree_removed"),)),
        (
            ("moved", "/r/ws/logs", "/r/other/logs", True),
            (Change("ws/logs", "tree_removed"), Change("other/logs", "tree_added")),
        ),
        (("deleted", "/r", "", True), ()),
        (("opened", "/r/ws/a.md", "", False), ()),
        (("closed_no_write", "/r/ws/a.md", "", False), ()),
    ],
)
def test_changes_for_events(
    event: tuple[str, str, str, bool], expected: tuple[Change, ...]
) -> None:
    assert changes_for(*event, **WATCH) == expected


# --- which carries a batch rewrites ------------------------------------------------------

SOURCES = ("PLAN.md", "handoff/LEDGER.md", "handoff/sidecar.json")


@pytest.mark.parametrize(
    ("touched", "changed", "expected"),
    [
        ({"a"}, ["a/x.md"], ("a",)),
        (set(), ["a/x.md"], ()),
        (set(), ["a/PLAN.md"], ("a",)),
        (set(), ["b/handoff/LEDGER.md", "a/handoff/sidecar.json"], ("a", "b")),
        (set(), ["PLAN.md"], ()),  # a root-level PLAN.md is memory, not a workspace's plan
        ({None}, ["MEMORY.md"], None),  # root-level memory feeds every workspace
        ({"gone"}, ["gone/x.md"], ()),  # a workspace that no longer exists
        (set(), ["a/sub/PLAN.md"], ()),
    ],
)
def test_workspaces_for_carry(
    touched: set[str | None], changed: list[str], expected: object
) -> None:
    assert workspaces_for_carry(touched, changed, SOURCES, ["a", "b"]) == expected


# --- the thread --------------------------------------------------------------------------


class Recorder:
    """An applier that records what the worker hands it (the injection point, not a mock)."""

    def __init__(self) -> None:
        self.items: list[Batch | TaskName] = []
        self.closed = False
        self.applied = threading.Event()
        self.fail_on: str | None = None

    def apply(self, batch: Batch) -> None:
        self.items.append(batch)
        self.applied.set()
        if self.fail_on and self.fail_on in batch.paths:
            raise OSError(f"{self.fail_on}: unreadable")

    def run(self, task: TaskName) -> None:
        self.items.append(task)

    def close(self) -> None:
        self.closed = True


def test_worker_thread_applies_tasks_then_batches_and_survives_errors() -> None:
    clock = FakeClock()
    recorder = Recorder()
    errors: list[str] = []
    worker = Worker(
        lambda: recorder, quiet=QUIET, clock=clock, on_error=lambda w, e: errors.append(w)
    )
    worker.submit("reconcile")
    worker.submit("reconcile")  # already queued: not twice
    worker.start()
    try:
        assert worker.wait_idle(5)
        assert recorder.items == ["reconcile"]
        recorder.fail_on = "ws/bad.md"
        worker.enqueue(Change("ws/bad.md"))
        assert worker.queued == 1
        assert not worker.wait_idle(0.05)  # not due on the fake clock
        clock.now += QUIET
        worker.enqueue(Change("ws/good.md"))  # wakes the worker: still not due (good.md is new)
        assert not worker.wait_idle(0.05)
        clock.now += QUIET  # both quiet now: one batch
        worker.submit("verify")
        assert worker.wait_idle(5)
    finally:
        worker.stop()
    assert not worker.alive
    assert recorder.closed
    assert "verify" in recorder.items
    batches = [item for item in recorder.items if isinstance(item, Batch)]
    assert set().union(*(b.paths for b in batches)) == {"ws/bad.md", "ws/good.md"}
    assert errors == ["batch of 2 paths"]
    assert worker.events_received == 2


def test_worker_stop_finishes_the_current_batch() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    class Slow(Recorder):
        def run(self, task: TaskName) -> None:
            started.set()
            release.wait(5)
            finished.append(task)

    worker = Worker(Slow, quiet=QUIET)
    worker.submit("reconcile")
    worker.start()
    assert started.wait(5)
    worker.enqueue(Change("ws/a.md"))  # pending: dropped at stop (the next start reconciles)
    stopper = threading.Thread(target=worker.stop)
    stopper.start()
    release.set()
    stopper.join(5)
    assert finished == ["reconcile"]
    assert not worker.alive


def test_worker_reports_an_applier_that_cannot_open() -> None:
    def broken() -> Recorder:
        raise OSError("index.sqlite: permission denied")

    worker = Worker(broken, quiet=QUIET)
    worker.start()
    assert worker.opened.wait(5)
    worker.stop()
    assert isinstance(worker.open_error, OSError)


# --- the scheduler -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("daemon_toml", "expected"),
    [
        ("", {"reconcile": 10.0, "verify": 60.0}),
        ("archive_plan = true", {"reconcile": 10.0, "verify": 60.0, "archive": 1440.0}),
        ("archive_plan = true\narchive_minutes = 0", {"reconcile": 10.0, "verify": 60.0}),
        ("reconcile_minutes = 0\nverify_minutes = 0.5", {"verify": 0.5}),
    ],
)
def test_planned_jobs(daemon_toml: str, expected: dict[str, float]) -> None:
    configured = parse_settings(tomllib.loads("[daemon]\n" + daemon_toml))
    assert planned_jobs(configured) == expected


def test_scheduler_jobs_only_submit_tasks_and_stop_joins() -> None:
    submitted: list[str] = []
    fired = threading.Event()

    def submit(task: str) -> None:
        submitted.append(task)
        fired.set()

    configured = parse_settings(
        tomllib.loads("[daemon]\nreconcile_minutes = 0.001\nverify_minutes = 0")
    )
    scheduler = Scheduler(configured, submit)
    scheduler.start()
    try:
        assert scheduler.jobs == {"reconcile": 0.001}
        assert fired.wait(10)
        scheduler.reload(parse_settings(tomllib.loads("[daemon]\narchive_plan = true")))
        assert scheduler.jobs == {"reconcile": 10.0, "verify": 60.0, "archive": 1440.0}
    finally:
        scheduler.stop()
    assert set(submitted) == {"reconcile"}


def test_the_verify_task_repairs_damage_inside_the_index(tmp_path, use_model) -> None:
    """A reconcile only re-reads changed files; lost postings and vectors need the repair."""
    import sqlite3

    from carryd.daemon.indexer.indexing import sync_root
    from carryd.daemon.indexer.model import load_embedder_for
    from carryd.daemon.indexer.verifying import verify_root
    from carryd.daemon.layout import open_store
    from carryd.daemon.running.daemon_state import DaemonState
    from carryd.daemon.running.worker import Indexer

    root = tmp_path / "root"
    (root / "ws").mkdir(parents=True)
    (root / "ws" / "a.md").write_text("# Alpha\nThe alpha entry.\n\n# Beta\nThe beta entry.\n")
    settings_ = parse_settings({"root": str(root), "model": {"model_path": str(use_model)}})
    embedder, degraded = load_embedder_for(settings_)
    store = open_store(settings_)
    try:
        sync_root(settings_, store=store, embedder=embedder)
        with sqlite3.connect(settings_.db_path) as damage:
            damage.execute("DELETE FROM vectors")
            damage.execute("DELETE FROM postings")
        assert not verify_root(settings_, store=store).ok
        indexer = Indexer(
            settings_,
            store=store,
            embedder=embedder,
            degraded=degraded,
            state=DaemonState(settings_),
        )
        indexer.run("verify")
        indexer.close()
        assert verify_root(settings_, store=store).ok
        assert store.counts()["vectors"] == 2
    finally:
        store.close()


@contextlib.contextmanager
def two_workspace_indexer(tmp_path, use_model):  # type: ignore[no-untyped-def]
    """An `Indexer` over a root of two workspaces, `ws` and `other`, one entry each (the
    real model and store); yields (root, settings, indexer) and closes both after."""
    from carryd.daemon.indexer.model import load_embedder_for
    from carryd.daemon.layout import open_store
    from carryd.daemon.running.daemon_state import DaemonState
    from carryd.daemon.running.worker import Indexer

    root = tmp_path / "root"
    for workspace in ("ws", "other"):
        (root / workspace).mkdir(parents=True)
        (root / workspace / "a.md").write_text(f"# {workspace}\nThe {workspace} entry.\n")
    settings_ = parse_settings({"root": str(root), "model": {"model_path": str(use_model)}})
    embedder, degraded = load_embedder_for(settings_)
    store = open_store(settings_)
    indexer = Indexer(
        settings_, store=store, embedder=embedder, degraded=degraded, state=DaemonState(settings_)
    )
    try:
        yield root, settings_, indexer
    finally:
        indexer.close()
        store.close()


def test_a_batch_also_rewrites_a_damaged_carry_of_another_workspace(tmp_path, use_model) -> None:
    """A carry cut short is rewritten by the daemon's next batch, whatever that batch touched."""
    import os

    from carryd.daemon.layout import check_carry
    from carryd.daemon.running.worker import Batch

    with two_workspace_indexer(tmp_path, use_model) as (root, settings_, indexer):
        indexer.run("reconcile")
        whole = (settings_.carry_dir / "other.md").read_bytes()
        os.truncate(settings_.carry_dir / "other.md", 100)
        assert check_carry(settings_, "other").state == "damaged"
        (root / "ws" / "a.md").write_text("# ws\nThe ws entry, edited.\n")
        indexer.apply(Batch(frozenset({"ws/a.md"}), frozenset(), frozenset(), events=1))
        assert (settings_.carry_dir / "other.md").read_bytes() == whole
        assert check_carry(settings_, "other").state == "fresh"


def test_a_batch_reads_another_carry_again_only_when_its_files_moved(
    tmp_path, use_model, monkeypatch
) -> None:
    """An intact carry of another workspace is not re-read on every edit (that work grew with
    the number of workspaces); once its files move — here cut short — the next batch finds the
    damage and rewrites it."""
    import os

    import carryd.daemon.carries.damage_watch as watch
    from carryd.daemon.running.worker import Batch

    checked: list[str] = []
    check = watch.carry_damage

    def counted(settings: object, workspace: str) -> str | None:
        checked.append(workspace)
        return check(settings, workspace)  # type: ignore[arg-type]

    monkeypatch.setattr(watch, "carry_damage", counted)
    with two_workspace_indexer(tmp_path, use_model) as (root, settings_, indexer):
        indexer.run("reconcile")
        whole = (settings_.carry_dir / "other.md").read_bytes()
        for number in range(3):
            (root / "ws" / "a.md").write_text(f"# ws\nThe ws entry, edit {number}.\n")
            indexer.apply(Batch(frozenset({"ws/a.md"}), frozenset(), frozenset(), events=1))
        assert checked == ["other"]  # found intact once, then known by its files' stamps
        os.truncate(settings_.carry_dir / "other.md", 100)
        (root / "ws" / "a.md").write_text("# ws\nThe ws entry, edited again.\n")
        indexer.apply(Batch(frozenset({"ws/a.md"}), frozenset(), frozenset(), events=1))
        assert (settings_.carry_dir / "other.md").read_bytes() == whole


def test_an_edit_refreshes_the_shared_warm_snapshot_from_the_change_log(
    tmp_path, use_model
) -> None:
    """The worker's carries and the query thread read one warm snapshot; after the start-up
    load, an edited entry reaches it through the store's change log, never a full reload, and
    the answers are exactly a freshly loaded recaller's."""
    from carryd.daemon.indexer.indexing import sync_root
    from carryd.daemon.indexer.model import load_embedder_for
    from carryd.daemon.layout import open_store
    from carryd.daemon.recall.access import ThreadRecall
    from carryd.daemon.recall.recalling import Recaller, WarmSnapshot
    from carryd.daemon.running.daemon_state import DaemonState
    from carryd.daemon.running.worker import Batch, Indexer

    root = tmp_path / "root"
    (root / "ws" / "handoff").mkdir(parents=True)
    (root / "ws" / "PLAN.md").write_text("# Plan\n\n## Current state\n- tune the parser\n")
    (root / "ws" / "notes.md").write_text(
        "# Notes\n\n## Parser\nThe parser drops tabs.\n\n## Socket\nThe socket times out.\n"
    )
    settings_ = parse_settings({"root": str(root), "model": {"model_path": str(use_model)}})
    embedder, degraded = load_embedder_for(settings_)
    store = open_store(settings_)
    try:
        sync_root(settings_, store=store, embedder=embedder)
        warm = WarmSnapshot(store, embedder)
        indexer = Indexer(
            settings_,
            store=store,
            embedder=embedder,
            degraded=degraded,
            state=DaemonState(settings_),
            warm=warm,
        )
        query_thread = ThreadRecall(store, embedder, degraded, warm=warm)
        query_thread.current(settings_).answer("parser tabs")  # the one full load
        for text in ("The parser keeps tabs now.", "The parser drops tabs again."):
            notes = root / "ws" / "notes.md"
            notes.write_text(notes.read_text().replace(notes.read_text().split("\n")[3], text))
            indexer.apply(
                Batch(
                    paths=frozenset({"ws/notes.md"}),
                    trees_added=frozenset(),
                    trees_removed=frozenset(),
                    events=1,
                )
            )
            answer = query_thread.current(settings_).answer("parser tabs", min_confidence=0)
            fresh = Recaller(settings_, store, embedder, degraded).answer(
                "parser tabs", min_confidence=0
            )
            assert answer == fresh
        assert (root / ".carryd" / "carry" / "ws.md").exists()  # the carry recalled too
        indexer.close()
        assert warm.refreshes["full"] == 1 and warm.refreshes["log"] >= 2
    finally:
        store.close()
