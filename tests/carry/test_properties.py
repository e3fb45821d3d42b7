"""Properties of the whole carry, for any ledger text and any budget.

- the carry never exceeds its total budget;
- the required segments (discipline first, trailer last) are always there — or
  PromptBudgetError is raised, exactly when they alone cannot fit;
- the trailer offers `carryd expand` exactly when the carry names a `mem_…` id;
- no segment is empty: every heading the carry prints has text under it;
- rendering is deterministic: the same inputs give the same bytes.
"""

from __future__ import annotations

import dataclasses
import re

from carryd.carry.flat import FLAT_NOTE, trailer
from carryd.carry.planner import planned_chars
from carryd.carry.render import CarryBudgets, CarryInputs, build_carry, missing_notice
from carryd.daemon.config import DEFAULT_DISCIPLINE
from carryd.index.errors import PromptBudgetError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LEDGER_PATH = "ws/handoff/LEDGER.md"
PLAN_PATH = "ws/PLAN.md"
TRAILER = trailer("ws", ledger_path=LEDGER_PATH, plan_path=PLAN_PATH)
SHORT_TRAILER = trailer("ws", ledger_path=LEDGER_PATH, plan_path=PLAN_PATH, expand=False)

HEADINGS = [
    "# Handoff ledger",
    "## 任务状态",
    "## 目标",
    "## 已试方案与失败原因",
    "## 进度与下一步",
    "## Goal",
    "## Tried approaches and failure reasons",
    "### detail",
    "```",
]
ITEMS = [
    "- ✅ solved by caching",
    "- ❌ failed: timeout after 10 s",
    "- [ ] next: write the migration",
    "- plain item with `code` and a | pipe",
    "  continuation line",
    "失败原因：网络超时",
    "",
    "token = ghp_" + "x1" * 18,
    "Some paragraph text that goes on for a while " * 3,
]

ledger_texts = st.one_of(
    st.lists(st.sampled_from(HEADINGS + ITEMS), max_size=60).map("\n".join),
    st.text(max_size=3_000),
)


def inputs(ledger: str | None, plan: str | None) -> CarryInputs:
    return CarryInputs(
        workspace="ws",
        discipline=DEFAULT_DISCIPLINE,
        ledger_path=LEDGER_PATH,
        plan_path=PLAN_PATH,
        ledger_text=ledger,
        plan_text=plan,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ledger=st.one_of(st.none(), ledger_texts),
    plan=st.one_of(st.none(), st.sampled_from(["", "# P\n## Current state\n- a\n- b\n"])),
    total=st.integers(min_value=0, max_value=6_000),
    ledger_chars=st.integers(min_value=0, max_value=4_000),
)
def test_any_ledger_any_budget(ledger, plan, total, ledger_chars) -> None:  # type: ignore[no-untyped-def]
    carry_inputs = inputs(ledger, plan)
    budgets = CarryBudgets(total_chars=total, ledger_chars=ledger_chars, plan_chars=500)
    try:
        plan_out = build_carry(carry_inputs, budgets)
    except PromptBudgetError:
        required = [DEFAULT_DISCIPLINE, missing_notice(carry_inputs), TRAILER]
        flat_required = [DEFAULT_DISCIPLINE, FLAT_NOTE, SHORT_TRAILER]
        assert planned_chars(text for text in required if text) > total or (
            planned_chars(flat_required) > total
        )
        return
    text = plan_out.text
    assert len(text) <= total
    assert text.startswith(DEFAULT_DISCIPLINE + "\n\n")
    if plan_out.fallback is not None:
        assert text.startswith(DEFAULT_DISCIPLINE + "\n\n" + FLAT_NOTE)
    names_an_id = re.search(r"mem_[0-9a-f]{32}", text) is not None
    assert text.endswith((TRAILER if names_an_id else SHORT_TRAILER) + "\n")
    for block in text.split("\n\n"):  # a segment's "# …" heading always has text under it
        assert block.strip() and not re.fullmatch(r"# [^\n]*", block.strip()), block
    again = build_carry(dataclasses.replace(carry_inputs), budgets)
    assert again.text.encode("utf-8") == text.encode("utf-8")
    assert again == plan_out
