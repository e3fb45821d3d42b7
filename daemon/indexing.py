"""Given the settings, sync the index with the memory root (`carryd index`) or check it
(`carryd verify`). The daemon, the scheduler and the CLI all call `sync_root`.

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
`verify_root` lists every difference between index and files; `repair_root` rebuilds the files
and vectors a verify found wrong.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from carryd.daemon.config import ModelSettings, Settings
from carryd.daemon.scan import (
    Problem,
    in_scope,
    is_markdown,
    read_markdown,
    scan_paths,
    scan_root,
)
from carryd.index.embed import (
    IDENTITY_KEYS,
    Embedder,
    FastEmbedder,
    identity_for_default,
    identity_for_folder,
)
from carryd.index.entries import Entry, parse_entries
from carryd.index.errors import ConfigError, EmbedderUnavailable, IndexCorrupt
from carryd.index.redact import redact
from carryd.index.store import Batch, Store
from carryd.index.sync import (
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
    import argparse

log = logging.getLogger(__name__)

# L0s embedded (and vectors committed) per transaction during a large sync.
EMBED_CHUNK = 2048


class _Load:
    """The default of `sync_root(embedder=…)`: load the model the settings name."""

    def __repr__(self) -> str:
        return "<load from settings>"


LOAD = _Load()


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


VerifyKind = Literal[
    "file_not_indexed",
    "indexed_file_missing",
    "indexed_file_unreadable",
    "file_hash",
    "entry_count",
    "entry_missing",
    "entry_extra",
    "l0_hash",
    "text_hash",
    "entry_without_file",
    "vector_missing",
    "vector_orphaned",
    "vector_wrong_identity",
    "vector_wrong_dim",
    "vector_stale",
    "postings",
    "tokenizer",
]


VECTOR_KINDS: dict[str, VerifyKind] = {
    "orphaned": "vector_orphaned",
    "wrong_identity": "vector_wrong_identity",
    "wrong_dim": "vector_wrong_dim",
    "stale": "vector_stale",
}


@dataclass(frozen=True)
class Difference:
    """One way the index and the files disagree."""

    kind: VerifyKind
    path: str | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail}


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    problems: tuple[Difference, ...] = ()
    skipped: tuple[Problem, ...] = ()  # files not indexable (not a disagreement)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": [difference.to_json() for difference in self.problems],
            "skipped": [problem.to_json() for problem in self.skipped],
        }


# -- opening things ------------------------------------------------------------------------


def open_store(settings: Settings) -> Store:
    """Given the settings, return the root's index store (created or recovered as needed)."""
    root = settings.root_path
    if not root.is_dir():
        raise ConfigError(f"{root}: the memory root is not a folder; pass --root DIR or fix 'root'")
    return Store.open(settings.db_path)


def load_embedder_for(
    settings: Settings, *, lazy: bool = False
) -> tuple[Embedder | None, str | None]:
    """Given the settings, return (embedder, None), or (None, why no model can be had).

    lazy=True only resolves the model's identity (cheap checks of the folder) and loads the
    ONNX session on first use, so a sync with nothing to embed never pays for it.
    """
    model = settings.model
    configured = explicit_model_keys(settings)
    embedder: FastEmbedder
    try:
        if model.model_path:
            folder = Path(model.model_path).expanduser()
            embedder = FastEmbedder(
                identity_for_folder(folder, configured),
                model_dir=folder,
                threads=model.threads,
                batch_size=model.batch_size,
            )
        else:
            embedder = FastEmbedder(
                identity_for_default(configured),
                cache_dir=model_cache_dir(settings),
                threads=model.threads,
                batch_size=model.batch_size,
                allow_download=model.allow_download,
            )
        if not lazy:
            embedder.load()
    except EmbedderUnavailable as error:
        return None, str(error)
    return embedder, None


