"""Packing a long, append-only ledger: newest and open first, dead ends never lost, order kept.

The fixture is a realistic hand-off of a data-pipeline bug hunt, written the way a tired
engineer appends to a ledger: headings of the user's own, superseded status lines, ticked and
open steps, successes under the failed section, attempts that name each other.
"""

from __future__ import annotations

import re

import pytest
from carryd.carry.ledger import parse_ledger
from carryd.carry.summary import summary_line
from carryd.carry.truncate import truncate_ledger
from hypothesis import given, settings
from hypothesis import strategies as st

PATH = "ingest/handoff/LEDGER.md"

ATTEMPTS = [
    ("11-02", "raised the Kafka consumer `max.poll.records` from 500 to 2000",
     "lag grew, the batch job timed out at 30 min"),
    ("11-03", "pinned the Spark job to 8 executors",
     "same duplicate count, 0.4% of rows; it is not parallelism"),
    ("11-04", "dedupe on `(order_id, updated_at)` only",
     "two updates in the same millisecond collide and one is lost"),
    ("11-05", "turned off the Debezium snapshot for the staging connector",
     "cannot, the connector refuses to start without a snapshot mode"),
    ("11-06", "read the topic with `isolation.level=read_committed`",
     "no change: the duplicates come from the snapshot/stream overlap, not aborted txns"),
    ("11-07", "window the overlap by LSN in `merge_cdc()`",
     "the snapshot rows carry no LSN, so the window is empty"),
    ("11-09", "backfill one day in staging with the LSN patch",
     "OOM on the driver; the collect() in `load_keys()` pulls 40M keys"),
    ("11-10", "broadcast join for the key set",
     "broadcast limit 8 GB exceeded on month-end partitions"),
    ("11-12", "salting the join key in 16 buckets",
     "works for speed, but duplicates stay at 0.4%: see attempt 3"),
    ("11-14", "use `order_version` from the outbox table as tie-breaker",
     "null for 3% of rows written before the outbox migration"),
    ("11-16", "coalesce `order_version` with the binlog position",
     "binlog positions reset after the MySQL failover on 10-29"),
    ("11-18", "drop rows whose `order_version` is null",
     "also drops the tombstones of deleted orders, deleted orders come back"),
]


def _ledger() -> str:
    status = [
        "- 11-01: 0.9% duplicates in `orders_fact`, cause unknown (superseded)",
        "- ~~11-08: duplicates only on snapshot days~~",
        "- 11-15: duplicates at 0.4%, all in the snapshot/stream overlap (superseded)",
        "- 11-20 (current): prod 11-19 partition has 8,702 dup rows (0.41%); "
        "`merge_cdc()` rewrite is half done, `tests/test_merge.py::test_overlap` red on purpose.",
    ]
    tried = []
    for number, (date, what, why) in enumerate(ATTEMPTS, start=1):
        tried.append(
            f"- attempt {number} ({date}): {what}.\n"
            f"  - Failed: {why}.\n"
            f"  - Evidence: `logs/2026-{date}.md`, run `spark-{number:03d}`; took most of the "
            "afternoon, numbers in the notebook under the same date."
        )
    tried.insert(5, "- ✅ attempt 5b (11-06): reading the raw topic with kcat confirmed the "
                    "overlap rows are byte-identical apart from `__op`. Useful for the tests.")
    nexts = [
        "- [x] reproduce on staging with the 11-02 snapshot",
        "- [x] write `tests/test_merge.py::test_overlap`",
        "- [ ] finish `merge_cdc()`: keep the stream row when a snapshot row has the same key "
        "(attempt 12 shows why nulls must stay)",
        "- [ ] backfill 2026-11-01 .. yesterday with `make backfill FROM=2026-11-01`",
        "- [ ] close DATA-2291 and tell Hana on #finance-data",
    ]
    return (
        "# Handoff ledger — ingest / DATA-2291\n\n"
        "## Where things stand\n" + "\n".join(status) + "\n\n"
        "## Objective\n"
        "- Nightly `orders_fact` must hold exactly one row per (order_id, order_version).\n\n"
        "## What failed\n" + "\n".join(tried) + "\n\n"
        "## Todo\n" + "\n".join(nexts) + "\n\n"
        "## Decisions\n"
        "- 11-17: no more snapshot-mode changes on the prod connector (agreed with Hana).\n"
    )


