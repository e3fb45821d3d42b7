"""The host plugins in this repository: a Claude Code marketplace and plugin, a Gemini CLI
extension and a Codex marketplace and plugin. Their manifests are where each host looks, their
hooks are the ones `carryd setup` writes (same events, matchers and timeouts), and the command
each hook runs — the plugin's `bin/carryd-hook` — answers through the installed `carryd`, or,
without one, with what the host takes for "nothing" and a line on stderr."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.hosts.registry import HOSTS
from carryd.daemon.hosts.settings_files import HOST_HOOKS

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "service" / "plugins"
# host → (plugin folder, its hooks file, the variable its hook commands name the folder by)
LAYOUT = {
    "claude-code": ("claude-code", "hooks/hooks.json", "${CLAUDE_PLUGIN_ROOT}"),
    "gemini": ("gemini", "hooks/hooks.json", "${extensionPath}"),
    "codex": ("codex", "hooks.json", "${PLUGIN_ROOT}"),
}
VENV_CARRYD = Path(sys.executable).absolute().parent / "carryd"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_marketplaces_point_at_the_plugins() -> None:
    claude = load(REPO / ".claude-plugin" / "marketplace.json")
    (entry,) = claude["plugins"]
    folder = REPO / entry["source"]
    assert entry["name"] == "carryd" and claude["name"] == "carryd"
    assert load(folder / ".claude-plugin" / "plugin.json")["name"] == "carryd"
    codex = load(REPO / ".agents" / "plugins" / "marketplace.json")
    (entry,) = codex["plugins"]
    assert entry["source"]["source"] == "local" and entry["source"]["path"].startswith("./")
    folder = REPO / entry["source"]["path"]
    manifest = load(folder / ".codex-plugin" / "plugin.json")
    assert manifest["name"] == "carryd"
    for key in ("hooks", "mcpServers"):  # paths relative to the plugin, as Codex requires
        assert manifest[key].startswith("./") and (folder / manifest[key]).is_file()
    gemini = load(PLUGINS / "gemini" / "gemini-extension.json")
    assert gemini["name"] == "carryd" and "hooks" not in gemini  # Gemini reads hooks/hooks.json


def test_each_plugin_serves_the_mcp_tools_through_the_installed_carryd() -> None:
    servers = [
        load(PLUGINS / "claude-code" / ".claude-plugin" / "plugin.json")["mcpServers"],
        load(PLUGINS / "gemini" / "gemini-extension.json")["mcpServers"],
        load(PLUGINS / "codex" / ".mcp.json")["mcpServers"],
    ]
    for server in servers:
        assert server["carryd"]["args"] == ["mcp"]
        assert "carryd" in server["carryd"]["command"]


@pytest.mark.parametrize("host", list(LAYOUT))
def test_the_plugin_hooks_are_the_ones_setup_writes(host: str) -> None:
    folder, hooks_file, variable = LAYOUT[host]
    hooks = load(PLUGINS / folder / hooks_file)["hooks"]
    assert list(hooks) == [spec.event for spec in HOST_HOOKS[host]]  # type: ignore[index]
    for spec in HOST_HOOKS[host]:  # type: ignore[index]
        (group,) = hooks[spec.event]
        assert group.get("matcher") == spec.matcher
        (handler,) = group["hooks"]
        assert handler["timeout"] == spec.timeout
        words = shlex.split(handler["command"])
        assert words == [f"{variable}/bin/carryd-hook", host, spec.carryd_event]
        assert spec.carryd_event in HOSTS[host].events


def run_wrapper(host: str, event: str, stdin: str, path: str) -> subprocess.CompletedProcess[str]:
    command = f'"{PLUGINS / LAYOUT[host][0]}/bin/carryd-hook" {host} {event}'
    env = {k: v for k, v in os.environ.items() if k != "CARRYD"}
    env["PATH"] = path
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("host", list(LAYOUT))
def test_the_hook_command_answers_through_the_installed_carryd(host: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "carryd").symlink_to(VENV_CARRYD)
    root = tmp_path / "memory"
    (root / "shop").mkdir(parents=True)
    stdin = json.dumps({"session_id": "s1", "cwd": "/nowhere/at/all", "source": "startup"})
    env_path = f"{bin_dir}:/usr/bin:/bin"
    done = subprocess.run(
        ["/bin/sh", "-c", f'"{PLUGINS / LAYOUT[host][0]}/bin/carryd-hook" {host} session-start'],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=env_path, CARRYD_ROOT=str(root)),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert "no workspace 'all'" in answer["systemMessage"]  # carryd itself answered


@pytest.mark.parametrize(("host", "nothing"), [("claude-code", "{}\n"), ("gemini", "{}\n"),
                                               ("codex", "")])  # fmt: skip
def test_without_carryd_the_hook_answers_nothing_and_says_why(host: str, nothing: str) -> None:
    done = run_wrapper(host, "session-start", "{}", "/usr/bin:/bin")
    assert done.returncode == 0
    assert done.stdout == nothing
    assert "not installed or not on PATH" in done.stderr
