"""Given a parsed ledger and a character budget, return its weighted cut (seed P6).

Budget rule, in two passes over the sections present:

1. Each section gets a share `floor(weight × budget)` (tried .35, next .30, goal .20,
   status .15). A section whose full text fits its share is kept whole; what it leaves, the
   shares of absent sections and the rounding remainder form the surplus.
2. The remaining sections, highest weight first, each get their share plus the whole surplus;
   a section keeps whole items that fit (greedy in priority order — sidecar weight, then
   document order — so a smaller later item may fill the room a big one leaves) and passes
   what it does not use on to the next.

So the cuts land on the lowest-weight sections first, and no section is cut below its share
while a lower-weight one keeps more than its own share. A cut section ends with a pointer line
`+3 more → proj/handoff/LEDGER.md:40-58` naming the dropped items' lines. Every char of the
output counts — headings, pointers, the blank lines between sections — and `chars <= budget`
always: when not even a section's heading and pointer fit, the section is left out and its
`SectionCut` says so (`omitted=True`). Sections are displayed in the document's canonical
order (status, goal, tried, next), whatever the budget order. The ledger file is never changed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from carryd.carry.ledger import SECTION_ORDER, Ledger, LedgerItem, LedgerSection, SectionKind

WEIGHTS: dict[SectionKind, float] = {"tried": 0.35, "next": 0.30, "goal": 0.20, "status": 0.15}
BUDGET_ORDER: tuple[SectionKind, ...] = ("tried", "next", "goal", "status")
SECTION_SEPARATOR = "\n\n"
MAX_POINTER_RUNS = 3


@dataclass(frozen=True)
class SectionCut:
    kind: SectionKind
    budget: int  # chars this section was allowed (its share plus surplus passed on to it)
    used: int  # chars of its rendered block (heading, kept items, pointer)
    kept: int  # items kept
    dropped: int  # items dropped
    pointer: str | None  # the "+N more → path:lines" line, when items were dropped
    share: int = 0  # floor(weight × budget)
    omitted: bool = False  # not even heading + pointer fitted: the whole section is left out


@dataclass(frozen=True)
class LedgerCut:
    text: str
    sections: tuple[SectionCut, ...]  # canonical order, one per section present in the ledger
    chars: int


def line_span(line_start: int, line_end: int) -> str:
    """Given an inclusive 1-based line range, return "12-14" (or "12" for one line)."""
    return str(line_start) if line_start == line_end else f"{line_start}-{line_end}"


def pointer_line(count: int, path: str, runs: Sequence[tuple[int, int]]) -> str:
    """Given how many items were dropped and their line runs, return the pointer line.

    More than three runs collapse into one span from the first to the last dropped line.
    """
    if len(runs) > MAX_POINTER_RUNS:
        runs = [(runs[0][0], runs[-1][1])]
    spans = ",".join(line_span(start, end) for start, end in runs)
    return f"+{count} more → {path}:{spans}"


def _join_items(items: Sequence[LedgerItem]) -> str:
    parts: list[str] = []
    previous: LedgerItem | None = None
    for item in items:
        if previous is not None:
            tight = previous.block == "list" and item.block == "list"
            parts.append("\n" if tight else "\n\n")
        parts.append(item.text)
        previous = item
    return "".join(parts)


def render_section(section: LedgerSection, items: Sequence[LedgerItem], pointer: str | None) -> str:
    """Given a section, the items to show and an optional pointer, return the section's block."""
    block = section.heading
    if items:
        block += "\n" + _join_items(items)
    if pointer is not None:
        block += "\n" + pointer
    return block


def _dropped_runs(
    items: Sequence[LedgerItem], kept: Sequence[int]
) -> tuple[int, list[tuple[int, int]]]:
    """Given the items and the ascending indices kept, return the dropped count and line runs."""
    runs: list[tuple[int, int]] = []
    start = 0
    for index in [*kept, len(items)]:
        if index > start:
            runs.append((items[start].line_start, items[index - 1].line_end))
        start = index + 1
    return len(items) - len(kept), runs


def _priority(items: Sequence[LedgerItem]) -> list[int]:
    if all(item.weight is None for item in items):
        return list(range(len(items)))
    return sorted(range(len(items)), key=lambda index: (-(items[index].weight or 0.0), index))


def _separator(items: Sequence[LedgerItem], before: int, after: int) -> int:
    return 1 if items[before].block == "list" and items[after].block == "list" else 2


