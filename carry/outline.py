"""Given any Markdown file (a ledger, a plan), return it as an outline: headings and items.

Never through a closed vocabulary: every heading is a node whatever its words or language, and
every top-level block under it (a list item with its sub-items, a paragraph, a fence, a table)
is an item. The known ledger section names (`carryd.carry.sections`) only add weight. Dated or
numbered sibling headings (`## 2026-11-24 …`, `## Session 14`, `## Día 3`, `## 세션 12`) make a
log: each entry is a run of items, and recency comes from the entries' dates or numbers (newest
first whichever way the file is written). Outside a log, a long list is read as appended to
(newest last). Item state comes from the item's own marks (`carryd.carry.marks`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from carryd.carry.dating import (
    LOG_MIN_ENTRIES,
    dated_order,
    day_first,
    first_year,
    heading_key,
)
from carryd.carry.ledger import Block, markdown_blocks, section_kind_of, source_lines
from carryd.carry.marks import (
    ItemState,
    in_progress,
    item_state,
    marked_failed,
    names_attempts,
    struck_out,
)
from carryd.carry.sections import SECTION_TABLE, KnownKind
from carryd.carry.units import shape_of

# Known section kinds weigh more (seed P6's shares, as multipliers); unknown ones weigh 1.
KIND_WEIGHT = {spec.kind: 1.0 + 2 * spec.weight for spec in SECTION_TABLE}
NESTED_SPAN = 0.9  # a log inside a log entry spans this much of the gap to the entry before
LONG_LIST = 8  # outside a log, a section with this many items is read as appended to
CURRENT = frozenset({"status", "goal"})  # known sections kept current, never appended to


@dataclass(frozen=True)
class Heading:
    text: str  # the heading's source line
    title: str  # its words, without "#"
    level: int
    line: int
    parent: int | None  # index of the enclosing heading
    key: tuple[int, ...] | None  # date (y, m, d) or number of a dated/numbered heading


@dataclass(frozen=True)
class Item:
    text: str  # the item's source lines, exactly
    line_start: int
    line_end: int
    heading: int | None  # index of the deepest heading above it
    state: ItemState
    recency: float  # 0 oldest … 1 newest (1 for a short section that is kept current)
    weight: float  # from the known section names above it (1: none)
    in_log: bool  # under an entry of a dated/numbered log
    block: str  # "list", "paragraph", "fence", "other"
    position: int  # document order
    section: KnownKind | None = None  # the known section above it (status, goal, tried, next)


@dataclass(frozen=True)
class Outline:
    path: str
    headings: tuple[Heading, ...]
    items: tuple[Item, ...]
    lines: int
    log_entries: tuple[int, ...]  # heading indices that are log entries


_BOLD_LINE = re.compile(r"^\s*(\*\*|__)([^*_\n]{2,80}?)\s*:?\s*\1\s*:?\s*$")
# "**Sesión 19 — mar 10/06 (tarde)** ← ÚLTIMA", "**Session 7 (night)** incident": a bold line,
# perhaps with a short note after it, that heads what follows when it is dated or numbered.
_BOLD_HEAD = re.compile(r"^\s*(\*\*|__)([^*_\n]{2,80}?)\1[ \t]*([^*\n.!?。]{0,30})$")


def _bold_entries(
    lines: Sequence[str], blocks: Sequence[Block], year: int, first_day: bool
) -> dict[int, str]:
    """Given a text's lines and blocks, return the bold lines that head log entries (line →
    title): one-line paragraphs in bold that are dated or numbered, at least `LOG_MIN_ENTRIES`
    of one sort under the same heading — a ledger without headings whose sessions are bold
    labels ("**Sesión 19 — mar 10/06**") is a log all the same."""
    groups: dict[tuple[int, bool], dict[int, str]] = {}
    section = 0
    for block in blocks:
        if block.kind == "heading":
            section = block.line_start
            continue
        if block.kind != "paragraph" or block.line_start != block.line_end:
            continue
        bold = _BOLD_HEAD.match(lines[block.line_start - 1])
        if bold is None or section_kind_of(bold.group(2)) is not None:
            continue
        title = f"{bold.group(2).strip()} {bold.group(3).strip()}".strip()
        key = heading_key(bold.group(2), year, any_word=True, day_first=first_day)
        if key is not None:
            groups.setdefault((section, len(key) == 3), {})[block.line_start] = title
    found: dict[int, str] = {}
    for members in groups.values():
        if len(members) >= LOG_MIN_ENTRIES:
            found.update(members)
    return found


Raw = tuple[int, int, int | None, str]  # an item's first and last line, heading, block kind


def _skeleton(
    lines: Sequence[str], blocks: Sequence[Block], year: int, first_day: bool
) -> tuple[list[Heading], list[Raw]]:
    """Given a text's lines and blocks, return its headings (with the sections in disguise:
    a bold line or a list item that names a known section, and bold lines that head the
    entries of a log) and its items' raw spans."""
    headings: list[Heading] = []
    stack: list[int] = []
    raw: list[Raw] = []
    bold_entries = _bold_entries(lines, blocks, year, first_day)
    for block in blocks:
        level, title = block.heading_level, block.heading_text.strip()
        if block.kind == "paragraph" and block.line_start == block.line_end:
            # "**Offen, Stand 02.12. (nach Priorität):**" above a list: a section in disguise
            bold = _BOLD_LINE.match(lines[block.line_start - 1])
            if bold is not None and section_kind_of(bold.group(2)) is not None:
                title = bold.group(2).strip()
                level = headings[stack[-1]].level + 1 if stack else 1
            elif block.line_start in bold_entries:
                title = bold_entries[block.line_start]
                # a sibling of the entries before it: one level below the real heading above
                while stack and headings[stack[-1]].line in bold_entries:
                    stack.pop()
                level = headings[stack[-1]].level + 1 if stack else 1
        if block.kind == "heading" or level:
            while stack and headings[stack[-1]].level >= level:
                stack.pop()
            parent = stack[-1] if stack else None
            headings.append(
                Heading(
                    lines[block.line_start - 1].rstrip(),
                    title,
                    level,
                    block.line_start,
                    parent,
                    heading_key(title, year, any_word=True, day_first=first_day),
                )
            )
            stack.append(len(headings) - 1)
            continue
        if block.kind in ("comment", "rule"):
            continue
        labelled = _label_and_children(lines, block.line_start, block.line_end)
        if block.kind == "list" and labelled is not None:
            # "- Siguiente (s10), en este orden:" over its sub-items: a section in disguise
            label, children = labelled
            parent = stack[-1] if stack else None
            level = headings[parent].level + 1 if parent is not None else 1
            heading = lines[block.line_start - 1].rstrip()
            headings.append(Heading(heading, label, level, block.line_start, parent, None))
            raw.extend((start, end, len(headings) - 1, "list") for start, end in children)
            continue
        raw.append((block.line_start, block.line_end, stack[-1] if stack else None, block.kind))
    return headings, raw


