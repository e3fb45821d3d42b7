"""Given a workspace's ledger, plan, sidecar and recall hits, return its carry and every decision.

The carry is planned like a prompt (S15's two-level budgets, DESIGN.md "Carry"):

| segment    | position | gets space | kind                                                      |
|------------|----------|------------|-----------------------------------------------------------|
| discipline | 0        | reserved   | required; `carry.discipline` byte for byte, first (I1)    |
| notice     | 1        | reserved   | required when the ledger or the plan is missing           |
| ledger     | 2        | 1st        | sections by weight, items by state and recency (P6)       |
| plan       | 3        | 2nd        | PLAN.md's current state, headings demoted (P8)            |
| memory     | 4        | 3rd        | S15 selection over recall hits                            |
| anchors    | 5        | 4th        | PLAN history entries, dated, in what the plan leaves (P5) |
| trailer    | 9        | reserved   | required; how to read more, where the files are           |

Status and next steps come first, history last. The ledger, plan and anchors segments shrink:
the planner (`planner.plan_prompt`) alone sizes them, in its budget order, through their `fit`
functions; the recalled-memory segment is packed under its own policy and planned atomically.
The segments themselves are built in `segments`; this module lays them out and plans them.
Items the ledger cut leaves out are anchored in place (one-line summaries with their lines; a
pointer naming the `carryd expand` ids), so the anchor table holds only what has no place in the
carry: the plan's history. An empty segment is left out, and a carry that names no `mem_…` id
gets a trailer that does not offer to expand one.

A ledger in which fewer than two of the four known sections are recognised is not planned:
the carry is the flat fallback (`CarryPlan.fallback == "too_few_sections"`), for the manifest
to say so. Every text that enters the carry is redacted (I3) before it is measured, so
redaction can never push the carry over its budget. Nothing here reads the clock, the
environment or a file, and nothing iterates an unordered collection: same inputs, same bytes
(hashes and timestamps belong to the manifest, written by the daemon).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.anchors import AnchorRow
from carryd.carry.budgets import CarryBudgets
from carryd.carry.flat import FlatInputs, build_flat_carry, safe_prefix, trailer
from carryd.carry.ledger import Ledger, parse_ledger
from carryd.carry.planner import (
    PromptPlan,
    PromptSegment,
    SegmentDecision,
    plan_prompt,
    planned_chars,
)
from carryd.carry.recency import item_facts, ledger_year, priority_order
from carryd.carry.segments import (
    ANCHORS_HEADING,
    MEMORY_HEADING,
    CarryInputs,
    anchors_segment,
    ledger_parts,
    ledger_segment,
    memory_segment,
    memory_selection,
    plan_history_rows,
    plan_history_text,
    plan_segment,
    rows_shown,
)
from carryd.carry.select import MemoryDecision
from carryd.carry.sidecar import apply_sidecar, parse_sidecar
from carryd.carry.standing import (
    STANDING_HEADING,
    UNSHOWN_DEFAULTS,
    standing_segment,
    unshown_defaults,
)
from carryd.carry.summary import flatten
from carryd.index.errors import PromptBudgetError
from carryd.index.redact import redact

# Moved to `segments` with the builders that use them; still importable from here.
__all__ = [
    "ANCHORS_HEADING",
    "MEMORY_HEADING",
    "STANDING_HEADING",
    "UNSHOWN_DEFAULTS",
    "CarryBudgets",
    "CarryInputs",
    "CarryPlan",
    "build_carry",
    "ledger_of",
    "missing_notice",
    "recall_queries",
    "recall_query",
    "unshown_defaults",
]

QUERY_MAX_CHARS = 1_000

RULES_SHARE = 0.14  # the most of a carry the user's standing rules take; the rest are named
MIN_SECTIONS = 2  # fewer recognised ledger sections than this: the flat carry is better
FallbackReason = Literal["too_few_sections"]
_ANCHOR_ID = re.compile(r"mem_[0-9a-f]{32}")


@dataclass(frozen=True)
class CarryPlan:
    text: str  # the carry file's exact content
    segment_decisions: tuple[SegmentDecision, ...]
    memory_decisions: tuple[MemoryDecision, ...]
    memory_excluded: tuple[str, ...]  # hits on entries the carry already holds (ledger, plan)
    anchors_shown: int
    anchors_total: int
    warnings: tuple[str, ...]  # sidecar and ledger problems: fail-soft, for the manifest
    used_chars: int
    budget_chars: int
    fallback: FallbackReason | None = None  # set: `text` is the flat carry, for this reason
    unrecognised_sections: tuple[str, ...] = ()  # ledger headings outside the section table


def ledger_of(inputs: CarryInputs) -> Ledger | None:
    """Given the inputs, return the parsed ledger with its sidecar applied (None: no ledger)."""
    return _parsed_ledger(inputs, [])


def recall_query(inputs: CarryInputs) -> str:
    """Given the inputs, return the recall query for the memory segment ("" when none).

    The query is the ledger's goal followed by its next steps, whole items, redacted, at most
    `QUERY_MAX_CHARS` characters.
    """
    ledger = ledger_of(inputs)
    if ledger is None:
        return ""
    pieces: list[str] = []
    for kind in ("goal", "next"):
        section = ledger.section(kind)
        if section is not None:
            pieces.extend(redact(item.text).strip() for item in section.items)
    query = ""
    for piece in pieces:
        joined = f"{query}\n{piece}" if query else piece
        if len(joined) > QUERY_MAX_CHARS:
            break
        query = joined
    if not query and pieces:
        query = safe_prefix(pieces[0], QUERY_MAX_CHARS)
    return query


MAX_QUERIES = 12  # goal + status + open next steps: enough for a long ledger's open list


def recall_queries(inputs: CarryInputs) -> tuple[str, ...]:
    """Given the inputs, return the short recall queries for the memory segment (issue 10):
    the goal's first sentence, the current status line, then each open next step (newest
    first) — each its first sentence, redacted, without repeats; () without a ledger.

    A short query is one a matching note covers well; one long query (`recall_query`) is
    covered by nothing, so lexical confidence never reaches the inject threshold.
    """
    ledger = ledger_of(inputs)
    if ledger is None:
        return ()
    pieces: list[str] = []
    goal = ledger.section("goal")
    if goal is not None and goal.items:
        pieces.append(goal.items[0].text)
    for kind in ("status", "next"):
        section = ledger.section(kind)
        if section is None or not section.items:
            continue
        facts = item_facts(section.items, kind, year=ledger_year(ledger.title))
        open_items = [
            section.items[index]
            for index in priority_order(section.items, facts)
            if facts[index].state == "open"
        ]
        pieces.extend(item.text for item in (open_items[:1] if kind == "status" else open_items))
    queries: list[str] = []
    for piece in pieces:
        _, flat = flatten(redact(piece))
        query = _first_sentence(flat)
        if query and query not in queries:
            queries.append(query)
    return tuple(queries[:MAX_QUERIES])


def _first_sentence(text: str) -> str:
    match = re.search(r"[。！？]|[.!?](?=\s|$)", text)
    sentence = text[: match.end()] if match else text
    return safe_prefix(sentence.strip(), QUERY_MAX_CHARS // 4).strip()


def build_carry(inputs: CarryInputs, budgets: CarryBudgets = CarryBudgets()) -> CarryPlan:
    """Given the inputs and budgets, return the planned carry and its decision logs.

    Raises PromptBudgetError when the required segments alone exceed `budgets.total_chars`.
    """
    warnings: list[str] = []
    ledger = _parsed_ledger(inputs, warnings)
    unrecognised = tuple(redact(name) for name in ledger.unrecognised) if ledger else ()
    closing = redact(_trailer(inputs))
    notice = redact(missing_notice(inputs))
    memory, excluded = memory_selection(inputs, budgets.memory)
    rows, newest_first = plan_history_rows(inputs)
    history = plan_history_text(inputs)
    parts = ledger_parts(inputs, ledger)

    # The root's name in the trailer's commands is paid on top: what a carry holds must not
    # depend on how long the path to the memory root happens to be.
    rootless = dataclasses.replace(inputs, root=None)
    bare = redact(_trailer(rootless))
    ceiling = cost_ceiling(rootless, budgets, required=(inputs.discipline, notice, bare))
    budget = min(budgets.total_chars, ceiling + len(closing) - len(bare))
    segments = [
        PromptSegment("discipline", inputs.discipline, True, priority=0, budget_priority=0),
        PromptSegment("notice", notice, True, priority=1, budget_priority=0),
        ledger_segment(inputs, parts, budgets),
        plan_segment(inputs, budgets, total=budget),
        standing_segment(inputs.root_defaults, memory, cap=budget),
        memory_segment(inputs, memory),
        anchors_segment(rows, newest_first, budgets, history=history),
        PromptSegment("trailer", closing, True, priority=9, budget_priority=0),
    ]
    if planned_chars(segment.text for segment in segments if segment.text) > budget:
        # Not everything fits: the standing rules take at most their share, the rest named.
        segments = [
            standing_segment(inputs.root_defaults, memory, cap=int(RULES_SHARE * budget))
            if segment.name == "standing"
            else segment
            for segment in segments
        ]
    planned: PromptPlan = plan_prompt(segments, budget_chars=budget)
    planned = _without_dangling_expand(planned, inputs, closing)
    anchors = next(d for d in planned.decisions if d.name == "anchors")
    return CarryPlan(
        text=planned.text,
        segment_decisions=planned.decisions,
        memory_decisions=memory.decisions,
        memory_excluded=excluded,
        anchors_shown=_history_shown(planned.text, rows, history, anchors),
        anchors_total=len(rows),
        warnings=tuple(redact(warning) for warning in warnings),
        used_chars=planned.used_chars,
        budget_chars=budget,
        unrecognised_sections=unrecognised,
    )


def _trailer(inputs: CarryInputs) -> str:
    return trailer(
        inputs.workspace,
        ledger_path=inputs.ledger_path,
        plan_path=inputs.plan_path,
        root=inputs.root,
    )


def _history_shown(
    text: str, rows: Sequence[AnchorRow], history: str, anchors: SegmentDecision
) -> int:
    """Given the carry, the history rows, the history in full and the anchors' decision,
    return how many history entries the carry shows: all of them when the history is in
    full, else the rows it shows."""
    if anchors.status != "selected":
        return 0
    if history and history in text:
        return len(rows)
    return rows_shown(text, rows)


# A planned carry may cost this much more than flat injection of the same files (issue 20's
# bar is +10%): the room buys whole items where flat cuts its tail mid-sentence.
COST_SLACK = 0.095


def cost_ceiling(inputs: CarryInputs, budgets: CarryBudgets, *, required: Sequence[str]) -> int:
    """Given the inputs, the budgets and the required segments' texts, return the carry's
    total budget: what the flat injection would cost for the same files plus `COST_SLACK`,
    so a planned carry costs about what the truncation it replaces costs — but never less
    than the required segments plus the memory budget (room for the user's standing rules) or
    `budgets.free_chars` (what a host injects at SessionStart anyway: a short hand-off is
    not cut), and never more than `budgets.total_chars`.

    The planned carry earns its place by choosing better within about the flat's cost, not
    by spending more: standing rules and recalled memory are paid for by the ledger's and the
    plan's least useful lines (superseded, done, oldest), which the packing drops first.
    """
    try:
        flat = _flat_carry(inputs, budgets).used_chars
    except PromptBudgetError:
        flat = 0
    floor = planned_chars(text for text in required if text) + budgets.memory.max_chars
    within = int(flat * (1 + COST_SLACK))
    return min(budgets.total_chars, max(within, floor, budgets.free_chars))


def _flat_carry(inputs: CarryInputs, budgets: CarryBudgets) -> PromptPlan:
    """Given the inputs and budgets, return the flat injection of the same plan and ledger."""
    return build_flat_carry(
        FlatInputs(
            workspace=inputs.workspace,
            discipline=inputs.discipline,
            plan_text=inputs.plan_text,
            ledger_text=inputs.ledger_text,
            plan_path=inputs.plan_path,
            ledger_path=inputs.ledger_path,
            root=inputs.root,
        ),
        total_chars=budgets.total_chars,
        plan_chars=budgets.plan_chars,
        ledger_chars=budgets.ledger_chars,
    )


def _too_few_sections(inputs: CarryInputs, ledger: Ledger | None) -> bool:
    """A ledger with text but fewer than two recognised sections is carried flat."""
    if ledger is None or inputs.ledger_text is None or not inputs.ledger_text.strip():
        return False
    return len(set(ledger.recognised)) < MIN_SECTIONS


def _flat_plan(
    inputs: CarryInputs,
    budgets: CarryBudgets,
    warnings: list[str],
    unrecognised: tuple[str, ...],
) -> CarryPlan:
    flat = _flat_carry(inputs, budgets)
    warnings.append(
        f"ledger: fewer than {MIN_SECTIONS} of the four sections recognised; carried flat"
    )
    return CarryPlan(
        text=flat.text,
        segment_decisions=flat.decisions,
        memory_decisions=(),
        memory_excluded=(),
        anchors_shown=0,
        anchors_total=0,
        warnings=tuple(redact(warning) for warning in warnings),
        used_chars=flat.used_chars,
        budget_chars=budgets.total_chars,
        fallback="too_few_sections",
        unrecognised_sections=unrecognised,
    )


def _without_dangling_expand(planned: PromptPlan, inputs: CarryInputs, closing: str) -> PromptPlan:
    """Given the planned carry, return it with the trailer that does not offer `carryd expand`
    when no `mem_…` id made it into the carry (a shorter trailer: the budget still holds)."""
    body = planned.text[: len(planned.text) - len(closing) - 1]
    if _ANCHOR_ID.search(body) or not planned.text.endswith(closing + "\n"):
        return planned
    short = redact(
        trailer(
            inputs.workspace,
            ledger_path=inputs.ledger_path,
            plan_path=inputs.plan_path,
            expand=False,
            root=inputs.root,
        )
    )
    text = body + short + "\n"
    decisions = tuple(
        dataclasses.replace(decision, chars=len(short)) if decision.name == "trailer" else decision
        for decision in planned.decisions
    )
    return dataclasses.replace(planned, text=text, decisions=decisions, used_chars=len(text))


def _parsed_ledger(inputs: CarryInputs, warnings: list[str]) -> Ledger | None:
    if inputs.ledger_text is None:
        return None
    ledger = parse_ledger(inputs.ledger_text, names=inputs.section_names)
    warnings.extend(f"ledger: {warning}" for warning in ledger.warnings)
    if inputs.sidecar_text is not None:
        sidecar, warning = parse_sidecar(inputs.sidecar_text)
        if warning is not None:
            warnings.append(warning)
        if sidecar is not None:
            ledger = apply_sidecar(ledger, sidecar)
    return ledger


def missing_notice(inputs: CarryInputs) -> str:
    """Given the inputs, return the notice naming a missing ledger or plan ("" if none is)."""
    missing = []
    if inputs.ledger_text is None:
        missing.append(f"no handoff ledger (`{inputs.ledger_path}`)")
    if inputs.plan_text is None:
        missing.append(f"no plan (`{inputs.plan_path}`)")
    if not missing:
        return ""
    return f"> Workspace `{inputs.workspace}` has {' and '.join(missing)} yet."
