"""`carryd hook HOST EVENT`: answer one host hook on stdout, whatever happens.

The registry (`registry.HOSTS`) names the host's module; its `EVENTS` say what to do, and
`hook_events.run_hook` keeps the host safe around it.

`fast_main` is the way in that the `carryd` command takes for `carryd hook …`: it reads the
few options a hook has by hand, so a hook never imports `argparse`, `logging` or `typing`
(together more than a bare interpreter's own start), and leaves anything it does not
recognise to the full parser.
"""

from __future__ import annotations

from carryd.daemon.hosts.hook_settings import LazyLog
from carryd.daemon.hosts.registry import HOSTS, event_names

TYPE_CHECKING = False  # not `typing`'s: every hook comes through here
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

log = LazyLog(__name__)

__all__ = ["cmd_hook", "fast_main"]

OPTIONS = ("--root", "--config", "--wrap")


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


def fast_main(argv: Sequence[str]) -> int | None:
    """Given the command line after `carryd` (starting with `hook`), answer the hook and
    return 0; return None when it is not a plain hook call (the full parser takes it)."""
    from types import SimpleNamespace

    words = list(argv)
    if len(words) < 3 or words[0] != "hook" or words[1] not in HOSTS:
        return None
    if words[2] not in event_names():
        return None
    found: dict[str, str] = {}
    verbose = 0
    rest = words[3:]
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if word in ("-v", "--verbose"):
            verbose += 1
        elif name in OPTIONS and equals:
            found[name[2:]] = value
        elif word in OPTIONS and rest and not rest[0].startswith("-"):
            found[word[2:]] = rest.pop(0)
        else:
            return None  # --help, a typo, an option without its value: the parser says
    if verbose:
        import logging

        logging.basicConfig(
            level=max(logging.DEBUG, logging.WARNING - 10 * verbose),
            format="carryd %(levelname)s %(name)s: %(message)s",
        )
    args = SimpleNamespace(command="hook", host=words[1], event=words[2], verbose=verbose,
                           root=found.get("root"), config=found.get("config"),
                           wrap=found.get("wrap"))  # fmt: skip
    return cmd_hook(args)  # type: ignore[arg-type]
