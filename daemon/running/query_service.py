"""The daemon's query thread: recall, expand and status reads answered beside a running sync."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from carryd.daemon.errors import UsageError
from carryd.daemon.indexer.model import model_identity_text
from carryd.daemon.recall.access import ThreadRecall

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.daemon.recall.recalling import Recaller, WarmSnapshot
    from carryd.daemon.running.daemon_state import DaemonState
    from carryd.index.embed import Embedder
    from carryd.index.store import Store


class QueryService:
    """Answer recall / expand / status reads on one query thread.

    The daemon has ONE `Store`, shared with the worker: the store is built for one writer
    and any number of reader threads (writes on its own connection in one transaction per
    batch, reads on a second connection that sees the last commit), so requests are
    answered while a sync runs. Opening a second `Store` in the same process is avoided on
    purpose: SQLite's POSIX locks are per process, and another open/close of the database
    file in this process would drop the locks the first store's connections hold. The
    embedder is shared too: onnxruntime's `run` and the tokenizer are safe to call from two
    threads (checked with the real model), so a recall never waits for a sync's embedding.
    The warm `Recaller` is rebuilt when the settings change and reloads its caches itself
    when `store.generation()` moves.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        degraded: str | None,
        state: DaemonState,
        *,
        warm: WarmSnapshot | None = None,
    ) -> None:
        self.settings = settings
        self._store = store
        self._embedder = embedder
        self._degraded = degraded
        self._state = state
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="carryd-query")
        self._thread_recall = ThreadRecall(store, embedder, degraded, warm=warm)

    def reload(self, settings: Settings) -> None:
        self.settings = settings

    def handlers(self) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        return {
            "ping": lambda params: {"pong": True, "pid": os.getpid()},
            "status": lambda params: self._call(self._status, params),
            "recall": lambda params: self._call(self._recall, params),
            "expand": lambda params: self._call(self._expand, params),
        }

    def model_info(self) -> dict[str, Any]:
        identity = getattr(self._embedder, "identity", None)
        text = model_identity_text(self.settings, identity)
        return {
            "identity": text,
            "key": identity.key() if identity is not None else None,
            "loaded": self._embedder is not None,
            "degraded": self._degraded,
        }

    def stop(self) -> None:
        """Finish the request in progress, then join the thread."""
        self._executor.shutdown(wait=True)
        self._thread_recall.close()

    # on the query thread

    def _call(
        self, method: Callable[[Mapping[str, Any]], dict[str, Any]], params: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._executor.submit(method, params).result()

    def _recaller_now(self) -> Recaller:
        return self._thread_recall.current(self.settings).recaller()

    def _status(self, params: Mapping[str, Any]) -> dict[str, Any]:
        snapshot = self._state.snapshot()
        snapshot["model"] = self.model_info()
        snapshot["counts"] = dict(self._store.counts())
        return snapshot

    def _recall(self, params: Mapping[str, Any]) -> dict[str, Any]:
        query = params.get("query")
        if not isinstance(query, str) or not query.strip():
            raise UsageError("recall: a non-empty query string is required")
        workspace = params.get("workspace")
        limit = params.get("limit")
        min_confidence = params.get("min_confidence")
        if workspace is not None and not isinstance(workspace, str):
            raise UsageError("recall: workspace must be a string")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise UsageError("recall: limit must be an integer")
        if min_confidence is not None and (
            isinstance(min_confidence, bool) or not isinstance(min_confidence, int | float)
        ):
            raise UsageError("recall: min_confidence must be a number")
        return dict(
            self._recaller_now().recall(
                query, workspace=workspace, limit=limit, min_confidence=min_confidence
            )
        )

    def _expand(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ids = params.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise UsageError("expand: ids must be a list of strings")
        return dict(self._recaller_now().expand(ids))
