"""The `carryd` command line: argument parsing, settings, logging and exit codes, in one place.

Each command lives in its own module and is imported only when run, so that `carryd status`
or a host hook never pays for loading fastembed/onnxruntime. Exit codes: 0 ok, 1 a failure the
message explains, 2 bad usage or config (`ConfigError`, `UsageError`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from carryd.daemon.errors import ConfigError, UsageError
from carryd.daemon.hosts.registry import HOSTS, event_names
from carryd.daemon.layout import check_root
from carryd.daemon.version import VersionAction
from carryd.index.errors import CarrydError, describe_os_error

log = logging.getLogger(__name__)

# command → (module, function); every function takes (args, settings) and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("carryd.daemon.cli.commands", "cmd_index"),
    "verify": ("carryd.daemon.cli.commands", "cmd_verify"),
    "recall": ("carryd.daemon.cli.commands", "cmd_recall"),
    "expand": ("carryd.daemon.cli.commands", "cmd_expand"),
    "carry": ("carryd.daemon.cli.commands", "cmd_carry"),
    "run": ("carryd.daemon.running.run", "cmd_run"),
    "status": ("carryd.daemon.cli.commands", "cmd_status"),
    "service": ("carryd.daemon.running.service", "cmd_service"),
    "plan": ("carryd.daemon.cli.commands", "cmd_plan"),
    "hook": ("carryd.daemon.hosts.hook_command", "cmd_hook"),
    "setup": ("carryd.daemon.hosts.setup", "cmd_setup"),
    "mcp": ("carryd.daemon.mcp.server", "cmd_mcp"),
    "init": ("carryd.daemon.cli.init", "cmd_init"),
    "doctor": ("carryd.daemon.cli.doctor", "cmd_doctor"),
}
# Commands that load no settings themselves: a hook must not break the host on a bad config,
# and `init` writes the config the settings would come from.
NO_SETTINGS = frozenset({"hook", "init"})


# Commands that work on an existing memory root (see `layout.check_root`).
NEEDS_A_ROOT = frozenset({"index", "verify", "recall", "expand", "carry", "run", "plan"})


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root", default=argparse.SUPPRESS, help="the memory root (else $CARRYD_ROOT or config)"
    )
    common.add_argument(
        "--config", default=argparse.SUPPRESS, help="config file (else $CARRYD_CONFIG or default)"
    )
    common.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output"
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")

    parser = argparse.ArgumentParser(
        prog="carryd",
        description=(
            "Keep continuation-carry files and hybrid recall ready for AI coding agents "
            "whose memory is Markdown."
        ),
        # `carryd --root X status` as well as `carryd status --root X`: the common options
        # are accepted before the command too (the command's own copy wins when both are given).
        parents=[common],
    )
    parser.add_argument("--version", action=VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_memory_commands(sub, common, as_json)
    _add_daemon_commands(sub, common, as_json)
    return parser


def _add_memory_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """`carryd index|verify|recall|expand|carry`: the index, what it answers, the carries."""
    sub.add_parser(
        "index",
        parents=[common, as_json],
        help="sync the index with the memory root once (no daemon needed)",
        description="Sync the index with the memory root once: parse changed files, embed "
        "changed L0 abstracts, drop removed entries.",
    )
    sub.add_parser(
        "verify",
        parents=[common, as_json],
        help="check the index against the files; exit 0 when they agree",
        description="Compare the index with the files (counts, hashes, vector dims) and list "
        "every difference. Exit 0 when they agree, 1 otherwise.",
    )

    recall = sub.add_parser(
        "recall",
        parents=[common, as_json],
        help="hybrid recall: L0 abstracts of the best-matching entries",
        description="Search the memory root (lexical BM25 over full text + semantic over L0 "
        "abstracts, rank-space fusion). Prints L0 abstracts; use `carryd expand` for full text.",
    )
    recall.add_argument("query", nargs="?", help="what to recall")
    recall.add_argument("--batch", metavar="FILE", help='JSON lines {"query", "workspace"?}')
    recall.add_argument("--workspace", help="search this workspace plus root-level memory")
    recall.add_argument("--limit", type=int, help="at most this many hits")
    recall.add_argument(
        "--min-confidence",
        type=float,
        help="inject threshold (0 ranks every candidate and returns below-threshold hits too)",
    )

    expand = sub.add_parser(
        "expand",
        parents=[common, as_json],
        help="full text of entries by id",
        description="Print the full text of one or more entries, read from the current files.",
    )
    expand.add_argument("ids", nargs="+", metavar="ID", help="entry ids (mem_…)")

    carry = sub.add_parser(
        "carry",
        parents=[common],
        help="(re)write continuation-carry files",
        description="Sync the index with the files, then plan and write the carry file of one "
        "workspace (or all); --print sends one to stdout instead.",
    )
    carry.add_argument("--workspace", help="only this workspace")
    carry.add_argument("--print", action="store_true", dest="print_", help="print the carry")
    carry.add_argument(
        "--max-chars", type=int, help="plan under this smaller total budget (with --print)"
    )


def _add_daemon_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """`carryd run|status|service|plan`: the daemon, its health and upkeep."""
    sub.add_parser(
        "run",
        parents=[common],
        help="the daemon, in the foreground",
        description="Watch the memory root, keep index and carries fresh, serve the control "
        "socket. SIGTERM finishes the current transaction and exits 0; SIGHUP reloads config.",
    )
    sub.add_parser(
        "status",
        parents=[common, as_json],
        help="daemon, model, index and carry health (exit 1 when degraded or stale)",
        description="Report the daemon, the model, index counts and each workspace's carry. "
        "Exit 0 when healthy, 1 when degraded or stale.",
    )

    service = sub.add_parser(
        "service",
        parents=[common],
        help="install, uninstall or print the systemd/launchd service",
        description="Render the systemd user unit (Linux) or launchd agent (macOS) with the "
        "real executable and root; install enables and starts it, uninstall undoes that.",
    )
    service.add_argument("action", choices=["install", "uninstall", "print"])
    service.add_argument(
        "--instance",
        action="store_true",
        help="use the template unit carryd@.service, one instance per root "
        "(launchd: a per-root label)",
    )

    plan = sub.add_parser(
        "plan",
        parents=[common],
        help="PLAN.md maintenance (archive settled history)",
        description="`carryd plan archive` moves settled PLAN.md history into handoff/archive/ "
        "losslessly.",
    )
    plan.add_argument("action", choices=["archive"])
    plan.add_argument("--dry-run", action="store_true", help="show what would move; write nothing")
    plan.add_argument("--workspace", help="only this workspace")

    _add_host_commands(sub, common)
    _add_first_hour_commands(sub, common)


def _add_first_hour_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    """`carryd init|doctor`: start a new memory root, check a setup end to end."""
    init = sub.add_parser(
        "init",
        parents=[common],
        help="start a new memory root: the folder, a skeleton workspace and the config",
        description="Make DIR (default ~/memory) a memory root: a workspace with a PLAN.md and "
        "a handoff ledger carryd reads, and the config file naming the root (and --model-path). "
        "Existing files are never changed.",
    )
    init.add_argument("dir", nargs="?", metavar="DIR", help="the new root (default ~/memory)")
    init.add_argument("--workspace", help="the skeleton workspace's name (default my-project)")
    init.add_argument("--model-path", metavar="DIR", help="a local model folder for the config")
    sub.add_parser(
        "doctor",
        parents=[common],
        help="check root, model, index, ledger headings, hooks and service (exit 1 on a problem)",
        description="One line per check: ok, warn or FAIL with what to run. Exit 1 when a "
        "check fails.",
    )


def _add_host_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    """`carryd hook|setup|mcp`: the hosts' hooks, wiring them in, recall as MCP tools."""
    hook = sub.add_parser(
        "hook",
        parents=[common],
        help="host integrations (Claude Code, Codex CLI, Gemini CLI hooks and status line)",
        description="Answer a host hook on stdin/stdout. Never fails the host: any problem "
        "gives a small valid answer and exit 0, and setup problems go to the person, once.",
    )
    hook.add_argument("host", choices=list(HOSTS))
    hook.add_argument("event", choices=event_names())
    hook.add_argument(
        "--wrap",
        metavar="CMD",
        help="statusline: run your status line command, show its text first",
    )

    setup = sub.add_parser(
        "setup",
        parents=[common],
        help="merge carryd's hooks into a host's settings (claude-code, codex, gemini)",
        description="Merge carryd's hooks (and Claude Code's status line, wrapping yours) into "
        "the host's user settings, or a project's with --project; idempotent, with a backup. "
        "--remove undoes exactly what setup added.",
    )
    setup.add_argument("host", choices=list(HOSTS))
    setup.add_argument("--project", metavar="DIR", help="the project's settings, not the user's")
    setup.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    setup.add_argument("--remove", action="store_true", help="take carryd's entries out again")
    setup.add_argument(
        "--print-instructions",
        action="store_true",
        help="print the CLAUDE.md / AGENTS.md / GEMINI.md paragraph on keeping the ledger",
    )

    mcp = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve recall, expand, carry and status as MCP tools on stdio",
        description="A stdio MCP server (JSON-RPC on stdin/stdout). Answers through the "
        "running daemon when there is one, else in-process.",
    )
    mcp.add_argument("--workspace", help="the carry tool's default workspace (else the cwd's)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args)
    module_name, function_name = COMMANDS[args.command]
    try:
        if args.command in NO_SETTINGS:
            return int(getattr(importlib.import_module(module_name), function_name)(args))
        from carryd.daemon.config import load_settings

        settings = load_settings(getattr(args, "config", None), root=getattr(args, "root", None))
        if args.command in NEEDS_A_ROOT or (args.command == "setup" and hasattr(args, "root")):
            check_root(settings)  # a mistyped --root is named, never created
        function = getattr(importlib.import_module(module_name), function_name)
        return int(function(args, settings))
    except (ConfigError, UsageError) as error:
        print(f"carryd: {error}", file=sys.stderr)
        return 2
    except CarrydError as error:
        print(f"carryd: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`carryd recall … | head`): not an error of ours. Point stdout
        # at /dev/null so the interpreter's final flush does not complain again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:
        # A full or read-only disk, a denied permission: a message, not a traceback.
        print(f"carryd: {describe_os_error(error)}", file=sys.stderr)
        return 1


def _setup_logging(args: argparse.Namespace) -> None:
    verbose = getattr(args, "verbose", 0) or 0
    base = logging.INFO if args.command == "run" else logging.WARNING
    level = max(logging.DEBUG, base - 10 * verbose)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="carryd %(levelname)s %(name)s: %(message)s"
    )


if __name__ == "__main__":
    sys.exit(main())
