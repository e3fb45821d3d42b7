"""The secret corpus in every channel: nothing of any secret reaches the carry, its manifest,
the SessionStart hook's answer, `recall --json`, `expand`, or the index file itself.

One memory root holds the whole corpus three times over: in notes (one entry per secret, so
recall and expand see it), in each workspace's ledger (the carry and the hook inline it) and
in its PLAN.md's current state. The real CLI runs on it with the real offline model.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fault.conftest import carryd
from tests.secret_corpus import CORPUS, WINDOW, Case, leaks

PER_WORKSPACE = 12
HOOK_DRIVER = """
import io, json, sys
from carryd.daemon.cli.dispatch import main
answers = {}
for workspace, payload in json.loads(sys.stdin.read()).items():
    stdin, stdout = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(payload.encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    try:
        code = main(["hook", "claude-code", "session-start", "--root", sys.argv[1]])
        sys.stdout.flush()
        answer = sys.stdout.buffer.getvalue().decode("utf-8")
    finally:
        sys.stdin, sys.stdout = stdin, stdout
    answers[workspace] = [code, answer]
print(json.dumps(answers))
"""
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

    def run(name: str, *args: str, stdin: str | None = None, script: str | None = None) -> str:
        if script is None:
            result = carryd(*args, "--root", str(root), stdin=stdin, env=env)
        else:
            result = subprocess.run(
                [sys.executable, "-c", script, str(root)],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, **env},
            )
        assert result.returncode == 0, f"{name}: {result.stderr}"
        out[name] = result.stdout + result.stderr
        return result.stdout

    indexed = json.loads(run("index", "index", "--json"))
    assert indexed["entries"] >= len(CORPUS) and indexed["degraded"] is None
    run("carry", "carry")
    # The SessionStart hook of every workspace, through `carryd.daemon.cli.main` in one
    # process (one interpreter start instead of one per workspace).
    hook_inputs = {
        workspace: json.dumps(
            {
                "session_id": "s",
                "cwd": str(root / workspace),
                "source": "clear",
                "hook_event_name": "SessionStart",
            }
        )
        for workspace, _ in WORKSPACES
    }
    answers = json.loads(run("hooks", "-", stdin=json.dumps(hook_inputs), script=HOOK_DRIVER))
    for workspace, (code, answer) in answers.items():
        assert code == 0, workspace
        out[f"hook:{workspace}"] = answer
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
        # The text inside the file (runs of printable bytes; vectors are binary floats).
        text = path.read_bytes().decode("latin-1")
        out[f"index:{path.name}"] = "\0".join(re.findall(r"[\x20-\x7e\x80-\xff]{4,}", text))
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
def suspects(channels: dict[str, str]) -> set[str]:
    """The ids of the cases a piece of which shows up in some channel: one pass over every
    channel with all secrets' windows in a dict (a scan per window and channel took 15 s)."""
    windows: dict[str, set[str]] = {}
    suspected: set[str] = set()
    texts = [text.lower() for text in channels.values()]
    for case in CORPUS:
        for secret in case.secrets:
            needle = secret.lower()
            if len(needle) <= WINDOW:
                if any(needle in text for text in texts):
                    suspected.add(case.id)
                continue
            for start in range(len(needle) - WINDOW + 1):
                windows.setdefault(needle[start : start + WINDOW], set()).add(case.id)
    for text in texts:
        for start in range(len(text) - WINDOW + 1):
            ids = windows.get(text[start : start + WINDOW])
            if ids:
                suspected |= ids
    return suspected


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_no_secret_survives_in_any_channel(
    case: Case, channels: dict[str, str], suspects: set[str]
) -> None:
    if case.id not in suspects:
        return
    found = {
        name: piece
        for name, text in channels.items()
        for secret in case.secrets
        if (piece := leaks(secret, text)) is not None
    }
    assert found == {}
