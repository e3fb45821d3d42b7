"""The pure sync planning: file plans by stat and hash, entry diffs by hash, id ownership."""

from __future__ import annotations

import hashlib

import pytest
from carryd.index.entries import Entry
from carryd.index.sync import (
    RACY_NS,
    DuplicateId,
    EntryDiff,
    FileRecord,
    FileStat,
    IndexPlan,
    accept_entries,
    diff_entries,
    plan,
    row_for,
    stat_trusted,
)
from hypothesis import given, settings
from hypothesis import strategies as st

OLD = 10 * RACY_NS  # an mtime long before the record was made


def record(path: str, size: int = 10, mtime_ns: int = OLD, synced_ns: int = 20 * RACY_NS):
    return FileRecord(path, size, mtime_ns, "sha-" + path, synced_ns)


def entry(
    entry_id: str,
    *,
    path: str = "ws/a.md",
    text: str = "body",
    l0: str = "abstract",
    line_start: int = 1,
    heading: tuple[str, ...] = ("Heading",),
) -> Entry:
    return Entry(
        id=entry_id,
        path=path,
        workspace=path.split("/")[0] if "/" in path else None,
        line_start=line_start,
        line_end=line_start + 1,
        heading_path=heading,
        text=text,
        l0=l0,
        l0_source="heading",
        text_hash=hashlib.sha256(text.encode()).hexdigest(),
        l0_hash=hashlib.sha256(l0.encode()).hexdigest(),
    )


@pytest.mark.parametrize(
    ("on_disk", "indexed", "expected"),
    [
        ({}, {}, IndexPlan()),
        ({"a.md": FileStat(10, OLD)}, {}, IndexPlan(new=("a.md",))),
        ({}, {"a.md": record("a.md")}, IndexPlan(deleted=("a.md",))),
        ({"a.md": FileStat(10, OLD)}, {"a.md": record("a.md")}, IndexPlan(unchanged=("a.md",))),
        ({"a.md": FileStat(11, OLD)}, {"a.md": record("a.md")}, IndexPlan(modified=("a.md",))),
        ({"a.md": FileStat(10, OLD + 1)}, {"a.md": record("a.md")}, IndexPlan(modified=("a.md",))),
        # recorded within the racy window of its mtime: the stat cannot be trusted yet
        (
            {"a.md": FileStat(10, OLD)},
            {"a.md": record("a.md", synced_ns=OLD + RACY_NS - 1)},
            IndexPlan(modified=("a.md",)),
        ),
        (
            {"b.md": FileStat(1, OLD), "a.md": FileStat(10, OLD), "c.md": FileStat(3, OLD)},
            {"a.md": record("a.md"), "d.md": record("d.md"), "c.md": record("c.md", size=4)},
            IndexPlan(new=("b.md",), modified=("c.md",), deleted=("d.md",), unchanged=("a.md",)),
        ),
    ],
)
def test_plan_sorts_files_into_new_modified_deleted_unchanged(on_disk, indexed, expected):
    assert plan(on_disk, indexed) == expected


def test_a_file_recorded_long_after_its_mtime_is_trusted_by_stat():
    assert stat_trusted(record("a.md", synced_ns=OLD + RACY_NS), FileStat(10, OLD))
    assert not stat_trusted(record("a.md", synced_ns=OLD + RACY_NS - 1), FileStat(10, OLD))


paths = st.sampled_from([f"{folder}f{n}.md" for folder in ("", "ws/", "b/c/") for n in range(5)])


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(paths, st.tuples(st.integers(0, 3), st.integers(0, 3))),
    st.dictionaries(paths, st.tuples(st.integers(0, 3), st.integers(0, 3))),
)
def test_plan_partitions_every_path_exactly_once(disk, index):
    on_disk = {path: FileStat(size, OLD + tick) for path, (size, tick) in disk.items()}
    indexed = {path: record(path, size, OLD + tick) for path, (size, tick) in index.items()}
    result = plan(on_disk, indexed)
    groups = [result.new, result.modified, result.deleted, result.unchanged]
    together = [path for group in groups for path in group]
    assert sorted(together) == sorted(set(on_disk) | set(indexed))
    assert set(result.new) == set(on_disk) - set(indexed)
    assert set(result.deleted) == set(indexed) - set(on_disk)
    assert all(list(group) == sorted(group) for group in groups)
    assert result.to_read == tuple(sorted(result.new + result.modified))


