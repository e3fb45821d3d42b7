"""Given a path, return the index database (the one SQLite shell module of `index/`).

`<root>/.carryd/index.sqlite`, WAL mode, `synchronous=NORMAL`. Tables:

- `meta`     schema version, generation (bumped by every committed batch), the model identity
             whose vectors are complete;
- `files`    path, size, mtime_ns, sha256, synced_ns: lets an unchanged file be skipped unread;
- `entries`  every `EntryRow` field (metadata + L0, never the memory text);
- `vectors`  entry id, the L0 hash it embeds, the model identity key, a float32 blob;
- `postings` the lexical index: (term, entry_id, tf), keyed by term; `entries.doc_len` is the
             BM25 document length.

No memory text is stored except the (already redacted) L0: full text is read from the Markdown
files on expand. `Store.open` never leaves a caller with an unusable index: a truncated or
corrupt file, or one of another schema version, is moved aside (`index.sqlite.corrupt-<UTC>`,
`.old-schema-<UTC>`, never deleted) and a fresh index is built; `.recovered` says what happened.

Corruption is only what SQLite itself calls corrupt (SQLITE_CORRUPT, SQLITE_NOTADB, a failed
`quick_check`, a header that is not SQLite's). A full disk, a read-only file system and a
denied permission are not: the index is left where it is and `IndexUnavailable` names the cause
(an empty file is an empty database, not a truncated one). A transaction SQLite already rolled
back (it does on SQLITE_FULL) is not rolled back again, so the error a caller sees is the cause.

Permissions: the state folder is 0700 and every file in it (the index with its `-wal` and
`-shm`, carries, manifests, state files) 0600, whatever the umask; `Store.open` makes an
existing install so. SQLite gives the `-wal`/`-shm` files the mode of the database file.

One writer (the sync) and any number of reader threads: writes go through their own connection
in one transaction per `Batch`; reads use a second connection (SQLite is built serialized here,
`sqlite3.threadsafety == 3`) and always drain their cursors, so each read sees the latest commit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

from carryd.index.entries import L0Source
from carryd.index.errors import IndexCorrupt, IndexUnavailable, describe_os_error
from carryd.index.sync import EntryRow, FileRecord

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Batch", "EntryRow", "FileRecord", "SCHEMA_VERSION", "Store", "VectorIssue"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# A batch writing more rows than this gets a larger page cache for its transaction.
LARGE_BATCH_ROWS = 20_000
LARGE_BATCH_CACHE_KIB = 65_536
SQLITE_MAGIC = b"SQLite format 3\x00"
# Index files this process holds open, with how many stores hold each. Opening and closing
# any descriptor of a database file drops the POSIX locks every SQLite connection of this
# process holds on it, after which another process may delete the live WAL; so a file that
# is already open here is never read outside SQLite (it is in use, hence not to be
# diagnosed or moved aside).
_LIVE: dict[str, int] = {}

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, synced_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE entries (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, workspace TEXT,
    line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, heading_path TEXT NOT NULL,
    l0 TEXT NOT NULL, l0_source TEXT NOT NULL, text_hash TEXT NOT NULL, l0_hash TEXT NOT NULL,
    slot TEXT, doc_len INTEGER NOT NULL
);
CREATE INDEX entries_by_path ON entries (path);
CREATE INDEX entries_by_workspace ON entries (workspace);
CREATE TABLE vectors (
    entry_id TEXT PRIMARY KEY, l0_hash TEXT NOT NULL, identity TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX vectors_by_identity ON vectors (identity);
CREATE TABLE postings (
    term TEXT NOT NULL, entry_id TEXT NOT NULL, tf INTEGER NOT NULL,
    PRIMARY KEY (term, entry_id)
) WITHOUT ROWID;
CREATE INDEX postings_by_entry ON postings (entry_id);
"""

# The change log (see `Store.changes_since`): additive, created on the first write, so an
# index made before it starts logging then. Within a batch's transaction the generation is
# bumped last, so "generation + 1" is the generation the commit makes.
_STAMP = "(SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'generation')"


def _log_trigger(table: str, event: str, rows: tuple[str, ...]) -> str:
    inserts = "".join(
        f"INSERT OR REPLACE INTO entry_changes (entry_id, generation) VALUES ({row}, {_STAMP}); "
        for row in rows
    )
    return (
        f"CREATE TRIGGER IF NOT EXISTS {table}_{event.lower()}_logged AFTER {event} ON {table} "
        f"BEGIN {inserts}END;\n"
    )


