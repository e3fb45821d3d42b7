"""`carryd run`: the daemon, in the foreground (systemd/launchd own its lifecycle).

Start-up, in order: take `<state>/daemon.lock` (a second daemon on the root refuses and
names the first one's pid), load the embedder once on a thread of its own (no model →
degraded, lexical-only) while the main thread keeps answering signals and asks systemd for
more start-up time (`EXTEND_TIMEOUT_USEC`), start the worker and queue a full reconcile (sync
+ every carry), start the watcher (events that arrive meanwhile queue behind the reconcile),
serve the control socket, start the scheduler and tell systemd READY=1 — before the
reconcile ends: a cold root of thousands of entries takes longer than systemd's 90 s start
timeout. Status says `reconciling` until it is done, then `running`.

Threads and their owners: the worker (`Worker`), the watcher (`Watcher`, watchdog's
observer), the control socket (`ControlServer`: accept + one per connection), the query
thread (`QueryService`: recall/expand/status reads with their own SQLite connection, so
answers never wait for a sync's transaction), the scheduler (`Scheduler`). The main thread
only waits for signals; shutdown stops them in reverse order and joins each.

SIGTERM/SIGINT: finish the current batch (a reconcile stops after the model batch it is
embedding and resumes at the next start), stop, exit 0; during the model load, stop at once
without waiting for the load (a download cannot be interrupted) and never reconcile.
SIGHUP: re-read the config, log what changed, apply it (a bad config is logged and the old
settings kept; the root, the state folder and the model need a restart and are kept too).
The root replaced at its path (moved away and recreated: `running.root_watch`): stop and start
again on the new folder, in the same process; the root gone for good: exit 1 with a message.

The lock is `daemon_lock`, the reload's pure merge `settings_reload`, the query thread
`query_service`; this module owns the lifecycle and re-exports their names.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from carryd.daemon.config import Settings, load_settings
from carryd.daemon.control import ControlServer, socket_answers
from carryd.daemon.errors import ConfigError
from carryd.daemon.indexer.interruptible import InterruptibleEmbedder, StopSync
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.layout import open_store
from carryd.daemon.progress import LINE_EVERY
from carryd.daemon.recall.recalling import WarmSnapshot
from carryd.daemon.recall.serving_model import ServingModel
from carryd.daemon.running.daemon_lock import LOCK_FILE, DaemonLock  # noqa: F401 — re-exported
from carryd.daemon.running.daemon_state import DaemonState
from carryd.daemon.running.notify import sd_notify
from carryd.daemon.running.query_service import QueryService
from carryd.daemon.running.root_watch import CHECK_EVERY, GONE_GRACE, RootIdentity
from carryd.daemon.running.scheduler import Scheduler
from carryd.daemon.running.settings_reload import (  # noqa: F401 — re-exported
    RESTART_ONLY,
    changed_keys,
    merge_reload,
)
from carryd.daemon.running.watcher import Watcher
from carryd.daemon.running.worker import Indexer, Worker, release_memory
from carryd.index.embed import Embedder
from carryd.index.errors import CarrydError
from carryd.index.snapshot_postings import RESIDENT_MIN_DF
from carryd.index.store import Store

# What `signal.signal` returns and takes back: a handler, a SIG_* constant or None.
SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

log = logging.getLogger(__name__)

# systemd counts its start timeout (90 s by default) until READY=1; while the model loads or
# downloads, ask for this much more every EXTEND_EVERY seconds.
EXTEND_EVERY = 10.0
EXTEND_BY_USEC = 30_000_000
# A sync embedding at least this many entries logs its progress (a cold root, a new model).
LOG_PROGRESS_FROM = 500


# --- the daemon --------------------------------------------------------------------------


@dataclass
class _Running:
    """A running daemon's parts, in start order (None: not started); stopped in reverse."""

    state: DaemonState
    store: Store | None = None
    worker: Worker | None = None
    watcher: Watcher | None = None
    control: ControlServer | None = None
    query: QueryService | None = None
    scheduler: Scheduler | None = None