def parse_outline(text: str, path: str = "") -> Outline:
    """Given a Markdown text, return its outline: headings, items, log entries, recency."""
    lines = source_lines(text)
    blocks = markdown_blocks(text)
    year = first_year(text)
    first_day = day_first(text)
    headings, raw = _skeleton(lines, blocks, year, first_day)
    entries = _log_entries(headings)
    entry_rank = _entry_recency(headings, entries)
    current = _kept_current(headings, entries, entry_rank)
    items: list[Item] = []
    by_heading: dict[int | None, list[int]] = {}
    for start, _end, heading, _ in raw:
        by_heading.setdefault(heading, []).append(start)
    by_date = {
        heading: dated_order([lines[start - 1] for start in starts], year)
        for heading, starts in by_heading.items()
    }
    for position, (start, end, heading, kind) in enumerate(raw):
        body = "\n".join(lines[start - 1 : end]).rstrip()
        if not body.strip():
            continue  # a block of nothing but Unicode spaces ("\x85") says nothing
        entry = _enclosing(headings, heading, entries)
        if entry is not None:
            recency, in_log = entry_rank[entry], True
        else:
            siblings = by_heading[heading]
            index = siblings.index(start)
            order = by_date[heading]
            if order is not None:
                index = order[index]  # dated items: by their dates, whichever way written
            # a short list is kept current, unless its items are dated entries ("- 2026-09-30:
            # flake rate 0.9%" below "- 2026-09-16: 3.1%"): their dates say which is newest
            kept_current = (len(siblings) < LONG_LIST and order is None) or _kind(
                headings, heading, current
            ) in CURRENT
            recency = 1.0 if kept_current else 0.3 + 0.7 * index / (len(siblings) - 1)
            in_log = False
        under_attempts = _under_attempts(headings, heading)
        state = item_state(_own_lines(body))
        if state == "failed" and not under_attempts and shape_of(body) == "table":
            # ❌ in a tracker's cells is a status ("not deployed yet"); a table is a table of
            # attempts when its header or a heading above it says so.
            state = "failed" if names_attempts(body.split("\n", 1)[0]) else "plain"
        elif state == "superseded" and shape_of(body) == "table" and not struck_out(body):
            state = "plain"  # a "(superseded)" row is that row's state, not the table's
        if state == "plain" and under_attempts:
            state = "failed"  # an item of a tried / dead-ends section is an attempt
        items.append(
            Item(
                body,
                start,
                end,
                heading,
                state,
                recency,
                _weight(headings, heading, current),
                in_log,
                "list" if kind == "list" else kind,
                position,
                _kind(headings, heading, current),
            )
        )
    return Outline(path, tuple(headings), tuple(items), len(lines), tuple(sorted(entries)))


