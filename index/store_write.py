"""Given a write connection, apply one `Batch` and keep the change log (see `store.py`).

A write is one transaction per batch; triggers on `entries` and `vectors` stamp every id a
commit touches with the generation it makes, which a warm reader refreshes from.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from carryd.index.store_file import ENTRY_COLUMNS, IDS_IN, ids_json, rollback
from carryd.index.sync import EntryRow, FileRecord

# A batch writing more rows than this gets a larger page cache for its transaction.
LARGE_BATCH_ROWS = 20_000
LARGE_BATCH_CACHE_KIB = 65_536


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

# The next vector set (a model change re-embedding every entry): the vectors of the model
# meta `next_identity` names, written beside the serving set (`vectors`) until it has one for
# every entry, then swapped in whole (`Batch.swap_next`). Additive like the change log: an
# index made before it gets the table on its first write.
NEXT_VECTORS = (
    "CREATE TABLE IF NOT EXISTS next_vectors (\n"
    "    entry_id TEXT PRIMARY KEY, l0_hash TEXT NOT NULL, identity TEXT NOT NULL,\n"
    "    vector BLOB NOT NULL\n"
    ");\n"
    + _log_trigger("next_vectors", "INSERT", ("NEW.entry_id",))
    + _log_trigger("next_vectors", "UPDATE", ("OLD.entry_id", "NEW.entry_id"))
    + _log_trigger("next_vectors", "DELETE", ("OLD.entry_id",))
)


@dataclass(frozen=True)
class Batch:
    """One transaction's worth of index changes; `Store.apply` writes all of it or none."""

    upsert_entries: tuple[EntryRow, ...] = ()
    delete_entries: tuple[str, ...] = ()  # ids; their postings and vectors go too
    # (entry id, {term: tf}): replaces that entry's postings
    postings: tuple[tuple[str, Mapping[str, int]], ...] = ()
    identity: str = ""  # the identity key of `vectors` (those of the next set's go there)
    vectors: tuple[tuple[str, str, bytes], ...] = ()  # (entry id, l0 hash, float32 bytes)
    drop_vectors: tuple[str, ...] = ()  # entry ids whose vector no longer matches their L0
    drop_other_identities: bool = False  # a model identity change: vectors of others go
    upsert_files: tuple[FileRecord, ...] = ()
    delete_files: tuple[str, ...] = ()
    vectors_complete: str | None = None  # meta: identity with a vector for every entry
    meta: tuple[tuple[str, str], ...] = ()  # other meta keys to set
    # The next vector set: None leaves it; "" drops it; an identity key starts it (rows of
    # any other identity in it go) or goes on with it. Applied before `vectors` are written.
    next_identity: str | None = None
    swap_next: bool = False  # the next set is complete: it replaces the serving set whole


def _create_when_absent(
    connection: sqlite3.Connection, table: str, script: str, *after: tuple[str, tuple[str, ...]]
) -> None:
    """Given the write connection, a table's name, the script creating it and statements to run
    with it, run them in one transaction when the table is absent."""
    exists = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if exists:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in script.split(";\n"):
            if statement.strip():
                connection.execute(statement)
        for statement, parameters in after:
            connection.execute(statement, parameters)
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise


def create_change_log(connection: sqlite3.Connection) -> None:
    """Given the write connection, create the change log and its triggers when absent; the
    generation it starts at goes to meta `change_log_from`."""
    _create_when_absent(
        connection,
        "entry_changes",
        CHANGE_LOG,
        (
            "INSERT OR REPLACE INTO meta (key, value) SELECT 'change_log_from', value "
            "FROM meta WHERE key = 'generation'",
            (),
        ),
        (
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('change_log_epoch', ?)",
            (os.urandom(8).hex(),),
        ),
    )


def create_next_vectors(connection: sqlite3.Connection) -> None:
    """Given the write connection, create the next vector set's table when absent."""
    _create_when_absent(connection, "next_vectors", NEXT_VECTORS)


def next_identity_in(connection: sqlite3.Connection) -> str:
    """Given a connection, return the identity key of the next vector set ("" when none)."""
    row = connection.execute("SELECT value FROM meta WHERE key = 'next_identity'").fetchone()
    return str(row[0]) if row else ""


def vectors_table(batch: Batch, next_identity: str) -> str:
    """Given a batch and the next set's identity, return the table its vectors go to."""
    return "next_vectors" if next_identity and batch.identity == next_identity else "vectors"


def _apply_next_set(connection: sqlite3.Connection, batch: Batch) -> str:
    """Start, drop or swap in the next vector set as `batch` says; return its identity now."""
    if batch.next_identity is not None:
        connection.execute("DELETE FROM next_vectors WHERE identity != ?", (batch.next_identity,))
        connection.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('next_identity', ?)",
            (batch.next_identity,),
        )
    next_identity = next_identity_in(connection)
    if batch.swap_next and next_identity:
        connection.execute("DELETE FROM vectors")
        connection.execute(
            "INSERT INTO vectors (entry_id, l0_hash, identity, vector) "
            "SELECT entry_id, l0_hash, identity, vector FROM next_vectors"
        )
        connection.execute("DELETE FROM next_vectors")
        connection.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("vectors_complete", next_identity), ("next_identity", "")],
        )
        next_identity = ""
    return next_identity


