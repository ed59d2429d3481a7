"""What a solver needs of a formulation, declared on both sides and checked before a run.

A formulation lists the capabilities it offers in :attr:`Formulation.capabilities`
(a frozenset of names below); a hand-written solver is declared with :func:`solver`, which
records the capabilities it needs and checks them before the solver runs, so that a solver
given a formulation it cannot handle fails at once with a message naming what is missing
(the skglm pattern: ``_datafit_required_attr``), not deep inside its first iteration.

Each capability also names the formulation methods it stands for, so a formulation that
claims one without implementing it is caught by the same check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

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
    methods : tuple of str
        Formulation methods or attributes it stands for.
    """

    name: str
    description: str
    methods: tuple[str, ...] = ()


#: Every capability, by name.
CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    Capability("dual_gradient", "a smooth concave dual with gradient, Lipschitz constant, "
               "strong-convexity modulus and an exact projection onto its feasible set",
               ("neg_dual_grad", "dual_lipschitz", "dual_strong_convexity", "dual_set",
                "project_dual", "dual_start")),
    Capability("primal_certificate", "a dual bound certified by any primal point "
               "(the KKT dual point of w)", ("dual_value_at",)),
    Capability("pairwise_newton", "a differentiable pairwise loss with gradient and "
               "Hessian-vector products in the scores", ("loss_engine",)),
    Capability("sorted_pairs", "weights per query x grade pair, so the pairwise loss is "
               "evaluated by sorting in O(n log n) without building the pairs",
               ("loss_engine",)),
    Capability("pair_samples", "explicit preference pairs with weights and margins to "
               "sample from", ("pairs", "pair_weight", "margin")),
    Capability("query_blocks", "a pairwise loss that splits into per-query blocks, each "
               "evaluated by sorting (stochastic query steps)",
               ("loss_engine", "query_weight", "weight_table", "margin_table")),
    Capability("dual_query_blocks", "a dual over preference pairs that splits into per-query "
               "blocks, each block's gradient computed from its query's scores (stochastic "
               "dual steps, RankMM)",
               ("pairs", "pair_scale", "queries_with_pairs", "dual_set", "dual_start",
                "primal_from_dual")),
    Capability("kernel_matrix", "a Gram matrix of the training documents (kernel PCA map)",
               ("K",)),
    Capability("loss_subgradient", "a convex pairwise loss whose value and subgradient "
               "at any w come from one evaluation (the 1-slack cutting plane's oracle)",
               ("evaluate_loss", "X", "C", "pair_weight")),
    Capability("cone_blocks", "a non-convex problem in a cone basis and per-pair "
               "coefficients whose two blocks are convex formulations (ConeRank)",
               ("folding_in", "basis_update", "random_start", "split", "join")),
    Capability("separation_oracle", "a most-violated-constraint oracle (cutting planes)",
               ("separation_oracle",)),
)}


def _defines(obj: Any, name: str) -> bool:
    """Whether ``obj`` has attribute ``name``, without evaluating a property (a lazily
    built ``dual_set`` would build the pairs just to be checked)."""
    return name in getattr(obj, "__dict__", {}) or any(
        name in vars(klass) for klass in type(obj).__mro__)


def missing_capabilities(formulation: Any, needs: Iterable[str]) -> list[str]:
    """The capabilities of ``needs`` that ``formulation`` does not offer (declared and
    implemented), in the order given."""
    offered = frozenset(getattr(formulation, "capabilities", frozenset()))
    out = []
    for name in needs:
        cap = CAPABILITIES[name]
        if name not in offered or not all(_defines(formulation, m) for m in cap.methods):
            out.append(name)
    return out


def require(formulation: Any, solver: str, needs: Iterable[str]) -> None:
    """Raise :class:`~cvxrank.errors.CapabilityError` unless ``formulation`` offers ``needs``.

    The message names the solver, the formulation and each missing capability with its
    meaning.
    """
    missing = missing_capabilities(formulation, needs)
    if missing:
        name = getattr(formulation, "name", type(formulation).__name__)
        what = "; ".join(f"{m} ({CAPABILITIES[m].description})" for m in missing)
        raise CapabilityError(f"solver {solver!r} cannot run on {name}: it needs {what}")


F = TypeVar("F", bound=Callable[..., Any])


def solver(name: str, needs: Iterable[str]) -> Callable[[F], F]:
    """Declare a hand-written solver: its registry name and the capabilities it needs.

    The decorated function checks ``needs`` (:func:`require`) before it runs and carries
    ``solver_name`` and ``needs`` attributes, read by the registry and ``cvxrank fit``.

    Examples
    --------
    >>> @solver("apg", needs=("dual_gradient",))
    ... def solve_apg(formulation, **options): ...
    """
    needed = tuple(needs)
    unknown = [n for n in needed if n not in CAPABILITIES]
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; known: {sorted(CAPABILITIES)}")

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(formulation: Any, *args: Any, **options: Any) -> Any:
            require(formulation, name, needed)
            return fn(formulation, *args, **options)

        run.solver_name = name  # type: ignore[attr-defined]
        run.needs = needed  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap
