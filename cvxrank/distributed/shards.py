"""Ranking data sharded by query over the workers of a Dask cluster.

A :class:`ShardedRankingData` is a list of Dask futures, each a
:class:`~cvxrank.data.ranking_data.RankingData` of whole queries held in a worker's
memory, plus what the client needs to know of them (counts, query ids, column scales:
:class:`~cvxrank.distributed.tasks.ShardSummary`). It is made from files (each worker
reads its own; no file passes through the client) or by splitting a data set in memory by
query. No query is ever split across shards (a query id in two files is refused), so every
loss of cvxrank is a sum over shards (:mod:`cvxrank.distributed.tasks`).

Faults: a shard read from a file is a task of Dask's graph; when the worker holding it is
lost, Dask reads the file again on another worker (the future's lineage), so a fit goes
on. A shard split from memory has no file to re-read: it is kept on two workers
(``client.replicate``) when the cluster has two or more.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cvxrank.data.normalize import (
    COLUMN_NORMALIZATIONS,
    ColumnRanges,
    Normalization,
    squared_deviations,
)
from cvxrank.data.ranking_data import RankingData
from cvxrank.distributed import tasks
from cvxrank.errors import UsageError

Reader = Callable[[str], RankingData]


def shard_paths(pattern: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The files of a glob pattern (sorted), or the given list of paths.

    Raises
    ------
    UsageError
        When the pattern matches no file, or a listed file does not exist.
    """
    if isinstance(pattern, (str, os.PathLike)):
        text = os.fspath(pattern)
        paths = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        if not paths:
            raise UsageError(f"no file matches {text}")
    else:
        paths = [os.fspath(p) for p in pattern]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise UsageError(f"no such file: {missing[0]}")
    return paths


def read_shard(path: str) -> RankingData:
    """The default shard reader: an SVMlight/LETOR file
    (:func:`~cvxrank.data.svmlight.read_svmlight`)."""
    from cvxrank.data.svmlight import read_svmlight

    return read_svmlight(path)


def balanced_split(data: RankingData, n_shards: int) -> list[np.ndarray]:
    """The query indices of ``n_shards`` shards of consecutive queries with about the same
    number of documents each (no query split; fewer shards when there are fewer queries)."""
    if n_shards < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards}")
    n_shards = min(n_shards, data.n_queries)
    ends = data.query_ptr[1:]
    cuts = np.searchsorted(ends, data.n_documents * np.arange(1, n_shards) / n_shards)
    bounds = np.unique(np.r_[0, cuts + 1, data.n_queries].clip(0, data.n_queries))
    return [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
            if hi > lo]


