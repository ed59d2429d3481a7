"""Preference pairs: every (i, j) with y_i > y_j inside a query.

The pairs are counted before they are built, and built fully vectorized (no Python loop per
pair or per query): documents are sorted by (query, grade), and the documents a given
document beats in its query are then one contiguous block of that order. The pair set is
exposed as the sparse p x n difference operator ``A`` of Chapelle & Keerthi (2010), Sect. 3
(row k has +1 at the preferred document and -1 at the other), so that ``A @ (X @ w)`` gives
the pairwise margins without forming pair differences of features.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.errors import PairLimitError
from cvxrank.utils.lazy_sparse import sp

#: Default refusal limit of :func:`build_pairs` (about 1.6 GB of pair storage).
DEFAULT_MAX_PAIRS = 20_000_000

#: Bytes a built pair takes: upper, lower, query (int64), delta (float64) and two CSR entries
#: of ``A`` (float64 value, int32 column) plus one int64 row pointer.
BYTES_PER_PAIR = 8 * 4 + 2 * (8 + 4) + 8


def count_pairs(data: RankingData) -> np.ndarray:
    """Number of preference pairs of each query, without building them.

    For a query with n documents and c_g documents of grade g, the count is
    ``(n**2 - sum_g c_g**2) / 2``.

    Returns
    -------
    ndarray of int64, shape (n_queries,)
    """
    qidx = data.query_index
    _, level_sizes = _level_groups(data.y, qidx)
    level_query = qidx[np.r_[0, np.cumsum(level_sizes)[:-1]]]
    sq = np.bincount(level_query, weights=level_sizes.astype(np.float64) ** 2,
                     minlength=data.n_queries)
    n = data.query_sizes.astype(np.float64)
    return np.rint((n * n - sq) / 2).astype(np.int64)


def _level_groups(y: np.ndarray, qidx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (query, grade, row) and the sizes of the (query, grade) blocks."""
    order = np.lexsort((y, qidx))
    ys, qs = y[order], qidx[order]
    new = np.r_[True, (ys[1:] != ys[:-1]) | (qs[1:] != qs[:-1])]
    starts = np.flatnonzero(new)
    return order, np.diff(np.r_[starts, y.size])


@dataclass(frozen=True, eq=False)
class PairSet:
    """The preference pairs of a data set.

    Pairs are sorted by query, then by preferred document, then by the other document.

    Attributes
    ----------
    upper : ndarray of int64, shape (p,)
        Row of the preferred (higher-grade) document i.
    lower : ndarray of int64, shape (p,)
        Row of the other document j (y_j < y_i, same query).
    query : ndarray of int64, shape (p,)
        Query index (0-based, data order) of each pair.
    delta : ndarray of float64, shape (p,)
        Relevance difference y_i - y_j > 0.
    n_documents : int
        Number of rows of the data set (columns of :attr:`A`).
    pairs_per_query : ndarray of int64, shape (n_queries,)
        Number of pairs of each query (zero for a query with a single grade).
    """

    upper: np.ndarray
    lower: np.ndarray
    query: np.ndarray
    delta: np.ndarray
    n_documents: int
    pairs_per_query: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_pairs(self) -> int:
        """Number of pairs p."""
        return int(self.upper.size)

    @property
    def pair_ptr(self) -> np.ndarray:
        """Offsets of each query's pairs: query q owns ``pair_ptr[q]:pair_ptr[q+1]``."""
        return np.r_[0, np.cumsum(self.pairs_per_query)].astype(np.int64)

    @cached_property
    def A(self) -> sp.csr_matrix:  # noqa: N802 (the paper's name)
        """Sparse p x n difference operator: ``(A s)_k = s_upper[k] - s_lower[k]``."""
        p = self.n_pairs
        indices = np.empty(2 * p, dtype=np.int32 if self.n_documents < 2**31 else np.int64)
        indices[0::2] = self.upper
        indices[1::2] = self.lower
        data = np.tile(np.array([1.0, -1.0]), p)
        return sp.csr_matrix(
            (data, indices, np.arange(0, 2 * p + 1, 2, dtype=np.int64)),
            shape=(p, self.n_documents),
        )

    def by_lower(self) -> tuple[np.ndarray, np.ndarray]:
        """Pairs grouped by their lower document (the grouping RankMM-3 uses).

        Returns
        -------
        order : ndarray of int64, shape (p,)
            Pair indices sorted by lower document (stable).
        ptr : ndarray of int64, shape (n_documents + 1,)
            Document j's pairs are ``order[ptr[j]:ptr[j+1]]``.
        """
        order = np.argsort(self.lower, kind="stable")
        counts = np.bincount(self.lower, minlength=self.n_documents)
        return order, np.r_[0, np.cumsum(counts)].astype(np.int64)


def build_pairs(data: RankingData, *, max_pairs: int = DEFAULT_MAX_PAIRS) -> PairSet:
    """All preference pairs (i, j), y_i > y_j, inside each query of ``data``.

    Parameters
    ----------
    data : RankingData
    max_pairs : int
        Refuse to build more pairs than this (counted first, in O(n log n)).

    Returns
    -------
    PairSet

    Raises
    ------
    PairLimitError
        If the data has more than ``max_pairs`` pairs; the message gives the count and the
        memory the pairs would take.
    ValueError
        If no query has two documents of different grades (there is nothing to rank).
    """
    per_query = count_pairs(data)
    total = int(per_query.sum())
    if total > max_pairs:
        raise PairLimitError(
            f"{data.source or 'the data'} has {total:,} preference pairs, which would take "
            f"about {total * BYTES_PER_PAIR / 2**30:.1f} GiB; the limit is max_pairs="
            f"{max_pairs:,}. Raise the limit or use a solver that never builds pairs "
            "(PRSVM+)."
        )
    if total == 0:
        raise ValueError(
            f"{data.source or 'the data'}: no query has documents of two different grades, so "
            "there are no preference pairs"
        )
    qidx = data.query_index
    order, level_sizes = _level_groups(data.y, qidx)
    # For sorted position s: its level's first position, and its query's first position.
    level_start = np.repeat(np.r_[0, np.cumsum(level_sizes)[:-1]], level_sizes)
    query_start = data.query_ptr[qidx[order]]
    beats = level_start - query_start  # documents of lower grade in the same query
    upper = np.repeat(order, beats)
    first = np.repeat(query_start - np.r_[0, np.cumsum(beats)[:-1]], beats)
    lower = order[first + np.arange(total)]
    query = qidx[upper]
    perm = np.lexsort((lower, upper, query))
    upper, lower, query = upper[perm], lower[perm], query[perm]
    return PairSet(
        upper=upper,
        lower=lower,
        query=query,
        delta=data.y[upper] - data.y[lower],
        n_documents=data.n_documents,
        pairs_per_query=per_query,
    )


def level_groups(data: RankingData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents grouped by (query, grade level), the grouping PRSVM+ uses (Sect. 4.2).

    Returns
    -------
    order : ndarray of int64, shape (n,)
        Rows sorted by query, then increasing grade, then row.
    level_ptr : ndarray of int64
        Level block b is ``order[level_ptr[b]:level_ptr[b+1]]``.
    level_query : ndarray of int64
        Query index of each level block.
    """
    qidx = data.query_index
    order, sizes = _level_groups(data.y, qidx)
    ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    return order, ptr, qidx[order[ptr[:-1]]]
