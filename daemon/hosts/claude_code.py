"""Claude Code: `carryd hook claude-code session-start|prompt-submit|post-tool-use|stop|
pre-compact|statusline`.

Where the session compacts is `compaction.claude_point`: the model's window (the status
line's `context_window_size`, else the model's known window), the auto-compact window from
`CLAUDE_CODE_AUTO_COMPACT_WINDOW` or the settings layers, and the transcript's last automatic
`compact_boundary`. The usage is the status line's record (its statusLine command receives
`context_window`) when it is newer than the transcript, else the transcript's last main-chain
assistant message's `message.usage`.

The triggers need no person: `UserPromptSubmit`, `PostToolUse` and `Stop` each answer with
`hookSpecificOutput.additionalContext` (Stop's keeps the turn going), and the note comes once
per crossing of the hand-off point, whichever fires first. `PreCompact` (automatic only)
holds the compaction back once when the hand-off files were not written since the crossing
(`decision: "block"` with a factual reason) and lets the next one through; after it,
SessionStart (`compact`) injects the carry — the relay needs no keystroke.

SessionStart injects for every source: `startup` and `clear` begin a new context in the
workspace, `compact` follows the host's own lossy compaction, `resume` and `fork` (`/branch`,
`--fork-session`) reopen an older conversation that predates whatever the carry learned
since. `systemMessage` is shown to the user only: setup problems go there. Hook output above
about 10,000 characters is not inlined, so the carry is planned under `hooks.inline_chars`.

`carryd setup claude-code` writes the status line as `carryd hook claude-code statusline --wrap
THEIRS` when the user had one: their text first, carryd's after.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping

from carryd.daemon.hosts import hook_state
from carryd.daemon.hosts.compaction import Point, claude_point, handoff_tokens, short_tokens
from carryd.daemon.hosts.handoff_trigger import Usage, jsonl_records, token_count
from carryd.daemon.hosts.hook_events import (
    HookCall,
    HookEvent,
    Wire,
    cwd_of,
    handoff_files_written_since,
    parse_input,
    session_start,
    usage_note,
    workspace_or_notice,
)
from carryd.daemon.hosts.hook_settings import LazyLog

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any

    from carryd.daemon.config import Settings

log = LazyLog(__name__)

__all__ = [
    "CLEAR_COMMAND",
    "EVENTS",
    "point_of",
    "statusline_reading",
    "statusline_text",
    "transcript_usage",
    "used_fraction",
]

CLEAR_COMMAND = "/clear"
NEXT_STEP = (
    "The next context (after /clear, or after Claude Code compacts) starts from the carry "
    "built from them."
)
WRAP_TIMEOUT_SECONDS = 2.0
# The status line's carry state is judged again after this long (a carry written meanwhile
# shows within it).
HINT_TTL_SECONDS = 5.0
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


# --- usage ----------------------------------------------------------------------------------------


def used_fraction(data: Mapping[str, Any]) -> float | None:
    """Given the statusLine JSON, return the context used as a share of the window (0–1), or
    None if unknown: `context_window.used_percentage` (0–100) when present; else the current
    usage's input tokens over `context_window_size`."""
    window = data.get("context_window")
    if not isinstance(window, Mapping):
        return None
    percent = _number(window.get("used_percentage"))
    if percent is not None:
        return min(max(percent, 0.0), 100.0) / 100.0
    size = _number(window.get("context_window_size"))
    usage = window.get("current_usage")
    if size and size > 0 and isinstance(usage, Mapping):
        used = sum(_number(usage.get(key)) or 0.0 for key in USAGE_KEYS)
        return min(max(used / size, 0.0), 1.0)
    return None


def statusline_reading(data: Mapping[str, Any]) -> tuple[int, int, str | None] | None:
    """Given the statusLine JSON, return (tokens used, the model's window, the model id), or
    None when it does not say."""
    window = data.get("context_window")
    size = _number(window.get("context_window_size")) if isinstance(window, Mapping) else None
    fraction = used_fraction(data)
    if not size or size <= 0 or fraction is None:
        return None
    model = data.get("model")
    model_id = model.get("id") if isinstance(model, Mapping) else None
    return round(fraction * size), int(size), model_id if isinstance(model_id, str) else None


