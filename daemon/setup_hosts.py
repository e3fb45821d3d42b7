"""`carryd setup HOST`: merge carryd's hooks into a host's settings file, and take them out again.

Planning is pure: `plan_setup(host, text, invocation)` and `plan_removal(host, text)` take the
settings file's text (None: there is no file) and return the new text with every action taken;
`cmd_setup` reads the file, keeps a backup of the original bytes, and writes.

Where each host keeps its hooks (user scope, or a project's with `--project DIR`):

- claude-code: `~/.claude/settings.json` or `DIR/.claude/settings.json`; SessionStart,
  UserPromptSubmit and the statusLine;
- codex: `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json`) or `DIR/.codex/hooks.json`;
  SessionStart and UserPromptSubmit;
- gemini: `~/.gemini/settings.json` or `DIR/.gemini/settings.json`; SessionStart, BeforeAgent
  and PreCompress.

carryd's entries are recognised by their command (`… carryd … hook HOST EVENT`), so setup is
idempotent (a second run changes nothing; a new root or executable updates the commands in
place) and `--remove` takes out exactly those entries. A status line the user already has is
wrapped, not replaced: carryd's command runs theirs (`--wrap CMD`) and prints their text first;
`--remove` puts their command back.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from carryd.daemon.errors import UsageError
from carryd.daemon.handoff_trigger import section_names

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

Host = Literal["claude-code", "codex", "gemini"]
HOSTS: tuple[Host, ...] = ("claude-code", "codex", "gemini")
ActionKind = Literal["add", "update", "keep", "remove", "wrap", "unwrap", "skip"]
BACKUP_SUFFIX = ".carryd-backup"
# The instruction file each host reads at session start (`--print-instructions`).
INSTRUCTION_FILES: dict[Host, str] = {
    "claude-code": "CLAUDE.md",
    "codex": "AGENTS.md",
    "gemini": "GEMINI.md",
}


@dataclass(frozen=True)
class HookSpec:
    """One hook carryd adds: the host's event name, carryd's event, matcher and timeout."""

    event: str
    carryd_event: str
    matcher: str | None
    timeout: int  # in the host's unit: seconds, or milliseconds for Gemini CLI


HOST_HOOKS: dict[Host, tuple[HookSpec, ...]] = {
    "claude-code": (
        HookSpec("SessionStart", "session-start", "startup|resume|clear|compact", 30),
        HookSpec("UserPromptSubmit", "prompt-submit", None, 10),
    ),
    "codex": (
        HookSpec("SessionStart", "session-start", "startup|resume|clear", 30),
        HookSpec("UserPromptSubmit", "prompt-submit", None, 10),
    ),
    # Gemini CLI matches lifecycle events by exact string: no matcher runs on every source.
    "gemini": (
        HookSpec("SessionStart", "session-start", None, 30_000),
        HookSpec("BeforeAgent", "before-agent", None, 10_000),
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


# --- pure planning ---------------------------------------------------------------------------


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
    data = _parse(text)
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
    data = _parse(text)
    before = copy.deepcopy(data)
    actions: list[Action] = []
    hooks = data.get("hooks")
    ours = {spec.carryd_event for spec in HOST_HOOKS[host]}
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
        if carryd_event_of(command, host) == STATUSLINE_EVENT:
            theirs = wrapped_command(command)
            if theirs is None:
                del data["statusLine"]
                actions.append(Action("remove", "statusLine"))
            else:
                data["statusLine"] = {**status, "command": theirs}
                actions.append(Action("unwrap", "statusLine", theirs))
    return SetupPlan(_dump(text, before, data), tuple(actions))


def unified_diff(path: Path, old: str | None, new: str | None) -> str:
    """Given a file's old and new text, return a unified diff (empty when they are equal)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=f"{path}" if old is not None else "/dev/null",
        tofile=f"{path}" if new is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def clear_command(host: Host) -> str:
    """Given a host, return what the person types there to hand off (its module says)."""
    from carryd.daemon.hosts import HOSTS as REGISTRY

    return str(REGISTRY[host].adapter().CLEAR_COMMAND)


