"""carry.recency: explicit dates, states, labels and the priority order inside a section."""

from __future__ import annotations

import pytest
from carryd.carry.ledger import LedgerItem, item_kind
from carryd.carry.recency import (
    explicit_date,
    item_facts,
    item_state,
    label_of,
    priority_order,
    references_in,
    with_references,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def item(text: str, line: int = 1, weight: float | None = None) -> LedgerItem:
    return LedgerItem(text, item_kind(text), line, line, weight)


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("- 2026-11-20: prod still dirty", (2026, 11, 20)),
        ("- [x] 2026/09/09 merged", (2026, 9, 9)),
        ("- 11-29 (current): 8,702 dup rows", (2025, 11, 29)),
        ("- attempt 27 (11-29): deletes", (2025, 11, 29)),  # bracketed, after a label
        ("- 9月9日 上午：P5 完成", (2025, 9, 9)),
        ("- Sep 9 — switched to uv", (2025, 9, 9)),
        ("- **2026-10-02**: split the cart", (2026, 10, 2)),
        ("- pinned the image to the 2024-01-15 snapshot of the base layer", None),  # data
        ("- lines 12-14 of the parser", None),
        ("- no date here", None),
    ],
)
def test_explicit_dates(text: str, date: tuple[int, int, int] | None) -> None:
    found = explicit_date(text, year=2025)
    assert (found[0] if found else None) == date


@pytest.mark.parametrize(
    ("text", "section", "state"),
    [
        ("- [ ] write the migration", "next", "open"),
        ("- [x] write the migration", "next", "done"),
        ("- ✅ webhook verification merged", "status", "done"),
        ("- ✅ 方案 C：按权重分配 —— 成功", "tried", "open"),  # a success under tried is knowledge
        ("- 11-21: r09 still spikes (superseded)", "status", "superseded"),
        ("- ~~11-24: FP8 off fixes it~~ wrong, see attempt 5", "status", "superseded"),
        ("- 已废弃：旧方案", "status", "superseded"),
        ("- 已完成：redact 覆盖 manifest", "next", "done"),
        ("- DONE wire the socket", "next", "done"),
        ("- current: 14/17 contract tests pass", "status", "open"),
        ("- ❌ retried the webhook: failed", "tried", "open"),
    ],
)
def test_states(text: str, section: str, state: str) -> None:
    assert item_state(item(text), section) == state  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("- ❌ 方案 A：位置截断 —— 失败", "方案:A"),
        ("- 方案B 不成功", "方案:B"),
        ("- attempt 12 (11-19): window over …", "attempt:12"),
        ("- Approach 3: broadcast join", "approach:3"),
        ("- [D2] no gevent for checkout", "tag:D2"),
        ("- T-44 (11-30) 试过导出原始回调", "tag:T44"),
        ("- #17 retry with backoff", "tag:17"),
        ("- tried the LB first", None),
    ],
)
def test_labels(text: str, label: str | None) -> None:
    assert label_of(text) == label


def test_references_name_only_labels_that_exist() -> None:
    labels = frozenset({"attempt:12", "方案:B", "tag:D2"})
    text = "see attempt 12 and 方案 B; D2 stands; attempt 13 is unknown; AD2X is not D2"
    assert references_in(text, labels) == {"attempt:12", "方案:B", "tag:D2"}
    items = [item("- attempt 12: drop null rows"), item("- attempt 13: see attempt 12", 2)]
    facts = with_references([(items, item_facts(items, "tried"))])[0]
    assert facts[0].references == frozenset() and facts[1].references == {"attempt:12"}


def test_priority_is_state_then_recency_with_explicit_dates_winning() -> None:
    items = [
        item("- 2026-11-20: current figure", 1),
        item("- 2026-11-02: older figure, written later", 2),
        item("- undated, after both: at least as new as 11-20", 3),
        item("- [x] settled step", 4),
        item("- figure 55 min (superseded)", 5),
    ]
    facts = item_facts(items, "status")
    assert priority_order(items, facts) == [2, 0, 1, 3, 4]


def test_the_sidecar_weight_decides_first() -> None:
    items = [item("- a", 1, 0.9), item("- [x] b", 2, 0.1), item("- c", 3, 0.5)]
    assert priority_order(items, item_facts(items, "next")) == [0, 2, 1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "- [ ] open step", "- [x] done step", "- old line (superseded)", "- 2026-11-0{d}: dated",
    "- plain line", "- ~~struck~~", "- 已完成：x", "- 11-2{d} 当前：y",
]), max_size=12).map(lambda texts: [t.replace("{d}", str(n % 9 + 1)) for n, t in enumerate(texts)]))
def test_priority_is_a_permutation_and_open_precedes_settled(texts: list[str]) -> None:
    items = [item(text, number) for number, text in enumerate(texts, start=1)]
    facts = item_facts(items, "next")
    order = priority_order(items, facts)
    assert sorted(order) == list(range(len(items)))
    ranks = [{"open": 0, "done": 1, "superseded": 2}[facts[index].state] for index in order]
    assert ranks == sorted(ranks)
