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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.anchors import AnchorRow, history_rows, render_anchor_table
from carryd.carry.budgets import CarryBudgets
from carryd.carry.flat import FlatInputs, build_flat_carry, safe_prefix, trailer
from carryd.carry.ledger import Ledger, SectionNames, parse_ledger
from carryd.carry.plan import (
    PlanParts,
    demoted,
    history_items,
    join_units,
    plan_current_for_carry,
    split_plan,
)
from carryd.carry.planner import (
    PromptPlan,
    PromptSegment,
    SegmentDecision,
    plan_prompt,
)
from carryd.carry.recency import item_facts, ledger_year, priority_order
from carryd.carry.select import (
    MemoryContextPlan,
    MemoryDecision,
    MemorySelectionPolicy,
    authority_from_location,
    candidates_from_recall,
    select_memory_context,
)
from carryd.carry.sidecar import apply_sidecar, parse_sidecar
from carryd.carry.summary import flatten
from carryd.carry.truncate import EntrySpan, render_section, truncate_ledger
from carryd.index.entries import parse_entries
from carryd.index.recall import RecallHit
from carryd.index.redact import redact

QUERY_MAX_CHARS = 1_000

ANCHORS_HEADING = "# Plan history, not shown above (`carryd expand <id>` prints an entry)"
MIN_SECTIONS = 2  # fewer recognised ledger sections than this: the flat carry is better
FallbackReason = Literal["too_few_sections"]
_ANCHOR_ID = re.compile(r"mem_[0-9a-f]{32}")
MEMORY_HEADING = "# Recalled memory (for the ledger's goal and next steps)"


@dataclass(frozen=True)
class CarryInputs:
    """Everything a carry is made of; paths are POSIX and relative to the memory root."""

    workspace: str
    discipline: str
    ledger_path: str
    plan_path: str
    ledger_text: str | None = None  # None: no ledger file
    plan_text: str | None = None  # None: no PLAN.md
    sidecar_text: str | None = None  # None: no sidecar file
    recall_hits: tuple[RecallHit, ...] = ()  # the recall answer's hits, in its order
    section_names: SectionNames = SectionNames()


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
    if _too_few_sections(inputs, ledger):
        return _flat_plan(inputs, budgets, warnings, unrecognised)
    closing = redact(
        trailer(inputs.workspace, ledger_path=inputs.ledger_path, plan_path=inputs.plan_path)
    )
    notice = redact(missing_notice(inputs))
    memory, excluded = _memory(inputs, budgets.memory)
    memory_segment = f"{MEMORY_HEADING}\n{memory.context}" if memory.context else ""
    rows, newest_first = _history_rows(inputs)

    segments = [
        PromptSegment("discipline", inputs.discipline, True, priority=0, budget_priority=0),
        PromptSegment("notice", notice, True, priority=1, budget_priority=0),
        _ledger_segment(inputs, ledger, budgets),
        _plan_segment(inputs, budgets),
        PromptSegment("memory", memory_segment, False, priority=4, budget_priority=3),
        _anchors_segment(rows, newest_first, budgets),
        PromptSegment("trailer", closing, True, priority=9, budget_priority=0),
    ]
    planned: PromptPlan = plan_prompt(segments, budget_chars=budgets.total_chars)
    planned = _without_dangling_expand(planned, inputs, closing)
    anchors = next(d for d in planned.decisions if d.name == "anchors")
    return CarryPlan(
        text=planned.text,
        segment_decisions=planned.decisions,
        memory_decisions=memory.decisions,
        memory_excluded=excluded,
        anchors_shown=_rows_in(planned.text, rows) if anchors.status == "selected" else 0,
        anchors_total=len(rows),
        warnings=tuple(redact(warning) for warning in warnings),
        used_chars=planned.used_chars,
        budget_chars=budgets.total_chars,
        unrecognised_sections=unrecognised,
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
    flat = build_flat_carry(
        FlatInputs(
            workspace=inputs.workspace,
            discipline=inputs.discipline,
            plan_text=inputs.plan_text,
            ledger_text=inputs.ledger_text,
            plan_path=inputs.plan_path,
            ledger_path=inputs.ledger_path,
        ),
        total_chars=budgets.total_chars,
        plan_chars=budgets.plan_chars,
        ledger_chars=budgets.ledger_chars,
    )
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
        )
    )
    text = body + short + "\n"
    decisions = tuple(
        dataclasses.replace(decision, chars=len(short)) if decision.name == "trailer" else decision
        for decision in planned.decisions
    )
    return dataclasses.replace(planned, text=text, decisions=decisions, used_chars=len(text))


