"""`carryd init [DIR]`: start a new memory root, the one command that creates one.

Every other command refuses a root that does not exist (`layout.check_root`): a mistyped
`--root ~/memroy` is named, not made. `init` makes the folder, a skeleton workspace carryd
reads (a PLAN.md with the headings the carry takes from it and a handoff ledger with the
ledger's sections, the names in `carry.sections`), and the config file (the root, and a
local model folder when one is given or in $CARRYD_MODEL_PATH). A file that exists is never
touched: `init` on an existing root only adds what is missing and says what it left.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from carryd.daemon.config import CONFIG_ENV, MODEL_PATH_ENV, default_config_file
from carryd.daemon.errors import UsageError
from carryd.daemon.files import write_atomic

DEFAULT_ROOT = "~/memory"
DEFAULT_WORKSPACE = "my-project"

MEMORY = """# Defaults

Notes that hold for every workspace: how you like to work, tools, conventions.
"""

PLAN = """# Plan

## Current state
- What is true of the work now (the carry takes this section).

## History
- When and what was decided; `carryd plan archive` moves settled history out.
"""

LEDGER = """# Handoff ledger

## Task status
- What is being done right now, and how far it is.

## Goal
What done looks like.

## Tried approaches and failure reasons
- What was tried, and why it failed (so the next session does not try it again).

## Progress and next steps
- [ ] The next step.
"""


def cmd_init(args: argparse.Namespace) -> int:
    """`carryd init [DIR] [--workspace NAME] [--model-path DIR]`: make the root, a skeleton
    workspace and the config; print what was written, what was left, and what to run next."""
    chosen = getattr(args, "dir", None) or getattr(args, "root", None) or DEFAULT_ROOT
    root = Path(chosen).expanduser().absolute()
    workspace = getattr(args, "workspace", None) or DEFAULT_WORKSPACE
    if not workspace or workspace.startswith(".") or "/" in workspace or "\\" in workspace:
        raise UsageError(f"--workspace {workspace!r}: a workspace is a plain folder name")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a folder; pick another DIR")
    model_path = getattr(args, "model_path", None) or os.environ.get(MODEL_PATH_ENV, "")
    if model_path and not Path(model_path).expanduser().is_dir():
        raise UsageError(f"--model-path {model_path}: no such folder")
    root.mkdir(parents=True, exist_ok=True)
    files = {
        root / "MEMORY.md": MEMORY,
        root / workspace / "PLAN.md": PLAN,
        root / workspace / "handoff" / "LEDGER.md": LEDGER,
    }
    for path, text in files.items():
        _write_new(path, text, mode=0o644)
    config = Path(
        getattr(args, "config", None) or os.environ.get(CONFIG_ENV) or default_config_file()
    ).expanduser()
    _write_new(config, _config_text(root, model_path), mode=0o600)
    print(f"next: `carryd doctor --root {root}` checks the setup; `carryd index` builds the")
    print("      index; `carryd setup claude-code` (or codex, gemini) wires the hooks in")
    return 0


def _write_new(path: Path, text: str, *, mode: int) -> None:
    """Given a path and its text, write it unless a file is there already; say which."""
    if path.exists():
        print(f"kept    {path} (exists; left as it is)")
        return
    write_atomic(path, text.encode("utf-8"), mode=mode)
    print(f"wrote   {path}")


def _config_text(root: Path, model_path: str) -> str:
    model = (
        f"model_path = {json.dumps(str(Path(model_path).expanduser().absolute()))}\n"
        if model_path
        else "# A local model folder for offline machines (else the default model is\n"
        '# downloaded once into the user cache):\n# model_path = "/path/to/model"\n'
    )
    return (
        "# carryd's config, written by `carryd init`; every key is in config.example.toml.\n"
        f"root = {json.dumps(str(root))}\n\n[model]\n{model}"
    )
