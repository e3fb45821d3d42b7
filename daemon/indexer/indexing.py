"""Given the settings, sync the index with the memory root (`carryd index`). The daemon, the
scheduler and the CLI all call `sync_root`.

A sync is plan, then apply:

1. what is on disk: a stat walk of the root (`paths=None`), or only the paths a watcher named;
2. `index.sync.plan` against the files table: a file whose size and mtime match its record is
   skipped unread; a file whose stat moved is read and hashed, and parsed only when its sha256
   differs;
3. parse the changed files, `index.sync.diff_entries` against their stored rows: new, changed
   and removed entries, postings to recompute (text changed), L0s to embed (no vector of the
   current model identity for that L0 hash);
4. apply, one transaction per batch of whole files (about `COMMIT_EMBEDDINGS` embeddings each):
   a file's entries, postings, vectors and record commit together, so an interrupted
   `carryd index` (Ctrl-C, kill) keeps every file it committed and the next run embeds only
   what is missing. Right before each commit the files read for it are checked again (stat and
   sha256); one that changed since it was read keeps its old record and is synced again at
   once, so no sync records a file as indexed with bytes it no longer has.

One writer at a time: the whole sync holds the root's index lock (`indexer.index_lock`),
whichever process runs it (the daemon, `carryd index`, a repair). A sync that commits in
several batches records its progress in `<state>/indexing.json` for `carryd status`.

Counts (`SyncReport`, the `carryd index --json` keys):
- `files`, `entries`  Markdown files and entries in the index after the run;
- `embedded`  L0 abstracts embedded in this run;
- `removed`   entries removed in this run (an entry whose id changed counts as removed + new);
- `unchanged` files skipped as unchanged in this run (same stat, or same sha256);
- `degraded`  null, or why no vectors could be made (the index still gets entries + postings);
- `problems`  files skipped, each with its path and reason (also printed to stderr).

A model identity change (another model, file, dim, pooling or prefix) that loads re-embeds
every entry into a new vector set while the old one keeps answering recall, and swaps it in
when it is complete (`indexer.vector_sets`; the notes say so); one that cannot load keeps both
and the run degrades (`usable_model`). A new `TOKENIZER_VERSION` recomputes every posting.
Checking and repairing is `indexer.verifying`; steps 1-3 are `indexer.sync_planning`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from carryd.daemon import state
from carryd.daemon.config import Settings
from carryd.daemon.indexer.calibrating import refresh_calibration
from carryd.daemon.indexer.index_lock import index_lock

# Re-exported for callers that predate the layout/model services (bench/).
from carryd.daemon.indexer.model import load_embedder_for as load_embedder_for
from carryd.daemon.indexer.model import model_identity_text
from carryd.daemon.indexer.scan import Problem
from carryd.daemon.indexer.sync_planning import (
    FileWork,
    SyncPlan,
    entry_changes,
    plan_sync,
    read_changes,
    usable_model,
)
from carryd.daemon.indexer.sync_progress import PhaseCallback, SyncProgress
from carryd.daemon.indexer.vector_sets import begin_vector_set, finish_vector_set
from carryd.daemon.layout import open_store as open_store
from carryd.index.embed import Embedder
from carryd.index.errors import EmbedderUnavailable, IndexCorrupt
from carryd.index.store import Batch, Store
from carryd.index.tokenize import TOKENIZER_VERSION

log = logging.getLogger(__name__)

# About this many L0s embedded (and committed) per transaction of a large sync: small enough
# that an interrupted cold index loses seconds of work, large enough that commits cost nothing
# next to the embedding. Whole files per transaction, so a batch may hold more.
COMMIT_EMBEDDINGS = 256
# Rows per transaction when nothing is embedded (a degraded model, a new tokenizer).
COMMIT_ENTRIES = 4096
# Times a sync re-reads files that changed between being read and being committed.
SETTLE_ATTEMPTS = 3


class LoadModel:
    """The default of `sync_root(embedder=…)`: load the model the settings name."""

    def __repr__(self) -> str:
        return "<load from settings>"


LOAD = LoadModel()


@dataclass(frozen=True)
class SyncReport:
    files: int
    entries: int
    embedded: int
    removed: int
    unchanged: int
    degraded: str | None
    problems: tuple[Problem, ...] = ()
    touched_workspaces: frozenset[str | None] = frozenset()
    seconds: float = 0.0
    parsed: int = 0  # files read and parsed in this run (0 when nothing changed)
    added: int = 0  # entries new in this run
    notes: tuple[str, ...] = ()  # once-only news: a recovered index, a model identity change
    # files whose record was held back: they changed between being read and the commit
    changed_since_read: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return exactly the CLI contract's keys plus "problems"."""
        return {
            "files": self.files,
            "entries": self.entries,
            "embedded": self.embedded,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "degraded": self.degraded,
            "problems": [problem.to_json() for problem in self.problems],
        }


