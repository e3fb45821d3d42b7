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

    Raises PromptBudgetError when the required segments alone exceed the budget.
    """
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

    decisions: dict[str, SegmentDecision] = {}

    def decide(
        segment: PromptSegment, status: SegmentStatus, reason: SegmentReason, why: str
    ) -> None:
        decisions[segment.name] = SegmentDecision(
            name=segment.name,
            status=status,
            reason=reason,
            chars=len(segment.text),
            priority=segment.priority,
            budget_priority=segment.budget_priority,
            explanation=why,
        )

    chosen: list[PromptSegment] = []
    for segment in segments:
        if not segment.text:
            decide(segment, "dropped", "empty", "nothing to include.")
        elif segment.required:
            chosen.append(segment)
            decide(segment, "selected", "required", "required: reserved before any optional.")

    optional = [s for s in segments if not s.required and s.text]
    for segment in sorted(optional, key=lambda s: (s.budget_priority, s.priority, s.name)):
        room = remaining_chars([s.text for s in chosen], budget_chars)
        cap = room if segment.max_chars is None else min(room, max(segment.max_chars, 0))
        if segment.fit is None:
            if len(segment.text) <= cap:
                chosen.append(segment)
                decide(segment, "selected", "fits", f"{len(segment.text)} chars fit in {cap} left.")
                continue
            shrunk = ""
        else:
            shrunk = segment.fit(cap, {s.name: s.text for s in chosen})
            if shrunk == segment.text and len(shrunk) <= cap:
                chosen.append(segment)
                decide(segment, "selected", "fits", f"{len(segment.text)} chars fit in {cap} left.")
                continue
        if shrunk and len(shrunk) <= cap:
            chosen.append(dataclasses.replace(segment, text=shrunk))
            decisions[segment.name] = SegmentDecision(
                name=segment.name,
                status="selected",
                reason="shrunk",
                chars=len(shrunk),
                priority=segment.priority,
                budget_priority=segment.budget_priority,
                explanation=f"{len(segment.text)} chars cut to {len(shrunk)} to fit {cap}.",
            )
        else:
            decide(
                segment,
                "dropped",
                "over_budget",
                f"{len(segment.text)} chars do not fit in the {cap} left.",
            )

    shown = sorted(chosen, key=lambda s: (s.priority, s.name))
    text = SEPARATOR.join(s.text for s in shown) + TERMINATOR if shown else ""
    display = sorted(segments, key=lambda s: (s.priority, s.name))
    return PromptPlan(
        text=text,
        decisions=tuple(decisions[s.name] for s in display),
        used_chars=len(text),
        budget_chars=budget_chars,
    )
