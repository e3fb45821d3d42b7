"""Every host's hooks with the hosts' documented stdin shapes: the write-side trigger once per
crossing of the threshold (from the status line's record or the transcript), setup problems
told to the person and never the model, answers every host's validator takes, Gemini CLI's
SessionStart carrying the carry, workspaces found from a git work tree's subfolders, and the
user's own status line kept first."""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
import time
from pathlib import Path, PurePath
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.hosts import claude_code as host_claude_code
from carryd.daemon.hosts import codex as host_codex
from carryd.daemon.hosts import gemini as host_gemini
from carryd.daemon.hosts.handoff_trigger import SessionMark, decide
from carryd.daemon.hosts.registry import HOSTS
from carryd.daemon.hosts.workspace_lookup import workspace_candidates

SESSION = "5f1c2b9e-7a44-4d0b-8c1e-3f2a9b7c6d10"
LEDGER_SECTIONS = (
    "Task status",
    "Goal",
    "Tried approaches and failure reasons",
    "Progress and next steps",
)


# --- the hosts' documented stdin shapes -----------------------------------------------------


def claude_prompt(cwd: str, transcript: str = "/nonexistent/t.jsonl", **extra: Any) -> str:
    """Claude Code's UserPromptSubmit input (hooks reference: common fields + prompt)."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": transcript,
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "now fix the refund test",
            **extra,
        }
    )


def claude_status(cwd: str, percent: float) -> str:
    """Claude Code's statusLine input (statusline reference)."""
    return json.dumps(
        {
            "hook_event_name": "Status",
            "session_id": SESSION,
            "transcript_path": "/nonexistent/t.jsonl",
            "cwd": cwd,
            "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
            "workspace": {"current_dir": cwd, "project_dir": cwd},
            "cost": {"total_cost_usd": 0.42, "total_duration_ms": 120000},
            "context_window": {"context_window_size": 200000, "used_percentage": percent},
        }
    )


def gemini_input(event: str, cwd: str, transcript: str = "/nonexistent/chat.json", **extra: Any):
    """Gemini CLI's hook input (hooks reference: base fields + the event's own)."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": transcript,
            "cwd": cwd,
            "hook_event_name": event,
            "timestamp": "2026-11-30T16:20:00.000Z",
            **extra,
        }
    )


def codex_input(event: str, cwd: str, transcript: str | None = None, **extra: Any) -> str:
    """Codex CLI's hook input (same wire format as Claude Code, plus model and turn ids)."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": transcript,
            "cwd": cwd,
            "hook_event_name": event,
            "model": "gpt-5-codex",
            **extra,
        }
    )


def run(
    host: str,
    event: str,
    stdin: str,
    *args: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["hook", host, event, *args])
    return code, capsys.readouterr().out


def answer(out: str) -> dict[str, Any]:
    """The JSON answer; no output at all (Codex's "nothing") reads as {}."""
    if out == "\n":
        return {}
    value = json.loads(out)
    assert isinstance(value, dict)
    return value


def context_of(out: str, event_name: str) -> str | None:
    value = answer(out)
    specific = value.get("hookSpecificOutput")
    if specific is None:
        return None
    assert specific["hookEventName"] == event_name
    return str(specific["additionalContext"]) or None


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / "shop" / "handoff").mkdir(parents=True)
    return memory


# --- pure: the trigger decision -------------------------------------------------------------


def test_the_instruction_comes_once_per_crossing() -> None:
    mark = SessionMark()
    seen = []
    for fraction in (0.40, 0.7499, 0.75, 0.80, 0.90, 0.30, 0.76, 0.77, None):
        decision = decide(fraction, "statusline", mark, 0.75)
        seen.append((decision.instruct, decision.reason))
        mark = decision.mark
    assert seen == [
        (False, "below_threshold"),
        (False, "below_threshold"),
        (True, "crossed"),  # exactly at the threshold
        (False, "already_told"),
        (False, "already_told"),
        (False, "below_threshold"),  # the host compacted: re-armed
        (True, "crossed"),
        (False, "already_told"),
        (False, "usage_unknown"),
    ]
    assert SessionMark.from_json(mark.to_json()) == mark
    assert SessionMark.from_json("garbage") == SessionMark()


def claude_line(kind: str, usage: dict[str, int] | None, sidechain: bool = False) -> str:
    message: dict[str, Any] = {"role": kind, "content": "…"}
    if usage is not None:
        message["usage"] = usage
    return json.dumps({"type": kind, "isSidechain": sidechain, "message": message})


def test_claude_code_usage_is_the_last_main_chain_assistant_message() -> None:
    lines = [
        '"cut": "the first line of a tail is usually half a record"}',
        claude_line("assistant", {"input_tokens": 10, "cache_read_input_tokens": 1000}),
        claude_line(
            "assistant",
            {
                "input_tokens": 6,
                "cache_creation_input_tokens": 4000,
                "cache_read_input_tokens": 150000,
            },
        ),
        claude_line("assistant", {"input_tokens": 900}, sidechain=True),  # a subagent's
        claude_line("assistant", {"input_tokens": 0, "output_tokens": 0}),  # synthetic
        claude_line("user", None),
    ]
    usage = host_claude_code.transcript_usage("\n".join(lines))
    assert usage is not None and usage.tokens == 154006 and usage.compacted_at is None
    assert host_claude_code.transcript_usage("not json\n[]\n") is None