CHANGE_LOG = (
    "CREATE TABLE IF NOT EXISTS entry_changes (\n"
    "    entry_id TEXT PRIMARY KEY, generation INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX IF NOT EXISTS entry_changes_by_generation ON entry_changes (generation);\n"
    + _log_trigger("entries", "INSERT", ("NEW.id",))
    + _log_trigger("entries", "UPDATE", ("OLD.id", "NEW.id"))
    + _log_trigger("entries", "DELETE", ("OLD.id",))
    + _log_trigger("vectors", "INSERT", ("NEW.entry_id",))
    + _log_trigger("vectors", "UPDATE", ("OLD.entry_id", "NEW.entry_id"))
    + _log_trigger("vectors", "DELETE", ("OLD.entry_id",))
)

ENTRY_COLUMNS = (
    "id, path, workspace, line_start, line_end, heading_path, l0, l0_source, text_hash, "
    "l0_hash, slot, doc_len"
)
# Many ids go to SQLite as one JSON array (json_each): no variable-count limit to chunk around.
IDS_IN = "(SELECT value FROM json_each(?))"

AsideKind = Literal["corrupt", "old-schema"]


@dataclass(frozen=True)
class Batch:
    """One transaction's worth of index changes; `Store.apply` writes all of it or none."""

    upsert_entries: tuple[EntryRow, ...] = ()
    delete_entries: tuple[str, ...] = ()  # ids; their postings and vectors go too
    # (entry id, {term: tf}): replaces that entry's postings
    postings: tuple[tuple[str, Mapping[str, int]], ...] = ()
    identity: str = ""  # the identity key of `vectors`
    vectors: tuple[tuple[str, str, bytes], ...] = ()  # (entry id, l0 hash, float32 bytes)
    drop_vectors: tuple[str, ...] = ()  # entry ids whose vector no longer matches their L0
    drop_other_identities: bool = False  # a model identity change: vectors of others go
    upsert_files: tuple[FileRecord, ...] = ()
    delete_files: tuple[str, ...] = ()
    vectors_complete: str | None = None  # meta: identity with a vector for every entry
    meta: tuple[tuple[str, str], ...] = ()  # other meta keys to set


@dataclass(frozen=True)
class VectorIssue:
    """A vector that does not fit the index (for `verify`)."""

    kind: Literal["orphaned", "wrong_identity", "wrong_dim", "stale"]
    entry_id: str
    path: str | None
    detail: str


