"""The daemon side's errors: bad config, bad usage, a daemon already running.

They extend `carryd.index.errors.CarrydError` (the pure core keeps its own errors there). The
CLI maps them to exit codes in one place (`carryd.daemon.cli`): `ConfigError` and
`UsageError` exit 2, every other `CarrydError` exits 1.
"""

from __future__ import annotations

from carryd.index.errors import CarrydError

__all__ = ["CarrydError", "ConfigError", "DaemonRunning", "UsageError"]


class ConfigError(CarrydError):
    """A config file, key or value is wrong; the message names the key path."""


class UsageError(CarrydError):
    """The command line asks for something that cannot be done (exit 2)."""


class DaemonRunning(CarrydError):
    """Another carryd daemon already serves this root."""
