r"""ConeRank's solvers (Tran & Pham Sect. 4): the two blocks, their alternation, prediction.

Blocks (:mod:`cvxrank.formulations.conerank`), vectorized over all pairs:

* :func:`fold_in`: every pair's coefficients for a fixed basis. ``"pg"`` is accelerated
  projected gradient with the exact projection onto the band (8) / simplex (18) and
  adaptive restart (O'Donoghue & Candes 2015); ``"eg"`` the exact exponentiated step
  (Sect. 4.2, Kivinen & Warmuth) with a backtracked step per pair. Both stop on the
  certified Frank-Wolfe gap. ``"sg-paper"`` (Alg. 1 steps 1a-1c: gradient step, clip,
  normalize) and ``"eg-paper"`` (Sect. 4.2's linearized multiplicative step) are the paper's
  fixed-step updates (compiled loops, :mod:`cvxrank.formulations.conerank_kernels`);
  clip-and-normalize is not the Euclidean projection, so their fixed points are not the
  block's optimum in general (their gap is measured, not assumed).
* :func:`update_basis`: the basis for fixed coefficients. ``"pg"`` is accelerated projected
  gradient on :math:`\mathrm{tr}(UGU^\top) - 2\,\mathrm{tr}(U^\top B)` with each column
  clipped to its ball, :math:`O(NK^2)` per step after an :math:`O(pNK)` set-up; ``"paper"``
  is Alg. 1 step 2: one gradient step of size :math:`\mu` per basis vector, in turn, then
  rescaled to norm c if longer.

Alternations, recording the objective (18) after every half-step:

* :func:`solve_alternation` (registered as ``conerank/sg`` and ``conerank/eg``): Alg. 1 with
  each block solved to a certified gap, warm-started, and a half-step kept only if it does
  not increase the objective, so the recorded objective never increases (block-coordinate
  descent; the joint problem is not convex, so the limit depends on the start);
* :func:`solve_stochastic` (Sect. 4.1): one query at a time, its pairs folded in with the
  paper's step, then one basis step on that query's loss (3), for a number of passes;
* :func:`reference_alternation`: the same block-coordinate descent with every block solved
  by CVXPY and certified (:func:`cvxrank.certificates.reference.solve_reference`).

The joint problem is not convex, so a run has no certified gap or radius of its own; what
it certifies is each block at the returned point (:func:`block_certificates`, in
``Run.info["blocks"]`` of the alternations and the stochastic solver): how far W is from
the best coefficients for the returned U, and U from the best basis for the returned W.

:func:`profile_objective` evaluates (9)'s objective at a basis (the coefficients minimized
out, certified). Prediction (Alg. 2): :func:`vote_scores` folds every test pair in without
constraints (least squares) and counts votes, :math:`O(n_q^2 (N + K))` per query;
:func:`linear_direction` gives the equivalent linear scorer (see its docstring).

References
----------
.. [1] T. T. Tran and D.-S. Pham, "ConeRANK", Alg. 1 and 2, Sects. 4.1-4.3.
.. [2] J. Kivinen and M. Warmuth, Inform. Comput. 132(1), 1997 (EG).
.. [3] B. O'Donoghue and E. Candes, Found. Comput. Math. 15, 2015 (adaptive restart).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cvxrank.core.capabilities import solver, takes_options
from cvxrank.core.trace import Run, SolverOptions, Status, TraceRecorder
from cvxrank.formulations import conerank_kernels
from cvxrank.formulations.conerank import (
    BasisUpdate,
    ConePairs,
    ConeRank,
    FoldingIn,
    coefficient_set,
    objective,
)
from cvxrank.methods import MU_PARAM
from cvxrank.tolerances import gap_scale
from cvxrank.utils.threads import blas_threads

FoldInMethod = Literal["pg", "eg", "sg-paper", "eg-paper"]

#: ``monitor(k, X) -> bool``: called after iteration k of a block solver with its point;
#: returning False stops the solver (a registered solver's :class:`TraceRecorder`).
Monitor = Callable[[int, np.ndarray], bool]
BasisMethod = Literal["pg", "paper"]

#: The paper's learning rates (Sect. 6.1): SG and EG.
PAPER_MU = {"sg": 0.001, "eg": 0.005}

#: Default stopping rule of the alternation: relative decrease per outer iteration.
ALTERNATION_TOL = 1e-6

#: Default most outer iterations of the alternation.
ALTERNATION_MAX_ITER = 200


#: Default passes over the queries of the stochastic solver, per variant at the paper's
#: steps: where the validation MAP of MQ2008 Fold1 peaks (the notes of
#: :class:`cvxrank.estimators.ConeRankRanker`; both at mu x passes of about 0.02).
STOCHASTIC_PASSES = {"sg": 20, "eg": 5}

#: Relative certified gap each block is solved to inside :func:`solve_alternation`, by the
#: accelerated projected gradient and by EG. EG is not accelerated: on a face where U's
#: columns are nearly parallel its certified gap falls slowly (about 1e-6 after 500 steps
#: on the notebook's instance, while its objective is within 1e-9 of CVXPY's), so it stops
#: at 1e-6 or after :data:`INNER_MAX_ITER` steps.
INNER_GAP = {"sg": 1e-10, "eg": 1e-6}

#: Most steps of one block solve inside :func:`solve_alternation`, per folding-in variant
#: (the basis update always uses the "sg" row: projected gradient). EG's 30 warm-started
#: steps per folding-in make its alternation 2-4x slower than SG's on the verify instances
#: at K = 5 (300 steps: 22x-59x), and it ends 0.02-0.13% above SG's objective when both
#: run to their stopping rule (relative decrease 1e-5 per outer iteration).
INNER_MAX_ITER = {"sg": 5_000, "eg": 30}


@dataclass
class BlockResult:
    """The outcome of one block solve.

    Attributes
    ----------
    X : ndarray
        The block's final point (W of shape (p, K) or U of shape (N, K)).
    value : float
        Block objective at ``X``.
    gap : float
        Certified Frank-Wolfe gap at ``X`` (value minus a lower bound on the optimum).
    n_iter : int
        Iterations run.
    converged : bool
        Whether the stopping rule was met: ``gap <= tol * value`` for the certified methods
        (``"pg"``, ``"eg"``); for the paper's fixed steps only that the coefficients stopped
        moving (or, for the paper's basis step, that its one step was taken), which is
        not optimality (see ``gap``).
    """

    X: np.ndarray
    value: float
    gap: float
    n_iter: int
    converged: bool


@dataclass(frozen=True)
class BlockCertificate:
    r"""What one convex block certifies at a point (U, W) of the joint problem.

    Attributes
    ----------
    block : str
        ``"folding-in"`` (W for the fixed U) or ``"basis"`` (U for the fixed W).
    gap : float
        The block's certified Frank-Wolfe gap: the objective (18) minus a lower bound on
        the block's minimum.
    relative_gap : float
        ``gap`` relative to the objective (:func:`cvxrank.tolerances.gap_scale`).
    radius : float
        Certified bound on the Frobenius distance from the block's point to the block's
        minimizer (:math:`\|W - W^*(U)\|_F` or :math:`\|U - U^*(W)\|_F`), from the
        block's strong convexity; infinite when the block is not strongly convex (a
        rank-deficient U or W).
    """

    block: str
    gap: float
    relative_gap: float
    radius: float


class _FoldInProblem:
    r"""Per-pair quantities of the folding-in at basis U: :math:`M = U^\top U`, :math:`b_j =
    U^\top z_j`, so that pair j's loss is :math:`a_j(\|z_j\|^2 - 2 b_j^\top w + w^\top M w)`
    (:math:`O(pK^2)` per evaluation after the :math:`O(pNK)` set-up)."""

    def __init__(self, pairs: ConePairs, U: np.ndarray, band: tuple[float, float],
                 rows: slice | None = None) -> None:
        rows = slice(None) if rows is None else rows
        self.Z = pairs.Z[rows]
        self.a = pairs.weight[rows]
        self.phi = pairs.phi[rows]
        self.M = U.T @ U
        self.B = self.Z @ U
        self.zz = np.einsum("ij,ij->i", self.Z, self.Z)
        self.band = band
        self.set = coefficient_set(self.Z.shape[0], U.shape[1], *band)
        self.L = max(float(np.linalg.eigvalsh(self.M)[-1]), np.finfo(float).tiny)

    def losses(self, W: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Unweighted pair losses :math:`\\|z_j - U w_j\\|^2` (of the pairs ``rows`` when
        given, W then holding their coefficients only)."""
        if rows is None:
            return self.zz + np.einsum("ij,ij->i", W @ self.M - 2.0 * self.B, W)
        return self.zz[rows] + np.einsum("ij,ij->i", W @ self.M - 2.0 * self.B[rows], W)

    def value(self, W: np.ndarray) -> float:
        return float(self.a @ self.losses(W))

    def direction(self, W: np.ndarray) -> np.ndarray:
        """:math:`M w_j - b_j`: the gradient of pair j's loss divided by :math:`2 a_j`."""
        return W @ self.M - self.B

    def gaps(self, W: np.ndarray, D: np.ndarray | None = None) -> np.ndarray:
        """Each pair's Frank-Wolfe gap (weighted): :math:`\\langle g_j, w_j\\rangle -
        \\min_{v} \\langle g_j, v\\rangle` over the band's vertices."""
        g = 2.0 * self.a[:, None] * (self.direction(W) if D is None else D)
        low = g.min(axis=1)
        lo, hi = self.band
        return np.einsum("ij,ij->i", g, W) - np.minimum(lo * low, hi * low)

    def project(self, W: np.ndarray) -> np.ndarray:
        return self.set.project(W.ravel()).reshape(W.shape)


