"""A first iterate for the Newton solvers (PRSVM, PRSVM+: their own option ``start``, e.g.
the optimum at a neighbouring C): the same certified optimum as from w = 0, against CVXPY."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import make_synthetic
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=15, docs_per_query=(5, 25), n_features=8, seed=6)


@pytest.mark.parametrize("solver", ["prsvm+", "prsvm"])
@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
def test_a_warm_start_reaches_the_certified_optimum(data, solver: str, loss: str) -> None:
    neighbour = fit_formulation(RankSVM(data, C=0.2, loss=loss), solver)
    f = RankSVM(data, C=0.5, loss=loss)
    ref = solve_reference(f)
    cold = fit_formulation(f, solver)
    starts = {"neighbour": neighbour.w, "far": 30.0 * np.random.default_rng(1).normal(size=8),
              "optimum": cold.w}
    for name, start in starts.items():
        run = fit_formulation(f, solver, start=start)
        assert run.converged, (name, run.message)
        assert abs(run.objective - ref.p_star) <= 1e-8 * ref.p_star, name
        assert np.linalg.norm(run.w - cold.w) <= run.w_radius + cold.w_radius, name
        assert run.trace.primal[0] == pytest.approx(f.primal_value(start), rel=1e-12)
        assert "loss_at_zero" not in run.info or run.info["loss_at_zero"] is None
    # the neighbour's optimum is closer than w = 0: fewer Newton iterations
    assert len(fit_formulation(f, solver, start=neighbour.w).trace) < len(cold.trace)


def test_a_start_of_the_wrong_shape_or_not_finite_is_refused(data) -> None:
    f = RankSVM(data, C=0.5, loss="squared_hinge")
    with pytest.raises(ValueError, match="start must be 8 finite weights"):
        fit_formulation(f, "prsvm+", start=np.zeros(7))
    with pytest.raises(ValueError, match="start must be 8 finite weights"):
        fit_formulation(f, "prsvm+", start=np.r_[np.zeros(7), np.nan])
