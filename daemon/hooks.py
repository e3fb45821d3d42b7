"""`carryd hook claude-code session-start|statusline`: the host hand-off that reaches the model.

Claude Code's hooks get no token counts, but its statusLine command receives
`context_window.used_percentage`: the status line says when the context is at the hand-off
threshold (0.75, before the host's own compaction) and that `/clear` hands off. `/clear` starts a
new session, whose SessionStart hook (source `clear`) answers with
`hookSpecificOutput.additionalContext` — the only channel that reaches the model
(`systemMessage` is shown to the user only; PreCompact cannot inject). Hook output above about
10,000 characters is not inlined, so the carry is *planned* again under the inline budget
(`hooks.inline_chars`, 9,000): required segments first, optional ones whole or not at all —
never cut mid-text — and the answer ends with the path of the full carry file.

Which sources inject: all four. `startup` and `clear` begin a new context in the workspace (the
hand-off itself); `compact` follows the host's own compaction, whose summary is lossy, so the
ledger and anchors go back in; `resume` reopens an older conversation that predates whatever the
carry learned since. Narrow the settings.json matcher to change that.

A hook must never break the host: bad or missing stdin, a broken config, an unknown workspace, a
missing carry, a daemon that is down, any error — the answer is still valid, small and exit 0.
Settings are loaded here (not by the CLI) for that reason. The bypass environment variable
(`hooks.bypass_env`, `CARRYD_HOOKS_OFF`) makes every answer empty.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from carryd.daemon import control
from carryd.daemon.layout import carry_state, is_workspace
from carryd.index.errors import CarrydError

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
    """The SessionStart hook's answer and why it is what it is (the reason is for tests/logs)."""

    context: str | None  # None: no answer at all (bypass) → `{}`
    reason: SessionReason
    workspace: str | None = None
    carry_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.context is None:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": self.context,
            }
        }


@dataclass(frozen=True)
class InlineCarry:
    """A carry planned under a smaller budget, and where the full one lives."""

    text: str
    path: str
    fallback: bool
    reason: str | None


# --- the entry point ------------------------------------------------------------------------------


def cmd_hook(args: argparse.Namespace, *, stdin: IO[str] | None = None) -> int:
    """Given `carryd hook HOST EVENT`, read the host's JSON on stdin, print the answer, return 0."""
    event = getattr(args, "event", "session-start")
    settings: Settings | None = None
    try:
        settings, problem = load_settings_softly(args)
        if bypassed(settings):
            _emit(event, None if event == "statusline" else SessionStartAnswer(None, "bypassed"))
            return 0
        raw = read_input(stdin)
        if event == "statusline":
            _emit(event, statusline_text(raw, settings, problem))
        else:
            _emit(event, session_start_answer(raw, settings, problem))
    except Exception as error:  # noqa: BLE001 — the host's session must never fail because of us
        log.warning("carryd hook %s failed: %s: %s", event, type(error).__name__, error)
        if event == "statusline":
            _emit(event, "carryd: hook error (see `carryd status`)")
        else:
            budget = settings.hooks.inline_chars if settings is not None else SHORT_ANSWER_CHARS
            _emit(event, _short(f"hook error: {type(error).__name__}", "error", budget))
    return 0


def load_settings_softly(args: argparse.Namespace) -> tuple[Settings | None, str | None]:
    """Given the CLI args, return (settings, None), or (None, why they cannot be used)."""
    from carryd.daemon.config import load_settings

    try:
        settings = load_settings(getattr(args, "config", None), root=getattr(args, "root", None))
    except CarrydError as error:
        return None, f"config error: {error}"
    if not settings.root:
        return settings, "no memory root (set CARRYD_ROOT or 'root' in the config)"
    return settings, None


def bypassed(settings: Settings | None, environ: Mapping[str, str] | None = None) -> bool:
    """Given the settings (or None), return whether the bypass variable is set to a true value."""
    import os

    from carryd.daemon.config import HookSettings

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


# --- SessionStart ---------------------------------------------------------------------------------


