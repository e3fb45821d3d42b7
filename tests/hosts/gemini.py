"""Driving the real Gemini CLI (`gemini -p`, non-interactive) against the fake API.

The person's settings come first (`~/.gemini/settings.json`: the API-key auth type, a fixed
model so no routing request goes out, no usage statistics), then `carryd setup gemini` merges
its hooks in. The API is `GOOGLE_GEMINI_BASE_URL`, the key `GEMINI_API_KEY`, and the project
folder is trusted with `GEMINI_CLI_TRUST_WORKSPACE=true` (Gemini CLI's trusted-folders docs).
`gemini --resume latest -p …` goes on in the last session.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.hosts.fake_api import Request
from tests.hosts.sandbox import CARRYD, Sandbox, host_bin

MODEL = "gemini-2.5-flash"


def write_settings(box: Sandbox, mcp: bool = False, **model: Any) -> None:
    """Write the person's `~/.gemini/settings.json` (before `carryd setup gemini`); with `mcp`,
    `carryd mcp` as an MCP server, as docs/hosts.md shows (trusted: no confirmation)."""
    settings = box.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": MODEL, **model},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    if mcp:
        args = ["mcp", "--root", str(box.root)]
        data["mcpServers"] = {"carryd": {"command": str(CARRYD), "args": args, "trust": True}}
    settings.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def gemini_env(box: Sandbox) -> dict[str, str]:
    return box.env(
        GOOGLE_GEMINI_BASE_URL=box.api.url,
        GEMINI_API_KEY="test-gemini-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def gemini(
    box: Sandbox, prompt: str, *, resume: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[Request]]:
    """Given a prompt, run `gemini -p` (or `--resume latest`) to its end; return the process and
    the main API requests it sent."""
    before = len(box.api.main_requests())
    words = ["--resume", "latest"] if resume else []
    done = box.run([str(host_bin("gemini")), *words, "-p", prompt], env=gemini_env(box))
    assert done.returncode == 0, f"gemini: {done.returncode}\n{done.stderr[-3000:]}"
    return done, box.api.main_requests()[before:]


def hook_context(request: Request) -> str:
    """The text of the parts Gemini CLI wrapped as hook context, in order."""
    return "\n".join(t for t in request.texts() if t.startswith("<hook_context>"))


def function_responses(request: Request) -> dict[str, str]:
    """Given a request, return each function response's output by the function's name."""
    found = {}
    for content in (request.body or {}).get("contents", []):
        for part in content.get("parts", []):
            response = part.get("functionResponse")
            if response:
                found[response["name"]] = str(response.get("response", {}).get("output", ""))
    return found


def carried(carry: str, box: Sandbox, request: Request) -> bool:
    """Whether the request's hook context holds every line of the carry that has no angle
    bracket, in order, and the full carry's path."""
    context = hook_context(request)
    position = 0
    for line in carry.splitlines():
        if "<" in line or ">" in line or not line.strip():
            continue
        found = context.find(line, position)
        if found < 0:
            return False
        position = found + len(line)
    return f"Full carry: {box.carry_path}" in context
