"""The real Gemini CLI, set up with `carryd setup gemini`: what reaches the model.

Assertions are on the streamGenerateContent requests `gemini -p` really sent the fake API. Gemini
CLI wraps hook context in `<hook_context>` and escapes `<` and `>` inside it, so the carry is
checked line by line where it has no angle bracket, and separately for escapes.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.hosts.fake_api import Request, ToolCall
from tests.hosts.gemini import (
    carried,
    function_responses,
    gemini,
    hook_context,
    write_settings,
)
from tests.hosts.sandbox import Sandbox

WINDOW = 1_048_576  # gemini-2.5-flash's input window, as Gemini CLI knows it
# With model.compressionThreshold 0.9, Gemini CLI compresses at ~944k tokens: 850k is above
# 0.75 of that (and of the window) and below it.
LATE_COMPRESSION = 0.9
NEAR_HANDOFF = 850_000
QUIET = 1_000
QUESTION = "how often do refund webhooks retry"


@pytest.fixture
def gemini_box(box: Sandbox) -> Sandbox:
    write_settings(box, compressionThreshold=LATE_COMPRESSION)
    box.setup("gemini")
    return box


def test_the_carry_reaches_the_model_after_startup_and_resume(gemini_box: Sandbox) -> None:
    box = gemini_box
    _, requests = gemini(box, "hello")
    assert requests, "Gemini CLI sent the model nothing"
    assert carried(box.carry(), box, requests[0]), hook_context(requests[0])[:3000]
    carry = box.new_ledger_item("checked the carry after resume")
    _, requests = gemini(box, "go on", resume=True)
    assert requests and carried(carry, box, requests[0]), hook_context(requests[0])[:3000]


def test_the_model_reads_no_escaped_angle_brackets(gemini_box: Sandbox) -> None:
    box = gemini_box
    _, requests = gemini(box, "hello")
    assert requests and "Full carry:" in hook_context(requests[0])
    assert "&lt;" not in requests[0].text and "&gt;" not in requests[0].text


def notes_this_turn(box: Sandbox, request: Request) -> int:
    """How many hand-off notes the request's new turn holds (Gemini CLI keeps hook context out
    of the history it resends): each names the ledger by its absolute path."""
    turn = (request.body or {}).get("contents", [])[-1:]
    return Request("POST", request.path, {}, turn).text.count(str(box.ledger))


def test_the_prompt_note_comes_once_per_crossing(gemini_box: Sandbox) -> None:
    box = gemini_box
    assert str(box.ledger) not in box.carry()
    seen = []
    # BeforeAgent judges by the chat file's last token count: the answer before the prompt.
    # Once per crossing: the note in the turn after the crossing, none in the next.
    for step, (usage, prompt) in enumerate(
        [(NEAR_HANDOFF, "one"), (NEAR_HANDOFF, "two"), (NEAR_HANDOFF, "three")]
    ):
        box.api.input_tokens = usage
        _, requests = gemini(box, prompt, resume=step > 0)
        assert requests, f"no request for {prompt!r}"
        seen.append(notes_this_turn(box, requests[-1]))
    assert seen == [0, 1, 0]


def test_the_note_comes_before_geminis_own_compression(box: Sandbox) -> None:
    write_settings(box)  # the default compression threshold
    box.setup("gemini")
    box.api.input_tokens = 450_000  # 0.86 of the compression point, 0.43 of the window
    gemini(box, "one")
    _, requests = gemini(box, "two", resume=True)
    assert notes_this_turn(box, requests[-1]) == 1


def test_no_compression_notice_on_a_turn_far_below_the_threshold(gemini_box: Sandbox) -> None:
    box = gemini_box
    box.api.input_tokens = QUIET
    done, requests = gemini(box, "hello")
    assert requests
    notices = [line for line in done.stderr.splitlines() if "carryd" in line]
    assert notices == []


def test_a_setup_problem_reaches_the_person_not_the_model(gemini_box: Sandbox) -> None:
    box = gemini_box
    shutil.rmtree(box.root)
    done, requests = gemini(box, "hello")
    assert requests
    for request in box.api.main_requests():
        assert "carryd" not in request.text.lower()
        assert str(box.root) not in request.text
    told = [line for line in done.stderr.splitlines() if line.startswith("Hook system message")]
    assert any("carryd" in line and str(box.root) in line for line in told), done.stderr[-2000:]


def test_the_mcp_recall_tool_answers_from_the_memory(box: Sandbox) -> None:
    write_settings(box, mcp=True, compressionThreshold=LATE_COMPRESSION)
    box.setup("gemini")
    box.api.script = [ToolCall("mcp_carryd_recall", {"query": QUESTION})]
    _, requests = gemini(box, "How often do refund webhooks retry?")
    offered = {
        declaration["name"]
        for tool in requests[0].body["tools"]
        for declaration in tool.get("functionDeclarations", [])
    }
    assert {f"mcp_carryd_{name}" for name in ("recall", "expand", "carry", "status")} <= offered
    output = function_responses(requests[-1])["mcp_carryd_recall"]
    # Gemini CLI wraps a tool's output (in <untrusted_context>); the answer is the JSON inside.
    answer = json.loads(output[output.index("{") : output.rindex("}") + 1])
    top = answer["hits"][0]
    assert top["path"] == "shop/stripe.md" and "retry three times" in top["l0"]


def test_a_turn_of_tool_calls_gets_the_note_without_a_prompt(gemini_box: Sandbox) -> None:
    box = gemini_box
    box.api.input_tokens = NEAR_HANDOFF
    box.api.script = [ToolCall("list_directory", {"dir_path": str(box.project)})] * 2
    _, requests = gemini(box, "look around the project")
    # One prompt, three model calls: from the request after the first tool step (AfterTool) on,
    # the note is in the turn, once.
    assert [r.text.count(str(box.ledger)) for r in requests] == [0, 1, 1]
