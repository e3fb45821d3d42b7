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
LOG_MIN_ENTRIES = 3  # sibling headings that are dated or numbered: a log
NESTED_SPAN = 0.9  # a log inside a log entry spans this much of the gap to the entry before
LONG_LIST = 8  # outside a log, a section with this many items is read as appended to
CURRENT = frozenset({"status", "goal"})  # known sections kept current, never appended to

_DATE = re.compile(
    r"(?P<y>(?:19|20)\d\d)[-/.年](?P<m>\d{1,2})[-/.月](?P<d>\d{1,2})"
    r"|(?<!\d)(?P<m2>\d{1,2})月(?P<d2>\d{1,2})日"
    r"|(?<![\d.])(?P<m3>\d{1,2})[-/](?P<d3>\d{1,2})(?![\d/-])"
    r"|(?<![\d.])(?P<d4>\d{1,2})\.(?P<m4>\d{1,2})\.(?P<y4>(?:19|20)\d\d)"  # 28.11.2026
)
_NUMBERED = re.compile(
    r"(?i:session|sesi[oó]n|sitzung|s[ée]ance|sess[ãa]o|day|d[ií]a|tag|jour|week|semana|woche"
    r"|semaine|sprint|run|iteration|round|entry|part|phase|stage|step)\s*#?\s*(\d{1,4})"
    r"|(?:세션|セッション|회차|第|Day)\s*(\d{1,4})|(\d{1,4})\s*(?:日目|일차|天|회|次)"
)
# Any word then a number at a heading's start ("Attempt 12 — …", "Versuch 3", "Intento #4",
# "EXP-07"):
# numbered, whatever the language; a log only when enough siblings are numbered or dated.
_WORD_NUMBER = re.compile(r"^[*_`\s]*[^\W\d_]+\.?[ \t]*[#-]?[ \t]*(\d{1,4})(?![\d.,:/-])")


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


def heading_key(title: str, year: int = 0, *, any_word: bool = False) -> tuple[int, ...] | None:
    """Given a heading's words, return its date (y, m, d) or its number, or None. With
    `any_word`, a heading that opens with any word and a number ("Attempt 12") is numbered
    too (a ledger's log; a plan's "Option 1 / 2 / 3" are not its history)."""
    date = _DATE.search(title)
    if date is not None:
        if date.group("y"):
            key = (int(date.group("y")), int(date.group("m")), int(date.group("d")))
        elif date.group("m2"):
            key = (year, int(date.group("m2")), int(date.group("d2")))
        elif date.group("y4"):
            key = (int(date.group("y4")), int(date.group("m4")), int(date.group("d4")))
        else:
            key = (year, int(date.group("m3")), int(date.group("d3")))
        if 1 <= key[1] <= 12 and 1 <= key[2] <= 31:
            return key
    numbered = _NUMBERED.search(title) or (_WORD_NUMBER.match(title) if any_word else None)
    if numbered is not None:
        number = next(group for group in numbered.groups() if group)
        return (0, 0, 0, int(number))
    return None


_BOLD_LINE = re.compile(r"^\s*(\*\*|__)([^*_\n]{2,80}?)\s*:?\s*\1\s*:?\s*$")


Raw = tuple[int, int, int | None, str]  # an item's first and last line, heading, block kind


