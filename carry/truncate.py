"""Given a parsed ledger and a character budget, return its weighted cut (seed P6).

Budget rule over the sections present (weights from `ledger.SECTION_TABLE`: tried .35,
next .30, goal .20, status .15; sections under a heading of the ledger's own weigh least):

1. Each section is first guaranteed its floor: its heading, a brief dead-end line for every
   failed attempt and every item another one refers to, and its pointer — so no section and
   no failed attempt disappears while the budget can hold them all. What remains is shared
   by weight, `floor(weight × rest)`. A section whose full text fits its floor plus share
   is kept whole; what it leaves, the shares of absent sections and the rounding remainder
   form the surplus.
2. The other sections, highest weight first, each get their share plus the surplus, and pass
   on what they do not use. Inside a section each item is shown in full, as a one-line
   summary `… (L40-44)` (carry.summary), or not at all (counted in the section's pointer):
   - every attempt (a failure anywhere, any item under "tried") and every item another item
     refers to ("方案 B", "attempt 12") first gets at least its one-line dead-end summary;
   - then items are shown in full in priority order (carry.recency: sidecar weight, then open
     before done before superseded, then newest first);
   - finally, what all sections leave goes, highest weight first, to items not shown: in
     full where they fit, else as their one-line summary, in priority order.

Items are always displayed in document order, and sections in the ledger's own order. A
section with items not shown in full ends with one line: `+N more → path:lines` for the
items left out and the `carryd expand` ids of the entries that hold them. Every char counts
(headings, pointers, blank lines between sections) and `chars <= budget` always: when not even
a section's heading and pointer fit it is left out (`omitted=True`). The file is never changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from carryd.carry.ledger import WEIGHTS, Ledger, LedgerItem, LedgerSection, SectionKind
from carryd.carry.recency import ItemFacts, item_facts, ledger_year, priority_order, with_references
from carryd.carry.summary import summary_line

SECTION_SEPARATOR = "\n\n"
MAX_POINTER_RUNS = 3
MAX_POINTER_IDS = 3
MAX_PACKING_PASSES = 3

# How an item is shown, most to least: whole, one-line summary, brief line, not at all.
ItemShow = Literal["full", "summary", "brief", "omitted"]
EntrySpan = tuple[int, int, str]  # an index entry's first and last line and its id


@dataclass(frozen=True)
class SectionCut:
    kind: SectionKind
    budget: int  # chars this section was allowed (its share plus surplus passed on to it)
    used: int  # chars of its rendered block (heading, items, pointer)
    kept: int  # items shown in full
    dropped: int  # items not shown (counted in the pointer)
    pointer: str | None  # the closing pointer line, when any item is not shown in full
    share: int = 0  # floor(weight × budget)
    omitted: bool = False  # not even heading + pointer fitted: the whole section is left out
    summarised: int = 0  # items shown as a one-line summary
    heading: str = ""
    shows: tuple[ItemShow, ...] = ()  # per item, document order


@dataclass(frozen=True)
class LedgerCut:
    text: str
    sections: tuple[SectionCut, ...]  # the ledger's section order
    chars: int


def line_span(line_start: int, line_end: int) -> str:
    """Given an inclusive 1-based line range, return "12-14" (or "12" for one line)."""
    return str(line_start) if line_start == line_end else f"{line_start}-{line_end}"


def pointer_line(
    count: int, path: str, runs: Sequence[tuple[int, int]], ids: Sequence[str] = ()
) -> str:
    """Given how many items were left out, their line runs and the ids that hold the section's
    cut items, return the pointer line (more than three runs collapse into one span)."""
    if len(runs) > MAX_POINTER_RUNS:
        runs = [(runs[0][0], runs[-1][1])]
    expand = f"`carryd expand {' '.join(ids[:MAX_POINTER_IDS])}`" if ids else ""
    if count:
        spans = ",".join(line_span(start, end) for start, end in runs)
        line = f"+{count} more → {path}:{spans}"
        return f"{line} · {expand}" if expand else line
    return f"Summarised items in full: {expand or path}"


def _is_list(item: LedgerItem) -> bool:
    return item.block == "list"


def render_section(
    section: LedgerSection,
    items: Sequence[LedgerItem],
    pointer: str | None,
    summaries: Sequence[str | None] | None = None,
) -> str:
    """Given a section, the items to show (a summary line replaces an item's text where
    given) and an optional pointer, return the section's block."""
    parts: list[str] = [section.heading] if section.heading else []
    previous: LedgerItem | None = None
    body: list[str] = []
    for position, item in enumerate(items):
        if previous is not None:
            body.append("\n" if _is_list(previous) and _is_list(item) else "\n\n")
        shown = summaries[position] if summaries is not None else None
        body.append(shown if shown is not None else item.text)
        previous = item
    if body:
        parts.append("".join(body))
    if pointer is not None:
        parts.append(pointer)
    return "\n".join(parts)


