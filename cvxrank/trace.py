"""Per-iteration records of a solver run, and the stopwatch that keeps them honest.

A hand-written solver runs ``while recorder.record(k, w=..., alpha=...):`` in the benchopt
style: :meth:`TraceRecorder.record` stops the solver's clock, evaluates the objectives,
calls the user's callback, decides whether to stop (tolerance, iteration or time budget,
callback) and restarts the clock. What the solver needs to decide to stop (the duality gap
a dual solver checks at every iteration, the certificate a primal solver checks) is charged
to its clock; what is evaluated for the trace alone is not. The clock up to the first
record is the run's set-up time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from cvxrank import tolerances
from cvxrank.formulations.base import Formulation
from cvxrank.tolerances import relative_gap, within


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
    extra : dict of str to list of float
        Columns a solver adds of its own (number of cuts, master value, block index, ...),
        one value per record; solvers that add none leave it empty.
    """

    iteration: list[int] = field(default_factory=list)
    time: list[float] = field(default_factory=list)
    primal: list[float] = field(default_factory=list)
    dual: list[float] = field(default_factory=list)
    gap: list[float] = field(default_factory=list)
    step: list[float] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)

    #: The columns every trace has.
    COLUMNS = ("iteration", "time", "primal", "dual", "gap", "step")

    def __len__(self) -> int:
        return len(self.iteration)

    def append(self, iteration: int, time: float, primal: float, dual: float, step: float,
               extra: dict[str, float] | None = None) -> None:
        """Add one record (``gap = primal - dual``); ``extra`` fills the solver's own
        columns (a column missing from a record gets NaN)."""
        self.iteration.append(int(iteration))
        self.time.append(float(time))
        self.primal.append(float(primal))
        self.dual.append(float(dual))
        self.gap.append(float(primal) - float(dual))
        self.step.append(float(step))
        n = len(self.iteration)
        for key, value in (extra or {}).items():
            self.extra.setdefault(key, [float("nan")] * (n - 1)).append(float(value))
        for column in self.extra.values():
            if len(column) < n:
                column.append(float("nan"))

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The columns (the common ones, then the extra ones) as numpy arrays."""
        out = {k: np.asarray(getattr(self, k), dtype=float) for k in self.COLUMNS}
        out.update({k: np.asarray(v, dtype=float) for k, v in self.extra.items()})
        return out


@dataclass
class Run:
    """One training run, however it was made: a hand-written solver, a CVXPY reference or
    a baseline such as LinearSVC (scipy's OptimizeResult and qpsolvers' Solution in spirit).

    Attributes
    ----------
    w : ndarray
        Final primal point (the weights, or the stacked primal variables).
    alpha : ndarray or None
        Final dual point, for dual or primal-dual solvers and CVXPY references.
    trace : Trace
        The recorded iterations (a CVXPY solve or a baseline records one row: its final
        iteration count, time, objective and, where there is one, dual value).
    converged : bool
        Whether the stopping tolerance was met (certified for a CVXPY reference).
    message : str
        Why the run stopped.
    n_iter : int
        Iterations (or epochs) run.
    solver : str
        The solver's name (``"prsvm+"``, ``"clarabel"``, ``"linearsvc"``).
    formulation : str
        The formulation's registry name.
    setup_time : float
        Seconds of set-up before the first iteration (pairs, sorted blocks, Lipschitz
        constant, CVXPY compilation, materialized pair differences), included in
        :attr:`time`.
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
    setup_time: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> float:
        """Total seconds on the solver's clock, set-up included (trace-only evaluation
        excluded)."""
        return self.trace.time[-1] if len(self.trace) else self.setup_time

    @property
    def solve_time(self) -> float:
        """Seconds after the set-up: :attr:`time` minus :attr:`setup_time`."""
        return self.time - self.setup_time

    @property
    def objective(self) -> float:
        """Last recorded primal objective."""
        return self.trace.primal[-1] if len(self.trace) else float("nan")

    @property
    def relative_gap(self) -> float:
        """Last recorded duality gap relative to the primal value (NaN without a dual)."""
        if not len(self.trace):
            return float("nan")
        return relative_gap(self.trace.dual[-1], self.trace.primal[-1])


Callback = Callable[[int, np.ndarray, "np.ndarray | None", Trace], "bool | None"]


