"""Where each host compacts, from its settings files and what it tells the hook; the hand-off
point before it; Gemini CLI's rendering without angle brackets; transcripts read only when
they are regular files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from carryd.daemon.hosts.compaction import (
    claude_model_window,
    claude_point,
    codex_point,
    gemini_point,
    handoff_tokens,
)
from carryd.daemon.hosts.render import without_angle_brackets


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / ".claude").mkdir(parents=True)
    return folder


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")


def test_the_hand_off_point_is_the_threshold_and_a_large_step_before_compaction() -> None:
    assert handoff_tokens(367_000, 0.75) == 275_250
    assert handoff_tokens(967_000, 0.75) == 725_250
    assert handoff_tokens(100_000, 0.95) == 75_000  # never later than 25k before it
    assert handoff_tokens(40_000, 0.95) == 30_000  # a small point: a quarter before it


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-opus-5-5", 1_000_000),
        ("claude-sonnet-5", 1_000_000),
        ("claude-opus-4-7", 1_000_000),
        ("claude-sonnet-4-5", 200_000),
        ("claude-sonnet-4-5[1m]", 1_000_000),
        ("claude-3-5-haiku-20241022", 200_000),
        (None, 1_000_000),  # today's default models
    ],
)
def test_claude_model_windows(model: str | None, window: int) -> None:
    assert claude_model_window(model, {}) == window
    assert claude_model_window(model, {"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}) == 200_000


def test_claude_code_compacts_below_its_model_window_without_settings(home: Path) -> None:
    env = {"HOME": str(home)}
    point = claude_point("claude-opus-5-5", window=None, project=None, environ=env)
    assert (point.tokens, point.window, point.source) == (
        967_000,
        1_000_000,
        "model claude-opus-5-5",
    )
    point = claude_point("claude-opus-4-1", window=200_000, project=None, environ=env)
    assert (point.tokens, point.source) == (167_000, "status line")


def test_claude_code_settings_layers_and_environment_set_the_auto_compact_window(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    env = {"HOME": str(home)}
    user = home / ".claude" / "settings.json"
    write(
        user,
        {"autoCompactWindow": 500_000, "modelSettings": {"m5": {"autoCompactWindow": 300_000}}},
    )
    model = "claude-opus-5-5"

    def point(**extra: str) -> tuple[int, str]:
        found = claude_point(model, window=None, project=str(project), environ={**env, **extra})
        return found.tokens, found.source

    assert point() == (467_000, f"autoCompactWindow in {user}")
    write(
        user,
        {"autoCompactWindow": 500_000, "modelSettings": {model: {"autoCompactWindow": 300_000}}},
    )
    assert point() == (267_000, f"modelSettings.{model}.autoCompactWindow in {user}")
    # A higher layer's top-level value wins over a lower layer's per-model one.
    local = project / ".claude" / "settings.local.json"
    write(local, {"autoCompactWindow": 400_000})
    assert point() == (367_000, f"autoCompactWindow in {local}")
    write(local, {"autoCompactWindow": "auto"})  # the host's own default: the model window
    assert point() == (967_000, f"autoCompactWindow in {local}")
    # The environment wins; the value is kept within 100k–1M and the model's window.
    assert point(CLAUDE_CODE_AUTO_COMPACT_WINDOW="250000")[0] == 217_000
    assert point(CLAUDE_CODE_AUTO_COMPACT_WINDOW="5000")[0] == 67_000
    assert point(CLAUDE_CODE_AUTO_COMPACT_WINDOW="5000000")[0] == 967_000
    write(local, {"env": {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "450000"}})
    assert point() == (417_000, f"CLAUDE_CODE_AUTO_COMPACT_WINDOW in {local}")
    # A percentage override of that window.
    assert point(CLAUDE_AUTOCOMPACT_PCT_OVERRIDE="50")[0] == 225_000
    # A settings file that is not JSON is no settings.
    write(local, "{not json")
    assert point()[0] == 267_000


def test_the_last_automatic_compaction_caps_the_estimate(home: Path) -> None:
    env = {"HOME": str(home)}
    point = claude_point(
        "claude-opus-5-5", window=None, project=None, environ=env, observed=420_000
    )
    assert (point.tokens, point.source) == (420_000, "last automatic compaction in the transcript")
    later = claude_point(
        "claude-opus-5-5", window=None, project=None, environ=env, observed=990_000
    )
    assert later.tokens == 967_000


def test_gemini_compresses_at_its_threshold_of_the_model_limit(home: Path, tmp_path: Path) -> None:
    env = {"HOME": str(home), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "none.json")}
    point = gemini_point("gemini-2.5-pro", project=None, environ=env)
    assert (point.tokens, point.source) == (524_288, "compressionThreshold default 0.5")
    assert gemini_point("gemma-4-31b-it", project=None, environ=env).tokens == 128_000
    project = tmp_path / "shop"
    settings = project / ".gemini" / "settings.json"
    write(settings, '{\n  // comments are allowed\n  "model": {"compressionThreshold": 0.3}\n}')
    point = gemini_point(None, project=str(project), environ=env)
    assert (point.tokens, point.source) == (314_573, f"model.compressionThreshold in {settings}")


def test_codex_compacts_at_its_limit_never_above_ninety_percent_of_the_window(
    home: Path, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex"
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home)}
    point = codex_point("gpt-5-codex", window=None, project=None, environ=env)
    assert (point.tokens, point.window) == (244_800, 272_000)
    config = codex_home / "config.toml"
    write(config, "model_auto_compact_token_limit = 150000\n")
    point = codex_point("gpt-5-codex", window=272_000, project=None, environ=env)
    assert (point.tokens, point.source) == (150_000, f"model_auto_compact_token_limit in {config}")
    write(config, 'profile = "big"\nmodel_context_window = 400000\n[profiles.big]\n'
          "model_auto_compact_token_limit = 500000\n")  # fmt: skip
    point = codex_point(None, window=None, project=None, environ=env)
    assert (point.tokens, point.window) == (360_000, 400_000)  # capped at 90% of the window


def test_gemini_rendering_has_no_angle_brackets() -> None:
    carry = (
        "## Plan\n\nRefunds <in progress>; see `carryd expand <id>`.\n\n"
        "<!-- slot: currency -->\n<recalled_memory>\n"
        '<memory_hit id="mem_1a2b" authority="user" source="shop/notes.md:3">\n'
        "Use &lt;Money&gt; types; a -> b\n</memory_hit>\n</recalled_memory>\n"
    )
    rendered = without_angle_brackets(carry)
    assert "<" not in rendered and ">" not in rendered
    assert "[recalled memory]" in rendered and "[end of recalled memory]" in rendered
    assert '[memory hit id="mem_1a2b" authority="user" source="shop/notes.md:3"]' in rendered
    assert "[slot: currency]" in rendered and "carryd expand {id}" in rendered
    assert "Use ‹Money› types; a -› b" in rendered
    assert without_angle_brackets("plain text") == "plain text"


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/urandom", "folder"])
def test_a_transcript_that_is_no_regular_file_is_never_read(kind: str, tmp_path: Path) -> None:
    """A FIFO nobody writes, an endless device or a folder as `transcript_path`: the hook
    answers at once (it used to hang until killed)."""
    if kind == "fifo":
        path = tmp_path / "transcript.jsonl"
        os.mkfifo(path)
    elif kind == "folder":
        path = tmp_path
    else:
        path = Path(kind)
    root = tmp_path / "memory"
    (root / "shop").mkdir(parents=True)
    stdin = json.dumps(
        {"session_id": "s1", "cwd": str(root / "shop"), "transcript_path": str(path), "prompt": "x"}
    )
    done = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "hook", "claude-code", "prompt-submit",
         "--root", str(root)],
        input=stdin.encode(), capture_output=True, timeout=20, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and json.loads(done.stdout) == {}
