"""`carryd hook HOST EVENT`: answer one host hook on stdout, whatever happens.

The registry (`registry.HOSTS`) names the host's module; its `EVENTS` say what to do, and
`hook_events.run_hook` keeps the host safe around it.
"""

from __future__ import annotations

import argparse
import logging
from typing import IO

from carryd.daemon.hosts.registry import HOSTS

log = logging.getLogger(__name__)

__all__ = ["cmd_hook"]


def cmd_hook(args: argparse.Namespace, *, stdin: IO[str] | None = None) -> int:
    """Given `carryd hook HOST EVENT`, answer the host's hook on stdout; return 0 — always."""
    from carryd.daemon.hosts.hook_events import emit, run_hook  # lazy: only a running hook needs it

    host = HOSTS[args.host]
    if args.event not in host.events:
        # A hook must never fail its host, not even one wired to an event it does not have
        # (exit 2 from a UserPromptSubmit hook would block the person's prompt).
        log.warning("carryd hook: %s has no %s event", args.host, args.event)
        emit("")
        return 0
    return run_hook(host.adapter().EVENTS[args.event], args, stdin=stdin)