SUB_ITEM = re.compile(r"^\s+(?:[-*+]|\d+[.)])\s")  # a nested list item's first line
_LABEL_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+[*_]*([^\n]{2,60}?)[*_]*\s*[:：]\s*[*_]*\s*$")


def _label_and_children(
    lines: Sequence[str], start: int, end: int
) -> tuple[str, list[tuple[int, int]]] | None:
    """Given a list item's lines (1-based, inclusive), return its label and its sub-items'
    line spans when it is a known section's label over sub-items ("- NEXT (in order):",
    "- Siguiente (s10), en este orden:"), else None."""
    label = _LABEL_LINE.match(lines[start - 1])
    if label is None or end <= start or not SUB_ITEM.match(lines[start]):
        return None
    if section_kind_of(label.group(1)) is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    children: list[tuple[int, int]] = []
    for number in range(start + 1, end + 1):
        line = lines[number - 1]
        if SUB_ITEM.match(line) and len(line) - len(line.lstrip()) == indent:
            children.append((number, number))
        elif children:
            children[-1] = (children[-1][0], number)
    while children and not lines[children[-1][1] - 1].strip():
        children[-1] = (children[-1][0], children[-1][1] - 1)
    return label.group(1).strip(), children


def _own_lines(body: str) -> str:
    """Given an item's text, return its own lines: those before its first sub-item. A failure
    word deep in a session's nested notes marks that sub-item, not the whole entry."""
    lines = body.split("\n")
    for number, line in enumerate(lines[1:], start=1):
        if SUB_ITEM.match(line):
            return "\n".join(lines[:number])
    return body


def from_line(outline: Outline, line: int) -> Outline:
    """Given an outline and a line, return it without the headings and items before that line
    (an older copy of the ledger above its current title)."""
    if line <= 1:
        return outline
    keep = [index for index, heading in enumerate(outline.headings) if heading.line >= line]
    renumber = {old: new for new, old in enumerate(keep)}
    headings = tuple(
        Heading(
            h.text,
            h.title,
            h.level,
            h.line,
            renumber.get(h.parent) if h.parent is not None else None,
            h.key,
        )
        for h in (outline.headings[index] for index in keep)
    )
    items = tuple(
        Item(
            item.text,
            item.line_start,
            item.line_end,
            renumber.get(item.heading) if item.heading is not None else None,
            item.state,
            item.recency,
            item.weight,
            item.in_log,
            item.block,
            item.position,
            item.section,
        )
        for item in outline.items
        if item.line_start >= line
    )
    entries = tuple(renumber[index] for index in outline.log_entries if index in renumber)
    return Outline(outline.path, headings, items, outline.lines, entries)


def _log_entries(headings: Sequence[Heading]) -> set[int]:
    """Given the headings, return those that are entries of a log: dated or numbered siblings
    (same parent, same level), at least `LOG_MIN_ENTRIES` of them of one sort — dates with
    dates, numbers with numbers ("最近 7 天", "剩下的 18 个 job" beside one dated heading are
    no log)."""
    groups: dict[tuple[int | None, int, bool], list[int]] = {}
    for index, heading in enumerate(headings):
        # A known section with a date ("## Estado (reescrito el 2026-11-26)") is the current
        # state, not a log entry.
        if heading.key is not None and section_kind_of(heading.title) is None:
            dated = len(heading.key) == 3
            groups.setdefault((heading.parent, heading.level, dated), []).append(index)
    found: set[int] = set()
    for members in groups.values():
        if len(members) >= LOG_MIN_ENTRIES:
            found.update(members)
    return found


