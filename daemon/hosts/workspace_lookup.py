"""Given a host's working directory, find its workspace: the config's `[workspaces]` map (a
mapped project's subfolders included), the directory's own name, or — inside a git work tree —
a folder between it and the tree's top level (a session in `shop/backend/api` of the `shop`
repository works in `shop`).

Which names are workspaces is `layout.is_workspace`, the one predicate (so `notes/` and the
state folder never are); this module only proposes candidates, best first, and asks it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from carryd.daemon.layout import is_workspace

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

__all__ = ["find_workspace", "git_toplevel", "workspace_candidates"]


def find_workspace(settings: Settings, cwd: str) -> str | None:
    """Given the settings and a host's working directory, return its workspace, or None when
    no candidate is a workspace of the root (the caller names `settings.workspace_for(cwd)`)."""
    configured = settings.workspace_for(cwd)
    if is_workspace(settings, configured):
        return configured  # the common case: no git lookup
    directory = Path(os.path.expanduser(cwd)).resolve(strict=False)  # "~nobody" stays as is
    candidates = workspace_candidates(configured, directory, git_toplevel(directory))
    return next((name for name in candidates if is_workspace(settings, name)), None)


def workspace_candidates(
    configured: str, cwd: PurePath, git_top: PurePath | None
) -> tuple[str, ...]:
    """Given the workspace the config maps the directory to (its own name when unmapped), the
    directory and its git work tree's top level, return the names to try, best first: the
    configured one, then each folder from the directory up to the work tree's top level."""
    names = [configured]
    if git_top is not None and (cwd == git_top or git_top in cwd.parents):
        for folder in (cwd, *cwd.parents):
            names.append(folder.name)
            if folder == git_top:
                break
    return tuple(dict.fromkeys(name for name in names if name))


def git_toplevel(directory: Path) -> Path | None:
    """Given a directory, return the top level of the git work tree holding it, or None (a
    `.git` file or folder; no `git` process: the status line runs after every message)."""
    for folder in (directory, *directory.parents):
        try:
            if (folder / ".git").exists():
                return folder
        except OSError:
            return None
    return None
