"""`carryd mcp [--workspace W]`: serve recall, expand, carry and status as MCP tools on stdio
until the client goes away.

Nothing heavy loads before the first answer: the wire (`wire.serve`) answers `initialize`,
`ping` and `tools/list` from constants, and the index, the model and the daemon's socket are
touched only by the first `tools/call`. The tools run one at a time, in the order they came.
"""

from __future__ import annotations

import os
import sys

from carryd.daemon.mcp.tools import INSTRUCTIONS, TOOLS, MemoryService, call_tool
from carryd.daemon.mcp.wire import serve

TYPE_CHECKING = False  # not `typing`'s: the server answers `initialize` before loading it
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from carryd.daemon.config import Settings

__all__ = ["cmd_mcp", "fast_main"]

OPTIONS = ("--root", "--config", "--workspace")


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Given `carryd mcp`'s args and the settings, serve the tools on stdio; return 0."""
    settings.root_path  # noqa: B018 — no root is a ConfigError (exit 2) before serving
    return _serve(lambda: settings, getattr(args, "workspace", None))


def fast_main(argv: Sequence[str]) -> int | None:
    """Given the command line after `carryd` (starting with `mcp`), serve; return the exit
    code, or None when it is not a plain `carryd mcp` call (the full parser takes it). Only
    the root is checked before serving: the full settings load with the first tool call."""
    words = list(argv)
    if words[:1] != ["mcp"]:
        return None
    found: dict[str, str] = {}
    rest = words[1:]
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if name in OPTIONS and equals:
            found[name[2:]] = value
        elif word in OPTIONS and rest and not rest[0].startswith("-"):
            found[word[2:]] = rest.pop(0)
        else:
            return None  # -v, --help, a typo: the full parser
    from carryd.daemon.hosts.hook_settings import hook_settings
    from carryd.index.errors import CarrydError

    config, root = found.get("config"), found.get("root")
    try:
        hook_settings(config, root).root_path  # noqa: B018 — no root: exit 2 before serving
    except CarrydError as error:
        print(f"carryd: {error}", file=sys.stderr)
        return 2

    def full() -> Settings:
        from carryd.daemon.config import load_settings

        return load_settings(config, root=root)

    return _serve(full, found.get("workspace"))


def _serve(settings: Callable[[], Settings], explicit: str | None) -> int:
    """Serve until stdin closes; the settings and the service are made on the first call."""
    service: list[MemoryService] = []

    def tools_call(params: Mapping[str, Any]) -> dict[str, Any]:
        if not service:
            loaded = settings()
            service.append(
                MemoryService(loaded, default_workspace=explicit or _cwd_workspace(loaded))
            )
        return call_tool(service[0], params)

    try:
        serve(
            {"tools/list": lambda params: {"tools": TOOLS}, "tools/call": tools_call},
            server_info={"name": "carryd", "version": _version()},
            instructions=INSTRUCTIONS,
        )
    finally:
        for running in service:
            running.close()
    return 0


def _cwd_workspace(settings: Settings) -> str | None:
    from carryd.daemon.hosts.workspace_lookup import find_workspace

    return find_workspace(settings, os.getcwd())


def _version() -> str:
    try:
        from carryd.daemon.version import carryd_version

        return carryd_version()
    except Exception:  # noqa: BLE001 — a version is a courtesy, never a reason not to serve
        return "unknown"
