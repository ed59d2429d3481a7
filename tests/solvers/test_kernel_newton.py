"""Kernel RankSVM by Newton on the kernel PCA map (Chapelle & Keerthi 2010, Sect. 6.3).

The reference is the CVXPY Gram-matrix formulation (primal in beta and dual in alpha, both
solved and checked against each other), which never factorizes K.
"""

from __future__ import annotations

import numpy as np
import pytest
from toolbox import certified, install_clock, primal_gap, signed_rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.core import trace as trace_module
from cvxrank.data import PairSet, build_pairs, make_synthetic
from cvxrank.data.instances import QUICK
from cvxrank.errors import CapabilityError
from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.numerics.kernel import KernelPCAMap, gram_matrix
from cvxrank.registry import entries
from cvxrank.solvers import kernel_newton
from cvxrank.solvers.kernel_newton import linear_equivalent, solve_kernel_newton
from cvxrank.tolerances import NEWTON_GAP, reference_agreement
from cvxrank.verification.sweep import run_pair

MAX_NEWTON_ITER = 15


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=8, docs_per_query=(12, 20), n_features=5, n_grades=3,
                          seed=31)


@pytest.fixture(scope="module")
def rbf(data):
    p = build_pairs(data).n_pairs
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf", gamma=0.3), C=10.0 / p,
                      loss="squared_hinge")
    return certified(f)


def test_rbf_reaches_reference(data, rbf) -> None:
    f, ref = rbf
    assert 100 <= data.n_documents <= 200
    assert ref.rel_gap <= reference_agreement("CLARABEL")
    result = solve_kernel_newton(f)
    assert result.converged, result.message
    assert result.n_iter <= MAX_NEWTON_ITER
    assert result.formulation == f.name and result.solver == "kernel-newton"
    assert result.info["engine"] == "sorted"
    assert result.w.shape == (data.n_documents,)  # beta, the expansion coefficients
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    assert -NEWTON_GAP <= signed_rel(f.primal_value(result.w), ref.d_star) <= NEWTON_GAP
    # the trace is the linear run's: its last primal value is the kernel objective at beta
    assert result.trace.primal[-1] == pytest.approx(f.primal_value(result.w), rel=1e-9)
    assert result.info["rank"] + result.info["dropped"] == data.n_documents
    assert all(np.diff(result.trace.time) >= 0)


def test_the_kernel_set_up_is_charged_to_the_run(rbf, monkeypatch) -> None:
    """The eigendecomposition behind the linear equivalent is set-up: on a clock where it
    takes one second, every recorded time and the set-up time include that second."""
    f, _ = rbf
    clock = install_clock(monkeypatch, kernel_newton, trace_module)
    equivalent = kernel_newton.linear_equivalent

    def slow_equivalent(formulation):
        clock.advance(1.0)
        return equivalent(formulation)

    monkeypatch.setattr(kernel_newton, "linear_equivalent", slow_equivalent)
    result = solve_kernel_newton(f)
    assert result.converged
    assert 1.0 <= result.setup_time < 1.001 and result.trace.time[0] >= 1.0
    assert result.time - result.setup_time < 0.001  # the Newton steps take no clock time


def test_linear_equivalent_has_the_kernel_geometry(rbf) -> None:
    f, _ = rbf
    linear, kpca = linear_equivalent(f)
    Z = linear.X
    assert np.allclose(Z @ Z.T, f.K, atol=1e-10)  # psi(x_i) . psi(x_j) = k(x_i, x_j)
    assert linear.structured and linear.C == f.C
    w = np.random.default_rng(0).normal(size=Z.shape[1])
    assert f.primal_value(kpca.coefficients(w)) == pytest.approx(linear.primal_value(w),
                                                                 rel=1e-10)


def test_linear_kernel_equals_linear_ranksvm(data) -> None:
    C = 10.0 / build_pairs(data).n_pairs
    K = data.X @ data.X.T  # rank 5 < n: singular, most directions dropped
    f = KernelRankSVM(data, K, C=C, loss="squared_hinge")
    result = solve_kernel_newton(f)
    assert result.info["rank"] == data.n_features
    linear = RankSVM(data, C=C, loss="squared_hinge")
    ref = solve_reference(linear)
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    # w = X^T beta is the (unique) linear optimum: same training scores
    w = data.X.T @ result.w
    assert np.allclose(f.scores(result.w), data.X @ ref.w, rtol=0, atol=1e-4)
    assert -NEWTON_GAP <= primal_gap(linear, w, ref) <= NEWTON_GAP


def test_explicit_pair_weights_use_the_pair_engine(data) -> None:
    p = build_pairs(data).n_pairs
    rng = np.random.default_rng(32)
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf", gamma=0.3), C=10.0 / p,
                      loss="squared_hinge", pair_weight=rng.uniform(0.3, 3.0, p),
                      margin=rng.uniform(0.0, 2.0, p))
    ref = solve_reference(f)
    result = solve_kernel_newton(f)
    assert result.info["engine"] == "pairs" and result.solver == "kernel-newton"
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP


def test_hinge_kernel_is_refused(data) -> None:
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf", gamma=0.3), loss="hinge")
    with pytest.raises(CapabilityError, match="it needs pairwise_newton .a differentiable"):
        solve_kernel_newton(f)


def test_non_psd_kernel_is_rejected(data) -> None:
    n = data.n_documents
    rng = np.random.default_rng(33)
    B = rng.normal(size=(n, n))
    indefinite = B + B.T  # symmetric, eigenvalues of both signs
    assert np.linalg.eigvalsh(indefinite)[0] < -1.0
    for K in (indefinite, gram_matrix(data.X, kernel="rbf") - 2.0 * np.eye(n)):
        with pytest.raises(ValueError, match="not positive semidefinite"):
            KernelRankSVM(data, K, loss="squared_hinge")
        with pytest.raises(ValueError, match="not positive semidefinite"):
            KernelPCAMap("precomputed").fit(K)
    with pytest.raises(ValueError, match="not symmetric"):
        KernelRankSVM(data, np.triu(np.ones((n, n))), loss="squared_hinge")


@pytest.mark.parametrize("entry", entries("kernel"), ids=lambda e: e.name)
def test_registry_kernel_entries_pass_quick_instance(entry) -> None:
    outcome = run_pair(entry, QUICK[0])
    assert outcome.passed, outcome.summary()
    assert abs(outcome.validation.rel_gap) <= NEWTON_GAP


def test_given_pair_set_is_respected(data) -> None:
    P = build_pairs(data)
    keep = np.arange(P.n_pairs) % 2 == 0
    half = PairSet(P.upper[keep], P.lower[keep], P.query[keep], P.delta[keep], P.n_documents,
                   np.bincount(P.query[keep], minlength=data.n_queries))
    f = KernelRankSVM(data, gram_matrix(data.X, kernel="rbf", gamma=0.3),
                      C=10.0 / half.n_pairs, loss="squared_hinge", pairs=half)
    ref = solve_reference(f)
    result = solve_kernel_newton(f)
    assert primal_gap(f, result.w, ref) <= NEWTON_GAP
