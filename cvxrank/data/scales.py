"""Feature scales: the overflow check every formulation runs on its data, and the note a
run that stopped short of its tolerance adds when the features are badly scaled.

A raw count beside normalized features (one column 1e8 times the others), or features far
from unit scale, leave the primal problem well posed but make its dual ill-conditioned:
the weight of a large column is of order 1/scale and a dual method represents it as a sum
of terms of order scale, which cancel below rounding. The truncated Newton solvers work in
a column-scaled metric (their Jacobi-preconditioned CG, :func:`cvxrank.solvers.newton.
hessian_diagonal`) and reach the optimum at any column scale; the other solvers stop with
their certified gap above the tolerance, and :func:`scale_note` says why. Magnitudes whose
squares overflow float64 sums are refused up front (:func:`check_magnitude`).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from cvxrank import tolerances
from cvxrank.errors import UsageError
from cvxrank.utils.lazy_sparse import sp


class ScaledData(Protocol):
    """What this module reads of a :class:`cvxrank.data.ranking_data.RankingData` (which
    imports this module for its :attr:`column_scales`)."""

    @property
    def X(self) -> np.ndarray | sp.spmatrix: ...  # noqa: N802 - the data's own name

    @property
    def column_scales(self) -> np.ndarray: ...


class FeatureSizes(Protocol):
    """What the overflow check reads of a data set, in memory or sharded over a cluster
    (:class:`cvxrank.distributed.ShardedRankingData`)."""

    @property
    def column_scales(self) -> np.ndarray: ...

    @property
    def n_documents(self) -> int: ...

    @property
    def n_features(self) -> int: ...


def column_scales(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    """The largest magnitude of each feature column (0 for an all-zero column), without a
    copy of X; computed once per data set (:attr:`ScaledData.column_scales`), which every
    check of this module reads."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)  # no copy for CSR, LETOR's sparse form
        out = np.zeros(X.shape[1])
        np.maximum.at(out, X.indices, np.abs(X.data))
        return out
    X = np.asarray(X)
    if not X.size:
        return np.zeros(X.shape[1])
    return np.maximum(X.max(axis=0), -X.min(axis=0)).astype(np.float64)


def column_norms(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    """The 2-norm of each feature column, without a copy of X (float64 sums of squares:
    :func:`check_magnitude` has refused the magnitudes whose squares overflow)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return np.sqrt(np.bincount(X.indices, weights=np.square(X.data, dtype=np.float64),
                                   minlength=X.shape[1]))
    X = np.asarray(X)
    return np.sqrt(np.einsum("ij,ij->j", X, X, dtype=np.float64))


def magnitude_limit(n_documents: int, n_features: int) -> float:
    r"""The largest feature magnitude M accepted: :math:`M^2 d n^2` (a bound on any sum of
    squared pair differences) at most :data:`~cvxrank.tolerances.OVERFLOW_HEADROOM` times
    the largest float64."""
    size = max(n_features, 1) * max(n_documents, 1) ** 2
    return math.sqrt(np.finfo(np.float64).max * tolerances.OVERFLOW_HEADROOM / size)


def check_magnitude(data: FeatureSizes) -> None:
    """Raise :class:`~cvxrank.errors.UsageError` when the features of ``data`` (in memory or
    sharded) are so large that the solvers' sums of squares overflow float64
    (:func:`magnitude_limit`)."""
    n, d = data.n_documents, data.n_features
    scales = data.column_scales
    limit = magnitude_limit(n, d)
    if scales.size and float(scales.max()) > limit:
        j = int(np.argmax(scales))
        raise UsageError(
            f"feature {j + 1} reaches {scales[j]:.3g}: squares of features this large "
            f"overflow float64 sums (at most {limit:.3g} for {n:,} documents x "
            f"{d} features); rescale the features")


def _extremes(data: ScaledData) -> tuple[np.ndarray, int, int] | None:
    """The column scales and the columns of the largest and smallest nonzero one (None for
    all-zero features)."""
    scales = data.column_scales
    used = np.flatnonzero(scales > 0)
    if used.size == 0:
        return None
    return scales, int(used[np.argmax(scales[used])]), int(used[np.argmin(scales[used])])


def badly_scaled(data: ScaledData) -> bool:
    """Whether the feature columns' largest magnitudes are
    :data:`~cvxrank.tolerances.SCALE_SPREAD` or more apart, or the features that far from
    unit scale (what :func:`scale_note` explains)."""
    return _bad(_extremes(data))


def _bad(found: tuple[np.ndarray, int, int] | None) -> bool:
    """:func:`badly_scaled` from :func:`_extremes`."""
    if found is None:
        return False
    scales, big, small = found
    spread = tolerances.SCALE_SPREAD
    return bool(scales[big] >= spread * scales[small]
                or not 1.0 / spread < scales[big] < spread)


def scale_note(data: ScaledData, *, newton: bool = False) -> str:
    """Why a run on ``data`` may have stopped short of its tolerance, when the features are
    badly scaled (:func:`badly_scaled`); empty otherwise. ``newton``: the run was the
    column-scaled Newton's (not advised again)."""
    found = _extremes(data)
    if not _bad(found):
        return ""
    scales, big, small = found  # type: ignore[misc]  (not None: _bad is False for None)
    spread = float(scales[big] / scales[small])
    advice = "; rescale the features (per column, or per query: cvxrank.data.query_minmax)"
    if not newton:
        advice += " or, for a squared hinge or Huber loss, use prsvm+ (column-scaled Newton)"
    if spread >= tolerances.SCALE_SPREAD:
        return (f"the features are badly scaled: feature {big + 1} reaches {scales[big]:.3g}, "
                f"feature {small + 1} only {scales[small]:.3g} ({spread:.1e} apart), which "
                f"leaves this solver's problem ill-conditioned" + advice)
    return (f"the features are far from unit scale (up to {scales[big]:.3g}): C acts as "
            f"C x {scales[big] ** 2:.3g} on unit-scale features, an ill-conditioned "
            f"problem for this solver" + advice)
