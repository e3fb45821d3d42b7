"""Running a host's hook, and the events every host shares, whatever its wire format.

A host module (`claude_code.py`, `codex.py`, `gemini.py`, registered in `registry.py`)
maps its event names to `HookEvent`s, mostly built here from its `Wire` (its own
event name, and whether its validator needs `hookSpecificOutput` on every answer):

- `session_start(wire)`: inject the carry (`handoff.handoff_answer`);
- `prompt_submit(wire, …)`: the write-side trigger — once per crossing of
  `hooks.handoff_threshold` per session, tell the model to write its hand-off
  (`handoff_trigger`), the usage from the status line's record or the host's transcript.

`run_hook` keeps the host safe around any event: a hook never fails its host (exit 0, a valid
answer, whatever happens), and setup problems — unreadable input, no root, a broken config, a
project that maps to no workspace, an internal error — never reach the model's context: the
person is told once (`systemMessage`, which Claude Code, Codex CLI and Gemini CLI all show the
user, and stderr), and again at most once a day (`hook_state.tell_once`).

Kept import-light: the prompt hook runs before every message (no Markdown parser, model,
SQLite or package metadata; `handoff` loads the carry planner only when it must plan).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from carryd.daemon.config import HookSettings, load_settings
from carryd.daemon.hosts import handoff_trigger as trigger
from carryd.daemon.hosts import hook_state
from carryd.daemon.hosts.handoff import SessionStartAnswer, handoff_answer, short
from carryd.daemon.hosts.workspace_lookup import find_workspace
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

MAX_INPUT_BYTES = 1_000_000
FALSY = frozenset({"", "0", "false", "no", "off"})
# Answers whose text is for the person only: the model cannot fix the user's setup.
PERSON_REASONS = frozenset({"bad_input", "config_error", "unknown_workspace", "error"})


@dataclass(frozen=True)
class HookCall:
    """One hook invocation: who calls, the settings (or why there are none), the input."""

    host: str
    event: str
    settings: Settings | None
    problem: str | None  # why the settings cannot be used (None: they can)
    bypassed: bool
    raw: str
    data: dict[str, Any] | None
    bad_input: str | None  # why `raw` is not a JSON object (None: it is)
    wrap: str | None = None  # the user's own status line command, for Claude Code's


@dataclass(frozen=True)
class HookEvent:
    """What a host does for one event; `run_hook` keeps the host safe around it."""

    answer: Callable[[HookCall], str]  # the text to print (the bypass included)
    on_error: Callable[[str | None], str]  # carryd failed: the notice told (or None) → text


@dataclass(frozen=True)
class Wire:
    """How a host's validator wants one event answered."""

    event_name: str  # the host's own name ("SessionStart", "UserPromptSubmit", "BeforeAgent")
    always_specific: bool = False  # Codex rejects a bare `{}`: always name the event
    injects: bool = True  # False: the event cannot add context (Gemini CLI's PreCompress)

    def answer(self, *, context: str | None, notice: str | None) -> str:
        """Given what the model and the person should get, return the host's JSON answer."""
        payload: dict[str, Any] = {}
        if self.injects and (context or self.always_specific):
            payload["hookSpecificOutput"] = {
                "hookEventName": self.event_name,
                "additionalContext": context or "",
            }
        if notice:
            payload["systemMessage"] = notice
        return as_json(payload)

    def on_error(self, notice: str | None) -> str:
        return self.answer(context=None, notice=notice)


# --- running a hook -----------------------------------------------------------------------------


def run_hook(event: HookEvent, args: argparse.Namespace, *, stdin: IO[str] | None = None) -> int:
    """Given a host event and the CLI args, read stdin, print the answer, return 0 — always."""
    try:
        output = event.answer(prepare(args, stdin))
    except Exception as error:  # noqa: BLE001 — the host's session must never fail because of us
        log.warning("carryd hook %s %s failed: %s: %s", args.host, args.event,
                    type(error).__name__, error)  # fmt: skip
        try:
            notice = hook_state.tell_once(
                f"{args.host}:error:{type(error).__name__}", f"hook error: {error}"
            )
        except Exception:  # noqa: BLE001 — not even the notice may fail the host
            notice = None
        output = event.on_error(notice)
    emit(output)
    return 0


