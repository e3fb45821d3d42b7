"""MCP's stdio transport as carryd speaks it: newline-delimited JSON-RPC 2.0 on stdin/stdout.

Small on purpose: `initialize`, `ping`, `tools/list` and `tools/call` are all a stdio tool
server needs, and writing them here (instead of starting the MCP SDK) lets the server answer
a client's first message within milliseconds of the interpreter starting. Anything else is a
JSON-RPC error, never silence:

- a line that is not JSON: -32700 (parse error), `id` null;
- a batch (a JSON array; MCP has none since 2025-06-18), anything not an object, a message
  without a string `method`: -32600 (invalid request);
- an unknown method (including the SDK's `server/discover` probe, after which a client falls
  back to `initialize`): -32601; bad parameters: -32602; carryd failing: -32603.

Notifications (no `id`) are never answered; responses from the client are ignored. The
protocol version is the client's when carryd knows it, else the newest carryd knows.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any

log = logging.getLogger(__name__)

__all__ = ["PROTOCOL_VERSIONS", "RpcError", "serve"]

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
MAX_LINE_BYTES = 8_000_000


class RpcError(Exception):
    """A JSON-RPC error answer: its code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# method → handler(params) → result; `initialize` is the wire's own.
Handlers = Mapping[str, Callable[[Mapping[str, Any]], Any]]


def serve(
    handlers: Handlers,
    *,
    server_info: Mapping[str, str],
    instructions: str,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> None:
    """Given the method handlers, answer JSON-RPC messages from stdin until it closes."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    for line in iter(lambda: source.readline(MAX_LINE_BYTES), b""):
        if not line.strip():
            continue
        answer = handle_line(line, handlers, server_info=server_info, instructions=instructions)
        if answer is not None:
            sink.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
            sink.flush()


def handle_line(
    line: bytes,
    handlers: Handlers,
    *,
    server_info: Mapping[str, str],
    instructions: str,
) -> dict[str, Any] | None:
    """Given one line from the client, return the answer to write (None: nothing to say)."""
    try:
        message = json.loads(line)
    except ValueError as error:
        return _error(None, PARSE_ERROR, f"Parse error: not JSON ({error})")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object")
    raw_id = message.get("id")
    has_id = "id" in message
    request_id = raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    method = message.get("method")
    if not isinstance(method, str):
        if has_id and ("result" in message or "error" in message):
            return None  # a response to something: carryd sends no requests
        return _error(request_id, INVALID_REQUEST, "Invalid Request: no method")
    if has_id and request_id is None:
        return _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or number")
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
    if not has_id:
        return None  # a notification (initialized, cancelled, ...): never answered
    try:
        if method == "initialize":
            result: Any = _initialize(params, server_info, instructions)
        elif method == "ping":
            result = {}
        elif method in handlers:
            result = handlers[method](params)
        else:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    except RpcError as error:
        return _error(request_id, error.code, error.message)
    except Exception as error:  # noqa: BLE001 — one failing call must not end the server
        log.warning("carryd mcp: %s failed: %s: %s", method, type(error).__name__, error)
        return _error(request_id, INTERNAL_ERROR, f"Internal error: {type(error).__name__}")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _initialize(
    params: Mapping[str, Any], server_info: Mapping[str, str], instructions: str
) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": dict(server_info),
        "instructions": instructions,
    }


def _error(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
