"""`carryd mcp` end to end: the official MCP SDK's own client talks to the server over real
stdio (a subprocess), lists the four tools and calls each; answers are redacted; with a
daemon running the server answers through it; malformed messages get JSON-RPC errors; a
workspace is checked as the CLI checks it; `initialize` is answered at once, without the SDK."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main

mcp = pytest.importorskip("mcp", reason="the test extras include the MCP SDK")

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
LEDGER = """# Handoff ledger

## Task status
- refunds: the currency fix is half done

## Goal
- refund in the original currency of the order

## Tried approaches and failure reasons
- rounding in the webhook handler: failed, JPY refunds off by one yen

## Progress and next steps
- move the conversion into RefundService
"""
NOTES = f"""# Stripe sandbox

The sandbox deploy uses the access key {AWS_KEY} from the team vault.
Refund webhooks retry three times with exponential backoff.
"""


@pytest.fixture
def root(tmp_path: Path, use_model: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / "shop" / "handoff").mkdir(parents=True)
    (memory / "shop" / "handoff" / "LEDGER.md").write_text(LEDGER, encoding="utf-8")
    (memory / "shop" / "stripe.md").write_text(NOTES, encoding="utf-8")
    (memory / "MEMORY.md").write_text("# Defaults\n\nPrefer small commits.\n", encoding="utf-8")
    assert main(["index", "--root", str(memory)]) == 0
    return memory


def call_tools(
    root: Path, calls: list[tuple[str, dict[str, Any]]], env: dict[str, str] | None = None
) -> tuple[list[str], list[Any]]:
    """Start `carryd mcp` as the SDK's stdio client would; return the tool names and each
    call's result (the parsed JSON answer, or ("error", text) for a tool error)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "carryd.daemon.cli", "mcp", "--root", str(root)],
        env=dict(os.environ, **(env or {})),
        cwd=str(root / "shop"),
    )

    async def session() -> tuple[list[str], list[Any]]:
        async with stdio_client(parameters) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                tools = sorted(tool.name for tool in (await client.list_tools()).tools)
                results = []
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    text = "".join(getattr(part, "text", "") for part in result.content)
                    # mcp 2 names it `is_error`, mcp 1 `isError`.
                    failed = getattr(result, "is_error", getattr(result, "isError", False))
                    results.append(("error", text) if failed else json.loads(text))
                return tools, results

    return asyncio.run(asyncio.wait_for(session(), timeout=240))


def test_the_sdk_client_lists_and_calls_every_tool(root: Path) -> None:
    tools, (found, carry, status) = call_tools(
        root,
        [
            ("recall", {"query": "sandbox access key stripe", "min_confidence": 0}),
            ("carry", {}),  # the server runs in the shop folder: its workspace
            ("status", {}),
        ],
    )
    assert tools == ["carry", "expand", "recall", "status"]
    assert found["hits"] and found["hits"][0]["path"] == "shop/stripe.md"
    assert carry["workspace"] == "shop" and carry["state"] in ("fresh", "fallback")
    assert "JPY refunds off by one yen" in carry["text"]
    assert Path(carry["path"]) == root / ".carryd" / "carry" / "shop.md"
    assert status["root"] == str(root) or str(root) in json.dumps(status)

    (expanded,) = call_tools(root, [("expand", {"ids": [found["hits"][0]["id"]]})])[1]
    (entry,) = expanded["entries"]
    assert "exponential backoff" in entry["text"]
    assert AWS_KEY not in json.dumps(found) + json.dumps(expanded)  # redacted (I3)


def test_bad_calls_are_tool_errors_not_a_dead_server(root: Path) -> None:
    _, results = call_tools(
        root,
        [
            ("recall", {"query": "   "}),
            ("carry", {"workspace": "nope"}),
            ("expand", {"ids": ["mem_00000000000000000000000000000000"]}),
            ("recall", {"query": "refund currency", "min_confidence": 0}),
        ],
    )
    assert results[0][0] == "error" and "empty" in results[0][1]
    assert results[1][0] == "error" and "no workspace 'nope'" in results[1][1]
    assert results[2]["missing"][0]["reason"] == "unknown"
    assert results[3]["hits"]  # the server still answers


