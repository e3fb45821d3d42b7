"""Given ledger items, return how they compete for room: date, state, labels and priority.

A ledger is append-only, so later in the file means newer — unless an item carries an explicit
date, which wins. Within a section items are ranked by

1. the sidecar's weight, when the host wrote one (it decides, seed P7);
2. state: open before done, done before superseded — an open `[ ]`, a failed attempt, a current
   status line come first; a ticked `[x]`, "done"/"已完成" lines, and lines marked superseded
   (`(superseded)`, `~~…~~`, "已废弃", "obsolete" …) last;
3. recency: the item's own date, else the newest date above it in the section (an undated
   item is at least as new as what precedes it), then its position.

Items may name each other ("方案 B", "attempt 3", "[D2]"): `labels_of` finds the label an
item starts with and `references` finds labels mentioned in other items, so a kept item never
points to an item that vanished without a trace. Everything here is pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from carryd.carry.ledger import LedgerItem, SectionKind

ItemState = Literal["open", "done", "superseded"]
STATE_RANK: dict[ItemState, int] = {"open": 0, "done": 1, "superseded": 2}

DateKey = tuple[int, int, int]

# The item's "head": bullet, checkbox, kind emoji and emphasis before its first words.
_HEAD = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\[[ xX]\])?[\s*_`>]*(?:[✅✔☑✓❌✘✗✖☐⚠🔴🟢]\ufe0f?\s*)*"
)
_FULL_DATE = re.compile(
    r"(?<!\d)(20\d{2}|19\d{2})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?!\d)"
)
_MONTH_DAY_CJK = re.compile(r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_MONTH_DAY = re.compile(r"^(\d{1,2})[-/](\d{1,2})(?![\d-])")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAME = re.compile(
    r"^(?:(\d{1,2})\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
    r"(?:\s+(\d{1,2}))?(?:,?\s+(20\d{2}))?(?![a-z])",
    re.IGNORECASE,
)
HEAD_CHARS = 16  # a date this far into the first line is the item's own, not data in it
BRACKETED_HEAD_CHARS = 40  # … and a bracketed one this far ("attempt 27 (11-29): …")
_BRACKETED_MONTH_DAY = re.compile(r"[\[(（【]\s*(\d{1,2})[-/](\d{1,2})(?![\d-])")
_BRACKETED = re.compile(r"[\[(（【]\s*$")

_SUPERSEDED = re.compile(
    r"(?i:\bsuperseded\b|\bobsolete\b|\bno longer (?:true|valid|"
    r"relevant|applies|accurate|current)\b|\breplaced by\b|\(old\)|\[old\]|\(outdated\))"
    r"|已废弃|作废|已过时|过时了|已被取代|已取代|被取代|不再适用|不再成立|已失效|（旧）|\(旧\)|【旧】"
)
_STRUCK = re.compile(r"^~~.+~~\W*$|^~~")
_DONE_HEAD = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[[xX]\]")
_DONE_WORDS = re.compile(
    r"(?i:\(done\)|\[done\]|\bdone\s*[.!]?\s*$|—\s*done\b|:\s*done\b)|（已完成）|\(已完成\)|已完成$"
)

_LABEL_WORDS = (
    r"方案|尝试|思路|办法|假设|实验|猜想|路线"
    r"|(?i:attempt|approach|option|plan|try|idea|hypothesis|experiment|theory|fix|variant)"
)
_LABEL = re.compile(rf"({_LABEL_WORDS})\s*#?\s*(\d{{1,3}}|[A-Z](?:\d{{1,2}})?)(?![\w])")
_TAG = re.compile(r"^\[?([A-Z]{1,3}-?\d{1,3})\]?(?:\s*[:：.)\]]|\s+[(（])")
_HASH_TAG = re.compile(r"^#(\d{1,4})\b")


@dataclass(frozen=True)
class ItemFacts:
    """What packing needs to know about one item, besides its text and kind."""

    state: ItemState
    date: DateKey | None  # the item's own explicit date
    recency: DateKey  # its own date, else the newest date above it in its section
    label: str | None  # e.g. "方案:B", "attempt:3", "tag:D2"
    references: frozenset[str]  # labels of other items it mentions


def item_head(text: str) -> str:
    """Given an item's text, return its first line without bullet, checkbox and kind marks."""
    first = text.split("\n", 1)[0]
    match = _HEAD.match(first)
    return first[match.end() :] if match is not None else first


