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
            "- ❌ 方案 A：直接 `ledger.slice(0, 8000)` 位置截断 —— 失败。 原因："
            "账本前半段是任务状态"
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
    text = (
        "- 09-09 下午：开始 P6，先写真实账本 fixture（中英混合，~40 条，已试方案段最长），"
        + "细节" * 80
    )
    assert summary_line(text, dead_end=False).startswith("- 09-09 下午：开始 P6")
    dated = "- [2026-11-02] " + "a long clause without any break " * 8
    assert "2026-11-02" in summary_line(dated, dead_end=False)


words = st.lists(
    st.sampled_from(
        ["retry", "the", "`code span`", "失败", "原因", ",", ";", ".", "，", "。", "x" * 30]
    ),
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


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        # The verdict is the last sentence, after a reason sentence too long to show whole.
        (
            "- attempt 7 (10-02): pinned every worker to one NUMA node with numactl. Looked "
            "fine for an hour, then the p99 went back to 900 ms while the box was half idle, "
            "which nobody could explain from the flame graphs. The tail comes from the GC, "
            "not from memory placement.",
            "The tail comes from the GC, not from memory placement.",
        ),
        (
            "- 方案 C（11-02）：把批量大小从 64 调到 16。训练稳定了三个小时"
            "之后在第 41870 步附近又出现了尖峰，而且梯度范数和学习率曲线"
            "都看不出任何异常的前兆所以一开始以为是数据问题，又花了两天"
            "逐个检查数据分片、重新打乱顺序、换掉可疑的语料来源，尖峰的"
            "位置和幅度都没有变化，连换一台机器、换一个随机种子重跑也是"
            "同样的曲线，日志里只有几行无关的警告。结论：批量大小和尖峰无关。",
            "结论：批量大小和尖峰无关。",
        ),
    ],
)
def test_a_dead_end_line_keeps_the_attempts_conclusion(item: str, kept: str) -> None:
    """Issue 10 item 2: "tried X → why it failed", where the why is often the LAST sentence;
    a reason sentence too long to show whole is cut, and its conclusion follows it."""
    line = summary_line(item, dead_end=True)
    assert line.endswith(f" … {kept}") and " → " in line
    assert len(line) < len(item)


def test_a_reason_shown_whole_gets_no_conclusion_appended() -> None:
    item = (
        "- attempt 4 (11-05): turned off the snapshot.\n"
        "  - Failed: the connector refuses to start without a snapshot mode.\n"
        "  - Evidence: `logs/2026-11-05.md`; took most of the afternoon, numbers in the notebook."
    )
    line = summary_line(item, dead_end=True)
    assert "→ the connector refuses to start without a snapshot mode." in line
    assert " … " not in line and "took most" not in line


def test_when_the_attempt_is_cut_mid_clause_its_reason_is_the_next_clause() -> None:
    # The attempt's own clause is too long for its half and is cut at a word; the reason is the
    # clause right after it in the same sentence, not whatever follows the sentence's end.
    item = (
        "- attempt 13: tried Snowflake time travel `AT(TIMESTAMP => '2026-10-31 23:59:00'"
        "::timestamp_tz)` on `CRM.CUSTOMER_MERGE_MAP`: retention is 1 day on that table. "
        '"Time travel data is not available". Dead.'
    )
    line = summary_line(item, dead_end=True)
    assert line.startswith("- attempt 13: tried Snowflake time travel… → retention is 1 day")
    brief = summary_line(item, dead_end=True, brief=True)
    assert "retention is 1 day on that table" in brief
    # A clause that runs to the end of the line leaves nothing to split off.
    long = "- attempt 2: " + "tried the same thing again with another flag " * 6
    assert " → " not in summary_line(long, dead_end=True)