def test_diff_of_identical_entries_is_all_unchanged_and_embeds_nothing():
    entries = (entry("mem_a"), entry("mem_b", line_start=5))
    rows = [row_for(item, 3) for item in entries]
    hashes = {item.id: item.l0_hash for item in entries}
    assert diff_entries(rows, entries, hashes) == EntryDiff(unchanged=("mem_a", "mem_b"))


def test_a_body_edit_is_a_change_that_needs_new_postings_but_no_embedding():
    before = entry("mem_a", text="old body")
    after = entry("mem_a", text="new body")
    diff = diff_entries([row_for(before, 2)], (after,), {"mem_a": before.l0_hash})
    assert diff.changed == (after,)
    assert diff.retokenize == (after,)
    assert diff.to_embed == ()
    assert diff.touched_workspaces == frozenset({"ws"})


def test_an_l0_edit_embeds_exactly_that_entry():
    same = entry("mem_a")
    before, after = entry("mem_b", l0="old"), entry("mem_b", l0="new")
    hashes = {"mem_a": same.l0_hash, "mem_b": before.l0_hash}
    diff = diff_entries([row_for(same, 1), row_for(before, 1)], (same, after), hashes)
    assert diff.to_embed == (after,)
    assert diff.changed == (after,)
    assert diff.retokenize == ()  # same text hash: postings stay


def test_a_moved_entry_changes_its_row_only():
    before = entry("mem_a", line_start=1)
    after = entry("mem_a", line_start=9)
    diff = diff_entries([row_for(before, 1)], (after,), {"mem_a": before.l0_hash})
    assert (diff.changed, diff.retokenize, diff.to_embed) == ((after,), (), ())


def test_new_and_removed_entries_and_their_workspaces():
    kept, gone = entry("mem_a"), entry("mem_gone", path="other/x.md")
    fresh = entry("mem_new", path="root.md")
    hashes = {"mem_a": kept.l0_hash, "mem_gone": gone.l0_hash}
    diff = diff_entries([row_for(kept, 1), row_for(gone, 1)], (kept, fresh), hashes)
    assert diff.new == (fresh,)
    assert diff.removed == ("mem_gone",)
    assert diff.retokenize == (fresh,)
    assert diff.to_embed == (fresh,)
    assert diff.touched_workspaces == frozenset({None, "other"})


def test_an_entry_without_a_vector_of_the_current_identity_is_embedded():
    item = entry("mem_a")
    diff = diff_entries([row_for(item, 1)], (item,), {})
    assert diff.unchanged == ("mem_a",)
    assert diff.to_embed == (item,)


def test_explicit_ids_stay_with_their_first_owner():
    parsed = {
        "b.md": (entry("mem_x", path="b.md"), entry("mem_y", path="b.md")),
        "a.md": (entry("mem_y", path="a.md"),),
    }
    accepted, duplicates = accept_entries(parsed, {"mem_x": "z.md"})
    assert [(item.id, item.path) for item in accepted] == [("mem_y", "a.md")]
    assert duplicates == (
        DuplicateId("mem_x", "b.md", "z.md"),
        DuplicateId("mem_y", "b.md", "a.md"),
    )


def test_a_new_tokenizer_retokenizes_every_entry_and_embeds_none():
    same, moved = entry("mem_a"), entry("mem_b", line_start=9)
    rows = [row_for(same, 1), row_for(entry("mem_b"), 1)]
    hashes = {"mem_a": same.l0_hash, "mem_b": moved.l0_hash}
    diff = diff_entries(rows, (same, moved), hashes, retokenize_all=True)
    assert diff.retokenize == (same, moved)
    assert (diff.unchanged, diff.changed, diff.to_embed) == (("mem_a",), (moved,), ())
