"""The 1-slack cutting plane (Joachims 2006) for the hinge RankSVM and IR SVM: the
hand-written active-set master against CVXPY, the certified optimum against the reference,
and the default hinge solver on OHSUMED."""

from __future__ import annotations

import json

import cvxpy as cp
import numpy as np
import pytest
from toolbox import rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.cli import main as cli_main
from cvxrank.data import make_synthetic, read_svmlight
from cvxrank.formulations import RankSVM
from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop
from cvxrank.solvers.cutting_plane import WorkingSet, solve_master_cvxpy
from cvxrank.solvers.one_slack import solve_one_slack
from cvxrank.solvers.simplex_product_qp import simplex_qp


@pytest.mark.parametrize("seed", range(8))
def test_active_set_master_equals_cvxpy_on_random_simplex_qps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t, d = rng.integers(2, 12), rng.integers(1, 6)
    A = rng.normal(size=(t, d))
    if seed % 2:  # collinear cuts: Q singular
        A[1] = 2.0 * A[0]
    Q, b, total = A @ A.T, rng.normal(size=t), float(rng.uniform(0.1, 5.0))
    x, _ = simplex_qp(Q, b, total)
    z = cp.Variable(t)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A.T @ z) - b @ z),
                         [z >= 0, cp.sum(z) == total])
    problem.solve(solver="CLARABEL")
    assert x.min() >= 0 and x.sum() == pytest.approx(total, rel=1e-12)
    value = 0.5 * x @ Q @ x - b @ x
    assert value <= problem.value + 1e-8 * (1 + abs(problem.value))


@pytest.mark.parametrize("C", [1e-3, 0.05, 2.0])
def test_hand_written_master_matches_cvxpy_on_recorded_working_sets(C: float) -> None:
    f = RankSVM(make_synthetic(n_queries=8, docs_per_query=(5, 15), n_features=6, seed=2),
                C=C, loss="hinge")
    run = solve_one_slack(f, tol=1e-9)
    cuts = run.info["cuts"]
    assert cuts.offset[0] == 0 and not np.any(cuts.gradient[0])  # the zero cut first
    np.testing.assert_allclose(cuts.gram, cuts.gradient @ cuts.gradient.T, rtol=1e-12,
                               atol=1e-12 * np.abs(cuts.gram).max())
    for size in sorted({2, cuts.offset.size // 2, cuts.offset.size}):
        working = WorkingSet(f.data.n_features)
        working.add(cuts.offset[:size], cuts.gradient[:size], cuts.block[:size])
        lam, _ = simplex_qp(cuts.gram[:size, :size], cuts.offset[:size], C)
        hand = working.dual_value(lam)  # the master's dual value
        w, lam_cvxpy = solve_master_cvxpy(working, 1, C)
        value = 0.5 * w @ w + C * max(0.0, float(np.max(working.offset - working.gradient @ w)))
        assert abs(hand - value) <= 1e-6 * abs(value)
        assert working.dual_value(lam_cvxpy) <= hand + 1e-9 * abs(hand)  # a bound, not more
        np.testing.assert_allclose(working.w(lam), w, atol=1e-5 * (1 + np.abs(w).max()))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("C", [1e-3, 1e-1, 10.0])
def test_one_slack_reaches_the_certified_optimum(seed: int, C: float) -> None:
    data = make_synthetic(n_queries=10, docs_per_query=(5, 20), n_features=8, seed=seed)
    for f in (RankSVM(data, C=C, loss="hinge"),
              IRSVM(data, C=C, loss="hinge", tau=ndcg1_swap_drop(data, zero_floor=0.5))):
        ref = solve_reference(f)
        run = solve_one_slack(f)
        assert run.converged
        assert rel(run.objective, ref.p_star) <= 1e-6
        assert f.primal_value(run.w) == pytest.approx(run.objective, rel=1e-12)
        # the certificate is a true lower bound
        assert run.trace.dual[-1] <= ref.p_star * (1 + 1e-9)
        extra = run.trace.extra
        assert set(extra) == {"master_time", "oracle_time", "violation", "cuts"}
        # one cut per oracle call, the last one only if the oracle found it violated
        n = len(run.trace)
        np.testing.assert_array_equal(extra["cuts"][:-1], np.arange(1, n))
        assert extra["cuts"][-1] in (n - 1, n)


def test_one_slack_is_the_default_hinge_solver_and_certifies_ohsumed_fold1_test(
        shared_data, capsys) -> None:
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "test.txt"
    code = cli_main.main(["fit", "--method", "ranksvm", "--loss", "hinge", "--C", "1e-3",
                          "--train", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["solver"] == "1-slack" and out["converged"]
    f = RankSVM(read_svmlight(path), C=1e-3, loss="hinge")
    run = solve_one_slack(f)
    assert run.relative_gap <= 1e-6
    # fit goes on past the tolerance until the model radius is certified small
    assert out["objective"] <= run.objective * (1 + 1e-12)
    assert out["w_radius"] <= run.w_radius
    ref = solve_reference(f)
    assert rel(out["objective"], ref.p_star) <= 1e-6
    assert rel(run.objective, ref.p_star) <= 1e-6
