"""Given configured model keys, return the `ModelIdentity` stored with every vector.

The identity is the embedding fingerprint: name, file, prefixes, dim and pooling. A different
identity means different vectors: the store re-embeds everything and nothing else triggers a
full re-embed. Pure: reading a local model folder's identity stays in the shell (`embed.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from carryd.index.errors import EmbedderUnavailable

Pooling = Literal["mean", "cls"]
POOLINGS: tuple[str, ...] = ("mean", "cls")
E5_QUERY_PREFIX = "query: "
E5_PASSAGE_PREFIX = "passage: "


@dataclass(frozen=True)
class ModelIdentity:
    """What makes two vectors comparable: same identity, same embedding space."""

    name: str
    file: str
    query_prefix: str
    passage_prefix: str
    dim: int
    pooling: str

    def key(self) -> str:
        """Given this identity, return the stable string stored with its vectors."""
        return json.dumps(
            {f.name: getattr(self, f.name) for f in fields(self)},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )


# The default model (DESIGN.md): multilingual E5 small, int8, downloaded once.
DEFAULT_IDENTITY = ModelIdentity(
    name="Xenova/multilingual-e5-small",
    file="onnx/model_quantized.onnx",
    query_prefix=E5_QUERY_PREFIX,
    passage_prefix=E5_PASSAGE_PREFIX,
    dim=384,
    pooling="mean",
)
IDENTITY_KEYS: tuple[str, ...] = tuple(f.name for f in fields(ModelIdentity))


def is_e5(name: str) -> bool:
    """Given a model name, return whether it is an E5 model (which needs prefixes)."""
    return "e5" in name.lower()


def identity_for_default(configured: Mapping[str, Any]) -> ModelIdentity:
    """Given the explicitly configured model keys, return the identity of a downloaded model.

    Without keys this is the default model; a configured other `name` gets E5 prefixes only when
    it is an E5 model, unless prefixes are configured too.
    """
    identity = replace(DEFAULT_IDENTITY, **known_keys(configured))
    if "name" in configured and not is_e5(identity.name):
        if "query_prefix" not in configured:
            identity = replace(identity, query_prefix="")
        if "passage_prefix" not in configured:
            identity = replace(identity, passage_prefix="")
    return checked_identity(identity, source="config")


def known_keys(configured: Mapping[str, Any]) -> dict[str, Any]:
    """Given configured model keys, return those that are identity fields."""
    return {key: value for key, value in configured.items() if key in IDENTITY_KEYS}


def checked_identity(identity: ModelIdentity, *, source: str) -> ModelIdentity:
    """Given an identity and where it came from, return it, or raise when its pooling is unknown."""
    if identity.pooling not in POOLINGS:
        raise EmbedderUnavailable(
            f"{source}: model pooling {identity.pooling!r} is not supported (use one of "
            f"{', '.join(POOLINGS)}); set model.pooling in the config"
        )
    return identity
