"""The (formulation, solver, proven rate) entries that ``cvxrank verify`` checks.

An :class:`Entry` says how to build a formulation from data and hyper-parameters, which
hand-written solver runs on it, the convergence rate the solver's theory proves there and
how the run is checked: against a certified CVXPY reference (``check="reference"``) or, for a
non-convex alternation of convex subproblems, as a monotone descent (``"alternation"``).
``cvxrank verify`` (:func:`cvxrank.verification.sweep.run_verification`) runs every entry on every
embedded instance; ``cvxrank fit`` and the estimators look solvers up here by name
(:func:`find_entry`).

The entries live in one module per method family in this package (``ranksvm.py``,
``irsvm.py``, ...), discovered on first use: adding a family's entries is adding its module.
A family module registers its entries with::

    register(Entry("ranksvm-squared_hinge", "ranksvm", solve_prsvm_plus, NEWTON_RATE,
                   loss="squared_hinge", tol=tolerances.NEWTON_GAP))

Options that define the algorithm are bound into ``solve`` (:func:`with_options`), so that
``cvxrank fit --solver NAME`` runs the algorithm that verify checked; ``limits`` hold only
what bounds a verification run (iterations, time, tolerance).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec
from cvxrank.core.trace import Run
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation

if TYPE_CHECKING:
    from cvxrank.data.instances import Instance

MakeFormulation = Callable[[RankingData, dict], Formulation]
RateLike = RateSpec | Callable[[Formulation], RateSpec]

#: How a registry entry's runs are judged.
CHECKS = ("reference", "alternation")


def with_options(solve: Callable[..., Run], **options: Any) -> Callable[..., Run]:
    """``solve`` with algorithm-defining ``options`` bound, keeping its solver name and needs."""
    bound = functools.partial(solve, **options)
    bound.solver_name = solve.solver_name  # type: ignore[attr-defined]
    bound.needs = solve.needs  # type: ignore[attr-defined]
    return bound  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class Entry:
    """One (formulation, solver) pair, the rate its theory proves and how it is checked.

    Attributes
    ----------
    formulation : str
        Registry name of the formulation (its ``Formulation.name``), e.g. ``"ranksvm-hinge"``.
    method : str
        The method of :mod:`cvxrank.methods` it belongs to (``"ranksvm"``); the instances'
        C is scaled per method (:meth:`instance_params`).
    solve : callable
        A solver declared with :func:`cvxrank.core.capabilities.solver` (or :func:`with_options`
        of one): ``solve(formulation, *, tol, max_iter, time_budget, seed, callback) -> Run``.
    rate : RateSpec or callable
        The proven rate, or ``rate(formulation) -> RateSpec`` when it depends on the problem
        (e.g. a predicted contraction ``1 - mu/L``).
    loss : str or None
        The loss the formulation is built with (methods with one loss: None).
    make_formulation : callable or None
        ``make_formulation(data, params) -> Formulation``, for formulations the methods
        table cannot build from ``(loss, params)`` alone (a kernel matrix, verify-only
        weights); None builds ``cvxrank.methods.get(method).build(data, loss=loss, **params)``.
    params : dict
        Default hyper-parameters of the formulation.
    limits : dict
        Extra keyword arguments bounding verification runs (``max_iter``, ``time_budget``,
        ``tol``); ``tol`` defaults to :attr:`tol`.
    stochastic : bool
        Run once per seed of :attr:`seeds` and judge the median run.
    seeds : tuple of int
        Seeds of the runs (only the first is used for a deterministic solver).
    tol : float
        Relative objective gap the solver must reach (a level of :mod:`cvxrank.tolerances`).
    check : {"reference", "alternation"}
        Judged against a certified CVXPY reference, or as a monotone alternation (the
        objective never increases between half-steps).
    description : str
        One line for listings.
    """

    formulation: str
    method: str
    solve: Callable[..., Run]
    rate: RateLike
    loss: str | None = None
    make_formulation: MakeFormulation | None = None
    params: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    stochastic: bool = False
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    tol: float = tolerances.FAST_SOLVER_GAP
    check: Literal["reference", "alternation"] = "reference"
    description: str = ""

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"{self.name}: check must be one of {CHECKS}, got {self.check!r}")
        if not hasattr(self.solve, "solver_name"):
            raise TypeError(f"{self.formulation}: solve must be declared with "
                            "cvxrank.core.capabilities.solver (it names the solver and its needs)")

    @property
    def solver(self) -> str:
        """Registry name of the solver, e.g. ``"pg"``."""
        return self.solve.solver_name  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        """``"<formulation>/<solver>"``."""
        return f"{self.formulation}/{self.solver}"

    def run_seeds(self) -> tuple[int, ...]:
        """Seeds verify runs: all of :attr:`seeds` if stochastic, else the first."""
        if not self.seeds:
            raise ValueError(f"{self.name}: no seeds")
        return tuple(self.seeds) if self.stochastic else (self.seeds[0],)

    def rate_for(self, formulation: Formulation) -> RateSpec:
        """The expected rate on ``formulation``."""
        rate = self.rate(formulation) if callable(self.rate) else self.rate
        if not isinstance(rate, RateSpec):
            raise TypeError(f"{self.name}: rate must give a RateSpec, got {type(rate).__name__}")
        return rate

    def instance_params(self, instance: Instance) -> dict[str, Any]:
        """The instance's hyper-parameters, C rescaled for this entry's method
        (:data:`C_SCALE`)."""
        _load_families()
        scale = C_SCALE.get(self.method)
        if scale is None or "C" not in instance.params:
            return dict(instance.params)
        return {**instance.params, "C": float(instance.params["C"]) * scale(instance.data())}

    def build(self, data: RankingData, params: dict[str, Any] | None = None) -> Formulation:
        """The formulation on ``data`` with the entry's params overridden by ``params``."""
        merged = {**self.params, **(params or {})}
        if self.make_formulation is not None:
            return self.make_formulation(data, merged)
        from cvxrank.methods import get

        return get(self.method).build(data, loss=self.loss, **merged)


