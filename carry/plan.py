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

Only the current state goes into the carry (`plan_current_for_carry`, 3,000 chars by default),
cut on block and line boundaries with a "+N more lines → path:lines" pointer. `archive_plan`
is the pure half of `carryd plan archive`: what moves, what remains, and a losslessness check.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.ledger import Block, markdown_blocks, normalize_heading, source_lines
from carryd.carry.truncate import line_span

PlanMode = Literal["current", "history"]

_CURRENT = re.compile(
    r"^(?:当前状态|当前|现状|current state|current status|current|now|right now|status)"
    r"(?:\W|$)"
)
_HISTORY = re.compile(
    r"历史|踩坑|归档|变更记录|更新日志|版本记录"
    r"|^(?:history|changelog|change log|version history|release history|release notes"
    r"|archive|archived|past|lessons learned)(?:\W|$)"
)


@dataclass(frozen=True)
class PlanUnit:
    """A top-level block of the current state: its source lines and 1-based inclusive range."""

    text: str
    line_start: int
    line_end: int
    line_cuttable: bool  # paragraphs and list items may be cut between lines; fences may not


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


def _modes(blocks: Sequence[Block]) -> list[PlanMode]:
    modes: list[PlanMode] = []
    mode: PlanMode = "current"
    mode_level: int | None = None  # None: the unmarked top of the file
    for block in blocks:
        if block.kind == "heading":
            level = block.heading_level
            if mode_level is not None and level < mode_level:
                mode, mode_level = "current", None
            marker = heading_mode(block.heading_text)
            if marker is not None and (mode_level is None or level <= mode_level):
                mode, mode_level = marker, level
        modes.append(mode)
    return modes


def _join_units(units: Sequence[PlanUnit]) -> str:
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
    modes = _modes(blocks)
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
                    block.kind in ("paragraph", "list", "other"),
                )
            )
        previous_mode = mode
    history = "\n\n".join("\n".join(lines[start - 1 : end]) for start, end in history_runs)
    return PlanParts(
        current=_join_units(units),
        current_lines=(units[0].line_start, units[-1].line_end) if units else None,
        history=history,
        history_blocks=tuple(history_runs),
        current_units=tuple(units),
    )


def _omitted_runs(
    parts: PlanParts, first_line: int, units: Sequence[PlanUnit]
) -> list[tuple[int, int]]:
    """Given where the omitted current state starts, return its line runs (history splits them)."""
    runs: list[tuple[int, int]] = []
    for unit in units:
        start = max(unit.line_start, first_line)
        if runs and not any(runs[-1][1] < h_start <= start for h_start, _ in parts.history_blocks):
            runs[-1] = (runs[-1][0], unit.line_end)
        else:
            runs.append((start, unit.line_end))
    return runs


def _pointer(count: int, path: str, runs: Sequence[tuple[int, int]]) -> str:
    if len(runs) > 3:
        runs = [(runs[0][0], runs[-1][1])]
    spans = ",".join(line_span(start, end) for start, end in runs)
    return f"+{count} more lines → {path}:{spans}"


def plan_current_for_carry(parts: PlanParts, budget_chars: int, *, path: str) -> str:
    """Given the plan's parts, a budget and PLAN.md's root-relative path, return the carry text.

    The current state whole when it fits; else its longest prefix of whole blocks (and whole
    lines of a paragraph or list item) followed by a pointer line to the rest. Never longer
    than `budget_chars`; "" when not even a pointer fits.
    """
    budget = max(budget_chars, 0)
    if len(parts.current) <= budget:
        return parts.current
    units = parts.current_units
    best = ""
    kept_length = 0  # length of the kept text so far, without the pointer
    kept_pieces: list[str] = []
    for index, unit in enumerate(units):
        unit_lines = unit.text.split("\n")
        cut_points = range(1, len(unit_lines) + 1) if unit.line_cuttable else [len(unit_lines)]
        separator = ""
        if index > 0:
            separator = "\n" if unit.line_start == units[index - 1].line_end + 1 else "\n\n"
        if index == 0:
            candidate = _with_pointer("", 0, parts, unit.line_start, units, path)
            if len(candidate) <= budget:
                best = candidate
        for taken in cut_points:
            piece = separator + "\n".join(unit_lines[:taken])
            length = kept_length + len(piece)
            if length > budget:
                return best
            rest_start = unit.line_start + taken
            remaining = list(units[index + 1 :])
            if taken < len(unit_lines):
                rest = unit_lines[taken:]
                remaining.insert(0, PlanUnit("\n".join(rest), rest_start, unit.line_end, True))
            kept = "".join(kept_pieces) + piece
            if not remaining:
                return kept  # unreachable when the whole did not fit, kept for safety
            candidate = _with_pointer(kept, length, parts, remaining[0].line_start, remaining, path)
            if len(candidate) <= budget:
                best = candidate
        kept_pieces.append(separator + unit.text)
        kept_length += len(separator) + len(unit.text)
    return best


def _with_pointer(
    kept: str,
    kept_length: int,
    parts: PlanParts,
    first_line: int,
    remaining: Sequence[PlanUnit],
    path: str,
) -> str:
    count = sum(1 for unit in remaining for line in unit.text.split("\n") if line.strip())
    pointer = _pointer(count, path, _omitted_runs(parts, first_line, remaining))
    return f"{kept}\n{pointer}" if kept_length else pointer


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
