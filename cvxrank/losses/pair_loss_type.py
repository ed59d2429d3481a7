r"""A user's pairwise loss, given twice (a CVXPY atom and numpy derivatives) and checked.

A :class:`PairLoss` is a convex function :math:`\ell` of a pair's score difference
:math:`t = w^\top (x_i - x_j)` (document i preferred to j), written once as a CVXPY
expression (for the certified reference) and once as numpy functions for
:math:`\ell`, :math:`\ell'` and :math:`\ell''` (for the fast solvers). When it is made, the
library checks that the two agree (:func:`check_agreement`): at fixed pseudo-random points
the numpy value equals the CVXPY expression's value, the numpy derivative CVXPY's gradient
(``Expression.grad``, or a five-point finite difference of the values where CVXPY has
none) and the numpy second derivative a five-point finite difference of that gradient, each
to :data:`cvxrank.tolerances.EXPRESSION_MATCH` relative; it also checks the declared
ranges of :math:`\ell'` and :math:`\ell''` there. A mismatch raises
:class:`ExpressionMismatchError` naming the loss, the quantity and the point. A pair loss is
a function of every real t (a score difference takes any value), so the numpy value and
derivatives must also be finite at every one of those points (:func:`check_finite`), those
where the CVXPY expression is not finite included (``-cp.log(t)`` is refused at the first
``t <= 0``): a ValueError names the point.

The dual of a pairwise formulation needs the convex conjugate
:math:`\ell^*(y) = \sup_t\, y t - \ell(t)`; in numpy it is computed here from the
derivatives alone (:meth:`PairLoss.conjugate`: the maximizer solves :math:`\ell'(t) = y`,
by Newton's method safeguarded by bisection), in CVXPY from the atom by conic duality
(:mod:`cvxrank.sandbox.conic`).

The library (:func:`logistic`, :func:`exponential`, :func:`squared_hinge`,
:func:`smoothed_hinge`) holds the classic pairwise losses, each in a dozen lines: a user's
own loss is written the same way.

References
----------
.. [1] C. Burges et al., "Learning to rank using gradient descent", ICML 2005 (RankNet: the
   logistic pair loss).
.. [2] Y. Freund, R. Iyer, R. Schapire and Y. Singer, "An efficient boosting algorithm for
   combining preferences", JMLR 4, 2003 (RankBoost: the exponential pair loss).
.. [3] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eq. (1) and Sect. 4.1 (squared and Huber-smoothed hinge).
.. [4] R. T. Rockafellar, *Convex Analysis*, 1970, Sect. 12 and Thm. 23.5 (conjugates;
   :math:`\ell^*(\ell'(t)) = t \ell'(t) - \ell(t)`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from cvxrank.errors import CvxrankError
from cvxrank.losses.pieces import Pieces, Ramp
from cvxrank.tolerances import EXPRESSION_MATCH
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp

ArrayFunction = Callable[[np.ndarray], np.ndarray]

#: Seed of the points at which a loss's two forms are compared (fixed: the check is
#: reproducible, and a loss that passes once passes every time).
CHECK_SEED = 20_240_611

#: The points: this many in [-4, 4] (where margins live), near 0 and far out.
CHECK_POINTS = (48, 16, 16)

#: Step of the five-point finite differences, relative to ``max(1, |t|)``: with an error
#: of order ``h^4`` (truncation) plus ``eps / h`` (rounding), 1e-3 keeps both near 1e-12.
FD_STEP = 1e-3

#: A point counts as smooth (its finite differences are compared) when the estimates with
#: step h and h/2 agree to this fraction of :data:`EXPRESSION_MATCH`; at least
#: :data:`MIN_SMOOTH_FRACTION` of the points must be.
SMOOTHNESS_FACTOR = 0.1
MIN_SMOOTH_FRACTION = 0.5

#: Where the maximizer of ``y t - l(t)`` does not exist (``y`` at an end of the range of
#: ``l'`` that ``l'`` never reaches, e.g. 0 for the logistic loss) the conjugate is the limit
#: as ``t`` goes to infinity, evaluated at this ``|t|``.
T_LIMIT = 1e6

#: Iteration caps of the slope inversion (bracket doublings, Newton-bisection steps).
MAX_DOUBLINGS = 64
MAX_NEWTON = 200


class ExpressionMismatchError(CvxrankError, ValueError):
    """A user's numpy evaluator disagrees with its CVXPY expression, or a projection with
    CVXPY's (the message names the loss or set, the quantity and the point)."""