def transcript_usage(tail: str) -> Usage | None:
    """Given the end of a session transcript (JSONL), return its usage: the last main-chain
    assistant message's input + cache tokens and model (0 tokens when an automatic
    compaction came after it), and the tokens before the last automatic compaction."""
    found: Usage | None = None
    compacted_at = None
    for record in jsonl_records(tail):
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata")
            before = token_count(meta.get("preTokens")) if isinstance(meta, Mapping) else 0
            if isinstance(meta, Mapping) and meta.get("trigger") == "auto" and before > 0:
                compacted_at = compacted_at or int(before)
            if found is None:
                found = Usage(0)
            continue
        if found is not None and found.tokens > 0:
            continue
        if record.get("type") != "assistant" or record.get("isSidechain") is True:
            continue  # a subagent's message says nothing about this context
        message = record.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("usage"), Mapping):
            continue
        usage = message["usage"]
        used = sum(token_count(usage.get(key)) for key in USAGE_KEYS)
        if used <= 0:
            continue  # a synthetic message (an error, an interruption) records no usage
        model = message.get("model") if isinstance(message.get("model"), str) else None
        if found is None:
            found = Usage(int(used), model=model)
        elif found.model is None:
            found.model = model  # the model of the context the compaction replaced
    if found is not None:
        found.compacted_at = compacted_at
    return found


def point_of(call: HookCall, usage: Usage | None, recorded: Mapping[str, Any] | None) -> Point:
    """Given a call, its transcript's usage and its status line's record, return where
    Claude Code compacts this session."""
    data = call.data or {}
    model = (recorded or {}).get("model") or (usage.model if usage else None)
    if model is None and isinstance(data.get("model"), str):
        model = data["model"]
    project = os.environ.get("CLAUDE_PROJECT_DIR") or cwd_of(data)
    return claude_point(
        model,
        window=(recorded or {}).get("window"),
        project=project,
        environ=os.environ,
        observed=usage.compacted_at if usage else None,
    )


# --- the status line ------------------------------------------------------------------------------


def statusline_text(raw: str, settings: Settings | None, problem: str | None) -> str:
    """Given the statusLine input and the settings, return carryd's one line: the context
    used, where this session compacts and its hand-off point (and where that came from), and
    the carry's state — at the hand-off point, what hands off."""
    data, bad = parse_input(raw)
    data = data or {}
    fraction = used_fraction(data)
    model = data.get("model")
    name = model.get("display_name") if isinstance(model, Mapping) else None
    parts = [f"[{one_line(name)[:30]}]"] if isinstance(name, str) and name.strip() else []
    # Floor, so that the number shown never reads higher than it is.
    parts.append("ctx ?" if fraction is None else f"ctx {math.floor(fraction * 100 + 1e-9)}%")
    shown = " ".join(parts)
    if bad is not None and fraction is None:
        return shown + " | carryd: no status input"
    if settings is None or problem:
        return shown + " | carryd: " + ("config error" if settings is None else "no root")
    cwd = cwd_of(data, statusline=True)
    if cwd is None:
        return shown + " | carryd: no cwd in status input"
    reading = statusline_reading(data)
    at_handoff = False
    if reading is not None:
        used, window, model_id = reading
        workspace = data.get("workspace")
        project = workspace.get("project_dir") if isinstance(workspace, Mapping) else None
        point = claude_point(
            model_id,
            window=window,
            project=project if isinstance(project, str) else cwd,
            environ=os.environ,
        )
        handoff = handoff_tokens(point.tokens, settings.hooks.handoff_threshold)
        at_handoff = used >= handoff
        label = one_line(point.source.split(" in ")[0])[:40]
        shown += (
            f" | hand-off {short_tokens(handoff)}, compacts ~{short_tokens(point.tokens)} ({label})"
        )
    return shown + cached_hint(settings, data, cwd, at_handoff=at_handoff)


