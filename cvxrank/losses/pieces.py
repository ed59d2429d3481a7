r"""The structure of a piecewise pair loss: a sum of ramps or squared ramps at knots.

A piecewise pair loss is

.. math::

    \ell(t) = \sum_j a_j \max(0, k_j - t)^p, \qquad p \in \{1, 2\},

of a pair's score difference t: piecewise linear for p = 1 (the hinge: one knot k = 1, a =
1), piecewise quadratic with a continuous derivative for p = 2 (the squared hinge: k = 1, a
= 1; Chapelle & Keerthi's Huber loss: knots 1 and 0 with a = 1 and -1, Sect. 4.1). The knots
are what the fast solvers need: each knot is a copy of the pairs with its margin and weight,
so PRSVM+'s sorted passes (Chapelle & Keerthi Sect. 4.2) evaluate any such loss in O(n log n)
and the 1-slack cutting plane (Joachims 2006) takes any piecewise-linear one.

The RankSVM family runs the losses whose conjugate has the form of the classic duals
(:meth:`Pieces.ramp`): a ramp of one knot (a hinge of any margin and slope), a squared ramp
of one knot (a squared hinge of any margin and scale) or a squared ramp capped at a width
:math:`\delta` (a Huber loss: knots k and k - delta with coefficients a and -a). Their duals
are a box, with a ridge for the quadratic ones (:class:`Ramp`).

References
----------
.. [1] O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs",
   Information Retrieval 13, 2010, eq. (1), Sect. 4.1 (Huber), Sect. 4.2 (sorted passes).
.. [2] T. Joachims, "Training linear SVMs in linear time", KDD 2006 (1-slack, hinge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Coefficients of a Huber pair of knots agree to this relative difference.
PAIR_MATCH = 1e-12


@dataclass(frozen=True)
class Ramp:
    r"""A piecewise loss as the RankSVM family runs it: :math:`a\,\rho(k - t)` with
    :math:`\rho(r) = \max(0, r)` (``power`` 1), :math:`\max(0, r)^2` (``power`` 2, ``width``
    inf) or the Huber :math:`r^2` on :math:`[0, \delta]`, :math:`2\delta r - \delta^2` above
    (``power`` 2, ``width`` :math:`\delta`).

    A pair with margin m and weight c then contributes :math:`c\, a\, \rho(m + k - 1 - t)`:
    the RankSVM of unit ramp on margins :math:`m + k - 1` and weights :math:`a c`, whose dual
    box is :math:`[0, C a c]` (power 1) or :math:`[0, 2 \delta C a c]` with the ridge
    :math:`\alpha^2 / (4 C a c)` (power 2).

    Attributes
    ----------
    power : int
        1 or 2.
    knot : float
        k, where the loss becomes 0 (its margin).
    scale : float
        a > 0.
    width : float
        :math:`\delta` (power 2; inf for the squared hinge, 1 for Chapelle & Keerthi's Huber).
    """

    power: int
    knot: float
    scale: float
    width: float = math.inf

    @property
    def linear(self) -> bool:
        """Whether the ramp is piecewise linear (a hinge)."""
        return self.power == 1

    @property
    def capped(self) -> bool:
        """Whether a squared ramp is capped at a finite width (a Huber loss)."""
        return self.power == 2 and math.isfinite(self.width)

    def unit(self) -> Ramp:
        """The same shape at knot 1 and scale 1 (what remains once the knot and the scale
        are folded into the pairs' margins and weights)."""
        return Ramp(self.power, 1.0, 1.0, self.width)

    @property
    def margin_shift(self) -> float:
        """``k - 1``: what the ramp adds to a pair's margin (0 for the unit losses)."""
        return self.knot - 1.0


@dataclass(frozen=True)
class Pieces:
    r""":math:`\ell(t) = \sum_j a_j \max(0, k_j - t)^p` (module docstring).

    Parameters
    ----------
    knots : tuple of float
        :math:`k_j`, distinct.
    coefficients : tuple of float
        :math:`a_j`, nonzero; the loss must be convex (p = 1: every :math:`a_j > 0`; p = 2:
        every partial sum :math:`\sum_{k_i \ge k} a_i \ge 0`).
    power : {1, 2}

    Raises
    ------
    ValueError
        For mismatched lengths, repeated or non-finite knots, zero or non-finite
        coefficients, another power, or a non-convex sum.
    """

    knots: tuple[float, ...]
    coefficients: tuple[float, ...]
    power: int

    def __post_init__(self) -> None:
        knots = tuple(float(k) for k in self.knots)
        coefficients = tuple(float(a) for a in self.coefficients)
        if self.power not in (1, 2):
            raise ValueError(f"power must be 1 (piecewise linear) or 2 (piecewise quadratic), "
                             f"got {self.power!r}")
        if not knots or len(knots) != len(coefficients):
            raise ValueError(f"give one coefficient per knot (at least one knot); got "
                             f"{len(knots)} knots and {len(coefficients)} coefficients")
        if not all(map(math.isfinite, knots + coefficients)) or 0.0 in coefficients:
            raise ValueError(f"knots and coefficients must be finite, coefficients nonzero; "
                             f"got knots {knots}, coefficients {coefficients}")
        if len(set(knots)) != len(knots):
            raise ValueError(f"knots must be distinct, got {knots}")
        order = np.argsort(knots)[::-1]
        knots = tuple(knots[i] for i in order)
        coefficients = tuple(coefficients[i] for i in order)
        partial = np.cumsum(coefficients)
        if (self.power == 1 and min(coefficients) < 0) or (self.power == 2 and partial.min()
                                                           < -PAIR_MATCH * np.abs(partial).max()):
            raise ValueError(f"the pieces (knots {knots}, coefficients {coefficients}, power "
                             f"{self.power}) are not convex: the slope must not decrease")
        object.__setattr__(self, "knots", knots)
        object.__setattr__(self, "coefficients", coefficients)

    @property
    def margin(self) -> float:
        """The largest knot: the loss is 0 from there on."""
        return self.knots[0]

    def shifted(self, delta: float) -> Pieces:
        """The pieces of :math:`t \\mapsto \\ell(t - \\delta)` (every knot moved by delta)."""
        return Pieces(tuple(k + delta for k in self.knots), self.coefficients, self.power)

    # -- numpy forms --------------------------------------------------------------------
    def value(self, t: np.ndarray) -> np.ndarray:
        """:math:`\\ell(t)`, elementwise."""
        t = np.asarray(t, dtype=float)
        return sum((a * np.maximum(k - t, 0.0) ** self.power
                    for k, a in zip(self.knots, self.coefficients, strict=True)),
                   np.zeros_like(t))

    def derivative(self, t: np.ndarray) -> np.ndarray:
        """:math:`\\ell'(t)` (the left derivative at a kink of a piecewise-linear loss)."""
        t = np.asarray(t, dtype=float)
        if self.power == 1:
            return -sum((a * (t < k) for k, a in zip(self.knots, self.coefficients,
                                                     strict=True)), np.zeros_like(t))
        return -2.0 * sum((a * np.maximum(k - t, 0.0)
                           for k, a in zip(self.knots, self.coefficients, strict=True)),
                          np.zeros_like(t))

    def second_derivative(self, t: np.ndarray) -> np.ndarray:
        """:math:`\\ell''(t)` (0 for a piecewise-linear loss)."""
        t = np.asarray(t, dtype=float)
        if self.power == 1:
            return np.zeros_like(t)
        return 2.0 * sum((a * (t < k) for k, a in zip(self.knots, self.coefficients,
                                                      strict=True)), np.zeros_like(t))

    # -- declared ranges ------------------------------------------------------------------
    @property
    def slope_range(self) -> tuple[float, float]:
        """The closure of the range of :math:`\\ell'`: ``(lo, 0)``, lo its value below every
        knot (``-inf`` for a squared ramp that grows without cap)."""
        a = np.asarray(self.coefficients)
        if self.power == 1:
            return (-float(a.sum()), 0.0)
        if abs(float(a.sum())) > PAIR_MATCH * float(np.abs(a).max()):
            return (-math.inf, 0.0)
        return (-2.0 * float(a @ np.asarray(self.knots)), 0.0)

    @property
    def curvature_range(self) -> tuple[float, float]:
        r"""Bounds on :math:`\ell''`: its largest value, and its smallest where
        :math:`\ell'` lies inside its range (between the knots, and below the lowest one
        unless the slope is constant there)."""
        if self.power == 1:
            return (0.0, 0.0)
        partial = 2.0 * np.cumsum(self.coefficients)
        inner = partial[:-1] if abs(partial[-1]) <= PAIR_MATCH * np.abs(partial).max() \
            else partial
        inner = np.maximum(inner, 0.0)
        return (float(inner.min()), float(max(partial.max(), 0.0)))

    def ramp(self) -> Ramp | None:
        """The pieces as a :class:`Ramp` of the RankSVM family, or None when they are not
        one (more knots, or two that are not a Huber pair)."""
        (k, *others), (a, *rest) = self.knots, self.coefficients
        if not others and a > 0:
            return Ramp(self.power, k, a)
        if (self.power == 2 and len(others) == 1 and a > 0
                and abs(rest[0] + a) <= PAIR_MATCH * a):
            return Ramp(2, k, a, width=k - others[0])
        return None