def _entry_recency(headings: Sequence[Heading], entries: set[int]) -> dict[int, float]:
    """Given the log entries, return each one's recency, 0 oldest … 1 newest, by date or number
    (document order breaks ties and orders entries without a comparable key)."""
    ranked: dict[int, float] = {}
    step: dict[int, float] = {}  # the distance to the next entry of its group
    groups: dict[tuple[int | None, int], list[int]] = {}
    for index in sorted(entries):
        groups.setdefault((headings[index].parent, headings[index].level), []).append(index)
    for members in groups.values():
        keys = [headings[index].key or () for index in members]
        dated = [key for key in keys if len(key) == 3]
        use_keys = len(dated) == len(keys) or not dated
        order = sorted(
            range(len(members)),
            key=lambda i: (keys[i] if use_keys else (), i),
        )
        if not use_keys and dated:
            order = list(range(len(members)))
        count = max(1, len(members) - 1)
        for rank, i in enumerate(order):
            ranked[members[i]] = rank / count
            step[members[i]] = 1 / count
    _rank_dated_together(headings, entries, ranked, step)
    # A log inside a log entry ("## 11/28 セッション9" > "### 試行43", "### 試行44"): its entries
    # rank within their enclosing entry, above every older one (parents come first).
    for index in sorted(entries):
        outer = _enclosing(headings, headings[index].parent, entries)
        if outer is not None:
            ranked[index] = ranked[outer] - (1 - ranked[index]) * NESTED_SPAN * step[outer]
            step[index] *= NESTED_SPAN * step[outer]
    return ranked


def _rank_dated_together(
    headings: Sequence[Heading],
    entries: set[int],
    ranked: dict[int, float],
    step: dict[int, float],
) -> None:
    """Given the log entries and their recency within their own log, rank every dated entry
    that sits in no other entry by its date across the whole file, when the file has more
    than one such log: "## Sessions S1–S4 (old)" above "## Sessions S5–S9 (newest last)"
    are one history, and S4 is older than S9."""
    top = [
        index
        for index in sorted(entries)
        if _enclosing(headings, headings[index].parent, entries) is None
    ]
    if len({(headings[i].parent, headings[i].level) for i in top}) < 2:
        return
    if any(len(headings[i].key or ()) != 3 for i in top):
        return  # numbered logs ("Attempt 3", "Session 5") count apart: their numbers differ
    order = sorted(top, key=lambda i: (headings[i].key or (), i))
    count = max(1, len(order) - 1)
    for rank, index in enumerate(order):
        ranked[index] = rank / count
        step[index] = 1 / count


def _enclosing(headings: Sequence[Heading], index: int | None, entries: set[int]) -> int | None:
    while index is not None:
        if index in entries:
            return index
        index = headings[index].parent
    return None


def _under_attempts(headings: Sequence[Heading], index: int | None) -> bool:
    """Given an item's heading, return whether a heading above it names attempts or dead ends:
    the known "tried" section, or a heading with an attempt or failure word in any language
    ("Attempts log", "Intentos fallidos", "실패한 시도", "踩坑记录") or a failure mark
    ("### 試行43 ✗ sliced scroll …": the items below are that attempt's)."""
    while index is not None:
        title = headings[index].title
        if section_kind_of(title) == "tried" or names_attempts(title) or marked_failed(title):
            return True
        index = headings[index].parent
    return False


def _kept_current(
    headings: Sequence[Heading], entries: set[int], entry_rank: Mapping[int, float]
) -> set[int]:
    """Given the headings, the log entries and their recency, return the headings of sections
    kept current whatever their words: a dated heading outside any log whose date is the
    newest of the file's headings ("## 接手先看（2026-11-26 晚更新）", "## État au 26/11") says
    where things stand as of the last entry; a heading that opens as work in progress
    ("## 作業中のファイル", "### EDITANDO AGORA (não commitado)"), outside a log or in its
    newest entry, is where the work stands."""
    found: set[int] = set()
    dated = [h.key for h in headings if h.key is not None and len(h.key) == 3]
    if dated:
        newest = max(dated)
        found |= {
            index
            for index, heading in enumerate(headings)
            if index not in entries and heading.key == newest and heading.level <= 2
        }
    top = max(entry_rank.values(), default=0.0)
    for index, heading in enumerate(headings):
        if index in entries or not in_progress(heading.title):
            continue
        entry = _enclosing(headings, index, entries)
        if entry is None or entry_rank[entry] >= top:
            found.add(index)
    return found


def _kind(
    headings: Sequence[Heading], index: int | None, current: Collection[int] = ()
) -> KnownKind | None:
    """Given an item's heading, return the known section kind above it (None: none); a
    section kept current (`_kept_current`) is the status."""
    while index is not None:
        kind = section_kind_of(headings[index].title)
        if kind is not None:
            return kind
        if index in current:
            return "status"
        index = headings[index].parent
    return None


def _weight(headings: Sequence[Heading], index: int | None, current: Collection[int]) -> float:
    kind = _kind(headings, index, current)
    return 1.0 if kind is None else KIND_WEIGHT[kind]
