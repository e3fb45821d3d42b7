"""The write side of the hand-off: when a session's context crosses the threshold, tell the model
once to write its hand-off (ledger + plan) and to ask the person for `/clear`.

Pure: given the usage the host last reported for the session (the status line's number, or the
usage recorded in the session's transcript) and a small per-session mark, decide; the hook shell
reads and writes the mark. The instruction is given once per crossing of
`hooks.handoff_threshold`: usage at or above it with no instruction given since it was last
below. When the usage falls below again (the host compacted), the mark re-arms.

Where the usage comes from is the host's business: each host module reads its own transcript
format (`transcript_usage` in `claude_code.py`, `codex.py`, `gemini.py`), with
`last_jsonl_usage` for the hosts whose transcript is JSON lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

UsageSource = Literal["statusline", "transcript"]
TriggerReason = Literal[
    "crossed",  # at or above the threshold for the first time since it was below: instruct
    "already_told",  # still above; the instruction was given in this crossing
    "below_threshold",  # nothing to say (and the mark re-arms)
    "usage_unknown",  # no status line record and no usage in the transcript
]
# Bytes read from the end of a transcript: its last few messages, never the whole file.
TRANSCRIPT_TAIL_BYTES = 256 * 1024


@dataclass(frozen=True)
class SessionMark:
    """What the trigger remembers of one host session."""

    told: bool = False  # the instruction was given since the usage was last below the threshold
    fraction: float | None = None  # the usage seen at the last prompt

    def to_json(self) -> dict[str, Any]:
        return {"told": self.told, "fraction": self.fraction}

    @classmethod
    def from_json(cls, data: Any) -> SessionMark:
        if not isinstance(data, Mapping):
            return cls()
        fraction = _fraction(data.get("fraction"))
        return cls(told=data.get("told") is True, fraction=fraction)


@dataclass(frozen=True)
class TriggerDecision:
    instruct: bool
    reason: TriggerReason
    fraction: float | None
    source: UsageSource | None
    mark: SessionMark  # the mark to keep after this prompt


def decide(
    fraction: float | None,
    source: UsageSource | None,
    mark: SessionMark,
    threshold: float,
) -> TriggerDecision:
    """Given the session's usage (0–1, or None), its mark and the threshold, return whether to
    instruct the model now and the mark to keep."""
    if fraction is None:
        return TriggerDecision(False, "usage_unknown", None, None, mark)
    if fraction + 1e-9 < threshold:
        return TriggerDecision(
            False, "below_threshold", fraction, source, SessionMark(False, fraction)
        )
    if mark.told:
        return TriggerDecision(False, "already_told", fraction, source, SessionMark(True, fraction))
    return TriggerDecision(True, "crossed", fraction, source, SessionMark(True, fraction))


def choose_usage(
    statusline: float | None, transcript: float | None
) -> tuple[float | None, UsageSource | None]:
    """Given what the status line last reported for the session and what the transcript says,
    return the usage to judge by: the host's own number when it has one."""
    if statusline is not None:
        return statusline, "statusline"
    if transcript is not None:
        return transcript, "transcript"
    return None, None


def instruction(
    *,
    fraction: float,
    threshold: float,
    ledger_path: str,
    plan_path: str,
    sections: tuple[str, str, str, str],
    clear_command: str,
) -> str:
    """Given where the ledger and plan live, return the short instruction for the model."""
    status, goal, tried, progress = sections
    return (
        f"carryd: this conversation's context is at {math.floor(fraction * 100 + 1e-9)}% "
        f"(hand-off threshold {threshold:.0%}). Before you go on, write the hand-off now: "
        f"(1) update {ledger_path} in its four sections ({status}; {goal}; {tried}; {progress}), "
        "newest items last, every failed attempt with the reason it failed; "
        f"(2) update the current state in {plan_path}. "
        "Then tell the person the hand-off is written and ask them to type "
        f"{clear_command}: the next session starts from the carry built from these files."
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


def last_jsonl_usage(
    tail: str, record_usage: Callable[[Mapping[str, Any]], float | None]
) -> float | None:
    """Given the end of a JSON-lines transcript and how a host reads one record's usage, return
    the usage of the last record that has one (0–1), or None."""
    for line in reversed(tail.splitlines()):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the tail's first line is usually cut
        if isinstance(record, dict):
            found = record_usage(record)
            if found is not None:
                return min(max(found, 0.0), 1.0)
    return None


def token_count(value: object) -> float:
    """Given a transcript's token count, return it as a float (0 when absent or odd)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0 else 0.0


def _fraction(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 1.0)