def _stop(prob: _FoldInProblem, W: np.ndarray, k: int, tol: float,
          monitor: Monitor | None) -> bool:
    """Whether a folding-in solver stops after step k: the monitor says so, or (every 10
    steps) the total certified gap is at most ``tol`` times the value."""
    if monitor is not None and not monitor(k, W):
        return True
    return k % 10 == 0 and prob.gaps(W).sum() <= tol * max(prob.value(W), 0.0)


def _fold_in_pg(prob: _FoldInProblem, W: np.ndarray, tol: float, max_iter: int,
                monitor: Monitor | None = None) -> tuple[np.ndarray, int]:
    """FISTA per pair (one common step 1/L on the direction, since the a_j cancel) with
    gradient restart; checks the total certified gap every 10 steps."""
    Y, t = W.copy(), np.ones(W.shape[0])
    for k in range(1, max_iter + 1):
        W_new = prob.project(Y - prob.direction(Y) / prob.L)
        restart = np.einsum("ij,ij->i", Y - W_new, W_new - W) > 0
        t_new = np.where(restart, 1.0, 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t)))
        beta = np.where(restart, 0.0, (t - 1.0) / t_new)
        Y = W_new + beta[:, None] * (W_new - W)
        W, t = W_new, t_new
        if _stop(prob, W, k, tol, monitor):
            return W, k
    return W, max_iter


