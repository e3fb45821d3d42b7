"""Claude Code: `carryd hook claude-code session-start|statusline`.

Claude Code's hooks get no token counts, but its statusLine command receives
`context_window.used_percentage`: the status line says when the context is at the hand-off
threshold (0.75, before the host's own compaction) and that `/clear` hands off. `/clear` starts a
new session, whose SessionStart hook (source `clear`) answers with
`hookSpecificOutput.additionalContext` — the only channel that reaches the model
(`systemMessage` is shown to the user only; PreCompact cannot inject). Hook output above about
10,000 characters is not inlined, so the carry is planned under `hooks.inline_chars` (9,000)
by the host-neutral hand-off (`carryd.daemon.handoff`).

Which sources inject: all four. `startup` and `clear` begin a new context in the workspace (the
hand-off itself); `compact` follows the host's own compaction, whose summary is lossy, so the
ledger and anchors go back in; `resume` reopens an older conversation that predates whatever the
carry learned since. Narrow the settings.json matcher to change that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from carryd.daemon.config import HookSettings
from carryd.daemon.handoff import (
    HookEvent,
    SessionStartAnswer,
    as_json,
    carry_hint,
    handoff_answer,
    one_line,
    parse_input,
    short,
)

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

__all__ = ["EVENTS", "session_start_answer", "session_start_payload", "statusline_text"]


# --- SessionStart -------------------------------------------------------------------------------


def session_start_answer(
    raw: str, settings: Settings | None, problem: str | None
) -> SessionStartAnswer:
    """Given the SessionStart input and the settings, return the answer (CarrydError-free)."""
    budget = (settings.hooks if settings is not None else HookSettings()).inline_chars
    data, bad = parse_input(raw)
    if data is None:
        return short(bad or "bad input", "bad_input", budget)
    if settings is None or problem:
        return short(problem or "no settings", "config_error", budget)
    cwd = _cwd_of(data, statusline=False)
    if cwd is None:
        return short("the hook input has no usable cwd", "bad_input", budget)
    source = data.get("source") if isinstance(data.get("source"), str) else None
    return handoff_answer(settings, cwd, budget=budget, source=source)


def session_start_payload(answer: SessionStartAnswer) -> dict[str, Any]:
    """Given an answer, return the SessionStart hook output (`{}`: no answer)."""
    if answer.context is None:
        return {}
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": answer.context,
        }
    }


# --- the status line ----------------------------------------------------------------------------


def used_fraction(data: Mapping[str, Any]) -> float | None:
    """Given the statusLine JSON, return the context used as a fraction 0–1, or None if unknown.

    `context_window.used_percentage` (0–100) when present; else the current usage's input
    tokens over `context_window_size`.
    """
    window = data.get("context_window")
    if not isinstance(window, Mapping):
        return None
    percent = _number(window.get("used_percentage"))
    if percent is not None:
        return min(max(percent, 0.0), 100.0) / 100.0
    size = _number(window.get("context_window_size"))
    usage = window.get("current_usage")
    if size and size > 0 and isinstance(usage, Mapping):
        keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        used = sum(_number(usage.get(key)) or 0.0 for key in keys)
        return min(max(used / size, 0.0), 1.0)
    return None


def statusline_text(raw: str, settings: Settings | None, problem: str | None) -> str:
    """Given the statusLine input and the settings, return the one line to show."""
    data, bad = parse_input(raw)
    data = data or {}
    fraction = used_fraction(data)
    model = data.get("model")
    name = model.get("display_name") if isinstance(model, Mapping) else None
    parts = [f"[{one_line(name)[:30]}]"] if isinstance(name, str) and name.strip() else []
    # Floor, so that the number shown never reads "75%" below the threshold.
    parts.append("ctx ?" if fraction is None else f"ctx {math.floor(fraction * 100 + 1e-9)}%")
    shown = " ".join(parts)
    if bad is not None and fraction is None:
        return shown + " | carryd: no status input"
    if settings is None or problem:
        return shown + " | carryd: " + ("config error" if settings is None else "no root")
    cwd = _cwd_of(data)
    if cwd is None:
        return shown + " | carryd: no cwd in status input"
    return shown + carry_hint(settings, cwd, fraction=fraction)


def _cwd_of(data: Mapping[str, Any], *, statusline: bool = True) -> str | None:
    """Given hook input, return the host's working directory, or None when it names no
    usable path (absent, empty, not a string, or holding a NUL byte no path can hold)."""
    candidates: list[object] = []
    workspace = data.get("workspace")
    if statusline and isinstance(workspace, Mapping):
        candidates.append(workspace.get("current_dir"))
    candidates.append(data.get("cwd"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate and "\x00" not in candidate:
            return candidate
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# --- the events ---------------------------------------------------------------------------------


def _session_start(raw: str, settings: Settings | None, problem: str | None) -> str:
    return as_json(session_start_payload(session_start_answer(raw, settings, problem)))


def _session_start_error(budget: int, message: str) -> str:
    return as_json(session_start_payload(short(message, "error", budget)))


SESSION_START = HookEvent(
    answer=_session_start, on_error=_session_start_error, bypassed=as_json({})
)

EVENTS: Mapping[str, HookEvent] = {
    "session-start": SESSION_START,
    "statusline": HookEvent(
        answer=statusline_text,
        on_error=lambda budget, message: "carryd: hook error (see `carryd status`)",
        bypassed="",
    ),
}
