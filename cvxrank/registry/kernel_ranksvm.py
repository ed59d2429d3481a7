"""Kernel RankSVM's entry: PRSVM+ on the kernel PCA map of an RBF kernel (C&K Sect. 6.3)."""

from __future__ import annotations

from cvxrank import tolerances
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.scales import check_magnitude
from cvxrank.formulations.base import Formulation
from cvxrank.registry import Entry, register
from cvxrank.registry.rates import NEWTON_RATE
from cvxrank.solvers.kernel_newton import solve_kernel_newton


def _kernel_ranksvm(data: RankingData, params: dict) -> Formulation:
    """The RBF-kernel squared-hinge RankSVM (params: C, gamma = 1/d by default)."""
    from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
    from cvxrank.numerics.kernel import gram_matrix

    check_magnitude(data)  # before the Gram matrix, whose distances would overflow
    gamma = float(params.get("gamma", 1.0 / data.n_features))
    K = gram_matrix(data.X, kernel="rbf", gamma=gamma)
    return KernelRankSVM(data, K, loss="squared_hinge", C=float(params.get("C", 1.0)))


register(Entry(
    "kernel-ranksvm-squared_hinge", "kernel-ranksvm", solve_kernel_newton, NEWTON_RATE,
    make_formulation=_kernel_ranksvm, tol=tolerances.NEWTON_GAP,
    description="PRSVM+ on the kernel PCA map of an RBF kernel (C&K Sect. 6.3)",
))
