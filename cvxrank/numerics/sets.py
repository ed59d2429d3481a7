r"""Feasible sets as objects: exact Euclidean projection, violation and CVXPY constraints.

Each set :math:`S \subset \mathbb{R}^m` of this module gives, from one declaration,

* ``project(v)``: the exact Euclidean projection :math:`\arg\min_{z \in S} \|z - v\|_2`,
  vectorized (no loop over coordinates or groups);
* ``violation(v)``: the largest violation of the set's constraints at ``v`` (0 when
  :math:`v \in S`), in the units of ``v``;
* ``constraints(x)``: the same constraints on a CVXPY expression ``x`` of length m.

A formulation declares its dual feasible set once (``dual_set``, see
:class:`cvxrank.formulations.base.ProjectableDual`), and its projection for the dual solvers,
its feasibility measure for the validation and the constraints of its CVXPY dual all come
from that one object.

**Bounds that depend on a hyper-parameter.** A set's size-defining bounds (the box bounds, a
simplex's total, a ball's radius) are ``scale * base``: ``base`` is fixed data (an array or a
float) and ``scale`` a positive float or a :class:`Scale`, an object whose value can change
after the set is made (a formulation's hyper-parameter C, for instance). ``project`` and
``violation`` read ``float(scale)`` on every call; ``constraints`` writes
``scale.expression() * base`` with the ``cp.Parameter`` that the scale provides, so the
CVXPY problem stays DPP and is re-solved, not rebuilt, when the value changes.

This module imports CVXPY only inside ``constraints``.

Adding a set is one subclass of :class:`ConvexSet` with its three methods; the contract test
(``tests/numerics/test_sets.py``) compares every set's ``project`` with a CVXPY projection written
with the set's own ``constraints``. :class:`L1InfBall` (RankMM-3's dual: an
:math:`\ell_{1,\infty}` ball per query in the orthant), whose constraints carry auxiliary
caps, has its own certificate in ``tests/test_l1inf_projection.py``; its projection loops
over coordinates in a compiled kernel (:mod:`cvxrank.numerics.l1inf_kernels`), not in numpy.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from cvxrank.numerics import l1inf_kernels
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp


class Scale(Protocol):
    """A positive scalar whose value may change after a set is made (a hyper-parameter).

    ``float(scale)`` is its current value; ``scale.expression()`` the CVXPY expression (a
    ``cp.Parameter``, nonnegative) that stands for it in CVXPY problems.
    """

    def __float__(self) -> float: ...

    def expression(self) -> cp.Expression: ...


def _bound(base: float | np.ndarray, scale: float | Scale) -> float | np.ndarray | cp.Expression:
    """``scale * base`` for CVXPY: a number, or the scale's expression times ``base``.

    A zero or infinite scalar ``base`` stays a number (it does not depend on the scale), and
    a ``base`` of 1 gives the scale's expression itself.
    """
    if np.ndim(base) == 0 and (base == 0 or np.isinf(base)):
        return float(base)
    if isinstance(scale, (int, float)):
        return float(scale) * base
    if np.ndim(base) == 0 and base == 1:
        return scale.expression()
    return scale.expression() * base


def _check_scale(scale: float | Scale) -> float | Scale:
    if isinstance(scale, (int, float)) and not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale}")
    return scale


def _vector(v: np.ndarray, size: int | None, *, finite: bool) -> np.ndarray:
    """``v`` as a float64 vector of length ``size`` (any length if None), optionally finite."""
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or (size is not None and v.shape[0] != size):
        want = "a 1-D array" if size is None else f"shape ({size},)"
        raise ValueError(f"the point must be {want}, got shape {v.shape}")
    if finite and not np.all(np.isfinite(v)):
        raise ValueError("the point must be finite")
    return v


def _groups(group: np.ndarray, n_groups: int | None = None) -> tuple[np.ndarray, int]:
    """Validated group labels (non-negative integers, every group 0 .. G-1 non-empty)."""
    group = np.asarray(group)
    if group.ndim != 1 or group.size == 0:
        raise ValueError(f"group must be a non-empty 1-D array, got shape {group.shape}")
    if not np.issubdtype(group.dtype, np.integer) or group.min() < 0:
        raise ValueError("group must hold non-negative integers")
    n_groups = int(group.max()) + 1 if n_groups is None else n_groups
    counts = np.bincount(group, minlength=n_groups)
    if counts.size > n_groups or np.any(counts == 0):
        empty = np.flatnonzero(counts == 0)
        what = f"group {empty[0]} is empty" if empty.size else f"a label is >= {n_groups}"
        raise ValueError(f"{what}: every group 0 .. {n_groups - 1} needs a coordinate")
    return group.astype(np.int64, copy=False), n_groups


class ConvexSet(ABC):
    """A closed convex set with its exact projection, its violation and its CVXPY constraints.

    Subclasses implement the three methods; every bound that scales with a hyper-parameter
    is ``scale * base`` (see the module docstring).
    """

    @abstractmethod
    def project(self, v: np.ndarray) -> np.ndarray:
        """The Euclidean projection of ``v`` onto the set (a new array)."""

    @abstractmethod
    def violation(self, v: np.ndarray) -> float:
        """The largest violation of the set's constraints at ``v`` (0.0 if ``v`` is in it)."""

    @abstractmethod
    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """The set's constraints on the CVXPY expression ``x`` (DPP in the scale)."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class Box(ConvexSet):
    r"""The box :math:`\{z : s\,l \le z \le s\,u\}`, coordinatewise; with ``upper=inf``, the
    shifted orthant :math:`z \ge s\,l`.

    Parameters
    ----------
    lower, upper : float or array of shape (m,)
        The bounds before scaling, :math:`l \le u`. An infinite bound (``-inf`` below,
        ``inf`` above) must be a scalar; array bounds are finite.
    scale : float or Scale
        :math:`s > 0`, multiplying both bounds.

    Notes
    -----
    The projection is the clip :math:`\min(\max(v, s\,l), s\,u)`; a NaN coordinate stays
    NaN. RankSVM's duals (Li 2011, Sect. 4.1; Chapelle & Keerthi 2010, eq. (1)):
    :math:`[0, C c]` (hinge), :math:`[0, 2 C c]` (Huber), :math:`[0, \infty)` (squared hinge).
    """

    def __init__(self, lower: float | np.ndarray = 0.0, upper: float | np.ndarray = np.inf, *,
                 scale: float | Scale = 1.0) -> None:
        self.lower = self._check_bound(lower, "lower", allowed_inf=-np.inf)
        self.upper = self._check_bound(upper, "upper", allowed_inf=np.inf)
        if np.any(np.asarray(self.lower) > np.asarray(self.upper)):
            raise ValueError("every lower bound must be <= its upper bound")
        self.scale = _check_scale(scale)

    @staticmethod
    def _check_bound(bound: float | np.ndarray, what: str,
                     allowed_inf: float) -> float | np.ndarray:
        if np.ndim(bound) == 0:
            value = float(bound)
            if not (np.isfinite(value) or value == allowed_inf):
                raise ValueError(f"{what} must be finite or {allowed_inf}, got {value}")
            return value
        out = np.array(bound, dtype=np.float64)
        if out.ndim != 1 or not np.all(np.isfinite(out)):
            raise ValueError(f"an array {what} bound must be 1-D and finite")
        out.flags.writeable = False
        return out

    def bounds(self) -> tuple[float | np.ndarray, float | np.ndarray]:
        """The scaled bounds ``(s l, s u)`` at the current scale."""
        s = float(self.scale)
        return s * self.lower, s * self.upper

    def project(self, v: np.ndarray) -> np.ndarray:
        """``clip(v, s l, s u)``."""
        v = np.asarray(v, dtype=np.float64)
        lo, hi = self.bounds()
        if np.ndim(hi) == 0 and hi == np.inf:
            return np.maximum(v, lo)
        if np.ndim(lo) == 0 and lo == -np.inf:
            return np.minimum(v, hi)
        return np.clip(v, lo, hi)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(s l - v), max(v - s u))``."""
        v = np.asarray(v, dtype=np.float64)
        lo, hi = self.bounds()
        below = float(np.max(lo - v, initial=0.0)) if np.any(np.isfinite(lo)) else 0.0
        above = float(np.max(v - hi, initial=0.0)) if np.any(np.isfinite(hi)) else 0.0
        return max(0.0, below, above)

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[x >= s l, x <= s u]``, leaving out an infinite side."""
        out = []
        if np.any(np.isfinite(self.lower)):
            out.append(x >= _bound(self.lower, self.scale))
        if np.any(np.isfinite(self.upper)):
            out.append(x <= _bound(self.upper, self.scale))
        return out


class BoxEqualSums(ConvexSet):
    r"""Boxes with one balanced-sum equality per group (the fixed-margin OC SVM's dual).

    .. math::

        \Big\{z : 0 \le z_k \le s\,u_k, \quad
        \sum_{k \in g,\, \sigma_k = +1} z_k = \sum_{k \in g,\, \sigma_k = -1} z_k
        \ \text{ for every group } g\Big\},

    i.e. :math:`\sum_{k \in g} \sigma_k z_k = 0`: the product over thresholds of Li (2011),
    Sect. 3.1's dual constraints :math:`0 \le \alpha \le C`,
    :math:`\sum_i \alpha_{r,i} = \sum_i \alpha^*_{r+1,i}`.

    Parameters
    ----------
    group : int array of shape (m,)
        Group of each coordinate, ``0 .. G-1``; every group holds coordinates of both signs
        (a group with one sign only would make its set the single point 0, which the
        projection does not treat).
    sign : array of shape (m,)
        :math:`\sigma_k \in \{-1, +1\}`.
    upper : float or array of shape (m,)
        :math:`u_k > 0`, finite.
    scale : float or Scale
        :math:`s > 0`.

    Raises
    ------
    ValueError
        For mismatched shapes, a sign other than +-1, a bound that is not finite and
        positive, or a group without both signs.

    Notes
    -----
    The problem separates over groups. For one group the KKT conditions give
    :math:`z_k(\lambda) = \min(s u_k, \max(0, v_k - \sigma_k \lambda))` with the multiplier
    :math:`\lambda` a root of the non-increasing, piecewise linear :math:`h(\lambda) =
    \sum_k \sigma_k z_k(\lambda)`, which falls from :math:`\sum_{\sigma_k = +1} s u_k > 0`
    to :math:`-\sum_{\sigma_k = -1} s u_k < 0`. Term :math:`k` is strictly between its bounds
    for :math:`\lambda` in an interval of length :math:`s u_k`, on which it adds -1 to the
    slope of :math:`h`. All :math:`2m` interval ends are sorted (per group, in one
    ``lexsort``); cumulative sums of the slopes locate the segment on which :math:`h`
    changes sign, and on that segment, with :math:`A` the coordinates strictly inside their
    box and :math:`T` those at their upper bound,

    .. math::

        \lambda^\star = \frac{\sum_{k \in T} \sigma_k s u_k + \sum_{k \in A} \sigma_k v_k}{|A|}

    is the exact root, computed afresh from the active sets (the cumulative sums only
    bracket it). Cost: :math:`O(m \log m)`. The projection satisfies the bounds exactly and
    each equality up to rounding (:math:`|\sum_{k \in g} \sigma_k z_k| \lesssim \varepsilon
    \sum_{k \in g} s u_k`).

    References
    ----------
    .. [1] P. Brucker, "An O(n) algorithm for quadratic knapsack problems", Operations
       Research Letters 3(3), 1984 (the breakpoint search for one equality and a box).
    .. [2] K. C. Kiwiel, "Breakpoint searching algorithms for the continuous quadratic
       knapsack problem", Math. Programming 112, 2008.
    """

    def __init__(self, group: np.ndarray, sign: np.ndarray, upper: float | np.ndarray = 1.0,
                 *, scale: float | Scale = 1.0) -> None:
        group, self.n_groups = _groups(group)
        sign = np.asarray(sign, dtype=np.float64)
        m = group.size
        if sign.shape != (m,):
            raise ValueError(f"group and sign must be 1-D of one length, got shapes "
                             f"{group.shape}, {sign.shape}")
        if not np.all(np.abs(sign) == 1.0):
            raise ValueError("sign must hold only -1 and +1")
        if np.ndim(upper) == 0:
            upper = float(upper)
        else:
            upper = np.array(upper, dtype=np.float64)
            if upper.shape != (m,):
                raise ValueError(f"upper must be a scalar or of shape ({m},), got {upper.shape}")
            upper.flags.writeable = False
        if not np.all(np.isfinite(upper) & (np.asarray(upper) > 0)):
            raise ValueError("upper bounds must be finite and > 0")
        plus = sign > 0
        n_plus = np.bincount(group, weights=plus, minlength=self.n_groups)
        n_minus = np.bincount(group, weights=~plus, minlength=self.n_groups)
        lacking = np.flatnonzero((n_plus == 0) | (n_minus == 0))
        if lacking.size:
            raise ValueError(f"group {lacking[0]} lacks coordinates of one sign; every group "
                             f"0 .. {self.n_groups - 1} needs both signs")
        self.group, self.sign, self.upper = group, sign, upper
        self.scale = _check_scale(scale)
        self._plus = plus

    @property
    def size(self) -> int:
        """The dimension m."""
        return int(self.group.size)

    def _upper(self) -> float | np.ndarray:
        """The scaled upper bounds :math:`s u`."""
        return float(self.scale) * self.upper

    def signed_sums(self, v: np.ndarray) -> np.ndarray:
        r"""Per group, :math:`\sum_{k \in g} \sigma_k v_k` (length G)."""
        return np.bincount(self.group, weights=self.sign * v, minlength=self.n_groups)

    def project(self, v: np.ndarray) -> np.ndarray:
        """The exact projection, by sorting the breakpoints (class Notes); ``v`` finite."""
        v = _vector(v, self.size, finite=True)
        group, sign, plus, m, n_groups = self.group, self.sign, self._plus, self.size, \
            self.n_groups
        u = np.broadcast_to(np.asarray(self._upper(), dtype=np.float64), (m,))
        # Term k is strictly inside its box for lo_k < lambda < hi_k.
        lo = np.where(plus, v - u, -v)
        hi = np.where(plus, v, u - v)
        points = np.concatenate([lo, hi])
        slope_change = np.concatenate([-np.ones(m, dtype=np.int64), np.ones(m, dtype=np.int64)])
        owner = np.concatenate([group, group])
        order = np.lexsort((points, owner))  # by group, then breakpoint; stable (lo before hi)
        ev_point, ev_group = points[order], owner[order]
        # slope of h just right of each event; it is back to 0 at the end of every group, so
        # one running sum serves all groups
        slope = np.cumsum(slope_change[order])
        increment = np.zeros(2 * m)
        increment[1:] = slope[:-1] * np.diff(ev_point)
        running = np.cumsum(increment)
        start = np.searchsorted(ev_group, np.arange(n_groups))
        h_start = np.bincount(group, weights=np.where(plus, u, 0.0), minlength=n_groups)
        h = h_start[ev_group] + (running - running[start[ev_group]])
        # first event of each group with h <= 0; the group's last event always qualifies,
        # since h there is -sum of the minus-side bounds < 0 (forced, in case rounding hid it)
        crossed = h <= 0.0
        last = np.r_[start[1:], 2 * m] - 1
        crossed[last] = True
        hits = np.flatnonzero(crossed)
        first = hits[np.searchsorted(ev_group[hits], np.arange(n_groups))]

        # active sets on the bracketing segment (event ranks first-1 .. first), from the sort
        rank = np.empty(2 * m, dtype=np.int64)
        rank[order] = np.arange(2 * m)
        rank_lo, rank_hi = rank[:m], rank[m:]
        j = first[group]
        active = (rank_lo < j) & (rank_hi >= j)
        at_top = np.where(plus, rank_lo >= j, rank_hi < j)
        total = np.bincount(group, weights=sign * (u * at_top + v * active), minlength=n_groups)
        count = np.bincount(group, weights=active, minlength=n_groups)
        lam = total / count
        return np.clip(v - sign * lam[group], 0.0, u)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(-v), max(v - s u), max_g |sum_g sigma v|)``."""
        v = np.asarray(v, dtype=np.float64)
        return max(0.0, float(np.max(-v, initial=0.0)),
                   float(np.max(v - self._upper(), initial=0.0)),
                   float(np.abs(self.signed_sums(v)).max()))

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[x >= 0, x <= s u, E x == 0]`` with the G x m signed group matrix E."""
        m = self.size
        signed = sp.csr_matrix((self.sign, (np.arange(m), self.group)), shape=(m, self.n_groups))
        return [x >= 0, x <= _bound(self.upper, self.scale), signed.T @ x == 0]


class _GroupSums(ConvexSet):
    r"""Nonnegative coordinates with one constraint on the sum of each group (base class).

    Parameters
    ----------
    group : int array of shape (m,)
        Group of each coordinate; every group ``0 .. G-1`` is non-empty.
    total : float or array of shape (G,)
        :math:`r_g \ge 0` before scaling (finite); a scalar applies to every group, and an
        array sets G (then the labels must be ``0 .. G-1``).
    scale : float or Scale
        :math:`s > 0`, multiplying the totals.
    """

    def __init__(self, group: np.ndarray, total: float | np.ndarray = 1.0, *,
                 scale: float | Scale = 1.0) -> None:
        if np.ndim(total) == 0:
            self.group, self.n_groups = _groups(group)
            total = float(total)
        else:
            total = np.array(total, dtype=np.float64)
            if total.ndim != 1:
                raise ValueError(f"total must be a scalar or 1-D, got shape {total.shape}")
            self.group, self.n_groups = _groups(group, total.size)
            total.flags.writeable = False
        if not np.all(np.isfinite(total) & (np.asarray(total) >= 0)):
            raise ValueError("every total must be finite and >= 0")
        self.total = total
        self.scale = _check_scale(scale)
        self._count = np.bincount(self.group, minlength=self.n_groups)
        # position of each group's first coordinate once sorted by group
        self._start = np.r_[0, np.cumsum(self._count)[:-1]]
        # groups that are the rows of a matrix (contiguous, equal sizes: one group of K
        # coefficients per pair) are projected row by row, without the global sort
        width = self.size // self.n_groups
        self._rows = bool(self.size == width * self.n_groups
                          and np.array_equal(self.group, np.arange(self.size) // width))

    @property
    def size(self) -> int:
        """The dimension m."""
        return int(self.group.size)

    def _totals(self) -> np.ndarray:
        """The scaled totals :math:`s r_g` (length G)."""
        return np.broadcast_to(float(self.scale) * np.asarray(self.total), (self.n_groups,))

    def sums(self, v: np.ndarray) -> np.ndarray:
        """Per group, the sum of the coordinates of ``v`` (length G)."""
        return np.bincount(self.group, weights=v, minlength=self.n_groups)

    def _project_on_sums(self, v: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        r"""Projection onto :math:`\{z \ge 0, \sum_{k \in g} z_k = s r_g\}` for every group
        (or onto sums ``r``, one per group, when given).

        :math:`z = \max(v - \theta_g, 0)` with the threshold :math:`\theta_g` of each group
        (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1): with the group's values
        sorted decreasingly, :math:`x_1 \ge \dots \ge x_n`, the coordinates kept are the
        first :math:`\rho = \max\{j : j x_j - \sum_{i \le j} x_i + r > 0\}`, and
        :math:`\theta = (\sum_{i \le \rho} x_i - r)/\rho` (:math:`z = 0` when :math:`r = 0`).
        Values are centred on their group's mean first, so that one cumulative sum over all
        groups carries no rounding from one group into the next; the prefix sums only
        locate :math:`\rho`, and :math:`\theta` is summed afresh over each group's kept
        coordinates. :math:`O(m \log m)`.
        """
        group, n_groups = self.group, self.n_groups
        r = self._totals() if r is None else r
        if self._rows:
            return _project_rows_on_sums(v.reshape(n_groups, -1), r).ravel()
        centre = self.sums(v) / self._count
        x = v - centre[group]
        order = np.lexsort((-x, group))  # by group, then decreasing value
        xs, gs = x[order], group[order]
        prefix = np.cumsum(xs)
        before = np.r_[0.0, prefix][self._start]  # prefix sum before each group's first
        rank = np.arange(xs.size) - self._start[gs] + 1  # 1-based position inside the group
        kept = rank * xs - (prefix - before[gs]) + r[gs] > 0
        rho = np.where(r > 0, np.bincount(gs, weights=kept, minlength=n_groups), 0.0)
        take = rank <= rho[gs]
        kept_sum = np.bincount(gs, weights=np.where(take, xs, 0.0), minlength=n_groups)
        top = xs[self._start]  # each group's largest value: theta for r = 0
        theta = np.where(rho > 0, (kept_sum - r) / np.maximum(rho, 1.0), top)
        return np.maximum(x - theta[group], 0.0)


def _project_rows_on_sums(V: np.ndarray, r: np.ndarray) -> np.ndarray:
    r""":meth:`_GroupSums._project_on_sums` for groups that are the rows of ``V`` (each row
    onto :math:`\{z \ge 0, \sum z = r_i\}`), with one sort along the rows."""
    X = V - V.mean(axis=1, keepdims=True)
    xs = -np.sort(-X, axis=1)
    rank = np.arange(1, X.shape[1] + 1)
    kept = rank * xs - np.cumsum(xs, axis=1) + r[:, None] > 0
    rho = np.where(r > 0, kept.sum(axis=1), 0)
    take = rank[None, :] <= rho[:, None]
    kept_sum = np.where(take, xs, 0.0).sum(axis=1)
    theta = np.where(rho > 0, (kept_sum - r) / np.maximum(rho, 1), xs[:, 0])
    return np.maximum(X - theta[:, None], 0.0)


class Simplex(_GroupSums):
    r"""A scaled simplex per group: :math:`\{z \ge 0 : \sum_{k \in g} z_k = s\,r_g\}`.

    With one group and :math:`r = 1`, the probability simplex (Agarwal & Collins 2010,
    Sect. 3.2: RankMM-2's distributions over :math:`|R_i| + 1` elements); :math:`r_g = 0`
    makes the group's set the point 0.

    Parameters
    ----------
    group, total, scale
        The groups (every one non-empty), the totals :math:`r_g \ge 0` and the scale
        :math:`s > 0`, as in :class:`_GroupSums`.
    """

    def project(self, v: np.ndarray) -> np.ndarray:
        """The exact projection (sort per group, :math:`O(m \\log m)`); ``v`` finite."""
        return self._project_on_sums(_vector(v, self.size, finite=True))

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(-v), max_g |sum_g v - s r_g|)``."""
        v = np.asarray(v, dtype=np.float64)
        return max(0.0, float(np.max(-v, initial=0.0)),
                   float(np.abs(self.sums(v) - self._totals()).max()))

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[x >= 0, S x == s r]`` with the G x m group indicator S."""
        return [x >= 0, _indicator(self.group, self.n_groups) @ x
                == _bound(self.total, self.scale)]


class CappedSimplex(_GroupSums):
    r"""Nonnegative coordinates whose sum per group is at most :math:`s\,r_g`.

    .. math::

        \{z \ge 0 : \sum_{k \in g} z_k \le s\,r_g\},

    the convex hull of 0 and the simplex of :class:`Simplex` (not the box-capped simplex
    :math:`\{0 \le z \le 1, \sum z = k\}`): Le & Smola's dual (28), :math:`\sum_z \alpha_{iz}
    \le C` per query, and RankMM-2's simplex with its slack coordinate
    :math:`\alpha^i_0` eliminated.

    Parameters
    ----------
    group, total, scale
        As in :class:`Simplex`.
    """

    def project(self, v: np.ndarray) -> np.ndarray:
        """``max(v, 0)`` in the groups where its sum is at most ``s r_g``, else the
        projection onto the simplex of the group (``v`` finite)."""
        v = _vector(v, self.size, finite=True)
        clipped = np.maximum(v, 0.0)
        over = self.sums(clipped) > self._totals()
        if not over.any():
            return clipped
        return np.where(over[self.group], self._project_on_sums(v), clipped)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(-v), max_g (sum_g v - s r_g))``."""
        v = np.asarray(v, dtype=np.float64)
        return max(0.0, float(np.max(-v, initial=0.0)),
                   float((self.sums(v) - self._totals()).max()))

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[x >= 0, S x <= s r]`` with the G x m group indicator S."""
        return [x >= 0, _indicator(self.group, self.n_groups) @ x
                <= _bound(self.total, self.scale)]


class SumBand(_GroupSums):
    r"""Nonnegative coordinates whose sum per group lies in a band.

    .. math::

        \{z \ge 0 : s\,l_g \le \sum_{k \in g} z_k \le s\,r_g\},

    Tran & Pham's coefficient constraint (8), :math:`\lambda_l \le \|w\|_1 \le \lambda_u`
    with :math:`w \ge 0`, one group per ordered pair. ``lower = total`` is the
    :class:`Simplex` (their approximate form (18), :math:`\|w\|_1 = 1`), ``lower = 0`` the
    :class:`CappedSimplex`.

    Parameters
    ----------
    group : int array of shape (m,)
        Group of each coordinate, as in :class:`Simplex`.
    lower, total : float or array of shape (G,)
        :math:`0 \le l_g \le r_g`, finite, before scaling.
    scale : float or Scale
        :math:`s > 0`, multiplying both bounds.
    """

    def __init__(self, group: np.ndarray, lower: float | np.ndarray = 1.0,
                 total: float | np.ndarray = 1.0, *, scale: float | Scale = 1.0) -> None:
        super().__init__(group, total, scale=scale)
        lower = np.asarray(lower, dtype=np.float64)
        if lower.ndim > 1 or (lower.ndim == 1 and lower.size != self.n_groups):
            raise ValueError(f"lower must be a scalar or have one value per group "
                             f"({self.n_groups}), got shape {lower.shape}")
        if not np.all(np.isfinite(lower) & (lower >= 0) & (lower <= np.asarray(self.total))):
            raise ValueError("every lower bound must be finite and in [0, total]")
        self.lower = float(lower) if lower.ndim == 0 else lower

    def _lowers(self) -> np.ndarray:
        """The scaled lower bounds :math:`s l_g` (length G)."""
        return np.broadcast_to(float(self.scale) * np.asarray(self.lower), (self.n_groups,))

    def project(self, v: np.ndarray) -> np.ndarray:
        """``max(v, 0)`` in the groups whose sum is inside the band, else the projection onto
        the simplex of the violated bound (the sum constraint's multiplier has the sign of
        the violation; ``v`` finite)."""
        v = _vector(v, self.size, finite=True)
        clipped = np.maximum(v, 0.0)
        sums, low, high = self.sums(clipped), self._lowers(), self._totals()
        outside = (sums > high) | (sums < low)
        if not outside.any():
            return clipped
        target = np.where(sums > high, high, low)
        return np.where(outside[self.group], self._project_on_sums(v, target), clipped)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(-v), max_g (sum_g v - s r_g), max_g (s l_g - sum_g v))``."""
        v = np.asarray(v, dtype=np.float64)
        sums = self.sums(v)
        return max(0.0, float(np.max(-v, initial=0.0)),
                   float((sums - self._totals()).max()), float((self._lowers() - sums).max()))

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[x >= 0, S x <= s r, S x >= s l]`` with the G x m group indicator S."""
        S = _indicator(self.group, self.n_groups)
        return [x >= 0, S @ x <= _bound(self.total, self.scale),
                S @ x >= _bound(self.lower, self.scale)]


def _indicator(group: np.ndarray, n_groups: int) -> sp.csr_matrix:
    """The G x m matrix with ``S[group[k], k] = 1``."""
    m = group.size
    return sp.csr_matrix((np.ones(m), (group, np.arange(m))), shape=(n_groups, m))


class L2Ball(ConvexSet):
    r"""The Euclidean ball :math:`\{z : \|z\|_2 \le s\,\rho\}` (:math:`\rho \ge 0`).

    Parameters
    ----------
    radius : float
        :math:`\rho \ge 0`, finite, before scaling.
    scale : float or Scale
        :math:`s > 0`.
    """

    def __init__(self, radius: float = 1.0, *, scale: float | Scale = 1.0) -> None:
        radius = float(radius)
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius must be finite and >= 0, got {radius}")
        self.radius = radius
        self.scale = _check_scale(scale)

    @staticmethod
    def _norm(v: np.ndarray) -> float:
        """``||v||_2`` without overflow or underflow (scaled by ``max |v|``)."""
        big = float(np.max(np.abs(v), initial=0.0))
        return big * float(np.linalg.norm(v / big)) if big > 0 else 0.0

    def project(self, v: np.ndarray) -> np.ndarray:
        """``v`` if inside, else ``v * (s rho / ||v||)``; ``v`` finite."""
        v = _vector(v, None, finite=True)
        norm, radius = self._norm(v), float(self.scale) * self.radius
        return v.copy() if norm <= radius else v * (radius / norm)

    def project_columns(self, V: np.ndarray) -> np.ndarray:
        """Each column of the finite matrix ``V`` projected onto the ball (:meth:`project`
        column by column, in one pass)."""
        V = np.asarray(V, dtype=np.float64)
        if V.ndim != 2:
            raise ValueError(f"the points must be a 2-D array, got shape {V.shape}")
        if not np.all(np.isfinite(V)):
            raise ValueError("the point must be finite")
        big = np.max(np.abs(V), axis=0, initial=0.0)
        safe = np.where(big > 0, big, 1.0)
        norms = big * np.linalg.norm(V / safe, axis=0)
        radius = float(self.scale) * self.radius
        return V * np.where(norms > radius, radius / np.where(norms > 0, norms, 1.0), 1.0)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, ||v|| - s rho)``."""
        return max(0.0, self._norm(np.asarray(v, dtype=np.float64))
                   - float(self.scale) * self.radius)

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """``[norm(x, 2) <= s rho]``."""
        import cvxpy as cp

        return [cp.norm(x, 2) <= _bound(self.radius, self.scale)]


class L1InfProjection(NamedTuple):
    r"""The projection onto the non-negative :math:`\ell_{1,\infty}` ball with its multipliers.

    Attributes
    ----------
    point : ndarray of shape (m,)
        :math:`z = \min(\max(v, 0), \mu_{g(j)})`, the projection.
    cap : ndarray of shape (G,)
        :math:`\mu_g = \max_{j \in g} z_j`, the smallest caps (the paper's
        :math:`\gamma_k`; in a block strictly inside the ball, :math:`\sum_{g \in b} \mu_g <
        s\,r_b` and any :math:`\gamma \ge \mu` with the printed sum completes them).
    threshold : ndarray of shape (B,)
        :math:`\theta_b \ge 0`, the multiplier of block b's budget: every group of the block
        with :math:`\mu_g > 0` has :math:`\sum_{j \in g} (a_j - \mu_g)_+ = \theta_b`, a group
        with :math:`\mu_g = 0` has :math:`\sum_{j \in g} a_j \le \theta_b`
        (:math:`a = \max(v, 0)`); 0 for a block already inside.
    """

    point: np.ndarray
    cap: np.ndarray
    threshold: np.ndarray


def _segment_cumsum(x: np.ndarray, first: np.ndarray | None) -> np.ndarray:
    """Cumulative sums of ``x`` restarted at every segment (``first[k]``: the index of the
    first element of k's segment; segments are contiguous; None: one segment, ``cumsum``).

    One running sum over all segments, made accurate per segment by compensation: the
    rounding error of every addition is recovered exactly (Knuth's TwoSum) and summed
    alongside, so that a segment's sums do not carry the rounding of the (possibly much
    larger) segments before it: the error is about ``eps`` times the segment's own sums.
    """
    total = np.cumsum(x)
    if first is None:
        return total
    before = np.empty_like(total)
    before[0] = 0.0
    before[1:] = total[:-1]
    added = total - before
    error = np.cumsum((before - (total - added)) + (x - added))
    error_before = np.empty_like(error)
    error_before[0] = 0.0
    error_before[1:] = error[:-1]
    return (total - before[first]) + (error - error_before[first])


def _stable_sort_by(order: np.ndarray, label: np.ndarray, n_labels: int) -> np.ndarray:
    """``order`` re-sorted stably by ``label[order]`` (labels ``0 .. n_labels-1``).

    A radix sort: one stable ``argsort`` per 16-bit digit of the labels, which numpy does by
    counting (O(m)) for 16-bit integers; one digit up to 65,536 labels.
    """
    for shift in range(0, max(int(n_labels - 1).bit_length(), 1), 16):
        digit = ((label[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


class L1InfLayout:
    r"""The part of the :math:`\ell_{1,\infty}` projection that depends on the labels only.

    Made once for fixed labels (by :class:`L1InfBall`, or by a solver for each query block it
    projects many times); :meth:`project` then runs the compiled Newton kernel
    (:func:`cvxrank.numerics.l1inf_kernels.project_blocks`: a few passes over the values, no sort)
    or, in a process that has not loaded it yet, the sort-based :meth:`project_sorted`
    (:mod:`cvxrank.numerics.l1inf_kernels` says which, and when).

    Parameters
    ----------
    group : int ndarray of shape (m,)
        Group of each coordinate, ``0 .. G-1``, every group non-empty (not checked; the
        labels need not be sorted).
    block : int ndarray of shape (G,), optional
        Block of each group, ``0 .. B-1``, every block non-empty (not checked); None puts
        every group in one block.

    Notes
    -----
    For the kernel, the coordinates are ordered by block, then group (:attr:`perm`, with
    boundaries :attr:`group_ptr` of the groups :attr:`group_label` and :attr:`block_ptr` of
    the blocks). For :meth:`project_sorted`, they are handled sorted by group, then by
    decreasing value: position k of that order holds the breakpoint of rank ``rank[k]`` of
    group ``sorted_group[k]`` (see :class:`L1InfBall`, Notes), whatever the values. Likewise,
    once the breakpoints are sorted by block, event position k belongs to block
    ``event_block[k]``.
    """

    def __init__(self, group: np.ndarray, block: np.ndarray | None = None) -> None:
        self.group = np.asarray(group, dtype=np.int64)
        self.group_count = np.bincount(self.group)
        self.n_groups = self.group_count.size
        self.block = (np.zeros(self.n_groups, dtype=np.int64) if block is None
                      else np.asarray(block, dtype=np.int64))
        self.n_blocks = int(self.block.max()) + 1
        count, m = self.group_count, self.group.size
        # the kernel's order: groups by block, coordinates by group
        self.group_label = np.argsort(self.block, kind="stable")
        position = np.empty(self.n_groups, dtype=np.int64)
        position[self.group_label] = np.arange(self.n_groups)
        self.perm = np.argsort(position[self.group], kind="stable")
        self.group_ptr = np.concatenate(([0], np.cumsum(count[self.group_label])))
        self.block_ptr = np.concatenate(
            ([0], np.cumsum(np.bincount(self.block, minlength=self.n_blocks))))
        # the sort-based method's order
        self.group_start = np.cumsum(count) - count
        self.group_end = self.group_start + count - 1
        self.sorted_group = np.repeat(np.arange(self.n_groups), count)
        self.group_first = self.group_start[self.sorted_group]
        self.rank = np.arange(1, m + 1, dtype=np.float64) - self.group_first
        # M's slope changes by 1/(r+1) - 1/r at breakpoint r < n of a group, by -1/n at t_n
        self.slope_change = (np.where(self.rank == count[self.sorted_group], 0.0,
                                      1.0 / (self.rank + 1.0)) - 1.0 / self.rank)
        self.groups_per_block = np.bincount(self.block, minlength=self.n_blocks)
        self.sorted_block = self.block[self.sorted_group]
        block_size = np.bincount(self.sorted_block, minlength=self.n_blocks)
        self.block_start = np.cumsum(block_size) - block_size
        self.block_end = self.block_start + block_size - 1
        self.event_block = np.repeat(np.arange(self.n_blocks), block_size)
        self.event_first = self.block_start[self.event_block] if self.n_blocks > 1 else None

    def _threshold(self, t: np.ndarray, following: np.ndarray, passed: np.ndarray,
                   budget: np.ndarray, fallback: np.ndarray) -> tuple[np.ndarray, ...]:
        r"""The root of the linear piece of :math:`M` on which each group has passed the
        breakpoints marked in ``passed``: ``(theta, r, S_r, active)``, with r and
        :math:`S_r` per group; ``fallback`` where every group of a block is past its last."""
        n_passed = np.bincount(self.sorted_group, weights=passed, minlength=self.n_groups)
        capped = n_passed + 1.0  # r_g, the number of values the group caps
        active = capped <= self.group_count
        at = self.group_start + np.minimum(n_passed, self.group_count - 1).astype(np.int64)
        capped_sum = t[at] + capped * following[at]  # S_r = t_r + r a_(r+1)
        numerator = np.bincount(self.block, weights=np.where(active, capped_sum / capped, 0.0),
                                minlength=self.n_blocks)
        denominator = np.bincount(self.block, weights=np.where(active, 1.0 / capped, 0.0),
                                  minlength=self.n_blocks)
        theta = np.divide(numerator - budget, denominator, out=fallback.copy(),
                          where=denominator > 0)
        return theta, capped, capped_sum, active

    def project(self, v: np.ndarray, radius: float | np.ndarray) -> L1InfProjection:
        r"""The projection of ``v`` (finite, float64; not checked) onto
        :math:`\{z \ge 0 : \sum_{g \in b} \max_{j \in g} z_j \le R_b\}`, ``radius`` the
        budgets :math:`R_b \ge 0` (scalar or length B, already scaled).

        The compiled Newton kernel once it is loaded in the process, else the sort-based
        :meth:`project_sorted` (:data:`cvxrank.numerics.l1inf_kernels.KERNELS`); also the
        latter if a block reaches the kernel's step limit (never observed).
        """
        v = np.ascontiguousarray(v, dtype=np.float64)
        budget = np.asarray(radius, dtype=np.float64)
        budget = (np.full(self.n_blocks, budget) if budget.ndim == 0
                  else np.ascontiguousarray(budget))
        if l1inf_kernels.KERNELS.use_compiled():
            point, cap, threshold, steps = l1inf_kernels.project_blocks(
                v, self.perm, self.group_ptr, self.block_ptr, self.group_label, budget,
                l1inf_kernels.step_limit(v.size))
            if steps >= 0:
                return L1InfProjection(point, cap, threshold)
            return self.project_sorted(v, budget)
        start = time.perf_counter()
        projection = self.project_sorted(v, budget)
        l1inf_kernels.KERNELS.charge_numpy(time.perf_counter() - start)
        return projection

    def project_sorted(self, v: np.ndarray, radius: float | np.ndarray) -> L1InfProjection:
        r""":meth:`project` by Quattoni et al.'s sort-based breakpoint algorithm
        (:class:`L1InfBall`, Notes), :math:`O(m \log m)` in numpy; the same point to
        rounding."""
        a = np.maximum(v, 0.0)
        m, n_blocks = a.size, self.n_blocks
        budget = np.broadcast_to(np.asarray(radius, dtype=np.float64), (n_blocks,))
        # each group's values in decreasing order
        order = _stable_sort_by(np.argsort(-a), self.group, self.n_groups)
        xs = a[order]
        top = xs[self.group_start]
        group_norm_sum = np.bincount(self.block, weights=top, minlength=n_blocks)
        inside = group_norm_sum <= budget
        if inside.all():
            return L1InfProjection(a, top, np.zeros(n_blocks))

        # breakpoint r of a group: t_r = S_r - r a_(r+1) = sum_{i <= r} i (a_(i) - a_(i+1))
        following = np.empty(m)
        following[:-1] = xs[1:]
        following[self.group_end] = 0.0
        t = _segment_cumsum(self.rank * (xs - following), self.group_first)
        # the breakpoints sorted by block, then value; M (= sum_g mu_g) at each of them
        events = (np.argsort(t) if n_blocks == 1
                  else _stable_sort_by(np.argsort(t), self.sorted_block, n_blocks))
        te, be = t[events], self.event_block
        slope_before = np.empty(m)
        slope_before[1:] = (self.groups_per_block[be]
                            + _segment_cumsum(self.slope_change[events], self.event_first))[:-1]
        slope_before[self.block_start] = self.groups_per_block
        previous = np.empty(m)
        previous[1:] = te[:-1]
        previous[self.block_start] = 0.0
        drop = np.maximum(slope_before, 0.0) * (te - previous)
        level = group_norm_sum[be] - _segment_cumsum(drop, self.event_first)
        # first event of each block with M <= R (the last one has M = 0 <= R, forced for
        # rounding): theta lies between the breakpoint before it and its own
        crossed = level <= budget[be]
        crossed[self.block_end] = True
        hits = np.flatnonzero(crossed)
        first = hits[np.searchsorted(be[hits], np.arange(n_blocks))]
        # theta on the bracket's linear piece (the breakpoints below the event passed), then
        # one Newton step on the piece to the right of that theta (class Notes)
        sorted_block = self.sorted_block
        start, *_ = self._threshold(t, following, t < te[first][sorted_block], budget,
                                    te[first])
        theta, capped, capped_sum, active = self._threshold(
            t, following, t <= start[sorted_block], budget, start)
        theta = np.where(inside, 0.0, np.maximum(theta, 0.0))
        cap = np.where(active, np.clip((capped_sum - theta[self.block]) / capped, 0.0, top),
                       0.0)
        cap[(budget == 0.0)[self.block]] = 0.0
        cap = np.where(inside[self.block], top, cap)
        return L1InfProjection(np.minimum(a, cap[self.group]), cap, theta)


def project_l1inf_nonneg(v: np.ndarray, group: np.ndarray, block: np.ndarray | None = None,
                         radius: float | np.ndarray = 1.0) -> np.ndarray:
    r"""The projection of ``v`` onto the :math:`\ell_{1,\infty}` ball of budgets ``radius``
    intersected with the non-negative orthant (one call; no validation).

    ``L1InfLayout(group, block).project(v, radius).point``: to project many points with
    the same labels, make the :class:`L1InfLayout` once and call its ``project``.

    Parameters
    ----------
    v : array of shape (m,)
        The point (finite).
    group, block
        As in :class:`L1InfLayout`.
    radius : float or array of shape (B,)
        The budgets :math:`R_b \ge 0` (already scaled).
    """
    return L1InfLayout(group, block).project(np.asarray(v, dtype=np.float64), radius).point


class L1InfBall(ConvexSet):
    r"""The :math:`\ell_{1,\infty}` ball per block, intersected with the non-negative orthant.

    Coordinates are grouped, and groups are gathered in blocks; the set is the product over
    the blocks b of

    .. math::

        C_b = \Big\{z \ge 0 : \sum_{g \in b} \max_{j \in g} z_j \le s\,r_b\Big\}
            = \Big\{z : \exists \gamma,\ 0 \le z_j \le \gamma_{g(j)},
              \ \sum_{g \in b} \gamma_g = s\,r_b\Big\},

    the second form exactly as Agarwal & Collins (2010), Sect. 3.3 print RankMM-3's dual
    (:math:`0 \le \alpha^i_{jk} \le \gamma^i_k`, :math:`\sum_k \gamma^i_k = C/m`: one block
    per query i, one group per lower document k). On :math:`z \ge 0`,
    :math:`\sum_g \max_j z_j` is the :math:`\ell_{1,\infty}` norm
    :math:`\|z\|_{1,\infty} = \sum_g \max_{j \in g} |z_j|` of the block.

    Parameters
    ----------
    group : int array of shape (m,)
        Group of each coordinate, ``0 .. G-1``, every group non-empty.
    block : int array of shape (G,), optional
        Block of each group, ``0 .. B-1``, every block non-empty; None (default) puts all
        groups in one block.
    radius : float or array of shape (B,)
        :math:`r_b \ge 0` before scaling (finite); a scalar applies to every block, and an
        array sets B.
    scale : float or Scale
        :math:`s > 0`, multiplying the radii.

    Raises
    ------
    ValueError
        For labels that are not ``0 .. G-1`` (``0 .. B-1``) with every group (block)
        non-empty, mismatched shapes, or a radius that is negative or not finite.

    Notes
    -----
    **Projection onto the ball, then onto nothing.** Write :math:`B` for the
    :math:`\ell_{1,\infty}` ball (of all signs) and :math:`a = \max(v, 0)`. :math:`B` is
    *solid*: :math:`x \in B` and :math:`|y| \le |x|` coordinatewise imply :math:`y \in B`.
    Hence :math:`\Pi_{B \cap \mathbb{R}^m_+}(v) = \Pi_B(a)`. Proof: let :math:`z = \Pi_B(a)`.
    If :math:`z_j < 0` (or :math:`z_j > a_j`), replacing :math:`z_j` by 0 (by :math:`a_j`)
    gives a point of :math:`B` (solidity) strictly closer to :math:`a`; so
    :math:`0 \le z \le a`, and :math:`z_j = 0` wherever :math:`v_j \le 0`. For any
    :math:`y \ge 0`, each coordinate with :math:`v_j < 0` has :math:`(y_j - v_j)^2 =
    (y_j + |v_j|)^2 \ge y_j^2 + v_j^2`, so :math:`\|y - v\|^2 \ge \|y - a\|^2 + \|v_-\|^2`,
    with equality at :math:`y = z`. For :math:`y \in B \cap \mathbb{R}^m_+ \subset B`:
    :math:`\|z - v\|^2 = \|z - a\|^2 + \|v_-\|^2 \le \|y - a\|^2 + \|v_-\|^2 \le
    \|y - v\|^2`. :math:`\square`

    **Quattoni et al.'s algorithm** (ICML 2009, per block, for :math:`a \ge 0`). The
    projection caps each group, :math:`z_j = \min(a_j, \mu_g)`, and minimizing over the caps
    :math:`\mu \ge 0`, :math:`\sum_{g \in b} \mu_g \le R_b = s\,r_b`, of
    :math:`\tfrac12 \sum_g \|(a_g - \mu_g)_+\|^2` gives (KKT) one threshold
    :math:`\theta_b \ge 0` per block with :math:`\sum_{j \in g}(a_j - \mu_g)_+ = \theta_b`
    for every group with :math:`\mu_g > 0`, :math:`\sum_{j \in g} a_j \le \theta_b` for the
    others, and :math:`\theta_b = 0` if :math:`\sum_g \max_j a_j \le R_b` (the block is
    inside, :math:`z = a`). With a group's values sorted decreasingly,
    :math:`a_{(1)} \ge \dots \ge a_{(n)}`, prefix sums :math:`S_r` and
    :math:`a_{(n+1)} = 0`, the cap :math:`\mu_g(\theta)` is the inverse of
    :math:`\mu \mapsto \sum_j (a_j - \mu)_+`: piecewise linear, :math:`(S_r - \theta)/r` for
    :math:`\theta` between the breakpoints :math:`t_{r-1}` and
    :math:`t_r = S_r - r\,a_{(r+1)}` (:math:`t_0 = 0`), and 0 from :math:`t_n = S_n` on.
    The root of the decreasing :math:`M(\theta) = \sum_{g \in b} \mu_g(\theta) = R_b` is
    bracketed by sorting the block's breakpoints (one per coordinate) and following
    :math:`M` along them with cumulative sums of its slopes :math:`-\sum_g 1/r_g`; on the
    bracketing segment, with :math:`r_g` the number of values each group caps,

    .. math::

        \theta_b = \frac{\sum_g S^g_{r_g}/r_g - R_b}{\sum_g 1/r_g}

    (over the groups not yet at 0, :math:`S_r = t_r + r\,a_{(r+1)}`), computed afresh from
    those active sets; then one Newton step from that value: the same formula on the active
    sets of the linear piece to its right. Every linear piece of the convex :math:`M` lies
    below :math:`M`, so its root lies at most at :math:`M`'s: the first value is at most
    the root, and the step lands on the root exactly when it starts on the root's piece.
    That is the case when the bracket is right (the step then changes nothing), and when it
    is one piece too early, as rounding in the running sums can make it (the first value
    is then past the bracket, on the root's piece): the running sums only have to bracket
    the root up to rounding. Every block is
    done at once: the coordinates are sorted by value, then (stably, a 16-bit radix sort) by
    group, the breakpoints by value, then by block; the running sums restart at every group
    or block, compensated so that a block's rounding is relative to its own values, not to
    the blocks before it (:func:`_segment_cumsum`). :math:`O(m \log m)`; the label-only part
    is made once (:class:`L1InfLayout`). The breakpoints are computed as
    :math:`t_r = \sum_{i \le r} i\,(a_{(i)} - a_{(i+1)})`, a running sum of non-negative
    steps, hence non-decreasing in r up to rounding; the active sets only count how many
    breakpoints of each group lie below a value, so an order of the breakpoints within
    rounding changes the result by rounding only. This is :meth:`L1InfLayout.project_sorted`.

    **Newton's method on the threshold, without sorting** (:meth:`project`; compiled,
    :mod:`cvxrank.numerics.l1inf_kernels`). For any non-empty set A of a group's values,
    :math:`f_g(\mu) = \sum_j (a_j - \mu)_+ \ge S_A - |A|\mu`, with equality for
    :math:`A = \{a_j > \mu\}`; hence :math:`\mu_g(\theta) = \max(0, \max_A
    \ell_A(\theta))` with the linear pieces :math:`\ell_A(\theta) = (S_A - \theta)/|A|`, and
    :math:`M` is a sum of maxima of linear functions. Given one piece per group (:math:`\ell_A`
    or 0), their sum lies below :math:`M`, so its root, the formula above with those sets,
    lies below :math:`\theta_b`. Each step takes, in every group, :math:`m_g` = its piece's
    value at the current :math:`\theta` and the set :math:`A' = \{a_j > m_g\}` (one pass
    over the values): :math:`\ell_{A'}(\theta) - m_g = (\sum_j (a_j - m_g)_+ - \theta)/|A'|
    \ge 0`, so the new sum is at least :math:`R_b` at :math:`\theta` and its root (the next
    :math:`\theta`) is larger, and still below :math:`\theta_b`. The iterates increase on a
    finite set of pieces; they stop when no set changes, or (rounding) when the root does not
    increase, and then :math:`f_g(\mu_g) = \theta` for every group with a positive cap: the
    KKT conditions above. This is Newton's method on the convex :math:`M` from the left, with
    each group's piece improved by one pass instead of found exactly; with one-value groups
    (the :math:`\ell_1` ball) it is Michelot's algorithm for the simplex [3]_. It starts from
    the larger of the roots for the pieces of all positive values and of the top values; a
    group whose positive values sum to at most :math:`\theta` has cap 0 for good. On random
    inputs it takes 2-7 steps per block from 10^2 to 10^6 coordinates, on structured ones
    (geometric, cubic, harmonic values, budgets down to 1e-6 of the norm) at most 14; the
    steps are capped at :math:`8 + 2\log_2 m`, and a call in which a block reaches the cap is
    redone by sorting, so a call is :math:`O(m)` in practice and :math:`O(m \log m)` at
    worst.

    **The paper's order** (:meth:`project_then_clip`): Agarwal & Collins project onto
    :math:`B` with Quattoni et al.'s method, i.e. :math:`\operatorname{sign}(v) \odot
    \Pi_B(|v|)`, then set the negative coordinates to 0. The result :math:`z'` is feasible
    (clipping a point of :math:`B` keeps it in :math:`B` by solidity) but it is not the
    projection in general: the magnitudes of the *negative* coordinates take part in the
    ball's budget (they raise their group's cap, and they raise the threshold, lowering every
    other group's cap), then are thrown away. Writing :math:`Z_g = \max_{j \in g} z'_j` and
    :math:`f_g(\mu) = \sum_{j \in g} (a_j - \mu)_+`, :math:`z'` equals the projection on
    block b **if and only if** either :math:`z'_b = a_b` (no positive coordinate is
    capped), or :math:`\sum_{g \in b} Z_g = s\,r_b` (all the budget is spent on non-negative
    coordinates) and there is :math:`\theta > 0` with :math:`f_g(Z_g) = \theta` for the
    groups with :math:`Z_g > 0` and :math:`f_g(0) \le \theta` for the others (the KKT
    conditions of the projection of :math:`a` at :math:`z'`, with :math:`\gamma = Z`). It
    holds in particular when :math:`v \ge 0`; when :math:`|v|` is already in the ball (then
    :math:`z' = a`); when every block has one group (the set is then a box); and whenever
    every negative coordinate is at most its group's cap of :math:`\Pi_B(|v|)` in magnitude
    (the caps of :math:`|v|` are then those of :math:`a`). Otherwise the two differ, by at
    most the negative part, :math:`\|z' - z\|_2 \le \|\min(v, 0)\|_2` (both vanish off
    :math:`\{v > 0\}`, where :math:`z' = \Pi_B(|v|)` and :math:`z = \Pi_B(a)`, and
    :math:`\Pi_B` is 1-Lipschitz), and the objective is worse by at least its square,
    :math:`\|z' - v\|^2 \ge \|z - v\|^2 + \|z' - z\|^2`. Example: groups {1, 2} and {3} in one
    block, :math:`s\,r = 10`, :math:`v = (10, -100, 10)`: the projection is
    :math:`(5, 0, 5)`, the paper's order gives :math:`(10, 0, 0)` (the cap 10 of the first
    group is paid for by the -100).

    References
    ----------
    .. [1] A. Quattoni, X. Carreras, M. Collins and T. Darrell, "An efficient projection for
       l1,inf regularization", ICML 2009, Sect. 4 (the breakpoint algorithm, O(m log m)).
    .. [2] S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
       Retrieval", ECIR 2010, Sect. 3.3 (RankMM-3's dual and the projection order).
    .. [3] C. Michelot, "A finite algorithm for finding the projection of a point onto the
       canonical simplex of R^n", J. Optim. Theory Appl. 50(1), 1986.
    """

    def __init__(self, group: np.ndarray, block: np.ndarray | None = None,
                 radius: float | np.ndarray = 1.0, *, scale: float | Scale = 1.0) -> None:
        self.group, self.n_groups = _groups(group)
        if block is None:
            block = np.zeros(self.n_groups, dtype=np.int64)
        block = np.asarray(block)
        if block.shape != (self.n_groups,):
            raise ValueError(f"block must give the block of each of the {self.n_groups} "
                             f"groups, got shape {block.shape}")
        if np.ndim(radius) == 0:
            self.block, self.n_blocks = _groups(block)
            radius = float(radius)
        else:
            radius = np.array(radius, dtype=np.float64)
            if radius.ndim != 1:
                raise ValueError(f"radius must be a scalar or 1-D, got shape {radius.shape}")
            self.block, self.n_blocks = _groups(block, radius.size)
            radius.flags.writeable = False
        if not np.all(np.isfinite(radius) & (np.asarray(radius) >= 0)):
            raise ValueError("every radius must be finite and >= 0")
        self.radius = radius
        self.scale = _check_scale(scale)
        self._layout = L1InfLayout(self.group, self.block)
        # coordinates sorted by group, for the per-group maxima of violation()
        self._by_group = np.argsort(self.group, kind="stable")

    @property
    def size(self) -> int:
        """The dimension m."""
        return int(self.group.size)

    def _budgets(self) -> np.ndarray:
        """The scaled radii :math:`s\\,r_b` (length B)."""
        return (np.full(self.n_blocks, float(self.scale) * self.radius)
                if isinstance(self.radius, float) else float(self.scale) * self.radius)

    def block_sums(self, v: np.ndarray) -> np.ndarray:
        r"""Per block, :math:`\sum_{g \in b} \max_{j \in g} v_j` (length B): the
        :math:`\ell_{1,\infty}` norm of each block when :math:`v \ge 0`."""
        v = np.asarray(v, dtype=np.float64)
        group_max = np.maximum.reduceat(v[self._by_group], self._layout.group_start)
        return np.bincount(self.block, weights=group_max, minlength=self.n_blocks)

    def project_with_threshold(self, v: np.ndarray) -> L1InfProjection:
        """The projection with its caps and thresholds (:meth:`L1InfLayout.project`);
        ``v`` finite."""
        return self._layout.project(_vector(v, self.size, finite=True), self._budgets())

    def project(self, v: np.ndarray) -> np.ndarray:
        """The exact projection, :math:`\\Pi_B(\\max(v, 0))` (class Notes: Newton's method,
        compiled, or in a process that has not loaded it, Quattoni et al.'s sorting);
        ``v`` finite."""
        return self.project_with_threshold(v).point

    def project_then_clip(self, v: np.ndarray) -> np.ndarray:
        r"""The paper's order: :math:`\max(\operatorname{sign}(v) \odot \Pi_B(|v|), 0)`.

        Feasible, but not the projection when negative coordinates take part in the ball's
        budget; the class Notes characterise exactly when it is. ``v`` finite.
        """
        v = _vector(v, self.size, finite=True)
        ball = self._layout.project(np.abs(v), self._budgets())
        return np.where(v > 0, ball.point, 0.0)

    def violation(self, v: np.ndarray) -> float:
        """``max(0, max(-v), max_b(sum_{g in b} max_{j in g} v_j - s r_b))``."""
        v = np.asarray(v, dtype=np.float64)
        return max(0.0, float(np.max(-v, initial=0.0)),
                   float((self.block_sums(v) - self._budgets()).max()))

    def constraints(self, x: cp.Expression) -> list[cp.Constraint]:
        """As printed, with an auxiliary variable ``gamma`` (length G):
        ``[x >= 0, x <= gamma[group], S gamma == s r]``, S the B x G block indicator."""
        import cvxpy as cp

        gamma = cp.Variable(self.n_groups, name="gamma")
        return [x >= 0, x <= _indicator(self.group, self.n_groups).T @ gamma,
                _indicator(self.block, self.n_blocks) @ gamma == _bound(self.radius, self.scale)]