def test_with_a_daemon_running_the_server_answers_through_it(
    root: Path, tmp_path: Path, use_model: Path
) -> None:
    """The daemon has the real model (a copy, which the index then records as its model); the
    MCP server's own model path is broken, and once the copy is gone no process but the
    daemon that loaded it can embed a query: only an answer that came through the daemon can
    be undegraded."""
    import shutil

    copy = shutil.copytree(use_model, tmp_path / "model-copy")
    log = (tmp_path / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "carryd.daemon.cli", "run", "--root", str(root)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, CARRYD_MODEL_PATH=str(copy)),
    )
    try:
        socket = root / ".carryd" / "carryd.sock"
        deadline = time.monotonic() + 120
        while not socket.exists():
            assert time.monotonic() < deadline, "daemon not ready"
            assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()
            time.sleep(0.2)
        broken = {"CARRYD_MODEL_PATH": str(tmp_path / "no-model-here")}
        query = ("recall", {"query": "refund webhook retries", "min_confidence": 0})
        wait_for_spec = time.monotonic() + 60  # the daemon's reconcile records its model
        while str(copy) not in _meta(root, "serving_model"):
            assert time.monotonic() < wait_for_spec, (tmp_path / "daemon.log").read_text()
            time.sleep(0.2)
        shutil.rmtree(copy)
        _, (answer,) = call_tools(root, [query], env=broken)
        assert answer["degraded"] is None and answer["hits"]
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()
    _, (alone,) = call_tools(root, [query], env=broken)
    assert alone["degraded"]  # in-process, no model to be had: lexical only


def _meta(root: Path, key: str) -> str:
    import sqlite3

    db = root / ".carryd" / "index.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
        row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else ""


def raw_session(root: Path, lines: list[bytes], env: dict[str, str] | None = None) -> list[Any]:
    """Write raw lines to `carryd mcp`'s stdin, close it; return every JSON line it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "mcp", "--root", str(root)],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        env=dict(os.environ, **(env or {})),
        cwd=str(root / "shop"),
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.splitlines()]


def rpc(id_: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def test_malformed_messages_get_json_rpc_errors_and_the_server_goes_on(root: Path) -> None:
    answers = raw_session(
        root,
        [
            b"this is not json",
            b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
            b'{"jsonrpc": "2.0", "id": 2}',
            b'{"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}',
            b'{"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}}',
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
            b'"a string"',
            rpc(5, "tools/call", {"name": "no_such_tool", "arguments": {}}),
            rpc(6, "ping"),
        ],
    )
    codes = [(a["id"], a.get("error", {}).get("code")) for a in answers]
    assert codes == [
        (None, -32700),  # parse error
        (None, -32600),  # a batch
        (2, -32600),  # no method
        (3, -32601),
        (4, -32601),  # the SDK's discovery probe: it falls back to initialize
        (None, -32600),  # not an object; the notification got no answer at all
        (5, -32602),
        (6, None),
    ]
    assert answers[-1]["result"] == {}


@pytest.mark.parametrize("workspace", ["nope", "../../etc", "/etc", ".."])
def test_recall_checks_the_workspace_as_the_cli_does(root: Path, workspace: str) -> None:
    (answer,) = raw_session(
        root,
        [rpc(1, "tools/call", {"name": "recall", "arguments": {"query": "refund",
                                                                "workspace": workspace}})],
    )  # fmt: skip
    result = answer["result"]
    assert result["isError"] is True
    assert "workspace" in result["content"][0]["text"]
    cli = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "recall", "refund", "--workspace", workspace,
         "--root", str(root)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert cli.returncode == 2  # the CLI refuses the same names


def test_initialize_is_answered_at_once_and_needs_no_sdk(root: Path, tmp_path: Path) -> None:
    """The server speaks the wire itself: with the SDK unimportable it still answers, and it
    answers `initialize` before loading the index, the model or the SDK."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('no mcp here')\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "carryd.daemon.cli", "mcp", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(blocker)),
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        start = time.monotonic()
        process.stdin.write(rpc(1, "initialize", {"protocolVersion": "2025-06-18",
                                                  "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "1"}})
                            + b"\n")  # fmt: skip
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        elapsed = time.monotonic() - start
        assert answer["result"]["protocolVersion"] == "2025-06-18"
        assert answer["result"]["serverInfo"]["name"] == "carryd"
        assert elapsed < 5  # the bar (0.5 s from a cold start) is bench/bench_hooks.py's
        process.stdin.write(rpc(2, "tools/list") + b"\n")
        process.stdin.flush()
        names = sorted(t["name"] for t in json.loads(process.stdout.readline())["result"]["tools"])
        assert names == ["carry", "expand", "recall", "status"]
    finally:
        process.stdin.close()
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
        process.stdout.close()
