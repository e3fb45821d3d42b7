"""The shape rules of DESIGN.md and STYLE.md, checked on the source itself.

- `index/` and `carry/` are pure: no IO-heavy library imports (only the named shell modules
  `index/store.py` and `index/embed.py` may touch SQLite / fastembed), and imports go
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
SHELL_MODULES = {"store.py": {"sqlite3"}, "embed.py": {"fastembed", "onnxruntime"}}
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
