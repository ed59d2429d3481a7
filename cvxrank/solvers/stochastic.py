r"""Stochastic gradient for RankSVM on pairs and on queries (Chapelle & Keerthi 2010, Algs. 2-3).

The RankSVM primal :math:`P(w) = \tfrac12\|w\|^2 + C \sum_{k \in \mathcal P} c_k \ell(r_k)` is a
sum of pair terms (Alg. 2) and of query terms (Alg. 3, eq. (8)). Both solvers here draw an
unbiased estimate of :math:`\nabla P`:

* ``sgd-pairs`` (Alg. 2): B pairs drawn uniformly with replacement,
  :math:`\hat g = w - \frac{p C}{B} \sum_{b} c_{k_b} \ell'(r_{k_b}) (x_i - x_j)_{k_b}`, O(Bd)
  per step (B = 1 is the paper's algorithm); it needs the pairs;
* ``sgd-queries`` (Alg. 3): B queries drawn uniformly among the Q' queries that have pairs,
  :math:`\hat g = w + \frac{Q' C}{B} \sum_b X_{q_b}^\top \partial L_{q_b} / \partial s`, each
  query gradient by the O(n_q log n_q) sorting technique of Sect. 4 (no pairs built).

Step size and averaging. Alg. 2 and Alg. 3 as printed take the step 1/t on the gradient of
one term :math:`\ell_{ij}` (resp. :math:`\ell_q`), whose strong-convexity modulus is only
:math:`1/|\mathcal P|` (resp. 1/Q); with a step 1/t that small against :math:`1/(\mu t)` the
classical O(1/t) guarantee does not apply (Nemirovski et al. 2009). cvxrank uses the step of
the theory for the 1-strongly convex P: :math:`\gamma_t = 2 / (\mu (t + 1))` with
:math:`\mu = 1`, projects onto the ball :math:`\|w\| \le \sqrt{2 P(0)}` (which contains
:math:`w^*`, since :math:`\tfrac12\|w^*\|^2 \le P(w^*) \le P(0)`, and keeps the stochastic
gradients bounded), and returns the weighted average :math:`\bar w_T = \frac{2}{T(T+1)}
\sum_{t=1}^T t\, w_t`, for which :math:`E[P(\bar w_T)] - p^* \le 2 G^2 / (\mu (T + 1))`
(Lacoste-Julien, Schmidt & Bach 2012) with G a bound on the stochastic gradients: O(1/t) for
the hinge, squared hinge and Huber losses alike.

Stopping: a run of ``max_iter`` steps, or earlier when the certified relative duality gap of
the averaged iterate (squared hinge, :meth:`~cvxrank.formulations.ranksvm.RankSVM.dual_value_at`,
checked at each recorded step) is at most ``tol``.

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, Sect. 6.1, Algs. 2 and 3, eq. (8).
.. [2] S. Lacoste-Julien, M. Schmidt and F. Bach, "A simpler approach to obtaining an
   O(1/t) convergence rate for the projected stochastic subgradient method", arXiv:1212.2002,
   2012.
.. [3] A. Nemirovski, A. Juditsky, G. Lan and A. Shapiro, "Robust stochastic approximation
   approach to stochastic programming", SIAM J. Optim. 19(4), 2009.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import solver
from cvxrank.core.trace import Run, SolverOptions, TraceRecorder
from cvxrank.formulations.pair_losses import SortedPairLoss
from cvxrank.losses import Ramp
from cvxrank.utils.lazy_sparse import sp

#: Number of trace records a run aims at (``record_every = max(1, max_iter // RECORDS)``).
RECORDS = 200

#: Random draws made at once (the indices of this many steps).
DRAW_CHUNK = 4096


def _loss_slope(ramp: Ramp) -> Callable[[np.ndarray], np.ndarray]:
    """:math:`\\ell'(r)` of a unit ramp (:class:`~cvxrank.losses.Ramp`) as a function of the
    residual r."""
    if ramp.linear:
        return lambda r: (r > 0).astype(np.float64)
    return lambda r: 2.0 * np.clip(r, 0.0, ramp.width)


def _recorder(formulation: Any, options: SolverOptions,
              record_every: int | None) -> TraceRecorder:
    """The run's recorder (its clock starts here, before the solver's set-up)."""
    every = record_every or max(1, int(options.max_iter or 0) // RECORDS)
    return TraceRecorder(formulation, options, record_every=every)


def _run(rec: TraceRecorder, name: str,
         gradient: Callable[[np.ndarray, np.ndarray], np.ndarray],
         draw: Callable[[np.random.Generator, int], np.ndarray], **info: Any) -> Run:
    """Projected SGD with step 2/(t+1) and t-weighted averaging (see the module docstring).

    ``gradient(w, sample)`` is the stochastic gradient of P at w for one row of indices drawn
    by ``draw(rng, k)`` (an array of k rows).
    """
    f = rec.formulation
    max_iter = rec.max_iter
    rng = np.random.default_rng(rec.options.seed)
    d = f.X.shape[1]
    radius = math.sqrt(2.0 * f.primal_value(np.zeros(d)))
    w = np.zeros(d)
    average = np.zeros(d)
    samples = np.empty((0, 0), dtype=np.int64)
    t = 0
    while rec.record(t, w=average):
        if t % DRAW_CHUNK == 0:
            samples = draw(rng, min(DRAW_CHUNK, max_iter - t))
        t += 1
        w = w - (2.0 / (t + 1.0)) * gradient(w, samples[(t - 1) % DRAW_CHUNK])
        norm = math.sqrt(float(w @ w))
        if norm > radius:
            w *= radius / norm
        average += (2.0 / (t + 1.0)) * (w - average)
    return rec.result(average, None, t, name, radius=radius, **info)


@solver("sgd-pairs", needs=("pair_samples",), tol=tolerances.STOCHASTIC_GAP,
        max_iter=100_000)
def solve_sgd_pairs(
    formulation: Any,
    options: SolverOptions,
    *,
    batch_size: int = 1,
    record_every: int | None = None,
) -> Run:
    """Stochastic gradient on preference pairs (Chapelle & Keerthi Alg. 2), O(1/t).

    Parameters
    ----------
    formulation : RankSVM
        Any loss; the ``pair_samples`` capability (its pairs are built).
    options : SolverOptions
        ``tol``: stop when the certified relative duality gap of the averaged iterate is at
        most ``tol`` (squared hinge only; checked at recorded steps); 0 runs ``max_iter``
        steps. ``max_iter``: the number of stochastic steps T; ``seed``: the pair draws;
        ``callback(t, w_bar, None, trace)``, ``time_budget``, ``until`` as usual.
    batch_size : int
        Pairs per step (1 is the paper's Alg. 2).
    record_every : int or None
        Record every this many steps (default ``max_iter // 200``).

    Returns
    -------
    Run
        ``w`` is the weighted average; ``info`` has ``radius`` and ``batch_size``.

    References
    ----------
    .. [1] O. Chapelle and S. S. Keerthi, Inf. Retrieval 13, 2010, Alg. 2.
    .. [2] S. Lacoste-Julien, M. Schmidt and F. Bach, arXiv:1212.2002, 2012.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    f = formulation
    rec = _recorder(f, options, record_every)
    pairs = f.pairs
    X = f.X
    p = pairs.n_pairs
    upper, lower = pairs.upper, pairs.lower
    scale = p * f.C * np.asarray(f.pair_weight) / batch_size
    margin = np.asarray(f.margin)
    slope = _loss_slope(f.ramp)

    def gradient(w: np.ndarray, k: np.ndarray) -> np.ndarray:
        Z = X[upper[k]] - X[lower[k]]
        coef = scale[k] * slope(margin[k] - Z @ w)
        return w - np.asarray(Z.T @ coef).ravel()

    return _run(rec, "sgd-pairs", gradient,
                lambda rng, m: rng.integers(0, p, size=(m, batch_size)),
                batch_size=batch_size)


@solver("sgd-queries", needs=("query_blocks",), tol=tolerances.STOCHASTIC_GAP,
        max_iter=20_000)
def solve_sgd_queries(
    formulation: Any,
    options: SolverOptions,
    *,
    batch_size: int = 1,
    record_every: int | None = None,
) -> Run:
    """Stochastic gradient on queries with O(n_q log n_q) query gradients (Alg. 3), O(1/t).

    Parameters
    ----------
    formulation : RankSVM
        The ``query_blocks`` capability: structured weights (the query gradient is
        PRSVM+'s sorted loss on one query).
    options, record_every
        As in :func:`solve_sgd_pairs` (the draws are of queries).
    batch_size : int
        Queries per step (1 is the paper's Alg. 3).

    Returns
    -------
    Run
        ``w`` is the weighted average; ``info`` has ``radius``, ``batch_size`` and
        ``n_queries`` (the Q' queries with pairs that are sampled).

    References
    ----------
    .. [1] O. Chapelle and S. S. Keerthi, Inf. Retrieval 13, 2010, Alg. 3 and eq. (8).
    .. [2] S. Lacoste-Julien, M. Schmidt and F. Bach, arXiv:1212.2002, 2012.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    f = formulation
    rec = _recorder(f, options, record_every)
    data = f.data
    ptr = data.query_ptr
    with_pairs = np.flatnonzero(
        [np.unique(data.y[ptr[q]:ptr[q + 1]]).size > 1 for q in range(data.n_queries)])
    X = f.X
    blocks = [X[ptr[q]:ptr[q + 1]] for q in with_pairs]
    if sp.issparse(X):
        blocks = [sp.csr_matrix(b) for b in blocks]
    engines = [
        SortedPairLoss(np.zeros(ptr[q + 1] - ptr[q], dtype=np.int64),
                       f.grade_level[ptr[q]:ptr[q + 1]], f.query_weight[[q]],
                       f.weight_table, f.margin_table, f.ramp)
        for q in with_pairs
    ]
    scale = with_pairs.size * f.C / batch_size

    def gradient(w: np.ndarray, queries: np.ndarray) -> np.ndarray:
        g = w.copy()
        for q in queries:
            Xq = blocks[q]
            g += scale * np.asarray(Xq.T @ engines[q].evaluate(Xq @ w).grad).ravel()
        return g

    return _run(rec, "sgd-queries", gradient,
                lambda rng, m: rng.integers(0, with_pairs.size, size=(m, batch_size)),
                batch_size=batch_size, n_queries=int(with_pairs.size))
