"""Given the index path, open its SQLite file safely: the schema, the diagnosis of a bad file and
moving it aside, private permissions, and the cause behind an SQLite error (see `store.py`).

Corruption is only what SQLite itself calls corrupt (SQLITE_CORRUPT, SQLITE_NOTADB, a failed
`quick_check`, a header that is not SQLite's). A full disk, a read-only file system and a
denied permission are not: the index is left where it is and `IndexUnavailable` names the cause
(an empty file is an empty database, not a truncated one). A transaction SQLite already rolled
back (it does on SQLITE_FULL) is not rolled back again, so the error a caller sees is the cause.

Permissions: the state folder is 0700 and every file in it (the index with its `-wal` and
`-shm`, carries, manifests, state files) 0600, whatever the umask; `Store.open` makes an
existing install so. SQLite gives the `-wal`/`-shm` files the mode of the database file.

An IO shell module: only `store.py` and `store_write.py` use it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from carryd.index.errors import IndexCorrupt, IndexUnavailable, describe_os_error
from carryd.index.state_folder import refuse_linked_folder

if TYPE_CHECKING:  # markdown-it, ~50 ms: the state checks below must stay cheap to import
    from carryd.index.entries import L0Source
    from carryd.index.sync import EntryRow

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"

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

ENTRY_COLUMNS = (
    "id, path, workspace, line_start, line_end, heading_path, l0, l0_source, text_hash, "
    "l0_hash, slot, doc_len"
)
# Many ids go to SQLite as one JSON array (json_each): no variable-count limit to chunk around.
IDS_IN = "(SELECT value FROM json_each(?))"

AsideKind = Literal["corrupt", "old-schema"]


def open_read_write(
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
        if is_corruption(error):
            raise IndexCorrupt(
                f"{db_path}: cannot create the index ({error}); move the file aside"
            ) from error
        raise unavailable_error(db_path, error) from error
    except OSError as error:
        raise IndexUnavailable(f"{db_path}: {os_cause(error)}") from error
    return write, read, recovered, created


def read_only_connections(
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
        raise IndexUnavailable(f"{db_path}: {os_cause(error)}") from error
    if size == 0:
        wal = db_path.with_name(db_path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return "corrupt", "truncated (0 bytes, with a write-ahead log to replay)"
        return None  # SQLite's empty database (what a full disk leaves of a fresh index)
    try:
        with db_path.open("rb") as handle:
            header = handle.read(100)
    except OSError as error:
        raise IndexUnavailable(f"{db_path}: {os_cause(error)}") from error
    if len(header) < 100:
        return "corrupt", f"truncated ({size} bytes)"
    if not header.startswith(SQLITE_MAGIC):
        return "corrupt", "not an SQLite database (bad header)"
    try:
        connection = sqlite3.connect(f"file:{db_path}?mode=rw", uri=True, timeout=10)
    except sqlite3.Error as error:
        if isinstance(error, sqlite3.DatabaseError) and is_corruption(error):
            return "corrupt", f"not openable ({error})"
        raise unavailable_error(db_path, error) from error
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
        if is_corruption(error):
            return "corrupt", f"corrupt ({error})"
        if sqlite_code(error) in (5, 6):  # busy, locked: another carryd is writing
            return None
        raise unavailable_error(db_path, error) from error
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
        rollback(connection)
        raise
    return True


def entry_row(row: Sequence[Any]) -> EntryRow:
    """Given an entries row as stored (`ENTRY_COLUMNS` order), return its `EntryRow`."""
    from carryd.index.sync import EntryRow  # lazy: see the imports above

    return EntryRow(
        id=row[0],
        path=row[1],
        workspace=row[2],
        line_start=row[3],
        line_end=row[4],
        heading_path=tuple(json.loads(row[5])),
        l0=row[6],
        l0_source=cast("L0Source", row[7]),
        text_hash=row[8],
        l0_hash=row[9],
        slot=row[10],
        doc_len=row[11],
    )


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """Given an SQLite error, return whether SQLite calls the file corrupt."""
    # SQLITE_CORRUPT (11) and SQLITE_NOTADB (26); "locked", constraint and usage errors are not.
    code = sqlite_code(error)
    if code is not None:
        return code in (11, 26)
    return type(error) is sqlite3.DatabaseError


def sqlite_code(error: sqlite3.Error) -> int | None:
    """Given an SQLite error, return its primary result code (None: unknown)."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


# SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN: the disk, the file
# system or a permission, never the index's content.
DISK_CODES = frozenset({3, 8, 10, 13, 14})


def unavailable_error(db_path: Path, error: sqlite3.Error) -> IndexUnavailable:
    """Given an SQLite error that is not corruption, return the error that names its cause."""
    code = sqlite_code(error)
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


def os_cause(error: OSError) -> str:
    """Given an OSError about the index, return its cause in words a user can act on."""
    cause: str = describe_os_error(error, name_the_file=False)
    return cause


def rollback(connection: sqlite3.Connection) -> None:
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


# What carryd itself creates in its state folder: only these are made private. Anything else
# a user put there (a script, a folder of their own) keeps the mode it has.
_STATE_FILE_PREFIXES = ("index.sqlite", "carryd.sock")
_STATE_FILE_SUFFIXES = (".json", ".lock", ".sock", ".tmp")
_STATE_FOLDERS = ("carry", "sessions")


def secure_state_folder(folder: Path) -> None:
    """Given carryd's state folder, make it 0700 and the files carryd writes there 0600 (an
    install from before this rule, or files written under a loose umask); its own folders
    (`carry/`, `sessions/`) 0700 with their `.md`/`.json` files 0600. What carryd did not
    create, files of other owners, links and a read-only file system are left as they are.
    A folder that is a link or another user's is refused first (`refuse_linked_folder`)."""
    refuse_linked_folder(folder)
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
            if child.name in _STATE_FOLDERS:
                yield Path(child.path), 0o700
                yield from _own_files(Path(child.path))
        elif child.name.startswith(_STATE_FILE_PREFIXES) or child.name.endswith(
            _STATE_FILE_SUFFIXES
        ):
            yield Path(child.path), 0o600


def _own_files(folder: Path) -> Iterable[tuple[Path, int]]:
    try:
        children = list(os.scandir(folder))
    except OSError:
        return
    for child in children:
        if child.is_file(follow_symlinks=False) and child.name.endswith((".md", ".json", ".tmp")):
            yield Path(child.path), 0o600


def ids_json(values: Iterable[str]) -> str:
    """Given ids, return them as one JSON array, the parameter of `IDS_IN`."""
    return json.dumps(list(values), ensure_ascii=False)
