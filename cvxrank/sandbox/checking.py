"""Check any solver, a user's included, against a certified reference and a claimed rate.

:func:`check` is ``cvxrank verify`` for one solver on one formulation: it runs the solver
(the trace on the solver's own clock, :class:`~cvxrank.core.trace.TraceRecorder`), solves the
certified reference (:func:`~cvxrank.certificates.reference.solve_reference`, cached), validates the
run against the claimed :class:`~cvxrank.certificates.validate.RateSpec`
(:func:`~cvxrank.certificates.validate. validate_runs`) and draws the convergence figure
(:func:`~cvxrank.plots. figure_for_formulation`): it builds a registry
:class:`~cvxrank.registry.Entry` and runs verify's own :func:`~cvxrank.verification.sweep.run_pair`
on it, so a user's solver is judged by exactly the rules the package's are. :func:`register` and
:func:`registered` add a solver to verify itself
(:func:`~cvxrank.verification.sweep.run_verification` then runs it on every instance, with a
formulation built by the user's ``build``), for the rest of the process or for a ``with`` block.

A solver is any of:

* a declared solver (:func:`cvxrank.core.capabilities.solver`, e.g. ``solve_prsvm``);
* a function ``fn(formulation, options) -> Run`` written like the package's solvers
  (a :class:`~cvxrank.core.trace.TraceRecorder` loop; ``options`` a :class:`~cvxrank.core.trace.
  SolverOptions` with ``tol`` and ``max_iter`` filled);
* a generator function ``fn(formulation)`` yielding iterates: ``w``, or ``(w, alpha)`` for a
  primal-dual method (the benchopt style: the time spent inside the generator is the
  solver's clock, the evaluation of each iterate is not);
* a sequence of iterates (no clock of its own: its times are those of iterating over it).

The last two are recorded here; the run stops when the recorder says so (the certified gap
met the tolerance, ``max_iter``, ``time_budget``) or when the iterates run out.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from cvxrank import registry, tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.core.capabilities import takes_options
from cvxrank.core.trace import Run, SolverOptions, TraceRecorder
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation
from cvxrank.plots import figure_for_formulation
from cvxrank.registry import Entry
from cvxrank.verification.sweep import PairOutcome, run_pair

#: The ``method`` of the entries made here (no C rescaling: :data:`cvxrank.registry.C_SCALE`).
SANDBOX_METHOD = "sandbox"

#: Iteration limit of recorded iterates (the recorder stops earlier at the tolerance).
ITERATES_MAX_ITER = 100_000

Rate = RateSpec | Callable[[Formulation], RateSpec]


@dataclass(frozen=True)
class DataSet:
    """A named data set and hyper-parameters, where verify puts its synthetic
    :class:`~cvxrank.data.instances.Instance` (tables and figures read ``name`` and ``params``)."""

    name: str
    dataset: RankingData = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict)

    def data(self) -> RankingData:
        """The data set."""
        return self.dataset


def as_solver(solver: Any, *, name: str | None = None) -> Callable[..., Run]:
    """A declared solver from any of the forms of the module docstring.

    Parameters
    ----------
    solver : declared solver, callable, generator function or sequence of iterates
    name : str, optional
        The solver's name in tables and figures (default: the function's name).

    Returns
    -------
    callable
        Called as ``solve(formulation, options=None, *, tol=..., max_iter=..., ...)``, with
        ``solver_name``, ``needs`` and ``defaults`` like a declared solver.
    """
    if hasattr(solver, "solver_name"):
        return solver
    label = name or getattr(solver, "__name__", None) or "iterates"
    if inspect.isgeneratorfunction(solver) or not callable(solver):
        fn = _recording(solver, label)
    else:
        fn = takes_options(tol=tolerances.FAST_SOLVER_GAP, max_iter=ITERATES_MAX_ITER)(solver)
    fn.solver_name = label  # type: ignore[attr-defined]
    fn.needs = ()  # type: ignore[attr-defined]
    return fn


def _recording(iterates: Any, label: str) -> Callable[..., Run]:
    """A solver that records the iterates of a generator function or a sequence."""

    @takes_options(tol=tolerances.FAST_SOLVER_GAP, max_iter=ITERATES_MAX_ITER)
    def run(formulation: Any, options: SolverOptions) -> Run:
        rec = TraceRecorder(formulation, options)
        source: Iterable[Any] = iterates(formulation) if callable(iterates) else iterates
        w: np.ndarray | None = None
        alpha: np.ndarray | None = None
        k = -1
        for k, item in enumerate(source):
            w, alpha = (item if isinstance(item, tuple) else (item, None))
            if not rec.record(k, w=w, alpha=alpha):
                break
        if k < 0:
            raise ValueError(f"{label}: no iterates")
        if w is None:
            w = formulation.primal_from_dual(alpha)
        return rec.result(w, alpha, k, label)

    run.__name__ = run.__qualname__ = label
    return run


@dataclass(eq=False)
class Check:
    """What :func:`check` returns: the verdict on one solver, with the numbers behind it.

    Attributes
    ----------
    outcome : PairOutcome
        verify's record of the pair (entry, data, runs, reference, validation, error).
    """

    outcome: PairOutcome

    @property
    def passed(self) -> bool:
        """The verdict: the reference was certified, the solver ran and its runs passed."""
        return self.outcome.passed

    @property
    def reasons(self) -> list[str]:
        """Why it failed (empty when it passed)."""
        return [] if self.passed else self.outcome.reasons

    @property
    def runs(self) -> list[Run]:
        """The runs (one per seed)."""
        return self.outcome.results

    @property
    def reference(self) -> Any:
        """The certified reference (None if it could not be obtained)."""
        return self.outcome.reference

    @property
    def validation(self) -> Any:
        """The :class:`~cvxrank.certificates.validate.Validation` (None if a stage before it
        failed)."""
        return self.outcome.validation

    @property
    def rel_gap(self) -> float:
        """``(P(w) - p*) / |p*|`` at the returned w (median over seeds; NaN if none)."""
        return float("nan") if self.validation is None else self.validation.rel_gap

    @property
    def fitted(self) -> str:
        """The fitted rate as tables print it (``0.71/it``, ``k^-1.03``, ``5 it, ...``)."""
        return "-" if self.validation is None else self.validation.fitted_label

    @property
    def expected(self) -> str:
        """The claimed rate as tables print it."""
        return "-" if self.validation is None else self.validation.rate.expected

    @cached_property
    def figure(self) -> Figure | None:
        """Suboptimality against iterations and solver time with the claimed rate
        (:func:`~cvxrank.plots.figure_for_formulation`); None without runs or reference."""
        if not (self.outcome.results and self.outcome.reference is not None):
            return None
        return figure_for_formulation([self.outcome])

    def summary(self) -> str:
        """One line: the pair, the verdict, the gap, fitted and claimed rates and time."""
        head = f"{self.outcome.entry.name} on {self.outcome.instance.name}: "
        if self.validation is None:
            return head + "FAILED: " + "; ".join(self.reasons)
        v = self.validation
        text = (f"{'passed' if self.passed else 'FAILED'}, relative gap {v.rel_gap:.1e}, "
                f"{v.n_iter} iterations in {v.time:.3g} s, fitted {v.fitted_label} "
                f"(claimed {v.rate.expected})")
        return head + text + ("" if self.passed else ": " + "; ".join(self.reasons))

    def __repr__(self) -> str:
        return f"Check({self.summary()})"


def check(solver: Any, formulation: Formulation, rate: Rate, *, tol: float | None = None,
          name: str | None = None, seeds: Sequence[int] = (0,),
          limits: dict[str, Any] | None = None, reference_solver: str | None = None,
          data_name: str | None = None) -> Check:
    """Run a solver on a formulation and judge it as ``cvxrank verify`` does.

    Parameters
    ----------
    solver : declared solver, callable, generator function or sequence of iterates
        See the module docstring.
    formulation : Formulation
        The problem (a package formulation or a user's).
    rate : RateSpec or callable
        The rate claimed for the solver, or ``rate(formulation) -> RateSpec``.
    tol : float, optional
        Relative objective gap the run must reach, also passed to the solver as its
        stopping tolerance (default: the solver's own default; 1e-6 for a user's).
    name : str, optional
        The solver's name (default: its function's name).
    seeds : sequence of int
        Seeds of the runs; more than one judges the median run (a stochastic solver).
    limits : dict, optional
        Options bounding the runs (``max_iter``, ``time_budget``, ...).
    reference_solver : str, optional
        The CVXPY solver of the reference (default the formulation's
        ``reference_solver``).
    data_name : str, optional
        How tables and figures name the data (default its source, or ``"data"``).

    Returns
    -------
    Check
        ``passed``, ``reasons``, ``rel_gap``, ``fitted``, ``expected``, ``runs``,
        ``reference``, ``validation`` and ``figure``; nothing raises (a failing stage is a
        reason).
    """
    solve = as_solver(solver, name=name)
    entry = Entry(formulation.name, SANDBOX_METHOD, solve, rate,
                  make_formulation=lambda data, params: formulation,
                  limits=dict(limits or {}), stochastic=len(seeds) > 1, seeds=tuple(seeds),
                  tol=solve.defaults["tol"] if tol is None else float(tol))
    data = DataSet(data_name or formulation.data.source or "data", formulation.data,
                   formulation.params())
    return Check(run_pair(entry, data, reference_solver or formulation.reference_solver,
                          formulation=formulation))


def figure(*checks: Check) -> Figure:
    """The checks' runs in one figure (they must be on the same formulation and data)."""
    return figure_for_formulation([c.outcome for c in checks])


