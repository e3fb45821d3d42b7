"""The write side of the hand-off: when a session's context crosses its hand-off point, a note
states it once, with where the hand-off files are.

Pure: given the session's usage (tokens, from the status line's record or the host's
transcript), where the host will compact (`compaction.Point`) and a small per-session mark,
decide; the hook shell reads and writes the mark. The note is given once per crossing of the
hand-off point (`compaction.handoff_tokens`: `hooks.handoff_threshold` of the compaction point,
at least one large step before it): usage at or above it with no note given since it was last
below. When the usage falls below again (the host compacted, or `/clear`), the mark re-arms.

The note states facts, never orders: how to keep the ledger and plan is the instruction
paragraph (`carryd setup HOST --print-instructions`) in the host's CLAUDE.md / AGENTS.md /
GEMINI.md. Where the usage comes from is the host's business (`transcript_usage` in each host
module); `Usage` is what they return.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any, Literal

    UsageSource = Literal["statusline", "transcript"]
    TriggerReason = Literal[
        "crossed",  # at or above the hand-off point for the first time since it was below
        "already_told",  # still above; the note was given in this crossing
        "below_threshold",  # nothing to say (and the mark re-arms)
        "usage_unknown",  # no status line record and no usage in the transcript
    ]
# Bytes read from the end of a transcript: its last few messages, never the whole file.
TRANSCRIPT_TAIL_BYTES = 256 * 1024


class Usage:
    """What a transcript's tail says about the context: the tokens in it (0 right after a
    compaction), the model, its window when the transcript records one, and where the host
    last compacted by itself (tokens before an automatic compaction)."""

    __slots__ = ("compacted_at", "model", "tokens", "window")

    def __init__(
        self,
        tokens: int,
        *,
        model: str | None = None,
        window: int | None = None,
        compacted_at: int | None = None,
    ) -> None:
        self.tokens = tokens
        self.model = model
        self.window = window
        self.compacted_at = compacted_at

    def __repr__(self) -> str:
        return (
            f"Usage({self.tokens}, model={self.model!r}, window={self.window}, "
            f"compacted_at={self.compacted_at})"
        )


class SessionMark:
    """What the trigger remembers of one host session."""

    __slots__ = ("blocked", "fraction", "point", "told", "told_at")

    def __init__(
        self,
        told: bool = False,
        fraction: float | None = None,
        *,
        told_at: float | None = None,
        blocked: bool = False,
        point: Mapping[str, Any] | None = None,
    ) -> None:
        self.told = told  # the note was given since the usage was last below the hand-off point
        self.fraction = fraction  # the usage seen last, as a share of the compaction point
        self.told_at = told_at  # when the note was given (the ledger is fresh if newer)
        self.blocked = blocked  # carryd held a compaction back (or cleared) once this crossing
        # What the session was judged by, for `carryd status`: host, used, compacts, hand_off,
        # source (the compaction point's).
        self.point = dict(point) if isinstance(point, Mapping) else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionMark) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"SessionMark({self.to_json()})"

    def to_json(self) -> dict[str, Any]:
        return {
            "told": self.told,
            "fraction": self.fraction,
            "told_at": self.told_at,
            "blocked": self.blocked,
            "point": self.point,
        }

    @classmethod
    def from_json(cls, data: Any) -> SessionMark:
        if not isinstance(data, Mapping):
            return cls()
        told_at = _fraction(data.get("told_at"), clamp=False)
        return cls(
            told=data.get("told") is True,
            fraction=_fraction(data.get("fraction")),
            told_at=told_at,
            blocked=data.get("blocked") is True,
            point=data.get("point") if isinstance(data.get("point"), Mapping) else None,
        )


class TriggerDecision:
    __slots__ = ("fraction", "instruct", "mark", "reason", "source")

    def __init__(
        self,
        instruct: bool,
        reason: TriggerReason,
        fraction: float | None,
        source: UsageSource | None,
        mark: SessionMark,
    ) -> None:
        self.instruct = instruct
        self.reason = reason
        self.fraction = fraction
        self.source = source
        self.mark = mark  # the mark to keep after this call


def decide(
    fraction: float | None,
    source: UsageSource | None,
    mark: SessionMark,
    threshold: float,
    *,
    now: float | None = None,
) -> TriggerDecision:
    """Given the session's usage as a share of its compaction point (or None), its mark and
    the hand-off point as a share of the compaction point, return whether to give the note
    now and the mark to keep."""
    if fraction is None:
        return TriggerDecision(False, "usage_unknown", None, None, mark)
    if fraction + 1e-9 < threshold:
        return TriggerDecision(
            False, "below_threshold", fraction, source, SessionMark(False, fraction)
        )
    if mark.told:
        kept = SessionMark(True, fraction, told_at=mark.told_at, blocked=mark.blocked)
        return TriggerDecision(False, "already_told", fraction, source, kept)
    return TriggerDecision(
        True, "crossed", fraction, source, SessionMark(True, fraction, told_at=now)
    )


def note(
    *,
    used: int,
    point: int,
    point_source: str,
    handoff: int,
    ledger_path: str,
    plan_path: str,
    next_step: str,
) -> str:
    """Given the session's usage, its compaction and hand-off points (tokens) and where the
    hand-off files live, return the note for the model: facts only."""
    from carryd.daemon.hosts.compaction import short_tokens

    percent = math.floor(used / point * 100 + 1e-9)
    return (
        f"carryd: context {percent}% of this session's compaction point (~{short_tokens(point)} "
        f"tokens, {point_source}); the hand-off point is {short_tokens(handoff)}. "
        f"Hand-off files: {ledger_path}, {plan_path}. {next_step}"
    )


def section_names(aliases: tuple[tuple[str, ...], ...]) -> tuple[str, str, str, str]:
    """Given the ledger sections' alias tuples (status, goal, tried, next), return the name to
    write for each: its English alias when it has one (the config lists zh and en)."""
    names = []
    for options in aliases:
        ascii_names = [name for name in options if name.isascii()]
        names.append(ascii_names[-1] if ascii_names else (options[0] if options else "?"))
    status, goal, tried, progress = (names + ["?"] * 4)[:4]
    return status, goal, tried, progress


# --- usage in a transcript's tail --------------------------------------------------------------


def jsonl_records(tail: str) -> Iterator[dict[str, Any]]:
    """Given the end of a JSON-lines transcript, yield its records newest first (the cut first
    line and anything not a JSON object skipped)."""
    for line in reversed(tail.splitlines()):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the tail's first line is usually cut
        if isinstance(record, dict):
            yield record


def token_count(value: object) -> float:
    """Given a transcript's token count, return it as a float (0 when absent or odd)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0 else 0.0


def _fraction(value: Any, *, clamp: bool = True) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 1.0) if clamp else float(value)
