"""Running a host's hook, and the events every host shares, whatever its wire format.

A host module (`claude_code.py`, `codex.py`, `gemini.py`, registered in `registry.py`)
maps its event names to `HookEvent`s, mostly built here from its `Wire` (its own event name,
what it takes for "nothing", how the injected text is rendered for it and its size limit):

- `session_start(wire)`: inject the carry (`handoff.handoff_answer`), rendered for the host
  and within its limit;
- `usage_note(wire, …)` (the prompt, tool and stop hooks): the write-side trigger — once per
  crossing of the session's hand-off point (`compaction`, `handoff_trigger`), a note states
  the usage, the compaction point and the hand-off files; the usage comes from the status
  line's record or the host's transcript (`session_reading`).

`run_hook` keeps the host safe around any event: a hook never fails its host (exit 0, a valid
answer, whatever happens), and setup problems — unreadable input, no root, a broken config, a
project that maps to no workspace, an internal error — never reach the model's context: the
person is told once (`systemMessage`, which Claude Code, Codex CLI and Gemini CLI all show the
user, and stderr), and again at most once a day (`hook_state.tell_once`).

Kept import-light: the per-message hooks run before every prompt and after every tool call
(no Markdown parser, model, SQLite or package metadata; `handoff` loads the carry planner
only when it must plan).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping

from carryd.daemon.hosts import handoff_trigger as trigger
from carryd.daemon.hosts import hook_state
from carryd.daemon.hosts.compaction import Point, handoff_tokens
from carryd.daemon.hosts.hook_settings import DEFAULTS, LazyLog, hook_settings
from carryd.index.errors import CarrydError

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    import argparse
    from typing import IO, Any

    from carryd.daemon.config import Settings
    from carryd.daemon.hosts.handoff import SessionStartAnswer

log = LazyLog(__name__)

MAX_INPUT_BYTES = 1_000_000
FALSY = frozenset({"", "0", "false", "no", "off"})
# Answers whose text is for the person only: the model cannot fix the user's setup.
PERSON_REASONS = frozenset({"bad_input", "config_error", "unknown_workspace", "error"})


class HookCall:
    """One hook invocation: who calls, the settings (or why there are none), the input."""

    __slots__ = ("bad_input", "bypassed", "data", "event", "host", "problem", "raw", "settings",
                 "wrap")  # fmt: skip

    def __init__(
        self,
        host: str,
        event: str,
        settings: Settings | None,
        problem: str | None,  # why the settings cannot be used (None: they can)
        bypassed: bool,
        raw: str,
        data: dict[str, Any] | None,
        bad_input: str | None,  # why `raw` is not a JSON object (None: it is)
        wrap: str | None = None,  # the user's own status line command, for Claude Code's
    ) -> None:
        self.host, self.event, self.settings, self.problem = host, event, settings, problem
        self.bypassed, self.raw, self.data, self.bad_input = bypassed, raw, data, bad_input
        self.wrap = wrap


class HookEvent:
    """What a host does for one event; `run_hook` keeps the host safe around it."""

    __slots__ = ("answer", "on_error")

    def __init__(
        self,
        answer: Callable[[HookCall], str],  # the text to print (the bypass included)
        on_error: Callable[[str | None], str],  # carryd failed: the notice told (or None) → text
    ) -> None:
        self.answer = answer
        self.on_error = on_error


class Wire:
    """How a host wants one event answered."""

    __slots__ = ("as_block_reason", "event_name", "injects", "max_bytes", "nothing", "render")

    def __init__(
        self,
        event_name: str,  # the host's own name ("SessionStart", "UserPromptSubmit", …)
        *,
        nothing: str = "{}",  # the host's "nothing to add" (Codex: no output at all)
        injects: bool = True,  # False: the event cannot add context (Gemini's PreCompress)
        render: Callable[[str], str] | None = None,  # the host's rendering of injected text
        max_bytes: int | None = None,  # the host's limit on one hook's context (UTF-8 bytes)
        as_block_reason: bool = False,  # text for the model goes in a block's reason (Codex Stop)
    ) -> None:
        self.event_name, self.nothing, self.injects = event_name, nothing, injects
        self.render, self.max_bytes, self.as_block_reason = render, max_bytes, as_block_reason

    def answer(
        self,
        *,
        context: str | None,
        notice: str | None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Given what the model and the person should get, return the host's JSON answer
        (the host's "nothing" when there is nothing for either)."""
        payload: dict[str, Any] = {}
        if self.injects and context:
            text = self.render(context) if self.render is not None else context
            if self.as_block_reason:
                payload.update(decision="block", reason=text)
            else:
                payload["hookSpecificOutput"] = {
                    "hookEventName": self.event_name,
                    "additionalContext": text,
                }
        if notice:
            payload["systemMessage"] = notice
        if extra:
            payload.update(extra)
        return as_json(payload) if payload else self.nothing

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
    """Given the CLI args, return (settings, None), or (None, why they cannot be used): the
    hook's light view of them (`hook_settings`), the full settings loaded only when needed."""
    try:
        settings = hook_settings(getattr(args, "config", None), getattr(args, "root", None))
    except CarrydError as error:
        return None, f"config error: {error}"
    if not settings.root:
        return settings, "no memory root (set CARRYD_ROOT or 'root' in the config)"
    return settings, None


