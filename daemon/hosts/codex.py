"""Codex CLI: `carryd hook codex session-start|prompt-submit|post-tool-use|stop`.

Codex CLI's lifecycle hooks speak Claude Code's JSON wire format: they read `cwd`, `source`,
`session_id`, `model` and `transcript_path` on stdin and may answer with
`hookSpecificOutput.additionalContext`. What Codex takes for "nothing" is no output at all: an
empty `additionalContext` would reach the model as an empty developer message. Codex keeps a
hook's context within about 2,500 tokens (`ceil(bytes / 4)`; above it the model gets a
preview), so the carry is planned until it fits `MAX_CONTEXT_BYTES`.

SessionStart injects for `startup`, `resume`, `clear` and `compact` (after Codex's own
compaction). The triggers need no person: `UserPromptSubmit` and `PostToolUse` add the note
as context; `Stop` (not while a stop hook already continues the turn) gives it as the
`reason` of a block, which Codex sends as the follow-up prompt. Where Codex compacts is
`compaction.codex_point` (`model_auto_compact_token_limit`, at most 90% of the window); the
usage is the rollout's last `token_count` event (`info.last_token_usage.total_tokens`, with
`info.model_context_window`). Codex has no status line command that receives the usage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from carryd.daemon.hosts.compaction import Point, codex_point
from carryd.daemon.hosts.handoff_trigger import Usage, jsonl_records, token_count
from carryd.daemon.hosts.hook_events import (
    HookCall,
    HookEvent,
    Wire,
    cwd_of,
    session_start,
    usage_note,
)

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CLEAR_COMMAND", "EVENTS", "MAX_CONTEXT_BYTES", "point_of", "transcript_usage"]

CLEAR_COMMAND = "/clear (or /new)"
# 2,500 tokens of ceil(bytes / 4), less a margin for the host's own framing.
MAX_CONTEXT_BYTES = 9_600
NEXT_STEP = (
    "The next context (after /clear or /new, or after Codex compacts) starts from the carry "
    "built from them."
)


def transcript_usage(tail: str) -> Usage | None:
    """Given the end of a Codex rollout (JSONL), return its last `token_count` usage, the
    window it names and the session's model."""
    found: Usage | None = None
    for record in jsonl_records(tail):
        payload = record.get("payload")
        if not isinstance(payload, Mapping):
            continue
        if found is not None:
            if record.get("type") == "turn_context" and isinstance(payload.get("model"), str):
                found.model = payload["model"]
                break
            continue
        info = payload.get("info")
        if record.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        if not isinstance(info, Mapping) or not isinstance(info.get("last_token_usage"), Mapping):
            continue
        last = info["last_token_usage"]
        used = token_count(last.get("total_tokens")) or token_count(last.get("input_tokens"))
        window = token_count(info.get("model_context_window"))
        if used > 0:
            found = Usage(int(used), window=int(window) or None)
    return found


def point_of(call: HookCall, usage: Usage | None, recorded: Mapping[str, Any] | None) -> Point:
    """Given a call and its rollout's usage, return where Codex compacts this session."""
    data = call.data or {}
    model = usage.model if usage and usage.model else data.get("model")
    return codex_point(
        model if isinstance(model, str) else None,
        window=usage.window if usage else None,
        project=cwd_of(data),
        environ=os.environ,
    )


def _stop_loops(call: HookCall) -> bool:
    return (call.data or {}).get("stop_hook_active") is True


def _note(wire: Wire, **kw: Any) -> HookEvent:
    return usage_note(wire, transcript_usage=transcript_usage, point_of=point_of,
                      next_step=NEXT_STEP, **kw)  # fmt: skip


EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(Wire("SessionStart", nothing="", max_bytes=MAX_CONTEXT_BYTES)),
    "prompt-submit": _note(Wire("UserPromptSubmit", nothing="")),
    "post-tool-use": _note(Wire("PostToolUse", nothing="")),
    "stop": _note(Wire("Stop", nothing="", as_block_reason=True), quiet=_stop_loops),
}