class Store:
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
            db_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise IndexUnavailable(
                f"{db_path.parent}: cannot create the index folder: {_os_cause(error)}"
            ) from error
        secure_state_folder(db_path.parent)
        live_key = str(db_path.resolve())
        in_use_here = _LIVE.get(live_key, 0) > 0
        read_only: str | None = None
        try:
            write, read, recovered, created = _open_read_write(db_path, in_use_here)
        except IndexUnavailable as unavailable:
            # A full or read-only disk: an index whose log is checkpointed can still be read
            # (recall, expand, status); every write then names the cause.
            connections = _read_only_connections(db_path)
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
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN {IDS_IN}", (_ids(ids),)
        )
        return {row[0]: entry_row(row) for row in rows}

    def vectors(self, identity_key: str) -> tuple[list[str], np.ndarray]:
        """Given a model identity key, return (entry ids, float32 [n, dim]) of its vectors."""
        import numpy as np

        # Insertion (rowid) order: one pass over the identity index and no sort, ~20 ms for
        # 10,000 x 384 where ORDER BY entry_id takes ~100 ms.
        rows = self._query(
            "SELECT entry_id, vector FROM vectors WHERE identity = ? ORDER BY rowid",
            (identity_key,),
        )
        lengths = {len(blob) for _, blob in rows}
        if len(lengths) > 1:
            # Only after tampering: keep the vectors of the dominant width, drop the rest.
            widths = [len(blob) for _, blob in rows]
            width = max(lengths, key=widths.count)
            log.warning("index has vectors of %d widths; using %d-byte ones", len(lengths), width)
            rows = [row for row in rows if len(row[1]) == width]
        ids = [entry_id for entry_id, _ in rows]
        if not rows:
            return ids, np.zeros((0, _dim_of(identity_key)), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        return ids, matrix.reshape(len(rows), -1)

    def postings(self, terms: Iterable[str]) -> dict[str, dict[str, int]]:
        """Given terms, return term -> {entry id: term frequency} (absent terms omitted)."""
        result: dict[str, dict[str, int]] = {}
        rows = self._query(
            f"SELECT term, entry_id, tf FROM postings WHERE term IN {IDS_IN}", (_ids(terms),)
        )
        for term, entry_id, tf in rows:
            result.setdefault(term, {})[entry_id] = tf
        return result

    def lexical_stats(self) -> tuple[int, float]:
        """Return (document count, average document length) for BM25."""
        count, average = self._query("SELECT count(*), avg(doc_len) FROM entries")[0]
        return int(count), float(average or 0.0)

    def doc_lengths(self, ids: Iterable[str]) -> dict[str, int]:
        """Given entry ids, return each existing one's BM25 document length."""
        rows = self._query(f"SELECT id, doc_len FROM entries WHERE id IN {IDS_IN}", (_ids(ids),))
        return {entry_id: doc_len for entry_id, doc_len in rows}

    def counts(self) -> dict[str, int]:
        """Return {"files", "entries", "vectors"} row counts."""
        row = self._query(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM entries), "
            "(SELECT count(*) FROM vectors)"
        )[0]
        return {"files": row[0], "entries": row[1], "vectors": row[2]}

    def generation(self) -> int:
        """Return a number that increases with every committed batch."""
        return int(self.meta("generation") or 0)

    # -- what a warm reader's incremental refresh needs ---------------------------------------
    # Every entry's stored row and every vector's key in one cheap query each (~35 ms and
    # ~20 ms at 10,000 entries, where building 10,000 `EntryRow`s takes ~150 ms): the reader
    # compares raw rows and decodes (`entry_row`) only what changed.

    def raw_entry_rows(self) -> dict[str, tuple[Any, ...]]:
        """Return id -> the entry's row exactly as stored (`ENTRY_COLUMNS` order)."""
        return {row[0]: tuple(row) for row in self._query(f"SELECT {ENTRY_COLUMNS} FROM entries")}

    def vector_keys(self, identity_key: str) -> dict[str, str]:
        """Given a model identity, return id -> the L0 hash of every vector of it."""
        rows = self._query(
            "SELECT entry_id, l0_hash FROM vectors WHERE identity = ?", (identity_key,)
        )
        return dict(rows)

    def vector_blobs(self, identity_key: str, ids: Iterable[str]) -> list[tuple[str, str, bytes]]:
        """Given an identity and entry ids, return (id, L0 hash, float32 blob) of their vectors."""
        # "+identity": look the ids up by primary key; the identity index matches every row.
        return self._query(
            "SELECT entry_id, l0_hash, vector FROM vectors WHERE +identity = ? "
            f"AND entry_id IN {IDS_IN}",
            (identity_key, _ids(ids)),
        )

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
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN {IDS_IN}", (_ids(ids),)
        )
        return {row[0]: tuple(row) for row in rows}

    def terms_of(self, ids: Iterable[str]) -> set[str]:
        """Given entry ids, return every term their postings hold now."""
        rows = self._query(
            f"SELECT DISTINCT term FROM postings WHERE entry_id IN {IDS_IN}", (_ids(ids),)
        )
        return {row[0] for row in rows}

    def _ensure_change_log(self) -> None:
        """Create the change log and its triggers once (a no-op after the first call); the
        generation it starts at goes to meta `change_log_from`."""
        connection = self._write
        if self._change_log_ready is connection:
            return
        exists = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entry_changes'"
        ).fetchone()
        if not exists:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for statement in CHANGE_LOG.split(";\n"):
                    if statement.strip():
                        connection.execute(statement)
                connection.execute(
                    "INSERT OR REPLACE INTO meta (key, value) SELECT 'change_log_from', value "
                    "FROM meta WHERE key = 'generation'"
                )
                connection.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('change_log_epoch', ?)",
                    (os.urandom(8).hex(),),
                )
                connection.execute("COMMIT")
            except BaseException:
                _rollback(connection)
                raise
        self._change_log_ready = connection

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
                f"SELECT {columns} FROM files WHERE path IN {IDS_IN}", (_ids(paths),)
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
            (_ids(paths),),
        )
        return [entry_row(row) for row in rows]

    def owners(self, ids: Iterable[str]) -> dict[str, str]:
        """Given entry ids, return id -> path of the file that holds each existing one."""
        rows = self._query(f"SELECT id, path FROM entries WHERE id IN {IDS_IN}", (_ids(ids),))
        return {entry_id: path for entry_id, path in rows}

    def vector_hashes(self, identity_key: str, ids: Iterable[str]) -> dict[str, str]:
        """Given an identity and entry ids, return id -> L0 hash of their vectors of it."""
        rows = self._query(
            # "+identity": look ids up by primary key; the identity index matches every row.
            f"SELECT entry_id, l0_hash FROM vectors WHERE +identity = ? AND entry_id IN {IDS_IN}",
            (identity_key, _ids(ids)),
        )
        return {entry_id: l0_hash for entry_id, l0_hash in rows}

    def missing_vectors(self, identity_key: str) -> list[EntryRow]:
        """Given an identity, return the entries without a vector of it for their current L0."""
        rows = self._query(
            f"SELECT {', '.join('e.' + c for c in ENTRY_COLUMNS.split(', '))} FROM entries e "
            "LEFT JOIN vectors v ON v.entry_id = e.id AND v.identity = ? AND v.l0_hash = e.l0_hash "
            "WHERE v.entry_id IS NULL ORDER BY e.path, e.line_start",
            (identity_key,),
        )
        return [entry_row(row) for row in rows]

    def vector_identities(self) -> dict[str, int]:
        """Return identity key -> number of vectors stored with it."""
        rows = self._query("SELECT identity, count(*) FROM vectors GROUP BY identity")
        return {identity: count for identity, count in rows}

    def vector_issues(self, identity_key: str | None, dim: int | None) -> list[VectorIssue]:
        """Given the current identity and dim (None: unknown), return every vector that does not
        fit: no entry, another identity, another width, or an L0 hash that is not the entry's."""
        rows = self._query(
            "SELECT v.entry_id, e.path, v.identity, length(v.vector), v.l0_hash, e.l0_hash "
            "FROM vectors v LEFT JOIN entries e ON e.id = v.entry_id ORDER BY v.entry_id"
        )
        issues: list[VectorIssue] = []
        for entry_id, path, identity, width, vector_hash, entry_hash in rows:
            if path is None:
                issues.append(VectorIssue("orphaned", entry_id, None, "vector without an entry"))
            elif identity_key is not None and identity != identity_key:
                issues.append(
                    VectorIssue("wrong_identity", entry_id, path, f"vector of model {identity}")
                )
            elif dim is not None and width != 4 * dim:
                issues.append(
                    VectorIssue(
                        "wrong_dim", entry_id, path, f"vector has {width / 4:g} dims, not {dim}"
                    )
                )
            elif vector_hash != entry_hash:
                issues.append(
                    VectorIssue(
                        "stale", entry_id, path, "vector embeds another L0 than the entry's"
                    )
                )
        return issues

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
        try:
            self._ensure_change_log()  # inside: a full or read-only disk is told as such
            connection.execute("BEGIN IMMEDIATE")
            try:
                _apply(connection, batch)
                connection.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                )
                connection.execute("COMMIT")
            except BaseException:
                _rollback(connection)
                raise
        except sqlite3.DatabaseError as error:
            if _is_corruption(error):
                raise IndexCorrupt(f"{self.path}: {error}; it will be rebuilt") from error
            if _sqlite_code(error) in _DISK_CODES:
                raise _unavailable(self.path, error) from error
            raise
        finally:
            if large:
                connection.execute("PRAGMA cache_size = -2000")  # SQLite's default
                connection.execute("PRAGMA shrink_memory")
        return self.generation()

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
            if _is_corruption(error):
                raise IndexCorrupt(f"{self.path}: {error}; it will be rebuilt") from error
            if _sqlite_code(error) in _DISK_CODES:
                raise _unavailable(self.path, error) from error
            raise


