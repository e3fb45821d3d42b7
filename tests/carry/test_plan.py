"""carry.plan: PLAN.md current state vs history, the carry cut, and the pure archive step."""

from __future__ import annotations

import pytest
from carryd.carry.plan import (
    archive_plan,
    heading_mode,
    missing_lines,
    plan_current_for_carry,
    split_plan,
)
from hypothesis import given, settings
from hypothesis import strategies as st

PLAN = """\
# PLAN — carryd

## 当前状态
- v2.2.6-pre：P6 进行中
- 阻塞：无

```
## 历史 (inside a fence: not a heading)
```

## 下一步
1. 写 truncate 测试
2. plan archive

## 踩坑记录
### 2.2.5
- WAL 未 checkpoint 就复制数据库
### 2.2.5 当前状态（旧）
- 这是旧的状态，嵌在历史里
## 2.2.4
- old notes

# 附录
tail line
"""


@pytest.mark.parametrize(
    ("heading", "mode"),
    [
        ("当前状态", "current"),
        ("1. 当前状态：", "current"),
        ("📍 Current state", "current"),
        ("Now", "current"),
        ("Status", "current"),
        ("历史", "history"),
        ("历史踩坑（2.2.5 及以前）", "history"),
        ("踩坑记录", "history"),
        ("版本历史", "history"),
        ("History", "history"),
        ("Changelog", "history"),
        ("Version history", "history"),
        ("Release notes", "history"),
        ("下一步", None),
        ("Nowhere", None),
        ("Notes", None),
        ("2.2.5", None),
    ],
)
def test_heading_modes(heading: str, mode: str | None) -> None:
    assert heading_mode(heading) == mode


def test_split_plan() -> None:
    parts = split_plan(PLAN)
    # 踩坑记录 starts history; its sibling "## 2.2.4" stays history; the nested
    # "### 2.2.5 当前状态" is history too; "# 附录" (shallower) ends the history.
    assert parts.history_blocks == ((15, 21),)
    assert parts.history.startswith("## 踩坑记录\n### 2.2.5") and parts.history.endswith(
        "- old notes"
    )
    assert "旧的状态" not in parts.current and "WAL" not in parts.current
    assert "## 历史 (inside a fence" in parts.current
    assert parts.current.startswith("# PLAN — carryd\n\n## 当前状态\n")
    assert parts.current.endswith("2. plan archive\n\n# 附录\ntail line")
    assert parts.current_lines == (1, 24)


def test_plan_without_markers_is_all_current() -> None:
    text = "# Plan\n\nship the daemon\n\n## Next\n- tests\n"
    parts = split_plan(text)
    assert parts.history == "" and parts.history_blocks == ()
    assert parts.current == text.strip()


def test_empty_plan() -> None:
    parts = split_plan("")
    assert parts.current == "" and parts.current_lines is None and parts.history_blocks == ()
    assert plan_current_for_carry(parts, 3000, path="ws/PLAN.md") == ""


def test_carry_cut_on_block_and_line_boundaries() -> None:
    parts = split_plan(PLAN)
    assert plan_current_for_carry(parts, 3000, path="ws/PLAN.md") == parts.current
    cut = plan_current_for_carry(parts, 100, path="ws/PLAN.md")
    assert cut == (
        "# PLAN — carryd\n\n## 当前状态\n- v2.2.6-pre：P6 进行中\n- 阻塞：无\n"
        "+8 more lines → ws/PLAN.md:7-13,23-24"  # the pointer skips the history lines
    )
    # A fence is never cut in the middle; a prefix never ends on a bare heading.
    for budget in range(0, len(parts.current)):
        text = plan_current_for_carry(parts, budget, path="ws/PLAN.md")
        assert len(text) <= budget
        body = text.rsplit("\n+", 1)[0] if "\n+" in text else ""
        assert body.count("```") % 2 == 0
        assert not body.split("\n")[-1].startswith("#")


