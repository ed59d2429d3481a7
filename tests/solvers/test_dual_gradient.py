"""Projected gradient (pg) and FISTA/Nesterov (apg) on the RankSVM duals.

Checked against certified Clarabel references: objective gap, dual feasibility, the fitted
rate against the proven one, and the solver protocol (trace time, callback, budgets).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from toolbox import certified, install_clock, primal_gap, signed_rel, slow_if

from cvxrank import tolerances
from cvxrank.certificates.validate import validate
from cvxrank.core import trace as trace_module
from cvxrank.core.trace import Status
from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import find_entry
from cvxrank.solvers import solve_accelerated_gradient, solve_projected_gradient

#: (seed, n_queries, docs_per_query, n_features, C): C * pairs between about 3 and 20.
INSTANCES = [
    (11, 8, (10, 25), 8, 0.01),
    (12, 12, (15, 30), 12, 2e-3),
    (13, 20, (5, 15), 25, 0.02),
]
LOSSES = ["hinge", "squared_hinge"]


def _formulation(seed: int, nq: int, dpq: tuple[int, int], d: int, C: float,
                 loss: str) -> RankSVM:
    data = make_synthetic(n_queries=nq, docs_per_query=dpq, n_features=d, seed=seed)
    return RankSVM(data, C=C, loss=loss)


@pytest.fixture(scope="module")
def problems() -> dict:
    out = {}
    for inst in INSTANCES:
        for loss in LOSSES:
            f = _formulation(*inst, loss)
            out[(inst[0], loss)] = certified(f)
    return out


#: Plain pg on the hinge's dual converges at O(1/k) only: on the two larger instances it is the
#: slow part of this file, left to ``make test`` (the first instance keeps it in the fast loop).
SLOW_CASES = {("pg", "hinge", seed) for seed, *_ in INSTANCES[1:]}


@pytest.mark.parametrize("solver, loss, seed", [
    pytest.param(solver, loss, seed, marks=slow_if((solver, loss, seed) in SLOW_CASES))
    for solver in ("pg", "apg") for loss in LOSSES for seed, *_ in INSTANCES])
def test_reaches_reference_and_rate(problems: dict, seed: int, loss: str, solver: str) -> None:
    f, ref = problems[(seed, loss)]
    entry = find_entry(f.name, solver)
    result = entry.solve(f)
    assert result.converged, result.message
    assert result.solver == solver and result.formulation == f.name
    assert -tolerances.FAST_SOLVER_GAP <= primal_gap(f, result.w, ref) \
        <= tolerances.FAST_SOLVER_GAP
    # the dual value below d* by at most the tolerance
    assert signed_rel(f.dual_value(result.alpha), ref.d_star, f.gap_floor) \
        >= -tolerances.FAST_SOLVER_GAP
    assert f.dual_infeasibility(result.alpha) <= tolerances.FEASIBILITY
    np.testing.assert_allclose(result.w, f.primal_from_dual(result.alpha))
    v = validate(result, ref, entry.rate_for(f), formulation=f)
    assert v.passed, v.reasons
    assert v.rate_ok is True and v.fitted is not None
    if loss == "hinge":
        assert v.fitted <= v.rate.exponent + tolerances.RATE_SLACK
    else:
        assert v.fitted < v.rate.factor


@pytest.mark.parametrize("loss", [pytest.param("hinge", marks=pytest.mark.slow), "squared_hinge"])
def test_accelerated_needs_fewer_iterations(problems: dict, loss: str) -> None:
    for inst in INSTANCES:
        f, _ = problems[(inst[0], loss)]
        pg = solve_projected_gradient(f)
        apg = solve_accelerated_gradient(f)
        assert pg.converged and apg.converged
        assert apg.n_iter < pg.n_iter / 2, (inst, pg.n_iter, apg.n_iter)


def test_plain_pg_is_monotone_ascent(problems: dict) -> None:
    for loss in LOSSES:
        f, ref = problems[(INSTANCES[0][0], loss)]
        result = solve_projected_gradient(f)
        dual = np.asarray(result.trace.dual)
        scale = tolerances.gap_scale(ref.p_star, f.gap_floor)
        assert np.all(np.diff(dual) >= -1e-12 * scale)
        assert np.all(dual <= ref.d_star + 1e-9 * scale)  # weak duality: feasible iterates


def test_info_and_momentum(problems: dict) -> None:
    f, _ = problems[(INSTANCES[1][0], "squared_hinge")]
    L, mu = f.dual_lipschitz(), f.dual_strong_convexity()
    r = solve_accelerated_gradient(f)
    assert r.info["L"] == pytest.approx(L) and r.info["mu"] == pytest.approx(mu) and mu > 0
    assert r.info["momentum"] == pytest.approx((math.sqrt(L) - math.sqrt(mu))
                                               / (math.sqrt(L) + math.sqrt(mu)))
    fh, _ = problems[(INSTANCES[1][0], "hinge")]
    assert solve_accelerated_gradient(fh).info["momentum"] == "fista"
    assert solve_projected_gradient(fh).info["momentum"] == 0.0
    steps = solve_projected_gradient(fh, max_iter=3).trace.step
    np.testing.assert_allclose(steps, 1.0 / fh.dual_lipschitz())


def test_max_iter_stops_unconverged(problems: dict) -> None:
    f, _ = problems[(INSTANCES[0][0], "hinge")]
    r = solve_projected_gradient(f, max_iter=7)
    assert r.n_iter == 7 and not r.converged
    assert "max_iter" in r.message
    assert r.trace.iteration == list(range(8))


def test_record_every_thins_the_trace(problems: dict) -> None:
    f, _ = problems[(INSTANCES[0][0], "hinge")]
    r = solve_projected_gradient(f, max_iter=100, tol=0.0, record_every=10)
    assert r.trace.iteration == list(range(0, 101, 10))


def test_callback_true_stops(problems: dict) -> None:
    f, _ = problems[(INSTANCES[0][0], "squared_hinge")]
    seen: list[int] = []

    def callback(k, w, alpha, trace):
        seen.append(k)
        assert w.shape == (f.data.n_features,) and alpha.shape == (f.n_dual,)
        return k >= 4

    for solve in (solve_projected_gradient, solve_accelerated_gradient):
        seen.clear()
        r = solve(f, callback=callback, tol=0.0)
        assert r.n_iter == 4 and r.message == "stopped by callback" and not r.converged
        assert seen == [0, 1, 2, 3, 4]


def test_time_budget_stops(problems: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock where every projection takes 10 ms (one in the set-up, one per
    iteration), a 55 ms budget stops the run at the last record from which one more
    iteration would overrun it: iteration 4 (at 50 ms), never past the budget."""
    f, _ = problems[(INSTANCES[2][0], "hinge")]
    clock = install_clock(monkeypatch, trace_module)
    project = f.project_dual

    def slow_project(alpha):
        clock.advance(0.01)
        return project(alpha)

    monkeypatch.setattr(f, "project_dual", slow_project)
    r = solve_projected_gradient(f, tol=0.0, max_iter=10**8, time_budget=0.055)
    assert r.status is Status.TIME_BUDGET and "time budget" in r.message and not r.converged
    assert r.n_iter == 4 and r.trace.iteration == list(range(5))
    assert r.trace.time[-1] == r.time <= 0.055 < r.trace.time[-1] + 0.01
    assert 0.01 <= r.setup_time < 0.02  # the set-up's projection


