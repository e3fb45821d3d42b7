"""Given a path, return the index database (the SQLite shell of `index/`).

`<root>/.carryd/index.sqlite`, WAL mode, `synchronous=NORMAL`. Tables:

- `meta`     schema version, generation (bumped by every committed batch), the model identity
             whose vectors are complete;
- `files`    path, size, mtime_ns, sha256, synced_ns: lets an unchanged file be skipped unread;
- `entries`  every `EntryRow` field (metadata + L0, never the memory text);
- `vectors`  entry id, the L0 hash it embeds, the model identity key, a float32 blob: the
             serving vector set (`next_vectors`, the same shape: the set a model change
             builds beside it until it is complete, `store_vectors.py`);
- `postings` the lexical index: (term, entry_id, tf), keyed by term; `entries.doc_len` is the
             BM25 document length.

No memory text is stored except the (already redacted) L0: full text is read from the Markdown
files on expand. `Store.open` never leaves a caller with an unusable index: a truncated or
corrupt file, or one of another schema version, is moved aside (`index.sqlite.corrupt-<UTC>`,
`.old-schema-<UTC>`, never deleted) and a fresh index is built; `.recovered` says what happened
(what counts as corrupt, and the file permissions: `store_file.py`).

One writer (the sync) and any number of reader threads: writes go through their own connection
in one transaction per `Batch`; reads use a second connection (SQLite is built serialized here,
`sqlite3.threadsafety == 3`) and always drain their cursors, so each read sees the latest commit.

The module is split by concept: `store_file.py` opens the file (schema, diagnosis, moving aside,
permissions, error causes), `store_write.py` applies a `Batch` and keeps the change log, and
`store_vectors.py` reads the vector sets, and this module holds `Store` with its other read
queries. Every public name stays importable from here.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from carryd.index.errors import IndexCorrupt, IndexUnavailable
from carryd.index.store_file import (
    DISK_CODES,
    ENTRY_COLUMNS,
    IDS_IN,
    SCHEMA_VERSION,
    diagnose,
    entry_row,
    ids_json,
    is_corruption,
    open_read_write,
    os_cause,
    read_only_connections,
    secure_state_folder,
    sqlite_code,
    unavailable_error,
)
from carryd.index.store_vectors import VectorReads
from carryd.index.store_verify import VectorIssue
from carryd.index.store_write import (
    LARGE_BATCH_CACHE_KIB,
    LARGE_BATCH_ROWS,
    Batch,
    commit_batch,
    counts_after,
    create_change_log,
    create_next_vectors,
)
from carryd.index.sync import EntryRow, FileRecord

__all__ = [
    "Batch",
    "EntryRow",
    "FileRecord",
    "SCHEMA_VERSION",
    "Store",
    "VectorIssue",
    "diagnose",
    "entry_row",
    "secure_state_folder",
]

log = logging.getLogger(__name__)

# Index files this process holds open, with how many stores hold each. Opening and closing
# any descriptor of a database file drops the POSIX locks every SQLite connection of this
# process holds on it, after which another process may delete the live WAL; so a file that
# is already open here is never read outside SQLite (it is in use, hence not to be
# diagnosed or moved aside).
_LIVE: dict[str, int] = {}


class Store(VectorReads):
    """The index database. Open with `Store.open(path)`; use as a context manager."""

    def __init__(
        self, path: Path, write: sqlite3.Connection, read: sqlite3.Connection, recovered: str | None
    ) -> None:
        self.path = path
        self._write = write
        self._read = read
        self.recovered = recovered
        # This open made the schema: the index is new, empty or was just moved aside.
        self.created = False
        # Why the index could only be opened read-only (a full or read-only disk), else None.
        self.read_only: str | None = None
        self._live_key: str | None = None

    # -- opening and recovery ---------------------------------------------------------------

    @classmethod
    def open(cls, db_path: Path) -> Store:
        """Given the index path, return an open store (moving a corrupt file aside and
        rebuilding).

        Raises IndexUnavailable when the disk, the file system or a permission keeps the index
        from being opened (the file stays as it is), IndexCorrupt only when even a fresh index
        cannot be created there.
        """
        db_path = Path(db_path)
        try:
            db_path.parent.mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise IndexUnavailable(
                f"{db_path.parent}: cannot create the index folder: {os_cause(error)}"
            ) from error
        secure_state_folder(db_path.parent)
        live_key = str(db_path.resolve())
        in_use_here = _LIVE.get(live_key, 0) > 0
        read_only: str | None = None
        try:
            write, read, recovered, created = open_read_write(db_path, in_use_here)
        except IndexUnavailable as unavailable:
            # A full or read-only disk: an index whose log is checkpointed can still be read
            # (recall, expand, status); every write then names the cause.
            connections = read_only_connections(db_path)
            if connections is None:
                raise
            write, read = connections
            recovered, created, read_only = None, False, str(unavailable)
            log.info("%s; opened it read-only", unavailable)
        _LIVE[live_key] = _LIVE.get(live_key, 0) + 1
        store = cls(db_path, write, read, recovered)
        store._live_key = live_key
        store.created = created
        store.read_only = read_only
        return store

    def close(self) -> None:
        self._read.close()
        self._write.close()
        key, self._live_key = self._live_key, None
        if key is not None:
            remaining = _LIVE.pop(key, 1) - 1
            if remaining > 0:
                _LIVE[key] = remaining

    def recover(self) -> str | None:
        """After an IndexCorrupt from this store: reopen it in place, moving the file aside
        when it is bad; return what happened (also in `.recovered`)."""
        self.close()
        fresh = Store.open(self.path)
        self._write, self._read, self.recovered = fresh._write, fresh._read, fresh.recovered
        self._counts = None
        self._live_key, fresh._live_key = fresh._live_key, None
        return self.recovered

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the read API (recall codes against these names and shapes) --------------------------

    def entries(
        self, workspace: str | None = None, *, all_workspaces: bool = True
    ) -> list[EntryRow]:
        """Given a scope, return its entries ordered by path and line.

        all_workspaces=True: every entry. Otherwise `workspace`'s entries plus the root-level
        ones (workspace None: root level only).
        """
        order = " ORDER BY path, line_start"
        if all_workspaces:
            rows = self._query(f"SELECT {ENTRY_COLUMNS} FROM entries{order}")
        elif workspace is None:
            rows = self._query(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE workspace IS NULL{order}"
            )
        else:
            rows = self._query(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE workspace IS NULL OR workspace = ?"
                + order,
                (workspace,),
            )
        return [entry_row(row) for row in rows]

    def entries_by_id(self, ids: Iterable[str]) -> dict[str, EntryRow]:
        """Given entry ids, return the stored row of each one that exists."""
        rows = self._query(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN {IDS_IN}", (ids_json(ids),)
        )
        return {row[0]: entry_row(row) for row in rows}

    def postings(self, terms: Iterable[str]) -> dict[str, dict[str, int]]:
        """Given terms, return term -> {entry id: term frequency} (absent terms omitted)."""
        result: dict[str, dict[str, int]] = {}
        rows = self._query(
            f"SELECT term, entry_id, tf FROM postings WHERE term IN {IDS_IN}", (ids_json(terms),)
        )
        for term, entry_id, tf in rows:
            result.setdefault(term, {})[entry_id] = tf
        return result

    def lexical_stats(self) -> tuple[int, float]:
        """Return (document count, average document length) for BM25."""
        count, average = self._query("SELECT count(*), avg(doc_len) FROM entries")[0]
        return int(count), float(average or 0.0)

    def counts(self) -> dict[str, int]:
        """Return {"files", "entries", "vectors"} row counts.

        Counted in full once (three `count(*)` scans: ~40 ms at 100,000 entries on a loaded
        machine, which every sync and status paid), then kept by `apply` from what each
        batch changes, for as long as the generation says no one else wrote in between."""
        generation = self.generation()
        cached = self._counts
        if cached is not None and cached[0] == generation:
            return dict(cached[1])
        # One statement, one read snapshot: the counts belong to the generation read with them.
        row = self._query(
            f"SELECT {_GENERATION}, (SELECT count(*) FROM files), "
            "(SELECT count(*) FROM entries), (SELECT count(*) FROM vectors)"
        )[0]
        counts = {"files": row[1], "entries": row[2], "vectors": row[3]}
        self._counts = (int(row[0] or 0), counts)
        return dict(counts)

    # (generation, counts as of it): kept up to date by `apply`, dropped when unsure.
    _counts: tuple[int, dict[str, int]] | None = None

    def generation(self) -> int:
        """Return a number that increases with every committed batch."""
        return int(self.meta("generation") or 0)

    # -- what a warm reader loads: rows as stored (it decodes them itself), vector keys -------

    def raw_entry_rows(self) -> dict[str, tuple[Any, ...]]:
        """Return id -> the entry's row exactly as stored (`ENTRY_COLUMNS` order)."""
        return {row[0]: tuple(row) for row in self._query(f"SELECT {ENTRY_COLUMNS} FROM entries")}

    # -- the change log: what a warm reader refreshes from -----------------------------------
    # Triggers on `entries` and `vectors` stamp every id a commit touches with the generation
    # that commit makes (`entry_changes`, one row per id, the last stamp wins), so a reader at
    # generation g asks for the ids stamped after g and re-reads only those: its refresh costs
    # what changed, not what is stored (a full diff of 100,000 rows is ~0.5 s).

    def change_log_epoch(self) -> str | None:
        """Return the change log's identity (None: no log yet). A new index file (rebuilt
        after corruption, deleted by hand) gets a new one, so a reader's generation from the
        old file is never read against the new file's log."""
        return self.meta("change_log_epoch")

    def changes_since(self, generation: int, epoch: str | None) -> list[str] | None:
        """Given a generation and the log epoch it was read under, return the ids of the
        entries (and their vectors) written, replaced or deleted after it, sorted; None when
        the log cannot say (another epoch, or it started later): then only a full load is
        right."""
        since, current = self.meta("change_log_from"), self.change_log_epoch()
        if since is None or epoch is None or current != epoch or generation < int(since):
            return None
        if generation > self.generation():
            return None
        # No ORDER BY: SQLite would walk the whole log in id order (28 ms at 100,000 ids)
        # instead of the few rows past `generation` by the generation index.
        rows = self._query("SELECT entry_id FROM entry_changes WHERE generation > ?", (generation,))
        return sorted(row[0] for row in rows)

    def raw_rows_by_id(self, ids: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        """Given entry ids, return id -> the stored row (`ENTRY_COLUMNS` order) of each one
        that exists."""
        rows = self._query(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN {IDS_IN}", (ids_json(ids),)
        )
        return {row[0]: tuple(row) for row in rows}

    def common_postings(self, min_df: int) -> Iterator[tuple[str, list[str], list[int]]]:
        """Given a document frequency, yield (term, entry ids ascending, their tfs) of every
        term that many entries hold, one term at a time (a warm reader keeps them resident)."""
        common = "SELECT term FROM postings GROUP BY term HAVING count(*) >= ?"
        for (term,) in self._query(common, (min_df,)):
            rows = self._query(
                "SELECT entry_id, tf FROM postings WHERE term = ? ORDER BY entry_id", (term,)
            )
            yield term, [row[0] for row in rows], [row[1] for row in rows]

    def postings_of(self, ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """Given entry ids, return term -> {entry id: tf} over those entries only."""
        sql = f"SELECT term, entry_id, tf FROM postings WHERE entry_id IN {IDS_IN}"
        result: dict[str, dict[str, int]] = {}
        for term, entry_id, tf in self._query(sql, (ids_json(ids),)):
            result.setdefault(term, {})[entry_id] = tf
        return result

    def _ensure_change_log(self) -> None:
        """Create the change log once per write connection (`store_write.create_change_log`)."""
        if self._change_log_ready is self._write:
            return
        create_change_log(self._write)
        create_next_vectors(self._write)
        self._change_log_ready = self._write

    # The write connection the log is known to exist for (`recover` swaps the connection).
    _change_log_ready: sqlite3.Connection | None = None

    # -- what a sync and verify need ---------------------------------------------------------

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def file_records(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        """Given paths (None: all), return the record of each indexed one."""
        columns = "path, size, mtime_ns, sha256, synced_ns"
        if paths is None:
            rows = self._query(f"SELECT {columns} FROM files")
        else:
            rows = self._query(
                f"SELECT {columns} FROM files WHERE path IN {IDS_IN}", (ids_json(paths),)
            )
        return {row[0]: FileRecord(*row) for row in rows}

    def file_paths_under(self, folder: str) -> list[str]:
        """Given a relative folder, return the indexed paths inside it."""
        base = folder.rstrip("/")
        # A key range ("a/" <= path < "a0", "0" following "/"), so the primary key serves it.
        rows = self._query(
            "SELECT path FROM files WHERE path >= ? AND path < ?", (base + "/", base + "0")
        )
        return [row[0] for row in rows]

    def rows_for_paths(self, paths: Iterable[str]) -> list[EntryRow]:
        """Given file paths, return their stored entry rows."""
        rows = self._query(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE path IN {IDS_IN} ORDER BY path, line_start",
            (ids_json(paths),),
        )
        return [entry_row(row) for row in rows]

    def owners(self, ids: Iterable[str]) -> dict[str, str]:
        """Given entry ids, return id -> path of the file that holds each existing one."""
        rows = self._query(f"SELECT id, path FROM entries WHERE id IN {IDS_IN}", (ids_json(ids),))
        return {entry_id: path for entry_id, path in rows}

    def postings_lengths(self) -> dict[str, int]:
        """Return entry id -> sum of its postings' term frequencies (for verify)."""
        rows = self._query("SELECT entry_id, sum(tf) FROM postings GROUP BY entry_id")
        return {entry_id: int(total) for entry_id, total in rows}

    # -- writing -----------------------------------------------------------------------------

    def apply(self, batch: Batch) -> int:
        """Given a batch, write all of it in one transaction and return the new generation."""
        connection = self._write
        rows = len(batch.upsert_entries) + sum(len(counts) for _, counts in batch.postings)
        large = rows > LARGE_BATCH_ROWS
        if large:
            # Postings land all over two B-trees: with SQLite's 2 MB default cache a cold index
            # spends most of its SQLite time re-reading pages. The memory is given back below.
            connection.execute(f"PRAGMA cache_size = -{LARGE_BATCH_CACHE_KIB}")
        expected = None
        try:
            self._ensure_change_log()  # inside: a full or read-only disk is told as such
            expected = counts_after(self._write, self._counts, batch)
            self._counts = None  # until the commit is known to have made `expected`
            commit_batch(connection, batch)
        except sqlite3.DatabaseError as error:
            if is_corruption(error):
                raise IndexCorrupt(f"{self.path}: {error}; it will be rebuilt") from error
            if sqlite_code(error) in DISK_CODES:
                raise unavailable_error(self.path, error) from error
            raise
        finally:
            if large:
                connection.execute("PRAGMA cache_size = -2000")  # SQLite's default
                connection.execute("PRAGMA shrink_memory")
        generation = self.generation()
        # Exactly one commit (this one) since the counts were read: they are right for it.
        if expected is not None and expected[0] == generation:
            self._counts = expected
        return generation

    def backup_to(self, target: Path) -> str | None:
        """Given a path, write a consistent copy of the index there (VACUUM INTO); return
        None, or why the copy failed."""
        try:
            self._write.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.Error as error:
            return str(error)
        return None

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._read.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as error:
            if is_corruption(error):
                raise IndexCorrupt(f"{self.path}: {error}; it will be rebuilt") from error
            if sqlite_code(error) in DISK_CODES:
                raise unavailable_error(self.path, error) from error
            raise


_GENERATION = "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')"
