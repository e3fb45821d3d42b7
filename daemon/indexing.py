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
4. apply: one transaction per batch of up to `EMBED_CHUNK` embeddings; the file rows are written
   in the last one, so an interrupted sync re-reads those files next time and converges.

Counts (`SyncReport`, the `carryd index --json` keys):
- `files`     Markdown files in the index after the run;
- `entries`   entries in the index after the run;
- `embedded`  L0 abstracts embedded in this run;
- `removed`   entries removed in this run (an entry whose id changed counts as removed + new);
- `unchanged` files skipped as unchanged in this run (same stat, or same sha256);
- `degraded`  null, or why no vectors could be made (the index still gets entries + postings);
- `problems`  files skipped, each with its path and reason (also printed to stderr).

A model identity change (another model, file, dim, pooling or prefix) re-embeds every entry; the
vectors of the old identity are dropped after a copy of the index is kept as
`index.sqlite.old-model-<UTC>`; the report's notes and the log say so once. A new
`TOKENIZER_VERSION` re-reads every file and recomputes every posting (nothing is re-embedded).
Checking the index against the files (`carryd verify`) and repairing it is
`carryd.daemon.verifying`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.config import Settings

# Re-exported for callers that predate the layout/model services (bench/).
from carryd.daemon.layout import open_store as open_store
from carryd.daemon.model import load_embedder_for as load_embedder_for
from carryd.daemon.scan import (
    Problem,
    in_scope,
    is_markdown,
    read_markdown,
    scan_paths,
    scan_root,
)
from carryd.index.embed import (
    Embedder,
)
from carryd.index.entries import Entry, parse_entries
from carryd.index.errors import EmbedderUnavailable, IndexCorrupt
from carryd.index.redact import redact
from carryd.index.store import Batch, Store
from carryd.index.sync import (
    EntryDiff,
    EntryRow,
    FileRecord,
    FileStat,
    accept_entries,
    diff_entries,
    plan,
    row_for,
    stat_trusted,
)
from carryd.index.tokenize import TOKENIZER_VERSION, terms

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# L0s embedded (and vectors committed) per transaction during a large sync.
EMBED_CHUNK = 2048


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
) -> SyncReport:
    """Given the settings (and optionally an open store, an embedder or None for none, and the
    relative paths that changed), bring the index up to date and return what was done."""
    started = time.perf_counter()
    own_store = store is None
    active = open_store(settings) if store is None else store
    notes: list[str] = [active.recovered] if own_store and active.recovered else []
    degraded: str | None = None
    if isinstance(embedder, LoadModel):
        embedder, degraded = load_embedder_for(settings, lazy=True)
    elif embedder is None:
        degraded = "no embedding model was given"
    try:
        try:
            report = _sync(settings, active, embedder, degraded, paths)
        except IndexCorrupt as error:
            log.warning("index unusable during sync (%s); recovering", error)
            notes.append(active.recover() or f"index error ({error}); reopened it")
            report = _sync(settings, active, embedder, degraded, None)
    finally:
        if own_store:
            active.close()
    return dataclasses.replace(
        report, notes=tuple(notes) + report.notes, seconds=time.perf_counter() - started
    )


@dataclass
class _Work:
    """What a sync found on disk against the files table (steps 1-2 of `_sync`)."""

    problems: list[Problem] = field(default_factory=list)
    file_rows: list[FileRecord] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    unchanged: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # path -> text of files to parse


@dataclass(frozen=True)
class _EntryChanges:
    """The parsed entries of changed files, diffed against the stored ones (step 3)."""

    parsed: int  # files parsed
    accepted: tuple[Entry, ...]
    diff: EntryDiff
    old_by_id: Mapping[str, EntryRow]


@dataclass(frozen=True)
class _SyncPlan:
    """Everything one sync writes, decided before anything is embedded or written."""

    identity_key: str
    rows: tuple[EntryRow, ...]
    removed: tuple[str, ...]
    postings: tuple[tuple[str, dict[str, int]], ...]
    stale_vectors: tuple[str, ...]
    to_embed: tuple[tuple[str, str, str], ...]  # (id, L0 hash, L0)
    drop_other_identities: bool
    expects_vectors: bool  # entries were added, changed or left without vectors
    upsert_files: tuple[FileRecord, ...]
    delete_files: tuple[str, ...]
    retokenized: bool  # a new tokenizer: record its version with the last batch


def _sync(
    settings: Settings,
    store: Store,
    embedder: Embedder | None,
    degraded: str | None,
    paths: Iterable[str] | None,
) -> SyncReport:
    """Given an open store, bring it up to date: read what changed, plan, then apply."""
    # A new tokenizer makes every posting stale, and postings need the text: re-read it all.
    lexicon_stale = store.meta("tokenizer") != str(TOKENIZER_VERSION)
    if lexicon_stale and store.counts()["entries"]:
        log.info("tokenizer version changed: recomputing every entry's postings")
        paths = None
    work = _read_changes(settings, store, paths, lexicon_stale=lexicon_stale)
    changes = _entry_changes(store, work, embedder, lexicon_stale=lexicon_stale)
    notes, sync_plan = _plan_sync(store, work, changes, embedder, lexicon_stale=lexicon_stale)
    embedded, degraded = _apply_sync(store, sync_plan, embedder, degraded)
    totals = store.counts()
    return SyncReport(
        files=totals["files"],
        entries=totals["entries"],
        embedded=embedded,
        removed=len(changes.diff.removed),
        unchanged=work.unchanged,
        degraded=degraded,
        problems=tuple(work.problems),
        touched_workspaces=changes.diff.touched_workspaces,
        parsed=changes.parsed,
        added=len(changes.diff.new),
        notes=tuple(notes),
    )


