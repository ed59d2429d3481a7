r"""Is w = 0 optimal for RankMM? An exact test, independent of C, without a solver run.

RankMM minimizes :math:`P(w) = \tfrac12\|w\|^2 + \frac{C}{m}\sum_i L_i(w)` (Agarwal & Collins
2010, Sect. 3). The regularizer has gradient 0 at w = 0, so **w = 0 is optimal iff**
:math:`0 \in S = \partial \big(\sum_i L_i\big)(0) = \sum_i \partial L_i(0)`, for every C > 0
alike. At w = 0 every hinge :math:`[(y_j - y_k) - w\cdot(x_j - x_k)]_+` is active
(:math:`y_j - y_k > 0`) with gradient :math:`-(x_j - x_k)`, so each :math:`\partial L_i(0)` is
a polytope:

* ``"average"`` (Sect. 3.1): the single point :math:`-\frac1{|R_i|}\sum_{(j,k)\in R_i}
  (x_j - x_k)`;
* ``"max"`` (Sect. 3.2): :math:`\mathrm{conv}\{-(x_j - x_k) : (j,k) \in R_i,\ y_j - y_k
  \text{ maximal in query } i\}`. The maximal pairs are all (j, k) with j of the query's top
  grade and k of its bottom grade, so this is :math:`\mathrm{conv}\{x_k\} -
  \mathrm{conv}\{x_j\}` (a Minkowski difference of two hulls: :math:`n_{top} + n_{bottom}`
  weights instead of their product);
* ``"max_average"`` (Sect. 3.3): :math:`\mathrm{conv}\{x_k - \bar x_{P_{ik}} : k \text{
  attaining } \max_k \frac1{|P_{ik}|}\sum_{j \in P_{ik}} (y_j - y_k)\}`, :math:`\bar
  x_{P_{ik}}` the mean of the documents preferred to k (those of a higher grade; the value
  depends only on k's grade, so the attaining k are whole grade levels).

So 0 is in a query's own set for ``"max"`` exactly when its top- and bottom-grade documents
cannot be strictly separated by a hyperplane (their hulls meet), and for ``"max_average"``
when the mean of the documents preferred to an attaining grade lies in that grade's hull:
on data with many documents per query that no linear scorer ranks perfectly, w = 0 can be
the optimum of RankMM-2 and RankMM-3 at every C (it is, on every OHSUMED fold).

:func:`zero_optimality` computes the minimum-norm point :math:`g^*` of S, a small QP in
CVXPY (one simplex of weights per hull, :math:`\min \|\sum_h P_h^\top \lambda_h\|^2`), and
certifies its answer without trusting the QP's accuracy: the support function of S is the
sum of the hulls' (:math:`h_S(d) = \sum_h \max_{p \in P_h} p\cdot d`, exact in numpy), and
:math:`P'(0; d) = \frac{C}{m} h_S(d)`. With :math:`d = -g^*/\|g^*\|`,
:math:`h_S(d) \le -\|g^*\|` at the exact minimum-norm point, so a negative
``descent_slope`` proves that w = 0 is *not* optimal, at any C > 0 (P decreases along d).
For small C the optimum is exactly :math:`w^*(C) = -\frac{C}{m} g^*` (the losses are
polyhedral near 0 and :math:`g^*` lies on the face of S that d exposes), which the tests
check against certified optima. The scale that :attr:`ZeroCheck.relative_norm` divides by is
:math:`\sum_h \max_{p \in P_h}\|p\|`, a bound on the norm of every point of S, so the ratio
is in [0, 1].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.query_losses import QueryLoss, query_loss

#: Relative norm below which the minimum-norm subgradient counts as 0 (the QP's accuracy).
ZERO_TOL = 1e-7


@dataclass
class ZeroCheck:
    r"""Whether w = 0 is optimal for one loss on one data set (module docstring).

    Attributes
    ----------
    loss : str
    n_queries : int
        m, every query.
    n_hulls : int
        Polytopes summed (query hulls with pairs; two per query for ``"max"``).
    min_norm : float
        :math:`\|g^*\|`, the minimum norm of a subgradient of :math:`\sum_i L_i` at 0.
    scale : float
        :math:`\sum_h \max_{p \in P_h} \|p\|` (bounds every point of S).
    descent_slope : float
        :math:`h_S(-g^*/\|g^*\|)`, exact: negative proves w = 0 is not optimal (0 when
        :math:`g^* = 0`).
    zero_optimal : bool
        ``relative_norm <= ZERO_TOL`` and no certified descent direction.
    g : ndarray
        :math:`g^*`; for small C the optimum is :math:`-\frac{C}{m} g^*`.
    """

    loss: str
    n_queries: int
    n_hulls: int
    min_norm: float
    scale: float
    descent_slope: float
    zero_optimal: bool
    g: np.ndarray

    @property
    def relative_norm(self) -> float:
        r""":math:`\|g^*\|` / :attr:`scale`, in [0, 1]."""
        return self.min_norm / self.scale if self.scale > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain values (without g)."""
        out = asdict(self)
        del out["g"]
        return {**out, "relative_norm": self.relative_norm}


