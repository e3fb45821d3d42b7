"""Given a TOML config file (or none), return one frozen, typed `Settings`.

Every problem names its key path ("At 'recall.min_confidence': …") and raises `ConfigError`,
which the CLI turns into exit code 2. `config.example.toml` must parse to exactly the defaults
(a test checks it).

Where things come from:
- the config file: `--config`, else `CARRYD_CONFIG`, else `<platformdirs user_config_dir>/config.toml`
  (a missing default file is fine; a missing explicit one is an error);
- the root: `--root`, else `CARRYD_ROOT`, else the config's `root`;
- a local model folder: the config's `model.model_path`, else `CARRYD_MODEL_PATH`.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carryd.carry.ledger import SectionNames
from carryd.index.errors import ConfigError

CONFIG_ENV = "CARRYD_CONFIG"
ROOT_ENV = "CARRYD_ROOT"
MODEL_PATH_ENV = "CARRYD_MODEL_PATH"


@dataclass(frozen=True)
class IndexSettings:
    state_dir: str = ".carryd"
    max_file_bytes: int = 8_000_000
    # Folder names skipped anywhere under the root (besides `state_dir`, always skipped).
    ignore_dirs: tuple[str, ...] = (".git", ".obsidian", "node_modules", ".trash")


@dataclass(frozen=True)
class ModelSettings:
    name: str = "Xenova/multilingual-e5-small"
    file: str = "onnx/model_quantized.onnx"
    dim: int = 384
    pooling: str = "mean"
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    # A local model folder (offline machines). Empty: CARRYD_MODEL_PATH, else download once.
    model_path: str = ""
    # Where a downloaded model is cached. Empty: the platformdirs user cache dir.
    cache_dir: str = ""
    batch_size: int = 64
    threads: int = 0
    # Whether carryd may download the default model when none is cached.
    allow_download: bool = True


@dataclass(frozen=True)
class RecallSettings:
    limit: int = 10
    min_confidence: float = 0.5
    rrf_k: int = 60
    lexical_divisor: float = 4.0
    semantic_divisor: float = 4.0
    candidates_per_arm: int = 50
    parent_propagation: bool = False


# The ledger's section names: one table, in carry/ledger.py (a new section is a one-file change).
LedgerSections = SectionNames


DEFAULT_DISCIPLINE = (
    "You are continuing work handed off from an earlier context of this same task.\n"
    "Trust this carry over your guesses: the ledger says what was tried and failed, "
    "the plan says where things stand.\n"
    "Do not repeat an approach the ledger records as failed unless you say why it will "
    "work now.\n"
    "Read details on demand: the last section of this carry says how."
)


@dataclass(frozen=True)
class CarrySettings:
    total_chars: int = 18_000
    plan_chars: int = 3_000
    ledger_chars: int = 8_000
    discipline: str = DEFAULT_DISCIPLINE
    plan_file: str = "PLAN.md"
    ledger_file: str = "handoff/LEDGER.md"
    sidecar_file: str = "handoff/sidecar.json"
    archive_dir: str = "handoff/archive"
    memory_top_k: int = 5
    memory_max_chars: int = 3_000
    memory_max_tokens: int = 800
    memory_min_confidence: float = 0.5
    sections: LedgerSections = field(default_factory=LedgerSections)


@dataclass(frozen=True)
class DaemonSettings:
    debounce_ms: int = 300
    reconcile_minutes: float = 10.0
    verify_minutes: float = 60.0
    archive_plan: bool = False
    archive_minutes: float = 1440.0


@dataclass(frozen=True)
class HookSettings:
    handoff_threshold: float = 0.75
    inline_chars: int = 9_000
    bypass_env: str = "CARRYD_HOOKS_OFF"


@dataclass(frozen=True)
class Settings:
    root: str = ""
    index: IndexSettings = field(default_factory=IndexSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    carry: CarrySettings = field(default_factory=CarrySettings)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    # Project directory (absolute, `~` allowed) → workspace name.
    workspaces: Mapping[str, str] = field(default_factory=lambda: types.MappingProxyType({}))
    # Where the settings came from, for messages and `carryd status`.
    config_file: str = ""

    @property
    def root_path(self) -> Path:
        if not self.root:
            raise ConfigError(
                "no memory root: pass --root DIR, set CARRYD_ROOT, or set 'root' in the config file"
            )
        return Path(self.root).expanduser()

    @property
    def state_path(self) -> Path:
        return self.root_path / self.index.state_dir

    @property
    def db_path(self) -> Path:
        return self.state_path / "index.sqlite"

    @property
    def carry_dir(self) -> Path:
        return self.state_path / "carry"

    @property
    def socket_path(self) -> Path:
        return self.state_path / "carryd.sock"

    def workspace_for(self, directory: str | os.PathLike[str]) -> str:
        """Given a host's working directory, return the workspace it works in.

        The longest configured project directory containing it wins; otherwise the
        directory's own name.
        """
        target = Path(directory).expanduser().resolve(strict=False)
        best: tuple[int, str] | None = None
        for project, workspace in self.workspaces.items():
            base = Path(project).expanduser().resolve(strict=False)
            if target == base or base in target.parents:
                depth = len(base.parts)
                if best is None or depth > best[0]:
                    best = (depth, workspace)
        return best[1] if best else target.name


def default_config_file() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("carryd")) / "config.toml"


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Given the CLI's --config/--root and the environment, return the effective settings."""
    env = os.environ if environ is None else environ
    explicit = config_file is not None or bool(env.get(CONFIG_ENV))
    path = Path(config_file or env.get(CONFIG_ENV) or default_config_file()).expanduser()
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            with path.open("rb") as handle:
                data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: not valid TOML: {error}") from error
        except OSError as error:
            raise ConfigError(f"{path}: cannot read config file: {error.strerror}") from error
    elif explicit:
        raise ConfigError(f"{path}: config file not found (from --config or {CONFIG_ENV})")
    settings = parse_settings(data, source=str(path))
    settings = dataclasses.replace(settings, config_file=str(path) if path.is_file() else "")
    chosen_root = root or env.get(ROOT_ENV) or settings.root
    if chosen_root:
        settings = dataclasses.replace(settings, root=str(Path(chosen_root).expanduser()))
    if not settings.model.model_path and env.get(MODEL_PATH_ENV):
        model = dataclasses.replace(settings.model, model_path=env[MODEL_PATH_ENV])
        settings = dataclasses.replace(settings, model=model)
    return settings


