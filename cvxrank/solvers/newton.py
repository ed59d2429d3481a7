r"""Primal truncated Newton for RankSVM: PRSVM and PRSVM+ (Chapelle & Keerthi 2010, Alg. 1).

The squared-hinge (or Huber) RankSVM primal :math:`P(w) = \tfrac12\|w\|^2 + C L(Xw)` is
minimized by Newton steps :math:`w \leftarrow w - t\,\delta w` where :math:`\delta w` solves
:math:`H \delta w = g` by linear conjugate gradient, with

.. math::

    g = w + C X^\top \frac{\partial L}{\partial s}, \qquad
    H v = v + C X^\top H_L (X v),

(Sect. 2, eq. (3); Sect. 3: :math:`Hs = s + 2C X^\top A^\top D A X s`). The Hessian is never
formed: CG only needs products. The two solvers differ in how L, its gradient and
:math:`H_L` products are computed (:mod:`cvxrank.formulations.pair_losses`):

* ``prsvm`` (Sect. 3): through the sparse pair operator A, O(nd + p) per product;
* ``prsvm+`` (Sect. 4): by sorting, O(nd + n log n) per gradient and O(nd + n) per Hessian
  product, the pairs never built.

Details the paper leaves open, as implemented here:

* **CG accuracy** (truncated Newton, Dembo & Steihaug 1983): CG stops at relative residual
  :math:`\eta_k = \min(0.5, \sqrt{\|g_k\| / \|g_0\|})`, a forcing sequence that gives a
  superlinear final phase; :func:`_conjugate_gradient` runs it. A run with an ``until`` rule
  (a model radius or certified measures beyond the tolerance) takes the quadratic
  :math:`\eta_k = \min(0.5, \|g_k\| / \|g_0\|)` (Dembo, Eisenstat & Steihaug 1982) until
  the tolerance is met: its steps cost a few more CG iterations, and the step that meets
  the tolerance mostly lands close enough to the optimum for the rule, where the
  superlinear sequence needs one more Newton iteration (measured by
  ``benchmarks/bench_certified_stop.py``).
* **Exact steps for few features**: once a step's CG needed as many products as there are
  features (d), the next step forms the d x d Newton matrix with d products and solves it by
  Cholesky, while the certified gap is above 1e-6 (:data:`EXPLICIT_MAX_FEATURES`,
  :data:`EXPLICIT_GAP`), and at any gap after a CG that reached its iteration limit (an
  ill-conditioned system, e.g. C = 1 on OHSUMED: CG's direction then barely descends and
  the line search crawls); Chapelle & Keerthi use CG whatever d, which ends within d
  iterations in exact arithmetic but can take up to 2d in floating point.
* **Step**: the paper takes t = 1; here t = 1 is tried first and halved until the Armijo
  condition :math:`P(w - t\delta w) \le P(w) - 10^{-4} t\, g^\top \delta w` holds (t = 1 is
  accepted in almost every iteration, and the check makes the method globally convergent on
  the piecewise-quadratic objective). The loss evaluated at the accepted point is reused by
  the next iteration, so one sort per Newton iteration remains.
* **Stopping**: the run stops when a *certified* relative gap
  :math:`(P(w) - D) / |P(w)| \le` ``tol`` (never at :math:`w = 0` while the gap there is
  positive: :mod:`cvxrank.tolerances`), with the best of two lower bounds on :math:`p^*`:
  the gradient's, :math:`D = P(w) - \|\nabla P(w)\|^2 / 2` (P is 1-strongly convex, so
  :math:`p^* \ge P(w) - \|g\|^2/2`; every loss), and for the squared hinge the dual value
  at the KKT point :math:`\alpha(w)`
  (:meth:`~cvxrank.formulations.ranksvm.RankSVM.dual_value_at`). Chapelle & Keerthi stop at
  Newton decrement / objective < 1e-6; a decrement from a truncated CG direction is no
  certificate (with a badly scaled feature it can stop the Huber loss a few percent above
  its optimum), so it is not used. The model radius is
  :math:`\min(\sqrt{2 g}, \|\nabla P(w)\|)`. When the line search finds no decrease
  representable in floating point before that (or the certified gap does not halve in
  :data:`STALL_STEPS` steps), the run stops and says so (status ``numerical`` unless the
  tolerance was met).
* **Scaling**: when the features are badly scaled (columns far apart, or far from unit
  scale: :func:`cvxrank.data.scales.badly_scaled`), CG is preconditioned by the diagonal of each
  Newton system (:func:`hessian_diagonal`, Jacobi; recomputed per system, since the first
  system's diagonal does not precondition the later ones of a 1e10 column), i.e. run on
  the column-scaled system: a feature column 10^12 times the others then changes neither
  the iterations much nor the optimum reached. On well-scaled data (LETOR's normalized
  features) the d extra Hessian products per step buy no CG iterations and only add time,
  so there is no preconditioner.

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, Alg. 1, eqs. (3), (5), (6), Sects. 3 and 4.
.. [2] S. S. Keerthi and D. DeCoste, "A modified finite Newton method for fast solution of
   large scale linear SVMs", JMLR 6, 2005.
.. [3] R. S. Dembo and T. Steihaug, "Truncated-Newton algorithms for large-scale
   unconstrained optimization", Math. Programming 26, 1983.
.. [4] R. S. Dembo, S. C. Eisenstat and T. Steihaug, "Inexact Newton methods", SIAM J.
   Numer. Anal. 19, 1982 (forcing terms O(||g||): quadratic convergence).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cvxrank import tolerances
from cvxrank.core.capabilities import require, solver, takes_options
from cvxrank.core.trace import Run, SolverOptions, Status, TraceRecorder
from cvxrank.data.scales import badly_scaled
from cvxrank.formulations.pair_losses import LossEvaluation
from cvxrank.numerics import rounding
from cvxrank.tolerances import (
    NEWTON_CG_ITER_PER_FEATURE,
    NEWTON_CG_MIN_ITER,
    NEWTON_FORCING_MAX,
    NEWTON_STALL_FACTOR,
    within,
)
from cvxrank.utils.lazy_sparse import sp
from cvxrank.utils.threads import blas_threads, product_threads

#: Most features for which a Newton step may form the d x d Newton matrix instead of running
#: CG. It is formed (d Hessian products, one per column of X) when the last step's CG needed
#: at least d products, so it costs no more than that CG did, and gives the exact Newton
#: direction, while the certified gap is above :data:`EXPLICIT_GAP` (near the optimum the
#: exact step of the piecewise-quadratic objective overshoots kinks that truncated CG steps
#: do not, and can stall short of a tight certificate); after an exact step that the line
#: search had to shorten, the fit goes back to CG. The exact steps save a fifth to a quarter
#: of the Hessian products on LETOR data (docs/architecture.md, "Exact Newton steps for few
#: features"). The matrix takes 8 d^2 bytes (2 MiB at d = 512).
EXPLICIT_MAX_FEATURES = 512

#: Relative certified gap above which exact Newton steps are taken (see above).
EXPLICIT_GAP = 1e-6

#: Armijo constant of the backtracking line search.
ARMIJO = 1e-4

#: Smallest step tried before the line search gives up (the iterate is then stationary to
#: machine precision).
MIN_STEP = 1e-12

#: Newton steps without the certified gap halving that stop the run as stalled: with a
#: feature column 1e12 times the others the certificate's rounding (the gradient's big
#: component) can stay above a tight tolerance while the iterate does not move.
STALL_STEPS = 10

#: Most preference pairs for which a run's last certificate may be computed again in
#: double-word arithmetic (:meth:`~cvxrank.formulations.ranksvm.RankSVM.accurate_gradient`:
#: O(p d), about a microsecond per pair at 45 features: a few seconds at this size).
ACCURATE_MAX_PAIRS = 5_000_000

#: Refinement steps of the last iterate with its double-word gradient
#: (:func:`_accurate_certificate`), and CG's relative residual in each.
REFINEMENT_STEPS = 3
REFINEMENT_RTOL = 1e-10

#: Default Newton iteration limit ("a handful" of iterations in practice: Chapelle &
#: Keerthi 2010, Sect. 2).
MAX_ITER = 50

#: Solver names by pairwise-loss engine.
ENGINE_SOLVER = {"pairs": "prsvm", "sorted": "prsvm+"}

#: Capabilities (:mod:`cvxrank.core.capabilities`) each engine needs of the formulation.
ENGINE_NEEDS = {"pairs": ("pairwise_newton",), "sorted": ("pairwise_newton", "sorted_pairs")}


@takes_options(tol=tolerances.NEWTON_GAP, max_iter=MAX_ITER)
def solve_truncated_newton(
    formulation: Any,
    options: SolverOptions,
    *,
    engine: str = "sorted",
    max_cg_iter: int | None = None,
    start: np.ndarray | None = None,
) -> Run:
    r"""Truncated Newton on the RankSVM primal: PRSVM (``engine="pairs"``) or PRSVM+.

    Parameters
    ----------
    formulation : RankSVM
        A squared-hinge or Huber RankSVM: the ``pairwise_newton`` capability (and
        ``sorted_pairs`` for PRSVM+), with ``X`` and ``C``. With the ``primal_certificate``
        capability (squared hinge) the certificate is computed from the loss evaluation
        the iteration holds anyway, on the solver's clock.
    options : SolverOptions
        ``tol``: relative certified gap (module docstring); ``max_iter``: Newton
        iterations; ``time_budget``, ``callback``, ``until``
        (:class:`~cvxrank.core.trace.SolverOptions`); the method is deterministic (no seed).
    engine : {"sorted", "pairs"}
        ``"sorted"``: PRSVM+ (O(nd + n log n), no pairs, structured weights only);
        ``"pairs"``: PRSVM (O(nd + p) through the pair operator A).
    max_cg_iter : int or None
        CG iteration limit per Newton step (default ``max(50, 2 d)``:
        :data:`~cvxrank.tolerances.NEWTON_CG_MIN_ITER`,
        :data:`~cvxrank.tolerances.NEWTON_CG_ITER_PER_FEATURE`).
    start : ndarray of shape (d,) or None
        The first iterate (a warm start, e.g. the optimum at a neighbouring C); None: w = 0.
        The certificate is the same whatever the start (the gradient at the last iterate,
        with the rounding of the scores :math:`X w` from the start's product on). From
        w = 0 the Newton steps already take 4-6 iterations on LETOR's folds, and the
        neighbouring optimum of a grid over C saves none there (on OHSUMED's five folds
        at C = 1e-5 ... 5e-4 it took 96 iterations against 89 from 0), so the grids
        start from 0.

    Returns
    -------
    Run
        ``w``, no ``alpha``, the trace (primal and, for the squared hinge, the certified dual
        value per Newton iteration; the radius :math:`\min(\sqrt{2 g}, \|\nabla P(w)\|)`,
        the objective being 1-strongly convex), and ``info`` with ``cg_iterations`` (per
        Newton step), ``steps`` (line-search step sizes), ``engine`` and ``stalled``.

    Raises
    ------
    CapabilityError
        For a formulation without the capabilities of the engine (the hinge loss is not
        differentiable: use a dual solver).
    ValueError
        For an unknown engine.

    References
    ----------
    .. [1] O. Chapelle and S. S. Keerthi, Inf. Retrieval 13, 2010, Alg. 1, Sects. 3-4.
    """
    name = _engine_solver(engine)
    require(formulation, name, ENGINE_NEEDS[engine])
    if start is not None:
        start = np.array(start, dtype=np.float64).ravel()
        if start.shape != (formulation.data.n_features,) or not np.all(np.isfinite(start)):
            raise ValueError(f"start must be {formulation.data.n_features} finite weights, "
                             f"got shape {start.shape}")
    # products with X of tens of columns: one BLAS thread (utils.threads.product_threads)
    with blas_threads(product_threads(formulation.data.n_features)):
        return _truncated_newton(formulation, options, engine, name, max_cg_iter, start)


def _truncated_newton(f: Any, options: SolverOptions, engine: str, name: str,
                      max_cg_iter: int | None, start: np.ndarray | None) -> Run:
    """The iterations of :func:`solve_truncated_newton` (its capabilities and ``start``
    checked)."""
    rec = TraceRecorder(f, options)  # the clock starts: building A counts (PRSVM)
    # a formulation whose data live elsewhere (sharded over a cluster) gives its own model
    model = (f.newton_model(engine, start) if isinstance(f, ProvidesNewtonModel)
             else LocalNewtonModel(f, engine, start))
    C = f.C
    d = model.n_features
    max_cg = (max(NEWTON_CG_MIN_ITER, NEWTON_CG_ITER_PER_FEATURE * d) if max_cg_iter is None
              else int(max_cg_iter))
    w = np.zeros(d) if start is None else start.copy()
    ev = model.evaluation
    value = 0.5 * float(w @ w) + C * ev.value
    # L(0) and ||X^T dL/ds||^2 at w = 0, for fitting.meaningful_C (a warm start has none)
    at_zero: tuple[float, float] | None = None
    g0_norm = None
    cg_counts: list[int] = []
    steps: list[float] = []
    k = flat = explicit_steps = 0
    explicit_allowed = d <= EXPLICIT_MAX_FEATURES
    gap_best = math.inf
    stalled = False
    while True:
        loss_gradient = model.loss_gradient()
        if k == 0 and start is None:
            at_zero = (float(ev.value), float(loss_gradient @ loss_gradient))
        g = w + C * loss_gradient
        g_norm = float(np.linalg.norm(g))
        # ||w - w*|| <= ||grad P(w)|| <= ||g|| + its rounding, and P(w) - p* <= that squared
        # over 2 (1-strongly convex): the certificate in its well-conditioned form
        radius = g_norm + float(np.linalg.norm(model.gradient_error(w, C)))
        half = 0.5 * g_norm * g_norm
        if not rec.record(k, w=w, step=steps[-1] if steps else float("nan"),
                          converged=radius == 0.0, values=(value, value - half), gap=half,
                          gap_error=0.5 * radius * radius - half, radius=radius):
            break
        if g_norm == 0.0:  # no direction: the rounding bound is the certificate
            stalled = True
            break
        g0_norm = g_norm if g0_norm is None else g0_norm

        gap = 0.5 * radius * radius  # the certified gap
        explicit = (explicit_allowed and bool(cg_counts) and cg_counts[-1] >= d
                    and (gap > EXPLICIT_GAP * abs(value) or cg_counts[-1] >= max_cg))
        direction, n_cg = _direction(model, C, g, explicit, _forcing(g_norm / g0_norm, rec),
                                     max_cg)
        explicit_steps += explicit
        cg_counts.append(n_cg)
        t, w_new, trial, value_new, stalled = _line_search(model, C, w, value, g, g_norm,
                                                           direction)
        # the certified gap not halved (NEWTON_STALL_FACTOR) in STALL_STEPS steps: no
        # progress (a flat objective whose certificate still tightens, as with every feature
        # 1e10 times unit scale, is progress)
        flat = 0 if gap < NEWTON_STALL_FACTOR * gap_best else flat + 1
        gap_best = min(gap_best, gap) if flat == 0 else gap_best
        if stalled or flat >= STALL_STEPS:  # no decrease representable at this w
            stalled = True
            break
        k += 1
        model.accept()
        w, ev, value = w_new, trial, value_new
        steps.append(t)
        if explicit and t < 1.0:  # the exact step overshoots: truncated CG from here on
            explicit_allowed = False
    recorded = len(rec.trace)
    w, value = _accurate_certificate(f, rec, model, w, value, k, max_cg)
    info = {"cg_iterations": cg_counts, "steps": steps, "engine": engine, "stalled": stalled,
            "explicit_steps": explicit_steps, "loss_at_zero": at_zero,
            "accurate_certificate": len(rec.trace) > recorded}
    if not stalled:
        return rec.result(w, None, k, name, **info)
    return _stalled_run(rec, w, k, name, info)


def _engine_solver(engine: str) -> str:
    """The solver name of ``engine`` (ValueError naming the engines for another)."""
    name = ENGINE_SOLVER.get(engine)
    if name is None:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_SOLVER)}; got {engine!r}")
    return name


def _direction(model: NewtonModel, C: float, g: np.ndarray, explicit: bool, forcing: float,
               max_cg: int) -> tuple[np.ndarray, int]:
    """The Newton direction of ``(I + C H) p = g`` and the CG iterations it took: the d x d
    system solved exactly (``explicit``, counted as d), else truncated CG (Jacobi
    preconditioned on badly scaled features)."""
    if explicit:
        return _newton_system(model.newton_matrix(), C, g), model.n_features

    def matvec(v: np.ndarray) -> np.ndarray:
        return v + C * model.hessian_product(v)

    diagonal = (1.0 + C * np.maximum(model.hessian_diagonal(), 0.0) if model.scaled
                else None)
    return _conjugate_gradient(matvec, g, forcing, max_cg, diagonal)


def _line_search(model: NewtonModel, C: float, w: np.ndarray, value: float, g: np.ndarray,
                 g_norm: float, direction: np.ndarray
                 ) -> tuple[float, np.ndarray, Any, float, bool]:
    """Armijo backtracking from t = 1 along ``-direction`` (the gradient itself when the
    direction does not descend): ``(t, w_new, trial, value_new, stalled)``, stalled when no
    step down to :data:`MIN_STEP` decreases P representably."""
    decrement = float(g @ direction)
    if not decrement > 0:  # CG returned no descent direction: fall back to the gradient
        direction, decrement = g, g_norm * g_norm
    model.set_direction(direction)
    t = 1.0
    while True:
        w_new = w - t * direction
        trial = model.try_step(w_new, t)
        value_new = 0.5 * float(w_new @ w_new) + C * trial.value
        if value_new <= value - ARMIJO * t * decrement:
            return t, w_new, trial, value_new, False
        t *= 0.5
        if t < MIN_STEP:
            return t, w_new, trial, value_new, True


def _stalled_run(rec: TraceRecorder, w: np.ndarray, k: int, name: str,
                 info: dict[str, Any]) -> Run:
    """The run of a line search that found no representable decrease: converged when the
    last record (at this w) met the tolerance, else a numerical stop."""
    converged = rec.tol_met
    run = rec.result(w, None, k, name, status=Status.CONVERGED if converged else
                     Status.NUMERICAL, message="", **info)
    return run.replace(message=(
        ("converged" if converged else "stopped") + ": the line search found no decrease "
        "representable in floating point" + ("" if converged else
        f" before the tolerance was met (relative gap {run.relative_gap:.2e})")))


class NewtonModel(Protocol):
    r"""What :func:`solve_truncated_newton` asks of the loss term :math:`L(Xw)` at its
    iterate: the data may be in memory (:class:`LocalNewtonModel`) or sharded by query
    over a cluster (:class:`cvxrank.distributed.newton.ShardedNewtonModel`), where each
    method is a sum of per-shard terms.

    Attributes
    ----------
    n_features : int
    scaled : bool
        Whether CG is preconditioned by the Newton system's diagonal
        (:func:`cvxrank.data.scales.badly_scaled`).
    evaluation : LossEvaluation
        The loss at the iterate (its ``value`` and ``margin_hinge`` at least).
    """

    n_features: int
    scaled: bool
    evaluation: LossEvaluation

    def loss_gradient(self) -> np.ndarray:
        r""":math:`X^\top \partial L / \partial s` at the iterate."""

    def hessian_product(self, v: np.ndarray) -> np.ndarray:
        r""":math:`X^\top H_L X v` at the iterate."""

    def hessian_diagonal(self) -> np.ndarray:
        r"""The diagonal of :math:`X^\top H_L X` at the iterate."""

    def newton_matrix(self) -> np.ndarray:
        r""":math:`X^\top H_L X` (d x d) at the iterate."""

    def set_direction(self, direction: np.ndarray) -> None:
        """The Newton direction of the coming line search."""

    def try_step(self, w_new: np.ndarray, t: float) -> LossEvaluation:
        """The loss at the trial point ``w_new = w - t * direction``."""

    def accept(self) -> None:
        """Make the last trial point the iterate."""

    def gradient_error(self, w: np.ndarray, C: float) -> np.ndarray:
        r"""Per feature, a bound on the rounding of :math:`w + C X^\top \partial L /
        \partial s` at the iterate ``w`` (:func:`cvxrank.numerics.rounding.gradient_error`)."""


@runtime_checkable
class ProvidesNewtonModel(Protocol):
    """A formulation whose data live elsewhere (sharded over a cluster,
    :class:`cvxrank.distributed.ShardedRankSVM`) and which gives the Newton solvers its own
    :class:`NewtonModel`; a formulation in memory gets :class:`LocalNewtonModel`."""

    def newton_model(self, engine: str, start: np.ndarray | None = None) -> NewtonModel:
        """The model of PRSVM (``engine="pairs"``) or PRSVM+ (``"sorted"``) at ``start``
        (None: w = 0)."""


class LocalNewtonModel:
    """The :class:`NewtonModel` of a formulation in memory: ``X`` and its loss engine
    (``engine``: ``"sorted"``, PRSVM+, or ``"pairs"``, PRSVM); the scores ``s = X w`` are
    kept, and a trial point's are ``s - t X direction`` (one product with X per Newton
    step, none per line-search trial), from ``start`` (None: w = 0)."""

    def __init__(self, formulation: Any, engine: str, start: np.ndarray | None = None
                 ) -> None:
        self._X = formulation.X
        self._engine = formulation.loss_engine(engine)
        self.n_features = int(self._X.shape[1])
        # Jacobi preconditioning on badly scaled features only (on normalized ones the
        # diagonal's products are wasted work)
        self.scaled = badly_scaled(formulation.data)
        self._columns = FeatureColumns(self._X)
        self._data = formulation.data
        self._score_error = ScoreError.at(self._data.column_scales, start)
        self._s = (np.zeros(self._X.shape[0]) if start is None
                   else np.asarray(self._X @ start, dtype=np.float64))
        self.evaluation = self._engine.evaluate(self._s)
        self._x_dir: np.ndarray | None = None
        self._direction = np.zeros(self.n_features)
        self._trial: tuple[np.ndarray, LossEvaluation, ScoreError] | None = None

    def loss_gradient(self) -> np.ndarray:
        return np.asarray(self._X.T @ self.evaluation.grad)

    def hessian_product(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self._X.T @ self.evaluation.hessp(np.asarray(self._X @ v)))

    def hessian_diagonal(self) -> np.ndarray:
        return hessian_diagonal(self._columns, self.evaluation.hessp)

    def newton_matrix(self) -> np.ndarray:
        return newton_matrix(self._X, self._columns, self.evaluation.hessp)

    def set_direction(self, direction: np.ndarray) -> None:
        # the product itself, not X p summed over CG's steps: after tens of CG steps that
        # sum drifts from X direction (and the scores s from X w), and the line search
        # then crawls at rounding level short of the optimum
        self._x_dir = np.asarray(self._X @ direction)
        self._direction = np.asarray(direction, dtype=np.float64)

    def try_step(self, w_new: np.ndarray, t: float) -> LossEvaluation:
        s_new = self._s - t * self._x_dir
        trial = self._engine.evaluate(s_new)
        self._trial = (s_new, trial, self._score_error.after(t * self._direction, w_new))
        return trial

    def accept(self) -> None:
        self._s, self.evaluation, self._score_error = self._trial
        self._trial = None

    def gradient_error(self, w: np.ndarray, C: float) -> np.ndarray:
        grad = self.evaluation.grad
        loss = self.evaluation.rounding()
        return rounding.gradient_error(
            w, C, self._data.column_scales, self._data.column_norms, grad.size,
            float(np.abs(grad).sum()), float(np.linalg.norm(grad)),
            loss.grad_bound(self._score_error.value))


class ScoreError:
    r"""A bound on :math:`\|\hat s - X \hat w\|_\infty` for scores that a solver updates
    along its steps, :math:`\hat s \leftarrow \hat s - fl(X (t d))`, from exact 0 at
    w = 0 (:func:`cvxrank.numerics.rounding.score_step_error` per step).

    Parameters
    ----------
    column_scales : ndarray
        The largest magnitude of each feature column.
    value : float
        The bound so far.
    """

    def __init__(self, column_scales: np.ndarray, value: float = 0.0) -> None:
        self.column_scales = column_scales
        self.value = value

    @classmethod
    def at(cls, column_scales: np.ndarray, start: np.ndarray | None) -> ScoreError:
        """The bound of the scores :math:`fl(X w_0)` at a start (exact 0 at w = 0: None)."""
        return cls(column_scales, 0.0 if start is None
                   else rounding.product_error(column_scales, start))

    def after(self, step: np.ndarray, w_new: np.ndarray) -> ScoreError:
        """The bound after the update by ``step`` (:math:`t d`) to ``w_new``; the scores'
        size from the weights' (:func:`cvxrank.numerics.rounding.score_bound`)."""
        scores_max = rounding.score_bound(self.column_scales, w_new) + self.value
        return ScoreError(self.column_scales, self.value + rounding.score_step_error(
            self.column_scales, step, w_new, scores_max))


