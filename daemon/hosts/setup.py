"""`carryd setup HOST`: merge carryd's hooks into a host's settings file, and take them out again.

Planning is pure and lives in `settings_files` (the per-host hook tables, `plan_setup` and
`plan_removal`, re-exported here); `cmd_setup` reads the file, keeps a backup of the original
bytes, and writes. This module also holds the instruction paragraph `--print-instructions`
prints.

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
import difflib
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from carryd.daemon.errors import UsageError
from carryd.daemon.hosts.handoff_trigger import section_names

# Re-exported: the hook tables and the merge planning live in `settings_files`.
from carryd.daemon.hosts.settings_files import HOST_HOOKS as HOST_HOOKS
from carryd.daemon.hosts.settings_files import HOSTS as HOSTS
from carryd.daemon.hosts.settings_files import STATUSLINE_EVENT as STATUSLINE_EVENT
from carryd.daemon.hosts.settings_files import Action as Action
from carryd.daemon.hosts.settings_files import ActionKind as ActionKind
from carryd.daemon.hosts.settings_files import HookSpec as HookSpec
from carryd.daemon.hosts.settings_files import Host as Host
from carryd.daemon.hosts.settings_files import Invocation as Invocation
from carryd.daemon.hosts.settings_files import SetupPlan as SetupPlan
from carryd.daemon.hosts.settings_files import carryd_event_of as carryd_event_of
from carryd.daemon.hosts.settings_files import parse_settings as parse_settings
from carryd.daemon.hosts.settings_files import plan_removal as plan_removal
from carryd.daemon.hosts.settings_files import plan_setup as plan_setup
from carryd.daemon.hosts.settings_files import plan_setup_actions as plan_setup_actions
from carryd.daemon.hosts.settings_files import settings_path as settings_path
from carryd.daemon.hosts.settings_files import wrapped_command as wrapped_command

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

BACKUP_SUFFIX = ".carryd-backup"
# The instruction file each host reads at session start (`--print-instructions`).
INSTRUCTION_FILES: dict[Host, str] = {
    "claude-code": "CLAUDE.md",
    "codex": "AGENTS.md",
    "gemini": "GEMINI.md",
}


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
    from carryd.daemon.hosts.registry import HOSTS as REGISTRY

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
        "- Update both after each meaningful step, and at once when a carryd note says the "
        f"context passed its hand-off point ({threshold:.0%} of where the host compacts); then "
        f"say so: the next context (after {clear_command(host)}, or after the host compacts) "
        "starts from the carry carryd builds from these files.\n"
        f"- `{carryd} expand <id>` prints the full text of an anchor the carry lists; "
        f'`{carryd} recall "<question>" --workspace {workspace}` searches the memory.\n'
    )


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
        _offer_instructions(host, project or Path.cwd())
    return 0


INSTRUCTIONS_HEADING = "## Hand-off ledger and plan (carryd)"


def _offer_instructions(host: Host, project: Path) -> None:
    """Say how to add the agent's how-to when the project's instruction file lacks it: the
    hooks' notes state facts, the how-to lives there."""
    target = project / INSTRUCTION_FILES[host]
    try:
        present = INSTRUCTIONS_HEADING in target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        present = False
    if not present:
        print(
            f"{target} has no carryd paragraph on keeping the ledger and plan; add it with: "
            f"carryd setup {host} --print-instructions >> {shlex.quote(str(target))}"
        )


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
    new_data = parse_settings(plan.text) if plan.text is not None else None
    saved = _read(backup)
    if saved is not None:
        try:
            same = parse_settings(saved.decode("utf-8")) == new_data
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
