"""Gemini CLI: `carryd hook gemini session-start|before-agent|pre-compress`.

Gemini CLI's hooks take JSON on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, …) and answer in the same shape as Claude Code's:

- `SessionStart` (sources startup, resume, clear) injects the carry through
  `hookSpecificOutput.additionalContext`;
- `BeforeAgent` (before each turn) is the write-side trigger: the usage is the chat file's last
  `tokens` record (`input`) over a 1M window — Gemini CLI has no status line command;
- `PreCompress` cannot add context: it tells the person (`systemMessage`) that the carry is the
  better way on than the lossy compression.

This module and its line in `registry.HOSTS` are all there is to Gemini CLI's support.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from carryd.daemon.hosts.handoff_trigger import token_count
from carryd.daemon.hosts.hook_events import (
    HookCall,
    HookEvent,
    Wire,
    prompt_submit,
    session_start,
    workspace_or_notice,
)

__all__ = ["CLEAR_COMMAND", "EVENTS", "transcript_usage"]

CLEAR_COMMAND = "/clear"
CONTEXT_WINDOW = 1_048_576
TOKENS_KEY = '"tokens"'


def transcript_usage(tail: str) -> float | None:
    """Given the end of a Gemini CLI chat file (pretty-printed JSON, usually cut at the start),
    return the last recorded prompt's input tokens over the window (0–1), or None."""
    end = len(tail)
    while (start := tail.rfind(TOKENS_KEY, 0, end)) >= 0:
        end = start
        opening = tail.find("{", start + len(TOKENS_KEY))
        closing = tail.find("}", opening + 1)
        if opening < 0 or closing < 0 or tail[start + len(TOKENS_KEY) : opening].strip() != ":":
            continue
        try:
            tokens = json.loads(tail[opening : closing + 1])
        except ValueError:
            continue
        used = token_count(tokens.get("input")) if isinstance(tokens, dict) else 0.0
        if used > 0:
            return min(used / CONTEXT_WINDOW, 1.0)
    return None


PRE_COMPRESS = Wire("PreCompress", injects=False)


def pre_compress(call: HookCall) -> str:
    """Gemini CLI is about to compress the chat: tell the person the carry is the better path."""
    if call.bypassed:
        return PRE_COMPRESS.answer(context=None, notice=None)
    workspace, notice = workspace_or_notice(call)
    if workspace is None:
        return PRE_COMPRESS.answer(context=None, notice=notice)
    message = (
        f"carryd: the chat is being compressed, which loses detail. The carry for "
        f"{workspace!r} is kept ready: have the model write its hand-off (ledger, plan), "
        f"then {CLEAR_COMMAND} to continue from it."
    )
    return PRE_COMPRESS.answer(context=None, notice=message)


EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(Wire("SessionStart")),
    "before-agent": prompt_submit(
        Wire("BeforeAgent"), transcript_usage=transcript_usage, clear_command=CLEAR_COMMAND
    ),
    "pre-compress": HookEvent(answer=pre_compress, on_error=PRE_COMPRESS.on_error),
}