def _skeleton(
    lines: Sequence[str], blocks: Sequence[Block], year: int
) -> tuple[list[Heading], list[Raw]]:
    """Given a text's lines and blocks, return its headings (with the sections in disguise:
    a bold line or a list item that names a known section) and its items' raw spans."""
    headings: list[Heading] = []
    stack: list[int] = []
    raw: list[Raw] = []
    for block in blocks:
        level, title = block.heading_level, block.heading_text.strip()
        if block.kind == "paragraph" and block.line_start == block.line_end:
            # "**Offen, Stand 02.12. (nach Priorität):**" above a list: a section in disguise
            bold = _BOLD_LINE.match(lines[block.line_start - 1])
            if bold is not None and section_kind_of(bold.group(2)) is not None:
                title = bold.group(2).strip()
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
                    heading_key(title, year, any_word=True),
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
    year = _first_year(text)
    headings, raw = _skeleton(lines, blocks, year)
    entries = _log_entries(headings)
    entry_rank = _entry_recency(headings, entries)
    current = _kept_current(headings, entries, entry_rank)
    items: list[Item] = []
    by_heading: dict[int | None, list[int]] = {}
    for start, _end, heading, _ in raw:
        by_heading.setdefault(heading, []).append(start)
    dated_order = {
        heading: _dated_order([lines[start - 1] for start in starts], year)
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
            order = dated_order[heading]
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


DATED_ITEMS_SHARE = 0.5  # of a section's items opening with a date: ordered by their dates
_OPENING_CHARS = 24  # a date within an item's first characters opens it


def _dated_order(first_lines: Sequence[str], year: int) -> list[int] | None:
    """Given the first lines of a section's items, return each item's rank by date, oldest 0,
    when most of them (at least `LOG_MIN_ENTRIES`) open with a date: by the dates when they
    run newest first (an undated item goes with the dated one before it), else the document's
    order, newest last. None when the items are not dated."""
    keys: list[tuple[int, ...] | None] = []
    for line in first_lines:
        match = _DATE.search(line[:_OPENING_CHARS])
        keys.append(heading_key(match.group(0), year) if match else None)
    present = [key for key in keys if key is not None]
    if len(present) < LOG_MIN_ENTRIES or len(present) < DATED_ITEMS_SHARE * len(keys):
        # no dates: numbered attempts ("- Attempt 14: …", "- #19 …") say their order too
        keys = [_attempt_number(line) for line in first_lines]
        present = [key for key in keys if key is not None]
        if len(present) < LOG_MIN_ENTRIES or len(present) < DATED_ITEMS_SHARE * len(keys):
            return None
    steps = list(zip(present, present[1:], strict=False))
    if sum(b < a for a, b in steps) <= sum(b > a for a, b in steps):
        return list(range(len(keys)))  # written oldest first (or mixed): the document's order
    previous: tuple[int, ...] = ()
    filled = []
    for key in keys:
        previous = key or previous
        filled.append(previous)
    ranked = sorted(range(len(keys)), key=lambda i: (filled[i], i))
    order = [0] * len(keys)
    for rank, i in enumerate(ranked):
        order[i] = rank
    return order


_ATTEMPT_NUMBER = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])?\s*[*_]*\s*(?:(?i:attempt|try|intento|versuch|essai|tentative"
    r"|tentativa|experiment)\s*#?|試行|尝试|试验|시도\s*|#)\s*(\d{1,4})(?!\d)"
)


def _attempt_number(line: str) -> tuple[int, ...] | None:
    """Given an item's first line, return the number of the attempt it opens with, or None."""
    match = _ATTEMPT_NUMBER.match(line)
    return (0, 0, 0, int(match.group(1))) if match else None


def _first_year(text: str) -> int:
    match = re.search(r"(?:19|20)\d\d(?=[-/.年])", text)
    return int(match.group(0)) if match else 0


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
    # A log inside a log entry ("## 11/28 セッション9" > "### 試行43", "### 試行44"): its entries
    # rank within their enclosing entry, above every older one (parents come first).
    for index in sorted(entries):
        outer = _enclosing(headings, headings[index].parent, entries)
        if outer is not None:
            ranked[index] = ranked[outer] - (1 - ranked[index]) * NESTED_SPAN * step[outer]
            step[index] *= NESTED_SPAN * step[outer]
    return ranked


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


_TERM = re.compile(r"[A-Za-z][\w.-]{3,}|[\u3400-\u9fff\uac00-\ud7af]{2,}")
_STOP = frozenset(
    "this that with from have will when then than into what which their there about after "
    "before should would could these those also only just make made more most some such very "
    "goal plan".split()
)


def relevance_terms_of(text: str, limit: int = 40) -> frozenset[str]:
    """Given a plan, return the distinctive words of its first lines (its goal), casefolded."""
    head = text[:1500]
    terms: list[str] = []
    for match in _TERM.finditer(head):
        word = match.group(0).casefold().strip(".-")
        if len(word) >= 4 and word not in _STOP and word not in terms:
            terms.append(word)
    return frozenset(terms[:limit])