@dataclass(frozen=True)
class _Section:
    """One section with everything packing needs, computed once."""

    section: LedgerSection
    facts: tuple[ItemFacts, ...]
    summaries: tuple[str, ...]  # one-line summary of each item, with its "(Lx-y)"
    briefs: tuple[str, ...]  # the shorter line, with its "(Lx-y)"
    order: tuple[int, ...]  # priority order
    rescue: tuple[int, ...]  # items that keep at least their summary, in priority order
    floor: tuple[int, ...]  # the failed attempts and referenced items: room set aside first
    ids: tuple[str | None, ...]  # the entry id holding each item

    def render(self, shows: Sequence[ItemShow], path: str) -> str:
        items = self.section.items
        shown = [index for index, show in enumerate(shows) if show != "omitted"]
        lines = [self.line(index, shows[index]) for index in shown]
        return render_section(
            self.section, [items[index] for index in shown], self.pointer(shows, path), lines
        )

    def line(self, index: int, show: ItemShow) -> str | None:
        """Given an item and how it is shown, return its summary line (None: its text)."""
        if show == "summary":
            return self.summaries[index]
        if show == "brief":
            return self.briefs[index]
        return None

    @property
    def stale(self) -> tuple[int, ...]:
        """The items that are history: done or superseded, and neither an attempt (a dead end
        is a lesson, never stale) nor an item another one refers to."""
        kept = set(self.floor) | set(self.rescue)
        return tuple(
            index
            for index, fact in enumerate(self.facts)
            if fact.state != "open" and index not in kept
        )

    def live(self) -> list[ItemShow]:
        """Every item shown whole except the stale ones (left to the pointer)."""
        stale = set(self.stale)
        return ["omitted" if index in stale else "full" for index in range(len(self.facts))]

    def least(self, index: int, show: ItemShow) -> ItemShow:
        """Given an item and a summary form, return that form, or "full" when it is no longer
        than the item itself."""
        line = self.line(index, show) or ""
        return "full" if len(self.section.items[index].text) <= len(line) else show

    def pointer(self, shows: Sequence[ItemShow], path: str) -> str | None:
        if all(show == "full" for show in shows):
            return None
        items = self.section.items
        runs: list[tuple[int, int]] = []
        previous_omitted = False
        for index, show in enumerate(shows):
            if show == "omitted":
                if previous_omitted:
                    runs[-1] = (runs[-1][0], items[index].line_end)
                else:
                    runs.append((items[index].line_start, items[index].line_end))
            previous_omitted = show == "omitted"
        ids: list[str] = []
        for index, show in enumerate(shows):
            entry_id = self.ids[index]
            if show != "full" and entry_id is not None and entry_id not in ids:
                ids.append(entry_id)
        count = sum(1 for show in shows if show == "omitted")
        return pointer_line(count, path, runs, ids)


