"""Given a workspace's ledger, plan, sidecar and recall hits, return its carry and every decision.

The carry is planned like a prompt (S15's two-level budgets, DESIGN.md "Carry"):

| segment    | position | gets space | kind                                                    |
|------------|----------|------------|---------------------------------------------------------|
| discipline | 0        | reserved   | required; `carry.discipline` byte for byte, first (I1)  |
| notice     | 1        | reserved   | required when the ledger or the plan is missing         |
| anchors    | 2        | 2nd        | id, L0, path:lines of every PLAN and ledger entry (P5)  |
| ledger     | 3        | 1st        | four sections, weighted truncation (P6)                 |
| plan       | 4        | 3rd        | PLAN.md's current state (P8)                            |
| memory     | 5        | 4th        | S15 selection over recall hits (goal + next steps)      |
| trailer    | 9        | reserved   | required; how to expand an anchor, where the files are  |

Segments that can shrink (ledger, anchors, plan) are sized before planning, in the planner's
own budget order, to what the total leaves them; the recalled-memory segment is packed under
its own policy and then planned atomically. Every text that enters the carry is redacted (I3)
before it is measured, so redaction can never push the carry over its budget. Nothing here
reads the clock, the environment or a file, and nothing iterates an unordered collection:
same inputs, same bytes (hashes and timestamps belong to the manifest, written by the daemon).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from carryd.carry.anchors import AnchorRow, anchor_rows, render_anchor_table
from carryd.carry.budgets import CarryBudgets
from carryd.carry.flat import safe_prefix, trailer
from carryd.carry.ledger import Ledger, SectionNames, parse_ledger
from carryd.carry.plan import PlanParts, join_units, plan_current_for_carry, split_plan
from carryd.carry.planner import (
    PromptPlan,
    PromptSegment,
    SegmentDecision,
    plan_prompt,
    remaining_chars,
)
from carryd.carry.select import (
    MemoryContextPlan,
    MemoryDecision,
    MemorySelectionPolicy,
    authority_from_location,
    candidates_from_recall,
    select_memory_context,
)
from carryd.carry.sidecar import apply_sidecar, parse_sidecar
from carryd.carry.truncate import render_section, truncate_ledger
from carryd.index.entries import Entry, parse_entries
from carryd.index.recall import RecallHit
from carryd.index.redact import redact

QUERY_MAX_CHARS = 1_000

ANCHORS_HEADING = "# Anchors (`carryd expand <id>` prints an entry's full text)"
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


def build_carry(inputs: CarryInputs, budgets: CarryBudgets = CarryBudgets()) -> CarryPlan:
    """Given the inputs and budgets, return the planned carry and its decision logs.

    Raises PromptBudgetError when the required segments alone exceed `budgets.total_chars`.
    """
    warnings: list[str] = []
    ledger = _parsed_ledger(inputs, warnings)
    closing = redact(
        trailer(inputs.workspace, ledger_path=inputs.ledger_path, plan_path=inputs.plan_path)
    )
    notice = redact(missing_notice(inputs))
    # Texts already given space, in the planner's budget order: required, ledger, anchors.
    taken = [text for text in (inputs.discipline, notice, closing) if text]

    ledger_segment = _ledger_segment(inputs, ledger, budgets, taken, warnings)
    _claim(taken, ledger_segment, budgets.total_chars)

    rows = _anchor_rows(inputs, ledger)
    anchors_segment, anchors_shown = _anchors_segment(
        rows, remaining_chars(taken, budgets.total_chars)
    )
    _claim(taken, anchors_segment, budgets.total_chars)

    plan_segment = _plan_segment(inputs, budgets, taken)

    memory, excluded = _memory(inputs, budgets.memory)
    memory_segment = f"{MEMORY_HEADING}\n{memory.context}" if memory.context else ""

    segments = [
        PromptSegment("discipline", inputs.discipline, True, priority=0, budget_priority=0),
        PromptSegment("notice", notice, True, priority=1, budget_priority=0),
        PromptSegment("anchors", anchors_segment, False, priority=2, budget_priority=2),
        PromptSegment("ledger", ledger_segment, False, priority=3, budget_priority=1),
        PromptSegment("plan", plan_segment, False, priority=4, budget_priority=3),
        PromptSegment("memory", memory_segment, False, priority=5, budget_priority=4),
        PromptSegment("trailer", closing, True, priority=9, budget_priority=0),
    ]
    planned: PromptPlan = plan_prompt(segments, budget_chars=budgets.total_chars)
    return CarryPlan(
        text=planned.text,
        segment_decisions=planned.decisions,
        memory_decisions=memory.decisions,
        memory_excluded=excluded,
        anchors_shown=anchors_shown if _selected(planned, "anchors") else 0,
        anchors_total=len(rows),
        warnings=tuple(redact(warning) for warning in warnings),
        used_chars=planned.used_chars,
        budget_chars=budgets.total_chars,
    )


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


def _claim(taken: list[str], text: str, total_chars: int) -> None:
    """Given the texts that have space, add `text` when the planner will select it too."""
    if text and len(text) <= remaining_chars(taken, total_chars):
        taken.append(text)


def _selected(plan: PromptPlan, name: str) -> bool:
    return any(d.name == name and d.status == "selected" for d in plan.decisions)


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
    inputs: CarryInputs,
    ledger: Ledger | None,
    budgets: CarryBudgets,
    taken: Sequence[str],
    warnings: list[str],
) -> str:
    if inputs.ledger_text is None or ledger is None:
        return ""
    heading = redact(f"# Handoff ledger (`{inputs.ledger_path}`)")
    room = min(budgets.ledger_chars, remaining_chars(taken, budgets.total_chars) - len(heading) - 1)
    if ledger.sections:
        redacted = _redacted_ledger(ledger)
        body = _fit(
            lambda budget: truncate_ledger(redacted, budget, path=inputs.ledger_path).text, room
        )
        if not body.strip():  # no room at all: the planner drops the whole, with its reason
            whole = "\n\n".join(
                render_section(section, section.items, None) for section in redacted.sections
            )
            return f"{heading}\n{whole}"
        return f"{heading}\n{body}"
    text, offset = _strip_blank_lines(redact(inputs.ledger_text))
    if not text.strip():
        return ""
    warnings.append("ledger: no known section headings; carrying its first lines")
    body = _fit(
        lambda budget: _cut_lines(text, budget, path=inputs.ledger_path, offset=offset), room
    )
    return f"{heading}\n{body if body.strip() else text}"


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


def _plan_segment(inputs: CarryInputs, budgets: CarryBudgets, taken: Sequence[str]) -> str:
    if inputs.plan_text is None:
        return ""
    parts = _redacted_plan(split_plan(inputs.plan_text))
    if not parts.current.strip():
        return ""
    heading = redact(f"# Plan: current state (`{inputs.plan_path}`)")
    room = remaining_chars(taken, budgets.total_chars) - len(heading) - 1
    body = _fit(
        lambda budget: plan_current_for_carry(parts, budget, path=inputs.plan_path),
        min(room, budgets.plan_chars),
    )
    return f"{heading}\n{body if body.strip() else parts.current}"


def _redacted_plan(parts: PlanParts) -> PlanParts:
    units = tuple(dataclasses.replace(unit, text=redact(unit.text)) for unit in parts.current_units)
    return dataclasses.replace(
        parts, current=join_units(units), history=redact(parts.history), current_units=units
    )


def _anchor_rows(inputs: CarryInputs, ledger: Ledger | None) -> tuple[AnchorRow, ...]:
    entries: list[Entry] = []
    if inputs.plan_text is not None:
        entries.extend(parse_entries(inputs.plan_path, inputs.plan_text))
    if inputs.ledger_text is not None and ledger is not None:
        first_line = ledger.title_line or 1  # older duplicate ledgers above the last title
        entries.extend(
            entry
            for entry in parse_entries(inputs.ledger_path, inputs.ledger_text)
            if entry.line_end >= first_line
        )
    return tuple(
        dataclasses.replace(row, l0=redact(row.l0), path=redact(row.path))
        for row in anchor_rows(entries)
    )


def _anchors_segment(rows: Sequence[AnchorRow], room: int) -> tuple[str, int]:
    """Given all rows and the room left, return the table with as many rows as fit."""
    if not rows:
        return "", 0
    full = f"{ANCHORS_HEADING}\n{render_anchor_table(rows)}"
    if len(full) <= room:
        return full, len(rows)
    low, high = 0, len(rows) - 1  # the most rows whose table and "+N more" line fit
    while low < high:
        middle = (low + high + 1) // 2
        if len(_partial_table(rows, middle)) <= room:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return full, 0  # nothing fits: the planner drops the whole table with a reason
    return _partial_table(rows, low), low


def _partial_table(rows: Sequence[AnchorRow], count: int) -> str:
    rest = len(rows) - count
    return (
        f"{ANCHORS_HEADING}\n{render_anchor_table(rows[:count])}\n"
        f"+{rest} more anchors (no room); `carryd recall` finds them."
    )


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


def _strip_blank_lines(text: str) -> tuple[str, int]:
    """Given text, return it without leading/trailing blank lines and how many led."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = len(lines)
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end]), start


def _cut_lines(text: str, budget: int, *, path: str, offset: int = 0) -> str:
    """Given text whose first line is line `offset + 1` of `path`, return its longest prefix of
    whole lines within budget followed by a pointer to the rest ("" when not even that fits)."""
    if len(text) <= budget:
        return text
    lines = text.split("\n")
    last = offset + len(lines)
    best = ""
    used = -1  # chars of the kept lines joined, without a trailing newline
    for kept in range(len(lines)):
        pointer = f"+{len(lines) - kept} more lines → {path}:{offset + kept + 1}-{last}"
        size = used + 1 + len(pointer)
        if size > budget:
            break
        best = "\n".join([*lines[:kept], pointer])
        used += len(lines[kept]) + 1
    return best