def _read_changes(
    settings: Settings, store: Store, paths: Iterable[str] | None, *, lexicon_stale: bool
) -> _Work:
    """Given the paths that changed (None: all), return what is on disk against the files
    table: the texts to parse, the file records to write and the files gone."""
    root = settings.root_path
    now_ns = time.time_ns()
    work = _Work()
    if paths is None:
        scan = scan_root(root, settings.index)
        indexed = store.file_records()
    else:
        wanted = _relative_paths(root, paths)
        scan = scan_paths(root, wanted, settings.index)
        scope = {path for path in wanted if is_markdown(path) and in_scope(path, settings.index)}
        for path in wanted:
            scope.update(store.file_paths_under(path))
        scope.update(scan.files)
        indexed = store.file_records(scope)
    work.problems.extend(scan.problems)
    file_plan = plan(scan.files, indexed)
    to_read = sorted(scan.files) if lexicon_stale else file_plan.to_read
    kept = set() if lexicon_stale else set(file_plan.unchanged)
    work.unchanged = len(kept)
    for path in to_read:
        content = read_markdown(
            root,
            path,
            settings.index.max_file_bytes,
            follow_links_outside_root=settings.index.follow_links_outside_root,
        )
        if content is None:
            continue
        if isinstance(content, Problem):
            work.problems.append(content)
            continue
        kept.add(path)
        fresh = FileRecord(path, content.size, content.mtime_ns, content.sha256, now_ns)
        record = indexed.get(path)
        if record is None or record.sha256 != content.sha256 or lexicon_stale:
            work.texts[path] = content.text
            work.file_rows.append(fresh)
            continue
        work.unchanged += 1  # same bytes: refresh the record only when that changes something
        same_stat = (record.size, record.mtime_ns) == (fresh.size, fresh.mtime_ns)
        if not same_stat or stat_trusted(fresh, FileStat(fresh.size, fresh.mtime_ns)):
            work.file_rows.append(fresh)
    work.deleted_files = sorted(path for path in indexed if path not in kept)
    return work


def _entry_changes(
    store: Store, work: _Work, embedder: Embedder | None, *, lexicon_stale: bool
) -> _EntryChanges:
    """Given the texts to parse, return their entries diffed against the stored ones (a
    duplicate id is a problem appended to `work`)."""
    parsed = {path: parse_entries(path, text) for path, text in work.texts.items()}
    reparsed = set(parsed) | set(work.deleted_files)
    old_rows = store.rows_for_paths(sorted(reparsed)) if reparsed else []
    all_ids = [entry.id for entries in parsed.values() for entry in entries]
    owners = {
        entry_id: owner
        for entry_id, owner in (store.owners(all_ids) if all_ids else {}).items()
        if owner not in reparsed
    }
    accepted, duplicates = accept_entries(parsed, owners)
    work.problems.extend(
        Problem(d.path, f"duplicate entry id {d.id} (kept in {d.owner}); skipped", "duplicate_id")
        for d in duplicates
    )
    identity_key = embedder.identity.key() if embedder is not None else ""
    vector_hashes = (
        store.vector_hashes(identity_key, [entry.id for entry in accepted]) if embedder else {}
    )
    diff = diff_entries(old_rows, accepted, vector_hashes, retokenize_all=lexicon_stale)
    return _EntryChanges(
        parsed=len(parsed),
        accepted=tuple(accepted),
        diff=diff,
        old_by_id={row.id: row for row in old_rows},
    )