LEDGER = _ledger()


def cut_at(budget: int) -> str:
    cut = truncate_ledger(parse_ledger(LEDGER), budget, path=PATH)
    assert cut.chars == len(cut.text) <= budget
    return cut.text


def test_the_users_headings_are_recognised_and_the_unknown_one_is_carried() -> None:
    ledger = parse_ledger(LEDGER)
    assert [s.kind for s in ledger.sections] == ["status", "goal", "tried", "next", "other"]
    assert ledger.unrecognised == ("Decisions",)


@pytest.mark.parametrize("budget", [2_400, 2_800, 3_200])
def test_every_failed_attempt_keeps_at_least_a_dead_end_line(budget: int) -> None:
    assert len(LEDGER) > 4_000
    text = cut_at(budget)
    for number, (date, _, why) in enumerate(ATTEMPTS, start=1):
        assert f"attempt {number} ({date})" in text, (number, text)
        reason = why.split("but ")[-1]  # a reason may start at its turn ("but …")
        assert reason[:12] in text  # with the start of its reason


def test_a_dead_end_line_says_what_was_tried_and_why_it_failed() -> None:
    text = cut_at(2_800)
    lines = [line for line in text.split("\n") if re.search(r"\(L\d+(-\d+)?\)$", line)]
    assert lines, text
    for line in lines:
        found = re.search(r"attempt (\d+) \(", line)
        if found is None:
            continue  # the ✅ 5b: a success, summarised
        _, what, why = ATTEMPTS[int(found.group(1)) - 1]
        assert what[:16] in line  # what was tried …
        reason = line.split(" → ", 1)[1]
        assert reason[:12] in why  # … and why it failed


def test_the_newest_status_and_open_steps_survive_and_superseded_lines_go_first() -> None:
    text = cut_at(2_800)
    assert "11-20 (current): prod 11-19 partition has 8,702 dup rows (0.41%)" in text
    assert "- [ ] finish `merge_cdc()`" in text
    assert "- [ ] backfill 2026-11-01 .. yesterday" in text
    # Over budget, done and superseded lines get no share of their own: at 2,600 chars every
    # one of them yields while the failed attempts keep their lines …
    tight = cut_at(2_600)
    assert "11-01: 0.9% duplicates" not in tight and "snapshot days" not in tight
    assert "11-15: duplicates at 0.4%" not in tight
    assert all(f"attempt {n} (" in tight for n in range(1, len(ATTEMPTS) + 1))
    # … and one comes back only from room no item of more use could take.
    cut = truncate_ledger(parse_ledger(LEDGER), 2_800, path=PATH)
    status, tried = cut.sections[0], cut.sections[2]
    assert status.shows[3] == "full"  # the current line
    assert "omitted" not in tried.shows