def progress_printer(label: str, stream: TextIO, every: float = 0.5) -> Callback:
    """A callback that shows a run's progress on ``stream``, at most every ``every`` seconds.

    One line, rewritten in place (``\\r``): iterations, the last recorded objective and
    relative duality gap, and wall-clock seconds. It never stops the run; the caller ends
    the line (``stream.write("\\n")``) when the run returns.
    """
    started = time.perf_counter()
    shown = [started - every]

    def show(k: int, w: np.ndarray, alpha: np.ndarray | None, trace: Trace) -> None:
        now = time.perf_counter()
        if now - shown[0] < every or not len(trace):
            return
        shown[0] = now
        gap = relative_gap(trace.dual[-1], trace.primal[-1])
        stream.write(f"\r{label}: iteration {k:,}  objective {trace.primal[-1]:.8g}  "
                     f"relative gap {gap:.2e}  {now - started:.1f} s ")
        stream.flush()

    return show


class TraceRecorder:
    """Stopwatch plus trace for a hand-written solver.

    Parameters
    ----------
    formulation : Formulation
        Supplies ``primal_value``, ``dual_value`` and ``primal_from_dual``.
    tol : float
        Stop when the relative duality gap ``gap / |primal|`` is at most ``tol``
        (:func:`cvxrank.tolerances.within`), at a point other than ``w = 0`` unless the gap
        there is 0.
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
        self.setup_time: float | None = None
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
        extra: dict[str, float] | None = None,
    ) -> bool:
        """Record iteration ``k``; return True while the solver should go on.

        Give ``alpha`` (and optionally ``w``, else ``w = primal_from_dual(alpha)``) for dual
        solvers, or ``w`` alone for primal solvers. A solver that computes the primal value
        and the dual bound at this point as part of its own iteration (PRSVM's certificate)
        passes them as ``values = (primal, dual)``: they are then charged to the solver's
        clock and not evaluated again. (Validation re-evaluates the returned point itself.)
        ``extra`` holds values of the solver's own trace columns (:attr:`Trace.extra`).
        The solver's clock up to its first record is its set-up time.
        """
        started = time.perf_counter()
        self._elapsed += started - self._started
        if self.setup_time is None:
            self.setup_time = self._elapsed
        last = converged or k >= self.max_iter or (
            self.time_budget is not None and self._elapsed >= self.time_budget
        )
        f = self.formulation
        if w is None and alpha is None:
            raise ValueError("record needs w or alpha")
        due = k % self.record_every == 0 or last or not self.trace.iteration
        certificate = alpha is not None or "primal_certificate" in f.capabilities
        # The solver's own stopping test: charged to its clock (a dual solver checks every
        # iteration, a primal solver with a certificate at each recorded one).
        stopping_test = (values is None and self.tol > 0 and certificate
                         and (alpha is not None or due))
        gap_ok = False
        if due or stopping_test or values is not None:
            if w is None:
                w = f.primal_from_dual(alpha)
            if values is not None:
                p, d = (float(v) for v in values)
            else:
                p = f.primal_value(w)
                if alpha is not None:
                    d = f.dual_value(alpha)
                elif certificate:  # a primal solver's certified bound
                    d = f.dual_value_at(w)
                else:
                    d = float("nan")
            if stopping_test:
                self._elapsed += time.perf_counter() - started
            gap = p - d
            # never the zero model while the certificate leaves a gap (see tolerances)
            gap_ok = (bool(np.isfinite(d)) and within(gap, p, self.tol)
                      and (bool(np.any(w)) or within(gap, p, tolerances.ZERO_MODEL_GAP)))
            if due or gap_ok:
                self.trace.append(k, self._elapsed, p, d, step, extra)
        go_on = True
        if converged or gap_ok:
            self.converged, self.message, go_on = True, "converged: tolerance met", False
        elif k >= self.max_iter:
            self.message, go_on = f"stopped: max_iter={self.max_iter} reached", False
        elif self.time_budget is not None and self._elapsed >= self.time_budget:
            self.message, go_on = f"stopped: time budget {self.time_budget:g}s reached", False
        if go_on and self.callback is not None and self.callback(
                k, f.primal_from_dual(alpha) if w is None else w, alpha, self.trace):
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
    ) -> Run:
        """Package the run."""
        return Run(
            w=np.asarray(w, dtype=float),
            alpha=None if alpha is None else np.asarray(alpha, dtype=float),
            trace=self.trace,
            converged=self.converged,
            message=self.message,
            n_iter=int(n_iter),
            solver=solver,
            formulation=self.formulation.name,
            setup_time=self.setup_time or 0.0,
            info=dict(info),
        )
