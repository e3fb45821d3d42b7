"""Where things are: the default config file, the memory root a folder is in, and the workspace
a directory works in — one rule each for the full settings (`carryd.daemon.config`) and the
hooks' light view (`carryd.daemon.hosts.hook_settings`), which must not import the config
module's dataclasses on every prompt."""

from __future__ import annotations

import os
import sys
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


def default_config_file() -> Path:
    """Return the config file read when neither --config nor CARRYD_CONFIG names one."""
    if sys.platform.startswith("linux"):
        # platformdirs' rule on Linux, without its import (~10 ms of every hook call).
        base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
        return Path(base) / "carryd" / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir("carryd")) / "config.toml"


def find_root(start: Path, state_dir: str) -> Path | None:
    """Given a folder, return the nearest folder at or above it holding `state_dir` as a
    folder (a memory root carryd has indexed), or None."""
    try:
        here = start.expanduser().absolute()
    except OSError:  # the current folder was deleted
        return None
    for folder in (here, *here.parents):
        if (folder / state_dir).is_dir():
            return folder
    return None
