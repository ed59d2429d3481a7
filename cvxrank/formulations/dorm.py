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
with a certified gap. For queries of at most six documents ``primal()`` and ``dual()`` are
the complete (27) and (28) over every permutation, in CVXPY
(:class:`~cvxrank.formulations.structured.PermutationSVM`); larger queries are refused with
the count.

References
----------
.. [1] Q. V. Le and A. J. Smola, "Direct Optimization of Ranking Measures", 2007: (9)-(17)
   scores and loss, (20) feature map, (24) the assignment problem, (27)-(28), Alg. 2.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import largest_row_norm
from cvxrank.formulations.structured import PermutationSVM
from cvxrank.oracles.dorm import (
    feature_map,
    ideal_order,
    measure_loss,
    most_violated_permutation,
    position_coefficients,
    score_vectors,
)
from cvxrank.oracles.measures import RANKING_MEASURES, RankingMeasure

#: Names accepted by ``loss``: a measure of :data:`~cvxrank.oracles.measures.RANKING_MEASURES`,
#: with ``@n`` for the cut-off ones (``ndcg@10``, ``dcg@5``, ``p@10``).
ALIASES = {"p": "precision"}


def parse_measure(name: str | RankingMeasure) -> tuple[RankingMeasure, int | None]:
    """``"ndcg@10"`` -> ``(ndcg, 10)``, ``"mrr"`` -> ``(mrr, None)`` (the measure objects of
    :mod:`cvxrank.oracles.measures`; a measure object itself -> ``(it, None)``); ValueError
    else."""
    if isinstance(name, RankingMeasure):
        return name, None
    match = re.fullmatch(r"([a-z_]+)(?:@(\d+))?", str(name).strip().lower())
    if not match:
        raise ValueError(f"measure must look like 'ndcg@10' or 'mrr', got {name!r}")
    measure = RANKING_MEASURES.get(ALIASES.get(match.group(1), match.group(1)))
    if measure is None:
        raise ValueError(f"unknown measure {name!r}; known: {', '.join(RANKING_MEASURES)} "
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

    def __init__(self, X: Any, y: np.ndarray, measure: RankingMeasure, cutoff: int | None,
                 family: str, d: float) -> None:
        self.X = X
        self.a, self.b = score_vectors(y, measure, cutoff=cutoff)
        self.c = position_coefficients(y.size, family, d=d)  # type: ignore[arg-type]
        self.reference = ideal_order(y)
        self.phi_order = feature_map(X, self.reference, self.c)
        self.phi_ref = tie_averaged_reference(X, y, self.c)


class DORM(PermutationSVM):
    r"""Le & Smola's DORM on a data set (see the module docstring).

    Parameters
    ----------
    data : RankingData
    C : float
        The weight of the summed query losses in (27a).
    loss : str or RankingMeasure
        The measure whose loss (17) is optimized: ``"ndcg@10"``, ``"dcg@10"``, ``"mrr"``,
        ``"wta"``, ``"p@10"``, ``"eru"``, ``"normalized_eru"``, ``"mwta"``
        (:func:`parse_measure`), or a :class:`~cvxrank.oracles.measures.RankingMeasure`
        object (a researcher's own: its position weights and relevance transform).
    c_family : {"power", "log", "loglog"}
        The decreasing coefficients of (20): :math:`(i+1)^{-d}`, :math:`1/\log(i+2)`,
        :math:`1/\log\log(i+2)` (:func:`~cvxrank.oracles.dorm.position_coefficients`).
    d : float
        The exponent of ``"power"``.
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "dorm"

    def __init__(self, data: RankingData, *, C: float = 1.0,
                 loss: str | RankingMeasure = "ndcg@10", c_family: str = "power",
                 d: float = 0.5) -> None:
        self.measure, self.cutoff = parse_measure(loss)
        self.measure_name = (loss.name if isinstance(loss, RankingMeasure)
                             else str(loss).strip().lower())
        self.c_family, self.d = c_family, float(d)
        self.name = f"dorm-{self.measure.name}"  # the cut-off is a parameter, as c is
        super().__init__(data, C=C)

    def _extra_key(self) -> str:
        return f"{self.measure_name}|{self.c_family}|{self.d!r}"

    def _query(self, X: Any, y: np.ndarray) -> _Query:
        return _Query(X, y, self.measure, self.cutoff, self.c_family, self.d)

    def _piece(self, query: _Query, w: np.ndarray) -> tuple[float, np.ndarray]:
        """The most violated permutation (24), by linear assignment or sorting; G against
        the tie-averaged reference."""
        v = most_violated_permutation(query.X, w, query.a, query.b, query.c, query.reference)
        return v.loss, query.phi_ref - (v.feature_difference + query.phi_order)

    def _constraint(self, query: _Query, order: np.ndarray) -> tuple[float, np.ndarray]:
        return (measure_loss(order, query.a, query.b),
                query.phi_ref - feature_map(query.X, order, query.c))

    def feature_bound(self, query: _Query) -> float:
        r""":math:`2 \sum_p c_p \max_d \|x_d\| \ge \|\Phi_{ref} - \Phi(\pi)\|`."""
        return 2.0 * float(np.sum(query.c)) * largest_row_norm(query.X)