def _added_length(items: Sequence[LedgerItem], kept: Sequence[int], index: int) -> int:
    """Given the ascending kept indices, return how much showing item `index` adds."""
    position = bisect.bisect_left(kept, index)
    previous = kept[position - 1] if position > 0 else None
    following = kept[position] if position < len(kept) else None
    added = len(items[index].text)
    if previous is None and following is None:
        return added + 1  # the newline after the heading
    if previous is None:
        assert following is not None
        return added + _separator(items, index, following)
    if following is None:
        return added + _separator(items, previous, index)
    return (
        added
        + _separator(items, previous, index)
        + _separator(items, index, following)
        - _separator(items, previous, following)
    )


def _pointer_for(items: Sequence[LedgerItem], kept: Sequence[int], path: str) -> str | None:
    count, runs = _dropped_runs(items, kept)
    return pointer_line(count, path, runs) if count else None


MAX_PACKING_PASSES = 3


def cut_section(
    section: LedgerSection, budget: int, *, path: str, share: int = 0
) -> tuple[str | None, SectionCut]:
    """Given a section and a char budget, return its block (None when left out) and its cut.

    Whole items, greedily in priority order (sidecar weight, then document order), each taken
    when the block with it — pointer included — still fits; a few passes repeat this (the
    pointer shrinks as items come in), so a small later item fills the room a big one leaves.
    """
    items = section.items
    full = render_section(section, items, None)
    if len(full) <= budget:
        return full, SectionCut(section.kind, budget, len(full), len(items), 0, None, share)
    kept: list[int] = []  # ascending indices of the items shown
    body = len(section.heading)  # heading + shown items + their separators
    nothing = _pointer_for(items, kept, path)
    if body + (1 + len(nothing) if nothing else 0) > budget:
        cut = SectionCut(section.kind, budget, 0, 0, len(items), None, share, omitted=True)
        return None, cut
    order = _priority(items)
    for _ in range(MAX_PACKING_PASSES):
        changed = False
        for index in order:
            position = bisect.bisect_left(kept, index)
            if position < len(kept) and kept[position] == index:
                continue
            added = _added_length(items, kept, index)
            if body + added > budget:
                continue
            kept.insert(position, index)
            pointer = _pointer_for(items, kept, path)
            if body + added + (1 + len(pointer) if pointer else 0) <= budget:
                body += added
                changed = True
            else:
                kept.pop(position)
        if not changed:
            break
    pointer = _pointer_for(items, kept, path)
    shown = [items[index] for index in kept]
    block = render_section(section, shown, pointer)
    dropped = len(items) - len(shown)
    return block, SectionCut(section.kind, budget, len(block), len(shown), dropped, pointer, share)


def truncate_ledger(ledger: Ledger, budget_chars: int, *, path: str) -> LedgerCut:
    """Given a ledger, a char budget and the ledger's root-relative path, return the cut text.

    See the module docstring for the budget rule; `chars <= max(budget_chars, 0)` always.
    """
    by_kind: dict[SectionKind, LedgerSection] = {}
    for section in ledger.sections:
        by_kind.setdefault(section.kind, section)
    # Each block is charged its separator; the last one shown needs none, hence "+ 2".
    separator = len(SECTION_SEPARATOR)
    capacity = max(budget_chars, 0) + separator
    shares = {kind: int(WEIGHTS[kind] * capacity) for kind in BUDGET_ORDER}
    surplus = capacity - sum(shares[kind] for kind in by_kind)

    blocks: dict[SectionKind, str | None] = {}
    cuts: dict[SectionKind, SectionCut] = {}
    waiting: list[SectionKind] = []
    for kind in BUDGET_ORDER:
        if kind not in by_kind:
            continue
        full = render_section(by_kind[kind], by_kind[kind].items, None)
        if len(full) + separator <= shares[kind]:
            blocks[kind] = full
            cuts[kind] = SectionCut(
                kind,
                shares[kind] - separator,
                len(full),
                len(by_kind[kind].items),
                0,
                None,
                shares[kind] - separator,
            )
            surplus += shares[kind] - len(full) - separator
        else:
            waiting.append(kind)
    for kind in waiting:
        allowed = shares[kind] + surplus
        block, cut = cut_section(
            by_kind[kind], allowed - separator, path=path, share=shares[kind] - separator
        )
        blocks[kind] = block
        cuts[kind] = cut
        surplus = allowed - (len(block) + separator if block is not None else 0)

    shown = [blocks[kind] for kind in SECTION_ORDER if blocks.get(kind) is not None]
    text = SECTION_SEPARATOR.join(block for block in shown if block is not None)
    return LedgerCut(
        text=text,
        sections=tuple(cuts[kind] for kind in SECTION_ORDER if kind in cuts),
        chars=len(text),
    )
