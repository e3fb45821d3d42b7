"""Given recall hits, return the recalled-memory segment and why each hit is in or out (S15).

The chain is fixed and its order matters (seed 000, "选择顺序为什么不能交换"):

    scope gate → confidence gate → authority precedence → exact dedupe
      → explicit conflict resolution on slot → stable top-k → char and token budgets

One small pure function per step, each returning the positions it keeps and the decisions it
made (`StepOutcome`); `select_memory_context` writes the chain out:

    scope_gate             another workspace's memory is out     (scope_mismatch)
    confidence_gate        a relevance hit below min_score is out (low_confidence)
    authority_precedence   order by authority → score ↓ → rank ↑ → captured_at ↓ → id ↑
    dedupe                 same (text, slot) as a stronger one    (duplicate_content)
    resolve_conflicts      a slot's first holder wins it          (authority_loser, conflict_loser)
    pack_within_budgets    stable top-k, then chars and tokens    (top_k_reached,
                           char_budget_exceeded, token_budget_exceeded, selected)

The precedence order is computed before the gates run (they do not depend on order, so they
still decide before authority can) because every later step reads "first in that order wins".

Every candidate leaves with exactly one `MemoryDecision`. Retrieval is not redone here: the
adapter copies recall's confidence, rank and provenance and never re-scores (S12/S15 boundary).

Authority says where a memory lives, never what its text claims: root level is `user_default`,
a workspace's files are `workspace_override`, the active ledger's explicit requirements are
`current_turn`. An authority value outside those three fails closed: the adapter raises
`ValueError`, so a caller can never smuggle in a made-up higher level.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

# Re-exported (`X as X`): select's callers (segments, the daemon, tests) name these from here.
from carryd.carry.budgets import MemorySelectionPolicy as MemorySelectionPolicy
from carryd.carry.candidates import AUTHORITIES as AUTHORITIES
from carryd.carry.candidates import AUTHORITY_RANK as _AUTHORITY_RANK
from carryd.carry.candidates import Authority as Authority
from carryd.carry.candidates import MemoryContextCandidate as MemoryContextCandidate
from carryd.carry.candidates import Provenance as Provenance
from carryd.carry.candidates import checked_authority as checked_authority
from carryd.carry.memory_blocks import (
    render_memory_context,
    render_memory_parts,
    render_standing,
)
from carryd.index.recall import RecallHit

SelectionStatus = Literal["selected", "rejected"]
SelectionReason = Literal[
    "selected",
    "scope_mismatch",
    "low_confidence",
    "duplicate_content",
    "authority_loser",
    "conflict_loser",
    "top_k_reached",
    "char_budget_exceeded",
    "token_budget_exceeded",
]



@dataclass(frozen=True)
class MemoryDecision:
    memory_id: str
    authority: Authority
    status: SelectionStatus
    reason: SelectionReason
    winner_id: str | None  # the candidate that beat this one (dedupe and conflicts)
    slot: str | None  # the normalised conflict key, when the candidate has one
    score: float
    source_rank: int
    explanation: str


@dataclass(frozen=True)
class MemoryContextPlan:
    context: str  # "" when nothing is selected: never an empty <recalled_memory>
    used_chars: int  # wrapper and provenance attributes included
    used_tokens: int
    selected_memory_ids: tuple[str, ...]
    rejected_memory_ids: tuple[str, ...]
    decisions: tuple[MemoryDecision, ...]  # one per candidate, in precedence order
    # `context` in its two parts: the standing defaults' plain block and the relevance hits'
    # `<recalled_memory>` block ("" each when it has nothing).
    standing: str = ""
    recalled: str = ""
    # The standing part block by block, in packing order, with each block's memory id.
    standing_blocks: tuple[tuple[str, str], ...] = ()


# Latin (and other alphabetic) word runs, single CJK characters and single punctuation marks
# are one unit each: a transparent offline estimate that does not pretend to be any vendor's
# tokenizer (seed 000, `estimate_context_tokens`).
_CJK = (
    "\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3040-\u30ff\u3100-\u312f\u3190-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_TOKEN_UNITS = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+|[^\w\s]")


def estimate_context_tokens(text: str) -> int:
    """Given text, return its transparent token estimate (word run, CJK char, punctuation: 1)."""
    return sum(1 for _ in _TOKEN_UNITS.finditer(text))


def normalise_text(text: str) -> str:
    """Given text, return it NFKC-normalised, casefolded, with whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def authority_from_location(
    workspace: str | None, path: str, *, active_ledger: str | None
) -> Authority:
    """Given where a memory lives, return its authority.

    The active ledger (the workspace's handoff/LEDGER.md, relative to the root) holds the
    current turn's explicit requirements; any other file inside a workspace is a workspace
    override; root-level memory is the user's default.
    """
    if active_ledger is not None and path == active_ledger:
        return "current_turn"
    if workspace is None:
        return "user_default"
    return "workspace_override"