# -- sync ----------------------------------------------------------------------------------


def sync_root(
    settings: Settings,
    *,
    store: Store | None = None,
    embedder: Embedder | None | LoadModel = LOAD,
    paths: Iterable[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    phase_progress: PhaseCallback | None = None,
) -> SyncReport:
    """Given the settings (and optionally an open store, an embedder or None for none, the
    relative paths that changed, and `progress(embedded so far, total to embed)`, called once
    before the first embedding batch and after each one), bring the index up to date and return
    what was done. The root's index lock (`indexer.index_lock`) is held for the whole sync: one
    writer at a time; a writer that has to wait says so on stderr. A whole-root sync records
    the files it skipped for `carryd status`."""
    started = time.perf_counter()
    degraded: str | None = None
    model: Embedder | None
    if isinstance(embedder, LoadModel):
        model, degraded = load_embedder_for(settings, lazy=True)
    else:
        model = embedder
        if model is None:
            degraded = "no embedding model was given"
    tracker = SyncProgress(settings, progress, phase_progress)
    with index_lock(settings):
        own_store = store is None
        active = open_store(settings) if store is None else store
        notes: list[str] = [active.recovered] if own_store and active.recovered else []
        try:
            try:
                report = _sync_settled(settings, active, model, degraded, paths, tracker)
            except IndexCorrupt as error:
                log.warning("index unusable during sync (%s); recovering", error)
                notes.append(active.recover() or f"index error ({error}); reopened it")
                report = _sync_settled(settings, active, model, degraded, None, tracker)
            except Exception:
                # The process goes on (the daemon): its pid must not read as "indexing".
                # Ctrl-C and kill leave the record, which then reads as an interrupted run.
                tracker.finished()
                raise
            tracker.finished()
            if paths is None:
                state.record_skipped(settings, [problem.to_json() for problem in report.problems])
            if isinstance(embedder, LoadModel) and (report.embedded or report.degraded):
                # What this run learnt about the model: status reads it when no daemon runs.
                identity = model.identity if model is not None else None
                state.record_last_index(
                    settings,
                    identity=model_identity_text(settings, identity),
                    degraded=report.degraded,
                )
        finally:
            if own_store:
                active.close()
    return dataclasses.replace(
        report, notes=tuple(notes) + report.notes, seconds=time.perf_counter() - started
    )


def _sync_settled(
    settings: Settings,
    store: Store,
    embedder: Embedder | None,
    degraded: str | None,
    paths: Iterable[str] | None,
    tracker: SyncProgress,
) -> SyncReport:
    """Given what to sync, sync it; then sync again the files that changed between being read
    and being committed (their file rows were held back), a few times at most."""
    report = _sync(settings, store, embedder, degraded, paths, tracker)
    for _ in range(SETTLE_ATTEMPTS):
        if not report.changed_since_read:
            break
        log.info(
            "%d files changed while being indexed; reading them again: %s",
            len(report.changed_since_read),
            ", ".join(report.changed_since_read[:5]),
        )
        again = _sync(
            settings, store, embedder, report.degraded, report.changed_since_read, tracker
        )
        report = merged(report, again)
    if report.changed_since_read:
        note = (
            f"{len(report.changed_since_read)} files kept changing while being indexed; "
            "the next sync reads them again"
        )
        log.warning("%s: %s", note, ", ".join(report.changed_since_read[:5]))
        report = dataclasses.replace(report, notes=(*report.notes, note))
    return report


def merged(first: SyncReport, again: SyncReport) -> SyncReport:
    """Given a sync and a sync after it (of the files that changed under it, or the daemon's
    own after its indexing child's), return one report."""
    seen = {(problem.path, problem.reason) for problem in first.problems}
    return dataclasses.replace(
        again,
        embedded=first.embedded + again.embedded,
        removed=first.removed + again.removed,
        unchanged=first.unchanged,
        problems=first.problems
        + tuple(p for p in again.problems if (p.path, p.reason) not in seen),
        touched_workspaces=first.touched_workspaces | again.touched_workspaces,
        parsed=first.parsed + again.parsed,
        added=first.added + again.added,
        notes=first.notes + again.notes,
    )


def _sync(
    settings: Settings,
    store: Store,
    embedder: Embedder | None,
    degraded: str | None,
    paths: Iterable[str] | None,
    tracker: SyncProgress,
) -> SyncReport:
    """Given an open store, bring it up to date: read what changed, plan, then apply."""
    lexicon_stale = store.meta("tokenizer") != str(TOKENIZER_VERSION)
    if lexicon_stale and store.counts()["entries"]:  # postings need the text: re-read it all
        log.info("tokenizer version changed: recomputing every entry's postings")
        paths = None
    work = read_changes(
        settings, store, paths, lexicon_stale=lexicon_stale, on_read=tracker.of("reading")
    )
    embedder, degraded = usable_model(store, embedder, degraded)  # never drops vectors for it
    vector_set = begin_vector_set(settings, store, embedder)
    changes = entry_changes(
        store, work, embedder, lexicon_stale=lexicon_stale, on_parsed=tracker.of("parsing")
    )
    sync_plan = plan_sync(
        store,
        work,
        changes,
        embedder,
        lexicon_stale=lexicon_stale,
        re_embedding=vector_set.re_embedding,
        on_tokenized=tracker.of("indexing terms"),
    )
    applied = _apply_sync(settings, store, sync_plan, embedder, degraded, tracker)
    notes = vector_set.notes
    if applied.degraded is None:
        notes += finish_vector_set(settings, store, embedder, vector_set)
    totals = store.counts()
    serving = not vector_set.re_embedding or store.next_identity() == ""
    if embedder is not None and applied.degraded is None and serving:
        # The semantic calibration, measured again only when the model or the corpus's size
        # moved (`carryd.daemon.indexer.calibrating`): a no-op check on an edit.
        refresh_calibration(store, embedder, totals["entries"])
    return SyncReport(
        files=totals["files"],
        entries=totals["entries"],
        embedded=applied.embedded,
        removed=len(changes.diff.removed),
        unchanged=work.unchanged,
        degraded=applied.degraded,
        problems=tuple(work.problems),
        touched_workspaces=changes.diff.touched_workspaces,
        parsed=changes.parsed,
        added=len(changes.diff.new),
        notes=tuple(notes),
        changed_since_read=applied.changed_since_read,
    )


@dataclass(frozen=True)
class _Applied:
    embedded: int
    degraded: str | None  # why embedding stopped (if it did)
    changed_since_read: tuple[str, ...]  # files whose record was held back


def _batches(files: tuple[FileWork, ...]) -> list[list[FileWork]]:
    """Given the per-file work, return it packed into transactions of about
    `COMMIT_EMBEDDINGS` embeddings (or `COMMIT_ENTRIES` rows), whole files each."""
    batches: list[list[FileWork]] = [[]]
    embeddings = rows = 0
    for work in files:
        if batches[-1] and (embeddings >= COMMIT_EMBEDDINGS or rows >= COMMIT_ENTRIES):
            batches.append([])
            embeddings = rows = 0
        batches[-1].append(work)
        embeddings += len(work.to_embed)
        rows += len(work.rows) + len(work.removed)
    return batches


def _apply_sync(
    settings: Settings,
    store: Store,
    sync_plan: SyncPlan,
    embedder: Embedder | None,
    degraded: str | None,
    tracker: SyncProgress,
) -> _Applied:
    """Given the plan, embed and commit it one batch of whole files at a time (an interrupted
    sync keeps every file it committed). Right before each commit, every file read for it is
    checked again: one that changed since it was read keeps its old record, so the next sync,
    or `_sync_settled` at once, reads it again. With several batches, batch N is committed on
    a writer thread while batch N+1 embeds (onnxruntime and SQLite both let go of the GIL). A
    model that cannot load is known before progress shows ("embedding 0/34" of no model)."""
    identity_key = sync_plan.identity_key
    batches = _batches(sync_plan.files)
    if embedder is not None and degraded is None and sync_plan.to_embed:
        try:
            getattr(embedder, "load", lambda: None)()
        except EmbedderUnavailable as error:
            degraded = str(error)
    embedding = embedder is not None and degraded is None
    total = sync_plan.to_embed if embedding else 0
    files_total = sum(1 for work in sync_plan.files if work.record or work.delete_file)
    embedded = committed = files_done = 0  # committed: the embeddings committed so far
    changed: list[str] = []
    tracker.update(embedded=0, total=total, files_done=0, files=files_total, batches=len(batches))
    pending_commit: Future[tuple[int, list[str]]] | None = None
    pending_vectors = 0

    def settle() -> None:
        nonlocal files_done, pending_commit, committed
        if pending_commit is None:
            return
        done, held_back = pending_commit.result()
        pending_commit = None
        files_done += done
        committed += pending_vectors
        changed.extend(held_back)
        tracker.update(
            embedded=committed,
            total=total,
            files_done=files_done,
            files=files_total,
            batches=len(batches),
        )

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryd-commit") as writer:
        try:
            for number, batch_files in enumerate(batches):
                vectors, degraded = _embedded(batch_files, embedder, degraded)
                embedded += len(vectors)
                settle()  # the previous batch is committed before this one is built
                last = number == len(batches) - 1
                complete: str | None = None
                if last and not sync_plan.re_embedding:  # (the swap marks the next set's)
                    if embedder is not None and degraded is None:
                        complete = identity_key
                    elif sync_plan.expects_vectors:
                        complete = ""
                    if complete == store.meta("vectors_complete"):
                        complete = None
                job = (settings.root_path, store, sync_plan, batch_files, vectors, complete)
                if len(batches) == 1:
                    # Nothing to overlap with (a daemon's edit): committed here, no thread.
                    result = _commit(*job, last=last)  # (raises: none pending)
                    pending_commit = Future()
                    pending_commit.set_result(result)
                else:
                    pending_commit = writer.submit(_commit, *job, last=last)
                pending_vectors = len(vectors)
            settle()
        finally:
            if pending_commit is not None:
                pending_commit.exception()  # wait: a SIGTERM finishes the transaction in flight
    return _Applied(embedded, degraded, tuple(changed))


def _embedded(
    batch_files: list[FileWork], embedder: Embedder | None, degraded: str | None
) -> tuple[tuple[tuple[str, str, bytes], ...], str | None]:
    """Given a batch's files, return their vectors (id, L0 hash, float32 bytes) and why
    embedding stopped, if it did (then no vectors)."""
    pending = [item for work in batch_files for item in work.to_embed]
    if not pending or embedder is None or degraded is not None:
        return (), degraded
    try:
        matrix = embedder.embed_passages([l0 for _, _, l0 in pending])
    except EmbedderUnavailable as error:
        log.info("embedding stopped: %s", error)  # reported as `degraded`
        return (), str(error)
    vectors = tuple(
        (entry_id, l0_hash, matrix[position].tobytes())
        for position, (entry_id, l0_hash, _) in enumerate(pending)
    )
    return vectors, degraded


def _commit(
    root: Path,
    store: Store,
    sync_plan: SyncPlan,
    batch_files: list[FileWork],
    vectors: tuple[tuple[str, str, bytes], ...],
    complete: str | None,
    *,
    last: bool,
) -> tuple[int, list[str]]:
    """Given one batch of files and their vectors, commit them (the records of files that
    changed since they were read held back); return the files committed and those held back."""
    identity_key = sync_plan.identity_key
    held_back = _changed_since_read(root, batch_files)
    batch = Batch(
        upsert_entries=tuple(row for work in batch_files for row in work.rows),
        delete_entries=tuple(entry_id for work in batch_files for entry_id in work.removed),
        postings=tuple(item for work in batch_files for item in work.postings),
        identity=identity_key,
        vectors=vectors,
        drop_vectors=tuple(item for work in batch_files for item in work.stale_vectors),
        upsert_files=tuple(
            work.record
            for work in batch_files
            if work.record is not None and work.path not in held_back
        ),
        delete_files=tuple(
            work.path for work in batch_files if work.delete_file and work.path not in held_back
        ),
        vectors_complete=complete,
        meta=(("tokenizer", str(TOKENIZER_VERSION)),) if last and sync_plan.retokenized else (),
    )
    # Nothing to write, no commit: the generation stays, so warm readers keep their caches.
    if batch != Batch(identity=identity_key):
        store.apply(batch)
    return len(batch.upsert_files) + len(batch.delete_files), held_back


def _changed_since_read(root: Path, files: Iterable[FileWork]) -> list[str]:
    """Given the files about to be committed, return those whose bytes on disk are no longer
    the bytes that were read (their stat or sha256 moved)."""
    changed: list[str] = []
    for work in files:
        path = root / work.path
        if work.record is None:
            # A deleted file that is back has no record after this commit: the next sync (the
            # daemon's, for the event its creation made) reads it as new.
            continue
        try:
            stat = path.stat()
            if (stat.st_size, stat.st_mtime_ns) != (work.record.size, work.record.mtime_ns):
                changed.append(work.path)
                continue
            data = path.read_bytes()
        except OSError:
            changed.append(work.path)
            continue
        if hashlib.sha256(data).hexdigest() != work.record.sha256:
            changed.append(work.path)
    return changed
