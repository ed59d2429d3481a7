"""The (formulation, solver, expected rate) pairs that ``cvxrank verify`` checks.

An :class:`Entry` says how to build a formulation from data and hyper-parameters, which
hand-written solver to run on it, and the convergence rate the solver's theory proves there.
``cvxrank verify`` (:func:`cvxrank.verification.run_verification`) runs every entry on every
embedded instance, against a certified CVXPY reference; ``cvxrank fit`` and the estimators
look solvers up here by name (:func:`find_solver`).

Adding a method is a few lines at the bottom of this module::

    register(Entry("ranksvm-squared_hinge", "newton", _ranksvm("squared_hinge"),
                   solve_newton, RateSpec.newton(30), tol=tolerances.NEWTON_GAP))

Stochastic solvers set ``stochastic=True``: verify runs them once per seed in ``seeds`` and
judges the median run (:func:`cvxrank.validate.validate_runs`).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvxrank import tolerances
from cvxrank.data.ranking_data import RankingData
from cvxrank.formulations.base import Formulation
from cvxrank.solvers.dual_gradient import solve_accelerated_gradient, solve_projected_gradient
from cvxrank.solvers.kernel_newton import solve_kernel_newton
from cvxrank.solvers.newton import solve_prsvm, solve_prsvm_plus
from cvxrank.solvers.stochastic import solve_sgd_pairs, solve_sgd_queries
from cvxrank.trace import SolverResult
from cvxrank.validate import RateSpec

MakeFormulation = Callable[[RankingData, dict], Formulation]
RateLike = RateSpec | Callable[[Formulation], RateSpec]


@dataclass(frozen=True, eq=False)
class Entry:
    """One (formulation, solver) pair and the rate its theory proves.

    Attributes
    ----------
    formulation : str
        Registry name of the formulation (its ``Formulation.name``), e.g. ``"ranksvm-hinge"``.
    solver : str
        Registry name of the solver, e.g. ``"pg"``.
    make_formulation : callable
        ``make_formulation(data, params) -> Formulation``; ``params`` are the entry's
        :attr:`params` overridden by the instance's (e.g. ``{"C": 0.01}``).
    solve : callable
        ``solve(formulation, *, tol, max_iter, time_budget, seed, callback, ...) ->
        SolverResult``. Options that define the algorithm (``accelerated=True``) belong here
        (a wrapper or ``functools.partial``) so that ``cvxrank fit`` gets the same algorithm.
    rate : RateSpec or callable
        The proven rate, or ``rate(formulation) -> RateSpec`` when it depends on the problem
        (e.g. a predicted contraction ``1 - mu/L``).
    params : dict
        Default hyper-parameters of the formulation.
    solver_options : dict
        Extra keyword arguments for ``solve`` in verification runs (``max_iter``,
        ``time_budget``, ...); ``tol`` defaults to :attr:`tol`.
    stochastic : bool
        Run once per seed of :attr:`seeds` and judge the median run.
    seeds : tuple of int
        Seeds of the runs (only the first is used for a deterministic solver).
    tol : float
        Relative objective gap the solver must reach (a level of :mod:`cvxrank.tolerances`).
    description : str
        One line for listings.
    """

    formulation: str
    solver: str
    make_formulation: MakeFormulation
    solve: Callable[..., SolverResult]
    rate: RateLike
    params: dict[str, Any] = field(default_factory=dict)
    solver_options: dict[str, Any] = field(default_factory=dict)
    stochastic: bool = False
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    tol: float = tolerances.FAST_SOLVER_GAP
    description: str = ""

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

    def build(self, data: RankingData, params: dict[str, Any] | None = None) -> Formulation:
        """The formulation on ``data`` with the entry's params overridden by ``params``."""
        return self.make_formulation(data, {**self.params, **(params or {})})


#: Every registered pair, in the order verify runs them.
REGISTRY: list[Entry] = []


def register(entry: Entry) -> Entry:
    """Add ``entry`` to :data:`REGISTRY` (ValueError if the pair is already there)."""
    if any(e.formulation == entry.formulation and e.solver == entry.solver for e in REGISTRY):
        raise ValueError(f"{entry.name} is already registered")
    REGISTRY.append(entry)
    return entry


def entries(filter: str | Callable[[Entry], bool] | None = None) -> list[Entry]:
    """Registered entries, optionally filtered.

    Parameters
    ----------
    filter : str, callable or None
        A pattern matched against ``"<formulation>/<solver>"`` (shell wildcards ``*?[]``
        as in :mod:`fnmatch`; without a wildcard, a substring), or a predicate on entries.
    """
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
    return sorted({e.solver for e in REGISTRY})


