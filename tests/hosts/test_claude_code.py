"""The real Claude Code, set up with `carryd setup claude-code`: what reaches the model.

Every assertion is on the requests Claude Code really sent the fake API: the carry whole after
each SessionStart source, the hand-off note once per crossing, nothing from carryd when the
setup is broken (the person is told instead).
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.hosts.claude import (
    ClaudeSession,
    claude_env,
    hook_outputs,
    tool_results,
    trust_project,
)
from tests.hosts.fake_api import ToolCall
from tests.hosts.sandbox import CARRYD, Sandbox, carried_whole, host_bin
from tests.hosts.terminal import Terminal

# Claude Code compacts at its auto-compact window less the room for an answer and a buffer
# (about 33k tokens); 200k pins the window so the usage the fake API reports means the same to
# Claude Code and to carryd, whatever the model's own window.
AUTO_COMPACT_WINDOW = 200_000
# Above 0.75 of the hand-off point (carryd's threshold) and below Claude Code's own compaction.
NEAR_HANDOFF = 160_000
QUIET = 1_000
QUESTION = "how often do refund webhooks retry"


@pytest.fixture
def claude(box: Sandbox) -> Sandbox:
    box.setup("claude-code")
    return box


@pytest.mark.parametrize("source", ["startup", "clear", "compact", "resume", "fork"])
def test_the_carry_reaches_the_model_whole_after_each_source(claude: Sandbox, source: str) -> None:
    box = claude
    with ClaudeSession(box) as session:
        events, requests = session.send("hello")
        assert [o["hookSpecificOutput"]["hookEventName"] for o in hook_outputs(events,
                "SessionStart")] == ["SessionStart"]  # fmt: skip
        if source == "startup":
            assert requests and carried_whole(box.carry(), box.carry_path, requests[0].text)
            return
        carry = box.new_ledger_item(f"checked the carry after {source}")
        if source in ("clear", "compact"):
            session.send(f"/{source}")
            _, requests = session.send("go on")
        else:
            session.close()
    if source in ("resume", "fork"):
        fork = ["--fork-session"] if source == "fork" else []
        with ClaudeSession(box, "--resume", session.session_id, *fork) as resumed:
            events, requests = resumed.send("go on")
        (started,) = [e for e in events if e.get("subtype") == "hook_started"
                      and e.get("hook_event") == "SessionStart"]  # fmt: skip
        assert started["hook_name"] == f"SessionStart:{source}"
    assert requests, "Claude Code sent the model nothing"
    assert carried_whole(carry, box.carry_path, requests[0].text), requests[0].text[:3000]


def note_count(box: Sandbox, text: str) -> int:
    """How many hand-off notes a request holds: each names the ledger by its absolute path,
    which nothing else the model reads does (the carry names it relative to the root)."""
    return text.count(str(box.ledger))


def test_the_prompt_note_comes_once_per_crossing(claude: Sandbox) -> None:
    box = claude
    env = claude_env(box, CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(AUTO_COMPACT_WINDOW))
    assert str(box.ledger) not in box.carry()
    seen = []
    with ClaudeSession(box, env=env) as session:
        # The note comes at the crossing itself: when the answer that crossed has stopped,
        # the Stop hook tells the model once and it goes on (one more request, no prompt).
        for usage, prompt in [
            (QUIET, "one"),
            (NEAR_HANDOFF, "two"),  # answered near the hand-off point: crossed, the note
            (NEAR_HANDOFF, "three"),  # still above: no second note
            (QUIET, "four"),  # below again: re-armed, nothing to say
            (QUIET, "five"),
            (NEAR_HANDOFF, "six"),  # crossed again: the note again
            (NEAR_HANDOFF, "seven"),
        ]:
            box.api.input_tokens = usage
            _, requests = session.send(prompt)
            assert requests, f"no request for {prompt!r}"
            seen.append((len(requests), note_count(box, requests[-1].text)))
    # (requests for the prompt, notes in the history of its last request)
    assert seen == [(1, 0), (2, 1), (1, 1), (1, 1), (1, 1), (2, 2), (1, 2)]
    # The person can see what the hooks judged by: the session's compaction point and its source.
    status = box.carryd("status", "--root", str(box.root), "--json", check=False)
    (point, *_) = json.loads(status.stdout)["hand_off_points"]
    assert point["host"] == "claude-code"
    assert 160_000 <= point["compacts"] <= 170_000  # the 200k auto-compact window less ~33k
    assert point["hand_off"] == pytest.approx(0.75 * point["compacts"], rel=0.01)


def test_a_setup_problem_reaches_the_person_not_the_model(claude: Sandbox) -> None:
    box = claude
    shutil.rmtree(box.root)  # set up, then the root went away
    with ClaudeSession(box) as session:
        events, requests = session.send("hello")
        session.send("and again")
    assert requests
    for request in box.api.main_requests():
        assert "carryd" not in request.text.lower()
        assert str(box.root) not in request.text
    (answer,) = hook_outputs(events, "SessionStart")
    assert "hookSpecificOutput" not in answer
    assert "carryd" in answer["systemMessage"] and str(box.root) in answer["systemMessage"]


def test_the_mcp_recall_tool_answers_from_the_memory(claude: Sandbox) -> None:
    box = claude
    # As docs/hosts.md says: `claude mcp add carryd -- carryd mcp --root ROOT`.
    added = box.run([str(host_bin("claude")), "mcp", "add", "carryd", "-s", "user", "--",
                     str(CARRYD), "mcp", "--root", str(box.root)], env=claude_env(box))  # fmt: skip
    assert added.returncode == 0, added.stderr
    box.api.script = [ToolCall("mcp__carryd__recall", {"query": QUESTION})]
    # The tools offered to the model directly (not behind Claude Code's tool search).
    env = claude_env(box, ENABLE_TOOL_SEARCH="false")
    with ClaudeSession(box, "--allowedTools", "mcp__carryd__recall", env=env) as session:
        events, requests = session.send("How often do refund webhooks retry?")
    (init, *_) = [e for e in events if e.get("subtype") == "init"]
    assert {"name": "carryd", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    offered = [tool["name"] for tool in requests[0].body["tools"]]
    assert {f"mcp__carryd__{name}" for name in ("recall", "expand", "carry", "status")} <= set(
        offered
    )
    (result,) = tool_results(requests[-1])
    answer = json.loads(result)
    top = answer["hits"][0]
    assert top["path"] == "shop/stripe.md" and "retry three times" in top["l0"]


def test_the_status_line_shows_the_context_and_the_hand_off(claude: Sandbox) -> None:
    box = claude
    trust_project(box)
    # Claude Code's default model has a 1M window: it compacts at ~967k (seen: at 975k it did,
    # at 900k not); the hand-off point is below that.
    terminal = Terminal([str(host_bin("claude"))], env=claude_env(box, TERM="xterm-256color"),
                        cwd=box.project)  # fmt: skip
    # The screen is drawn by differences: after the first frame only what changed is printed,
    # so the patterns are the parts that change (the percentage and what follows it, the hint).
    try:
        assert terminal.wait_for(r"ctx \? \| carry fresh \(shop\)", 60), terminal.screen()[-2000:]
        for usage, shown in [(160_000, r"16%[^\n]*carry fresh \(shop\)"),
                             (800_000, r"fresh carry ready: /clear to hand off")]:  # fmt: skip
            box.api.input_tokens = usage
            terminal.type("go on")
            terminal.read(0.5)
            terminal.type("\r")
            assert terminal.wait_for(shown, 60), terminal.screen()[-2000:]
            if usage < 725_000:  # below the hand-off point: no hint yet
                assert "/clear to hand off" not in terminal.screen()
    finally:
        terminal.close()


# --- the write side without a person: PostToolUse, Stop, PreCompact and the relay ------------

PAST_COMPACTION = 170_000  # past ~167k, where Claude Code compacts a 200k auto-compact window
CONTINUED = "This session is being continued from a previous conversation"


def compactions(events: list[dict[str, Any]]) -> list[str]:
    """Given a run's events, return the trigger of each compaction Claude Code made."""
    return [
        str(event["compact_metadata"]["trigger"])
        for event in events
        if event.get("subtype") == "compact_boundary"
    ]