def test_long_paragraph_is_cut_between_lines() -> None:
    text = "## 当前状态\n" + "\n".join(f"line {n} of a long paragraph" for n in range(1, 40)) + "\n"
    parts = split_plan(text)
    cut = plan_current_for_carry(parts, 200, path="w/PLAN.md")
    assert cut.startswith("## 当前状态\nline 1 of a long paragraph\n")
    kept = cut.split("\n")[1:-1]
    assert len(kept) == 5 and cut.endswith(f"+{39 - len(kept)} more lines → w/PLAN.md:7-40")


plan_lines = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "# PLAN",
                "## 当前状态",
                "## 历史",
                "### 2.2.5",
                "## Now",
                "## Changelog",
                "# 附录",
                "- item",
                "1. step",
                "```",
                "",
                "    code",
                "> quote",
                "para text",
            ]
        ),
        st.text(max_size=40),
    ),
    max_size=50,
).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(plan_lines, st.integers(min_value=-5, max_value=600))
def test_carry_never_exceeds_budget(text: str, budget: int) -> None:
    parts = split_plan(text)
    cut = plan_current_for_carry(parts, budget, path="ws/PLAN.md")
    assert len(cut) <= max(budget, 0)
    if len(parts.current) <= max(budget, 0):
        assert cut == parts.current
    assert plan_current_for_carry(parts, budget, path="ws/PLAN.md") == cut


def test_archive_plan_moves_history_and_is_idempotent() -> None:
    moved = archive_plan(PLAN, header="## Archived from PLAN.md on 2026-09-10")
    assert moved.moved_blocks == ((15, 21),)
    assert moved.moved_lines == 7
    assert moved.appended.startswith("## Archived from PLAN.md on 2026-09-10\n\n## 踩坑记录\n")
    assert moved.new_plan.endswith("2. plan archive\n\n# 附录\ntail line\n")
    assert "踩坑" not in moved.new_plan
    assert missing_lines(PLAN, [moved.new_plan, moved.appended]) == []
    again = archive_plan(moved.new_plan, header="## x")
    assert again.moved_blocks == () and again.new_plan == moved.new_plan and again.appended == ""


def test_missing_lines_is_a_multiset_check() -> None:
    assert missing_lines("a\na\n\nb\n", ["a\nb", "a"]) == []
    assert missing_lines("a\na\nb\n", ["a\nb"]) == ["a"]
    assert missing_lines("x  \n", ["x"]) == []  # trailing whitespace is not content


@settings(max_examples=200, deadline=None)
@given(st.one_of(plan_lines, st.text(max_size=300)))
def test_archive_plan_is_lossless_for_any_text(text: str) -> None:
    moved = archive_plan(text, header="## Archived")
    assert missing_lines(text, [moved.new_plan, moved.appended]) == []
    assert archive_plan(moved.new_plan, header="## Archived").moved_blocks == ()


DATED_PLAN = """\
# Plan

## Goal
Move every route to edge-b.

## 経緯
- 2026-11-01: started the inventory.
- 2026-11-03: tried one NLB with two target groups, failed.
- 2026-11-05: second NLB works.

## Log
### 2026-11-06
- weights 10%
### 2026-11-07
- weights 25%
### 2026-11-08
- weights 50%

## Open questions
- Who signs the CR?
"""


def test_a_section_of_dated_entries_is_history_whatever_its_heading() -> None:
    """Issue 20 item 1: `## 経緯` of dated items and `## Log` of dated headings are the plan's
    history; the section after them is current again."""
    parts = split_plan(DATED_PLAN)
    assert parts.history_blocks == ((6, 17),)
    assert "Who signs the CR?" in parts.current and "weights 25%" not in parts.current
    moved = archive_plan(DATED_PLAN, header="## Archived from PLAN.md on 2026-12-02")
    assert "2026-11-03: tried one NLB" in moved.appended and "### 2026-11-07" in moved.appended
    assert "## Open questions" in moved.new_plan and "経緯" not in moved.new_plan
    assert not missing_lines(DATED_PLAN, [moved.new_plan, moved.appended])


def test_a_section_with_a_few_dates_is_not_history() -> None:
    plan = "# Plan\n\n## Risks\n- 2026-12-14 freeze starts\n- cost of two NLBs\n- DNS TTL 60\n"
    assert split_plan(plan).history_blocks == ()
