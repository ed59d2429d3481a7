"""The 1-slack's exact finish for the hinge RankSVM and IR SVM, and the one cutting-plane core.

The margin band is checked against the explicit pairs; the finish against certified Clarabel
optima (synthetic problems with ties, duplicated documents and degenerate margins; the
OHSUMED validation sets), for the validity of its bound whatever its guess, and inside
``fit`` when measures must be certified; the working set, the iteration bound and the two
solvers' shared loop against what they replaced.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.certificates.certify import EvaluationTarget, radius_rule
from cvxrank.certificates.reference import solve_reference
from cvxrank.core.capabilities import CAPABILITIES
from cvxrank.data import RankingData, make_synthetic, read_svmlight
from cvxrank.errors import CapabilityError
from cvxrank.fitting import fit_formulation
from cvxrank.formulations import RankSVM
from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop
from cvxrank.formulations.rankmm import RankMM
from cvxrank.solvers import one_slack
from cvxrank.solvers.cutting_plane import WorkingSet, iteration_bound
from cvxrank.solvers.one_slack import exact_finish, margin_active_set, solve_one_slack


def tied(seed: int, sparse: bool = False) -> RankingData:
    """Synthetic queries on a coarse grid of features (many equal pair differences and
    pairs exactly on their margin), with some documents repeated under another grade."""
    data = make_synthetic(n_queries=8, docs_per_query=(6, 14), n_features=5, n_grades=3,
                          seed=seed)
    X, y, qid = np.round(2.0 * data.X) / 2.0, data.y.copy(), data.qid.copy()
    rng = np.random.default_rng(seed)
    copies = rng.choice(X.shape[0], size=6, replace=False)
    X = np.vstack([X, X[copies]])
    y = np.r_[y, (y[copies] + 1) % 3]
    qid = np.r_[qid, qid[copies]]
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    return RankingData.from_arrays(sp.csr_matrix(X) if sparse else X, y, qid=qid)


def formulations(data: RankingData, C: float) -> list[RankSVM]:
    """Hinge RankSVM (margins per pair of grades), IR SVM and RankSVM with explicit weights."""
    pairs = RankSVM(data).n_dual
    weights = np.random.default_rng(1).uniform(0.5, 2.0, pairs)
    return [RankSVM(data, C=C, level_margin=lambda a, b: 0.5 + a - b),
            IRSVM(data, C=C, tau=ndcg1_swap_drop(data, zero_floor=0.5)),
            RankSVM(data, C=C, pair_weight=weights)]


def explicit_band(f: RankSVM, w: np.ndarray, radius: float) -> tuple[int, np.ndarray, float]:
    """The band of :meth:`RankSVM.margin_band` from the built pairs: its size, and the sums
    over the pairs below it."""
    P = f.pairs
    D = f.X[P.upper] - f.X[P.lower]
    D = D.toarray() if sp.issparse(D) else D
    t = D @ w - f.margin
    inside = np.abs(t) <= radius * np.linalg.norm(D, axis=1)
    below = (t < 0) & ~inside
    return int(inside.sum()), f.pair_weight[below] @ D[below], float(
        f.pair_weight[below] @ f.margin[below])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sparse", [False, True])
def test_margin_band_is_the_band_of_the_pairs(seed: int, sparse: bool) -> None:
    data = tied(seed, sparse)
    rng = np.random.default_rng(seed)
    for f in formulations(data, 0.1):
        w = rng.normal(size=data.n_features)
        for radius in (0.0, 0.05, 0.5):
            band = f.margin_band(w, [radius])
            size, below, margin_sum = explicit_band(f, w, radius)
            assert band.difference.shape == (size, data.n_features)
            np.testing.assert_allclose(band.violated_sum, below, rtol=1e-12, atol=1e-10)
            assert band.violated_margin == pytest.approx(margin_sum, rel=1e-12, abs=1e-10)
            t = band.difference @ w - band.margin
            assert np.all(np.abs(t) <= radius * np.linalg.norm(band.difference, axis=1)
                          + 1e-12)


def test_margin_band_gives_up_above_max_pairs() -> None:
    f = RankSVM(make_synthetic(n_queries=6, docs_per_query=12, seed=0), C=1.0)
    assert f.margin_band(np.zeros(f.data.n_features), [10.0, 1.0], max_pairs=5) is None
    with pytest.raises(ValueError, match="hinge"):
        RankSVM(f.data, loss="squared_hinge").margin_band(np.zeros(f.data.n_features), [1.0])


def restricted_problem(rng: np.random.Generator, k: int, d: int):
    """Random pairs, some repeated, some with a margin met exactly at the start w = 0."""
    D = rng.normal(size=(k, d))
    D[k // 2:k // 2 + 3] = D[0]  # repeated pairs
    m = rng.uniform(0.5, 1.5, k)
    m[:2] = 0.0  # on the margin at w = 0
    return D, m, rng.uniform(0.1, 1.0, k), rng.normal(size=d)


@pytest.mark.parametrize("seed", range(6))
def test_margin_active_set_solves_its_problem_exactly(seed: int) -> None:
    rng = np.random.default_rng(seed)
    D, m, u, g0 = restricted_problem(rng, 40, 4)
    alpha, converged = margin_active_set(D, m, u, g0, np.zeros(4), max_iter=500)
    assert converged and np.all(alpha >= 0) and np.all(alpha <= u)
    v = g0 + alpha @ D
    primal = 0.5 * (v - g0) @ (v - g0) + u @ np.maximum(m - D @ v, 0.0)
    dual = m @ alpha + g0 @ g0 / 2 - 0.5 * v @ v  # the Lagrangian dual at alpha
    z = cp.Variable(4)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(z - g0)
                                     + u @ cp.pos(m - D @ z)))
    problem.solve(solver="CLARABEL")
    assert primal - dual <= 1e-12 * (1.0 + abs(primal))  # optimal: its own certificate
    assert primal <= problem.value + 1e-8 * (1.0 + abs(problem.value))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("C", [1e-2, 1.0])
def test_finish_on_the_certified_band_is_the_clarabel_optimum(seed: int, C: float,
                                                               monkeypatch) -> None:
    # the whole band the certified radius allows: no guess, so the finish is exact
    monkeypatch.setattr(one_slack, "BANDS", (1.0,))
    for f in formulations(tied(seed), C):
        ref = solve_reference(f)
        run = solve_one_slack(f, tol=1e-3)
        polished = exact_finish(f)(run.w, run.w_radius)
        assert polished.dual <= ref.p_star + 1e-9 * abs(ref.p_star)
        assert polished.primal - polished.dual <= 1e-12 * polished.primal
        assert abs(polished.primal - ref.p_star) <= 1e-8 * abs(ref.p_star)
        assert f.primal_value(polished.w) == pytest.approx(polished.primal, rel=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_a_wrong_guess_still_bounds_p_star(seed: int) -> None:
    f = RankSVM(tied(seed), C=1.0)
    ref = solve_reference(f)
    w = np.random.default_rng(seed).normal(size=f.data.n_features)  # far from w*
    polished = exact_finish(f)(w, 1e-3)  # a radius that is not a bound: a wrong band
    assert polished.dual <= ref.p_star + 1e-9 * abs(ref.p_star)
    assert polished.primal >= ref.p_star - 1e-9 * abs(ref.p_star)
    assert polished.primal - polished.dual > 1e-6 * ref.p_star  # the guess was wrong


def test_one_slack_finishes_exactly_when_measures_must_be_certified() -> None:
    data = make_synthetic(n_queries=20, docs_per_query=(10, 30), n_features=8, seed=3)
    test = make_synthetic(n_queries=10, docs_per_query=(10, 30), n_features=8, seed=4)
    f = RankSVM(data, C=0.05, loss="hinge")
    ref = solve_reference(f)
    plain = solve_one_slack(f)
    target = EvaluationTarget.of([test])
    run = fit_formulation(f, "1-slack", certify=target)
    assert run.converged and run.info["finishes"] >= 1
    assert run.relative_gap <= 1e-12  # the exact optimum, certified
    assert abs(run.objective - ref.p_star) <= 1e-9 * ref.p_star
    assert max(run.trace.dual) <= ref.p_star * (1 + 1e-9)
    assert "finish_time" in run.trace.extra
    assert run.n_iter <= plain.n_iter + 1
    assert all(m["certified"] for m in target.report(f, run)[0].values())
    without = solve_one_slack(f, until=target.until(f), finish=False)
    assert without.info["finishes"] == 0 and without.n_iter > run.n_iter


@pytest.mark.parametrize("fold", [1, 2, 3, 4, 5])
def test_finish_reaches_clarabel_on_ohsumed_vali(shared_data, fold: int) -> None:
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / f"Fold{fold}" / "vali.txt"
    f = RankSVM(read_svmlight(path), C=1e-3, loss="hinge")
    ref = solve_reference(f)
    tol_only = solve_one_slack(f)
    run = solve_one_slack(f, until=radius_rule(f, 1e-4))
    assert run.converged and run.info["finishes"] >= 1
    assert run.relative_gap <= 1e-12
    assert abs(run.objective - ref.p_star) <= 1e-9 * ref.p_star
    assert max(run.trace.dual) <= ref.p_star * (1 + 1e-9)
    assert run.n_iter <= tol_only.n_iter + 2  # ended by its first or second try


# ------------------------------------------------------------------- the core's pieces
def test_working_set_keeps_its_gram_matrix_and_zero_cut_through_pruning() -> None:
    rng = np.random.default_rng(0)
    working = WorkingSet(3, gram=True, zero_cut=2.0, capacity=2)
    for _ in range(5):  # past the capacity: grown
        working.add(rng.normal(size=2), rng.normal(size=(2, 3)), np.zeros(2, dtype=np.int64))
    assert len(working) == 11 and working.n_cuts == 10
    assert working.multiplier[0] == 2.0 and not working.multiplier[1:].any()
    np.testing.assert_allclose(working.gram, working.gradient @ working.gradient.T)
    lam = np.r_[0.0, rng.uniform(size=10)]
    lam[[3, 7]] = 0.0
    working.multiplier = lam
    working.prune(1)  # drops the two idle cuts, keeps the zero cut whatever its multiplier
    assert len(working) == 9 and working.offset[0] == 0.0 and not working.gradient[0].any()
    np.testing.assert_allclose(working.gram, working.gradient @ working.gradient.T)
    snap = working.snapshot()
    assert not snap.gram.flags.writeable and snap.multiplier.size == 9


def test_iteration_bound_is_joachims_finley_yu_for_one_block_and_tsochantaridis_else():
    data = make_synthetic(n_queries=6, docs_per_query=(5, 10), n_features=4, seed=1)
    f = RankSVM(data, C=0.3)
    kappa, R, losses = f.cut_bounds()
    assert kappa == 0.3 and losses.size == 1
    assert f.total_pair_weight() == pytest.approx(f.pair_weight.sum(), rel=1e-12)
    p_star, tol = 0.9 * f.primal_value(np.zeros(4)), 1e-6
    eps = tol * p_star / kappa
    expected = (max(0, math.ceil(math.log2(max(losses[0] / (4 * R * R * kappa), 1.0))))
                + math.ceil(16 * R * R * kappa / eps))
    assert iteration_bound(f, tol, p_star=p_star) == expected
    g = RankMM(data, C=5.0, loss="max")
    kappa, R, losses = g.cut_bounds()
    B = losses.size
    eps = tol * g.primal_value(np.zeros(4)) / (kappa * B)
    expected = max(2 * B * losses.max() / eps, 8 * kappa * B * losses.max() * R * R / eps ** 2)
    assert iteration_bound(g, tol) == pytest.approx(math.ceil(expected), rel=1e-12)
    with pytest.raises(CapabilityError, match="cut_bounds"):
        iteration_bound(RankSVM(data, C=0.3, loss="squared_hinge"))
    assert "cut_bounds" in CAPABILITIES and "margin_band" in CAPABILITIES


def test_one_slack_is_the_n_slack_core_with_one_block() -> None:
    # the 1-slack through the CVXPY master (the n-slack's, one block, no zero cut) reaches
    # the optimum of the active-set master's run
    f = RankSVM(make_synthetic(n_queries=8, docs_per_query=(5, 12), n_features=5, seed=2),
                C=0.1)
    hand, cvx = solve_one_slack(f, tol=1e-8), solve_one_slack(f, tol=1e-8, master="cvxpy")
    assert hand.converged and cvx.converged
    assert cvx.objective == pytest.approx(hand.objective, rel=1e-7)
    assert cvx.info["cuts"].gram is None and hand.info["cuts"].gram is not None
