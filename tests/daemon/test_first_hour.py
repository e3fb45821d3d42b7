"""The first hour, as a new user meets it: a root must exist (and hold Markdown or
`.carryd/`) unless the person asks for a new one; `carryd init` makes one carryd reads;
`carryd doctor` checks a setup one line per check.

Before: `carryd index --root ~/memroy` said "indexed 0 files" and made `~/memroy/.carryd/`,
`verify` then said "index and files agree", `carry` said "no workspaces", and
`setup claude-code --root <nonexistent>` wrote hooks without a word.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_process import carryd


@pytest.mark.parametrize(
    "command",
    [
        ["index"],
        ["verify"],
        ["carry"],
        ["recall", "anything"],
        ["expand", "mem_0123456789abcdef0123456789abcdef"],
        ["run"],
        ["setup", "claude-code"],
    ],
)
def test_a_mistyped_root_is_named_and_never_created(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "memroy"
    result = carryd(*command, "--root", str(typo))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"carryd: {typo}: the memory root does not exist" in result.stderr
    assert f"`carryd init {typo}`" in result.stderr
    assert not typo.exists()
    assert not (Path.home() / ".claude" / "settings.json").exists()  # setup wrote nothing


def test_a_folder_without_markdown_is_not_taken_for_a_root(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "src").mkdir(parents=True)
    (empty / "src" / "main.py").write_text("print('hi')\n")
    result = carryd("index", "--root", str(empty))
    assert result.returncode == 2, result.stderr
    assert f"{empty}: holds no Markdown file and no .carryd/" in result.stderr
    assert not (empty / ".carryd").exists()


def test_init_makes_a_root_carryd_reads(tmp_path: Path, use_model: Path) -> None:
    root = tmp_path / "memory"
    made = carryd("init", str(root), "--workspace", "shop")
    assert made.returncode == 0, made.stderr
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "carryd" / "config.toml"
    assert f"wrote   {config}" in made.stdout
    assert f'root = "{root}"' in config.read_text()
    assert f'model_path = "{use_model}"' in config.read_text()  # from CARRYD_MODEL_PATH
    # The config names the root: no --root from here on.
    assert carryd("index").returncode == 0
    carry = carryd("carry")
    assert carry.returncode == 0, carry.stderr
    manifest = json.loads((root / ".carryd" / "carry" / "shop.json").read_text())
    assert manifest["fallback"] is False
    assert manifest["unrecognised_sections"] == []  # every skeleton heading is one carryd reads
    text = (root / ".carryd" / "carry" / "shop.md").read_text()
    assert "What is true of the work now" in text  # the plan's current state
    assert "The next step." in text  # the ledger's next steps


def test_init_never_changes_a_file_that_exists(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    (root / "my-project").mkdir(parents=True)
    (root / "my-project" / "PLAN.md").write_text("# My own plan\n")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "carryd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('root = "/elsewhere"\n')
    made = carryd("init", str(root))
    assert made.returncode == 0, made.stderr
    assert (root / "my-project" / "PLAN.md").read_text() == "# My own plan\n"
    assert config.read_text() == 'root = "/elsewhere"\n'
    assert f"kept    {config} (exists; left as it is)" in made.stdout
    assert (root / "my-project" / "handoff" / "LEDGER.md").is_file()


def lines_of(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """`carryd doctor`'s lines as {what: verdict}."""
    found = {}
    for line in result.stdout.splitlines():
        verdict, _, rest = line.partition("  ")
        found[rest.strip().split(":")[0]] = verdict.strip()
    return found


def test_doctor_checks_a_setup_one_line_each(tmp_path: Path, use_model: Path) -> None:
    root = tmp_path / "memory"
    assert carryd("init", str(root)).returncode == 0
    fresh = carryd("doctor")
    assert fresh.returncode == 0, fresh.stdout
    verdicts = lines_of(fresh)
    assert verdicts["root"] == "ok" and verdicts["model"] == "ok"
    assert verdicts["index"] == "warn" and "`carryd index --root" in fresh.stdout
    assert verdicts["hooks claude-code"] == "warn" and verdicts["service"] == "warn"
    assert carryd("index").returncode == 0
    assert carryd("setup", "claude-code").returncode == 0
    ready = carryd("doctor")
    assert ready.returncode == 0, ready.stdout
    assert lines_of(ready)["index"] == "ok" and lines_of(ready)["hooks claude-code"] == "ok"
    # The hooks name another root: a FAIL that says how to point them here.
    other = tmp_path / "other"
    (other / "ws").mkdir(parents=True)
    (other / "ws" / "a.md").write_text("# A\n")
    assert carryd("setup", "claude-code", "--root", str(other)).returncode == 0
    wrong = carryd("doctor")
    assert wrong.returncode == 1, wrong.stdout
    assert lines_of(wrong)["hooks claude-code"] == "FAIL"
    assert f"the hooks name root {other}" in wrong.stdout


def test_doctor_fails_without_a_model(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    assert carryd("init", str(root), "--model-path", str(tmp_path)).returncode == 0
    result = carryd("doctor")
    assert result.returncode == 1, result.stdout
    assert lines_of(result)["model"] == "FAIL"
    assert lines_of(result)["root"] == "ok"


def test_doctor_reads_the_headings_of_every_workspace_never_carried_too(
    tmp_path: Path, use_model: Path
) -> None:
    """The heading check read the carries' manifests, so a workspace that was never carried
    (no daemon yet, no `carryd carry`) was not checked at all."""
    root = tmp_path / "memory"
    assert carryd("init", str(root)).returncode == 0
    ledger = root / "billing" / "handoff" / "LEDGER.md"
    ledger.parent.mkdir(parents=True)
    ledger.write_text(
        "# Handoff ledger\n\n## Goal\n- ship invoices\n\n## Entscheidungen\n- keep cents\n",
        encoding="utf-8",
    )
    (root / "planning").mkdir()
    (root / "planning" / "PLAN.md").write_text(
        "# Plan\n\n## Now\n- step 2\n\n## Log\n- 2026-11-01: began\n- 2026-11-03: step 1\n"
        "- 2026-11-05: step 2\n",
        encoding="utf-8",
    )
    (root / "plain").mkdir()
    (root / "plain" / "notes.md").write_text("# Notes\n\nNothing to hand off.\n")
    assert not list(root.glob(".carryd/carry/*.json"))  # nothing was ever carried
    result = carryd("doctor")
    verdicts = lines_of(result)
    assert verdicts["headings billing"] == "warn", result.stdout
    assert "the ledger's 'Entscheidungen' is not a section carryd knows" in result.stdout
    assert verdicts["headings planning"] == "ok"
    assert "headings planning: PLAN.md: current state and 3 history entries" in result.stdout
    assert "headings plain" not in verdicts  # neither a plan nor a ledger: nothing to read
    assert result.returncode == 0, result.stdout  # a warn is not a failure
