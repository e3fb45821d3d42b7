"""Recall as a daemon service: one `RecallAccess` protocol, two ways to reach it.

- `LocalRecall`: a warm `Recaller` over this process's store and model. Given the daemon's
  own store and model (the worker and the query thread), or opening them on first use (the
  CLI, carry runs, hooks) — so a command that never recalls never loads the model.
- `SocketRecall`: the running daemon's warm recaller over the control socket; when the
  daemon does not answer it falls back to a `LocalRecall` and stays there.

Callers (carry planning, hooks, `carryd recall|expand`, the daemon's query thread) hold a
`RecallAccess` and get typed `RecallAnswer`s; JSON exists only on the socket and the CLI.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from carryd.daemon import control
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.layout import open_store
from carryd.daemon.recall.recalling import Recaller, WarmSnapshot, answer_from_json
from carryd.index.errors import IndexCorrupt
from carryd.index.redact import redact

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.recall import RecallAnswer
    from carryd.index.store import Store

log = logging.getLogger(__name__)

__all__ = ["LocalRecall", "MissingIndex", "RecallAccess", "SocketRecall", "recall_access"]

# What a `LocalRecall` that opens its own store does when the root has no index yet:
# "sync" it once (`carryd recall` on a fresh root), "fail" (a carry run: recall without an
# index would silently find nothing), or "open" an empty one (hooks).
MissingIndex = Literal["sync", "fail", "open"]


class RecallAccess(Protocol):
    """Recall and expand, wherever the warm index lives."""

    def answer(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> RecallAnswer: ...

    def expand(self, ids: Sequence[str]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalRecall:
    """A warm `Recaller` in this process; store and model given, or opened on first use.

    Opening can fail (no index, a corrupt one, no root); the failure is remembered, so every
    later call fails the same way instead of retrying.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        model: tuple[Embedder | None, str | None] | None = None,
        lazy_model: bool = True,
        missing_index: MissingIndex = "open",
        warm: WarmSnapshot | None = None,
    ) -> None:
        self.settings = settings
        self._warm = warm
        self._store = store
        self._model = model
        self._lazy_model = lazy_model
        self._missing_index = missing_index
        self._opened: Store | None = None
        self._recaller: Recaller | None = None
        self._failure: Exception | None = None

    def recaller(self) -> Recaller:
        """Return the warm recaller, opening the store and the model on first use."""
        if self._failure is not None:
            raise self._failure
        if self._recaller is None:
            try:
                self._recaller = self._open()
            except Exception as error:  # noqa: BLE001 — remembered, re-raised to the caller
                self._failure = error
                raise
        return self._recaller

    def _open(self) -> Recaller:
        store = self._store if self._store is not None else self._open_store()
        if self._model is None:
            # Lazy: the ONNX session loads on the first query embedding, so `expand` never
            # pays for it; a model that then fails to load degrades that answer.
            self._model = load_embedder_for(self.settings, lazy=self._lazy_model)
        if self._missing_index == "sync" and self._opened is not None and self._fresh_index:
            log.info("no index at %s yet: syncing the root once", self.settings.db_path)
            sync_root(self.settings, store=store, embedder=self._model[0])
        embedder, degraded = self._model
        return Recaller(self.settings, store, embedder, degraded, warm=self._warm)

    def _open_store(self) -> Store:
        db_path = self.settings.db_path
        self._fresh_index = not db_path.exists()
        if self._fresh_index and self._missing_index == "fail":
            raise IndexCorrupt(
                f"{db_path}: no index: run `carryd index` (or the daemon) to build it"
            )
        store = open_store(self.settings)
        self._opened = store
        if self._missing_index == "fail" and store.recovered:
            raise IndexCorrupt(f"{db_path}: index was unusable: {store.recovered}")
        if store.recovered:
            # A corrupt index was moved aside: say so, and rebuild rather than answer from an
            # empty index as if nothing were remembered.
            log.warning("%s", store.recovered)
        # An empty file is an empty database (created): build it like a missing one.
        self._fresh_index = self._fresh_index or store.created
        return store

    def answer(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> RecallAnswer:
        return self.recaller().answer(
            query, workspace=workspace, limit=limit, min_confidence=min_confidence
        )

    def expand(self, ids: Sequence[str]) -> dict[str, Any]:
        return self.recaller().expand(ids)

    def close(self) -> None:
        """Close what this access opened (a store given to it stays open)."""
        if self._opened is not None:
            self._opened.close()
            self._opened = None
        self._recaller = None

    _fresh_index = False


class SocketRecall:
    """The running daemon's warm recall over the control socket, else a local fallback."""

    def __init__(
        self, settings: Settings, fallback: LocalRecall, *, timeout: float | None = None
    ) -> None:
        self.settings = settings
        self._fallback = fallback
        self._timeout = timeout
        self._daemon = True

    def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if not self._daemon:
            return None
        if self._timeout is None:
            answer = control.request(self.settings, method, params)
        else:
            answer = control.request(self.settings, method, params, timeout=self._timeout)
        if answer is None:
            log.info("carryd: the daemon did not answer; recalling in-process")
            self._daemon = False
            return None
        # The daemon redacts what it answers; redacting again here means an answer that
        # did not come from this user's carryd (or an older one) still shows no secret.
        return _redacted(answer)

    def answer(
        self,
        query: str,
        *,
        workspace: str | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> RecallAnswer:
        params = {
            "query": query,
            "workspace": workspace,
            "limit": limit,
            "min_confidence": min_confidence,
        }
        data = self._ask("recall", params)
        if data is not None:
            return answer_from_json(data)
        return self._fallback.answer(
            query, workspace=workspace, limit=limit, min_confidence=min_confidence
        )

    def expand(self, ids: Sequence[str]) -> dict[str, Any]:
        data = self._ask("expand", {"ids": list(ids)})
        return data if data is not None else self._fallback.expand(ids)

    def close(self) -> None:
        self._fallback.close()


def _redacted(value: Any) -> Any:
    """Given a JSON value from the socket, return it with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


def recall_access(
    settings: Settings,
    *,
    daemon: bool,
    timeout: float | None = None,
    missing_index: MissingIndex = "open",
) -> RecallAccess:
    """Given settings and whether a daemon may answer, return the recall access to use."""
    local = LocalRecall(settings, missing_index=missing_index)
    if not daemon:
        return local
    return SocketRecall(settings, local, timeout=timeout)


class ThreadRecall:
    """One daemon thread's recall over the daemon's one open store and model.

    The worker and the query thread each hold one (a `Recaller`'s caches are not shared
    across threads); it is rebuilt when the settings change (SIGHUP) and otherwise reloads
    its caches itself when the store's generation moves.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        degraded: str | None,
        *,
        warm: WarmSnapshot | None = None,
    ) -> None:
        self._store = store
        self._model = (embedder, degraded)
        self._local: LocalRecall | None = None
        # Shared with the daemon's other threads (one copy of the index in memory); kept
        # across a settings reload: the snapshot depends on the store and model only.
        self._warm = warm if warm is not None else WarmSnapshot(store, embedder)

    def current(self, settings: Settings) -> LocalRecall:
        """Given the thread's settings now, return its warm local recall."""
        if self._local is None or self._local.settings is not settings:
            self._local = LocalRecall(
                settings, store=self._store, model=self._model, warm=self._warm
            )
        return self._local

    def close(self) -> None:
        self._local = None
