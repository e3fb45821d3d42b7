"""carryd's error hierarchy: every message names the file or key at fault and the fix.

The core's errors live here; the daemon's (`ConfigError`, `UsageError`, `DaemonRunning`) in
`carryd.daemon.errors`. The CLI maps them to exit codes in one place (`carryd.daemon.cli`).
"""

from __future__ import annotations

import errno


class CarrydError(Exception):
    """Base of every error carryd raises on purpose."""


class IndexCorrupt(CarrydError):
    """The index database cannot be used (truncated, corrupt, other schema or model)."""


class IndexUnavailable(CarrydError):
    """The index cannot be read or written for a reason outside it: the disk is full, the file
    system is read-only, permission is denied. The index itself is fine and is never moved."""


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


def describe_os_error(error: OSError, *, name_the_file: bool = True) -> str:
    """Given an OSError, return one line naming the file, what went wrong and the fix."""
    where = f"{error.filename}: " if error.filename and name_the_file else ""
    if error.errno == errno.ENOSPC:
        return f"{where}the disk is full; free space and run the command again"
    if error.errno == errno.EROFS:
        return f"{where}the file system is read-only; carryd writes its state there: mount it rw"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"{where}permission denied; give the user running carryd read and write access"
    return f"{where}{error.strerror or error}"
