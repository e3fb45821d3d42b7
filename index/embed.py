"""Given L0 abstracts or a query, return L2-normalised float32 vectors (the fastembed shell).

This is the one module in `index/` that loads a model. fastembed (and with it onnxruntime) is
imported inside functions only, so importing carryd stays instant.

- `ModelIdentity` is the embedding fingerprint stored with every vector: name, file, prefixes,
  dim and pooling. A different identity means different vectors: the store re-embeds everything
  and nothing else triggers a full re-embed.
- `identity_for_folder` infers the identity of a local model folder (`model_path`): the ONNX file,
  the dimension from `config.json`, the pooling from `1_Pooling/config.json`, the name from the
  folder's config, and E5's `query: ` / `passage: ` prefixes only for E5 models. Keys the user set
  explicitly win over what is inferred.
- `FastEmbedder` implements `Embedder` on fastembed. It adds the prefixes (fastembed does not),
  loads the ONNX session lazily on first use, and turns every way a model can be missing into
  `EmbedderUnavailable` with a message that names what is missing and the fix.

The identity itself (`ModelIdentity`, the default, configured keys) lives in `model_identity.py`
and the choice of ONNX output in `onnx_output.py`; both are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from carryd.index.errors import EmbedderUnavailable
from carryd.index.model_identity import (
    DEFAULT_IDENTITY,
    E5_PASSAGE_PREFIX,
    E5_QUERY_PREFIX,
    IDENTITY_KEYS,
    POOLINGS,
    ModelIdentity,
    Pooling,
    checked_identity,
    identity_for_default,
    is_e5,
    known_keys,
)
from carryd.index.onnx_output import FLOAT_TYPES, OnnxOutput, OutputProblem, pick_output

__all__ = [
    "DEFAULT_IDENTITY",
    "E5_PASSAGE_PREFIX",
    "E5_QUERY_PREFIX",
    "FLOAT_TYPES",
    "IDENTITY_KEYS",
    "POOLINGS",
    "DownloadGuard",
    "Embedder",
    "FastEmbedder",
    "ModelIdentity",
    "OnnxOutput",
    "OutputProblem",
    "Pooling",
    "identity_for_default",
    "identity_for_folder",
    "is_e5",
    "known_keys",
    "pick_output",
]

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Where an ONNX file usually sits in a model folder, most likely first.
ONNX_CANDIDATES = ("model.onnx", "onnx/model_quantized.onnx", "onnx/model.onnx")
FIX_HINT = "set model.model_path in the config or CARRYD_MODEL_PATH to a local model folder"


class Embedder(Protocol):
    identity: ModelIdentity

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Given passages, return float32 [n, dim], L2-normalised, passage prefix added."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Given a query, return float32 [dim], L2-normalised, query prefix added."""
        ...


class DownloadGuard(Protocol):
    """The daemon side's say on downloading the default model (daemon/indexer/model_fetch.py): it
    probes the network, remembers a failed download for a while and words the messages."""

    def before_download(self, identity: ModelIdentity) -> str | None:
        """None: go ahead and download; else the message that says why not."""
        ...

    def download_failed(self, identity: ModelIdentity, detail: str) -> str:
        """Remember a failed download; return the message to show."""
        ...

    def download_succeeded(self, identity: ModelIdentity) -> None: ...


