"""Feature normalization: per query (LETOR's QueryLevelNorm and z-scoring), and fitted
column maps that a saved model applies to new data alike (:class:`Normalization`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.utils.lazy_sparse import sp


def _dense(data: RankingData) -> np.ndarray:
    return data.X.toarray() if sp.issparse(data.X) else data.X


def query_minmax(data: RankingData) -> RankingData:
    """Min-max scale each feature inside each query to [0, 1] (LETOR QueryLevelNorm).

    .. math:: x'_{ik} = (x_{ik} - \\min_{j \\in q} x_{jk}) / (\\max_{j \\in q} x_{jk} -
              \\min_{j \\in q} x_{jk})

    A feature that is constant within a query becomes 0 there, as in LETOR. The result is
    dense (min-max shifts destroy sparsity).
    """
    X = _dense(data)
    starts = data.query_ptr[:-1]
    sizes = data.query_sizes
    lo = np.repeat(np.minimum.reduceat(X, starts, axis=0), sizes, axis=0)
    span = np.repeat(np.maximum.reduceat(X, starts, axis=0), sizes, axis=0) - lo
    out = np.divide(X - lo, span, out=np.zeros_like(X), where=span > 0)
    return data.with_features(out)


def query_zscore(data: RankingData) -> RankingData:
    """Standardize each feature inside each query to mean 0 and (population) std 1.

    A feature that is constant within a query becomes 0 there. The result is dense.
    """
    X = _dense(data)
    starts = data.query_ptr[:-1]
    sizes = data.query_sizes[:, None]
    mean = np.add.reduceat(X, starts, axis=0) / sizes
    centered = X - np.repeat(mean, data.query_sizes, axis=0)
    std = np.sqrt(np.add.reduceat(centered**2, starts, axis=0) / sizes)
    std = np.repeat(std, data.query_sizes, axis=0)
    # Constant features are found exactly (max == min): rounding in the mean would otherwise
    # leave a tiny nonzero std and turn a constant into +-1.
    varies = np.maximum.reduceat(X, starts, axis=0) > np.minimum.reduceat(X, starts, axis=0)
    varies = np.repeat(varies, data.query_sizes, axis=0)
    out = np.divide(centered, std, out=np.zeros_like(X), where=varies & (std > 1e-300))
    return data.with_features(out)


#: The feature maps of ``cvxrank fit --normalize`` (and of a saved model): the features as
#: given, z-scored or min-max scaled column by column with the training set's statistics,
#: or min-max scaled inside each query (:func:`query_minmax`, LETOR's QueryLevelNorm).
NORMALIZATIONS = ("none", "zscore", "minmax", "query-minmax")

#: The kinds whose map is fitted: per-column statistics of the training set.
COLUMN_NORMALIZATIONS = ("zscore", "minmax")


@dataclass(frozen=True, eq=False)
class Normalization:
    """A feature map fitted on training data, applied alike to any data (:func:`fit_normalization`).

    Parameters
    ----------
    kind : str
        One of :data:`NORMALIZATIONS`.
    shift, scale : ndarray of shape (n_features,) or None
        For ``zscore`` and ``minmax``: column k maps to ``(x_k - shift[k]) / scale[k]``
        (``scale > 0``); None for the other kinds, which have no statistics.
    """

    kind: str
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in NORMALIZATIONS:
            raise ValueError(f"unknown normalization {self.kind!r}; expected one of "
                             f"{', '.join(NORMALIZATIONS)}")
        fitted = self.kind in COLUMN_NORMALIZATIONS
        if fitted != (self.shift is not None and self.scale is not None):
            raise ValueError(f"normalization {self.kind}: shift and scale are "
                             f"{'required' if fitted else 'not taken'}")

    @property
    def n_features(self) -> int | None:
        """The number of columns of the statistics (None without statistics)."""
        return None if self.shift is None else int(self.shift.size)

    def apply(self, data: RankingData) -> RankingData:
        """``data`` with its features mapped (the same object for ``none``; dense otherwise).

        Raises
        ------
        ValueError
            When the statistics have another number of columns than ``data``.
        """
        if self.kind == "none":
            return data
        if self.kind == "query-minmax":
            return query_minmax(data)
        if data.n_features != self.n_features:
            raise ValueError(f"the {self.kind} statistics have {self.n_features} features, "
                             f"the data {data.n_features}")
        return data.with_features((_dense(data) - self.shift) / self.scale)


def fit_normalization(kind: str, data: RankingData) -> Normalization:
    """The map ``kind`` (one of :data:`NORMALIZATIONS`) fitted on ``data``'s documents.

    ``zscore``: shift the column's mean, scale its (population) standard deviation;
    ``minmax``: shift its minimum, scale its range, so that the training values lie in
    [0, 1]. A column that is constant (max == min, found exactly) gets the shift of its value
    and the scale 1: it maps to 0 on the training set, and new data keeps its offset from the
    training value.
    """
    if kind not in COLUMN_NORMALIZATIONS:
        return Normalization(kind)
    ranges = ColumnRanges.of(data)
    squares = squared_deviations(data, ranges.mean) if kind == "zscore" else None
    return ranges.normalization(kind, squares)


@dataclass(frozen=True, eq=False)
class ColumnRanges:
    """The first pass of a column map's statistics: the document count and each column's
    sum, minimum and maximum.

    Those of query-aligned parts of a data set (shards) merge into the whole set's
    (:meth:`merge`); a z-score's second pass, the squared deviations from the merged mean
    (:func:`squared_deviations`), is then summed over the parts: the two-pass variance,
    whose error in the mean enters squared (a one-pass merge of the parts' variances, Chan
    et al.'s, enters it linearly: 1e-8 of the std of a column whose spread is 1e-9 of its
    values, against 1e-15 here). One part's statistics are numpy's ``mean`` and ``std`` to
    the last digit.

    Attributes
    ----------
    n : int
    total, low, high : ndarray of shape (n_features,)
    """

    n: int
    total: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, data: RankingData) -> ColumnRanges:
        """The first pass over ``data``'s documents."""
        X = _dense(data)
        return cls(X.shape[0], X.sum(axis=0), X.min(axis=0), X.max(axis=0))

    def merge(self, other: ColumnRanges) -> ColumnRanges:
        """The first pass of both parts' documents together."""
        return ColumnRanges(self.n + other.n, self.total + other.total,
                            np.minimum(self.low, other.low), np.maximum(self.high, other.high))

    @property
    def mean(self) -> np.ndarray:
        """Each column's mean."""
        return self.total / self.n

    def normalization(self, kind: str, squares: np.ndarray | None = None) -> Normalization:
        """The column map ``kind`` (:func:`fit_normalization`'s rule); ``squares``, the
        summed :func:`squared_deviations` from :attr:`mean`, for ``zscore``."""
        varies = self.high > self.low
        if kind == "minmax":
            shift, spread = self.low, self.high - self.low
        else:
            shift, spread = self.mean, np.sqrt(squares / self.n)
        usable = varies & (spread > 0)  # a spread that underflows to 0 cannot divide
        return Normalization(kind, shift=np.where(varies, shift, self.low),
                             scale=np.where(usable, spread, 1.0))


def squared_deviations(data: RankingData, mean: np.ndarray) -> np.ndarray:
    """Each column's sum of squared deviations of ``data``'s documents from ``mean`` (a
    z-score's second pass, :class:`ColumnRanges`)."""
    deviation = _dense(data) - mean
    return (deviation * deviation).sum(axis=0)