def _accurate_certificate(f: Any, rec: TraceRecorder, model: NewtonModel, w: np.ndarray,
                          value: float, k: int, max_cg: int) -> tuple[np.ndarray, float]:
    """Record the last iterate once more with a more accurate gradient where the float64
    certificate fell short of what the fit asks: the tolerance not met although the run
    stopped on its own, not at a limit it was given (a badly scaled column's gradient entry
    loses its digits, the line search stalls), or an ``until`` rule left open at the float64
    bound's rounding level. Only for a formulation with the capability.

    Two gradients are tried, cheaper first, until one certifies what the fit asks:
    ``compensated_gradient`` (the inner products with X in double-word arithmetic, O(nd):
    on a large data set their rounding is what float64's bound is made of) and, for at most
    :data:`ACCURATE_MAX_PAIRS` pairs, ``accurate_gradient`` (everything in double-word
    arithmetic over the explicit pairs, O(pd): a rounding bound some 1e-16 of the float64
    one, which a badly scaled column needs).

    With each, where the certificate still misses the tolerance, the iterate is refined
    (:data:`REFINEMENT_STEPS` at most, each kept only if it shrinks the gradient): the
    Newton step solves the iterate's Newton system (its float64 Hessian; exactly, by
    Cholesky, for at most :data:`EXPLICIT_MAX_FEATURES` features, else by CG) for the
    accurate gradient, iterative refinement with the residual in extended precision (Higham
    2002, Ch. 12), which brings a weight of a 1e10 column within rounding of the optimum's
    where the float64 line search sees no decrease.

    Returns
    -------
    w, value
        The point recorded last and its objective (the given ones when nothing was
        recorded).
    """
    if rec.status in (Status.MAX_ITER, Status.TIME_BUDGET, Status.INTERRUPTED):
        return w, value  # the limits the fit was given hold
    if "accurate_gradient" not in f.capabilities:
        return w, value
    gradients = [f.compensated_gradient]
    if f.n_dual <= ACCURATE_MAX_PAIRS:
        gradients.append(f.accurate_gradient)
    for gradient in gradients:
        if rec.tol_met and not rec.until_open:
            break
        first = gradient(w)
        if first is not None:
            w, value = _refined_record(f, rec, model, w, value, k, max_cg, gradient, first)
    return w, value


