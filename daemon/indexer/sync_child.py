"""A big sync in a child process, so the daemon's memory stays its idle size.

Embedding thousands of entries in the daemon's own process leaves its heap fragmented: at
10,000 entries a daemon that cold-indexed its root idled about 20 MiB above one started on an
indexed root, although only ~5 MB of live objects were new (glibc and pymalloc cannot hand
back pages that one long-lived allocation pins). Reading and parsing alone left half of it.

So the worker first sizes a sync with a stat walk against the files table (no file opened):
when it would read at least `CHILD_BYTES` of Markdown, or re-embed at least `CHILD_EMBEDDINGS`
entries for a new model, a child process (`python -m carryd.daemon.indexer.sync_child`) runs that
sync with the same settings and model, and its heap goes away with it. The daemon then runs the
same sync itself, which finds the work done (a stat walk), or does what the child left:
a child that fails to start, crashes or loads another model is a warning, never a lost sync.

The child holds the index lock like any writer and commits batch by batch (an interrupted
child keeps what it committed). It tells the daemon its progress on stdout, one line per
committed batch, and ends with its report; the daemon's stop (SIGTERM) reaches it as SIGTERM,
and it stops after the batch in flight, as the daemon's own sync would. A child whose daemon
died stops at its next progress line (a broken pipe). It runs in a session of its own, so a
terminal's Ctrl-C reaches the daemon, which stops it.

Memory while a child runs: the daemon plus a second copy of the model (about 250 MiB more at
the peak), for the length of the sync only.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from carryd.daemon.indexer.indexing import SyncReport, merged, sync_root
from carryd.daemon.indexer.sync_planning import bytes_to_read
from carryd.index.errors import IndexCorrupt

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

# Also when it runs as the child, as __main__.
log = logging.getLogger("carryd.daemon.indexer.sync_child")

# A sync reading at least this much Markdown runs in a child (about 1,000 entries of typical
# memory notes: ~15 s of embedding, against ~2 s to start a child and load the model).
CHILD_BYTES = 256 * 1024
# A new model re-embeds what is indexed without reading a file: as many entries as above.
CHILD_EMBEDDINGS = 1000
# How long a stopping child may take to finish its batch in flight (systemd waits 90 s).
STOP_WAIT = 60.0
# The child's own command; a test may point it at one that fails.
CHILD_COMMAND = (sys.executable, "-m", "carryd.daemon.indexer.sync_child")


def sync_root_forked(
    settings: Settings,
    *,
    store: Store,
    embedder: Embedder | None,
    paths: list[str] | None,
    progress: Callable[[int, int], None] | None = None,
    command: Sequence[str] = CHILD_COMMAND,
) -> SyncReport:
    """Given what `sync_root` takes (an embedder already loaded), bring the index up to date
    as `sync_root` does, a big sync's work done in a child process; return the whole sync's
    report. An exception from `progress` (a stop) stops the child after its batch in flight
    and is raised here."""
    started = time.perf_counter()
    first = None
    if embedder is not None and _big(settings, store, embedder, paths):
        first = _sync_in_child(settings, embedder, paths, progress, command)
    report = sync_root(settings, store=store, embedder=embedder, paths=paths, progress=progress)
    if first is None:
        return report
    return dataclasses.replace(merged(first, report), seconds=time.perf_counter() - started)


def _big(settings: Settings, store: Store, embedder: Embedder, paths: Iterable[str] | None) -> bool:
    """Whether a sync of these paths is worth a child: from a stat walk and row counts. An
    index found corrupt here is the daemon's own sync's to recover (it moves the file aside)."""
    try:
        if bytes_to_read(settings, store, paths) >= CHILD_BYTES:
            return True
        key = embedder.identity.key()
        if store.meta("vectors_complete") == key:
            return False
        missing = store.counts()["entries"] - store.vector_count(key)
    except IndexCorrupt:
        return False
    return missing >= CHILD_EMBEDDINGS


def _sync_in_child(
    settings: Settings,
    embedder: Embedder,
    paths: list[str] | None,
    progress: Callable[[int, int], None] | None,
    command: Sequence[str],
) -> SyncReport | None:
    """Run the sync in a child; return its report, or None when it did not finish (said in
    the log; the caller's own sync then does the rest)."""
    request = pickle.dumps((_portable(settings), embedder.identity.key(), paths))
    try:
        child = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a terminal's Ctrl-C is the daemon's to pass on
        )
    except OSError as error:
        log.warning("could not start a child process to index in (%s); indexing here", error)
        return None
    assert child.stdin is not None and child.stdout is not None
    log.info("indexing in a child process (pid %d)", child.pid)
    report: SyncReport | None = None
    try:
        try:
            with child.stdin:
                child.stdin.write(request)
        except BrokenPipeError:
            pass  # the child is gone already: its exit code says so below
        for line in child.stdout:
            kind, _, rest = line.decode("ascii", "replace").strip().partition(" ")
            if kind == "P" and progress is not None:
                embedded, total = (int(number) for number in rest.split())
                progress(embedded, total)
            elif kind == "R":
                report = pickle.loads(base64.b64decode(rest))
    except BaseException:
        _stop(child)
        raise
    finally:
        child.stdout.close()
        code = child.wait()
    if report is None:
        log.warning(
            "the indexing child process (pid %d) ended without finishing (exit %s); "
            "indexing the rest here",
            child.pid,
            code,
        )
        return None
    log.info("the child process (pid %d) embedded %d entries", child.pid, report.embedded)
    return report


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Ask the child to stop after its batch in flight and wait for it (a batch is seconds);
    one that does not stop within `STOP_WAIT` is killed (its transaction rolls back)."""
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    killer = threading.Timer(STOP_WAIT, _kill, (child,))
    killer.start()
    try:
        if child.stdout is not None:
            for _ in child.stdout:  # drained: a child blocked on a full pipe never exits
                pass
    finally:
        killer.cancel()


def _kill(child: subprocess.Popen[bytes]) -> None:
    log.warning("the indexing child process (pid %d) did not stop: killing it", child.pid)
    child.kill()


def _portable(settings: Settings) -> Settings:
    """The settings with their read-only mapping as a dict (a mappingproxy cannot be pickled)."""
    return dataclasses.replace(settings, workspaces=dict(settings.workspaces))


# --- the child -------------------------------------------------------------------------------


def main() -> int:
    """The child: read (settings, model identity key, paths) from stdin, sync, report on stdout."""
    from carryd.daemon.indexer.interruptible import InterruptibleEmbedder
    from carryd.daemon.indexer.model import load_embedder_for

    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"carryd indexing child {os.getpid()} %(levelname)s %(name)s: %(message)s",
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    settings, identity_key, paths = pickle.load(sys.stdin.buffer)
    settings = dataclasses.replace(
        settings,
        workspaces=types.MappingProxyType(dict(settings.workspaces)),
        # The daemon has the model: a child never downloads one.
        model=dataclasses.replace(settings.model, allow_download=False),
    )
    embedder, degraded = load_embedder_for(settings)
    if embedder is None or embedder.identity.key() != identity_key:
        log.warning("not the daemon's model here (%s): leaving the sync to it", degraded)
        return 2
    # The protocol gets stdout's descriptor to itself; whatever a library prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def tell(line: str) -> None:
        out.write(line.encode("ascii") + b"\n")
        out.flush()  # a daemon gone: BrokenPipeError, and the sync stops

    def progress(embedded: int, total: int) -> None:
        if stopping.is_set():
            raise _Stopped(f"stop asked after {embedded} of {total}")
        tell(f"P {embedded} {total}")

    interruptible = InterruptibleEmbedder(
        embedder, slice_size=settings.model.batch_size, stopping=stopping.is_set
    )
    try:
        report = sync_root(settings, embedder=interruptible, paths=paths, progress=progress)
    except Exception as error:  # a stop (ours or the embedder's), a broken pipe
        if not stopping.is_set() and not isinstance(error, BrokenPipeError | _Stopped):
            raise
        log.info("stopped: %s", error)
        return 0
    tell("R " + base64.b64encode(pickle.dumps(report)).decode("ascii"))
    return 0


class _Stopped(Exception):
    """The daemon asked the child to stop (or went away)."""


if __name__ == "__main__":
    sys.exit(main())
