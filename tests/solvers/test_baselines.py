"""The LinearSVC-on-pairs baseline minimizes the same objective as RankSVM."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import install_clock, rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers import baselines
from cvxrank.solvers.baselines import fit_linearsvc_pairs


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_linearsvc_reaches_the_reference_optimum(sparse, weighted, monkeypatch) -> None:
    data = make_synthetic(n_queries=6, docs_per_query=(5, 12), n_features=5, seed=11)
    if sparse:
        data = data.with_features(sp.csr_matrix(data.X))
    probe = RankSVM(data, C=0.2, loss="squared_hinge")
    weight = np.random.default_rng(0).uniform(0.5, 2.0, probe.n_dual) if weighted else None
    f = RankSVM(data, C=0.2, loss="squared_hinge", pair_weight=weight)
    ref = solve_reference(f)
    install_clock(monkeypatch, baselines)
    run = fit_linearsvc_pairs(f, tol=1e-10)
    assert rel(run.objective, ref.p_star) <= 1e-8
    assert run.objective == pytest.approx(f.primal_value(run.w), rel=1e-15)
    assert run.converged and run.message == "converged" and run.solver == "linearsvc"
    # on a clock that ticks at every reading, building the pairs (set-up) and the fit each
    # take time, and the run's time includes the set-up
    assert run.time > run.setup_time > 0 and run.solve_time > 0
    # one trace row: LIBLINEAR's iterations, the time, the objective, the certified dual
    # bound of its w, no step
    assert len(run.trace) == 1 and run.trace.iteration == [run.n_iter] and run.n_iter >= 1
    assert run.trace.time == [run.time]
    assert run.trace.dual[0] == pytest.approx(f.dual_value_at(run.w), rel=1e-15)
    assert run.trace.dual[0] <= ref.p_star * (1 + 1e-9) and np.isnan(run.trace.step[0])
    assert run.gap >= -1e-12 * run.objective and run.relative_gap <= 1e-9
    assert run.w_radius == pytest.approx(np.sqrt(2 * max(run.gap, 0.0)), rel=1e-12)
    assert np.linalg.norm(run.w - ref.w) <= run.w_radius + 1e-6 * np.linalg.norm(ref.w)


def test_iteration_limit_is_reported_not_raised() -> None:
    data = make_synthetic(n_queries=6, docs_per_query=(5, 12), n_features=5, seed=11)
    run = fit_linearsvc_pairs(RankSVM(data, C=10.0, loss="squared_hinge"), tol=1e-12,
                              max_iter=1)
    assert not run.converged and run.message == "LIBLINEAR hit its iteration limit"
    assert run.n_iter == 1


def test_refuses_what_it_cannot_fit() -> None:
    data = make_synthetic(n_queries=2, docs_per_query=5, n_features=3, seed=1)
    with pytest.raises(ValueError, match="squared hinge"):
        fit_linearsvc_pairs(RankSVM(data, loss="hinge"))
    f = RankSVM(data, loss="squared_hinge", margin=np.full(RankSVM(data).n_dual, 2.0))
    with pytest.raises(ValueError, match="margins"):
        fit_linearsvc_pairs(f)
