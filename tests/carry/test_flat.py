"""Flat injection, the carry of last resort: fixed cuts, redacted first, byte-stable."""

from __future__ import annotations

import dataclasses

import pytest
from carryd.carry.flat import (
    FLAT_NOTE,
    FlatInputs,
    build_flat_carry,
    safe_prefix,
    trailer,
)
from carryd.daemon.config import DEFAULT_DISCIPLINE
from carryd.index.errors import PromptBudgetError
from hypothesis import given, settings
from hypothesis import strategies as st

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2Tg1JYbGq3nB0x7m8K9ZqLr4T5uVwXyZ0a1B2c3D4e5F6g\n"
    "-----END RSA PRIVATE KEY-----"
)


def inputs(plan: str | None = "plan", ledger: str | None = "ledger") -> FlatInputs:
    return FlatInputs(
        workspace="ws",
        discipline=DEFAULT_DISCIPLINE,
        plan_text=plan,
        ledger_text=ledger,
        plan_path="ws/PLAN.md",
        ledger_path="ws/handoff/LEDGER.md",
    )


def test_flat_carry_layout() -> None:
    plan = build_flat_carry(inputs("## Now\nship it\n", "## Goal\nfix refunds\n"))
    assert plan.text.startswith(DEFAULT_DISCIPLINE + "\n\n" + FLAT_NOTE + "\n\n")
    assert "# Plan (`ws/PLAN.md`, first 3000 chars)\n## Now\nship it" in plan.text
    assert "# Handoff ledger (`ws/handoff/LEDGER.md`, first 8000 chars)\n## Goal" in plan.text
    assert plan.text.index("# Plan (") < plan.text.index("# Handoff ledger (")
    closing = trailer(
        "ws", ledger_path="ws/handoff/LEDGER.md", plan_path="ws/PLAN.md", expand=False
    )
    assert plan.text.endswith(closing + "\n")
    assert "carryd expand" not in plan.text  # the flat carry names no id to expand
    assert "carryd expand <id>" in trailer("ws", ledger_path="l", plan_path="p")


def test_flat_cuts_are_the_ancestors() -> None:
    plan = build_flat_carry(inputs("p" * 5_000, "l" * 20_000))
    assert "p" * 3_000 in plan.text and "p" * 3_001 not in plan.text
    assert "l" * 8_000 in plan.text and "l" * 8_001 not in plan.text
    assert plan.used_chars == len(plan.text) <= 18_000


def test_flat_respects_a_smaller_total_with_required_first() -> None:
    plan = build_flat_carry(inputs("p" * 5_000, "l" * 20_000), total_chars=2_000)
    assert len(plan.text) <= 2_000
    assert plan.text.startswith(DEFAULT_DISCIPLINE)
    with pytest.raises(PromptBudgetError):
        build_flat_carry(inputs(), total_chars=100)


def test_missing_files_give_a_short_carry() -> None:
    plan = build_flat_carry(inputs(None, None))
    decisions = {d.name: d.reason for d in plan.decisions}
    assert decisions["plan"] == "empty" and decisions["ledger"] == "empty"
    assert len(plan.text) < 1_500


def test_secrets_are_redacted_before_the_cut() -> None:
    # The PEM block straddles the plan's 3,000-char cut: redacting after cutting would leave
    # a headless half of the key; redacting first removes all of it.
    plan_text = "x" * 2_950 + "\n" + PEM + "\nafter"
    ledger_text = f"aws {AWS}\ngithub {GITHUB}\n"
    text = build_flat_carry(inputs(plan_text, ledger_text)).text
    for secret in (AWS, GITHUB, "MIIEowIBAAKCAQEA", "BEGIN RSA PRIVATE KEY"):
        assert secret not in text
    assert "[redacted:" in text


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abcdef", 3, "abc"),
        ("abc", 10, "abc"),
        ("ab", 0, ""),
        ("e\u0301e\u0301", 3, "e\u0301"),  # combining acute accent stays with its letter
        ("a\U0001f468\u200d\U0001f469\u200d\U0001f467b", 4, "a"),  # ZWJ family emoji
        ("a\U0001f44d\U0001f3fdb", 2, "a"),  # skin-tone modifier
        ("\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7", 3, "\U0001f1e9\U0001f1ea"),  # two flags
        ("x\r\ny", 2, "x"),
        ("\ud83d\ude00z", 1, ""),  # a surrogate pair (e.g. from surrogateescape) is not split
        ("中文字", 2, "中文"),
    ],
)
def test_safe_prefix_never_splits_a_grapheme(text: str, limit: int, expected: str) -> None:
    assert safe_prefix(text, limit) == expected


@settings(max_examples=150, deadline=None)
@given(
    plan=st.one_of(st.none(), st.text(max_size=4_000)),
    ledger=st.one_of(st.none(), st.text(max_size=9_000)),
    total=st.integers(min_value=900, max_value=20_000),
)
def test_flat_is_bounded_and_deterministic(plan, ledger, total) -> None:  # type: ignore[no-untyped-def]
    first = build_flat_carry(inputs(plan, ledger), total_chars=total)
    assert len(first.text) <= total
    assert first.text.startswith(DEFAULT_DISCIPLINE)
    assert build_flat_carry(inputs(plan, ledger), total_chars=total) == first


def _session_log(sessions: int) -> str:
    return "# Ledger\n\nAppend a dated section per session.\n\n" + "\n".join(
        f"## 2026-11-{n:02d} (session {n})\n- Tried variant {n}. It failed because the lock "
        f"was released early in run {n}.\n- [ ] Next: re-run load test {n} with 3 replicas.\n"
        for n in range(1, sessions + 1)
    )


def test_the_fallback_cuts_at_item_boundaries_keeps_the_newest_and_the_rules() -> None:
    """Issue 20 item 1: the fallback of a planned carry keeps whole items, its newest
    session, the user's standing rules, and names what it leaves out."""
    ledger = _session_log(60)
    rules = "# MEMORY\n\n- Never pass -auto-approve.\n- 返事は日本語で。\n"
    fallback = FlatInputs(
        workspace="ws",
        discipline=DEFAULT_DISCIPLINE,
        plan_text="# Plan\n\n## Goal\nship it\n",
        ledger_text=ledger,
        plan_path="ws/PLAN.md",
        ledger_path="ws/handoff/LEDGER.md",
        whole_items=True,
        rules_text=rules,
    )
    text = build_flat_carry(fallback, total_chars=6_000).text
    assert len(text) <= 6_000
    assert "- Never pass -auto-approve.\n- 返事は日本語で。" in text
    assert "- [ ] Next: re-run load test 60 with 3 replicas." in text  # the newest session
    assert "Append a dated section per session." in text  # the opening
    assert "… not shown: ws/handoff/LEDGER.md:" in text  # what is left out is named
    source = set(ledger.split("\n"))
    body = text.split("# Handoff ledger")[1].split("\n# ")[0].split("\n")[1:]
    for line in body:  # every line is a whole line of the ledger, or the pointer
        assert line in source or line.startswith("… not shown: "), line
    # The plain truncation (the bench's baseline) is unchanged: the newest session is cut off.
    plain = build_flat_carry(dataclasses.replace(fallback, whole_items=False), total_chars=6_000)
    assert "re-run load test 60" not in plain.text and "auto-approve" not in plain.text
