"""The shape rules of DESIGN.md and STYLE.md, checked on the source itself.

- `index/` and `carry/` are pure: no IO-heavy library imports (only the named shell modules
  `index/store*.py` and `index/embed.py` may touch SQLite / fastembed), and imports go
  daemon → carry → index, never back.
- Importing the CLI does not load fastembed/onnxruntime (so `carryd status` and hooks are fast).
- Every CLI command has help text and appears in the README.
- `daemon/` is layered (`DAEMON_LAYERS`): a module imports only from its own layer or lower
  ones, and no carryd module takes part in an import cycle — every import counts, also those
  inside functions and under `TYPE_CHECKING`.
- Size: at most 12 modules directly in `daemon/`, 15 in a sub-package, 500 lines in a module,
  80 in a function.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from carryd.daemon.cli.dispatch import COMMANDS, build_parser

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
    return sorted((REPO / "daemon").rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize("source", _daemon_sources(), ids=_rel)
def test_no_daemon_module_imports_a_command_module_for_a_service(source: Path) -> None:
    """A service two commands need has a module of its own (model, layout, recall.access,
    state, …); a command module used as a library is the smell this rules out."""
    if source.parent.name == "cli" and source.name != "commands.py":
        return  # the dispatcher names command modules as strings, imports none
    own = _module_name(source)
    used = {name for name in _imports(source) if name in COMMAND_MODULES and name != own}
    assert not used, f"{_rel(source)} imports command modules {sorted(used)}"


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
    assert "carryd.daemon.cli.commands" in COMMAND_MODULES
    sample = REPO / "carry" / "select.py"
    assert ("candidates_from_recall(hits)", "Sequence[RecallHit]") in _annotations(sample)


def test_every_registered_host_answers_exactly_its_events() -> None:
    """`carryd hook HOST EVENT`: adding a host is a `hosts/<name>.py` with `EVENTS` and
    `CLEAR_COMMAND` plus its line in `hosts.registry.HOSTS`; the two must agree, and
    `carryd setup` knows every registered host."""
    import importlib

    from carryd.daemon.hosts.registry import HOSTS
    from carryd.daemon.hosts.setup import HOSTS as SETUP_HOSTS

    assert set(HOSTS) == {"claude-code", "codex", "gemini"}
    assert set(SETUP_HOSTS) == set(HOSTS)
    for name, host in HOSTS.items():
        module = importlib.import_module(host.module)
        assert set(module.EVENTS) == set(host.events), name
        assert isinstance(module.CLEAR_COMMAND, str) and module.CLEAR_COMMAND, name
    assert HOSTS["gemini"].events == (
        "session-start", "before-agent", "after-tool", "pre-compress", "after-agent",
    )  # fmt: skip


def test_host_neutral_hook_modules_name_no_host() -> None:
    """The host-neutral hook code never branches on a host's name: a host's quirks live in its
    own module (Codex's always-named event is its `Wire`, not an `if host == "codex"`)."""
    for name in ("hook_events.py", "hook_state.py", "handoff.py", "handoff_trigger.py",
                 "workspace_lookup.py"):  # fmt: skip
        text = (REPO / "daemon" / "hosts" / name).read_text(encoding="utf-8")
        for host in ('"claude-code"', '"codex"', '"gemini"'):
            assert host not in text, f"daemon/hosts/{name} names the host {host}"


# --- the daemon's layers and the absence of cycles (issue 19) -----------------------------------

# Lowest first. A module may import carryd modules of its own layer and of lower ones only.
# `daemon` is the ground: the modules directly in daemon/ (errors, config, files, state, layout,
# control, ...). A new sub-package of daemon/ takes its place here before anything imports it.
LAYERS = (
    "carryd.index",
    "carryd.carry",
    "carryd.daemon",
    "carryd.daemon.indexer",
    "carryd.daemon.recall",
    "carryd.daemon.carries",
    "carryd.daemon.running",
    "carryd.daemon.hosts",
    "carryd.daemon.mcp",
    "carryd.daemon.cli",
)
DAEMON_LAYERS = tuple(layer for layer in LAYERS if layer.startswith("carryd.daemon."))
FOLDERS = {"index": "carryd.index", "carry": "carryd.carry", "daemon": "carryd.daemon"}
MAX_GROUND_MODULES = 12
MAX_PACKAGE_MODULES = 15
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = [FOLDERS[relative.parts[0]], *relative.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_sources() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (REPO / folder).rglob("*.py"))


MODULES = {_module_name(path): path for path in _package_sources()}


def _resolved(module: str, name: str | None = None) -> str | None:
    """Given `import module` or `from module import name`, return the carryd module it loads
    (`from carryd.daemon import control` loads `carryd.daemon.control`), or None."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module if module in MODULES else None


def _carryd_imports(path: Path) -> set[str]:
    """Given a source file, return every carryd module it imports, wherever the import is."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_resolved(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = _module_name(path).split(".")
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                module = ".".join([*base, *([module] if module else [])])
            found.update(_resolved(module, alias.name) for alias in node.names)
    return {name for name in found if name is not None} - {_module_name(path)}


def _layer(module: str) -> int:
    """Given a carryd module, return the index of its layer in LAYERS (the longest match)."""
    matches = [i for i, layer in enumerate(LAYERS) if f"{module}.".startswith(f"{layer}.")]
    assert matches, f"{module} is in no layer of LAYERS"
    layer = max(matches, key=lambda i: len(LAYERS[i]))
    if LAYERS[layer] == "carryd.daemon" and module.count(".") > 2:
        raise AssertionError(f"{module}: daemon/{module.split('.')[2]}/ is not in LAYERS")
    return layer


@pytest.mark.parametrize("source", _package_sources(), ids=_rel)
def test_imports_go_down_the_layers(source: Path) -> None:
    own = _layer(_module_name(source))
    upward = sorted(name for name in _carryd_imports(source) if _layer(name) > own)
    assert not upward, (
        f"{_rel(source)} ({LAYERS[own]}) imports from a higher layer: {upward}; move what both "
        "need down to a module of the lower layer"
    )


def _import_graph() -> dict[str, set[str]]:
    return {module: _carryd_imports(path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Given an import graph, return its strongly connected components of two or more modules
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, f"modules that import each other in a loop: {cycles}"


def test_the_layer_checks_see_what_they_should() -> None:
    """A function-level import counts, a relative one resolves, a loop is found."""
    hook_events = REPO / "daemon" / "hosts" / "hook_events.py"
    assert "carryd.daemon.hosts.hook_state" in _carryd_imports(hook_events)  # `from pkg import m`
    handoff = _carryd_imports(REPO / "daemon" / "hosts" / "handoff.py")
    assert "carryd.daemon.carries.carrying" in handoff  # imported inside a function
    assert _layer("carryd.daemon.state") < _layer("carryd.daemon.indexer.scan")
    assert _layer("carryd.daemon.running.worker") < _layer("carryd.daemon.mcp.server")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_daemon_folder_is_a_declared_layer_with_its_rules_said() -> None:
    """Each sub-package of daemon/ sits in LAYERS, and its `__init__.py` docstring says what it
    owns and what it may import."""
    folders = sorted(p.parent for p in (REPO / "daemon").glob("*/__init__.py"))
    assert {f"carryd.daemon.{folder.name}" for folder in folders} == set(DAEMON_LAYERS)
    for folder in folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"daemon/{folder.name}/__init__.py: say what it may import"


def test_daemon_folders_stay_small() -> None:
    ground = [p for p in (REPO / "daemon").glob("*.py") if p.name != "__init__.py"]
    assert len(ground) <= MAX_GROUND_MODULES, f"daemon/ holds {len(ground)} modules"
    for folder in (p.parent for p in (REPO / "daemon").glob("*/__init__.py")):
        modules = [p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        assert len(modules) <= MAX_PACKAGE_MODULES, f"daemon/{folder.name}/ holds {len(modules)}"


@pytest.mark.parametrize("source", _package_sources(), ids=_rel)
def test_modules_and_functions_stay_short(source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_rel(source)} has {lines} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{_rel(source)}:{node.name} has {length} lines"


# Where a module is named in text (`python -m`, import_module, docs, docstrings, benches): a
# move must bring the name along.
NAMED = re.compile(r"\bcarryd\.(?:index|carry|daemon)(?:\.[A-Za-z_]\w*)*")


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _names_a_real_thing(dotted: str) -> bool:
    """Given `carryd.pkg.module[.name[...]]`, return whether the module exists and, when a name
    follows it, the module defines or imports that name at its top level."""
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            rest = parts[cut:]
            if not rest or rest[0].startswith("__"):  # the module itself, or `__file__`
                return True
            return rest[0] in _top_level_names(MODULES[module])
    return False


def _texts_that_name_modules() -> list[Path]:
    found = [*_package_sources(), REPO / "README.md", *(REPO / "docs").glob("*.md")]
    found += [*(REPO / "bench").glob("*.py"), *(REPO / "tests").rglob("*.py")]
    found += [REPO / "pyproject.toml", *(REPO / "service").glob("*")]
    return sorted(path for path in found if path.is_file())


def test_every_module_named_in_text_exists() -> None:
    stale = sorted(
        f"{_rel(path)}: {name}"
        for path in _texts_that_name_modules()
        for name in set(NAMED.findall(path.read_text(encoding="utf-8", errors="replace")))
        if not _names_a_real_thing(name.rstrip("."))
    )
    assert not stale, f"names of modules that do not exist (moved?): {stale}"
    assert _names_a_real_thing("carryd.daemon.indexer.sync_child.CHILD_COMMAND")
    assert not _names_a_real_thing("carryd.daemon." + "sync_child")  # its path before issue 19
