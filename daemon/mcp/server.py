"""`carryd mcp [--workspace W]`: serve recall, expand, carry and status as MCP tools on stdio
until the client goes away.

Nothing heavy loads before the first answer: the wire (`wire.serve`) answers `initialize`,
`ping` and `tools/list` from constants, and the index, the model and the daemon's socket are
touched only by the first `tools/call`. The tools run one at a time, in the order they came.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from carryd.daemon.mcp.tools import INSTRUCTIONS, TOOLS, MemoryService, call_tool
from carryd.daemon.mcp.wire import serve

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

__all__ = ["cmd_mcp"]


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Given `carryd mcp`'s args and the settings, serve the tools on stdio; return 0."""
    settings.root_path  # noqa: B018 — no root is a ConfigError (exit 2) before serving
    service = MemoryService(settings, default_workspace=None)
    explicit = getattr(args, "workspace", None)

    def default_workspace() -> str | None:
        if explicit:
            return str(explicit)
        from carryd.daemon.hosts.workspace_lookup import find_workspace

        return find_workspace(settings, os.getcwd())

    def tools_call(params: Mapping[str, Any]) -> dict[str, Any]:
        if service.default_workspace is None:
            service.default_workspace = default_workspace()
        return call_tool(service, params)

    try:
        serve(
            {"tools/list": lambda params: {"tools": TOOLS}, "tools/call": tools_call},
            server_info={"name": "carryd", "version": _version()},
            instructions=INSTRUCTIONS,
        )
    finally:
        service.close()
    return 0


def _version() -> str:
    try:
        from carryd.daemon.version import carryd_version

        return carryd_version()
    except Exception:  # noqa: BLE001 — a version is a courtesy, never a reason not to serve
        return "unknown"