def _open_read_write(
    db_path: Path, in_use_here: bool
) -> tuple[sqlite3.Connection, sqlite3.Connection, str | None, bool]:
    """Given the index path, return (write, read, what recovery did, whether the schema was
    made), moving a corrupt file aside first."""
    recovered: str | None = None
    if not db_path.exists() and not in_use_here:
        _move_orphans(db_path)
    verdict = None if in_use_here else diagnose(db_path)
    if verdict is not None:
        kind, detail = verdict
        aside = _move_aside(db_path, kind)
        recovered = f"{db_path.name} was {detail}: moved to {aside.name}, rebuilding the index"
        # INFO: callers surface `.recovered` themselves (the CLI prints it, the daemon logs it).
        log.info("%s", recovered)
    try:
        _create_private(db_path)
        write = _connect(db_path)
        created = _ensure_schema(write)
        read = _connect(db_path)
        read.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as error:
        if _is_corruption(error):
            raise IndexCorrupt(
                f"{db_path}: cannot create the index ({error}); move the file aside"
            ) from error
        raise _unavailable(db_path, error) from error
    except OSError as error:
        raise IndexUnavailable(f"{db_path}: {_os_cause(error)}") from error
    return write, read, recovered, created


def _read_only_connections(
    db_path: Path,
) -> tuple[sqlite3.Connection, sqlite3.Connection] | None:
    """Given an index SQLite cannot open for writing, return two read-only connections to it,
    or None. Only when its write-ahead log is empty or gone (everything is in the main file):
    `immutable` reads need no `-shm`, which a full or read-only disk cannot provide."""
    from urllib.parse import quote

    wal = db_path.with_name(db_path.name + "-wal")
    try:
        if db_path.stat().st_size < 100 or (wal.exists() and wal.stat().st_size > 0):
            return None
    except OSError:
        return None
    uri = f"file:{quote(str(db_path))}?mode=ro&immutable=1"
    connections: list[sqlite3.Connection] = []
    try:
        for _ in range(2):
            connection = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False
            )
            connections.append(connection)
            row = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            if row is None or str(row[0]) != str(SCHEMA_VERSION):
                raise sqlite3.DatabaseError("not an index of this schema")
    except sqlite3.Error:
        for connection in connections:
            connection.close()
        return None
    return connections[0], connections[1]