class ShardedRankingData:
    """Query-aligned shards of a ranking data set on the workers of a Dask cluster.

    Make it with :meth:`from_files` or :meth:`from_data`. It offers what the client side of a
    fit reads of a data set (counts, ``column_scales``, ``source``), not the arrays.

    Parameters
    ----------
    client : dask.distributed.Client
    futures : list of Future
        One per shard, each resolving to a :class:`RankingData` on a worker.
    summaries : list of ShardSummary
        Their summaries, in the same order.

    Raises
    ------
    UsageError
        When a query id is in two shards, or no shard has documents.
    """

    def __init__(self, client: Any, futures: list[Any],
                 summaries: list[tasks.ShardSummary]) -> None:
        if not futures:
            raise UsageError("no shards")
        self.client = client
        self.futures = futures
        self.summaries = summaries
        _check_disjoint(summaries)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_files(cls, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                   client: Any, *, reader: Reader = read_shard) -> ShardedRankingData:
        """One shard per file, each read by a worker (``reader(path)``, by default an
        SVMlight/LETOR file); shards with fewer feature columns are padded with zero columns
        to the widest.

        Parameters
        ----------
        paths : str, path or sequence of them
            A glob pattern (``"shards/*.txt"``, sorted) or a list of files.
        client : dask.distributed.Client
        reader : callable
            ``reader(path) -> RankingData``, run on a worker (picklable).

        Raises
        ------
        UsageError
            When no file matches, a query id is in two files.
        CvxrankError, ValueError
            A malformed file's error (naming the file and line), as the reader raises it.
        """
        files = shard_paths(paths)
        futures = [client.submit(reader, path, pure=False)
                   for path in files]
        return cls._summarized(client, futures)

    @classmethod
    def from_data(cls, data: RankingData, client: Any, n_shards: int) -> ShardedRankingData:
        """``data`` split into ``n_shards`` shards of consecutive whole queries with about the
        same number of documents (:func:`balanced_split`), sent to the workers (each kept on
        two workers when there are two or more: a shard from memory has no file to re-read
        after a worker is lost). The scheduler's active memory manager, where it runs (Dask's
        default), drops the second copy within seconds: a worker lost after that loses its
        shards for good, and a fit on them ends with its last certified iterate
        (:class:`~cvxrank.distributed.objective.ShardsLost`); shards read from files are read
        again elsewhere."""
        parts = [data.subset(queries) for queries in balanced_split(data, n_shards)]
        futures = client.scatter(parts, hash=False)
        if len(client.scheduler_info().get("workers", {})) >= 2:
            client.replicate(futures, n=2)
        return cls._summarized(client, futures)

    @classmethod
    def _summarized(cls, client: Any, futures: list[Any]) -> ShardedRankingData:
        summaries = client.gather(client.map(tasks.summarize, futures, pure=False))
        width = max(s.n_features for s in summaries)
        for i, summary in enumerate(summaries):
            if summary.n_features < width:
                futures[i] = client.submit(tasks.pad, futures[i], width, pure=False)
        return cls(client, futures, summaries)

    # -- what the client knows ------------------------------------------------------------
    @property
    def n_shards(self) -> int:
        """Number of shards."""
        return len(self.futures)

    @property
    def n_documents(self) -> int:
        """Documents in all shards."""
        return sum(s.n_documents for s in self.summaries)

    @property
    def n_queries(self) -> int:
        """Queries in all shards."""
        return sum(int(s.query_ids.size) for s in self.summaries)

    @property
    def n_features(self) -> int:
        """Feature columns (the widest shard's)."""
        return max(s.n_features for s in self.summaries)

    @property
    def n_pairs(self) -> int:
        """Preference pairs in all shards (counted on the workers, never built)."""
        return sum(s.n_pairs for s in self.summaries)

    @property
    def column_scales(self) -> np.ndarray:
        """The largest magnitude of each feature column over all shards."""
        scales = np.zeros(self.n_features)
        for s in self.summaries:
            scales[: s.column_scales.size] = np.maximum(scales[: s.column_scales.size],
                                                        s.column_scales)
        return scales

    @property
    def column_norms(self) -> np.ndarray:
        """The 2-norm of each feature column over all shards."""
        squares = np.zeros(self.n_features)
        for s in self.summaries:
            squares[: s.column_norms.size] += np.square(s.column_norms)
        return np.sqrt(squares)

    def normalized(self, kind: str) -> tuple[ShardedRankingData, Normalization]:
        """The shards mapped by the normalization ``kind`` (:data:`cvxrank.data.normalize.
        NORMALIZATIONS`) fitted on all of them, and that map.

        A column map's statistics are reduced from the shards, as in memory
        (:func:`cvxrank.data.normalize.fit_normalization` on the whole set, to rounding):
        each shard's first pass (count, sums, minima, maxima,
        :class:`~cvxrank.data.normalize.ColumnRanges`) merged on the client, then for a
        z-score each shard's squared deviations from the merged mean summed; each shard is
        then mapped on its worker (a task whose lineage rebuilds it where the shard is read
        again). ``query-minmax`` maps each shard's queries alone; ``none`` returns the
        shards themselves.
        """
        client = self.client
        if kind not in COLUMN_NORMALIZATIONS:
            normalization = Normalization(kind)
        else:
            parts = client.gather(client.map(ColumnRanges.of, self.futures, pure=False))
            ranges = functools.reduce(ColumnRanges.merge, parts)
            squares = None
            if kind == "zscore":
                deviations = client.gather(client.map(squared_deviations, self.futures,
                                                      mean=ranges.mean, pure=False))
                squares = functools.reduce(np.add, deviations)
            normalization = ranges.normalization(kind, squares)
        if kind == "none":
            return self, normalization
        mapped = client.map(normalization.apply, self.futures, pure=False)
        return ShardedRankingData._summarized(client, mapped), normalization

    def varying_columns(self) -> np.ndarray:
        """The feature columns not constant within every query of some shard, as indices
        (:meth:`cvxrank.data.ranking_data.RankingData.varying_columns`, reduced)."""
        return np.unique(np.concatenate([s.varying_columns for s in self.summaries]))

    @property
    def source(self) -> str:
        """The shards' files, or ``"<n> shards"`` for shards split from memory."""
        sources = [s.source for s in self.summaries]
        if all(sources):
            return sources[0] if len(sources) == 1 else f"{sources[0]} ... ({len(sources)} files)"
        return f"{len(sources)} shards"

    @property
    def fingerprint(self) -> str:
        """A short hash of the shards' fingerprints, in order."""
        import hashlib

        h = hashlib.sha1()
        for s in self.summaries:
            h.update(s.fingerprint.encode())
        return h.hexdigest()[:16]

    def as_float64(self) -> ShardedRankingData:
        """Itself: each shard's formulation, made on its worker, converts the shard to
        float64 there (:meth:`cvxrank.data.ranking_data.RankingData.as_float64`)."""
        return self

    def __repr__(self) -> str:
        return (f"ShardedRankingData({self.n_shards} shards, {self.n_documents:,} documents, "
                f"{self.n_queries:,} queries, {self.n_features} features)")


def _check_disjoint(summaries: list[tasks.ShardSummary]) -> None:
    """Refuse a query id that is in two shards (a query must not be split)."""
    ids = np.concatenate([s.query_ids for s in summaries])
    owner = np.repeat(np.arange(len(summaries)), [s.query_ids.size for s in summaries])
    order = np.argsort(ids, kind="stable")
    same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if same.size:
        first, second = owner[order][same[0]], owner[order][same[0] + 1]
        names = [summaries[i].source or f"shard {i}" for i in (first, second)]
        raise UsageError(f"query id {ids[order][same[0]]} is in both {names[0]} and "
                         f"{names[1]}: a query must not be split across shards")
