"""Given the text of a workspace's PLAN.md, return its current state and its history (seed P8).

Markers are headings (found with markdown-it, so fenced `#` lines do not count), compared
after the ledger's heading normalisation (numbering, emoji, colons, case dropped):

- current-state markers: 当前状态 / 当前 / 现状 / Current state / Current status / Current /
  Now / Status;
- history markers: any heading containing 历史 / 踩坑 / 归档 / 变更记录 / 更新日志 / 版本记录, or
  starting with History / Changelog / Change log / Version history / Release history /
  Release notes / Archive / Past / Lessons learned.

A marker starts a region that lasts until the next marker at the same or a shallower level,
or until any shallower heading (e.g. a new `#` after `## 历史`); unmarked sibling headings
stay in the region ("## 历史" followed by "## 2.2.5" and "## 2.2.4" is all history). A
marker nested inside another region is ignored ("### 2.2.5 当前状态" under "## 历史" is
history). Everything that is not history is the current state — the file's top until the first
marker too — so a plan without markers is all current.

A plan that fits its budget (3,000 chars by default) goes into the carry whole (`plan_units`):
history rows would only repeat it at a higher cost. Otherwise only the current state goes
into the carry in full (`plan_current_for_carry`), cut on block and line boundaries with a
"+N more lines → path:lines" pointer, its headings demoted one level so the plan's own `#`
title sits under the carry's heading; that plan's history is not injected in full:
`history_items` gives each history entry (a list item or paragraph) with its date — its own,
else its heading's — for the carry's anchor table.
`archive_plan` is the pure half of `carryd plan archive`: what moves, what remains, and a
losslessness check.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.dating import heading_key
from carryd.carry.ledger import Block, markdown_blocks, normalize_heading, source_lines
from carryd.carry.recency import DateKey, explicit_date
from carryd.carry.spans import line_span

PlanMode = Literal["current", "history"]

_CURRENT = re.compile(
    r"^(?:当前状态|当前|现状|current state|current status|current|now|right now|status)"
    r"(?:\W|$)"
)
_HISTORY = re.compile(
    r"历史|踩坑|归档|变更记录|更新日志|版本记录|経緯|履歴|変更履歴|이력|경과|변경 기록"
    r"|^(?:log|logbook|journal|historial|bitácora|verlauf|historique|histórico)(?:\W|$)"
    r"|^(?:history|changelog|change log|version history|release history|release notes"
    r"|archive|archived|past|lessons learned)(?:\W|$)"
)


@dataclass(frozen=True)
class PlanUnit:
    """A top-level block of the current state: its source lines and 1-based inclusive range."""

    text: str
    line_start: int
    line_end: int
    kind: Literal["heading", "list", "paragraph", "fence", "other", "rule"]

    @property
    def line_cuttable(self) -> bool:
        """Paragraphs, list items and the like may be cut between lines; fences may not."""
        return self.kind in ("paragraph", "list", "other")


@dataclass(frozen=True)
class PlanParts:
    current: str  # the current-state blocks, joined ("" when there are none)
    current_lines: tuple[int, int] | None  # first and last line of the current state
    history: str  # the history blocks' source lines, joined by a blank line
    history_blocks: tuple[tuple[int, int], ...]  # 1-based inclusive ranges, document order
    current_units: tuple[PlanUnit, ...] = ()


def heading_mode(heading_text: str) -> PlanMode | None:
    """Given a heading's text, return "current", "history" or None (not a marker)."""
    key = normalize_heading(heading_text)
    if _CURRENT.search(key):
        return "current"
    if _HISTORY.search(key):
        return "history"
    return None


DATED_SHARE = 0.6  # a section whose entries are this dated is a history, whatever its name
DATED_MIN = 3


