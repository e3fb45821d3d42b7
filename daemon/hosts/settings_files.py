"""Given a host's settings file text, return it with carryd's hooks merged in or taken out.

The per-host tables (which events each host gets, with matcher and timeout) and the pure
merge planning behind `carryd setup HOST`: `plan_setup(host, text, invocation)` and
`plan_removal(host, text)` take the settings file's text (None: there is no file) and return
the new text with every action taken. `setup.cmd_setup` reads, backs up and writes.

carryd's entries are recognised by their command (`… carryd … hook HOST EVENT`), so setup is
idempotent (a second run changes nothing; a new root or executable updates the commands in
place) and removal takes out exactly those entries. A status line the user already has is
wrapped, not replaced: carryd's command runs theirs (`--wrap CMD`) and prints their text first;
removal puts their command back.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from carryd.daemon.errors import UsageError

Host = Literal["claude-code", "codex", "gemini"]
HOSTS: tuple[Host, ...] = ("claude-code", "codex", "gemini")
ActionKind = Literal["add", "update", "keep", "remove", "wrap", "unwrap", "skip"]


@dataclass(frozen=True)
class HookSpec:
    """One hook carryd adds: the host's event name, carryd's event, matcher and timeout."""

    event: str
    carryd_event: str
    matcher: str | None
    timeout: int  # in the host's unit: seconds, or milliseconds for Gemini CLI


HOST_HOOKS: dict[Host, tuple[HookSpec, ...]] = {
    "claude-code": (
        HookSpec("SessionStart", "session-start", "startup|resume|clear|compact|fork", 30),
        HookSpec("UserPromptSubmit", "prompt-submit", None, 10),
        HookSpec("PostToolUse", "post-tool-use", None, 10),
        HookSpec("Stop", "stop", None, 10),
        HookSpec("PreCompact", "pre-compact", "auto", 10),
    ),
    "codex": (
        HookSpec("SessionStart", "session-start", "startup|resume|clear|compact", 30),
        HookSpec("UserPromptSubmit", "prompt-submit", None, 10),
        HookSpec("PostToolUse", "post-tool-use", None, 10),
        HookSpec("Stop", "stop", None, 10),
    ),
    # Gemini CLI matches lifecycle events by exact string: no matcher runs on every source.
    # AfterAgent (the relay that clears the conversation) is opt-in: docs/hosts.md.
    "gemini": (
        HookSpec("SessionStart", "session-start", None, 30_000),
        HookSpec("BeforeAgent", "before-agent", None, 10_000),
        HookSpec("AfterTool", "after-tool", None, 10_000),
        HookSpec("PreCompress", "pre-compress", None, 10_000),
    ),
}
STATUSLINE_EVENT = "statusline"


@dataclass(frozen=True)
class Invocation:
    """How a hook command calls carryd: the executable's words and the root/config options."""

    executable: tuple[str, ...]
    root: str | None = None
    config: str | None = None

    def command(self, host: Host, event: str, *extra: str) -> str:
        words = [*self.executable, "hook", host, event]
        if self.root:
            words += ["--root", self.root]
        if self.config:
            words += ["--config", self.config]
        return shlex.join([*words, *extra])


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    what: str  # "hooks.SessionStart", "statusLine"
    detail: str = ""


@dataclass(frozen=True)
class SetupPlan:
    """The settings file's new text (None: no file) and what changed, in order."""

    text: str | None
    actions: tuple[Action, ...]

    @property
    def changed(self) -> bool:
        return any(action.kind not in ("keep", "skip") for action in self.actions)


def settings_path(host: Host, *, home: Path, project: Path | None, codex_home: str | None) -> Path:
    """Given a host and where to install, return the settings file carryd's hooks go into."""
    if host == "claude-code":
        return (project or home) / ".claude" / "settings.json"
    if host == "gemini":
        return (project or home) / ".gemini" / "settings.json"
    if project is not None:
        return project / ".codex" / "hooks.json"
    return (Path(codex_home).expanduser() if codex_home else home / ".codex") / "hooks.json"


def carryd_event_of(command: Any, host: Host) -> str | None:
    """Given a hook command, return carryd's event when it is carryd's hook for `host`."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for position in range(len(words) - 2):
        if words[position] == "hook" and words[position + 1] == host:
            callers = words[:position]
            if any(_is_carryd(word) for word in callers):
                return words[position + 2]
    return None


def wrapped_command(command: str) -> str | None:
    """Given carryd's status line command, return the user's command it wraps (or None)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for position, word in enumerate(words):
        if word == "--wrap" and position + 1 < len(words):
            return words[position + 1]
        if word.startswith("--wrap="):
            return word[len("--wrap=") :]
    return None


def plan_setup(host: Host, text: str | None, invocation: Invocation) -> SetupPlan:
    """Given a host, its settings text (None: no file) and how to call carryd, return the
    text with carryd's hooks merged in. Nothing of the user's is removed or reordered."""
    data = parse_settings(text)
    before = copy.deepcopy(data)
    actions: list[Action] = []
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"'hooks' in the {host} settings is a {type(hooks).__name__}, not a table")
    for spec in HOST_HOOKS[host]:
        actions.append(_merge_hook(hooks, host, spec, invocation))
    if host == "claude-code":
        actions.append(_merge_statusline(data, host, invocation))
    return SetupPlan(_dump(text, before, data), tuple(actions))


