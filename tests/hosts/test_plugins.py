"""carryd as each host's plugin, installed the documented way from a clean sandbox HOME with
no `carryd setup`: the plugin's hooks put the carry into the model's context and its MCP server
connects. The plugins run the `carryd` named by `$CARRYD` and the root in `$CARRYD_ROOT`.
Claude Code: `claude plugin marketplace add REPO`, `claude plugin install carryd@carryd`; Codex:
`codex plugin marketplace add REPO`, `codex plugin add carryd@carryd` (exec runs the plugin's
hooks with --dangerously-bypass-hook-trust, as for setup's); Gemini CLI: `gemini extensions
install REPO/service/plugins/gemini --consent`, answering its folder-trust question."""

from __future__ import annotations

from pathlib import Path

from tests.hosts.claude import ClaudeSession, claude_env
from tests.hosts.codex import codex_env, codex_exec, developer_texts, write_config
from tests.hosts.gemini import carried, gemini, gemini_env, hook_context, write_settings
from tests.hosts.sandbox import CARRYD, Sandbox, carried_whole, host_bin

REPO = Path(__file__).resolve().parents[2]


def test_the_claude_code_plugin_carries_and_offers_its_tools(box: Sandbox) -> None:
    box.env_extra = {"CARRYD": str(CARRYD), "CARRYD_ROOT": str(box.root)}
    env = claude_env(box)
    assert not (box.home / ".claude" / "settings.json").exists()
    for words in (["marketplace", "add", str(REPO)], ["install", "carryd@carryd"]):
        done = box.run([str(host_bin("claude")), "plugin", *words], env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    with ClaudeSession(box, env=env) as session:
        events, requests = session.send("hello")
    (init, *_) = [e for e in events if e.get("subtype") == "init"]
    assert {"name": "plugin:carryd:carryd", "status": "connected"}.items() <= next(
        server for server in init["mcp_servers"] if "carryd" in server["name"]
    ).items()
    assert requests and carried_whole(box.carry(), box.carry_path, requests[0].text)
    assert "mcp__plugin_carryd_carryd__recall" in requests[0].text


def test_the_gemini_extension_carries(box: Sandbox) -> None:
    write_settings(box)
    box.env_extra = {"CARRYD": str(CARRYD), "CARRYD_ROOT": str(box.root)}
    env = gemini_env(box)
    extension = REPO / "service" / "plugins" / "gemini"
    argv = [str(host_bin("gemini")), "extensions", "install", str(extension), "--consent"]
    done = box.run(argv, env=env, stdin="y\n")  # Gemini CLI asks to trust the folder
    assert done.returncode == 0, done.stdout + done.stderr
    _, requests = gemini(box, "hello")
    assert requests and carried(box.carry(), box, requests[0]), hook_context(requests[0])[:2000]


def test_the_codex_plugin_carries(box: Sandbox) -> None:
    write_config(box)
    box.env_extra = {"CARRYD": str(CARRYD), "CARRYD_ROOT": str(box.root)}
    assert not (box.home / ".codex" / "hooks.json").exists()
    for words in (["marketplace", "add", str(REPO)], ["add", "carryd@carryd"]):
        done = box.run([str(host_bin("codex")), "plugin", *words], env=codex_env(box))
        assert done.returncode == 0, done.stdout + done.stderr
    _, _, requests = codex_exec(box, "hello")
    assert requests and carried_whole(box.carry(), box.carry_path, requests[0].text)
    assert "" not in developer_texts(requests[0])