def test_claude_code_usage_after_an_automatic_compaction_is_its_boundary() -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "compactMetadata": {"trigger": "auto", "preTokens": 431000},
    }
    before = claude_line("assistant", {"input_tokens": 430000})
    usage = host_claude_code.transcript_usage("\n".join([before, json.dumps(boundary)]))
    assert usage is not None and (usage.tokens, usage.compacted_at) == (0, 431000)
    after = claude_line("assistant", {"input_tokens": 52000})
    usage = host_claude_code.transcript_usage("\n".join([before, json.dumps(boundary), after]))
    assert usage is not None and (usage.tokens, usage.compacted_at) == (52000, 431000)


def test_codex_usage_is_the_last_token_count_over_its_window() -> None:
    def count(total: int) -> str:
        info = {"last_token_usage": {"total_tokens": total}, "model_context_window": 272000}
        return json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": info}})

    rollout = "\n".join([count(10000), count(204000), json.dumps({"type": "response_item"})])
    usage = host_codex.transcript_usage(rollout)
    assert usage is not None and (usage.tokens, usage.window) == (204000, 272000)
    assert host_codex.transcript_usage(json.dumps({"type": "event_msg", "payload": {}})) is None


def test_gemini_usage_is_the_last_recorded_prompt_tokens() -> None:
    chat = json.dumps(
        {
            "sessionId": SESSION,
            "messages": [
                {"type": "user", "content": "hi"},
                {"type": "gemini", "tokens": {"input": 1000, "output": 5, "total": 1005}},
                {"type": "gemini", "tokens": {"input": 838861, "output": 9, "total": 838870}},
            ],
        },
        indent=2,
    )
    usage = host_gemini.transcript_usage(chat)
    assert usage is not None and usage.tokens == 838861
    assert host_gemini.transcript_usage("{}") is None


# --- pure: answers and routing --------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "event", "expected"),
    [
        ("claude-code", "session-start", {}),
        ("claude-code", "prompt-submit", {}),
        ("claude-code", "post-tool-use", {}),
        ("claude-code", "stop", {}),
        ("claude-code", "pre-compact", {}),
        ("codex", "session-start", None),
        ("codex", "prompt-submit", None),
        ("codex", "post-tool-use", None),
        ("codex", "stop", None),
        ("gemini", "session-start", {}),
        ("gemini", "before-agent", {}),
        ("gemini", "after-tool", {}),
        ("gemini", "pre-compress", {}),
        ("gemini", "after-agent", {}),
    ],
)
def test_an_empty_answer_is_what_each_host_takes_for_nothing(
    host: str, event: str, expected: Any
) -> None:
    """Codex adds an empty additionalContext as an empty developer message: its "nothing" is
    no output at all; the others take {}."""
    import importlib

    events = importlib.import_module(HOSTS[host].module).EVENTS
    text = events[event].on_error(None)
    assert (json.loads(text) if text else None) == expected


