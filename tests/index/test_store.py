"""The SQLite store on real SQLite files: batches, the read API, recovery of bad files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from carryd.index.errors import IndexUnavailable
from carryd.index.store import SCHEMA_VERSION, Batch, Store, diagnose
from carryd.index.sync import EntryRow, FileRecord

IDENTITY = '{"dim":4,"name":"test"}'
OTHER = '{"dim":4,"name":"other"}'


def row(entry_id: str, path: str = "ws/a.md", workspace: str | None = "ws", **changes) -> EntryRow:
    values = dict(
        id=entry_id,
        path=path,
        workspace=workspace,
        line_start=1,
        line_end=2,
        heading_path=("Top", "标题"),
        l0="abstract " + entry_id,
        l0_source="heading",
        text_hash="t-" + entry_id,
        l0_hash="l-" + entry_id,
        slot=None,
        doc_len=3,
    )
    values.update(changes)
    return EntryRow(**values)


def vector(*values: float) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / ".carryd" / "index.sqlite"


@pytest.fixture
def store(db: Path):
    with Store.open(db) as opened:
        opened.apply(
            Batch(
                upsert_entries=(
                    row("mem_a"),
                    row("mem_b", path="root.md", workspace=None, doc_len=5),
                    row("mem_c", path="other/x.md", workspace="other", doc_len=1),
                ),
                postings=(
                    ("mem_a", {"sqlite": 2, "wal": 1}),
                    ("mem_b", {"sqlite": 1}),
                    ("mem_c", {"carry": 1}),
                ),
                identity=IDENTITY,
                vectors=(("mem_a", "l-mem_a", vector(1, 0, 0, 0)),),
                upsert_files=(FileRecord("ws/a.md", 10, 5, "sha", 6),),
            )
        )
        yield opened


def test_a_new_store_starts_empty_at_generation_zero(db: Path):
    with Store.open(db) as store:
        assert store.recovered is None
        assert store.counts() == {"files": 0, "entries": 0, "vectors": 0}
        assert store.generation() == 0
        assert store.lexical_stats() == (0, 0.0)
        ids, matrix = store.vectors(IDENTITY)
        assert ids == [] and matrix.shape == (0, 4) and matrix.dtype == np.float32
        mode = store._read.execute("PRAGMA journal_mode").fetchone()[0]  # noqa: SLF001
        assert mode == "wal"


def test_read_api_shapes(store: Store):
    assert store.generation() == 1
    assert store.counts() == {"files": 1, "entries": 3, "vectors": 1}
    assert [r.id for r in store.entries()] == ["mem_c", "mem_b", "mem_a"]  # by path
    assert [r.id for r in store.entries("ws", all_workspaces=False)] == ["mem_b", "mem_a"]
    assert [r.id for r in store.entries(None, all_workspaces=False)] == ["mem_b"]
    assert store.entries_by_id(["mem_a", "mem_zzz"]) == {"mem_a": row("mem_a")}
    assert store.postings(["sqlite", "carry", "absent"]) == {
        "sqlite": {"mem_a": 2, "mem_b": 1},
        "carry": {"mem_c": 1},
    }
    assert store.lexical_stats() == (3, 3.0)
    assert list(store.common_postings(2)) == [("sqlite", ["mem_a", "mem_b"], [2, 1])]
    ids, matrix = store.vectors(IDENTITY)
    assert ids == ["mem_a"]
    assert matrix.dtype == np.float32 and matrix.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert store.vectors(OTHER)[0] == []
    assert store.file_records() == {"ws/a.md": FileRecord("ws/a.md", 10, 5, "sha", 6)}


def test_deleting_an_entry_takes_its_postings_and_vector(store: Store):
    generation = store.apply(Batch(delete_entries=("mem_a",)))
    assert generation == 2
    assert store.counts()["vectors"] == 0
    assert store.postings(["wal", "sqlite"]) == {"sqlite": {"mem_b": 1}}


def test_postings_are_replaced_per_entry(store: Store):
    store.apply(Batch(postings=(("mem_a", {"new": 4}),)))
    assert store.postings(["sqlite", "wal", "new"]) == {
        "sqlite": {"mem_b": 1},
        "new": {"mem_a": 4},
    }
    assert store.postings_lengths()["mem_a"] == 4


def test_a_failing_batch_writes_nothing(store: Store):
    with pytest.raises(sqlite3.IntegrityError):
        store.apply(
            Batch(
                upsert_entries=(row("mem_new"),),
                # the same (term, entry) twice violates the postings key
                postings=(("mem_new", {"x": 1}), ("mem_new", {"x": 2})),
            )
        )
    assert "mem_new" not in store.entries_by_id(["mem_new"])
    assert store.generation() == 1


def test_vectors_of_another_identity_are_dropped_only_when_asked(store: Store):
    store.apply(Batch(identity=OTHER, vectors=(("mem_b", "l-mem_b", vector(0, 1, 0, 0)),)))
    assert store.vector_identities() == {IDENTITY: 1, OTHER: 1}
    store.apply(Batch(identity=OTHER, drop_other_identities=True))
    assert store.vector_identities() == {OTHER: 1}


def test_missing_vectors_and_vector_issues(store: Store):
    assert [r.id for r in store.missing_vectors(IDENTITY)] == ["mem_c", "mem_b"]
    store.apply(
        Batch(
            identity=IDENTITY,
            vectors=(
                ("mem_b", "l-old", vector(0, 1, 0, 0)),  # stale: embeds another L0
                ("mem_c", "l-mem_c", vector(0, 1, 0)),  # wrong dim
                ("mem_gone", "l-x", vector(0, 0, 1, 0)),  # orphaned
            ),
        )
    )
    issues = {(issue.kind, issue.entry_id) for issue in store.vector_issues(IDENTITY, 4)}
    assert issues == {("stale", "mem_b"), ("wrong_dim", "mem_c"), ("orphaned", "mem_gone")}
    # a corrupt width never breaks the matrix: the dominant width wins
    ids, matrix = store.vectors(IDENTITY)
    assert matrix.shape == (len(ids), 4)


def test_file_paths_under_a_folder(store: Store):
    store.apply(
        Batch(
            upsert_files=(
                FileRecord("ws/sub/b.md", 1, 1, "s", 1),
                FileRecord("wsx/c.md", 1, 1, "s", 1),
            )
        )
    )
    assert sorted(store.file_paths_under("ws")) == ["ws/a.md", "ws/sub/b.md"]
    assert store.file_paths_under("ws/sub/") == ["ws/sub/b.md"]


def test_the_store_holds_no_memory_text(store: Store):
    columns = {
        table: [info[1] for info in store._read.execute(f"PRAGMA table_info({table})")]  # noqa: SLF001
        for table in ("entries", "vectors", "files", "postings")
    }
    assert not any(
        name in ("text", "body", "content") for names in columns.values() for name in names
    )


def _aside(db: Path, kind: str) -> list[Path]:
    return sorted(db.parent.glob(f"{db.name}.{kind}-*"))


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda db: db.write_bytes(b"this is not a database" * 100), "bad header"),
        (lambda db: db.write_bytes(db.read_bytes()[:60]), "truncated"),
        (lambda db: db.write_bytes(db.read_bytes()[: len(db.read_bytes()) // 2]), "corrupt"),
    ],
    ids=["garbage", "header-cut", "half"],
)
def test_a_corrupt_index_is_moved_aside_and_rebuilt(store: Store, db: Path, damage, why):
    store.close()
    _checkpoint(db)
    damage(db)
    with Store.open(db) as reopened:
        assert reopened.recovered and "moved to index.sqlite.corrupt-" in reopened.recovered
        assert why in reopened.recovered
        assert reopened.counts() == {"files": 0, "entries": 0, "vectors": 0}
    assert len(_aside(db, "corrupt")) == 1
    assert diagnose(db) is None


def test_an_index_of_another_schema_version_is_moved_aside(db: Path):
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION + 1,))
    connection.close()
    with Store.open(db) as store:
        assert store.recovered and f"schema version {SCHEMA_VERSION + 1}" in store.recovered
        assert store.counts()["entries"] == 0
    [aside] = _aside(db, "old-schema")
    assert sqlite3.connect(aside).execute("SELECT value FROM meta").fetchone() == (
        str(SCHEMA_VERSION + 1),
    )


def test_a_foreign_database_is_moved_aside_not_deleted(db: Path):
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE notes (x)")
    connection.close()
    with Store.open(db) as store:
        assert store.recovered and "no meta table" in store.recovered
    assert len(_aside(db, "old-schema")) == 1


def test_a_wal_left_without_its_database_is_moved_aside(store: Store, db: Path):
    store.apply(Batch(upsert_entries=(row("mem_z"),)))
    wal = db.with_name(db.name + "-wal")
    assert wal.exists()
    kept = wal.read_bytes()
    store.close()
    wal.write_bytes(kept)  # closing checkpoints; put a WAL back, then lose the database
    db.unlink()
    with Store.open(db) as reopened:
        assert reopened.counts()["entries"] == 0
    assert list(db.parent.glob(f"{db.name}.orphan-*-wal"))


def test_recover_reopens_in_place_after_the_file_goes_bad(store: Store, db: Path):
    store.close()
    db.write_bytes(b"garbage" * 50)
    message = store.recover()
    assert message and "corrupt" in message
    assert store.counts()["entries"] == 0
    store.apply(Batch(upsert_entries=(row("mem_new"),)))
    assert store.counts()["entries"] == 1


def test_two_stores_on_one_file_see_each_others_commits(store: Store, db: Path):
    with Store.open(db) as second:
        second.apply(Batch(upsert_entries=(row("mem_second"),)))
        assert "mem_second" in store.entries_by_id(["mem_second"])
        assert store.generation() == second.generation() == 2


def _checkpoint(db: Path) -> None:
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def test_a_second_store_in_the_process_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    """Reading the file outside SQLite would drop this process's POSIX locks, and another
    process closing its connection would then delete the live WAL under the first store."""
    import subprocess
    import sys

    db = tmp_path / "index.sqlite"
    first = Store.open(db)
    try:
        assert db.with_name("index.sqlite-wal").exists()
        Store.open(db).close()
        other_process = (
            f"import sqlite3; c = sqlite3.connect({str(db)!r}); "
            "c.execute('SELECT count(*) FROM meta').fetchall(); c.close()"
        )
        subprocess.run([sys.executable, "-c", other_process], check=True)
        assert db.with_name("index.sqlite-wal").exists()
    finally:
        first.close()


# --- permissions (issue 11) ----------------------------------------------------------------


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_the_index_and_its_folder_are_private_whatever_the_umask(tmp_path: Path, umask: int):
    db = tmp_path / "root" / ".carryd" / "index.sqlite"
    db.parent.parent.mkdir()  # the root exists; the store makes only its state folder
    previous = os.umask(umask)
    try:
        with Store.open(db) as opened:
            opened.apply(Batch(upsert_entries=(row("mem_a"),)))
            companions = [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm")]
            assert all(path.exists() for path in companions)
            assert {path.name: _mode(path) for path in [db, *companions]} == {
                "index.sqlite": 0o600,
                "index.sqlite-wal": 0o600,
                "index.sqlite-shm": 0o600,
            }
    finally:
        os.umask(previous)
    assert _mode(db.parent) == 0o700


def test_an_existing_install_is_made_private_when_the_index_opens(tmp_path: Path):
    state = tmp_path / ".carryd"
    Store.open(state / "index.sqlite").close()
    (state / "carry").mkdir()
    files = [state / "carry" / "ws.md", state / "carry" / "ws.json", state / "daemon.json"]
    for path in files:
        path.write_text("x")
        path.chmod(0o644)
    (state / "index.sqlite").chmod(0o644)
    (state / "carry").chmod(0o755)
    state.chmod(0o755)
    with Store.open(state / "index.sqlite"):
        pass
    assert _mode(state) == 0o700 and _mode(state / "carry") == 0o700
    assert {path.name: _mode(path) for path in [state / "index.sqlite", *files]} == {
        "index.sqlite": 0o600,
        "ws.md": 0o600,
        "ws.json": 0o600,
        "daemon.json": 0o600,
    }


# --- disk errors are not corruption (issue 11) -----------------------------------------------


def test_an_empty_index_file_is_an_empty_database_not_a_corrupt_one(db: Path):
    """A full disk leaves a 0-byte index behind; each later command used to move it aside
    and add another 0-byte `.corrupt-*` file."""
    db.parent.mkdir(parents=True)
    db.write_bytes(b"")
    for attempt in range(3):
        with Store.open(db) as opened:
            assert opened.recovered is None and opened.created == (attempt == 0)
            assert opened.counts()["entries"] == 0
    assert _aside(db, "corrupt") == []


def test_a_full_database_reports_the_cause_and_keeps_the_index(store: Store, db: Path):
    """SQLITE_FULL (here from a page limit, on a real disk from ENOSPC) names the cause and
    neither hides it behind a failed ROLLBACK nor counts as corruption."""
    before = store.counts()
    pages = store._write.execute("PRAGMA page_count").fetchone()[0]
    store._write.execute(f"PRAGMA max_page_count = {pages + 1}")
    big = tuple(row(f"mem_{n:04d}", l0="x" * 2000) for n in range(200))
    with pytest.raises(IndexUnavailable, match="disk is full") as raised:
        store.apply(Batch(upsert_entries=big))
    assert "rollback" not in str(raised.value)
    assert store.counts() == before
    store._write.execute("PRAGMA max_page_count = 1073741823")
    store.apply(Batch(upsert_entries=(row("mem_new"),)))  # the same store works on
    assert _aside(db, "corrupt") == []


def test_a_database_sqlite_can_open_is_never_moved_aside(store: Store, db: Path):
    store.close()
    _checkpoint(db)
    for _ in range(2):
        assert diagnose(db) is None
        with Store.open(db) as reopened:
            assert reopened.recovered is None and not reopened.created
            assert reopened.counts()["entries"] == 3
    assert list(db.parent.glob("index.sqlite.*")) == []


def test_the_change_log_names_every_id_a_commit_touched_since_a_generation(db: Path) -> None:
    with Store.open(db) as opened:
        assert opened.changes_since(0, None) is None  # no log before the first write
        first = opened.apply(Batch(upsert_entries=(row("mem_a"), row("mem_b")), identity=IDENTITY))
        epoch = opened.change_log_epoch()
        assert epoch and opened.changes_since(0, epoch) == ["mem_a", "mem_b"]
        second = opened.apply(
            Batch(identity=IDENTITY, vectors=(("mem_a", "l-mem_a", vector(1, 0, 0, 0)),))
        )
        assert opened.changes_since(first, epoch) == ["mem_a"]  # a vector alone counts
        opened.apply(Batch(delete_entries=("mem_b",), upsert_entries=(row("mem_c"),)))
        assert opened.changes_since(second, epoch) == ["mem_b", "mem_c"]
        assert opened.raw_rows_by_id(["mem_b", "mem_c"]).keys() == {"mem_c"}
        assert opened.changes_since(opened.generation(), epoch) == []
        assert opened.changes_since(first, "another") is None  # another index's log
    db.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Store.open(db) as rebuilt:
        rebuilt.apply(Batch(upsert_entries=(row("mem_x"),)))
        assert rebuilt.changes_since(0, epoch) is None  # a new file, a new epoch


def test_an_index_made_before_the_change_log_starts_logging_at_its_next_write(db: Path) -> None:
    with Store.open(db) as opened:
        opened.apply(Batch(upsert_entries=(row("mem_a"),)))
    with sqlite3.connect(db) as old:  # what an index of the previous carryd looks like
        for (name,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            old.execute(f"DROP TRIGGER {name}")
        old.execute("DROP TABLE entry_changes")
        old.execute("DELETE FROM meta WHERE key IN ('change_log_from', 'change_log_epoch')")
    with Store.open(db) as reopened:
        before = reopened.generation()
        assert reopened.changes_since(before, reopened.change_log_epoch()) is None
        reopened.apply(Batch(upsert_entries=(row("mem_b"),)))
        epoch = reopened.change_log_epoch()
        assert reopened.changes_since(before - 1, epoch) is None  # older than the log
        assert reopened.changes_since(before, epoch) == ["mem_b"]


def _counted(store: Store) -> dict[str, int]:
    """The counts by `count(*)` scans, bypassing what the store keeps."""
    files, entries, vectors = store._read.execute(  # noqa: SLF001
        "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM entries), "
        "(SELECT count(*) FROM vectors)"
    ).fetchone()
    return {"files": files, "entries": entries, "vectors": vectors}


def test_counts_stay_right_batch_after_batch_without_rescanning(store: Store):
    import random

    rng = random.Random(12)
    store.counts()  # counted once; kept by `apply` from here
    ids = [f"mem_{n}" for n in range(12)]
    paths = [f"ws/{n}.md" for n in range(5)]
    for _ in range(60):
        upserts = rng.sample(ids, rng.randint(0, 4))
        deletes = rng.sample(ids, rng.randint(0, 3))  # may overlap the upserts, may be absent
        batch = Batch(
            upsert_entries=tuple(row(entry_id) for entry_id in upserts),
            delete_entries=tuple(deletes),
            identity=IDENTITY,
            vectors=tuple(
                (entry_id, "l-" + entry_id, vector(1, 0, 0, 0))
                for entry_id in rng.sample(upserts, len(upserts) // 2)
            ),
            drop_vectors=tuple(rng.sample(ids, rng.randint(0, 2))),
            upsert_files=tuple(
                FileRecord(path, 1, 1, "sha", 1) for path in rng.sample(paths, rng.randint(0, 2))
            ),
            delete_files=tuple(rng.sample(paths, rng.randint(0, 2))),
        )
        store.apply(batch)
        assert store._counts is not None  # noqa: SLF001 — kept, not dropped
        assert store.counts() == _counted(store)


def test_counts_are_counted_again_when_another_writer_committed(db: Path, store: Store):
    assert store.counts() == {"files": 1, "entries": 3, "vectors": 1}
    with Store.open(db) as other:
        other.apply(Batch(delete_entries=("mem_b",)))
    # The other store's commit moved the generation: this one's kept counts are not used.
    assert store.counts() == {"files": 1, "entries": 2, "vectors": 1}
    store.apply(Batch(upsert_entries=(row("mem_new"),)))
    assert store.counts() == _counted(store) == {"files": 1, "entries": 3, "vectors": 1}


def test_counts_after_a_model_change_are_counted_again(store: Store):
    store.counts()
    store.apply(
        Batch(
            identity=OTHER,
            vectors=(("mem_b", "l-mem_b", vector(0, 1, 0, 0)),),
            drop_other_identities=True,
        )
    )
    assert store.counts() == _counted(store) == {"files": 1, "entries": 3, "vectors": 1}


def test_a_next_vector_set_is_built_beside_the_serving_one_and_swapped_in_whole(store: Store):
    # A model change: OTHER's vectors go into the next set; IDENTITY's keep serving.
    store.apply(Batch(next_identity=OTHER))
    assert store.next_identity() == OTHER
    store.apply(Batch(identity=OTHER, vectors=(("mem_a", "l-mem_a", vector(0, 1, 0, 0)),)))
    assert store.vectors(IDENTITY)[0] == ["mem_a"]
    assert store.vectors(IDENTITY)[1].tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert store.vectors(OTHER)[1].tolist() == [[0.0, 1.0, 0.0, 0.0]]
    assert store.vector_identities() == {IDENTITY: 1}  # the serving set
    assert store.counts() == _counted(store) == {"files": 1, "entries": 3, "vectors": 1}
    assert [r.id for r in store.missing_vectors(OTHER)] == ["mem_c", "mem_b"]
    assert store.vector_hashes(OTHER, ["mem_a", "mem_b"]) == {"mem_a": "l-mem_a"}
    # A removed entry, and an entry whose L0 changed, lose their vectors in both sets.
    store.apply(
        Batch(
            identity=OTHER,
            vectors=(("mem_b", "l-mem_b", vector(0, 0, 1, 0)),),
            delete_entries=("mem_c",),
        )
    )
    assert store.vector_count(OTHER) == 2
    store.apply(Batch(drop_vectors=("mem_a",)))
    assert store.vector_count(OTHER) == 1 and store.vector_identities() == {}
    store.apply(Batch(identity=OTHER, vectors=(("mem_a", "l-mem_a", vector(0, 1, 0, 0)),)))
    assert store.missing_vectors(OTHER) == []

    store.apply(Batch(swap_next=True))
    assert store.next_identity() == ""
    assert store.meta("vectors_complete") == OTHER
    assert store.vector_identities() == {OTHER: 2}
    assert sorted(store.vectors(OTHER)[0]) == ["mem_a", "mem_b"]
    assert store.counts() == _counted(store) == {"files": 1, "entries": 2, "vectors": 2}
    rows = store._read.execute("SELECT count(*) FROM next_vectors").fetchone()  # noqa: SLF001
    assert rows == (0,)


def test_dropping_or_restarting_the_next_set_leaves_the_serving_one(store: Store):
    store.apply(Batch(next_identity=OTHER))
    store.apply(Batch(identity=OTHER, vectors=(("mem_b", "l-mem_b", vector(0, 1, 0, 0)),)))
    third = '{"dim":4,"name":"third"}'
    store.apply(Batch(next_identity=third))  # another model again: OTHER's vectors go
    assert store.vector_count(third) == 0 and store.next_identity() == third
    store.apply(Batch(identity=third, vectors=(("mem_b", "l-mem_b", vector(0, 0, 1, 0)),)))
    store.apply(Batch(next_identity=""))  # back to the serving model
    assert store.next_identity() == ""
    rows = store._read.execute("SELECT count(*) FROM next_vectors").fetchone()  # noqa: SLF001
    assert rows == (0,)
    assert store.vector_identities() == {IDENTITY: 1}
    assert store.vectors(IDENTITY)[0] == ["mem_a"]