def prepare(args: argparse.Namespace, stdin: IO[str] | None = None) -> HookCall:
    """Given the CLI args and stdin, return the call with its settings and parsed input."""
    settings, problem = load_settings_softly(args)
    is_bypassed = bypassed(settings)
    wrap = getattr(args, "wrap", None)
    # A wrapped status line still gets its input when carryd is bypassed.
    raw = read_input(stdin) if wrap or not is_bypassed else ""
    data, bad = parse_input(raw) if not is_bypassed else (None, None)
    return HookCall(args.host, args.event, settings, problem, is_bypassed, raw, data, bad, wrap)


def load_settings_softly(args: argparse.Namespace) -> tuple[Settings | None, str | None]:
    """Given the CLI args, return (settings, None), or (None, why they cannot be used)."""
    try:
        settings = load_settings(getattr(args, "config", None), root=getattr(args, "root", None))
    except CarrydError as error:
        return None, f"config error: {error}"
    if not settings.root:
        return settings, "no memory root (set CARRYD_ROOT or 'root' in the config)"
    return settings, None


def bypassed(settings: Settings | None, environ: Mapping[str, str] | None = None) -> bool:
    """Given the settings (or None), return whether the bypass variable is set to a true value."""
    env = os.environ if environ is None else environ
    name = settings.hooks.bypass_env if settings is not None else HookSettings().bypass_env
    return bool(name) and env.get(name, "").strip().lower() not in FALSY


def read_input(stream: IO[str] | None = None) -> str:
    """Given stdin (or a stand-in), return what the host wrote — "" for a terminal or nothing."""
    stream = sys.stdin if stream is None else stream
    if stream is None:
        return ""
    try:
        if stream.closed or stream.isatty():
            return ""
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            data: bytes = buffer.read(MAX_INPUT_BYTES)
            return data.decode("utf-8", errors="replace")
        return stream.read(MAX_INPUT_BYTES)
    except (OSError, ValueError):
        return ""


