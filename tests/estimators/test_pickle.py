"""CVXPY objects are made on demand: solved formulations pickle, numpy use imports no CVXPY.

A formulation keeps its hyper-parameters as floats and makes its ``cp.Parameter`` objects,
variables and problems only when a CVXPY problem is asked for; pickling drops them and the
unpickled copy rebuilds them on first use (what joblib workers need). Each check compares
with a freshly built formulation solved by the same CVXPY solver.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import make_synthetic
from cvxrank.formulations import (
    IRSVM,
    KernelRankSVM,
    OrdinalSVM,
    OrdinalSVMSumOfMargins,
    RankSVM,
    ndcg1_swap_drop,
)
from cvxrank.formulations.base import Formulation, ProjectableDual
from cvxrank.numerics.kernel import gram_matrix
from cvxrank.tolerances import reference_agreement, relative_gap

DATA = make_synthetic(n_queries=6, docs_per_query=(6, 10), n_features=4, seed=3)
_COUNTS = np.unique(DATA.y, return_counts=True)[1]

#: name -> (make(C), C): one of each formulation class (and each RankSVM loss).
MAKERS = {
    "ranksvm-hinge": lambda C: RankSVM(DATA, C=C, loss="hinge"),
    "ranksvm-squared_hinge": lambda C: RankSVM(DATA, C=C, loss="squared_hinge"),
    "ranksvm-huber": lambda C: RankSVM(DATA, C=C, loss="huber"),
    "irsvm-hinge": lambda C: IRSVM(DATA, C=C, loss="hinge",
                                   tau=ndcg1_swap_drop(DATA, zero_floor=0.5)),
    "kernel-ranksvm": lambda C: KernelRankSVM(DATA, gram_matrix(DATA.X, kernel="rbf", gamma=0.3),
                                              C=C, loss="squared_hinge"),
    "ocsvm-fixed": lambda C: OrdinalSVM(DATA, C=C),
    "ocsvm-sum-margins": lambda C: OrdinalSVMSumOfMargins(
        DATA, C=C / min(_COUNTS[0], _COUNTS[-1])),
}
#: C (or, for the sum of margins, C min(m_1, m_l)) before and after set_params; the sum of
#: margins is not trivial (p* < 0) at both.
C_VALUES = {"ocsvm-sum-margins": (1.05, 1.2)}


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("name", list(MAKERS))
def test_solved_formulation_pickles_and_solves_again(name: str) -> None:
    make = MAKERS[name]
    C0, C1 = C_VALUES.get(name, (0.3, 2.0))
    f = make(C0)
    solver = f.reference_solver
    first = solve_reference(f, solver, cache=False)
    copy = pickle.loads(pickle.dumps(f))
    assert isinstance(copy, Formulation) and copy.params() == f.params()
    again = solve_reference(copy, solver, cache=False)
    # the same problem data: the same solution, to the last digit (first solves both)
    assert again.p_star == first.p_star and again.d_star == first.d_star
    np.testing.assert_array_equal(again.w, first.w)
    np.testing.assert_array_equal(again.alpha, first.alpha)

    # the copy's C is its own, reaches its rebuilt problems, its dual set and its evaluators
    copy.set_params(C=make(C1).C)
    assert f.params() != copy.params()
    changed = solve_reference(copy, solver, cache=False)
    fresh = make(C1)
    expected = solve_reference(fresh, solver, cache=False)
    # (a re-solve after set_params and a fresh build agree to the solver's accuracy only)
    assert relative_gap(changed.p_star, expected.p_star) <= reference_agreement(solver)
    assert relative_gap(changed.p_star, first.p_star) > 1e3 * reference_agreement(solver)
    assert copy.primal_value(changed.w) == fresh.primal_value(changed.w)
    if isinstance(copy, ProjectableDual):
        point = np.random.default_rng(0).normal(0.0, 5.0 * fresh.C, copy.n_dual)
        np.testing.assert_array_equal(copy.project_dual(point), fresh.project_dual(point))
        assert copy.dual_infeasibility(point) == fresh.dual_infeasibility(point)
    assert f.params() == make(C0).params()  # the original keeps its C


def test_numpy_evaluators_do_not_import_cvxpy() -> None:
    code = textwrap.dedent("""
        import sys

        import numpy as np

        import cvxrank.formulations
        from cvxrank.data import make_synthetic
        from cvxrank.formulations import IRSVM, KernelRankSVM, OrdinalSVM, RankSVM

        data = make_synthetic(n_queries=4, docs_per_query=8, n_features=3, seed=0)
        w = np.ones(3)
        f = RankSVM(data, C=1, loss="squared_hinge")
        f.primal_value(w), f.dual_value_at(w)
        for g in (RankSVM(data, C=1, loss="hinge"), IRSVM(data, C=1, loss="huber"),
                  OrdinalSVM(data, C=0.1)):
            alpha = g.project_dual(np.ones(g.n_dual))
            g.dual_value(alpha), g.dual_infeasibility(alpha), g.dual_lipschitz()
            g.primal_value(g.primal_from_dual(alpha)), g.set_params(C=2.0)
        k = KernelRankSVM(data, data.X @ data.X.T, C=1)
        k.primal_value(np.ones(data.n_documents))
        assert "cvxpy" not in sys.modules, "a numpy evaluation imported cvxpy"
        f.primal()
        assert "cvxpy" in sys.modules
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
