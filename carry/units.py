"""Given an item's text, return its units: whole sentences (line by line), or whole lines of a
code block or a table — the smallest pieces a carry ever shows, so nothing is cut inside one.

Also what packing asks of a unit: how many fact-like tokens it holds (`salience`), and which
units of a failed attempt hold its reason (`reason_units`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.marks import (
    CONCLUSION_CUES,
    NEGATION_CUES,
    REASON_CUES,
    TURN_CUES,
    item_state,
)

MIN_SENTENCE = 16  # a "sentence" shorter than this joins the next one ("2.", "e.g.")

UnitShape = Literal["prose", "fence", "table"]

_SALIENT = re.compile(
    r"`[^`\n]+`"  # code
    r"|\b[A-Z][A-Z0-9]+-\d+\b"  # ticket ids
    r"|#\d{2,}"  # PR / issue numbers
    r"|\b\d+(?:[.,:/]\d+)*\s?(?:%|ms|s|h|min|k|x|×|MB|GB|rps)?(?![\w])"  # figures
    r"|[\w.-]+/[\w./-]+"  # paths
    r"|\b\w+_\w+\b"  # snake_case identifiers
    r"|\b[a-z]+[A-Z]\w+\b"  # camelCase identifiers
    r"|--?[a-z][\w-]+"  # command-line flags
)
_DATE_LIKE = re.compile(r"(?:\d{4}[-/.])?\d{1,2}[-/.]\d{1,2}|\d{4}|\d{1,2}:\d{2}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
# After ". " a sentence does not start with a lower-case letter: "e.g. the", "vs. nginx",
# "approx. three" go on (scripts without case split as before).
_NOT_AN_END = re.compile(r"[a-z]")
# "vor dem 19.11. 14:20", "am 3.12. um": a day and month, not a sentence's end.
_DAY_MONTH = re.compile(r"(?<![\d.])\d{1,2}\.\d{1,2}\.$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


@dataclass(frozen=True)
class Unit:
    """A whole sentence of an item (or a whole line of its code block or table): the line it
    is on, 0-based in the item, and its text."""

    line: int
    text: str


def salience(text: str) -> int:
    """Given a text, return how many fact-like tokens it holds (ids, figures, code, paths,
    flags); a date is not one (every log line has one)."""
    return sum(1 for token in _SALIENT.findall(text) if not _DATE_LIKE.fullmatch(token.strip()))


_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def content_chars(text: str) -> int:
    """Given a text, return its length with each CJK or Hangul character counted twice: such a
    character says about what two Latin ones do."""
    return len(text) + len(_WIDE.findall(text))


def shape_of(text: str) -> UnitShape:
    """Given an item's text, return whether it is prose, a code block or a table."""
    lines = text.split("\n")
    if _FENCE.match(lines[0]):
        return "fence"
    if len(lines) > 1 and lines[0].lstrip().startswith("|") and _TABLE_RULE.match(lines[1]):
        return "table"
    return "prose"


def closed(text: str) -> str:
    """Given an item's text, return it with its code block closed when the source left it open
    (an unclosed fence would swallow everything after it in the carry)."""
    lines = text.split("\n")
    if shape_of(text) != "fence" or (len(lines) > 1 and _FENCE.match(lines[-1])):
        return text
    return f"{text}\n{_closing(lines)}"


def _closing(lines: Sequence[str]) -> str:
    """Given a code block's lines, return its closing fence: its last line when that closes it,
    else the opening's run of backticks or tildes (```` closes ````, ~~~ closes ~~~)."""
    if len(lines) > 1 and _FENCE.match(lines[-1]):
        return lines[-1]
    opening = re.match(r"\s*(`{3,}|~{3,})", lines[0])
    return opening.group(1) if opening else "```"


def units_of(text: str) -> list[Unit]:
    """Given an item's text, return its units in order. A code block's first unit is its
    opening fence, a table's is its header and rule; every other line is a unit of its own."""
    shape = shape_of(text)
    lines = text.split("\n")
    if shape == "fence":
        body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else lines[1:]
        fence = [Unit(0, lines[0])]
        continued = False
        for number, line in enumerate(body, start=1):
            if continued:  # a command continued with "\" is one unit, all its lines
                fence[-1] = Unit(fence[-1].line, f"{fence[-1].text}\n{line}")
            elif line.strip():
                fence.append(Unit(number, line))
            continued = line.rstrip().endswith("\\") and len(fence) > 1
        return fence
    if shape == "table":
        return [Unit(0, lines[0] + "\n" + lines[1])] + [
            Unit(number, line) for number, line in enumerate(lines[2:], start=2) if line.strip()
        ]
    units: list[Unit] = []
    for first, last in _wrapped_runs(lines):
        run = "\n".join(lines[first : last + 1])
        start = 0
        for match in _SENTENCE_END.finditer(run):
            if (
                _inside_code(run, match.start())
                or match.start() - start < MIN_SENTENCE
                or (run[match.start() - 1] in ".!?" and _NOT_AN_END.match(run, match.end()))
                or _DAY_MONTH.search(run, 0, match.start()) is not None
            ):
                continue
            piece = run[start : match.start()]
            if piece.strip():
                units.append(Unit(first + run.count("\n", 0, start), piece.rstrip("\n")))
            start = match.end()
        if run[start:].strip():
            units.append(Unit(first + run.count("\n", 0, start), run[start:]))
    return units