def bypassed(settings: Settings | None, environ: Mapping[str, str] | None = None) -> bool:
    """Given the settings (or None), return whether the bypass variable is set to a true value."""
    env = os.environ if environ is None else environ
    name = settings.hooks.bypass_env if settings is not None else DEFAULTS["hooks"]["bypass_env"]
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
    raw: str, settings: Settings | None, problem: str | None, wire: Wire | None = None
) -> SessionStartAnswer:
    """Given the SessionStart input and the settings, return the answer and its reason
    (CarrydError-free); who hears it is `session_start`'s decision. With a wire whose host
    limits a hook's context in bytes, the carry is planned again under a smaller budget
    until its rendering fits."""
    from carryd.daemon.hosts.handoff import handoff_answer, short  # only SessionStart plans

    budget = settings.hooks.inline_chars if settings is not None else 9_000
    data, bad = parse_input(raw)
    if data is None:
        return short(bad or "bad input", "bad_input", budget)
    if settings is None or problem:
        return short(problem or "no settings", "config_error", budget)
    cwd = cwd_of(data)
    if cwd is None:
        return short("the hook input has no usable cwd", "bad_input", budget)
    source = data.get("source") if isinstance(data.get("source"), str) else None
    result = handoff_answer(settings, cwd, budget=budget, source=source)
    limit = wire.max_bytes if wire is not None else None
    for _ in range(4):
        size = len(_rendered(wire, result.context or "").encode("utf-8"))
        if limit is None or result.reason != "injected" or size <= limit:
            break
        budget = max(200, int(budget * limit / size * 0.97))
        result = handoff_answer(settings, cwd, budget=budget, source=source)
    return result


def _rendered(wire: Wire | None, text: str) -> str:
    return wire.render(text) if wire is not None and wire.render is not None else text


def session_start(wire: Wire) -> HookEvent:
    """Given a host's SessionStart wire, return the event that injects the carry."""

    def answer(call: HookCall) -> str:
        if call.bypassed:
            return wire.answer(context=None, notice=None)
        result = session_start_answer(call.raw, call.settings, call.problem, wire)
        if result.reason not in PERSON_REASONS:
            return wire.answer(context=result.context, notice=None)
        detail = result.workspace or (call.settings.config_file if call.settings else "")
        notice = hook_state.tell_once(
            f"{call.host}:{result.reason}:{detail}", result.context or result.reason
        )
        return wire.answer(context=None, notice=notice)

    return HookEvent(answer=answer, on_error=wire.on_error)


# --- the write-side trigger (prompt, tool and stop hooks) -----------------------------------------


class Reading:
    """A session's usage (tokens) and where its host compacts."""

    __slots__ = ("point", "source", "used")

    def __init__(self, used: int, point: Point, source: trigger.UsageSource) -> None:
        self.used, self.point, self.source = used, point, source


# Given the call, the transcript's usage and the status line's record: where the host compacts.
PointOf = Callable[[HookCall, trigger.Usage | None, "dict[str, Any] | None"], Point]


