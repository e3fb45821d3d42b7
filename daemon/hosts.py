"""The host registry: `carryd hook HOST EVENT` dispatches here.

Adding a host is one new module `host_<name>.py` that defines `EVENTS` (event name →
`carryd.daemon.handoff.HookEvent`) plus its line in `HOSTS` below. The host-neutral work
(settings, bypass, planning the carry, never failing the host) is `carryd.daemon.handoff`.

Kept import-light: the CLI reads `HOSTS` to build `carryd hook`'s choices on every call, and
a host module is imported only when its hook runs.
"""

from __future__ import annotations

import argparse
import importlib
import logging
from dataclasses import dataclass
from typing import IO

log = logging.getLogger(__name__)

__all__ = ["HOSTS", "Host", "cmd_hook"]


@dataclass(frozen=True)
class Host:
    """One host: the module of its adapter and the hook events it answers."""

    module: str
    events: tuple[str, ...]


HOSTS: dict[str, Host] = {
    "claude-code": Host("carryd.daemon.host_claude_code", ("session-start", "statusline")),
    "codex": Host("carryd.daemon.host_codex", ("session-start",)),
}


def event_names() -> list[str]:
    """Return every event some host answers, in registry order (the CLI's choices)."""
    return list(dict.fromkeys(event for host in HOSTS.values() for event in host.events))


def cmd_hook(args: argparse.Namespace, *, stdin: IO[str] | None = None) -> int:
    """Given `carryd hook HOST EVENT`, answer the host's hook on stdout; return 0 — always."""
    from carryd.daemon.handoff import emit, run_hook  # lazy: only a running hook needs it

    host = HOSTS[args.host]
    if args.event not in host.events:
        # A hook must never fail its host, not even one wired to an event it does not have.
        log.warning("carryd hook: %s has no %s event", args.host, args.event)
        emit("")
        return 0
    events = importlib.import_module(host.module).EVENTS
    return run_hook(events[args.event], args, stdin=stdin)
