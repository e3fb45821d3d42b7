"""The host-neutral hand-off: what any host's hook gets, whatever its wire format.

A host adapter (`host_claude_code.py`, `host_codex.py`, registered in `hosts.py`) parses its
host's stdin, calls `handoff_answer` (SessionStart-like events: the carry to inject) or
`carry_hint` (status lines: is a carry ready at the hand-off threshold), and encodes the
answer in its host's format. Everything else lives here once:

- a hook must never break the host: bad or missing stdin, a broken config, an unknown
  workspace, a missing carry, a daemon that is down, any error — the answer is still valid,
  small and exit 0 (`run_hook`). Settings are loaded here (not by the CLI) for that reason,
  and the bypass variable (`hooks.bypass_env`, `CARRYD_HOOKS_OFF`) makes every answer empty;
- the carry is inlined byte for byte when it is fresh and fits; otherwise it is *planned*
  again under the inline budget (`hooks.inline_chars`): required segments first, optional
  ones whole or not at all — never cut mid-text — and the answer ends with the path of the
  full carry file. Recall for that plan goes to the running daemon (warm, no model load)
  when one answers, else runs in-process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from carryd.daemon import control
from carryd.daemon.config import HookSettings, load_settings
from carryd.daemon.layout import carry_state, is_workspace
from carryd.index.errors import CarrydError, PromptBudgetError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

MAX_INPUT_BYTES = 1_000_000
# Problems are reported in a line or two, never more, whatever the budget.
SHORT_ANSWER_CHARS = 400
FALSY = frozenset({"", "0", "false", "no", "off"})
# Is a daemon there? A live one answers a ping in a few milliseconds.
PING_TIMEOUT = 0.5
# A warm recall takes tens of milliseconds; this only guards against a wedged daemon.
RECALL_TIMEOUT = 10.0

SessionReason = Literal[
    "injected",  # the carry, planned under the inline budget
    "bypassed",  # the bypass variable is set: empty answer
    "bad_input",  # empty stdin, not JSON, not an object, no cwd
    "config_error",  # no settings, no root
    "unknown_workspace",  # cwd maps to a workspace that is not a folder of the root
    "no_carry",  # nothing could be planned or read
    "over_budget",  # the required segments alone do not fit the inline budget
    "error",  # anything else
]


@dataclass(frozen=True)
class SessionStartAnswer:
    """A hand-off answer and why it is what it is (the reason is for tests and logs); each
    host adapter encodes it in its own wire format."""

    context: str | None  # None: no answer at all (bypass)
    reason: SessionReason
    workspace: str | None = None
    carry_path: str | None = None


@dataclass(frozen=True)
class InlineCarry:
    """A carry planned under a smaller budget, and where the full one lives."""

    text: str
    path: str
    fallback: bool
    reason: str | None


# One event of one host: the answer to print for the raw stdin, for an error and when bypassed.
Answer = Callable[[str, "Settings | None", "str | None"], str]


@dataclass(frozen=True)
class HookEvent:
    """What a host adapter does for one event; `run_hook` keeps the host safe around it."""

    answer: Answer  # raw stdin, settings (None: unusable), problem → the text to print
    on_error: Callable[[int, str], str]  # inline budget, short message → the text to print
    bypassed: str  # printed when the bypass variable is set


# --- running a hook -----------------------------------------------------------------------------


def run_hook(event: HookEvent, args: argparse.Namespace, *, stdin: IO[str] | None = None) -> int:
    """Given a host event and the CLI args, read stdin, print the answer, return 0 — always."""
    settings: Settings | None = None
    try:
        settings, problem = load_settings_softly(args)
        if bypassed(settings):
            emit(event.bypassed)
            return 0
        emit(event.answer(read_input(stdin), settings, problem))
    except Exception as error:  # noqa: BLE001 — the host's session must never fail because of us
        log.warning("carryd hook failed: %s: %s", type(error).__name__, error)
        budget = settings.hooks.inline_chars if settings is not None else SHORT_ANSWER_CHARS
        emit(event.on_error(budget, f"hook error: {type(error).__name__}"))
    return 0


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


def emit(text: str) -> None:
    """Given the answer, print it and a newline as UTF-8 whatever the locale says (LANG=C
    must not break the host)."""
    text += "\n"
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(text.encode("utf-8", errors="replace"))
        buffer.flush()
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def as_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


# --- the hand-off -------------------------------------------------------------------------------


def handoff_answer(
    settings: Settings, cwd: str, *, budget: int, source: str | None = None
) -> SessionStartAnswer:
    """Given usable settings, the host's working directory and the inline budget, return the
    carry to inject (CarrydError-free: every problem is a short answer with its reason)."""
    workspace = settings.workspace_for(cwd)
    if not is_workspace(settings, workspace):
        return short(
            f"no workspace {workspace!r} in {settings.root_path} for {cwd} "
            "(map the project in the config's [workspaces] table)",
            "unknown_workspace",
            budget,
            workspace=workspace,
        )
    carry_path = str(settings.carry_dir / f"{workspace}.md")
    try:
        inline = inline_carry(
            settings, workspace, budget_for_carry=_carry_budget(budget, carry_path)
        )
    except (CarrydError, OSError) as error:
        reason: SessionReason = (
            "over_budget" if isinstance(error, PromptBudgetError) else "no_carry"
        )
        log.warning("carryd hook: no inline carry for %s: %s", workspace, error)
        where = f"; read {carry_path}" if Path(carry_path).is_file() else ""
        return short(
            f"no carry inlined for {workspace!r} ({error}){where}",
            reason,
            budget,
            workspace=workspace,
            carry_path=carry_path,
        )
    context = compose_context(inline.text, inline.path)
    if len(context) > budget:
        # The planner kept its budget; only an absurd carry path can get here.
        return short(f"carry for {workspace!r}: read {inline.path}", "over_budget", budget)
    log.info("carryd hook: injected %d chars for %s (source %s)", len(context), workspace, source)
    return SessionStartAnswer(context, "injected", workspace, inline.path)


def compose_context(carry_text: str, carry_path: str) -> str:
    """Given the inline carry and the full carry's path, return the context text to inject."""
    return carry_text.rstrip("\n") + _suffix(carry_path)


