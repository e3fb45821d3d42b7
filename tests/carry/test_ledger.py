"""carry.ledger: four sections, aliases, duplicate titles, items and their explicit kinds."""

from __future__ import annotations

import dataclasses

import pytest
from carryd.carry.ledger import (
    Ledger,
    SectionNames,
    item_kind,
    markdown_blocks,
    parse_ledger,
    section_kind_of,
    source_lines,
)
from carryd.daemon.config import LedgerSections
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("heading", "kind"),
    [
        ("任务状态", "status"),
        ("1. 任务状态", "status"),
        ("一、任务状态", "status"),
        ("📌 任务状态：", "status"),
        ("**任务状态**", "status"),
        ("任务状态（2026-09-09 更新）", "status"),
        ("TASK STATUS", "status"),
        ("Task status:", "status"),
        ("Status", "status"),
        ("目标", "goal"),
        ("2) 目标", "goal"),
        ("目标 / Goal", "goal"),
        ("🎯 Goal", "goal"),
        ("3. 已试方案与失败原因", "tried"),
        ("Tried approaches and failure reasons", "tried"),
        ("tried approaches", "tried"),
        ("（四）进度与下一步", "next"),
        ("Progress and next steps:", "next"),
        ("Next steps", "next"),
        ("第4步 进度与下一步", "next"),
        ("附录", None),
        ("目标用户", None),
        ("Goalkeeper", None),
        ("", None),
    ],
)
def test_section_headings(heading: str, kind: str | None) -> None:
    assert section_kind_of(heading) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("- ✅ 方案 C：按权重分配 —— 成功", "success"),
        ("- ✔️ cache the model", "success"),
        ("- [x] P5 merged", "success"),
        ("- 方案 E —— 已解决。", "success"),
        ("- Fixed: keep whole list items", "success"),
        ("- Resolved by taking the last title", "success"),
        ("- 方案 M —— works.", "success"),
        ("- ❌ 方案 A —— 失败。", "failure"),
        ("- ✘ retry loop", "failure"),
        ("- **Failed**: the socket was stale", "failure"),
        ("- 方案 B 不成功：预算被浪费", "failure"),
        ("- 问题未解决，需要换思路", "failure"),
        ("- the patch doesn't work on macOS", "failure"),
        ("- not fixed yet", "failure"),
        ("- 执行失败了", "failure"),
        ("- [ ] 修复失败的测试", "todo"),
        ("- TODO: write tests", "todo"),
        ("- 待办：补 README", "todo"),
        ("- 已完成：redact 覆盖 manifest", "done"),
        ("- DONE wire the socket", "done"),
        ("- 元指令：接续后先读账本", "meta"),
        ("- Meta: keep commits small", "meta"),
        # No explicit marker: plain, whatever words merely contain a marker.
        ("- 把位置截断换成：失败原因 .35 > 下一步 .30", "plain"),
        ("- Success criterion: the tried/failed section survives", "plain"),
        ("- use a fixed-size buffer", "plain"),
        ("- 提高成功率", "plain"),
        ("- 方案 C：按权重分配", "plain"),
        ("- networks and frameworks", "plain"),
        ("", "plain"),
    ],
)
def test_item_kinds_come_from_explicit_markers(text: str, kind: str) -> None:
    assert item_kind(text) == kind


def test_earliest_marker_wins() -> None:
    assert item_kind("- ❌ 方案 B 失败；后来方案 C 成功") == "failure"
    assert item_kind("- ✅ 修好了（之前 ❌ 失败过两次）") == "success"


LEDGER = """\
# 交接账本 2026-09-08 22:10

## 任务状态
- 旧状态：昨天的

## 已试方案与失败原因
- ❌ stale attempt

# 交接账本 2026-09-09 14:32

## 1. 任务状态 📌
- 进行中：P6
- 阻塞：无

## 目标：
把位置截断换成按段权重截断。
Keep the carry byte-stable.

## 已试方案与失败原因
- ✅ 方案 C：按权重分配 —— 成功，P6 采用。
  - 细节：余量按权重从高到低传递。
- ❌ 方案 A：位置截断 —— 失败。
  续行：已试方案整段被截掉。
- 方案 D：正则切条目

  ```
  # not a heading
  - not an item
  ```
### 子标题：方案 E
- [ ] 复测

## 附录
- ignored because 附录 is not a section

## Progress and next steps
- [x] P5 锚点表
- TODO: P6 property tests
<!-- mem_0123456789abcdef0123456789abcdef -->
"""


