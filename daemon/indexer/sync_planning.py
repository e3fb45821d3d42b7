"""A sync's plan (steps 1-3 of `indexer.indexing`): read what changed on disk against the
files table, parse and diff the changed files' entries, and decide per file what to write.

Nothing here writes the index: `plan_sync` returns a `SyncPlan` that `indexing` applies one
transaction of whole files at a time. A model identity change is `vector_sets`.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carryd.daemon.indexer.scan import (
    Problem,
    ScanResult,
    in_scope,
    is_markdown,
    odd_name,
    read_markdown,
    scan_paths,
    scan_root,
)
from carryd.daemon.indexer.vector_sets import identity_name
from carryd.index.entries import Entry, parse_entries
from carryd.index.errors import EmbedderUnavailable
from carryd.index.redact import redact
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
from carryd.index.tokenize import terms

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)

# Files read, or entries tokenised, between two progress calls (each costs microseconds to
# milliseconds: a call per item would cost more than the display is worth).
PROGRESS_EVERY = 16


@dataclass
class Work:
    """What a sync found on disk against the files table (steps 1-2 of `_sync`)."""

    problems: list[Problem] = field(default_factory=list)
    file_rows: list[FileRecord] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    unchanged: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # path -> text of files to parse


@dataclass(frozen=True)
class EntryChanges:
    """The parsed entries of changed files, diffed against the stored ones (step 3)."""

    parsed: int  # files parsed
    accepted: tuple[Entry, ...]
    diff: EntryDiff
    old_by_id: Mapping[str, EntryRow]


@dataclass(frozen=True)
class FileWork:
    """What one path's sync writes, committed together (so an interrupted sync keeps whole
    files): its entry rows, removed ids, postings, stale vectors, L0s to embed and its record
    (None for entries of unchanged files that only catch up on vectors)."""

    path: str
    record: FileRecord | None = None
    delete_file: bool = False
    rows: tuple[EntryRow, ...] = ()
    removed: tuple[str, ...] = ()
    postings: tuple[tuple[str, dict[str, int]], ...] = ()
    stale_vectors: tuple[str, ...] = ()
    to_embed: tuple[tuple[str, str, str], ...] = ()  # (id, L0 hash, L0)


@dataclass(frozen=True)
class SyncPlan:
    """Everything one sync writes, decided before anything is embedded or written."""

    identity_key: str
    files: tuple[FileWork, ...]  # sorted by path
    re_embedding: bool  # the vectors go into the next set (a model change), not the serving one
    expects_vectors: bool  # entries were added, changed or left without vectors
    retokenized: bool  # a new tokenizer: record its version with the last batch

    @property
    def to_embed(self) -> int:
        return sum(len(work.to_embed) for work in self.files)


def read_changes(
    settings: Settings,
    store: Store,
    paths: Iterable[str] | None,
    *,
    lexicon_stale: bool,
    on_read: Callable[[int, int], None] | None = None,
) -> Work:
    """Given the paths that changed (None: all), return what is on disk against the files
    table: the texts to parse, the file records to write and the files gone;
    `on_read(done, total)` now and then while files are read."""
    root = settings.root_path
    now_ns = time.time_ns()
    work = Work()
    scan, indexed = _on_disk(settings, store, paths)
    work.problems.extend(scan.problems)
    file_plan = plan(scan.files, indexed)
    to_read = sorted(scan.files) if lexicon_stale else file_plan.to_read
    kept = set() if lexicon_stale else set(file_plan.unchanged)
    work.unchanged = len(kept)
    for number, path in enumerate(to_read):
        if on_read is not None and number % PROGRESS_EVERY == 0:
            on_read(number, len(to_read))
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
    if on_read is not None and to_read:
        on_read(len(to_read), len(to_read))
    return work


def bytes_to_read(settings: Settings, store: Store, paths: Iterable[str] | None) -> int:
    """Given the paths that changed (None: all), return the bytes of the Markdown files a sync
    would read, from a stat walk against the files table (no file is opened): how big the
    sync will be, before any of its work is done."""
    scan, indexed = _on_disk(settings, store, paths)
    return sum(scan.files[path].size for path in plan(scan.files, indexed).to_read)


def _on_disk(
    settings: Settings, store: Store, paths: Iterable[str] | None
) -> tuple[ScanResult, dict[str, FileRecord]]:
    """Given the paths that changed (None: all), return their stat walk and the records of
    the indexed files in the same scope."""
    root = settings.root_path
    if paths is None:
        return scan_root(root, settings.index), store.file_records()
    wanted = relative_paths(root, paths)
    scan = scan_paths(root, wanted, settings.index)  # names an odd name as a problem
    wanted = [path for path in wanted if odd_name(path) is None]  # never a key of the index
    scope = {path for path in wanted if is_markdown(path) and in_scope(path, settings.index)}
    for path in wanted:
        scope.update(store.file_paths_under(path))
    scope.update(scan.files)
    return scan, store.file_records(scope)


def entry_changes(
    store: Store,
    work: Work,
    embedder: Embedder | None,
    *,
    lexicon_stale: bool,
    on_parsed: Callable[[int, int], None] | None = None,
) -> EntryChanges:
    """Given the texts to parse, return their entries diffed against the stored ones (a
    duplicate id is a problem appended to `work`); `on_parsed(done, total)` after each file."""
    parsed: dict[str, tuple[Entry, ...]] = {}
    for number, (path, text) in enumerate(work.texts.items(), start=1):
        parsed[path] = parse_entries(path, text)
        if on_parsed is not None:
            on_parsed(number, len(work.texts))
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
    return EntryChanges(
        parsed=len(parsed),
        accepted=tuple(accepted),
        diff=diff,
        old_by_id={row.id: row for row in old_rows},
    )


def plan_sync(
    store: Store,
    work: Work,
    changes: EntryChanges,
    embedder: Embedder | None,
    *,
    lexicon_stale: bool,
    re_embedding: bool = False,
    on_tokenized: Callable[[int, int], None] | None = None,
) -> SyncPlan:
    """Given what changed (and whether the model's vectors go into the next set,
    `vector_sets.begin_vector_set`), return the plan, per file: rows and postings of new and
    changed entries, removed ids, vectors to drop and to embed (every entry without one of
    this model: a model change, or entries left without vectors by a degraded run) and the
    file record; `on_tokenized(done, total)` now and then while entries are tokenised."""
    diff, old_by_id = changes.diff, changes.old_by_id
    identity_key = embedder.identity.key() if embedder is not None else ""
    catch_up: list[EntryRow] = []
    if embedder is not None and store.meta("vectors_complete") != identity_key:
        # Entries without a vector of this model (in the next set, while one is built).
        handled = {entry.id for entry in changes.accepted} | set(diff.removed)
        catch_up = [row for row in store.missing_vectors(identity_key) if row.id not in handled]
    parts: dict[str, dict[str, list[Any]]] = {}

    def part(path: str, kind: str) -> list[Any]:
        return parts.setdefault(path, {}).setdefault(kind, [])

    doc_lengths: dict[str, int] = {}
    for number, entry in enumerate(diff.retokenize):
        if on_tokenized is not None and number % PROGRESS_EVERY == 0:
            on_tokenized(number, len(diff.retokenize))
        counts = Counter(terms(redact(entry.text)))
        doc_lengths[entry.id] = sum(counts.values())
        part(entry.path, "postings").append((entry.id, dict(counts)))
    if on_tokenized is not None and diff.retokenize:
        on_tokenized(len(diff.retokenize), len(diff.retokenize))
    rewritten = {entry.id: entry for entry in diff.new + diff.changed + diff.retokenize}
    for entry in rewritten.values():
        old = old_by_id.get(entry.id)
        length = doc_lengths.get(entry.id, old.doc_len if old is not None else 0)
        part(entry.path, "rows").append(row_for(entry, length))
    for entry_id in diff.removed:
        part(old_by_id[entry_id].path, "removed").append(entry_id)
    for entry in diff.changed:
        if old_by_id[entry.id].l0_hash != entry.l0_hash:
            part(entry.path, "stale").append(entry.id)
    for entry in diff.to_embed:
        part(entry.path, "embed").append((entry.id, entry.l0_hash, entry.l0))
    for row in catch_up:
        part(row.path, "embed").append((row.id, row.l0_hash, row.l0))
    records = {record.path: record for record in work.file_rows}
    deleted = set(work.deleted_files)
    files = tuple(
        FileWork(
            path=path,
            record=records.get(path),
            delete_file=path in deleted,
            rows=tuple(parts.get(path, {}).get("rows", ())),
            removed=tuple(parts.get(path, {}).get("removed", ())),
            postings=tuple(parts.get(path, {}).get("postings", ())),
            stale_vectors=tuple(parts.get(path, {}).get("stale", ())),
            to_embed=tuple(parts.get(path, {}).get("embed", ())),
        )
        for path in sorted(set(parts) | set(records) | deleted)
    )
    return SyncPlan(
        identity_key=identity_key,
        files=files,
        re_embedding=re_embedding,
        expects_vectors=bool(diff.new or diff.changed or catch_up),
        retokenized=lexicon_stale,
    )


def usable_model(
    store: Store, embedder: Embedder | None, degraded: str | None
) -> tuple[Embedder | None, str | None]:
    """Given the store and the model a sync would use (maybe not loaded yet), return it, or
    (None, why) when it is another model than the index's vectors and cannot be loaded: a
    model that cannot load must never cost the vectors of the one that built the index (one
    `carryd index` from a shell without CARRYD_MODEL_PATH used to drop them all)."""
    if embedder is None or store.meta("vectors_complete") == embedder.identity.key():
        return embedder, degraded
    others = {k: n for k, n in store.vector_identities().items() if k != embedder.identity.key()}
    load = getattr(embedder, "load", None)
    if not others or load is None:
        return embedder, degraded
    try:
        load()
    except EmbedderUnavailable as error:
        kept = ", ".join(identity_name(key) for key in sorted(others))
        return None, (
            f"{error} (the index's {sum(others.values())} vectors of {kept} are kept; they are "
            f"used again once that model loads: point CARRYD_MODEL_PATH or model.model_path "
            f"at it)"
        )
    return embedder, degraded


def relative_paths(root: Path, paths: Iterable[str]) -> list[str]:
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
