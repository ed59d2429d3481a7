"""OC SVM's entry (Li 2011, Sect. 3.1): FISTA with the exact box + equality projection."""

from __future__ import annotations

import numpy as np

from cvxrank.certificates.validate import RateSpec
from cvxrank.data.pairs import count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.registry import Entry, register, scale_C
from cvxrank.registry.rates import FIRST_ORDER_LIMITS
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient


def pairs_per_hinge_row(data: RankingData) -> float:
    """p / m: OC SVM's C multiplies a sum over m = 2n - m_1 - m_l hinge rows (each document
    borders one or two thresholds; Li 2011, Sect. 3.1) where RankSVM's multiplies one over
    p pairs; the instances' C is multiplied by it."""
    counts = np.unique(data.y, return_counts=True)[1]
    rows = 2 * counts.sum() - counts[0] - counts[-1]
    return float(count_pairs(data).sum() / rows)


scale_C("ocsvm", pairs_per_hinge_row)


register(Entry(
    "ocsvm-fixed", "ocsvm", solve_accelerated_gradient, RateSpec.sublinear(-2),
    limits=FIRST_ORDER_LIMITS,
    description="FISTA on OC SVM's dual with the exact box + equality projection, O(1/k^2)",
))
