"""Driving the real Codex CLI (`codex exec`, the native build from npm) against the fake API.

`~/.codex/config.toml` names the fake as a model provider (`base_url`, `wire_api =
"responses"`, the key from `env_key`) and trusts the project directory; `codex exec` runs one
prompt, `codex exec resume --last` the next one in the same session. Hooks that were never
trusted in the TUI are skipped by `exec`; `--dangerously-bypass-hook-trust` is its documented
switch for automation that vetted its hooks (here: the ones `carryd setup codex` wrote).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.hosts.fake_api import Request
from tests.hosts.sandbox import Sandbox, host_bin

API_KEY_ENV = "CARRYD_TEST_CODEX_KEY"
MODEL = "gpt-5.5"
CONTEXT_WINDOW = 200_000
AUTO_COMPACT_LIMIT = 180_000


def write_config(box: Sandbox, extra: str = "") -> None:
    """Write `~/.codex/config.toml`: the fake as the model provider, the project trusted."""
    config = box.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "fake"\n'
        f"model_context_window = {CONTEXT_WINDOW}\n"
        f"model_auto_compact_token_limit = {AUTO_COMPACT_LIMIT}\n"
        "check_for_update_on_startup = false\n"
        f"{extra}"
        "\n[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{box.api.url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{API_KEY_ENV}"\n'
        "\n[analytics]\nenabled = false\n"
        f'\n[projects."{box.project}"]\ntrust_level = "trusted"\n',
        encoding="utf-8",
    )


def codex_env(box: Sandbox) -> dict[str, str]:
    return box.env(**{API_KEY_ENV: "sk-test-codex"})


def codex_exec(
    box: Sandbox, prompt: str, *, resume: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]], list[Request]]:
    """Given a prompt, run `codex exec` (or `codex exec resume --last`) to its end; return the
    process, its JSON events and the main API requests it sent."""
    before = len(box.api.main_requests())
    words = ["resume", "--last"] if resume else []
    argv = [str(host_bin("codex")), "exec", *words, "--json", "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust", prompt]  # fmt: skip
    done = box.run(argv, env=codex_env(box))
    assert done.returncode == 0, f"codex exec: {done.returncode}\n{done.stderr[-3000:]}"
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done, events, box.api.main_requests()[before:]


def developer_texts(request: Request) -> list[str]:
    """Given a Responses request, return the text of each developer message, in order."""
    texts = []
    for item in (request.body or {}).get("input", []):
        if item.get("type") == "message" and item.get("role") == "developer":
            texts.append("".join(part.get("text", "") for part in item.get("content", [])))
    return texts
