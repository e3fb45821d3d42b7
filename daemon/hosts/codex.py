"""Codex CLI: `carryd hook codex session-start|prompt-submit`.

Recent Codex CLI versions have lifecycle hooks in Claude Code's JSON wire format: `SessionStart`
and `UserPromptSubmit` read `cwd`, `source`, `session_id` and `transcript_path` on stdin and may
answer with `hookSpecificOutput.additionalContext` (docs/hosts.md says how to configure them).
Codex's validator rejects a bare `{}`, so every answer — the bypass and the quiet failures
included — names the event with an (empty) `additionalContext`.

Codex has no status-line command that receives the context usage, hence no `statusline` event:
the prompt hook reads the usage from the rollout JSONL's last `token_count` event
(`info.last_token_usage.total_tokens` over `info.model_context_window`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from carryd.daemon.hosts.handoff_trigger import last_jsonl_usage, token_count
from carryd.daemon.hosts.hook_events import HookEvent, Wire, prompt_submit, session_start

__all__ = ["CLEAR_COMMAND", "EVENTS", "transcript_usage"]

CLEAR_COMMAND = "/clear (or /new)"


def transcript_usage(tail: str) -> float | None:
    """Given the end of a Codex rollout (JSONL), return the context used (0–1), or None."""
    return last_jsonl_usage(tail, _record_usage)


def _record_usage(record: Mapping[str, Any]) -> float | None:
    payload = record.get("payload")
    if record.get("type") != "event_msg" or not isinstance(payload, Mapping):
        return None
    info = payload.get("info")
    if payload.get("type") != "token_count" or not isinstance(info, Mapping):
        return None
    last = info.get("last_token_usage")
    window = token_count(info.get("model_context_window"))
    if not isinstance(last, Mapping) or window <= 0:
        return None
    used = token_count(last.get("total_tokens")) or token_count(last.get("input_tokens"))
    return used / window if used > 0 else None


EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(Wire("SessionStart", always_specific=True)),
    "prompt-submit": prompt_submit(
        Wire("UserPromptSubmit", always_specific=True),
        transcript_usage=transcript_usage,
        clear_command=CLEAR_COMMAND,
    ),
}