def test_a_long_turn_of_tool_calls_gets_the_note_without_a_prompt(claude: Sandbox) -> None:
    box = claude
    env = claude_env(box, CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(AUTO_COMPACT_WINDOW))
    box.api.input_tokens = NEAR_HANDOFF
    box.api.script = [ToolCall("Bash", {"command": "true", "description": "a step"})] * 3
    with ClaudeSession(box, "--allowedTools", "Bash", env=env) as session:
        _, requests = session.send("work through the refund fix")
    # One prompt, four model calls: after the first tool step the note is there, once.
    assert [note_count(box, request.text) for request in requests] == [0, 1, 1, 1]


def test_after_the_note_and_the_ledger_the_auto_compaction_relays_to_the_carry(
    claude: Sandbox,
) -> None:
    box = claude
    env = claude_env(box, CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(AUTO_COMPACT_WINDOW))
    marker = "wrote the hand-off before the compaction"
    with ClaudeSession(box, "--allowedTools", "Bash", env=env) as session:
        box.api.input_tokens = NEAR_HANDOFF
        _, requests = session.send("fix the refunds")
        assert note_count(box, requests[-1].text) == 1
        # The model writes its ledger; the usage passes Claude Code's compaction point.
        command = f"echo '- {marker}' >> {box.ledger}"
        box.api.script = [ToolCall("Bash", {"command": command, "description": "the ledger"})]
        box.api.input_tokens = PAST_COMPACTION
        events, requests = session.send("go on")
    assert compactions(events) == ["auto"]  # not blocked: the ledger was written since the note
    after = requests[-1]
    assert CONTINUED in after.text
    carry = box.carry()
    assert marker in carry
    assert carried_whole(carry, box.carry_path, after.text)


def test_pre_compact_blocks_one_auto_compaction_while_the_ledger_is_unwritten(
    claude: Sandbox,
) -> None:
    box = claude
    env = claude_env(box, CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(AUTO_COMPACT_WINDOW))
    with ClaudeSession(box, env=env) as session:
        box.api.input_tokens = NEAR_HANDOFF
        session.send("first prompt of the conversation")  # crossed: the note
        box.api.input_tokens = PAST_COMPACTION
        session.send("two")
        blocked, requests = session.send("three")  # Claude Code would compact: blocked once
        # Claude Code set out to compact (its status said so) and PreCompact stopped it.
        assert any(event.get("status") == "compacting" for event in blocked)
        assert compactions(blocked) == []
        assert "first prompt of the conversation" in requests[-1].text
        assert CONTINUED not in requests[-1].text
        relayed, requests = session.send("four")  # the next one goes ahead
    assert compactions(relayed) == ["auto"]
    assert CONTINUED in requests[-1].text
    assert carried_whole(box.carry(), box.carry_path, requests[-1].text)
