"""Given the root-level memory (MEMORY.md, notes/…), return the standing rules a carry shows.

Root-level notes compete: a note that states rules (imperatives in several languages, or a
note the user keeps in MEMORY.md) comes before knowledge, which is not shown but named by its
file; among rules, relevance to the hand-off's work (recall's confidence, and how much the note
shares the plan's and the ledger's distinctive words) and then force decide the order. Rules
are shown one by one — a list item or a paragraph of a note, never a cut inside one — so a long
MEMORY.md gives way line by line and a relevant note's one rule still fits; what a note does not
show is named by its lines, and a rule that does not fit at all by its title and `path:lines`.
Pure.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from carryd.carry.ledger import markdown_blocks
from carryd.carry.marks import rule_force
from carryd.carry.planner import PromptSegment
from carryd.carry.select import MemoryContextPlan
from carryd.index.entries import Entry
from carryd.index.redact import redact

STANDING_HEADING = "# Your standing rules (root-level memory: they hold in every workspace)"
UNSHOWN_DEFAULTS = "Root-level rules over the budget, not shown:"
LINKED_BONUS = 0.3  # a rule of a note MEMORY.md names, over one that is not as relevant
RELEVANCE_WEIGHT = 2.0  # a note's relevance (a cosine, 0..1) against recall's confidence (0..1)
MAX_NAMED = 6  # rules over the budget named one by one; the rest by their files
MAX_LISTED_CHARS = 240  # knowledge notes listed by name up to this; beyond, counted per folder
UNSHOWN_NOTES = "Root-level notes that state no rule, not shown (`carryd recall` finds them):"
NOT_SHOWN = "… not shown:"  # after a note's rules shown in part: its other lines


# --- relevance ------------------------------------------------------------------------------

_WIDE_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W\d_][\w-]*[^\W_]")
MIN_WORD = 4  # shorter Latin words are mostly grammar in every language


def _terms(text: str) -> Counter[str]:
    """Given a text, return its terms: words of four or more characters, casefolded, and in
    runs of CJK or Hangul (no spaces between words) each pair of characters."""
    folded = text.casefold()
    found: Counter[str] = Counter()
    for run in _WIDE_RUN.findall(folded):
        found.update(run[index : index + 2] for index in range(len(run) - 1))
    found.update(
        word for word in _WORD.findall(_WIDE_RUN.sub(" ", folded)) if len(word) >= MIN_WORD
    )
    return found


def _unit_vector(terms: Counter[str], idf: Mapping[str, float]) -> dict[str, float]:
    weights = {
        term: (1 + math.log(count)) * idf[term] for term, count in terms.items() if term in idf
    }
    norm = math.sqrt(sum(weight * weight for weight in weights.values())) or 1.0
    return {term: weight / norm for term, weight in weights.items()}


def note_relevance(entries: Sequence[Entry], workspace_text: str) -> dict[str, float]:
    """Given the root-level entries and the workspace's own text (its plan and ledger), return
    each root-level file's relevance to that work, 0..1: the cosine of their tf-idf vectors,
    the idf taken over the root-level files — a word most notes share ("the", "und", "pour")
    weighs little, in any language, and a word only the relevant note shares with the ledger
    ("Feldknoten", "cierre", "runner") weighs most."""
    texts: dict[str, list[str]] = {}
    for entry in entries:
        texts.setdefault(entry.path, []).append(entry.text)
    found = {path: _terms("\n".join(parts)) for path, parts in sorted(texts.items())}
    if not found or not workspace_text.strip():
        return {path: 0.0 for path in found}
    frequency: Counter[str] = Counter(term for terms in found.values() for term in terms)
    count = len(found)
    idf = {term: math.log((count + 1) / (df + 1)) + 1 for term, df in frequency.items()}
    target = _unit_vector(_terms(workspace_text), idf)
    return {
        path: sum(
            weight * target.get(term, 0.0) for term, weight in _unit_vector(terms, idf).items()
        )
        for path, terms in found.items()
    }


def standing_rules(
    entries: Sequence[Entry], confidence: Mapping[str, float], relevance: Mapping[str, float]
) -> list[tuple[Entry, float]]:
    """Given the root-level entries, the recall confidence of those hit and each file's
    relevance to the work (`note_relevance`), return the rules among them with their rank
    score, best first: a note that states imperatives (`carryd.carry.marks.rule_force`;
    MEMORY.md counts one more) before knowledge, which is not a standing rule (it is named,
    not shown); then relevance to the work (recall's confidence, shared distinctive words);
    then force."""
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
        density = force / max(1.0, len(text) / 200)
        score = (
            1.0
            + confidence.get(entry.id, 0.0)
            + RELEVANCE_WEIGHT * relevance.get(entry.path, 0.0)
            + 0.05 * min(density, 5.0)
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


# --- the segment ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    """One rule of a note as the carry shows it: a list item (with its sub-items) or a
    paragraph, redacted, with its lines in the file and whether it states a rule."""

    text: str
    line_start: int
    line_end: int
    gap_before: bool  # a blank line separates it from the line before it in the file
    rule: bool


@dataclass(frozen=True)
class _Note:
    """A ranked root-level entry: its whole block (as the selection rendered it), its head line
    and its rules one by one."""

    entry: Entry
    whole: str
    head: str
    lines: tuple[_Line, ...]
    score: float = 0.0  # its rank score (`standing_rules`)


_ATX = re.compile(r"^(#{1,5})(?=\s)")


def _note(entry: Entry, whole: str, score: float) -> _Note:
    """Given a ranked entry and its whole rendered block, return it cut into its rules."""
    memory = entry.path.casefold() == "memory.md"
    source = entry.text.split("\n")
    first = 1 if entry.heading_path and source and source[0].lstrip().startswith("#") else 0
    location = f"{entry.path}:{entry.line_start}-{entry.line_end}"
    if first:
        head = f"{_ATX.sub(lambda m: '#' + m.group(1), source[0].rstrip())} (`{location}`)"
    else:
        head = f"From `{location}`:"
    body = source[first:]
    lines: list[_Line] = []
    previous_end = 0
    for block in markdown_blocks("\n".join(body)):
        if block.kind in ("comment", "rule", "heading"):
            continue
        text = "\n".join(body[block.line_start - 1 : block.line_end]).rstrip()
        if not text.strip():
            continue
        gap = bool(lines) and any(
            not body[index].strip() for index in range(previous_end, block.line_start - 1)
        )
        offset = entry.line_start + first - 1
        lines.append(
            _Line(
                text=redact(text),
                line_start=offset + block.line_start,
                line_end=offset + block.line_end,
                gap_before=gap,
                rule=(memory and block.kind == "list") or rule_force(text) > 0,
            )
        )
        previous_end = block.line_end
    return _Note(entry, whole, redact(head), tuple(lines), score)


def _spans(lines: Sequence[_Line]) -> str:
    """Given lines of a note left out (document order), return their line spans "3-5,9"."""
    runs: list[list[int]] = []
    for line in lines:
        if runs and line.line_start <= runs[-1][1] + 2:
            runs[-1][1] = max(runs[-1][1], line.line_end)
        else:
            runs.append([line.line_start, line.line_end])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _shown(note: _Note, chosen: frozenset[int], *, whole: bool = True) -> str:
    """Given a note and the indices of its rules to show, return its block: whole when every
    rule is shown, else its head, those rules and one line naming the lines left out."""
    if whole and len(chosen) == len(note.lines):
        return note.whole
    out = [note.head]
    for index, line in enumerate(note.lines):
        if index in chosen:
            out.append(f"\n{line.text}" if line.gap_before and len(out) > 1 else line.text)
    left = [line for index, line in enumerate(note.lines) if index not in chosen]
    if left:
        out.append(f"{NOT_SHOWN} {note.entry.path}:{_spans(left)}")
    return "\n".join(out)


def standing_segment(
    defaults: Sequence[Entry], memory: MemoryContextPlan, *, cap: int
) -> PromptSegment:
    """Given the memory selection, return the standing-rules segment: the root-level rules it
    selected, best first, and the lines naming those left out and the knowledge notes, under
    one heading ("" when all are empty). It gets space before the ledger, up to `cap` (its
    share of the carry). Within it, rules are shown one by one: every rule before any line
    that states none, MEMORY.md's in the user's order first, then each note's in rank order;
    a note shown in part names the lines it leaves out, and a note none of whose rules fit is
    named by its title and lines."""
    notes = _ranked_notes(defaults, memory)
    everything = {index: frozenset(range(len(note.lines))) for index, note in enumerate(notes)}
    whole = _standing_text(defaults, memory, notes, everything)
    order = _rule_order(notes)

    def fit(room: int, _: Mapping[str, str]) -> str:
        limit = min(room, cap)
        if len(whole) <= limit:
            return whole
        # The notes left out are named by their paths while the rules are packed (counted per
        # folder only when even that does not fit), then by title and lines where room is left.
        for detail in (1, 0):
            chosen: dict[int, frozenset[int]] = {}
            text = _standing_text(defaults, memory, notes, chosen, detail=detail)
            if len(text) > limit:
                continue
            rules_left = False
            for index, number in order:
                if not notes[index].lines[number].rule and rules_left:
                    break  # a line that states no rule only where every rule is shown
                trial = {**chosen, index: chosen.get(index, frozenset()) | {number}}
                attempt = _standing_text(defaults, memory, notes, trial, detail=detail)
                if len(attempt) <= limit:
                    chosen, text = trial, attempt
                else:
                    rules_left = rules_left or notes[index].lines[number].rule
            named = _standing_text(defaults, memory, notes, chosen, detail=2)
            return named if len(named) <= limit else text
        return ""

    return PromptSegment(
        "standing", whole, False, priority=4, budget_priority=2, fit=fit if whole else None
    )


RULE_DECAY = 0.9  # each further rule of a file is worth this much of the one before
MEMORY_SCORE = 3.0  # a rule of MEMORY.md, before any other note's rule (before its decay)
# A note's rules are shown when it bears on the work: a rank score this high takes a relevance
# of 0.2 (`note_relevance`), a pointer from MEMORY.md or a recall hit; the others are named.
RELEVANT_SCORE = 1.0 + RELEVANCE_WEIGHT * 0.2


def _is_memory(entry: Entry) -> bool:
    return entry.path.casefold() == "memory.md"


def _rule_order(notes: Sequence[_Note]) -> list[tuple[int, int]]:
    """Given the ranked notes, return their rules (note index, rule index) in the order they
    are offered room: every rule before any line that states none; among rules, by the rank
    of the note (its place in the ranking) and the rule's place in its file — a file's first
    rules before its later ones, so a relevant note's first rule can come before the tail of
    a long MEMORY.md, in the user's order within each file."""
    places: dict[str, list[int]] = {}  # each file's rules by their lines: the file's order
    for note in notes:
        places.setdefault(note.entry.path, []).extend(
            line.line_start for line in note.lines if line.rule
        )
    for starts in places.values():
        starts.sort()
    keyed: list[tuple[int, float, int, int]] = []
    for index, note in enumerate(notes):
        memory = _is_memory(note.entry)
        for number, line in enumerate(note.lines):
            if not line.rule:
                keyed.append((1, 0.0, index, number))
                continue
            if not memory and note.score < RELEVANT_SCORE:
                continue  # a rule for other work: named, not shown
            place = places[note.entry.path].index(line.line_start)
            # MEMORY.md is the user's own list: each of its sections is as strong as the file
            score = MEMORY_SCORE if memory else note.score
            keyed.append((0, -score * RULE_DECAY**place, index, number))
    keyed.sort()
    return [(index, number) for _, _, index, number in keyed]


def _ranked_notes(defaults: Sequence[Entry], memory: MemoryContextPlan) -> list[_Note]:
    """Given the selection, return the standing rules in rank order: those it selected (with
    their rendered blocks), then those its own budget left out (one of their rules may still
    fit where the whole note did not)."""
    by_id = {entry.id: entry for entry in defaults}
    scores = {decision.memory_id: decision.score for decision in memory.decisions}
    notes = [
        _note(by_id[memory_id], block, scores.get(memory_id, 0.0))
        for memory_id, block in memory.standing_blocks
        if memory_id in by_id
    ]
    over = ("char_budget_exceeded", "token_budget_exceeded")
    for decision in memory.decisions:
        if decision.memory_id in by_id and decision.reason in over:
            note = _note(by_id[decision.memory_id], "", decision.score)
            whole = _shown(note, frozenset(range(len(note.lines))), whole=False)
            notes.append(dataclasses.replace(note, whole=whole))
    return notes


def _standing_text(
    defaults: Sequence[Entry],
    memory: MemoryContextPlan,
    notes: Sequence[_Note],
    chosen: Mapping[int, frozenset[int]],
    *,
    detail: int = 2,
) -> str:
    """Given the ranked notes and which of their rules to show, return the segment: the notes
    shown (in rank order) and the lines naming every note not shown ("" when there is
    nothing), at `detail` (`unshown_defaults`)."""
    blocks = [_shown(note, chosen[index]) for index, note in enumerate(notes) if chosen.get(index)]
    left = tuple(note.entry.id for index, note in enumerate(notes) if not chosen.get(index))
    unshown = unshown_defaults(defaults, memory, also=left, detail=detail)
    body = "\n".join(part for part in ("\n\n".join(blocks), unshown) if part)
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
        if detail > 1:
            named = "; ".join(
                f"{_title(entry)} ({entry.path}:{entry.line_start}-{entry.line_end})"
                for entry in missing[:MAX_NAMED]
            )
            rest = missing[MAX_NAMED:]
            if rest:
                named += f"; +{len(rest)} in {_grouped(sorted({e.path for e in rest}))}"
        elif detail == 1:
            named = _compact(root_defaults, missing)
        else:
            named = f"+{len(missing)} in {_folders(sorted({e.path for e in missing}))}"
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


def _compact(root_defaults: Sequence[Entry], missing: Sequence[Entry]) -> str:
    """Given the root-level entries and those not shown, return them named compactly: a file
    none of whose entries is shown by its path (grouped by folder), a file shown in part by
    its path and the lines left out ("MEMORY.md:3-5,17-20; notes/{ci-runners, git}.md")."""
    left = {entry.id for entry in missing}
    partial: list[str] = []
    whole: list[str] = []
    for path in sorted({entry.path for entry in missing}):
        entries = [e for e in root_defaults if e.path == path and e.text.strip()]
        if all(entry.id in left for entry in entries):
            whole.append(path)
            continue
        spans = ",".join(
            f"{e.line_start}-{e.line_end}" if e.line_end > e.line_start else str(e.line_start)
            for e in entries
            if e.id in left
        )
        partial.append(f"{path}:{spans}")
    return "; ".join([*partial, *([_grouped(whole)] if whole else [])])


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
