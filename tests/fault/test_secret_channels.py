"""The secret corpus in every channel: nothing of any secret reaches the carry, its manifest,
the SessionStart hook's answer, `recall --json`, `expand`, or the index file itself.

One memory root holds the whole corpus three times over: in notes (one entry per secret, so
recall and expand see it), in each workspace's ledger (the carry and the hook inline it) and
in its PLAN.md's current state. The real CLI runs on it with the real offline model.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.fault.conftest import carryd
from tests.secret_corpus import CORPUS, Case, leaks

PER_WORKSPACE = 12
WORKSPACES = [
    (f"vault{number:02d}", CORPUS[start : start + PER_WORKSPACE])
    for number, start in enumerate(range(0, len(CORPUS), PER_WORKSPACE))
]


def _item(case: Case) -> str:
    lines = case.text.split("\n")
    return "\n".join([f"- ❌ case {case.id}: {lines[0]}", *("  " + line for line in lines[1:])])


def make_root(root: Path) -> None:
    for workspace, cases in WORKSPACES:
        folder = root / workspace
        (folder / "handoff").mkdir(parents=True)
        notes = [f"# Notes of {workspace}\n"]
        for case in cases:
            notes.append(f"## {case.label} (case {case.id})\n\n{case.text}\n")
        (folder / "notes.md").write_text("\n".join(notes), encoding="utf-8")
        ledger = [
            "# Handoff ledger\n",
            "## Task status\n- rotating every credential listed below\n",
            "## Goal\nRevoke the leaked credentials and move them to the vault.\n",
            "## Tried approaches and failure reasons",
            *(_item(case) for case in cases),
            "\n## Progress and next steps\n- [ ] rotate the rest\n",
        ]
        (folder / "handoff" / "LEDGER.md").write_text("\n".join(ledger), encoding="utf-8")
        plan = ["# Plan\n", "## Current state"]
        plan += [f"\n### {case.id}\n\n{case.text}" for case in cases]
        (folder / "PLAN.md").write_text("\n".join(plan) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def channels(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> dict[str, str]:
    """Every output channel's text, produced once by the real CLI on the corpus root."""
    root = tmp_path_factory.mktemp("corpus-root")
    make_root(root)
    env = {"CARRYD_MODEL_PATH": str(model_dir)}
    out: dict[str, str] = {}

    def run(name: str, *args: str, stdin: str | None = None) -> str:
        result = carryd(*args, "--root", str(root), stdin=stdin, env=env)
        assert result.returncode == 0, f"{name}: {result.stderr}"
        out[name] = result.stdout + result.stderr
        return result.stdout

    indexed = json.loads(run("index", "index", "--json"))
    assert indexed["entries"] >= len(CORPUS) and indexed["degraded"] is None
    run("carry", "carry")
    for workspace, _ in WORKSPACES:
        hook_input = json.dumps(
            {
                "session_id": "s",
                "cwd": str(root / workspace),
                "source": "clear",
                "hook_event_name": "SessionStart",
            }
        )
        run(f"hook:{workspace}", "hook", "claude-code", "session-start", stdin=hook_input)
    queries = root.parent / "queries.jsonl"
    queries.write_text(
        "\n".join(json.dumps({"query": case.label}) for case in CORPUS) + "\n", encoding="utf-8"
    )
    run(
        "recall",
        "recall",
        "--batch",
        str(queries),
        "--json",
        "--min-confidence",
        "0",
        "--limit",
        "50",
    )
    run("recall-text", "recall", "password token key secret", "--min-confidence", "0")
    state = root / ".carryd"
    with sqlite3.connect(state / "index.sqlite") as connection:
        ids = [row[0] for row in connection.execute("SELECT id FROM entries")]
    run("expand", "expand", "--json", *ids)
    run("expand-text", "expand", *ids)
    for path in sorted((state / "carry").iterdir()):
        out[f"file:{path.name}"] = path.read_text(encoding="utf-8")
    for path in sorted(state.glob("index.sqlite*")):
        out[f"index:{path.name}"] = path.read_bytes().decode("latin-1")
    return out


def test_every_channel_was_exercised(channels: dict[str, str]) -> None:
    """The corpus really went through each channel (redacted), not around it."""
    for workspace, cases in WORKSPACES:
        carry = channels[f"file:{workspace}.md"]
        hook = json.loads(channels[f"hook:{workspace}"])
        context = hook["hookSpecificOutput"]["additionalContext"]
        for case in cases:
            assert f"case {case.id}" in carry, (workspace, case.id)
            assert f"case {case.id}" in context, (workspace, case.id)
    answers = [json.loads(line) for line in channels["recall"].splitlines() if line.strip()]
    assert len(answers) == len(CORPUS) and all(answer["hits"] for answer in answers)
    expanded = channels["expand"]
    assert expanded.count("[redacted:") >= len(CORPUS)


@pytest.fixture(scope="module")
def everything(channels: dict[str, str]) -> str:
    """Every channel in one lowercased text: one scan per secret instead of one per channel."""
    return "\0".join(text.lower() for text in channels.values())


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_no_secret_survives_in_any_channel(
    case: Case, channels: dict[str, str], everything: str
) -> None:
    if all(leaks(secret, everything) is None for secret in case.secrets):
        return
    found = {
        name: piece
        for name, text in channels.items()
        for secret in case.secrets
        if (piece := leaks(secret, text)) is not None
    }
    assert found == {}
