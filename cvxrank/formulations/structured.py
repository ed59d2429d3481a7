r"""Structured max-margin ranking over permutations: what DORM and SVM MAP share.

For every query i with two grades, a polyhedral loss

.. math::

    L_i(w) = \max_{\pi} \Delta_i(\pi) - \langle w, G_i(\pi)\rangle \ge 0, \qquad
    P(w) = \tfrac12\|w\|^2 + C \sum_i L_i(w),

with :math:`G_i(\pi) = \Psi_i(\pi^*) - \Psi_i(\pi)` the feature difference to a reference
ranking of zero loss (the structural SVM with margin rescaling, Tsochantaridis et al. 2005;
Le & Smola (27); Yue et al.'s SVM MAP). A subclass gives one query's most violated
ranking (:meth:`PermutationSVM._piece`) and the constraint of any ranking
(:meth:`PermutationSVM._constraint`); this class gives the separation oracle of the n-slack
cutting plane (:func:`cvxrank.solvers.cutting_plane.solve_cutting_plane`), the exact
primal value and, for queries of at most :data:`MAX_ENUMERATED` documents, the complete
primal and dual over every ranking in CVXPY (Le & Smola (27)-(28)); larger queries are
refused with the count.
"""

from __future__ import annotations

import itertools
import math
from abc import abstractmethod
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import LossWeighted
from cvxrank.numerics.cuts import QueryCuts

if TYPE_CHECKING:
    import cvxpy as cp

#: Largest query the complete problem enumerates (6! = 720 rankings).
MAX_ENUMERATED = 6