@pytest.mark.parametrize(
    ("items", "kept"),
    [
        (["- [x] old done step", "- [ ] open step", "- [x] newer done step"], ["open step"]),
        (["- status a (superseded)", "- status b", "- status c (superseded)"], ["status b"]),
        (["- ~~struck figure 55 min~~", "- figure 41 min"], ["41 min"]),
        (["- 已完成：旧任务", "- 已废弃：旧方案", "- 当前：新任务"], ["当前：新任务"]),
        (["- 2026-11-20: newest", "- 2026-11-02: older"], ["newest"]),
        (["- first", "- second", "- third"], ["third"]),
    ],
)
def test_state_and_recency_decide_what_a_cut_section_keeps(
    items: list[str], kept: list[str]
) -> None:
    padded = [f"{item} — " + "detail " * 12 for item in items]  # longer than a summary
    ledger = parse_ledger("## Todo\n" + "\n".join(padded) + "\n## Goal\n- g\n")
    cut = truncate_ledger(ledger, len("## Todo\n") + max(map(len, padded)) + 30, path="p")
    section_text = cut.text.split("\n\n## Goal")[0]
    shown = [line for line in section_text.split("\n") if line.startswith("- ")]
    assert len(shown) == 1, cut.text
    for fragment in kept:
        assert fragment in section_text


def test_newer_attempts_are_kept_in_full_before_older_ones() -> None:
    text = cut_at(4_000)
    full = [n for n, (d, w, y) in enumerate(ATTEMPTS, 1) if f"{w}.\n  - Failed: {y}." in text]
    cut = [n for n in range(1, len(ATTEMPTS) + 1) if n not in full]
    assert full and cut, text  # the budget shows some attempts whole and cuts others
    # The newest attempts are whole, a run down to the newest one cut; an older one is whole
    # only when it fits the room the newer ones could not use.
    newest = list(range(max(cut) + 1, len(ATTEMPTS) + 1))
    assert len(newest) >= len(ATTEMPTS) // 2 and set(newest) <= set(full)


def test_output_keeps_document_order() -> None:
    text = cut_at(2_800)
    positions = [text.index(f"attempt {n} (") for n in range(1, 13) if f"attempt {n} (" in text]
    assert positions == sorted(positions)
    headings = [text.index(h) for h in ("## Where", "## Objective", "## What", "## Todo")]
    assert headings == sorted(headings)


def test_an_item_another_one_refers_to_is_never_silently_dropped() -> None:
    text = cut_at(2_800)
    assert "attempt 12 shows why nulls must stay" in text
    assert "attempt 12 (11-18)" in text  # at least its one-line summary
    assert "attempt 3 (11-04)" in text  # referenced by attempt 9 ("see attempt 3")


def test_the_pointer_names_the_lines_left_out_and_the_ids_that_hold_them() -> None:
    entries = ((3, 8, "mem_" + "1" * 32), (12, 50, "mem_" + "2" * 32))
    cut = truncate_ledger(parse_ledger(LEDGER), 2_800, path=PATH, entries=entries)
    pointers = [line for line in cut.text.split("\n") if " more → " in line]
    assert pointers
    for pointer in pointers:
        assert re.fullmatch(rf"\+\d+ more → {re.escape(PATH)}:[\d,-]+( · `carryd expand [^`]+`)?",
                            pointer)
    assert "`carryd expand mem_" + "2" * 32 + "`" in cut.text


def test_an_explicit_date_wins_over_the_position() -> None:
    ledger = parse_ledger(
        "## Status\n- 2026-11-20: current figure 41 min\n- 2026-11-02: old figure 55 min\n"
        "## Goal\n- g\n"
    )
    cut = truncate_ledger(ledger, 76, path="p")
    assert "41 min" in cut.text and "55 min" not in cut.text


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=6_000))
def test_any_budget_is_kept_and_a_success_never_displaces_a_failure(budget: int) -> None:
    cut = truncate_ledger(parse_ledger(LEDGER), budget, path=PATH)
    assert cut.chars == len(cut.text) <= budget
    tried = next(s for s in cut.sections if s.kind == "tried")
    success = 5  # the ✅ attempt 5b: shown only when no failure needed its room
    if tried.shows and tried.shows[success] != "omitted":
        failure_items = parse_ledger(LEDGER).sections[2].items
        for index, show in enumerate(tried.shows):
            if index != success and show == "omitted":
                brief = summary_line(failure_items[index].text, dead_end=True, brief=True)
                assert len(brief) > len(failure_items[success].text) // 2
