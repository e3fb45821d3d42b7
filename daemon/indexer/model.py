"""The embedding model as a daemon service: which one the settings name, and loading it.

One home for the model so that every command (index, recall, carry, hooks, status, the
daemon) resolves it the same way: a local folder (`model.model_path`, else
`CARRYD_MODEL_PATH`) or the configured default, cached under the platformdirs user cache.
The identity keys the user chose are recorded when the config is parsed
(`Settings.model_keys_written`), never by re-reading the file.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from carryd.daemon.config import ModelSettings, Settings
from carryd.daemon.indexer.model_fetch import guard_for
from carryd.index.embed import (
    IDENTITY_KEYS,
    FastEmbedder,
    identity_for_default,
    identity_for_folder,
)
from carryd.index.errors import EmbedderUnavailable

if TYPE_CHECKING:
    from carryd.index.embed import Embedder, ModelIdentity

__all__ = [
    "embedder_from_spec",
    "explicit_model_keys",
    "load_embedder_for",
    "model_spec",
    "model_cache_dir",
    "model_identity_text",
]


def load_embedder_for(
    settings: Settings, *, lazy: bool = False
) -> tuple[Embedder | None, str | None]:
    """Given the settings, return (embedder, None), or (None, why no model can be had).

    lazy=True only resolves the model's identity (cheap checks of the folder) and loads the
    ONNX session on first use, so a sync with nothing to embed never pays for it.
    """
    model = settings.model
    configured = explicit_model_keys(settings)
    embedder: FastEmbedder
    try:
        if model.model_path:
            folder = Path(model.model_path).expanduser()
            embedder = FastEmbedder(
                identity_for_folder(folder, configured),
                model_dir=folder,
                threads=model.threads,
                batch_size=model.batch_size,
            )
        else:
            embedder = FastEmbedder(
                identity_for_default(configured),
                cache_dir=model_cache_dir(settings),
                threads=model.threads,
                batch_size=model.batch_size,
                allow_download=model.allow_download,
                download_guard=guard_for(model_cache_dir(settings), model),
            )
        if not lazy:
            embedder.load()
    except EmbedderUnavailable as error:
        return None, str(error)
    return embedder, None


def model_cache_dir(settings: Settings) -> Path:
    """Given the settings, return where a downloaded model is cached."""
    if settings.model.cache_dir:
        return Path(settings.model.cache_dir).expanduser()
    import platformdirs  # lazy: `carryd status` and hooks never need it

    return Path(platformdirs.user_cache_dir("carryd")) / "models"


def explicit_model_keys(settings: Settings) -> dict[str, str | int]:
    """Given the settings, return the model identity keys the user chose.

    A key counts as chosen when the config file's [model] table names it (recorded at parse
    time), or when its value differs from the default.
    """
    defaults = ModelSettings()
    written = settings.model_keys_written
    chosen: dict[str, str | int] = {}
    for key in IDENTITY_KEYS:
        value = getattr(settings.model, key)
        if key in written or value != getattr(defaults, key):
            chosen[key] = value
    return chosen


def model_identity_text(settings: Settings, identity: ModelIdentity | None = None) -> str:
    """Given settings (and the loaded model's identity, when there is one), return how status
    names the model. Without a loaded model the identity is resolved as the embedder would
    (a local folder's own files, else the configured default) without loading anything."""
    if identity is None:
        embedder, _ = load_embedder_for(settings, lazy=True)
        identity = embedder.identity if embedder is not None else None
    model = settings.model
    name, file, dim, pooling = (
        (identity.name, identity.file, identity.dim, identity.pooling)
        if identity is not None
        else (model.name, model.file, model.dim, model.pooling)
    )
    where = f" from {model.model_path}" if model.model_path else ""
    return f"{name} ({file}, {dim}-d, {pooling}){where}"


# -- where a vector set's model is: recorded in the index, so recall can load it again ----------


def model_spec(settings: Settings, identity: ModelIdentity) -> str | None:
    """Given the settings and the identity of the model a sync embeds with, return how to load
    that model again (its identity key, folder or download cache, and the keys the user chose)
    as the JSON the index keeps beside its vectors; None when the settings name another model
    (a sync given an embedder of its own)."""
    resolved, _ = load_embedder_for(settings, lazy=True)
    if resolved is None or resolved.identity.key() != identity.key():
        return None
    model = settings.model
    return json.dumps(
        {
            "identity": identity.key(),
            "model_path": str(Path(model.model_path).expanduser()) if model.model_path else "",
            "cache_dir": "" if model.model_path else str(model_cache_dir(settings)),
            "configured": explicit_model_keys(settings),
        },
        sort_keys=True,
    )


def spec_identity(spec: str | None) -> str | None:
    """Given a recorded model spec (or None), return its identity key (None: no usable spec)."""
    try:
        identity = json.loads(spec or "").get("identity")
    except (ValueError, AttributeError):
        return None
    return identity if isinstance(identity, str) else None


def embedder_from_spec(settings: Settings, spec: str) -> tuple[Embedder | None, str | None]:
    """Given the settings and a recorded model spec (`model_spec`), return that model loaded,
    or (None, why not): its folder is gone, holds another model now, or it is not cached (a
    recorded model is never downloaded)."""
    try:
        data = json.loads(spec)
        configured = {str(k): v for k, v in dict(data.get("configured") or {}).items()}
        wanted = str(data["identity"])
        changes = {key: value for key, value in configured.items() if key in IDENTITY_KEYS}
        recorded = dataclasses.replace(
            settings.model,
            model_path=str(data.get("model_path") or ""),
            cache_dir=str(data.get("cache_dir") or ""),
            allow_download=False,
            **changes,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        return None, f"the index's record of its model is unreadable ({error})"
    again = dataclasses.replace(settings, model=recorded, model_keys_written=frozenset(changes))
    embedder, reason = load_embedder_for(again)
    if embedder is None:
        return None, reason
    if embedder.identity.key() != wanted:
        where = recorded.model_path or recorded.cache_dir
        return None, f"{where} no longer holds the model the index's vectors were made with"
    return embedder, None
