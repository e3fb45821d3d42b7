"""A carry's budgets and their defaults, defined once (config reads them from here).

The ancestor's flat injection set the totals: plan 3,000 / ledger 8,000 / total 18,000
characters (DESIGN.md). The recalled-memory segment has its own S15 policy. Kept free of
other imports so that `carryd.daemon.config` can read the defaults without loading the
carry machinery (the status line and hooks import config on every call).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CarryBudgets", "MemorySelectionPolicy"]


@dataclass(frozen=True)
class MemorySelectionPolicy:
    """The recalled-memory segment's S15 gates and budgets (see `carryd.carry.select`)."""

    # A calibrated probability of relevance (recall's confidence): the daemon's INJECT_GATE
    # (carryd.daemon.config, where it is explained), kept equal by a test.
    min_score: float = 0.03
    top_k: int = 5
    max_chars: int = 3_000
    max_tokens: int = 800

    def __post_init__(self) -> None:
        for name in ("min_score", "top_k", "max_chars", "max_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"MemorySelectionPolicy.{name} must not be negative")


@dataclass(frozen=True)
class CarryBudgets:
    """The carry's character budgets: the whole file, the ledger, the plan, the memory."""

    total_chars: int = 18_000
    ledger_chars: int = 8_000
    plan_chars: int = 3_000
    memory: MemorySelectionPolicy = field(default_factory=MemorySelectionPolicy)
    # A carry up to this size is never trimmed to flat injection's cost: a host injects that
    # much at SessionStart anyway (the daemon passes `hooks.inline_chars`), so cutting a short
    # hand-off below it saves nothing a host would notice. 0: the flat cost alone decides.
    free_chars: int = 0