def model_cache_dir(settings: Settings) -> Path:
    """Given the settings, return where a downloaded model is cached."""
    if settings.model.cache_dir:
        return Path(settings.model.cache_dir).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("carryd")) / "models"


def explicit_model_keys(settings: Settings) -> dict[str, Any]:
    """Given the settings, return the model identity keys the user chose.

    `Settings` cannot tell a default from a value the user wrote, so a key counts as chosen when
    the config file's [model] table names it, or when its value differs from the default.
    """
    defaults = ModelSettings()
    written: set[str] = set()
    if settings.config_file:
        try:
            with open(settings.config_file, "rb") as handle:
                table = tomllib.load(handle).get("model", {})
            if isinstance(table, dict):
                written = set(table)
        except (OSError, tomllib.TOMLDecodeError):
            written = set()
    return {
        key: getattr(settings.model, key)
        for key in IDENTITY_KEYS
        if key in written or getattr(settings.model, key) != getattr(defaults, key)
    }


# -- sync ----------------------------------------------------------------------------------


def sync_root(
    settings: Settings,
    *,
    store: Store | None = None,
    embedder: Embedder | None | _Load = LOAD,
    paths: Iterable[str] | None = None,
) -> SyncReport:
    """Given the settings (and optionally an open store, an embedder or None for none, and the
    relative paths that changed), bring the index up to date and return what was done."""
    started = time.perf_counter()
    own_store = store is None
    active = open_store(settings) if store is None else store
    notes: list[str] = [active.recovered] if own_store and active.recovered else []
    degraded: str | None = None
    if isinstance(embedder, _Load):
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
    """A sync's working set, filled step by step by `_sync`."""

    problems: list[Problem] = field(default_factory=list)
    file_rows: list[FileRecord] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    unchanged: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # path -> text of files to parse


def _sync(
    settings: Settings,
    store: Store,
    embedder: Embedder | None,
    degraded: str | None,
    paths: Iterable[str] | None,
) -> SyncReport:
    root = settings.root_path
    now_ns = time.time_ns()
    work = _Work()

    # A new tokenizer makes every posting stale, and postings need the text: re-read it all.
    lexicon_stale = store.meta("tokenizer") != str(TOKENIZER_VERSION)
    if lexicon_stale and store.counts()["entries"]:
        log.info("tokenizer version changed: recomputing every entry's postings")
        paths = None

    # 1-2. What is on disk, against the files table.
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

    # 3. Parse what changed and diff it against the stored entries.
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
    old_by_id = {row.id: row for row in old_rows}

    # 4. A model identity change, or entries left without vectors by a degraded run.
    notes: list[str] = []
    drop_other = False
    catch_up: list[EntryRow] = []
    if embedder is not None and store.meta("vectors_complete") != identity_key:
        others = {key: n for key, n in store.vector_identities().items() if key != identity_key}
        if others:
            notes.append(_identity_change(store, embedder, others))
            drop_other = True
        handled = {entry.id for entry in accepted} | set(diff.removed)
        catch_up = [row for row in store.missing_vectors(identity_key) if row.id not in handled]

    # 5. Rows and postings of new and changed entries.
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

    # 6. Embed in chunks; one transaction per chunk, file rows last.
    pending: list[tuple[str, str, str]] = [(e.id, e.l0_hash, e.l0) for e in diff.to_embed]
    pending += [(row.id, row.l0_hash, row.l0) for row in catch_up]
    chunks = [pending[start : start + EMBED_CHUNK] for start in range(0, len(pending), EMBED_CHUNK)]
    chunks = chunks or [[]]
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
            elif diff.new or diff.changed or catch_up:
                complete = ""
            if complete == store.meta("vectors_complete"):
                complete = None
        batch = Batch(
            upsert_entries=rows if first else (),
            delete_entries=diff.removed if first else (),
            postings=tuple(postings) if first else (),
            identity=identity_key,
            vectors=vectors,
            drop_vectors=stale if first else (),
            drop_other_identities=drop_other and first,
            upsert_files=tuple(work.file_rows) if last else (),
            delete_files=tuple(work.deleted_files) if last else (),
            vectors_complete=complete,
            meta=(("tokenizer", str(TOKENIZER_VERSION)),) if last and lexicon_stale else (),
        )
        # Nothing to write, no commit: the generation stays, so warm readers keep their caches.
        if batch != Batch(identity=identity_key):
            store.apply(batch)

    totals = store.counts()
    return SyncReport(
        files=totals["files"],
        entries=totals["entries"],
        embedded=embedded,
        removed=len(diff.removed),
        unchanged=work.unchanged,
        degraded=degraded,
        problems=tuple(work.problems),
        touched_workspaces=diff.touched_workspaces,
        parsed=len(parsed),
        added=len(diff.new),
        notes=tuple(notes),
    )


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