def instructions(
    host: Host,
    *,
    workspace_dir: str,
    ledger_file: str,
    plan_file: str,
    sections: tuple[str, str, str, str],
    carryd: str,
    workspace: str,
    threshold: float,
) -> str:
    """Given where the workspace's ledger and plan live, return the paragraph for the host's
    instruction file that tells the agent how to keep them (Markdown, ends with a newline)."""
    status, goal, tried, progress = sections
    ledger = f"{workspace_dir}/{ledger_file}"
    plan = f"{workspace_dir}/{plan_file}"
    return (
        "## Hand-off ledger and plan (carryd)\n"
        "\n"
        "Your working memory for this project is kept in Markdown so that a fresh context can "
        "continue exactly where this one stops. Keep it current:\n"
        "\n"
        f"- `{ledger}` has four sections: `## {status}`, `## {goal}`, `## {tried}`, "
        f"`## {progress}`. Add new items at the end of their section (newest last). Record "
        "every failed attempt with the reason it failed (the error, command or number that "
        'showed it), never just "did not work". Mark finished steps done instead of '
        "deleting them.\n"
        f"- `{plan}`: keep its current state short and true; settled items go to its history.\n"
        "- Update both after each meaningful step, and at once when carryd says the context "
        f"is at {threshold:.0%}; then ask the person to type {clear_command(host)}: the next "
        "session starts from the carry carryd builds from these files.\n"
        f"- `{carryd} expand <id>` prints the full text of an anchor the carry lists; "
        f'`{carryd} recall "<question>" --workspace {workspace}` searches the memory.\n'
    )


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
        handler: dict[str, Any] = {"type": "command", "command": wanted, "timeout": spec.timeout}
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


def _parse(text: str | None) -> dict[str, Any]:
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
    return json.dumps(after, indent=2, ensure_ascii=False) + "\n"


# --- the shell ------------------------------------------------------------------------------


def running_carryd(argv0: str | None = None, executable: str | None = None) -> tuple[str, ...]:
    """Return the words that run this carryd: the console script that is running, else the
    one beside the interpreter, else `python -m carryd.daemon.cli` (all absolute)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if argv0 and Path(argv0).name in ("carryd", "carryd.exe") and Path(argv0).is_file():
        return (os.path.abspath(argv0),)
    beside = Path(executable).absolute().parent / "carryd"
    if beside.is_file():
        return (str(beside),)
    return (os.path.abspath(executable), "-m", "carryd.daemon.cli")


def cmd_setup(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd setup HOST [--project DIR] [--dry-run] [--remove] [--print-instructions]`."""
    host: Host = args.host
    project = Path(args.project).expanduser().absolute() if args.project else None
    invocation = Invocation(
        running_carryd(),
        root=str(settings.root_path.absolute()) if settings.root else None,
        config=str(Path(args.config).expanduser().absolute())
        if getattr(args, "config", None)
        else None,
    )
    if args.print_instructions:
        print(_instructions_for(host, settings, invocation, project), end="")
        return 0
    if not settings.root and not args.remove:
        raise UsageError(
            "no memory root to put into the hook commands: pass --root DIR, set CARRYD_ROOT, "
            "or set 'root' in the config file"
        )
    path = settings_path(
        host,
        home=Path.home(),
        project=project,
        codex_home=os.environ.get("CODEX_HOME"),
    )
    original = _read(path)
    text = original.decode("utf-8") if original is not None else None
    try:
        plan = plan_removal(host, text) if args.remove else plan_setup(host, text, invocation)
    except UsageError as error:
        raise UsageError(f"{path}: {error}") from error
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if args.remove:
        final, restored = _removal_bytes(plan, backup)
    else:
        final, restored = (plan.text.encode("utf-8") if plan.text is not None else None), False
    if args.dry_run:
        diff = unified_diff(path, text, final.decode("utf-8") if final is not None else None)
        print(diff or f"{path}: nothing to change\n", end="")
        return 0
    _report(host, path, plan)
    if final == original:
        if args.remove and backup.exists() and restored:
            backup.unlink()
        print("nothing to change")
        return 0
    if args.remove:
        _apply_removal(path, final, backup, restored)
    else:
        _apply_setup(host, path, original, backup, final)
    return 0