def candidates_from_recall(
    hits: Sequence[RecallHit],
    *,
    authority_for: Callable[[RecallHit], str],
) -> tuple[MemoryContextCandidate, ...]:
    """Given recall hits in answer order, return selection candidates.

    Structural adaptation only: the hit's `confidence` (absolute, calibrated) becomes `score`,
    its position in the answer becomes `source_rank`, its L0 becomes `text`, its explicit
    slot the conflict key. `authority_for` maps a hit to its authority (from its location);
    an unknown value raises ValueError.
    """
    return tuple(
        MemoryContextCandidate(
            memory_id=hit.id,
            text=hit.l0,
            user_scope=hit.workspace,
            score=float(hit.confidence),
            source_rank=position,
            provenance=Provenance(
                source_id=hit.id,
                source_type="memory_entry",
                title=None,
                captured_at=None,
                path=hit.path,
                line_start=hit.line_start,
                line_end=hit.line_end,
            ),
            conflict_key=hit.slot,
            authority=checked_authority(authority_for(hit), memory_id=hit.id),
        )
        for position, hit in enumerate(hits, start=1)
    )


def select_memory_context(
    candidates: Iterable[MemoryContextCandidate],
    *,
    user_scope: str | None,
    policy: MemorySelectionPolicy,
    token_counter: Callable[[str], int] = estimate_context_tokens,
) -> MemoryContextPlan:
    """Given candidates, the active scope and a policy, return the packed context and decisions.

    A candidate passes the scope gate when it lives in `user_scope` or at root level (root
    memory is the user's own cross-project default, visible from every workspace). The result
    does not depend on the order of `candidates`.
    """
    ordered = authority_precedence(candidates)
    # 1-2. Gates first: neither authority nor score may override them.
    scoped = scope_gate(ordered, range(len(ordered)), user_scope=user_scope)
    confident = confidence_gate(ordered, scoped.kept, min_score=policy.min_score)
    # 3. `ordered` already is authority precedence; 4. exact dedupe; 5. explicit conflicts.
    unique = dedupe(ordered, confident.kept)
    resolved = resolve_conflicts(ordered, unique.kept)
    # 6-7. Stable top-k, then atomic blocks under both budgets.
    packed = pack_within_budgets(ordered, resolved.kept, policy=policy, token_counter=token_counter)
    decided = {
        **scoped.decided,
        **confident.decided,
        **unique.decided,
        **resolved.decided,
        **packed.decided,
    }
    selected = [ordered[position] for position in packed.kept]
    standing, recalled = render_memory_parts(selected)
    context = "\n\n".join(part for part in (standing, recalled) if part)
    blocks = tuple((c.memory_id, render_standing(c)) for c in selected if c.standing)
    decisions = tuple(decided[position] for position in range(len(ordered)))
    return MemoryContextPlan(
        context=context,
        used_chars=len(context),
        used_tokens=token_counter(context) if context else 0,
        selected_memory_ids=tuple(c.memory_id for c in selected),
        rejected_memory_ids=tuple(d.memory_id for d in decisions if d.status == "rejected"),
        decisions=decisions,
        standing=standing,
        recalled=recalled,
        standing_blocks=blocks,
    )


@dataclass(frozen=True)
class StepOutcome:
    """One step of the chain: the positions it keeps (in order) and the decisions it made."""

    kept: tuple[int, ...]
    decided: Mapping[int, MemoryDecision]


def scope_gate(
    ordered: Sequence[MemoryContextCandidate],
    positions: Sequence[int],
    *,
    user_scope: str | None,
) -> StepOutcome:
    """Given candidates and the live positions, reject those that live in another scope."""
    kept: list[int] = []
    decided: dict[int, MemoryDecision] = {}
    for position in positions:
        candidate = ordered[position]
        if candidate.user_scope is not None and candidate.user_scope != user_scope:
            decided[position] = _decision(
                candidate,
                "scope_mismatch",
                f"lives in scope {candidate.user_scope!r}, the query's scope is {user_scope!r}.",
            )
        else:
            kept.append(position)
    return StepOutcome(tuple(kept), decided)


def confidence_gate(
    ordered: Sequence[MemoryContextCandidate],
    positions: Sequence[int],
    *,
    min_score: float,
) -> StepOutcome:
    """Given candidates and the live positions, reject relevance hits below `min_score`."""
    kept: list[int] = []
    decided: dict[int, MemoryDecision] = {}
    for position in positions:
        candidate = ordered[position]
        if not candidate.standing and not candidate.score >= min_score:  # NaN too
            decided[position] = _decision(
                candidate,
                "low_confidence",
                f"confidence {candidate.score:.3f} is below the minimum {min_score:.3f}.",
            )
        else:
            kept.append(position)
    return StepOutcome(tuple(kept), decided)


