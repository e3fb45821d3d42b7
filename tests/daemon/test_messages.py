"""The messages a new user met in the first hour (issue 22), each as the person reads it.

- `recall --batch` with one bad line aborted the batch with no output and no line number;
- with no model, `status` printed the same 600-character model message two or three times;
- `carryd index` printed `embedding: 0/34 entries (0%)` when there was no model at all;
- with no model, recall hinted "run `carryd index`", which cannot help.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_process import carryd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(EXAMPLES, copy)
    return copy


def no_model(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A config with downloads off and an environment without CARRYD_MODEL_PATH: no model."""
    config = tmp_path / "config.toml"
    config.write_text("[model]\nallow_download = false\n")
    env = {k: v for k, v in os.environ.items() if k != "CARRYD_MODEL_PATH"}
    return ["--config", str(config)], env


def test_a_bad_batch_line_is_named_and_the_rest_answered(root: Path, use_model: Path) -> None:
    batch = root.parent / "queries.jsonl"
    batch.write_text(
        '{"query": "refund currency"}\n'
        "not json\n"
        '{"query": "webhook", "workspace": "../etc"}\n'
        "\n"
        '{"query": "tooling"}\n',
        encoding="utf-8",
    )
    result = carryd("recall", "--batch", str(batch), "--root", str(root))
    assert result.returncode == 2, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 4  # one per non-empty line, in order
    assert lines[0]["query"] == "refund currency" and lines[3]["query"] == "tooling"
    assert lines[1]["line"] == 2 and f"{batch}:2: not a JSON object" in lines[1]["error"]
    assert lines[2]["line"] == 3 and "'../etc'" in lines[2]["error"]
    assert f"carryd: {batch}:2: not a JSON object" in result.stderr


def test_status_prints_the_model_message_once(root: Path, tmp_path: Path) -> None:
    flags, env = no_model(tmp_path)
    assert carryd("index", "--root", str(root), *flags, env=env).returncode == 0
    result = carryd("status", "--root", str(root), *flags, env=env)
    assert result.returncode == 1
    marker = "and downloads are off"
    assert result.stdout.count(marker) == 1, result.stdout
    assert "model degraded (see the model line)" in result.stdout


def test_no_embedding_progress_without_a_model(root: Path, tmp_path: Path) -> None:
    flags, env = no_model(tmp_path)
    result = carryd("index", "--root", str(root), *flags, env=env)
    assert result.returncode == 0, result.stderr
    assert "embedding:" not in result.stderr
    assert "degraded: no vectors" in result.stdout


def test_recall_without_a_model_says_why_not_run_index(root: Path, tmp_path: Path) -> None:
    flags, env = no_model(tmp_path)
    assert carryd("index", "--root", str(root), *flags, env=env).returncode == 0
    result = carryd("recall", "refund", "--json", "--root", str(root), *flags, env=env)
    assert result.returncode == 0, result.stderr
    degraded = json.loads(result.stdout)["degraded"]
    assert "downloads are off" in degraded
    assert "run `carryd index`" not in degraded
    assert "run `carryd index`" not in result.stderr  # nor in a warning beside it
