"""Given the configured project folders and a host's working directory, the workspace it works
in — one rule for the full settings (`carryd.daemon.config.Settings.workspace_for`) and the
hooks' light view (`carryd.daemon.hosts.hook_settings`), which must not import the config
module's dataclasses on every prompt."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def workspace_for(workspaces: Mapping[str, str], directory: str | os.PathLike[str]) -> str:
    """Given project directory → workspace name and a working directory, return the workspace:
    the longest configured project directory containing it wins; otherwise the directory's own
    name."""
    # os.path.expanduser leaves an unknown "~user" as it is; Path.expanduser raises.
    target = Path(os.path.expanduser(directory)).resolve(strict=False)
    best: tuple[int, str] | None = None
    for project, workspace in workspaces.items():
        base = Path(os.path.expanduser(project)).resolve(strict=False)
        if target == base or base in target.parents:
            depth = len(base.parts)
            if best is None or depth > best[0]:
                best = (depth, workspace)
    return best[1] if best else target.name