def _apply(connection: sqlite3.Connection, batch: Batch) -> None:
    if batch.delete_entries:
        ids = _ids(batch.delete_entries)
        connection.execute(f"DELETE FROM postings WHERE entry_id IN {IDS_IN}", (ids,))
        connection.execute(f"DELETE FROM vectors WHERE entry_id IN {IDS_IN}", (ids,))
        connection.execute(f"DELETE FROM entries WHERE id IN {IDS_IN}", (ids,))
    if batch.drop_other_identities:
        connection.execute("DELETE FROM vectors WHERE identity != ?", (batch.identity,))
    if batch.drop_vectors:
        connection.execute(
            f"DELETE FROM vectors WHERE entry_id IN {IDS_IN}", (_ids(batch.drop_vectors),)
        )
    connection.executemany(
        f"INSERT OR REPLACE INTO entries ({ENTRY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                row.id,
                row.path,
                row.workspace,
                row.line_start,
                row.line_end,
                json.dumps(list(row.heading_path), ensure_ascii=False),
                row.l0,
                row.l0_source,
                row.text_hash,
                row.l0_hash,
                row.slot,
                row.doc_len,
            )
            for row in batch.upsert_entries
        ],
    )
    if batch.postings:
        connection.execute(
            f"DELETE FROM postings WHERE entry_id IN {IDS_IN}",
            (_ids(entry_id for entry_id, _ in batch.postings),),
        )
        connection.executemany(
            "INSERT INTO postings (term, entry_id, tf) VALUES (?, ?, ?)",
            [
                (term, entry_id, tf)
                for entry_id, counts in batch.postings
                for term, tf in counts.items()
            ],
        )
    connection.executemany(
        "INSERT OR REPLACE INTO vectors (entry_id, l0_hash, identity, vector) VALUES (?,?,?,?)",
        [(entry_id, l0_hash, batch.identity, blob) for entry_id, l0_hash, blob in batch.vectors],
    )
    if batch.delete_files:
        connection.execute(f"DELETE FROM files WHERE path IN {IDS_IN}", (_ids(batch.delete_files),))
    connection.executemany(
        "INSERT OR REPLACE INTO files (path, size, mtime_ns, sha256, synced_ns) VALUES (?,?,?,?,?)",
        [
            (record.path, record.size, record.mtime_ns, record.sha256, record.synced_ns)
            for record in batch.upsert_files
        ],
    )
    connection.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", batch.meta)
    if batch.vectors_complete is not None:
        connection.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('vectors_complete', ?)",
            (batch.vectors_complete,),
        )


