"""Given the root-level memory (MEMORY.md, notes/…), return the standing rules a carry shows.

Root-level notes compete: a note that states rules (imperatives in several languages, or a
note the user keeps in MEMORY.md) comes before knowledge, which is not shown but named by its
file; among rules, relevance to the hand-off's goal and next steps (recall's confidence, shared
words) and then force decide the order. A rule that does not fit is named by its title and
`path:lines`. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from carryd.carry.marks import rule_force
from carryd.carry.planner import PromptSegment
from carryd.carry.select import MemoryContextPlan
from carryd.index.entries import Entry
from carryd.index.redact import redact

STANDING_HEADING = "# Your standing rules (root-level memory: they hold in every workspace)"
UNSHOWN_DEFAULTS = "Root-level rules over the budget, not shown:"
LINKED_BONUS = 0.3  # a rule of a note MEMORY.md names, over one that is not as relevant
MAX_NAMED = 6  # rules over the budget named one by one; the rest by their files
MAX_LISTED_CHARS = 240  # knowledge notes listed by name up to this; beyond, counted per folder
UNSHOWN_NOTES = "Root-level notes that state no rule, not shown (`carryd recall` finds them):"


def standing_rules(
    entries: Sequence[Entry], confidence: Mapping[str, float], terms: frozenset[str]
) -> list[tuple[Entry, float]]:
    """Given the root-level entries, the recall confidence of those hit and the goal's words,
    return the rules among them with their rank score, best first: a note that states
    imperatives (`carryd.carry.marks.rule_force`; MEMORY.md counts one more) before knowledge,
    which is not a standing rule (it is named, not shown); then relevance to the goal and the
    next steps (recall's confidence, shared words); then force."""
    ranked: list[tuple[Entry, float]] = []
    linked = _linked_from_memory(entries)
    for position, entry in enumerate(entries):
        text = entry.text.strip()
        if not text:
            continue
        force = rule_force(text)
        if entry.path.casefold() == "memory.md":
            # The user's own standing-rules file: its rules first, in the user's order; what
            # states no imperative there (an introduction) after the rules of other notes.
            score = 3.0 - 0.001 * position if force else 1.5 - 0.001 * position
            ranked.append((entry, score))
            continue
        if force <= 0:
            continue
        folded = text.casefold()
        shared = sum(1 for term in terms if term in folded)
        density = force / max(1.0, len(text) / 200)
        score = (
            1.0 + confidence.get(entry.id, 0.0) + 0.08 * min(shared, 10) + 0.05 * min(density, 5.0)
        )
        if entry.path in linked:
            # A note MEMORY.md points to ("See notes/ci-runners.md before running anything on
            # them"): the user made its rules part of theirs — a little over an equally
            # relevant note's.
            score += LINKED_BONUS
        ranked.append((entry, score))
    ranked.sort(key=lambda pair: (-pair[1], pair[0].path, pair[0].line_start))
    return ranked


def _linked_from_memory(entries: Sequence[Entry]) -> set[str]:
    """Given the root-level entries, return the paths of the notes MEMORY.md names ("voir
    notes/bigquery-couts.md", "see `ci-runners.md`") by their file name, as a whole word."""
    memory = " ".join(e.text for e in entries if e.path.casefold() == "memory.md")
    if not memory:
        return set()
    return {
        entry.path
        for entry in entries
        if entry.path.casefold() != "memory.md"
        and re.search(
            rf"(?<![\w-]){re.escape(entry.path.rpartition('/')[2])}(?![\w-])", memory, re.I
        )
    }


def standing_segment(
    defaults: Sequence[Entry], memory: MemoryContextPlan, *, cap: int
) -> PromptSegment:
    """Given the memory selection, return the standing-rules segment: the root-level rules it
    selected, best first, and the lines naming those left out and the knowledge notes, under
    one heading ("" when all are empty). It gets space before the ledger, up to `cap` (its
    share of the carry); the last rules, in rank order, give way and are named."""
    blocks = memory.standing_blocks
    whole = _standing_text(defaults, memory, len(blocks))

    def fit(room: int, _: Mapping[str, str]) -> str:
        limit = min(room, cap)
        for count in range(len(blocks), -1, -1):
            for detail in (2, 1, 0):  # the rules themselves before the names of notes
                text = _standing_text(defaults, memory, count, detail=detail)
                if len(text) <= limit:
                    return text
        return ""

    return PromptSegment(
        "standing", whole, False, priority=4, budget_priority=2, fit=fit if whole else None
    )


def _standing_text(
    defaults: Sequence[Entry], memory: MemoryContextPlan, count: int, *, detail: int = 2
) -> str:
    """Given the selection and how many of its standing blocks to show, return the segment:
    those blocks and the lines naming every note not shown ("" when there is nothing), at
    `detail` (`unshown_defaults`)."""
    shown = memory.standing_blocks[:count]
    left = tuple(memory_id for memory_id, _ in memory.standing_blocks[count:])
    unshown = unshown_defaults(defaults, memory, also=left, detail=detail)
    body = "\n".join(part for part in ("\n\n".join(b for _, b in shown), unshown) if part)
    return f"{STANDING_HEADING}\n{body}" if body else ""


def unshown_defaults(
    root_defaults: Sequence[Entry],
    plan: MemoryContextPlan,
    *,
    also: Sequence[str] = (),
    detail: int = 2,
) -> str:
    """Given the memory selection (and ids of selected defaults the carry's budget left out),
    return the lines naming root-level notes not shown ("" when every one is shown): a rule
    over the budget by its title and `path:lines` (`detail` 2), by its title and path (1),
    or counted per folder (0); knowledge notes by their files (counted at 0) — nothing the
    user wrote at root level is silently absent."""
    by_id = {entry.id: entry for entry in root_defaults}
    over = ("char_budget_exceeded", "token_budget_exceeded")
    missing_ids = [
        decision.memory_id
        for decision in plan.decisions
        if decision.memory_id in by_id and (decision.reason in over)
    ]
    missing_ids += [memory_id for memory_id in also if memory_id in by_id]
    missing = sorted(
        {memory_id: by_id[memory_id] for memory_id in missing_ids}.values(),
        key=lambda entry: (entry.path, entry.line_start),
    )
    candidates = {decision.memory_id for decision in plan.decisions}
    shown = {memory_id for memory_id, _ in plan.standing_blocks} - set(missing_ids)
    lines = []
    if missing:
        first = MAX_NAMED if detail else 0
        named = "; ".join(
            f"{_title(entry)} ({entry.path}:{entry.line_start}-{entry.line_end})"
            if detail > 1
            else f"{_title(entry)} ({entry.path})"
            for entry in missing[:first]
        )
        rest = missing[first:]
        if rest:
            files = sorted({e.path for e in rest})
            where = _grouped(files) if detail else _folders(files)
            named += f"{'; ' if named else ''}+{len(rest)} in {where}"
        lines.append(f"{UNSHOWN_DEFAULTS} {named}")
    others = sorted(
        {
            entry.path
            for entry in root_defaults
            if entry.id not in candidates and entry.id not in shown and entry.text.strip()
        }
        - {entry.path for entry in root_defaults if entry.id in shown}
    )
    if others:
        listed = _grouped(others)
        if not detail or len(listed) > MAX_LISTED_CHARS:
            listed = f"{len(others)} files in {_folders(others)}"
        lines.append(f"{UNSHOWN_NOTES} {listed}")
    return redact("\n".join(lines)) if lines else ""


def _folders(paths: Sequence[str]) -> str:
    """Given paths, return the folders that hold them ("notes/", "MEMORY.md" at the top)."""
    tops = sorted({path for path in paths if "/" not in path})
    folders = sorted({path.rpartition("/")[0] + "/" for path in paths if "/" in path})
    return ", ".join([*tops, *folders])


def _title(entry: Entry) -> str:
    title = entry.heading_path[-1] if entry.heading_path else entry.l0
    return " ".join(title.split())[:80]


def _grouped(paths: Sequence[str]) -> str:
    """Given paths, return them grouped by folder: "MEMORY.md, notes/{a, b}.md"."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        folders.setdefault(folder, []).append(name.removesuffix(".md"))
    parts: list[str] = []
    for folder, names in folders.items():
        if not folder:
            parts.extend(f"{name}.md" for name in names)
        else:
            parts.append(f"{folder}/{{{', '.join(names)}}}.md")
    return ", ".join(parts)
