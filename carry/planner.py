"""Given a carry's segments and a total character budget, return the carry text and why (S15).

`priority` is where a segment appears (lower first); `budget_priority` is who gets space first
when the budget is tight (lower first). Required segments reserve their space before anything
else and fail closed with `PromptBudgetError` when they alone do not fit: the discipline and
the trailer are never silently dropped. Optional segments are atomic: they fit whole or are
dropped with a reason — except a segment that can shrink (the ledger, the plan, the anchor
table): it carries a `fit` function, which the planner calls, in budget order, with the room
that is left (capped by the segment's own `max_chars`) and the texts selected so far; the
segment is selected whole ("fits"), cut ("shrunk") or dropped. Only the planner sizes
segments; callers never pre-size them.

Every character counts: segments are joined by `SEPARATOR` and the text ends with one
newline, and both are inside the budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.index.errors import PromptBudgetError

SEPARATOR = "\n\n"
TERMINATOR = "\n"

SegmentStatus = Literal["selected", "dropped"]
SegmentReason = Literal["required", "fits", "shrunk", "over_budget", "empty"]

# Given the room a shrinkable segment may fill and the texts already selected (by name, in
# budget order), return its text within that room ("" when nothing useful fits). Pure.
Fit = Callable[[int, Mapping[str, str]], str]


@dataclass(frozen=True)
class PromptSegment:
    name: str
    text: str  # its whole text, without a trailing newline; "" means there is nothing to say
    required: bool
    priority: int  # display position, lower first
    budget_priority: int  # who gets space first, lower first
    fit: Fit | None = None  # how to shrink it; None: atomic
    max_chars: int | None = None  # its own cap (a shrinkable segment's budget), None: none


@dataclass(frozen=True)
class SegmentDecision:
    name: str
    status: SegmentStatus
    reason: SegmentReason
    chars: int  # the segment's own size, without separators
    priority: int
    budget_priority: int
    explanation: str


@dataclass(frozen=True)
class PromptPlan:
    text: str
    decisions: tuple[SegmentDecision, ...]  # in display order (priority, name)
    used_chars: int
    budget_chars: int


def planned_chars(texts: Iterable[str]) -> int:
    """Given the texts of the selected segments, return what they cost together."""
    sizes = [len(text) for text in texts]
    if not sizes:
        return 0
    return sum(sizes) + len(SEPARATOR) * (len(sizes) - 1) + len(TERMINATOR)


def remaining_chars(selected_texts: Sequence[str], budget_chars: int) -> int:
    """Given what is already selected, return the most one more segment's text may hold."""
    if not selected_texts:
        return max(0, budget_chars - len(TERMINATOR))
    return max(0, budget_chars - planned_chars(selected_texts) - len(SEPARATOR))


def plan_prompt(segments: Sequence[PromptSegment], *, budget_chars: int) -> PromptPlan:
    """Given segments and a total budget, return the planned text and one decision each.

    The steps: check the required segments fit, reserve them, place the optional ones in
    budget order (whole, shrunk or dropped), then lay the chosen out in display order.
    Raises PromptBudgetError when the required segments alone exceed the budget.
    """
    check_required_fit(segments, budget_chars)
    chosen, decisions = reserve_required(segments)
    optional = [s for s in segments if not s.required and s.text]
    for segment in sorted(optional, key=lambda s: (s.budget_priority, s.priority, s.name)):
        placed, decisions[segment.name] = place_optional(segment, chosen, budget_chars)
        if placed is not None:
            chosen.append(placed)
    shown = sorted(chosen, key=lambda s: (s.priority, s.name))
    text = SEPARATOR.join(s.text for s in shown) + TERMINATOR if shown else ""
    display = sorted(segments, key=lambda s: (s.priority, s.name))
    return PromptPlan(
        text=text,
        decisions=tuple(decisions[s.name] for s in display),
        used_chars=len(text),
        budget_chars=budget_chars,
    )


def check_required_fit(segments: Sequence[PromptSegment], budget_chars: int) -> None:
    """Given segments and the budget, raise unless the names are unique (ValueError) and the
    required segments alone fit (PromptBudgetError: they are never silently dropped)."""
    names = [segment.name for segment in segments]
    if len(set(names)) != len(names):
        raise ValueError(f"segment names must be unique, got {names}")
    required = [s for s in segments if s.required and s.text]
    need = planned_chars(s.text for s in required)
    if need > budget_chars:
        sizes = ", ".join(f"{s.name} {len(s.text)}" for s in required)
        raise PromptBudgetError(
            f"the required carry segments need {need} chars ({sizes}, plus separators) but "
            f"the total budget is {budget_chars}: raise the budget (carry.total_chars or "
            "--max-chars) or shorten carry.discipline"
        )


def reserve_required(
    segments: Sequence[PromptSegment],
) -> tuple[list[PromptSegment], dict[str, SegmentDecision]]:
    """Given segments, return the required ones (reserved first) and the decisions for them
    and for every empty segment."""
    chosen: list[PromptSegment] = []
    decisions: dict[str, SegmentDecision] = {}
    for segment in segments:
        if not segment.text:
            decisions[segment.name] = _decision(segment, "dropped", "empty", "nothing to include.")
        elif segment.required:
            chosen.append(segment)
            decisions[segment.name] = _decision(
                segment, "selected", "required", "required: reserved before any optional."
            )
    return chosen, decisions


def place_optional(
    segment: PromptSegment, chosen: Sequence[PromptSegment], budget_chars: int
) -> tuple[PromptSegment | None, SegmentDecision]:
    """Given an optional segment and what is chosen so far, return it as placed (whole or
    shrunk; None when dropped) and its decision."""
    room = remaining_chars([s.text for s in chosen], budget_chars)
    cap = room if segment.max_chars is None else min(room, max(segment.max_chars, 0))
    fits = f"{len(segment.text)} chars fit in {cap} left."
    if segment.fit is None:
        if len(segment.text) <= cap:
            return segment, _decision(segment, "selected", "fits", fits)
        shrunk = ""
    else:
        shrunk = segment.fit(cap, {s.name: s.text for s in chosen})
        if shrunk == segment.text and len(shrunk) <= cap:
            return segment, _decision(segment, "selected", "fits", fits)
    if shrunk and len(shrunk) <= cap:
        return dataclasses.replace(segment, text=shrunk), _decision(
            segment,
            "selected",
            "shrunk",
            f"{len(segment.text)} chars cut to {len(shrunk)} to fit {cap}.",
            chars=len(shrunk),
        )
    return None, _decision(
        segment,
        "dropped",
        "over_budget",
        f"{len(segment.text)} chars do not fit in the {cap} left.",
    )


def _decision(
    segment: PromptSegment,
    status: SegmentStatus,
    reason: SegmentReason,
    why: str,
    *,
    chars: int | None = None,
) -> SegmentDecision:
    """Given a segment and what became of it, return its decision (`chars`: its own size)."""
    return SegmentDecision(
        name=segment.name,
        status=status,
        reason=reason,
        chars=len(segment.text) if chars is None else chars,
        priority=segment.priority,
        budget_priority=segment.budget_priority,
        explanation=why,
    )
