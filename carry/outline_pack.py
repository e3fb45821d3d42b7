"""Given an outline (`carryd.carry.outline`) and a character budget, return its best cut.

Every item is shown in one of three ways: whole; as its lead — its first whole sentence(s)
and, for a failed attempt, the sentence that holds its reason (after `→`, "because", `:`, …),
ending in ` …` and its lines; or not at all, named by a pointer (`path:lines`) that covers a
run of items left out. Nothing is cut inside a sentence. Items are chosen by value per
character: the facts an item holds (numbers, ids, commands, paths, code), its recency (log
entries newest first, appended lists newest last), its state (open and failed before plain,
done and superseded last) and the weight of a known section name above it. Failed attempts
get their lead first, newest first, before anything else is spent. Output is in document
order with each shown item's headings. `chars <= budget` always. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from carryd.carry.marks import item_state, reason_start
from carryd.carry.outline import Item, Outline

LEAD_CHARS = 200  # a lead's first sentences run to about this much
LEAD_MAX = 420  # a first sentence longer than this has no lead: whole, or a pointer
STATE_FACTOR = {"open": 1.4, "failed": 1.3, "plain": 1.0, "done": 0.5, "superseded": 0.25}
FENCE_FACTOR = 0.7
ELLIPSIS = " …"
FAILED_WHOLE_SHARE = 0.3  # failed attempts shown whole, newest first, up to this share of room
FAILED_SHARE = 0.85  # and every failed attempt's lead up to this share

_SALIENT = re.compile(
    r"`[^`\n]+`"  # code
    r"|\b[A-Z][A-Z0-9]+-\d+\b"  # ticket ids
    r"|#\d{2,}"  # PR / issue numbers
    r"|\b\d+(?:[.,:/]\d+)*\s?(?:%|ms|s|h|min|k|x|×|MB|GB|rps)?(?![\w])"  # figures
    r"|[\w.-]+/[\w./-]+"  # paths
    r"|\b\w+_\w+\b"  # snake_case identifiers
    r"|\b[a-z]+[A-Z]\w+\b"  # camelCase identifiers
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")


def salience(text: str) -> int:
    """Given a text, return how many fact-like tokens it holds (ids, figures, code, paths)."""
    return len(_SALIENT.findall(text))


@dataclass(frozen=True)
class Unit:
    """A whole sentence of an item: the line it is on (0-based in the item) and its text."""

    line: int
    text: str


def units_of(text: str) -> list[Unit]:
    """Given an item's text, return its sentences, line by line (a fence is one unit)."""
    if text.lstrip().startswith(("```", "~~~")):
        return [Unit(0, text)]
    units: list[Unit] = []
    for number, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            if _inside_code(line, match.start()):
                continue
            piece = line[start : match.start()]
            if piece.strip():
                units.append(Unit(number, piece))
            start = match.end()
        if line[start:].strip():
            units.append(Unit(number, line[start:]))
    return units


def _inside_code(line: str, position: int) -> bool:
    return line.count("`", 0, position) % 2 == 1


def lead_of(item: Item) -> str | None:
    """Given an item, return its lead (whole first sentences, plus a failed attempt's reason
    sentence), ending in " …"; None when the item is no longer than its lead would be."""
    units = units_of(item.text)
    if len(units) <= 1:
        return None
    chosen = [0]
    size = len(units[0].text)
    if size > LEAD_MAX:
        return None
    for index in range(1, len(units)):
        if item.state == "failed" or size + len(units[index].text) > LEAD_CHARS:
            break  # a failed attempt's lead is its first sentence and its reason
        chosen.append(index)
        size += len(units[index].text)
    if item.state == "failed":
        for index in _reason_units(units):
            if index not in chosen and len(units[index].text) <= LEAD_MAX:
                chosen.append(index)
    chosen.sort()
    if len(chosen) == len(units):
        return None
    return _join(item.text, units, chosen) + ELLIPSIS


def _reason_units(units: Sequence[Unit]) -> list[int]:
    """Given an item's sentences, return those that hold its reason: the first sentence after
    the opening one with an explicit cue ("because", "reason:", 原因, porque, …), else the one
    that marks the failure and the one after it, else the second sentence."""
    for index, unit in enumerate(units[1:], start=1):
        cue = reason_start(unit.text)
        if cue is not None:
            tail = unit.text[cue:].strip(" *:：→->=")
            if len(tail) < 12 and index + 1 < len(units):
                return [index, index + 1]
            return [index]
    for index, unit in enumerate(units):
        if item_state(unit.text) == "failed":
            if index + 1 < len(units) and len(unit.text.strip()) < 40:
                return [index, index + 1]  # "**Failed**:" alone: the reason comes next
            return [index]
    return [1] if len(units) > 1 else []


def _join(text: str, units: Sequence[Unit], chosen: Sequence[int]) -> str:
    """Given an item's sentences and those to keep, return them on their own source lines."""
    lines = text.split("\n")
    out: list[str] = []
    current: int | None = None
    for index in chosen:
        unit = units[index]
        if unit.line != current:
            indent = lines[unit.line][: len(lines[unit.line]) - len(lines[unit.line].lstrip())]
            out.append(indent + unit.text.strip() if out else unit.text.rstrip())
            current = unit.line
        else:
            out[-1] = f"{out[-1].rstrip()} {unit.text.strip()}"
    return "\n".join(out)


@dataclass
class _Choice:
    item: Item
    full: str
    lead: str | None
    value_full: float
    value_lead: float
    show: int = 0  # 0 pointer, 1 lead, 2 full