def _dense(X: Any) -> np.ndarray:
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def subdifferential_hulls(data: RankingData, loss: str | QueryLoss) -> list[np.ndarray]:
    r"""The polytopes whose Minkowski sum is :math:`\partial(\sum_i L_i)(0)`, each as the
    array of its vertices (one row each; module docstring).

    Raises
    ------
    ValueError
        For an unknown loss.
    """
    query = query_loss(loss)
    X = _dense(data.X)
    hulls = []
    for q in range(data.n_queries):
        rows = slice(int(data.query_ptr[q]), int(data.query_ptr[q + 1]))
        Xq, yq = X[rows], np.asarray(data.y[rows], dtype=np.float64)
        if np.unique(yq).size >= 2:  # a query without preference pairs has L_i = 0
            hulls.extend(query.zero_subdifferential(Xq, yq))
    return hulls


def min_norm_point(hulls: list[np.ndarray]) -> np.ndarray:
    r"""The minimum-norm point of the Minkowski sum of the hulls' convex hulls: CVXPY QP
    :math:`\min \|\sum_h P_h^\top \lambda_h\|^2`, :math:`\lambda_h` in the simplex (Clarabel)."""
    import cvxpy as cp
    import scipy.sparse as sp

    points = np.vstack(hulls)
    sizes = np.array([h.shape[0] for h in hulls])
    group = np.repeat(np.arange(len(hulls)), sizes)
    lam = cp.Variable(points.shape[0], nonneg=True)
    sums = sp.csr_matrix((np.ones(group.size), (group, np.arange(group.size))),
                         shape=(len(hulls), group.size))
    problem = cp.Problem(cp.Minimize(cp.sum_squares(points.T @ lam)), [sums @ lam == 1])
    problem.solve(solver=cp.CLARABEL)
    weights = np.maximum(np.asarray(lam.value, dtype=np.float64), 0.0)
    weights /= np.bincount(group, weights=weights)[group]  # exactly on the simplices
    return points.T @ weights


def support(hulls: list[np.ndarray], d: np.ndarray) -> float:
    r""":math:`h_S(d) = \sum_h \max_{p \in P_h} p \cdot d` (exact)."""
    return float(sum(np.max(h @ d) for h in hulls))


def zero_optimality(data: RankingData, loss: str | QueryLoss) -> ZeroCheck:
    """Whether w = 0 is optimal for RankMM with ``loss`` on ``data``, for every C (module
    docstring).

    Parameters
    ----------
    data : RankingData
        The training data.
    loss : {"average", "max", "max_average"}

    Returns
    -------
    ZeroCheck

    Raises
    ------
    ValueError
        For an unknown loss or data without preference pairs.
    """
    hulls = subdifferential_hulls(data, loss)
    if not hulls:
        raise ValueError("no query has documents of two different grades, so there are no "
                         "preference pairs")
    if all(h.shape[0] == 1 for h in hulls):  # "average": S is one point
        g = np.sum([h[0] for h in hulls], axis=0)
    else:
        g = min_norm_point(hulls)
    norm = float(np.linalg.norm(g))
    scale = float(sum(np.linalg.norm(h, axis=1).max() for h in hulls))
    slope = support(hulls, -g / norm) if norm > 0 else 0.0
    zero = (norm <= ZERO_TOL * scale) and not slope < 0
    return ZeroCheck(loss=query_loss(loss).name, n_queries=data.n_queries, n_hulls=len(hulls),
                     min_norm=norm,
                     scale=scale, descent_slope=slope, zero_optimal=bool(zero), g=g)
