"""Embeddings of the memory rows: on write, at search time (backfill), in bulk (ADR 0015).

`EmbeddingService` joins an `Embedder` (the provider) and a `VectorStore` (the vector cache of
the `memories` rows). Every provider failure degrades silently: the caller gets `None` (or 0
rows stored), one log line is written, and no write result, search or command fails because
of it. The network is never called inside a write transaction or under the store lock
(reliability.md §1.3): vectors for an add's near-duplicate check are computed before the
write, vectors for new rows are stored after its COMMIT, in their own short transaction.

Loaded only when embeddings are on (it imports numpy); `import pi_hermes_memory` stays light.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import attrs
import numpy as np
from numpy.typing import NDArray
from pi_hermes_memory.domain.memory.commands import AddMemory
from pi_hermes_memory.domain.memory.decide import Decision
from pi_hermes_memory.domain.memory.events import MemoryAdded, MemoryReplaced
from pi_hermes_memory.domain.memory.model import Target, clean_entry_text
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.background import (
    BACKGROUND,
    BACKGROUND_DIGEST,
    CSLS_FLOOR,
    CSLS_FULL,
    Z_FLOOR,
    Z_FULL,
    Calibration,
)
from pi_hermes_memory.errors import EmbeddingFailed, InvalidArgument
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.store import Embedder, VectorStore
from pi_hermes_memory.ports.vectors import (
    BACKFILL_LIMIT,
    REEMBED_BATCH,
    REEMBED_MAX_CONSECUTIVE_FAILURES,
    EmbeddingKind,
    ReembedProgress,
    ReembedReport,
    VectorScope,
)
from pi_hermes_memory.search.expansion import Expansion

__all__ = ["EmbeddingService", "PreparedWrites", "SearchVectors", "dedup_scope"]

Matrix = NDArray[np.float32]


def _unit_rows(matrix: NDArray[Any]) -> Matrix:
    """Rows scaled to length 1 (float32, C-contiguous); callers checked the norms are > 0."""
    wide = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    return np.ascontiguousarray(wide / norms, dtype=np.float32)


def dedup_scope(command: AddMemory, scope: SessionScope) -> VectorScope | None:
    """The rows an add is near-duplicate-checked against (`decide.same_scope`), as a vector
    scope; None when the add does no near-duplicate check (force, failures, no project)."""
    if command.force or command.target is Target.FAILURE:
        return None
    if command.target in (Target.MEMORY, Target.USER):
        clause = ScopeClause(command.target, namespaces=(command.namespace,))
    elif scope.project is None:
        return None
    else:
        clause = ScopeClause(Target.PROJECT, projects=(scope.project,))
    return VectorScope(clauses=(clause,))


def _centroid(background: Matrix | None) -> Matrix | None:
    """The unit-length mean of the background's vectors, None without a background (or
    fewer than 2 rows) or when the mean is 0."""
    if background is None or background.shape[0] < 2:
        return None
    mean = np.asarray(background, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return np.asarray(mean / norm, dtype=np.float32)


@attrs.frozen(kw_only=True)
class SearchVectors:
    """The query vector and the in-scope candidate matrix of one search (unit-length rows)."""

    query: Matrix  # shape (d,)
    ids: tuple[str, ...]
    matrix: Matrix  # shape (len(ids), d)
    #: id -> row of `matrix`; built on first use (shared while the candidates are unchanged)
    index: Mapping[str, int] | None = None
    #: the background sample's unit vectors under the same model (ADR 0069); None when they
    #: could not be computed (the provider failed)
    background: Matrix | None = None
    #: each candidate's cosine with the background's centroid (`centroid()`), in `ids`
    #: order, when the vector store kept it from search to search (ADR 0082); None: computed
    #: from the matrix with the query's cosines
    hubness: Matrix | None = None

    def calibration(
        self,
        *,
        method: str = "csls",
        z_floor: float = Z_FLOOR,
        z_full: float = Z_FULL,
        csls_floor: float = CSLS_FLOOR,
        csls_full: float = CSLS_FULL,
    ) -> Calibration | None:
        """What unrelated text looks like to this query (its cosines with the background
        sample); None without a background."""
        if self.background is None or self.background.shape[0] < 2:
            return None
        cosines = np.clip(self.background @ self.query, -1.0, 1.0)
        return Calibration.of(
            [float(c) for c in cosines],
            method=method,
            z_floor=z_floor,
            z_full=z_full,
            csls_floor=csls_floor,
            csls_full=csls_full,
        )

    def centroid(self) -> Matrix | None:
        """The unit-length mean of the background's vectors (the direction generic text
        shares; ADR 0072), None without a background or when the mean is 0."""
        return _centroid(self.background)

    def cosines_and_hubness(self) -> tuple[Matrix, Matrix | None]:
        """Each candidate's cosine with the query and with the background's centroid (its
        hubness r_d, ADR 0072; None without a background), in `ids` order, from one pass
        over the candidate matrix."""
        if self.hubness is not None and self.hubness.shape == (len(self.ids),):
            return self.cosines(), self.hubness  # the centroid's column kept by the store
        centroid = self.centroid()
        if centroid is None or centroid.shape[0] != self.query.shape[0]:
            return self.cosines(), None
        if not self.ids:
            empty = np.zeros(0, dtype=np.float32)
            return empty, empty
        both = np.asarray(self.matrix @ np.stack([self.query, centroid], axis=1), np.float32)
        return both[:, 0], both[:, 1]

    def positions(self) -> Mapping[str, int]:
        """The row of each id in `matrix`."""
        if self.index is not None:
            return self.index
        return {item: i for i, item in enumerate(self.ids)}

    def cosines(self) -> Matrix:
        """Cosine similarity of each candidate with the query, in `ids` order."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self.matrix @ self.query, dtype=np.float32)


