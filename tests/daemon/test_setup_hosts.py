"""`carryd setup HOST`: carryd's hooks merged into the host's settings without touching the
user's own, idempotent, backed up, shown as a diff with --dry-run, and taken out again with
--remove — down to the original bytes when nothing else changed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.hosts.setup import (
    HOST_HOOKS,
    Invocation,
    carryd_event_of,
    plan_removal,
    plan_setup,
    wrapped_command,
)

CARRYD = Invocation(("/opt/my tools/bin/carryd",), root="/home/me/memory")

# A user's Claude Code settings as people write them: their own hooks, their own status line,
# four-space indentation and a key order json.dumps would not reproduce.
USER_SETTINGS = """{
    "model": "opus",
    "statusLine": {"type": "command", "command": "~/.claude/my-status.sh", "padding": 1},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "hi"}]}]
    },
    "permissions": {"allow": ["Bash(ls:*)"]}
}
"""


def commands(data: dict[str, Any], event: str) -> list[str]:
    return [
        handler["command"]
        for group in data.get("hooks", {}).get(event, [])
        for handler in group["hooks"]
    ]


# --- pure planning --------------------------------------------------------------------------


def test_a_fresh_claude_code_file_gets_both_hooks_and_the_status_line() -> None:
    plan = plan_setup("claude-code", None, CARRYD)
    assert plan.text is not None
    data = json.loads(plan.text)
    session = data["hooks"]["SessionStart"][0]
    assert session["matcher"] == "startup|resume|clear|compact|fork"
    assert shlex.split(session["hooks"][0]["command"]) == [
        "/opt/my tools/bin/carryd", "hook", "claude-code", "session-start",
        "--root", "/home/me/memory",
    ]  # fmt: skip
    assert commands(data, "UserPromptSubmit") == [
        "'/opt/my tools/bin/carryd' hook claude-code prompt-submit --root /home/me/memory"
    ]
    for event, carryd_event in [("PostToolUse", "post-tool-use"), ("Stop", "stop")]:
        assert commands(data, event) == [
            f"'/opt/my tools/bin/carryd' hook claude-code {carryd_event} --root /home/me/memory"
        ]
    assert data["hooks"]["PreCompact"][0]["matcher"] == "auto"
    assert data["statusLine"]["command"].endswith("statusline --root /home/me/memory")
    assert [action.kind for action in plan.actions] == ["add"] * 6


def test_setup_twice_changes_nothing_the_second_time() -> None:
    first = plan_setup("claude-code", USER_SETTINGS, CARRYD)
    second = plan_setup("claude-code", first.text, CARRYD)
    assert second.text == first.text
    assert not second.changed
    assert {action.kind for action in second.actions} == {"keep"}


def test_the_users_hooks_and_keys_stay_and_ours_are_appended() -> None:
    data = json.loads(plan_setup("claude-code", USER_SETTINGS, CARRYD).text or "")
    assert commands(data, "PreToolUse") == ["lint"]
    assert commands(data, "SessionStart")[0] == "hi"
    assert carryd_event_of(commands(data, "SessionStart")[1], "claude-code") == "session-start"
    assert data["model"] == "opus" and data["permissions"] == {"allow": ["Bash(ls:*)"]}


def test_an_existing_status_line_is_wrapped_not_replaced() -> None:
    plan = plan_setup("claude-code", USER_SETTINGS, CARRYD)
    status = json.loads(plan.text or "")["statusLine"]
    assert status["padding"] == 1  # their settings of the status line stay
    assert wrapped_command(status["command"]) == "~/.claude/my-status.sh"
    assert ("wrap", "statusLine") in [(a.kind, a.what) for a in plan.actions]
    # A second setup keeps wrapping their command, not carryd's own.
    again = json.loads(plan_setup("claude-code", plan.text, CARRYD).text or "")["statusLine"]
    assert wrapped_command(again["command"]) == "~/.claude/my-status.sh"


def test_a_new_root_updates_the_commands_in_place() -> None:
    first = plan_setup("claude-code", USER_SETTINGS, CARRYD).text
    moved = Invocation(CARRYD.executable, root="/srv/memory")
    plan = plan_setup("claude-code", first, moved)
    data = json.loads(plan.text or "")
    ours = [c for c in commands(data, "SessionStart") if "carryd" in c]
    assert ours == ["'/opt/my tools/bin/carryd' hook claude-code session-start --root /srv/memory"]
    assert wrapped_command(data["statusLine"]["command"]) == "~/.claude/my-status.sh"
    assert "--root /srv/memory" in data["statusLine"]["command"]


def test_removal_takes_out_exactly_what_setup_added() -> None:
    added = plan_setup("claude-code", USER_SETTINGS, CARRYD).text
    removed = plan_removal("claude-code", added)
    assert json.loads(removed.text or "") == json.loads(USER_SETTINGS)


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_codex_and_gemini_get_their_events_and_no_status_line(host: Any) -> None:
    data = json.loads(plan_setup(host, None, CARRYD).text or "")
    assert "statusLine" not in data
    assert sorted(data["hooks"]) == sorted(spec.event for spec in HOST_HOOKS[host])
    for spec in HOST_HOOKS[host]:
        (command,) = commands(data, spec.event)
        assert carryd_event_of(command, host) == spec.carryd_event
    assert json.loads(plan_removal(host, json.dumps(data)).text or "") == {}


def test_gemini_hooks_have_names_and_millisecond_timeouts() -> None:
    data = json.loads(plan_setup("gemini", None, CARRYD).text or "")
    (group,) = data["hooks"]["BeforeAgent"]
    assert "matcher" not in group
    assert group["hooks"][0]["name"] == "carryd-before-agent"
    assert group["hooks"][0]["timeout"] == 10_000


def test_only_carryd_commands_for_this_host_are_recognised() -> None:
    assert (
        carryd_event_of("/x/carryd hook codex session-start --root r", "codex") == "session-start"
    )
    assert carryd_event_of("/x/carryd hook codex session-start", "gemini") is None
    assert carryd_event_of("my-hook hook codex session-start", "codex") is None
    assert carryd_event_of("python -m carryd.daemon.cli hook gemini before-agent", "gemini")
    assert carryd_event_of("echo 'unbalanced", "codex") is None
    assert carryd_event_of(None, "codex") is None


def test_a_settings_file_that_is_not_an_object_is_refused() -> None:
    from carryd.daemon.errors import UsageError

    with pytest.raises(UsageError):
        plan_setup("claude-code", "[1, 2]", CARRYD)
    with pytest.raises(UsageError):
        plan_setup("claude-code", '{"hooks": []}', CARRYD)


# --- the command ----------------------------------------------------------------------------


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "webshop" / "handoff").mkdir(parents=True)
    # A root holds Markdown (`layout.check_root`): setup refuses a folder that is not one.
    (root / "webshop" / "PLAN.md").write_text("# Plan\n", encoding="utf-8")
    return root


def home() -> Path:
    return Path.home()  # the isolated HOME of conftest


def test_setup_and_remove_restore_the_original_bytes(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS, encoding="utf-8")
    assert main(["setup", "claude-code", "--root", str(memory)]) == 0
    assert "carryd setup claude-code --print-instructions >>" in capsys.readouterr().out
    after = json.loads(settings.read_text(encoding="utf-8"))
    backup = settings.with_name("settings.json.carryd-backup")
    assert backup.read_text(encoding="utf-8") == USER_SETTINGS
    (ours,) = [c for c in commands(after, "UserPromptSubmit")]
    words = shlex.split(ours)
    assert Path(words[0]).is_absolute() and words[-2:] == ["--root", str(memory)]

    once = settings.read_bytes()
    assert main(["setup", "claude-code", "--root", str(memory)]) == 0
    assert settings.read_bytes() == once  # idempotent
    assert backup.read_text(encoding="utf-8") == USER_SETTINGS  # the backup stays the original

    assert main(["setup", "claude-code", "--remove"]) == 0
    assert settings.read_text(encoding="utf-8") == USER_SETTINGS
    assert not backup.exists()


def test_remove_keeps_what_the_user_changed_since(memory: Path) -> None:
    settings = home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS, encoding="utf-8")
    assert main(["setup", "claude-code", "--root", str(memory)]) == 0
    data = json.loads(settings.read_text(encoding="utf-8"))
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data), encoding="utf-8")
    assert main(["setup", "claude-code", "--remove"]) == 0
    left = json.loads(settings.read_text(encoding="utf-8"))
    assert left == {**json.loads(USER_SETTINGS), "model": "sonnet"}


def test_a_file_carryd_created_is_removed_again(memory: Path) -> None:
    settings = home() / ".gemini" / "settings.json"
    assert main(["setup", "gemini", "--root", str(memory)]) == 0
    assert commands(json.loads(settings.read_text(encoding="utf-8")), "BeforeAgent")
    assert not settings.with_name("settings.json.carryd-backup").exists()
    assert main(["setup", "gemini", "--remove"]) == 0
    assert not settings.exists()


def test_dry_run_prints_a_diff_and_writes_nothing(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS, encoding="utf-8")
    assert main(["setup", "claude-code", "--root", str(memory), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"--- {settings}\n+++ {settings}\n")
    assert "+" in out and "hook claude-code prompt-submit" in out
    assert settings.read_text(encoding="utf-8") == USER_SETTINGS
    assert not settings.with_name("settings.json.carryd-backup").exists()


def test_dry_run_keeps_the_files_own_indent(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A settings file indented by four spaces: the diff holds carryd's lines and removes none
    of the user's (it used to re-indent the whole file to two spaces)."""
    settings = home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    user = json.dumps({"model": "opus", "permissions": {"allow": ["Bash(ls:*)"]}}, indent=4)
    settings.write_text(user + "\n", encoding="utf-8")
    assert main(["setup", "claude-code", "--root", str(memory), "--dry-run"]) == 0
    diff = capsys.readouterr().out.splitlines()[2:]
    removed = [line for line in diff if line.startswith("-")]
    assert removed == [] or all(line.rstrip().endswith(("}", "]", '"')) for line in removed)
    assert not any(line.startswith('-    "model"') for line in diff)
    assert any(line.startswith("+") and "prompt-submit" in line for line in diff)
    assert main(["setup", "claude-code", "--root", str(memory)]) == 0
    written = settings.read_text(encoding="utf-8")
    assert '\n    "model": "opus"' in written and json.loads(written)["model"] == "opus"


