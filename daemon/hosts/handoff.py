"""The host-neutral hand-off: the carry a hook injects and the status line's hint.

`hook_events` runs a host's hook (stdin, settings, the bypass, never failing the host) and
asks here for what the model gets at the start of a session (`handoff_answer`) and what a
status line says (`carry_hint`). The workspace of the host's directory is
`workspace_lookup.find_workspace` (mapped projects, their subfolders, git work trees).

The carry is inlined byte for byte when it is fresh and fits; otherwise it is *planned* again
under the inline budget (`hooks.inline_chars`): required segments first, optional ones whole or
not at all — never cut mid-text — and the answer ends with the path of the full carry file.
Recall for that plan goes to the running daemon (warm, no model load) when one answers, else
runs in-process. A hook with a fresh carry reads a file and never loads the carry planner.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from carryd.daemon.carries.inline import compose_context, context_suffix
from carryd.daemon.hosts.workspace_lookup import find_workspace
from carryd.daemon.layout import check_carry
from carryd.index.errors import CarrydError, PromptBudgetError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

log = logging.getLogger(__name__)

# Problems are reported in a line or two, never more, whatever the budget.
SHORT_ANSWER_CHARS = 400
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


class SessionStartAnswer(NamedTuple):
    """A hand-off answer and why it is what it is (the reason is for tests and logs); each
    host adapter encodes it in its own wire format."""

    context: str | None  # None: no answer at all (bypass)
    reason: SessionReason
    workspace: str | None = None
    carry_path: str | None = None


class InlineCarry(NamedTuple):
    """A carry planned under a smaller budget, and where the full one lives."""

    text: str
    path: str
    fallback: bool
    reason: str | None


# --- the hand-off -------------------------------------------------------------------------------


def handoff_answer(
    settings: Settings, cwd: str, *, budget: int, source: str | None = None
) -> SessionStartAnswer:
    """Given usable settings, the host's working directory and the inline budget, return the
    carry to inject (CarrydError-free: every problem is a short answer with its reason)."""
    workspace = find_workspace(settings, cwd)
    if workspace is None:
        configured = settings.workspace_for(cwd)
        return short(
            f"no workspace {configured!r} in {settings.root_path} for {cwd} "
            "(map the project in the config's [workspaces] table)",
            "unknown_workspace",
            budget,
            workspace=configured,
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


def _carry_budget(budget: int, carry_path: str) -> int:
    # The planner counts the carry's final newline, which compose_context strips: the
    # suffix is the only overhead.
    return max(0, budget - len(context_suffix(carry_path)))


def inline_carry(settings: Settings, workspace: str, *, budget_for_carry: int) -> InlineCarry:
    """Given a workspace and a character budget, return its carry planned under that budget.

    The full carry on disk is used byte for byte when it is fresh and already fits (the bytes
    the daemon wrote, stable for prompt caching); otherwise the carry is planned again under
    the smaller budget from the current files.
    """
    path = settings.carry_dir / f"{workspace}.md"
    # The bytes injected are the bytes the check verified against the manifest (no second
    # read that could race a writer); a damaged carry is never injected, it is re-planned.
    state = check_carry(settings, workspace)
    if state.state in ("fresh", "fallback"):
        text = state.text
        if text is not None and len(text) <= budget_for_carry:
            return InlineCarry(text, str(path), state.state == "fallback", state.detail)
        # The variant the daemon pre-built for this budget (issue 10 item 7): no model, no
        # planner. TODO(rela): one freshness/integrity check in layout.py could cover it.
        text = _read_prebuilt_inline(settings, workspace, budget_for_carry)
        if text is not None:
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
    from carryd.daemon import control  # the socket module too: only a plan asks the daemon
    from carryd.daemon.carries.carrying import build_workspace_carry, write_carry
    from carryd.daemon.hosts.hook_settings import full_settings
    from carryd.daemon.recall.access import recall_access

    settings = full_settings(settings)  # planning passes the settings on whole

    path = settings.carry_dir / f"{workspace}.md"
    daemon_up = control.request(settings, "ping", {}, timeout=PING_TIMEOUT) is not None
    recall = recall_access(settings, daemon=daemon_up, timeout=RECALL_TIMEOUT)
    try:
        if refresh and not daemon_up:
            try:
                write_carry(settings, workspace, recaller=recall)
            except (CarrydError, OSError) as error:
                log.warning("carryd hook: could not rewrite %s: %s", path, error)
            written = check_carry(settings, workspace)
            text = written.text if written.state in ("fresh", "fallback") else None
            if text is not None and len(text) <= max_chars:
                return InlineCarry(text, str(path), written.state == "fallback", written.detail)
        built = build_workspace_carry(settings, workspace, max_chars=max_chars, recaller=recall)
    finally:
        recall.close()
    return InlineCarry(built.text, str(path), built.fallback, built.reason)


def _read_prebuilt_inline(settings: Settings, workspace: str, budget: int) -> str | None:
    """Given a fresh carry's workspace, return its pre-built inline variant when the manifest
    names it with this file's sha256 and it fits `budget` (None otherwise: re-plan)."""
    try:
        manifest = json.loads((settings.carry_dir / f"{workspace}.json").read_text("utf-8"))
        entry = manifest.get("inline") if isinstance(manifest, dict) else None
        data = (settings.carry_dir / f"{workspace}.inline.md").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if len(text) <= budget else None


# --- the status hint ----------------------------------------------------------------------------


def carry_hint(settings: Settings, cwd: str, *, at_handoff: bool) -> str:
    """Given the host's working directory and whether the session is at its hand-off point,
    return the carryd part of a status line: the carry's state, and at the hand-off point
    what hands off (`/clear`)."""
    workspace = find_workspace(settings, cwd)
    if workspace is None:
        return f" | carryd: no workspace {one_line(settings.workspace_for(cwd))[:40]!r}"
    freshness = check_carry(settings, workspace)
    label = one_line(workspace)[:40]
    if not at_handoff:
        return f" | carry {freshness.state} ({label})"
    hint = {
        "fresh": "fresh carry ready: /clear to hand off",
        "fallback": "carry ready (flat fallback): /clear to hand off",
        "stale": f"carry stale ({one_line(freshness.detail or '?')[:40]} newer): "
        "/clear re-plans it and hands off",
        "missing": "no carry yet: /clear plans one and hands off",
        "damaged": "carry damaged: /clear re-plans it and hands off",
    }[freshness.state]
    return f" | at hand-off | {hint} ({label})"


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