def _refined_record(f: Any, rec: TraceRecorder, model: NewtonModel, w: np.ndarray,
                    value: float, k: int, max_cg: int,
                    gradient: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray] | None],
                    first: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, float]:
    """:func:`_accurate_certificate` with one ``gradient`` (its value ``first`` at ``w``):
    the refinement steps and the record of the point they end at; that point and its
    objective."""
    C = f.C
    g, error = first
    diagonal = (1.0 + C * np.maximum(model.hessian_diagonal(), 0.0) if model.scaled
                else None)
    for _ in range(REFINEMENT_STEPS):
        radius = float(np.linalg.norm(g)) + float(np.linalg.norm(error))
        if within(0.5 * radius * radius, value, rec.tol):
            break
        if model.n_features <= EXPLICIT_MAX_FEATURES:  # the system itself, however conditioned
            step = _newton_system(model.newton_matrix(), C, g)
        else:
            step, _ = _conjugate_gradient(lambda v: v + C * model.hessian_product(v), g,
                                          REFINEMENT_RTOL, max_cg, diagonal)
        refined = w - step
        g_new, error_new = gradient(refined)
        if not np.linalg.norm(g_new) < np.linalg.norm(g):
            break
        w, g, error, value = refined, g_new, error_new, float(f.primal_value(refined))
    g_norm = float(np.linalg.norm(g))
    radius = g_norm + float(np.linalg.norm(error))
    half = 0.5 * g_norm * g_norm
    rec.record(k, w=w, values=(value, value - half), gap=half,
               gap_error=0.5 * radius * radius - half, radius=radius)
    return w, value