# -- verify -------------------------------------------------------------------------------
def verify_entry(solver: Any, rate: Rate, build: Callable[..., Formulation], *,
                 name: str | None = None, formulation: str | None = None,
                 tol: float | None = None, seeds: Sequence[int] = (0,),
                 limits: dict[str, Any] | None = None, description: str = "") -> Entry:
    """The registry entry that makes verify run ``solver`` on ``build``'s formulations.

    Parameters
    ----------
    solver, rate, name, tol, seeds, limits
        As in :func:`check`.
    build : callable
        ``build(data, **params) -> Formulation``: the formulation on one of verify's
        instances, with its hyper-parameters (``C``).
    formulation : str, optional
        The formulation's name (default: that of ``build`` on the first quick instance).
    description : str
        One line for listings.
    """
    from cvxrank.data.instances import QUICK

    solve = as_solver(solver, name=name)

    def make(data: RankingData, params: dict[str, Any]) -> Formulation:
        return build(data, **params)

    if formulation is None:
        formulation = make(QUICK[0].data(), dict(QUICK[0].params)).name
    return Entry(formulation, SANDBOX_METHOD, solve, rate, make_formulation=make,
                 limits=dict(limits or {}), stochastic=len(seeds) > 1, seeds=tuple(seeds),
                 tol=solve.defaults["tol"] if tol is None else float(tol),
                 description=description)


def register(solver: Any, rate: Rate, build: Callable[..., Formulation],
             **options: Any) -> Entry:
    """Add ``solver`` to verify for the rest of the process (:func:`verify_entry`'s
    arguments); remove it with :func:`cvxrank.registry.unregister`."""
    return registry.register(verify_entry(solver, rate, build, **options))


@contextlib.contextmanager
def registered(solver: Any, rate: Rate, build: Callable[..., Formulation],
               **options: Any) -> Iterator[Entry]:
    """Add ``solver`` to verify inside a ``with`` block (removed on exit, error or not)."""
    entry = verify_entry(solver, rate, build, **options)
    with registry.registered(entry):
        yield entry
