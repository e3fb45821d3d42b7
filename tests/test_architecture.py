"""The shape rules of DESIGN.md and STYLE.md, checked on the source itself.

- `index/` and `carry/` are pure: no IO-heavy library imports (only the named shell modules
  `index/store*.py` and `index/embed.py` may touch SQLite / fastembed), and imports go
  daemon → carry → index, never back.
- Importing the CLI does not load fastembed/onnxruntime (so `carryd status` and hooks are fast).
- Every CLI command has help text and appears in the README.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from carryd.daemon.cli import COMMANDS, build_parser

REPO = Path(__file__).resolve().parent.parent
HEAVY = {"watchdog", "apscheduler", "platformdirs", "fastembed", "onnxruntime", "sqlite3"}
SHELL_MODULES = {
    "store.py": {"sqlite3"},
    # store.py split by concept: opening the file (schema, recovery, permissions) ...
    "store_file.py": {"sqlite3"},
    # ... and writing a batch with its change log; both are the same SQLite shell.
    "store_write.py": {"sqlite3"},
    "embed.py": {"fastembed", "onnxruntime"},
}
IO_MODULES = {"subprocess", "socket", "shutil", "tempfile", "signal", "threading"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _pure_sources() -> list[Path]:
    return sorted([*(REPO / "index").glob("*.py"), *(REPO / "carry").glob("*.py")])


@pytest.mark.parametrize("source", _pure_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_packages_import_no_io_libraries(source: Path) -> None:
    allowed = SHELL_MODULES.get(source.name, set()) if source.parent.name == "index" else set()
    tops = {name.split(".")[0] for name in _imports(source)}
    forbidden = (HEAVY | IO_MODULES) - allowed
    assert not tops & forbidden, f"{source.name} imports {sorted(tops & forbidden)}"


@pytest.mark.parametrize("source", _pure_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_imports_flow_daemon_to_carry_to_index(source: Path) -> None:
    names = _imports(source)
    assert not any(name.startswith("carryd.daemon") for name in names), source
    if source.parent.name == "index":
        assert not any(name.startswith("carryd.carry") for name in names), source


def test_importing_the_cli_leaves_heavy_libraries_unloaded() -> None:
    code = (
        "import sys, carryd.daemon.cli as cli, carryd.daemon.config;"
        "heavy = [m for m in ('fastembed', 'onnxruntime', 'numpy') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    parser = build_parser()
    subparsers = next(
        action for action in parser._actions if action.dest == "command"  # noqa: SLF001
    )
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}  # noqa: SLF001
    assert set(helps) == set(COMMANDS)
    for command, help_text in helps.items():
        assert help_text, f"`carryd {command}` has no help text"
        assert f"carryd {command}" in readme, f"README does not mention `carryd {command}`"


# --- the daemon's seams (issue 9) ----------------------------------------------------------------

# Modules that implement a command line entry (`carryd run|service|hook`, the one-shot
# `commands`): they use services, no other module uses them.
COMMAND_MODULES = {module for module, _ in COMMANDS.values()}


def _daemon_sources() -> list[Path]:
    return sorted((REPO / "daemon").glob("*.py"))


@pytest.mark.parametrize("source", _daemon_sources(), ids=lambda p: f"daemon/{p.name}")
def test_no_daemon_module_imports_a_command_module_for_a_service(source: Path) -> None:
    """A service two commands need has a module of its own (model, layout, recall_access,
    state, …); a command module used as a library is the smell this rules out."""
    if source.name == "cli.py":
        return  # the dispatcher names command modules as strings, imports none
    own = f"carryd.daemon.{source.stem}"
    used = {name for name in _imports(source) if name in COMMAND_MODULES and name != own}
    assert not used, f"{source.name} imports command modules {sorted(used)}"


def _annotations(path: Path) -> list[tuple[str, str]]:
    """Given a module, return (where, annotation text) for every public function's parameters
    and return value and every public dataclass field."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for argument in arguments:
                if argument.annotation is not None:
                    found.append((f"{node.name}({argument.arg})", ast.unparse(argument.annotation)))
            if node.returns is not None:
                found.append((f"{node.name} ->", ast.unparse(node.returns)))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found.append((f"{node.name}.{item.target.id}", ast.unparse(item.annotation)))
    return found


@pytest.mark.parametrize("source", sorted((REPO / "carry").glob("*.py")), ids=lambda p: p.name)
def test_no_wire_format_crosses_from_daemon_into_carry(source: Path) -> None:
    """carry/ takes frozen dataclasses (`RecallHit`), never JSON-shaped `Mapping[str, Any]`:
    JSON exists only at the socket and the CLI."""
    loose = [
        (where, annotation)
        for where, annotation in _annotations(source)
        if "Any" in annotation
    ]
    assert not loose, f"carry/{source.name} takes untyped data: {loose}"


def test_the_checks_above_see_what_they_should() -> None:
    """The rules are only as good as their detectors: a synthetic offender is caught."""
    assert "carryd.daemon.commands" in COMMAND_MODULES
    sample = REPO / "carry" / "select.py"
    assert ("candidates_from_recall(hits)", "Sequence[RecallHit]") in _annotations(sample)


def test_every_registered_host_answers_exactly_its_events() -> None:
    """`carryd hook HOST EVENT`: adding a host is a `host_<name>.py` with `EVENTS` and
    `CLEAR_COMMAND` plus its line in `hosts.HOSTS`; the two must agree, and `carryd setup`
    knows every registered host."""
    import importlib

    from carryd.daemon.hosts import HOSTS
    from carryd.daemon.setup_hosts import HOSTS as SETUP_HOSTS

    assert set(HOSTS) == {"claude-code", "codex", "gemini"}
    assert set(SETUP_HOSTS) == set(HOSTS)
    for name, host in HOSTS.items():
        module = importlib.import_module(host.module)
        assert set(module.EVENTS) == set(host.events), name
        assert isinstance(module.CLEAR_COMMAND, str) and module.CLEAR_COMMAND, name
    assert HOSTS["gemini"].events == ("session-start", "before-agent", "pre-compress")


def test_host_neutral_hook_modules_name_no_host() -> None:
    """The host-neutral hook code never branches on a host's name: a host's quirks live in its
    own module (Codex's always-named event is its `Wire`, not an `if host == "codex"`)."""
    for name in ("hook_events.py", "hook_state.py", "handoff.py", "handoff_trigger.py",
                 "workspace_lookup.py"):  # fmt: skip
        text = (REPO / "daemon" / name).read_text(encoding="utf-8")
        for host in ('"claude-code"', '"codex"', '"gemini"'):
            assert host not in text, f"daemon/{name} names the host {host}"