def test_setup_problems_go_to_the_person_and_hand_off_text_to_the_model(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    stdin = codex_input("SessionStart", str(tmp_path / "nowhere"), source="startup")
    code, out = run("claude-code", "session-start", stdin, "--root", str(root), **kw)
    assert "hookSpecificOutput" not in answer(out)
    assert answer(out)["systemMessage"].startswith("carryd: no workspace 'nowhere'")
    # A carry that cannot be inlined is the model's business: it can read the path.
    from carryd.daemon.hosts.hook_events import PERSON_REASONS

    assert PERSON_REASONS == {"bad_input", "config_error", "unknown_workspace", "error"}


def test_workspace_candidates_walk_up_to_the_git_top_level_only() -> None:
    cwd = PurePath("/home/me/src/shop/backend/api")
    top = PurePath("/home/me/src/shop")
    assert workspace_candidates("api", cwd, top) == ("api", "backend", "shop")
    assert workspace_candidates("webshop", cwd, top)[0] == "webshop"  # the config's map first
    assert workspace_candidates("api", cwd, None) == ("api",)  # no work tree: no guessing


# --- the write-side trigger through the command line ------------------------------------------


def test_claude_code_notes_once_when_the_status_line_crosses_the_hand_off_point(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 200k model compacts at 167k (200k less 33k for the summary and buffer): the hand-off
    point is 75% of that, 125k, which the status line reports as 62.6% of the window."""
    cwd = str(root / "shop")
    at = ("--root", str(root))
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    said = []
    for percent in (40, 62, 63, 88, 20, 81):
        code, line = run("claude-code", "statusline", claude_status(cwd, percent), *at, **kw)
        assert code == 0 and line.count("\n") == 1
        assert "hand-off 125k, compacts ~167k (status line)" in line
        code, out = run("claude-code", "prompt-submit", claude_prompt(cwd), *at, **kw)
        assert code == 0
        said.append(context_of(out, "UserPromptSubmit"))
    assert [text is not None for text in said] == [False, False, True, False, False, True]
    text = said[2] or ""
    assert text.startswith("carryd: context 75% of this session's compaction point (~167k")
    assert str(root / "shop" / "handoff" / "LEDGER.md") in text
    assert str(root / "shop" / "PLAN.md") in text
    assert "/clear" in text and "hand-off point is 125k" in text
    # Facts, not orders: the how-to lives in the instruction paragraph.
    for order in ("Before you go on", "write the hand-off now", "ask them", "Then tell"):
        assert order not in text
    assert len(text) < 600
    # The state is carryd's own: owner-only, under the root's state folder.
    state = root / ".carryd"
    files = [state, state / "sessions", *(state / "sessions").iterdir()]
    assert len(files) > 2 and all(f.stat().st_mode & 0o077 == 0 for f in files)


def claude_transcript(path: Path, model: str, tokens: int) -> None:
    line = json.loads(claude_line("assistant", {"input_tokens": 5, "cache_read_input_tokens": 0}))
    line["message"]["model"] = model
    line["message"]["usage"]["cache_read_input_tokens"] = tokens - 5
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("model", "tokens", "noted"),
    [
        ("claude-opus-5-5", 160000, False),  # 16% of a 1M window: far from compaction
        ("claude-opus-5-5", 760000, True),  # past 75% of 967k
        ("claude-sonnet-4-5", 126000, True),  # a 200k model compacts at 167k
        ("claude-sonnet-4-5", 120000, False),
    ],
)
def test_without_a_status_line_the_transcript_and_the_models_window_tell_the_usage(
    model: str,
    tokens: int,
    noted: bool,
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, model, tokens)
    stdin = claude_prompt(str(root / "shop"), str(transcript))
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, out = run("claude-code", "prompt-submit", stdin, "--root", str(root), **kw)
    text = context_of(out, "UserPromptSubmit")
    assert (text is not None) is noted
    if noted:
        assert f"model {model}" in (text or "")
        code, out = run("claude-code", "prompt-submit", stdin, "--root", str(root), **kw)
        assert answer(out) == {}  # once


def test_the_auto_compact_window_in_the_settings_moves_the_hand_off_point(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`autoCompactWindow` 400k on a 1M model: Claude Code compacts at 367k, so 300k tokens
    is past the hand-off point (275k) though it is 30% of the window."""
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text('{"autoCompactWindow": 400000}')
    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, "claude-opus-5-5", 300000)
    stdin = claude_prompt(str(root / "shop"), str(transcript))
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, out = run("claude-code", "prompt-submit", stdin, "--root", str(root), **kw)
    text = context_of(out, "UserPromptSubmit") or ""
    assert "~367k tokens, autoCompactWindow in" in text and "hand-off point is 275k" in text


def test_a_long_autonomous_turn_is_noted_by_the_tool_and_stop_hooks(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No prompt in between: PostToolUse notes the crossing, once; Stop says nothing more in
    that crossing, and nothing at all while a stop hook already keeps the turn going."""
    transcript = tmp_path / "t.jsonl"
    cwd = str(root / "shop")
    at = ("--root", str(root))
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    tool = claude_prompt(cwd, str(transcript), hook_event_name="PostToolUse", tool_name="Bash")
    stop = claude_prompt(cwd, str(transcript), hook_event_name="Stop", stop_hook_active=False)
    said = []
    for tokens, event, stdin, name in [
        (100000, "post-tool-use", tool, "PostToolUse"),
        (130000, "post-tool-use", tool, "PostToolUse"),
        (140000, "post-tool-use", tool, "PostToolUse"),
        (150000, "stop", stop, "Stop"),
    ]:
        claude_transcript(transcript, "claude-sonnet-4-5", tokens)
        code, out = run("claude-code", event, stdin, *at, **kw)
        said.append(context_of(out, name))
    assert [text is not None for text in said] == [False, True, False, False]
    claude_transcript(transcript, "claude-sonnet-4-5", 30000)  # compacted: re-armed
    run("claude-code", "post-tool-use", tool, *at, **kw)
    claude_transcript(transcript, "claude-sonnet-4-5", 140000)
    looping = claude_prompt(cwd, str(transcript), hook_event_name="Stop", stop_hook_active=True)
    code, out = run("claude-code", "stop", looping, *at, **kw)
    assert answer(out) == {}
    code, out = run("claude-code", "stop", stop, *at, **kw)
    assert "Hand-off files:" in (context_of(out, "Stop") or "")


def test_pre_compact_holds_an_automatic_compaction_back_once_until_the_ledger_is_written(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    cwd = str(root / "shop")
    at = ("--root", str(root))
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    claude_transcript(transcript, "claude-sonnet-4-5", 150000)
    run("claude-code", "post-tool-use", claude_prompt(cwd, str(transcript)), *at, **kw)

    def compact(trigger: str) -> dict[str, Any]:
        stdin = claude_prompt(cwd, str(transcript), hook_event_name="PreCompact", trigger=trigger)
        code, out = run("claude-code", "pre-compact", stdin, *at, **kw)
        assert code == 0
        return answer(out)

    assert compact("manual") == {}  # the person asked for it
    held = compact("auto")
    assert (
        held["decision"] == "block"
        and str(root / "shop" / "handoff" / "LEDGER.md") in (held["reason"])
    )
    assert "were not written since" in held["reason"]
    assert compact("auto") == {}  # the next one goes ahead
    # A new crossing whose ledger is written before the compaction: nothing held back.
    claude_transcript(transcript, "claude-sonnet-4-5", 20000)
    run("claude-code", "post-tool-use", claude_prompt(cwd, str(transcript)), *at, **kw)
    claude_transcript(transcript, "claude-sonnet-4-5", 150000)
    run("claude-code", "post-tool-use", claude_prompt(cwd, str(transcript)), *at, **kw)
    ledger = root / "shop" / "handoff" / "LEDGER.md"
    ledger.write_text("# Ledger\n", encoding="utf-8")
    os.utime(ledger, (time.time() + 5, time.time() + 5))
    assert compact("auto") == {}


def test_gemini_before_agent_reads_its_chat_file_against_its_compression_point(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Gemini CLI compresses at 0.5 of its 1,048,576 limit: the hand-off point is 393k."""
    chat = tmp_path / "session-2026-11-30.json"
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    stdin = gemini_input("BeforeAgent", str(root / "shop"), str(chat), prompt="go on")
    chat.write_text(json.dumps({"messages": [{"tokens": {"input": 390000}}]}), encoding="utf-8")
    code, out = run("gemini", "before-agent", stdin, "--root", str(root), **kw)
    assert (code, answer(out)) == (0, {})
    chat.write_text(json.dumps({"messages": [{"tokens": {"input": 400000}}]}), encoding="utf-8")
    code, out = run("gemini", "before-agent", stdin, "--root", str(root), **kw)
    text = context_of(out, "BeforeAgent") or ""
    assert "~524k tokens, compressionThreshold default 0.5" in text
    assert "<" not in text and ">" not in text


def test_codex_prompt_submit_reads_its_rollout_and_says_nothing_as_no_output(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Codex compacts at 90% of its 272k window (244.8k); the hand-off point is 183.6k."""
    rollout = tmp_path / "rollout.jsonl"
    info = {"last_token_usage": {"total_tokens": 190000}, "model_context_window": 272000}
    event = {"type": "event_msg", "payload": {"type": "token_count", "info": info}}
    rollout.write_text(json.dumps(event) + "\n", encoding="utf-8")
    stdin = codex_input("UserPromptSubmit", str(root / "shop"), str(rollout), prompt="next")
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, out = run("codex", "prompt-submit", stdin, "--root", str(root), **kw)
    text = context_of(out, "UserPromptSubmit") or ""
    assert "/clear or /new" in text and "~245k tokens, 90% of the model's context window" in text
    code, out = run("codex", "prompt-submit", stdin, "--root", str(root), **kw)
    assert out == "\n"  # nothing: no output at all, never an empty additionalContext


def test_codex_stop_gives_the_note_as_the_follow_up_prompt(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rollout = tmp_path / "rollout.jsonl"
    info = {"last_token_usage": {"total_tokens": 200000}, "model_context_window": 272000}
    event = {"type": "event_msg", "payload": {"type": "token_count", "info": info}}
    rollout.write_text(json.dumps(event) + "\n", encoding="utf-8")
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    looping = codex_input("Stop", str(root / "shop"), str(rollout), stop_hook_active=True)
    assert run("codex", "stop", looping, "--root", str(root), **kw)[1] == "\n"
    stdin = codex_input("Stop", str(root / "shop"), str(rollout), stop_hook_active=False)
    code, out = run("codex", "stop", stdin, "--root", str(root), **kw)
    assert answer(out)["decision"] == "block" and "Hand-off files:" in answer(out)["reason"]


# --- quiet failures -------------------------------------------------------------------------


def high_usage_transcript(host: str, path: Path) -> None:
    """A transcript in the host's format whose usage is past its hand-off point."""
    if host == "claude-code":
        claude_transcript(path, "claude-sonnet-4-5", 150000)
    elif host == "codex":
        info = {"last_token_usage": {"total_tokens": 230000}, "model_context_window": 272000}
        event = {"type": "event_msg", "payload": {"type": "token_count", "info": info}}
        path.write_text(json.dumps(event) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps({"type": "gemini", "tokens": {"input": 600000}}) + "\n")


@pytest.mark.parametrize(
    ("host", "event", "name"),
    [
        ("claude-code", "prompt-submit", "UserPromptSubmit"),
        ("claude-code", "session-start", "SessionStart"),
        ("codex", "session-start", "SessionStart"),
        ("codex", "prompt-submit", "UserPromptSubmit"),
        ("gemini", "session-start", "SessionStart"),
        ("gemini", "before-agent", "BeforeAgent"),
    ],
)
def test_an_unmapped_project_is_told_to_the_person_once_and_never_to_the_model(
    host: str,
    event: str,
    name: str,
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A prompt hook looks the workspace up only when there is something to say: at the
    crossing of the hand-off point."""
    transcript = tmp_path / "transcript.jsonl"
    high_usage_transcript(host, transcript)
    stdin = codex_input(name, str(tmp_path / "src" / "elsewhere"), str(transcript),
                        source="startup")  # fmt: skip
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, first = run(host, event, stdin, "--root", str(root), **kw)
    code2, second = run(host, event, stdin, "--root", str(root), **kw)
    assert code == code2 == 0
    assert context_of(first, name) is None and context_of(second, name) is None
    assert "no workspace" in answer(first)["systemMessage"]
    assert "systemMessage" not in answer(second)  # told once


@pytest.mark.parametrize(
    "stdin", ["", "not json", "[]", '{"cwd": 7}'], ids=["empty", "garbage", "array", "bad-cwd"]
)
@pytest.mark.parametrize("host_event", ["claude-code prompt-submit", "gemini before-agent"])
def test_unreadable_input_adds_nothing_for_the_model(
    stdin: str,
    host_event: str,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    host, event = host_event.split()
    code, out = run(host, event, stdin, "--root", str(root), monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0
    assert set(answer(out)) <= {"systemMessage"}
    assert answer(out).get("systemMessage", "carryd").startswith("carryd")


def test_no_root_and_a_broken_config_are_quiet_for_the_model(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    stdin = claude_prompt(str(root / "shop"))
    code, out = run("claude-code", "prompt-submit", stdin, **kw)
    assert code == 0 and "no memory root" in answer(out)["systemMessage"]
    assert "hookSpecificOutput" not in answer(out)
    config = tmp_path / "broken.toml"
    config.write_text("root = [", encoding="utf-8")
    code, out = run("codex", "session-start", stdin, "--config", str(config), **kw)
    assert code == 0 and context_of(out, "SessionStart") is None
    assert "config error" in answer(out)["systemMessage"]


def test_the_bypass_answers_validly_for_codex(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CARRYD_HOOKS_OFF", "1")
    stdin = codex_input("SessionStart", str(root / "shop"), source="startup")
    code, out = run(
        "codex", "session-start", stdin, "--root", str(root), monkeypatch=monkeypatch, capsys=capsys
    )
    assert out == "\n"


def test_a_host_without_that_event_still_answers_with_exit_0(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hook wired to an event its host lacks must not fail the host either (exit 2 from a
    UserPromptSubmit hook would block the person's prompt)."""
    code, out = run("gemini", "statusline", "{}", monkeypatch=monkeypatch, capsys=capsys)
    assert (code, out) == (0, "\n")


# --- workspace resolution -------------------------------------------------------------------


def test_a_subfolder_of_a_git_work_tree_finds_its_workspace(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "src" / "shop"
    (project / ".git").mkdir(parents=True)
    deep = project / "backend" / "api"
    deep.mkdir(parents=True)
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, line = run(
        "claude-code", "statusline", claude_status(str(deep), 80), "--root", str(root), **kw
    )
    assert "(shop)" in line and "no workspace" not in line
    code, out = run(
        "claude-code", "prompt-submit", claude_prompt(str(deep)), "--root", str(root), **kw
    )
    assert str(root / "shop" / "handoff" / "LEDGER.md") in (
        context_of(out, "UserPromptSubmit") or ""
    )


def test_a_subfolder_of_a_mapped_project_uses_the_mapping(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "code" / "checkout-service"
    (project / "src" / "refunds").mkdir(parents=True)
    config = tmp_path / "config.toml"
    config.write_text(f'root = "{root}"\n[workspaces]\n"{project}" = "shop"\n', encoding="utf-8")
    stdin = claude_status(str(project / "src" / "refunds"), 10)
    code, line = run(
        "claude-code", "statusline", stdin, "--config", str(config), monkeypatch=monkeypatch,
        capsys=capsys,
    )  # fmt: skip
    assert "(shop)" in line


# --- the status line wraps the user's ---------------------------------------------------------


def test_the_users_status_line_comes_first(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "my status.sh"
    script.write_text('#!/bin/sh\ninput=$(cat)\necho "mine ${#input}"\n', encoding="utf-8")
    script.chmod(0o755)
    stdin = claude_status(str(root / "shop"), 42)
    wrap = f"--wrap={shlex.quote(str(script))}"
    code, line = run(
        "claude-code", "statusline", stdin, "--root", str(root), wrap,
        monkeypatch=monkeypatch, capsys=capsys,
    )  # fmt: skip
    assert code == 0
    mine, ours = line.rstrip("\n").split(" | ", 1)
    assert mine == f"mine {len(stdin)}"  # their command got the same input
    assert ours.startswith("[Opus] ctx 42%")
    monkeypatch.setenv("CARRYD_HOOKS_OFF", "1")
    code, line = run(
        "claude-code", "statusline", stdin, "--root", str(root), wrap,
        monkeypatch=monkeypatch, capsys=capsys,
    )  # fmt: skip
    assert line == f"mine {len(stdin)}\n"  # bypassed: theirs alone


def test_the_set_up_status_line_command_runs_the_users_as_it_was(
    root: Path, tmp_path: Path
) -> None:
    import subprocess

    from carryd.daemon.hosts.setup import Invocation, plan_setup

    script = tmp_path / "status with space.sh"
    script.write_text("#!/bin/sh\necho theirs\n", encoding="utf-8")
    script.chmod(0o755)
    settings = json.dumps({"statusLine": {"type": "command", "command": shlex.quote(str(script))}})
    carryd = (sys.executable, "-m", "carryd.daemon.cli")
    data = json.loads(plan_setup("claude-code", settings, Invocation(carryd, str(root))).text or "")
    done = subprocess.run(
        data["statusLine"]["command"],
        shell=True,
        input=claude_status(str(root / "shop"), 76).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    line = done.stdout.decode()
    assert line.startswith("theirs | [Opus] ctx 76% | hand-off 125k"), (line, done.stderr)
    assert "at hand-off" in line


# --- Gemini CLI: SessionStart injects the carry, PreCompress tells the person ---------------------


@pytest.mark.parametrize(
    ("host", "sources"),
    [
        ("gemini", ("startup", "resume", "clear")),
        ("codex", ("startup", "resume", "clear", "compact")),
        ("claude-code", ("startup", "resume", "clear", "compact", "fork")),
    ],
)
def test_session_start_injects_the_carry_for_every_host_and_source(
    host: str,
    sources: tuple[str, ...],
    root: Path,
    use_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (root / "shop" / "handoff" / "LEDGER.md").write_text(
        "# Ledger\n\n## Goal\n\nRefunds in the original currency.\n\n"
        "## Tried approaches and failure reasons\n\n- Rounding in the webhook: failed, "
        "off by one cent on JPY.\n",
        encoding="utf-8",
    )
    assert main(["carry", "--root", str(root)]) == 0
    for source in sources:
        stdin = gemini_input("SessionStart", str(root / "shop"), source=source)
        code, out = run(
            host, "session-start", stdin, "--root", str(root), monkeypatch=monkeypatch,
            capsys=capsys,
        )  # fmt: skip
        context = context_of(out, "SessionStart") or ""
        assert code == 0 and "off by one cent on JPY" in context
        assert context.endswith(f"Full carry: {root / '.carryd' / 'carry' / 'shop.md'}")
        assert "systemMessage" not in answer(out)
        if host == "gemini":
            assert "<" not in context and ">" not in context  # Gemini CLI escapes them


def test_gemini_pre_compress_tells_the_person_only_when_it_really_compresses(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Gemini CLI fires PreCompress before every turn's threshold check."""
    chat = tmp_path / "chat.jsonl"
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    at = ("--root", str(root))
    for tokens, trigger, told in [
        (1000, "auto", False),  # every turn, from the first one
        (500000, "auto", False),  # past the hand-off point, not yet at compression
        (530000, "auto", True),  # at 0.5 of 1,048,576: it compresses
        (1000, "manual", True),  # /compress
    ]:
        chat.write_text(json.dumps({"type": "gemini", "tokens": {"input": tokens}}) + "\n")
        stdin = gemini_input("PreCompress", str(root / "shop"), str(chat), trigger=trigger)
        code, out = run("gemini", "pre-compress", stdin, *at, **kw)
        assert code == 0 and ("systemMessage" in answer(out)) is told, (tokens, trigger)
        assert "hookSpecificOutput" not in answer(out)


def test_a_session_key_is_a_safe_file_name_for_any_id() -> None:
    from carryd.daemon.hosts.hook_state import session_key

    assert session_key({"session_id": SESSION}) == SESSION
    odd = session_key({"session_id": "../../etc/passwd"}) or ""
    assert "/" not in odd and odd != session_key({"session_id": "../../etc/passwd2"})
    by_transcript = session_key({"transcript_path": "/home/me/.gemini/tmp/x/chat.json"})
    assert by_transcript and "/" not in by_transcript
    assert session_key({}) is None and session_key({"session_id": 7}) is None


@pytest.mark.parametrize("event", ["statusline", "prompt-submit", "post-tool-use", "stop"])
def test_the_per_message_hooks_stay_light(event: str, root: Path) -> None:
    """The status line, the prompt, tool and stop hooks run after every message or tool call:
    they must not load the Markdown parser, the model, SQLite or package metadata (each costs
    tens of ms), and below the hand-off point the prompt, tool and stop hooks load no parser,
    no logging, no typing and not the full settings either (together more than Python's own
    start)."""
    import subprocess

    cwd = str(root / "shop")
    stdin = claude_status(cwd, 30) if event == "statusline" else claude_prompt(cwd)
    probe = (
        "import io, sys\n"
        "from carryd.daemon.cli import main\n"
        f"sys.stdin = io.StringIO({stdin!r})\n"
        f"main(['hook', 'claude-code', {event!r}, '--root', {str(root)!r}])\n"
        "heavy = {'markdown_it', 'fastembed', 'onnxruntime', 'sqlite3', 'importlib.metadata',\n"
        "         'numpy', 'watchdog', 'apscheduler'}\n"
        "if sys.platform.startswith('linux'):\n"
        "    heavy.add('platformdirs')\n"
        f"if {event!r} != 'statusline':\n"
        "    heavy |= {'argparse', 'logging', 'typing', 'dataclasses', 'carryd.daemon.config',\n"
        "              'carryd.daemon.layout', 'hashlib', 'tomllib'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_hooks_settings_are_the_full_settings_for_what_they_read(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hooks' light view reads the same values as `load_settings` (defaults, a config
    file, a changed file, the root's sources), and anything else comes from the full one."""
    from carryd.daemon.config import load_settings
    from carryd.daemon.hosts.hook_settings import hook_settings
    from carryd.index.errors import CarrydError

    def same(config: str | None, root_arg: str | None) -> None:
        full, view = load_settings(config, root=root_arg), hook_settings(config, root_arg)
        for table, names in (
            ("hooks", ("handoff_threshold", "inline_chars", "bypass_env")),
            ("index", ("state_dir", "ignore_dirs")),
            ("carry", ("ledger_file", "plan_file", "sidecar_file")),
        ):
            for name in names:
                assert getattr(getattr(view, table), name) == getattr(getattr(full, table), name)
        assert (view.root, view.config_file) == (full.root, full.config_file)
        assert dict(view.workspaces) == dict(full.workspaces)
        assert view.root_path == full.root_path and view.carry_dir == full.carry_dir
        assert view.workspace_for(tmp_path / "code" / "api") == full.workspace_for(
            tmp_path / "code" / "api"
        )
        assert view.model.dim == full.model.dim  # read through to the full settings
        assert view.carry.total_chars == full.carry.total_chars

    same(None, str(root))
    config = tmp_path / "config.toml"
    config.write_text(
        f'root = "{root}"\n[hooks]\nhandoff_threshold = 0.6\ninline_chars = 5000\n'
        f'[carry]\nledger_file = "notes/LEDGER.md"\n[workspaces]\n"{tmp_path / "code"}" = "shop"\n',
        encoding="utf-8",
    )
    same(str(config), None)
    same(str(config), None)  # from the cache kept beside the notices
    config.write_text(f'root = "{root}"\n[hooks]\nhandoff_threshold = 0.7\n', encoding="utf-8")
    os.utime(config, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    same(str(config), None)  # changed: validated and read again
    monkeypatch.setenv("CARRYD_ROOT", str(tmp_path))
    same(str(config), None)
    config.write_text("[hooks]\nhandoff_threshold = 'high'\n", encoding="utf-8")
    os.utime(config, ns=(time.time_ns() + 2 * 10**9, time.time_ns() + 2 * 10**9))
    with pytest.raises(CarrydError) as full_error:
        load_settings(str(config))
    with pytest.raises(CarrydError) as view_error:
        hook_settings(str(config), None)
    assert str(view_error.value) == str(full_error.value)


@pytest.mark.parametrize("xdg", [None, "", "  ", "/srv/cfg"])
def test_the_default_config_file_is_where_platformdirs_puts_it(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hooks find the config without importing platformdirs; the place must not move."""
    import platformdirs
    from carryd.daemon.config import default_config_file

    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    expected = Path(platformdirs.user_config_dir("carryd")) / "config.toml"
    assert default_config_file() == expected


def test_notes_is_never_a_workspace_not_even_inside_a_git_work_tree(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9's one predicate holds through the git lookup: `notes/` is root-level memory, so
    a session there is told (once) to map its project, and no carry is planned for it."""
    (root / "notes").mkdir()
    (root / ".git").mkdir()  # the root itself is a git work tree: its name is no workspace
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    stdin = claude_prompt(str(root / "notes"))
    code, out = run("claude-code", "session-start", stdin, "--root", str(root), **kw)
    assert code == 0 and context_of(out, "SessionStart") is None
    assert "no workspace 'notes'" in answer(out)["systemMessage"]
    code, line = run(
        "claude-code", "statusline", claude_status(str(root / "notes"), 80), "--root", str(root),
        **kw,
    )  # fmt: skip
    assert "no workspace 'notes'" in line


# --- the relay and the hosts' limits, with a real carry ---------------------------------------


def write_ledger(root: Path, text: str) -> None:
    (root / "shop" / "handoff" / "LEDGER.md").write_text(text, encoding="utf-8")


def test_codex_session_start_fits_its_hook_limit_in_bytes(
    root: Path, use_model: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Codex keeps ~2,500 tokens (ceil(bytes / 4)) of a hook's context: a Chinese ledger of
    9,000 characters is ~27,000 bytes, so the carry is planned down until it fits."""
    items = "\n".join(
        f"- 第{i}次尝试：在退款回调里四舍五入，日元金额差一分，失败。" for i in range(300)
    )
    write_ledger(
        root, f"# 交接记录\n\n## 目标\n\n按原币种退款。\n\n## 尝试过的方法和失败原因\n\n{items}\n"
    )
    assert main(["carry", "--root", str(root)]) == 0
    stdin = codex_input("SessionStart", str(root / "shop"), source="startup")
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    code, out = run("codex", "session-start", stdin, "--root", str(root), **kw)
    context = context_of(out, "SessionStart") or ""
    assert code == 0 and context.endswith(f"Full carry: {root / '.carryd' / 'carry' / 'shop.md'}")
    assert len(context.encode("utf-8")) <= host_codex.MAX_CONTEXT_BYTES
    code, out = run("claude-code", "session-start", stdin, "--root", str(root), **kw)
    assert len((context_of(out, "SessionStart") or "").encode("utf-8")) > 9600  # no such limit


def test_gemini_after_agent_clears_the_conversation_once_the_hand_off_files_are_fresh(
    root: Path,
    tmp_path: Path,
    use_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_ledger(root, "# Ledger\n\n## Goal\n\nRefunds in the original currency.\n")
    assert main(["carry", "--root", str(root)]) == 0
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"type": "gemini", "tokens": {"input": 450000}}) + "\n")
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    at = ("--root", str(root))
    after = gemini_input("AfterAgent", str(root / "shop"), str(chat), prompt="go",
                         prompt_response="done", stop_hook_active=False)  # fmt: skip
    assert answer(run("gemini", "after-agent", after, *at, **kw)[1]) == {}  # no note yet
    before = gemini_input("BeforeAgent", str(root / "shop"), str(chat), prompt="go on")
    assert context_of(run("gemini", "before-agent", before, *at, **kw)[1], "BeforeAgent")
    assert answer(run("gemini", "after-agent", after, *at, **kw)[1]) == {}  # ledger not written
    time.sleep(0.05)
    write_ledger(root, "# Ledger\n\n## Goal\n\nRefunds in the original currency, JPY too.\n")
    relay = answer(run("gemini", "after-agent", after, *at, **kw)[1])
    assert relay["decision"] == "block"
    assert relay["hookSpecificOutput"] == {"hookEventName": "AfterAgent", "clearContext": True}
    assert "JPY too" in relay["reason"] and "<" not in relay["reason"]
    assert answer(run("gemini", "after-agent", after, *at, **kw)[1]) == {}  # once per crossing
    looping = gemini_input("AfterAgent", str(root / "shop"), str(chat), stop_hook_active=True)
    assert answer(run("gemini", "after-agent", looping, *at, **kw)[1]) == {}


def test_carryd_status_shows_the_hand_off_point_the_hooks_judged_by(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, "claude-sonnet-4-5", 100000)
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    stdin = claude_prompt(str(root / "shop"), str(transcript))
    run("claude-code", "post-tool-use", stdin, "--root", str(root), **kw)
    capsys.readouterr()
    main(["status", "--root", str(root)])
    text = capsys.readouterr().out
    assert f"hand-off (claude-code session {SESSION[:12]}" in text
    assert "compacts at ~167000 tokens (model claude-sonnet-4-5), hand-off at 125250" in text
    main(["status", "--json", "--root", str(root)])
    (point,) = json.loads(capsys.readouterr().out)["hand_off_points"]
    assert (point["used"], point["compacts"], point["hand_off"]) == (100000, 167000, 125250)


def test_the_status_line_judges_the_carry_again_only_when_its_files_change(root: Path) -> None:
    """After the first status line of a session, the next ones (within a few seconds, with
    the carry, manifest, ledger and plan unchanged) reuse its carry state: no layout, no
    hashing; a changed ledger is judged again at once."""
    import subprocess

    stdin = claude_status(str(root / "shop"), 30)
    probe = (
        "import io, sys\n"
        "from carryd.daemon.cli import main\n"
        f"sys.stdin = io.StringIO({stdin!r})\n"
        f"main(['hook', 'claude-code', 'statusline', '--root', {str(root)!r}])\n"
        "print(sorted({'carryd.daemon.layout', 'hashlib'} & set(sys.modules)))\n"
    )

    def loaded() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')))

    assert loaded() == ["carryd.daemon.layout", "hashlib"]  # the first judges
    assert loaded() == []
    (root / "shop" / "handoff" / "LEDGER.md").write_text("# Ledger\n", encoding="utf-8")
    assert loaded() == ["carryd.daemon.layout", "hashlib"]
