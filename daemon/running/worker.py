"""The daemon's one work queue: debounce and coalesce changes, then sync and rewrite carries.

Watcher callbacks and scheduled jobs only *enqueue* (`Worker.enqueue`, `Worker.submit`); one
thread applies, so there is exactly one writer of the index and the carries.

- `Debouncer` (pure, clock passed in): a path is ready once it has been quiet for the
  debounce period, or has been pending for `max_delay` (a file written continuously still
  gets synced). A batch is taken when every pending path is quiet, or when the oldest one hits
  `max_delay`, so a burst of saves across many files becomes one batch.
- `Worker`: the thread. It waits on a condition until the next due time (no polling), runs
  submitted tasks and batches in order, and on `stop()` finishes what it is doing and returns.
- `Indexer`: what a batch means — `sync_root(paths=…)`, then `write_carries()` for the
  workspaces the sync touched plus those whose PLAN / ledger / sidecar changed. It is the
  only writer of the daemon's one `Store` (which is built for one writer and any number of
  reader threads).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal, Protocol

from carryd.daemon.carries.archive import archive_plans
from carryd.daemon.carries.carrying import CarryResult, write_carries
from carryd.daemon.carries.damage_watch import CarryDamageWatch
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.interruptible import StopSync
from carryd.daemon.indexer.sync_child import sync_root_forked
from carryd.daemon.indexer.verifying import repair_root, verify_root
from carryd.daemon.layout import list_workspaces
from carryd.daemon.recall.access import LocalRecall, ThreadRecall
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.daemon.recall.recalling import WarmSnapshot
    from carryd.daemon.running.daemon_state import DaemonState
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)

ChangeKind = Literal["file", "tree_added", "tree_removed"]
TaskName = Literal["reconcile", "verify", "archive"]
Clock = Callable[[], float]


@dataclass(frozen=True)
class Change:
    """One thing that happened under the root, as the watcher saw it."""

    path: str  # POSIX, relative to the root
    kind: ChangeKind = "file"  # a file created/changed/deleted, or a whole folder appeared/left


@dataclass(frozen=True)
class Batch:
    """Changes that became due together; `events` counts the raw events coalesced into it."""

    paths: frozenset[str]  # files to sync (created, changed or deleted)
    trees_added: frozenset[str]  # folders that appeared (created, moved in)
    trees_removed: frozenset[str]  # folders that left (deleted, moved out)
    events: int

    @property
    def sync_paths(self) -> list[str]:
        """The relative paths to hand to `sync_root`: it walks a folder that exists and drops
        every indexed file under one that does not."""
        return sorted(self.paths | self.trees_added | self.trees_removed)


@dataclass
class _Pending:
    first: float
    last: float
    events: int


class Debouncer:
    """Given changes stamped with times, return batches once their paths are quiet."""

    def __init__(self, quiet: float, max_delay: float) -> None:
        self.quiet = quiet
        self.max_delay = max(max_delay, quiet)
        self._pending: dict[Change, _Pending] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, change: Change, at: float) -> None:
        pending = self._pending.get(change)
        if pending is None:
            self._pending[change] = _Pending(first=at, last=at, events=1)
        else:
            pending.last = max(pending.last, at)
            pending.events += 1

    def next_due(self) -> float | None:
        """Return when the next batch is due (None when nothing is pending)."""
        if not self._pending:
            return None
        all_quiet = max(p.last for p in self._pending.values()) + self.quiet
        oldest_cap = min(p.first for p in self._pending.values()) + self.max_delay
        return min(all_quiet, oldest_cap)

    def take(self, now: float) -> Batch | None:
        """Given the time, return the due batch and forget it; None when nothing is due."""
        due = self.next_due()
        if due is None or now < due:
            return None
        # Same sums as next_due(), so "due" and "ready" agree to the last bit. Once the oldest
        # change has waited max_delay a sync is forced anyway, so everything pending rides
        # along: a long burst over several paths costs one batch per max_delay window.
        forced = any(now >= p.first + self.max_delay for p in self._pending.values())
        ready = [
            change for change, p in self._pending.items() if forced or now >= p.last + self.quiet
        ]
        if not ready:
            return None
        events = sum(self._pending.pop(change).events for change in ready)
        return Batch(
            paths=frozenset(c.path for c in ready if c.kind == "file"),
            trees_added=frozenset(c.path for c in ready if c.kind == "tree_added"),
            trees_removed=frozenset(c.path for c in ready if c.kind == "tree_removed"),
            events=events,
        )


class Applier(Protocol):
    """What the worker thread drives; made on that thread, closed there."""

    def apply(self, batch: Batch) -> None: ...
    def run(self, task: TaskName) -> None: ...
    def close(self) -> None: ...


class Worker:
    """The one thread that applies changes and scheduled tasks, in order."""

    def __init__(
        self,
        open_applier: Callable[[], Applier],
        *,
        quiet: float,
        max_delay: float | None = None,
        clock: Clock = time.monotonic,
        on_error: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self._open_applier = open_applier
        self._clock = clock
        self._debouncer = Debouncer(quiet, max_delay if max_delay is not None else 10 * quiet)
        self._tasks: deque[TaskName] = deque()
        self._condition = threading.Condition()
        self._stopping = False
        self._busy = False
        self._thread: threading.Thread | None = None
        self._on_error = on_error
        self.events_received = 0
        self.batches_applied = 0
        self.tasks_run = 0
        self.items_finished = 0  # batches and tasks, failed or not
        self.opened = threading.Event()  # set once the applier is open (or failed to open)
        self.open_error: BaseException | None = None

    # called from any thread ------------------------------------------------------------

    def enqueue(self, change: Change) -> None:
        """Record a change now; the worker applies it once it is quiet (watcher callbacks)."""
        with self._condition:
            self._debouncer.add(change, self._clock())
            self.events_received += 1
            self._condition.notify()

    def submit(self, task: TaskName) -> None:
        """Queue a task (reconcile, verify, archive) behind what is already queued."""
        with self._condition:
            if task not in self._tasks:
                self._tasks.append(task)
            self._condition.notify()

    def set_timing(self, quiet: float, max_delay: float | None = None) -> None:
        with self._condition:
            self._debouncer.quiet = quiet
            self._debouncer.max_delay = max(max_delay or 10 * quiet, quiet)
            self._condition.notify()

    @property
    def queued(self) -> int:
        """Pending paths plus queued tasks (what a status report calls queued events)."""
        with self._condition:
            return len(self._debouncer) + len(self._tasks)

    @property
    def busy(self) -> bool:
        return self._busy

    def poll(self, now: float) -> Batch | TaskName | None:
        """Given the time, take the next thing to do: tasks first, then a due batch."""
        with self._condition:
            if self._tasks:
                return self._tasks.popleft()
            return self._debouncer.take(now)

    def idle(self) -> bool:
        """Whether nothing is queued, pending or running."""
        with self._condition:
            return not self._tasks and not len(self._debouncer) and not self._busy

    # lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="carryd-worker")
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Let the current batch or task finish, then end the thread and join it."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # the thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            applier = self._open_applier()
        except BaseException as error:  # noqa: BLE001 — handed to the starting thread, which re-raises
            self.open_error = error
            self.opened.set()
            log.error("worker could not start: %s", error)
            return
        self.opened.set()
        try:
            while True:
                item = self._next()
                if item is None:
                    return
                try:
                    if isinstance(item, Batch):
                        applier.apply(item)
                        self.batches_applied += 1
                    else:
                        applier.run(item)
                        self.tasks_run += 1
                except Exception as error:  # noqa: BLE001 — one bad batch must not end the daemon
                    label = item if isinstance(item, str) else f"batch of {len(item.paths)} paths"
                    if isinstance(error, CarrydError):  # says what is wrong: no traceback
                        log.error("%s failed: %s", label, error)
                    else:
                        log.exception("%s failed", label)
                    if self._on_error is not None:
                        self._on_error(str(label), error)
                finally:
                    with self._condition:
                        self.items_finished += 1
                        self._busy = False
                        self._condition.notify_all()
        finally:
            applier.close()

    def _next(self) -> Batch | TaskName | None:
        with self._condition:
            while not self._stopping:
                if self._tasks:
                    self._busy = True
                    return self._tasks.popleft()
                now = self._clock()
                batch = self._debouncer.take(now)
                if batch is not None:
                    self._busy = True
                    return batch
                due = self._debouncer.next_due()
                self._condition.wait(None if due is None else max(due - now, 0.001))
            return None

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running (tests and benchmarks); return success."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._tasks or len(self._debouncer) or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(min(remaining, 0.05))
            return True


# --- what a batch means ----------------------------------------------------------------


def carry_sources(settings: Settings) -> tuple[str, ...]:
    """Given settings, return the per-workspace files a carry is planned from."""
    carry = settings.carry
    return (carry.plan_file, carry.ledger_file, carry.sidecar_file)


def workspaces_for_carry(
    touched: Iterable[str | None],
    changed_paths: Iterable[str],
    sources: tuple[str, ...],
    existing: Iterable[str],
) -> tuple[str, ...] | None:
    """Given what a sync touched and which paths changed, return the carries to rewrite.

    None means every workspace: root-level memory (workspace None) feeds every
    workspace's recalled-memory segment. A workspace's PLAN / ledger / sidecar changing
    rewrites its carry even when the index saw no entry change (a sidecar is not Markdown).
    Workspaces that no longer exist are left out.
    """
    wanted: set[str] = set()
    for workspace in touched:
        if workspace is None:
            return None
        wanted.add(workspace)
    for path in changed_paths:
        parts = PurePosixPath(path).parts
        if len(parts) >= 2 and "/".join(parts[1:]) in sources:
            wanted.add(parts[0])
    present = set(existing)
    return tuple(sorted(wanted & present))


def release_memory() -> None:
    """Hand freed heap back to the OS (glibc's malloc_trim; elsewhere nothing).

    Loading the model and embedding a large batch free much more than they keep; glibc keeps
    the freed pages, which a long-lived daemon would carry as idle RSS forever.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


# Embeddings in one sync above which the worker trims the heap afterwards.
TRIM_AFTER_EMBEDDED = 64


class Indexer:
    """Apply batches and tasks against the index and the carries (one per worker thread)."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store,
        embedder: Embedder | None,
        degraded: str | None,
        state: DaemonState,
        progress: Callable[[int, int], None] | None = None,
        warm: WarmSnapshot | None = None,
        child_syncs: bool = False,
    ) -> None:
        self.settings = settings
        # The daemon's: a big sync runs in a child process (`carryd.daemon.indexer.sync_child`).
        self._sync_root = sync_root_forked if child_syncs else sync_root
        self.store = store  # owned by the caller, which closes it after the worker stops
        self.embedder = embedder
        self.degraded = degraded
        self.state = state
        self.progress = progress  # `sync_root`'s; may raise StopSync
        self._recall = ThreadRecall(store, embedder, degraded, warm=warm)
        self._damage = CarryDamageWatch()

    def reload(self, settings: Settings) -> None:
        """Use new settings from the next batch on (called on the worker thread via a task)."""
        self.settings = settings

    def recaller(self) -> LocalRecall:
        return self._recall.current(self.settings)

    def apply(self, batch: Batch) -> None:
        self._sync(batch.sync_paths, changed=batch.paths, kind="batch", events=batch.events)

    def run(self, task: TaskName) -> None:
        if task == "reconcile":
            self._reconcile(kind="reconcile", every_carry=True, events=0)
        elif task == "verify":
            self._verify()
        elif task == "archive":
            self._archive()

    def close(self) -> None:
        self._recall.close()

    # steps

    def _reconcile(self, *, kind: str, every_carry: bool, events: int) -> None:
        self._sync(None, changed=(), kind=kind, events=events, every_carry=every_carry)

    def _sync(
        self,
        paths: list[str] | None,
        *,
        changed: Iterable[str],
        kind: str,
        events: int,
        every_carry: bool = False,
    ) -> None:
        started = time.monotonic()
        log.info("%s: syncing %s paths", kind, "all" if paths is None else len(paths))
        log.debug("%s paths: %s", kind, paths)
        report = None
        if paths is None or paths:
            try:
                report = self._sync_root(
                    self.settings,
                    store=self.store,
                    embedder=self.embedder,
                    paths=paths,
                    progress=self.progress,
                )
            except StopSync as stop:
                log.info("%s stopped (%s); the next sync resumes it", kind, stop)
                return
        touched = report.touched_workspaces if report is not None else frozenset()
        existing = list_workspaces(self.settings)
        targets = (
            None
            if every_carry
            else workspaces_for_carry(touched, changed, carry_sources(self.settings), existing)
        )
        if targets is not None:
            # A carry found damaged (cut short, its manifest garbage) is rewritten now, not at
            # the next reconcile: a hook meanwhile re-plans it on every session start.
            others = [w for w in existing if w not in targets]
            damaged = self._damage.damaged(self.settings, others)
            targets = tuple(sorted({*targets, *damaged}))
        results: list[CarryResult] = []
        if targets is None or targets:
            results = write_carries(
                self.settings,
                None if targets is None else list(targets),
                store=self.store,
                recaller=self.recaller(),
            )
        if paths is None or getattr(report, "embedded", 0) >= TRIM_AFTER_EMBEDDED:
            release_memory()
        seconds = time.monotonic() - started
        self.state.record_sync(
            kind=kind,
            paths=None if paths is None else len(paths),
            events=events,
            report=report,
            carries=results,
            seconds=seconds,
        )
        log.info(
            "%s done: %s paths, %s carries written (%s changed) in %.3f s",
            kind,
            "all" if paths is None else len(paths),
            len(results),
            sum(1 for r in results if getattr(r, "changed", False)),
            seconds,
        )

    def _verify(self) -> None:
        report = verify_root(self.settings, store=self.store)
        self.state.record_verify(report)
        if not report.ok:
            # A reconcile only re-reads changed files; damage inside the index (lost postings
            # or vectors) needs the repair, then every carry is re-planned from the fixed index.
            log.warning("verify: %d problems; repairing the index", len(report.problems))
            repair_root(self.settings, report, store=self.store, embedder=self.embedder)
            self._reconcile(kind="repair", every_carry=True, events=0)

    def _archive(self) -> None:
        if not self.settings.daemon.archive_plan:
            return
        for result in archive_plans(self.settings):
            if result.changed:
                # The watcher sees PLAN.md change and the next batch re-plans the carry.
                log.info(
                    "archive: %s: %d lines of settled history moved to %s",
                    result.plan_path,
                    result.moved_lines,
                    result.archive_path,
                )