def test_trace_time_excludes_callback_and_evaluation(problems: dict,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With tol = 0 the objectives are evaluated for the trace only: neither they (20 ms
    each) nor the callback (50 ms each) are on the solver's clock."""
    f, _ = problems[(INSTANCES[0][0], "hinge")]
    clock = install_clock(monkeypatch, trace_module)
    dual_value = f.dual_value

    def slow_dual_value(alpha):
        clock.advance(0.02)
        return dual_value(alpha)

    def slow(k, w, alpha, trace):
        clock.advance(0.05)

    monkeypatch.setattr(f, "dual_value", slow_dual_value)
    r = solve_projected_gradient(f, max_iter=10, tol=0.0, callback=slow)
    assert r.n_iter == 10 and len(r.trace) == 11
    assert clock.now >= 10 * 0.05 + 11 * 0.02  # 10 callbacks, 11 trace evaluations
    assert r.time < 0.02, r.trace.time  # not one of them on the solver's clock
    assert np.all(np.diff(r.trace.time) >= 0)


def test_missing_capabilities_are_named() -> None:
    class Bare:
        name = "bare"

        def dual_start(self):
            return np.zeros(3)

    with pytest.raises(TypeError, match="'pg' cannot run on bare: it needs dual_gradient"):
        solve_projected_gradient(Bare())  # type: ignore[arg-type]
