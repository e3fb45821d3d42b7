"""Check the index against the memory root (`carryd verify`) and repair what a check found.

`verify_root` lists every difference between index and files (counts, hashes, vector dims,
postings, tokenizer); `repair_root` drops the files and vectors a verify found wrong and
syncs them afresh (`carryd.daemon.indexer.indexing.sync_root`). The daemon runs both periodically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from carryd.daemon.config import Settings
from carryd.daemon.indexer.index_lock import index_lock
from carryd.daemon.indexer.indexing import LOAD, LoadModel, SyncReport, sync_root
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.indexer.scan import Problem, read_markdown, scan_root
from carryd.daemon.indexer.vector_sets import re_embedding_progress, re_embedding_text
from carryd.daemon.layout import open_store
from carryd.index.entries import Entry, parse_entries
from carryd.index.store import Batch, Store
from carryd.index.sync import EntryRow
from carryd.index.tokenize import TOKENIZER_VERSION

if TYPE_CHECKING:
    from carryd.index.embed import Embedder

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


# -- verify --------------------------------------------------------------------------------


def verify_root(settings: Settings, *, store: Store | None = None) -> VerifyReport:
    """Given the settings, compare the index with the files and return every difference."""
    # Under the index lock: a sync half-way through its batches is no difference to report.
    with index_lock(settings):
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
    embedder: Embedder | None | LoadModel = LOAD,
) -> SyncReport:
    """Given a verify report, rebuild what it found wrong and return the sync that did it.

    Every file with a difference is dropped from the index (its entries, postings and vectors)
    and synced afresh; vectors without an entry or of another identity go; entries without a
    vector are embedded. The rest of the index is left as it is.
    """
    with index_lock(settings):
        return _repair(settings, report, store=store, embedder=embedder)


def _repair(
    settings: Settings,
    report: VerifyReport,
    *,
    store: Store | None,
    embedder: Embedder | None | LoadModel,
) -> SyncReport:
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
        # A file `carryd index` skips for a reason (not UTF-8, NUL bytes, too large) is not a
        # difference: it is listed as skipped, as `index` reports it.
        unindexable = read_markdown(root, path, settings.index.max_file_bytes)
        if isinstance(unindexable, Problem):
            skipped.append(unindexable)
        elif unindexable is not None:
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

    differences.extend(_vector_differences(settings, store, notes))
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


def _vector_differences(settings: Settings, store: Store, notes: list[str]) -> list[Difference]:
    """Given the store, return the vectors that do not fit its entries and the model (notes
    gets what was not checked, and a re-embedding's progress)."""
    differences: list[Difference] = []
    embedder, degraded = load_embedder_for(settings, lazy=True)
    if embedder is None:
        notes.append(f"vectors not checked against a model: {degraded}")
        identity_key, dim = None, None
    elif store.next_identity() == embedder.identity.key():
        # A model change re-embedding: the serving set is the old model's until the swap, and
        # entries the new set lacks yet are its progress, not a difference.
        progress = re_embedding_progress(store)
        if progress is not None:
            notes.append(f"{re_embedding_text(progress)}; the old model's vectors were checked")
        identity_key, dim = store.meta("vectors_complete") or None, None
    else:
        identity_key, dim = embedder.identity.key(), embedder.identity.dim
        for row in store.missing_vectors(identity_key):
            differences.append(
                Difference("vector_missing", row.path, f"{row.id}: no vector for its L0")
            )
    for issue in store.vector_issues(identity_key, dim):
        kind = VECTOR_KINDS[issue.kind]
        differences.append(Difference(kind, issue.path, f"{issue.entry_id}: {issue.detail}"))
    return differences


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
