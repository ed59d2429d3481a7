r"""DORM (Le & Smola): structured max-margin ranking over permutations, (27)-(28).

.. math::

    P(w) = \tfrac12\|w\|^2 + C \sum_i L_i(w), \qquad
    L_i(w) = \max_{\pi} \Delta(y_i, \pi) + \langle w, \Phi(x_i, \pi) - \Phi(x_i, \pi^*_i)\rangle,

the primal (27) with its slacks eliminated: :math:`\Delta` the loss (17) of a ranking
score :math:`\langle a(\pi), b(y)\rangle` (NDCG@n, DCG@n, MRR, WTA, Precision@n, ERU),
:math:`\Phi` the feature map (20) with decreasing coefficients c, and
:math:`\Phi(x_i, \pi^*_i)` the paper's reference (the unit permutation on sorted documents)
averaged over the ideal rankings, which differ only in the order of tied documents
(:func:`tie_averaged_reference`, which says why). :math:`L_i \ge 0` (take :math:`\pi =
\pi^*_i`), so (27)'s :math:`\xi_i \ge 0` is implied. Queries whose documents all have one
grade carry no ranking information and are left out (their ties would otherwise be
penalized against the input order).

The separation oracle (:meth:`DORM.separation_oracle`) is the most violated permutation
(8)/(24) by linear assignment (:mod:`cvxrank.oracles.dorm`); the n-slack cutting plane
(:func:`cvxrank.solvers.cutting_plane.solve_cutting_plane`, Le & Smola Alg. 2) solves it
with a certified gap. For queries of at most :data:`MAX_ENUMERATED` documents
:meth:`~cvxrank.formulations.base.Formulation.primal` and ``dual()`` are the complete (27)
and (28) over every permutation, in CVXPY; larger queries are refused with the count.

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", 2007: (9)-(17)
   scores and loss, (20) feature map, (24) the assignment problem, (27)-(28), Alg. 2.
"""

from __future__ import annotations

import itertools
import math
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.cuts import QueryCuts
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import LossWeighted
from cvxrank.oracles.dorm import (
    MEASURES,
    feature_map,
    ideal_order,
    measure_loss,
    most_violated_permutation,
    position_coefficients,
    score_vectors,
)

if TYPE_CHECKING:
    import cvxpy as cp

#: Largest query the complete problem enumerates (6! = 720 permutations).
MAX_ENUMERATED = 6

#: Names accepted by ``loss``: a measure of :data:`~cvxrank.oracles.dorm.MEASURES`,
#: with ``@n`` for the cut-off ones (``ndcg@10``, ``dcg@5``, ``p@10``).
ALIASES = {"p": "precision"}


