"""carryd's installed version, for `carryd --version` and the carry manifest.

Looked up only when asked: importing `importlib.metadata` costs every hook call ~15 ms, and a
status line runs after every message.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["VersionAction", "carryd_version"]


def carryd_version() -> str:
    """Return the installed distribution's version ("unknown" when run from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("carryd")
    except PackageNotFoundError:
        return "unknown"


class VersionAction(argparse.Action):
    """`--version`: print `carryd X.Y` and exit, the version looked up only then."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"carryd {carryd_version()}")
        parser.exit()