def identity_for_folder(folder: Path, configured: Mapping[str, Any]) -> ModelIdentity:
    """Given a local model folder and the explicitly configured model keys, return its identity.

    Configured keys win; the rest is inferred from the folder. Raises EmbedderUnavailable when
    the folder lacks what a model needs (an ONNX file, tokenizer.json, a known dimension).
    """
    if not folder.is_dir():
        raise EmbedderUnavailable(
            f"model folder {folder} does not exist; {FIX_HINT}, or unset it to use the "
            "default model"
        )
    config = _read_json(folder / "config.json")
    file = configured.get("file") or _find_onnx(folder)
    if not (folder / file).is_file():
        raise EmbedderUnavailable(f"model folder {folder}: no ONNX file {file!r}; {FIX_HINT}")
    if not (folder / "tokenizer.json").is_file():
        raise EmbedderUnavailable(
            f"model folder {folder}: tokenizer.json is missing (it sits next to the ONNX file "
            f"in a model download); {FIX_HINT}"
        )
    name = configured.get("name") or _folder_name(folder, config)
    dim = configured.get("dim") or config.get("hidden_size") or config.get("d_model")
    if not isinstance(dim, int) or dim <= 0:
        raise EmbedderUnavailable(
            f"model folder {folder}: cannot tell the embedding dimension (no 'hidden_size' in "
            "config.json); set model.dim in the config"
        )
    prefixes_default = (E5_QUERY_PREFIX, E5_PASSAGE_PREFIX) if is_e5(name) else ("", "")
    identity = ModelIdentity(
        name=name,
        file=file,
        query_prefix=configured.get("query_prefix", prefixes_default[0]),
        passage_prefix=configured.get("passage_prefix", prefixes_default[1]),
        dim=dim,
        pooling=configured.get("pooling") or _folder_pooling(folder),
    )
    return checked_identity(identity, source=str(folder))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _find_onnx(folder: Path) -> str:
    for candidate in ONNX_CANDIDATES:
        if (folder / candidate).is_file():
            return candidate
    found = sorted(
        path.relative_to(folder).as_posix()
        for pattern in ("*.onnx", "onnx/*.onnx")
        for path in folder.glob(pattern)
        if path.is_file()
    )
    if len(found) == 1:
        return found[0]
    if not found:
        raise EmbedderUnavailable(
            f"model folder {folder}: no ONNX model file (looked for "
            f"{', '.join(ONNX_CANDIDATES)} and any *.onnx); {FIX_HINT}"
        )
    raise EmbedderUnavailable(
        f"model folder {folder}: several ONNX files ({', '.join(found)}); set model.file in "
        "the config to the one to use"
    )


def _folder_name(folder: Path, config: Mapping[str, Any]) -> str:
    name = config.get("_name_or_path")
    # A local path recorded at export time names a machine, not a model.
    if isinstance(name, str) and name.strip() and not os.path.isabs(name):
        return name.strip()
    return folder.resolve().name


def _folder_pooling(folder: Path) -> str:
    pooling = _read_json(folder / "1_Pooling" / "config.json")
    if pooling.get("pooling_mode_cls_token") and not pooling.get("pooling_mode_mean_tokens"):
        return "cls"
    return "mean"


# Loaded models by (identity, folder, cache, threads): a process loads each model once, however
# many embedders (a reload, a one-shot sync next to the daemon's) ask for it.
_SESSIONS: dict[tuple[str, str, str, int], Any] = {}


