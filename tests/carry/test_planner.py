"""The carry planner: required first (fail closed), optional by budget priority, atomically."""

from __future__ import annotations

import pytest
from carryd.carry.planner import (
    SEPARATOR,
    TERMINATOR,
    PromptSegment,
    plan_prompt,
    planned_chars,
    remaining_chars,
)
from carryd.index.errors import PromptBudgetError
from hypothesis import given, settings
from hypothesis import strategies as st


def seg(
    name: str, size: int, *, required: bool = False, priority: int = 5, budget: int = 5
) -> PromptSegment:
    return PromptSegment(
        name, name[0] * size, required=required, priority=priority, budget_priority=budget
    )


def outcome(plan) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {d.name: (d.status, d.reason) for d in plan.decisions}


def test_required_segments_reserve_first_and_optional_go_by_budget_priority() -> None:
    segments = [
        seg("head", 10, required=True, priority=0, budget=0),
        seg("memory", 30, priority=3, budget=1),  # gets space first although shown later
        seg("anchors", 30, priority=1, budget=2),
        seg("tail", 10, required=True, priority=9, budget=0),
    ]
    budget = planned_chars(["h" * 10, "t" * 10, "m" * 30])
    plan = plan_prompt(segments, budget_chars=budget)
    assert outcome(plan) == {
        "head": ("selected", "required"),
        "anchors": ("dropped", "over_budget"),
        "memory": ("selected", "fits"),
        "tail": ("selected", "required"),
    }
    # Rendered in display order with the fixed separator, ending with one newline.
    assert plan.text == "h" * 10 + SEPARATOR + "m" * 30 + SEPARATOR + "t" * 10 + TERMINATOR
    assert plan.used_chars == len(plan.text) == budget
    assert [d.name for d in plan.decisions] == ["head", "anchors", "memory", "tail"]


def test_a_dropped_segment_does_not_stop_smaller_later_ones() -> None:
    segments = [
        seg("discipline", 5, required=True, priority=0, budget=0),
        seg("big", 100, priority=1, budget=1),
        seg("small", 5, priority=2, budget=2),
    ]
    plan = plan_prompt(segments, budget_chars=30)
    assert outcome(plan)["big"] == ("dropped", "over_budget")
    assert outcome(plan)["small"] == ("selected", "fits")


def test_required_segments_that_alone_do_not_fit_raise() -> None:
    segments = [seg("discipline", 50, required=True), seg("trailer", 50, required=True)]
    with pytest.raises(PromptBudgetError, match=r"need 103 chars .* total budget is 102"):
        plan_prompt(segments, budget_chars=102)
    assert plan_prompt(segments, budget_chars=103).used_chars == 103


def test_empty_segments_are_dropped_with_a_reason() -> None:
    plan = plan_prompt(
        [seg("discipline", 3, required=True), PromptSegment("memory", "", False, 2, 2)],
        budget_chars=100,
    )
    assert outcome(plan)["memory"] == ("dropped", "empty")
    assert plan.text == "ddd\n"


def test_nothing_selected_gives_empty_text() -> None:
    plan = plan_prompt([seg("optional", 10)], budget_chars=5)
    assert plan.text == "" and plan.used_chars == 0


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        plan_prompt([seg("a", 1), seg("a", 2)], budget_chars=10)


@pytest.mark.parametrize(
    ("selected", "budget", "room"),
    [([], 10, 9), (["abc"], 10, 4), (["abc"], 4, 0), (["a", "b"], 20, 13)],
)
def test_remaining_chars(selected: list[str], budget: int, room: int) -> None:
    assert remaining_chars(selected, budget) == room
    if room:
        assert planned_chars([*selected, "x" * room]) == budget


SEGMENTS = st.lists(
    st.builds(
        PromptSegment,
        name=st.text("abcdefgh", min_size=1, max_size=4),
        text=st.text(max_size=60),
        required=st.booleans(),
        priority=st.integers(0, 9),
        budget_priority=st.integers(0, 9),
    ),
    max_size=8,
    unique_by=lambda s: s.name,
)


@settings(max_examples=200, deadline=None)
@given(segments=SEGMENTS, budget=st.integers(0, 400))
def test_planner_never_exceeds_the_budget_and_keeps_required(segments, budget) -> None:  # type: ignore[no-untyped-def]
    try:
        plan = plan_prompt(segments, budget_chars=budget)
    except PromptBudgetError:
        required = [s.text for s in segments if s.required and s.text]
        assert planned_chars(required) > budget
        return
    assert plan.used_chars == len(plan.text) <= budget
    assert len(plan.decisions) == len(segments)
    for segment in segments:
        decision = next(d for d in plan.decisions if d.name == segment.name)
        if segment.required and segment.text:
            assert decision.status == "selected" and segment.text in plan.text
    assert plan_prompt(list(reversed(segments)), budget_chars=budget).text == plan.text


def test_only_the_planner_sizes_a_shrinkable_segment() -> None:
    seen: list[tuple[int, tuple[str, ...]]] = []

    def fit(room: int, selected: dict[str, str]) -> str:  # type: ignore[type-arg]
        seen.append((room, tuple(selected)))
        return "L" * min(room, 50)

    segments = [
        seg("head", 10, required=True, priority=0, budget=0),
        PromptSegment("ledger", "L" * 500, False, priority=2, budget_priority=1, fit=fit),
        seg("memory", 20, priority=3, budget=2),
        seg("tail", 10, required=True, priority=9, budget=0),
    ]
    plan = plan_prompt(segments, budget_chars=100)
    assert outcome(plan)["ledger"] == ("selected", "shrunk")
    room = 100 - planned_chars(["h" * 10, "t" * 10]) - len(SEPARATOR)
    assert seen == [(room, ("head", "tail"))]  # asked once, with what was already chosen
    assert plan.used_chars <= 100


@pytest.mark.parametrize(
    ("whole", "cap", "reason", "chars"),
    [
        (40, None, "fits", 40),  # fits whole: its fit still decides, and returns it whole
        (40, 30, "shrunk", 30),  # its own cap (the ledger's 8,000) binds before the total
        (400, None, "shrunk", 77),  # 90 - 10 (head) - 2 (separator) - 1 (final newline)
    ],
)
def test_a_shrinkable_segment_fits_whole_shrinks_or_drops(
    whole: int, cap: int | None, reason: str, chars: int
) -> None:
    text = "s" * whole
    segment = PromptSegment(
        "plan", text, False, 1, 1, fit=lambda room, _: text[:room], max_chars=cap
    )
    plan = plan_prompt([seg("head", 10, required=True, budget=0), segment], budget_chars=90)
    decision = next(d for d in plan.decisions if d.name == "plan")
    assert (decision.status, decision.reason, decision.chars) == ("selected", reason, chars)


def test_a_fit_that_has_nothing_useful_drops_the_segment() -> None:
    segment = PromptSegment("anchors", "a" * 300, False, 1, 1, fit=lambda room, _: "")
    plan = plan_prompt([segment], budget_chars=50)
    assert outcome(plan) == {"anchors": ("dropped", "over_budget")}
    assert plan.text == ""
