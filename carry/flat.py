"""Given a workspace's raw plan and ledger text, return the flat-injection carry (the fallback).

This is the ancestor's fixed truncation — plan 3,000, ledger 8,000, total 18,000 chars — kept
as the carry of last resort when any step of the planned carry fails (I4). It depends on
nothing that can fail on odd input: no ledger parsing, no index, no model. It is still
redacted (I3: redacted before cutting, so a cut can never leave half a secret the detector
no longer recognises) and still byte-stable (I1: same input, same bytes, the discipline first).

The trailer every carry ends with lives here too, so the fallback has no other dependency.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass

from carryd.carry.planner import PromptPlan, PromptSegment, plan_prompt, remaining_chars
from carryd.index.redact import redact

FLAT_PLAN_CHARS = 3_000
FLAT_LEDGER_CHARS = 8_000
FLAT_TOTAL_CHARS = 18_000
FLAT_RULES_CHARS = 1_500  # the fallback's share for the user's standing rules

FLAT_NOTE = (
    "> This carry is the flat fallback: the plan and the ledger are cut at fixed lengths "
    "because the planned carry could not be built (the manifest next to this file says why)."
)


@dataclass(frozen=True)
class FlatInputs:
    workspace: str
    discipline: str
    plan_text: str | None  # None: no PLAN.md (or unreadable)
    ledger_text: str | None  # None: no ledger (or unreadable)
    plan_path: str  # relative to the memory root
    ledger_path: str
    root: str | None = None  # the memory root, named in the trailer (None: not named)
    # The fallback of a planned carry (issue 20): cut at item boundaries, newest kept, with
    # the user's standing rules (`rules_text`, root-level MEMORY.md). False: the plain fixed
    # truncation (the P9 bench's arm ①, and the cost a planned carry must not exceed).
    whole_items: bool = False
    rules_text: str | None = None
    rules_path: str = "MEMORY.md"


def trailer(
    workspace: str,
    *,
    ledger_path: str,
    plan_path: str,
    expand: bool = True,
    root: str | None = None,
) -> str:
    """Given a workspace and its files' root-relative paths, return the carry's trailer.

    Without `expand` (a carry that names no `mem_…` id) it does not mention expanding one.
    With `root` (the memory root, absolute) the commands name it, so they run as written from
    any folder (issue 10 item 6); that is where the carry names its root.
    """
    where = f" --root {shlex.quote(root)}" if root else ""
    lines = ["# How to read more"]
    if expand:
        lines.append(
            f"- `carryd expand <id>{where}` prints the full text of an anchor (`mem_…`) from "
            "the current files; several ids at once are fine."
        )
    lines.append(
        f'- `carryd recall "<question>" --workspace {workspace}{where}` searches this workspace '
        "and your root-level memory."
    )
    lines.append(
        f"- The full ledger is `{ledger_path}` and the full plan is `{plan_path}` "
        "(paths relative to the memory root)."
    )
    return "\n".join(lines)


def safe_prefix(text: str, limit: int) -> str:
    """Given text and a limit, return its longest prefix of ≤ limit chars that ends on a
    grapheme boundary (never inside a surrogate pair, combining sequence, ZWJ emoji or flag)."""
    if len(text) <= limit:
        return text
    end = max(0, limit)
    while end > 0 and _continues_grapheme(text, end):
        end -= 1
    return text[:end]


def build_flat_carry(
    inputs: FlatInputs,
    *,
    total_chars: int = FLAT_TOTAL_CHARS,
    plan_chars: int = FLAT_PLAN_CHARS,
    ledger_chars: int = FLAT_LEDGER_CHARS,
) -> PromptPlan:
    """Given raw inputs and budgets, return the flat carry and its segment decisions.

    Raises PromptBudgetError only when the discipline and trailer alone exceed `total_chars`.
    """
    discipline = inputs.discipline
    # The flat carry names no anchor ids, so its trailer does not offer to expand one.
    closing = trailer(
        inputs.workspace,
        ledger_path=inputs.ledger_path,
        plan_path=inputs.plan_path,
        expand=False,
        root=inputs.root,
    )
    note = redact(FLAT_NOTE)
    required = [discipline, note, redact(closing)]
    whole = inputs.whole_items
    rules_block = ""
    if whole and inputs.rules_text is not None:  # the user's rules get their room first
        rules_block = _block(
            f"# Your standing rules (`{inputs.rules_path}`)\n",
            inputs.rules_text,
            min(FLAT_RULES_CHARS, total_chars // 6),
            required,
            total_chars,
            path=inputs.rules_path,
            whole=True,
            newest=False,
        )
    taken = [*required, rules_block] if rules_block else required
    ledger_block = ""
    if inputs.ledger_text is not None:
        how = "whole items, the newest kept" if whole else f"first {ledger_chars} chars"
        ledger_block = _block(
            f"# Handoff ledger (`{inputs.ledger_path}`, {how})\n",
            inputs.ledger_text,
            ledger_chars,
            taken,
            total_chars,
            path=inputs.ledger_path,
            whole=whole,
            newest=True,
        )
    plan_block = ""
    if inputs.plan_text is not None:
        how = "whole items" if whole else f"first {plan_chars} chars"
        plan_block = _block(
            f"# Plan (`{inputs.plan_path}`, {how})\n",
            inputs.plan_text,
            plan_chars,
            [*taken, ledger_block] if ledger_block else taken,
            total_chars,
            path=inputs.plan_path,
            whole=whole,
            newest=False,
        )

    segments = [
        PromptSegment("discipline", discipline, required=True, priority=0, budget_priority=0),
        PromptSegment("flat_note", note, required=True, priority=1, budget_priority=0),
        PromptSegment("plan", plan_block, required=False, priority=2, budget_priority=2),
        PromptSegment("ledger", ledger_block, required=False, priority=3, budget_priority=1),
        PromptSegment("standing", rules_block, required=False, priority=4, budget_priority=0),
        PromptSegment("trailer", redact(closing), required=True, priority=9, budget_priority=0),
    ]
    return plan_prompt(segments, budget_chars=total_chars)


_BLOCK_START = re.compile(r"^(?:#{1,6}\s|\s{0,1}(?:[-*+]|\d+[.)])\s)")
_ISO_DATE = re.compile(r"(?:19|20)\d\d-\d\d-\d\d")


def item_blocks(text: str) -> list[tuple[int, int]]:
    """Given a text, return its blocks as 1-based inclusive line ranges — a heading, a
    top-level list item with its continuation lines, a paragraph, a code block — found by
    line shape alone: the fallback parses nothing, so it cannot fail where the planner did."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        fence = line.lstrip().startswith(("```", "~~~"))
        if fenced:
            fenced = not fence
            continue
        boundary = not line.strip() or (_BLOCK_START.match(line) is not None) or fence
        if boundary and start is not None:
            blocks.append((start, number - 1))
            start = None
        if line.strip() and start is None:
            start = number
        fenced = fence
        if line.startswith("#") and start is not None:
            blocks.append((start, number))
            start = None
    if start is not None:
        blocks.append((start, text.count("\n") + 1))
    return blocks


def _newest_last(text: str) -> bool:
    """Given a text, return whether its newest entries are at its end (its dates rise)."""
    dates = _ISO_DATE.findall(text)
    half = len(dates) // 2
    return len(dates) < 2 or max(dates[half:]) >= max(dates[:half])


def item_cut(text: str, limit: int, path: str, *, newest: bool) -> str:
    """Given a text, a limit and its path, return whole blocks within the limit (never a cut
    inside one) and a pointer naming the lines left out. With `newest`, the opening blocks
    (up to a quarter) and then the newest end of the file; else the blocks from the top."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    blocks = item_blocks(text)

    def size(block: tuple[int, int]) -> int:
        return sum(len(line) + 1 for line in lines[block[0] - 1 : block[1]])

    pointer = len(f"… not shown: {path}:{len(lines)}-{len(lines)}") * 2 + 2
    kept: list[tuple[int, int]] = []
    used = pointer
    order = list(blocks)
    if newest:
        head, opening = [], 0
        for block in blocks:
            if opening + size(block) > limit // 4 or used + size(block) > limit:
                break
            head.append(block)
            opening += size(block)
            used += size(block)
        rest = blocks[len(head) :]
        kept = head
        order = list(reversed(rest)) if _newest_last(text) else rest
    for block in order:
        if used + size(block) > limit:
            break
        kept.append(block)
        used += size(block)
    out: list[str] = []
    previous = 0
    for start, end in sorted(kept):
        gap = lines[previous : start - 1]
        if any(line.strip() for line in gap):
            out.append(f"… not shown: {path}:{previous + 1}-{start - 1}")
        else:
            out.extend(gap)  # the blank lines between two blocks shown
        out.extend(lines[start - 1 : end])
        previous = end
    if previous < len(lines) and any(line.strip() for line in lines[previous:]):
        out.append(f"… not shown: {path}:{previous + 1}-{len(lines)}")
    return "\n".join(out)


def _block(
    heading: str,
    text: str,
    cap: int,
    taken: list[str],
    total_chars: int,
    *,
    path: str,
    whole: bool,
    newest: bool,
) -> str:
    """Given a block's heading and source, its cap and what is taken, return the block: the
    redacted text cut to the room left — at a fixed length, or (`whole`) at item boundaries."""
    heading = redact(heading)
    room = min(cap, remaining_chars(taken, total_chars) - len(heading))
    source = redact(text).strip("\n")
    if whole:
        body = item_cut(source, room, path, newest=newest)
    else:
        body = safe_prefix(source, room).rstrip("\n")
    return heading + body if body.strip() else ""


def _continues_grapheme(text: str, index: int) -> bool:
    """Given a position, return whether text[index] belongs to the grapheme of text[index-1]."""
    current, previous = text[index], text[index - 1]
    code, before = ord(current), ord(previous)
    if previous == "\r" and current == "\n":
        return True
    if 0xDC00 <= code <= 0xDFFF and 0xD800 <= before <= 0xDBFF:  # a lone surrogate pair
        return True
    if unicodedata.category(current) in ("Mn", "Mc", "Me"):  # combining marks
        return True
    if current == "\u200d" or previous == "\u200d":  # zero-width joiner sequences
        return True
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:  # variation selectors
        return True
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F:  # skin tones, emoji tags
        return True
    if 0x1160 <= code <= 0x11FF or 0xD7B0 <= code <= 0xD7FF:  # Hangul vowel/final jamo
        return True
    if _is_regional_indicator(code) and _is_regional_indicator(before):
        # Flags are pairs: the cut is inside one when an odd number of indicators precede.
        run = 0
        position = index - 1
        while position >= 0 and _is_regional_indicator(ord(text[position])):
            run += 1
            position -= 1
        return run % 2 == 1
    return False


def _is_regional_indicator(code: int) -> bool:
    return 0x1F1E6 <= code <= 0x1F1FF