def _prepare(ledger: Ledger, entries: Sequence[EntrySpan]) -> list[_Section]:
    year = ledger_year(ledger.title)
    raw = [
        (section.items, item_facts(section.items, section.kind, year=year))
        for section in ledger.sections
    ]
    facts_all = with_references(raw)
    referenced = {label for facts in facts_all for fact in facts for label in fact.references}
    prepared: list[_Section] = []
    for section, facts in zip(ledger.sections, facts_all, strict=True):
        items = section.items
        order = tuple(priority_order(items, facts))
        summaries = tuple(
            f"{summary_line(item.text, dead_end=_dead_end(item, section.kind))} "
            f"(L{line_span(item.line_start, item.line_end)})"
            for item in items
        )
        briefs = tuple(
            f"{summary_line(item.text, dead_end=_dead_end(item, section.kind), brief=True)} "
            f"(L{line_span(item.line_start, item.line_end)})"
            for item in items
        )
        # Failed attempts first, then the other attempts and referenced items, each by priority.
        rescue = tuple(
            sorted(
                (
                    index
                    for index in order
                    if _dead_end(items[index], section.kind) or facts[index].label in referenced
                ),
                key=lambda index: (items[index].kind != "failure", order.index(index)),
            )
        )
        floor = tuple(
            index
            for index in rescue
            if items[index].kind == "failure" or facts[index].label in referenced
        )
        ids = tuple(_entry_id(entries, item.line_start) for item in items)
        prepared.append(_Section(section, facts, summaries, briefs, order, rescue, floor, ids))
    return prepared


def _dead_end(item: LedgerItem, section: SectionKind) -> bool:
    """An attempt: marked as failed anywhere, or any item under "tried" (whatever its marker —
    "worked as a mitigation until …" is still a lesson the next context must not relearn)."""
    return item.kind == "failure" or (section == "tried" and item.kind != "meta")


def _entry_id(entries: Sequence[EntrySpan], line: int) -> str | None:
    for start, end, entry_id in entries:
        if start <= line <= end:
            return entry_id
    return None


def _fill(
    prepared: _Section,
    shows: list[ItemShow],
    budget: int,
    path: str,
    *,
    step: Literal["rescue", "rescued", "full", "summary"],
) -> None:
    """Given the current choice, upgrade items in priority order while the block fits.

    rescue: the items to rescue get at least a brief line; rescued: their brief lines become
    summaries; full: any item not shown whole is shown whole, else as its summary, else as a
    brief line; summary: an item left out, or shown as a brief line, gets its summary (else a
    brief line).
    """
    rescuing = step in ("rescue", "rescued")
    candidates: Sequence[int] = prepared.rescue if rescuing else prepared.order
    passes = MAX_PACKING_PASSES if step == "full" else 1
    for pass_number in range(passes):
        changed = False
        whole = True  # first pass: items are shown whole in priority order until one does
        # not fit; later passes spend what is left on any item, still in priority order
        for index in candidates:
            before = shows[index]
            if step == "full":
                # An item that does not fit whole still gets its line, and no item after it
                # in priority order is shown whole: priority is priority.
                tries = cast("list[ItemShow]", {  # the literals are ItemShows; mypy infers str
                    "full": [],
                    "summary": ["full"] if whole else [],
                    "brief": ["full", "summary"] if whole else ["summary"],
                    "omitted": ["full", "summary", "brief"] if whole else ["summary", "brief"],
                }[before])
            elif step == "rescue":
                tries = ["brief"] if before == "omitted" else []
            elif step == "rescued":
                tries = ["summary"] if before == "brief" else []
            else:
                later = {"omitted": ["summary", "brief"], "brief": ["summary"]}.get(before, [])
                tries = cast("list[ItemShow]", later)
            for wanted in tries:
                shows[index] = prepared.least(index, wanted) if wanted != "full" else "full"
                if len(prepared.render(shows, path)) <= budget:
                    changed = True
                    break
                shows[index] = before
            if step == "full" and shows[index] != "full" and pass_number == 0:
                whole = False
        if not changed:
            break


