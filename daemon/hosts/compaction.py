"""Where a host will compact a session's context, in tokens, and carryd's hand-off point
before it — from what the host tells the hook and from its own settings files.

- Claude Code compacts at its auto-compact window less room for the summary: the window is
  `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, else `modelSettings.<model>.autoCompactWindow`, else
  `autoCompactWindow`, from the settings layers (managed, the project's `settings.local.json`,
  the project's `settings.json`, the user's; a higher layer's value wins, and within one file
  the per-model value wins), kept within 100k–1M and never above the model's window (the
  status line's `context_window_size`, else the model's known window: today's Claude models
  have 1,000,000 tokens); it compacts about 33k tokens (20k summary, 13k buffer) below that,
  or at `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` of it. An automatic `compact_boundary` record in the
  transcript says where it really compacted last time (`preTokens`), which caps the estimate.
- Gemini CLI compresses at `model.compressionThreshold` (0.5 by default) of the model's token
  limit (1,048,576 for its Gemini models, 256,000 for Gemma 4), from the settings layers
  (system, the project's `.gemini/settings.json`, the user's).
- Codex compacts at `model_auto_compact_token_limit` (its active profile's first), never above
  90% of the model's context window (the rollout's `model_context_window`, else
  `model_context_window` in `config.toml`, else 272,000).

The hand-off point is `hooks.handoff_threshold` of the compaction point, and never later than
one large step (`LARGE_STEP_TOKENS`) before it. Kept import-light (no dataclasses, no TOML
parser unless a Codex hook reads `config.toml`): the per-message hooks ask here each time.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False  # not `typing`'s: the per-message hooks never import it
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Point",
    "claude_model_window",
    "claude_point",
    "codex_point",
    "gemini_point",
    "handoff_tokens",
]

# One large step: a big file read or tool output arriving between two hook calls.
LARGE_STEP_TOKENS = 25_000
CLAUDE_DEFAULT_WINDOW = 200_000
CLAUDE_LONG_WINDOW = 1_000_000
CLAUDE_SUMMARY_TOKENS = 20_000
CLAUDE_BUFFER_TOKENS = 13_000
CLAUDE_AUTO_WINDOW_RANGE = (100_000, 1_000_000)
GEMINI_DEFAULT_LIMIT = 1_048_576
GEMINI_GEMMA_LIMIT = 256_000
GEMINI_DEFAULT_THRESHOLD = 0.5
CODEX_DEFAULT_WINDOW = 272_000
SETTINGS_FILE_BYTES = 1_000_000
# Claude models with a native 1M window: every model of generation 5 and later, and the 4.6+
# Opus and Sonnet models; a `[1m]` suffix asks for it explicitly.
_CLAUDE_GENERATION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:[-.](\d+))?")


class Point:
    """Where a host compacts (tokens), the model's window, and where that number came from."""

    __slots__ = ("source", "tokens", "window")

    def __init__(self, tokens: int, window: int, source: str) -> None:
        self.tokens = max(int(tokens), 1)
        self.window = max(int(window), 1)
        self.source = source

    def __repr__(self) -> str:
        return f"Point({self.tokens}, {self.window}, {self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.tokens, self.window, self.source) == (
            other.tokens,
            other.window,
            other.source,
        )

    def __hash__(self) -> int:
        return hash((self.tokens, self.window, self.source))


