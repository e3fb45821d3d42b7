"""What is root level in a memory root: the folders whose Markdown is the user's own
cross-workspace memory (besides Markdown files at the root itself).

Kept free of imports so that the workspace predicate (`carryd.daemon.layout`), which a
SessionStart hook and the status line ask on every call, does not load the entry parser.
"""

from __future__ import annotations

__all__ = ["ROOT_LEVEL_DIRS"]

ROOT_LEVEL_DIRS = ("notes",)