def parse_settings(data: Mapping[str, Any], *, source: str = "config") -> Settings:
    """Given parsed TOML, return `Settings`; an unknown key or a wrong type raises ConfigError."""
    return _build(Settings, data, prefix="", source=source)


def _build(cls: type[Any], data: Mapping[str, Any], *, prefix: str, source: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: at '{prefix.rstrip('.') or '<top>'}': expected a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls) if f.name != "config_file"}
    unknown = sorted(set(data) - known)
    if unknown:
        key = prefix + unknown[0]
        raise ConfigError(
            f"{source}: at '{key}': unknown key (known here: {', '.join(sorted(known))})"
        )
    values: dict[str, Any] = {}
    for name in known & set(data):
        values[name] = _coerce(hints[name], data[name], key=prefix + name, source=source)
    return cls(**values)


def _coerce(hint: Any, value: Any, *, key: str, source: str) -> Any:
    def wrong(expected: str) -> ConfigError:
        return ConfigError(
            f"{source}: at '{key}': expected {expected}, got {type(value).__name__} {value!r}"
        )

    if dataclasses.is_dataclass(hint):
        return _build(hint, value, prefix=key + ".", source=source)
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        if value < 0:
            raise ConfigError(f"{source}: at '{key}': must not be negative, got {value}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong("a number")
        if value < 0:
            raise ConfigError(f"{source}: at '{key}': must not be negative, got {value}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if origin is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("a list of strings")
        return tuple(value)
    if origin in (Mapping, dict) or hint is Mapping:
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise wrong("a table of strings")
        return types.MappingProxyType(dict(value))
    raise ConfigError(f"{source}: at '{key}': unsupported setting type {hint!r}")