def _forcing(ratio: float, rec: TraceRecorder) -> float:
    r"""CG's relative residual for the next Newton direction (module docstring): the
    superlinear :math:`\min(0.5, \sqrt{\|g\|/\|g_0\|})`, or with an ``until`` rule (a
    model radius or certified measures to reach beyond the tolerance) the quadratic
    :math:`\min(0.5, \|g\|/\|g_0\|)` until the tolerance is met (after it, the radius
    needs only a modest cut, which the superlinear term gives at fewer CG iterations); the
    cap 0.5 is :data:`~cvxrank.tolerances.NEWTON_FORCING_MAX`."""
    quadratic = rec.options.until is not None and not rec.tol_met
    return min(NEWTON_FORCING_MAX, ratio if quadratic else math.sqrt(ratio))


class FeatureColumns:
    """The columns of ``X``, one at a time, as contiguous float64 vectors (for
    :func:`hessian_diagonal` and :func:`newton_matrix`): copied from a dense ``X`` when
    asked, so that the whole of X is never copied, or read from a CSC form of a sparse ``X``
    built at the first request."""

    def __init__(self, X: Any) -> None:
        self._X = X

    def __len__(self) -> int:
        return int(self._X.shape[1])

    @functools.cached_property
    def _csc(self) -> sp.csc_matrix:
        return sp.csc_matrix(self._X)

    def __getitem__(self, j: int) -> np.ndarray:
        if not sp.issparse(self._X):
            return np.ascontiguousarray(self._X[:, j], dtype=np.float64)
        csc = self._csc
        lo, hi = csc.indptr[j], csc.indptr[j + 1]
        column = np.zeros(csc.shape[0])
        column[csc.indices[lo:hi]] = csc.data[lo:hi]
        return column