def apply_batch(connection: sqlite3.Connection, batch: Batch) -> None:
    """Given the write connection inside a transaction, write every change of `batch`."""
    gone = tuple(batch.delete_entries) + tuple(batch.drop_vectors)
    if gone:  # an entry's vectors go from both sets (the next one's, when it has one)
        connection.execute(
            f"DELETE FROM next_vectors WHERE entry_id IN {IDS_IN}", (ids_json(gone),)
        )
    if batch.delete_entries:
        ids = ids_json(batch.delete_entries)
        connection.execute(f"DELETE FROM postings WHERE entry_id IN {IDS_IN}", (ids,))
        connection.execute(f"DELETE FROM vectors WHERE entry_id IN {IDS_IN}", (ids,))
        connection.execute(f"DELETE FROM entries WHERE id IN {IDS_IN}", (ids,))
    if batch.drop_other_identities:
        connection.execute("DELETE FROM vectors WHERE identity != ?", (batch.identity,))
    if batch.drop_vectors:
        connection.execute(
            f"DELETE FROM vectors WHERE entry_id IN {IDS_IN}", (ids_json(batch.drop_vectors),)
        )
    table = vectors_table(batch, _apply_next_set(connection, batch))
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
            (ids_json(entry_id for entry_id, _ in batch.postings),),
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
        f"INSERT OR REPLACE INTO {table} (entry_id, l0_hash, identity, vector) VALUES (?,?,?,?)",
        [(entry_id, l0_hash, batch.identity, blob) for entry_id, l0_hash, blob in batch.vectors],
    )
    if batch.delete_files:
        connection.execute(
            f"DELETE FROM files WHERE path IN {IDS_IN}", (ids_json(batch.delete_files),)
        )
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


def commit_batch(connection: sqlite3.Connection, batch: Batch) -> None:
    """Given the write connection, write `batch` and bump the generation in one transaction
    (rolled back whole on any error)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        apply_batch(connection, batch)
        connection.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise


# The generation as committed (the change log stamps with "+ 1", `_STAMP`).
_GENERATION_NOW = "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')"


def counts_after(
    write: sqlite3.Connection, cached: tuple[int, dict[str, int]] | None, batch: Batch
) -> tuple[int, dict[str, int]] | None:
    """Given the write connection, the cached (generation, counts) and a batch about to be
    committed, return (the generation it will make, the counts then) from the cached counts
    and the rows the batch touches (a query over the batch's ids, not the tables); None when
    the cache cannot say."""
    if cached is None or batch.drop_other_identities or batch.swap_next:
        return None  # (another model's vectors going: how many is a scan; rare)
    gone_entries = set(batch.delete_entries)
    new_entries = {row.id for row in batch.upsert_entries}
    gone_files = set(batch.delete_files)
    new_files = {record.path for record in batch.upsert_files}
    gone_vectors = gone_entries | set(batch.drop_vectors)
    next_identity = next_identity_in(write) if batch.next_identity is None else batch.next_identity
    # (counts are of the serving set: vectors of the next one are not counted)
    new_vectors = (
        {entry_id for entry_id, _, _ in batch.vectors}
        if vectors_table(batch, next_identity) == "vectors"
        else set()
    )
    # Deletes run before upserts (`apply_batch`): an upserted key is new unless it exists
    # and was not deleted first; an `INSERT OR REPLACE` of an existing key adds nothing.
    row = write.execute(
        f"SELECT {_GENERATION_NOW}, "
        f"(SELECT count(*) FROM entries WHERE id IN {IDS_IN}), "
        f"(SELECT count(*) FROM entries WHERE id IN {IDS_IN}), "
        f"(SELECT count(*) FROM files WHERE path IN {IDS_IN}), "
        f"(SELECT count(*) FROM files WHERE path IN {IDS_IN}), "
        f"(SELECT count(*) FROM vectors WHERE entry_id IN {IDS_IN}), "
        f"(SELECT count(*) FROM vectors WHERE entry_id IN {IDS_IN})",
        (
            ids_json(gone_entries),
            ids_json(new_entries - gone_entries),
            ids_json(gone_files),
            ids_json(new_files - gone_files),
            ids_json(gone_vectors),
            ids_json(new_vectors - gone_vectors),
        ),
    ).fetchone()
    generation = int(row[0] or 0)
    if generation != cached[0]:
        return None
    before = cached[1]
    return generation + 1, {
        "files": before["files"] - row[3] + len(new_files) - row[4],
        "entries": before["entries"] - row[1] + len(new_entries) - row[2],
        "vectors": before["vectors"] - row[5] + len(new_vectors) - row[6],
    }