def diagnose(db_path: Path) -> tuple[AsideKind, str] | None:
    """Given an index path, return why it must be rebuilt (None: usable, empty or absent).

    Raises IndexUnavailable when the file cannot be checked for a reason outside it (disk,
    file system, permission): that is no verdict on the index, which stays where it is.
    """
    try:
        size = db_path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as error:
        raise IndexUnavailable(f"{db_path}: {_os_cause(error)}") from error
    if size == 0:
        wal = db_path.with_name(db_path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return "corrupt", "truncated (0 bytes, with a write-ahead log to replay)"
        return None  # SQLite's empty database (what a full disk leaves of a fresh index)
    try:
        with db_path.open("rb") as handle:
            header = handle.read(100)
    except OSError as error:
        raise IndexUnavailable(f"{db_path}: {_os_cause(error)}") from error
    if len(header) < 100:
        return "corrupt", f"truncated ({size} bytes)"
    if not header.startswith(SQLITE_MAGIC):
        return "corrupt", "not an SQLite database (bad header)"
    try:
        connection = sqlite3.connect(f"file:{db_path}?mode=rw", uri=True, timeout=10)
    except sqlite3.Error as error:
        if isinstance(error, sqlite3.DatabaseError) and _is_corruption(error):
            return "corrupt", f"not openable ({error})"
        raise _unavailable(db_path, error) from error
    try:
        check = connection.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            return "corrupt", f"corrupt ({'; '.join(str(row[0]) for row in check[:3])})"
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        if not tables:
            return None
        if "meta" not in tables:
            return "old-schema", "not a carryd index of this version (no meta table)"
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = row[0] if row else None
        if str(version) != str(SCHEMA_VERSION):
            return "old-schema", f"schema version {version}, not {SCHEMA_VERSION}"
    except sqlite3.DatabaseError as error:
        if _is_corruption(error):
            return "corrupt", f"corrupt ({error})"
        if _sqlite_code(error) in (5, 6):  # busy, locked: another carryd is writing
            return None
        raise _unavailable(db_path, error) from error
    finally:
        connection.close()
    return None


def _move_aside(db_path: Path, kind: AsideKind) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = db_path.with_name(f"{db_path.name}.{kind}-{stamp}")
    counter = 1
    while aside.exists():
        aside = db_path.with_name(f"{db_path.name}.{kind}-{stamp}-{counter}")
        counter += 1
    try:
        os.replace(db_path, aside)
        # The WAL belongs to the bad file: replayed into a fresh one it would corrupt it.
        for suffix in ("-wal", "-shm"):
            companion = db_path.with_name(db_path.name + suffix)
            if companion.exists():
                os.replace(companion, aside.with_name(aside.name + suffix))
    except OSError as error:
        raise IndexCorrupt(
            f"{db_path}: the index is unusable and cannot be moved aside ({error.strerror}); "
            "move or delete it by hand"
        ) from error
    return aside


def _move_orphans(db_path: Path) -> None:
    # A WAL left without its database would be replayed into the fresh one.
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for suffix in ("-wal", "-shm"):
        companion = db_path.with_name(db_path.name + suffix)
        if companion.exists():
            try:
                os.replace(companion, db_path.with_name(f"{db_path.name}.orphan-{stamp}{suffix}"))
            except OSError as error:
                raise IndexCorrupt(
                    f"{companion}: left over from a deleted index and cannot be moved aside "
                    f"({error.strerror}); move or delete it by hand"
                ) from error


def _connect(db_path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(
        str(db_path), isolation_level=None, check_same_thread=False, timeout=10
    )
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    return connection


def _ensure_schema(connection: sqlite3.Connection) -> bool:
    """Given the write connection, create the schema when absent; return whether it did."""
    has_meta = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if has_meta:
        return False
    connection.execute("BEGIN IMMEDIATE")
    try:
        if connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone():
            connection.execute("ROLLBACK")  # another process created it meanwhile
            return False
        for statement in SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)
        connection.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("generation", "0"),
                ("vectors_complete", ""),
            ],
        )
        connection.execute("COMMIT")
    except BaseException:
        _rollback(connection)
        raise
    return True