def session_start_answer(
    raw: str, settings: Settings | None, problem: str | None
) -> SessionStartAnswer:
    """Given the SessionStart input and the settings, return the answer (CarrydError-free)."""
    from carryd.daemon.config import HookSettings

    budget = (settings.hooks if settings is not None else HookSettings()).inline_chars
    data, bad = parse_input(raw)
    if data is None:
        return _short(bad or "bad input", "bad_input", budget)
    if settings is None or problem:
        return _short(problem or "no settings", "config_error", budget)
    cwd = _cwd_of(data, statusline=False)
    if cwd is None:
        return _short("the hook input has no usable cwd", "bad_input", budget)
    workspace = settings.workspace_for(cwd)
    if not is_workspace(settings, workspace):
        return _short(
            f"no workspace {workspace!r} in {settings.root_path} for {cwd} "
            "(map the project in the config's [workspaces] table)",
            "unknown_workspace",
            budget,
            workspace=workspace,
        )
    carry_path = str(settings.carry_dir / f"{workspace}.md")
    source = data.get("source") if isinstance(data.get("source"), str) else None
    try:
        inline = inline_carry(
            settings, workspace, budget_for_carry=_carry_budget(budget, carry_path)
        )
    except (CarrydError, OSError) as error:
        from carryd.index.errors import PromptBudgetError

        reason: SessionReason = (
            "over_budget" if isinstance(error, PromptBudgetError) else "no_carry"
        )
        log.warning("carryd hook: no inline carry for %s: %s", workspace, error)
        where = f"; read {carry_path}" if Path(carry_path).is_file() else ""
        return _short(
            f"no carry inlined for {workspace!r} ({error}){where}",
            reason,
            budget,
            workspace=workspace,
            carry_path=carry_path,
        )
    context = compose_context(inline.text, inline.path)
    if len(context) > budget:
        # The planner kept its budget; only an absurd carry path can get here.
        return _short(f"carry for {workspace!r}: read {inline.path}", "over_budget", budget)
    log.info("carryd hook: injected %d chars for %s (source %s)", len(context), workspace, source)
    return SessionStartAnswer(context, "injected", workspace, inline.path)


def compose_context(carry_text: str, carry_path: str) -> str:
    """Given the inline carry and the full carry's path, return the additionalContext text."""
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
        refresh=state.state in ("missing", "stale"),
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
    # Lazy: a hook with a fresh carry reads a file and never loads the carry machinery.
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
        built = build_workspace_carry(
            settings,
            workspace,
            max_chars=max_chars,
            recaller=recall,
        )
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


# --- the status line ------------------------------------------------------------------------------


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


def statusline_text(raw: str, settings: Settings | None, problem: str | None) -> str:
    """Given the statusLine input and the settings, return the one line to show."""
    from carryd.daemon.config import HookSettings

    data, bad = parse_input(raw)
    data = data or {}
    hooks = settings.hooks if settings is not None else HookSettings()
    fraction = used_fraction(data)
    model = data.get("model")
    name = model.get("display_name") if isinstance(model, Mapping) else None
    parts = [f"[{_one_line(name)[:30]}]"] if isinstance(name, str) and name.strip() else []
    # Floor, so that the number shown never reads "75%" below the threshold.
    parts.append("ctx ?" if fraction is None else f"ctx {math.floor(fraction * 100 + 1e-9)}%")
    at_threshold = fraction is not None and fraction + 1e-9 >= hooks.handoff_threshold
    if bad is not None and fraction is None:
        return " ".join(parts) + " | carryd: no status input"
    if settings is None or problem:
        return " ".join(parts) + " | carryd: " + ("config error" if settings is None else "no root")
    cwd = _cwd_of(data)
    if cwd is None:
        return " ".join(parts) + " | carryd: no cwd in status input"
    workspace = settings.workspace_for(cwd)
    if not is_workspace(settings, workspace):
        return " ".join(parts) + f" | carryd: no workspace {_one_line(workspace)[:40]!r}"
    freshness = carry_state(settings, workspace)
    label = _one_line(workspace)[:40]
    if not at_threshold:
        return " ".join(parts) + f" | carry {freshness.state} ({label})"
    hint = {
        "fresh": "fresh carry ready: /clear to hand off",
        "fallback": "carry ready (flat fallback): /clear to hand off",
        "stale": f"carry stale ({_one_line(freshness.detail or '?')[:40]} newer): "
        "/clear re-plans it and hands off",
        "missing": "no carry yet: /clear plans one and hands off",
    }[freshness.state]
    return " ".join(parts) + f" >= {hooks.handoff_threshold:.0%} | {hint} ({label})"


def _cwd_of(data: Mapping[str, Any], *, statusline: bool = True) -> str | None:
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


# --- small helpers --------------------------------------------------------------------------------


def _short(
    message: str,
    reason: SessionReason,
    budget: int,
    *,
    workspace: str | None = None,
    carry_path: str | None = None,
) -> SessionStartAnswer:
    text = _one_line(f"carryd: {message}")
    limit = max(0, min(budget, SHORT_ANSWER_CHARS))
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…" if limit else ""
    return SessionStartAnswer(text, reason, workspace, carry_path)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _emit(event: str, answer: SessionStartAnswer | str | None) -> None:
    if event == "statusline":
        text = (answer if isinstance(answer, str) else "") + "\n"
    else:
        payload = answer.to_json() if isinstance(answer, SessionStartAnswer) else {}
        text = json.dumps(payload, ensure_ascii=False) + "\n"
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        # JSON is UTF-8 whatever the locale says (LANG=C must not break the host).
        buffer.write(text.encode("utf-8", errors="replace"))
        buffer.flush()
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
