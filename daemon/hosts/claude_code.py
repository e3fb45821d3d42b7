"""Claude Code: `carryd hook claude-code session-start|prompt-submit|statusline`.

Claude Code's hooks get no token counts, but its statusLine command receives
`context_window.used_percentage`: the status line says when the context is at the hand-off
threshold (0.75, before the host's own compaction) and records the usage per session, which the
`UserPromptSubmit` hook (`prompt-submit`) reads to tell the model, once per crossing, to write
its hand-off (without a status line, the transcript's last main-chain assistant message's
`message.usage` over a 200k window). `/clear` starts a new session, whose SessionStart hook
(source `clear`) answers with `hookSpecificOutput.additionalContext` — the only channel that
reaches the model (`systemMessage` is shown to the user only: setup problems go there; PreCompact
cannot inject). Hook output above about 10,000 characters is not inlined, so the carry is planned
under `hooks.inline_chars` (9,000) by the host-neutral hand-off (`carryd.daemon.hosts.handoff`).

Which sources inject: all four. `startup` and `clear` begin a new context in the workspace (the
hand-off itself); `compact` follows the host's own compaction, whose summary is lossy, so the
ledger and anchors go back in; `resume` reopens an older conversation that predates whatever the
carry learned since. Narrow the settings.json matcher to change that.

`carryd setup claude-code` writes the status line as `carryd hook claude-code statusline --wrap
THEIRS` when the user had one: their text first, carryd's after.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from carryd.daemon.hosts import hook_state
from carryd.daemon.hosts.handoff import carry_hint, one_line
from carryd.daemon.hosts.handoff_trigger import last_jsonl_usage, token_count
from carryd.daemon.hosts.hook_events import (
    HookCall,
    HookEvent,
    Wire,
    cwd_of,
    parse_input,
    prompt_submit,
    session_start,
)

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

__all__ = ["CLEAR_COMMAND", "EVENTS", "statusline_text", "transcript_usage", "used_fraction"]

CLEAR_COMMAND = "/clear"
CONTEXT_WINDOW = 200_000
WRAP_TIMEOUT_SECONDS = 2.0


# --- usage ----------------------------------------------------------------------------------------


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


def transcript_usage(tail: str) -> float | None:
    """Given the end of a session transcript (JSONL), return the context used (0–1), or None:
    the last main-chain assistant message's input + cache tokens over a 200k window."""
    return last_jsonl_usage(tail, _record_usage)


def _record_usage(record: Mapping[str, Any]) -> float | None:
    if record.get("type") != "assistant" or record.get("isSidechain") is True:
        return None  # a subagent's message says nothing about this context
    message = record.get("message")
    usage = message.get("usage") if isinstance(message, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    used = sum(token_count(usage.get(key)) for key in keys)
    if used <= 0:
        return None  # a synthetic message (an error, an interruption) records no usage
    return used / CONTEXT_WINDOW


# --- the status line ------------------------------------------------------------------------------


def statusline_text(raw: str, settings: Settings | None, problem: str | None) -> str:
    """Given the statusLine input and the settings, return carryd's one line."""
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
    cwd = cwd_of(data, statusline=True)
    if cwd is None:
        return shown + " | carryd: no cwd in status input"
    return shown + carry_hint(settings, cwd, fraction=fraction)


def statusline(call: HookCall) -> str:
    """The status line: the user's own first when carryd wraps it, then carryd's hint; the
    usage is recorded for the session's prompt hook."""
    theirs = run_wrapped(call.wrap, call.raw) if call.wrap else ""
    if call.bypassed:
        return theirs
    settings = call.settings
    if settings is not None and not call.problem and call.data is not None:
        fraction = used_fraction(call.data)
        key = hook_state.session_key(call.data)
        if key and fraction is not None:
            hook_state.record_statusline(settings, key, fraction)
    ours = statusline_text(call.raw, settings, call.problem)
    return f"{theirs} | {ours}" if theirs else ours


def run_wrapped(command: str, raw: str) -> str:
    """Given the user's status line command, run it with the same input; return its text."""
    import subprocess  # only for a wrapped status line

    try:
        done = subprocess.run(
            command,
            shell=True,
            input=raw.encode("utf-8", errors="replace"),
            capture_output=True,
            timeout=WRAP_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("carryd statusline: the wrapped command failed: %s", error)
        return ""
    return done.stdout.decode("utf-8", errors="replace").rstrip("\n")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# --- the events -----------------------------------------------------------------------------------

EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(Wire("SessionStart")),
    "prompt-submit": prompt_submit(
        Wire("UserPromptSubmit"), transcript_usage=transcript_usage, clear_command=CLEAR_COMMAND
    ),
    "statusline": HookEvent(
        answer=statusline, on_error=lambda notice: "carryd: hook error (see `carryd status`)"
    ),
}