def test_parse_realistic_ledger() -> None:
    ledger = parse_ledger(LEDGER)
    assert ledger.title == "交接账本 2026-09-09 14:32"
    assert ledger.title_line == 9
    assert ledger.duplicate_titles == 1
    kinds = [section.kind for section in ledger.sections]
    assert kinds == ["status", "goal", "tried", "other", "next"]
    status, goal, tried, appendix, next_steps = ledger.sections
    assert status.heading == "## 1. 任务状态 📌"
    assert (status.line_start, status.line_end) == (11, 13)
    assert [item.text for item in status.items] == ["- 进行中：P6", "- 阻塞：无"]
    assert [(item.text, item.block) for item in goal.items] == [
        ("把位置截断换成按段权重截断。\nKeep the carry byte-stable.", "paragraph")
    ]
    assert [(item.kind, item.line_start, item.line_end) for item in tried.items] == [
        ("success", 20, 21),  # a success under the tried/failed section stays a success
        ("failure", 22, 23),
        ("plain", 24, 29),  # the fenced "# not a heading" is part of the item
        ("plain", 30, 30),  # a deeper heading is an item of its own
        ("todo", 31, 31),
    ]
    assert tried.items[4].block == "list" and tried.items[3].block == "heading"
    assert [item.kind for item in next_steps.items] == ["success", "todo"]
    assert next_steps.line_end == 38  # the trailing HTML comment is not an item
    # A section the table does not know is carried under its own heading, and named.
    assert appendix.heading == "## 附录" and ledger.unrecognised == ("附录",)
    assert [item.text for item in appendix.items] == ["- ignored because 附录 is not a section"]
    assert any("附录" in warning for warning in ledger.warnings)
    assert any("2 ledger titles" in warning for warning in ledger.warnings)


def test_item_text_is_exactly_the_file_lines() -> None:
    ledger = parse_ledger(LEDGER)
    lines = LEDGER.split("\n")
    for section in ledger.sections:
        assert section.heading == "\n".join(lines[section.line_start - 1 : section.line_start])
        for item in section.items:
            assert item.text == "\n".join(lines[item.line_start - 1 : item.line_end])


def test_last_title_with_nothing_after_it_gives_an_empty_ledger() -> None:
    ledger = parse_ledger("# 交接账本 1\n## 目标\n- x\n# 交接账本 2\n")
    assert ledger.sections == () and ledger.duplicate_titles == 1 and ledger.title_line == 4


def test_no_title_and_level_one_sections() -> None:
    ledger = parse_ledger("# Goal\nship it\n# Next steps\n- [ ] tests\n")
    assert ledger.title is None and ledger.duplicate_titles == 0
    assert [section.kind for section in ledger.sections] == ["goal", "next"]


def test_repeated_section_is_merged_with_a_warning() -> None:
    ledger = parse_ledger("## 目标\n- a\n## 任务状态\n- s\n## 目标\n- b\n")
    goal = ledger.section("goal")
    assert goal is not None and [item.text for item in goal.items] == ["- a", "- b"]
    assert [section.kind for section in ledger.sections] == ["goal", "status"]
    assert any("appears again" in warning for warning in ledger.warnings)


def test_configured_names() -> None:
    names = SectionNames(
        status=("现状",), goal=("要做什么",), tried=("踩过的坑",), next=("接下来",)
    )
    ledger = parse_ledger(
        "## 现状\n- a\n## 要做什么\n- b\n## 踩过的坑\n- c\n## 接下来\n- d\n", names=names
    )
    assert [section.kind for section in ledger.sections] == ["status", "goal", "tried", "next"]
    # The configured names replace the defaults (the built-in synonyms stay).
    replaced = parse_ledger("## 任务状态\n- a\n## 状态\n- b\n", names=names)
    assert [section.kind for section in replaced.sections] == ["other", "status"]


def test_default_names_equal_the_settings_defaults() -> None:
    assert dataclasses.asdict(SectionNames()) == dataclasses.asdict(LedgerSections())
    assert SectionNames(**dataclasses.asdict(LedgerSections())) == SectionNames()


def test_crlf_and_setext_headings() -> None:
    ledger = parse_ledger("Goal\r\n====\r\n- ship\r\n\r\nTried\r\n-----\r\n- ❌ x — failed.\r\n")
    assert [section.kind for section in ledger.sections] == ["goal", "tried"]
    assert ledger.sections[0].heading == "Goal\n===="
    assert ledger.sections[1].items[0].kind == "failure"


