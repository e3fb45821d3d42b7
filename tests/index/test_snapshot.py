"""The warm snapshot refreshed from a change log equals one built from scratch.

`apply_changes` is fed exactly what the store's change log gives the shell: every id a
commit touched, with its row now (None: deleted) and its vector now. After any sequence of
edits, adds, deletes and renames the patched snapshot must hold the same rows, row order,
lengths, workspaces, statistics and vectors as a full build, and give the same answers.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from carryd.index.lexical import TermPostings, query_terms
from carryd.index.recall import QueryTerms, RecallOptions, recall
from carryd.index.snapshot import (
    Snapshot,
    StoredVectors,
    apply_changes,
    build_snapshot,
    scope_of,
    stats_of,
    with_resident,
)
from carryd.index.snapshot_postings import COUNT, ROW
from carryd.index.store import entry_row
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.calibrations import MINILM

DIM = 4
WORDS = ("cache", "parser", "socket", "ledger", "redis", "deploy", "money", "缓存", "部署")
WORKSPACES = (None, "shop", "ops")

Raw = tuple[Any, ...]


def raw(entry_id: str, path: str, workspace: str | None, words: tuple[str, ...]) -> Raw:
    """An entries row exactly as the store returns it (`ENTRY_COLUMNS` order)."""
    l0 = " ".join(words)
    return (
        entry_id,
        path,
        workspace,
        1,
        3,
        json.dumps([l0], ensure_ascii=False),
        l0,
        "heading",
        "t-" + l0,
        "h-" + l0,
        None,
        len(words),
    )


def postings_of(rows: dict[str, Raw], only: set[str] | None = None) -> dict[str, dict[str, int]]:
    """term -> {id: tf} over the rows' text (here the L0), as the store's postings hold them."""
    postings: dict[str, dict[str, int]] = {}
    for entry_id, values in sorted(rows.items()):
        if only is None or entry_id in only:
            for term, tf in Counter(query_terms(values[6])).items():
                postings.setdefault(term, {})[entry_id] = tf
    return postings


def full(generation: int, rows: dict[str, Raw], vectors: dict[str, np.ndarray]) -> Snapshot:
    """A full load, keeping every term's postings resident (the daemon keeps the common ones)."""
    ids = sorted(vectors)
    built = build_snapshot(
        generation,
        rows,
        stats_of(len(rows), sum(values[11] for values in rows.values())),
        decode=entry_row,
        calibration=MINILM,
        vectors=StoredVectors(
            dim=DIM,
            ids=ids,
            matrix=np.stack([vectors[i] for i in ids]) if ids else None,
        ),
        epoch="e",
    )
    read = postings_of(rows)
    return with_resident(built, ((t, list(p), list(p.values())) for t, p in sorted(read.items())))


def view(snapshot: Snapshot) -> dict[str, Any]:
    """What a query can observe of a snapshot (workspace codes by name, vectors by id)."""
    name_of = {code: name for name, code in snapshot.workspace_code_of.items()}
    live = {}
    if snapshot.matrix is not None:
        for position, entry_id in enumerate(snapshot.vector_ids):
            if snapshot.vector_live[position]:
                assert entry_id not in live, "one live vector row per id"
                assert snapshot.entry_ids[snapshot.vector_rows[position]] == entry_id
                readable = snapshot.vector_readable
                live[entry_id] = (
                    snapshot.matrix[position].tolist(),
                    None if readable is None else bool(readable[position]),
                )
    return {
        "rows": dict(snapshot.rows),
        "entry_ids": snapshot.entry_ids,
        "row_of": dict(snapshot.row_of),
        "doc_lengths": snapshot.doc_lengths.tolist(),
        "workspaces": [name_of[int(code)] for code in snapshot.workspace_codes],
        "stats": snapshot.stats,
        "vectors": live,
        "vector_of": {i: snapshot.vector_ids[p] for i, p in snapshot.vector_of.items()},
    }


def answers(snapshot: Snapshot, rows: dict[str, Raw]) -> list[object]:
    """Every workspace's answer to a few queries, both arms."""
    postings = postings_of(rows)
    options = RecallOptions(
        limit=10,
        min_confidence=0.0,
        candidates_per_arm=50,
        lexical_divisor=4.0,
        semantic_divisor=4.0,
        rrf_k=60,
        parent_propagation=False,
        calibration=MINILM,
    )
    out: list[object] = []
    for text, vector in (("cache deploy", (1, 0, 0, 0)), ("缓存 money", (0, 1, 1, 0))):
        wanted = query_terms(text)
        terms = QueryTerms(
            text=text,
            terms=wanted,
            postings={t: TermPostings.of(postings.get(t, {}), snapshot.row_of) for t in wanted},
        )
        query = np.asarray(vector, dtype=np.float32) / np.linalg.norm(vector)
        for workspace in WORKSPACES:
            answer = recall(snapshot, terms, query, scope_of(snapshot, workspace), options)
            out.append([(hit.id, hit.path, round(hit.score, 12)) for hit in answer.hits])
    return out