@attrs.define
class PreparedWrites:
    """What `prepare_writes` computed before a write: the commands (adds carry `cosines`),
    the vectors of the new texts by text, and whether the provider already failed (then the
    write does not wait for it a second time)."""

    commands: list[Any]
    vectors: dict[str, Matrix] = attrs.Factory(dict)
    failed: bool = False


class EmbeddingService:
    """`expansion`: Rocchio pseudo-relevance feedback applied to each search's query vector
    (`search_vectors`); None (the default, ADR 0071: it lowered recall where measured) keeps
    the embedder's query vector."""

    def __init__(
        self,
        *,
        embedder: Embedder,
        store: VectorStore,
        logger: Any = None,
        on_close: Callable[[], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        expansion: Expansion | None = None,
    ) -> None:
        self._embedder = embedder
        self._expansion = expansion
        self._store = store
        self._log = logger or library_logger()
        self._on_close = on_close
        self._monotonic = monotonic
        self._positions: tuple[tuple[str, ...], dict[str, int]] = ((), {})
        #: the background sample's vectors once read or computed (per service: one model)
        self._background: Matrix | None = None
        #: (the background, its centroid), computed once per background
        self._centroid: tuple[Matrix, Matrix | None] | None = None

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    @property
    def dimension(self) -> int | None:
        return self._embedder.dimension

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    # -- the provider, failures swallowed -------------------------------------------------

    def try_embed(self, texts: Sequence[str], kind: EmbeddingKind) -> Matrix | None:
        """Unit-length vectors of `texts`, or None when the provider failed (logged)."""
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        try:
            matrix = np.asarray(self._embedder.embed(list(texts), kind=kind))
        except EmbeddingFailed as exc:
            self._log.warning(
                "embedding.failed", reason=exc.reason, host=exc.host, kind=kind, texts=len(texts)
            )
            return None
        except Exception as exc:  # a custom embedder's bug must not fail a write or a search
            self._log.warning("embedding.failed", reason=type(exc).__name__, kind=kind)
            return None
        if (
            matrix.ndim != 2
            or matrix.shape[0] != len(texts)
            or matrix.shape[1] == 0
            or not np.isfinite(matrix).all()
            or not (np.linalg.norm(matrix.astype(np.float64), axis=1) > 0).all()
        ):
            self._log.warning("embedding.failed", reason="shape", kind=kind, texts=len(texts))
            return None
        return _unit_rows(matrix)

    def query_vector(self, text: str) -> Matrix | None:
        """The unit query vector of `text` (kind "query"), or None on any failure."""
        matrix = self.try_embed([text], "query")
        return None if matrix is None else matrix[0]

    # -- the store ------------------------------------------------------------------------

    def store(self, rows: Sequence[tuple[str, str]], vectors: Matrix) -> int:
        """Store unit vectors for (id, text) rows; a storage failure is logged, never raised."""
        if not rows:
            return 0
        try:
            return self._store.put(rows, _unit_rows(vectors), self.model_id)
        except Exception as exc:  # a cache: losing a vector only costs a later backfill
            self._log.warning("embedding.store_failed", error=type(exc).__name__, rows=len(rows))
            return 0

    def embed_rows(self, rows: Sequence[tuple[str, str]]) -> int:
        """Embed (as passages) and store these (id, text) rows; the number stored."""
        if not rows:
            return 0
        vectors = self.try_embed([text for _, text in rows], "passage")
        return 0 if vectors is None else self.store(rows, vectors)

    def backfill(self, scope: VectorScope, *, limit: int = BACKFILL_LIMIT) -> int:
        """Embed up to `limit` in-scope rows lacking a current vector (newest first): the
        search-time backfill. Failed rows stay empty and are retried by a later search."""
        if limit < 1:
            return 0
        try:
            rows = self._store.missing(scope, self.model_id, dimension=self.dimension, limit=limit)
        except Exception as exc:
            self._log.warning("embedding.backfill_failed", error=type(exc).__name__)
            return 0
        return self.embed_rows(rows)

    def background(self) -> Matrix | None:
        """The unit vectors of the background sample (`BACKGROUND`, embedded as passages)
        under this model: read from the vector store, else embedded once and stored there
        (keyed by model id and the sample's digest, so a new model or a new sample is
        embedded again). None when the provider fails (logged; the next search retries). A
        store without background storage (a custom store written before ADR 0069) keeps
        them in this process only."""
        if self._background is not None:
            return self._background
        dimension = self.dimension
        reader = getattr(self._store, "background", None)
        if reader is not None:
            try:
                found = reader(self.model_id, BACKGROUND_DIGEST, dimension=dimension)
            except Exception as exc:
                self._log.warning("embedding.background_failed", error=type(exc).__name__)
                found = None
            if found is not None and found.shape[0] == len(BACKGROUND):
                norms = np.linalg.norm(np.asarray(found, dtype=np.float64), axis=1)
                if np.isfinite(found).all() and (norms > 0).all():
                    self._background = _unit_rows(found)
                    return self._background
        vectors = self.try_embed(list(BACKGROUND), "passage")
        if vectors is None:
            return None
        writer = getattr(self._store, "put_background", None)
        if writer is not None:
            try:
                writer(self.model_id, BACKGROUND_DIGEST, vectors)
            except Exception as exc:  # a cache: the next process embeds it again
                self._log.warning("embedding.background_store_failed", error=type(exc).__name__)
        self._background = vectors
        return vectors

    def candidates(self, scope: VectorScope) -> tuple[tuple[str, ...], Matrix]:
        """Ids and unit-vector matrix of the in-scope rows with a current vector."""
        return self._store.candidates(scope, self.model_id, dimension=self.dimension)

    def coverage(self, scope: VectorScope | None = None) -> tuple[int, int]:
        """(rows, rows with a current vector) in `scope` (default: every row)."""
        return self._store.count(
            scope or VectorScope.everything(), self.model_id, dimension=self.dimension
        )

    def search_vectors(
        self, scope: VectorScope, text: str, *, backfill: int = BACKFILL_LIMIT
    ) -> SearchVectors | None:
        """For one search: the query vector, then the backfill of up to `backfill` in-scope
        rows, then the in-scope candidates. None when the query cannot be embedded (the
        search is FTS-only then)."""
        query = self.query_vector(text)
        if query is None:
            return None
        self.backfill(scope, limit=backfill)
        try:
            ids, matrix = self.candidates(scope)
        except Exception as exc:
            self._log.warning("embedding.candidates_failed", error=type(exc).__name__)
            return None
        if ids and matrix.shape[1] != query.shape[0]:
            return None
        positions = self._positions_of(ids)
        if self._expansion is not None and ids:
            query = self._expansion.apply(query, matrix)
        background = self.background() if ids else None
        if background is not None and background.shape[1] != query.shape[0]:
            background = None
        return SearchVectors(
            query=query,
            ids=ids,
            matrix=matrix,
            index=positions,
            background=background,
            hubness=self._hubness(matrix, background) if ids else None,
        )

    def _positions_of(self, ids: tuple[str, ...]) -> Mapping[str, int]:
        """The row of each id: the store's map when it keeps one along its changes (ADR
        0082), else built here once per tuple (the store hands back the same tuple while
        unchanged)."""
        kept = getattr(self._store, "candidate_positions", None)
        if kept is not None:
            try:
                found = kept(ids)
            except Exception as exc:
                self._log.warning("embedding.candidates_failed", error=type(exc).__name__)
                found = None
            if found is not None:
                return cast("Mapping[str, int]", found)
        if self._positions[0] is not ids:
            self._positions = (ids, {item: i for i, item in enumerate(ids)})
        return self._positions[1]

    def _hubness(self, matrix: Matrix, background: Matrix | None) -> Matrix | None:
        """Each candidate's cosine with the background's centroid, from the store when it
        keeps the column along its changes (ADR 0082); None: the search computes it."""
        product = getattr(self._store, "candidate_product", None)
        if product is None or background is None:
            return None
        if self._centroid is None or self._centroid[0] is not background:
            self._centroid = (background, _centroid(background))
        centroid = self._centroid[1]
        if centroid is None:
            return None
        try:
            found = product(matrix, centroid)
        except Exception as exc:
            self._log.warning("embedding.candidates_failed", error=type(exc).__name__)
            return None
        return None if found is None else cast("Matrix", found)

    def cosines(
        self,
        vector: Matrix,
        scope: VectorScope,
        extra: Mapping[str, Matrix] | None = None,
    ) -> dict[str, float]:
        """Cosine of `vector` with every in-scope row's current vector (and with `extra`)."""
        out: dict[str, float] = {}
        try:
            ids, matrix = self.candidates(scope)
        except Exception as exc:
            self._log.warning("embedding.candidates_failed", error=type(exc).__name__)
            ids, matrix = (), np.zeros((0, vector.shape[0]), dtype=np.float32)
        if ids and matrix.shape[1] == vector.shape[0]:
            out.update(zip(ids, (float(c) for c in matrix @ vector), strict=True))
        for entry_id, other in (extra or {}).items():
            if other.shape == vector.shape:
                out[entry_id] = float(other @ vector)
        return out

    def stored_cosines(self, entry_id: str, scope: VectorScope) -> dict[str, float]:
        """Cosine of `entry_id`'s current stored vector with every in-scope row's (the row
        itself left out); {} when it has none. Reads the store only: no provider call."""
        try:
            vector = self._store.vectors([entry_id], self.model_id, dimension=self.dimension)
        except Exception as exc:
            self._log.warning("embedding.vectors_failed", error=type(exc).__name__)
            return {}
        mine = vector.get(entry_id)
        if mine is None:
            return {}
        cosines = self.cosines(_unit_rows(mine.reshape(1, -1))[0], scope)
        cosines.pop(entry_id, None)
        return cosines

    # -- the write path -------------------------------------------------------------------

    def prepare_writes(self, commands: Sequence[Any], scope: SessionScope) -> PreparedWrites:
        """Before a write (outside the lock): embed the texts of adds that are checked for
        near-duplicates, in one request, and give each the cosines with the current vectors
        of its dedup scope (and with the batch's earlier adds of the same scope)."""
        prepared = PreparedWrites(commands=list(commands))
        checked = [
            (i, c, s)
            for i, c in enumerate(commands)
            if isinstance(c, AddMemory) and (s := dedup_scope(c, scope)) is not None
        ]
        texts = list(dict.fromkeys(clean_entry_text(c.text) for _, c, _ in checked))
        texts = [t for t in texts if t]
        if not texts:
            return prepared
        matrix = self.try_embed(texts, "passage")
        if matrix is None:
            prepared.failed = True
            return prepared
        prepared.vectors = dict(zip(texts, matrix, strict=True))
        earlier: dict[VectorScope, dict[str, Matrix]] = {}
        for index, command, dedup in checked:
            vector = prepared.vectors.get(clean_entry_text(command.text))
            if vector is None:
                continue
            same = earlier.setdefault(dedup, {})
            cosines = self.cosines(vector, dedup, same)
            prepared.commands[index] = attrs.evolve(command, cosines=cosines)
            same[command.entry_id] = vector
        return prepared

    def after_writes(
        self, decisions: Iterable[Decision], prepared: PreparedWrites | None = None
    ) -> int:
        """After COMMIT (outside the lock): store vectors for the rows the decisions created,
        reusing the vectors computed before the write; the number stored. Never raises."""
        rows = new_rows(decisions)
        if not rows:
            return 0
        known = prepared.vectors if prepared is not None else {}
        ready = [(row, known[row[1]]) for row in rows if row[1] in known]
        stored = self.store([r for r, _ in ready], np.stack([v for _, v in ready])) if ready else 0
        rest = [row for row in rows if row[1] not in known]
        if rest and not (prepared is not None and prepared.failed):
            stored += self.embed_rows(rest)
        return stored

    # -- the bulk job ---------------------------------------------------------------------

    def reembed(
        self,
        *,
        progress: Callable[[ReembedProgress], None] | None = None,
        everything: bool = False,
        batch_size: int = REEMBED_BATCH,
    ) -> ReembedReport:
        """Embed every row lacking a current vector (`everything`: every row), newest first,
        `batch_size` rows per request, calling `progress` after each batch. Stops after
        `REEMBED_MAX_CONSECUTIVE_FAILURES` failed batches in a row."""
        if batch_size < 1:
            raise InvalidArgument(f"batch_size must be at least 1; got {batch_size}")
        scope = VectorScope.everything()
        rows_total, current = self._store.count(scope, self.model_id, dimension=self.dimension)
        total = rows_total if everything else rows_total - current
        start = self._monotonic()
        done = embedded = failed = batches = consecutive = 0
        before: str | None = None
        stopped: str | None = None
        while True:
            rows = self._store.missing(
                scope,
                self.model_id,
                dimension=self.dimension,
                limit=batch_size,
                before=before,
                everything=everything,
            )
            if not rows:
                break
            before = rows[-1][0]
            batches += 1
            vectors = self.try_embed([text for _, text in rows], "passage")
            if vectors is None:
                failed += len(rows)
                consecutive += 1
            else:
                embedded += self.store(rows, vectors)
                consecutive = 0
            done += len(rows)
            total = max(total, done)
            if progress is not None:
                progress(
                    ReembedProgress(
                        done=done,
                        total=total,
                        embedded=embedded,
                        failed=failed,
                        seconds=self._monotonic() - start,
                    )
                )
            if consecutive >= REEMBED_MAX_CONSECUTIVE_FAILURES:
                stopped = (
                    f"the provider failed {consecutive} batches in a row; "
                    f"{max(total - done, 0)} rows were not tried"
                )
                break
        report = ReembedReport(
            model_id=self.model_id,
            total=total,
            embedded=embedded,
            failed=failed,
            batches=batches,
            seconds=self._monotonic() - start,
            everything=everything,
            stopped=stopped,
        )
        self._log.info("embedding.reembed", **report.to_json())
        return report


def new_rows(decisions: Iterable[Decision]) -> list[tuple[str, str]]:
    """(id, text) of the rows the decisions' events create (adds and new versions)."""
    rows: list[tuple[str, str]] = []
    for decision in decisions:
        for event in decision.events:
            if isinstance(event, MemoryAdded):
                rows.append((event.entry_id, event.text))
            elif isinstance(event, MemoryReplaced):
                rows.append((event.new_id, event.text))
    return rows