def dedupe(ordered: Sequence[MemoryContextCandidate], positions: Sequence[int]) -> StepOutcome:
    """Given candidates in precedence order, reject exact repeats of (text, slot)."""
    seen: dict[tuple[str, str | None], int] = {}
    kept: list[int] = []
    decided: dict[int, MemoryDecision] = {}
    for position in positions:
        candidate = ordered[position]
        key = (normalise_text(candidate.text), _normalised_slot(candidate))
        if key in seen:
            winner = ordered[seen[key]]
            slot_note = f" in slot {key[1]!r}" if key[1] is not None else " (no slot)"
            decided[position] = _decision(
                candidate,
                "duplicate_content",
                f"same text{slot_note} as {winner.memory_id}, which ranks first.",
                winner,
            )
        else:
            seen[key] = position
            kept.append(position)
    return StepOutcome(tuple(kept), decided)


def resolve_conflicts(
    ordered: Sequence[MemoryContextCandidate], positions: Sequence[int]
) -> StepOutcome:
    """Given candidates in precedence order, let the first of each explicit slot win it."""
    slot_winner: dict[str, int] = {}
    kept: list[int] = []
    decided: dict[int, MemoryDecision] = {}
    for position in positions:
        candidate = ordered[position]
        slot = _normalised_slot(candidate)
        if slot is None:
            kept.append(position)
        elif slot not in slot_winner:
            slot_winner[slot] = position
            kept.append(position)
        else:
            winner = ordered[slot_winner[slot]]
            if winner.authority != candidate.authority:
                decided[position] = _decision(
                    candidate,
                    "authority_loser",
                    f"slot {slot!r} is decided by {winner.memory_id} ({winner.authority} "
                    f"outranks {candidate.authority}); a decided fact is never backfilled.",
                    winner,
                )
            else:
                decided[position] = _decision(
                    candidate,
                    "conflict_loser",
                    f"slot {slot!r} is decided by {winner.memory_id} (same authority "
                    f"{candidate.authority}, stronger evidence); never backfilled.",
                    winner,
                )
    return StepOutcome(tuple(kept), decided)


def pack_within_budgets(
    ordered: Sequence[MemoryContextCandidate],
    positions: Sequence[int],
    *,
    policy: MemorySelectionPolicy,
    token_counter: Callable[[str], int],
) -> StepOutcome:
    """Given the survivors, return those selected under stable top-k and both budgets.

    Blocks are atomic; a later, smaller one may backfill. Standing defaults are packed first
    and do not count towards top-k. `kept` is the selection in packing order.
    """
    selected: list[int] = []
    decided: dict[int, MemoryDecision] = {}
    ranked = 0
    packing = [p for p in positions if ordered[p].standing]
    packing += [p for p in positions if not ordered[p].standing]
    for position in packing:
        candidate = ordered[position]
        if not candidate.standing and ranked >= policy.top_k:
            decided[position] = _decision(
                candidate, "top_k_reached", f"top-k of {policy.top_k} already selected."
            )
            continue
        trial = render_memory_context([*(ordered[p] for p in selected), candidate])
        if len(trial) > policy.max_chars:
            decided[position] = _decision(
                candidate,
                "char_budget_exceeded",
                f"adding it makes the segment {len(trial)} chars, over {policy.max_chars}.",
            )
            continue
        tokens = token_counter(trial)
        if tokens > policy.max_tokens:
            decided[position] = _decision(
                candidate,
                "token_budget_exceeded",
                f"adding it makes the segment {tokens} tokens, over {policy.max_tokens}.",
            )
            continue
        selected.append(position)
        if candidate.standing:
            decided[position] = _decision(
                candidate, "selected", "a root-level default, carried every time; it fits."
            )
            continue
        ranked += 1
        decided[position] = _decision(
            candidate, "selected", f"fits as hit {ranked} of at most {policy.top_k}."
        )
    return StepOutcome(tuple(selected), decided)


def _decision(
    candidate: MemoryContextCandidate,
    reason: SelectionReason,
    explanation: str,
    winner: MemoryContextCandidate | None = None,
) -> MemoryDecision:
    """Given a candidate, a reason and why, return its one decision."""
    return MemoryDecision(
        memory_id=candidate.memory_id,
        authority=candidate.authority,
        status="selected" if reason == "selected" else "rejected",
        reason=reason,
        winner_id=winner.memory_id if winner is not None else None,
        slot=_normalised_slot(candidate),
        score=candidate.score,
        source_rank=candidate.source_rank,
        explanation=explanation,
    )


def authority_precedence(
    candidates: Iterable[MemoryContextCandidate],
) -> list[MemoryContextCandidate]:
    """Given candidates, return them by authority → score ↓ → rank ↑ → captured_at ↓ → id ↑."""
    # Stable sorts from the last key to the first; `reverse=True` keeps ties in order.
    ordered = sorted(candidates, key=lambda c: c.memory_id)
    ordered.sort(key=lambda c: c.provenance.captured_at or "", reverse=True)
    ordered.sort(key=lambda c: (_AUTHORITY_RANK[c.authority], -_finite(c.score), c.source_rank))
    return ordered


def _finite(score: float) -> float:
    return score if score == score else float("-inf")  # NaN sorts last


def _normalised_slot(candidate: MemoryContextCandidate) -> str | None:
    if candidate.conflict_key is None:
        return None
    slot = normalise_text(candidate.conflict_key)
    return slot or None
