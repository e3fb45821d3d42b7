"""Given a TOML config file (or none), return one frozen, typed `Settings`.

Every problem in the file is reported at once, each with its key path ("at
'recall.min_confidence': …"), in one `ConfigError`, which the CLI turns into exit code 2.
`config.example.toml` must parse to exactly the defaults (a test checks it).

Where things come from:
- the config file: `--config`, else `CARRYD_CONFIG`, else
  `<platformdirs user_config_dir>/config.toml` (a missing default file is fine; a missing
  explicit one is an error);
- the root: `--root`, else `CARRYD_ROOT`, else the config's `root`, else the nearest folder
  at or above the current one that holds the state folder (`.carryd/`), so a command a carry
  prints runs as written from inside the memory root;
- a local model folder: the config's `model.model_path`, else `CARRYD_MODEL_PATH`.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carryd.carry.budgets import CarryBudgets
from carryd.carry.sections import SectionNames
from carryd.daemon.errors import ConfigError
from carryd.daemon.locations import default_config_file, find_root, workspace_for

CONFIG_ENV = "CARRYD_CONFIG"
ROOT_ENV = "CARRYD_ROOT"
MODEL_PATH_ENV = "CARRYD_MODEL_PATH"


@dataclass(frozen=True)
class IndexSettings:
    state_dir: str = ".carryd"
    max_file_bytes: int = 8_000_000
    # Folder names skipped anywhere under the root (besides `state_dir`, always skipped).
    ignore_dirs: tuple[str, ...] = (".git", ".obsidian", "node_modules", ".trash")
    # Index a file or folder whose real path (after symbolic links) lies outside the root.
    # Off: a cloned memory repo must not pull ~/.aws/credentials into carries and recall.
    follow_links_outside_root: bool = False


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
    # After a failed download (no network), minutes before carryd tries again.
    download_retry_minutes: int = 60


# Inject a hit when P(relevant) >= INJECT_GATE: recall's confidence is a calibrated probability of
# relevance (carryd.index.lexical, carryd.index.fusion). Chosen on the fitting half of the
# development sets by the rule stated in bench/bench_recall.py (GATE_RULE), reported on the
# held-out half: among the round gates at which no set and model injects more than 5% of its
# negative controls, the highest keeping >= 65% of gold entries passing everywhere, else the lowest
# of them. With both test models no such gate keeps LoCoMo's gold at 65% on the fitting half
# (0.02 would, but there the second model's LoCoMo negative controls and CMRC's inject more than
# 5%), so the negative controls set it. A low number on purpose: a conversation turn is rarely
# more likely the answer than not.
INJECT_GATE = 0.03


@dataclass(frozen=True)
class RecallSettings:
    limit: int = 10
    min_confidence: float = INJECT_GATE
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


_BUDGETS = CarryBudgets()  # the carry's own defaults, defined once in carry/budgets.py


@dataclass(frozen=True)
class CarrySettings:
    total_chars: int = _BUDGETS.total_chars
    plan_chars: int = _BUDGETS.plan_chars
    ledger_chars: int = _BUDGETS.ledger_chars
    discipline: str = DEFAULT_DISCIPLINE
    plan_file: str = "PLAN.md"
    ledger_file: str = "handoff/LEDGER.md"
    sidecar_file: str = "handoff/sidecar.json"
    archive_dir: str = "handoff/archive"
    memory_top_k: int = _BUDGETS.memory.top_k
    memory_max_chars: int = _BUDGETS.memory.max_chars
    memory_max_tokens: int = _BUDGETS.memory.max_tokens
    memory_min_confidence: float = INJECT_GATE  # the same P(relevant) gate as recall's
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
    # The [model] keys the config file names, recorded at parse time: a key the user wrote
    # counts as chosen even when it equals the default (see `carryd.daemon.indexer.model`).
    model_keys_written: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def root_path(self) -> Path:
        if not self.root:
            raise ConfigError(
                "no memory root: pass --root DIR, set CARRYD_ROOT, set 'root' in the config "
                "file, or run inside a memory root (a folder holding the state folder)"
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
        return workspace_for(self.workspaces, directory)


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Settings:
    """Given the CLI's --config/--root, the environment and the current folder (default: the
    process's), return the effective settings."""
    env = os.environ if environ is None else environ
    explicit = config_file is not None or bool(env.get(CONFIG_ENV))
    path = Path(config_file or env.get(CONFIG_ENV) or default_config_file()).expanduser()
    data: dict[str, Any] = {}
    if path.is_file():
        import tomllib  # here: a hook run without a config file skips its import and regexes

        try:
            with path.open("rb") as handle:
                data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: not valid TOML: {error}") from error
        except UnicodeDecodeError as error:  # tomllib decodes the bytes as UTF-8 first
            raise ConfigError(
                f"{path}: not valid TOML: not UTF-8 text (byte {error.start}); save it as UTF-8"
            ) from error
        except OSError as error:
            raise ConfigError(f"{path}: cannot read config file: {error.strerror}") from error
    elif explicit:
        raise ConfigError(f"{path}: config file not found (from --config or {CONFIG_ENV})")
    settings = parse_settings(data, source=str(path))
    model_table = data.get("model")
    settings = dataclasses.replace(
        settings,
        config_file=str(path) if path.is_file() else "",
        model_keys_written=frozenset(model_table) if isinstance(model_table, dict) else frozenset(),
    )
    chosen_root = root or env.get(ROOT_ENV) or settings.root
    if not chosen_root:
        found = find_root(Path.cwd() if cwd is None else Path(cwd), settings.index.state_dir)
        chosen_root = str(found) if found is not None else ""
    if chosen_root:
        settings = dataclasses.replace(settings, root=str(Path(chosen_root).expanduser()))
    if not settings.model.model_path and env.get(MODEL_PATH_ENV):
        model = dataclasses.replace(settings.model, model_path=env[MODEL_PATH_ENV])
        settings = dataclasses.replace(settings, model=model)
    return settings