def _rows_in(text: str, rows: Sequence[AnchorRow]) -> int:
    return sum(1 for row in rows if f"| {row.location} |" in text)


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


def _fit(build: Callable[[int], str], room: int) -> str:
    """Given a builder of text under a budget, return its redacted text within `room` chars.

    Inputs are redacted before they are cut; this pass only guards what a builder adds (paths
    in pointers). Should redaction still lengthen the text, the builder gets less room.
    """
    budget = room
    for _ in range(4):
        if budget < 0:
            return ""
        text: str = redact(build(budget))
        if len(text) <= room:
            return text
        budget -= len(text) - room
    return ""


def _ledger_segment(
    inputs: CarryInputs, ledger: Ledger | None, budgets: CarryBudgets
) -> PromptSegment:
    """Given the parsed ledger, return its shrinkable segment ("" when it says nothing)."""
    empty = PromptSegment("ledger", "", False, priority=2, budget_priority=1)
    if inputs.ledger_text is None or ledger is None:
        return empty
    if not any(section.items for section in ledger.sections):
        return empty  # headings alone say nothing: no empty segment
    heading = redact(f"# Handoff ledger (`{inputs.ledger_path}`)")
    redacted = _redacted_ledger(ledger)
    # A section with no items says nothing; its heading alone is not carried.
    redacted = dataclasses.replace(
        redacted, sections=tuple(section for section in redacted.sections if section.items)
    )
    entries = _entry_spans(inputs.ledger_path, inputs.ledger_text, ledger.title_line or 1)
    whole = "\n\n".join(
        render_section(section, section.items, None) for section in redacted.sections
    )

    def fit(room: int, _: Mapping[str, str]) -> str:
        body = _fit(
            lambda budget: truncate_ledger(
                redacted, budget, path=inputs.ledger_path, entries=entries
            ).text,
            room - len(heading) - 1,
        )
        return f"{heading}\n{body}" if body.strip() else ""

    return PromptSegment(
        "ledger",
        f"{heading}\n{whole}",
        False,
        priority=2,
        budget_priority=1,
        fit=fit,
        max_chars=budgets.ledger_chars + len(heading) + 1,
    )


def _entry_spans(path: str, text: str, first_line: int) -> tuple[EntrySpan, ...]:
    """Given a file, return its index entries' line spans and ids (from `first_line` on)."""
    return tuple(
        (entry.line_start, entry.line_end, entry.id)
        for entry in parse_entries(path, text)
        if entry.line_end >= first_line
    )


def _redacted_ledger(ledger: Ledger) -> Ledger:
    """Given a parsed ledger, return it with every heading and item text redacted (lines kept)."""
    sections = tuple(
        dataclasses.replace(
            section,
            heading=redact(section.heading),
            items=tuple(
                dataclasses.replace(item, text=redact(item.text)) for item in section.items
            ),
        )
        for section in ledger.sections
    )
    return dataclasses.replace(ledger, sections=sections)


def _plan_segment(inputs: CarryInputs, budgets: CarryBudgets) -> PromptSegment:
    """Given the inputs, return the plan's current state as a shrinkable segment."""
    empty = PromptSegment("plan", "", False, priority=3, budget_priority=2)
    if inputs.plan_text is None:
        return empty
    parts = _redacted_plan(split_plan(inputs.plan_text))
    if all(unit.kind == "heading" for unit in parts.current_units):
        return empty  # a title alone says nothing: no empty segment
    units = demoted(parts.current_units)
    parts = dataclasses.replace(parts, current_units=units, current=join_units(units))
    heading = redact(f"# Plan: current state (`{inputs.plan_path}`)")

    def fit(room: int, _: Mapping[str, str]) -> str:
        body = _fit(
            lambda budget: plan_current_for_carry(parts, budget, path=inputs.plan_path),
            room - len(heading) - 1,
        )
        return f"{heading}\n{body}" if body.strip() else ""

    return PromptSegment(
        "plan",
        f"{heading}\n{parts.current}",
        False,
        priority=3,
        budget_priority=2,
        fit=fit,
        max_chars=budgets.plan_chars + len(heading) + 1,
    )


