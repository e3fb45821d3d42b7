"""Given a workspace's raw plan and ledger text, return the flat-injection carry (the fallback).

This is the ancestor's fixed truncation — plan 3,000, ledger 8,000, total 18,000 chars — kept
as the carry of last resort when any step of the planned carry fails (I4). It depends on
nothing that can fail on odd input: no ledger parsing, no index, no model. It is still
redacted (I3: redacted before cutting, so a cut can never leave half a secret the detector
no longer recognises) and still byte-stable (I1: same input, same bytes, the discipline first).

The trailer every carry ends with lives here too, so the fallback has no other dependency.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from carryd.carry.planner import PromptPlan, PromptSegment, plan_prompt, remaining_chars
from carryd.index.redact import redact

FLAT_PLAN_CHARS = 3_000
FLAT_LEDGER_CHARS = 8_000
FLAT_TOTAL_CHARS = 18_000

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


def trailer(workspace: str, *, ledger_path: str, plan_path: str, expand: bool = True) -> str:
    """Given a workspace and its files' root-relative paths, return the carry's trailer.

    Without `expand` (a carry that names no `mem_…` id) it does not mention expanding one.
    """
    lines = ["# How to read more"]
    if expand:
        lines.append(
            "- `carryd expand <id>` prints the full text of an anchor (`mem_…`) from the current "
            "files; several ids at once are fine."
        )
    lines.append(
        f'- `carryd recall "<question>" --workspace {workspace}` searches this workspace and '
        "your root-level memory."
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
    )
    note = redact(FLAT_NOTE)
    required = [discipline, note, redact(closing)]

    ledger_block = ""
    if inputs.ledger_text is not None:
        heading = redact(
            f"# Handoff ledger (`{inputs.ledger_path}`, first {ledger_chars} chars)\n"
        )
        room = min(ledger_chars, remaining_chars(required, total_chars) - len(heading))
        body = safe_prefix(redact(inputs.ledger_text).strip("\n"), room)
        ledger_block = heading + body if body.strip() else ""

    plan_block = ""
    if inputs.plan_text is not None:
        heading = redact(f"# Plan (`{inputs.plan_path}`, first {plan_chars} chars)\n")
        taken = [*required, ledger_block] if ledger_block else required
        room = min(plan_chars, remaining_chars(taken, total_chars) - len(heading))
        body = safe_prefix(redact(inputs.plan_text).strip("\n"), room)
        plan_block = heading + body if body.strip() else ""

    segments = [
        PromptSegment("discipline", discipline, required=True, priority=0, budget_priority=0),
        PromptSegment("flat_note", note, required=True, priority=1, budget_priority=0),
        PromptSegment("plan", plan_block, required=False, priority=2, budget_priority=2),
        PromptSegment("ledger", ledger_block, required=False, priority=3, budget_priority=1),
        PromptSegment("trailer", redact(closing), required=True, priority=9, budget_priority=0),
    ]
    return plan_prompt(segments, budget_chars=total_chars)


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