def hessian_diagonal(columns: Sequence[np.ndarray], hessp: Any) -> np.ndarray:
    r"""The diagonal of :math:`X^\top H_L X`, :math:`x_j^\top H_L x_j` for each column
    :math:`x_j` of ``columns`` (:class:`FeatureColumns`, or any sequence of the columns; d
    products with :math:`H_L`, O(nd) in all, about one Hessian product). The Newton system
    :math:`H = I + C X^\top H_L X` has the diagonal :math:`1 + C x_j^\top H_L x_j`, the
    Jacobi preconditioner of CG.

    Preconditioning CG by that diagonal is CG on the column-scaled system
    :math:`D^{-1/2} H D^{-1/2}`: the Newton direction does not depend on the scale of a
    feature (a raw count beside normalized features puts a 1e16 spread on the diagonal of
    H, where plain CG stalls), as in LIBLINEAR's preconditioned trust-region Newton
    (Hsia, Chiang & Lin, ACML 2018).
    """
    diag = np.empty(len(columns))
    for j in range(diag.size):
        column = columns[j]
        diag[j] = column @ hessp(column)
    return diag


def newton_matrix(X: Any, columns: Sequence[np.ndarray], hessp: Any) -> np.ndarray:
    r""":math:`X^\top H_L X` formed column by column (d Hessian products, one column of X
    at a time, from ``columns``: :class:`FeatureColumns`)."""
    d = X.shape[1]
    matrix = np.empty((d, d))
    for j in range(d):
        matrix[:, j] = np.asarray(X.T @ hessp(columns[j]))
    return matrix


