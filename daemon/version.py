"""carryd's installed version, for `carryd --version` and the carry manifest."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["carryd_version"]


def carryd_version() -> str:
    """Return the installed distribution's version ("unknown" when run from a bare checkout)."""
    try:
        return version("carryd")
    except PackageNotFoundError:
        return "unknown"
