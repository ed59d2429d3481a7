"""Per-iteration records of a solver run, and the stopwatch that keeps them honest.

A hand-written solver runs ``while recorder.record(k, w=..., alpha=...):`` in the benchopt
style: :meth:`TraceRecorder.record` stops the solver's clock, evaluates the objectives for
the trace (time not charged to the solver), calls the user's callback, decides whether to stop
(tolerance, iteration or time budget, callback) and restarts the clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cvxrank.formulations.base import Formulation


@dataclass
class Trace:
    """Columns of a solver run, one entry per recorded iteration.

    Attributes
    ----------
    iteration : list of int
        Iteration (or epoch) count at the record.
    time : list of float
        Solver time in seconds up to the record, excluding trace evaluation.
    primal : list of float
        Primal objective at the current primal point.
    dual : list of float
        Dual objective at the current dual point, or at the dual point a primal iterate
        certifies (NaN when there is none).
    gap : list of float
        Duality gap ``primal - dual`` (NaN when there is no dual value).
    step : list of float
        The step size used last (NaN when not applicable).
    """

    iteration: list[int] = field(default_factory=list)
    time: list[float] = field(default_factory=list)
    primal: list[float] = field(default_factory=list)
    dual: list[float] = field(default_factory=list)
    gap: list[float] = field(default_factory=list)
    step: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.iteration)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays."""
        return {k: np.asarray(v, dtype=float) for k, v in asdict(self).items()}


@dataclass
class SolverResult:
    """What a hand-written solver returns (scipy's OptimizeResult in spirit).

    Attributes
    ----------
    w : ndarray
        Final primal weights.
    alpha : ndarray or None
        Final dual point, for dual or primal-dual solvers.
    trace : Trace
        The recorded iterations.
    converged : bool
        Whether the stopping tolerance was met.
    message : str
        Why the run stopped.
    n_iter : int
        Iterations (or epochs) run.
    solver : str
        The solver's registry name.
    formulation : str
        The formulation's registry name.
    info : dict
        Solver-specific extras (step sizes, CG iterations, ...).
    """

    w: np.ndarray
    alpha: np.ndarray | None
    trace: Trace
    converged: bool
    message: str
    n_iter: int
    solver: str
    formulation: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> float:
        """Total solver time in seconds (trace evaluation excluded)."""
        return self.trace.time[-1] if len(self.trace) else 0.0

    @property
    def objective(self) -> float:
        """Last recorded primal objective."""
        return self.trace.primal[-1] if len(self.trace) else float("nan")


Callback = Callable[[int, np.ndarray, "np.ndarray | None", Trace], "bool | None"]


class TraceRecorder:
    """Stopwatch plus trace for a hand-written solver.

    Parameters
    ----------
    formulation : Formulation
        Supplies ``primal_value``, ``dual_value`` and ``primal_from_dual``.
    tol : float
        Stop when the relative duality gap ``gap / max(1, |primal|)`` is at most ``tol``.
        The dual value is ``dual_value(alpha)`` for solvers that have a dual point, and
        ``dual_value_at(w)`` for primal solvers on formulations whose primal point certifies
        a dual bound (the squared-hinge RankSVM); other primal-only solvers decide
        convergence themselves and pass ``converged=True``.
    max_iter : int
        Stop after this many iterations.
    time_budget : float or None
        Stop when solver time exceeds this many seconds.
    callback : callable, optional
        ``callback(k, w, alpha, trace)``; returning True stops the run.
    record_every : int
        Record only every this many iterations (the first and last are always recorded).
    """

    def __init__(
        self,
        formulation: Formulation,
        *,
        tol: float,
        max_iter: int,
        time_budget: float | None = None,
        callback: Callback | None = None,
        record_every: int = 1,
    ) -> None:
        if tol < 0 or max_iter < 0:
            raise ValueError("tol and max_iter must be non-negative")
        if record_every < 1:
            raise ValueError("record_every must be >= 1")
        self.formulation = formulation
        self.tol = tol
        self.max_iter = max_iter
        self.time_budget = time_budget
        self.callback = callback
        self.record_every = record_every
        self.trace = Trace()
        self.converged = False
        self.message = "running"
        self._elapsed = 0.0
        self._started = time.perf_counter()

    def record(
        self,
        k: int,
        *,
        w: np.ndarray | None = None,
        alpha: np.ndarray | None = None,
        step: float = float("nan"),
        converged: bool = False,
        values: tuple[float, float] | None = None,
    ) -> bool:
        """Record iteration ``k``; return True while the solver should go on.

        Give ``alpha`` (and optionally ``w``, else ``w = primal_from_dual(alpha)``) for dual
        solvers, or ``w`` alone for primal solvers. A solver that computes the primal value
        and the dual bound at this point as part of its own iteration (PRSVM's certificate)
        passes them as ``values = (primal, dual)``: they are then charged to the solver's
        clock and not evaluated again. (Validation re-evaluates the returned point itself.)
        """
        self._elapsed += time.perf_counter() - self._started
        last = converged or k >= self.max_iter or (
            self.time_budget is not None and self._elapsed >= self.time_budget
        )
        f = self.formulation
        if w is None:
            if alpha is None:
                raise ValueError("record needs w or alpha")
            w = f.primal_from_dual(alpha)
        due = k % self.record_every == 0 or last or not self.trace.iteration
        gap_ok = False
        if due or alpha is not None or values is not None:
            if values is not None:
                p, d = (float(v) for v in values)
            else:
                p = f.primal_value(w)
                if alpha is not None:
                    d = f.dual_value(alpha)
                else:  # a primal solver: the dual bound its iterate certifies, if any
                    certificate = getattr(f, "dual_value_at", None)
                    d = certificate(w) if certificate is not None else float("nan")
            gap = p - d
            gap_ok = bool(np.isfinite(d)) and gap <= self.tol * max(1.0, abs(p))
            if due or gap_ok:
                tr = self.trace
                tr.iteration.append(int(k))
                tr.time.append(self._elapsed)
                tr.primal.append(float(p))
                tr.dual.append(float(d))
                tr.gap.append(float(gap))
                tr.step.append(float(step))
        go_on = True
        if converged or gap_ok:
            self.converged, self.message, go_on = True, "converged: tolerance met", False
        elif k >= self.max_iter:
            self.message, go_on = f"stopped: max_iter={self.max_iter} reached", False
        elif self.time_budget is not None and self._elapsed >= self.time_budget:
            self.message, go_on = f"stopped: time budget {self.time_budget:g}s reached", False
        if go_on and self.callback is not None and self.callback(k, w, alpha, self.trace):
            self.message, go_on = "stopped by callback", False
        self._started = time.perf_counter()
        return go_on

    def result(
        self,
        w: np.ndarray,
        alpha: np.ndarray | None,
        n_iter: int,
        solver: str,
        **info: Any,
    ) -> SolverResult:
        """Package the run."""
        return SolverResult(
            w=np.asarray(w, dtype=float),
            alpha=None if alpha is None else np.asarray(alpha, dtype=float),
            trace=self.trace,
            converged=self.converged,
            message=self.message,
            n_iter=int(n_iter),
            solver=solver,
            formulation=self.formulation.name,
            info=dict(info),
        )
