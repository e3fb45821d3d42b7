"""What S15 selection chooses among: a recalled memory as a candidate (`MemoryContextCandidate`),
where it comes from (`Provenance`) and its authority, checked fail-closed.

`select` decides over candidates and `memory_blocks` renders them; both import them from here.
Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Authority = Literal["current_turn", "workspace_override", "user_default"]
AUTHORITIES: tuple[Authority, ...] = get_args(Authority)
# Lower is stronger: current_turn > workspace_override > user_default.
AUTHORITY_RANK: dict[str, int] = {name: rank for rank, name in enumerate(AUTHORITIES)}


@dataclass(frozen=True)
class Provenance:
    """Where a candidate comes from: the entry id, its kind, title, capture time and location."""

    source_id: str
    source_type: str = "memory_entry"
    title: str | None = None
    captured_at: str | None = None  # ISO 8601 when known; compared as text (newer sorts first)
    path: str | None = None  # relative to the memory root
    line_start: int | None = None
    line_end: int | None = None

    @property
    def location(self) -> str | None:
        """Given the path and lines, return `path:start-end` (or None without a path)."""
        if self.path is None:
            return None
        if self.line_start is None:
            return self.path
        if self.line_end is None or self.line_end == self.line_start:
            return f"{self.path}:{self.line_start}"
        return f"{self.path}:{self.line_start}-{self.line_end}"


@dataclass(frozen=True)
class MemoryContextCandidate:
    """One recalled memory, adapted structurally from a recall hit."""

    memory_id: str
    text: str  # compact text for the context (recall's L0 abstract)
    user_scope: str | None  # the workspace it lives in; None = root level (shared by all scopes)
    score: float  # recall's absolute confidence, copied, never recomputed
    source_rank: int  # recall's 1-based rank, copied
    provenance: Provenance
    conflict_key: str | None = None  # explicit slot from entry metadata, never guessed
    authority: Authority = "user_default"
    # A root-level default carried every time (issue 10): it is not chosen for relevance, so
    # the confidence gate and top-k do not apply; scope, dedupe, conflicts and both budgets
    # do, and it is packed before relevance-ranked hits.
    standing: bool = False

    def __post_init__(self) -> None:
        checked_authority(self.authority, memory_id=self.memory_id)


def checked_authority(value: object, *, memory_id: str) -> Authority:
    """Given an authority value from outside, return it, or raise ValueError (fail closed)."""
    if isinstance(value, str) and value in AUTHORITY_RANK:
        return value  # type: ignore[return-value]
    raise ValueError(
        f"memory {memory_id}: unknown authority {value!r}; expected one of "
        f"{', '.join(AUTHORITIES)} (authority comes from where a memory lives)"
    )
