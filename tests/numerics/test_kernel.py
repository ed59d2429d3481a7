"""Kernel RankSVM: the Gram-matrix CVXPY formulation and the kernel PCA map (C&K Sect. 6.3)."""

from __future__ import annotations

import numpy as np
import pytest
from toolbox import rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.core.capabilities import missing_capabilities
from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.methods import PAIR_LOSSES
from cvxrank.numerics.kernel import KernelPCAMap, gram_matrix
from cvxrank.tolerances import NEWTON_GAP, reference_agreement

LOSSES = PAIR_LOSSES


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=5, docs_per_query=(8, 12), n_features=4, n_grades=3, seed=7)


@pytest.mark.parametrize("loss", LOSSES)
def test_linear_kernel_is_linear_ranksvm(loss) -> None:
    # more features than documents: X X^T is non-singular, so beta is unique
    data = make_synthetic(n_queries=4, docs_per_query=8, n_features=40, seed=8)
    kernel = solve_reference(KernelRankSVM(data, data.X @ data.X.T, C=0.5, loss=loss))
    linear = solve_reference(RankSVM(data, C=0.5, loss=loss))
    assert rel(kernel.p_star, linear.p_star) <= 1e-7
    # w = X^T beta recovers the linear optimum
    assert rel(linear_value(data, loss, data.X.T @ kernel.w), linear.p_star) <= 1e-6


def linear_value(data, loss, w) -> float:
    return RankSVM(data, C=0.5, loss=loss).primal_value(w)


@pytest.mark.parametrize("solver", ["CLARABEL", "ECOS"])
@pytest.mark.parametrize("loss", LOSSES)
def test_rbf_primal_and_dual_agree(data, loss, solver) -> None:
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf", gamma=0.5), C=2.0, loss=loss)
    ref = solve_reference(f, solver)
    assert ref.rel_gap <= reference_agreement(solver)
    assert rel(f.primal_value(ref.w), ref.p_star) <= 1e-6
    assert rel(f.primal_value(f.primal_from_dual(ref.alpha)), ref.p_star) <= 1e-6
    assert f.dual_infeasibility(ref.alpha) <= 1e-7


@pytest.mark.parametrize("loss", LOSSES)
def test_cvxpy_expressions_match_numpy_evaluators(data, loss) -> None:
    rng = np.random.default_rng(0)
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="poly", degree=2), C=0.3, loss=loss)
    beta = rng.normal(size=data.n_documents)
    f.w_variable.value = beta
    f.primal().variables()  # built
    s_var = [v for v in f.primal().variables() if v.name() == "s"][0]
    s_var.value = f.scores(beta)
    assert f.primal().objective.value == pytest.approx(f.primal_value(beta), rel=1e-10)
    alpha = rng.uniform(0, 0.3 * 0.9, size=f.n_dual)
    f.alpha_variable.value = alpha
    u_var = [v for v in f.dual().variables() if v.name() == "u"][0]
    u_var.value = f.primal_from_dual(alpha)
    assert f.dual().objective.value == pytest.approx(f.dual_value(alpha), rel=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_pairs_weights_and_dual_set_are_ranksvms(data, loss) -> None:
    rng = np.random.default_rng(3)
    linear = RankSVM(data, C=0.7, loss=loss)
    c, m = rng.uniform(0.5, 2.0, linear.n_dual), rng.uniform(0.5, 1.5, linear.n_dual)
    for kwargs in ({}, {"pair_weight": c, "margin": m}):
        f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf"), C=0.7, loss=loss, **kwargs)
        g = RankSVM(data, C=0.7, loss=loss, **kwargs)
        assert f.n_dual == g.n_dual and f.capabilities == {"kernel_matrix"}
        assert missing_capabilities(f, ["kernel_matrix"]) == []
        np.testing.assert_array_equal(f.pair_weight, g.pair_weight)
        np.testing.assert_array_equal(f.margin, g.margin)
        for C in (0.7, 3.0):
            f.set_params(C=C)
            g.set_params(C=C)
            alpha = rng.normal(0.0, 3.0 * C, f.n_dual)
            np.testing.assert_array_equal(f.project_dual(alpha), g.project_dual(alpha))
            assert f.dual_infeasibility(alpha) == g.dual_infeasibility(alpha) > 0


def test_kernel_pca_map_reproduces_the_kernel(data) -> None:
    K = gram_matrix(data.X, kernel="rbf", gamma=0.5)
    psi = KernelPCAMap("rbf", gamma=0.5).fit(data.X)
    Z = psi.training_features()
    np.testing.assert_allclose(Z @ Z.T, K, atol=1e-10)
    np.testing.assert_allclose(psi.transform(data.X), Z, atol=1e-8)
    # f(x) = psi(x) . w equals the expansion sum_i beta_i k(x, x_i) with beta = A w
    rng = np.random.default_rng(1)
    w = rng.normal(size=Z.shape[1])
    X_new = rng.normal(size=(6, data.n_features))
    np.testing.assert_allclose(
        psi.transform(X_new) @ w,
        gram_matrix(X_new, data.X, kernel="rbf", gamma=0.5) @ psi.coefficients(w),
        atol=1e-8,
    )
    precomputed = KernelPCAMap("precomputed").fit(K)
    np.testing.assert_allclose(np.abs(precomputed.training_features()), np.abs(Z), atol=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
def test_kernel_pca_route_solves_the_kernel_problem(data, loss) -> None:
    """Sect. 6.3: the linear problem on psi(X) has the kernel problem's optimum."""
    K = gram_matrix(data.X, kernel="rbf", gamma=0.5)
    kernel_ref = solve_reference(KernelRankSVM(data, K, C=1.0, loss=loss))
    psi = KernelPCAMap("precomputed").fit(K)
    linear = RankSVM(data.with_features(psi.training_features()), C=1.0, loss=loss)
    linear_ref = solve_reference(linear)
    assert rel(linear_ref.p_star, kernel_ref.p_star) <= NEWTON_GAP
    beta = psi.coefficients(linear_ref.w)
    assert rel(KernelRankSVM(data, K, C=1.0, loss=loss).primal_value(beta),
               kernel_ref.p_star) <= 1e-7


def test_rank_deficient_kernel_drops_null_directions(data) -> None:
    K = data.X @ data.X.T  # rank d = 4 < n
    psi = KernelPCAMap("precomputed").fit(K)
    assert psi.basis_.shape == (data.n_documents, data.n_features)
    assert psi.n_dropped_ == data.n_documents - data.n_features


def test_bad_kernels_are_refused(data) -> None:
    n = data.n_documents
    rng = np.random.default_rng(2)
    S = rng.normal(size=(n, n))
    indefinite = S + S.T
    with pytest.raises(ValueError, match="not positive semidefinite"):
        KernelPCAMap("precomputed").fit(indefinite)
    with pytest.raises(ValueError, match="not positive semidefinite"):
        KernelRankSVM(data, indefinite)
    with pytest.raises(ValueError, match="not symmetric"):
        KernelRankSVM(data, S @ S.T + np.triu(np.ones((n, n)), 1))
    with pytest.raises(ValueError, match="documents"):
        KernelRankSVM(data, np.eye(n + 1))
    with pytest.raises(ValueError, match="non-finite"):
        KernelPCAMap("precomputed").fit(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match=r"C must be in \[1e-12, 1e\+12\]"):
        KernelRankSVM(data, np.eye(n), C=0.0)