def _redacted_plan(parts: PlanParts) -> PlanParts:
    units = tuple(dataclasses.replace(unit, text=redact(unit.text)) for unit in parts.current_units)
    return dataclasses.replace(
        parts, current=join_units(units), history=redact(parts.history), current_units=units
    )


def _history_rows(inputs: CarryInputs) -> tuple[tuple[AnchorRow, ...], tuple[int, ...]]:
    """Given the inputs, return one redacted row per PLAN history entry (document order) and
    the rows' indices newest first (explicit dates win over position)."""
    if inputs.plan_text is None:
        return (), ()
    entries = _entry_spans(inputs.plan_path, inputs.plan_text, 1)
    items = history_items(inputs.plan_text)
    rows = history_rows(items, entries, path=inputs.plan_path)
    recency = {item.line_start: (item.recency, item.line_start) for item in items}
    newest_first = sorted(
        range(len(rows)), key=lambda index: recency[rows[index].line_start], reverse=True
    )
    redacted = tuple(
        dataclasses.replace(row, l0=redact(row.l0), path=redact(row.path)) for row in rows
    )
    return redacted, tuple(newest_first)


def _anchors_segment(
    rows: Sequence[AnchorRow], newest_first: Sequence[int], budgets: CarryBudgets
) -> PromptSegment:
    """Given the history rows, return the anchor table: it spends what the plan's current
    state leaves of the plan budget, newest entries first, shown in document order."""
    whole = f"{ANCHORS_HEADING}\n{render_anchor_table(rows)}" if rows else ""

    def fit(room: int, selected: Mapping[str, str]) -> str:
        cap = min(room, budgets.plan_chars - len(selected.get("plan", "")))
        if len(whole) <= cap:
            return whole
        chosen: list[int] = []
        for index in newest_first:
            trial = sorted([*chosen, index])
            if len(_partial_table(rows, trial)) <= cap:
                chosen = trial
        return _partial_table(rows, chosen) if chosen else ""

    return PromptSegment(
        "anchors", whole, False, priority=5, budget_priority=4, fit=fit if rows else None
    )


def _partial_table(rows: Sequence[AnchorRow], chosen: Sequence[int]) -> str:
    rest = len(rows) - len(chosen)
    table = f"{ANCHORS_HEADING}\n{render_anchor_table([rows[index] for index in chosen])}"
    if rest:
        first, last = rows[0].line_start, rows[-1].line_end
        table += f"\n+{rest} older entries → {rows[0].path}:{first}-{last}"
    return table


def _memory(
    inputs: CarryInputs, policy: MemorySelectionPolicy
) -> tuple[MemoryContextPlan, tuple[str, ...]]:
    """Given the inputs, return the S15 selection over the recall hits and the excluded ids.

    Hits on ledger or plan entries are already in the carry (ledger, plan, anchors); they only
    stay candidates when they name a slot, where they can decide a conflict (the ledger's
    explicit requirements are the current turn's authority).
    """
    carried = {inputs.ledger_path, inputs.plan_path}
    kept: list[RecallHit] = []
    excluded: list[str] = []
    for hit in inputs.recall_hits:
        if hit.path in carried and hit.slot is None:
            excluded.append(hit.id)
        else:
            slot = redact(hit.slot) if hit.slot else hit.slot
            kept.append(dataclasses.replace(hit, l0=redact(hit.l0), slot=slot))
    candidates = candidates_from_recall(
        kept,
        authority_for=lambda hit: authority_from_location(
            hit.workspace, hit.path, active_ledger=inputs.ledger_path
        ),
    )
    plan = select_memory_context(candidates, user_scope=inputs.workspace, policy=policy)
    return plan, tuple(excluded)