# A line that starts a block of its own: a list item, a heading, a quote, a table row, a fence,
# a bold label. Anything else after a line that ends mid-sentence continues that sentence.
_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|>|\||```|~~~|\*\*|__)")
_CLAUSE_END = re.compile(r"[.!?。！？:：;；]\W{0,2}$")
_JOINING = ",(/—–-&+"  # a line ending in these goes on
WRAP_WIDTH = 72  # a line this long that ends mid-sentence was wrapped by its editor


def _wrapped_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """Given a prose item's lines, return its runs of lines that are one text wrapped by an
    editor (first and last line, inclusive; blank lines left out): a line continues the one
    before it when that one ends mid-sentence and it starts no block of its own — and it starts
    in lower case, or the line before ends in a comma or a dash, or is as long as a wrapped
    line. "…BEFORE anything refreshes tax / rules on the source — otherwise …" is one sentence,
    so it is kept or left out whole; "Mon 330k / Tue 295k" stay two lines."""
    runs: list[tuple[int, int]] = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        if runs and runs[-1][1] == number - 1 and _continues(lines[number - 1], line):
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _continues(before: str, line: str) -> bool:
    tail = before.rstrip()
    if (
        before.lstrip().startswith(("#", "|"))
        or _BLOCK_START.match(line)
        or _CLAUSE_END.search(tail)
    ):
        return False
    return line.lstrip()[:1].islower() or tail[-1:] in _JOINING or len(tail) >= WRAP_WIDTH


def _inside_code(line: str, position: int) -> bool:
    return line.count("`", 0, position) % 2 == 1


MIN_REASON_UNITS = 2  # the sentences an older attempt keeps at least, after its first
SHORT_VERDICT = 24  # a unit this short ("Dropped.", "→ 失敗。") says how, not why


def reason_scores(units: Sequence[Unit]) -> list[float]:
    """Given a failed attempt's units, return how likely each one holds its reason, read from
    structure in any language (0 for the first unit, which says what was tried).

    The reason follows the attempt: every later unit counts, more the later it stands (the
    decisive reason comes after a red herring, a conclusion closes the paragraph). A unit that
    holds facts (figures, ids, code, paths) counts more. A cue (a failure mark, "because",
    原因, "but", 所以, …) is a bonus, never the gate. A bare verdict lends its weight to the
    unit before it: "… 0 panics. Dropped." — the reason is what it closes on. A negation ("It
    was not the poll thread: …") is a bonus too: the real reason follows a ruled-out one.
    """
    count = len(units)
    scores = [0.0] * count
    for index in range(1, count):
        text = units[index].text
        score = 1.0 + index / max(1, count - 1) + 0.4 * min(salience(text), 3)
        if index == count - 1:
            score += 0.25
        folded = f" {text.casefold()} "
        if item_state(text) == "failed" or any(
            cue in folded for cue in (*REASON_CUES, *TURN_CUES, *CONCLUSION_CUES)
        ):
            score += 1.0
        if any(cue in folded for cue in REASON_CUES):
            score += 1.0  # "causa: …", "because …" names the reason; "reverted" only the verdict
        if any(cue in folded for cue in NEGATION_CUES):
            score += 0.75
        scores[index] = score
    for index in range(2, count):
        text = units[index].text
        if content_chars(text.strip(" -*→>")) < SHORT_VERDICT and not salience(text):
            scores[index - 1] += scores[index] / 2
            scores[index] /= 2
    return scores


def reason_ranked(units: Sequence[Unit]) -> list[int]:
    """Given a failed attempt's units, return the units after the first, most likely to hold
    its reason first (`reason_scores`; the later one wins a tie)."""
    scores = reason_scores(units)
    return sorted(range(1, len(units)), key=lambda index: (-scores[index], -index))


def reason_units(units: Sequence[Unit], limit: int = MIN_REASON_UNITS) -> list[int]:
    """Given a failed attempt's units, return the `limit` that most likely hold its reason
    (`reason_ranked`), in order. Without a second unit, none."""
    return sorted(reason_ranked(units)[:limit])


def cause_units(units: Sequence[Unit], cap: int) -> list[int]:
    """Given a failed attempt's units and a character cap, return its first unit and the units
    that carry its cause and result, best first while they fit the cap, in order (all of them
    when the whole attempt fits)."""
    scores = reason_scores(units)
    chosen = [0]
    used = len(units[0].text) + 1
    for index in sorted(range(1, len(units)), key=lambda index: (-scores[index], -index)):
        cost = len(units[index].text) + 1
        if used + cost <= cap:
            chosen.append(index)
            used += cost
    return sorted(chosen)


def joined(text: str, units: Sequence[Unit], chosen: Sequence[int]) -> str:
    """Given an item's units and those to show (sorted), return them on their own source
    lines, each gap marked with " …"; a code block is closed again."""
    lines = text.split("\n")
    shape = shape_of(text)
    out: list[str] = []
    previous: int | None = None
    current: int | None = None
    for index in chosen:
        unit = units[index]
        gap = previous is not None and index != previous + 1
        if unit.line != current:
            if gap and out and shape != "prose":
                out.append("…")  # a line of code or a table row is never changed
            elif gap and out:
                out[-1] = out[-1].rstrip() + " …"
            source = lines[unit.line] if "\n" not in unit.text else unit.text
            indent = source[: len(source) - len(source.lstrip())]
            out.append(indent + unit.text.strip() if out else unit.text.rstrip())
            current = unit.line + unit.text.strip("\n").count("\n")  # a wrapped sentence ends here
        else:
            mark = " … " if gap else " "
            if not gap and previous is not None:
                pair = units[previous].text.strip() + unit.text.strip()
                if pair in lines[unit.line]:
                    mark = ""  # "…変えない。変えるなら…": as in the source, no space
            out[-1] = f"{out[-1].rstrip()}{mark}{unit.text.strip()}"
            current = unit.line + unit.text.strip("\n").count("\n")
        previous = index
    if shape == "fence":
        out.append(_closing(lines))
    return "\n".join(out)
