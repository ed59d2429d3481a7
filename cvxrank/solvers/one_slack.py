r"""1-slack cutting planes for the pairwise SVMs (Joachims 2006), with an exact finish for the
hinge.

For :math:`P(w) = \tfrac12\|w\|^2 + C R(w)` with the pairwise loss :math:`R(w) = \sum_k c_k
\ell(w^\top d_k)` convex (the hinge of RankSVM and IR SVM, Li 2011 Sects. 4.1-4.2; Chapelle
& Keerthi eq. (1)), the 1-slack cutting plane is the core of
:mod:`cvxrank.solvers.cutting_plane` with one block: :math:`\kappa = C`, the restricted
master over one simplex (the zero cut as coordinate 0) solved by the warm-started active set
:func:`~cvxrank.solvers.simplex_product_qp.simplex_qp`. The oracle at :math:`w_t` is one
loss evaluation, :math:`O(n d + n \log n)` by sorting and without building the pairs when
the weights are structured (:meth:`~cvxrank.formulations.ranksvm.RankSVM.evaluate_loss`):
its value and subgradient give the piece :math:`R(v) \ge c_t - g_t^\top v`, :math:`g_t =
-X^\top \partial_s R`, :math:`c_t = R(w_t) + g_t^\top w_t`; for the hinge it is Joachims'
most violated constraint of the 1-slack problem, :math:`g_t = \sum_{k \in V_t} c_k d_k` over
the pairs with margin violated at :math:`w_t`.

**Exact finish** (hinge; :func:`exact_finish`). The cutting plane's tail is slow (ten
iterations cut the gap by a small factor only): its dual point is a combination of a few
cuts, each an indicator of violated pairs, while the optimum's multipliers are fractional
on the pairs at their margin. When a fit asks for more than the tolerance (an ``until``
rule: certified measures, a model radius), the finish decides the pairs directly. At the
best point w with certified radius r, with :math:`t_k = w^\top d_k - m_k`, a pair with
:math:`t_k < -r\|d_k\|` is below its margin at the optimum too (:math:`\alpha_k = C c_k` in
the box dual of Li 2011, Sect. 4.1), one with :math:`t_k > r\|d_k\|` above it
(:math:`\alpha_k = 0`); the pairs of the band between (that band when it is small, else a
narrower one, a guess: :data:`BANDS`) are enumerated from the sorted scores
(:meth:`~cvxrank.formulations.ranksvm.RankSVM.margin_band`) and, with the others fixed,

.. math::

    \min_v \; \tfrac12 \|v - g_V\|^2 + \sum_{k \in M} C c_k \max(0, m_k - d_k^\top v),
    \qquad g_V = C \sum_{k \in V} c_k d_k,

is solved exactly by a primal active set on the pairs held at their margin
(:func:`margin_active_set`: the equalities :math:`D_E v = m_E`, :math:`v = g + D_E^\top
\mu`, an exact line search across the margins the step crosses). Its multipliers, with
:math:`C c_k` below the band and 0 above, are a feasible point :math:`\alpha` of the box
dual whatever the guess, so :math:`D(\alpha) = \sum_k m_k \alpha_k - \tfrac12\|\sum_k
\alpha_k d_k\|^2 \le p^*` is a certified bound and :math:`P(w(\alpha))` an objective: when
the guess holds the gap is at rounding level and the run has the exact optimum; when not,
the bound is valid all the same and the cutting plane goes on.

References
----------
.. [1] T. Joachims, "Training linear SVMs in linear time", KDD 2006 (1-slack cutting planes,
   the O(n log n) ranking oracle).
.. [2] T. Joachims, T. Finley and C.-N. Yu, "Cutting-plane training of structural SVMs",
   Machine Learning 77, 2009, Thm. 5.
.. [3] H. Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 4.1 (the Ranking
   SVM QP and its box dual).
.. [4] J. Nocedal and S. J. Wright, "Numerical Optimization", 2nd ed., 2006, Alg. 16.3 (the
   primal active-set method).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cvxrank.core.capabilities import solver
from cvxrank.core.trace import Run, SolverOptions
from cvxrank.numerics import rounding
from cvxrank.numerics.cuts import QueryCuts
from cvxrank.numerics.rounding import LossRounding
from cvxrank.solvers.cutting_plane import Finish, Polished, run_cutting_plane
from cvxrank.tolerances import MARGIN_CROSSING, MARGIN_RELEASE, MARGIN_STEP_FLOOR
from cvxrank.utils.threads import blas_threads

#: The finish's bands, as fractions f of the certified radius r, the widest first: the
#: pairs with :math:`|t_k| \le f\, r \|d_k\|` are the undecided ones, for the first f whose
#: band's window (its candidates, about twice the band) holds at most
#: :data:`MAX_BAND_PAIRS` pairs. With f = 1 the band is the optimum's (the finish is then
#: exact whatever w); narrower, it is a guess: the certified radius bounds :math:`\|w -
#: w^*\|` with room to spare (often several times over), the active set's cost grows with
#: the band (a band a tenth as wide holds about a tenth of the pairs), and a wrong guess
#: only costs the try (a guess that is nearly right improves the certificate, and the next
#: try comes at once). The narrowest bands let the finish start at large C, where the wider
#: bands' windows exceed :data:`MAX_BAND_PAIRS`.
BANDS = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)

#: The largest window the finish takes on; above it with every band, it is tried later.
MAX_BAND_PAIRS = 8192

#: Active-set iterations of the finish, per feature.
ITERATIONS_PER_FEATURE = 20

#: Margins crossed that a line search of the finish sorts first (all of them only when its
#: step passes these).
FIRST_CROSSINGS = 32


@runtime_checkable
class ProvidesLossCuts(Protocol):
    """A formulation whose data live elsewhere (sharded over a cluster,
    :class:`cvxrank.distributed.ShardedRankSVM`) and which gives the 1-slack its own oracle;
    a formulation in memory gets :func:`loss_cuts`."""

    def loss_cuts(self) -> Callable[[np.ndarray], QueryCuts]:
        """The oracle ``w -> QueryCuts`` of the pairwise loss (one block)."""


def loss_cuts(formulation: Any) -> Callable[[np.ndarray], QueryCuts]:
    r"""The 1-slack oracle: the pairwise loss at w as the piece :math:`R(v) \ge c - g^\top v`
    of one block (one sorted loss evaluation and one product with :math:`X^\top`), with the
    rounding bounds of the loss and of g (:mod:`cvxrank.numerics.rounding`: the scores :math:`Xw`
    computed afresh)."""
    X = formulation.X
    data = formulation.data

    def oracle(w: np.ndarray) -> QueryCuts:
        ev = formulation.evaluate_loss(w)
        g = -np.asarray(X.T @ ev.grad, dtype=np.float64).ravel()
        loss_error, gradient_error = cut_rounding(data, w, ev.rounding(), ev.grad)
        return QueryCuts(loss=np.array([ev.value]), offset=np.array([ev.value + g @ w]),
                         gradient=g[None, :], loss_error=np.array([loss_error]),
                         gradient_error=np.array([gradient_error]))

    return oracle


def cut_rounding(data: Any, w: np.ndarray, loss: LossRounding, grad: np.ndarray | None, *,
                 grad_norms: tuple[float, float] | None = None) -> tuple[float, float]:
    r"""The rounding bounds of the 1-slack piece at w: of the loss at the scores
    :math:`fl(Xw)` (off by :func:`cvxrank.numerics.rounding.product_error`) and, in the 2-norm, of
    :math:`g = -X^\top \partial_s R` (:func:`cvxrank.numerics.rounding.gradient_error`, without
    the regularizer's term); ``grad_norms`` the 1- and 2-norms of the loss's gradient in
    the scores where ``grad`` is not at hand (shards)."""
    delta = rounding.product_error(data.column_scales, w)
    l1, l2 = ((float(np.abs(grad).sum()), float(np.linalg.norm(grad))) if grad is not None
              else grad_norms)
    error = rounding.gradient_error(np.zeros_like(w), 1.0, data.column_scales,
                                    data.column_norms, data.n_documents, l1, l2,
                                    loss.grad_bound(delta))
    return loss.value_bound(delta), float(np.linalg.norm(error))


def merge_duplicates(D: np.ndarray, m: np.ndarray, u: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Pairs with the same :math:`(d_k, m_k)` as one, of weight :math:`\sum u_k`:
    :math:`\sum_k u_k \max(0, m - d^\top v)` is one hinge of the summed weight (data that
    repeat documents, as LETOR's do, repeat pairs in a band). A multiplier
    :math:`\alpha \in [0, \sum u_k]` of the merged pair is :math:`\alpha u_k / \sum u_k`
    on each: the same dual value, a feasible point.

    Returns
    -------
    D, m, u : ndarray
        The merged pairs (rows found by a hash of each row, checked exactly).
    """
    key = np.c_[D, m]
    hashed = key @ np.random.default_rng(0).normal(size=key.shape[1])
    _, first, inverse = np.unique(hashed, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.array_equal(key, key[first[inverse]]):  # a collision of the hash: no merge
        return D, m, u
    return D[first], m[first], np.bincount(inverse, weights=u)


def margin_active_set(D: np.ndarray, m: np.ndarray, u: np.ndarray, g0: np.ndarray,
                      w: np.ndarray, *, max_iter: int) -> tuple[np.ndarray, bool]:
    r"""Minimize :math:`F(v) = \tfrac12\|v - g_0\|^2 + \sum_k u_k \max(0, m_k - d_k^\top v)`
    by a primal active set from ``w``; return the dual point.

    Every pair is below its margin (:math:`\alpha_k = u_k`), above it (:math:`\alpha_k =
    0`) or held on it (the set E, :math:`d_k^\top v = m_k`, at most d pairs with
    independent :math:`d_k`). With g the sum of :math:`g_0` and the pairs below, the
    minimizer on the face is the projection :math:`v = g + D_E^\top \mu`,
    :math:`D_E D_E^\top \mu = m_E - D_E g`; the step towards it is an exact line search of
    the convex piecewise quadratic F (its slope rises by :math:`u_k |d_k^\top p|` at each
    margin crossed): it stops inside a piece, or at a margin where the slope turns
    nonnegative, which then joins E. At the face's minimizer the multipliers outside
    :math:`[0, u_k]` send their pairs below or above the margin, all at once (every step
    being an exact line search of F, the method descends all the same, in fewer steps than
    one release at a time), or the worst alone after a release that did not move (Nocedal & Wright,
    Alg. 16.3, whose single release always moves); with every :math:`\mu \in [0, u_E]`
    the KKT conditions hold and v is the minimizer.

    Parameters
    ----------
    D : ndarray of shape (k, d)
        The pairs' :math:`d_k`.
    m, u : ndarray of shape (k,)
        Margins and weights :math:`u_k > 0`.
    g0 : ndarray of shape (d,)
    w : ndarray of shape (d,)
        The start.
    max_iter : int

    Returns
    -------
    alpha : ndarray of shape (k,)
        In :math:`[0, u]` (:math:`\mu` clipped if the iterations ran out).
    converged : bool
    """
    t = D @ w - m
    side = np.where(t < 0, -1.0, 1.0)  # -1 below the margin, 1 above, 0 held on it (E)
    below = side < 0
    g = g0 + u[below] @ D[below]
    norms = np.sqrt(np.einsum("ij,ij->i", D, D))
    E: list[int] = []
    mu = np.zeros(0)  # the multipliers of E
    released = stalled = False
    for _ in range(max_iter):
        if E:
            DE = D[E]
            mu = _solve(DE @ DE.T, m[E] - DE @ g)
            v = g + mu @ DE
        else:
            mu, v = np.zeros(0), g
        p = v - w
        norm2 = float(p @ p)
        if norm2 <= MARGIN_STEP_FLOOR * (1.0 + float(w @ w)):
            held = np.asarray(E, dtype=np.int64)
            excess = np.maximum(-mu, mu - u[held]) / u[held]
            leave = excess > MARGIN_RELEASE
            if not leave.any():
                return _face_alpha(side, u, E, mu), True
            if stalled:  # several released at once went nowhere: the worst alone
                leave = np.arange(held.size) == int(np.argmax(excess))
            out = held[leave]  # below (mu > u) or above (mu < 0) their margin
            side[out] = np.where(mu[leave] > u[out], -1.0, 1.0)
            g = g + u[out[side[out] < 0]] @ D[out[side[out] < 0]]
            E = held[~leave].tolist()
            w, released = v, True
            t = D @ w - m
            continue
        dp = D @ p
        w, t, g, kink, step = _line_search(D, u, norms, t, dp, side, g, w, p, norm2)
        if kink is not None:
            E.append(kink)
        stalled, released = released and step == 0.0, False
    return _face_alpha(side, u, E, mu), False


def _line_search(D: np.ndarray, u: np.ndarray, norms: np.ndarray, t: np.ndarray,
                 dp: np.ndarray, side: np.ndarray, g: np.ndarray, w: np.ndarray,
                 p: np.ndarray, norm2: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None, float]:
    r"""The exact minimizer of F along :math:`w + s p`, :math:`s \in [0, 1]`, for
    :func:`margin_active_set` (``side`` updated in place for the margins crossed): the new
    w, t and g, the pair whose margin the step stops at (None inside a piece) and the
    step s.

    The slope of :math:`\varphi(s) = F(w + s p)` is :math:`\|p\|^2 (s - 1)` before the
    first crossing and rises by :math:`u_k |d_k^\top p|` at each; a pair whose
    :math:`|d_k^\top p|` is rounding against :math:`\|d_k\| \|p\|` does not cross (nor
    does a pair held on its margin, side 0)."""
    crossing = np.flatnonzero(side * dp < -MARGIN_CROSSING * np.sqrt(norm2) * norms)
    at = np.maximum(-t[crossing] / dp[crossing], 0.0)
    soon = at < 1.0
    crossing, at = crossing[soon], at[soon]
    jumps = u[crossing] * np.abs(dp[crossing])
    # the step mostly stops within the first few margins: sort those, all only if need be
    if at.size > FIRST_CROSSINGS:
        first = np.argpartition(at, FIRST_CROSSINGS)[:FIRST_CROSSINGS]
        first = first[np.argsort(at[first], kind="stable")]
        if norm2 * (at[first[-1]] - 1.0) + jumps[first].sum() < 0:
            first = np.argsort(at, kind="stable")  # the slope is still negative: all of them
        crossing, at, jumps = crossing[first], at[first], jumps[first]
    else:
        order = np.argsort(at, kind="stable")
        crossing, at, jumps = crossing[order], at[order], jumps[order]
    passed = np.concatenate(([0.0], np.cumsum(jumps)))
    before = norm2 * (at - 1.0) + passed[:-1]
    stop = np.flatnonzero(before + jumps >= 0)
    j = int(stop[0]) if stop.size else crossing.size
    kink = None
    if j < crossing.size and before[j] < 0:  # the slope turns nonnegative at this margin
        step, kink = float(at[j]), int(crossing[j])
    else:
        step = 1.0 - passed[j] / norm2
    flipped = crossing[:j]
    was = side[flipped]  # above (1) -> below: + u d to g; below (-1) -> above: - u d
    g = g + (was * u[flipped]) @ D[flipped]
    side[flipped] = -was
    if kink is not None:
        if side[kink] < 0:
            g = g - u[kink] * D[kink]
        side[kink] = 0.0
    return w + step * p, t + step * dp, g, kink, step


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 b`` for a symmetric positive definite A (LAPACK's Cholesky solve, a fraction of
    ``numpy.linalg.solve``'s overhead on these small systems), by least squares when it is
    not positive definite to working precision."""
    from scipy.linalg import lapack  # here: fits that never reach the finish skip its import

    _, x, info = lapack.dposv(A, b)
    return x if info == 0 else np.linalg.lstsq(A, b, rcond=None)[0]


def _face_alpha(side: np.ndarray, u: np.ndarray, E: list[int], mu: np.ndarray
                ) -> np.ndarray:
    """The dual point of a state of :func:`margin_active_set`: u below, 0 above, the
    multipliers on the face clipped to the box."""
    alpha = np.where(side < 0, u, 0.0)
    if E:
        alpha[E] = np.clip(mu, 0.0, u[E])
    return alpha


def exact_finish(formulation: Any) -> Finish:
    r"""The exact finish of the hinge 1-slack (module docstring) for ``formulation`` (the
    ``margin_band`` capability): ``finish(w, radius)`` a
    :class:`~cvxrank.solvers.cutting_plane.Polished` point with its certified bound, or None
    when even the narrowest band of :data:`BANDS` has more than :data:`MAX_BAND_PAIRS` pairs.

    The dual point: :math:`C c_k` on the pairs below the band, 0 above, the active set's
    multipliers on the band (a merged pair's shared in proportion to the weights), so
    :math:`D(\alpha) = C \sum_{k \in V} c_k m_k + \sum_{k \in M} m_k \alpha_k - \tfrac12
    \|w(\alpha)\|^2` with :math:`w(\alpha) = g_V + D_M^\top \alpha_M`.
    """
    f = formulation
    max_iter = ITERATIONS_PER_FEATURE * f.data.n_features

    def finish(w: np.ndarray, radius: float, again: bool = True) -> Polished | None:
        band = f.margin_band(w, [fraction * radius for fraction in BANDS],
                             max_pairs=MAX_BAND_PAIRS)
        if band is None:
            return None
        C = float(f.C)
        g0 = C * band.violated_sum
        D, m, u = merge_duplicates(band.difference, band.margin, C * band.weight)
        alpha, _ = margin_active_set(D, m, u, g0, w, max_iter=max_iter)
        v = g0 + alpha @ D
        primal, primal_error = f.primal_bounds(v)
        dual = C * band.violated_margin + float(m @ alpha) - 0.5 * float(v @ v)
        # ||v - w(alpha)||: the violated pairs' sum and the band's product rounded
        drift = C * band.violated_error + rounding.gamma(m.size + 2) * float(
            np.linalg.norm(alpha @ np.abs(D)))
        vv = float(v @ v)
        dual_error = (C * band.violated_margin_error + float(np.linalg.norm(v)) * drift
                      + 0.5 * drift * drift + rounding.value_error(
                          m.size + v.size, C * abs(band.violated_margin)
                          + float(np.abs(m) @ alpha) + vv))
        gap = band_gap(band, w, v, D, m, u, alpha, drift)
        bound = primal - dual + primal_error + dual_error
        if gap is None and again and 0.0 <= bound < 0.5 * band.radius ** 2:
            # the guessed band held, but v is too far from w for its terms outside the band
            # to be shown 0: once more from v, with that small certificate's radius
            closer = finish(v, math.sqrt(2.0 * bound), again=False)
            if closer is not None and closer.gap is not None:
                return closer
        return Polished(v, primal, dual, primal_error, dual_error,
                        gap=None if gap is None else gap[0],
                        gap_error=0.0 if gap is None else gap[1])

    return finish


def band_gap(band: Any, w: np.ndarray, v: np.ndarray, D: np.ndarray, m: np.ndarray,
             u: np.ndarray, alpha: np.ndarray, drift: float) -> tuple[float, float] | None:
    r"""The finish's gap :math:`P(v) - D(\alpha)` term by term, without the cancellation of
    the two sides, and its rounding bound; None where the terms outside the band cannot be
    shown to vanish.

    For any v and any :math:`\alpha \in [0, C c]`, with :math:`r_k = m_k - d_k^\top v`,

    .. math::

        P(v) - D(\alpha) = \tfrac12 \|v - \textstyle\sum_k \alpha_k d_k\|^2
            + \sum_k \big(C c_k \max(0, r_k) - \alpha_k r_k\big),

    every term nonnegative. Outside the band :math:`\alpha_k` is :math:`C c_k` (the pair
    below its margin at w) or 0 (above), and its term is 0 while the pair keeps its side
    at v: it does when :math:`\|v - w\| \le r/2` for the band's radius r, since every
    pair outside it has :math:`|t_k| > r \|d_k\|` at w up to the rounding
    :math:`\epsilon` of :math:`t_k` (``band.residual_error``), and one whose
    :math:`\|d_k\|` is too small for that margin to matter (:math:`\le 2\epsilon / r`)
    cannot reach its margin :math:`|m_k|` when the smallest margin exceeds
    :math:`\epsilon (1 + 2\|w\| / r)`. The first term is at most
    :math:`\tfrac12` ``drift`` squared (v is :math:`\sum_k \alpha_k d_k` up to rounding).
    """
    u_round = rounding.UNIT_ROUNDOFF
    reach = float(np.linalg.norm(v - w)) + u_round * (
        float(np.linalg.norm(v)) + float(np.linalg.norm(w)))
    eps = band.residual_error
    if not (band.radius > 0 and reach <= 0.5 * band.radius
            and band.smallest_margin > eps * (1.0 + 2.0 * float(np.linalg.norm(w))
                                              / band.radius)):
        return None
    residual = m - D @ v
    terms = u * np.maximum(residual, 0.0) - alpha * residual
    gap = float(np.maximum(terms, 0.0).sum())
    size = float((u + alpha) @ (np.abs(m) + np.abs(D) @ np.abs(v)))
    return gap, 0.5 * drift * drift + rounding.value_error(m.size + v.size, size)


@solver("1-slack", needs=("loss_subgradient",), max_iter=10_000)
def solve_one_slack(
    formulation: Any,
    options: SolverOptions,
    *,
    master: str = "active-set",
    finish: bool = True,
) -> Run:
    """1-slack cutting planes with the hand-written master (see the module docstring).

    Parameters
    ----------
    formulation : RankSVM or IRSVM
        Offers ``evaluate_loss(w)`` (value and subgradient in the scores), ``X``, ``C``.
    options : SolverOptions
        ``tol``: stop at a certified relative gap ``(P(w) - D(lambda)) / P(w) <= tol``;
        ``max_iter``: masters at most; ``time_budget``, ``callback``, ``until`` as
        :class:`~cvxrank.core.trace.SolverOptions` says (the method is deterministic).
    master : {"active-set", "cvxpy"}
        The hand-written master (:func:`~cvxrank.solvers.simplex_product_qp.simplex_qp`) or
        CVXPY's (:func:`~cvxrank.solvers.cutting_plane.solve_master_cvxpy`, its
        multipliers clipped to the simplex for the certificate).
    finish : bool
        Try the exact finish (:func:`exact_finish`; formulations with the ``margin_band``
        capability, the hinge) when the tolerance is met but ``until`` is not.

    Returns
    -------
    Run
        As :func:`~cvxrank.solvers.cutting_plane.run_cutting_plane` returns it: ``w`` the
        best point, the trace's dual the best certified bound; ``info["cuts"]`` the final
        cuts (:class:`~cvxrank.solvers.cutting_plane.CutSet`, the zero cut first).
    """
    if master not in ("active-set", "cvxpy"):
        raise ValueError(f"master must be 'active-set' or 'cvxpy', got {master!r}")
    f = formulation
    polish = exact_finish(f) if finish and "margin_band" in f.capabilities else None
    # matrix-vector products of d = tens of columns: a second BLAS thread only waits, and
    # on a loaded machine slows the fits severalfold (benchmarks/README.md, bench_one_slack)
    with blas_threads(1):
        # a formulation whose data live elsewhere (sharded over a cluster) gives its oracle
        oracle = f.loss_cuts() if isinstance(f, ProvidesLossCuts) else loss_cuts(f)
        return run_cutting_plane(f, options, oracle, n_blocks=1, kappa=float(f.C),
                                 master=master, name="1-slack", finish=polish)
