"""Given a heading or an item's opening, return the date or number it carries: what makes a
log of dated or numbered entries (`carryd.carry.outline`) and ranks its entries.

Dates come as people write them: `2026-11-24`, `28.11.2026`, `11月28日`, `11/28` and — when
the file writes some day above twelve first ("30/05") — `10/06` as the tenth of June. Numbers
come after a word ("Session 14", "Día 3", "세션 12", "Attempt 31", "EXP-07"). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LOG_MIN_ENTRIES = 3  # sibling headings that are dated or numbered: a log

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


def heading_key(
    title: str, year: int = 0, *, any_word: bool = False, day_first: bool = False
) -> tuple[int, ...] | None:
    """Given a heading's words, return its date (y, m, d) or its number, or None. With
    `any_word`, a heading that opens with any word and a number ("Attempt 12") is numbered
    too (a ledger's log; a plan's "Option 1 / 2 / 3" are not its history). With `day_first`
    (the file writes "30/05"), "10/06" is the 10th of June."""
    date = _DATE.search(title)
    if date is not None:
        if date.group("y"):
            key = (int(date.group("y")), int(date.group("m")), int(date.group("d")))
        elif date.group("m2"):
            key = (year, int(date.group("m2")), int(date.group("d2")))
        elif date.group("y4"):
            key = (int(date.group("y4")), int(date.group("m4")), int(date.group("d4")))
        elif day_first:
            key = (year, int(date.group("d3")), int(date.group("m3")))
        else:
            key = (year, int(date.group("m3")), int(date.group("d3")))
        if 1 <= key[1] <= 12 and 1 <= key[2] <= 31:
            return key
    numbered = _NUMBERED.search(title) or (_WORD_NUMBER.match(title) if any_word else None)
    if numbered is not None:
        number = next(group for group in numbered.groups() if group)
        return (0, 0, 0, int(number))
    return None


_SHORT_DATE = re.compile(r"(?<![\d./-])(\d{1,2})[/-](\d{1,2})(?![\d/-])")


def day_first(text: str) -> bool:
    """Given a text, return whether it writes short dates day first: some "30/05", and no
    "05/30" (a first number over 12, never a second)."""
    pairs = [(int(a), int(b)) for a, b in _SHORT_DATE.findall(text)]
    return any(a > 12 >= b for a, b in pairs) and not any(b > 12 >= a for a, b in pairs)


DATED_ITEMS_SHARE = 0.5  # of a section's items opening with a date: ordered by their dates
_OPENING_CHARS = 24  # a date within an item's first characters opens it


def dated_order(first_lines: Sequence[str], year: int) -> list[int] | None:
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
        keys = [attempt_number(line) for line in first_lines]
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


def attempt_number(line: str) -> tuple[int, ...] | None:
    """Given an item's first line, return the number of the attempt it opens with, or None."""
    match = _ATTEMPT_NUMBER.match(line)
    return (0, 0, 0, int(match.group(1))) if match else None


def first_year(text: str) -> int:
    match = re.search(r"(?:19|20)\d\d(?=[-/.年])", text)
    return int(match.group(0)) if match else 0