def entry_row(row: Sequence[Any]) -> EntryRow:
    """Given an entries row as stored (`ENTRY_COLUMNS` order), return its `EntryRow`."""
    return EntryRow(
        id=row[0],
        path=row[1],
        workspace=row[2],
        line_start=row[3],
        line_end=row[4],
        heading_path=tuple(json.loads(row[5])),
        l0=row[6],
        l0_source=cast(L0Source, row[7]),
        text_hash=row[8],
        l0_hash=row[9],
        slot=row[10],
        doc_len=row[11],
    )


def _is_corruption(error: sqlite3.DatabaseError) -> bool:
    # SQLITE_CORRUPT (11) and SQLITE_NOTADB (26); "locked", constraint and usage errors are not.
    code = _sqlite_code(error)
    if code is not None:
        return code in (11, 26)
    return type(error) is sqlite3.DatabaseError


def _sqlite_code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


# SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN: the disk, the file
# system or a permission, never the index's content.
_DISK_CODES = frozenset({3, 8, 10, 13, 14})


def _unavailable(db_path: Path, error: sqlite3.Error) -> IndexUnavailable:
    """Given an SQLite error that is not corruption, return the error that names its cause."""
    code = _sqlite_code(error)
    cause = _disk_cause(db_path.parent)
    if code == 13 or cause == "full":
        why = "the disk is full (database or disk is full); free space and run the command again"
    elif code == 8 or cause == "read-only":
        why = (
            "the file system is read-only; carryd keeps its index there, so mount it "
            "read-write (or point index.state_dir elsewhere inside a writable root)"
        )
    elif code == 3 or cause == "permission":
        why = "permission denied; give the user running carryd read and write access"
    else:
        why = "the disk reported an error; check it and run the command again"
    return IndexUnavailable(f"{db_path}: {error}: {why}; the index was left as it is")


def _disk_cause(folder: Path) -> Literal["full", "read-only", "permission"] | None:
    """Given the index folder, return what about its disk keeps SQLite from writing there."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    if info.f_flag & os.ST_RDONLY:
        return "read-only"
    if info.f_bavail == 0 or info.f_favail == 0:
        return "full"
    if not os.access(folder, os.W_OK):
        return "permission"
    return None


def _os_cause(error: OSError) -> str:
    """Given an OSError about the index, return its cause in words a user can act on."""
    cause: str = describe_os_error(error, name_the_file=False)
    return cause


def _rollback(connection: sqlite3.Connection) -> None:
    """Roll back an open transaction; SQLite already rolled back after SQLITE_FULL and some
    I/O errors, and ROLLBACK then fails with 'no transaction is active', hiding the cause."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


def _create_private(db_path: Path) -> None:
    """Given the index path, create the file with mode 0600 when absent, before SQLite does:
    SQLite creates `-wal` and `-shm` with the database file's mode, so they follow. An
    existing file is never opened here (closing a descriptor would drop this process's
    SQLite locks on it); `secure_state_folder` fixes its mode by path."""
    try:
        descriptor = os.open(db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, 0o600)  # the umask may have taken bits from 0600 too
    finally:
        os.close(descriptor)


def secure_state_folder(folder: Path) -> None:
    """Given carryd's state folder, make it 0700 and every file in it 0600 (an install from
    before this rule, or files written under a loose umask); folders below it 0700. Files
    of other owners and a read-only file system are left as they are."""
    for path, mode in _state_modes(folder):
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == mode:
                continue
            if info.st_uid == os.geteuid():
                os.chmod(path, mode)


def _state_modes(folder: Path) -> Iterable[tuple[Path, int]]:
    yield folder, 0o700
    try:
        children = list(os.scandir(folder))
    except OSError:
        return
    for child in children:
        if child.is_dir(follow_symlinks=False):
            yield from _state_modes(Path(child.path))
        elif child.is_file(follow_symlinks=False) or child.name.endswith(".sock"):
            yield Path(child.path), 0o600


def _ids(values: Iterable[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


def _dim_of(identity_key: str) -> int:
    try:
        dim = json.loads(identity_key).get("dim", 0)
    except (ValueError, AttributeError):
        return 0
    return dim if isinstance(dim, int) else 0
