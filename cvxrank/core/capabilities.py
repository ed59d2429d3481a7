"""What a solver needs of a formulation, declared on both sides and checked before a run.

A formulation lists the capabilities it offers in :attr:`Formulation.capabilities`
(a frozenset of names below: what holds for its loss and data) and implements each one's
typed protocol (:mod:`cvxrank.core.protocols`); a hand-written solver is declared with
:func:`solver`, which records the capabilities it needs and checks them before the solver
runs, so that a solver given a formulation it cannot handle fails at once with a message
naming what is missing (the skglm pattern: ``_datafit_required_attr``), not deep inside its
first iteration. The check covers the protocol too: a formulation that declares a capability
without its methods, or with a method that does not take the protocol's arguments, is
refused with the members it lacks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from cvxrank import tolerances
from cvxrank.core import protocols
from cvxrank.core.trace import OPTION_NAMES, SolverOptions
from cvxrank.errors import CapabilityError


@dataclass(frozen=True)
class Capability:
    """One thing a solver may need of a formulation.

    Attributes
    ----------
    name : str
        Short name used in declarations (``"dual_gradient"``).
    description : str
        What it means, for error messages.
    protocol : type or None
        Its :class:`typing.Protocol` (:mod:`cvxrank.core.protocols`): the methods, with
        their signatures, and attributes it stands for; None for a fact about the
        formulation's structure with no members of its own.
    elsewhere : type or None
        The protocol that stands for it instead when the data live elsewhere (sharded over a
        cluster, :class:`cvxrank.distributed.ShardedRankSVM`: the Newton model, the cut
        oracle); None when there is no such form.
    """

    name: str
    description: str
    protocol: type | None = None
    elsewhere: type | None = None

    def problems(self, formulation: Any) -> list[str]:
        """What ``formulation`` lacks of :attr:`protocol` (members, signatures), or empty
        when it implements it or :attr:`elsewhere`."""
        if self.protocol is None:
            return []
        problems = protocols.conformance(formulation, self.protocol)
        if problems and self.elsewhere is not None \
                and not protocols.conformance(formulation, self.elsewhere):
            return []
        return problems


#: Every capability, by name.
CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    Capability("dual_gradient", "a smooth concave dual with gradient, Lipschitz constant, "
               "strong-convexity modulus and an exact projection onto its feasible set",
               protocols.DualGradient),
    Capability("primal_certificate", "a dual bound certified by any primal point "
               "(the KKT dual point of w)", protocols.PrimalCertificate),
    Capability("accurate_gradient", "the smooth primal's gradient in double-word arithmetic "
               "with its rounding bound (the Newton solvers' last certificate)",
               protocols.AccurateGradient),
    Capability("pairwise_newton", "a differentiable pairwise loss with gradient and "
               "Hessian-vector products in the scores", protocols.PairwiseNewton,
               protocols.ShardedNewton),
    Capability("sorted_pairs", "weights per query x grade pair, so the pairwise loss is "
               "evaluated by sorting in O(n log n) without building the pairs",
               protocols.PairwiseNewton, protocols.ShardedNewton),
    Capability("pair_samples", "explicit preference pairs with weights and margins to "
               "sample from", protocols.PairSamples),
    Capability("query_blocks", "a pairwise loss that splits into per-query blocks, each "
               "evaluated by sorting (stochastic query steps)", protocols.QueryBlocks),
    Capability("dual_query_blocks", "a dual over preference pairs that splits into per-query "
               "blocks, each block's gradient computed from its query's scores (stochastic "
               "dual steps, RankMM)", protocols.DualQueryBlocks),
    Capability("euclidean_dual_blocks", "per-query dual blocks that are boxes or l1,inf "
               "balls, the sets of stochastic gradient projection (RankMM-1 and -3)"),
    Capability("simplex_dual_blocks", "per-query dual blocks that are simplices, the geometry "
               "of exponentiated gradient (RankMM-2)"),
    Capability("kernel_matrix", "a Gram matrix of the training documents (kernel PCA map) "
               "and the pairwise loss on it", protocols.KernelMatrix),
    Capability("loss_subgradient", "a convex pairwise loss whose value and subgradient "
               "at any w come from one evaluation (the 1-slack cutting plane's oracle)",
               protocols.LossSubgradient, protocols.ShardedCuts),
    Capability("cone_blocks", "a non-convex problem in a cone basis and per-pair "
               "coefficients whose two blocks are convex formulations (ConeRank)",
               protocols.ConeBlocks),
    Capability("cone_block", "one convex block of ConeRank (the folding-in of the pairs' "
               "coefficients or the basis update) with its start", protocols.ConeBlock),
    Capability("separation_oracle", "a most-violated-constraint oracle per query block, the "
               "queries with pairs and the per-query losses (n-slack cutting planes)",
               protocols.SeparationOracle),
    Capability("cut_bounds", "the numbers of the cutting planes' iteration bounds: the weight "
               "of each block's loss, a bound on the norm of a piece's gradient and each "
               "block's loss at w = 0", protocols.CutBounds),
    Capability("margin_band", "a hinge loss whose pairs near their margin at w are "
               "enumerated from the sorted scores, with sums over those below it (the "
               "1-slack's exact finish)", protocols.MarginBand),
    Capability("pair_weighted_cuts", "cuts that are pair weightings of the loss's own dual "
               "set, mapped to a dual point (the cutting plane then returns alpha)",
               protocols.PairWeightedCuts),
)}


def missing_capabilities(formulation: Any, needs: Iterable[str]) -> list[str]:
    """The capabilities of ``needs`` that ``formulation`` does not offer (declared and
    implemented), in the order given."""
    return [name for name in needs if _lack(formulation, name)]


def _lack(formulation: Any, name: str) -> str:
    """Why ``formulation`` does not offer the capability ``name`` (not declared in its
    ``capabilities``, or its protocol's members or signatures), or empty."""
    if name not in frozenset(getattr(formulation, "capabilities", frozenset())):
        return "not declared"
    return "; ".join(CAPABILITIES[name].problems(formulation))


def refusal(formulation: Any, solver: str, needs: Iterable[str]) -> str:
    """Why ``solver`` cannot run on ``formulation``: each capability of ``needs`` it lacks,
    with its meaning; empty when the solver can run on it."""
    name = getattr(formulation, "name", type(formulation).__name__)
    missing = missing_capabilities(formulation, needs)
    if missing:
        what = "; ".join(f"{m} ({CAPABILITIES[m].description}{_detail(formulation, m)})"
                         for m in missing)
        return f"solver {solver!r} cannot run on {name}: it needs {what}"
    return ""


def _detail(formulation: Any, name: str) -> str:
    """The members a formulation that declares ``name`` lacks, for the message."""
    reason = _lack(formulation, name)
    return "" if reason == "not declared" else f"; declared, but {reason}"


def require(formulation: Any, solver: str, needs: Iterable[str]) -> None:
    """Raise :class:`~cvxrank.errors.CapabilityError` unless ``solver`` can run on
    ``formulation`` (the message is :func:`refusal`'s)."""
    reason = refusal(formulation, solver, needs)
    if reason:
        raise CapabilityError(reason)


def can_run(solve: Callable[..., Any], formulation: Any) -> bool:
    """Whether the declared solver ``solve`` (:func:`solver`) can run on ``formulation``:
    its needs met."""
    return not refusal(formulation, solve.solver_name, solve.needs)


F = TypeVar("F", bound=Callable[..., Any])


def solver(name: str, needs: Iterable[str], *, tol: float = tolerances.FAST_SOLVER_GAP,
           max_iter: int = 1000) -> Callable[[F], F]:
    """Declare a hand-written solver: its registry name, the capabilities it needs (what
    follows from a formulation's loss among them, e.g. the simplex dual blocks of RankMM's
    SEG) and the defaults of its tolerance and iteration limit.

    The solver is written as ``fn(formulation, options, **own) -> Run``, ``options`` a
    :class:`~cvxrank.core.trace.SolverOptions` with ``tol`` and ``max_iter`` filled, ``own`` the
    keyword arguments of its own (a step size, a batch size, ...). The declared function is
    called as ``solve(formulation, options=None, *, tol=..., max_iter=..., time_budget=...,
    seed=..., callback=..., until=..., **own)``: the common options given as keywords
    override those of ``options``, unset ones take the solver's defaults. It checks
    ``needs`` (:func:`require`) before it runs and carries ``solver_name``,
    ``needs`` and ``defaults`` attributes, read by the registry and ``cvxrank
    fit`` (:func:`can_run`).

    Examples
    --------
    >>> @solver("apg", needs=("dual_gradient",), tol=1e-6, max_iter=100_000)
    ... def solve_apg(formulation, options, *, record_every=1): ...
    """
    needed = tuple(needs)
    unknown = [n for n in needed if n not in CAPABILITIES]
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; known: {sorted(CAPABILITIES)}")

    def wrap(fn: F) -> F:
        run = takes_options(tol=tol, max_iter=max_iter, check=(name, needed))(fn)
        run.solver_name = name  # type: ignore[attr-defined]
        run.needs = needed  # type: ignore[attr-defined]
        known = SOLVERS.get(name)
        if known is not None and known.__qualname__ != run.__qualname__:
            raise ValueError(f"a solver named {name!r} is already declared "
                             f"({known.__module__}.{known.__qualname__})")
        SOLVERS[name] = run
        return run

    return wrap


def takes_options(*, tol: float, max_iter: int,
                  check: tuple[str, tuple[str, ...]] | None = None
                  ) -> Callable[[F], F]:
    """Let ``fn(formulation, options, **own)`` be called as ``fn(formulation, options=None,
    *, tol=..., max_iter=..., time_budget=..., seed=..., callback=..., until=..., **own)``.

    The common options given as keywords override those of ``options``; unset ones take
    ``tol`` and ``max_iter`` here. ``check = (name, needs)`` checks the
    formulation's capabilities first (:func:`require`). The wrapper carries
    ``defaults``.
    """
    defaults = {"tol": float(tol), "max_iter": int(max_iter)}

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(formulation: Any, options: SolverOptions | None = None, /,
                **kwargs: Any) -> Any:
            given, own = SolverOptions.split(kwargs)
            base = options if options is not None else SolverOptions()
            resolved = base.replace(**{k: getattr(given, k) for k in OPTION_NAMES})
            if check is not None:
                require(formulation, *check)
            return fn(formulation, resolved.with_defaults(**defaults), **own)

        run.defaults = defaults  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


#: Every declared solver, by name (filled by :func:`solver`; names are unique, and a
#: redeclaration of the same function, e.g. a module reloaded in a notebook, replaces it).
SOLVERS: dict[str, Callable[..., Any]] = {}
