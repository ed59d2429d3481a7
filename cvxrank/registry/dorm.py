r"""DORM's entries (Le & Smola): the n-slack cutting plane against the complete problem.

``dorm-<loss>/cutting-plane`` runs Alg. 2 (:func:`~cvxrank.solvers.cutting_plane.
solve_cutting_plane`, the master QP in CVXPY, stopping on a certified gap) on a tiny view of
each instance (:func:`tiny_view`: the first :data:`VIEW_QUERIES` queries, each cut to its
first :data:`VIEW_DOCUMENTS` documents), where the certified reference is the complete
primal (27) and dual (28) written out over every permutation. Iterations are checked
against Tsochantaridis et al.'s n-slack bound :math:`\max(2n\Delta/\varepsilon, 8 C' \Delta
R^2/\varepsilon^2)` (Thm. 18, quoted by Le & Smola; :func:`iteration_bound`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.dorm import DORM
from cvxrank.registry import Entry, register
from cvxrank.solvers.cutting_plane import solve_cutting_plane
from cvxrank.validate import RateSpec

#: Queries of an instance DORM's entries run on.
VIEW_QUERIES = 12

#: Documents kept per query (5! = 120 permutations each).
VIEW_DOCUMENTS = 5

#: The losses verify checks (Precision at a cut-off below the view's query length: at
#: n >= 5 every permutation of 5 documents has the same precision, and the loss is 0).
VERIFY_LOSSES = ("ndcg@10", "mrr", "p@3")


def tiny_view(data: RankingData) -> RankingData:
    """The first :data:`VIEW_QUERIES` queries of ``data``, each cut to its first
    :data:`VIEW_DOCUMENTS` documents."""
    ptr = data.query_ptr
    rows = np.concatenate([np.arange(ptr[q], min(ptr[q + 1], ptr[q] + VIEW_DOCUMENTS))
                           for q in range(min(VIEW_QUERIES, data.n_queries))])
    return data.take(rows)


def iteration_bound(f: DORM, tol: float = tolerances.FAST_SOLVER_GAP) -> int:
    r"""The n-slack bound at relative gap ``tol``: n = B queries, :math:`C' = C B`,
    :math:`\Delta = \max_i L_i(0)` (the largest loss (17)), :math:`R = \max_i 2 \sum_p c_p
    \max_d \|x_d\| \ge \|\Phi(\pi^*) - \Phi(\pi)\|`, :math:`\varepsilon = \mathrm{tol}\,
    P(0)/(C B)` (as :func:`cvxrank.solvers.cutting_plane.iteration_bound` for RankMM)."""
    zero = np.zeros(f.data.n_features)
    n_blocks = int(f.queries_with_pairs.size)
    delta = float(f.query_losses(zero).max())
    X = f.data.X
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel() if hasattr(X, "multiply")
                    else np.einsum("ij,ij->i", X, X))
    ptr = f.data.query_ptr
    R = max(2.0 * float(np.sum(q.c)) * float(norms[ptr[i]:ptr[i + 1]].max())
            for q, i in zip(f._queries, f.queries_with_pairs, strict=True))
    eps = tol * f.primal_value(zero) / (f.C * n_blocks)
    if eps <= 0:
        return 1
    bound = max(2 * n_blocks * delta / eps, 8 * f.C * n_blocks * delta * R * R / eps ** 2)
    return int(min(math.ceil(bound), 2 ** 62))


def _make(loss: str):
    def make(data: RankingData, params: dict[str, Any]) -> DORM:
        return DORM(tiny_view(data), loss=loss, **params)

    make.__name__ = f"make_dorm_{loss}"
    return make


for _loss in VERIFY_LOSSES:
    register(Entry(
        f"dorm-{_loss}", "dorm", solve_cutting_plane,
        lambda f: RateSpec.bounded(iteration_bound(f)), loss=_loss,
        make_formulation=_make(_loss), limits={"max_iter": 500, "time_budget": 60.0},
        description="n-slack cutting plane (Le & Smola Alg. 2), most violated permutation "
                    "by linear assignment, master QP in CVXPY, certified gap; reference: "
                    "(27)-(28) over every permutation",
    ))
