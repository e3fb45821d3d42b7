"""Given a workspace's carry inputs, return the carry's content segments and their decisions.

`render.build_carry` lays the carry out and the planner sizes it; this module builds what goes
in it: the ledger, the plan's current state and its history (anchors) as shrinkable segments
with their `fit` functions, and the recalled-memory segment with its S15 decisions. Every text
is redacted (I3) before it is measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from carryd.carry.anchors import AnchorRow, history_rows
from carryd.carry.budgets import CarryBudgets
from carryd.carry.ledger import Ledger, SectionNames
from carryd.carry.outline import from_line, parse_outline
from carryd.carry.outline_pack import pack_outline, whole_outline
from carryd.carry.plan import (
    PlanParts,
    demoted,
    history_items,
    join_units,
    plan_current_for_carry,
    plan_units,
    split_plan,
)
from carryd.carry.planner import PromptSegment
from carryd.carry.select import (
    MemoryContextCandidate,
    MemoryContextPlan,
    MemorySelectionPolicy,
    Provenance,
    authority_from_location,
    candidates_from_recall,
    select_memory_context,
)
from carryd.carry.spans import EntrySpan, line_span
from carryd.carry.standing import note_relevance, standing_rules
from carryd.index.entries import Entry, parse_entries
from carryd.index.recall import RecallHit
from carryd.index.redact import redact

HISTORY_HEADING = "# Plan history"
ANCHORS_HEADING = "# Plan history, not shown above (`carryd expand <id>` prints an entry)"
MEMORY_HEADING = "# Recalled memory (notes for the goal and the next steps)"


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
    # Root-level memory entries (MEMORY.md, notes/…): the user's standing defaults, carried
    # every time at `user_default` authority within the memory budget (issue 10 item 5).
    root_defaults: tuple[Entry, ...] = ()
    # The memory root, absolute, named in the trailer's commands so they run as written from
    # any folder (issue 10 item 6). None: the commands rely on root discovery.
    root: str | None = None


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


@dataclass(frozen=True)
class LedgerParts:
    """What the ledger segment and its floor are built from, computed once per carry: the
    redacted ledger (lines kept) and the index entries of the ledger file."""

    redacted: Ledger
    entries: tuple[EntrySpan, ...]


def ledger_parts(inputs: CarryInputs, ledger: Ledger | None) -> LedgerParts | None:
    """Given the inputs and the parsed ledger, return its parts (None without a ledger)."""
    if inputs.ledger_text is None or ledger is None:
        return None
    entries = _entry_spans(inputs.ledger_path, inputs.ledger_text, ledger.title_line or 1)
    return LedgerParts(_redacted_ledger(ledger), entries)


def ledger_segment(
    inputs: CarryInputs, parts: LedgerParts | None, budgets: CarryBudgets
) -> PromptSegment:
    """Given the ledger's parts, return its shrinkable segment ("" when it says nothing).

    The ledger is read as an outline whatever its headings (`carryd.carry.outline`) and cut
    by `carryd.carry.outline_pack`: whole items, leads or pointers, never mid-sentence."""
    empty = PromptSegment("ledger", "", False, priority=2, budget_priority=3)
    if parts is None or inputs.ledger_text is None:
        return empty
    outline = parse_outline(redact(inputs.ledger_text), inputs.ledger_path)
    if parts.redacted.duplicate_titles and parts.redacted.title_line:
        outline = from_line(outline, parts.redacted.title_line)  # the last title: current
    if not outline.items:
        return empty  # headings alone say nothing: no empty segment
    heading = redact(f"# Handoff ledger (`{inputs.ledger_path}`)")
    whole = whole_outline(outline)

    def fit(room: int, _: Mapping[str, str]) -> str:
        budget = room - len(heading) - 1
        if len(whole) <= budget:
            return f"{heading}\n{whole}"
        body = _fit(lambda b: pack_outline(outline, b, path=inputs.ledger_path), budget)
        return f"{heading}\n{body}" if body.strip() else ""

    return PromptSegment(
        "ledger",
        f"{heading}\n{whole}",
        False,
        priority=2,
        budget_priority=3,
        fit=fit,
        max_chars=None,
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


PLAN_SHARE = 0.08  # of the carry's total: the ledger holds most of what a hand-off needs


def plan_segment(inputs: CarryInputs, budgets: CarryBudgets, *, total: int = 0) -> PromptSegment:
    """Given the inputs, return the plan's current state as a shrinkable segment. It gets
    space before the ledger: "where things stand" in a few lines is worth more than the
    ledger's oldest items, which yield first."""
    empty = PromptSegment("plan", "", False, priority=3, budget_priority=1)
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
        budget_priority=1,
        fit=fit,
        max_chars=_plan_cap(budgets, total) + len(heading) + 1,
    )


def _plan_cap(budgets: CarryBudgets, total: int) -> int:
    """Given the budgets and the carry's total, return the plan's cap: `plan_chars`, or its
    share of a smaller total."""
    return min(budgets.plan_chars, int(PLAN_SHARE * total)) if total else budgets.plan_chars


def plan_history_text(inputs: CarryInputs) -> str:
    """Given the inputs, return the plan's history in full under its heading — redacted,
    headings demoted — or "" when the plan has none."""
    if inputs.plan_text is None:
        return ""
    blocks = split_plan(inputs.plan_text).history_blocks
    units = tuple(
        dataclasses.replace(unit, text=redact(unit.text))
        for unit in demoted(plan_units(inputs.plan_text))
        if any(start <= unit.line_start and unit.line_end <= end for start, end in blocks)
    )
    if not units:
        return ""
    return redact(f"{HISTORY_HEADING} (`{inputs.plan_path}`)") + "\n" + join_units(units)


