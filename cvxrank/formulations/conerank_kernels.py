r"""The compiled steps of ConeRank's stochastic Alg. 1 (Tran & Pham, Sect. 4.1).

:func:`~cvxrank.solvers.conerank.solve_stochastic` visits one query at a time and makes two
kinds of step on it, both fixed-step updates of the paper:

* :func:`fold_in_paper`: the folding-in of the query's pairs at the fixed basis U, the
  paper's step repeated until no coefficient moves by more than ``tol`` (or ``max_iter``
  steps): ``"sg-paper"`` (Alg. 1 steps 1a-1c: gradient step, clip at 0, divide by the sum)
  or ``"eg-paper"`` (Sect. 4.2's linearized multiplicative step). With :math:`M = U^\top U`
  and :math:`B = Z_q U` given, a step is :math:`O(p_q K^2)`;
* :func:`basis_steps`: Alg. 1 step 2 on the query's loss (3), one gradient step of size
  :math:`\mu` per basis vector in turn, each rescaled to norm c if longer. The gradient of
  :math:`\frac{1}{n_q}\sum_j \phi_j \|z_j - U w_j\|^2` in :math:`u_k` at the current U (its
  columns before k already updated) is :math:`-\frac{2}{n_q} R^\top (\phi \odot w_{\cdot k})`
  with the residual :math:`R = Z_q - W_q U^\top`, which is :math:`-\frac{2}{n_q} (a_k - U
  s_k)` with :math:`A = Z_q^\top \mathrm{diag}(\phi) W_q` and :math:`S = W_q^\top
  \mathrm{diag}(\phi) W_q` (fixed during the step): :math:`O(NK)` per basis vector after the
  :math:`O(p_q (N + K) K)` products, instead of forming R (:math:`O(p_q N K)`) K times.

The query's arrays are small (K = 10 columns, a median of about 20 pairs a query on MQ2008)
and the folding-in takes up to 200 steps, so a step in numpy is a dozen calls of about a
microsecond each, whatever the size: these loops make a step cost its arithmetic. The
folding-in holds one pair per column (the transposes of the solver's arrays), so that its
loops run over a query's pairs, contiguous in memory, and vectorize; each pair's sums still
run over k = 1..K in order. ``tests/solvers/test_conerank.py`` checks both kernels against
the steps written in numpy, as printed (to rounding: BLAS adds in another order).

**Subnormal coefficients.** The EG step multiplies each coefficient by :math:`1 - \mu (g_k
- w^\top g)`, so a coefficient off the fixed point's support falls geometrically, through
the subnormal doubles (below :data:`SMALLEST_NORMAL`, 2.2e-308) before the arithmetic
rounds it to 0 (below 4.9e-324). An operation on a subnormal number costs about a hundred
times a normal one's on x86 (a microcode assist): on MQ2008 Fold1 (the paper's step 0.005),
9.7% of the coefficients are subnormal after 40 passes, which then take 3.3x as long as with
them set to 0. The kernel therefore sets an EG coefficient that falls below the smallest
normal double to 0 (flush to zero), a change of the threshold at which the arithmetic
rounds a coefficient to 0, not of the step: neither threshold is exact arithmetic, in which
no coefficient reaches 0. Against the numpy steps (gradual underflow), on Fold1 the 40
passes give the same basis to 8e-15 relative; on Folds 2-4 a coefficient set to 0 would
have grown back, and the objective (18) of the last 2-5 of the 40 passes differs by 2e-7 to
1.2e-6 relative; the validation and test measures of every pass of every fold are the same.
``"sg-paper"`` clips to 0 and produces no subnormal coefficient there.

They are always the compiled loops (ahead of time from ``make install``, else numba), never
a numpy method chosen by the time spent: a stochastic run is long enough to pay numba's
fixed cost, and its result then does not depend on a switch made mid-run.

References
----------
.. [1] T. T. Tran and D.-S. Pham, "ConeRANK", Alg. 1, Sects. 4.1-4.2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cvxrank.compiled.kernels import KernelFile

#: The smallest positive normal double: ``"eg-paper"`` sets a coefficient below it to 0.
SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)


# Plain Python, compiled ahead of time at install or by numba the first time a kernel is
# looked up in this module (importing it does not import numba).
def _fold_in_paper(BT: np.ndarray, WT0: np.ndarray, M: np.ndarray, phi: np.ndarray,
                   mu: float, eg: bool, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
    r"""The paper's fixed-step folding-in of one query's pairs, one pair per column.

    Each step computes :math:`g_j = 2 \phi_j (M w_j - b_j)`, the gradient of
    :math:`\phi_j \|z_j - U w_j\|^2` (:math:`b_j = U^\top z_j`), and sets, for every pair j,

    * ``eg=False`` (Alg. 1 steps 1a-1c): :math:`v = \max(w_j - \mu g_j, 0)`, :math:`w_j
      \leftarrow v / 1^\top v` (uniform, :math:`1/K`, if :math:`v = 0`);
    * ``eg=True`` (Sect. 4.2): :math:`v_k = \max(w_{jk} (1 - \mu (g_{jk} - w_j^\top g_j)),
      0)`, :math:`w_j \leftarrow v / 1^\top v`, a coefficient below
      :data:`SMALLEST_NORMAL` set to 0 (see the module docstring);

    and stops after the first step in which no coefficient moved by more than ``tol`` (a
    step that makes a coefficient NaN never stops the loop), or after ``max_iter`` steps.

    The pairs are the columns (the transposes of the solver's row-per-pair arrays), so
    that every loop runs over the pairs of a query, contiguous in memory, and vectorizes;
    each pair's sums are taken over k = 1..K in order, as a loop over one pair would.

    Parameters
    ----------
    BT : float64 (K, p_q)
        :math:`(Z_q U)^\top`.
    WT0 : float64 (K, p_q)
        The start (not changed), :math:`W_q^\top`.
    M : float64 (K, K)
        :math:`U^\top U`.
    phi : float64 (p_q,)
        The pairs' relevance differences.
    mu, tol : float
    eg : bool
    max_iter : int

    Returns
    -------
    WT, steps
        The coefficients (K, p_q) after ``steps`` steps.
    """
    K, p = WT0.shape
    W = WT0.copy()
    V = np.empty_like(WT0)
    G = np.empty((K, p))
    total = np.empty(p)
    inner = np.empty(p)
    for step in range(1, max_iter + 1):
        for k in range(K):  # G = 2 phi (M W - B), column by column
            for j in range(p):
                G[k, j] = 0.0
        for m in range(K):
            for k in range(K):
                entry = M[m, k]
                for j in range(p):
                    G[k, j] += W[m, j] * entry
        for k in range(K):
            for j in range(p):
                G[k, j] = (2.0 * phi[j]) * (G[k, j] - BT[k, j])
        for j in range(p):
            total[j] = 0.0
        if eg:
            for j in range(p):
                inner[j] = 0.0
            for k in range(K):
                for j in range(p):
                    inner[j] += W[k, j] * G[k, j]
            for k in range(K):
                for j in range(p):
                    v = W[k, j] * (1.0 - mu * (G[k, j] - inner[j]))
                    if v < 0.0:  # np.maximum(v, 0): a NaN stays NaN
                        v = 0.0
                    V[k, j] = v
                    total[j] += v
            for k in range(K):
                for j in range(p):
                    x = V[k, j] / total[j]
                    if x < SMALLEST_NORMAL:
                        x = 0.0
                    V[k, j] = x
        else:
            for k in range(K):
                for j in range(p):
                    v = W[k, j] - mu * G[k, j]
                    if v < 0.0:
                        v = 0.0
                    V[k, j] = v
                    total[j] += v
            for k in range(K):
                for j in range(p):
                    V[k, j] = V[k, j] / total[j] if total[j] > 0.0 else 1.0 / K
        moved = 0.0
        undefined = False
        for k in range(K):
            for j in range(p):
                d = abs(V[k, j] - W[k, j])
                if d > moved:
                    moved = d
                elif d != d:
                    undefined = True
        W, V = V, W
        if moved <= tol and not undefined:
            return W, step
    return W, max_iter


def _basis_steps(U: np.ndarray, A: np.ndarray, S: np.ndarray, scale: float, mu: float,
                 radius: float) -> bool:
    r"""Alg. 1 step 2 on one query, in place: for k = 1..K, :math:`u_k \leftarrow u_k - \mu
    \cdot \mathrm{scale} \cdot (U s_k - a_k)`, then rescaled to norm ``radius`` if longer
    (:meth:`~cvxrank.numerics.sets.L2Ball.project`: the norm scaled by the largest entry).

    Parameters
    ----------
    U : float64 (N, K)
        The basis, updated column after column.
    A : float64 (N, K)
        :math:`Z_q^\top \mathrm{diag}(\phi) W_q`.
    S : float64 (K, K)
        :math:`W_q^\top \mathrm{diag}(\phi) W_q`.
    scale : float
        :math:`2 / n_q` (the gradient is ``scale * (U s_k - a_k)``).
    mu, radius : float
        The step and the ball's radius c.

    Returns
    -------
    bool
        False at the first entry that is not finite after its step (its column then left
        partly updated and unprojected, the later columns unchanged).
    """
    N, K = U.shape
    u = np.empty(N)
    for k in range(K):
        big = 0.0
        for n in range(N):
            product = 0.0
            for m in range(K):
                product += U[n, m] * S[m, k]
            x = U[n, k] - mu * (scale * (product - A[n, k]))
            u[n] = x
            if not math.isfinite(x):
                U[n, k] = x
                return False
            big = max(big, abs(x))
        squares = 0.0
        if big > 0.0:
            for n in range(N):
                squares += (u[n] / big) ** 2
        norm = big * math.sqrt(squares)
        factor = radius / norm if norm > radius else 1.0
        for n in range(N):
            U[n, k] = u[n] * factor
    return True


#: The kernels and their argument types, for the ahead-of-time module (C-contiguous arrays).
_KERNELS = {
    "fold_in_paper": (_fold_in_paper, "Tuple((f8[:, ::1], i8))(f8[:, ::1], f8[:, ::1], "
                                      "f8[:, ::1], f8[::1], f8, b1, f8, i8)"),
    "basis_steps": (_basis_steps, "b1(f8[:, ::1], f8[:, ::1], f8[:, ::1], f8, f8, f8)"),
}


def _warm(kernels: dict[str, Any]) -> None:
    """Call each kernel once, for the argument types
    :func:`~cvxrank.solvers.conerank.solve_stochastic` passes."""
    one = np.ones((1, 1))
    kernels["fold_in_paper"](one, one, one, np.ones(1), 0.001, False, 1e-6, 1)
    kernels["basis_steps"](one.copy(), one, one, 1.0, 0.001, 1.0)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`); no numpy method.
KERNELS = KernelFile(__file__, _KERNELS, _warm)


def __getattr__(name: str) -> Any:
    """``fold_in_paper`` and ``basis_steps``: the compiled kernels."""
    if name in _KERNELS:
        return KERNELS.dispatchers()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