ids = st.sampled_from([f"mem_{n:02d}" for n in range(12)])
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(tuple)
vectors = st.tuples(*[st.integers(-3, 3)] * DIM).filter(any)
operation = st.one_of(
    # edit: an entry's text (and so its row) changes, its vector changes or stays
    st.tuples(st.just("edit"), ids, words, vectors | st.none()),
    # add (or re-add) an entry, with a vector or without one (a degraded sync)
    st.tuples(st.just("add"), ids, words, vectors | st.none(), st.sampled_from(WORKSPACES)),
    st.tuples(st.just("delete"), ids),
    # a file renamed: its entries' derived ids change (delete + add), or an anchored id
    # keeps its id and only its path moves
    st.tuples(st.just("rename"), ids, ids),
    st.tuples(st.just("move"), ids, st.sampled_from(WORKSPACES)),
)


def unit(values: tuple[int, ...]) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def path_for(workspace: str | None, entry_id: str) -> str:
    return f"{workspace}/{entry_id}.md" if workspace else f"notes/{entry_id}.md"


@settings(max_examples=150, deadline=None)
@given(
    start=st.dictionaries(ids, st.tuples(words, vectors, st.sampled_from(WORKSPACES))),
    steps=st.lists(st.lists(operation, min_size=1, max_size=4), min_size=1, max_size=8),
)
def test_refreshing_from_the_change_log_equals_a_full_build(
    start: dict[str, tuple[tuple[str, ...], tuple[int, ...], str | None]],
    steps: list[list[tuple[Any, ...]]],
) -> None:
    rows = {i: raw(i, path_for(ws, i), ws, w) for i, (w, _, ws) in start.items()}
    stored = {i: unit(v) for i, (_, v, _) in start.items()}
    snapshot = full(1, rows, stored)
    for generation, commit in enumerate(steps, start=2):
        logged: set[str] = set()  # what the store's triggers would stamp
        for op in commit:
            kind, entry_id = op[0], op[1]
            if kind == "edit" and entry_id in rows:
                values = rows[entry_id]
                rows[entry_id] = raw(entry_id, values[1], values[2], op[2])
                if op[3] is not None:
                    stored[entry_id] = unit(op[3])
                logged.add(entry_id)
            elif kind == "add":
                rows[entry_id] = raw(entry_id, path_for(op[4], entry_id), op[4], op[2])
                if op[3] is not None:
                    stored[entry_id] = unit(op[3])
                else:
                    stored.pop(entry_id, None)
                logged.add(entry_id)
            elif kind == "delete" and entry_id in rows:
                del rows[entry_id]
                stored.pop(entry_id, None)
                logged.add(entry_id)
            elif kind == "rename" and entry_id in rows and op[2] not in rows:
                values = rows.pop(entry_id)
                rows[op[2]] = raw(op[2], "moved/" + values[1], values[2], tuple(values[6].split()))
                if entry_id in stored:
                    stored[op[2]] = stored.pop(entry_id)
                logged |= {entry_id, op[2]}
            elif kind == "move" and entry_id in rows:
                values = rows[entry_id]
                rows[entry_id] = raw(
                    entry_id, path_for(op[2], entry_id), op[2], tuple(values[6].split())
                )
                logged.add(entry_id)
        changed = {i: rows.get(i) for i in sorted(logged)}
        patched = apply_changes(
            snapshot,
            generation,
            changed,
            decode=entry_row,
            calibration=MINILM,
            vectors={i: stored[i].tobytes() for i in logged if i in stored and i in rows},
            dim=DIM,
            postings=postings_of(rows, logged),
        )
        fresh = full(generation, rows, stored)
        if patched is None:
            # Only when there are entries and not one vector: the full load says so.
            assert fresh.vector_problem is not None
            snapshot = fresh
            continue
        assert view(patched) == view(fresh)
        # The resident postings (the terms of the last full load) are what a read gives now.
        read = postings_of(rows)
        assert set(patched.resident) <= set(fresh.resident) | set(snapshot.resident)
        for term, kept in patched.resident.items():
            rebuilt = TermPostings.of(read.get(term, {}), fresh.row_of)
            assert kept.rows.tolist() == rebuilt.rows.tolist(), term
            assert kept.frequencies.tolist() == rebuilt.frequencies.tolist(), term
            assert (kept.rows.dtype, kept.frequencies.dtype) == (ROW, COUNT)  # 12 bytes each
        assert answers(patched, rows) == answers(fresh, rows)
        snapshot = patched


