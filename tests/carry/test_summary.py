"""carry.summary: one-line summaries that end on a clause and say what failed and why."""

from __future__ import annotations

import pytest
from carryd.carry.summary import HARD_LIMIT_FACTOR, clause_prefix, summary_line
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("text", "dead_end", "summary"),
    [
        (
            "- ❌ 方案 A：直接 `ledger.slice(0, 8000)` 位置截断 —— 失败。\n"
            "  - 原因：账本前半段是任务状态和目标，长账本时「已试方案」整段被截掉，"
            "下一个上下文重复了三次同一个死路。\n"
            "  - 证据：`logs/2026-09-07.md` 第 3 次接续复述不出 sqlite WAL 的坑。",
            True,  # short enough to stay whole, on one line
            "- ❌ 方案 A：直接 `ledger.slice(0, 8000)` 位置截断 —— 失败。 原因：账本前半段是任务状态"
            "和目标，长账本时「已试方案」整段被截掉，下一个上下文重复了三次同一个死路。 证据："
            "`logs/2026-09-07.md` 第 3 次接续复述不出 sqlite WAL 的坑。",
        ),
        (
            "- attempt 9 (11-26): set nginx `upstream-keepalive-timeout: \"4\"` globally in the "
            "ingress ConfigMap. Fixed checkout but two other services (search-api, cart) got "
            "slower p99 because they lost keepalive. Reverted after 40 min.",
            True,
            "- attempt 9 (11-26): set nginx `upstream-keepalive-timeout: \"4\"` globally in the "
            "ingress ConfigMap. → Fixed checkout but two other services (search-api, cart) got "
            "slower p99 because they lost keepalive.",
        ),
        (
            "- [ ] 2026-11-30: backfill 2026-11-01 .. yesterday once the fix is merged, then "
            "close DATA-2291 and tell Hana on #finance-data, who owns the revenue dashboard.",
            False,
            "- [ ] 2026-11-30: backfill 2026-11-01 .. yesterday once the fix is merged,",
        ),
        ("- short item", True, "- short item"),
    ],
)
def test_summaries(text: str, dead_end: bool, summary: str) -> None:
    assert summary_line(text, dead_end=dead_end) == summary


def test_a_summary_keeps_the_items_date() -> None:
    text = "- 09-09 下午：开始 P6，先写真实账本 fixture（中英混合，~40 条，已试方案段最长），" + "细节" * 80
    assert summary_line(text, dead_end=False).startswith("- 09-09 下午：开始 P6")
    dated = "- [2026-11-02] " + "a long clause without any break " * 8
    assert "2026-11-02" in summary_line(dated, dead_end=False)


words = st.lists(
    st.sampled_from(["retry", "the", "`code span`", "失败", "原因", ",", ";", ".", "，", "。", "x" * 30]),
    max_size=60,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(words, st.integers(min_value=10, max_value=150))
def test_a_clause_prefix_is_a_prefix_within_the_hard_limit(text: str, limit: int) -> None:
    cut = clause_prefix(text, limit)
    if len(text) <= limit:
        assert cut == text
        return
    assert len(cut) <= int(limit * HARD_LIMIT_FACTOR)
    if cut.endswith("…"):
        assert text.startswith(cut[:-1].rstrip(" ，,;；:：—–-"))
        assert len(cut) <= limit
    else:
        assert text.startswith(cut)
    assert cut.count("`") % 2 == 0  # never inside a code span
