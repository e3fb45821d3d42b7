"""Driving the real Claude Code (`claude`, native build from npm) against the fake API.

`claude -p` with `--input-format stream-json` is one conversation fed prompt by prompt, the
built-in `/clear` and `/compact` included (the Agent SDK's way), so every SessionStart source
runs in print mode: startup (a new run), resume (`--resume ID`), clear and compact. The key
comes from the environment (`ANTHROPIC_API_KEY`, which print mode uses without asking), the
API from `ANTHROPIC_BASE_URL`; `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` turns off the
updater, telemetry and error reporting.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import IO, Any

from tests.hosts.fake_api import Request
from tests.hosts.sandbox import HOST_TIMEOUT, Sandbox, host_bin

API_KEY = "sk-ant-api03-carryd-host-tests-0123456789abcdef"


def claude_env(box: Sandbox, **extra: str) -> dict[str, str]:
    return box.env(
        ANTHROPIC_BASE_URL=box.api.url,
        ANTHROPIC_API_KEY=API_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        **extra,
    )


def trust_project(box: Sandbox) -> None:
    """Write Claude Code's own state file, `~/.claude.json`, as the interactive first run leaves
    it: onboarding done, the project folder trusted, the environment's API key approved."""
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(box.project): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
            }
        },
    }
    (box.home / ".claude.json").write_text(json.dumps(state), encoding="utf-8")


def user_message(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


class ClaudeSession:
    """One `claude -p --input-format stream-json` process: `send` a prompt, get its events."""

    def __init__(self, box: Sandbox, *args: str, env: dict[str, str] | None = None) -> None:
        self.box = box
        argv = [str(host_bin("claude")), "-p", "--input-format", "stream-json",
                "--output-format", "stream-json", "--verbose", *args]  # fmt: skip
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or claude_env(box),
            cwd=box.project,
        )
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, text: str) -> tuple[list[dict[str, Any]], list[Request]]:
        """Given a prompt (or a slash command), send it and wait for its result; return the
        events Claude Code printed for it and the main API requests it sent."""
        assert self.process.stdin is not None
        before = len(self.box.api.main_requests())
        self.process.stdin.write(user_message(text) + "\n")
        self.process.stdin.flush()
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + HOST_TIMEOUT
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            except queue.Empty:
                raise AssertionError(f"claude: no result for {text!r}; events: {events}") from None
            if line is None:
                raise AssertionError(f"claude ended before a result for {text!r}: {self.stderr()}")
            event = json.loads(line)
            events.append(event)
            if event.get("type") == "result":
                break
        self.events += events
        return events, self.box.api.main_requests()[before:]

    @property
    def session_id(self) -> str:
        ids = [e["session_id"] for e in self.events if e.get("type") == "result"]
        return str(ids[-1])

    def stderr(self) -> str:
        self.close()
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def close(self) -> None:
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ClaudeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hook_outputs(events: list[dict[str, Any]], hook_event: str) -> list[dict[str, Any]]:
    """Given a run's events, return what carryd's hooks for one event answered (parsed)."""
    found = []
    for event in events:
        if event.get("subtype") == "hook_response" and event.get("hook_event") == hook_event:
            # The output is the hook's stderr and stdout together; the answer is the JSON line.
            lines = [line for line in (event.get("output") or "").splitlines() if line.strip()]
            answers = [json.loads(line) for line in lines if line.lstrip().startswith("{")]
            found.append(answers[-1] if answers else {})
    return found


def tool_results(request: Request) -> list[str]:
    """Given a Messages request, return the text of every tool result in it, in order."""
    texts = []
    for message in (request.body or {}).get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                parts = block.get("content")
                if isinstance(parts, str):
                    texts.append(parts)
                else:
                    texts.append("".join(p.get("text", "") for p in parts or []))
    return texts
