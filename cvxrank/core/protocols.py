r"""What each capability of :mod:`cvxrank.core.capabilities` is, as a typed protocol.

One :class:`typing.Protocol` per capability: the methods (with their signatures) and the
attributes a solver that needs it calls on a formulation. A formulation offers a capability
by listing its name in ``capabilities`` (what holds for its loss and data: a hinge RankSVM
has no Newton model) and implementing its protocol; :func:`cvxrank.core.capabilities.
missing_capabilities` checks both before a solver runs, signatures included
(:func:`conformance`). The formulation's data (``data``, ``C``, ``m``, ``loss``, ``X``) are
not capabilities: every formulation has them (:class:`cvxrank.formulations.base.Formulation`).

A capability whose data may live elsewhere (sharded over a cluster,
:class:`cvxrank.distributed.ShardedRankSVM`) has a second protocol for that form
(:class:`ShardedNewton`, :class:`ShardedCuts`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from cvxrank.data.pairs import PairSet
    from cvxrank.numerics.cuts import QueryCuts
    from cvxrank.numerics.sets import ConvexSet


class DualGradient(Protocol):
    """A smooth concave dual :math:`D(\\alpha)` over a set with an exact projection (the
    projected and accelerated gradient methods, :mod:`cvxrank.solvers.dual_gradient`)."""

    dual_set: ConvexSet

    def neg_dual_grad(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`-\\nabla D(\\alpha)`."""

    def dual_lipschitz(self) -> float:
        """The Lipschitz constant L of :math:`\\nabla D`."""

    def dual_strong_convexity(self) -> float:
        """The strong-convexity modulus :math:`\\mu \\ge 0` of :math:`-D`."""

    def project_dual(self, alpha: np.ndarray) -> np.ndarray:
        """The Euclidean projection onto :attr:`dual_set`."""

    def dual_start(self) -> np.ndarray:
        """A feasible start."""


class PrimalCertificate(Protocol):
    """A dual bound certified by any primal point (the KKT dual point of w)."""

    def dual_value_at(self, w: np.ndarray) -> float:
        """A lower bound on the optimum from ``w`` (the dual value of its KKT point)."""


class AccurateGradient(Protocol):
    """The smooth primal's gradient in double-word arithmetic with its rounding bound (the
    Newton solvers' last certificate)."""

    n_dual: int

    def accurate_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradient at ``w`` rounded to float64 and a bound on its error per feature."""

    def compensated_gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The gradient at ``w`` from the float64 loss gradient in the scores, its product
        with the data in double-word arithmetic (O(nd), no pairs), and a bound on its error
        per feature; None where the data do not allow it."""


class PairwiseNewton(Protocol):
    """A differentiable pairwise loss with gradient and Hessian-vector products in the
    scores (PRSVM's and PRSVM+'s engines)."""

    def loss_engine(self, kind: str = ...) -> Any:
        """The loss engine of ``kind`` (explicit pairs, sorted passes, or the best one)."""


class ShardedNewton(Protocol):
    """:class:`PairwiseNewton` where the scores live on shards: the whole Newton model."""

    def newton_model(self, engine: str) -> Any:
        """The Newton model whose losses and products the shards compute."""


class PairSamples(Protocol):
    """Explicit preference pairs with weights and margins to sample from (stochastic pair
    steps)."""

    pairs: PairSet
    pair_weight: np.ndarray
    margin: np.ndarray


class QueryBlocks(Protocol):
    """A pairwise loss that splits into per-query blocks, each evaluated by sorting
    (stochastic query steps)."""

    query_weight: np.ndarray
    weight_table: np.ndarray
    margin_table: np.ndarray
    grade_level: np.ndarray

    def loss_engine(self, kind: str = ...) -> Any:
        """The loss engine of ``kind``."""


class DualQueryBlocks(Protocol):
    """A dual over preference pairs that splits into per-query blocks, each block's
    gradient computed from its query's scores (RankMM's stochastic dual steps)."""

    pairs: PairSet
    pair_scale: np.ndarray
    queries_with_pairs: np.ndarray
    lower_group: tuple[np.ndarray, np.ndarray, np.ndarray]
    grade_level: np.ndarray
    kappa: float
    dual_set: ConvexSet

    def dual_start(self) -> np.ndarray:
        """A feasible start."""

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`w(\\alpha)`."""


class KernelMatrix(Protocol):
    """A Gram matrix of the training documents (kernel PCA map) and the pairwise loss on
    it."""

    K: np.ndarray
    pairs: PairSet
    pair_weight: np.ndarray
    margin: np.ndarray


class LossSubgradient(Protocol):
    """A convex pairwise loss whose value and subgradient at any w come from one evaluation
    (the 1-slack cutting plane's oracle)."""

    pair_weight: np.ndarray

    def evaluate_loss(self, w: np.ndarray) -> Any:
        """The loss, its derivative in the scores and the active pairs at ``w``."""


class ShardedCuts(Protocol):
    """:class:`LossSubgradient` where the data live on shards: the cut oracle itself."""

    def loss_cuts(self) -> Callable[[np.ndarray], QueryCuts]:
        """The oracle ``w -> QueryCuts`` whose sums the shards compute."""


class ConeBlocks(Protocol):
    """A non-convex problem in a cone basis and per-pair coefficients whose two blocks are
    convex formulations (ConeRank's alternation)."""

    pairs: PairSet
    band: tuple[float, float]

    def folding_in(self, U: np.ndarray) -> Any:
        """The convex block in the coefficients for the basis ``U``."""

    def basis_update(self, W: np.ndarray) -> Any:
        """The convex block in the basis for the coefficients ``W``."""

    def random_start(self, seed: int | None = ...) -> tuple[np.ndarray, np.ndarray]:
        """A feasible ``(U, W)``."""

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, W)`` of the joint variable."""

    def join(self, U: np.ndarray, W: np.ndarray) -> np.ndarray:
        """The joint variable of ``(U, W)``."""


class ConeBlock(Protocol):
    """One convex block of ConeRank with its start."""

    pairs: PairSet

    def start(self) -> np.ndarray:
        """A feasible start of the block."""


class SeparationOracle(Protocol):
    """A most-violated-constraint oracle per query block and the per-query losses (n-slack
    cutting planes)."""

    queries_with_pairs: np.ndarray

    def separation_oracle(self, w: np.ndarray) -> QueryCuts:
        """The affine piece of every query's loss active at ``w``."""

    def query_losses(self, w: np.ndarray) -> np.ndarray:
        """Every query's loss at ``w``."""