def cached_hint(settings: Settings, data: Mapping[str, Any], cwd: str, *, at_handoff: bool) -> str:
    """The carry's state for the status line, judged again after `HINT_TTL_SECONDS` per
    session or when the carry, its manifest, the ledger or the plan changed (the status line
    runs after every message; judging walks and hashes the carry's sources)."""
    key = hook_state.session_key(dict(data))
    asked = f"{cwd}\n{at_handoff}"
    hint = hook_state.read_hint(settings, key, asked, ttl=HINT_TTL_SECONDS) if key else None
    if hint is None:
        from carryd.daemon.hosts.handoff import carry_hint  # the carry's state
        from carryd.daemon.hosts.workspace_lookup import find_workspace

        hint = carry_hint(settings, cwd, at_handoff=at_handoff)
        if key:
            workspace = find_workspace(settings, cwd)
            hook_state.record_hint(settings, key, asked, hint, workspace)
    return hint


def statusline(call: HookCall) -> str:
    """The status line: the user's own first when carryd wraps it, then carryd's hint; the
    usage is recorded for the session's other hooks."""
    theirs = run_wrapped(call.wrap, call.raw) if call.wrap else ""
    if call.bypassed:
        return theirs
    settings = call.settings
    if settings is not None and not call.problem and call.data is not None:
        reading = statusline_reading(call.data)
        key = hook_state.session_key(call.data)
        if key and reading is not None:
            used, window, model = reading
            hook_state.record_statusline(settings, key, used=used, window=window, model=model)
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


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# --- PreCompact: the relay ------------------------------------------------------------------------

PRE_COMPACT = Wire("PreCompact", injects=False)


def pre_compact(call: HookCall) -> str:
    """Claude Code is about to compact: an automatic compaction is held back once per
    crossing when the hand-off files were not written since the note; the next one (and
    every manual `/compact`) goes ahead."""
    data = call.data or {}
    if call.bypassed or data.get("trigger") != "auto":
        return PRE_COMPACT.answer(context=None, notice=None)
    workspace, notice = workspace_or_notice(call)
    settings = call.settings
    key = hook_state.session_key(dict(data))
    if workspace is None or settings is None or key is None:
        return PRE_COMPACT.answer(context=None, notice=notice)
    mark = hook_state.read_mark(settings, key)
    if mark.blocked or handoff_files_written_since(settings, workspace, mark.told_at):
        return PRE_COMPACT.answer(context=None, notice=None)
    mark.told, mark.blocked = True, True
    mark.told_at = mark.told_at or time.time()
    hook_state.write_mark(settings, key, mark)
    folder = settings.root_path / workspace
    reason = (
        f"carryd held back this automatic compaction once: the hand-off files "
        f"({folder / settings.carry.ledger_file}, {folder / settings.carry.plan_file}) were "
        "not written since the context passed its hand-off point. The next compaction goes "
        "ahead, and the context after it starts from the carry built from them."
    )
    return PRE_COMPACT.answer(context=None, notice=None, extra={"decision": "block",
                                                                 "reason": reason})  # fmt: skip


def _stop_loops(call: HookCall) -> bool:
    """A Stop hook that already keeps the turn going says nothing more (no loop)."""
    return (call.data or {}).get("stop_hook_active") is True


# --- the events -----------------------------------------------------------------------------------


def _note(event_name: str, **kw: Any) -> HookEvent:
    return usage_note(Wire(event_name), transcript_usage=transcript_usage, point_of=point_of,
                      next_step=NEXT_STEP, **kw)  # fmt: skip


EVENTS: Mapping[str, HookEvent] = {
    "session-start": session_start(Wire("SessionStart")),
    "prompt-submit": _note("UserPromptSubmit"),
    "post-tool-use": _note("PostToolUse"),
    "stop": _note("Stop", quiet=_stop_loops),
    "pre-compact": HookEvent(answer=pre_compact, on_error=PRE_COMPACT.on_error),
    "statusline": HookEvent(
        answer=statusline, on_error=lambda notice: "carryd: hook error (see `carryd status`)"
    ),
}
