"""ConeRank (Tran & Pham): the model, its two convex blocks certified by CVXPY, the fast block
solvers, the monotone alternation and its agreement with the CVXPY alternation."""

from __future__ import annotations

import numpy as np
import pytest
from toolbox import rel, sampled, signed_rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.data import RankingData, make_synthetic
from cvxrank.data.instances import DEFAULT, QUICK
from cvxrank.formulations import conerank_kernels
from cvxrank.formulations.conerank import (
    ConeRank,
    FoldingIn,
    cone_pairs,
    normalize_differences,
    objective,
)
from cvxrank.numerics.sets import L2Ball, SumBand
from cvxrank.registry.conerank import instance_view
from cvxrank.solvers.conerank import (
    fold_in,
    profile_objective,
    reference_alternation,
    solve_alternation,
    solve_stochastic,
    update_basis,
)

SEEDS = (0, 1, 2)


def problem(seed: int, K: int = 3) -> ConeRank:
    data = make_synthetic(n_queries=8, docs_per_query=(4, 10), n_features=6, seed=seed)
    return ConeRank(data, K=K)


# -- the model ---------------------------------------------------------------------------------
def test_pairs_follow_normalization_5_and_query_weights_3_4() -> None:
    data = make_synthetic(n_queries=5, docs_per_query=(3, 7), n_features=4, seed=3)
    pairs = cone_pairs(data, alpha=0.5, rho=2.0)
    X, y, ptr = data.X, data.y, data.query_ptr
    rows, weights = [], []
    counts = []
    for q in range(data.n_queries):
        block = []
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(ptr[q], ptr[q + 1]):
                if y[i] > y[j]:
                    d = X[i] - X[j]
                    block.append((d * 2.0 / (0.5 + np.linalg.norm(d)), y[i] - y[j]))
        if block:
            counts.append(len(block))
            rows += [b[0] for b in block]
            weights += [b[1] for b in block]
    n_q = np.repeat(counts, counts)
    expected = np.array(weights) / (len(counts) * n_q)
    order = np.lexsort(np.array(rows).T)
    got = np.lexsort(pairs.Z.T)
    np.testing.assert_allclose(pairs.Z[got], np.array(rows)[order], atol=1e-12)
    np.testing.assert_allclose(np.sort(pairs.weight), np.sort(expected), rtol=1e-12)
    assert np.linalg.norm(pairs.Z, axis=1).max() <= 2.0  # (6)
    # (18) at U = 0 is the weighted sum of ||z||^2
    assert pairs.constant == pytest.approx(float(expected @ (np.array(rows) ** 2).sum(axis=1)))


def test_normalization_rejects_bad_constants() -> None:
    with pytest.raises(ValueError, match="alpha and rho"):
        normalize_differences(np.ones((2, 2)), 0.0, 1.0)


def test_objective_matches_the_direct_sum() -> None:
    f = problem(4)
    U, W = f.random_start(1)
    direct = sum(a * np.sum((z - U @ w) ** 2)
                 for a, z, w in zip(f.pairs.weight, f.pairs.Z, W, strict=True))
    assert f.primal_value(f.join(U, W)) == pytest.approx(direct, rel=1e-12)


def test_bad_input_is_refused() -> None:
    f = problem(0)
    with pytest.raises(ValueError, match="lambda_l <= lambda_u"):
        ConeRank(f.data, lambda_l=2.0, lambda_u=1.0)
    with pytest.raises(ValueError, match="K must be an integer >= 1, got 0"):
        ConeRank(f.data, K=0)
    with pytest.raises(ValueError, match="U must be a finite matrix"):
        FoldingIn(f.data, np.ones((f.pairs.n_features + 1, 2)))
    with pytest.raises(ValueError, match="lambda_l <= lambda_u"):
        f.folding_in(np.ones((f.pairs.n_features, 3))).set_params(lambda_l=3.0)
    one_grade = RankingData.from_arrays(np.ones((4, 2)), np.zeros(4), qid=[1, 1, 2, 2])
    with pytest.raises(ValueError, match="no preference pairs"):
        ConeRank(one_grade)