def _dated_sections(blocks: Sequence[Block], lines: Sequence[str]) -> set[int]:
    """Given the blocks, return the indices of headings whose section is a dated log: at least
    `DATED_MIN` entries (list items, paragraphs or sub-headings), most of them dated
    (`## Log`, `## 経緯`, `## Verlauf` of `- 2026-11-03: …` lines or `### 2026-11-03` headings)."""
    year = next((int(m.group(0)) for m in [re.search(r"(?:19|20)\d\d", "\n".join(lines))] if m), 0)
    found: set[int] = set()
    for index, block in enumerate(blocks):
        if block.kind != "heading":
            continue
        entries = dated = 0
        under_sub = False  # inside a sub-heading: that heading is the entry, not its lines
        for inner in blocks[index + 1 :]:
            if inner.kind == "heading" and inner.heading_level <= block.heading_level:
                break
            if inner.kind == "heading":
                under_sub = True
                entries += 1
                dated += heading_key(inner.heading_text, year) is not None
            elif not under_sub and inner.kind not in ("comment", "rule", "fence"):
                entries += 1
                text = "\n".join(lines[inner.line_start - 1 : inner.line_end])
                dated += explicit_date(text, year=year) is not None
        if entries >= DATED_MIN and dated >= DATED_SHARE * entries and dated >= DATED_MIN:
            found.add(index)
    return found


_VERSION = re.compile(r"^v?\d+(?:\.\d+)+\b")


def _entry_heading(block: Block) -> bool:
    """Given a heading after a history's own, return whether it is one of its entries (a date,
    a number, a version: "## 2.2.5", "## 2026-09-01") rather than a new section."""
    title = block.heading_text.strip().lstrip("#*_ ")
    return bool(_VERSION.match(title)) or heading_key(block.heading_text) is not None


def _modes(blocks: Sequence[Block], lines: Sequence[str] = ()) -> list[PlanMode]:
    modes: list[PlanMode] = []
    mode: PlanMode = "current"
    mode_level: int | None = None  # None: the unmarked top of the file
    dated = _dated_sections(blocks, lines) if lines else set()
    for index, block in enumerate(blocks):
        if block.kind == "heading":
            level = block.heading_level
            if mode_level is not None and level < mode_level:
                mode, mode_level = "current", None
            marker = heading_mode(block.heading_text)
            if marker is None and index in dated:
                marker = "history"  # a section of dated entries is a history
            if marker is not None and (mode_level is None or level <= mode_level):
                mode, mode_level = marker, level
            elif mode == "history" and level == mode_level and not _entry_heading(block):
                mode, mode_level = "current", None  # "## Open questions" after the history
        modes.append(mode)
    return modes


def join_units(units: Sequence[PlanUnit]) -> str:
    """Given current-state units, return them joined as `PlanParts.current` is joined.

    Adjacent units (no blank line between them in the file) join with one newline, others
    with a blank line. A caller that rewrites unit texts (redaction) rebuilds `current` with it.
    """
    parts: list[str] = []
    previous: PlanUnit | None = None
    for unit in units:
        if previous is not None:
            parts.append("\n" if unit.line_start == previous.line_end + 1 else "\n\n")
        parts.append(unit.text)
        previous = unit
    return "".join(parts)


def split_plan(text: str) -> PlanParts:
    """Given PLAN.md's text, return its current state and history blocks."""
    lines = source_lines(text)
    blocks = markdown_blocks(text)
    modes = _modes(blocks, lines)
    history_runs: list[tuple[int, int]] = []
    units: list[PlanUnit] = []
    previous_mode: PlanMode | None = None
    for block, mode in zip(blocks, modes, strict=True):
        if mode == "history":
            if previous_mode == "history":
                history_runs[-1] = (history_runs[-1][0], block.line_end)
            else:
                history_runs.append((block.line_start, block.line_end))
        elif block.kind != "comment":
            units.append(
                PlanUnit(
                    "\n".join(lines[block.line_start - 1 : block.line_end]),
                    block.line_start,
                    block.line_end,
                    block.kind,
                )
            )
        previous_mode = mode
    history = "\n\n".join("\n".join(lines[start - 1 : end]) for start, end in history_runs)
    return PlanParts(
        current=join_units(units),
        current_lines=(units[0].line_start, units[-1].line_end) if units else None,
        history=history,
        history_blocks=tuple(history_runs),
        current_units=tuple(units),
    )


def plan_units(text: str) -> tuple[PlanUnit, ...]:
    """Given PLAN.md's text, return all of it — current state and history, comments left
    out — as units in document order (the whole plan, for a carry it fits whole)."""
    lines = source_lines(text)
    return tuple(
        PlanUnit(
            "\n".join(lines[block.line_start - 1 : block.line_end]),
            block.line_start,
            block.line_end,
            block.kind,
        )
        for block in markdown_blocks(text)
        if block.kind != "comment"
    )