def _relative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|a - b| / max(1, |a|, |b|)``, elementwise (0 where both are the same infinity)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.abs(a - b) / np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return np.where(a == b, 0.0, out)


def _five_point(fn: ArrayFunction, t: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``(-f(t+2h) + 8 f(t+h) - 8 f(t-h) + f(t-2h)) / (12 h)``: f' to O(h^4)."""
    return (-fn(t + 2 * h) + 8 * fn(t + h) - 8 * fn(t - h) + fn(t - 2 * h)) / (12 * h)


def _smooth_derivative(fn: ArrayFunction, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The five-point derivative of ``fn`` at ``t`` and where it is trustworthy (the
    estimates with steps h and h/2 agree: no kink within 2h)."""
    h = FD_STEP * np.maximum(1.0, np.abs(t))
    coarse, fine = _five_point(fn, t, h), _five_point(fn, t, h / 2)
    smooth = _relative(coarse, fine) <= SMOOTHNESS_FACTOR * EXPRESSION_MATCH
    return fine, smooth


@dataclass(frozen=True, eq=False)
class PairLoss:
    r"""A convex loss of a pair's score difference :math:`t = w^\top(x_i - x_j)`.

    The pairwise formulation built on it (:class:`~cvxrank.sandbox.pairwise.
    PairwiseFormulation`) minimizes

    .. math::

        P(w) = \tfrac12 \|w\|^2 + C \sum_k c_k\, \ell\big(w^\top (x_{i_k} - x_{j_k})\big).

    Made, it is checked (:func:`check_agreement`): its numpy forms must agree with its CVXPY
    form at fixed pseudo-random points, else :class:`ExpressionMismatchError`.

    Parameters
    ----------
    name : str
        Names the loss in formulation names (``pairwise-<name>``), messages and caches;
        give the parameters in it (``"logistic-2"``).
    expression : callable
        ``expression(t)``: :math:`\ell` applied elementwise to a CVXPY vector expression,
        convex by CVXPY's rules (DCP), e.g. ``lambda t: cp.logistic(-t)``. Its cones must
        be linear, second-order or exponential (no power cones: CVXPY cannot yet take the
        conjugate through them, :mod:`cvxrank.sandbox.conic`).
    value, derivative, second_derivative : callable
        :math:`\ell`, :math:`\ell'`, :math:`\ell''` on numpy arrays, elementwise (any choice
        at a kink); written to be stable for large ``|t|`` (``np.logaddexp``, ``expit``).
    slope_range : (float, float)
        The closure ``(lo, hi)`` of the range of :math:`\ell'` (default ``(-inf, 0)``: a
        nonincreasing loss); the conjugate is finite on it, so the dual variables are
        :math:`\alpha_k = -C c_k y_k` with ``lo <= y_k <= hi``.
    curvature_range : (float, float)
        Bounds ``(low, high)`` on :math:`\ell''`: ``high`` its supremum (``inf`` if
        unbounded), ``low`` its infimum where :math:`\ell'` is inside its range (0 if none).
        ``low > 0`` makes the conjugate smooth (its derivative ``1/low``-Lipschitz): the
        dual gradient solvers ``pg`` and ``apg`` then apply.

    Raises
    ------
    ExpressionMismatchError
        If the two forms disagree, the expression is not convex or not elementwise, or a
        declared range is violated at a test point.
    ValueError
        If a declared range is malformed, or the numpy value or a derivative is not finite
        at a test point (:func:`check_finite`).
    """

    name: str
    expression: Callable[[cp.Expression], cp.Expression]
    value: ArrayFunction
    derivative: ArrayFunction
    second_derivative: ArrayFunction
    slope_range: tuple[float, float] = (-np.inf, 0.0)
    curvature_range: tuple[float, float] = (0.0, np.inf)
    pieces: Pieces | None = None
    check: InitVar[bool] = True
    fingerprint: str = field(init=False, repr=False)
    _edges: tuple[float, float] = field(init=False, repr=False)

    def __post_init__(self, check: bool) -> None:
        lo, hi = (float(v) for v in self.slope_range)
        low, high = (float(v) for v in self.curvature_range)
        if not lo < hi or np.isnan(lo) or np.isnan(hi):
            raise ValueError(f"loss {self.name!r}: slope_range must be (lo, hi) with lo < hi, "
                             f"got {self.slope_range}")
        if not 0.0 <= low <= high:
            raise ValueError(f"loss {self.name!r}: curvature_range must be (low, high) with "
                             f"0 <= low <= high, got {self.curvature_range}")
        object.__setattr__(self, "slope_range", (lo, hi))
        object.__setattr__(self, "curvature_range", (low, high))
        if check:
            check_agreement(self)
            check_finite(self)
        object.__setattr__(self, "fingerprint", _fingerprint(self))
        object.__setattr__(self, "_edges", (self._edge(lo, upper=False),
                                            self._edge(hi, upper=True)))

    # -- structure ----------------------------------------------------------------------
    @classmethod
    def piecewise(cls, name: str, knots: tuple[float, ...] | list[float],
                  coefficients: tuple[float, ...] | list[float], power: int, *,
                  expression: Callable[[cp.Expression], cp.Expression] | None = None,
                  check: bool = True) -> PairLoss:
        r"""The loss :math:`\sum_j a_j \max(0, k_j - t)^p` given by its pieces
        (:class:`~cvxrank.losses.pieces.Pieces`): its numpy forms and ranges follow from
        them, its CVXPY form is ``expression`` or, when every coefficient is positive, the
        sum of the pieces (a negative coefficient, as in a Huber loss, needs an expression
        CVXPY sees as convex, e.g. ``cp.huber``).

        Examples
        --------
        >>> squared_hinge_2 = PairLoss.piecewise("squared_hinge_2", [2.0], [1.0], power=2)
        >>> hinge_2 = PairLoss.piecewise("hinge_2", [2.0], [1.0], power=1)
        """
        pieces = Pieces(tuple(knots), tuple(coefficients), power)
        if expression is None:
            if min(pieces.coefficients) < 0:
                raise ValueError(f"loss {name!r}: a piece with a negative coefficient needs "
                                 "an expression= that CVXPY sees as convex (e.g. cp.huber)")
            expression = _SumOfPieces(pieces)
        return cls(name, expression, pieces.value, pieces.derivative,
                   pieces.second_derivative, slope_range=pieces.slope_range,
                   curvature_range=pieces.curvature_range, pieces=pieces, check=check)

    @property
    def ramp(self) -> Ramp | None:
        """The loss as a ramp of the RankSVM family (:meth:`Pieces.ramp`), or None."""
        return None if self.pieces is None else self.pieces.ramp()

    def with_margin(self, margin: float) -> PairLoss:
        """The same piecewise loss moved so that it becomes 0 at ``t = margin`` (every knot
        moved by ``margin - pieces.margin``); named ``<name>-margin<margin>``."""
        if self.pieces is None:
            raise ValueError(f"loss {self.name!r} has no pieces: only a piecewise loss has a "
                             "margin to move")
        delta = float(margin) - self.pieces.margin
        return PairLoss.piecewise(f"{self.name}-margin{float(margin):g}",
                                  self.pieces.shifted(delta).knots, self.pieces.coefficients,
                                  self.pieces.power, expression=_Shifted(self.expression, delta))

    # -- the conjugate, from the derivatives ---------------------------------------------
    @property
    def smooth_conjugate(self) -> bool:
        """Whether :math:`\\ell^*` has a Lipschitz derivative (``curvature_range[0] > 0``)."""
        return self.curvature_range[0] > 0

    def conjugate(self, y: np.ndarray) -> np.ndarray:
        r""":math:`\ell^*(y) = \sup_t\, y t - \ell(t)` at ``y`` clipped to :attr:`slope_range`.

        The supremum is attained at :math:`t(y)` (:meth:`conjugate_argmax`), so
        :math:`\ell^*(y) = y\, t(y) - \ell(t(y))`; where it is only a limit, at
        ``|t| =`` :data:`T_LIMIT`.
        """
        y = np.clip(np.asarray(y, dtype=float), *self.slope_range)
        t = self.conjugate_argmax(y)
        return y * t - self.value(t)

    def conjugate_argmax(self, y: np.ndarray) -> np.ndarray:
        r"""A maximizer :math:`t(y)` of :math:`y t - \ell(t)`: the solution of
        :math:`\ell'(t) = y`, i.e. :math:`\nabla \ell^*(y)`.

        At the ends of the range it is the one-sided derivative of :math:`\ell^*`: at
        ``hi`` the smallest t with :math:`\ell'(t) \ge` hi, at ``lo`` the largest t with
        :math:`\ell'(t) \le` lo (:data:`T_LIMIT` in size where there is none). Inside, Newton's
        method on :math:`\ell'(t) - y`, safeguarded by a bracket, to machine precision.
        """
        lo, hi = self.slope_range
        y = np.clip(np.asarray(y, dtype=float), lo, hi)
        t = np.empty_like(y)
        top, bottom = y >= hi, y <= lo
        t[bottom], t[top] = self._edges
        inner = ~(top | bottom)
        t[inner] = self._invert_slope(y[inner])
        return t

    def _slope(self, t: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(self.derivative(t), dtype=float)

    def _edge(self, y: float, *, upper: bool) -> float:
        """``min {t : l'(t) >= y}`` (``upper``) or ``max {t : l'(t) <= y}``, by bisection
        (:data:`T_LIMIT` in size where there is none; NaN for an infinite end, never used)."""
        if not np.isfinite(y):
            return float("nan")
        # inside: the predicate holds; outside: it does not
        holds = ((lambda t: self._slope(np.array([t]))[0] >= y) if upper
                 else (lambda t: self._slope(np.array([t]))[0] <= y))
        sign = 1.0 if upper else -1.0
        inside, outside = sign, -sign
        while not holds(inside):
            inside *= 2.0
            if abs(inside) > T_LIMIT:
                return sign * T_LIMIT
        while holds(outside):
            outside *= 2.0
            if abs(outside) > T_LIMIT:
                return -sign * T_LIMIT
        for _ in range(MAX_NEWTON):
            middle = 0.5 * (inside + outside)
            if middle in (inside, outside):
                break
            if holds(middle):
                inside = middle
            else:
                outside = middle
        return inside

    def _invert_slope(self, y: np.ndarray) -> np.ndarray:
        """Solve ``l'(t) = y`` for ``y`` strictly inside the slope range (vectorized), to a
        residual of 4 machine epsilons times ``max(1, |y|)`` or a step that small in t: at
        that residual the conjugate's value is exact to rounding, and with a curvature of
        at least ``low`` the maximizer is within ``4 eps / low``."""
        a, b = -np.ones_like(y), np.ones_like(y)
        for bound, too_far in ((a, lambda v: self._slope(v) > y),
                               (b, lambda v: self._slope(v) < y)):
            for _ in range(MAX_DOUBLINGS):
                move = too_far(bound)
                if not move.any():
                    break
                bound[move] *= 2.0
        t = np.clip(np.zeros_like(y), a, b)
        active = np.arange(y.size)
        for _ in range(MAX_NEWTON):
            if not active.size:
                break
            ta, ya = t[active], y[active]
            gap = self._slope(ta) - ya
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                curvature = np.asarray(self.second_derivative(ta), dtype=float)
                newton = ta - gap / curvature
            a[active] = np.where(gap <= 0, ta, a[active])
            b[active] = np.where(gap >= 0, ta, b[active])
            lo_, hi_ = a[active], b[active]
            ok = (curvature > 0) & np.isfinite(newton) & (newton > lo_) & (newton < hi_)
            step = np.where(ok, newton, 0.5 * (lo_ + hi_))
            eps = 4 * np.finfo(float).eps
            solved = np.abs(gap) <= eps * np.maximum(1.0, np.abs(ya))
            t[active] = np.where(solved, ta, step)
            active = active[~(solved | (np.abs(step - ta) <= eps * np.maximum(1.0, np.abs(ta))))]
        return t


def _fingerprint(loss: PairLoss) -> str:
    """A short hash of the name and the numpy forms at fixed points (the cache key part)."""
    t = np.linspace(-3.0, 3.0, 25)
    h = hashlib.sha1(loss.name.encode())
    for fn in (loss.value, loss.derivative, loss.second_derivative):
        h.update(np.ascontiguousarray(np.asarray(fn(t), dtype=float)).tobytes())
    h.update(repr((loss.slope_range, loss.curvature_range)).encode())
    return h.hexdigest()[:16]


def check_points() -> np.ndarray:
    """The points at which :func:`check_agreement` compares a loss's two forms."""
    rng = np.random.default_rng(CHECK_SEED)
    central, small, far = CHECK_POINTS
    return np.concatenate([rng.uniform(-4.0, 4.0, central), rng.normal(0.0, 0.05, small),
                           rng.uniform(-20.0, 20.0, far)])


def check_agreement(loss: PairLoss, points: np.ndarray | None = None) -> None:
    """Check a loss's numpy forms against its CVXPY expression (module docstring).

    Parameters
    ----------
    loss : PairLoss
    points : ndarray, optional
        Where to compare (default :func:`check_points`); points where CVXPY's value is not
        finite (an exponential overflowing) are left out.

    Raises
    ------
    ExpressionMismatchError
        Naming the loss, the quantity (value, derivative, second derivative, a declared
        range, convexity, shape) and the first point where it fails.
    """
    what = f"loss {loss.name!r}"
    t = np.asarray(check_points() if points is None else points, dtype=float)
    cvx = _CvxpyForm(loss, t.size)
    with np.errstate(over="ignore", invalid="ignore"):
        t = t[np.isfinite(cvx.value(t))]
    cvx = _CvxpyForm(loss, t.size)

    def compare(quantity: str, numpy_value: np.ndarray, cvxpy_value: np.ndarray,
                where: np.ndarray, source: str) -> None:
        if numpy_value.shape != t.shape:
            raise ExpressionMismatchError(f"{what}: {quantity}(t) must be elementwise, got "
                                          f"shape {numpy_value.shape} for t of shape {t.shape}")
        bad = np.flatnonzero(where & ~(_relative(numpy_value, cvxpy_value) <= EXPRESSION_MATCH))
        if bad.size:
            k = bad[0]
            raise ExpressionMismatchError(
                f"{what}: numpy {quantity}(t) = {float(numpy_value[k])!r} but {source} gives "
                f"{float(cvxpy_value[k])!r} at t = {float(t[k])!r} (relative difference "
                f"{_relative(numpy_value[k], cvxpy_value[k]):.2e} > EXPRESSION_MATCH "
                f"{EXPRESSION_MATCH:.0e})")

    everywhere = np.ones(t.size, dtype=bool)
    compare("value", np.asarray(loss.value(t), dtype=float), cvx.value(t), everywhere,
            "the CVXPY expression")
    slope = np.asarray(loss.derivative(t), dtype=float)
    exact = cvx.gradient(t)
    if exact is not None:
        compare("derivative", slope, exact, everywhere, "CVXPY's gradient (Expression.grad)")
        source = "a finite difference of CVXPY's gradient"
    else:
        estimate, smooth = _smooth_derivative(cvx.value, t)
        _enough(what, smooth, t)
        compare("derivative", slope, estimate, smooth,
                "a finite difference of the CVXPY expression")
        source = "a second finite difference of the CVXPY expression"
    curvature, smooth = _smooth_derivative(cvx.first_derivative, t)
    _enough(what, smooth, t)
    second = np.asarray(loss.second_derivative(t), dtype=float)
    compare("second_derivative", second, curvature, smooth, source)
    _check_ranges(loss, t, slope, second, smooth)


def check_finite(loss: PairLoss, points: np.ndarray | None = None) -> None:
    """Check that a loss's numpy value and derivatives are finite at every test point.

    A pair loss is defined at every real t (a pair's score difference takes any value), so
    a NaN or infinite numpy form (``-np.log(t)`` at ``t <= 0``) is refused when the loss is
    made, not met later by a solver as a NaN objective.

    Parameters
    ----------
    loss : PairLoss
    points : ndarray, optional
        Where to evaluate (default :func:`check_points`, all of them: also where the CVXPY
        expression is not finite, which :func:`check_agreement` leaves out).

    Raises
    ------
    ValueError
        Naming the loss, the quantity and the first point where it is not finite.
    """
    t = np.asarray(check_points() if points is None else points, dtype=float)
    for quantity, fn in (("value", loss.value), ("derivative", loss.derivative),
                         ("second_derivative", loss.second_derivative)):
        with np.errstate(all="ignore"):
            values = np.broadcast_to(np.asarray(fn(t), dtype=float), t.shape)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            k = bad[0]
            raise ValueError(f"loss {loss.name!r}: numpy {quantity}(t) = {float(values[k])!r} "
                             f"at t = {float(t[k])!r} is not finite; a pair loss must be "
                             "finite at every real t (a score difference takes any value)")


class _CvxpyForm:
    """A loss's CVXPY expression on a vector variable of a fixed size, evaluated by setting
    the variable's value."""

    def __init__(self, loss: PairLoss, size: int) -> None:
        import cvxpy as cp

        self.variable = cp.Variable(size)
        self.expression = loss.expression(self.variable)
        what = f"loss {loss.name!r}"
        if not isinstance(self.expression, cp.Expression) or self.expression.shape != (size,):
            got = getattr(self.expression, "shape", type(self.expression).__name__)
            raise ExpressionMismatchError(f"{what}: expression(t) must be a CVXPY expression "
                                          f"of the shape of t (elementwise); got {got} for t "
                                          f"of shape ({size},)")
        if not self.expression.is_convex():
            raise ExpressionMismatchError(f"{what}: expression(t) is not convex by CVXPY's "
                                          f"rules (DCP): {self.expression}")
        self.total = cp.sum(self.expression)

    def value(self, t: np.ndarray) -> np.ndarray:
        self.variable.value = t
        return np.asarray(self.expression.value, dtype=float)

    def gradient(self, t: np.ndarray) -> np.ndarray | None:
        """CVXPY's gradient at ``t`` (elementwise derivative), None where it has none."""
        self.variable.value = t
        grad = self.total.grad[self.variable]
        if grad is None:
            return None
        return np.ravel(grad.toarray() if sp.issparse(grad) else np.asarray(grad, dtype=float))

    def first_derivative(self, t: np.ndarray) -> np.ndarray:
        """CVXPY's gradient, or a five-point difference of its values where it has none."""
        exact = self.gradient(t)
        if exact is not None:
            return exact
        return _five_point(self.value, t, FD_STEP * np.maximum(1.0, np.abs(t)))


def _enough(what: str, smooth: np.ndarray, t: np.ndarray) -> None:
    if np.count_nonzero(smooth) < MIN_SMOOTH_FRACTION * t.size:
        raise ExpressionMismatchError(
            f"{what}: the CVXPY expression is not smooth at enough test points to check "
            f"derivatives ({np.count_nonzero(smooth)} of {t.size}); is it piecewise linear?")


def _check_ranges(loss: PairLoss, t: np.ndarray, slope: np.ndarray, second: np.ndarray,
                  smooth: np.ndarray) -> None:
    """The declared ranges of l' and l'' hold at the test points (to EXPRESSION_MATCH)."""
    lo, hi = loss.slope_range
    low, high = loss.curvature_range
    slack = EXPRESSION_MATCH * np.maximum(1.0, np.abs(slope))
    inside = (slope > lo + slack) & (slope < hi - slack)
    curve_slack = EXPRESSION_MATCH * np.maximum(1.0, np.abs(second))
    checks = (
        ("derivative", slope, (slope < lo - slack) | (slope > hi + slack),
         f"outside slope_range {loss.slope_range}"),
        ("second_derivative", second, smooth & (second < -curve_slack),
         "negative: the loss is not convex"),
        ("second_derivative", second, smooth & (second > high + curve_slack),
         f"above curvature_range's high {high!r}"),
        ("second_derivative", second, smooth & inside & (second < low - curve_slack),
         f"below curvature_range's low {low!r} where the derivative is inside its range"),
    )
    for quantity, values, bad, why in checks:
        hit = np.flatnonzero(bad)
        if hit.size:
            k = hit[0]
            raise ExpressionMismatchError(f"loss {loss.name!r}: {quantity}(t) = "
                                          f"{float(values[k])!r} at t = {float(t[k])!r} is {why}")


@dataclass(frozen=True)
class _SumOfPieces:
    """The CVXPY form of pieces with positive coefficients: their sum (a class, not a
    closure, so that a loss pickles)."""

    pieces: Pieces

    def __call__(self, t: cp.Expression) -> cp.Expression:
        import cvxpy as cp

        p = self.pieces
        terms = [a * (cp.pos(k - t) if p.power == 1 else cp.square(cp.pos(k - t)))
                 for k, a in zip(p.knots, p.coefficients, strict=True)]
        return sum(terms[1:], terms[0])


@dataclass(frozen=True)
class _Shifted:
    """``expression(t - delta)`` (a picklable shift of a CVXPY form)."""

    expression: Callable[[cp.Expression], cp.Expression]
    delta: float

    def __call__(self, t: cp.Expression) -> cp.Expression:
        return self.expression(t - self.delta)