def plan_removal(host: Host, text: str | None) -> SetupPlan:
    """Given a host and its settings text, return the text without carryd's entries."""
    if text is None:
        return SetupPlan(None, ())
    data = parse_settings(text)
    before = copy.deepcopy(data)
    actions: list[Action] = []
    hooks = data.get("hooks")
    from carryd.daemon.hosts.registry import HOSTS as REGISTRY  # every event, opt-in ones too

    ours = set(REGISTRY[host].events)
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept_groups = []
            for group in groups:
                handlers = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(handlers, list):
                    kept_groups.append(group)
                    continue
                kept = [h for h in handlers if not _is_ours(h, host, ours)]
                if len(kept) != len(handlers):
                    actions.append(Action("remove", f"hooks.{event}"))
                if kept:
                    kept_groups.append({**group, "hooks": kept})
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    status = data.get("statusLine")
    if host == "claude-code" and isinstance(status, dict):
        command = status.get("command")
        if isinstance(command, str) and carryd_event_of(command, host) == STATUSLINE_EVENT:
            theirs = wrapped_command(command)
            if theirs is None:
                del data["statusLine"]
                actions.append(Action("remove", "statusLine"))
            else:
                data["statusLine"] = {**status, "command": theirs}
                actions.append(Action("unwrap", "statusLine", theirs))
    return SetupPlan(_dump(text, before, data), tuple(actions))


def _merge_hook(
    hooks: dict[str, Any], host: Host, spec: HookSpec, invocation: Invocation
) -> Action:
    what = f"hooks.{spec.event}"
    groups = hooks.setdefault(spec.event, [])
    if not isinstance(groups, list):
        raise UsageError(f"'{what}' in the {host} settings is not a list")
    wanted = invocation.command(host, spec.carryd_event)
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            if _is_ours(handler, host, {spec.carryd_event}):
                found.append((group, handler))
    if not found:
        handler = {"type": "command", "command": wanted, "timeout": spec.timeout}
        if host == "gemini":
            handler = {"name": f"carryd-{spec.carryd_event}", **handler}
        group = {"matcher": spec.matcher, "hooks": [handler]} if spec.matcher else {}
        group.setdefault("hooks", [handler])
        groups.append(group)
        return Action("add", what, wanted)
    (group, handler), duplicates = found[0], found[1:]
    for extra_group, extra in duplicates:
        extra_group["hooks"].remove(extra)
    if duplicates:
        groups[:] = [g for g in groups if not isinstance(g, dict) or g.get("hooks") != []]
    if handler.get("command") == wanted and not duplicates:
        return Action("keep", what, wanted)
    handler["command"] = wanted
    return Action("update", what, wanted)


def _merge_statusline(data: dict[str, Any], host: Host, invocation: Invocation) -> Action:
    status = data.get("statusLine")
    if status is None:
        command = invocation.command(host, STATUSLINE_EVENT)
        data["statusLine"] = {"type": "command", "command": command, "padding": 0}
        return Action("add", "statusLine", command)
    if not isinstance(status, dict) or not isinstance(status.get("command"), str):
        return Action("skip", "statusLine", "not a command status line; left as it is")
    current = status["command"]
    if carryd_event_of(current, host) == STATUSLINE_EVENT:
        theirs = wrapped_command(current)
        extra = (f"--wrap={theirs}",) if theirs is not None else ()
        wanted = invocation.command(host, STATUSLINE_EVENT, *extra)
        if wanted == current:
            return Action("keep", "statusLine", current)
        status["command"] = wanted
        return Action("update", "statusLine", wanted)
    # `--wrap=CMD` as one word: a command starting with "-" is not taken for an option.
    wanted = invocation.command(host, STATUSLINE_EVENT, f"--wrap={current}")
    status["command"] = wanted
    return Action("wrap", "statusLine", current)


def _is_ours(handler: Any, host: Host, events: set[str]) -> bool:
    return isinstance(handler, dict) and carryd_event_of(handler.get("command"), host) in events


def _is_carryd(word: str) -> bool:
    name = word.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("carryd", "carryd.exe", "carryd.daemon.cli")


def parse_settings(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UsageError(f"the settings file is not valid JSON ({error}); fix it first") from error
    if not isinstance(data, dict):
        raise UsageError(f"the settings file holds a JSON {type(data).__name__}, not an object")
    return data


def _dump(text: str | None, before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    if before == after and text is not None:
        return text  # unchanged: keep the user's bytes and formatting
    return json.dumps(after, indent=_indent_of(text), ensure_ascii=False) + "\n"


def _indent_of(text: str | None) -> str:
    """Given a settings file's text, return the indent its first nested line uses (two spaces
    for a new or one-line file), so that setup's diff shows carryd's lines, not a re-indent."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def plan_setup_actions(host: Host, original: bytes) -> tuple[Action, ...]:
    """Given a settings file's bytes, return what setup would find there (keep = carryd's)."""
    try:
        text = original.decode("utf-8")
        return plan_setup(host, text, Invocation(("carryd",))).actions
    except (UsageError, UnicodeDecodeError):
        return ()