#: Every registered pair, in the order verify runs them (filled by the family modules).
REGISTRY: list[Entry] = []

#: Factor applied to an instance's C per method (filled by the family modules with
#: :func:`scale_C`; methods not listed: 1). The instances' C is chosen for RankSVM's sum
#: over pairs; a family whose loss term sums over other things (queries, hinge rows)
#: rescales it so that its loss term weighs about the same.
C_SCALE: dict[str, Callable[[RankingData], float]] = {}


def scale_C(method: str, scale: Callable[[RankingData], float]) -> None:  # noqa: N802
    """Rescale the instances' C for ``method``'s entries by ``scale(data)``."""
    C_SCALE[method] = scale

_loaded = False


def _load_families() -> None:
    """Import every module of this package once (each registers its family's entries)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def register(entry: Entry) -> Entry:
    """Add ``entry`` to :data:`REGISTRY` (ValueError if the pair is already there)."""
    if any(e.formulation == entry.formulation and e.solver == entry.solver for e in REGISTRY):
        raise ValueError(f"{entry.name} is already registered")
    REGISTRY.append(entry)
    return entry


def unregister(entry: Entry) -> None:
    """Remove ``entry`` (the object :func:`register` added) from :data:`REGISTRY`
    (ValueError if it is not there)."""
    for k, known in enumerate(REGISTRY):
        if known is entry:
            del REGISTRY[k]
            return
    raise ValueError(f"{entry.name} is not registered")


@contextlib.contextmanager
def registered(*added: Entry) -> Iterator[tuple[Entry, ...]]:
    """Register ``added`` for the ``with`` block: ``verify``
    (:func:`cvxrank.verification.sweep.run_verification`) runs them there, and they are removed
    on exit, error or not."""
    done: list[Entry] = []
    try:
        for entry in added:
            done.append(register(entry))
        yield added
    finally:
        for entry in done:
            unregister(entry)


def entries(filter: str | Callable[[Entry], bool] | None = None) -> list[Entry]:
    """Registered entries, optionally filtered.

    Parameters
    ----------
    filter : str, callable or None
        A pattern matched against ``"<formulation>/<solver>"`` (shell wildcards ``*?[]``
        as in :mod:`fnmatch`; without a wildcard, a substring), or a predicate on entries.
    """
    _load_families()
    if filter is None:
        return list(REGISTRY)
    if callable(filter):
        return [e for e in REGISTRY if filter(e)]
    pattern = str(filter)
    if any(c in pattern for c in "*?["):
        return [e for e in REGISTRY if fnmatch.fnmatchcase(e.name, pattern)]
    return [e for e in REGISTRY if pattern in e.name]


def solver_names() -> list[str]:
    """Names of the registered hand-written solvers."""
    return sorted({e.solver for e in entries()})


def find_entry(formulation: str, solver: str) -> Entry:
    """The entry of ``solver`` on ``formulation``; ValueError naming the alternatives."""
    registered = entries()
    for e in registered:
        if e.formulation == formulation and e.solver == solver:
            return e
    known = sorted(e.solver for e in registered if e.formulation == formulation)
    if known:
        raise ValueError(f"solver {solver!r} does not handle {formulation}; its solvers are "
                         f"{', '.join(known)}")
    raise ValueError(f"no hand-written solver is registered for {formulation!r} (solvers: "
                     f"{', '.join(solver_names()) or 'none'})")
