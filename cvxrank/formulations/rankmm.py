r"""RankMM (Agarwal & Collins 2010): three query-level losses of the relevance-weighted hinge.

For the m training queries (every query of the data, including those without preference
pairs), the preference pairs :math:`R_i = \{(j, k) : y_j > y_k\}` of query i, the scores
:math:`s = X w` and the relevance-weighted pair hinge (Sect. 2)

.. math::

    \ell_{jk}(w) = \big[(y_j - y_k) - (s_j - s_k)\big]_+ ,

RankMM minimizes :math:`P(w) = \tfrac12\|w\|^2 + \frac{C}{m}\sum_{i=1}^m L_i(w)` with one of

* ``"average"`` (RankMM-1, Sect. 3.1): :math:`L_i = \frac1{|R_i|}\sum_{(j,k) \in R_i}
  \ell_{jk}`;
* ``"max"`` (RankMM-2, Sect. 3.2): :math:`L_i = \max_{(j,k) \in R_i} \ell_{jk}`;
* ``"max_average"`` (RankMM-3, Sect. 3.3): :math:`L_i = \max_{k : |P_{ik}| > 0}
  \frac1{|P_{ik}|}\sum_{j \in P_{ik}} \ell_{jk}`, :math:`P_{ik} = \{j : y_j > y_k\}`;

and a query without preference pairs has :math:`L_i = 0` (it still counts in m).

**One dual, three sets.** In each case the Lagrange multipliers :math:`\beta_{jk} \ge 0` of
the constraints :math:`\xi \ge (y_j - y_k) - (s_j - s_k)` give the same concave quadratic,

.. math::

    D(\beta) = \sum_{(j,k)} \beta_{jk}(y_j - y_k) - \tfrac12 \Big\|\sum_{(j,k)} \beta_{jk}
    (x_j - x_k)\Big\|^2, \qquad w(\beta) = X^\top A^\top \beta,

over three feasible sets. The paper prints each dual as a *minimization* in a scaled
variable :math:`\alpha` with :math:`\beta = c \odot \alpha`:

==============  ==========================  ============================================
loss            :math:`c_{jk}`              printed constraints on :math:`\alpha`
==============  ==========================  ============================================
average         1                           :math:`0 \le \alpha_{jk} \le C/(m|R_i|)` (box)
max             :math:`C/m`                 :math:`\alpha^i_0 + \sum \alpha^i_{jk} = 1`,
                                            :math:`\alpha \ge 0` (a simplex per query)
max_average     :math:`1/|P_{ik}|`          :math:`0 \le \alpha_{jk} \le \gamma_k`,
                                            :math:`\sum_k \gamma_k = C/m` (l1,inf ball)
==============  ==========================  ============================================

and the printed objective :math:`Q_{\text{printed}}(\alpha)` satisfies
:math:`D(c \odot \alpha) = -\kappa\, Q_{\text{printed}}(\alpha)` with :math:`\kappa = C/m`
for ``"max"`` and :math:`\kappa = 1` otherwise, so that **p* = -kappa x (the printed dual's
optimal value)** (strong duality; tested). This class's :meth:`dual` is that maximization,
:math:`D(\alpha) := D(c \odot \alpha)`, over the printed variables and constraints
(:meth:`printed_dual` is the printed minimization itself), and
:math:`w(\alpha) = X^\top A^\top (c \odot \alpha)`.

Every dual coordinate is a pair of one query (plus, for ``"max"``, the slack coordinate
:math:`\alpha^i_0` of each query with pairs), so the duals split into per-query blocks: the
block gradient of query i needs only that query's scores,
:math:`-\partial D / \partial \alpha_{jk} = c_{jk}\big((s_j - y_j) - (s_k - y_k)\big)` (and 0
for :math:`\alpha^i_0`): the stochastic solvers of :mod:`cvxrank.solvers.rankmm` step on one
query at a time.

References
----------
.. [1] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
   Retrieval", ECIR 2010, Sects. 2-3.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Literal

import numpy as np
import scipy.sparse as sp

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs, count_pairs
from cvxrank.data.ranking_data import RankingData, largest_distance_to_mean
from cvxrank.formulations.base import (
    LossWeighted,
    ProjectableDual,
    no_pairs_error,
    squared_operator_norm,
)
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.methods import RANKMM_LOSSES
from cvxrank.numerics.cuts import QueryCuts
from cvxrank.numerics.sets import Box, ConvexSet, L1InfBall, Simplex

if TYPE_CHECKING:
    import cvxpy as cp

QueryLoss = Literal["average", "max", "max_average"]


class RankMM(ProjectableDual, LossWeighted):
    r"""RankMM-1/2/3: the relevance-weighted pairwise hinge aggregated per query.

    See the module docstring for the primal, the three duals as printed, the affine map
    :math:`p^* = -\kappa\, Q^*_{\text{printed}}` and :math:`w(\alpha)`.

    Parameters
    ----------
    data : RankingData
        Training data; m = ``data.n_queries`` counts every query, with pairs or not.
    C : float
        Loss weight (the paper's C; the loss term is :math:`\frac{C}{m}\sum_i L_i`), finite
        and in :data:`cvxrank.tolerances.C_RANGE`.
    loss : {"average", "max", "max_average"}
        RankMM-1, RankMM-2 or RankMM-3.
    max_pairs : int
        Refusal limit for building the pairs (the dual variables).

    Attributes
    ----------
    name : str
        ``"rankmm-<loss>"``.
    m : int
        The number of training queries.
    pairs : PairSet
        The preference pairs (built on first access, sorted by query).
    pair_scale : ndarray of shape (p,)
        :math:`c` with :math:`\beta = c \odot \alpha` (1, :math:`C/m` or
        :math:`1/|P_{ik}|`).
    dual_set : ConvexSet
        :class:`~cvxrank.numerics.sets.Box`, :class:`~cvxrank.numerics.sets.Simplex` (one group per
        query with pairs, its pairs and its :math:`\alpha^i_0`) or
        :class:`~cvxrank.numerics.sets.L1InfBall` (groups of pairs sharing their lower document,
        blocks = queries).

    Raises
    ------
    ValueError
        For an unknown loss, C outside the accepted range, or data without preference pairs.

    References
    ----------
    .. [1] S. Agarwal and M. Collins, ECIR 2010: Sect. 3.1 (average loss, box dual),
       Sect. 3.2 (maximum loss, simplex dual), Sect. 3.3 (maximum-average loss, l1,inf dual).
    """

    capabilities = frozenset({"dual_gradient", "dual_query_blocks", "separation_oracle",
                              "pair_weighted_cuts", "cut_bounds"})

    def __init__(self, data: RankingData, *, C: float = 1.0, loss: QueryLoss = "average",
                 max_pairs: int = DEFAULT_MAX_PAIRS) -> None:
        if loss not in RANKMM_LOSSES:
            raise ValueError(f"loss must be one of {', '.join(RANKMM_LOSSES)}; got {loss!r}")
        per_query = count_pairs(data)
        if int(per_query.sum()) == 0:
            raise no_pairs_error(data.source)
        super().__init__(data, C=C)
        self.loss: str = loss
        self.name = f"rankmm-{loss}"
        self.m = data.n_queries
        self.pairs_per_query = per_query
        self._n_pairs = int(per_query.sum())
        self._max_pairs = max_pairs
        self._X = data.X
        self.grades = np.unique(data.y)
        self.grade_level = np.searchsorted(self.grades, data.y)
        self._op_norm_sq: float | None = None

    def _derived_values(self) -> dict[str, float]:
        # C/m and (C/m)^2: parameters of their own keep the "max" duals DPP.
        kappa = self.C / self.data.n_queries
        return {"C_over_m": kappa, "C_over_m_sq": kappa * kappa}

    # -- pairs and the scaling of the dual variables ----------------------------------
    @cached_property
    def pairs(self) -> PairSet:
        """The preference pairs, sorted by query (built on first access)."""
        return build_pairs(self.data, max_pairs=self._max_pairs)

    @property
    def n_pairs(self) -> int:
        """Number of preference pairs p (counted, not built)."""
        return self._n_pairs

    @cached_property
    def queries_with_pairs(self) -> np.ndarray:
        """Indices of the queries that have preference pairs (the dual's blocks)."""
        return np.flatnonzero(self.pairs_per_query > 0)

    @property
    def n_dual(self) -> int:
        """p, plus one slack coordinate :math:`\\alpha^i_0` per query with pairs ("max")."""
        extra = self.queries_with_pairs.size if self.loss == "max" else 0
        return self._n_pairs + extra

    def sizes(self) -> dict[str, int]:
        """``n_dual`` and ``n_pairs`` (the preference pairs)."""
        return {"n_dual": int(self.n_dual), "n_pairs": int(self._n_pairs)}

    @property
    def kappa(self) -> float:
        """:math:`\\kappa` of :math:`p^* = -\\kappa Q^*_{printed}`: C/m ("max"), else 1."""
        return self.C / self.m if self.loss == "max" else 1.0

    @cached_property
    def lower_group(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs grouped by lower document (RankMM-3's :math:`P_{ik}`).

        Returns
        -------
        group : ndarray of int64, shape (p,)
            Group (0-based, in order of the lower document) of each pair.
        size : ndarray of shape (G,)
            :math:`|P_{ik}|` of each group.
        block : ndarray of int64, shape (G,)
            Block (0-based index among the queries with pairs) of each group.
        """
        P = self.pairs
        docs, group = np.unique(P.lower, return_inverse=True)
        size = np.bincount(group).astype(np.float64)
        block = np.searchsorted(self.queries_with_pairs, self.data.query_index[docs])
        return group.astype(np.int64), size, block.astype(np.int64)

    @cached_property
    def _pair_base_scale(self) -> np.ndarray:
        """:math:`c` without its C dependence: 1, 1/m ("max", times C) or 1/|P_ik|."""
        if self.loss == "max_average":
            group, size, _ = self.lower_group
            return 1.0 / size[group]
        if self.loss == "max":
            return np.full(self._n_pairs, 1.0 / self.m)
        return np.ones(self._n_pairs)

    @property
    def pair_scale(self) -> np.ndarray:
        """:math:`c` with :math:`\\beta = c \\odot \\alpha` (see the module docstring)."""
        base = self._pair_base_scale
        return self.C * base if self.loss == "max" else base

    def _pair_part(self, alpha: np.ndarray) -> np.ndarray:
        """The pair coordinates of a dual point (without the "max" slack coordinates)."""
        return np.asarray(alpha, dtype=np.float64)[: self._n_pairs]

    # -- the dual feasible set -------------------------------------------------------
    @cached_property
    def dual_set(self) -> ConvexSet:
        """The printed constraints: box, simplex per query, or l1,inf ball per query."""
        C = self.hyper_parameter("C")
        if self.loss == "average":
            per_pair = self.pairs_per_query[self.pairs.query].astype(np.float64)
            return Box(0.0, 1.0 / (self.m * per_pair), scale=C)
        block_of_query = np.searchsorted(self.queries_with_pairs, self.pairs.query)
        if self.loss == "max":
            n_blocks = self.queries_with_pairs.size
            group = np.r_[block_of_query, np.arange(n_blocks)]
            return Simplex(group, 1.0)
        group, _, block = self.lower_group
        return L1InfBall(group, block, radius=1.0 / self.m, scale=C)

    def dual_start(self) -> np.ndarray:
        """Zeros (box, l1,inf); the uniform distribution of each query's simplex ("max")."""
        if self.loss != "max":
            return np.zeros(self.n_dual)
        sizes = self.pairs_per_query[self.queries_with_pairs] + 1.0
        per_pair = 1.0 / sizes[np.searchsorted(self.queries_with_pairs, self.pairs.query)]
        return np.r_[per_pair, 1.0 / sizes]

    # -- CVXPY reference -------------------------------------------------------------
    @property
    def w_variable(self) -> cp.Variable:
        """The weights ``w`` (length d) of :meth:`primal`."""
        return self._variable("w", self.data.n_features)

    @property
    def alpha_variable(self) -> cp.Variable:
        """The printed dual variables :math:`\\alpha` (length :attr:`n_dual`)."""
        return self._variable("alpha", self.n_dual)

    def _build_primal(self) -> cp.Problem:
        """The paper's slack QP of the loss (Sects. 3.1-3.3), scores ``s = X w`` auxiliary."""
        import cvxpy as cp

        w = self.w_variable
        s = self._variable("s", self.data.n_documents)
        P, q = self.pairs, self.queries_with_pairs
        residual = P.delta - P.A @ s  # (y_j - y_k) - w.(x_j - x_k)
        constraints = [s == self._X @ w]
        if self.loss == "average":
            xi = cp.Variable(self._n_pairs, name="xi")
            weight = 1.0 / self.pairs_per_query[P.query]
            loss = weight @ xi
            constraints += [xi >= 0, xi >= residual]
        else:
            xi = cp.Variable(q.size, name="xi")  # xi^i of the queries with pairs
            loss = cp.sum(xi)
            block = np.searchsorted(q, P.query)
            if self.loss == "max":
                constraints += [xi >= 0, xi[block] >= residual]
            else:
                xi_pair = cp.Variable(self._n_pairs, name="xi_jk")
                group, size, group_block = self.lower_group
                mean = sp.csr_matrix((1.0 / size[group], (group, np.arange(group.size))),
                                     shape=(size.size, group.size))
                constraints += [xi[group_block] >= mean @ xi_pair, xi_pair >= 0,
                                xi_pair >= residual]
        objective = 0.5 * cp.sum_squares(w) + self.parameter("C_over_m") * loss
        return cp.Problem(cp.Minimize(objective), constraints)

    def _dual_parts(self) -> tuple[cp.Expression, cp.Expression, list[cp.Constraint]]:
        """``(linear, quadratic, constraints)`` of the printed dual: the linear term
        :math:`\\sum \\alpha_{jk} (y_j - y_k) c^0_{jk}` and :math:`\\|X^\\top u\\|^2` with
        ``u = A^T (c^0 alpha)`` (``c^0``: :attr:`pair_scale` without the factor C of
        "max"), and the printed constraints."""
        import cvxpy as cp

        alpha = self.alpha_variable
        pair_alpha = alpha[: self._n_pairs]
        u = self._variable("u", self.data.n_documents)
        base = self._pair_base_scale if self.loss == "max_average" else 1.0
        weighted = cp.multiply(base, pair_alpha) if self.loss == "max_average" else pair_alpha
        linear = (self.pairs.delta * base) @ pair_alpha
        constraints = [u == self.pairs.A.T @ weighted, *self.dual_set.constraints(alpha)]
        return linear, cp.sum_squares(self._X.T @ u), constraints

    def printed_dual(self) -> cp.Problem:
        """The dual exactly as printed: a minimization over :math:`\\alpha` (and
        :math:`\\gamma`), with :math:`p^* = -\\kappa` times its optimal value."""

        def build() -> cp.Problem:
            import cvxpy as cp

            linear, quadratic, constraints = self._cached("dual_parts", self._dual_parts)
            half = 0.5 * (self.parameter("C_over_m") if self.loss == "max" else 1.0)
            return cp.Problem(cp.Minimize(half * quadratic - linear), constraints)

        return self._cached("printed_dual", build)

    def _build_dual(self) -> cp.Problem:
        """:math:`\\max D(\\alpha) = -\\kappa Q_{printed}(\\alpha)` over the printed set."""
        import cvxpy as cp

        linear, quadratic, constraints = self._cached("dual_parts", self._dual_parts)
        if self.loss == "max":
            objective = (self.parameter("C_over_m") * linear
                         - 0.5 * self.parameter("C_over_m_sq") * quadratic)
        else:
            objective = linear - 0.5 * quadratic
        return cp.Problem(cp.Maximize(objective), constraints)

    # -- numpy evaluators ------------------------------------------------------------
    def query_losses(self, w: np.ndarray) -> np.ndarray:
        r""":math:`L_i(w)` of every query (0 for a query without pairs), without the pairs.

        ``"max"``: O(n + m R) (:func:`_max_losses`); ``"average"`` and ``"max_average"``:
        the sum of each document's hinges as a lower end, :func:`lower_end_sums`, O(n R log
        n) (R grade levels), then :math:`\sum_k T_k / |R_i|` or :math:`\max_k T_k /
        |P_{ik}|` per query.
        """
        s = np.asarray(self._X @ np.asarray(w, dtype=np.float64), dtype=np.float64)
        query, level = self.data.query_index, self.grade_level
        slack = self.data.y - s  # a = y - s, l_jk = [a_j - a_k]_+
        if self.loss == "max":
            return _max_losses(slack, query, level, self.m)
        total, count = lower_end_sums(slack, query, level)
        if self.loss == "average":
            sums = np.bincount(query, weights=total, minlength=self.m)
            return sums / np.maximum(self.pairs_per_query, 1)
        losses = np.zeros(self.m)
        has = count > 0
        np.maximum.at(losses, query[has], total[has] / count[has])
        return losses

    def separation_oracle(self, w: np.ndarray) -> QueryCuts:
        r"""The affine piece of every :math:`L_i` active at w (the most violated constraint).

        With the pair residuals :math:`r_{jk} = \Delta_{jk} - (s_j - s_k)`, the piece's pair
        weights :math:`\pi^i` (:class:`~cvxrank.numerics.cuts.QueryCuts`) are the maximizers of
        :math:`\sum \pi_{jk} r_{jk}` over the loss's unit dual set, i.e. the constraint of
        the slack QP most violated at w:

        * ``"average"``: :math:`\pi_{jk} = 1/|R_i|` on the pairs with :math:`r_{jk} > 0`
          (the 1-slack constraint of the subset of violated pairs, Sect. 3.1);
        * ``"max"``: one pair of largest :math:`r_{jk}`, if positive (Sect. 3.2);
        * ``"max_average"``: :math:`\pi_{jk} = 1/|P_{ik}|` on the violated pairs of the
          lower document k whose mean hinge is largest (Sect. 3.3).

        :math:`L_i(w) = \sum \pi_{jk} r_{jk}` and :math:`L_i(v) \ge c_i - g_i^\top v` for
        every v. O(p + n d) with the pairs built.

        Parameters
        ----------
        w : ndarray of shape (d,)

        Returns
        -------
        QueryCuts
            One piece per query with pairs (block b is ``queries_with_pairs[b]``).
        """
        P, blocks = self.pairs, self.queries_with_pairs
        s = np.asarray(self._X @ np.asarray(w, dtype=np.float64), dtype=np.float64)
        residual = P.delta - (s[P.upper] - s[P.lower])
        pair_block = np.searchsorted(blocks, P.query)
        starts = P.pair_ptr[blocks]
        positive = residual > 0
        if self.loss == "average":
            weight = np.where(positive, 1.0 / self.pairs_per_query[P.query], 0.0)
        elif self.loss == "max":
            chosen = _first_argmax(residual, pair_block, starts)
            weight = np.zeros(self._n_pairs)
            weight[chosen] = positive[chosen].astype(np.float64)
        else:
            group, size, group_block = self.lower_group
            mean = np.bincount(group, weights=np.maximum(residual, 0.0)) / size
            group_starts = np.searchsorted(group_block, np.arange(blocks.size))
            best = _first_argmax(mean, group_block, group_starts)
            weight = np.where(positive & (group == best[pair_block]), 1.0 / size[group], 0.0)
        loss = np.bincount(pair_block, weights=weight * residual, minlength=blocks.size)
        offset = np.bincount(pair_block, weights=weight * P.delta, minlength=blocks.size)
        coef = P.A.T @ weight  # per document: the sum of its pairs' weights, +upper -lower
        docs = np.flatnonzero(coef)
        block_doc = np.searchsorted(blocks, self.data.query_index[docs])
        spread = sp.csr_matrix((coef[docs], (block_doc, docs)),
                               shape=(blocks.size, self.data.n_documents))
        gradient = spread @ self._X
        gradient = gradient.toarray() if sp.issparse(gradient) else np.asarray(gradient)
        return QueryCuts(loss=loss, offset=offset, gradient=gradient, pair_weight=weight,
                         pair_block=pair_block)

    def cut_bounds(self) -> tuple[float, float, np.ndarray]:
        r"""What the n-slack cutting plane's iteration bound needs (Tsochantaridis et al.
        2005, Thm. 18; :func:`cvxrank.solvers.cutting_plane.iteration_bound`): the weight
        :math:`C/m` of each query's loss, :math:`R = \max_i 2 \max_{j \in i} \|x_j - \bar
        x_i\| \ge \|x_j - x_k\|` (a piece's pair weights sum to at most 1, so its gradient
        is at most the longest pair difference of its query) and the losses :math:`L_i(0)`
        of the queries with pairs."""
        ptr, X = self.data.query_ptr, self._X
        R = max(2.0 * largest_distance_to_mean(X[ptr[q]:ptr[q + 1]])
                for q in self.queries_with_pairs)
        losses = self.query_losses(np.zeros(self.data.n_features))[self.queries_with_pairs]
        return self.C / self.m, R, losses

    def dual_from_pair_weights(self, beta: np.ndarray) -> np.ndarray:
        r"""The printed dual point :math:`\alpha` of pair multipliers :math:`\beta = c
        \odot \alpha` (with, for ``"max"``, each query's slack :math:`\alpha^i_0 = 1 -
        \sum_{jk} \alpha^i_{jk}`)."""
        alpha = np.asarray(beta, dtype=np.float64) / self.pair_scale
        if self.loss != "max":
            return alpha
        per_block = np.bincount(np.searchsorted(self.queries_with_pairs, self.pairs.query),
                                weights=alpha, minlength=self.queries_with_pairs.size)
        return np.r_[alpha, np.maximum(1.0 - per_block, 0.0)]

    def as_ranksvm(self) -> RankSVM:
        r"""RankMM-1 as the hinge RankSVM it is: the same objective, term by term.

        The average loss (Sect. 3.1) is :math:`\frac{C}{m} \sum_i \frac{1}{|R_i|}
        \sum_{(j,k) \in R_i} [(y_j - y_k) - w \cdot (x_j - x_k)]_+`: a hinge RankSVM
        (:class:`~cvxrank.formulations.ranksvm.RankSVM`, Herbrich/Joachims) with the query
        weight :math:`1/(m |R_i|)` and the margin :math:`y_j - y_k` of the grade pair, so its
        structured weights let the 1-slack cutting plane and its exact finish
        (:mod:`cvxrank.solvers.one_slack`) solve RankMM-1 to its exact optimum. ``m`` counts
        every query, as :meth:`primal_value` does (a query without pairs adds nothing).

        Raises
        ------
        ValueError
            For the ``"max"`` and ``"max_average"`` losses (not sums of pair hinges).
        """
        if self.loss != "average":
            raise ValueError(f"{self.name}: only the average loss (RankMM-1) is a RankSVM")
        per_query = self.pairs_per_query.astype(np.float64)
        query_weight = 1.0 / (self.m * np.maximum(per_query, 1.0))
        return RankSVM(self.data, C=self.C, loss="hinge", query_weight=query_weight,
                       level_margin=_grade_difference, max_pairs=self._max_pairs)

    def primal_value(self, w: np.ndarray) -> float:
        """:math:`P(w) = \\tfrac12 \\|w\\|^2 + \\frac{C}{m} \\sum_i L_i(w)` (no pairs built)."""
        w = np.asarray(w, dtype=np.float64)
        return float(0.5 * (w @ w) + (self.C / self.m) * self.query_losses(w).sum())

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`w(\\alpha) = X^\\top A^\\top (c \\odot \\alpha)`."""
        beta = self.pair_scale * self._pair_part(alpha)
        return np.asarray(self._X.T @ (self.pairs.A.T @ beta))

    def dual_value(self, alpha: np.ndarray) -> float:
        """:math:`D(\\alpha) = (c \\odot \\Delta)^\\top \\alpha - \\tfrac12 \\|w(\\alpha)\\|^2`
        (:math:`= -\\kappa Q_{printed}(\\alpha)`), feasible or not."""
        pair_alpha = self._pair_part(alpha)
        w = self.primal_from_dual(alpha)
        return float((self.pair_scale * self.pairs.delta) @ pair_alpha - 0.5 * (w @ w))

    def printed_dual_value(self, alpha: np.ndarray) -> float:
        """The printed (minimized) dual objective :math:`Q_{printed}(\\alpha) =
        -D(\\alpha) / \\kappa`."""
        return -self.dual_value(alpha) / self.kappa

    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """Gradient of -D: :math:`c \\odot (A X w(\\alpha) - \\Delta)` (0 on the slacks)."""
        w = self.primal_from_dual(alpha)
        pair = self.pair_scale * (self.pairs.A @ np.asarray(self._X @ w) - self.pairs.delta)
        return np.r_[pair, np.zeros(self.n_dual - self._n_pairs)]

    def dual_lipschitz(self) -> float:
        """:math:`\\|X^\\top A^\\top \\mathrm{diag}(c)\\|_2^2` (``squared_operator_norm``;
        the C-free part is computed once)."""
        if self._op_norm_sq is None:
            base = self._pair_base_scale
            self._op_norm_sq = squared_operator_norm(self._X, sp.diags(base) @ self.pairs.A)
        factor = self.C ** 2 if self.loss == "max" else 1.0
        return factor * self._op_norm_sq

    def dual_strong_convexity(self) -> float:
        """0: -D is a convex quadratic, not strongly convex in general."""
        return 0.0

    def describe(self) -> dict[str, object]:
        """Name, C, loss and m, for tables and JSON output."""
        return {"formulation": self.name, "C": self.C, "loss": self.loss, "m": self.m}


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


def _grade_difference(upper: float, lower: float) -> float:
    """RankMM's margin of a pair of grades (Agarwal & Collins, Sect. 3): their difference."""
    return upper - lower