def _weight_order(prepared: Sequence[_Section]) -> list[int]:
    return sorted(
        range(len(prepared)), key=lambda index: (-WEIGHTS[prepared[index].section.kind], index)
    )


def _floors(prepared: Sequence[_Section], capacity: int, path: str) -> list[int]:
    """Given the sections and the capacity, return the room set aside for each: its heading
    and pointer for every section (when they all fit), then its dead-end lines, highest
    weight first, for the sections whose lines still fit."""
    separator = len(SECTION_SEPARATOR)
    minimal = [
        len(p.render(["omitted"] * len(p.section.items), path)) + separator for p in prepared
    ]
    if sum(minimal) > capacity:
        return [0] * len(prepared)
    floors = list(minimal)
    left = capacity - sum(minimal)
    for index in _weight_order(prepared):
        extra = len(prepared[index].render(_floor(prepared[index]), path)) + separator
        extra -= minimal[index]
        if 0 < extra <= left:
            floors[index] += extra
            left -= extra
    return floors


def _floor(prepared: _Section) -> list[ItemShow]:
    """Given a section, return its least choice: a dead-end line (or the item, when that is
    shorter) for each item to rescue, every other item left to the pointer."""
    shows: list[ItemShow] = ["omitted"] * len(prepared.section.items)
    for index in prepared.floor:
        shows[index] = prepared.least(index, "brief")
    return shows


def _pack(prepared: _Section, budget: int, path: str) -> tuple[list[ItemShow], str | None]:
    """Given a section and its budget, return the rescue-then-full choice and its block."""
    items = prepared.section.items
    shows: list[ItemShow] = ["full"] * len(items)
    full = prepared.render(shows, path)
    if len(full) <= budget:
        return shows, full
    shows = ["omitted"] * len(items)
    if len(prepared.render(shows, path)) > budget:
        return shows, None
    _fill(prepared, shows, budget, path, step="rescue")
    _fill(prepared, shows, budget, path, step="rescued")
    _fill(prepared, shows, budget, path, step="full")
    return shows, prepared.render(shows, path)


def _cut(
    prepared: _Section,
    shows: Sequence[ItemShow],
    block: str | None,
    budget: int,
    share: int,
    path: str,
) -> SectionCut:
    section = prepared.section
    if block is None:
        return SectionCut(
            section.kind,
            budget,
            0,
            0,
            len(section.items),
            None,
            share,
            omitted=True,
            heading=section.heading,
            shows=tuple("omitted" for _ in section.items),
        )
    return SectionCut(
        section.kind,
        budget,
        len(block),
        sum(1 for show in shows if show == "full"),
        sum(1 for show in shows if show == "omitted"),
        prepared.pointer(shows, path),
        share,
        summarised=sum(1 for show in shows if show in ("summary", "brief")),
        heading=section.heading,
        shows=tuple(shows),
    )


def floor_chars(ledger: Ledger, *, path: str, entries: Sequence[EntrySpan] = ()) -> int:
    """Given a ledger, return the chars of its dead-end floor (every section's heading and
    pointer, each failed attempt and referenced item as its one-line summary)."""
    prepared = _prepare(ledger, entries)
    blocks = []
    for section in prepared:
        shows: list[ItemShow] = ["omitted"] * len(section.section.items)
        for index in section.floor:
            shows[index] = section.least(index, "summary")
        blocks.append(section.render(shows, path))
    return len(SECTION_SEPARATOR.join(blocks))