def test_row_projection_equals_the_grouped_projection() -> None:
    rng = np.random.default_rng(0)
    V = rng.normal(size=(50, 4)) * rng.choice([1e-3, 1.0, 1e3], size=(50, 1))
    rows = SumBand(np.repeat(np.arange(50), 4), 0.5, 2.0)
    perm = rng.permutation(200)
    shuffled = SumBand(np.repeat(np.arange(50), 4)[perm], 0.5, 2.0)
    assert rows._rows and not shuffled._rows
    np.testing.assert_allclose(rows.project(V.ravel())[perm], shuffled.project(V.ravel()[perm]),
                               atol=1e-12 * 1e3)


# -- each block against its CVXPY optimum ------------------------------------------------------
@pytest.mark.parametrize("seed", sampled(SEEDS))
@pytest.mark.parametrize("band", [(1.0, 1.0), (0.5, 2.0)])
def test_folding_in_reaches_the_certified_optimum(seed: int, band: tuple[float, float]) -> None:
    f = problem(seed)
    U, W = f.random_start(seed)
    block = f.folding_in(U)
    block.set_params(lambda_l=band[0], lambda_u=band[1])
    ref = solve_reference(block)  # primal and dual agree, numpy evaluators agree
    for method in ("pg", "eg") if band == (1.0, 1.0) else ("pg",):
        res = fold_in(f.pairs, U, W, band=band, method=method, tol=1e-9, max_iter=20_000)
        assert rel(res.value, ref.p_star) <= 1e-6, method
        assert res.value - res.gap <= ref.p_star * (1 + 1e-9)  # a certified lower bound
        assert block.feasible_set.violation(res.X.ravel()) <= 1e-12
    res = fold_in(f.pairs, U, W, band=band, method="pg", tol=1e-9)
    assert res.converged and rel(res.value, ref.p_star) <= 1e-6
    # the certificate is the dual at the residual multipliers
    w = res.X.ravel()
    assert block.dual_value_at(w) == pytest.approx(res.value - res.gap, rel=1e-9)
    assert block.dual_value_at(w) <= ref.p_star * (1 + 1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_basis_update_reaches_the_certified_optimum(seed: int) -> None:
    f = problem(seed)
    U, W = f.random_start(seed)
    block = f.basis_update(W)
    ref = solve_reference(block)
    res = update_basis(block, U, tol=1e-9)
    assert res.converged
    assert rel(res.value, ref.p_star) <= 1e-6
    assert block.dual_value_at(res.X.ravel()) <= ref.p_star * (1 + 1e-9)
    assert np.linalg.norm(res.X, axis=0).max() <= block.c * (1 + 1e-12)


def test_the_papers_clip_and_normalize_step_stops_short_of_the_optimum() -> None:
    """Alg. 1 steps 1a-1c: at a fixed point the gradient is proportional to w on the
    support, which is not the KKT condition (constant on the support), so the step settles
    away from the block's optimum; the linearized EG step of Sect. 4.2 does converge."""
    f = problem(0)
    U, W = f.random_start(0)
    p_star = solve_reference(f.folding_in(U)).p_star
    sg = fold_in(f.pairs, U, W, method="sg-paper", tol=1e-12, max_iter=5000)
    assert signed_rel(sg.value, p_star) > 1e-2  # above the optimum
    eg = fold_in(f.pairs, U, W, method="eg-paper", tol=1e-12, max_iter=5000)
    assert rel(eg.value, p_star) <= 1e-6


# -- the paper's stochastic Alg. 1 (compiled steps against the steps as printed) ---------------
def printed_fold_in(Z: np.ndarray, U: np.ndarray, W: np.ndarray, phi: np.ndarray, variant: str,
                    mu: float, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
    """Alg. 1 steps 1a-1c (``"sg"``) or Sect. 4.2's linearized step (``"eg"``) in numpy, every
    step on every pair, until no coefficient moves by more than ``tol``."""
    K = W.shape[1]
    M, B = U.T @ U, Z @ U
    for k in range(1, max_iter + 1):
        g = 2.0 * phi[:, None] * (W @ M - B)
        if variant == "sg":
            V = np.maximum(W - mu * g, 0.0)
            total = V.sum(axis=1, keepdims=True)
            new = np.where(total > 0, V / np.where(total > 0, total, 1.0), 1.0 / K)
        else:
            new = np.maximum(W * (1.0 - mu * (g - np.einsum("ij,ij->i", W, g)[:, None])), 0.0)
            new /= new.sum(axis=1, keepdims=True)
        moved = np.abs(new - W).max()
        W = new
        if moved <= tol:
            return W, k
    return W, max_iter


def printed_stochastic(f: ConeRank, variant: str, mu: float, passes: int,
                       seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sect. 4.1's passes as printed: per query (in the solver's order) the folding-in, then
    for k = 1..K the gradient step on u_k through the residual Z_q - W_q U^T and the ball."""
    rng = np.random.default_rng(seed)
    U, W = f.random_start(seed)
    ball, p = L2Ball(1.0, scale=f.c), f.pairs
    for _ in range(passes):
        for q in rng.permutation(p.n_queries):
            rows = slice(int(p.pair_ptr[q]), int(p.pair_ptr[q + 1]))
            Zq, phi = p.Z[rows], p.phi[rows]
            W[rows] = printed_fold_in(Zq, U, W[rows], phi, variant, mu, 1e-6, 200)[0]
            Wq = W[rows]
            for k in range(f.K):
                residual = Zq - Wq @ U.T
                grad = -(2.0 / Zq.shape[0]) * residual.T @ (phi * Wq[:, k])
                U[:, k] = ball.project(U[:, k] - mu * grad)
    return U, W


@pytest.mark.parametrize("method", ["sg-paper", "eg-paper"])
@pytest.mark.parametrize("seed", SEEDS)
def test_compiled_paper_folding_in_makes_the_printed_steps(method: str, seed: int) -> None:
    f = problem(seed, K=4)
    U, W = f.random_start(seed)
    rows = slice(int(f.pairs.pair_ptr[1]), int(f.pairs.pair_ptr[2]))
    for tol, max_iter in ((1e-6, 200), (0.0, 37)):
        for mu in (0.001, 0.05):
            res = fold_in(f.pairs, U, W[rows], method=method, mu=mu, tol=tol, max_iter=max_iter,
                          rows=rows)
            ref, n = printed_fold_in(f.pairs.Z[rows], U, W[rows], f.pairs.phi[rows], method[:2],
                                     mu, tol, max_iter)
            assert res.n_iter == n
            np.testing.assert_allclose(res.X, ref, rtol=0, atol=1e-14)


def test_compiled_sg_step_resets_a_clipped_row_to_uniform() -> None:
    B = np.array([[-1e6, -1e6, -1e6], [0.0, 0.0, 0.0]])  # row 0: every coefficient clipped
    WT, n = conerank_kernels.fold_in_paper(np.ascontiguousarray(B.T),
                                           np.full((3, 2), 1.0 / 3.0), np.eye(3) * 1e6,
                                           np.ones(2), 1.0, False, 0.0, 1)
    assert n == 1
    np.testing.assert_array_equal(WT[:, 0], np.full(3, 1.0 / 3.0))


def test_compiled_eg_step_sets_a_coefficient_below_the_smallest_normal_to_zero() -> None:
    """At M = 0, b = (-0.99, 0), phi = 1/2 and mu = 1 the step multiplies the coefficient
    1e-307 by about 0.01: numpy's step keeps the subnormal 1e-309, the kernel sets it to 0
    (so that no later step computes with a subnormal); the other coefficient stays 1."""
    W0, B, phi = np.array([[1e-307, 1.0]]), np.array([[-0.99, 0.0]]), np.array([0.5])
    g = 2.0 * phi[:, None] * (0.0 - B)
    v = W0 * (1.0 - (g - np.einsum("ij,ij->i", W0, g)[:, None]))
    assert 0.0 < (v / v.sum())[0, 0] < conerank_kernels.SMALLEST_NORMAL
    WT, _ = conerank_kernels.fold_in_paper(np.ascontiguousarray(B.T), W0.T.copy(),
                                           np.zeros((2, 2)), phi, 1.0, True, 0.0, 1)
    assert WT[0, 0] == 0.0 and WT[1, 0] == 1.0


@pytest.mark.parametrize("variant", ["sg", "eg"])
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_stochastic_solver_makes_the_printed_passes(variant: str, seed: int) -> None:
    """At the paper's steps (at 10x EG's, the printed steps themselves are chaotic: a
    relative perturbation of 1e-15 of U changes their coefficients by 0.2 in 200 steps)."""
    f = problem(seed, K=3)
    mu = {"sg": 0.001, "eg": 0.005}[variant]
    run = solve_stochastic(f, variant=variant, mu=mu, max_iter=20, seed=seed)
    U, W = f.split(run.w)
    U_ref, W_ref = printed_stochastic(f, variant, mu, 20, seed)
    assert np.abs(U_ref - f.random_start(seed)[0]).max() > 1e-2  # the basis moved
    np.testing.assert_allclose(U, U_ref, rtol=0, atol=1e-12 * np.abs(U_ref).max())
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-12)


def test_compiled_basis_step_stops_at_a_vector_that_is_not_finite() -> None:
    U, A, S = np.ones((2, 2)), np.array([[np.inf, 1.0], [0.0, 1.0]]), np.eye(2)
    assert not conerank_kernels.basis_steps(U, A, S, 1.0, 1.0, 10.0)
    assert not np.isfinite(U[0, 0]) and np.all(U[:, 1] == 1.0)  # the second vector untouched
    with pytest.raises(ValueError, match="finite"):
        solve_stochastic(problem(0), max_iter=1, seed=0, mu=1e308)


# -- the alternation ---------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["sg", "eg"])
@pytest.mark.parametrize("seed", SEEDS)
def test_alternation_never_increases_the_objective(variant: str, seed: int) -> None:
    f = problem(seed)
    run = solve_alternation(f, variant=variant, seed=seed, max_iter=60)
    values = np.asarray(run.trace.primal)
    assert values.size == len(run.trace)
    assert np.all(np.diff(values) <= 1e-12 * values[:-1])
    assert values[-1] < values[0]
    U, W = f.split(run.w)
    assert f.feasibility(U, W) <= 1e-12
    assert f.primal_value(run.w) == pytest.approx(values[-1], rel=1e-12)
    half = np.asarray(run.trace.extra["half"])[1:]
    np.testing.assert_array_equal(half, np.arange(half.size) % 2)  # folding-in first


def test_exact_cvxpy_alternation_never_increases() -> None:
    f = problem(5)
    values, U, W = reference_alternation(f, f.random_start(5), max_iter=8)
    assert np.all(np.diff(values) <= 1e-9 * np.asarray(values[:-1]))
    assert objective(f.pairs, U, W) == pytest.approx(values[-1], rel=1e-12)


@pytest.mark.slow  # every verify instance
@pytest.mark.parametrize("instance", QUICK + DEFAULT, ids=lambda i: i.name)
def test_fast_alternation_matches_the_cvxpy_alternation_on_the_verify_instances(instance) -> None:
    """Same start, same number of outer iterations: the certified fast blocks (SG) follow
    the CVXPY alternation; the EG alternation ends within 1% of it."""
    f = ConeRank(instance_view(instance.data()), K=3)
    start = f.random_start(0)
    n_outer = 3
    values, _, _ = reference_alternation(f, start, max_iter=n_outer, tol=0.0)
    sg = solve_alternation(f, variant="sg", start=start, max_iter=n_outer, tol=0.0)
    eg = solve_alternation(f, variant="eg", start=start, max_iter=n_outer, tol=0.0)
    assert len(sg.trace.primal) == len(values) == 2 * n_outer + 1
    np.testing.assert_allclose(sg.trace.primal, values, rtol=1e-6)
    assert rel(eg.objective, values[-1]) <= 1e-2


def test_blocks_are_cached_by_the_content_of_their_fixed_block() -> None:
    f = problem(0)
    U, W = f.random_start(0)
    assert f.folding_in(U).cache_key() == f.folding_in(U.copy()).cache_key()
    assert f.folding_in(U).cache_key() != f.folding_in(U + 1e-9).cache_key()
    assert f.basis_update(W).cache_key() == f.basis_update(W.copy()).cache_key()
    assert f.basis_update(W).cache_key() != f.basis_update(W[::-1]).cache_key()
    first = solve_reference(f.folding_in(U))
    assert solve_reference(f.folding_in(U.copy())) is first  # the cache, by content


def test_profile_objective_of_9_is_the_certified_folding_in_value() -> None:
    f = ConeRank(problem(2).data, K=3, lambda_l=0.5, lambda_u=2.0)
    U, _ = f.random_start(2)
    res = profile_objective(f, U)
    p_star = solve_reference(f.folding_in(U)).p_star
    assert res.converged and rel(res.value, p_star) <= 1e-8
    np.testing.assert_allclose(np.linalg.norm(U, axis=0), f.c)  # (9)'s sphere