def _newton_system(matrix: np.ndarray, C: float, g: np.ndarray) -> np.ndarray:
    r"""The Newton direction :math:`H^{-1} g` with :math:`H = I + C M`, ``matrix`` M
    :math:`= X^\top H_L X` (formed column by column: d Hessian products), solved by
    Cholesky; :func:`numpy.linalg.lstsq` if rounding left H not positive definite."""
    H = np.eye(matrix.shape[0]) + C * matrix
    H = 0.5 * (H + H.T)
    try:
        factor = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(H, g, rcond=None)[0]
    return np.linalg.solve(factor.T, np.linalg.solve(factor, g))


def _conjugate_gradient(matvec: Any, b: np.ndarray, rtol: float, maxiter: int,
                        diagonal: np.ndarray | None) -> tuple[np.ndarray, int]:
    r"""Linear conjugate gradients for ``A x = b`` from x = 0 (``matvec(v)`` is ``A v``),
    preconditioned by the inverse of ``diagonal`` (Jacobi; None: none), until the residual
    is at most ``rtol ||b||`` or ``maxiter`` products.

    Returns
    -------
    x, products
        The solution and the number of products.

    Notes
    -----
    The Newton system is symmetric positive definite (:math:`I + C X^\top H_L X`), so plain
    CG applies (Chapelle & Keerthi 2010, Sect. 3: the Newton step by linear CG); written out
    here (the preconditioned CG of Nocedal & Wright, Algorithm 5.3, with scipy's stopping
    test) so that a fit does not import ``scipy.sparse.linalg``.
    """
    x = np.zeros_like(b)
    r = b.copy()
    threshold = rtol * float(np.linalg.norm(b))
    inverse = None if diagonal is None else 1.0 / diagonal
    p: np.ndarray | None = None
    rho_previous = 1.0
    for iteration in range(maxiter):
        if float(np.linalg.norm(r)) <= threshold:
            return x, iteration
        z = r if inverse is None else inverse * r
        rho = float(r @ z)
        p = z.copy() if p is None else z + (rho / rho_previous) * p
        q = matvec(p)
        curvature = float(p @ q)
        if curvature == 0.0:  # p = 0 to working precision: nothing more to gain
            return x, iteration + 1
        alpha = rho / curvature
        x += alpha * p
        r -= alpha * q
        rho_previous = rho
    return x, maxiter


@solver("prsvm", needs=ENGINE_NEEDS["pairs"], tol=tolerances.NEWTON_GAP, max_iter=MAX_ITER)
def solve_prsvm(formulation: Any, options: SolverOptions, **own: Any) -> Run:
    """PRSVM: :func:`solve_truncated_newton` through the pair operator A (Sect. 3)."""
    return solve_truncated_newton(formulation, options, engine="pairs", **own)


@solver("prsvm+", needs=ENGINE_NEEDS["sorted"], tol=tolerances.NEWTON_GAP, max_iter=MAX_ITER)
def solve_prsvm_plus(formulation: Any, options: SolverOptions, **own: Any) -> Run:
    """PRSVM+: :func:`solve_truncated_newton` with O(n log n) sorted gradients (Sect. 4)."""
    return solve_truncated_newton(formulation, options, engine="sorted", **own)