def _instructions_for(
    host: Host, settings: Settings, invocation: Invocation, project: Path | None
) -> str:
    workspace, workspace_dir = "<workspace>", "<root>/<workspace>"
    if settings.root:
        workspace = settings.workspace_for(project or Path.cwd())
        workspace_dir = str(settings.root_path.absolute() / workspace)
    sections = settings.carry.sections
    names = section_names((sections.status, sections.goal, sections.tried, sections.next))
    # `--root` goes after the subcommand, so it is named once below the commands.
    carryd_words = shlex.join(invocation.executable)
    text = instructions(
        host,
        workspace_dir=workspace_dir,
        ledger_file=settings.carry.ledger_file,
        plan_file=settings.carry.plan_file,
        sections=names,
        carryd=carryd_words,
        workspace=workspace,
        threshold=settings.hooks.handoff_threshold,
    )
    if invocation.root:
        text += f"- Pass `--root {shlex.quote(invocation.root)}` to those commands.\n"
    return f"<!-- add to {INSTRUCTION_FILES[host]} -->\n" + text


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror}") from error


def _removal_bytes(plan: SetupPlan, backup: Path) -> tuple[bytes | None, bool]:
    """Given the removal plan, return the bytes to leave behind and whether they are the
    backup's: the original bytes come back when nothing else in the file changed since."""
    new_data = _parse(plan.text) if plan.text is not None else None
    saved = _read(backup)
    if saved is not None:
        try:
            same = _parse(saved.decode("utf-8")) == new_data
        except (UsageError, UnicodeDecodeError):
            same = False
        if same:
            return saved, True
    if new_data == {} and saved is None:
        return None, True  # carryd created the file: remove it
    return (plan.text.encode("utf-8") if plan.text is not None else None), False


def _apply_setup(
    host: Host, path: Path, original: bytes | None, backup: Path, final: bytes | None
) -> None:
    from carryd.daemon.files import write_atomic

    assert final is not None
    if original is not None:
        already_ours = any(
            action.kind in ("keep", "update") for action in plan_setup_actions(host, original)
        )
        if not backup.exists() or not already_ours:
            write_atomic(backup, original, mode=path.stat().st_mode & 0o7777)
            print(f"backup: {backup}")
    write_atomic(path, final)
    print(f"wrote {path}")


def plan_setup_actions(host: Host, original: bytes) -> tuple[Action, ...]:
    """Given a settings file's bytes, return what setup would find there (keep = carryd's)."""
    try:
        text = original.decode("utf-8")
        return plan_setup(host, text, Invocation(("carryd",))).actions
    except (UsageError, UnicodeDecodeError):
        return ()


def _apply_removal(path: Path, final: bytes | None, backup: Path, restored: bool) -> None:
    from carryd.daemon.files import write_atomic

    if final is None:
        path.unlink(missing_ok=True)
        print(f"removed {path} (carryd had created it)")
    else:
        write_atomic(path, final)
        print(f"restored {path} from {backup}" if restored else f"wrote {path}")
    if restored and backup.exists():
        backup.unlink()


def _report(host: Host, path: Path, plan: SetupPlan) -> None:
    print(f"carryd setup {host}: {path}")
    for action in plan.actions:
        detail = f": {action.detail}" if action.detail else ""
        print(f"  {action.kind} {action.what}{detail}")