def find_entry(formulation: str, solver: str) -> Entry:
    """The entry of ``solver`` on ``formulation``; ValueError naming the alternatives."""
    for e in REGISTRY:
        if e.formulation == formulation and e.solver == solver:
            return e
    known = sorted(e.solver for e in REGISTRY if e.formulation == formulation)
    if known:
        raise ValueError(f"solver {solver!r} does not handle {formulation}; its solvers are "
                         f"{', '.join(known)}")
    raise ValueError(f"no hand-written solver is registered for {formulation!r} (solvers: "
                     f"{', '.join(solver_names()) or 'none'})")


def find_solver(formulation: str, solver: str) -> Callable[..., SolverResult]:
    """The solve function of ``solver`` on ``formulation`` (see :func:`find_entry`)."""
    return find_entry(formulation, solver).solve


# --------------------------------------------------------------------------- RankSVM


def _ranksvm(loss: str) -> MakeFormulation:
    """``make_formulation`` of RankSVM with ``loss`` (params: C)."""

    def make(data: RankingData, params: dict) -> Formulation:
        from cvxrank.formulations.ranksvm import RankSVM

        return RankSVM(data, loss=loss, C=float(params.get("C", 1.0)))  # type: ignore[arg-type]

    make.__name__ = f"make_ranksvm_{loss}"
    return make


def _irsvm(loss: str) -> MakeFormulation:
    """``make_formulation`` of IR SVM with ``loss`` (params: C, scaled as below).

    IR SVM's weights :math:`\\mu_q = 1/n_q` sum to the number Q' of queries with pairs where
    RankSVM's unit weights sum to p, so the instance's C (chosen for RankSVM) is multiplied
    by p / Q' to keep the loss term on the same scale. Grade pairs never at the top of a
    query get half the smallest positive tau (``zero_floor=0.5``) instead of weight zero.
    """

    def make(data: RankingData, params: dict) -> Formulation:
        from cvxrank.data.pairs import count_pairs
        from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop

        per_query = count_pairs(data)
        scale = per_query.sum() / np.count_nonzero(per_query)
        return IRSVM(data, loss=loss, C=float(params.get("C", 1.0)) * scale,  # type: ignore[arg-type]
                     tau=ndcg1_swap_drop(data, zero_floor=0.5))

    make.__name__ = f"make_irsvm_{loss}"
    return make


def _kernel_ranksvm(loss: str) -> MakeFormulation:
    """``make_formulation`` of the RBF-kernel RankSVM (params: C, gamma = 1/d by default)."""

    def make(data: RankingData, params: dict) -> Formulation:
        from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
        from cvxrank.kernel import gram_matrix

        gamma = float(params.get("gamma", 1.0 / data.n_features))
        K = gram_matrix(data.X, kernel="rbf", gamma=gamma)
        return KernelRankSVM(data, K, loss=loss, C=float(params.get("C", 1.0)))  # type: ignore[arg-type]

    make.__name__ = f"make_kernel_ranksvm_{loss}"
    return make


def _pg_linear_rate(formulation: Formulation) -> RateSpec:
    """PG on a mu-strongly concave, L-smooth dual: ``(1 - mu/L)^k`` (Nesterov 2004, 2.2)."""
    mu, L = formulation.dual_strong_convexity(), formulation.dual_lipschitz()
    return RateSpec.linear(1.0 - mu / L)


def _apg_linear_rate(formulation: Formulation) -> RateSpec:
    """Constant-momentum APG: ``(1 - sqrt(mu/L))^k`` (Nesterov 2004, Thm. 2.2.3)."""
    mu, L = formulation.dual_strong_convexity(), formulation.dual_lipschitz()
    return RateSpec.linear(1.0 - math.sqrt(mu / L))


#: Verification limits of the first-order dual solvers (a safety net; the instances are
#: chosen so that they converge well within them).
_FIRST_ORDER = {"max_iter": 100_000, "time_budget": 120.0}

register(Entry(
    "ranksvm-hinge", "pg", _ranksvm("hinge"), solve_projected_gradient,
    RateSpec.sublinear(-1), solver_options=_FIRST_ORDER,
    description="projected gradient on the box-constrained dual, O(1/k) (Beck-Teboulle Thm 3.1)",
))
register(Entry(
    "ranksvm-hinge", "apg", _ranksvm("hinge"), solve_accelerated_gradient,
    RateSpec.sublinear(-2), solver_options=_FIRST_ORDER,
    description="FISTA on the box-constrained dual, O(1/k^2) (Beck-Teboulle Thm 4.4)",
))
register(Entry(
    "ranksvm-squared_hinge", "pg", _ranksvm("squared_hinge"), solve_projected_gradient,
    _pg_linear_rate, solver_options=_FIRST_ORDER,
    description="projected gradient on the strongly concave dual, (1 - mu/L)^k",
))
register(Entry(
    "ranksvm-squared_hinge", "apg", _ranksvm("squared_hinge"), solve_accelerated_gradient,
    _apg_linear_rate, solver_options=_FIRST_ORDER,
    description="constant-momentum Nesterov on the strongly concave dual, (1 - sqrt(mu/L))^k",
))


