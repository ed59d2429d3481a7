r"""Kernel RankSVM in the primal through the kernel PCA map (Chapelle & Keerthi 2010, Sect. 6.3).

The kernel problem (:class:`~cvxrank.formulations.kernel_ranksvm.KernelRankSVM`) is solved by
the linear solvers on the features :math:`\psi(x_i) = U_r \Lambda_r^{1/2}` of the kernel PCA
map (:class:`~cvxrank.numerics.kernel.KernelPCAMap`): since :math:`\psi(x_i)^\top \psi(x_j) =
k(x_i, x_j)`, the linear RankSVM on :math:`\psi(X)` has the same optimal value, and its
weights give the expansion coefficients :math:`\beta = A w` of
:math:`f(x) = \sum_i \beta_i k(x, x_i)` (eq. (10)). The eigendecomposition costs
:math:`O(n^3)`, the Newton iterations :math:`O(n^2)` each (the map has up to n features),
against the :math:`O(|\mathcal P|^3)` of a dual method.

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, Sect. 6.3 and eq. (10).
.. [2] B. Schoelkopf and A. J. Smola, *Learning with Kernels*, MIT Press, 2002, Sect. 14.2.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import solver
from cvxrank.core.trace import Run, SolverOptions
from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.losses import unit_loss
from cvxrank.numerics.kernel import KernelPCAMap
from cvxrank.solvers.newton import MAX_ITER as NEWTON_MAX_ITER
from cvxrank.solvers.newton import solve_truncated_newton


def linear_equivalent(formulation: KernelRankSVM) -> tuple[RankSVM, KernelPCAMap]:
    """The linear RankSVM on the kernel PCA features with the same optimum, and the map.

    Unit weights and margins stay structured (so PRSVM+ applies); other weights and margins
    are passed per pair. The loss is the unit ramp, its knot and scale being already in the
    kernel formulation's margins and weights.
    """
    f = formulation
    kpca = KernelPCAMap("precomputed").fit(f.K)
    data = f.data.with_features(kpca.training_features())
    loss = unit_loss(f.ramp)
    if np.all(f.pair_weight == 1.0) and np.all(f.margin == 1.0):
        linear = RankSVM(data, C=f.C, loss=loss, pairs=f.pairs)
    else:
        linear = RankSVM(data, C=f.C, loss=loss, pair_weight=f.pair_weight, margin=f.margin,
                         pairs=f.pairs)
    return linear, kpca


@solver("kernel-newton", needs=("kernel_matrix",), tol=tolerances.NEWTON_GAP,
        max_iter=NEWTON_MAX_ITER)
def solve_kernel_newton(formulation: KernelRankSVM, options: SolverOptions,
                        **own: Any) -> Run:
    """Truncated Newton (PRSVM+, or PRSVM for per-pair weights) on the kernel PCA features.

    Parameters
    ----------
    formulation : KernelRankSVM
        Squared-hinge (or Huber) kernel RankSVM.
    options : SolverOptions
        Passed to :func:`~cvxrank.solvers.newton.solve_truncated_newton`.
    **own
        Its own options (``max_cg_iter``).

    Returns
    -------
    Run
        ``w`` holds the expansion coefficients beta (what the kernel formulation's
        ``primal_value`` takes); the trace is the linear run's, its times including the
        eigendecomposition; ``w_radius`` bounds the distance to the optimal function in the
        RKHS norm (the kernel PCA map is an isometry onto the span of the training
        documents); ``info`` adds ``rank`` and ``dropped`` (eigenvalues treated as 0).
    """
    start = time.perf_counter()
    linear, kpca = linear_equivalent(formulation)
    setup = time.perf_counter() - start
    engine = "sorted" if linear.structured else "pairs"
    result = solve_truncated_newton(linear, options, engine=engine, **own)
    result.trace.time = [t + setup for t in result.trace.time]
    return result.replace(
        setup_time=result.setup_time + setup, w=kpca.coefficients(result.w),
        formulation=formulation.name, solver="kernel-newton",
        info={"rank": int(kpca.eigenvalues_.size), "dropped": int(kpca.n_dropped_)})