def handoff_tokens(point: int, threshold: float) -> int:
    """Given a compaction point and `hooks.handoff_threshold`, return the hand-off point in
    tokens: that share of the point, and at least one large step (a quarter of a small
    point) before it."""
    margin = min(LARGE_STEP_TOKENS, point // 4)
    return max(1, min(math.floor(point * threshold), point - margin))


def short_tokens(tokens: int) -> str:
    """Given a token count, return it as people read it: 430k, 1.0M."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    return f"{round(tokens / 1000)}k"


# --- Claude Code ------------------------------------------------------------------------------


def claude_model_window(model: str | None, environ: Mapping[str, str]) -> int:
    """Given a Claude model id (None: unknown), return its context window in tokens."""
    if _truthy(environ.get("CLAUDE_CODE_DISABLE_1M_CONTEXT")):
        return CLAUDE_DEFAULT_WINDOW
    name = (model or "").lower()
    if not name:
        return CLAUDE_LONG_WINDOW  # today's default models have the long window
    if "[1m]" in name:
        return CLAUDE_LONG_WINDOW
    found = _CLAUDE_GENERATION.search(name)
    if found is None:
        return CLAUDE_DEFAULT_WINDOW
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    if major >= 5 or (major == 4 and minor >= 6 and ("opus" in name or "sonnet" in name)):
        return CLAUDE_LONG_WINDOW
    return CLAUDE_DEFAULT_WINDOW


def claude_settings_files(project: str | None, environ: Mapping[str, str]) -> list[Path]:
    """Given the project directory, return Claude Code's settings files, highest layer first."""
    files = [
        Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
        Path("/etc/claude-code/managed-settings.json"),
    ]
    if project:
        files += [
            Path(project, ".claude", "settings.local.json"),
            Path(project, ".claude", "settings.json"),
        ]
    config_dir = environ.get("CLAUDE_CONFIG_DIR")
    home = environ.get("HOME") or os.path.expanduser("~")
    files.append(Path(config_dir or Path(home, ".claude"), "settings.json"))
    return files


def claude_point(
    model: str | None,
    *,
    window: int | None,
    project: str | None,
    environ: Mapping[str, str],
    observed: int | None = None,
) -> Point:
    """Given the session's model, the window the status line reported (None: unknown), the
    project directory and the environment, return where Claude Code compacts. `observed` is
    the `preTokens` of the transcript's last automatic `compact_boundary`."""
    model_window = window or claude_model_window(model, environ)
    where = "status line" if window else f"model {model or 'default'}"
    layers = [(path, _read_json_file(path)) for path in claude_settings_files(project, environ)]
    value, source = _env_value(environ, layers, "CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    if value is None:
        value, source = _claude_auto_window(model, layers)
    effective = model_window
    if value is not None:
        low, high = CLAUDE_AUTO_WINDOW_RANGE
        effective = int(min(model_window, max(low, min(high, value))))
        where = source
    elif source:
        where = source  # "auto": the model's window, as the setting says
    tokens = effective - CLAUDE_SUMMARY_TOKENS - CLAUDE_BUFFER_TOKENS
    percent, percent_source = _env_value(environ, layers, "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
    if percent is not None and percent > 0:
        share = percent if percent <= 1 else percent / 100
        tokens = min(math.floor(effective * min(share, 1.0)), effective - CLAUDE_BUFFER_TOKENS)
        where = percent_source
    if observed is not None and 0 < observed < tokens:
        tokens, where = observed, "last automatic compaction in the transcript"
    return Point(tokens, model_window, where)


def _claude_auto_window(
    model: str | None, layers: list[tuple[Path, dict[str, Any] | None]]
) -> tuple[int | None, str]:
    for path, data in layers:
        if data is None:
            continue
        per_model = data.get("modelSettings")
        entry = per_model.get(model) if isinstance(per_model, dict) and model else None
        if isinstance(entry, dict) and _positive(entry.get("autoCompactWindow")) is not None:
            name = f"modelSettings.{model}.autoCompactWindow in {path}"
            return _positive(entry.get("autoCompactWindow")), name
        if "autoCompactWindow" in data:
            # "auto" (or anything not a number) is the host's own default: the model window.
            return _positive(data.get("autoCompactWindow")), f"autoCompactWindow in {path}"
    return None, ""


# --- Gemini CLI -------------------------------------------------------------------------------


def gemini_window(model: str | None) -> int:
    """Given a Gemini CLI model name, return its token limit."""
    return (
        GEMINI_GEMMA_LIMIT
        if (model or "").lower().startswith("gemma-4")
        else (GEMINI_DEFAULT_LIMIT)
    )


def gemini_point(model: str | None, *, project: str | None, environ: Mapping[str, str]) -> Point:
    """Given the session's model and project, return where Gemini CLI compresses."""
    home = environ.get("GEMINI_CLI_HOME") or environ.get("HOME") or os.path.expanduser("~")
    files = [
        Path(environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json")
    ]
    if project:
        files.append(Path(project, ".gemini", "settings.json"))
    files.append(Path(home, ".gemini", "settings.json"))
    threshold, source = GEMINI_DEFAULT_THRESHOLD, "compressionThreshold default 0.5"
    configured_model = None
    for path in files:
        section = (_read_json_file(path) or {}).get("model")
        if not isinstance(section, dict):
            continue
        value = section.get("compressionThreshold")
        number = _number(value)
        if number is not None and 0 < number <= 1 and source.endswith("default 0.5"):
            threshold, source = number, f"model.compressionThreshold in {path}"
        if configured_model is None and isinstance(section.get("name"), str):
            configured_model = section["name"]
    window = gemini_window(model or configured_model)
    return Point(math.ceil(threshold * window), window, source)


# --- Codex CLI --------------------------------------------------------------------------------


def codex_point(
    model: str | None, *, window: int | None, project: str | None, environ: Mapping[str, str]
) -> Point:
    """Given the session's model, the rollout's context window (None: unknown) and the
    project, return where Codex compacts."""
    home = environ.get("HOME") or os.path.expanduser("~")
    codex_home = environ.get("CODEX_HOME") or str(Path(home, ".codex"))
    files = [Path(project, ".codex", "config.toml")] if project else []
    files.append(Path(codex_home, "config.toml"))
    limit: int | None = None
    source = ""
    configured_window = None
    for path in files:
        data = _read_toml_file(path)
        if data is None:
            continue
        profile = (
            data.get("profiles", {}).get(data.get("profile"))
            if isinstance(data.get("profiles"), dict)
            else None
        )
        for table, where in ((profile, f"profile in {path}"), (data, str(path))):
            if not isinstance(table, dict):
                continue
            if limit is None and _positive(table.get("model_auto_compact_token_limit")):
                limit = _positive(table.get("model_auto_compact_token_limit"))
                source = f"model_auto_compact_token_limit in {where}"
            if configured_window is None and _positive(table.get("model_context_window")):
                configured_window = _positive(table.get("model_context_window"))
    model_window = window or configured_window or CODEX_DEFAULT_WINDOW
    ceiling = model_window * 9 // 10
    if limit is not None and limit < ceiling:
        return Point(limit, model_window, source)
    return Point(ceiling, model_window, "90% of the model's context window")


# --- reading settings files -------------------------------------------------------------------


def _read_json_file(path: Path) -> dict[str, Any] | None:
    data = _read_small(path)
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        try:  # Gemini CLI allows comments in its settings
            value = json.loads(_strip_comments(data))
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _read_toml_file(path: Path) -> dict[str, Any] | None:
    data = _read_small(path)
    if data is None:
        return None
    import tomllib  # only a Codex hook with a config.toml reads TOML

    try:
        return tomllib.loads(data)
    except ValueError:
        return None


def _read_small(path: Path) -> str | None:
    """A settings file's text: a regular file only, at most `SETTINGS_FILE_BYTES`."""
    try:
        with open(path, "rb") as stream:
            if not os.path.isfile(path):
                return None
            return stream.read(SETTINGS_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)


def _strip_comments(text: str) -> str:
    return _COMMENT.sub(lambda found: found.group(1) or "", text)


def _env_value(
    environ: Mapping[str, str], layers: list[tuple[Path, dict[str, Any] | None]], name: str
) -> tuple[float | None, str]:
    """A host variable: the hook's environment first, then the settings layers' `env`."""
    raw = environ.get(name)
    if raw is not None and _parse_number(raw) is not None:
        return _parse_number(raw), name
    for path, data in layers:
        env = data.get("env") if data is not None else None
        if isinstance(env, dict) and isinstance(env.get(name), str | int | float):
            value = _parse_number(str(env[name]))
            if value is not None:
                return value, f"{name} in {path}"
    return None, ""


def _parse_number(raw: str) -> float | None:
    try:
        value = float(raw.strip().replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _positive(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number > 0 else None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")
