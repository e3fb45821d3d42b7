"""SIGHUP's settings reload, pure: which keys changed, which apply now and which wait for a
restart (the root, the state folder and the model are kept until then)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from carryd.daemon.config import Settings

# Settings a running daemon cannot switch to: they are kept until a restart.
# `model_keys_written` (which [model] keys the file names) is part of the model identity.
RESTART_ONLY = ("root", "index.state_dir", "model", "model_keys_written")


def changed_keys(old: object, new: object, prefix: str = "") -> list[str]:
    """Given two settings values, return the dotted keys whose values differ."""
    if dataclasses.is_dataclass(old) and dataclasses.is_dataclass(new):
        keys: list[str] = []
        for field in dataclasses.fields(old):
            if field.name == "config_file":
                continue
            keys += changed_keys(
                getattr(old, field.name), getattr(new, field.name), f"{prefix}{field.name}."
            )
        return keys
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return [] if dict(old) == dict(new) else [prefix.rstrip(".")]
    return [] if old == new else [prefix.rstrip(".")]


def merge_reload(old: Settings, new: Settings) -> tuple[Settings, list[str], list[str]]:
    """Given the running and the re-read settings, return (effective, applied, kept) keys."""
    changed = changed_keys(old, new)
    kept = [k for k in changed if any(k == r or k.startswith(r + ".") for r in RESTART_ONLY)]
    applied = [k for k in changed if k not in kept]
    index = dataclasses.replace(new.index, state_dir=old.index.state_dir)
    effective = dataclasses.replace(
        new,
        root=old.root,
        model=old.model,
        model_keys_written=old.model_keys_written,
        index=index,
    )
    return effective, applied, kept