def session_reading(
    call: HookCall, transcript_usage: Callable[[str], trigger.Usage | None], point_of: PointOf
) -> Reading | None:
    """Given a call, how its host's transcript tells the usage and where the host compacts,
    return the session's reading: the status line's record when it is newer than the
    transcript, else the transcript's last usage (None: neither says)."""
    settings, data = call.settings, call.data or {}
    key = hook_state.session_key(dict(data))
    recorded = hook_state.read_statusline(settings, key) if key and settings else None
    tail = hook_state.read_tail(data.get("transcript_path"))
    usage = transcript_usage(tail[0]) if tail else None
    source: trigger.UsageSource
    if recorded is not None and (usage is None or tail is None or recorded["at"] >= tail[1]):
        used, source = recorded["used"], "statusline"
    elif usage is not None:
        used, source = usage.tokens, "transcript"
    else:
        return None
    return Reading(int(used), point_of(call, usage, recorded), source)


def usage_note(
    wire: Wire,
    *,
    transcript_usage: Callable[[str], trigger.Usage | None],
    point_of: PointOf,
    next_step: str,
    quiet: Callable[[HookCall], bool] | None = None,
) -> HookEvent:
    """Given a host's prompt, tool or stop wire, how its transcript tells the usage, where it
    compacts and what starts the next context there, return the event that states the note
    once per crossing (`quiet`: calls that never note, such as a stop hook already looping).
    The workspace is looked up only at a crossing: below the hand-off point the hook reads the
    usage, keeps the session's mark and answers nothing."""

    def answer(call: HookCall) -> str:
        if call.bypassed:
            return wire.answer(context=None, notice=None)
        settings, data = call.settings, call.data
        if data is None or settings is None or call.problem or cwd_of(data) is None:
            return wire.answer(context=None, notice=workspace_or_notice(call)[1])
        if quiet is not None and quiet(call):
            return wire.answer(context=None, notice=None)
        reading = session_reading(call, transcript_usage, point_of)
        handoff = crossing(settings, data, reading, host=call.host)
        if handoff is None or reading is None:
            return wire.answer(context=None, notice=None)
        workspace, notice = workspace_or_notice(call)
        if workspace is None:
            return wire.answer(context=None, notice=notice)
        folder = settings.root_path / workspace
        log.info("carryd hook: hand-off note for %s at %d tokens", workspace, reading.used)
        text = trigger.note(
            used=reading.used,
            point=reading.point.tokens,
            point_source=reading.point.source,
            handoff=handoff,
            ledger_path=str(folder / settings.carry.ledger_file),
            plan_path=str(folder / settings.carry.plan_file),
            next_step=next_step,
        )
        return wire.answer(context=text, notice=None)

    return HookEvent(answer=answer, on_error=wire.on_error)


prompt_submit = usage_note  # the first trigger carryd had: the person's prompt


def crossing(
    settings: Settings, data: Mapping[str, Any], reading: Reading | None, *, host: str = ""
) -> int | None:
    """Given a session's reading, return its hand-off point (tokens) when the usage has just
    crossed it (None otherwise), keeping the session's mark (with what it was judged by, for
    `carryd status`)."""
    key = hook_state.session_key(dict(data))
    mark = hook_state.read_mark(settings, key) if key else trigger.SessionMark()
    fraction = share = None
    handoff = 0
    if reading is not None:
        handoff = handoff_tokens(reading.point.tokens, settings.hooks.handoff_threshold)
        fraction = reading.used / reading.point.tokens
        share = handoff / reading.point.tokens
    decision = trigger.decide(fraction, reading.source if reading else None, mark,
                              share or 1.0, now=time.time())  # fmt: skip
    decision.mark.point = mark.point
    if reading is not None:
        decision.mark.point = {"host": host, "used": reading.used, "compacts": reading.point.tokens,
                               "hand_off": handoff, "source": reading.point.source}  # fmt: skip
    if key and decision.mark != mark:
        hook_state.write_mark(settings, key, decision.mark)
    return handoff if decision.instruct and reading is not None else None


def handoff_files_written_since(settings: Settings, workspace: str, since: float | None) -> bool:
    """Given a workspace and a time (None: never), return whether its ledger or plan was
    written after it."""
    if since is None:
        return False
    folder = settings.root_path / workspace
    for name in (settings.carry.ledger_file, settings.carry.plan_file):
        try:
            if (folder / name).stat().st_mtime > since:
                return True
        except OSError:
            continue
    return False


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
            from carryd.daemon.hosts.workspace_lookup import find_workspace

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
