r"""The structured methods' entries: DORM (Le & Smola) and SVM MAP (Yue et al.; Li Sect.
5.1), each by the n-slack cutting plane against the complete problem.

``dorm-<loss>/cutting-plane`` and ``svmmap/cutting-plane`` run Alg. 2
(:func:`~cvxrank.solvers.cutting_plane.solve_cutting_plane`: the master QP in CVXPY, stopping
on a certified gap) on a tiny view of each instance (:func:`tiny_view`: the first
:data:`VIEW_QUERIES` queries, each cut to its first :data:`VIEW_DOCUMENTS` documents), where
the certified reference is the complete primal (27) and dual (28) written out over every
ranking. Iterations are checked against the n-slack bound
(:func:`~cvxrank.solvers.cutting_plane.iteration_bound`, Tsochantaridis et al. Thm. 18).
The instances' C is scaled to pairs per query (:func:`cvxrank.registry.irsvm.pairs_per_query`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.structured import PermutationSVM
from cvxrank.formulations.svmmap import SVMMAP
from cvxrank.oracles.dorm import MEASURES
from cvxrank.registry import Entry, register, scale_C
from cvxrank.registry.irsvm import pairs_per_query
from cvxrank.solvers.cutting_plane import iteration_bound, solve_cutting_plane

# a query's loss (17), or 1 - AP, at most 1 or so, weighs its pairs
scale_C("dorm", pairs_per_query)
scale_C("svmmap", pairs_per_query)

#: Queries of an instance the structured entries run on.
VIEW_QUERIES = 12

#: Documents kept per query (5! = 120 rankings each).
VIEW_DOCUMENTS = 5

#: The loss each DORM entry (one per measure, ``dorm-<measure>``: the cut-off is a parameter)
#: is verified with. The cut-offs are below the view's query length: at n >= 5 every ranking
#: of 5 documents has the same precision, and the loss is 0.
VERIFY_LOSS = {measure: {"ndcg": "ndcg@3", "dcg": "dcg@3", "precision": "p@3"}.get(measure, measure)
               for measure in MEASURES}

LIMITS = {"max_iter": 500, "time_budget": 60.0}


def tiny_view(data: RankingData) -> RankingData:
    """The first :data:`VIEW_QUERIES` queries of ``data``, each cut to its first
    :data:`VIEW_DOCUMENTS` documents."""
    ptr = data.query_ptr
    rows = np.concatenate([np.arange(ptr[q], min(ptr[q + 1], ptr[q] + VIEW_DOCUMENTS))
                           for q in range(min(VIEW_QUERIES, data.n_queries))])
    return data.take(rows)


def _bounded(f: PermutationSVM) -> RateSpec:
    return RateSpec.bounded(iteration_bound(f, tolerances.FAST_SOLVER_GAP))


def _make_dorm(loss: str):
    def make(data: RankingData, params: dict[str, Any]) -> DORM:
        return DORM(tiny_view(data), loss=loss, **params)

    make.__name__ = f"make_dorm_{loss}"
    return make


def _make_svmmap(data: RankingData, params: dict[str, Any]) -> SVMMAP:
    return SVMMAP(tiny_view(data), **params)


_DESCRIPTION = ("n-slack cutting plane (Le & Smola Alg. 2), {oracle}, master QP in CVXPY, "
                "certified gap; reference: the complete problem over every ranking")

for _measure, _loss in VERIFY_LOSS.items():
    register(Entry(
        f"dorm-{_measure}", "dorm", solve_cutting_plane, _bounded, loss=_loss,
        make_formulation=_make_dorm(_loss), limits=LIMITS,
        description=_DESCRIPTION.format(oracle="most violated permutation by linear "
                                               "assignment"),
    ))
register(Entry(
    "svmmap", "svmmap", solve_cutting_plane, _bounded, make_formulation=_make_svmmap,
    limits=LIMITS,
    description=_DESCRIPTION.format(oracle="Yue et al.'s exact greedy most violated ranking"),
))
