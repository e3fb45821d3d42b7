"""Codex CLI: `carryd hook codex session-start`.

Recent Codex CLI versions have lifecycle hooks in Claude Code's JSON wire format: a
`SessionStart` hook reads `cwd` and `source` on stdin and may answer with
`hookSpecificOutput.additionalContext` (docs/hosts.md says how to configure it), so this
adapter reuses Claude Code's SessionStart encoding. Codex has no status-line command that
receives the context usage, hence no `statusline` event: watch Codex's own indicator and hand
off with `/clear` (or `/new`) at 75 %.
"""

from __future__ import annotations

from collections.abc import Mapping

from carryd.daemon.handoff import HookEvent
from carryd.daemon.host_claude_code import SESSION_START

__all__ = ["EVENTS"]

EVENTS: Mapping[str, HookEvent] = {"session-start": SESSION_START}