# --------------------------------------------------------------------------- Newton (PRSVM)

#: A Newton method takes "a handful" of outer iterations (Chapelle & Keerthi 2010, Sect. 2:
#: constant in practice) and ends superlinearly (truncated Newton with a forcing sequence,
#: Dembo & Steihaug 1983).
NEWTON_RATE = RateSpec.newton(15)

for _loss in ("squared_hinge", "huber"):
    register(Entry(
        f"ranksvm-{_loss}", "prsvm", _ranksvm(_loss), solve_prsvm, NEWTON_RATE,
        tol=tolerances.NEWTON_GAP,
        description="truncated Newton through the pair operator A, O(nd + p) (C&K Sect. 3)",
    ))
    register(Entry(
        f"ranksvm-{_loss}", "prsvm+", _ranksvm(_loss), solve_prsvm_plus, NEWTON_RATE,
        tol=tolerances.NEWTON_GAP,
        description="truncated Newton with sorted O(nd + n log n) gradients (C&K Sect. 4)",
    ))
register(Entry(
    "ranksvm-huber", "apg", _ranksvm("huber"), solve_accelerated_gradient, _apg_linear_rate,
    solver_options=_FIRST_ORDER,
    description="constant-momentum Nesterov on the box-constrained strongly concave dual",
))

# --------------------------------------------------------------------------- stochastic

#: SGD's proven rate with the step 2/(mu (t+1)) and t-weighted averaging (Lacoste-Julien
#: et al. 2012): E[P(w_bar_t)] - p* = O(1/t). The expectation is estimated by the mean over
#: five seeded runs (with three, one run's fluctuations can still tilt the fitted slope).
SGD_RATE = RateSpec.sublinear(-1, measure="primal")
SGD_SEEDS = (0, 1, 2, 3, 4)

register(Entry(
    "ranksvm-squared_hinge", "sgd-pairs", _ranksvm("squared_hinge"), solve_sgd_pairs,
    SGD_RATE, stochastic=True, seeds=SGD_SEEDS, tol=tolerances.STOCHASTIC_GAP,
    solver_options={"tol": 0.0, "max_iter": 30_000, "batch_size": 16},
    description="SGD on pairs (C&K Alg. 2, 16 pairs a step), O(1/t)",
))
register(Entry(
    "ranksvm-squared_hinge", "sgd-queries", _ranksvm("squared_hinge"), solve_sgd_queries,
    SGD_RATE, stochastic=True, seeds=SGD_SEEDS, tol=tolerances.STOCHASTIC_GAP,
    solver_options={"tol": 0.0, "max_iter": 20_000},
    description="SGD on queries with O(n_q log n_q) query gradients (C&K Alg. 3), O(1/t)",
))

# --------------------------------------------------------------------------- IR SVM

register(Entry(
    "irsvm-hinge", "apg", _irsvm("hinge"), solve_accelerated_gradient, RateSpec.sublinear(-2),
    solver_options=_FIRST_ORDER,
    description="FISTA on IR SVM's box-constrained dual (Li Sect. 4.2), O(1/k^2)",
))
register(Entry(
    "irsvm-squared_hinge", "prsvm+", _irsvm("squared_hinge"), solve_prsvm_plus, NEWTON_RATE,
    tol=tolerances.NEWTON_GAP,
    description="PRSVM+ with weights tau_k mu_q per query and grade pair (C&K Sect. 6.2)",
))

# --------------------------------------------------------------------------- kernel

register(Entry(
    "kernel-ranksvm-squared_hinge", "prsvm+", _kernel_ranksvm("squared_hinge"),
    solve_kernel_newton, NEWTON_RATE, tol=tolerances.NEWTON_GAP,
    description="PRSVM+ on the kernel PCA map of an RBF kernel (C&K Sect. 6.3)",
))

# --------------------------------------------------------------------------- OC SVM


def _ocsvm(data: RankingData, params: dict) -> Formulation:
    """``make_formulation`` of the fixed-margin OC SVM (params: C, scaled as below).

    OC SVM's C multiplies a sum over m = 2n - m_1 - m_l hinge rows (each document borders one
    or two thresholds) where RankSVM's multiplies one over p pairs, so the instance's C
    (chosen for RankSVM) is multiplied by p / m to keep the loss term on the same scale.
    """
    from cvxrank.data.pairs import count_pairs
    from cvxrank.formulations.ocsvm import OrdinalSVM

    counts = np.unique(data.y, return_counts=True)[1]
    rows = 2 * counts.sum() - counts[0] - counts[-1]
    return OrdinalSVM(data, C=float(params.get("C", 1.0)) * count_pairs(data).sum() / rows)


register(Entry(
    "ocsvm-fixed", "apg", _ocsvm, solve_accelerated_gradient, RateSpec.sublinear(-2),
    solver_options=_FIRST_ORDER,
    description="FISTA on OC SVM's dual with the exact box + equality projection, O(1/k^2)",
))