def parse_measure(name: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``, ``"mrr"`` -> ``("mrr", None)``; ValueError else."""
    match = re.fullmatch(r"([a-z_]+)(?:@(\d+))?", str(name).strip().lower())
    if not match:
        raise ValueError(f"measure must look like 'ndcg@10' or 'mrr', got {name!r}")
    measure = ALIASES.get(match.group(1), match.group(1))
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {name!r}; known: {', '.join(MEASURES)} "
                         "(p for precision; @n for a cut-off)")
    cutoff = int(match.group(2)) if match.group(2) else None
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"the cut-off must be >= 1, got {name!r}")
    return measure, cutoff


def tie_averaged_reference(X: Any, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""The mean of :math:`\Phi(x, \pi^*)` over every ideal ranking :math:`\pi^*` (all the
    orders of tied documents): each document of a tie group that fills the ideal positions
    :math:`s..e` gets the mean of :math:`c_s..c_e`.

    Lemma 1's bound holds for any reference of zero loss, and for this mean too: at
    :math:`\hat\pi = \arg\max_\pi \langle w, \Phi(\pi)\rangle`, :math:`\langle w,
    \Phi(\hat\pi)\rangle` is at least the mean of the ideal rankings' scores. One fixed
    ideal ranking (ties in input order) would instead make the loss penalize every w that
    does not reproduce the input order among equally relevant documents: on OHSUMED (three
    grades, about 150 documents a query) the optimum with it is w = 0 for NDCG@10 at C = 1.
    """
    order = ideal_order(y)
    grades = y[order]
    starts = np.flatnonzero(np.r_[True, grades[1:] != grades[:-1]])
    ends = np.r_[starts[1:], grades.size]
    means = np.repeat([c[s:e].mean() for s, e in zip(starts, ends, strict=True)],
                      ends - starts)
    weights = np.empty(y.size)
    weights[order] = means
    return np.asarray(X.T @ weights, dtype=np.float64).ravel()


class _Query:
    """One query's data for DORM: rows, a, b, c, an ideal ranking, its features and the
    tie-averaged reference features."""

    def __init__(self, X: Any, y: np.ndarray, measure: str, cutoff: int | None,
                 family: str, d: float) -> None:
        self.X = X
        self.a, self.b = score_vectors(y, measure, cutoff=cutoff)  # type: ignore[arg-type]
        self.c = position_coefficients(y.size, family, d=d)  # type: ignore[arg-type]
        self.reference = ideal_order(y)
        self.phi_order = feature_map(X, self.reference, self.c)
        self.phi_ref = tie_averaged_reference(X, y, self.c)


class DORM(LossWeighted):
    r"""Le & Smola's DORM on a data set (see the module docstring).

    Parameters
    ----------
    data : RankingData
    C : float
        The weight of the summed query losses in (27a).
    loss : str
        The measure whose loss (17) is optimized: ``"ndcg@10"``, ``"dcg@10"``, ``"mrr"``,
        ``"wta"``, ``"p@10"``, ``"eru"``, ``"normalized_eru"``, ``"mwta"``
        (:func:`parse_measure`).
    c_family : {"power", "log", "loglog"}
        The decreasing coefficients of (20): :math:`(i+1)^{-d}`, :math:`1/\log(i+2)`,
        :math:`1/\log\log(i+2)` (:func:`~cvxrank.oracles.dorm.position_coefficients`).
    d : float
        The exponent of ``"power"``.

    Attributes
    ----------
    m : int
        1: C multiplies the sum of the query losses as it is (the n-slack solver's weight
        per query is C / m).
    queries_with_pairs : ndarray
        The queries with at least two grades (the blocks of the cutting plane).
    """

    capabilities = frozenset({"separation_oracle"})
    m = 1

    def __init__(self, data: RankingData, *, C: float = 1.0, loss: str = "ndcg@10",
                 c_family: str = "power", d: float = 0.5) -> None:
        self.measure, self.cutoff = parse_measure(loss)
        self.measure_name = str(loss).strip().lower()
        self.c_family, self.d = c_family, float(d)
        super().__init__(data, C=C)
        self.name = f"dorm-{self.measure_name}"
        ptr, y = data.query_ptr, data.y
        informative = [q for q in range(data.n_queries)
                       if np.unique(y[ptr[q]:ptr[q + 1]]).size > 1]
        if not informative:
            raise ValueError(f"{data.source or 'the data'}: no query has documents of two "
                             "different grades, so there is nothing to rank")
        self.queries_with_pairs = np.asarray(informative, dtype=np.int64)
        X = data.X
        self._queries = [_Query(X[ptr[q]:ptr[q + 1]], y[ptr[q]:ptr[q + 1]], self.measure,
                                self.cutoff, c_family, self.d) for q in informative]

    def _extra_key(self) -> str:
        return f"{self.measure_name}|{self.c_family}|{self.d!r}"

    # -- the oracle and the primal -----------------------------------------------------------
    def separation_oracle(self, w: np.ndarray) -> QueryCuts:
        r"""Every query's most violated permutation at w as the piece :math:`L_i(v) \ge c_i
        - g_i^\top v`: :math:`c_i = \Delta(y_i, \hat\pi)`, :math:`g_i = \Phi(x_i, \pi^*_i) -
        \Phi(x_i, \hat\pi)`."""
        w = np.asarray(w, dtype=np.float64)
        offset, gradient = [], []
        for q in self._queries:
            v = most_violated_permutation(q.X, w, q.a, q.b, q.c, q.reference)
            offset.append(v.loss)  # Phi(pi_hat) - Phi_ref, with the tie-averaged reference
            gradient.append(q.phi_ref - (v.feature_difference + q.phi_order))
        offset_a, gradient_a = np.asarray(offset), np.asarray(gradient)
        loss = np.maximum(offset_a - gradient_a @ w, 0.0)
        return QueryCuts(loss=loss, offset=offset_a, gradient=gradient_a)

    def query_losses(self, w: np.ndarray) -> np.ndarray:
        """:math:`L_i(w)` of every query with two grades (exact, by the oracle)."""
        return self.separation_oracle(w).loss

    def primal_value(self, w: np.ndarray) -> float:
        w = np.asarray(w, dtype=np.float64)
        return float(0.5 * (w @ w) + self.C * self.query_losses(w).sum())

    # -- the complete problem, by enumeration ----------------------------------------------
    @cached_property
    def _enumerated(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (query, permutation): its block, loss and :math:`\\Phi(\\pi^*) - \\Phi(\\pi)`;
        ValueError naming the count when a query is larger than :data:`MAX_ENUMERATED`."""
        sizes = [q.b.size for q in self._queries]
        largest = max(sizes)
        if largest > MAX_ENUMERATED:
            total = sum(math.factorial(n) for n in sizes)
            raise ValueError(
                f"the complete DORM problem enumerates every permutation of every query: "
                f"the largest query here has {largest} documents "
                f"({math.factorial(largest):,} "
                f"permutations), {total:,} constraints in all; it is written out only for "
                f"queries of at most {MAX_ENUMERATED} documents (use the cutting plane)")
        block, loss, diff = [], [], []
        for i, q in enumerate(self._queries):
            for order in itertools.permutations(range(q.b.size)):
                order = np.asarray(order)
                block.append(i)
                loss.append(measure_loss(order, q.a, q.b))
                diff.append(q.phi_ref - feature_map(q.X, order, q.c))
        return np.asarray(block), np.asarray(loss), np.asarray(diff)

    @property
    def n_dual(self) -> int:
        """Number of (query, permutation) pairs: the variables of (28)."""
        return int(sum(math.factorial(q.b.size) for q in self._queries))

    def dual_value(self, alpha: np.ndarray) -> float:
        r"""(28) as a maximization: :math:`\sum \alpha_{i\pi}\Delta_{i\pi} - \tfrac12\|\sum
        \alpha_{i\pi}(\Phi(\pi^*_i) - \Phi(\pi))\|^2`."""
        _, loss, diff = self._enumerated
        alpha = np.asarray(alpha, dtype=np.float64)
        w = diff.T @ alpha
        return float(alpha @ loss - 0.5 * (w @ w))

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`w = \\sum \\alpha_{i\\pi} (\\Phi(x_i, \\pi^*_i) - \\Phi(x_i, \\pi))`."""
        return self._enumerated[2].T @ np.asarray(alpha, dtype=np.float64)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of :math:`\\alpha \\ge 0`, :math:`\\sum_\\pi \\alpha_{i\\pi} \\le
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