def _suffix(carry_path: str) -> str:
    return f"\n\nFull carry: {carry_path}"


def _carry_budget(budget: int, carry_path: str) -> int:
    # The planner counts the carry's final newline, which compose_context strips: the
    # suffix is the only overhead.
    return max(0, budget - len(_suffix(carry_path)))


def inline_carry(settings: Settings, workspace: str, *, budget_for_carry: int) -> InlineCarry:
    """Given a workspace and a character budget, return its carry planned under that budget.

    The full carry on disk is used byte for byte when it is fresh and already fits (the bytes
    the daemon wrote, stable for prompt caching); otherwise the carry is planned again under
    the smaller budget from the current files.
    """
    path = settings.carry_dir / f"{workspace}.md"
    state = carry_state(settings, workspace)
    if state.state in ("fresh", "fallback"):
        text = _read_carry(path)
        if text is not None and len(text) <= budget_for_carry:
            return InlineCarry(text, str(path), state.state == "fallback", state.detail)
    return plan_carry_text(
        settings,
        workspace,
        max_chars=budget_for_carry,
        refresh=state.state in ("missing", "stale", "damaged"),
    )


def plan_carry_text(
    settings: Settings, workspace: str, *, max_chars: int, refresh: bool = False
) -> InlineCarry:
    """Given a workspace and a total budget, return its carry planned under that budget.

    Recall for the memory segment goes to the running daemon (warm, no model load) when one
    answers, else runs in-process. With `refresh` and no daemon to do it, the full carry file
    is rewritten first, so that the path the answer ends with holds a current carry.
    Raises PromptBudgetError when the required segments alone do not fit `max_chars`.
    """
    # Lazy, a service and not a command: a hook with a fresh carry reads a file and never
    # loads the carry planner, the parser or the secret scanner (~0.4 s).
    from carryd.daemon.carrying import build_workspace_carry, write_carry
    from carryd.daemon.recall_access import recall_access

    path = settings.carry_dir / f"{workspace}.md"
    daemon_up = control.request(settings, "ping", {}, timeout=PING_TIMEOUT) is not None
    recall = recall_access(settings, daemon=daemon_up, timeout=RECALL_TIMEOUT)
    try:
        if refresh and not daemon_up:
            try:
                write_carry(settings, workspace, recaller=recall)
            except (CarrydError, OSError) as error:
                log.warning("carryd hook: could not rewrite %s: %s", path, error)
            text = _read_carry(path)
            if text is not None and len(text) <= max_chars:
                fallback, reason = _manifest_fallback(settings, workspace)
                return InlineCarry(text, str(path), fallback, reason)
        built = build_workspace_carry(settings, workspace, max_chars=max_chars, recaller=recall)
    finally:
        recall.close()
    return InlineCarry(built.text, str(path), built.fallback, built.reason)


def _read_carry(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _manifest_fallback(settings: Settings, workspace: str) -> tuple[bool, str | None]:
    try:
        manifest = json.loads((settings.carry_dir / f"{workspace}.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(manifest, dict):
        return False, None
    reason = manifest.get("reason")
    return bool(manifest.get("fallback")), reason if isinstance(reason, str) else None


# --- the status hint ----------------------------------------------------------------------------


def carry_hint(settings: Settings, cwd: str, *, fraction: float | None) -> str:
    """Given the host's working directory and the context used (0–1, None: unknown), return
    the carryd part of a status line: the carry's state, and at the hand-off threshold what
    to do (`/clear` hands off)."""
    hooks = settings.hooks
    workspace = settings.workspace_for(cwd)
    if not is_workspace(settings, workspace):
        return f" | carryd: no workspace {one_line(workspace)[:40]!r}"
    freshness = carry_state(settings, workspace)
    label = one_line(workspace)[:40]
    at_threshold = fraction is not None and fraction + 1e-9 >= hooks.handoff_threshold
    if not at_threshold:
        return f" | carry {freshness.state} ({label})"
    hint = {
        "fresh": "fresh carry ready: /clear to hand off",
        "fallback": "carry ready (flat fallback): /clear to hand off",
        "stale": f"carry stale ({one_line(freshness.detail or '?')[:40]} newer): "
        "/clear re-plans it and hands off",
        "missing": "no carry yet: /clear plans one and hands off",
        "damaged": "carry damaged: /clear re-plans it and hands off",
    }[freshness.state]
    return f" >= {hooks.handoff_threshold:.0%} | {hint} ({label})"


# --- small helpers ------------------------------------------------------------------------------


def short(
    message: str,
    reason: SessionReason,
    budget: int,
    *,
    workspace: str | None = None,
    carry_path: str | None = None,
) -> SessionStartAnswer:
    """Given a problem, return a one-line answer of at most `SHORT_ANSWER_CHARS`."""
    text = one_line(f"carryd: {message}")
    limit = max(0, min(budget, SHORT_ANSWER_CHARS))
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…" if limit else ""
    return SessionStartAnswer(text, reason, workspace, carry_path)


def one_line(text: str) -> str:
    return " ".join(str(text).split())
