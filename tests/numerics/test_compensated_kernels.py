"""The compensated product X'beta (Dot2) and the gradient certificate built on it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.numerics import rounding
from cvxrank.numerics.compensated_kernels import dot2_columns, dot2_rows


def exact_products(X: np.ndarray, beta: np.ndarray) -> list[Fraction]:
    """X[:, j] @ beta in exact rational arithmetic."""
    b = [Fraction(float(v)) for v in beta]
    return [sum((Fraction(float(x)) * bi for x, bi in zip(X[:, j], b, strict=True)),
                Fraction(0)) for j in range(X.shape[1])]


@pytest.mark.parametrize("seed", range(4))
def test_dot2_is_within_its_bound_of_the_exact_product_under_cancellation(seed):
    rng = np.random.default_rng(seed)
    n, d = 400, 5
    X = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-8, 9, size=(n, d))
    beta = rng.normal(size=n) * 10.0 ** rng.integers(-6, 7, size=n)
    beta[rng.random(n) < 0.1] = 0.0
    # columns 0 and 1 sum to nearly 0: huge terms that cancel (condition numbers ~1e16+)
    X[n // 2:, 0] = -X[:n // 2, 0] * beta[:n // 2] / np.where(beta[n // 2:] == 0, 1.0,
                                                                beta[n // 2:])
    X[:, 1] = X[:, 0] * (1.0 + 1e-12)
    hi, lo, error, size = dot2_columns(X, beta)
    exact = exact_products(X, beta)
    for j in range(d):
        assert abs(Fraction(float(hi[j])) + Fraction(float(lo[j])) - exact[j]) <= \
            Fraction(float(error[j]))
        assert hi[j] == hi[j] + lo[j]  # normalized
    terms = np.abs(X * beta[:, None]).sum(axis=0)
    np.testing.assert_allclose(size, terms, rtol=1e-12)
    # the bound is gamma_n^2 of the terms, far below float64's gamma_n
    assert np.all(error <= 1e-25 * terms)
    assert np.all(error < rounding.gamma(n) * terms * 1e-10)


def test_dot2_takes_any_memory_order_and_leaves_its_inputs():
    rng = np.random.default_rng(7)
    X = np.asfortranarray(rng.normal(size=(50, 3)))
    beta = rng.normal(size=50)
    before = X.copy(), beta.copy()
    hi, lo, _, _ = dot2_columns(X, beta)
    np.testing.assert_array_equal(X, before[0])
    np.testing.assert_array_equal(beta, before[1])
    # the double-word pair rounds to the correctly rounded product (a well-conditioned one)
    assert [float(h) for h in hi] == [float(x) for x in exact_products(X, beta)]


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
@pytest.mark.parametrize("seed", range(3))
def test_compensated_gradient_agrees_with_the_double_word_one_within_both_bounds(loss, seed):
    data = make_synthetic(n_queries=12, docs_per_query=(20, 40), n_features=6, n_grades=4,
                          seed=seed)
    f = RankSVM(data, C=3.0, loss=loss)
    w = np.random.default_rng(seed).normal(size=data.n_features)
    g_c, e_c = f.compensated_gradient(w)
    g_a, e_a = f.accurate_gradient(w)
    assert np.all(np.abs(g_c - g_a) <= e_c + e_a)
    # and with the float64 gradient within float64's own bound
    ev = f.evaluate_loss(w)
    g64 = w + f.C * (data.X.T @ ev.grad)
    assert np.all(np.abs(g64 - g_c) <= e_c + 1e-6 * (1.0 + np.abs(g_c)))


def test_compensated_gradient_is_none_on_sparse_features():
    data = make_synthetic(n_queries=3, docs_per_query=(4, 6), n_features=3, n_grades=3, seed=0)
    sparse = data.with_features(sp.csr_matrix(data.X))
    assert RankSVM(sparse, C=1.0).compensated_gradient(np.zeros(3)) is None


def exact_score_gradient(f: RankSVM, w: np.ndarray) -> list[Fraction]:
    """dL/ds of the squared-hinge (or Huber) pair loss at s = Xw, over the explicit pairs, in
    exact rational arithmetic (the float pair weights and margins taken as exact)."""
    X = [[Fraction(float(x)) for x in row] for row in f.data.X]
    wf = [Fraction(float(v)) for v in w]
    s = [sum((x * v for x, v in zip(row, wf, strict=True)), Fraction(0)) for row in X]
    grad = [Fraction(0)] * len(s)
    width = Fraction(float(f.ramp.width)) if f.ramp.capped else None
    for (i, j), c, m in zip(zip(f.pairs.upper, f.pairs.lower, strict=True),
                            np.asarray(f.pair_weight), np.asarray(f.margin), strict=True):
        r = Fraction(float(m)) - (s[i] - s[j])
        if r <= 0:
            continue
        slope = 2 * (min(r, width) if width is not None else r) * Fraction(float(c))
        grad[i] -= slope
        grad[j] += slope
    return grad


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
@pytest.mark.parametrize("ties", [False, True])
def test_double_word_block_gradient_is_within_its_bound_of_the_exact_one(loss, ties):
    data = make_synthetic(n_queries=3, docs_per_query=(6, 10), n_features=3, n_grades=4,
                          seed=5)
    if ties:  # documents with equal features: equal scores, pairs at their kink
        X = data.X.copy()
        X[1::3] = X[0::3][:X[1::3].shape[0]]
        data = data.with_features(X)
    f = RankSVM(data, C=1.0, loss=loss)
    assert f.structured
    w = np.array([0.7, -1.3, 0.25]) if not ties else np.array([1.0, 1.0, 1.0])
    s_hi, s_lo, s_error = dot2_rows(f.X, w)
    hi, lo, error = f.loss_engine("sorted").accurate_gradient(s_hi, s_lo, s_error)
    exact = exact_score_gradient(f, w)
    ev = f.evaluate_loss(w)
    for k, value in enumerate(exact):
        assert abs(Fraction(float(hi[k])) + Fraction(float(lo[k])) - value) <= \
            Fraction(float(error[k]))
        assert float(error[k]) <= 1e-25 * (1.0 + abs(float(value)))
    # the same vector as the float64 passes, to their rounding
    np.testing.assert_allclose(hi, ev.grad, rtol=1e-10, atol=1e-12)


def test_the_default_fit_certifies_its_model_radius_without_the_pairs(monkeypatch):
    """C = 100 on 10^4 documents: float64's bound cannot close the model radius; the
    compensated gradient does, and the O(pd) double-word gradient over the pairs is never
    called."""
    from cvxrank.fitting import fit_formulation

    def refuse(self, w):
        raise AssertionError("the explicit-pair gradient was called")

    monkeypatch.setattr(RankSVM, "accurate_gradient", refuse)
    data = make_synthetic(n_queries=100, docs_per_query=(80, 120), n_features=10, n_grades=5,
                          seed=0)
    f = RankSVM(data, C=100.0, loss="squared_hinge")
    run = fit_formulation(f, "prsvm+")
    assert run.converged
    assert run.w_radius <= 1e-4 * np.linalg.norm(run.w)
