r"""SVM MAP (Yue et al. 2007; Hang Li's survey, Sect. 5.1): a structural SVM whose loss is
1 - AP.

.. math::

    P(w) = \tfrac12\|w\|^2 + C \sum_i \max_\pi \big[1 - \mathrm{AP}_i(\pi) -
    \langle w, \Psi_i(\pi^*) - \Psi_i(\pi)\rangle\big],

with the joint feature map over the (relevant, irrelevant) pairs of each query
(:func:`~cvxrank.oracles.svmmap.joint_feature_map`) and :math:`\pi^*` any perfect ranking
(relevant documents first; :math:`\Psi(\pi^*)` does not depend on the order inside each
class). Documents with a grade of at least ``threshold`` are relevant. The most violated
ranking is Yue et al.'s exact greedy search
(:func:`~cvxrank.oracles.svmmap.most_violated_ranking`); the n-slack cutting plane solves
the problem, and on queries of at most six documents ``primal()`` and ``dual()`` are the
complete problem over every ranking (:class:`~cvxrank.formulations.structured.
PermutationSVM`).

References
----------
.. [1] Y. Yue, T. Finley, F. Radlinski and T. Joachims, "A support vector method for
   optimizing average precision", SIGIR 2007.
.. [2] H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 5.1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import largest_row_norm
from cvxrank.formulations.structured import PermutationSVM
from cvxrank.oracles.svmmap import ap_loss, joint_feature_map, most_violated_ranking


class _Query:
    """One query for SVM MAP: rows, relevance and the perfect ranking's features."""

    def __init__(self, X: Any, relevant: np.ndarray) -> None:
        self.X = X
        self.relevant = relevant
        perfect = np.r_[np.flatnonzero(relevant), np.flatnonzero(~relevant)]
        self.psi_star = joint_feature_map(X, perfect, relevant)


class SVMMAP(PermutationSVM):
    """SVM MAP on a data set (see the module docstring).

    Parameters
    ----------
    data : RankingData
    C : float
        The weight of the summed query losses.
    threshold : float
        Smallest relevant grade (default 1: LETOR's binary relevance for MAP).

    Notes
    -----
    A query whose documents are all relevant or all irrelevant has no (relevant,
    irrelevant) pair: its loss is 0.
    """

    #: The row of :data:`cvxrank.methods.METHODS` whose solvers ``"auto"`` tries.
    method = "svmmap"

    name = "svmmap"

    def __init__(self, data: RankingData, *, C: float = 1.0, threshold: float = 1.0) -> None:
        self.threshold = float(threshold)
        super().__init__(data, C=C)

    def _extra_key(self) -> str:
        return f"threshold={self.threshold!r}"

    def _query(self, X: Any, y: np.ndarray) -> _Query:
        return _Query(X, y >= self.threshold)

    def _piece(self, query: _Query, w: np.ndarray) -> tuple[float, np.ndarray]:
        v = most_violated_ranking(query.X, w, query.relevant)
        return v.loss, -v.feature_difference

    def _constraint(self, query: _Query, order: np.ndarray) -> tuple[float, np.ndarray]:
        return (ap_loss(order, query.relevant),
                query.psi_star - joint_feature_map(query.X, order, query.relevant))

    def feature_bound(self, query: _Query) -> float:
        r""":math:`2 \max_d \|x_d\| \ge \|\Psi(\pi^*) - \Psi(\pi)\|` (Psi is a mean of
        pair differences with signs)."""
        return 2.0 * largest_row_norm(query.X)
