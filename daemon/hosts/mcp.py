"""`carryd mcp`: carryd's memory as MCP tools over stdio, for agents that speak MCP.

Tools: `recall` (L0 abstracts of the best-matching entries), `expand` (full text by id),
`carry` (the workspace's current carry) and `status` (daemon, model, index, carries). Recall and
expand go through `recall.access` (the `RecallAccess` every command uses): the warm daemon over
its control socket when one answers, and otherwise in-process — the index and a lazily loaded
model, opened once for the server's life. Every answer passes through the redactor (I3),
whichever path produced it.

Built on the official `mcp` Python SDK, an optional extra (`pip install 'carryd[mcp]'`): the
rest of carryd never imports it. The SDK runs synchronous tools on worker threads; carryd's
work runs on one thread of its own, so the in-process index is only ever used from it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from carryd.daemon.errors import UsageError
from carryd.index.errors import CarrydError

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.daemon.recall.access import RecallAccess

log = logging.getLogger(__name__)

T = TypeVar("T")
# A warm recall takes tens of milliseconds; this only guards against a wedged daemon.
DAEMON_TIMEOUT = 10.0
INSTRUCTIONS = (
    "carryd keeps this project's Markdown memory indexed. `recall` finds entries (short "
    "abstracts with ids); `expand` gives an entry's full text by id; `carry` returns the "
    "hand-off carry of the workspace (ledger, plan, anchors); `status` says whether the index "
    "and carries are fresh."
)


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
        self._default_workspace = default_workspace
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

        name = workspace or self._default_workspace
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


def build_server(service: MemoryService, run: Callable[[Callable[[], T]], Any]) -> Any:
    """Given the service and how to run its calls (on carryd's own thread), return the MCP
    server with the four tools registered."""
    try:
        from mcp.server.mcpserver import MCPServer as Server
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x (the type checker sees whichever SDK is installed)
        from mcp.server.fastmcp import (  # type: ignore[attr-defined, no-redef, unused-ignore]
            FastMCP as Server,
        )
        from mcp.server.fastmcp.exceptions import (  # type: ignore[no-redef, unused-ignore]
            ToolError,
        )

    server = Server("carryd", instructions=INSTRUCTIONS)

    async def answer(call: Callable[[], Any]) -> Any:
        # carryd's own errors say what is wrong and how to fix it: the model reads them as a
        # tool error (anything else is a crash the SDK reports without its text).
        try:
            return redacted(await run(call))
        except CarrydError as error:
            raise ToolError(redacted(str(error))) from error

    @server.tool()
    async def recall(
        query: str,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> dict[str, Any]:
        """Search the memory (lexical + semantic). Returns hits with an id, path, lines, a
        ~100-character abstract (l0) and a confidence. Without `workspace` the whole root is
        searched; with it, that workspace plus root-level memory. `min_confidence` 0 ranks
        every candidate. Use `expand` with a hit's id for its full text."""
        return await answer(lambda: service.recall(query, workspace, limit, min_confidence))

    @server.tool()
    async def expand(ids: list[str]) -> dict[str, Any]:
        """Full text of memory entries by id (mem_…), read from the current files. Ids that
        are unknown or whose file changed are listed under `missing` with the reason."""
        return await answer(lambda: service.expand(ids))

    @server.tool()
    async def carry(workspace: str | None = None) -> dict[str, Any]:
        """The workspace's continuation carry (ledger, plan, anchors, recalled memory) as
        Markdown in `text`, with its path and freshness (`state`: fresh, fallback, stale,
        missing). Without `workspace`, the workspace of the directory the server runs in."""
        return await answer(lambda: service.carry(workspace))

    @server.tool()
    async def status() -> dict[str, Any]:
        """carryd's health: the daemon, the embedding model, index counts and each
        workspace's carry (fresh or stale)."""
        return await answer(service.status)

    return server


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """`carryd mcp [--workspace W]`: serve the tools on stdio until the client goes away."""
    try:
        import mcp  # noqa: F401
    except ImportError as error:
        raise UsageError(
            "carryd mcp needs the MCP SDK, an optional extra: pip install 'carryd[mcp]'"
        ) from error
    settings.root_path  # noqa: B018 — no root is a ConfigError (exit 2) before serving
    default = getattr(args, "workspace", None) or _workspace_of_cwd(settings)
    service = MemoryService(settings, default_workspace=default)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryd-mcp")

    async def run(call: Callable[[], T]) -> T:
        return await asyncio.wrap_future(executor.submit(call))

    try:
        build_server(service, run).run("stdio")
    finally:
        executor.submit(service.close).result()
        executor.shutdown(wait=True)
    return 0


def _workspace_of_cwd(settings: Settings) -> str | None:
    from carryd.daemon.hosts.workspace_lookup import find_workspace

    return find_workspace(settings, os.getcwd())