def parse_input(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Given the raw hook input, return (the JSON object, None) or (None, what is wrong)."""
    if not raw.strip():
        return None, "no hook input on stdin"
    try:
        data = json.loads(raw)
    except ValueError:
        return None, "the hook input is not JSON"
    if not isinstance(data, dict):
        return None, f"the hook input is a JSON {type(data).__name__}, not an object"
    return data, None


def cwd_of(data: Mapping[str, Any], *, statusline: bool = False) -> str | None:
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


def emit(text: str) -> None:
    """Given the answer, print it and a newline as UTF-8 whatever the locale says (LANG=C
    must not break the host)."""
    data = (text + "\n").encode("utf-8", errors="replace")
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()


def as_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


# --- SessionStart: inject the carry ---------------------------------------------------------------


def session_start_answer(
    raw: str, settings: Settings | None, problem: str | None
) -> SessionStartAnswer:
    """Given the SessionStart input and the settings, return the answer and its reason
    (CarrydError-free); who hears it is `session_start`'s decision."""
    budget = (settings.hooks if settings is not None else HookSettings()).inline_chars
    data, bad = parse_input(raw)
    if data is None:
        return short(bad or "bad input", "bad_input", budget)
    if settings is None or problem:
        return short(problem or "no settings", "config_error", budget)
    cwd = cwd_of(data)
    if cwd is None:
        return short("the hook input has no usable cwd", "bad_input", budget)
    source = data.get("source") if isinstance(data.get("source"), str) else None
    return handoff_answer(settings, cwd, budget=budget, source=source)


def session_start(wire: Wire) -> HookEvent:
    """Given a host's SessionStart wire, return the event that injects the carry."""

    def answer(call: HookCall) -> str:
        if call.bypassed:
            return wire.answer(context=None, notice=None)
        result = session_start_answer(call.raw, call.settings, call.problem)
        if result.reason not in PERSON_REASONS:
            return wire.answer(context=result.context, notice=None)
        detail = result.workspace or (call.settings.config_file if call.settings else "")
        notice = hook_state.tell_once(
            f"{call.host}:{result.reason}:{detail}", result.context or result.reason
        )
        return wire.answer(context=None, notice=notice)

    return HookEvent(answer=answer, on_error=wire.on_error)


# --- the write-side trigger (UserPromptSubmit, BeforeAgent) ---------------------------------------


def prompt_submit(
    wire: Wire, *, transcript_usage: Callable[[str], float | None], clear_command: str
) -> HookEvent:
    """Given a host's prompt wire, how to read usage from its transcript's tail and what the
    person types to hand off, return the event that instructs the model once per crossing."""

    def answer(call: HookCall) -> str:
        if call.bypassed:
            return wire.answer(context=None, notice=None)
        workspace, notice = workspace_or_notice(call)
        if workspace is None or call.settings is None or call.data is None:
            return wire.answer(context=None, notice=notice)
        text = handoff_instruction(call.settings, workspace, call.data,
                                   transcript_usage, clear_command)  # fmt: skip
        return wire.answer(context=text, notice=None)

    return HookEvent(answer=answer, on_error=wire.on_error)


def handoff_instruction(
    settings: Settings,
    workspace: str,
    data: Mapping[str, Any],
    transcript_usage: Callable[[str], float | None],
    clear_command: str,
) -> str | None:
    """Given a session's hook input, return the hand-off instruction when its usage has just
    crossed the threshold (None otherwise), keeping the session's mark."""
    key = hook_state.session_key(dict(data))
    recorded = hook_state.read_statusline(settings, key) if key else None
    from_transcript = None
    if recorded is None:
        tail = hook_state.read_tail(data.get("transcript_path"))
        from_transcript = transcript_usage(tail) if tail else None
    fraction, source = trigger.choose_usage(recorded, from_transcript)
    mark = hook_state.read_mark(settings, key) if key else trigger.SessionMark()
    decision = trigger.decide(fraction, source, mark, settings.hooks.handoff_threshold)
    if key and decision.mark != mark:
        hook_state.write_mark(settings, key, decision.mark)
    if not decision.instruct or decision.fraction is None:
        return None
    sections = settings.carry.sections
    folder = settings.root_path / workspace
    log.info("carryd hook: hand-off instruction for %s at %.2f", workspace, decision.fraction)
    return trigger.instruction(
        fraction=decision.fraction,
        threshold=settings.hooks.handoff_threshold,
        ledger_path=str(folder / settings.carry.ledger_file),
        plan_path=str(folder / settings.carry.plan_file),
        sections=trigger.section_names(
            (sections.status, sections.goal, sections.tried, sections.next)
        ),
        clear_command=clear_command,
    )


def workspace_or_notice(call: HookCall) -> tuple[str | None, str | None]:
    """Given a call, return (its workspace, None), or (None, a notice told once — None when it
    was told already) when the input, the settings or the workspace is not usable."""
    settings = call.settings
    if call.data is None:
        problem, reason = call.bad_input or "bad hook input", "bad_input"
    elif settings is None or call.problem:
        problem, reason = call.problem or "no settings", "config_error"
    else:
        cwd = cwd_of(call.data)
        if cwd is None:
            problem, reason = "the hook input has no usable cwd", "bad_input"
        else:
            workspace = find_workspace(settings, cwd)
            if workspace is not None:
                return workspace, None
            problem = (
                f"no workspace {settings.workspace_for(cwd)!r} in {settings.root_path} for "
                f"{cwd} (map the project in the config's [workspaces] table)"
            )
            return None, hook_state.tell_once(f"{call.host}:unknown_workspace:{cwd}", problem)
    detail = settings.config_file if settings is not None else ""
    return None, hook_state.tell_once(f"{call.host}:{reason}:{detail}", problem)
