"""A fake model API on 127.0.0.1 for the real hosts: Anthropic Messages (SSE), Gemini
`streamGenerateContent` / `generateContent` (SSE and JSON) and OpenAI Responses (SSE).

It records every request (path, headers, JSON body), answers with the usage (token counts) a
test sets, and can answer a model turn with tool calls first, so a turn has tool steps without
a prompt between them. What it answers:

- `reply`: the text of an ordinary answer ("ok" by default);
- `input_tokens`: the prompt tokens every answer reports (the host's context usage);
- `script`: answers the next *main* requests take in order (a `ToolCall` or a text), one each;
  a main request is one the host sends for the conversation itself (it offers the model
  tools), not a side request (a title, a summary, a token count).

The server runs in a daemon thread (`with FakeApi() as api:`) and stops on exit.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class ToolCall:
    """An answer that calls one tool: the host's own tool name and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass
class Request:
    """One request as the host sent it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body (None when there is none or it is not JSON)

    @property
    def api(self) -> str:
        if "/responses" in self.path:
            return "openai"
        if "/messages" in self.path:
            return "anthropic"
        if ":" in self.path.rsplit("/", 1)[-1]:
            return "gemini"
        return "other"

    @property
    def text(self) -> str:
        """Every string in the body, joined: what the model would read."""
        return "\n".join(strings(self.body))

    def texts(self) -> list[str]:
        """Every string in the body, one by one."""
        return strings(self.body)


def strings(value: Any) -> list[str]:
    """Given a JSON value, return every string in it, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


@dataclass
class FakeApi:
    reply: str = "ok"
    input_tokens: int = 1_000
    output_tokens: int = 10
    script: list[ToolCall | str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # hosts a host tried to reach instead

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- the server -------------------------------------------------------------------------

    def __enter__(self) -> FakeApi:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                api._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                api._handle(self, "POST")

            def do_HEAD(self) -> None:  # noqa: N802
                api._handle(self, "HEAD")

            def do_CONNECT(self) -> None:  # noqa: N802
                # The hosts' proxy is this server: a tunnel asked for is a request that
                # would have left the machine. It is recorded and refused.
                api._refuse(self)

        # The fake is also every host's HTTPS proxy: a request meant for anywhere but
        # 127.0.0.1 arrives here as CONNECT and is refused (`outside`).
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- what was sent ----------------------------------------------------------------------

    def main_requests(self, api: str | None = None) -> list[Request]:
        """The requests the host sent for the conversation itself (those that offer tools)."""
        with self._lock:
            found = list(self.requests)
        return [r for r in found if is_main(r) and (api is None or r.api == api)]

    def all_requests(self) -> list[Request]:
        with self._lock:
            return list(self.requests)

    # --- answering --------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = Request(method, handler.path, {k.lower(): v for k, v in handler.headers.items()},
                          body)  # fmt: skip
        with self._lock:
            self.requests.append(request)
            answer = self.script.pop(0) if self.script and is_main(request) else self.reply
        path = urlsplit(handler.path).path
        if method != "POST":
            self._json(handler, 200, {"data": [], "models": []})
        elif path.endswith("/messages/count_tokens"):
            self._json(handler, 200, {"input_tokens": self.input_tokens})
        elif path.endswith("/messages"):
            self._anthropic(handler, body or {}, answer)
        elif path.endswith("/responses"):
            self._openai(handler, answer)
        elif path.endswith(":countTokens"):
            self._json(handler, 200, {"totalTokens": self.input_tokens})
        elif path.endswith(":streamGenerateContent"):
            self._sse(handler, [(None, self._gemini(answer))])
        elif path.endswith(":generateContent"):
            self._json(handler, 200, self._gemini(answer))
        else:
            self._json(handler, 404, {"error": {"message": f"fake API: no {path}"}})

    def _refuse(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.outside.append(handler.path)
        handler.send_response(403)
        handler.send_header("content-length", "0")
        handler.end_headers()

    def _json(self, handler: BaseHTTPRequestHandler, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)

    def _sse(self, handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(data)}\n\n")
        payload = "".join(chunks).encode()
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _anthropic(
        self, handler: BaseHTTPRequestHandler, body: dict[str, Any], answer: ToolCall | str
    ) -> None:
        model = body.get("model", "claude")
        usage = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if isinstance(answer, ToolCall):
            block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}",
                     "name": answer.name, "input": answer.arguments}  # fmt: skip
            stop = "tool_use"
        else:
            block = {"type": "text", "text": answer}
            stop = "end_turn"
        message = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
                   "model": model, "content": [block], "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}  # fmt: skip
        if not body.get("stream"):
            self._json(handler, 200, message)
            return
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage,
                 "output_tokens": 1}}  # fmt: skip
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": answer}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        self._sse(handler, [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": opened}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": self.output_tokens}}),
            ("message_stop", {"type": "message_stop"}),
        ])  # fmt: skip

    def _gemini(self, answer: ToolCall | str) -> dict[str, Any]:
        if isinstance(answer, ToolCall):
            part: dict[str, Any] = {"functionCall": {"name": answer.name, "args": answer.arguments}}
        else:
            part = {"text": answer}
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": self.input_tokens,
                "candidatesTokenCount": self.output_tokens,
                "totalTokenCount": self.input_tokens + self.output_tokens,
            },
            "modelVersion": "gemini-fake",
        }

    def _openai(self, handler: BaseHTTPRequestHandler, answer: ToolCall | str) -> None:
        response_id = f"resp_{uuid.uuid4().hex[:20]}"
        if isinstance(answer, ToolCall):
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:20]}",
                                    "call_id": f"call_{uuid.uuid4().hex[:20]}",
                                    "name": answer.name,
                                    "arguments": json.dumps(answer.arguments)}  # fmt: skip
        else:
            content = [{"type": "output_text", "text": answer, "annotations": []}]
            item = {"type": "message", "role": "assistant", "id": f"msg_{uuid.uuid4().hex[:20]}",
                    "status": "completed", "content": content}  # fmt: skip
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        response = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
        self._sse(handler, [
            ("response.created", {"type": "response.created", "response": response}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {**response, "status": "completed",
                                                 "output": [item], "usage": usage}}),
        ])  # fmt: skip


def is_main(request: Request) -> bool:
    """Whether the host sent this request for the conversation itself: it offers tools."""
    body = request.body
    return isinstance(body, dict) and bool(body.get("tools"))
