"""The QP over a product of capped simplices (the n-slack master's dual) against CVXPY."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.solvers.simplex_product_qp import master_gap, simplex_product_qp, simplex_qp


def cvxpy_value(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int,
                total: float) -> float:
    """min 1/2 ||G' lam||^2 - c' lam over the same set, by Clarabel."""
    import cvxpy as cp

    lam = cp.Variable(c.size, nonneg=True)
    E = np.zeros((n_blocks, c.size))
    E[block, np.arange(c.size)] = 1.0
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(G.T @ lam) - c @ lam),
                         [E @ lam <= total])
    problem.solve(solver="CLARABEL")
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


def value(G: np.ndarray, c: np.ndarray, lam: np.ndarray) -> float:
    w = G.T @ lam
    return 0.5 * float(w @ w) - float(c @ lam)


def check(G: np.ndarray, c: np.ndarray, block: np.ndarray, n_blocks: int, total: float,
          lam0: np.ndarray | None = None) -> np.ndarray:
    """Feasible, and optimal to 1e-6 (relative) against CVXPY; returns lambda."""
    lam, _ = simplex_product_qp(G, c, block, n_blocks, total, lam0)
    assert lam.shape == c.shape and lam.min() >= 0
    sums = np.bincount(block, weights=lam, minlength=n_blocks)
    assert sums.max() <= total * (1 + 1e-12)
    ref = cvxpy_value(G, c, block, n_blocks, total)
    assert value(G, c, lam) <= ref + 1e-6 * max(abs(ref), 1.0)
    primal, dual = master_gap(G, c, block, n_blocks, total, lam)
    assert primal - dual <= 1e-6 * max(abs(primal), 1.0)  # the master's gap closes too
    return lam


def random_problem(seed: int, m: int, d: int, n_blocks: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(m, d)) * rng.uniform(0.1, 3.0, size=(m, 1))
    c = rng.uniform(-0.5, 2.0, size=m)
    block = np.r_[np.arange(n_blocks), rng.integers(0, n_blocks, size=m - n_blocks)]
    return G, c, rng.permutation(block)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("m", "d", "n_blocks", "total"), [
    (30, 5, 4, 1.0),      # more cuts than features: Q = G G' of rank 5
    (200, 8, 10, 0.05),   # small caps: most blocks at their cap
    (120, 46, 21, 10.0),  # LETOR-like: d = 46, large caps
    (12, 20, 3, 2.0),     # fewer cuts than features: Q of full rank
])
def test_matches_cvxpy_on_random_low_rank_problems(seed: int, m: int, d: int,
                                                   n_blocks: int, total: float) -> None:
    G, c, block = random_problem(seed, m, d, n_blocks)
    lam = check(G, c, block, n_blocks, total)
    # warm-started from its own optimum, or from a perturbed point, it ends at the optimum
    rng = np.random.default_rng(seed)
    again = check(G, c, block, n_blocks, total, lam)
    assert value(G, c, again) <= value(G, c, lam) + 1e-9 * max(abs(value(G, c, lam)), 1.0)
    check(G, c, block, n_blocks, total, lam * rng.uniform(0.0, 1.0, size=m))


@pytest.mark.parametrize("seed", range(3))
def test_collinear_and_repeated_cuts(seed: int) -> None:
    G, c, block = random_problem(seed, 40, 4, 5)
    G = np.vstack([G, 2.0 * G[:10], G[:10]])  # collinear and repeated rows
    c = np.r_[c, 2.0 * c[:10] - 0.1, c[:10]]
    block = np.r_[block, block[:10], block[:10]]
    check(G, c, block, 5, 1.0)


def test_a_block_with_one_cut_and_a_block_without_cuts() -> None:
    G, c, block = random_problem(0, 30, 6, 5)
    block = np.where(block == 4, 3, block)
    block[0] = 4  # block 4 holds one cut, block 5 none
    lam = check(G, c, block, 6, 0.5)
    assert lam.size == 30


@pytest.mark.parametrize("offsets", ["zero", "positive", "negative"])
def test_all_zero_cuts(offsets: str) -> None:
    """g = 0: each block's weight on its largest offset if positive, else 0 (w = 0)."""
    m, n_blocks, total = 9, 3, 0.7
    G = np.zeros((m, 4))
    c = {"zero": np.zeros(m), "positive": np.linspace(0.1, 0.9, m),
         "negative": -np.linspace(0.1, 0.9, m)}[offsets]
    block = np.arange(m) % n_blocks
    lam = check(G, c, block, n_blocks, total)
    best = np.full(n_blocks, -np.inf)
    np.maximum.at(best, block, c)
    expected = total * float(np.maximum(best, 0.0).sum())
    assert float(c @ lam) == pytest.approx(expected, abs=1e-12)


def test_one_block_is_the_capped_simplex_of_simplex_qp() -> None:
    G, c, _ = random_problem(3, 25, 5, 1)
    lam, _ = simplex_product_qp(G, c, np.zeros(25, dtype=np.int64), 1, 2.0)
    Q = np.zeros((26, 26))
    Q[:25, :25] = G @ G.T
    x, _ = simplex_qp(Q, np.r_[c, 0.0], 2.0)  # the zero cut as the cap's slack
    assert value(G, c, lam) == pytest.approx(value(G, c, x[:25]), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_tied_violations_from_zero_do_not_cycle(seed: int) -> None:
    # DORM's first master: one cut per query, equal offsets, more cuts than features, warm
    # start 0. Every cut violates by the same amount; entering them all at once gives a
    # singular joint solve, and after it the worst one alone must enter (a regression: the
    # tie let them all in again, until the iteration limit, with lambda = 0 returned)
    rng = np.random.default_rng(seed)
    n_blocks, d = 11, 10
    G = rng.normal(size=(n_blocks, d))
    c = np.full(n_blocks, 0.8)
    block = np.arange(n_blocks)
    lam = check(G, c, block, n_blocks, 1.15, np.zeros(n_blocks))
    assert lam.sum() > 0
