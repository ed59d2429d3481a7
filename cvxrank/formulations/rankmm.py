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
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.data.pairs import DEFAULT_MAX_PAIRS, PairSet, build_pairs, count_pairs
from cvxrank.data.ranking_data import RankingData, largest_distance_to_mean
from cvxrank.formulations.base import (
    LossWeighted,
    ProjectableDual,
    no_pairs_error,
    squared_operator_norm,
)
from cvxrank.formulations.query_losses import QueryLoss, query_loss
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.methods import RANKMM_LOSSES  # noqa: F401  (the names, re-exported)
from cvxrank.numerics.cuts import QueryCuts
from cvxrank.numerics.sets import ConvexSet
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp


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
    loss : QueryLoss or {"average", "max", "max_average"}
        RankMM-1, RankMM-2 or RankMM-3 (:mod:`cvxrank.formulations.query_losses`: the
        objects ``average``, ``maximum``, ``max_average``, or their names).
    max_pairs : int
        Refusal limit for building the pairs (the dual variables).

    Attributes
    ----------
    name : str
        ``"rankmm-<loss name>"``.
    loss : QueryLoss
        The query loss, which the formulation asks for everything that depends on it.
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

    #: C multiplies the mean of the query losses (m = the number of queries, with pairs or
    #: not); a sharded fit counts every shard's queries
    #: (:class:`~cvxrank.distributed.query_blocks.ShardedQueryBlocks`).
    mean_over_queries = True

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "rankmm"

    def __init__(self, data: RankingData, *, C: float = 1.0,
                 loss: str | QueryLoss = "average", max_pairs: int = DEFAULT_MAX_PAIRS) -> None:
        loss = query_loss(loss)
        per_query = count_pairs(data)
        if int(per_query.sum()) == 0:
            raise no_pairs_error(data.source)
        super().__init__(data, C=C)
        self.loss: QueryLoss = loss
        self.name = f"rankmm-{loss.name}"
        self.capabilities = frozenset({"dual_gradient", "dual_query_blocks", loss.dual_blocks,
                                       "separation_oracle", "pair_weighted_cuts",
                                       "cut_bounds"})
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
        return self._n_pairs + self.loss.n_slack(self)

    def sizes(self) -> dict[str, int]:
        """``n_dual`` and ``n_pairs`` (the preference pairs)."""
        return {"n_dual": int(self.n_dual), "n_pairs": int(self._n_pairs)}

    @property
    def kappa(self) -> float:
        """:math:`\\kappa` of :math:`p^* = -\\kappa Q^*_{printed}`: C/m ("max"), else 1."""
        return self.loss.kappa(self)

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
    def pair_base_scale(self) -> np.ndarray:
        """:math:`c` without its C dependence: 1, 1/m ("max", times C) or :math:`1/|P_{ik}|`."""
        return self.loss.base_scale(self)

    @property
    def pair_scale(self) -> np.ndarray:
        """:math:`c` with :math:`\\beta = c \\odot \\alpha` (see the module docstring)."""
        return self.loss.pair_scale(self, self.pair_base_scale)

    def _pair_part(self, alpha: np.ndarray) -> np.ndarray:
        """The pair coordinates of a dual point (without the "max" slack coordinates)."""
        return np.asarray(alpha, dtype=np.float64)[: self._n_pairs]

    # -- the dual feasible set -------------------------------------------------------
    @cached_property
    def dual_set(self) -> ConvexSet:
        """The printed constraints: box, simplex per query, or l1,inf ball per query."""
        return self.loss.dual_set(self, self.hyper_parameter("C"))

    def dual_start(self) -> np.ndarray:
        """Zeros (box, l1,inf); the uniform distribution of each query's simplex ("max")."""
        return self.loss.dual_start(self)

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
        residual = self.pairs.delta - self.pairs.A @ s  # (y_j - y_k) - w.(x_j - x_k)
        loss, constraints = self.loss.slack_qp(self, residual)
        constraints = [s == self._X @ w, *constraints]
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
        weighted, linear = self.loss.printed_pairs(self, pair_alpha)
        constraints = [u == self.pairs.A.T @ weighted, *self.dual_set.constraints(alpha)]
        return linear, cp.sum_squares(self._X.T @ u), constraints

    def printed_dual(self) -> cp.Problem:
        """The dual exactly as printed: a minimization over :math:`\\alpha` (and
        :math:`\\gamma`), with :math:`p^* = -\\kappa` times its optimal value."""

        def build() -> cp.Problem:
            import cvxpy as cp

            linear, quadratic, constraints = self._cached("dual_parts", self._dual_parts)
            half = self.loss.printed_half(self)
            return cp.Problem(cp.Minimize(half * quadratic - linear), constraints)

        return self._cached("printed_dual", build)

    def _build_dual(self) -> cp.Problem:
        """:math:`\\max D(\\alpha) = -\\kappa Q_{printed}(\\alpha)` over the printed set."""
        import cvxpy as cp

        linear, quadratic, constraints = self._cached("dual_parts", self._dual_parts)
        objective = self.loss.dual_objective(self, linear, quadratic)
        return cp.Problem(cp.Maximize(objective), constraints)

    # -- numpy evaluators ------------------------------------------------------------
    def query_losses(self, w: np.ndarray) -> np.ndarray:
        r""":math:`L_i(w)` of every query (0 for a query without pairs), without the pairs.

        ``"max"``: O(n + m R); ``"average"`` and ``"max_average"``: the sum of each
        document's hinges as a lower end,
        :func:`~cvxrank.formulations.query_losses.lower_end_sums`, O(n R log
        n) (R grade levels), then :math:`\sum_k T_k / |R_i|` or :math:`\max_k T_k /
        |P_{ik}|` per query.
        """
        s = np.asarray(self._X @ np.asarray(w, dtype=np.float64), dtype=np.float64)
        return self.loss.query_losses(self, self.data.y - s)  # a = y - s

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
        weight = self.loss.cut_weights(self, residual, pair_block, starts)
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
        return self.loss.with_slacks(self, alpha)

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
        if not self.loss.sum_of_pair_hinges:
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
            base = self.pair_base_scale
            self._op_norm_sq = squared_operator_norm(self._X, sp.diags(base) @ self.pairs.A)
        return self.loss.lipschitz_factor(self) * self._op_norm_sq

    def dual_strong_convexity(self) -> float:
        """0: -D is a convex quadratic, not strongly convex in general."""
        return 0.0

    def describe(self) -> dict[str, object]:
        """Name, C, loss and m, for tables and JSON output."""
        return {"formulation": self.name, "C": self.C, "loss": self.loss.name, "m": self.m}


def _grade_difference(upper: float, lower: float) -> float:
    """RankMM's margin of a pair of grades (Agarwal & Collins, Sect. 3): their difference."""
    return upper - lower
