"""Given what is on disk and what is indexed, return what a sync must do (pure planning).

Two plans, both plain values compared with `==` in tests:

- `plan(on_disk, indexed)` → `IndexPlan`: which files are new, possibly modified (their stat
  moved, or it cannot be trusted yet), deleted or unchanged. A file whose size and mtime match
  its record is skipped without being read, unless its mtime lies within `RACY_NS` of the moment
  it was recorded: a same-size edit in the same timestamp tick would then go unseen (git's
  "racily clean" problem), so such a file is read and hashed once more (not re-parsed when the
  hash still matches).
- `diff_entries(old_rows, parsed, vector_hashes)` → `EntryDiff`: which entries are new, changed
  or removed, which need their postings recomputed (text changed) and which need an embedding
  (their L0 hash has no vector of the current model identity).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from carryd.index.entries import Entry, L0Source

# How long after a file's mtime its stat becomes trustworthy (coarse timestamps: FAT's 2 s).
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class FileStat:
    """A Markdown file on disk, as a cheap stat sees it."""

    size: int
    mtime_ns: int


@dataclass(frozen=True)
class FileRecord:
    """A file as the index recorded it: its stat, content hash and when it was read."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    synced_ns: int  # wall clock when the file was read (for the racy-stat rule)


@dataclass(frozen=True)
class IndexPlan:
    """What a sync does with each file; every tuple is sorted."""

    new: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()  # to read; unchanged after all when the sha256 matches
    deleted: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def to_read(self) -> tuple[str, ...]:
        return tuple(sorted(self.new + self.modified))


@dataclass(frozen=True)
class EntryRow:
    """An entry as the store holds it: `Entry` minus its text, plus its BM25 document length."""

    id: str
    path: str
    workspace: str | None
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    l0: str
    l0_source: L0Source
    text_hash: str
    l0_hash: str
    slot: str | None
    doc_len: int


@dataclass(frozen=True)
class DuplicateId:
    """An entry skipped because another entry (in `owner`) already has its explicit id."""

    id: str
    path: str
    owner: str


@dataclass(frozen=True)
class EntryDiff:
    """How a set of freshly parsed entries differs from their stored rows."""

    new: tuple[Entry, ...] = ()
    changed: tuple[Entry, ...] = ()  # same id, some stored field differs
    removed: tuple[str, ...] = ()  # ids
    unchanged: tuple[str, ...] = ()  # ids
    retokenize: tuple[Entry, ...] = ()  # new, text changed (or all): postings to recompute
    to_embed: tuple[Entry, ...] = ()  # no vector of the current identity for this L0 hash
    touched_workspaces: frozenset[str | None] = frozenset()  # of new, changed and removed


def plan(
    on_disk: Mapping[str, FileStat],
    indexed: Mapping[str, FileRecord],
    *,
    racy_ns: int = RACY_NS,
) -> IndexPlan:
    """Given the stat of every file on disk and every indexed file's record, return the plan."""
    new, modified, unchanged = [], [], []
    for path, stat in on_disk.items():
        record = indexed.get(path)
        if record is None:
            new.append(path)
        elif stat_trusted(record, stat, racy_ns=racy_ns):
            unchanged.append(path)
        else:
            modified.append(path)
    deleted = [path for path in indexed if path not in on_disk]
    return IndexPlan(
        new=tuple(sorted(new)),
        modified=tuple(sorted(modified)),
        deleted=tuple(sorted(deleted)),
        unchanged=tuple(sorted(unchanged)),
    )


def stat_trusted(record: FileRecord, stat: FileStat, *, racy_ns: int = RACY_NS) -> bool:
    """Given a file's record and its current stat, return whether it may be skipped unread."""
    same = record.size == stat.size and record.mtime_ns == stat.mtime_ns
    return same and record.synced_ns - record.mtime_ns >= racy_ns


def row_for(entry: Entry, doc_len: int) -> EntryRow:
    """Given a parsed entry and its BM25 document length, return its stored row."""
    return EntryRow(
        id=entry.id,
        path=entry.path,
        workspace=entry.workspace,
        line_start=entry.line_start,
        line_end=entry.line_end,
        heading_path=tuple(entry.heading_path),
        l0=entry.l0,
        l0_source=entry.l0_source,
        text_hash=entry.text_hash,
        l0_hash=entry.l0_hash,
        slot=entry.slot,
        doc_len=doc_len,
    )


def accept_entries(
    parsed: Mapping[str, Sequence[Entry]], owners: Mapping[str, str]
) -> tuple[tuple[Entry, ...], tuple[DuplicateId, ...]]:
    """Given freshly parsed entries per path and the stored owner path of ids held by files
    outside this sync, return the entries to index and the duplicates skipped.

    Ids are unique in the index: an explicit id already held by a file this sync does not touch
    stays there; within this sync the first path (sorted) wins.
    """
    accepted: list[Entry] = []
    claimed: dict[str, str] = {}
    duplicates: list[DuplicateId] = []
    for path in sorted(parsed):
        for entry in parsed[path]:
            owner = owners.get(entry.id) or claimed.get(entry.id)
            if owner is not None:
                duplicates.append(DuplicateId(id=entry.id, path=path, owner=owner))
                continue
            claimed[entry.id] = path
            accepted.append(entry)
    return tuple(accepted), tuple(duplicates)


def diff_entries(
    old_rows: Iterable[EntryRow],
    parsed: Sequence[Entry],
    vector_hashes: Mapping[str, str],
    *,
    retokenize_all: bool = False,
) -> EntryDiff:
    """Given the stored rows of some files, those files' freshly parsed (accepted) entries and
    the L0 hash of each entry's current-identity vector, return the entry diff.

    retokenize_all=True (the tokenizer changed): every entry's postings are recomputed.
    """
    old = {row.id: row for row in old_rows}
    new: list[Entry] = []
    changed: list[Entry] = []
    unchanged: list[str] = []
    retokenize: list[Entry] = []
    for entry in parsed:
        row = old.get(entry.id)
        if row is None:
            new.append(entry)
            retokenize.append(entry)
            continue
        if row_for(entry, row.doc_len) != row:
            changed.append(entry)
        else:
            unchanged.append(entry.id)
        if retokenize_all or entry.text_hash != row.text_hash:
            retokenize.append(entry)
    seen = {entry.id for entry in parsed}
    removed = sorted(entry_id for entry_id in old if entry_id not in seen)
    touched = {entry.workspace for entry in new + changed}
    touched.update(old[entry_id].workspace for entry_id in removed)
    touched.update(old[entry.id].workspace for entry in changed)  # an entry may move
    return EntryDiff(
        new=tuple(new),
        changed=tuple(changed),
        removed=tuple(removed),
        unchanged=tuple(unchanged),
        retokenize=tuple(retokenize),
        to_embed=tuple(entry for entry in parsed if vector_hashes.get(entry.id) != entry.l0_hash),
        touched_workspaces=frozenset(touched),
    )
