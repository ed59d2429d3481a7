r"""A user's feasible set: its CVXPY constraints plus a numpy projection, checked by CVXPY.

A :class:`ConstraintSet` is a :class:`cvxrank.numerics.sets.ConvexSet` made from two functions: the
constraints on a CVXPY expression and the exact Euclidean projection in numpy. It can be a
formulation's dual feasible set (``dual_set``, from which the dual gradient solvers project)
or a set of weights (:class:`~cvxrank.sandbox.pairwise.PairwiseFormulation`'s
``weight_set``). The library checks the projection against CVXPY (:meth:`ConstraintSet.
verify`), once per dimension: at fixed pseudo-random points v, of several magnitudes and one
inside the set, with :math:`p` = ``project(v)``, :math:`z` CVXPY's projection (minimize
:math:`\|x - v\|^2` subject to the constraints, Clarabel at the reference settings) and
:math:`\sigma = \max(1, \|v\|_\infty)`,

1. p is in the set: CVXPY's distance from p to the set is at most
   ``reference_agreement`` :math:`\sigma`;
2. p is as close to v as z: :math:`\|p - v\|^2 \le \|z - v\|^2 +` ``reference_agreement``
   :math:`\sigma^2`.

Since the squared distance is 2-strongly convex, a feasible p within :math:`\epsilon
\sigma^2` of the optimal distance is within :math:`\sqrt{\epsilon}\sigma` of the projection:
comparing optimal *values*, which an interior-point solver gets right to its tolerance, and
not CVXPY's point, which is off by the square root of its tolerance where the projection is
degenerate (``tests/numerics/test_sets.py`` explains why). A failure raises
:class:`~cvxrank.losses.pair_loss_type.ExpressionMismatchError` naming the set and the point.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.losses.pair_loss_type import ExpressionMismatchError
from cvxrank.numerics.sets import ConvexSet
from cvxrank.tolerances import reference_agreement

if TYPE_CHECKING:
    import cvxpy as cp

#: Seed and magnitudes of the points at which a projection is checked (one point per
#: magnitude, then the projection of the last one, a point inside the set).
CHECK_SEED = 20_240_612
CHECK_MAGNITUDES = (0.1, 1.0, 10.0)

#: The CVXPY solver of the check (at :data:`cvxrank.certificates.reference.SOLVER_OPTIONS`).
CHECK_SOLVER = "CLARABEL"


class ConstraintSet(ConvexSet):
    """A closed convex set given by CVXPY constraints and a numpy projection.

    Parameters
    ----------
    name : str
        Names the set in formulation names, messages and caches.
    constraints : callable
        ``constraints(x)``: the set's CVXPY constraints on an expression ``x`` (DCP, no
        parameters; auxiliary variables allowed), e.g. ``lambda x: [x >= 0]``.
    project : callable
        ``project(v)``: the exact Euclidean projection of a numpy vector onto the set.
    violation : callable, optional
        ``violation(v)``: how far ``v`` is from the set (0 inside); default the distance
        ``||v - project(v)||``.
    size : int, optional
        Check the projection in this dimension now (it is checked anyway, once per
        dimension, when a formulation is built on the set or on the first projection).

    Raises
    ------
    ExpressionMismatchError
        When the projection disagrees with CVXPY's (module docstring).
    """

    def __init__(self, name: str, constraints: Callable[[cp.Expression], list[cp.Constraint]],
                 project: Callable[[np.ndarray], np.ndarray], *,
                 violation: Callable[[np.ndarray], float] | None = None,
                 size: int | None = None) -> None:
        self.name = name
        self._constraints = constraints
        self._project = project
        self._violation = violation
        self._verified: set[int] = set()
        if size is not None:
            self.verify(size)

    def __repr__(self) -> str:
        return f"ConstraintSet({self.name!r})"

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_verified": set()}

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """The user's CVXPY constraints on ``x``."""
        return list(self._constraints(x))

    def project(self, v: np.ndarray) -> np.ndarray:
        """The user's projection of ``v`` (checked against CVXPY the first time a
        dimension is seen)."""
        v = np.asarray(v, dtype=np.float64)
        if v.size not in self._verified:
            self.verify(v.size)
        return self._checked_projection(v)

    def violation(self, v: np.ndarray) -> float:
        """The user's violation, or the distance ``||v - project(v)||``."""
        v = np.asarray(v, dtype=np.float64)
        if self._violation is not None:
            return float(self._violation(v))
        return float(np.linalg.norm(v - self.project(v)))

    def fingerprint(self, size: int) -> str:
        """A short hash of the name and the projections of fixed points (cache keys)."""
        h = hashlib.sha1(self.name.encode())
        for v in _check_points(size)[:2]:
            h.update(np.ascontiguousarray(self.project(v)).tobytes())
        return h.hexdigest()[:16]

    def _checked_projection(self, v: np.ndarray) -> np.ndarray:
        p = np.asarray(self._project(v), dtype=np.float64)
        if p.shape != v.shape or not np.all(np.isfinite(p)):
            raise ExpressionMismatchError(
                f"constraint set {self.name!r}: project(v) must return a finite array of "
                f"v's shape {v.shape}, got shape {p.shape}")
        return p

    def verify(self, size: int) -> None:
        """Check the projection against CVXPY's in dimension ``size`` (module docstring);
        done once per dimension."""
        import cvxpy as cp

        from cvxrank.certificates.reference import SOLVER_OPTIONS

        if size in self._verified:
            return
        tol = reference_agreement(CHECK_SOLVER)
        x = cp.Variable(size)
        v_param = cp.Parameter(size)
        distance = cp.Problem(cp.Minimize(cp.sum_squares(x - v_param)), self.constraints(x))
        what = f"constraint set {self.name!r}"

        def cvxpy_distance(v: np.ndarray) -> float:
            """CVXPY's squared distance from v to the set."""
            v_param.value = v
            distance.solve(solver=CHECK_SOLVER, **SOLVER_OPTIONS[CHECK_SOLVER])
            if distance.status != cp.OPTIMAL:
                raise ExpressionMismatchError(f"{what}: CVXPY could not project v = {_show(v)} "
                                              f"(status {distance.status})")
            return float(distance.value)

        points = _check_points(size)
        points.append(self._checked_projection(points[-1]))  # a point inside the set
        for v in points:
            scale = max(1.0, float(np.abs(v).max(initial=0.0)))
            p = self._checked_projection(v)
            outside = cvxpy_distance(p)
            if outside > tol * scale * scale:
                raise ExpressionMismatchError(
                    f"{what}: project(v) is not in the set by its CVXPY constraints (squared "
                    f"distance {outside:.3e}, allowed {tol * scale * scale:.1e}) at "
                    f"v = {_show(v)}, project(v) = {_show(p)}")
            optimum = cvxpy_distance(v)
            excess = float(np.sum((p - v) ** 2)) - optimum
            if excess > tol * scale * scale:
                raise ExpressionMismatchError(
                    f"{what}: project(v) is not the closest point: ||project(v) - v||^2 "
                    f"exceeds CVXPY's projection's by {excess:.3e} (allowed "
                    f"{tol * scale * scale:.1e}) at v = {_show(v)}, project(v) = {_show(p)}")
        self._verified.add(size)


def _check_points(size: int) -> list[np.ndarray]:
    """One standard normal point per magnitude of :data:`CHECK_MAGNITUDES` (fixed seed)."""
    rng = np.random.default_rng(CHECK_SEED)
    return [m * rng.standard_normal(size) for m in CHECK_MAGNITUDES]


def _show(v: np.ndarray) -> str:
    """A vector for a message (6 significant digits, long ones summarized)."""
    return np.array2string(np.asarray(v), precision=6, threshold=12, separator=", ")