@dataclass(frozen=True)
class HistoryItem:
    """One history entry of a plan: a list item or paragraph under a history heading."""

    text: str
    line_start: int
    line_end: int
    date: str | None  # the date as written, the item's own or else its nearest heading's
    recency: DateKey  # the date as a key, else the newest date above it; (0, 0, 0) for none


def history_items(text: str) -> tuple[HistoryItem, ...]:
    """Given PLAN.md's text, return its history entries in document order, each with a date.

    Headings are not entries (never a bare heading); a heading's date ("### 2026-09-01",
    "## 2.2.5 (9月1日)") dates the entries under it that have none of their own.
    """
    lines = source_lines(text)
    blocks = markdown_blocks(text)
    items: list[HistoryItem] = []
    heading_dates: dict[int, tuple[DateKey, str]] = {}  # level → the date of that heading
    newest: DateKey = (0, 0, 0)
    year = 0
    for block, mode in zip(blocks, _modes(blocks, lines), strict=True):
        if block.kind == "heading":
            for level in [level for level in heading_dates if level >= block.heading_level]:
                del heading_dates[level]
            found = explicit_date(f"- {block.heading_text}", year=year) or _date_anywhere(
                block.heading_text, year
            )
            if found is not None:
                heading_dates[block.heading_level] = found
                year = found[0][0] or year
            continue
        if mode != "history" or block.kind in ("comment", "rule"):
            continue
        body = "\n".join(lines[block.line_start - 1 : block.line_end])
        own = explicit_date(body, year=year)
        inherited = heading_dates[max(heading_dates)] if heading_dates else None
        found = own or inherited
        if found is not None:
            year = found[0][0] or year
        recency = found[0] if found is not None else newest
        newest = max(newest, recency)
        items.append(
            HistoryItem(
                body, block.line_start, block.line_end, found[1] if found else None, recency
            )
        )
    return tuple(items)


_ANY_DATE = re.compile(r"(?<!\d)(20\d{2})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?!\d)")


def _date_anywhere(text: str, year: int) -> tuple[DateKey, str] | None:
    match = _ANY_DATE.search(text)
    if match is None:
        return None
    key = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return (key, match.group(0)) if 1 <= key[1] <= 12 and 1 <= key[2] <= 31 else None


def demoted(units: Sequence[PlanUnit]) -> tuple[PlanUnit, ...]:
    """Given current-state units, return them with every ATX heading one level deeper, so the
    plan's own `#` title sits under the carry's `#` heading."""
    result: list[PlanUnit] = []
    for unit in units:
        if unit.kind == "heading" and unit.text.startswith("#") and not unit.text.startswith(
            "######"
        ):
            unit = PlanUnit("#" + unit.text, unit.line_start, unit.line_end, unit.kind)
        result.append(unit)
    return tuple(result)


def _current_spans(parts: PlanParts) -> list[tuple[int, int]]:
    """Given the parts, return the current state's line spans (history blocks split them)."""
    spans: list[tuple[int, int]] = []
    previous: PlanUnit | None = None
    for unit in parts.current_units:
        split = previous is None or any(
            previous.line_end < start <= unit.line_start for start, _ in parts.history_blocks
        )
        if split:
            spans.append((unit.line_start, unit.line_end))
        else:
            spans[-1] = (spans[-1][0], unit.line_end)
        previous = unit
    return spans


def _pointer(count: int, path: str, spans: Sequence[tuple[int, int]], first_line: int) -> str:
    runs = [(max(start, first_line), end) for start, end in spans if end >= first_line]
    if len(runs) > 3:
        runs = [(runs[0][0], runs[-1][1])]
    return f"+{count} more lines → {path}:" + ",".join(line_span(a, b) for a, b in runs)


