"""Which model recall embeds a query with: the one whose vectors the index serves.

A query vector is only comparable with vectors of the same model. While a model change
re-embeds the index into a new vector set (`carryd.daemon.indexer.vector_sets`), the serving
set still holds the old model's vectors, so recall keeps embedding queries with the old model,
loaded from where the index recorded it (`model.model_spec`, never downloaded); once the new
set is swapped in, the configured model serves. When the old model cannot be had (its folder
is gone), the configured one answers from what it has of its own vectors (the new set, while
it grows: entries without one are found lexically) and `carryd status` says how far it is.

`ServingModel.choose()` decides again only when the index's record of the serving model
changes (one meta read per snapshot refresh), so the daemon's warm snapshot follows a swap.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from carryd.daemon.indexer.model import embedder_from_spec, spec_identity
from carryd.daemon.indexer.vector_sets import SPEC_KEY

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.index.embed import Embedder
    from carryd.index.store import Store

log = logging.getLogger(__name__)


class ServingModel:
    """The model recall embeds queries with for one store (see the module's docstring)."""

    def __init__(self, settings: Settings, store: Store, configured: Embedder | None) -> None:
        self._settings = settings
        self._store = store
        self._configured = configured
        self._lock = threading.Lock()
        self._decided: tuple[str | None, Embedder | None] | None = None  # (spec, choice)
        self.problem: str | None = None  # why the serving set's model could not be loaded

    def choose(self) -> Embedder | None:
        """Return the model to embed queries with now: the serving set's, else the configured."""
        spec = self._store.meta(SPEC_KEY)
        with self._lock:
            if self._decided is None or self._decided[0] != spec:
                self._decided = (spec, self._decide(spec))
            return self._decided[1]

    def _decide(self, spec: str | None) -> Embedder | None:
        configured = self._configured
        serving = spec_identity(spec)
        if spec is None or serving is None:
            return configured
        if configured is not None and configured.identity.key() == serving:
            return configured
        if not self._store.vector_identities().get(serving):
            return configured  # the recorded set is gone: nothing of the old model to search
        embedder, problem = embedder_from_spec(self._settings, spec)
        self.problem = problem
        if embedder is None:
            log.info(
                "recall: the index's model cannot be loaded (%s); using the configured one", problem
            )
            return configured
        log.info(
            "recall: answering from the vectors of %s until the re-embedding completes",
            embedder.identity.name,
        )
        return embedder