def _spend_left(
    prepared: _Section,
    shows: list[ItemShow],
    blocks: list[str | None],
    allowed: list[int],
    index: int,
    surplus: int,
    path: str,
) -> int:
    """Given a placed section and what the sections left, show more of it (whole items, then
    summaries, in priority order) within its block plus that surplus; return what is left."""
    current = len(blocks[index] or "")
    room = current + max(0, surplus)
    _fill(prepared, shows, room, path, step="full")
    _fill(prepared, shows, room, path, step="summary")
    block = prepared.render(shows, path)
    blocks[index] = block
    allowed[index] = max(allowed[index], room)
    return surplus - (len(block) - current)


def truncate_ledger(
    ledger: Ledger, budget_chars: int, *, path: str, entries: Sequence[EntrySpan] = ()
) -> LedgerCut:
    """Given a ledger, a char budget, the ledger's root-relative path and (optionally) the
    index entries of the ledger file, return the cut text.

    See the module docstring for the budget rule; `chars <= max(budget_chars, 0)` always.
    """
    prepared = _prepare(ledger, entries)
    count = len(prepared)
    separator = len(SECTION_SEPARATOR)
    # Each block is charged its separator; the last one shown needs none, hence "+ 2".
    capacity = max(budget_chars, 0) + separator
    # Every section's floor — its heading, a dead-end line for each attempt and a pointer —
    # is set aside before the weighted shares, so no section and no failed attempt vanishes
    # while the budget can hold them all.
    floors = _floors(prepared, capacity, path)
    base = capacity - sum(floors)
    shares = [floors[i] + int(WEIGHTS[p.section.kind] * base) for i, p in enumerate(prepared)]
    surplus = capacity - sum(shares)

    shows: list[list[ItemShow]] = [["full"] * len(p.section.items) for p in prepared]
    blocks: list[str | None] = [None] * count
    allowed: list[int] = [0] * count
    waiting: list[int] = []
    trimmed: list[int] = []  # kept without their stale items, which come back last
    order = _weight_order(prepared)
    whole = SECTION_SEPARATOR.join(p.render(shows[i], path) for i, p in enumerate(prepared))
    for index in order:
        full = prepared[index].render(shows[index], path)
        if len(whole) > budget_chars and prepared[index].stale:
            # Over budget, history yields first: a section's done and superseded items get
            # no share of their own; they come back only from what every section leaves.
            shows[index] = prepared[index].live()
            full = prepared[index].render(shows[index], path)
            if shares[index] > 0 and len(full) + separator <= shares[index]:
                trimmed.append(index)
            else:
                shows[index] = ["full"] * len(prepared[index].section.items)
        if shares[index] > 0 and len(full) + separator <= shares[index]:
            blocks[index] = full
            allowed[index] = shares[index] - separator
            surplus += shares[index] - len(full) - separator
        else:
            waiting.append(index)

    # The known sections first (their own room, then what every section left, highest
    # weight first); the ledger's own sections only get what the known ones leave.
    known = [index for index in waiting if prepared[index].section.kind != "other"]
    others = [index for index in waiting if prepared[index].section.kind == "other"]
    for group in (known, others):
        for index in group:
            room = shares[index] + max(0, surplus)
            shows[index], blocks[index] = _pack(prepared[index], room - separator, path)
            allowed[index] = room - separator
            used = len(blocks[index] or "") + separator if blocks[index] is not None else 0
            surplus += shares[index] - used
        for index in group:  # what is left, highest weight first: more items
            if blocks[index] is None or "omitted" not in shows[index]:
                continue
            section = prepared[index]
            surplus = _spend_left(section, shows[index], blocks, allowed, index, surplus, path)

    for index in trimmed:  # the stale items, highest weight first, from what is left
        section = prepared[index]
        surplus = _spend_left(section, shows[index], blocks, allowed, index, surplus, path)

    shown = [block for block in blocks if block is not None]
    text = SECTION_SEPARATOR.join(shown)
    cuts = tuple(
        _cut(p, shows[i], blocks[i], allowed[i], shares[i] - separator, path)
        for i, p in enumerate(prepared)
    )
    return LedgerCut(text=text, sections=cuts, chars=len(text))
