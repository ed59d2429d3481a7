"""Per-query feature normalization (LETOR's QueryLevelNorm and z-scoring)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank.data.ranking_data import RankingData


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