def _plan_sync(
    store: Store,
    work: _Work,
    changes: _EntryChanges,
    embedder: Embedder | None,
    *,
    lexicon_stale: bool,
) -> tuple[list[str], _SyncPlan]:
    """Given what changed, return notes for the user and the plan: rows and postings of new
    and changed entries, vectors to drop and to embed (a model identity change, or entries
    left without vectors by a degraded run, included)."""
    diff, old_by_id = changes.diff, changes.old_by_id
    identity_key = embedder.identity.key() if embedder is not None else ""
    notes: list[str] = []
    drop_other = False
    catch_up: list[EntryRow] = []
    if embedder is not None and store.meta("vectors_complete") != identity_key:
        others = {key: n for key, n in store.vector_identities().items() if key != identity_key}
        if others:
            notes.append(_identity_change(store, embedder, others))
            drop_other = True
        handled = {entry.id for entry in changes.accepted} | set(diff.removed)
        catch_up = [row for row in store.missing_vectors(identity_key) if row.id not in handled]
    doc_lengths: dict[str, int] = {}
    postings: list[tuple[str, dict[str, int]]] = []
    for entry in diff.retokenize:
        counts = Counter(terms(redact(entry.text)))
        doc_lengths[entry.id] = sum(counts.values())
        postings.append((entry.id, dict(counts)))
    rewritten = {entry.id: entry for entry in diff.new + diff.changed + diff.retokenize}
    rows = tuple(
        row_for(
            entry,
            doc_lengths.get(entry.id, old_by_id[entry.id].doc_len if entry.id in old_by_id else 0),
        )
        for entry in rewritten.values()
    )
    stale = tuple(
        entry.id for entry in diff.changed if old_by_id[entry.id].l0_hash != entry.l0_hash
    )
    to_embed = [(e.id, e.l0_hash, e.l0) for e in diff.to_embed]
    to_embed += [(row.id, row.l0_hash, row.l0) for row in catch_up]
    return notes, _SyncPlan(
        identity_key=identity_key,
        rows=rows,
        removed=tuple(diff.removed),
        postings=tuple(postings),
        stale_vectors=stale,
        to_embed=tuple(to_embed),
        drop_other_identities=drop_other,
        expects_vectors=bool(diff.new or diff.changed or catch_up),
        upsert_files=tuple(work.file_rows),
        delete_files=tuple(work.deleted_files),
        retokenized=lexicon_stale,
    )


def _apply_sync(
    store: Store, sync_plan: _SyncPlan, embedder: Embedder | None, degraded: str | None
) -> tuple[int, str | None]:
    """Given the plan, embed in chunks and write one transaction per chunk, entries first and
    file rows last; return how many L0s were embedded and why embedding stopped (if it did)."""
    pending = sync_plan.to_embed
    chunks = [pending[start : start + EMBED_CHUNK] for start in range(0, len(pending), EMBED_CHUNK)]
    chunks = chunks or [()]
    identity_key = sync_plan.identity_key
    embedded = 0
    for number, chunk in enumerate(chunks):
        vectors: tuple[tuple[str, str, bytes], ...] = ()
        if chunk and embedder is not None and degraded is None:
            try:
                matrix = embedder.embed_passages([l0 for _, _, l0 in chunk])
            except EmbedderUnavailable as error:
                degraded = str(error)
                log.info("embedding stopped: %s", error)  # reported as `degraded`
            else:
                vectors = tuple(
                    (entry_id, l0_hash, matrix[position].tobytes())
                    for position, (entry_id, l0_hash, _) in enumerate(chunk)
                )
                embedded += len(vectors)
        first, last = number == 0, number == len(chunks) - 1
        complete: str | None = None
        if last:
            if embedder is not None and degraded is None:
                complete = identity_key
            elif sync_plan.expects_vectors:
                complete = ""
            if complete == store.meta("vectors_complete"):
                complete = None
        batch = Batch(
            upsert_entries=sync_plan.rows if first else (),
            delete_entries=sync_plan.removed if first else (),
            postings=sync_plan.postings if first else (),
            identity=identity_key,
            vectors=vectors,
            drop_vectors=sync_plan.stale_vectors if first else (),
            drop_other_identities=sync_plan.drop_other_identities and first,
            upsert_files=sync_plan.upsert_files if last else (),
            delete_files=sync_plan.delete_files if last else (),
            vectors_complete=complete,
            meta=(("tokenizer", str(TOKENIZER_VERSION)),) if last and sync_plan.retokenized else (),
        )
        # Nothing to write, no commit: the generation stays, so warm readers keep their caches.
        if batch != Batch(identity=identity_key):
            store.apply(batch)
    return embedded, degraded


def _identity_change(store: Store, embedder: Embedder, others: dict[str, int]) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = store.path.with_name(f"{store.path.name}.old-model-{stamp}")
    failure = store.backup_to(backup)
    kept = (
        f"the old index is kept as {backup.name}"
        if failure is None
        else f"could not keep a copy of the old index ({failure})"
    )
    old = ", ".join(_identity_name(key) for key in sorted(others))
    message = (
        f"model identity changed from {old} to {embedder.identity.name}: re-embedding every "
        f"entry ({sum(others.values())} old vectors dropped; {kept})"
    )
    log.info("%s", message)  # surfaced once through the report's notes
    return message


def _identity_name(key: str) -> str:
    try:
        data = json.loads(key)
    except ValueError:
        return key
    return f"{data.get('name')} ({data.get('file')}, {data.get('dim')}-d)"


def _relative_paths(root: Path, paths: Iterable[str]) -> list[str]:
    resolved_root = root.resolve()
    out: list[str] = []
    for path in paths:
        text = os.fspath(path)
        if os.path.isabs(text):
            candidate = Path(text)
            for base in (root, resolved_root):
                try:
                    text = candidate.relative_to(base).as_posix()
                    break
                except ValueError:
                    continue
            else:
                continue  # outside the root
        out.append(Path(text).as_posix().strip("/"))
    return out