class Daemon:
    """Own every thread of a running daemon; `run()` returns the exit code."""

    def __init__(self, settings: Settings, load_settings: Callable[[], Settings]) -> None:
        self.settings = settings
        self._load_settings = load_settings
        self._stop_requested = False
        self._reload_requested = False
        self._root = RootIdentity(settings.root_path)
        # Set when the folder at the root's path was replaced: `cmd_run` starts again on it.
        self.rerooting = False
        self._stop_signal: str | None = None
        self._indexer: Indexer | None = None
        self._model_loader: threading.Thread | None = None
        # Self-pipe: a signal handler only sets a flag and writes a byte. It must never take
        # a lock (an Event's, logging's): the handler runs on the main thread between two
        # bytecodes, possibly while that same thread holds the lock, and would deadlock.
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    # signals (run on the main thread between bytecodes: only set flags)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self._stop_signal = signal.Signals(signum).name
        self._stop_requested = True
        self._poke()

    def _on_hup(self, signum: int, frame: FrameType | None) -> None:
        self._reload_requested = True
        self._poke()

    def _poke(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"\0")

    def _install_signals(self) -> dict[int, SignalHandler]:
        previous: dict[int, SignalHandler] = {}
        for signum, handler in (
            (signal.SIGTERM, self._on_stop),
            (signal.SIGINT, self._on_stop),
            (signal.SIGHUP, self._on_hup),
        ):
            previous[signum] = signal.signal(signum, handler)
        return previous

    def _wait(self, seconds: float, *, wake_on_reload: bool = True) -> None:
        """Sleep until a signal arrives or `seconds` pass (no lock, no polling)."""
        if self._stop_requested or (wake_on_reload and self._reload_requested):
            return
        readable, _, _ = select.select([self._wake_read], [], [], seconds)
        if readable:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_read, 512)

    @property
    def loading_model(self) -> bool:
        """Whether a model load the daemon stopped without is still running (a download)."""
        return self._model_loader is not None and self._model_loader.is_alive()

    def close(self) -> None:
        for descriptor in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(descriptor)

    # the run

    def run(self) -> int:
        previous_handlers = self._install_signals()
        parts = _Running(DaemonState(self.settings))
        parts.state.write()
        try:
            model = self._load_model(parts.state)
            if model is None:
                return 0  # asked to stop while the model loaded: no reconcile after a stop
            worker = self._start_indexing(parts, *model)
            self._start_serving(parts, worker)
            self._serve(parts, worker)
            return 0
        finally:
            self._stop_all(parts, previous_handlers)

    def _load_model(self, state: DaemonState) -> tuple[Embedder | None, str | None] | None:
        """Load the embedder on a thread of its own; return (embedder, why degraded), or None
        when a stop is asked first. The main thread keeps handling signals meanwhile (a
        download or an ONNX load cannot be interrupted) and extends systemd's start timeout."""
        state.update(state="loading_model")
        outcome: list[tuple[Embedder | None, str | None] | BaseException] = []

        def load() -> None:
            try:
                outcome.append(load_embedder_for(self.settings))
            except BaseException as error:  # noqa: BLE001 — re-raised on the main thread
                outcome.append(error)
            finally:
                self._poke()

        # A daemon thread: a stop does not wait for a download; `cmd_run` exits without it.
        loader = self._model_loader = threading.Thread(
            target=load, name="carryd-model-load", daemon=True
        )
        started = time.monotonic()
        loader.start()
        next_extend = started
        while not outcome and not self._stop_requested:
            now = time.monotonic()
            if now >= next_extend:
                sd_notify(f"EXTEND_TIMEOUT_USEC={EXTEND_BY_USEC}", "STATUS=loading the model")
                next_extend = now + EXTEND_EVERY
            self._wait(next_extend - now, wake_on_reload=False)
        if not outcome:
            log.info("stop asked while the model was loading: not waiting for it")
            return None
        loader.join()
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        embedder, degraded = result
        if degraded:
            log.warning("model unavailable, recall is lexical-only: %s", degraded)
        else:
            log.info("model loaded in %.2f s", time.monotonic() - started)
        release_memory()  # loading the model frees far more than it keeps
        return embedder, degraded

    def _start_indexing(
        self, parts: _Running, embedder: Embedder | None, degraded: str | None
    ) -> Worker:
        """Open the store, start the worker (reconciling first) and the watcher; return the
        worker."""
        settings, state = self.settings, parts.state
        store = parts.store = open_store(settings)
        # One warm snapshot for the worker's carries and the query thread's answers, keeping
        # the common terms' postings (a new question never waits for them) and its rows out
        # of the garbage collector's full passes.
        # Its vectors are the serving set's model's: the old model's while a model change
        # re-embeds (`serving_model`).
        warm = WarmSnapshot(
            store,
            embedder,
            resident_min_df=RESIDENT_MIN_DF,
            freeze_heap=True,
            serving=ServingModel(settings, store, embedder),
        )
        if store.recovered:
            log.warning("index: %s", store.recovered)

        def open_indexer() -> Indexer:
            self._indexer = Indexer(
                settings,
                store=store,
                embedder=None
                if embedder is None
                else InterruptibleEmbedder(
                    embedder,
                    slice_size=settings.model.batch_size,
                    stopping=lambda: self._stop_requested,
                ),
                degraded=degraded,
                state=state,
                progress=self._sync_progress(state),
                warm=warm,
                child_syncs=True,
            )
            return self._indexer

        worker = parts.worker = Worker(
            open_indexer,
            quiet=settings.daemon.debounce_ms / 1000,
            on_error=state.record_error,
        )
        query = parts.query = QueryService(settings, store, embedder, degraded, state, warm=warm)
        state.set_queued_source(lambda: worker.queued)
        state.update(model=query.model_info())
        worker.submit("reconcile")
        worker.start()
        worker.opened.wait()
        if worker.open_error is not None:
            raise worker.open_error
        parts.watcher = Watcher(settings, worker.enqueue)
        parts.watcher.start()
        return worker

    def _sync_progress(self, state: DaemonState) -> Callable[[int, int], None]:
        """Return the worker's sync progress callback: counts into the status while it
        embeds (and a line in the log for a large sync), and a stop once one is asked."""

        logged = [0.0]  # when the journal last got a progress line

        def progress(embedded: int, total: int) -> None:
            if self._stop_requested:
                raise StopSync(f"{self._stop_signal or 'stop'} after {embedded} of {total}")
            if not total:
                return
            counts = {"embedded": embedded, "total": total}
            state.update(embedding=None if embedded >= total else counts)
            now = time.monotonic()
            if total >= LOG_PROGRESS_FROM and (now - logged[0] >= LINE_EVERY or embedded == total):
                logged[0] = now
                log.info("embedding: %d/%d entries", embedded, total)

        return progress

    def _start_serving(self, parts: _Running, worker: Worker) -> None:
        """Open the control socket and the schedule, and tell systemd the daemon is ready:
        the start-up reconcile goes on in the background."""
        settings = self.settings
        assert parts.query is not None  # started with the worker
        parts.control = ControlServer(settings.socket_path, parts.query.handlers())
        parts.control.start()
        parts.scheduler = Scheduler(settings, worker.submit)
        parts.scheduler.start()
        parts.state.update(state="reconciling")
        sd_notify(
            "READY=1",
            "STATUS=serving; reconciling the index and the carries",
            f"MAINPID={os.getpid()}",
        )
        log.info(
            "ready: serving %s on %s; reconciling in the background",
            settings.root_path,
            settings.socket_path,
        )

    def _serve(self, parts: _Running, worker: Worker) -> None:
        """Sleep until a stop is asked, reloading the config on SIGHUP; say when the
        start-up reconcile is done."""
        reconciled = False
        next_root_check = time.monotonic() + CHECK_EVERY
        while not self._stop_requested:
            if not reconciled and worker.items_finished >= 1:
                reconciled = True
                parts.state.update(state="running", embedding=None)
                sd_notify("STATUS=watching " + str(self.settings.root_path))
                log.info("start-up reconcile done: watching %s", self.settings.root_path)
            self._wait(CHECK_EVERY if reconciled else 0.1)
            if self._reload_requested:
                self._reload_requested = False
                self._reload(parts)
            if time.monotonic() >= next_root_check:
                next_root_check = time.monotonic() + CHECK_EVERY
                self._check_root()

    def _check_root(self) -> None:
        """Stop to re-root when another folder is at the root's path now; raise RootGone
        when none comes back there within GONE_GRACE seconds."""
        change = self._root.change()
        if change == "gone":
            deadline = time.monotonic() + GONE_GRACE
            while change == "gone" and time.monotonic() < deadline and not self._stop_requested:
                self._wait(0.2, wake_on_reload=False)
                change = self._root.change()
            if change == "gone" and not self._stop_requested:
                raise RootGone(
                    f"{self.settings.root_path}: the memory root was moved or deleted while "
                    f"the daemon ran; stopping (start `carryd run` again once the root is back)"
                )
        if change == "replaced":
            log.warning(
                "%s: the memory root was replaced (moved away and recreated); re-rooting on "
                "the folder now at that path",
                self.settings.root_path,
            )
            self.rerooting = True
            self._stop_requested = True

    def _stop_all(self, parts: _Running, previous_handlers: Mapping[int, SignalHandler]) -> None:
        """Stop every part in the reverse order of start (each stop joins its threads)."""
        if self._stop_signal:
            log.info("%s: finishing the current batch, then stopping", self._stop_signal)
        sd_notify("RELOADING=1" if self.rerooting else "STOPPING=1")
        parts.state.update(state="stopping")
        if parts.scheduler is not None:
            parts.scheduler.stop()
        if parts.watcher is not None:
            parts.watcher.stop()
        if parts.control is not None:
            parts.control.stop()
        if parts.worker is not None:
            parts.worker.stop()
        if parts.query is not None:
            parts.query.stop()
        if parts.store is not None:
            parts.store.close()
        parts.state.update(state="stopped", stopped_at=time.time())
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
        log.info("stopped")

    def _reload(self, parts: _Running) -> None:
        state = parts.state
        try:
            fresh = self._load_settings()
        except ConfigError as error:
            log.error("SIGHUP: config not reloaded, keeping the running settings: %s", error)
            state.record_error("reload", error)
            return
        effective, applied, kept = merge_reload(self.settings, fresh)
        for key in kept:
            log.warning("SIGHUP: %s changed; restart carryd to apply it (kept the old value)", key)
        if not applied:
            log.info("SIGHUP: config re-read, nothing to apply")
            return
        log.info("SIGHUP: applying changed settings: %s", ", ".join(applied))
        self.settings = effective
        if parts.worker is not None:
            parts.worker.set_timing(effective.daemon.debounce_ms / 1000)
        if self._indexer is not None:
            self._indexer.reload(effective)
        for part in (parts.watcher, parts.query, parts.scheduler):
            if part is not None:
                part.reload(effective)
        state.update(config_file=effective.config_file, reloaded_at=time.time())


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the daemon on the root until SIGTERM; return the exit code."""
    root = settings.root_path
    if not root.is_dir():
        raise ConfigError(f"root {root}: not a folder (pass --root DIR or set CARRYD_ROOT)")
    config = getattr(args, "config", None)
    cli_root = getattr(args, "root", None)

    def reload_settings() -> Settings:
        return load_settings(config, root=cli_root or str(root))

    while True:
        try:
            code, daemon = _run_once(settings, reload_settings)
        except RootGone as error:
            log.error("%s", error)
            return 1
        if not daemon.rerooting or daemon.loading_model:
            break
        settings = reload_settings()
        log.info("re-rooted: starting again on %s", settings.root_path)
    if daemon.loading_model:
        # Stopped during a model download: its thread cannot be interrupted, and the
        # download's thread pool would be joined at interpreter exit. Leave now.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


class RootGone(CarrydError):
    """The memory root disappeared from its path while the daemon ran, and nothing came back."""


def _run_once(settings: Settings, reload_settings: Callable[[], Settings]) -> tuple[int, Daemon]:
    """Given the settings, run one daemon on the root until it stops; return (exit code, it)."""
    with DaemonLock(settings):
        # Holding the lock, any socket file left is a crashed daemon's: clients must not
        # keep reaching it while the start-up reconcile runs.
        remove_stale_socket(settings.socket_path)
        daemon = Daemon(settings, reload_settings)
        try:
            code = daemon.run()
        finally:
            daemon.close()
    return code, daemon


def remove_stale_socket(path: Path) -> None:
    """Given the socket path, remove a socket file nobody listens on (a crashed daemon's)."""
    if path.is_socket() and not socket_answers(path):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            log.info("removed stale control socket %s", path)