# -- verify --------------------------------------------------------------------------------


def verify_root(settings: Settings, *, store: Store | None = None) -> VerifyReport:
    """Given the settings, compare the index with the files and return every difference."""
    own_store = store is None
    active = open_store(settings) if store is None else store
    try:
        return _verify(settings, active)
    finally:
        if own_store:
            active.close()


def repair_root(
    settings: Settings,
    report: VerifyReport,
    *,
    store: Store | None = None,
    embedder: Embedder | None | _Load = LOAD,
) -> SyncReport:
    """Given a verify report, rebuild what it found wrong and return the sync that did it.

    Every file with a difference is dropped from the index (its entries, postings and vectors)
    and synced afresh; vectors without an entry or of another identity go; entries without a
    vector are embedded. The rest of the index is left as it is.
    """
    own_store = store is None
    active = open_store(settings) if store is None else store
    try:
        paths = sorted({difference.path for difference in report.problems if difference.path})
        rows = active.rows_for_paths(paths)
        orphaned = [
            difference.detail.split(":", 1)[0]
            for difference in report.problems
            if difference.kind == "vector_orphaned"
        ]
        active.apply(
            Batch(
                delete_entries=tuple(row.id for row in rows) + tuple(orphaned),
                delete_files=tuple(paths),
                vectors_complete="",  # makes the sync look for entries without vectors
            )
        )
        return sync_root(settings, store=active, embedder=embedder, paths=paths)
    finally:
        if own_store:
            active.close()


def _verify(settings: Settings, store: Store) -> VerifyReport:
    root = settings.root_path
    differences: list[Difference] = []
    notes: list[str] = [store.recovered] if store.recovered else []
    scan = scan_root(root, settings.index)
    skipped = list(scan.problems)
    records = store.file_records()
    rows_by_path: dict[str, list[EntryRow]] = {}
    for row in store.entries():
        rows_by_path.setdefault(row.path, []).append(row)

    for path in sorted(set(scan.files) - set(records)):
        differences.append(Difference("file_not_indexed", path, "file is not in the index"))
    for path in sorted(set(records) - set(scan.files)):
        differences.append(Difference("indexed_file_missing", path, "indexed file is gone"))
    for path in sorted(set(rows_by_path) - set(records)):
        differences.append(
            Difference("entry_without_file", path, f"{len(rows_by_path[path])} entries")
        )
    for path in sorted(set(records) & set(scan.files)):
        content = read_markdown(
            root,
            path,
            settings.index.max_file_bytes,
            follow_links_outside_root=settings.index.follow_links_outside_root,
        )
        if content is None or isinstance(content, Problem):
            reason = content.reason if isinstance(content, Problem) else "gone"
            differences.append(Difference("indexed_file_unreadable", path, reason))
            continue
        if content.sha256 != records[path].sha256:
            differences.append(Difference("file_hash", path, "file content differs from index"))
        differences.extend(
            _entry_differences(path, parse_entries(path, content.text), rows_by_path.get(path, []))
        )

    embedder, degraded = load_embedder_for(settings, lazy=True)
    if embedder is None:
        notes.append(f"vectors not checked against a model: {degraded}")
        identity_key, dim = None, None
    else:
        identity_key, dim = embedder.identity.key(), embedder.identity.dim
        for row in store.missing_vectors(identity_key):
            differences.append(
                Difference("vector_missing", row.path, f"{row.id}: no vector for its L0")
            )
    for issue in store.vector_issues(identity_key, dim):
        kind = VECTOR_KINDS[issue.kind]
        differences.append(Difference(kind, issue.path, f"{issue.entry_id}: {issue.detail}"))
    built_with = store.meta("tokenizer")
    if records and built_with != str(TOKENIZER_VERSION):
        differences.append(
            Difference(
                "tokenizer",
                None,
                f"postings built by tokenizer version {built_with}, not {TOKENIZER_VERSION}",
            )
        )
    postings = store.postings_lengths()
    for rows in rows_by_path.values():
        for row in rows:
            if postings.get(row.id, 0) != row.doc_len:
                differences.append(
                    Difference(
                        "postings",
                        row.path,
                        f"{row.id}: postings hold {postings.get(row.id, 0)} terms, "
                        f"doc_len says {row.doc_len}",
                    )
                )
    return VerifyReport(
        ok=not differences, problems=tuple(differences), skipped=tuple(skipped), notes=tuple(notes)
    )


