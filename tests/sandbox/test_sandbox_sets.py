"""A user's feasible set (cvxrank.sandbox.ConstraintSet): its projection checked against
CVXPY's, and a pairwise formulation over a set of weights, certified and solved by the
built-in dual gradient solvers."""

from __future__ import annotations

import re

import cvxpy as cp
import numpy as np
import pytest

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import make_synthetic
from cvxrank.numerics.sets import L2Ball, Simplex
from cvxrank.registry.rates import apg_linear_rate, pg_linear_rate
from cvxrank.sandbox import (
    ConstraintSet,
    ExpressionMismatchError,
    PairwiseFormulation,
    check,
    logistic,
    smoothed_hinge,
    solvers_for,
    squared_hinge,
)


def nonnegative() -> ConstraintSet:
    return ConstraintSet("nonnegative", lambda x: [x >= 0], lambda v: np.maximum(v, 0.0))


def ball(radius: float) -> ConstraintSet:
    exact = L2Ball(radius)
    return ConstraintSet(f"ball-{radius:g}", exact.constraints, exact.project)


@pytest.mark.parametrize("make", [
    nonnegative,
    lambda: ball(0.7),
    lambda: ConstraintSet("simplex", Simplex(np.zeros(6, dtype=np.int64)).constraints,
                          Simplex(np.zeros(6, dtype=np.int64)).project),
    # auxiliary variables in the constraints: |x|_1 <= 1 written with u >= |x|
    lambda: ConstraintSet("l1-by-aux", lambda x: _l1_constraints(x), _project_l1),
])
def test_exact_projections_pass_the_check(make) -> None:
    s = make()
    s.verify(6)
    assert 6 in s._verified


def _l1_constraints(x: cp.Expression) -> list[cp.Constraint]:
    u = cp.Variable(x.shape)
    return [u >= x, u >= -x, cp.sum(u) <= 1.0]


def _project_l1(v: np.ndarray) -> np.ndarray:
    if np.abs(v).sum() <= 1.0:
        return v.copy()
    mags = Simplex(np.zeros(v.size, dtype=np.int64)).project(np.abs(v))
    return np.sign(v) * mags


@pytest.mark.parametrize("project, match", [
    (lambda v: np.maximum(v, 0.1), "is not the closest point"),       # a wrong clip
    (lambda v: v, "is not in the set by its CVXPY constraints"),     # no projection at all
    (lambda v: 2 * np.maximum(v, 0.0), "is not the closest point"),   # in the set, too far
    (lambda v: np.maximum(v, 0.0)[:-1], "must return a finite array of v's shape"),
])
def test_a_wrong_projection_is_refused_with_the_set_and_the_point(project, match) -> None:
    s = ConstraintSet("nonnegative", lambda x: [x >= 0], project)
    expected = re.escape(f"constraint set 'nonnegative': project(v) {match}")
    with pytest.raises(ExpressionMismatchError, match=expected):
        s.verify(5)
    with pytest.raises(ExpressionMismatchError, match="constraint set 'nonnegative'"):
        PairwiseFormulation(make_synthetic(n_queries=3, n_features=5, seed=0), logistic(),
                            weight_set=s)


def test_the_check_runs_once_per_dimension_and_on_first_use() -> None:
    s = nonnegative()
    assert not s._verified
    np.testing.assert_array_equal(s.project(np.array([-1.0, 2.0])), [0.0, 2.0])
    assert s._verified == {2}
    assert s.violation(np.array([-3.0, 4.0])) == pytest.approx(3.0)


@pytest.mark.parametrize("loss", [squared_hinge, smoothed_hinge(1.0, 0.5)])
def test_dual_gradient_solvers_reach_the_optimum_over_a_weight_set(loss) -> None:
    data = make_synthetic(n_queries=8, docs_per_query=(5, 15), n_features=6, seed=4)
    f = PairwiseFormulation(data, loss, C=0.05, weight_set=nonnegative())
    assert {"apg", "pg"} <= set(solvers_for(f)) and "prsvm" not in solvers_for(f)
    ref = solve_reference(f)
    assert np.all(ref.w >= -1e-8) and np.any(ref.w < 1e-8)  # the set is active
    for solver, rate in (("apg", apg_linear_rate), ("pg", pg_linear_rate)):
        from cvxrank.solvers import get_solver

        result = check(get_solver(solver), f, rate)
        assert result.passed, result.summary()
        assert np.all(result.runs[0].w >= 0)


def test_a_weight_set_with_exponential_cones_is_certified() -> None:
    data = make_synthetic(n_queries=6, docs_per_query=(5, 12), n_features=5, seed=1)
    f = PairwiseFormulation(data, logistic(), C=0.05, weight_set=ball(0.5))
    ref = solve_reference(f)
    assert np.linalg.norm(ref.w) == pytest.approx(0.5, rel=1e-6)  # the ball is active
    assert f.primal_value(2 * ref.w) == np.inf  # outside the set
    assert f.dual_value_at(ref.w) == pytest.approx(ref.p_star, rel=1e-7)
