"""Exact Euclidean projections onto the feasible sets of the duals.

The dual of the fixed-margin ordinal SVM (:mod:`cvxrank.formulations.ocsvm`) has, per
threshold, a box and one equality between two sums of multipliers; :func:`project_box_equal_sums`
projects onto the product of such sets exactly, by sorting breakpoints, without a loop over
groups or coordinates.
"""

from __future__ import annotations

import numpy as np


def project_box_equal_sums(
    v: np.ndarray,
    group: np.ndarray,
    sign: np.ndarray,
    upper: float | np.ndarray,
) -> np.ndarray:
    r"""Euclidean projection onto boxes with one balanced-sum equality per group.

    Computes

    .. math::

        \Pi(v) = \arg\min_z \tfrac12 \|z - v\|^2 \quad \text{s.t.} \quad
        0 \le z_k \le u_k, \qquad
        \sum_{k \in g,\, \sigma_k = +1} z_k = \sum_{k \in g,\, \sigma_k = -1} z_k
        \ \text{ for every group } g,

    i.e. :math:`\sum_{k \in g} \sigma_k z_k = 0`. The problem separates over groups. For one
    group the KKT conditions give :math:`z_k(\lambda) = \min(u_k, \max(0, v_k - \sigma_k
    \lambda))` with the multiplier :math:`\lambda` a root of the non-increasing, piecewise
    linear :math:`h(\lambda) = \sum_k \sigma_k z_k(\lambda)`, which falls from
    :math:`\sum_{\sigma_k = +1} u_k > 0` to :math:`-\sum_{\sigma_k = -1} u_k < 0`. Term
    :math:`k` is strictly between its bounds for :math:`\lambda` in an interval of length
    :math:`u_k`, on which it adds -1 to the slope of :math:`h`. All :math:`2m` interval ends
    are sorted (per group, in one ``lexsort``); cumulative sums of the slopes locate the
    segment on which :math:`h` changes sign, and on that segment, with :math:`A` the
    coordinates strictly inside their box and :math:`T` those at their upper bound,

    .. math::

        \lambda^\star = \frac{\sum_{k \in T} \sigma_k u_k + \sum_{k \in A} \sigma_k v_k}{|A|}

    is the exact root, computed afresh from the active sets (the cumulative sums only
    bracket it). Cost: :math:`O(m \log m)` for :math:`m` coordinates.

    Parameters
    ----------
    v : array of shape (m,)
        The point to project.
    group : int array of shape (m,)
        Group of each coordinate, in ``0 .. G-1``; every group must hold at least one
        coordinate of each sign (a group with one sign only would make its set the single
        point 0, which this function does not treat).
    sign : array of shape (m,)
        :math:`\sigma_k \in \{-1, +1\}`.
    upper : float or array of shape (m,)
        Upper bounds :math:`u_k > 0` (finite).

    Returns
    -------
    ndarray of shape (m,)
        The projection; it satisfies the bounds exactly and each equality up to rounding
        (:math:`|\sum_{k \in g} \sigma_k z_k| \lesssim \varepsilon \sum_{k \in g} u_k`).

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite ``v``, a sign other than +-1, a bound that is not
        finite and positive, or a group without both signs.

    References
    ----------
    .. [1] P. Brucker, "An O(n) algorithm for quadratic knapsack problems", Operations
       Research Letters 3(3), 1984 (the breakpoint search for one equality and a box).
    .. [2] K. C. Kiwiel, "Breakpoint searching algorithms for the continuous quadratic
       knapsack problem", Math. Programming 112, 2008.
    """
    v = np.asarray(v, dtype=np.float64)
    group = np.asarray(group)
    sign = np.asarray(sign, dtype=np.float64)
    m = v.shape[0] if v.ndim == 1 else -1
    if v.ndim != 1 or group.shape != (m,) or sign.shape != (m,):
        raise ValueError(f"v, group and sign must be 1-D of one length, got shapes {v.shape}, "
                         f"{group.shape}, {sign.shape}")
    if m == 0:
        return v.copy()
    if not np.issubdtype(group.dtype, np.integer) or group.min() < 0:
        raise ValueError("group must hold non-negative integers")
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite")
    if not np.all(np.abs(sign) == 1.0):
        raise ValueError("sign must hold only -1 and +1")
    u = np.broadcast_to(np.asarray(upper, dtype=np.float64), (m,))
    if not np.all(np.isfinite(u) & (u > 0)):
        raise ValueError("upper bounds must be finite and > 0")
    n_groups = int(group.max()) + 1
    plus = sign > 0
    n_plus = np.bincount(group, weights=plus, minlength=n_groups)
    n_minus = np.bincount(group, weights=~plus, minlength=n_groups)
    lacking = np.flatnonzero((n_plus == 0) | (n_minus == 0))
    if lacking.size:
        raise ValueError(f"group {lacking[0]} lacks coordinates of one sign; every group "
                         f"0 .. {n_groups - 1} needs both signs")

    # Term k is strictly inside its box for lo_k < lambda < hi_k.
    lo = np.where(plus, v - u, -v)
    hi = np.where(plus, v, u - v)
    points = np.concatenate([lo, hi])
    slope_change = np.concatenate([-np.ones(m, dtype=np.int64), np.ones(m, dtype=np.int64)])
    owner = np.concatenate([group, group])
    order = np.lexsort((points, owner))  # by group, then breakpoint; stable (lo before hi)
    ev_point, ev_group = points[order], owner[order]
    # slope of h just right of each event; it is back to 0 at the end of every group, so one
    # running sum serves all groups
    slope = np.cumsum(slope_change[order])
    increment = np.zeros(2 * m)
    increment[1:] = slope[:-1] * np.diff(ev_point)
    running = np.cumsum(increment)
    start = np.searchsorted(ev_group, np.arange(n_groups))
    h_start = np.bincount(group, weights=np.where(plus, u, 0.0), minlength=n_groups)
    h = h_start[ev_group] + (running - running[start[ev_group]])
    # first event of each group with h <= 0; the group's last event always qualifies, since
    # h there is -sum of the minus-side bounds < 0 (forced, in case rounding hid it)
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
