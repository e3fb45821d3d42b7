"""carry.sidecar: parse fail-soft, apply kinds and weights by refs or text."""

from __future__ import annotations

import json

import pytest
from carryd.carry.ledger import parse_ledger
from carryd.carry.sidecar import Sidecar, SidecarItem, apply_sidecar, parse_sidecar, ref_lines
from hypothesis import given, settings
from hypothesis import strategies as st

GOOD = [
    {
        "id": "s1",
        "type": "solution",
        "w": 0.9,
        "text": "方案 C：按权重分配",
        "refs": ["L6"],
        "st": "",
    },
    {"id": "s2", "type": "failure", "w": 0.7, "text": "方案 D 正则切条目", "refs": [], "st": ""},
    {"id": "s3", "type": "todo", "w": 0.4, "text": "write the README section", "st": "done"},
    {"id": "s4", "type": "meta", "w": 0.1, "text": "keep commits small"},
]


def test_parse_valid_list_and_object() -> None:
    sidecar, warning = parse_sidecar(json.dumps(GOOD))
    assert warning is None and sidecar is not None
    assert sidecar.items[0] == SidecarItem("s1", "solution", 0.9, "方案 C：按权重分配", ("L6",), "")
    assert sidecar.items[3].refs == () and sidecar.items[3].st == ""
    assert parse_sidecar(json.dumps({"items": GOOD}).encode("utf-8-sig")) == (sidecar, None)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, "no sidecar file"),
        ("", "empty file"),
        (b"\xff\xfe\x00", "not UTF-8"),
        ("{not json", "not valid JSON"),
        ("[" * 100_000, "not valid JSON"),
        ('{"version": 1}', "needs an 'items' list"),
        ('"items"', "'items' must be a list"),
        ("[]", "no items"),
        ('[{"id": "a", "type": "opinion", "w": 1, "text": "x"}]', "items[0].type"),
        ('[{"id": "a", "type": "todo", "w": "high", "text": "x"}]', "items[0].w"),
        ('[{"id": "a", "type": "todo", "w": NaN, "text": "x"}]', "items[0].w"),
        ('[{"id": "a", "type": "todo", "w": -1, "text": "x"}]', "items[0].w"),
        ('[{"id": "", "type": "todo", "w": 1, "text": "x"}]', "items[0].id"),
        ('[{"id": "a", "type": "todo", "w": 1, "text": 3}]', "items[0].text"),
        ('[{"id": "a", "type": "todo", "w": 1, "text": "x", "refs": "L3"}]', "items[0].refs"),
        ('[{"id": "a", "type": "todo", "w": 1, "text": "x", "st": 1}]', "items[0].st"),
        ("[1]", "items[0]: expected an object"),
    ],
)
def test_invalid_or_missing_is_none_with_a_warning(raw: str | bytes | None, problem: str) -> None:
    sidecar, warning = parse_sidecar(raw)
    assert sidecar is None
    assert warning is not None and problem in warning


def test_bad_items_are_skipped_and_named() -> None:
    raw = json.dumps([*GOOD, {"id": "s1", "type": "todo", "w": 1, "text": "dup"}, {"id": "x"}])
    sidecar, warning = parse_sidecar(raw)
    assert sidecar is not None and len(sidecar.items) == 4
    assert warning is not None and "skipped 2" in warning and "duplicate id 's1'" in warning


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=200), st.binary(max_size=200)))
def test_parse_sidecar_never_raises(raw: str | bytes | None) -> None:
    sidecar, warning = parse_sidecar(raw)
    assert sidecar is not None or warning is not None


@pytest.mark.parametrize(
    ("ref", "lines"),
    [
        ("12", (12, 12)),
        ("L12", (12, 12)),
        ("12-14", (12, 14)),
        ("L12-L14", (12, 14)),
        ("handoff/LEDGER.md:14-12", (12, 14)),
        ("mem_0123456789abcdef0123456789abcdef", None),
        ("2026-09-09", None),
        ("", None),
    ],
)
def test_ref_lines(ref: str, lines: tuple[int, int] | None) -> None:
    assert ref_lines(ref) == lines


LEDGER = """\
# 交接账本
## 已试方案与失败原因
- 方案 A：位置截断
- 方案 B：等分预算
- ❌ 方案 C：按权重分配
  - 细节
- 方案 D 正则切条目 —— 代码块里的行被当成条目
## 进度与下一步
- [ ] Write the README section.
- Meta-ish: keep commits small
- 没有匹配的条目
"""


def test_apply_sidecar_by_refs_then_text() -> None:
    sidecar, _ = parse_sidecar(json.dumps(GOOD))
    assert sidecar is not None
    ledger = apply_sidecar(parse_ledger(LEDGER), sidecar)
    tried, next_steps = ledger.sections
    # s1 by ref L6 (inside the item at lines 5-6) overrides the ❌ marker: the sidecar is explicit.
    assert [(item.kind, item.weight) for item in tried.items] == [
        ("plain", None),
        ("plain", None),
        ("success", 0.9),
        ("failure", 0.7),  # s2 by contained text
    ]
    assert [(item.kind, item.weight) for item in next_steps.items] == [
        ("done", 0.4),  # todo with st "done"; matched by normalised text (checkbox, case, dot)
        ("meta", 0.1),  # contained text
        ("plain", None),
    ]


def test_apply_empty_sidecar_changes_nothing() -> None:
    ledger = parse_ledger(LEDGER)
    assert apply_sidecar(ledger, Sidecar(())) == ledger