def _fold_in_eg(prob: _FoldInProblem, W: np.ndarray, tol: float, max_iter: int,
                monitor: Monitor | None = None) -> tuple[np.ndarray, int]:
    r"""Exact exponentiated gradient on each pair's (scaled) simplex, :math:`w \leftarrow
    s\, w e^{-\eta d} / \sum w e^{-\eta d}`, with a step per pair grown by 2 after an
    accepted step and halved until the descent lemma of the entropy holds
    (:math:`f(w^+) \le f(w) + \langle\nabla f, w^+ - w\rangle + \mathrm{KL}(w^+\|w)/\eta`)."""
    lo, hi = prob.band
    if lo != hi:
        raise ValueError("the exponentiated step keeps ||w||_1 fixed: it needs lambda_l == "
                         f"lambda_u (the simplex of (18)), got {lo} and {hi}")
    s = lo
    W = np.maximum(W, 1e-300)
    W *= s / W.sum(axis=1, keepdims=True)
    eta = np.full(W.shape[0], 1.0 / (2.0 * prob.L * s))
    f = prob.losses(W)
    for k in range(1, max_iter + 1):
        g = 2.0 * prob.direction(W)  # gradient of the unweighted pair loss
        W_new, f_new = np.empty_like(W), np.empty_like(f)
        rows = np.arange(W.shape[0])  # the pairs whose step is not accepted yet
        for _ in range(60):
            W_r, g_r, f_r, eta_r = W[rows], g[rows], f[rows], eta[rows]
            E = -eta_r[:, None] * g_r
            E -= E.max(axis=1, keepdims=True)
            trial = W_r * np.exp(E)
            trial *= s / trial.sum(axis=1, keepdims=True)
            trial = np.maximum(trial, 1e-300)
            f_trial = prob.losses(trial, rows)
            kl = np.einsum("ij,ij->i", trial, np.log(trial / W_r)) / s
            ok = f_trial <= f_r + np.einsum("ij,ij->i", g_r, trial - W_r) + kl / eta_r + (
                1e-12 * (1.0 + np.abs(f_r)))
            W_new[rows], f_new[rows] = trial, f_trial
            if ok.all():
                break
            rows = rows[~ok]
            eta[rows] *= 0.5
        W, f = W_new, f_new
        eta = 2.0 * eta
        if _stop(prob, W, k, tol, monitor):
            return W, k
    return W, max_iter


