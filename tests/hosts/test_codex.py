"""The real Codex CLI, set up with `carryd setup codex`: what reaches the model.

Assertions are on the Responses requests `codex exec` really sent the fake API: the carry whole
after startup and resume (and after Codex's own compaction), the hand-off note once per
crossing, no empty developer message, nothing from carryd when the setup is broken.
"""

from __future__ import annotations

import shutil

import pytest

from tests.hosts.codex import codex_env, codex_exec, developer_texts, write_config
from tests.hosts.fake_api import ToolCall
from tests.hosts.sandbox import Sandbox, carried_whole, host_bin

# Above 0.75 of Codex's compaction point (model_auto_compact_token_limit, 180k) and below it.
NEAR_HANDOFF = 160_000
QUIET = 1_000
PAST_COMPACTION = 190_000


@pytest.fixture
def codex(box: Sandbox) -> Sandbox:
    box.setup("codex")
    write_config(box)
    return box


def note_count(box: Sandbox, text: str) -> int:
    """How many hand-off notes a request holds: each names the ledger by its absolute path."""
    return text.count(str(box.ledger))


@pytest.mark.parametrize("source", ["startup", "resume"])
def test_the_carry_reaches_the_model_whole_after_each_source(codex: Sandbox, source: str) -> None:
    box = codex
    _, _, requests = codex_exec(box, "hello")
    if source == "resume":
        carry = box.new_ledger_item("checked the carry after resume")
        _, _, requests = codex_exec(box, "go on", resume=True)
    else:
        carry = box.carry()
    assert requests, "Codex sent the model nothing"
    assert carried_whole(carry, box.carry_path, requests[0].text)
    # The carry is a developer message of its own, exactly the hook's text.
    assert any(t.startswith(carry.rstrip("\n")) for t in developer_texts(requests[0]))


def test_no_empty_developer_message_reaches_the_model(codex: Sandbox) -> None:
    box = codex
    codex_exec(box, "hello")
    codex_exec(box, "go on", resume=True)
    for request in box.api.main_requests():
        assert "" not in developer_texts(request)


def test_the_prompt_note_comes_once_per_crossing(codex: Sandbox) -> None:
    box = codex
    assert str(box.ledger) not in box.carry()
    seen = []
    # The note comes at the crossing itself: when the answer that crossed has stopped, the
    # Stop hook gives it as the follow-up prompt and the model goes on (one more request).
    for step, (usage, prompt) in enumerate([
        (QUIET, "one"),
        (NEAR_HANDOFF, "two"),  # answered near the hand-off point: crossed, the note
        (NEAR_HANDOFF, "three"),  # still above: no second note
        (QUIET, "four"),  # below again: re-armed
        (QUIET, "five"),
        (NEAR_HANDOFF, "six"),  # crossed again: the note again
        (NEAR_HANDOFF, "seven"),
    ]):  # fmt: skip
        box.api.input_tokens = usage
        _, _, requests = codex_exec(box, prompt, resume=step > 0)
        assert requests, f"no request for {prompt!r}"
        seen.append((len(requests), note_count(box, requests[-1].text)))
    # (requests for the prompt, notes in the history of its last request)
    assert seen == [(1, 0), (2, 1), (1, 1), (1, 1), (1, 1), (2, 2), (1, 2)]


def test_after_codex_compacts_mid_turn_the_fresh_context_starts_on_the_carry(
    codex: Sandbox,
) -> None:
    box = codex
    # One turn, no prompt between its steps: the model writes its ledger with a tool call,
    # the answer reports usage past model_auto_compact_token_limit, Codex compacts, samples on.
    marker = "wrote the hand-off before the compaction"
    box.api.input_tokens = PAST_COMPACTION
    box.api.script = [ToolCall("exec_command", {"cmd": f"echo '- {marker}' >> {box.ledger}"})]
    argv = [str(host_bin("codex")), "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust", "-s", "danger-full-access",
            "fix the refunds"]  # fmt: skip
    done = box.run(argv, env=codex_env(box))
    assert done.returncode == 0, done.stderr[-3000:]
    assert marker in box.ledger.read_text(encoding="utf-8")
    summaries = [r for r in box.api.all_requests() if "CONTEXT CHECKPOINT COMPACTION" in r.text]
    assert summaries, "Codex did not compact"
    after = box.api.main_requests()[-1]
    assert "CONTEXT CHECKPOINT COMPACTION" not in after.text
    assert carried_whole(box.carry(), box.carry_path, after.text)
    assert marker in after.text


def test_a_setup_problem_never_reaches_the_model(codex: Sandbox) -> None:
    # `codex exec` shows a hook's systemMessage nowhere (its TUI does), so only the model's
    # side is seen here; test_claude_code checks that the person is told.
    box = codex
    shutil.rmtree(box.root)
    _, _, requests = codex_exec(box, "hello")
    codex_exec(box, "and again", resume=True)
    assert requests
    for request in box.api.main_requests():
        assert "carryd" not in request.text.lower()
        assert str(box.root) not in request.text


def test_a_turn_of_tool_calls_gets_the_note_without_a_prompt(codex: Sandbox) -> None:
    box = codex
    box.api.input_tokens = NEAR_HANDOFF
    box.api.script = [ToolCall("exec_command", {"cmd": "true"})] * 3
    _, _, requests = codex_exec(box, "work through the refund fix")
    # One prompt; within its tool steps (PostToolUse) the note comes, once. Seen: from the
    # request after the second step on ([0, 0, 1, 1]), one step later than Claude Code and
    # Gemini CLI (likely the first step's usage is not in the rollout yet; not established).
    counts = [note_count(box, request.text) for request in requests]
    assert len(requests) == 4 and counts[0] == 0 and counts[-1] == 1
    assert counts == sorted(counts)  # once there, it stays once: never a second note
