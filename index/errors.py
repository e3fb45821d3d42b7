"""carryd's error hierarchy: every message names the file or key at fault and the fix.

The core's errors live here; the daemon's (`ConfigError`, `UsageError`, `DaemonRunning`) in
`carryd.daemon.errors`. The CLI maps them to exit codes in one place (`carryd.daemon.cli`).
"""

from __future__ import annotations


class CarrydError(Exception):
    """Base of every error carryd raises on purpose."""


class IndexCorrupt(CarrydError):
    """The index database cannot be used (truncated, corrupt, other schema or model)."""


class EmbedderUnavailable(CarrydError):
    """No embedding model can be loaded; the message says what is missing."""


class UnreadableFile(CarrydError):
    """A memory file was skipped: binary, not UTF-8, too large, unreadable or a link loop."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class PromptBudgetError(CarrydError):
    """The required segments of a carry alone do not fit the total budget."""
