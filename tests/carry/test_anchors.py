"""carry.anchors: one row per entry, document order, deterministic escaped Markdown."""

from __future__ import annotations

import hashlib

from carryd.carry.anchors import AnchorRow, anchor_rows, render_anchor_table, table_cell
from carryd.index.entries import Entry
from hypothesis import given, settings
from hypothesis import strategies as st


def entry(entry_id: str, path: str, lines: tuple[int, int], l0: str) -> Entry:
    text = f"## {l0}\nbody"
    return Entry(
        id=entry_id,
        path=path,
        workspace=path.split("/")[0],
        line_start=lines[0],
        line_end=lines[1],
        heading_path=(l0,),
        text=text,
        l0=l0,
        l0_source="heading",
        text_hash=hashlib.sha256(text.encode()).hexdigest(),
        l0_hash=hashlib.sha256(l0.encode()).hexdigest(),
    )


PLAN_ENTRIES = [
    entry("mem_" + "a" * 32, "proj/PLAN.md", (3, 9), "当前状态：v2.2.6-pre，P6 进行中"),
    entry("mem_" + "b" * 32, "proj/PLAN.md", (11, 11), "下一步 | plan archive"),
]
LEDGER_ENTRIES = [
    entry("mem_" + "c" * 32, "proj/handoff/LEDGER.md", (8, 12), "已试方案与失败原因\n方案 A 失败"),
]


def test_rows_keep_the_callers_order_and_skip_repeated_ids() -> None:
    rows = anchor_rows([*PLAN_ENTRIES, *LEDGER_ENTRIES, PLAN_ENTRIES[0]])
    assert [row.id[:5] for row in rows] == ["mem_a", "mem_b", "mem_c"]
    assert rows[0] == AnchorRow("mem_" + "a" * 32, PLAN_ENTRIES[0].l0, "proj/PLAN.md", 3, 9)
    assert rows[1].location == "proj/PLAN.md:11"


def test_render_anchor_table() -> None:
    table = render_anchor_table(anchor_rows([*PLAN_ENTRIES, *LEDGER_ENTRIES]))
    assert table == (
        "| id | L0 | lines |\n"
        "|---|---|---|\n"
        f"| mem_{'a' * 32} | 当前状态：v2.2.6-pre，P6 进行中 | proj/PLAN.md:3-9 |\n"
        f"| mem_{'b' * 32} | 下一步 \\| plan archive | proj/PLAN.md:11 |\n"
        f"| mem_{'c' * 32} | 已试方案与失败原因 方案 A 失败 | proj/handoff/LEDGER.md:8-12 |"
    )
    assert render_anchor_table([]) == ""


def test_table_cell_escapes() -> None:
    assert table_cell("a|b\\|c\n  d\r\ne\t") == "a\\|b\\\\\\|c d e"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=8))
def test_every_row_is_one_table_line_with_three_cells(l0s: list[str]) -> None:
    rows = [AnchorRow(f"mem_{n:032x}", l0, "w/a.md", 1, 2) for n, l0 in enumerate(l0s)]
    table = render_anchor_table(rows)
    lines = table.split("\n") if table else []
    assert len(lines) == (len(rows) + 2 if rows else 0)
    for line in lines[2:]:
        unescaped_pipes = len(line) - len(line.replace("|", "")) - line.count("\\|")
        assert unescaped_pipes == 4
    assert render_anchor_table(rows) == table