class FastEmbedder:
    """An `Embedder` on fastembed: a local folder (`model_dir`) or fastembed's download cache."""

    def __init__(
        self,
        identity: ModelIdentity,
        *,
        model_dir: Path | None = None,
        cache_dir: Path | None = None,
        threads: int = 0,
        batch_size: int = 64,
        allow_download: bool = True,
        download_guard: DownloadGuard | None = None,
    ) -> None:
        self.identity = identity
        self.download_guard = download_guard
        self.model_dir = model_dir
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = max(1, batch_size)
        self.allow_download = allow_download
        self._model: Any = None

    def load(self) -> None:
        """Load the ONNX session now (it loads on first use otherwise); EmbedderUnavailable
        when the model cannot be had."""
        if self._model is None:
            place = (self.identity.key(), str(self.model_dir), str(self.cache_dir), self.threads)
            self._model = _SESSIONS.get(place)
            if self._model is None:
                self._model = _SESSIONS[place] = self._create()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Given passages, return float32 [n, dim], L2-normalised, passage prefix added."""
        import numpy as np

        prefix = self.identity.passage_prefix
        # Batches padded to their longest text: embedding in length order wastes no padding.
        order = sorted(range(len(texts)), key=lambda position: len(texts[position]))
        vectors = self._embed([prefix + texts[position] for position in order])
        result = np.empty_like(vectors)
        result[order] = vectors
        return result

    def embed_query(self, text: str) -> np.ndarray:
        """Given a query, return float32 [dim], L2-normalised, query prefix added."""
        result: np.ndarray = self._embed([self.identity.query_prefix + text])[0]
        return result

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        vectors = np.asarray(
            list(self._model.embed([_encodable(t) for t in texts], batch_size=self.batch_size)),
            dtype=np.float32,
        )
        if vectors.ndim != 2 or vectors.shape[1] != self.identity.dim:
            raise EmbedderUnavailable(
                self._unusable_message(
                    f"it returns vectors of shape {vectors.shape[1:]}, not the configured dim "
                    f"{self.identity.dim}; fix model.dim in the config",
                    fixed=True,
                )
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        return vectors

    def _create(self) -> Any:
        try:
            from fastembed import TextEmbedding
            from loguru import logger as fastembed_logger
        except ImportError as error:
            raise EmbedderUnavailable(
                f"fastembed is not installed ({error}); reinstall carryd with its dependencies"
            ) from error
        # fastembed logs each failed source at ERROR; our one EmbedderUnavailable says it better.
        fastembed_logger.disable("fastembed")
        model = self._load_or_download(TextEmbedding)
        # fastembed pools the ONNX graph's first output. A sentence-transformers export can have
        # other outputs first (input ids, a pooled vector): take the token embeddings by name.
        outputs = _onnx_outputs(model)
        if outputs is not None:
            chosen = pick_output(outputs, self.identity.dim)
            if isinstance(chosen, OutputProblem):
                raise EmbedderUnavailable(self._unusable_message(chosen.reason, fixed=chosen.fixed))
            if chosen != outputs[0].name:
                log.info("model %s: pooling the ONNX output %r", self._where(), chosen)
                model = self._construct(TextEmbedding, output=chosen)
        self._check_produces_vectors(model)
        return model

    def _load_or_download(self, text_embedding: Any) -> Any:
        """A local folder, or the default model from the cache; only when it is not cached and
        a download is allowed, the guard decides (fast) whether to try."""
        guard = self.download_guard
        if self.model_dir is not None or not self.allow_download or guard is None:
            return self._construct(text_embedding, output=None)
        try:
            return self._construct(text_embedding, output=None, local_only=True)
        except EmbedderUnavailable:
            pass  # not cached (or a damaged cache): a download is needed
        refusal = guard.before_download(self.identity)
        if refusal is not None:
            raise EmbedderUnavailable(refusal)
        try:
            model = self._construct(text_embedding, output=None)
        except EmbedderUnavailable as error:
            cause = error.__cause__ or error
            raise EmbedderUnavailable(
                guard.download_failed(self.identity, _brief(cause))
            ) from error
        guard.download_succeeded(self.identity)
        return model

    def _construct(
        self, text_embedding: Any, *, output: str | None, local_only: bool = False
    ) -> Any:
        from fastembed.common.model_description import ModelSource, PoolingType

        identity = self.identity
        # Our own registry name per identity (and output): never collides with fastembed's
        # built-in descriptions (whose pooling/file may differ) nor with another folder's model.
        digest = hashlib.sha256(f"{identity.key()}|{output}".encode()).hexdigest()[:16]
        registered = "carryd/" + digest
        source = identity.name if self.model_dir is None else registered
        if not any(
            model["model"].lower() == registered for model in text_embedding.list_supported_models()
        ):
            text_embedding.add_custom_model(
                model=registered,
                pooling=PoolingType.CLS if identity.pooling == "cls" else PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=source),
                dim=identity.dim,
                model_file=identity.file,
                output_name=output,
            )
        options: dict[str, Any] = {
            "model_name": registered,
            "threads": self.threads or None,
            # onnxruntime's arena never hands memory back: wrong for a long-lived daemon.
            "enable_cpu_mem_arena": False,
        }
        if self.model_dir is not None:
            options["specific_model_path"] = str(self.model_dir)
        else:
            if self.cache_dir is not None:
                options["cache_dir"] = str(self.cache_dir)
            if local_only or not self.allow_download:
                options["local_files_only"] = True
        try:
            return text_embedding(**options)
        # fastembed, huggingface_hub and onnxruntime raise many unrelated types here (ValueError,
        # OSError, onnxruntime's Fail/InvalidProtobuf/NoSuchFile, HTTP errors); each one means
        # "this model cannot be loaded", which the caller turns into a degraded index.
        except Exception as error:  # noqa: BLE001 — third-party boundary, re-raised as ours
            raise EmbedderUnavailable(self._unavailable_message(error)) from error

    def _check_produces_vectors(self, model: Any) -> None:
        """Embed one short text: a model that loads but cannot make a vector of the identity's
        dimension (wrong outputs, a tokenizer that does not fit the graph, a wrong dim) is
        unusable, said once here, not as a traceback in the middle of a sync."""
        import numpy as np

        try:
            vectors = list(model.embed(["carryd model check"], batch_size=1))
        except Exception as error:  # noqa: BLE001 — third-party boundary, re-raised as ours
            raise EmbedderUnavailable(
                self._unusable_message(f"embedding a test sentence failed: {_brief(error)}")
            ) from error
        vector = np.asarray(vectors[0]) if len(vectors) == 1 else np.zeros(0)
        if vector.shape != (self.identity.dim,):
            raise EmbedderUnavailable(
                self._unusable_message(
                    f"it makes vectors of shape {vector.shape}, not ({self.identity.dim},); "
                    "fix model.dim in the config (or hidden_size in config.json)",
                    fixed=True,
                )
            )
        if not np.issubdtype(vector.dtype, np.floating) or not np.all(np.isfinite(vector)):
            raise EmbedderUnavailable(
                self._unusable_message(f"its vectors are not finite floats ({vector.dtype})")
            )

    def _where(self) -> str:
        if self.model_dir is not None:
            return f"in {self.model_dir} ({self.identity.file})"
        return f"{self.identity.name} ({self.identity.file})"

    def _unusable_message(self, reason: str, *, fixed: bool = False) -> str:
        """fixed: the reason already says how to fix it; otherwise the general fix follows."""
        fix = "" if fixed else f"; {FIX_HINT}"
        return f"the model {self._where()} cannot make embeddings: {reason}{fix}"

    def _unavailable_message(self, error: BaseException) -> str:
        detail = f"{type(error).__name__}: {error}".strip()
        if self.model_dir is not None:
            return (
                f"cannot load the model in {self.model_dir} ({self.identity.file}): {detail}; "
                f"{FIX_HINT}"
            )
        where = self.cache_dir or "fastembed's cache"
        offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes"}
        why = (
            "downloads are off (HF_HUB_OFFLINE)"
            if offline
            else "downloads are off (model.allow_download = false)"
            if not self.allow_download
            else "it could not be downloaded"
        )
        # With downloads off, fastembed's own error ("ValueError: Could not load model
        # carryd/87d7… from any source") says nothing the sentence does not: leave it out.
        cause = "" if (offline or not self.allow_download) else f": {detail}"
        return (
            f"the default model {self.identity.name} ({self.identity.file}) is not in {where} "
            f"and {why}{cause}; {FIX_HINT}, or allow a one-time download"
        )


def _onnx_outputs(model: Any) -> tuple[OnnxOutput, ...] | None:
    """Given a loaded fastembed TextEmbedding, return its ONNX session's outputs, or None when
    this fastembed keeps them elsewhere (then only the test sentence checks the model)."""
    session = getattr(getattr(model, "model", None), "model", None)
    get_outputs = getattr(session, "get_outputs", None)
    if get_outputs is None:
        return None
    try:
        return tuple(
            OnnxOutput(
                name=str(output.name),
                type=str(output.type),
                shape=tuple(
                    axis if isinstance(axis, int | str) or axis is None else None
                    for axis in (output.shape or ())
                ),
            )
            for output in get_outputs()
        )
    except Exception:  # noqa: BLE001 — an introspection nicety, never a reason to fail
        return None


def _encodable(text: str) -> str:
    """Given a text, return it with lone surrogates (the undecodable bytes of a command-line
    argument) as U+FFFD: the tokenizer raises a TypeError on them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _brief(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}"
