"""The settings a per-message hook reads, without building the whole `Settings`.

A hook runs before every prompt and after every tool call; importing `carryd.daemon.config`
(dataclasses, typing, the carry's budget tables) would cost more than the interpreter's own
start. `hook_settings` gives the few values those hooks read — the root and its state folder,
`[hooks]`, the ledger and plan file names, `[index] state_dir` and `ignore_dirs`,
`[workspaces]` — from the same sources in the same order as `load_settings` (`--config`,
`CARRYD_CONFIG`, the default file; `--root`, `CARRYD_ROOT`, the file's `root`, the nearest
folder holding the state folder), and anything else from the full `Settings`, loaded on first
use (`__getattr__`). A config file is validated by the full loader once per version of the
file (its path, size and mtime), and the values read from it are kept beside the hook
notices; a broken file is the full loader's `ConfigError`, word for word.

Also here: `LazyLog`, a logger that imports `logging` only when something is logged.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from carryd.daemon.files import write_atomic
from carryd.daemon.locations import default_config_file, find_root, workspace_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from carryd.daemon.config import Settings

__all__ = ["LazyLog", "full_settings", "hook_settings", "state_dir"]

# The defaults of `carryd.daemon.config` for the values read here (a test keeps them equal).
DEFAULTS: dict[str, Any] = {
    "hooks": {"handoff_threshold": 0.75, "inline_chars": 9_000, "bypass_env": "CARRYD_HOOKS_OFF"},
    "index": {
        "state_dir": ".carryd",
        "ignore_dirs": (".git", ".obsidian", "node_modules", ".trash"),
    },
    "carry": {
        "ledger_file": "handoff/LEDGER.md",
        "plan_file": "PLAN.md",
        "sidecar_file": "handoff/sidecar.json",
    },
}
CACHE_FILE = "hook-settings.json"
CONFIG_ENV, ROOT_ENV = "CARRYD_CONFIG", "CARRYD_ROOT"


class LazyLog:
    """`logging.getLogger(name)`, imported on the first message."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, level: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), level)


def state_dir() -> Path | None:
    """carryd's user state folder without platformdirs where its rule is known (Linux), else
    None (the caller imports platformdirs)."""
    if not sys.platform.startswith("linux"):
        return None
    base = os.environ.get("XDG_STATE_HOME", "").strip() or os.path.expanduser("~/.local/state")
    return Path(base) / "carryd"


class _Part:
    """One table of the settings: the values read here, the rest from the full settings."""

    def __init__(self, view: HookView, table: str, values: Mapping[str, Any]) -> None:
        self._view, self._table = view, table
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self._view.full(), self._table), name)


class HookView:
    """What a hook reads of the settings; anything else comes from the full `Settings`."""

    def __init__(self, values: Mapping[str, Any], config: str | None, root: str | None) -> None:
        self._config, self._root = config, root
        self._full: Settings | None = None
        self.root: str = values["root"]
        self.config_file: str = values["config_file"]
        self.workspaces: Mapping[str, str] = values["workspaces"]
        self.hooks = _Part(self, "hooks", values["hooks"])
        self.index = _Part(self, "index", values["index"])
        self.carry = _Part(self, "carry", values["carry"])

    def full(self) -> Settings:
        if self._full is None:
            from carryd.daemon.config import load_settings

            self._full = load_settings(self._config, root=self._root)
        return self._full

    def __getattr__(self, name: str) -> Any:
        return getattr(self.full(), name)

    @property
    def root_path(self) -> Path:
        if not self.root:
            return self.full().root_path  # the full settings' ConfigError says what to do
        return Path(self.root).expanduser()

    @property
    def state_path(self) -> Path:
        return self.root_path / self.index.state_dir

    @property
    def carry_dir(self) -> Path:
        return self.state_path / "carry"

    @property
    def socket_path(self) -> Path:
        return self.state_path / "carryd.sock"

    def workspace_for(self, directory: str | os.PathLike[str]) -> str:
        """`Settings.workspace_for`: the longest configured project holding the directory,
        else the directory's own name."""
        return workspace_for(self.workspaces, directory)


def full_settings(settings: Settings) -> Settings:
    """Given a hook's settings, return the full `Settings` (loaded now for a `HookView`): for
    the work that passes them on whole (planning a carry, recall, a sync)."""
    view = settings if isinstance(settings, HookView) else None
    return view.full() if view is not None else settings


def hook_settings(config: str | None, root: str | None) -> Settings:
    """Given the hook's `--config` and `--root` (None each: not given), return its settings
    (a `HookView`); raise the full loader's ConfigError for a broken config file."""
    env = os.environ
    explicit = config is not None or bool(env.get(CONFIG_ENV))
    path = Path(config or env.get(CONFIG_ENV) or default_config_file()).expanduser()
    values: dict[str, Any] = {key: dict(table) for key, table in DEFAULTS.items()}
    values.update(workspaces={}, config_file="", file_root="")
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None or explicit:
        values = _from_file(path, info, config, root) if info is not None else {}
        if not values:  # explicit and missing, or not cacheable: the full loader decides
            return _full(config, root)
    chosen = root or env.get(ROOT_ENV) or values["file_root"]
    if not chosen:
        found = find_root(Path.cwd(), values["index"]["state_dir"])
        chosen = str(found) if found is not None else ""
    values["root"] = str(Path(chosen).expanduser()) if chosen else ""
    return HookView(values, config, root)  # type: ignore[return-value]


def _from_file(
    path: Path, info: os.stat_result, config: str | None, root: str | None
) -> dict[str, Any]:
    """The values of a config file: from the cache when it was validated as it is now, else
    validated by the full loader (whose ConfigError propagates) and cached."""
    folder = state_dir()
    key = [str(path), info.st_size, info.st_mtime_ns, info.st_ino]
    cache = folder / CACHE_FILE if folder is not None else None
    if cache is not None:
        try:
            saved = json.loads(cache.read_text(encoding="utf-8"))
            if isinstance(saved, dict) and saved.get("key") == key:
                values = saved["values"]
                values["index"]["ignore_dirs"] = tuple(values["index"]["ignore_dirs"])
                return dict(values)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    settings = _full(config, root)  # validates the file: a ConfigError propagates
    import tomllib

    try:
        file_root = tomllib.loads(path.read_text(encoding="utf-8")).get("root", "")
    except (OSError, ValueError):
        return {}
    values = {
        "hooks": {name: getattr(settings.hooks, name) for name in DEFAULTS["hooks"]},
        "index": {name: getattr(settings.index, name) for name in DEFAULTS["index"]},
        "carry": {name: getattr(settings.carry, name) for name in DEFAULTS["carry"]},
        "workspaces": dict(settings.workspaces),
        "config_file": settings.config_file,
        "file_root": file_root if isinstance(file_root, str) else "",
    }
    if cache is not None:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # type: ignore[union-attr]
            write_atomic(cache, json.dumps({"key": key, "values": values}).encode("utf-8"))
        except OSError:
            pass
    return values


def _full(config: str | None, root: str | None) -> Settings:
    from carryd.daemon.config import load_settings

    return load_settings(config, root=root)
