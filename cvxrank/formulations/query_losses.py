r"""RankMM's query-level losses as objects (Agarwal & Collins 2010, Sects. 3.1-3.3).

A :class:`QueryLoss` aggregates the relevance-weighted pair hinges
:math:`\ell_{jk}(w) = [(y_j - y_k) - (s_j - s_k)]_+` of a query into its loss :math:`L_i`,
and declares what follows from that structure: the printed dual's feasible set, the scale
:math:`c` of its variables (:math:`\beta = c \odot \alpha`), the factor :math:`\kappa` of
:math:`p^* = -\kappa\, Q^*_{\text{printed}}`, the slack QP of the CVXPY reference, the
loss's numpy evaluation without the pairs, its most violated constraint (the cutting
plane's separation oracle) and the capability of its dual blocks (a Euclidean projection
for :data:`average` and :data:`max_average`, exponentiated gradient for :data:`maximum`'s
simplices). :class:`~cvxrank.formulations.rankmm.RankMM` holds one and asks it, so no
solver or formulation tests a loss's name:

* :data:`average` (RankMM-1, Sect. 3.1): :math:`L_i = \frac1{|R_i|}\sum_{R_i} \ell_{jk}`,
  box dual;
* :data:`maximum` (RankMM-2, Sect. 3.2): :math:`L_i = \max_{R_i} \ell_{jk}`, a simplex per
  query;
* :data:`max_average` (RankMM-3, Sect. 3.3): :math:`L_i = \max_k \frac1{|P_{ik}|}\sum_{j \in
  P_{ik}} \ell_{jk}`, an l1,inf ball per query.

Each method takes the formulation (its pairs, queries and C); the formulas are the module
docstring's of :mod:`cvxrank.formulations.rankmm`.

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 3.1-3.3.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.numerics.sets import Box, ConvexSet, L1InfBall, Simplex
from cvxrank.utils.lazy_sparse import sp
from cvxrank.utils.named import by_name

if TYPE_CHECKING:
    import cvxpy as cp

#: The formulation a query loss is asked about (a :class:`~cvxrank.formulations.rankmm.RankMM`:
#: its pairs, queries, C and CVXPY parameters).
RankMM = Any


class QueryLoss(ABC):
    """One of RankMM's query-level losses (module docstring).

    Attributes
    ----------
    name : str
        The name ``cvxrank fit --loss``, the estimators and model files use.
    label : str
        The paper's name (``"RankMM-1"``).
    dual_set_name : str
        The printed dual's feasible set, in words.
    dual_blocks : str
        The capability of its per-query dual blocks (:mod:`cvxrank.core.capabilities`):
        ``"euclidean_dual_blocks"`` (stochastic gradient projection) or
        ``"simplex_dual_blocks"`` (exponentiated gradient).
    sum_of_pair_hinges : bool
        Whether :math:`\\sum_i L_i` is a weighted sum of pair hinges (a hinge RankSVM, the
        1-slack's exact finish).
    """

    name: str
    label: str
    dual_set_name: str
    dual_blocks: str = "euclidean_dual_blocks"
    sum_of_pair_hinges: bool = False

    def __repr__(self) -> str:
        return f"cvxrank.formulations.query_losses.{_INSTANCE_NAME[self.name]}"

    def __reduce__(self) -> str:
        return _INSTANCE_NAME[self.name]  # one object per loss, also after pickling

    # -- the dual's variables ------------------------------------------------------------
    def n_slack(self, f: RankMM) -> int:
        """Dual coordinates beside the pairs (0; one per query with pairs for the simplex)."""
        return 0

    def kappa(self, f: RankMM) -> float:
        """:math:`\\kappa` of :math:`p^* = -\\kappa\\, Q^*_{printed}` (1 unless scaled)."""
        return 1.0

    def base_scale(self, f: RankMM) -> np.ndarray:
        """:math:`c` without its C dependence (ones unless the loss scales its pairs)."""
        return np.ones(f.n_pairs)

    def pair_scale(self, f: RankMM, base: np.ndarray) -> np.ndarray:
        """:math:`c` from :meth:`base_scale` (``base`` itself unless it grows with C)."""
        return base

    def lipschitz_factor(self, f: RankMM) -> float:
        """The C dependence of :math:`\\|X^\\top A^\\top \\mathrm{diag}(c)\\|^2` (1 unless
        :math:`c` grows with C)."""
        return 1.0

    @abstractmethod
    def dual_set(self, f: RankMM, C: float | cp.Parameter) -> ConvexSet:
        """The printed constraints on :math:`\\alpha` at the loss weight ``C``."""

    def dual_start(self, f: RankMM) -> np.ndarray:
        """A feasible start (zeros unless 0 is not feasible)."""
        return np.zeros(f.n_dual)

    def with_slacks(self, f: RankMM, alpha: np.ndarray) -> np.ndarray:
        """The dual point of pair coordinates ``alpha`` (itself unless slacks complete it)."""
        return alpha

    # -- the CVXPY reference -------------------------------------------------------------
    @abstractmethod
    def slack_qp(self, f: RankMM, residual: cp.Expression
                 ) -> tuple[cp.Expression, list[cp.Constraint]]:
        """The loss term :math:`\\sum_i L_i` of the paper's slack QP and its constraints,
        given the pair residuals :math:`(y_j - y_k) - (s_j - s_k)`."""

    def printed_pairs(self, f: RankMM, pair_alpha: cp.Expression
                      ) -> tuple[cp.Expression, cp.Expression]:
        """``(weighted, linear)`` of the printed dual: the pair multipliers up to C and the
        linear term :math:`\\sum \\alpha_{jk}(y_j - y_k) c^0_{jk}`."""
        return pair_alpha, f.pairs.delta @ pair_alpha

    def printed_half(self, f: RankMM) -> cp.Expression | float:
        """The factor of :math:`\\|X^\\top u\\|^2` in the printed dual (1/2 unless scaled)."""
        return 0.5

    def dual_objective(self, f: RankMM, linear: cp.Expression,
                       quadratic: cp.Expression) -> cp.Expression:
        """:math:`D(\\alpha)` from the printed dual's linear and quadratic terms."""
        return linear - 0.5 * quadratic

    # -- numpy ---------------------------------------------------------------------------
    @abstractmethod
    def query_losses(self, f: RankMM, slack: np.ndarray) -> np.ndarray:
        """:math:`L_i` of every query from :math:`a = y - s` (no pairs built)."""

    @abstractmethod
    def cut_weights(self, f: RankMM, residual: np.ndarray, pair_block: np.ndarray,
                    starts: np.ndarray) -> np.ndarray:
        """The pair weights :math:`\\pi` of each query's most violated constraint (its
        active affine piece), from the pair residuals; ``pair_block`` is each pair's block,
        ``starts`` the first pair of each block."""

    @abstractmethod
    def zero_subdifferential(self, Xq: np.ndarray, yq: np.ndarray) -> list[np.ndarray]:
        """The polytopes (vertices as rows) whose Minkowski sum is :math:`\\partial L_i(0)`
        for one query with pairs, features ``Xq`` and grades ``yq``."""


class _Average(QueryLoss):
    """RankMM-1 (Sect. 3.1): the mean of the query's pair hinges; box dual."""

    name, label, dual_set_name = "average", "RankMM-1", "box"
    sum_of_pair_hinges = True

    def dual_set(self, f: RankMM, C: float | cp.Parameter) -> ConvexSet:
        per_pair = f.pairs_per_query[f.pairs.query].astype(np.float64)
        return Box(0.0, 1.0 / (f.m * per_pair), scale=C)

    def slack_qp(self, f: RankMM, residual: cp.Expression
                 ) -> tuple[cp.Expression, list[cp.Constraint]]:
        import cvxpy as cp

        xi = cp.Variable(f.n_pairs, name="xi")
        weight = 1.0 / f.pairs_per_query[f.pairs.query]
        return weight @ xi, [xi >= 0, xi >= residual]

    def query_losses(self, f: RankMM, slack: np.ndarray) -> np.ndarray:
        total, _ = lower_end_sums(slack, f.data.query_index, f.grade_level)
        sums = np.bincount(f.data.query_index, weights=total, minlength=f.m)
        return sums / np.maximum(f.pairs_per_query, 1)

    def cut_weights(self, f: RankMM, residual: np.ndarray, pair_block: np.ndarray,
                    starts: np.ndarray) -> np.ndarray:
        return np.where(residual > 0, 1.0 / f.pairs_per_query[f.pairs.query], 0.0)

    def zero_subdifferential(self, Xq: np.ndarray, yq: np.ndarray) -> list[np.ndarray]:
        above = (yq[None, :] > yq[:, None]).sum(axis=1)  # documents preferred to k
        below = (yq[None, :] < yq[:, None]).sum(axis=1)  # documents below j
        total = (below - above) @ Xq  # sum over pairs of x_j - x_k
        return [-(total / float(below.sum()))[None, :]]


class _Maximum(QueryLoss):
    """RankMM-2 (Sect. 3.2): the query's largest pair hinge; a simplex per query, its
    variables scaled by C/m."""

    name, label, dual_set_name = "max", "RankMM-2", "simplex"
    dual_blocks = "simplex_dual_blocks"

    def n_slack(self, f: RankMM) -> int:
        return int(f.queries_with_pairs.size)

    def kappa(self, f: RankMM) -> float:
        return f.C / f.m

    def base_scale(self, f: RankMM) -> np.ndarray:
        return np.full(f.n_pairs, 1.0 / f.m)

    def pair_scale(self, f: RankMM, base: np.ndarray) -> np.ndarray:
        return f.C * base

    def lipschitz_factor(self, f: RankMM) -> float:
        return f.C ** 2

    def dual_set(self, f: RankMM, C: float | cp.Parameter) -> ConvexSet:
        n_blocks = f.queries_with_pairs.size
        block_of_query = np.searchsorted(f.queries_with_pairs, f.pairs.query)
        return Simplex(np.r_[block_of_query, np.arange(n_blocks)], 1.0)

    def dual_start(self, f: RankMM) -> np.ndarray:
        """The uniform distribution of each query's simplex."""
        sizes = f.pairs_per_query[f.queries_with_pairs] + 1.0
        per_pair = 1.0 / sizes[np.searchsorted(f.queries_with_pairs, f.pairs.query)]
        return np.r_[per_pair, 1.0 / sizes]

    def with_slacks(self, f: RankMM, alpha: np.ndarray) -> np.ndarray:
        """``alpha`` and each query's slack :math:`\\alpha^i_0 = 1 - \\sum_{jk}
        \\alpha^i_{jk}`."""
        per_block = np.bincount(np.searchsorted(f.queries_with_pairs, f.pairs.query),
                                weights=alpha, minlength=f.queries_with_pairs.size)
        return np.r_[alpha, np.maximum(1.0 - per_block, 0.0)]

    def slack_qp(self, f: RankMM, residual: cp.Expression
                 ) -> tuple[cp.Expression, list[cp.Constraint]]:
        import cvxpy as cp

        q = f.queries_with_pairs
        xi = cp.Variable(q.size, name="xi")  # xi^i of the queries with pairs
        block = np.searchsorted(q, f.pairs.query)
        return cp.sum(xi), [xi >= 0, xi[block] >= residual]

    def printed_half(self, f: RankMM) -> cp.Expression | float:
        return 0.5 * f.parameter("C_over_m")

    def dual_objective(self, f: RankMM, linear: cp.Expression,
                       quadratic: cp.Expression) -> cp.Expression:
        return (f.parameter("C_over_m") * linear
                - 0.5 * f.parameter("C_over_m_sq") * quadratic)

    def query_losses(self, f: RankMM, slack: np.ndarray) -> np.ndarray:
        return _max_losses(slack, f.data.query_index, f.grade_level, f.m)

    def cut_weights(self, f: RankMM, residual: np.ndarray, pair_block: np.ndarray,
                    starts: np.ndarray) -> np.ndarray:
        chosen = _first_argmax(residual, pair_block, starts)
        weight = np.zeros(f.n_pairs)
        weight[chosen] = (residual[chosen] > 0).astype(np.float64)
        return weight

    def zero_subdifferential(self, Xq: np.ndarray, yq: np.ndarray) -> list[np.ndarray]:
        grades = np.unique(yq)
        return [-Xq[yq == grades[-1]], Xq[yq == grades[0]]]


class _MaxAverage(QueryLoss):
    """RankMM-3 (Sect. 3.3): the largest mean hinge of a lower document; an l1,inf ball per
    query, its pairs scaled by :math:`1/|P_{ik}|`."""

    name, label, dual_set_name = "max_average", "RankMM-3", "l1,inf ball"

    def base_scale(self, f: RankMM) -> np.ndarray:
        group, size, _ = f.lower_group
        return 1.0 / size[group]

    def dual_set(self, f: RankMM, C: float | cp.Parameter) -> ConvexSet:
        group, _, block = f.lower_group
        return L1InfBall(group, block, radius=1.0 / f.m, scale=C)

    def slack_qp(self, f: RankMM, residual: cp.Expression
                 ) -> tuple[cp.Expression, list[cp.Constraint]]:
        import cvxpy as cp

        xi = cp.Variable(f.queries_with_pairs.size, name="xi")
        xi_pair = cp.Variable(f.n_pairs, name="xi_jk")
        group, size, group_block = f.lower_group
        mean = sp.csr_matrix((1.0 / size[group], (group, np.arange(group.size))),
                             shape=(size.size, group.size))
        return cp.sum(xi), [xi[group_block] >= mean @ xi_pair, xi_pair >= 0,
                            xi_pair >= residual]

    def printed_pairs(self, f: RankMM, pair_alpha: cp.Expression
                      ) -> tuple[cp.Expression, cp.Expression]:
        import cvxpy as cp

        base = f.pair_base_scale
        return cp.multiply(base, pair_alpha), (f.pairs.delta * base) @ pair_alpha

    def query_losses(self, f: RankMM, slack: np.ndarray) -> np.ndarray:
        query = f.data.query_index
        total, count = lower_end_sums(slack, query, f.grade_level)
        losses = np.zeros(f.m)
        has = count > 0
        np.maximum.at(losses, query[has], total[has] / count[has])
        return losses

    def cut_weights(self, f: RankMM, residual: np.ndarray, pair_block: np.ndarray,
                    starts: np.ndarray) -> np.ndarray:
        group, size, group_block = f.lower_group
        mean = np.bincount(group, weights=np.maximum(residual, 0.0)) / size
        group_starts = np.searchsorted(group_block, np.arange(starts.size))
        best = _first_argmax(mean, group_block, group_starts)
        return np.where((residual > 0) & (group == best[pair_block]), 1.0 / size[group], 0.0)

    def zero_subdifferential(self, Xq: np.ndarray, yq: np.ndarray) -> list[np.ndarray]:
        grades = np.unique(yq)
        values, means = [], []
        for level in grades[:-1]:
            better = yq > level
            values.append(float(yq[better].mean() - level))
            means.append(Xq[better].mean(axis=0))
        values_arr = np.asarray(values)
        top = values_arr.max()
        active = np.flatnonzero(values_arr >= top - 1e-12 * max(1.0, abs(top)))
        return [np.vstack([Xq[yq == grades[a]] - means[a] for a in active])]


#: RankMM-1's average loss (Sect. 3.1).
average = _Average()

#: RankMM-2's maximum loss (Sect. 3.2).
maximum = _Maximum()

#: RankMM-3's maximum-average loss (Sect. 3.3).
max_average = _MaxAverage()

#: RankMM's losses by name, in the paper's order.
QUERY_LOSSES: dict[str, QueryLoss] = {x.name: x for x in (average, maximum, max_average)}

_INSTANCE_NAME = {"average": "average", "max": "maximum", "max_average": "max_average"}


def query_loss(loss: str | QueryLoss) -> QueryLoss:
    """The query loss named ``loss`` (:data:`QUERY_LOSSES`), or ``loss`` itself.

    Raises
    ------
    ValueError
        For any other name or object.
    """
    return by_name(loss, QueryLoss, QUERY_LOSSES, "loss")


def _first_argmax(values: np.ndarray, segment: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Index of the first largest entry of each nonempty segment (``values`` sorted by
    ``segment``, whose segments begin at ``starts``)."""
    best = np.maximum.reduceat(values, starts)
    hits = np.flatnonzero(values == best[segment])
    _, first = np.unique(segment[hits], return_index=True)
    return hits[first]


def _max_losses(slack: np.ndarray, query: np.ndarray, level: np.ndarray, m: int) -> np.ndarray:
    r"""RankMM-2's :math:`L_i = \max(0, \max_{y_j > y_k} a_j - a_k)`, :math:`a = y - s`.

    On the m x R grid of (query, grade level): the largest :math:`a_j` of each cell, plus the
    largest :math:`-a_k` of the cells of lower level in the same query (a running maximum
    along the levels); O(n + m R), no pairs.
    """
    n_levels = int(level.max()) + 1
    cell = query * n_levels + level
    top = np.full(m * n_levels, -np.inf)
    bottom = np.full(m * n_levels, -np.inf)
    np.maximum.at(top, cell, slack)
    np.maximum.at(bottom, cell, -slack)
    below = np.maximum.accumulate(bottom.reshape(m, n_levels), axis=1)
    below = np.c_[np.full(m, -np.inf), below[:, :-1]]  # strictly lower levels only
    value = top.reshape(m, n_levels) + below
    return np.maximum(np.max(np.where(np.isfinite(value), value, 0.0), axis=1), 0.0)


def lower_end_sums(slack: np.ndarray, query: np.ndarray,
                   level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Per document k, :math:`T_k = \sum_{j \in P_{ik}} [a_j - a_k]_+` and :math:`|P_{ik}|`.

    :math:`P_{ik}` are the documents of query i with a higher grade than k and
    :math:`a = y - s`, so :math:`T_k` is the sum of k's pair hinges
    :math:`\ell_{jk}` as the lower end. For each grade level t, the documents of level t are
    the lower ends and those of a higher level in the same query the upper ends; sorting
    the entries of every query by decreasing :math:`a` (upper ends first on ties, which add
    0), :math:`T_k = S_k - n_k a_k` with :math:`S_k, n_k` the sum and count of the upper
    :math:`a_j` before k. One sort and two segmented cumulative sums per level: O(n R log n)
    with R grade levels, no pairs.

    Parameters
    ----------
    slack : ndarray of shape (n,)
        :math:`a = y - s`.
    query, level : int ndarrays of shape (n,)
        Query index and grade level of each document.

    Returns
    -------
    total : ndarray of shape (n,)
        :math:`T_k` (0 for a document with no higher-graded document in its query).
    count : ndarray of shape (n,)
        :math:`|P_{ik}|`.
    """
    total = np.zeros(slack.size)
    count = np.zeros(slack.size)
    n_queries = int(query.max()) + 1
    for t in np.unique(level)[:-1]:  # one pass per grade level
        docs = np.flatnonzero(level >= t)
        q, a, up = query[docs], slack[docs], level[docs] > t
        order = np.lexsort((~up, -a, q))  # by query, decreasing a, upper ends first
        docs, q, a, up = docs[order], q[order], a[order], up[order]
        above_sum = np.cumsum(np.where(up, a, 0.0))
        above_count = np.cumsum(up.astype(np.float64))
        start = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
        seg = np.repeat(start, np.diff(np.r_[start, q.size]))
        low = ~up
        S = above_sum[low] - np.r_[0.0, above_sum][seg[low]]
        n = above_count[low] - np.r_[0.0, above_count][seg[low]]
        # the sums before k are over upper ends of larger a, so S - n a >= 0 up to rounding
        total[docs[low]] = np.maximum(S - n * a[low], 0.0)
        count[docs[low]] = np.bincount(q, weights=up.astype(np.float64),
                                       minlength=n_queries)[q[low]]
    return total, count