class PermutationSVM(LossWeighted):
    r"""A structural SVM over the rankings of each query (see the module docstring).

    Parameters
    ----------
    data : RankingData
    C : float
        The weight of the summed query losses.

    Attributes
    ----------
    m : int
        1: C multiplies the sum of the query losses as it is (the n-slack solver's weight
        per query is C / m).
    queries_with_pairs : ndarray
        The queries with at least two grades (the blocks of the cutting plane); the others
        carry no ranking information and are left out.
    """

    capabilities = frozenset({"separation_oracle", "cut_bounds"})
    m = 1
    #: C multiplies the sum of the query losses, not their mean (m = 1 on shards too).
    mean_over_queries = False

    def __init__(self, data: RankingData, *, C: float = 1.0) -> None:
        super().__init__(data, C=C)
        ptr, y = data.query_ptr, data.y
        informative = [q for q in range(data.n_queries)
                       if np.unique(y[ptr[q]:ptr[q + 1]]).size > 1]
        if not informative:
            raise ValueError(f"{data.source or 'the data'}: no query has documents of two "
                             "different grades, so there is nothing to rank")
        self.queries_with_pairs = np.asarray(informative, dtype=np.int64)
        X = data.X
        self._queries = [self._query(X[ptr[q]:ptr[q + 1]], y[ptr[q]:ptr[q + 1]])
                         for q in informative]

    @abstractmethod
    def _query(self, X: Any, y: np.ndarray) -> Any:
        """What the subclass keeps of one query (its rows, grades, score vectors, ...)."""

    @abstractmethod
    def _piece(self, query: Any, w: np.ndarray) -> tuple[float, np.ndarray]:
        r"""The most violated ranking of ``query`` at w as ``(loss, G)``: its loss
        :math:`\Delta` and :math:`G = \Psi(\pi^*) - \Psi(\hat\pi)`."""

    @abstractmethod
    def _constraint(self, query: Any, order: np.ndarray) -> tuple[float, np.ndarray]:
        """``(loss, G)`` of the ranking ``order`` of ``query``."""

    @abstractmethod
    def feature_bound(self, query: Any) -> float:
        r"""An upper bound on :math:`\|G(\pi)\|` over the rankings of ``query``."""

    def cut_bounds(self) -> tuple[float, float, np.ndarray]:
        r"""What the n-slack cutting plane's iteration bound needs (Tsochantaridis et al.
        2005, Thm. 18; :func:`cvxrank.solvers.cutting_plane.iteration_bound`): the weight C
        of each query's loss, :math:`R = \max_i` :meth:`feature_bound` and the query losses
        :math:`L_i(0)`."""
        R = max(self.feature_bound(q) for q in self._queries)
        return float(self.C), float(R), self.query_losses(np.zeros(self.data.n_features))

    # -- the oracle and the primal -----------------------------------------------------------
    def separation_oracle(self, w: np.ndarray) -> QueryCuts:
        r"""Every query's most violated ranking at w as the piece :math:`L_i(v) \ge c_i -
        g_i^\top v`: :math:`c_i = \Delta_i(\hat\pi)`, :math:`g_i = G_i(\hat\pi)`."""
        w = np.asarray(w, dtype=np.float64)
        pieces = [self._piece(q, w) for q in self._queries]
        offset = np.array([p[0] for p in pieces])
        gradient = np.array([p[1] for p in pieces])
        loss = np.maximum(offset - gradient @ w, 0.0)
        return QueryCuts(loss=loss, offset=offset, gradient=gradient)

    def query_losses(self, w: np.ndarray) -> np.ndarray:
        """:math:`L_i(w)` of every query with two grades (exact, by the oracle)."""
        return self.separation_oracle(w).loss

    def primal_value(self, w: np.ndarray) -> float:
        w = np.asarray(w, dtype=np.float64)
        return float(0.5 * (w @ w) + self.C * self.query_losses(w).sum())

    # -- the complete problem, by enumeration ----------------------------------------------
    @cached_property
    def _enumerated(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (query, ranking): its block, loss and G; ValueError naming the count when a
        query is larger than :data:`MAX_ENUMERATED`."""
        sizes = [self._size(q) for q in self._queries]
        largest = max(sizes)
        if largest > MAX_ENUMERATED:
            total = sum(math.factorial(n) for n in sizes)
            raise ValueError(
                f"the complete {self.name} problem enumerates every ranking of every query: "
                f"the largest query here has {largest} documents "
                f"({math.factorial(largest):,} "
                f"permutations), {total:,} constraints in all; it is written out only for "
                f"queries of at most {MAX_ENUMERATED} documents (use the cutting plane)")
        block, loss, diff = [], [], []
        for i, (q, n) in enumerate(zip(self._queries, sizes, strict=True)):
            for order in itertools.permutations(range(n)):
                value, g = self._constraint(q, np.asarray(order))
                block.append(i)
                loss.append(value)
                diff.append(g)
        return np.asarray(block), np.asarray(loss), np.asarray(diff)

    @staticmethod
    def _size(query: Any) -> int:
        return int(query.X.shape[0])

    @property
    def n_dual(self) -> int:
        """Number of (query, ranking) pairs: the variables of the dual (28)."""
        return int(sum(math.factorial(self._size(q)) for q in self._queries))

    def sizes(self) -> dict[str, Any]:
        """``n_dual`` (the (query, ranking) pairs, the dual's variables) while it is an exact
        float64 integer (at most 2**53), and always ``n_rankings_log10``, its log10: a query
        of 5,000 documents alone has 5000! rankings, 16,326 digits, which neither a report
        nor a JSON reader holds."""
        log10 = np.logaddexp.reduce([math.lgamma(self._size(q) + 1)
                                     for q in self._queries]) / math.log(10.0)
        out: dict[str, Any] = {"n_rankings_log10": round(float(log10), 2)}
        if log10 < 53 * math.log10(2.0):
            out["n_dual"] = self.n_dual
        return out

    def dual_value(self, alpha: np.ndarray) -> float:
        r"""(28) as a maximization: :math:`\sum \alpha_{i\pi}\Delta_{i\pi} -
        \tfrac12\|\sum \alpha_{i\pi} G_i(\pi)\|^2`."""
        _, loss, diff = self._enumerated
        alpha = np.asarray(alpha, dtype=np.float64)
        w = diff.T @ alpha
        return float(alpha @ loss - 0.5 * (w @ w))

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        r""":math:`w = \sum \alpha_{i\pi} G_i(\pi)`."""
        return self._enumerated[2].T @ np.asarray(alpha, dtype=np.float64)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        r"""Largest violation of :math:`\alpha \ge 0`, :math:`\sum_\pi \alpha_{i\pi} \le
        C` (28b)."""
        block = self._enumerated[0]
        alpha = np.asarray(alpha, dtype=np.float64)
        totals = np.bincount(block, weights=alpha, minlength=len(self._queries))
        return max(0.0, float(np.max(-alpha)), float(np.max(totals - self.C)))

    @property
    def w_variable(self) -> cp.Variable:
        return self._variable("w", self.data.n_features)

    @property
    def alpha_variable(self) -> cp.Variable:
        return self._variable("alpha", self.n_dual)

    def _build_primal(self) -> cp.Problem:
        import cvxpy as cp

        block, loss, diff = self._enumerated
        w, xi = self.w_variable, cp.Variable(len(self._queries), name="xi")
        return cp.Problem(
            cp.Minimize(0.5 * cp.sum_squares(w) + self.parameter("C") * cp.sum(xi)),
            [xi[block] >= loss - diff @ w, xi >= 0])

    def _build_dual(self) -> cp.Problem:
        import cvxpy as cp
        import scipy.sparse as sp

        block, loss, diff = self._enumerated
        alpha = self.alpha_variable
        S = sp.csr_matrix((np.ones(block.size), (block, np.arange(block.size))))
        return cp.Problem(cp.Maximize(loss @ alpha - 0.5 * cp.sum_squares(diff.T @ alpha)),
                          [alpha >= 0, S @ alpha <= self.parameter("C")])