def plan_current_for_carry(parts: PlanParts, budget_chars: int, *, path: str) -> str:
    """Given the plan's parts, a budget and PLAN.md's root-relative path, return the carry text.

    The current state whole when it fits; else its longest prefix of whole blocks (and whole
    lines of a paragraph or list item; a fence is never cut, and the prefix never ends on a
    heading) followed by a pointer line "+N more lines → path:lines" to the rest (N counts
    non-blank lines). Never longer than `budget_chars`; "" when not even a pointer fits.
    """
    budget = max(budget_chars, 0)
    if len(parts.current) <= budget:
        return parts.current
    units = parts.current_units
    spans = _current_spans(parts)
    unit_lines = [unit.text.split("\n") for unit in units]
    nonblank_after = [0] * (len(units) + 1)  # non-blank lines in units[i:]
    for index in range(len(units) - 1, -1, -1):
        nonblank = sum(1 for line in unit_lines[index] if line.strip())
        nonblank_after[index] = nonblank_after[index + 1] + nonblank

    best = ""
    if units:
        pointer = _pointer(nonblank_after[0], path, spans, units[0].line_start)
        best = pointer if len(pointer) <= budget else ""
    best_cut: tuple[int, int, str] | None = None  # (unit index, lines taken, pointer)
    kept_length = 0
    for index, unit in enumerate(units):
        lines = unit_lines[index]
        separator = 0 if index == 0 else _separator_length(units[index - 1], unit)
        cut_points = range(1, len(lines) + 1) if unit.line_cuttable else [len(lines)]
        piece = separator - 1  # the first line has no newline before it
        taken_lines = 0
        for taken in cut_points:
            while taken_lines < taken:
                piece += 1 + len(lines[taken_lines])
                taken_lines += 1
            length = kept_length + piece
            if length > budget:
                return _render_cut(units, unit_lines, best_cut) if best_cut else best
            if unit.kind == "heading":
                continue  # a heading with nothing under it is no use: the pointer covers it
            rest = sum(1 for line in lines[taken:] if line.strip()) + nonblank_after[index + 1]
            if rest == 0:
                continue
            if taken < len(lines):
                first_line = unit.line_start + taken
            else:
                first_line = units[index + 1].line_start
            pointer = _pointer(rest, path, spans, first_line)
            if length + 1 + len(pointer) <= budget:
                best_cut = (index, taken, pointer)
        kept_length += separator + len(unit.text)
    return _render_cut(units, unit_lines, best_cut) if best_cut else best


def _separator_length(previous: PlanUnit, unit: PlanUnit) -> int:
    return 1 if unit.line_start == previous.line_end + 1 else 2


def _render_cut(
    units: Sequence[PlanUnit], unit_lines: Sequence[Sequence[str]], cut: tuple[int, int, str]
) -> str:
    index, taken, pointer = cut
    head = join_units(units[:index])
    last = "\n".join(unit_lines[index][:taken])
    if index > 0:
        head += "\n" * _separator_length(units[index - 1], units[index])
    return f"{head}{last}\n{pointer}"


@dataclass(frozen=True)
class PlanArchive:
    """What `carryd plan archive` does to one plan: the new texts and what moved."""

    new_plan: str
    appended: str  # the text appended to the archive (header + history blocks), "" if nothing
    moved_blocks: tuple[tuple[int, int], ...]
    moved_lines: int  # non-blank lines moved


def archive_plan(plan_text: str, *, header: str) -> PlanArchive:
    """Given PLAN.md's text and a dated archive header, return the plan without its history.

    "Settled" history is all of it: every history block moves. Lines are moved verbatim; the
    blank lines around a removed block collapse to one; the plan keeps its final newline.
    """
    parts = split_plan(plan_text)
    if not parts.history_blocks:
        return PlanArchive(plan_text, "", (), 0)
    lines = source_lines(plan_text)
    moved = [False] * (len(lines) + 1)
    for start, end in parts.history_blocks:
        for line_number in range(start, end + 1):
            moved[line_number] = True
    kept: list[str] = []
    for line_number, line in enumerate(lines, start=1):
        if moved[line_number]:
            continue
        if not line.strip() and kept and not kept[-1].strip():
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    new_plan = "\n".join(kept)
    if new_plan and plan_text.endswith(("\n", "\r")):
        new_plan += "\n"
    body = "\n\n".join("\n".join(lines[start - 1 : end]) for start, end in parts.history_blocks)
    moved_lines = sum(
        1 for line_number, line in enumerate(lines, start=1) if moved[line_number] and line.strip()
    )
    return PlanArchive(new_plan, f"{header}\n\n{body}\n", parts.history_blocks, moved_lines)


def missing_lines(before: str, after: Sequence[str]) -> list[str]:
    """Given a text and the texts that should now hold it, return the non-blank lines lost.

    Compared as a multiset of non-blank lines (trailing whitespace ignored), so moving lines
    between files is fine and losing or altering one is not.
    """
    needed = Counter(line.rstrip() for line in source_lines(before) if line.strip())
    held: Counter[str] = Counter()
    for text in after:
        held.update(line.rstrip() for line in source_lines(text) if line.strip())
    lost = needed - held
    return sorted(lost.elements())
