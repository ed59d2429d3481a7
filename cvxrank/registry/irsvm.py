"""IR SVM's entries (Li 2011, Sect. 4.2): FISTA and the 1-slack cutting plane on the hinge,
PRSVM+ on the squared hinge.

On the synthetic verify instances some grade pairs are never at the top of a query, where
the expected drop of NDCG@1 is 0; they get half the smallest positive tau
(``zero_floor=0.5``) instead of weight zero, so that every pair keeps a positive weight.
"""

from __future__ import annotations

import numpy as np

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.data.pairs import count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation
from cvxrank.registry import Entry, MakeFormulation, register, scale_C
from cvxrank.registry.rates import (
    FIRST_ORDER_LIMITS,
    NEWTON_RATE,
    ONE_SLACK_DESCRIPTION,
    one_slack_rate,
)
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.newton import solve_prsvm_plus
from cvxrank.solvers.one_slack import solve_one_slack


def pairs_per_query(data: RankingData) -> float:
    """p / Q': IR SVM's weights mu_q = 1/n_q sum to the number Q' of queries with pairs,
    where RankSVM's unit weights sum to the number p of pairs (Li 2011, Sect. 4.2); the
    instances' C is multiplied by it for IR SVM (and for DORM and SVM MAP, whose query
    losses, at most 1 or so, weigh a query's pairs)."""
    per_query = count_pairs(data)
    return float(per_query.sum() / np.count_nonzero(per_query))


scale_C("irsvm", pairs_per_query)


def _irsvm(loss: str) -> MakeFormulation:
    """``make_formulation`` of IR SVM with ``loss`` and tau from ``ndcg1_swap_drop``."""

    def make(data: RankingData, params: dict) -> Formulation:
        from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop

        return IRSVM(data, loss=loss, tau=ndcg1_swap_drop(data, zero_floor=0.5),  # type: ignore[arg-type]
                     **params)

    make.__name__ = f"make_irsvm_{loss}"
    return make


register(Entry(
    "irsvm-hinge", "irsvm", solve_accelerated_gradient, RateSpec.sublinear(-2),
    make_formulation=_irsvm("hinge"), limits=FIRST_ORDER_LIMITS,
    description="FISTA on IR SVM's box-constrained dual (Li Sect. 4.2), O(1/k^2)",
))
register(Entry(
    "irsvm-hinge", "irsvm", solve_one_slack, one_slack_rate,
    make_formulation=_irsvm("hinge"), limits={"max_iter": 10_000, "time_budget": 120.0},
    description=ONE_SLACK_DESCRIPTION,
))
register(Entry(
    "irsvm-squared_hinge", "irsvm", solve_prsvm_plus, NEWTON_RATE,
    make_formulation=_irsvm("squared_hinge"), tol=tolerances.NEWTON_GAP,
    description="PRSVM+ with weights tau_k mu_q per query and grade pair (C&K Sect. 6.2)",
))