class CutBounds(Protocol):
    """The numbers of the cutting planes' iteration bounds."""

    def cut_bounds(self) -> tuple[float, float, np.ndarray]:
        """Each block's loss weight, a bound on a piece's gradient norm and the blocks'
        losses at w = 0."""


class MarginBand(Protocol):
    """A hinge loss whose pairs near their margin at w are enumerated from the sorted
    scores (the 1-slack's exact finish)."""

    def margin_band(self, w: np.ndarray, radii: Sequence[float], *,
                    max_pairs: int = ...) -> Any:
        """The pairs within the first of ``radii`` of their margin, with sums over those
        below it (None when there are more than ``max_pairs``)."""

    def primal_value(self, w: np.ndarray) -> float:
        """The primal objective at ``w``."""


class PairWeightedCuts(Protocol):
    """Cuts that are pair weightings of the loss's own dual set, mapped to a dual point (the
    cutting plane then returns alpha)."""

    n_pairs: int

    def dual_from_pair_weights(self, beta: np.ndarray) -> np.ndarray:
        """The dual point of the pair multipliers ``beta``."""


# -- conformance ---------------------------------------------------------------------------
def members(protocol: type) -> dict[str, Callable[..., Any] | None]:
    """The protocol's members: method name to its function, attribute name to None."""
    out: dict[str, Callable[..., Any] | None] = dict.fromkeys(
        vars(protocol).get("__annotations__", {}))
    for name, value in vars(protocol).items():
        if inspect.isfunction(value) and not name.startswith("_"):
            out[name] = value
    return out


def conformance(obj: Any, protocol: type) -> list[str]:
    """What ``obj`` lacks of ``protocol``: each missing member, and each method whose
    signature does not take the protocol's arguments (empty when it conforms).

    Attributes are looked up without evaluating them (a lazily built property would build
    the pairs just to be checked): in the instance's ``__dict__`` or a class of its MRO.
    """
    problems = []
    for name, expected in members(protocol).items():
        found = _lookup(obj, name)
        if found is _MISSING:
            problems.append(f"{name} missing")
        elif expected is not None:
            reason = _signature_mismatch(found, expected)
            if reason:
                problems.append(f"{name}{reason}")
    return problems


_MISSING = object()


def _lookup(obj: Any, name: str) -> Any:
    """The attribute ``name`` as stored: a value of the instance's ``__dict__`` (called as
    it is, so wrapped as a staticmethod) or of a class of the MRO."""
    if name in getattr(obj, "__dict__", {}):
        return staticmethod(obj.__dict__[name])
    for klass in type(obj).__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return _MISSING


def _signature_mismatch(found: Any, expected: Callable[..., Any]) -> str:
    """Why the class attribute ``found`` cannot be called as ``expected`` (a protocol
    method), or empty: every argument of ``expected`` has a parameter of the same name and
    kind (or a ``*args``/``**kwargs`` that takes it), and every required parameter of
    ``found`` is one of them."""
    static = isinstance(found, staticmethod)
    function = found.__func__ if isinstance(found, (staticmethod, classmethod)) else found
    if isinstance(function, functools.partial) or not inspect.isroutine(function):
        if not callable(function):
            return " is not a method"
        static = True  # a callable object stored on the instance: called as it is
    try:
        have = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return ""  # a builtin without a signature: nothing to check
    want = list(inspect.signature(expected).parameters.values())[1:]
    have = have if static else have[1:]
    names = {p.name for p in have}
    var_args = any(p.kind is p.VAR_POSITIONAL for p in have)
    var_kwargs = any(p.kind is p.VAR_KEYWORD for p in have)
    shown = f"{inspect.signature(function)} does not take {inspect.signature(expected)}"
    for position, p in enumerate(want):
        if p.kind is p.KEYWORD_ONLY:
            if p.name not in names and not var_kwargs:
                return shown
            continue
        positional = [q for q in have if q.kind in (q.POSITIONAL_ONLY,
                                                    q.POSITIONAL_OR_KEYWORD)]
        if position < len(positional):
            if positional[position].name != p.name:
                return shown
        elif not var_args:
            return shown
    named = {p.name for p in want}
    required = [q for q in have if q.default is q.empty
                and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
    if any(q.name not in named for q in required):
        return shown
    return ""
