"""The first hour at the command line (issue 11): messages and exit codes instead of tracebacks,
global options before the command, one workspace check for every command, and the flags a new
user reaches for (`--min-confidence 0`, `--limit 0`, `service uninstall`, `plan archive
--dry-run`). Real model, real index, `main()` in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from carryd.daemon.cli.dispatch import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example_root(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    """An indexed copy of examples/memory (indexed once for the module)."""
    root = tmp_path_factory.mktemp("cli") / "ex"
    shutil.copytree(REPO / "examples" / "memory", root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CARRYD_MODEL_PATH", str(model_dir))
        assert main(["index", "--root", str(root), "--json"]) == 0
    return root


@pytest.fixture(autouse=True)
def _model(use_model: Path) -> None:
    """Every command here uses the offline test model."""


def test_a_config_file_that_is_not_utf8_is_a_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "b.toml"
    config.write_bytes(b"\xff\xfe\x00root")
    assert main(["status", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and "UTF-8" in err and "Traceback" not in err


def test_global_options_are_accepted_before_the_command(
    example_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(example_root), "recall", "refund currency", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["hits"], "the root given before the command was used"
    missing = example_root.parent / "no-such.toml"
    assert main(["--config", str(missing), "status", "--root", str(example_root)]) == 2
    assert str(missing) in capsys.readouterr().err
    # The command's own copy wins over the one before it.
    assert main(["--root", "/nonexistent", "recall", "refund", "--root", str(example_root)]) == 0


@pytest.mark.parametrize("name", ["../etc", "/etc", ".carryd", "nope", ""])
@pytest.mark.parametrize(
    "command",
    [
        ["recall", "refund"],
        ["carry", "--print"],
        ["carry"],
        ["plan", "archive"],
    ],
)
def test_every_command_rejects_a_workspace_that_is_not_one(
    example_root: Path, command: list[str], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--root", str(example_root), "--workspace", name]) == 2
    assert "workspace" in capsys.readouterr().err


def test_a_batch_request_with_a_bad_workspace_is_a_usage_error(
    example_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "refund", "workspace": "../etc"}\n', encoding="utf-8")
    assert main(["recall", "--batch", str(batch), "--root", str(example_root)]) == 2
    assert "../etc" in capsys.readouterr().err


def test_min_confidence_0_lists_the_candidates_below_the_threshold(
    example_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One of three words matches: a weak candidate, below the default threshold.
    args = ["recall", "webhook quokka zebra", "--root", str(example_root)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "no memory above the confidence threshold" in out and "--min-confidence 0" in out
    assert main([*args, "--min-confidence", "0", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and all(hit["confidence"] < 0.5 for hit in hits)
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    assert main([*args, "--min-confidence", "0"]) == 0
    out = capsys.readouterr().out
    assert "no memory above" not in out and out.startswith("1. mem_")
    # No candidate at all: said as such, not as a threshold problem.
    assert main(["recall", "zzqx", "--root", str(example_root), "--min-confidence", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no candidates") and "threshold" not in out


@pytest.mark.parametrize("flag", [["--limit", "0"], ["--limit", "-1"]])
def test_limit_below_1_is_a_usage_error(
    example_root: Path, flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recall", "refund", "--root", str(example_root), *flag]) == 2
    assert "--limit must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("chars", ["0", "100"])
def test_a_max_chars_the_carry_cannot_meet_is_a_usage_error(
    example_root: Path, chars: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = ["carry", "--root", str(example_root), "--print", "--workspace", "webshop"]
    assert main([*command, "--max-chars", chars]) == 2
    assert "--max-chars" in capsys.readouterr().err


def test_service_uninstall_needs_no_root(capsys: pytest.CaptureFixture[str]) -> None:
    # As the README shows it: nothing installed (isolated HOME), so nothing to stop, exit 0.
    assert main(["service", "uninstall"]) == 0
    assert "not installed" in capsys.readouterr().out
    assert main(["service", "print"]) == 2  # rendering a unit does need the root
    assert "--root" in capsys.readouterr().err


def test_plan_archive_dry_run_shows_what_would_move_and_writes_nothing(
    example_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ex"
    shutil.copytree(example_root, root)
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    assert main(["plan", "archive", "--root", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "webshop: would move (dry run) 1 history block(s)" in out
    after = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    assert after == before
    assert main(["plan", "archive", "--root", str(root), "--workspace", "webshop"]) == 0
    assert "webshop: moved 1 history block(s)" in capsys.readouterr().out