def test_codex_goes_to_codex_home_or_the_project(
    memory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert main(["setup", "codex", "--root", str(memory)]) == 0
    data = json.loads((tmp_path / "codex-home" / "hooks.json").read_text(encoding="utf-8"))
    assert commands(data, "SessionStart") and commands(data, "UserPromptSubmit")
    project = tmp_path / "shop"
    project.mkdir()
    assert main(["setup", "codex", "--root", str(memory), "--project", str(project)]) == 0
    assert (project / ".codex" / "hooks.json").is_file()


def test_broken_json_is_refused_and_left_alone(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": ', encoding="utf-8")
    assert main(["setup", "claude-code", "--root", str(memory)]) == 2
    assert str(settings) in capsys.readouterr().err
    assert settings.read_text(encoding="utf-8") == '{"hooks": '


def test_setup_without_a_root_says_how_to_give_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["setup", "claude-code"]) == 2
    assert "--root" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "file"),
    [("claude-code", "CLAUDE.md"), ("codex", "AGENTS.md"), ("gemini", "GEMINI.md")],
)
def test_print_instructions_names_the_ledger_sections_and_paths(
    host: str, file: str, memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "webshop"
    project.mkdir()
    code = main(["setup", host, "--root", str(memory), "--project", str(project),
                 "--print-instructions"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert file in out
    assert f"{memory / 'webshop'}/handoff/LEDGER.md" in out
    for section in (
        "Task status", "Goal", "Tried approaches and failure reasons", "Progress and next steps"
    ):  # fmt: skip
        assert f"## {section}" in out
    assert "newest last" in out and "reason it failed" in out
    assert not (home() / ".claude" / "settings.json").exists()  # prints only


def test_the_settings_shown_in_docs_are_what_setup_writes() -> None:
    """docs/hosts.md shows each host's settings as setup writes them (same events, same
    commands up to the paths), so copying them by hand gives the same result."""
    import re

    docs = (Path(__file__).resolve().parents[2] / "docs" / "hosts.md").read_text("utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", docs, flags=re.DOTALL)]
    shown = [block for block in blocks if "hooks" in block]
    invocation = Invocation(("/home/me/.venv/bin/carryd",), root="/home/me/memory")
    for host in ("claude-code", "codex", "gemini"):
        (block,) = [b for b in shown if host in json.dumps(b)]
        assert block == json.loads(plan_setup(host, None, invocation).text or ""), host


def test_setup_offers_the_instructions_only_when_the_project_lacks_them(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    assert main(["setup", "gemini", "--root", str(memory), "--project", str(project)]) == 0
    assert f"carryd setup gemini --print-instructions >> {project / 'GEMINI.md'}" in (
        capsys.readouterr().out
    )
    assert main(["setup", "gemini", "--print-instructions", "--root", str(memory)]) == 0
    (project / "GEMINI.md").write_text(capsys.readouterr().out, encoding="utf-8")
    (project / ".gemini" / "settings.json").unlink()
    assert main(["setup", "gemini", "--root", str(memory), "--project", str(project)]) == 0
    assert "--print-instructions" not in capsys.readouterr().out
