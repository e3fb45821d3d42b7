"""Gemini CLI: `carryd hook gemini session-start|before-agent|after-tool|pre-compress|
after-agent`.

Gemini CLI's hooks take JSON on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, …) and answer in the same shape as Claude Code's, but it escapes `<` and
`>` in `additionalContext`: what carryd injects is rendered without them
(`render.without_angle_brackets`).

- `SessionStart` (sources startup, resume, clear) injects the carry;
- `BeforeAgent` (before each turn) and `AfterTool` (after each tool call: a long autonomous
  turn needs no prompt) state the note once per crossing of the hand-off point. Where Gemini
  CLI compresses is `compaction.gemini_point` (`model.compressionThreshold`, 0.5 by default, of
  the model's token limit); the usage is the chat file's last `tokens.input`;
- `PreCompress` fires before every turn's threshold check, so it says something to the person
  only when the chat is really about to be compressed (a manual `/compress`, or the last
  prompt at the compression point);
- `AfterAgent` (opt-in: registered only by hand, docs/hosts.md) is the relay: once the
  hand-off files were written after the note, it clears the conversation (`clearContext`) and
  continues from the carry (`decision: "block"` with the carry as the follow-up prompt).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from carryd.daemon.hosts import hook_state
from carryd.daemon.hosts.compaction import Point, gemini_point
from carryd.daemon.hosts.handoff_trigger import Usage, jsonl_records, token_count
from carryd.daemon.hosts.hook_events import (
    HookCall,
    HookEvent,
    Wire,
    cwd_of,
    handoff_files_written_since,
    session_reading,
    session_start,
    session_start_answer,
    usage_note,
    workspace_or_notice,
)
from carryd.daemon.hosts.render import without_angle_brackets

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CLEAR_COMMAND", "EVENTS", "point_of", "transcript_usage"]

CLEAR_COMMAND = "/clear"
TOKENS_KEY = '"tokens"'
NEXT_STEP = (
    "The next context (after /clear, or after Gemini CLI compresses the chat) starts from "
    "the carry built from them."
)


def transcript_usage(tail: str) -> Usage | None:
    """Given the end of a Gemini CLI chat file (JSON lines, or pretty-printed JSON usually
    cut at the start), return the last recorded prompt's input tokens and its model."""
    for record in jsonl_records(tail):
        tokens = record.get("tokens")
        used = token_count(tokens.get("input")) if isinstance(tokens, dict) else 0.0
        if used > 0:
            model = record.get("model") if isinstance(record.get("model"), str) else None
            return Usage(int(used), model=model)
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
            return Usage(int(used))
    return None


def point_of(call: HookCall, usage: Usage | None, recorded: Mapping[str, Any] | None) -> Point:
    """Given a call and its chat file's usage, return where Gemini CLI compresses."""
    data = call.data or {}
    return gemini_point(usage.model if usage else None, project=cwd_of(data), environ=os.environ)


# --- PreCompress: only when it really compresses ---------------------------------------------

PRE_COMPRESS = Wire("PreCompress", injects=False)


def pre_compress(call: HookCall) -> str:
    """Gemini CLI may be about to compress the chat: tell the person the carry is ready, but
    only when it really compresses (it fires this hook before checking its threshold)."""
    if call.bypassed:
        return PRE_COMPRESS.answer(context=None, notice=None)
    workspace, notice = workspace_or_notice(call)
    if workspace is None:
        return PRE_COMPRESS.answer(context=None, notice=notice)
    if (call.data or {}).get("trigger") != "manual":
        reading = session_reading(call, transcript_usage, point_of)
        if reading is None or reading.used < reading.point.tokens:
            return PRE_COMPRESS.answer(context=None, notice=None)
    message = (
        f"carryd: the chat is being compressed, which loses detail. The carry for "
        f"{workspace!r} is kept ready: {CLEAR_COMMAND} starts the next context from it."
    )
    return PRE_COMPRESS.answer(context=None, notice=message)


# --- AfterAgent: the opt-in relay ------------------------------------------------------------

AFTER_AGENT = Wire("AfterAgent", injects=False)


def after_agent(call: HookCall) -> str:
    """Once per crossing, when the hand-off files were written after the note: clear the
    conversation and continue from the carry."""
    data = call.data or {}
    if call.bypassed or data.get("stop_hook_active") is True:
        return AFTER_AGENT.answer(context=None, notice=None)
    workspace, notice = workspace_or_notice(call)
    settings, key = call.settings, hook_state.session_key(dict(data))
    if workspace is None or settings is None or key is None:
        return AFTER_AGENT.answer(context=None, notice=notice)
    mark = hook_state.read_mark(settings, key)
    if not mark.told or mark.blocked:
        return AFTER_AGENT.answer(context=None, notice=None)
    if not handoff_files_written_since(settings, workspace, mark.told_at):
        return AFTER_AGENT.answer(context=None, notice=None)
    carry = session_start_answer(call.raw, settings, call.problem, SESSION_START)
    if carry.reason != "injected" or not carry.context:
        return AFTER_AGENT.answer(context=None, notice=None)
    mark.blocked = True
    hook_state.write_mark(settings, key, mark)
    return AFTER_AGENT.answer(
        context=None,
        notice=f"carryd: the conversation was cleared; it goes on from the carry of {workspace!r}",
        extra={
            "decision": "block",
            "reason": without_angle_brackets(carry.context),
            "hookSpecificOutput": {"hookEventName": "AfterAgent", "clearContext": True},
        },
    )


# --- the events ------------------------------------------------------------------------------

SESSION_START = Wire("SessionStart", render=without_angle_brackets)


def _note(event_name: str) -> HookEvent:
    return usage_note(Wire(event_name, render=without_angle_brackets),
                      transcript_usage=transcript_usage, point_of=point_of,
                      next_step=NEXT_STEP)  # fmt: skip


EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(SESSION_START),
    "before-agent": _note("BeforeAgent"),
    "after-tool": _note("AfterTool"),
    "pre-compress": HookEvent(answer=pre_compress, on_error=PRE_COMPRESS.on_error),
    "after-agent": HookEvent(answer=after_agent, on_error=AFTER_AGENT.on_error),
}
