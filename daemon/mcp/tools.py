"""The four MCP tools and the service behind them: `recall` (L0 abstracts of the
best-matching entries), `expand` (full text by id), `carry` (the workspace's current carry) and
`status` (daemon, model, index, carries).

Recall and expand go through `recall.access` (the `RecallAccess` every command uses): the warm
daemon over its control socket when one answers, and otherwise in-process — the index and a
lazily loaded model, opened once for the server's life. A `workspace` is checked as the CLI
checks it (a top-level folder of the root; `nope` and `../../etc` are refused). Every answer
passes through the redactor (I3), whichever path produced it; carryd's own errors come back as
tool errors the model can read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from carryd.daemon.errors import UsageError
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.daemon.recall.access import RecallAccess

__all__ = ["INSTRUCTIONS", "TOOLS", "MemoryService", "call_tool", "redacted"]

# A warm recall takes tens of milliseconds; this only guards against a wedged daemon.
DAEMON_TIMEOUT = 10.0
INSTRUCTIONS = (
    "carryd keeps this project's Markdown memory indexed. `recall` finds entries (short "
    "abstracts with ids); `expand` gives an entry's full text by id; `carry` returns the "
    "hand-off carry of the workspace (ledger, plan, anchors); `status` says whether the index "
    "and carries are fresh."
)
_WORKSPACE = {"type": "string", "description": "a workspace: a top-level folder of the root"}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "recall",
        "description": (
            "Search the memory (lexical + semantic). Returns hits with an id, path, lines, a "
            "~100-character abstract (l0) and a confidence. Without `workspace` the whole root "
            "is searched; with it, that workspace plus root-level memory. `min_confidence` 0 "
            "ranks every candidate. Use `expand` with a hit's id for its full text."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "workspace": _WORKSPACE,
                "limit": {"type": "integer", "minimum": 0},
                "min_confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["query"],
        },
    },
    {
        "name": "expand",
        "description": (
            "Full text of memory entries by id (mem_…), read from the current files. Ids that "
            "are unknown or whose file changed are listed under `missing` with the reason."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
            "required": ["ids"],
        },
    },
    {
        "name": "carry",
        "description": (
            "The workspace's continuation carry (ledger, plan, anchors, recalled memory) as "
            "Markdown in `text`, with its path and freshness (`state`: fresh, fallback, stale, "
            "missing). Without `workspace`, the workspace of the directory the server runs in."
        ),
        "inputSchema": {"type": "object", "properties": {"workspace": _WORKSPACE}},
    },
    {
        "name": "status",
        "description": (
            "carryd's health: the daemon, the embedding model, index counts and each "
            "workspace's carry (fresh or stale)."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def redacted(value: Any) -> Any:
    """Given an answer (JSON-like), return it with every string passed through the redactor."""
    from carryd.index.redact import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(item) for item in value]
    return value


class MemoryService:
    """recall / expand / carry / status for the tools: the daemon first, else in-process."""

    def __init__(self, settings: Settings, *, default_workspace: str | None) -> None:
        self._settings = settings
        self.default_workspace = default_workspace
        self._access: RecallAccess | None = None

    def recall(
        self,
        query: str,
        workspace: str | None,
        limit: int | None,
        min_confidence: float | None,
    ) -> dict[str, Any]:
        if not query.strip():
            raise UsageError("the query is empty")
        if limit is not None and limit < 0:
            raise UsageError(f"limit must not be negative, got {limit}")
        if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
            raise UsageError(f"min_confidence must be between 0 and 1, got {min_confidence}")
        if workspace is not None:
            from carryd.daemon.layout import check_workspace

            check_workspace(self._settings, workspace)  # as the CLI: `nope`, `../../etc` refused
        from carryd.daemon.recall.recalling import answer_json

        answer = self._recall().answer(
            query, workspace=workspace, limit=limit, min_confidence=min_confidence
        )
        return answer_json(answer)

    def expand(self, ids: Sequence[str]) -> dict[str, Any]:
        if not ids:
            raise UsageError("give at least one entry id (mem_…)")
        return dict(self._recall().expand(list(ids)))

    def carry(self, workspace: str | None) -> dict[str, Any]:
        """Given a workspace (or the server's own), return its current carry and freshness;
        a missing or stale carry is planned again first (as `carryd carry` would)."""
        from carryd.daemon.hosts.handoff import plan_carry_text
        from carryd.daemon.layout import carry_state, is_workspace

        name = workspace or self.default_workspace
        if not name:
            raise UsageError(
                "which workspace? pass `workspace` (the server's directory maps to none)"
            )
        if not is_workspace(self._settings, name):
            raise UsageError(f"no workspace {name!r} in {self._settings.root_path}")
        state = carry_state(self._settings, name)
        path = self._settings.carry_dir / f"{name}.md"
        if state.state in ("missing", "stale"):
            plan_carry_text(
                self._settings, name, max_chars=self._settings.carry.total_chars, refresh=True
            )
            state = carry_state(self._settings, name)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise CarrydError(f"{path}: cannot read the carry: {error.strerror}") from error
        return {
            "workspace": name,
            "path": str(path),
            "state": state.state,
            "detail": state.detail,
            "text": text,
        }

    def status(self) -> dict[str, Any]:
        from carryd.daemon.running.status import status_report

        return status_report(self._settings)

    def close(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None

    def _recall(self) -> RecallAccess:
        """The daemon's warm recall when it answers, else this process's (the same path as
        `carryd recall`: the store, a lazily loaded model, one sync when there is no index)."""
        if self._access is None:
            from carryd.daemon.recall.access import recall_access

            self._access = recall_access(
                self._settings, daemon=True, timeout=DAEMON_TIMEOUT, missing_index="sync"
            )
        return self._access


def call_tool(service: MemoryService, params: Mapping[str, Any]) -> dict[str, Any]:
    """Given `tools/call`'s params, run the tool; return the MCP result (a tool error, with
    carryd's message, for anything the caller got wrong or carryd could not do)."""
    from carryd.daemon.mcp.wire import INVALID_PARAMS, RpcError

    name, arguments = params.get("name"), params.get("arguments") or {}
    if name not in {tool["name"] for tool in TOOLS}:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}")
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: arguments must be an object")
    try:
        if name == "recall":
            answer = service.recall(
                _arg(arguments, "query", str, required=True) or "",
                _arg(arguments, "workspace", str),
                _arg(arguments, "limit", int),
                _arg(arguments, "min_confidence", float),
            )
        elif name == "expand":
            ids = _arg(arguments, "ids", list, required=True) or []
            if not all(isinstance(item, str) for item in ids):
                raise UsageError("`ids` must be a list of strings (mem_…)")
            answer = service.expand(ids)
        elif name == "carry":
            answer = service.carry(_arg(arguments, "workspace", str))
        else:
            answer = service.status()
    except CarrydError as error:
        return _content(redacted(str(error)), error=True)
    return _content(json.dumps(redacted(answer), ensure_ascii=False, indent=2))


def _arg(arguments: Mapping[str, Any], key: str, kind: type, *, required: bool = False) -> Any:
    value = arguments.get(key)
    if value is None:
        if required:
            raise UsageError(f"`{key}` is required")
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UsageError(f"`{key}` must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _content(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}