def _choices(outline: Outline, relevance: frozenset[str]) -> list[_Choice]:
    out = []
    for item in outline.items:
        factor = item.weight * (0.4 + 0.6 * item.recency) * STATE_FACTOR[item.state]
        if item.block == "fence":
            factor *= FENCE_FACTOR
        if relevance and _relevant(item.text, relevance):
            factor *= 1.2
        lead = lead_of(item)
        full_value = factor * (1.0 + salience(item.text) + 0.3 * len(units_of(item.text)))
        lead_value = 0.0
        if lead is not None:
            lead_value = factor * (1.0 + salience(lead) + 0.3 * len(units_of(lead)))
            if item.state == "failed":
                lead_value = max(lead_value, 0.8 * full_value)
        out.append(_Choice(item, item.text, lead, full_value, lead_value))
    return out


def _relevant(text: str, terms: frozenset[str]) -> bool:
    folded = text.casefold()
    return any(term in folded for term in terms)


def pack_outline(
    outline: Outline, budget: int, *, path: str, relevance: frozenset[str] = frozenset()
) -> str:
    """Given an outline, a budget and the file's root-relative path, return the cut (≤ budget).

    The steps: value every item; give failed attempts their lead (newest first); spend the rest
    on the best value per character; render; when pointers and headings overrun, retry with
    less room.
    """
    if not outline.items:
        return ""
    room = budget
    for _ in range(6):
        choices = _choices(outline, relevance)
        _spend(choices, outline, room)
        text = render(outline, choices, path)
        if len(text) <= budget:
            return text
        room -= len(text) - budget + 16
        if room <= 0:
            break
    return _pointer_only(outline, path, budget)


def _cost(choice: _Choice, show: int) -> int:
    if show == 2:
        return len(choice.full) + 1
    if show == 1 and choice.lead is not None:
        return len(choice.lead) + 12
    return 0


def _value(choice: _Choice, show: int) -> float:
    return (0.0, choice.value_lead, choice.value_full)[show] if show else 0.0


def _spend(choices: list[_Choice], outline: Outline, room: int) -> None:
    headings_shown: set[int] = set()
    used = 0

    def heading_cost(item: Item) -> int:
        cost = 0
        index = item.heading
        while index is not None and index not in headings_shown:
            cost += len(outline.headings[index].text) + 2
            index = outline.headings[index].parent
        return cost

    def take(choice: _Choice, show: int) -> None:
        nonlocal used
        used += _cost(choice, show) - _cost(choice, choice.show) + heading_cost(choice.item)
        choice.show = show
        index = choice.item.heading
        while index is not None:
            headings_shown.add(index)
            index = outline.headings[index].parent

    failed = sorted(
        (c for c in choices if c.item.state == "failed"),
        key=lambda c: (-c.item.recency, -c.item.position),
    )
    # Failed attempts first, newest first: whole while they take less than their share,
    # then each at least its lead (the line holding its reason).
    for choice in failed:
        whole = _cost(choice, 2) + heading_cost(choice.item)
        if used + whole <= FAILED_WHOLE_SHARE * room:
            take(choice, 2)
            continue
        show = 1 if choice.lead is not None else 2
        cost = _cost(choice, show) + heading_cost(choice.item)
        if used + cost <= FAILED_SHARE * room:
            take(choice, show)
    while True:
        best: tuple[float, _Choice, int] | None = None
        for choice in choices:
            for show in (1, 2):
                if show <= choice.show or (show == 1 and choice.lead is None):
                    continue
                extra = _cost(choice, show) - _cost(choice, choice.show)
                extra += heading_cost(choice.item)
                if used + extra > room or extra <= 0:
                    continue
                gain = _value(choice, show) - _value(choice, choice.show)
                density = gain / extra
                if best is None or density > best[0]:
                    best = (density, choice, show)
        if best is None:
            return
        take(best[1], best[2])


def render(outline: Outline, choices: Sequence[_Choice], path: str) -> str:
    """Given the choices, return the text: shown items under their headings, document order,
    and one pointer for each run of lines left out."""
    shown_headings: set[int] = set()
    for choice in choices:
        if choice.show:
            index = choice.item.heading
            while index is not None:
                shown_headings.add(index)
                index = outline.headings[index].parent
    events: list[tuple[int, int, str | None]] = []  # (line_start, line_end, text or None)
    for number, heading in enumerate(outline.headings):
        text = heading.text if number in shown_headings else None
        events.append((heading.line, heading.line, text))
    for choice in choices:
        item = choice.item
        if choice.show == 2:
            events.append((item.line_start, item.line_end, choice.full))
        elif choice.show == 1 and choice.lead is not None:
            events.append((item.line_start, item.line_end, f"{choice.lead} ({_span(item)})"))
        else:
            events.append((item.line_start, item.line_end, None))
    events.sort(key=lambda event: (event[0], event[1]))
    out: list[str] = []
    hidden: list[tuple[int, int]] = []

    def flush() -> None:
        if hidden:
            start, end = hidden[0][0], hidden[-1][1]
            span = str(start) if start == end else f"{start}-{end}"
            out.append(f"… not shown: {path}:{span}")
            hidden.clear()

    for start, end, text in events:
        if text is None:
            hidden.append((start, end))
            continue
        flush()
        out.append(text)
    flush()
    return "\n".join(out)


def _span(item: Item) -> str:
    if item.line_start == item.line_end:
        return f"L{item.line_start}"
    return f"L{item.line_start}-{item.line_end}"


def whole_outline(outline: Outline) -> str:
    """Given an outline, return every heading and item in full (the file without comments)."""
    choices = [_Choice(item, item.text, None, 0.0, 0.0, 2) for item in outline.items]
    return render(outline, choices, outline.path)


def _pointer_only(outline: Outline, path: str, budget: int) -> str:
    line = f"… not shown: {path}:1-{outline.lines}"
    return line if len(line) <= budget else ""