def _entry_differences(
    path: str, entries: Sequence[Entry], rows: Sequence[EntryRow]
) -> list[Difference]:
    differences: list[Difference] = []
    if len(entries) != len(rows):
        differences.append(
            Difference(
                "entry_count", path, f"{len(rows)} entries indexed, {len(entries)} in the file"
            )
        )
    fresh = {entry.id: entry for entry in entries}
    stored = {row.id: row for row in rows}
    for entry_id in sorted(set(fresh) - set(stored)):
        differences.append(Difference("entry_missing", path, f"{entry_id} is not indexed"))
    for entry_id in sorted(set(stored) - set(fresh)):
        differences.append(Difference("entry_extra", path, f"{entry_id} is no longer in the file"))
    for entry_id in sorted(set(fresh) & set(stored)):
        if fresh[entry_id].l0_hash != stored[entry_id].l0_hash:
            differences.append(Difference("l0_hash", path, f"{entry_id}: L0 differs"))
        if fresh[entry_id].text_hash != stored[entry_id].text_hash:
            differences.append(Difference("text_hash", path, f"{entry_id}: text differs"))
    return differences


# -- commands ------------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd index [--json]`: sync once; exit 0 (also when degraded or files were skipped)."""
    report = sync_root(settings)
    for note in report.notes:
        print(f"carryd: {note}", file=sys.stderr)
    for problem in report.problems:
        print(f"carryd: skipped {problem.path}: {problem.reason}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0
    print(
        f"indexed {report.files} files, {report.entries} entries: embedded {report.embedded}, "
        f"removed {report.removed}, {report.unchanged} files unchanged "
        f"({report.seconds:.1f} s)"
    )
    if report.problems:
        print(f"skipped {len(report.problems)} files (see above)")
    if report.degraded:
        print(f"degraded: no vectors (lexical recall only): {report.degraded}")
    return 0


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd verify [--json]`: exit 0 when index and files agree, 1 otherwise."""
    report = verify_root(settings)
    for note in report.notes:
        print(f"carryd: {note}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(report.to_json(), ensure_ascii=False))
    elif report.ok:
        print("index and files agree")
    else:
        for difference in report.problems:
            print(f"{difference.kind}: {difference.path or '-'}: {difference.detail}")
        print(
            f"{len(report.problems)} differences: `carryd index` picks up changed files; "
            f"damage inside the index goes when {settings.db_path} is deleted and rebuilt"
        )
    return 0 if report.ok else 1