def _redacted_plan(parts: PlanParts) -> PlanParts:
    units = tuple(dataclasses.replace(unit, text=redact(unit.text)) for unit in parts.current_units)
    return dataclasses.replace(
        parts, current=join_units(units), history=redact(parts.history), current_units=units
    )


def plan_history_rows(inputs: CarryInputs) -> tuple[tuple[AnchorRow, ...], tuple[int, ...]]:
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


def anchors_segment(
    rows: Sequence[AnchorRow],
    newest_first: Sequence[int],
    budgets: CarryBudgets,
    *,
    history: str = "",
) -> PromptSegment:
    """Given the history rows and the history in full (`plan_history_text`), return the plan
    history block: it spends what the plan's current state leaves of the plan budget — the
    history in full when it fits (rows would only repeat it at a higher cost), else one row
    per entry, newest entries first, shown in document order."""
    table = _partial_table(rows, range(len(rows))) if rows else ""
    whole = history or table

    def fit(room: int, selected: Mapping[str, str]) -> str:
        cap = min(room, budgets.plan_chars - len(selected.get("plan", "")))
        if len(whole) <= cap:
            return whole
        if len(table) <= cap:
            return table
        chosen: list[int] = []
        for index in newest_first:
            trial = sorted([*chosen, index])
            if len(_partial_table(rows, trial)) <= cap:
                chosen = trial
        return _partial_table(rows, chosen) if chosen else ""

    return PromptSegment(
        "anchors", whole, False, priority=6, budget_priority=5, fit=fit if whole else None
    )


def history_line(row: AnchorRow) -> str:
    return f"- {' '.join(row.l0.split())} (L{line_span(row.line_start, row.line_end)})"


def _partial_table(rows: Sequence[AnchorRow], chosen: Iterable[int]) -> str:
    """Given the history rows and those to show (document order), return the block: one line
    per entry under its file and id, named once for a run of rows an entry holds together
    (a PLAN history is often one index entry: its id repeated on every row said nothing)."""
    lines = [ANCHORS_HEADING]
    previous: tuple[str, str] | None = None
    shown = 0
    for index in chosen:
        row = rows[index]
        if (row.id, row.path) != previous:
            lines.append(f"`{row.id}` in `{row.path}`:")
            previous = (row.id, row.path)
        lines.append(history_line(row))
        shown += 1
    rest = len(rows) - shown
    if rest:
        first, last = rows[0].line_start, rows[-1].line_end
        lines.append(f"+{rest} older entries → {rows[0].path}:{first}-{last}")
    return "\n".join(lines)


def memory_selection(
    inputs: CarryInputs, policy: MemorySelectionPolicy
) -> tuple[MemoryContextPlan, tuple[str, ...]]:
    """Given the inputs, return the S15 selection over the recall hits and the excluded ids.

    Hits on ledger or plan entries are already in the carry (ledger, plan, anchors); they only
    stay candidates when they name a slot, where they can decide a conflict (the ledger's
    explicit requirements are the current turn's authority). Root-level defaults are standing
    candidates with their whole text (an L0 abstract would cut a list of rules); a recall hit
    on one lends it its confidence and is not a candidate of its own.
    """
    carried = {inputs.ledger_path, inputs.plan_path}
    defaults = {entry.id: entry for entry in inputs.root_defaults}
    confidence: dict[str, float] = {}
    kept: list[RecallHit] = []
    excluded: list[str] = []
    for hit in inputs.recall_hits:
        if hit.id in defaults:
            confidence.setdefault(hit.id, float(hit.confidence))
        elif hit.path in carried and hit.slot is None:
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
    work = "\n".join(text for text in (inputs.plan_text, inputs.ledger_text) if text)
    rules = standing_rules(
        inputs.root_defaults, confidence, note_relevance(inputs.root_defaults, work)
    )
    standing = tuple(
        MemoryContextCandidate(
            memory_id=entry.id,
            text=redact(entry.text.strip()),
            user_scope=None,
            score=score,
            source_rank=len(kept) + position,
            provenance=Provenance(
                source_id=entry.id,
                path=entry.path,
                line_start=entry.line_start,
                line_end=entry.line_end,
            ),
            conflict_key=redact(entry.slot) if entry.slot else None,
            authority="user_default",
            standing=True,
        )
        for position, (entry, score) in enumerate(rules, start=1)
    )
    plan = select_memory_context(
        (*standing, *candidates), user_scope=inputs.workspace, policy=policy
    )
    return plan, tuple(excluded)


def memory_segment(inputs: CarryInputs, memory: MemoryContextPlan) -> PromptSegment:
    """Given the memory selection, return the recalled-memory segment: the relevance hits it
    selected under one heading ("" when there are none); planned atomically, never shrunk."""
    text = f"{MEMORY_HEADING}\n{memory.recalled}" if memory.recalled else ""
    return PromptSegment("memory", text, False, priority=5, budget_priority=4)


def rows_shown(text: str, rows: Sequence[AnchorRow]) -> int:
    """Given the carry's text and the history rows, return how many rows it shows."""
    return sum(1 for row in rows if history_line(row) in text)
