"""The one-block master QP's two implementations (:func:`simplex_qp`): the compiled active set
(:mod:`cvxrank.numerics.simplex_kernels`) against the numpy one and against CVXPY."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.data import make_synthetic
from cvxrank.errors import SolverError
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.numerics import simplex_kernels
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.solvers.simplex_product_qp import simplex_qp


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch) -> str:
    """Run :func:`simplex_qp` through the compiled kernel or the numpy iterations."""
    compiled = request.param == "compiled"
    if compiled:
        simplex_kernels.KERNELS.warm_up()
    monkeypatch.setattr(simplex_kernels.KERNELS, "use_compiled",
                        lambda needed=False: compiled)
    return request.param


def both(Q: np.ndarray, b: np.ndarray, total: float, x0: np.ndarray | None = None, **kw
         ) -> tuple[tuple[np.ndarray, int], tuple[np.ndarray, int]]:
    """``simplex_qp`` by the compiled kernel, then by the numpy iterations."""
    simplex_kernels.KERNELS.warm_up()
    use = simplex_kernels.KERNELS.use_compiled
    try:
        out = []
        for compiled in (True, False):
            simplex_kernels.KERNELS.use_compiled = lambda needed=False, c=compiled: c
            out.append(simplex_qp(Q, b, total, None if x0 is None else x0.copy(), **kw))
        return out[0], out[1]
    finally:
        simplex_kernels.KERNELS.use_compiled = use


def objective(Q: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    return 0.5 * float(x @ Q @ x) - float(b @ x)


@pytest.mark.parametrize("seed", range(40))
def test_compiled_and_numpy_iterations_take_the_same_steps(seed: int) -> None:
    # random, collinear (duplicated and scaled cuts) and rank-deficient Gram matrices, from
    # the vertex start and from a feasible warm start: the same iteration count, supports
    # and optimum to rounding
    rng = np.random.default_rng(seed)
    t, d = int(rng.integers(2, 70)), int(rng.integers(1, 12))
    G = rng.normal(size=(t, d)) * rng.uniform(0.1, 10.0, size=(t, 1))
    if seed % 3 == 0:
        G[t // 2:] = 2.0 * G[:t - t // 2]
    Q, b, total = G @ G.T, rng.normal(size=t), float(10 ** rng.uniform(-3, 3))
    x0 = None
    if seed % 2:
        x0 = np.where(rng.random(t) < 0.3, rng.random(t), 0.0)
        x0[0] += 0.1
        x0 *= total / x0.sum()
    (xc, nc), (xn, nn) = both(Q, b, total, x0)
    assert nc == nn
    assert np.array_equal(xc > 0, xn > 0)
    scale = 1.0 + abs(objective(Q, b, xn))
    assert abs(objective(Q, b, xc) - objective(Q, b, xn)) <= 1e-12 * scale
    assert xc.min() >= 0 and xc.sum() == pytest.approx(total, rel=1e-12)


@pytest.mark.parametrize("C", [1e-3, 0.1, 30.0])
def test_the_one_slack_fit_is_the_same_with_either_master(C: float) -> None:
    # a whole 1-slack fit: one master per cut, each warm-started from the last
    data = make_synthetic(n_queries=12, docs_per_query=(5, 25), n_features=8, seed=4)
    runs = {}
    for compiled in (True, False):
        use = simplex_kernels.KERNELS.use_compiled
        simplex_kernels.KERNELS.warm_up()
        simplex_kernels.KERNELS.use_compiled = lambda needed=False, c=compiled: c
        try:
            runs[compiled] = solve_one_slack(RankSVM(data, C=C, loss="hinge"), tol=1e-7)
        finally:
            simplex_kernels.KERNELS.use_compiled = use
    assert runs[True].converged and runs[False].converged
    assert len(runs[True].trace) == len(runs[False].trace)
    assert runs[True].objective == pytest.approx(runs[False].objective, rel=1e-12)


def test_the_iteration_cap_cycling_and_the_time_budget(path: str) -> None:
    rng = np.random.default_rng(0)
    G = rng.normal(size=(40, 5))
    Q, b = G @ G.T, rng.normal(size=40)
    with pytest.raises(SolverError, match="did not terminate in 1 iterations"):
        simplex_qp(Q, b, 1.0, max_iter=1)
    start = np.full(40, 1 / 40)
    x, n = simplex_qp(Q, b, 1.0, start, out_of_time=lambda: True)
    assert np.array_equal(x, start) and n == 0  # out of time: the feasible start
    x, _ = simplex_qp(Q, b, 1.0)
    assert x.sum() == pytest.approx(1.0, rel=1e-12)


def test_a_non_finite_kkt_solution_raises(path: str) -> None:
    Q = np.array([[1.0, np.nan], [np.nan, 1.0]])  # the diagonal is finite, the rest not
    with pytest.raises(SolverError, match="non-finite"):
        simplex_qp(Q, np.array([1.0, 0.5]), 1.0, np.array([0.5, 0.5]))


def test_elimination_solves_and_reports_a_zero_pivot() -> None:
    # the kernel's Gaussian elimination (plain Python here) against numpy's solve
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 19):
        A, r = rng.normal(size=(n, n)), rng.normal(size=n)
        z = r.copy()
        assert simplex_kernels._gepp_solve(A.copy(), z, n)
        np.testing.assert_allclose(A @ z, r, atol=1e-10 * (1 + np.abs(r).max()))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not simplex_kernels._gepp_solve(singular, np.ones(2), 2)
