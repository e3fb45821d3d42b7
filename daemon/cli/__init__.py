"""The command line: the argument parser, dispatch to each command's module, the one-shot commands.

May import every other daemon layer (it is the top); nothing imports it. `main` is the entry point:
`carryd hook …` goes straight to the hooks' own light way in (`hosts.hook_command.fast_main`: a
hook runs before every prompt and after every tool call), `carryd mcp …` to the server's
(`mcp.server.fast_main`: a client waits for its `initialize`), everything else to
`dispatch.main`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["hook"]:
        from carryd.daemon.hosts.hook_command import fast_main

        code = fast_main(words)
        if code is not None:
            return code
    if words[:1] == ["mcp"]:  # a client waits for `initialize`: no parser, no full settings
        from carryd.daemon.mcp.server import fast_main as serve_mcp

        code = serve_mcp(words)
        if code is not None:
            return code
    from carryd.daemon.cli.dispatch import main as parse_and_run

    return parse_and_run(argv)
