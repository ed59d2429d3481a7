"""RankMM's stochastic dual solvers (Agarwal & Collins 2010, Sects. 3.1-3.3).

Every solver is checked against a certified Clarabel optimum as ``verify`` checks stochastic
solvers (median over five seeds, STOCHASTIC_GAP, the rate of the theory fitted to the mean
dual suboptimality), against a brute-force implementation of the paper's update on the
explicit dual vector (same seed, same queries), and for the exactness of its incremental
weights; the factored EG step against the plain one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import certified, primal_gap

from cvxrank.certificates.validate import RateSpec, validate_runs
from cvxrank.data import RankingData, build_pairs
from cvxrank.errors import CapabilityError
from cvxrank.formulations import query_losses
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient
from cvxrank.solvers.rankmm import (
    DRAW_CHUNK,
    PILOT_MULTIPLES,
    default_eta0,
    solve_seg,
    solve_seg_pairs,
    solve_sgp,
)
from cvxrank.tolerances import FAST_SOLVER_GAP, FEASIBILITY, STOCHASTIC_GAP

SEEDS = (0, 1, 2, 3, 4)
C = 1.0

#: (loss, solver, options, eta0 as a multiple of the default, theory's exponent).
CASES = {
    "sgp-box": ("average", solve_sgp, {"max_iter": 4000}, 1.0, -0.5),
    "sgp-l1inf": ("max_average", solve_sgp, {"max_iter": 2500}, 10.0, -0.5),
    "sgp-l1inf-paper": ("max_average", solve_sgp, {"max_iter": 2500, "projection": "paper"},
                        10.0, -0.5),
    "seg": ("max", solve_seg, {"max_iter": 8000}, 1.0, -1.0),
    "seg-pairs": ("max", solve_seg_pairs, {"max_iter": 8000}, 1.0, -1.0),
}


def small_data(seed: int = 11, n_features: int = 4) -> RankingData:
    """Six queries, three grades with ties, the last query without pairs."""
    rng = np.random.default_rng(seed)
    sizes = [9, 7, 11, 8, 6, 5]
    y = np.concatenate([rng.integers(0, 3, size=k) for k in sizes]).astype(float)
    y[:3] = [2.0, 1.0, 0.0]
    y[-5:] = 1.0  # one grade: no pairs, but it counts in m
    direction = rng.normal(size=n_features)
    X = (rng.normal(size=(y.size, n_features))
         + 0.7 * np.outer(y, direction) / np.linalg.norm(direction))
    return RankingData.from_arrays(X, y, qid=np.repeat(np.arange(len(sizes)), sizes))


@pytest.fixture(scope="module")
def problems() -> dict[str, tuple[RankMM, object]]:
    data = small_data()
    out = {}
    for loss in RANKMM_LOSSES:
        f = RankMM(data, C=C, loss=loss)
        out[loss] = certified(f)
    return out


# -- convergence against the certified reference ----------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_median_gap_certificate_and_rate(problems, case) -> None:
    loss, solve, options, multiple, exponent = CASES[case]
    f, ref = problems[loss]
    eta0 = multiple * default_eta0(f)
    runs = [solve(f, tol=0.0, seed=seed, eta0=eta0, **options) for seed in SEEDS]
    for r in runs:
        assert r.n_iter == options["max_iter"] and not r.converged
        assert r.info["n_queries"] == f.queries_with_pairs.size == 5
        assert f.dual_infeasibility(r.alpha) <= FEASIBILITY
        np.testing.assert_allclose(r.w, f.primal_from_dual(r.alpha), rtol=0, atol=1e-14)
        # the certificate bounds the true gap: (P - D) / P >= (P - p*) / P
        primal, dual = r.trace.primal[-1], r.trace.dual[-1]
        assert primal == pytest.approx(f.primal_value(r.w), rel=1e-12)
        assert dual == pytest.approx(f.dual_value(r.alpha), rel=1e-12)
        assert r.relative_gap >= (primal - ref.p_star) / primal - 1e-9
        assert dual <= ref.d_star + 1e-9 * abs(ref.d_star)
    gaps = [primal_gap(f, r.w, ref) for r in runs]
    assert min(gaps) >= -1e-9
    assert np.median(gaps) <= STOCHASTIC_GAP
    assert np.median([r.relative_gap for r in runs]) <= 2 * STOCHASTIC_GAP
    v = validate_runs(runs, ref, RateSpec.sublinear(exponent, measure="dual"), formulation=f,
                      tol=STOCHASTIC_GAP)
    assert v.passed, v.reasons
    assert v.rate_ok is True and v.fitted is not None and v.fitted <= exponent + 0.25
    # far from the optimum at the start: the gap really decreased
    first = (ref.d_star - runs[0].trace.dual[0]) / ref.p_star
    assert first > 10 * STOCHASTIC_GAP


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_apg_is_the_deterministic_baseline(problems, loss) -> None:
    f, ref = problems[loss]
    r = solve_accelerated_gradient(f, max_iter=50_000)
    assert r.converged and r.info["momentum"] == "fista"
    assert abs(primal_gap(f, r.w, ref)) <= FAST_SOLVER_GAP
    assert f.dual_infeasibility(r.alpha) <= FEASIBILITY


def test_tolerance_stops_at_a_certified_point(problems) -> None:
    f, ref = problems["max"]
    r = solve_seg(f, tol=1e-3, seed=0, max_iter=50_000, record_every=100)
    assert r.converged and r.n_iter < 50_000 and r.relative_gap <= 1e-3
    assert primal_gap(f, r.w, ref) <= 1e-3 * f.primal_value(r.w) / ref.p_star + 1e-12


# -- the paper's update, step by step ------------------------------------------------------
def brute_force(f: RankMM, solver: str, n_steps: int, seed: int, eta0: float,
                projection: str = "exact") -> np.ndarray:
    """The paper's iteration on the explicit dual vector: the printed gradient
    ``neg_dual_grad / kappa`` of one query's block, then its projection (the full vector's,
    which leaves the other, feasible blocks unchanged) or its EG update."""
    blocks = f.queries_with_pairs
    start, stop = f.pairs.pair_ptr[blocks], f.pairs.pair_ptr[blocks + 1]
    draws = np.random.default_rng(seed).integers(0, blocks.size, size=DRAW_CHUNK)
    alpha = f.dual_start().astype(float)
    p = f.n_pairs
    for t in range(1, n_steps + 1):
        b = draws[t - 1]
        grad = f.neg_dual_grad(alpha)[start[b]:stop[b]] / f.kappa
        if solver == "seg":
            block = np.r_[alpha[start[b]:stop[b]] * np.exp(-eta0 * grad), alpha[p + b]]
            block /= block.sum()
            alpha[start[b]:stop[b]], alpha[p + b] = block[:-1], block[-1]
            continue
        v = alpha.copy()
        v[start[b]:stop[b]] -= eta0 / math.sqrt(t) * grad
        paper = projection == "paper" and f.loss is query_losses.max_average
        alpha = f.dual_set.project_then_clip(v) if paper else f.project_dual(v)
    return alpha


@pytest.mark.parametrize(("loss", "solve", "name", "options"), [
    ("average", solve_sgp, "sgp", {}),
    ("max_average", solve_sgp, "sgp", {"projection": "exact"}),
    ("max_average", solve_sgp, "sgp", {"projection": "paper"}),
    ("max", solve_seg, "seg", {}),
    ("max", solve_seg_pairs, "seg", {}),
])
def test_iterates_equal_the_papers_update(problems, loss, solve, name, options) -> None:
    f, _ = problems[loss]
    eta0 = 5.0 * default_eta0(f)
    n = 300
    r = solve(f, tol=0.0, seed=7, max_iter=n, eta0=eta0, **options)
    expected = brute_force(f, name, n, 7, eta0, options.get("projection", "exact"))
    np.testing.assert_allclose(r.alpha, expected, rtol=1e-10, atol=1e-15)


def test_paper_order_differs_from_the_projection(problems) -> None:
    """The paper's order (project onto the ball, clip) is feasible but not the projection:
    the two runs part on this instance, and both converge (see the CASES above)."""
    f, _ = problems["max_average"]
    eta0 = 10.0 * default_eta0(f)
    exact = solve_sgp(f, tol=0.0, seed=0, max_iter=1000, eta0=eta0)
    paper = solve_sgp(f, tol=0.0, seed=0, max_iter=1000, eta0=eta0, projection="paper")
    assert f.dual_infeasibility(paper.alpha) <= FEASIBILITY
    assert np.max(np.abs(exact.alpha - paper.alpha)) > 1e-6


def test_factored_eg_equals_plain_eg() -> None:
    """The factored step is exact: the same iterates as the explicit step for the same
    queries, to rounding, over many steps (peaked distributions: the relative rounding of a
    probability is that of its logarithm, so it grows with the range of log alpha)."""
    f = RankMM(small_data(seed=5, n_features=6), C=3.0, loss="max")
    eta0 = default_eta0(f)  # the worst-case step, not the pilot's choice
    a = solve_seg(f, tol=0.0, seed=3, max_iter=3000, eta0=eta0)
    b = solve_seg_pairs(f, tol=0.0, seed=3, max_iter=3000, eta0=eta0)
    assert a.n_iter == b.n_iter == 3000
    assert a.alpha.min() < 1e-40  # far from uniform: some pairs are exponentially small
    np.testing.assert_allclose(a.alpha, b.alpha, rtol=1e-12, atol=0)
    np.testing.assert_allclose(a.trace.dual, b.trace.dual, rtol=1e-12)


@pytest.mark.parametrize("case", ["sgp-box", "sgp-l1inf", "seg", "seg-pairs"])
def test_incremental_weights_stay_exact(problems, case) -> None:
    """No resynchronization in between (one record at the end): the weights maintained
    step by step equal primal_from_dual(alpha)."""
    loss, solve, _, multiple, _ = CASES[case]
    f, _ = problems[loss]
    n = 3000
    r = solve(f, tol=0.0, seed=1, max_iter=n, record_every=n, eta0=multiple * default_eta0(f))
    assert len(r.trace) == 2
    assert r.info["w_drift"] <= 1e-10


@pytest.mark.parametrize("case", ["sgp-box", "sgp-l1inf", "seg", "seg-pairs"])
def test_sparse_features_give_the_same_run(case) -> None:
    loss, solve, _, _, _ = CASES[case]
    data = small_data()
    dense = RankMM(data, C=C, loss=loss)
    sparse = RankMM(data.with_features(sp.csr_matrix(data.X)), C=C, loss=loss)
    a = solve(dense, tol=0.0, seed=5, max_iter=500)
    b = solve(sparse, tol=0.0, seed=5, max_iter=500)
    np.testing.assert_allclose(a.alpha, b.alpha, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-10, atol=1e-14)


def test_seed_reproduces(problems) -> None:
    f, _ = problems["average"]
    a = solve_sgp(f, tol=0.0, seed=3, max_iter=500)
    b = solve_sgp(f, tol=0.0, seed=3, max_iter=500)
    c = solve_sgp(f, tol=0.0, seed=4, max_iter=500)
    gen = solve_sgp(f, tol=0.0, seed=np.random.default_rng(3), max_iter=500)
    assert np.array_equal(a.alpha, b.alpha) and np.array_equal(a.alpha, gen.alpha)
    assert not np.allclose(a.alpha, c.alpha)


# -- step sizes ---------------------------------------------------------------------------
def test_default_steps(problems) -> None:
    """The worst-case steps: sgp 1 / max_i L_i with L_i the block Lipschitz constant; seg
    1 / (C/m max_i (2 max_j ||x_j - mean_i||)^2), below 1 / |A|_inf = 1 / (C/m max_pairs
    ||x_j - x_k||^2); the default eta0 is one of their pilot multiples."""
    for loss in ("average", "max_average"):
        f, _ = problems[loss]
        P, blocks = f.pairs, f.queries_with_pairs
        X = f.data.X
        L = []
        for q in blocks:
            rows = slice(P.pair_ptr[q], P.pair_ptr[q + 1])
            D = (X[P.upper[rows]] - X[P.lower[rows]]) * f.pair_scale[rows, None]
            L.append(np.linalg.norm(D, 2) ** 2)
        assert default_eta0(f) == pytest.approx(1.0 / max(L), rel=1e-5)
    f, _ = problems["max"]
    P, X, ptr = f.pairs, f.data.X, f.data.query_ptr
    a_inf = C / f.m * np.max(np.sum((X[P.upper] - X[P.lower]) ** 2, axis=1))
    diameter_sq = max(np.max(np.sum((X[i:j, None] - X[None, i:j]) ** 2, axis=2))
                      for i, j in zip(ptr[:-1], ptr[1:], strict=True))
    assert 0.25 / (C / f.m * diameter_sq) <= default_eta0(f) <= 1.0 / a_inf
    r = solve_seg(f, tol=0.0, seed=0, max_iter=200)
    multiples = {m * default_eta0(f) for m in PILOT_MULTIPLES["eg"]}
    assert r.info["eta0"] in multiples and r.trace.step[-1] == r.info["eta0"]
    # the pilot picks the step with the smallest certified gap after its pilot run
    pilots = {eta: solve_seg(f, tol=0.0, seed=0, max_iter=40, eta0=eta, record_every=40)
              for eta in multiples}
    assert r.info["eta0"] == min(pilots, key=lambda eta: pilots[eta].relative_gap)
    r = solve_sgp(problems["average"][0], tol=0.0, seed=0, max_iter=100, record_every=100)
    assert r.trace.step[-1] == pytest.approx(r.info["eta0"] / 10.0)  # eta0 / sqrt(100)


# -- bad input ----------------------------------------------------------------------------
def test_bad_input(problems) -> None:
    data = small_data()
    ranksvm = RankSVM(data, C=1.0 / build_pairs(data).n_pairs, loss="hinge")
    for solve in (solve_sgp, solve_seg, solve_seg_pairs):
        with pytest.raises(CapabilityError, match="dual_query_blocks"):
            solve(ranksvm, max_iter=10)
    with pytest.raises(CapabilityError, match="euclidean_dual_blocks .*boxes or l1,inf"):
        solve_sgp(problems["max"][0], max_iter=10)
    for solve in (solve_seg, solve_seg_pairs):
        with pytest.raises(CapabilityError, match="simplex_dual_blocks .*simplices"):
            solve(problems["average"][0], max_iter=10)
    cases = ((solve_sgp, "average"), (solve_seg, "max"), (solve_seg_pairs, "max"))
    for solve, loss in cases:
        for eta0 in (0.0, -1.0, float("nan"), float("inf"), "big"):
            with pytest.raises(ValueError, match="eta0 must be a finite number > 0"):
                solve(problems[loss][0], max_iter=10, eta0=eta0)
    with pytest.raises(ValueError, match="projection must be"):
        solve_sgp(problems["max_average"][0], max_iter=10, projection="clip")
    with pytest.raises(ValueError, match="record_every"):
        solve_sgp(problems["average"][0], max_iter=10, record_every=0)