# Settings fields that describe where the settings came from; never keys of the file.
_NOT_KEYS = frozenset({"config_file", "model_keys_written"})


def parse_settings(data: Mapping[str, Any], *, source: str = "config") -> Settings:
    """Given parsed TOML, return `Settings`; raise one ConfigError naming every unknown key,
    wrong value and path that would leave the root (key path and reason each), as
    borgmatic's validation does."""
    problems: list[str] = []
    settings = typing.cast(Settings, _build(Settings, data, prefix="", problems=problems))
    _check_name(settings.index.state_dir, key="index.state_dir", problems=problems)
    for project, workspace in settings.workspaces.items():
        _check_name(workspace, key=f'workspaces."{project}"', problems=problems)
    carry = settings.carry
    for name in ("plan_file", "ledger_file", "sidecar_file", "archive_dir"):
        _check_inside(getattr(carry, name), key=f"carry.{name}", problems=problems)
    if problems:
        if len(problems) == 1:
            raise ConfigError(f"{source}: {problems[0]}")
        listed = "\n".join(f"  {problem}" for problem in problems)
        raise ConfigError(f"{source}: {len(problems)} problems:\n{listed}")
    return settings


def _check_name(value: str, *, key: str, problems: list[str]) -> None:
    """Given a folder name from the config, add a problem unless it names one folder
    directly inside the root (not absolute, no `..`, no separator)."""
    if (
        not value
        or value in (".", "..")
        or "/" in value
        or "\\" in value
        or "\0" in value
        or os.path.isabs(value)
    ):
        problems.append(
            f"at '{key}': must be a folder name inside the memory root "
            f"(no '/', '..' or absolute path), got {value!r}"
        )


def _check_inside(value: str, *, key: str, problems: list[str]) -> None:
    """Given a path relative to a workspace, add a problem when it is absolute or climbs
    out with `..`."""
    parts = value.replace("\\", "/").split("/")
    if not value or os.path.isabs(value) or ".." in parts or "\0" in value:
        problems.append(
            f"at '{key}': must be a path inside the workspace folder "
            f"(relative, no '..'), got {value!r}"
        )


def _build(cls: type[Any], data: object, *, prefix: str, problems: list[str]) -> Any:
    """Given a dataclass and its table, return the instance built from the values that are
    right (defaults for the rest), appending a problem for each that is not."""
    if not isinstance(data, Mapping):
        problems.append(f"at '{prefix.rstrip('.') or '<top>'}': expected a table")
        return cls()
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)} - _NOT_KEYS
    for name in sorted(set(data) - known):
        problems.append(
            f"at '{prefix + name}': unknown key (known here: {', '.join(sorted(known))})"
        )
    values: dict[str, Any] = {}
    for name in sorted(known & set(data)):
        try:
            values[name] = _coerce(hints[name], data[name], key=prefix + name, problems=problems)
        except _Wrong as wrong:
            problems.append(f"at '{prefix + name}': {wrong}")
    return cls(**values)


class _Wrong(ValueError):
    """One value of the wrong type or range (the message says what was expected)."""


def _coerce(hint: Any, value: Any, *, key: str, problems: list[str]) -> Any:
    def wrong(expected: str) -> _Wrong:
        return _Wrong(f"expected {expected}, got {type(value).__name__} {value!r}")

    if dataclasses.is_dataclass(hint):
        return _build(typing.cast(type[Any], hint), value, prefix=key + ".", problems=problems)
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        if value < 0:
            raise _Wrong(f"must not be negative, got {value}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong("a number")
        if value < 0:
            raise _Wrong(f"must not be negative, got {value}")
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
    raise _Wrong(f"unsupported setting type {hint!r}")
