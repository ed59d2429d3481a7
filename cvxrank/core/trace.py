r"""Per-iteration records of a solver run, the stopwatch that keeps them honest, and the run's
status vocabulary.

A hand-written solver runs ``while recorder.record(k, w=..., alpha=...):`` in the benchopt
style: :meth:`TraceRecorder.record` stops the solver's clock, evaluates the objectives,
calls the user's callback, decides whether to stop (tolerance, iteration or time budget,
Ctrl-C, callback) and restarts the clock. What the solver needs to decide to stop (the
duality gap a dual solver checks at every iteration, the certificate a primal solver
checks) is charged to its clock; what is evaluated for the trace alone is not. The clock up
to the first record is the run's set-up time.

Every run ends with a :class:`Status` (never free text parsed later) and returns its model:
a run stopped by its iteration limit, its time budget, an interrupt or a numerical failure
still returns its last certified iterate, with the certified duality gap and the model
radius :math:`\|w - w^*\| \le` ``w_radius``. For a formulation whose primal is
:math:`\mu`-strongly convex in the scoring weights (:math:`\mu = 1` with the
:math:`\tfrac12\|w\|^2` regularizer, ``Objective.strong_convexity``), a gap g gives
:math:`\tfrac{\mu}{2}\|w - w^*\|^2 \le P(w) - p^* \le g`, so
:math:`\|w - w^*\| \le \sqrt{2 g / \mu}`; a smooth primal's gradient gives
:math:`\|w - w^*\| \le \|\nabla P(w)\| / \mu` (strong monotonicity of the gradient),
which a solver passes when it has it; the smaller bound is kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank import tolerances
from cvxrank.core.interrupts import stop_requested
from cvxrank.tolerances import within

if TYPE_CHECKING:
    from cvxrank.formulations.base import Objective


class Status(str, Enum):
    """Why a run stopped: the one vocabulary of every solver, ``fit`` and the reports.

    ``converged``: the stopping tolerance was met (and the stopping rule of
    :attr:`SolverOptions.until`, when one is given, holds or cannot be tightened further);
    ``max_iter``: the iteration limit; ``time_budget``: the time budget; ``interrupted``:
    Ctrl-C (SIGINT, see :func:`interruptible`) or a callback asked to stop; ``numerical``:
    the solver could not make progress representable in floating point, its certificate came
    out negative or non-finite, or a subproblem solver failed.
    """

    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    TIME_BUDGET = "time_budget"
    INTERRUPTED = "interrupted"
    NUMERICAL = "numerical"

    def __str__(self) -> str:
        return self.value


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
    radius : list of float
        The certified model radius at the record (module docstring; infinite when the run
        has no certificate there).
    gap_error : list of float
        The bound on the rounding of ``gap`` (:mod:`cvxrank.numerics.rounding`): the true gap lies
        within ``gap +- gap_error``, and ``gap + gap_error`` is the certified bound.
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
    radius: list[float] = field(default_factory=list)
    gap_error: list[float] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)

    #: The columns every trace has.
    COLUMNS = ("iteration", "time", "primal", "dual", "gap", "step", "radius", "gap_error")

    def __post_init__(self) -> None:
        """A trace given its columns without rounding bounds has none (0 each)."""
        if len(self.gap_error) < len(self.iteration):
            self.gap_error.extend([0.0] * (len(self.iteration) - len(self.gap_error)))

    def __len__(self) -> int:
        return len(self.iteration)

    def append(self, iteration: int, time: float, primal: float, dual: float, step: float,
               extra: dict[str, float] | None = None, radius: float = math.inf, *,
               gap: float | None = None, gap_error: float = 0.0) -> None:
        """Add one record (``gap = primal - dual`` unless the solver computed the gap in a
        better-conditioned form, ``gap``); ``extra`` fills the solver's own columns (a
        column missing from a record gets NaN)."""
        self.iteration.append(int(iteration))
        self.time.append(float(time))
        self.primal.append(float(primal))
        self.dual.append(float(dual))
        self.gap.append(float(primal) - float(dual) if gap is None else float(gap))
        self.step.append(float(step))
        self.radius.append(float(radius))
        self.gap_error.append(float(gap_error))
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


def certified_radius(gap: float, strong_convexity: float, gap_error: float) -> float:
    r"""The model radius a duality gap certifies: :math:`\sqrt{2 (g + e) / \mu}` for the
    computed gap g with its rounding bound e (module docstring), the true gap being at most
    g + e.

    Infinite without a certificate (a non-finite gap or bound), without strong convexity
    (:math:`\mu = 0`) or when g + e < 0 (a broken certificate: rounding cannot explain
    it). 0 only where g + e is exactly 0, which a computed certificate of a nonzero w never
    is (the zero model's proof, :mod:`cvxrank.certificates.zero_certificate`, is the one way to 0).
    """
    bound = gap + gap_error
    if not (math.isfinite(bound) and strong_convexity > 0) or bound < 0:
        return math.inf
    return math.sqrt(2.0 * bound / strong_convexity)


class RunInfo(Mapping[str, Any]):
    """A read-only mapping (picklable, unlike :class:`types.MappingProxyType`)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"RunInfo({self._data!r})"

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
        return RunInfo, (self._data,)


def _frozen_info(info: Mapping[str, Any]) -> RunInfo:
    """``info`` as a read-only mapping of plain values: numbers, strings, booleans, None,
    tuples of them, read-only arrays and frozen records (lists become tuples, arrays are
    copied and locked)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, np.ndarray):
            value = value.copy()
            value.setflags(write=False)
        elif isinstance(value, np.generic):
            value = value.item()
        allowed = (value is None or isinstance(value, int | float | str | bool | tuple
                                                    | np.ndarray)
                   or getattr(type(value), "__dataclass_params__", None) is not None
                   and type(value).__dataclass_params__.frozen)
        if not allowed:
            raise TypeError(f"Run.info[{key!r}] must be a plain value (number, string, tuple, "
                            f"array or frozen record), got {type(value).__name__}")
        out[key] = value
    return RunInfo(out)


@dataclass(frozen=True)
class Run:
    """One training run, however it was made: a hand-written solver, a CVXPY reference or
    a baseline such as LinearSVC (scipy's OptimizeResult and qpsolvers' Solution in spirit).

    Frozen: a run is a record, changed only by :meth:`replace` (which makes a new one).

    Attributes
    ----------
    w : ndarray
        Final primal point (the weights, or the stacked primal variables).
    alpha : ndarray or None
        Final dual point, for dual or primal-dual solvers and CVXPY references.
    trace : Trace
        The recorded iterations (a CVXPY solve or a baseline records one row: its final
        iteration count, time, objective and, where there is one, dual value).
    status : Status
        Why the run stopped.
    message : str
        The same, for a reader, with the numbers that decided it.
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
    objective : float
        The primal objective at :attr:`w` (NaN when nothing was recorded).
    gap : float
        The certified duality gap at :attr:`w`: a bound on :math:`P(w) - p^*`, the objective
        minus the best lower bound on :math:`p^*` the run holds plus the rounding of both
        (NaN without one).
    gap_error : float
        The rounding bound :attr:`gap` includes (:mod:`cvxrank.numerics.rounding`): the computed gap
        is ``gap - 2 gap_error`` to ``gap``, the true one at most :attr:`gap`.
    w_radius : float
        Certified bound on :math:`\\|w - w^*\\|` for the scoring weights (module docstring;
        infinite without a certificate or without strong convexity).
    tol : float
        The relative gap the run was asked to reach (0: no stopping test, the run makes
        its ``max_iter`` iterations).
    info : mapping
        Solver-specific extras (step sizes, CG iterations, ...), read-only plain values.
    """

    w: np.ndarray
    alpha: np.ndarray | None
    trace: Trace
    status: Status
    message: str
    n_iter: int
    solver: str
    formulation: str
    setup_time: float = 0.0
    objective: float = float("nan")
    gap: float = float("nan")
    gap_error: float = 0.0
    w_radius: float = math.inf
    tol: float = float("nan")
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        object.__setattr__(self, "info", _frozen_info(self.info))
        if math.isnan(self.objective) and len(self.trace):
            object.__setattr__(self, "objective", float(self.trace.primal[-1]))
            if math.isnan(self.gap):
                object.__setattr__(self, "gap_error", float(self.trace.gap_error[-1]))
                object.__setattr__(self, "gap", float(self.trace.gap[-1]) + self.gap_error)

    def replace(self, **changes: Any) -> Run:
        """A copy with ``changes`` (``info`` changes are merged into the current info)."""
        if "info" in changes:
            changes["info"] = {**self.info, **changes["info"]}
        return _replace(self, **changes)

    @property
    def converged(self) -> bool:
        """Whether the stopping tolerance was met (:attr:`status` is ``converged``)."""
        return self.status is Status.CONVERGED

    @property
    def finished(self) -> bool:
        """Whether the run ended as asked: :attr:`converged`, or, without a stopping test
        (``tol = 0``, e.g. a stochastic solver run for a fixed number of passes), after its
        iteration limit."""
        return self.converged or (self.tol == 0 and self.status is Status.MAX_ITER)

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
    def relative_gap(self) -> float:
        """The certified duality gap relative to the objective (NaN without a dual)."""
        if math.isnan(self.gap):
            return float("nan")
        return max(self.gap, 0.0) / tolerances.gap_scale(self.objective)

    def certificate(self) -> dict[str, Any]:
        """``status``, ``converged``, ``gap``, ``gap_error``, ``relative_gap`` and
        ``w_radius``, as the reports print them."""
        return {"status": self.status.value, "converged": self.converged, "gap": self.gap,
                "gap_error": self.gap_error, "relative_gap": self.relative_gap,
                "w_radius": self.w_radius}


#: The option names every solver takes (:class:`SolverOptions`).
OPTION_NAMES = ("tol", "max_iter", "time_budget", "seed", "callback", "until")

Callback = Callable[[int, np.ndarray, "np.ndarray | None", Trace], "bool | None"]

#: An extra stopping rule: ``until(w, radius)`` is True when a run that met its tolerance
#: may stop (e.g. "the reported measures are certified", :mod:`cvxrank.certificates.certify`).
StopRule = Callable[[np.ndarray, float], bool]


@dataclass(frozen=True)
class SolverOptions:
    """The options every hand-written solver takes, in one record.

    Attributes
    ----------
    tol : float or None
        Relative certified duality gap at which to stop (None: the solver's default).
    max_iter : int or None
        Iteration limit (None: the solver's default).
    time_budget : float or None
        Wall-clock seconds from the solver's start (set-up included) after which it stops and
        returns its last certified iterate with status ``time_budget``.
    seed : int, Generator or None
        Randomness of stochastic solvers (ignored by deterministic ones).
    callback : callable, optional
        ``callback(k, w, alpha, trace)`` after each recorded iteration; True stops the run.
    until : callable, optional
        ``until(w, radius) -> bool``: once the tolerance is met, go on iterating until it
        holds (e.g. the reported measures are certified), or until the gap is at rounding
        level (:data:`cvxrank.tolerances.GAP_FLOOR`) and cannot certify more.
    """

    tol: float | None = None
    max_iter: int | None = None
    time_budget: float | None = None
    seed: int | np.random.Generator | None = None
    callback: Callback | None = None
    until: StopRule | None = None

    def __post_init__(self) -> None:
        if self.tol is not None and not (math.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol}")
        if self.max_iter is not None and (isinstance(self.max_iter, bool)
                                          or int(self.max_iter) != self.max_iter
                                          or self.max_iter < 0):
            raise ValueError(f"max_iter must be an integer >= 0, got {self.max_iter}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be > 0 seconds, got {self.time_budget}")

    def replace(self, **changes: Any) -> SolverOptions:
        """A copy with ``changes``; a None value leaves that option as it is."""
        return _replace(self, **{k: v for k, v in changes.items() if v is not None})

    def with_defaults(self, **defaults: Any) -> SolverOptions:
        """A copy whose unset (None) options take ``defaults``."""
        return _replace(self, **{k: v for k, v in defaults.items()
                                 if getattr(self, k) is None})

    @classmethod
    def split(cls, kwargs: dict[str, Any]) -> tuple[SolverOptions, dict[str, Any]]:
        """``kwargs`` split into the common options and the rest (a solver's own)."""
        common = {k: kwargs[k] for k in OPTION_NAMES if kwargs.get(k) is not None}
        return cls(**common), {k: v for k, v in kwargs.items() if k not in OPTION_NAMES}


class TraceRecorder:
    """Stopwatch plus trace for a hand-written solver.

    Parameters
    ----------
    formulation : Objective
        Supplies ``primal_value`` and, for a convex formulation, ``dual_value`` and
        ``primal_from_dual``; ``strong_convexity`` gives the model radius.
    options : SolverOptions
        ``tol``: stop when the relative duality gap ``gap / |primal|`` is at most ``tol``
        (:func:`cvxrank.tolerances.within`), at a point other than ``w = 0`` unless the gap
        there is 0. The dual value is ``dual_value(alpha)`` for solvers that have a dual
        point, and ``dual_value_at(w)`` for primal solvers on formulations whose primal point
        certifies a dual bound (the squared-hinge RankSVM); other primal-only solvers decide
        convergence themselves and pass ``converged=True``. ``max_iter``, ``time_budget``
        (wall clock since the recorder was made), ``callback`` and ``until`` as
        :class:`SolverOptions` says; unset ``tol`` and ``max_iter`` are errors (the
        :func:`cvxrank.core.capabilities.solver` decorator fills the solver's defaults).
    record_every : int
        Record only every this many iterations (the first and last are always recorded).
    """

    def __init__(self, formulation: Objective, options: SolverOptions, *,
                 record_every: int = 1) -> None:
        if options.tol is None or options.max_iter is None:
            raise ValueError("TraceRecorder needs tol and max_iter (SolverOptions.with_defaults)")
        if record_every < 1:
            raise ValueError("record_every must be >= 1")
        self.formulation = formulation
        self.options = options
        self.tol = float(options.tol)
        self.max_iter = int(options.max_iter)
        self.record_every = record_every
        self.trace = Trace()
        self.setup_time: float | None = None
        self.status: Status | None = None
        self.message = "running"
        self.tol_met = False
        self.until_checks = 0
        self.until_budget_spent = False
        #: whether the run stopped (at rounding level, or after the iterations it may take
        #: beyond the tolerance) with its ``until`` rule not shown to hold
        self.until_open = False
        self._strong = float(formulation.strong_convexity)
        self._until_next_gap = math.inf
        self._until_deadline: int | None = None
        # the last recorded point: w, its gap, the gap's rounding bound, radius and objective
        self._last: tuple[np.ndarray | None, float, float, float, float] = (
            None, math.nan, math.nan, math.inf, math.nan)
        self._elapsed = 0.0
        self._wall_start = time.perf_counter()
        self._started = self._wall_start
        self._last_call: float | None = None

    def seconds_left(self) -> float | None:
        """Seconds of the time budget left (None without one; at least 0)."""
        budget = self.options.time_budget
        if budget is None:
            return None
        return max(0.0, budget - (time.perf_counter() - self._wall_start))

    def out_of_time(self) -> bool:
        """Whether the time budget has run out (False without one): a subproblem (a cutting
        plane's master) stops there, and the next record ends the run with status
        ``time_budget``. On the recorder's clock."""
        budget = self.options.time_budget
        return budget is not None and time.perf_counter() - self._wall_start >= budget

    def stop_due(self) -> bool:
        """Whether the run should record now and end: its time budget is spent or a Ctrl-C
        asked it to stop. A solver whose records are far apart (a stochastic one, a block
        solve inside an alternation) checks it between records and records at once when it
        holds, so that the budget holds to within one step."""
        return stop_requested() or self.out_of_time()

    def _stop(self, status: Status, message: str) -> bool:
        self.status, self.message = status, message
        return False

    def _until_holds(self, k: int, w: np.ndarray, radius: float, gap: float, gap_error: float,
                     p: float, *, from_gap: bool) -> bool:
        """The :attr:`SolverOptions.until` rule, checked only once the gap has fallen by
        :data:`cvxrank.tolerances.UNTIL_GAP_FACTOR` since its last failure (each check is
        an evaluation-set pass); True at rounding level, where more iterations cannot
        tighten the certificate (a computed gap at most its rounding bound; when the radius
        comes from the gap alone, ``from_gap``, also a gap at
        :data:`cvxrank.tolerances.GAP_FLOOR`: a solver's own radius, a gradient norm,
        still shrinks below the gap's at rounding),
        and once the iterations since the tolerance was first met exceed their budget
        (:data:`cvxrank.tolerances.UNTIL_EXTRA_ITERATIONS`: a certificate that stalls, e.g.
        at a cutting plane's master accuracy)."""
        until = self.options.until
        self.until_open = False
        if until is None or radius == 0.0:
            return True
        if gap <= gap_error or (from_gap and within(gap, p, tolerances.GAP_FLOOR)):
            self.until_open = not until(w, radius)
            return True
        if self._until_deadline is None:
            self._until_deadline = k + max(tolerances.UNTIL_EXTRA_ITERATIONS[0],
                                           int(tolerances.UNTIL_EXTRA_ITERATIONS[1] * k))
        if k >= self._until_deadline:
            self.until_budget_spent = self.until_open = True
            return True
        bound = gap + gap_error
        if bound > self._until_next_gap:
            return False
        self.until_checks += 1
        if until(w, radius):
            return True
        self._until_next_gap = bound / tolerances.UNTIL_GAP_FACTOR
        return False

    def record(
        self,
        k: int,
        *,
        w: np.ndarray | None = None,
        alpha: np.ndarray | None = None,
        step: float = float("nan"),
        converged: bool = False,
        values: tuple[float, float] | None = None,
        gap: float | None = None,
        gap_error: float | None = None,
        radius: float | None = None,
        extra: dict[str, float] | None = None,
    ) -> bool:
        r"""Record iteration ``k``; return True while the solver should go on.

        Give ``alpha`` (and optionally ``w``, else ``w = primal_from_dual(alpha)``) for dual
        solvers, or ``w`` alone for primal solvers. A solver that computes the primal value
        and the dual bound at this point as part of its own iteration (PRSVM's certificate)
        passes them as ``values = (primal, dual)``: they are then charged to the solver's
        clock and not evaluated again. A solver that bounds :math:`\\|w - w^*\\|` by other
        means (a smooth primal's gradient norm over the strong-convexity modulus) passes it
        as ``radius``; it must be sound in floating point (its own rounding included, as
        :func:`cvxrank.numerics.rounding.gradient_error` gives a gradient's). ``gap`` is the gap
        when the solver computed it in a better-conditioned form than ``primal - dual``
        (Newton's :math:`\tfrac12\|\nabla P(w)\|^2`), ``gap_error`` the bound on the
        gap's rounding (without one, the formulation's :meth:`rounding_error` of the two
        values). The certified gap is ``gap + gap_error``; a gap below
        ``-gap_error`` is a broken certificate (status ``numerical``). ``extra`` holds
        values of the solver's own trace columns (:attr:`Trace.extra`). The solver's clock
        up to its first record is its set-up time.
        """
        started = time.perf_counter()
        self._elapsed += started - self._started
        if self.setup_time is None:
            self.setup_time = self._elapsed
        if w is None and alpha is None:
            raise ValueError("record needs w or alpha")
        budget = self.options.time_budget
        # the budget is spent, or the next iteration, as long as the last one, would
        # overrun it (an oracle call of a minute is not started with 30 s left)
        iteration = 0.0 if self._last_call is None else started - self._last_call
        self._last_call = started
        out_of_time = budget is not None and started - self._wall_start + iteration >= budget
        last = converged or k >= self.max_iter or out_of_time or stop_requested()
        f = self.formulation
        due = k % self.record_every == 0 or last or not self.trace.iteration
        certificate = alpha is not None or "primal_certificate" in f.capabilities
        # The solver's own stopping test: charged to its clock (a dual solver checks every
        # iteration, a primal solver with a certificate at each recorded one).
        stopping_test = (values is None and self.tol > 0 and certificate
                         and (alpha is not None or due))
        met, broken = converged, ""
        if due or stopping_test or values is not None:
            if w is None:
                w = f.primal_from_dual(alpha)
            p, d = self._values(w, alpha, values, certificate)
            gap = p - d if gap is None else gap
            gap_error = f.rounding_error(w, p, d) if gap_error is None else gap_error
            if stopping_test:
                self._elapsed += time.perf_counter() - started
            broken = _broken_certificate(p, d, gap, gap_error)
            r, from_gap = self._radius(gap, gap_error, broken, radius)
            met = met or self._gap_met(gap + gap_error, p, w, alpha, broken)
            self.tol_met = met
            self._last = (w, gap, gap_error, r, p)
            if due or met:
                self.trace.append(k, self._elapsed, p, d, step, extra, radius=r, gap=gap,
                                  gap_error=gap_error)
            if met and not self._until_holds(k, w, r, gap, gap_error, p, from_gap=from_gap):
                met = False  # the tolerance holds, the stopping rule not yet: go on
        go_on = self._decide(k, met, broken, last, out_of_time, started, iteration)
        if go_on and self.options.callback is not None and self.options.callback(
                k, f.primal_from_dual(alpha) if w is None else w, alpha, self.trace):
            go_on = self._stop(Status.INTERRUPTED, "stopped by callback")
        self._started = time.perf_counter()
        return go_on

    def _values(self, w: np.ndarray, alpha: np.ndarray | None,
                values: tuple[float, float] | None, certificate: bool) -> tuple[float, float]:
        """The primal value and the dual bound at the point: the solver's own ``values``,
        else the dual point's value, a primal point's certified bound or NaN."""
        if values is not None:
            p, d = (float(v) for v in values)
            return p, d
        f = self.formulation
        p = f.primal_value(w)
        if alpha is not None:
            return p, f.dual_value(alpha)
        if certificate:  # a primal solver's certified bound
            return p, f.dual_value_at(w)
        return p, float("nan")

    def _radius(self, gap: float, gap_error: float, broken: str,
                radius: float | None) -> tuple[float, bool]:
        """The model radius from the certified gap, or the solver's own sound ``radius``
        when smaller; and whether it comes from the gap."""
        r = certified_radius(gap, self._strong, gap_error) if not broken else math.inf
        if radius is None or not math.isfinite(radius):
            return r, True
        own = (float(radius) / max(self._strong, np.finfo(float).tiny) if self._strong > 0
               else math.inf)
        return min(r, own), False

    def _gap_met(self, bound: float, p: float, w: np.ndarray, alpha: np.ndarray | None,
                 broken: str) -> bool:
        """Whether the certified gap ``bound`` meets the tolerance: tol = 0 never stops on
        the gap (the solver makes its max_iter iterations); never the zero model while the
        certificate leaves a gap (see tolerances); never an infeasible dual point."""
        met = (self.tol > 0 and not broken and bool(np.isfinite(bound))
               and within(bound, p, self.tol)
               and (bool(np.any(w)) or within(bound, p, tolerances.ZERO_MODEL_GAP)))
        return met and (alpha is None or _feasible(self.formulation, alpha))

    def _decide(self, k: int, met: bool, broken: str, last: bool, out_of_time: bool,
                started: float, iteration: float) -> bool:
        """The run's status after record ``k``: True while it goes on."""
        if met:
            return self._stop(Status.CONVERGED, "converged: tolerance met" + (
                "; its stopping rule beyond it still failed after the iterations it may "
                "take (tolerances.UNTIL_EXTRA_ITERATIONS)" if self.until_budget_spent else ""))
        if self.tol_met and (last or k >= self.max_iter):
            return self._stop(Status.CONVERGED, "converged: tolerance met (the stopping "
                              "rule beyond it did not hold within the iteration or time "
                              "budget)")
        if broken:
            return self._stop(Status.NUMERICAL, broken)
        if k >= self.max_iter:
            return self._stop(Status.MAX_ITER, f"stopped: max_iter={self.max_iter} reached")
        if out_of_time:
            budget = self.options.time_budget
            return self._stop(Status.TIME_BUDGET, f"stopped: time budget {budget:g} s reached"
                              + ("" if started - self._wall_start >= budget else
                                 f" at the next iteration (the last took {iteration:.3g} s)"))
        if stop_requested():
            return self._stop(Status.INTERRUPTED, "stopped: interrupted (Ctrl-C)")
        return True

    def result(
        self,
        w: np.ndarray,
        alpha: np.ndarray | None,
        n_iter: int,
        solver: str,
        *,
        status: Status | None = None,
        message: str | None = None,
        **info: Any,
    ) -> Run:
        """Package the run, with its certificate at the returned ``w``.

        ``status`` and ``message`` override the recorder's (a solver that stops itself, e.g.
        on a stalled line search); without either, a loop the solver left on its own is
        ``converged`` if the last record met the tolerance, else ``numerical``. The gap at
        ``w`` is its objective minus the best lower bound the trace holds (any dual value
        recorded bounds :math:`p^*`), and the radius the one that gap certifies, or the
        solver's own (``radius`` of :meth:`record`) when ``w`` is the last recorded point.
        """
        f = self.formulation
        w = np.asarray(w, dtype=float)
        if status is None:
            status = self.status or (Status.CONVERGED if self.tol_met else Status.NUMERICAL)
            if message is None and self.status is None:
                message = ("converged: tolerance met" if self.tol_met else
                           "stopped: the solver ended before its tolerance was met")
        objective = float("nan")
        if len(self.trace):  # the last record's objective when w is that point
            objective = (self._last[4] if self._is_last(w) and math.isfinite(self._last[4])
                         else float(f.primal_value(w)))
        gap, gap_error, radius = self._certificate(w, objective)
        return Run(
            w=w,
            alpha=None if alpha is None else np.asarray(alpha, dtype=float),
            trace=self.trace,
            status=status,
            message=self.message if message is None else message,
            n_iter=int(n_iter),
            solver=solver,
            formulation=f.name,
            setup_time=self.setup_time or 0.0,
            objective=objective,
            gap=gap + gap_error,
            gap_error=gap_error,
            w_radius=radius,
            tol=self.tol,
            info=info,
        )

    def _certificate(self, w: np.ndarray, objective: float) -> tuple[float, float, float]:
        """The gap, its rounding bound and the radius at the returned ``w`` (see
        :meth:`result`): the smaller certified gap of the last record's (when ``w`` is that
        point) and of the objective minus the best dual value recorded (with the
        formulation's rounding bound), and the smaller radius."""
        found: list[tuple[float, float, float]] = []
        if self._is_last(w) and objective == self._last[4] and math.isfinite(self._last[1]):
            found.append(self._last[1:4])
        duals = np.asarray(self.trace.dual, dtype=float)
        duals = duals[np.isfinite(duals)]
        if duals.size and math.isfinite(objective):
            dual = float(duals.max())
            gap = objective - dual
            gap_error = self.formulation.rounding_error(w, objective, dual)
            if not found and _broken_certificate(objective, dual, gap, gap_error):
                return gap, gap_error, math.inf
            if not _broken_certificate(objective, dual, gap, gap_error):
                found.append((gap, gap_error,
                              certified_radius(gap, self._strong, gap_error)))
        if not found:
            return float("nan"), float("nan"), math.inf
        gap, gap_error, _ = min(found, key=lambda c: c[0] + c[1])
        return gap, gap_error, min(c[2] for c in found)

    def _is_last(self, w: np.ndarray) -> bool:
        """Whether ``w`` is the last recorded point."""
        last_w = self._last[0]
        return last_w is not None and last_w.shape == w.shape and bool(np.array_equal(last_w, w))


def _feasible(formulation: Any, alpha: np.ndarray) -> bool:
    """Whether ``alpha`` is dual feasible to :data:`cvxrank.tolerances.FEASIBILITY`,
    relative to its largest entry (else its value bounds nothing, and a run goes on)."""
    violation = formulation.dual_infeasibility(alpha)
    return violation <= tolerances.FEASIBILITY * max(1.0, float(np.max(np.abs(alpha),
                                                                      initial=0.0)))


def _broken_certificate(primal: float, dual: float, gap: float, gap_error: float) -> str:
    """Why a (primal, dual) pair with its gap and the gap's rounding bound is not a
    certificate (empty when it is one, or when there is no dual value): non-finite values,
    or a gap below 0 by more than its rounding bound."""
    if math.isnan(dual):
        return "" if math.isfinite(primal) else ("stopped: the objective overflowed or is "
                                                 "undefined at this point")
    if not (math.isfinite(primal) and math.isfinite(dual) and math.isfinite(gap + gap_error)):
        which = [name for name, v in (("primal", primal), ("dual", dual),
                                      ("gap's rounding bound", gap_error))
                 if not math.isfinite(v)] or ["gap"]
        return (f"stopped: the certificate is not finite (its {' and '.join(which)} value "
                "overflowed or is undefined at this point)")
    if gap + gap_error < 0:
        return (f"stopped: the certificate is negative beyond its rounding bound (gap "
                f"{gap:.3g}, rounding at most {gap_error:.3g}; dual bound {dual:.10g}, primal "
                f"{primal:.10g}): the numbers are not trustworthy at this scale")
    return ""