def test_an_edit_keeps_older_snapshots_intact_and_fills_spare_rows() -> None:
    rows = {f"mem_{n}": raw(f"mem_{n}", "a.md", "shop", ("cache",)) for n in range(8)}
    stored = {i: unit((n + 1, 1, 0, 0)) for n, i in enumerate(sorted(rows))}
    first = full(1, rows, stored)
    before = first.matrix.copy() if first.matrix is not None else None
    rows["mem_1"] = raw("mem_1", "a.md", "shop", ("deploy",))
    second = apply_changes(
        first,
        2,
        {"mem_1": rows["mem_1"]},
        decode=entry_row,
        calibration=MINILM,
        vectors={"mem_1": unit((0, 0, 0, 1)).tobytes()},
        dim=DIM,
    )
    assert second is not None and first.matrix is not None and before is not None
    assert (first.matrix == before).all()  # what a query holding the old one sees
    assert second.buffer is first.buffer  # no copy of the vectors for one edit
    assert second.vector_live.tolist() == [True, False] + [True] * 7
    assert second.row_of is first.row_of  # the same ids: the row order is shared
    # The ids of the vector rows grow in place like the buffer: the older snapshot still
    # sees its own eight, the new one nine, the last mem_1's new vector.
    assert list(first.vector_ids) == sorted(rows) and len(second.vector_ids) == 9
    assert second.vector_ids[-1] == second.vector_ids[8] == "mem_1"
    assert list(second.vector_ids)[:8] == list(first.vector_ids)
    with pytest.raises(IndexError):
        first.vector_ids[8]  # noqa: B018


def test_appending_ids_past_an_older_snapshot_copies_instead_of_overwriting() -> None:
    from carryd.index.snapshot_rows import GrownIds

    base = GrownIds(["a", "b"])
    one = base.appended(["c"])
    other = base.appended(["x"])  # a second refresh from the same snapshot
    assert list(base) == ["a", "b"] and base[-1] == "b"
    assert list(one) == ["a", "b", "c"] and list(other) == ["a", "b", "x"]
    assert one[1:] == ["b", "c"] and len(other) == 3


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sets(st.integers(0, 150), max_size=40),
            st.dictionaries(st.integers(0, 150), st.integers(), max_size=40),
        ),
        max_size=12,
    )
)
def test_the_layered_mapping_behaves_as_a_dict_through_refreshes_and_flattening(
    steps: list[tuple[set[int], dict[int, int]]],
) -> None:
    """The snapshot's rows and vector positions are copied by what changed, not whole
    (`_Layered`); through any chain of changes, flattened or not, they read as a dict."""
    from carryd.index.snapshot import _Layered

    expected = {f"k{n}": n for n in range(100)}
    layered = _Layered.of(dict(expected))
    older = []
    for removed, fresh in steps:
        gone = [f"k{n}" for n in removed if n not in fresh]
        new = {f"k{n}": value for n, value in fresh.items()}
        older.append((layered, dict(expected)))
        layered = _Layered.of(layered).changed(gone, new)
        for key in gone:
            expected.pop(key, None)
        expected.update(new)
        assert dict(layered) == expected and len(layered) == len(expected)
        assert all((key in layered) == (key in expected) for key in ("k0", "k7", "k150"))
    for snapshot, seen in older:
        assert dict(snapshot) == seen  # an older snapshot never sees a later change


@settings(max_examples=60, deadline=None)
@given(
    start=st.dictionaries(ids, st.tuples(words, vectors, st.sampled_from(WORKSPACES)), min_size=1),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
)
def test_resident_postings_score_to_the_last_bit_as_read_ones(
    start: dict[str, tuple[tuple[str, ...], tuple[int, ...], str | None]], query: str
) -> None:
    """The resident postings' 32-bit frequencies give the very hits, scores and confidences of
    the 64-bit floats a recaller reads from the store."""
    from carryd.index.lexical import search_rows

    rows = {i: raw(i, path_for(ws, i), ws, w) for i, (w, _, ws) in start.items()}
    snapshot = full(1, rows, {i: unit(v) for i, (_, v, _) in start.items()})
    read = postings_of(rows)
    wanted = query_terms(query)
    by_store = {t: TermPostings.of(read[t], snapshot.row_of) for t in wanted if t in read}
    resident = {t: snapshot.resident[t] for t in wanted if t in snapshot.resident}
    assert set(by_store) == set(resident)
    for workspace in WORKSPACES:
        mask = scope_of(snapshot, workspace).lexical_mask
        common = (wanted, snapshot.entry_ids, snapshot.doc_lengths, snapshot.stats)
        assert search_rows(common[0], resident, *common[1:], allowed=mask) == search_rows(
            common[0], by_store, *common[1:], allowed=mask
        )
