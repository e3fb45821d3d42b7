"""The host registry: which hosts carryd answers and their events (`carryd hook HOST EVENT`
dispatches on it in `hook_command.py`; `carryd setup` and the CLI's choices read it).

Adding a host is one new module `host_<name>.py` that defines `EVENTS` (event name →
`carryd.daemon.hosts.hook_events.HookEvent`, mostly built by `hook_events.session_start` and
`prompt_submit` from the host's `Wire`) and `CLEAR_COMMAND`, plus its line in `HOSTS` below.
The host-neutral work (settings, bypass, quiet failures, never failing the host) is
`carryd.daemon.hosts.hook_events`; the carry itself is `carryd.daemon.hosts.handoff`.

Kept import-light: the CLI reads `HOSTS` to build `carryd hook`'s choices on every call, and
a host module is imported only when its hook runs.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not `typing`'s: every hook reads the registry
if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["HOSTS", "Host", "event_names"]


class Host:
    """One host: the module of its adapter and the hook events it answers."""

    __slots__ = ("events", "module")

    def __init__(self, module: str, events: tuple[str, ...]) -> None:
        self.module = module
        self.events = events

    def adapter(self) -> ModuleType:
        """Return the host's module (`EVENTS`, `CLEAR_COMMAND`), imported on first use."""
        return importlib.import_module(self.module)


HOSTS: dict[str, Host] = {
    "claude-code": Host(
        "carryd.daemon.hosts.claude_code",
        ("session-start", "prompt-submit", "post-tool-use", "stop", "pre-compact", "statusline"),
    ),
    "codex": Host(
        "carryd.daemon.hosts.codex", ("session-start", "prompt-submit", "post-tool-use", "stop")
    ),
    "gemini": Host(
        "carryd.daemon.hosts.gemini",
        ("session-start", "before-agent", "after-tool", "pre-compress", "after-agent"),
    ),
}


def event_names() -> list[str]:
    """Return every event some host answers, in registry order (the CLI's choices)."""
    return list(dict.fromkeys(event for host in HOSTS.values() for event in host.events))
