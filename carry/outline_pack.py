"""Given an outline (`carryd.carry.outline`) and a character budget, return its best cut.

The pieces are whole units (`carryd.carry.units`: sentences, lines of a code block or a
table), never less: an item is shown whole, or as some of its units — always its first one,
gaps marked ` …`, ending in its lines `(L12-15)` — or not at all, named by a pointer
(`… not shown: L12-30`, lines of the file the section's heading names) that covers a run of
items left out. Units are chosen by value per
character: how likely a unit holds what a fresh context must know (`carryd.carry.unit_value`,
a model of its facts, its item's recency, state and section, fitted on scenarios written
without sight of carryd), a table's rows by how new they are. Failed attempts come first,
newest first: each keeps its first unit and the units most likely holding its
reason (`carryd.carry.units.reason_units`, read from structure), then the newest are kept
whole (or as their cause and result, `cause_units`) before anything else is spent. Output is
in document order under each shown item's headings, and `chars <= budget` always. Pure.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from carryd.carry.marks import (
    failure_at,
    item_state,
    marked_current,
    names_attempts,
    reason_start,
)
from carryd.carry.outline import SUB_ITEM, Item, Outline
from carryd.carry.unit_value import NEWEST, fact_likelihood
from carryd.carry.units import (
    MIN_REASON_UNITS,
    Unit,
    cause_units,
    closed,
    joined,
    reason_ranked,
    shape_of,
    units_of,
)

STATE_FACTOR = {"open": 1.4, "failed": 1.3, "plain": 1.0, "done": 0.5, "superseded": 0.25}
FAILED_WHOLE_SHARE = 0.45  # then newest first whole, while all failed take this share
CURRENT_SHARE = 0.15  # first the status section and the open next steps, whole
NEWEST_WHOLE_SHARE = 0.2  # first the newest attempts whole, up to this share
FAILED_SHARE = 0.4  # failed attempts' first and reason units, first, up to this share
REASON_BONUS = 1.5
FENCE_FACTOR = 0.7  # a code block's lines after its first: often pasted output
TABLE_OLDEST = 0.6  # a table's first row is worth this much of its last
NEWEST_ROW_BONUS = 1.5  # a table's last row still standing: where the figures stand now
POINTER_CHARS = 12  # " (L123-130)" after an item shown in part
FILL_POINTER_CHARS = 24  # what a pointer line can cost: an item this much over the room may fit
FILL_TRIES = 64  # items tried whole after the spend, each by rendering the cut
FILL_PASSES = 4
ATTEMPT_WHOLE_CHARS = 800  # an attempt up to this is kept whole (newest first, in its share)


@dataclass
class _Piece:
    """One item while it is packed: its units, their values, which are chosen."""

    item: Item
    units: list[Unit]
    values: list[float]
    floor: list[int]  # for a failed attempt: its first unit (unless labelled) and its reason's
    upgrade: list[int]  # then, newest first: the whole attempt, or its cause and result
    chosen: set[int] = field(default_factory=set)
    lead: bool = True  # its first unit comes with any other (False: its heading names it)

    @property
    def first_floor(self) -> list[int]:
        """What every failed attempt keeps first: its lead (when needed) and its best reason."""
        return self.floor[: 2 if self.lead else 1]


def _pieces(outline: Outline) -> list[_Piece]:
    pieces = []
    labelled = _labelled(outline)
    for item in outline.items:
        shape = shape_of(item.text)
        units = units_of(item.text) or [Unit(0, item.text)]
        # how likely each unit holds what a fresh context must know (a decision, a line marked
        # current, an open step, a failed attempt's reason: `carryd.carry.unit_value`)
        values = fact_likelihood(item, units, len(outline.items))
        if shape == "fence":
            values[0] = 0.0  # an opening "```sql" says nothing by itself
            values[2:] = [value * FENCE_FACTOR for value in values[2:]]  # output, not command
        elif shape == "table":
            _weigh_rows(units, values)
        floor, upgrade = _attempt_floor(item, units)
        for index in floor[1:]:
            values[index] *= REASON_BONUS
        lead = True
        if item.position in labelled and floor and floor[0] == 0 and shape == "prose":
            floor, lead = floor[1:] or floor, len(floor) == 1  # "### Attempt 31 — …" says what
        pieces.append(_Piece(item, units, values, floor, upgrade, lead=lead))
    return pieces


def _weigh_rows(units: Sequence[Unit], values: list[float]) -> None:
    """Given a table's units (its header first) and their values, weigh its rows by how new
    they are: by their own dates when most rows carry one (a table of metrics updated in
    place, "| p95 | 1,4 s | 03/12 s11 |"), else by position (rows are appended: the last rows
    standing are the newest figures, the last of them — or those marked current — the figure
    things stand at). A struck or superseded row is a figure since replaced."""
    standing = [i for i in range(1, len(units)) if item_state(units[i].text) != "superseded"]
    for index in set(range(1, len(units))) - set(standing):
        values[index] *= STATE_FACTOR["superseded"]
    current = [i for i in standing if marked_current(units[i].text)]
    dates = _row_dates([units[i].text for i in standing])
    if dates is not None:
        keys = sorted({key for key in dates if key is not None})
        for index, key in zip(standing, dates, strict=True):
            rank = keys.index(key) / (len(keys) - 1) if key is not None else 0.5
            values[index] *= TABLE_OLDEST + (1 - TABLE_OLDEST) * rank
        for index in current:
            values[index] *= NEWEST_ROW_BONUS
        return
    for rank, index in enumerate(standing):
        if len(standing) > 2:
            values[index] *= TABLE_OLDEST + (1 - TABLE_OLDEST) * rank / (len(standing) - 1)
    if len(standing) > 2 or current:
        for index in current or standing[-1:]:
            values[index] *= NEWEST_ROW_BONUS  # the figures things stand at


_ROW_DATE = re.compile(
    r"(?<![\d.])(?:(?P<y>(?:19|20)\d\d)-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"|(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?:19|20)?\d\d)?(?![\d/])"
    r"|(?P<c>\d{1,2})\.(?P<e>\d{1,2})\.(?:(?:19|20)\d\d)?(?!\d))"  # 04.12. (day first)
)


def _row_dates(rows: Sequence[str]) -> list[tuple[int, int, int] | None] | None:
    """Given table rows, return each row's date as (y, m, d), or None when fewer than three
    rows, or fewer than half, carry one. "29/11" says its dates are day first; "11/29" month
    first; day first when nothing says."""
    found = [_ROW_DATE.search(row) for row in rows]
    dated = [match for match in found if match is not None]
    if len(dated) < 3 or 2 * len(dated) < len(rows):
        return None
    short = [(int(m.group("a")), int(m.group("b"))) for m in dated if m.group("a")]
    month_first = any(b > 12 for _, b in short) and not any(a > 12 for a, _ in short)
    keys: list[tuple[int, int, int] | None] = []
    for match in found:
        if match is None:
            keys.append(None)
        elif match.group("y"):
            keys.append((int(match.group("y")), int(match.group("m")), int(match.group("d"))))
        elif match.group("c"):
            keys.append((0, int(match.group("e")), int(match.group("c"))))
        else:
            a, b = int(match.group("a")), int(match.group("b"))
            keys.append((0, a, b) if month_first else (0, b, a))
    if len({key for key in keys if key is not None}) < 2:
        return None
    return keys


_OUTCOME = re.compile(r"(?:→|->|=>|:|：|—|–)\s*\S.{11,}")


def _holds_reason(text: str) -> bool:
    """Given an attempt's first unit, return whether it already says why it failed: a reason
    cue ("… because …", "原因…") or a failure word with what follows it ("— failed: the
    webhook retried …", "… → 그대로 크래시")."""
    if reason_start(text) is not None:
        return True
    failed = failure_at(text)
    return failed is not None and _OUTCOME.search(text, failed) is not None


def _labelled(outline: Outline) -> set[int]:
    """Given an outline, return the positions of the items its headings name: the first item
    under a numbered heading that names an attempt ("### Attempt 31 — sticky partition 7",
    "## Versuch 3"), whose heading already says what was tried — its reason can stand without
    its first unit."""
    seen: set[int | None] = set()
    found: set[int] = set()
    for item in outline.items:
        if item.heading in seen:
            continue
        seen.add(item.heading)
        heading = outline.headings[item.heading] if item.heading is not None else None
        if heading is not None and heading.key is not None and names_attempts(heading.title):
            found.add(item.position)  # not "## 2026-11-03 (session 5)": that names no attempt
    return found


def _attempt_floor(item: Item, units: Sequence[Unit]) -> tuple[list[int], list[int]]:
    """Given an item and its units, return what it keeps first if it holds failed attempts
    (both empty when it holds none): its floor — the first unit and the units most likely
    holding the reason — and its upgrade — the whole attempt when it is at most
    `ATTEMPT_WHOLE_CHARS`, else its cause and result units up to that (`cause_units`).

    A table of attempts keeps its failed rows; a plain item keeps the sub-items that are
    attempts of their own ("  - 시도 1: … → 그대로 크래시. 원인 …"), each with its reason."""
    shape = shape_of(item.text)
    if shape == "table":
        # A table of attempts: each failed row is an attempt with its reason.
        rows = [i for i, unit in enumerate(units) if i and item_state(unit.text) == "failed"]
        if not rows and item.state == "failed":
            # a table of attempts whose rows carry no mark of their own ("## 没案一覧",
            # "| 案 | 結果 | なぜダメだったか |"): each row is an attempt with its reason
            rows = [i for i, unit in enumerate(units) if i and item_state(unit.text) == "plain"]
        floor = [0, *rows] if rows and item.state == "failed" else []
        return floor, floor
    if shape != "prose":
        return [], []
    if item.state == "failed":
        floor = [0, *reason_ranked(units)[:MIN_REASON_UNITS]]  # best first
        if len(item.text) <= ATTEMPT_WHOLE_CHARS:
            return floor, list(range(len(units)))
        return floor, sorted({*floor, *cause_units(units, ATTEMPT_WHOLE_CHARS)})
    lines = item.text.split("\n")
    nested = [
        number
        for number, line in enumerate(lines[1:], start=1)
        if SUB_ITEM.match(line) and item_state(line) == "failed"
    ]
    if not nested:
        return [], []
    chosen = [i for i, unit in enumerate(units) if i == 0 or unit.line in nested]
    return chosen, chosen


def pack_outline(outline: Outline, budget: int, *, path: str) -> str:
    """Given an outline, a budget and the file's root-relative path, return the cut (≤ budget).

    The steps: value every unit; give failed attempts their floor (newest first); spend the
    rest on the best value per character; render; when pointers overrun, retry with less room.
    """
    if not outline.items:
        return ""
    room = budget
    for _ in range(6):
        pieces = _pieces(outline)
        _spend(pieces, outline, room)
        text = render(outline, pieces)
        if len(text) <= budget:
            return _fill(outline, pieces, budget, text)
        room -= len(text) - budget + 16
        if room <= 0:
            break
    return _pointer_only(outline, path, budget)


def _fill(outline: Outline, pieces: Sequence[_Piece], budget: int, text: str) -> str:
    """Given a cut within the budget, return it with the items not shown that now fit whole,
    best value per character first: the spend does not count pointers, so what is left over
    after them, and what a pointer itself costs (`… not shown: L51` hiding a 40-character next
    step), buys whole items. Each is tried by rendering; the cut never grows past the budget."""
    hidden = [p for p in pieces if not p.chosen]
    hidden.sort(key=lambda p: -sum(p.values) / (len(p.item.text) + 1))
    tried: set[int] = set()
    tries = 0
    for _ in range(FILL_PASSES):
        shown = []
        for piece in hidden:
            position = piece.item.position
            if piece.chosen or position in tried or tries >= FILL_TRIES:
                continue
            if len(piece.item.text) > budget - len(text) + FILL_POINTER_CHARS:
                continue
            tries += 1
            tried.add(position)
            piece.chosen.update(range(len(piece.units)))
            filled = render(outline, pieces)
            if len(filled) <= budget:
                text = filled
                shown.append(position)
            else:
                piece.chosen.clear()
        # a neighbour shown can leave an item alone under its pointer: it is worth a retry
        tried -= {near for position in shown for near in (position - 1, position + 1)}
        if not shown:
            break
    return text


def _unit_cost(piece: _Piece, index: int) -> int:
    return len(piece.units[index].text) + 1


class _Spender:
    """The greedy spend: what is chosen so far, which headings are shown, and what it costs."""

    def __init__(self, outline: Outline, room: int) -> None:
        self.outline = outline
        self.room = room
        self.used = 0
        self.headings: set[int] = set()

    def start_cost(self, piece: _Piece) -> int:
        """What showing a piece's first unit costs beyond the unit: its unshown headings and,
        when it has more than one unit, the line pointer of a part."""
        if piece.chosen:
            return 0
        cost = POINTER_CHARS if len(piece.units) > 1 else 0
        if not piece.lead:
            cost += 2  # "… " before a labelled attempt's reason
        index = piece.item.heading
        while index is not None and index not in self.headings:
            cost += len(self.outline.headings[index].text) + 1
            index = self.outline.headings[index].parent
        return cost

    def take(self, piece: _Piece, indices: Sequence[int]) -> bool:
        """Given units to add, choose them when they fit (with the first unit), else False."""
        add = [i for i in indices if i not in piece.chosen]
        if not piece.chosen and 0 not in add and piece.lead:
            add.insert(0, 0)
        cost = self.start_cost(piece) + sum(_unit_cost(piece, i) for i in add)
        if self.used + cost > self.room:
            return False
        self.used += cost
        piece.chosen.update(add)
        index = piece.item.heading
        while index is not None:
            self.headings.add(index)
            index = self.outline.headings[index].parent
        return True


def _current(pieces: Sequence[_Piece]) -> list[_Piece]:
    """Given the pieces, return those that say where things stand, in the order they are
    kept: the status section's items, the open next steps, the goal (done ones excluded)."""
    order = {"status": 0, "next": 1, "goal": 2}
    chosen = [
        p
        for p in pieces
        if p.item.section in order
        and p.item.state in ("plain", "open")
        and (p.item.section != "next" or p.item.state == "open" or not p.floor)
    ]
    # Work left open in the newest entry ("A medias (SIN COMMIT): …", "WIP: …") is where
    # things stand too, whatever section it sits in.
    chosen += [
        p
        for p in pieces
        if p.item.section is None and p.item.state == "open" and p.item.recency >= NEWEST
    ]
    return sorted(chosen, key=lambda p: (order[p.item.section or "next"], p.item.position))


def _spend(pieces: list[_Piece], outline: Outline, room: int) -> None:
    spender = _Spender(outline, room)
    # Where things stand first: the status section and the open next steps, whole, up to
    # their share (what does not fit competes below like everything else).
    spender.room = int(CURRENT_SHARE * room)
    for piece in _current(pieces):
        spender.take(piece, range(len(piece.units)))
    base = spender.used
    failed = sorted(
        (p for p in pieces if p.floor), key=lambda p: (-p.item.recency, -p.item.position)
    )
    # Failed attempts then, newest first: whole while they take less than their share, then
    # each at least its floor (its first unit and its reason's).
    spender.room = min(room, base + int(NEWEST_WHOLE_SHARE * room))
    for piece in failed:  # the newest attempts whole (or their cause and result)
        spender.take(piece, piece.upgrade)
    spender.room = min(room, base + int(FAILED_SHARE * room))
    for piece in failed:  # then as many as can be with one reason unit each, newest first
        spender.take(piece, piece.first_floor)
    for piece in failed:
        if piece.chosen:
            spender.take(piece, piece.floor)
    spender.room = min(room, base + int(FAILED_WHOLE_SHARE * room))
    for piece in failed:
        if piece.chosen:
            spender.take(piece, piece.upgrade)
    spender.room = room

    def needed(piece: _Piece, index: int) -> list[int]:
        """The units a piece not yet shown takes with `index`: its first unit (unless its
        heading names it) and, for a failed attempt, its best reason with any unit — never
        what was tried without why it failed, nor a verdict ("… Dropped.") without the reason
        it closes on."""
        if piece.chosen:
            return [index]
        if index == 0 and (not piece.floor or _holds_reason(piece.units[0].text)):
            return [0]
        lead = [0] if piece.lead else []
        return sorted({index, *lead, *piece.first_floor})

    def density(piece: _Piece, index: int) -> float:
        units = needed(piece, index)
        extra = sum(_unit_cost(piece, i) for i in units) + spender.start_cost(piece)
        return sum(piece.values[i] for i in units) / max(1, extra)

    heap: list[tuple[float, int, int]] = []
    for number, piece in enumerate(pieces):
        for index in range(len(piece.units)):
            if index not in piece.chosen:
                heap.append((-density(piece, index), number, index))
    heapq.heapify(heap)
    while heap:
        negative, number, index = heapq.heappop(heap)
        piece = pieces[number]
        if index in piece.chosen:
            continue
        current = density(piece, index)
        if current < -negative - 1e-12:
            heapq.heappush(heap, (-current, number, index))
            continue
        spender.take(piece, needed(piece, index))


def render(outline: Outline, pieces: Sequence[_Piece]) -> str:
    """Given the packed pieces, return the text: shown items under their headings, document
    order, and one pointer for each run of lines left out."""
    shown_headings: set[int] = set()
    for piece in pieces:
        if piece.chosen:
            index = piece.item.heading
            while index is not None:
                shown_headings.add(index)
                index = outline.headings[index].parent
    events: list[tuple[int, int, str | None]] = []  # (line_start, line_end, text or None)
    for number, heading in enumerate(outline.headings):
        shown = heading.text if number in shown_headings else None
        events.append((heading.line, heading.line, shown))
    for piece in pieces:
        item = piece.item
        if not piece.chosen:
            events.append((item.line_start, item.line_end, None))
        elif len(piece.chosen) == len(piece.units):
            events.append((item.line_start, item.line_end, closed(item.text)))
        else:
            chosen = sorted(piece.chosen)
            text = joined(item.text, piece.units, chosen)
            before = "… " if chosen[0] != 0 else ""  # a labelled attempt's reason alone
            more = " …" if chosen[-1] < len(piece.units) - 1 else ""
            events.append((item.line_start, item.line_end, f"{before}{text}{more} ({_span(item)})"))
    events.sort(key=lambda event: (event[0], event[1]))
    out: list[str] = []
    hidden: list[tuple[int, int]] = []

    def flush() -> None:
        if hidden:
            start, end = hidden[0][0], hidden[-1][1]
            span = str(start) if start == end else f"{start}-{end}"
            out.append(f"… not shown: L{span}")
            hidden.clear()

    for start, end, shown_text in events:
        if shown_text is None:
            hidden.append((start, end))
            continue
        flush()
        out.append(shown_text)
    flush()
    return "\n".join(out)


def _span(item: Item) -> str:
    if item.line_start == item.line_end:
        return f"L{item.line_start}"
    return f"L{item.line_start}-{item.line_end}"


def whole_outline(outline: Outline) -> str:
    """Given an outline, return every heading and item in full (the file without comments)."""
    pieces = []
    for item in outline.items:
        units = units_of(item.text) or [Unit(0, item.text)]
        pieces.append(_Piece(item, units, [0.0] * len(units), [], [], set(range(len(units)))))
    return render(outline, pieces)


def _pointer_only(outline: Outline, path: str, budget: int) -> str:
    line = f"… not shown: {path}:1-{outline.lines}"
    return line if len(line) <= budget else ""