def test_markdown_blocks_cover_every_non_blank_line() -> None:
    text = "# T\n[ref]: http://example.com\n\n- a\n  b\n\n  - c\n\npara\n```\nx\n\ny\n```\n"
    blocks = markdown_blocks(text)
    covered = {line for block in blocks for line in range(block.line_start, block.line_end + 1)}
    lines = source_lines(text)
    assert {number for number, line in enumerate(lines, 1) if line.strip()} <= covered
    assert [(block.kind, block.line_start, block.line_end) for block in blocks] == [
        ("heading", 1, 1),
        ("other", 2, 2),
        ("list", 4, 7),
        ("paragraph", 9, 9),
        ("fence", 10, 14),
    ]


markdownish = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "# 交接账本",
                "## 任务状态",
                "## 目标",
                "### 已试方案与失败原因",
                "## Progress and next steps",
                "## 附录",
                "- ✅ ok",
                "- ❌ 失败",
                "  - nested",
                "1. first",
                "```",
                "",
                "    code",
                "> quote",
                "---",
                "<!-- c -->",
                "Setext",
                "===",
            ]
        ),
        st.text(max_size=30),
    ),
    max_size=40,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(markdownish, st.text(max_size=300)))
def test_parse_ledger_never_raises_and_lines_are_consistent(text: str) -> None:
    ledger = parse_ledger(text)
    assert isinstance(ledger, Ledger)
    line_count = len(source_lines(text))
    kinds = [section.kind for section in ledger.sections if section.kind != "other"]
    assert len(kinds) == len(set(kinds))
    assert ledger.recognised == tuple(kinds)
    for section in ledger.sections:
        assert 1 <= section.line_start <= section.line_end <= line_count
        for item in section.items:
            first = section.line_start if section.heading else section.line_start - 1
            assert first < item.line_start <= item.line_end <= section.line_end
            assert item.kind in ("success", "failure", "todo", "done", "meta", "plain")
    assert parse_ledger(text) == ledger  # deterministic


@pytest.mark.parametrize(
    ("heading", "kind"),
    [
        # The user's own names, Chinese and English: the table's synonyms.
        ("状态", "status"),
        ("当前状态", "status"),
        ("进展", "status"),
        ("现状", "status"),
        ("Current status", "status"),
        ("State", "status"),
        ("Progress", "status"),
        ("Where we are", "status"),
        ("Status 状态", "status"),
        ("目标", "goal"),
        ("任务", "goal"),
        ("Objective", "goal"),
        ("Mission", "goal"),
        ("失败尝试", "tried"),
        ("踩坑", "tried"),
        ("踩坑记录（别再试了）", "tried"),
        ("死路", "tried"),
        ("已尝试", "tried"),
        ("Dead ends", "tried"),
        ("Dead-ends", "tried"),
        ("Tried", "tried"),
        ("What failed", "tried"),
        ("Attempts", "tried"),
        ("Tried & failed", "tried"),
        ("Tried, didn't work", "tried"),
        ("Tried (and why it failed)", "tried"),
        ("下一步", "next"),
        ("下一步要做的", "next"),
        ("待办", "next"),
        ("后续", "next"),
        ("Next", "next"),
        ("Next steps", "next"),
        ("Next up", "next"),
        ("TODO", "next"),
        ("Todo", "next"),
        ("TODO / 下一步", "next"),
        # Not sections: carried as the ledger's own.
        ("Decisions", None),
        ("决策", None),
        ("Context / links", None),
        ("Timeline (UTC)", None),
        ("目标用户", None),
        ("Statusbar colours", None),
    ],
)
def test_synonyms_in_both_languages(heading: str, kind: str | None) -> None:
    assert section_kind_of(heading) == kind


def test_a_level_one_heading_that_is_not_a_title_is_a_section_of_its_own() -> None:
    ledger = parse_ledger("# Handoff 2026-11-29\n## Goal\n- g\n# Notes\n- n\n## Next\n- x\n")
    assert ledger.title == "Handoff 2026-11-29" and ledger.duplicate_titles == 0
    assert [(s.kind, s.heading) for s in ledger.sections] == [
        ("goal", "## Goal"),
        ("other", "# Notes"),
        ("next", "## Next"),
    ]
    assert ledger.unrecognised == ("Notes",)


def test_text_before_the_first_section_is_carried_without_a_heading() -> None:
    ledger = parse_ledger("# Handoff\n> append only, newest last\n\n## Goal\n- g\n## Next\n- x\n")
    first = ledger.sections[0]
    assert (first.kind, first.heading) == ("other", "")
    assert [item.text for item in first.items] == ["> append only, newest last"]
    assert ledger.unrecognised == ()  # nothing to name