def _fold_in_paper(B: np.ndarray, W: np.ndarray, M: np.ndarray, phi: np.ndarray, eg: bool,
                   mu: float, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
    r"""The paper's fixed-step folding-in on each pair's loss :math:`\phi_j \|z_j - U
    w_j\|^2` (:math:`B = Z U`, :math:`M = U^\top U`), until no coefficient moves by more
    than ``tol`` (or ``max_iter`` steps); the coefficients and the steps made.

    ``"sg-paper"`` (``eg=False``): Alg. 1 steps 1a-1c, :math:`w \leftarrow \max(w - \mu g,
    0)`, then :math:`w \leftarrow w / \|w\|_1` (a row clipped to 0 is reset to uniform).
    ``"eg-paper"``: Sect. 4.2's linearized step :math:`w_k \leftarrow w_k (1 - \mu (g_k -
    w^\top g))`, which keeps :math:`\sum_k w_k` (clipped at 0 if :math:`\mu` is too large;
    a coefficient that falls below the smallest normal double is set to 0). The steps are
    the compiled loop :func:`cvxrank.formulations.conerank_kernels.fold_in_paper` (on the
    transposes: one pair per column).
    """
    WT, n = conerank_kernels.fold_in_paper(
        np.ascontiguousarray(B.T), np.ascontiguousarray(W.T, dtype=np.float64),
        np.ascontiguousarray(M), np.array(phi, dtype=np.float64), float(mu), bool(eg),
        float(tol), int(max_iter))
    return WT.T, n


def fold_in(pairs: ConePairs, U: np.ndarray, W0: np.ndarray, *,
            band: tuple[float, float] = (1.0, 1.0), method: FoldInMethod = "pg",
            tol: float = INNER_GAP["sg"], max_iter: int = 20_000, mu: float | None = None,
            rows: slice | None = None, monitor: Monitor | None = None) -> BlockResult:
    r"""Solve (or, for the paper's steps, iterate) the folding-in block at basis ``U``.

    Parameters
    ----------
    pairs : ConePairs
    U : ndarray of shape (N, K)
    W0 : ndarray of shape (p, K) (or the rows of ``rows``)
        Start (need not be feasible: it is projected first for ``"pg"``).
    band : (float, float)
        :math:`(\lambda_l, \lambda_u)`; ``"eg"`` and the paper's steps need (1, 1).
    method : {"pg", "eg", "sg-paper", "eg-paper"}
        See the module docstring.
    tol : float
        ``"pg"``, ``"eg"``: relative certified gap; paper steps: largest coefficient change.
    max_iter : int
    mu : float or None
        The paper's step (default :data:`PAPER_MU`).
    rows : slice or None
        Only these pairs (one query's, for :func:`solve_stochastic`).
    monitor : callable, optional
        ``monitor(k, W) -> bool`` after every step of ``"pg"`` and ``"eg"`` (False stops).

    Returns
    -------
    BlockResult
        ``X`` is W; ``gap`` the certified gap of the block restricted to ``rows``.
    """
    prob = _FoldInProblem(pairs, U, band, rows)
    W = np.array(W0, dtype=np.float64)
    if method == "pg":
        W, n = _fold_in_pg(prob, prob.project(W), tol, max_iter, monitor)
    elif method == "eg":
        W, n = _fold_in_eg(prob, W, tol, max_iter, monitor)
    elif method in ("sg-paper", "eg-paper"):
        if band != (1.0, 1.0):
            raise ValueError(f"the paper's steps are for (18), ||w||_1 = 1; got band {band}")
        step = PAPER_MU[method[:2]] if mu is None else float(mu)
        W, n = _fold_in_paper(prob.B, W, prob.M, prob.phi, method == "eg-paper", step, tol,
                              max_iter)
    else:
        raise ValueError(f"unknown folding-in method {method!r}; use pg, eg, sg-paper or "
                         "eg-paper")
    value, gap = prob.value(W), float(prob.gaps(W).sum())
    certified = method in ("pg", "eg")
    return BlockResult(X=W, value=value, gap=gap, n_iter=n,
                       converged=(not certified and n < max_iter)
                       or (certified and gap <= tol * max(value, 0.0)))


def update_basis(block: BasisUpdate, U0: np.ndarray, *, method: BasisMethod = "pg",
                 tol: float = INNER_GAP["sg"], max_iter: int = 20_000,
                 mu: float | None = None, monitor: Monitor | None = None) -> BlockResult:
    r"""Solve (``"pg"``) or step (``"paper"``) the basis-update block.

    ``"pg"``: FISTA with gradient restart on :math:`U`, step :math:`1/(2\lambda_{\max}(G))`,
    each column projected onto its ball, until the certified gap
    (:meth:`BasisUpdate.frank_wolfe_gap`) is at most ``tol`` times the value.
    ``"paper"``: Alg. 1 step 2, once: for k = 1..K, :math:`u_k \leftarrow u_k - \mu
    \partial/\partial u_k`, rescaled to norm c if longer (``mu`` default 0.001).
    ``monitor(k, U) -> bool`` is called after every ``"pg"`` step (False stops).
    """
    U = block.project(np.array(U0, dtype=np.float64))
    if method == "paper":
        step = PAPER_MU["sg"] if mu is None else float(mu)
        for k in range(U.shape[1]):
            U[:, k] -= step * block.gradient(U)[:, k]
            U[:, k] = block.ball.project(U[:, k])
        value, gap = block.value(U), block.frank_wolfe_gap(U)
        return BlockResult(X=U, value=value, gap=gap, n_iter=1, converged=True)
    if method != "pg":
        raise ValueError(f"unknown basis method {method!r}; use pg or paper")
    L = 2.0 * max(float(np.linalg.eigvalsh(block.G)[-1]), np.finfo(float).tiny)
    Y, t, n = U.copy(), 1.0, max_iter
    for k in range(1, max_iter + 1):
        U_new = block.project(Y - block.gradient(Y) / L)
        if np.sum((Y - U_new) * (U_new - U)) > 0:
            t_new, beta = 1.0, 0.0
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
        Y = U_new + beta * (U_new - U)
        U, t = U_new, t_new
        if ((monitor is not None and not monitor(k, U))
                or block.frank_wolfe_gap(U) <= tol * max(block.value(U), 0.0)):
            n = k
            break
    value, gap = block.value(U), block.frank_wolfe_gap(U)
    return BlockResult(X=U, value=value, gap=gap, n_iter=n, converged=gap <= tol * max(value,
                                                                                        0.0))


def _curvature_floor(M: np.ndarray) -> float:
    """A lower bound on the smallest eigenvalue of the symmetric matrix M, less the
    rounding of its computation (0 when M is singular to rounding)."""
    eigenvalues = np.linalg.eigvalsh(M)
    slack = M.shape[0] * np.finfo(float).eps * max(float(eigenvalues[-1]), 0.0)
    return max(float(eigenvalues[0]) - slack, 0.0)


def block_certificates(f: ConeRank, U: np.ndarray, W: np.ndarray) -> tuple[BlockCertificate,
                                                                          BlockCertificate]:
    """Each convex block's certificate at ``(U, W)``: folding-in, then basis, both gaps
    relative to the objective (18) there. :math:`O(pNK)`."""
    fold = _FoldInProblem(f.pairs, U, f.band)
    scale = gap_scale(fold.value(W))
    return _folding_in_certificate(fold, W, scale), _basis_certificate(f.basis_update(W), U,
                                                                       scale)


def _folding_in_certificate(fold: _FoldInProblem, W: np.ndarray,
                            scale: float) -> BlockCertificate:
    r"""Pair j's loss :math:`a_j \|z_j - U w_j\|^2` is :math:`2 a_j \lambda_{\min}(U^\top
    U)`-strongly convex, so its Frank-Wolfe gap :math:`g_j` bounds :math:`\|w_j -
    w_j^*\|^2 \le g_j / (a_j \lambda_{\min})`; the radius sums them over the pairs."""
    pair_gaps = np.maximum(fold.gaps(W), 0.0)
    curvature = _curvature_floor(fold.M)
    radius = (float(np.sqrt(np.sum(pair_gaps / (fold.a * curvature)))) if curvature > 0
              else math.inf)
    gap = float(pair_gaps.sum())
    return BlockCertificate("folding-in", gap, gap / scale, radius)


def _basis_certificate(basis: BasisUpdate, U: np.ndarray, scale: float) -> BlockCertificate:
    r"""The basis objective is :math:`2 \lambda_{\min}(G)`-strongly convex in U, so its
    Frank-Wolfe gap g (:meth:`BasisUpdate.frank_wolfe_gap`) bounds :math:`\|U -
    U^*\|_F^2 \le g / \lambda_{\min}(G)`."""
    gap = max(basis.frank_wolfe_gap(U), 0.0)
    curvature = _curvature_floor(basis.G)
    radius = math.sqrt(gap / curvature) if curvature > 0 else math.inf
    return BlockCertificate("basis", gap, gap / scale, radius)


def _with_block_certificates(f: ConeRank, run: Run) -> Run:
    """``run`` with ``info["blocks"]``: :func:`block_certificates` at its point."""
    return run.replace(info={"blocks": block_certificates(f, *f.split(run.w))})


def _block_solver(method: str, description: str) -> Callable[..., Run]:
    """A solver running one block method on a FoldingIn or BasisUpdate, every step
    recorded (the certificate is the block's ``dual_value_at``)."""

    def solve(f: FoldingIn | BasisUpdate, options: SolverOptions) -> Run:
        rec = TraceRecorder(f, options)
        last = [0]

        def monitor(k: int, X: np.ndarray) -> bool:
            last[0] = k
            return rec.record(k, w=X.ravel())

        X = np.asarray(f.start(), dtype=np.float64)
        if isinstance(f, FoldingIn):
            X = X.reshape(f.pairs.n_pairs, f.K)
            if monitor(0, X):
                X = fold_in(f.pairs, f.U, X, band=f.band, method=method,  # type: ignore[arg-type]
                            tol=0.0, max_iter=rec.max_iter + 1, monitor=monitor).X
        else:
            X = X.reshape(f.pairs.n_features, f.K)
            if monitor(0, X):
                X = update_basis(f, X, method="pg", tol=0.0, max_iter=rec.max_iter + 1,
                                 monitor=monitor).X
        return rec.result(X.ravel(), None, last[0], f"block-{'apg' if method == 'pg' else method}")

    solve.__doc__ = description
    return solve


#: Step limit of the block solvers.
BLOCK_MAX_ITER = 20_000

solve_block_apg = solver("block-apg", needs=("primal_certificate", "cone_block"),
                         max_iter=BLOCK_MAX_ITER)(_block_solver(
    "pg", "Accelerated projected gradient on a ConeRank block (FoldingIn: exact projection "
    "onto the band (8); BasisUpdate: column balls), stopping on the certified gap."))
solve_block_eg = solver("block-eg", needs=("primal_certificate", "cone_block"),
                        max_iter=BLOCK_MAX_ITER)(_block_solver(
    "eg", "Exact exponentiated gradient on the FoldingIn block (Tran & Pham Sect. 4.2), "
    "backtracked step per pair, stopping on the certified gap."))


@takes_options(tol=ALTERNATION_TOL, max_iter=ALTERNATION_MAX_ITER)
def solve_alternation(
    f: ConeRank,
    options: SolverOptions,
    *,
    variant: Literal["sg", "eg"] = "sg",
    start: tuple[np.ndarray, np.ndarray] | None = None,
    inner_tol: float | None = None,
) -> Run:
    r"""Alg. 1 with both blocks solved to a certified gap (block-coordinate descent).

    Each outer iteration folds in every pair (``variant="sg"``: projected gradient,
    ``"eg"``: exponentiated gradient, both certified to ``inner_tol``) and then updates the
    basis (projected gradient, certified), both warm-started. A half-step is kept only if the
    objective does not increase, so the recorded objective (after every half-step) never
    increases. Stops when an outer iteration lowers the objective by at most ``tol``
    (relative).

    Parameters
    ----------
    f : ConeRank
    options : SolverOptions
        ``tol``: the relative decrease per outer iteration below which the run has
        converged; ``max_iter``: outer iterations; ``seed``: the random start
        (:meth:`ConeRank.random_start`) when ``start`` is None; ``time_budget``,
        ``callback``.
    variant : {"sg", "eg"}
    start : (U, W) or None
    inner_tol : float or None
        Relative certified gap of each block solve (default :data:`INNER_GAP` of the
        variant; at most :data:`INNER_MAX_ITER` steps per block).

    Returns
    -------
    Run
        ``w`` is the stacked ``(U, W)``; the trace records the objective after every
        half-step (``extra``: ``half`` 0 after the folding-in, 1 after the basis update,
        and ``block_gap``, the block's certified relative gap).
    """
    if variant not in ("sg", "eg"):
        raise ValueError(f"variant must be 'sg' or 'eg', got {variant!r}")
    max_iter, tol = int(options.max_iter or 0), float(options.tol or 0.0)
    rec = TraceRecorder(f, SolverOptions(tol=0.0, max_iter=2 * max_iter,
                                         time_budget=options.time_budget,
                                         callback=options.callback))
    U, W = f.random_start(options.seed) if start is None else (
        np.array(start[0], dtype=float), np.array(start[1], dtype=float))
    inner = INNER_GAP[variant] if inner_tol is None else float(inner_tol)
    value = objective(f.pairs, U, W)
    with blas_threads(1):  # products with K columns: threads only wait (see solve_stochastic)
        run = _alternate(f, rec, U, W, value, variant, tol, inner)
    if run.status is Status.MAX_ITER:  # the recorder counts half-steps
        run = run.replace(message=f"stopped: max_iter={max_iter} outer iterations reached")
    return _with_block_certificates(f, run)


def _alternate(f: ConeRank, rec: TraceRecorder, U: np.ndarray, W: np.ndarray, value: float,
               variant: str, tol: float, inner: float) -> Run:
    """The loop of :func:`solve_alternation`."""
    half, outer_start, block_gap = 0, value, float("nan")
    converged = False

    def go_on(k: int, X: np.ndarray) -> bool:  # a block solve stops with the run's budget
        return not rec.stop_due()

    while rec.record(half, w=f.join(U, W), values=(value, float("nan")), converged=converged,
                     extra={"half": (half - 1) % 2 if half else float("nan"),
                            "block_gap": block_gap}):
        if half % 2 == 0:
            res = fold_in(f.pairs, U, W, band=f.band, method="pg" if variant == "sg" else "eg",
                          tol=inner, max_iter=INNER_MAX_ITER[variant], monitor=go_on)
            if res.value <= value:
                W, value = res.X, res.value
        else:
            res = update_basis(f.basis_update(W), U, tol=INNER_GAP["sg"],
                               max_iter=INNER_MAX_ITER["sg"], monitor=go_on)
            if res.value <= value:
                U, value = res.X, res.value
            # a block cut short by the budget proves no convergence
            converged = (not rec.stop_due() and outer_start - value
                         <= tol * max(abs(outer_start), np.finfo(float).tiny))
            outer_start = value
        block_gap = res.gap / max(res.value, np.finfo(float).tiny)
        half += 1
    return rec.result(f.join(U, W), None, half // 2, f"alternation-{variant}")


@solver("alternation-sg", needs=("cone_blocks",), tol=ALTERNATION_TOL,
        max_iter=ALTERNATION_MAX_ITER)
def solve_alternation_sg(f: ConeRank, options: SolverOptions, **own: Any) -> Run:
    """Alg. 1 with the projected-gradient folding-in, both blocks certified
    (:func:`solve_alternation`, ``variant="sg"``)."""
    return solve_alternation(f, options, variant="sg", **own)


@solver("alternation-eg", needs=("cone_blocks",), tol=ALTERNATION_TOL,
        max_iter=ALTERNATION_MAX_ITER)
def solve_alternation_eg(f: ConeRank, options: SolverOptions, **own: Any) -> Run:
    """Alg. 1 with the exact exponentiated-gradient folding-in, both blocks certified
    (:func:`solve_alternation`, ``variant="eg"``)."""
    return solve_alternation(f, options, variant="eg", **own)


@takes_options(tol=0.0, max_iter=STOCHASTIC_PASSES["sg"])
def solve_stochastic(
    f: ConeRank,
    options: SolverOptions,
    *,
    variant: Literal["sg", "eg"] = "sg",
    mu: float | None = None,
    inner_tol: float = 1e-6,
    inner_max_iter: int = 200,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> Run:
    r"""Sect. 4.1's stochastic Alg. 1: one query at a time, with the paper's steps.

    For each query, in a new random order each pass: fold its pairs in with the paper's
    step (``"sg"``: clip and normalize; ``"eg"``: the linearized multiplicative step) until
    no coefficient moves by more than ``inner_tol`` (at most ``inner_max_iter`` steps),
    warm-started from the pairs' last coefficients; then one basis step of size ``mu`` per
    basis vector on that query's loss (3), :math:`\frac{1}{n_q}\sum_j \phi_j \|z_j - U
    w_j\|^2`, each vector rescaled to norm c if longer (Alg. 1 step 2).

    It has no stopping test: it runs ``max_iter`` passes over the queries (the number of
    passes regularizes, see :class:`cvxrank.estimators.ConeRankRanker`), so a run that
    made all of them ends with status ``max_iter``.

    Both steps are compiled loops (:mod:`cvxrank.formulations.conerank_kernels`): the same
    arithmetic as the printed steps in numpy, to rounding (``tests/solvers/test_conerank.py``
    checks 20 passes; on MQ2008, 40 passes at the paper's steps give the same measures after
    every pass), about 4x (EG) and 3x (SG) faster there. The EG step sets a coefficient that
    falls below the smallest normal double (2.2e-308) to 0, as the arithmetic itself does
    below 4.9e-324: its multiplicative step drives coefficients towards 0 geometrically, and
    an operation on a subnormal number costs a hundred times a normal one's (the module
    docstring of :mod:`~cvxrank.formulations.conerank_kernels` says what this changes).

    Parameters
    ----------
    f : ConeRank
    options : SolverOptions
        ``max_iter``: passes over the queries; ``seed``: the start
        (:meth:`ConeRank.random_start`) and the query order; ``time_budget``,
        ``callback``; ``tol`` is not used.
    variant : {"sg", "eg"}
    mu : float or None
        The step of both blocks (default :data:`PAPER_MU`: 0.001 for SG, 0.005 for EG).
    inner_tol, inner_max_iter
        Stopping rule of each query's folding-in.
    start : (U, W) or None

    Returns
    -------
    Run
        The objective (18) at the current (U, W) after every pass (iteration = passes).
    """
    if variant not in ("sg", "eg"):
        raise ValueError(f"variant must be 'sg' or 'eg', got {variant!r}")
    if f.band != (1.0, 1.0):
        raise ValueError("the paper's steps are for (18): lambda_l = lambda_u = 1")
    step = PAPER_MU[variant] if mu is None else MU_PARAM.check(mu)
    seed = options.seed
    rng = np.random.default_rng(seed)
    U, W = f.random_start(seed) if start is None else (np.array(start[0], dtype=float),
                                                        np.array(start[1], dtype=float))
    rec = TraceRecorder(f, options.replace(tol=0.0))
    with blas_threads(1):  # per-query products of n_q x N x K: 2 threads ran 15x slower
        k = _stochastic_passes(f, rec, U, W, variant, step, inner_tol, inner_max_iter, rng)
    run = rec.result(f.join(U, W), None, k, f"stochastic-{variant}", mu=step)
    if run.status is Status.MAX_ITER:
        run = run.replace(message=f"stopped after {k} pass{'' if k == 1 else 'es'} (the "
                          "stochastic solver has no stopping test)")
    return _with_block_certificates(f, run)


@solver("stochastic-sg", needs=("cone_blocks",), tol=0.0, max_iter=STOCHASTIC_PASSES["sg"])
def solve_stochastic_sg(f: ConeRank, options: SolverOptions, **own: Any) -> Run:
    """The paper's stochastic Alg. 1 with the clip-and-normalize folding-in
    (:func:`solve_stochastic`, ``variant="sg"``)."""
    return solve_stochastic(f, options, variant="sg", **own)


@solver("stochastic-eg", needs=("cone_blocks",), tol=0.0, max_iter=STOCHASTIC_PASSES["eg"])
def solve_stochastic_eg(f: ConeRank, options: SolverOptions, **own: Any) -> Run:
    """The paper's stochastic Alg. 1 with the exponentiated-gradient folding-in
    (:func:`solve_stochastic`, ``variant="eg"``)."""
    return solve_stochastic(f, options, variant="eg", **own)


def _stochastic_passes(f: ConeRank, rec: TraceRecorder, U: np.ndarray, W: np.ndarray,
                       variant: str, step: float, inner_tol: float, inner_max_iter: int,
                       rng: np.random.Generator) -> int:
    r"""The passes of :func:`solve_stochastic` (U and W updated in place); their count.

    Per query, the compiled steps of :mod:`cvxrank.formulations.conerank_kernels`: the
    folding-in at :math:`M = U^\top U`, :math:`B = Z_q U`, then the basis step from
    :math:`A = Z_q^\top \mathrm{diag}(\phi) W_q` and :math:`S = W_q^\top
    \mathrm{diag}(\phi) W_q`.

    Raises
    ------
    ValueError
        When a basis vector is not finite after its step (as
        :meth:`~cvxrank.numerics.sets.L2Ball.project` refuses it).
    """
    pairs, ptr = f.pairs, f.pairs.pair_ptr
    Z, phi, radius = pairs.Z, pairs.phi, float(f.c)
    k = 0
    while rec.record(k, w=f.join(U, W), values=(objective(pairs, U, W), float("nan"))):
        for q in rng.permutation(pairs.n_queries):
            if rec.stop_due():  # the budget or a Ctrl-C: the next record ends the run
                break
            lo, hi = int(ptr[q]), int(ptr[q + 1])
            Zq, phi_q = Z[lo:hi], phi[lo:hi]
            Wq, _ = _fold_in_paper(Zq @ U, W[lo:hi], U.T @ U, phi_q, variant == "eg", step,
                                   inner_tol, inner_max_iter)
            W[lo:hi] = Wq
            weighted = phi_q[:, None] * Wq
            if not conerank_kernels.basis_steps(U, Zq.T @ weighted, Wq.T @ weighted,
                                                2.0 / (hi - lo), step, radius):
                raise ValueError(f"ConeRank's stochastic basis step left a basis vector "
                                 f"not finite (query {q}, step {step:g}): the point must be "
                                 "finite; a smaller step is needed")
        else:
            k += 1
    return k


def reference_alternation(
    f: ConeRank,
    start: tuple[np.ndarray, np.ndarray],
    *,
    max_iter: int = 20,
    tol: float = 1e-6,
    solver_name: str = "CLARABEL",
) -> tuple[list[float], np.ndarray, np.ndarray]:
    """Block-coordinate descent with every block solved and certified by CVXPY.

    Each half-step is :func:`cvxrank.certificates.reference.solve_reference` on :meth:`ConeRank.
    folding_in` or :meth:`ConeRank.basis_update` (primal and dual agree, or SolverError).

    Returns
    -------
    values : list of float
        The objective at the start and after every half-step.
    U, W : ndarray
        The last point.
    """
    from cvxrank.certificates.reference import solve_reference

    U, W = (np.array(a, dtype=float) for a in start)
    values = [objective(f.pairs, U, W)]
    for _ in range(max_iter):
        ref = solve_reference(f.folding_in(U), solver=solver_name, cache=False)
        W = ref.w.reshape(W.shape).copy()
        values.append(objective(f.pairs, U, W))
        ref = solve_reference(f.basis_update(W), solver=solver_name, cache=False)
        U = ref.w.reshape(U.shape).copy()
        values.append(objective(f.pairs, U, W))
        if values[-3] - values[-1] <= tol * abs(values[-3]):
            break
    return values, U, W


def profile_objective(f: ConeRank, U: np.ndarray, *, tol: float = 1e-9) -> BlockResult:
    r"""The objective of (9) (or of (18) when the band is (1, 1)) at a basis U: every pair's
    coefficients minimized out, :math:`\sum_j a_j \min_{w \in \mathcal C} \|z_j - U
    w\|^2`, by the certified folding-in (``"pg"``).

    (9) asks :math:`\|u_k\|_2 = c`; (18) relaxes it to :math:`\le c`. The value is returned
    for any U; :meth:`ConeRank.feasibility` (with the coefficients) and
    ``np.linalg.norm(U, axis=0)`` say which constraint U meets.

    Returns
    -------
    BlockResult
        ``value`` within ``gap`` (certified, at most ``tol`` relative) above the minimum.
    """
    start = np.full((f.pairs.n_pairs, f.K), 1.0 / f.K)
    return fold_in(f.pairs, np.asarray(U, dtype=np.float64), start, band=f.band, method="pg",
                   tol=tol)