def explicit_date(text: str, *, year: int = 0) -> tuple[DateKey, str] | None:
    """Given an item's text, return its own date and the date's text (None when it has none).

    Only a date at the head of the first line (the first few words after bullet and marks) or
    in brackets on the first line counts: "2026-09-09: …", "[09-09] …", "9月9日 …",
    "Sep 9 — …". A date without a year takes `year`.
    """
    head = item_head(text)

    def own(start: int) -> bool:
        bracketed = _BRACKETED.search(head[:start]) is not None
        return start <= HEAD_CHARS or (bracketed and start <= BRACKETED_HEAD_CHARS)

    for match in _FULL_DATE.finditer(head):
        if own(match.start()):
            key = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
            if _valid(key):
                return key, match.group(0)
    for match in _MONTH_DAY_CJK.finditer(head):
        if own(match.start()):
            key = (year, int(match.group(1)), int(match.group(2)))
            if _valid(key):
                return key, match.group(0)
    stripped = head.lstrip("[(（【*_ ")
    offset = len(head) - len(stripped)
    short = _MONTH_DAY.match(stripped)
    if short is not None:
        key = (year, int(short.group(1)), int(short.group(2)))
        if _valid(key):
            return key, head[offset : offset + short.end()]
    for match in _BRACKETED_MONTH_DAY.finditer(head, 0, BRACKETED_HEAD_CHARS):
        key = (year, int(match.group(1)), int(match.group(2)))
        if _valid(key):
            return key, match.group(0).lstrip("[(（【 ")
    named = _MONTH_NAME.match(stripped)
    if named is not None and (named.group(1) or named.group(3)):
        month = _MONTHS.index(named.group(2).lower()[:3]) + 1
        day = int(named.group(1) or named.group(3))
        key = (int(named.group(4)) if named.group(4) else year, month, day)
        if _valid(key):
            return key, head[offset : offset + named.end()]
    return None


def _valid(key: DateKey) -> bool:
    return 1 <= key[1] <= 12 and 1 <= key[2] <= 31


def item_state(item: LedgerItem, section: SectionKind) -> ItemState:
    """Given an item and its section, return whether it is open, done or superseded."""
    head = item_head(item.text)
    if _SUPERSEDED.search(item.text.split("\n", 1)[0]) or _STRUCK.match(head.strip()):
        return "superseded"
    if item.kind == "done" or _DONE_HEAD.match(item.text) or _DONE_WORDS.search(head.strip()):
        return "done"
    if item.kind == "success" and section in ("status", "next"):
        return "done"  # a ticked step or a "✅ merged" status line: settled
    return "open"


def label_of(text: str) -> str | None:
    """Given an item's text, return the label it starts with ("方案:B", "tag:D2"), or None."""
    head = item_head(text).lstrip("*_ ")
    tag = _TAG.match(head) or _HASH_TAG.match(head)
    if tag is not None:
        return f"tag:{tag.group(1).replace('-', '')}"
    match = _LABEL.match(head)
    if match is not None:
        return f"{match.group(1).casefold()}:{match.group(2)}"
    return None


def references_in(text: str, labels: frozenset[str]) -> frozenset[str]:
    """Given a text and the labels that exist, return the labels the text mentions."""
    found: set[str] = set()
    for match in _LABEL.finditer(text):
        key = f"{match.group(1).casefold()}:{match.group(2)}"
        if key in labels:
            found.add(key)
    for label in labels:
        if label.startswith("tag:"):
            tag = label[4:]
            if re.search(rf"(?<![\w-]){re.escape(tag)}(?![\w-])", text):
                found.add(label)
    return frozenset(found)


def item_facts(
    items: Sequence[LedgerItem], section: SectionKind, *, year: int = 0
) -> tuple[ItemFacts, ...]:
    """Given a section's items in document order, return the facts of each.

    References are filled in by `with_references`, which sees every section.
    """
    facts: list[ItemFacts] = []
    newest: DateKey = (0, 0, 0)
    for item in items:
        found = explicit_date(item.text, year=year)
        date = found[0] if found else None
        if date is not None and date[0]:
            year = date[0]
        recency = date if date is not None else newest
        newest = max(newest, recency)
        facts.append(
            ItemFacts(item_state(item, section), date, recency, label_of(item.text), frozenset())
        )
    return tuple(facts)


def with_references(
    sections: Sequence[tuple[Sequence[LedgerItem], Sequence[ItemFacts]]],
) -> tuple[tuple[ItemFacts, ...], ...]:
    """Given every section's items and facts, return the facts with cross-references filled."""
    labels = frozenset(
        fact.label for _, facts in sections for fact in facts if fact.label is not None
    )
    result: list[tuple[ItemFacts, ...]] = []
    for items, facts in sections:
        updated: list[ItemFacts] = []
        for item, fact in zip(items, facts, strict=True):
            own = {fact.label} if fact.label else set()
            refs = references_in(item.text, labels) - own if labels else frozenset()
            updated.append(
                ItemFacts(fact.state, fact.date, fact.recency, fact.label, frozenset(refs))
            )
        result.append(tuple(updated))
    return tuple(result)


def priority_order(items: Sequence[LedgerItem], facts: Sequence[ItemFacts]) -> list[int]:
    """Given a section's items and facts, return item indices, the first to keep first.

    Sidecar weight (when any item has one), then state (open, done, superseded), then
    recency (newest first), then position (later first).
    """
    weighted = any(item.weight is not None for item in items)

    def key(index: int) -> tuple[float, int, tuple[int, int, int], int]:
        weight = -(items[index].weight or 0.0) if weighted else 0.0
        newest = facts[index].recency
        state = STATE_RANK[facts[index].state]
        return (weight, state, (-newest[0], -newest[1], -newest[2]), -index)

    return sorted(range(len(items)), key=key)


def ledger_year(title: str | None) -> int:
    """Given the ledger's title, return the year it names (0 when none)."""
    if title:
        match = _FULL_DATE.search(title) or re.search(r"(?<!\d)(20\d{2})(?!\d)", title)
        if match is not None:
            return int(match.group(1))
    return 0
