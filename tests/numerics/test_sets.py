"""The contract of cvxrank.numerics.sets: every set's projection against CVXPY, and its violation.

**The comparison.** For a set S and a point v, with ``p = S.project(v)`` and

    sigma = max(1, ||v||_inf, b),

b the largest finite (scaled) bound of S (box bounds, totals, radius) -- the larger of the
point's and the set's magnitudes, since the projection of a small point onto a set far from
the origin is as large as the set -- the test asserts

1. ``S.violation(p) <= 1e-14 sigma m``: p is in S, to rounding;
2. ``||p - Pi_S(v)||_2 <= 1e-9 sigma``, certified by CVXPY (below);
3. ``||p - p_cvxpy||_inf <= 1e-4 sigma``, with ``p_cvxpy`` CVXPY's own projection
   (minimize ``||z - v||^2`` subject to ``S.constraints(z)``, Clarabel at the reference
   settings, gap and feasibility tolerances 1e-10).

**Why 2 is a certificate and not a comparison with p_cvxpy.** Clarabel's point is only as
accurate as the square root of its gap when the projection is *degenerate*: a constraint
active with multiplier 0, i.e. v on the boundary of S, which is exactly what ties, zeros,
mixed magnitudes and points already in S produce. There it is off by 1e-6 to 1e-5 sigma at a
1e-10 gap (3e-7 at 1e-12; tighter tolerances end ``optimal_inaccurate``; OSQP's polishing
and HiGHS's QP solver were no more exact), so no CVXPY point is a 1e-9 reference, whatever
the units. Optimal *values* of convex problems, though, are accurate to the tolerance. So
CVXPY finds KKT multipliers for p: with the gradients ``J`` of S's CVXPY constraints at p
(``Expression.grad``; for the inequalities, those active at p, to 1e-12 sigma), Clarabel
solves the LP ``min ||(v - p) - J_ineq y - J_eq mu||_inf`` over ``y >= 0``, and
``r = (v - p) - J_ineq y - J_eq mu`` is recomputed in numpy. Then p satisfies the KKT
conditions of the projection of ``v - r``, so ``p = Pi_S(v - r)`` (to the 1e-12 sigma of
the active set), and since projections are 1-Lipschitz, ``||p - Pi_S(v)|| <= ||r||``: a
bound linear in the LP's accuracy. Where S's constraints do not describe the normal cone by
gradients (the ball of radius 0, whose gradient at 0 is 0), p is compared with
``p_cvxpy`` at 1e-9 sigma instead (Clarabel is exact on a single point). The CVXPY problems
are solved in units of sigma (variables, objective and constraints divided by sigma, so
their data are of order 1), since Clarabel's tolerances are absolute or relative to the
data, and a point that CVXPY finds in S (violation at most 1e-13 sigma) is its own
``p_cvxpy``.

Points are drawn by hypothesis: random, with ties (values from a pool of three), with mixed
magnitudes (each coordinate times 10^k, k from -8 to 8), already in the set, on one-element
groups and with totals or radii of 0.

Violations are checked against CVXPY's own measure of the same constraints
(``Constraint.violation()``), which is independent of the set's ``violation``.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from cvxpy.constraints import Inequality
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cvxrank.certificates.reference import SOLVER_OPTIONS
from cvxrank.formulations.base import HyperParameter
from cvxrank.numerics.sets import (
    Box,
    BoxEqualSums,
    CappedSimplex,
    ConvexSet,
    L2Ball,
    Simplex,
    SumBand,
)
from cvxrank.tolerances import EXPRESSION_MATCH

# Clarabel warns on optimal_inaccurate, accepted for the coarse point comparison only.
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")

#: ||p - Pi_S(v)||_2 <= PROJECTION_MATCH * sigma, certified (module docstring).
PROJECTION_MATCH = 1e-9

#: ||p - p_cvxpy||_inf <= CLARABEL_POINT * sigma: Clarabel's point at degenerate projections
#: is off by up to about the square root of its 1e-10 gap (1.2e-5 sigma seen), hence 1e-4.
CLARABEL_POINT = 1e-4

#: Powers of ten for magnitudes: tiny, unit and huge.
MAGNITUDES = [10.0**k for k in range(-8, 9, 2)]

KINDS = ["box", "orthant", "upper-only", "box-equal-sums", "simplex", "capped-simplex",
         "sum-band", "l2-ball"]

unit = st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False)
nonneg = st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False)
magnitude = st.sampled_from(MAGNITUDES)
scale = st.sampled_from([0.1, 1.0, 7.3])


def bound_size(s: ConvexSet) -> float:
    """The largest finite scaled bound of ``s`` (the set's magnitude b)."""
    parts = {Box: ("lower", "upper"), BoxEqualSums: ("upper",), Simplex: ("total",),
             CappedSimplex: ("total",), SumBand: ("lower", "total"),
             L2Ball: ("radius",)}[type(s)]
    values = np.concatenate([np.ravel(getattr(s, k)) for k in parts])
    return float(s.scale) * float(np.abs(values[np.isfinite(values)]).max(initial=0.0))


@st.composite
def labels(draw: st.DrawFn, *, both_signs: bool) -> tuple[np.ndarray, np.ndarray]:
    """Shuffled group labels (one-element groups allowed) and, optionally, signs with both
    signs in every group."""
    n_groups = draw(st.integers(1, 3))
    group, sign = [], []
    for g in range(n_groups):
        if both_signs:
            n_plus, n_minus = draw(st.integers(1, 3)), draw(st.integers(1, 3))
            group += [g] * (n_plus + n_minus)
            sign += [1.0] * n_plus + [-1.0] * n_minus
        else:
            size = draw(st.integers(1, 4))
            group += [g] * size
            sign += [1.0] * size
    order = np.array(draw(st.permutations(range(len(group)))), dtype=np.int64)
    return np.array(group, dtype=np.int64)[order], np.array(sign)[order]


@st.composite
def sets(draw: st.DrawFn, kind: str) -> ConvexSet:
    """A set of the given kind with bounds of a random magnitude (and a random scale)."""
    size = draw(magnitude)
    s = draw(scale)
    if kind in ("box", "orthant", "upper-only"):
        m = draw(st.integers(1, 8))
        lower = draw(arrays(np.float64, m, elements=unit)) * size
        width = draw(arrays(np.float64, m, elements=nonneg)) * size  # 0: a single point
        if kind == "box":
            scalar = draw(st.booleans())
            return Box(float(lower[0]) if scalar else lower,
                       float(lower[0] + width[0]) if scalar else lower + width, scale=s)
        if kind == "orthant":
            return Box(0.0 if draw(st.booleans()) else lower, np.inf, scale=s)
        return Box(-np.inf, lower + width, scale=s)
    if kind == "box-equal-sums":
        group, sign = draw(labels(both_signs=True))
        if draw(st.booleans()):
            upper = draw(st.floats(0.01, 3.0)) * size
        else:
            upper = draw(arrays(np.float64, group.size, elements=st.floats(0.01, 3.0))) * size
        return BoxEqualSums(group, sign, upper, scale=s)
    if kind == "sum-band":
        group, _ = draw(labels(both_signs=False))
        total = draw(nonneg) * size
        return SumBand(group, total * draw(st.sampled_from([0.0, 0.5, 1.0])), total, scale=s)
    if kind in ("simplex", "capped-simplex"):
        group, _ = draw(labels(both_signs=False))
        n_groups = int(group.max()) + 1
        total_of = st.one_of(st.just(0.0), nonneg)
        if draw(st.booleans()):
            total = draw(total_of) * size
        else:
            total = draw(arrays(np.float64, n_groups, elements=total_of)) * size
        cls = Simplex if kind == "simplex" else CappedSimplex
        return cls(group, total, scale=s)
    assert kind == "l2-ball"
    return L2Ball(draw(st.one_of(st.just(0.0), nonneg)) * size, scale=s)


def dimension(s: ConvexSet, draw: st.DrawFn) -> int:
    if isinstance(s, Box):
        bounds = [b for b in (s.lower, s.upper) if np.ndim(b) == 1]
        return bounds[0].size if bounds else draw(st.integers(1, 8))
    if isinstance(s, L2Ball):
        return draw(st.integers(1, 8))
    return s.size


@st.composite
def points(draw: st.DrawFn, s: ConvexSet) -> np.ndarray:
    """A point to project: random, tied, of mixed magnitudes, or already in the set."""
    m = dimension(s, draw)
    shape = draw(st.sampled_from(["random", "ties", "mixed", "feasible"]))
    size = draw(magnitude)
    if shape == "ties":
        pool = draw(arrays(np.float64, 3, elements=unit))
        v = pool[draw(arrays(np.int64, m, elements=st.integers(0, 2)))] * size
    elif shape == "mixed":
        powers = draw(arrays(np.float64, m, elements=st.sampled_from(MAGNITUDES)))
        v = draw(arrays(np.float64, m, elements=unit)) * powers
    else:
        v = draw(arrays(np.float64, m, elements=unit)) * size
    if shape == "feasible":
        v = s.project(v)  # only an input: in the set up to rounding if project is right
    return v


def sigma_of(s: ConvexSet, v: np.ndarray) -> float:
    """max(1, ||v||_inf, b), the scale of the comparisons."""
    return max(1.0, float(np.abs(v).max()), bound_size(s))


def cvxpy_projection(s: ConvexSet, v: np.ndarray) -> np.ndarray:
    """argmin ||z - v||^2 over S's CVXPY constraints (Clarabel, in units of sigma: variable,
    objective and each constraint divided by sigma); v itself when CVXPY finds v in S."""
    sigma = sigma_of(s, v)
    if cvxpy_violation(s, v) <= 1e-13 * sigma:
        return v
    z = cp.Variable(v.size)
    constraints = [c.expr / sigma <= 0 if isinstance(c, Inequality) else c.expr / sigma == 0
                   for c in s.constraints(sigma * z)]
    problem = cp.Problem(cp.Minimize(cp.sum_squares(z - v / sigma)), constraints)
    try:
        problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    except cp.SolverError:  # Clarabel gave up on this instance: ECOS, an independent one
        problem.solve(solver="ECOS", **SOLVER_OPTIONS["ECOS"])
    # optimal_inaccurate happens when S is tiny against sigma (a box of width 1e-10 sigma):
    # the point is then still well within the CLARABEL_POINT comparison
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), problem.status
    return sigma * z.value


def kkt_residual(s: ConvexSet, v: np.ndarray, p: np.ndarray) -> float | None:
    """||r||_2 for the multipliers CVXPY finds for p (module docstring), or None when S's
    constraints do not give its normal cone at p by their gradients."""
    sigma = sigma_of(s, v)
    x = cp.Variable(v.size)
    x.value = p
    inequality, equality = [], []
    for c in s.constraints(x):
        jacobian = c.expr.grad[x]  # (m, k), or a number when m = k = 1
        jacobian = (jacobian.toarray() if sp.issparse(jacobian)
                    else np.asarray(jacobian, dtype=float).reshape(v.size, -1))
        if not isinstance(c, Inequality):
            equality.append(jacobian)
            continue
        active = np.ravel(c.expr.value) >= -1e-12 * sigma
        if not c.expr.is_affine() and np.any(active) and not np.any(jacobian[:, active]):
            return None
        inequality.append(jacobian[:, active])
    J_in = np.hstack([np.zeros((v.size, 0)), *inequality])
    J_eq = np.hstack([np.zeros((v.size, 0)), *equality])
    d = (v - p) / sigma
    y, mu = cp.Variable(J_in.shape[1], nonneg=True), cp.Variable(J_eq.shape[1])
    residual = d - (J_in @ y if J_in.size else 0) - (J_eq @ mu if J_eq.size else 0)
    if not isinstance(residual, cp.Expression):
        return sigma * float(np.linalg.norm(d))
    problem = cp.Problem(cp.Minimize(cp.norm_inf(residual)))
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), problem.status
    r = d.copy()
    if J_in.size:
        r -= J_in @ np.maximum(y.value, 0.0)
    if J_eq.size:
        r -= J_eq @ mu.value
    return sigma * float(np.linalg.norm(r))


def cvxpy_violation(s: ConvexSet, v: np.ndarray) -> float:
    """CVXPY's largest violation of the set's constraints at v."""
    x = cp.Variable(v.size)
    x.value = v
    return max(float(np.max(c.violation())) for c in s.constraints(x))


# -- the contract: the projection, certified by CVXPY and against CVXPY's ----------------------
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_projection_is_certified_by_cvxpy(kind: str, data: st.DataObject) -> None:
    s = data.draw(sets(kind))
    v = data.draw(points(s))
    sigma = sigma_of(s, v)
    p = s.project(v)
    assert p.shape == v.shape
    assert s.violation(p) <= 1e-14 * sigma * v.size
    reference = cvxpy_projection(s, v)
    residual = kkt_residual(s, v, p)
    if residual is None:
        assert np.abs(p - reference).max() <= PROJECTION_MATCH * sigma
    else:
        assert residual <= PROJECTION_MATCH * sigma
    assert np.abs(p - reference).max() <= CLARABEL_POINT * sigma
    # no closer point in the set: CVXPY's point may be outside by its own tolerance, which
    # can bring it closer to v (a box of width 1e-4 around a point at 6e5, seen)
    slack = np.sqrt(v.size) * s.violation(reference)
    assert np.linalg.norm(p - v) <= (np.linalg.norm(reference - v) + slack
                                     + PROJECTION_MATCH * sigma)
    # idempotent, to rounding
    assert np.abs(s.project(p) - p).max() <= 1e-14 * sigma * v.size


def test_the_certificate_rejects_a_wrong_projection() -> None:
    # the KKT residual must see an error far below Clarabel's point accuracy
    box = Box(0.0, np.array([1.0, 2.0, 3.0]))
    v = np.array([-1.0, 0.5, 7.0])
    p = box.project(v)
    assert kkt_residual(box, v, p) <= PROJECTION_MATCH
    assert kkt_residual(box, v, p + np.array([0.0, 1e-7, 0.0])) >= 0.9e-7
    simplex = Simplex(np.array([0, 0, 0]), 1.0)
    v = np.array([0.2, 0.9, -0.4])
    p = simplex.project(v)
    np.testing.assert_allclose(p, [0.15, 0.85, 0.0], rtol=0, atol=1e-15)
    moved = p + np.array([1e-7, -1e-7, 0.0])
    assert simplex.violation(moved) <= 1e-15
    assert kkt_residual(simplex, v, moved) >= 1e-7


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_violation_equals_cvxpy_constraint_violation(kind: str, data: st.DataObject) -> None:
    s = data.draw(sets(kind))
    v = data.draw(points(s))
    sigma = sigma_of(s, v)
    assert s.violation(v) == pytest.approx(cvxpy_violation(s, v), rel=EXPRESSION_MATCH,
                                           abs=1e-15 * sigma)
    assert s.violation(v) >= 0.0


def test_violation_is_zero_exactly_in_the_set_and_positive_outside() -> None:
    group = np.array([0, 0, 1])
    cases = [
        (Box(0.0, np.array([1.0, 2.0, 3.0])), np.array([0.0, 2.0, 1.5]), [0, 0, 3.5], 0.5),
        (Box(0.0, np.inf), np.array([0.0, 5.0, 1e9]), [0, -1, 0], 1.0),
        (BoxEqualSums(group[:2], np.array([1.0, -1.0]), 2.0), np.array([1.5, 1.5]), [2.5, 1.5],
         1.0),
        (Simplex(group, np.array([1.0, 0.0])), np.array([0.25, 0.75, 0.0]), [0.25, 0.75, 0.5],
         0.5),
        (CappedSimplex(group, 1.0), np.array([0.25, 0.5, 1.0]), [0.5, 0.75, 0.0], 0.25),
        (L2Ball(5.0), np.array([3.0, 4.0, 0.0]), [3.0, 4.0, 12.0], 8.0),
    ]
    for s, inside, outside, expected in cases:
        assert s.violation(inside) == 0.0
        np.testing.assert_array_equal(s.project(inside), inside)
        assert s.violation(np.array(outside, dtype=float)) == pytest.approx(expected)


# -- bounds scaled by a hyper-parameter: DPP, live values ---------------------------------------
@pytest.mark.parametrize("make", [
    lambda C: Box(0.0, np.array([1.0, 2.0, 0.5, 1.0]), scale=C),
    lambda C: BoxEqualSums(np.array([0, 0, 1, 1]), np.array([1.0, -1.0, -1.0, 1.0]), 1.0,
                           scale=C),
    lambda C: Simplex(np.array([0, 1, 1, 1]), np.array([1.0, 2.0]), scale=C),
    lambda C: CappedSimplex(np.array([0, 0, 1, 1]), 1.0, scale=C),
    lambda C: SumBand(np.array([0, 0, 1, 1]), 0.5, 1.0, scale=C),
    lambda C: L2Ball(1.0, scale=C),
])
def test_scaled_bounds_follow_the_hyper_parameter_without_recompiling(make) -> None:
    C = HyperParameter("C", 0.3)
    s = make(C)
    v = np.array([2.0, -1.0, 0.7, 3.0])
    v_par = cp.Parameter(4)
    z = cp.Variable(4)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(z - v_par)), s.constraints(z))
    assert problem.is_dcp(dpp=True)
    v_par.value = v
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    compiled = problem._cache.param_prog
    first = s.project(v)
    np.testing.assert_allclose(first, z.value, atol=PROJECTION_MATCH * 4)
    C.assign(2.5)  # the set reads the new value; the compiled problem is re-solved
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert problem._cache.param_prog is compiled
    second = s.project(v)
    np.testing.assert_allclose(second, z.value, atol=PROJECTION_MATCH * 4)
    assert np.abs(second - first).max() > 0.1
    np.testing.assert_allclose(second, make(2.5).project(v), rtol=0, atol=1e-15)


# -- bad input ------------------------------------------------------------------------------------
def test_bad_sets_and_points_are_refused() -> None:
    group, sign = np.array([0, 0, 1, 1]), np.array([1.0, -1.0, 1.0, -1.0])
    with pytest.raises(ValueError, match="group 1 lacks"):
        BoxEqualSums(group, np.array([1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="upper bounds must be finite and > 0"):
        BoxEqualSums(group, sign, 0.0)
    with pytest.raises(ValueError, match="sign"):
        BoxEqualSums(group, 2 * sign)
    with pytest.raises(ValueError, match="one length"):
        BoxEqualSums(group[:3], sign)
    with pytest.raises(ValueError, match="group 1 is empty"):
        Simplex(np.array([0, 2, 2]))
    with pytest.raises(ValueError, match="non-negative integers"):
        Simplex(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="total must be finite and >= 0"):
        CappedSimplex(np.array([0, 1]), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="lower bound must be <="):
        Box(np.array([0.0, 2.0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="upper must be finite or inf"):
        Box(0.0, -np.inf)
    with pytest.raises(ValueError, match="1-D and finite"):
        Box(0.0, np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="radius"):
        L2Ball(-1.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        Box(0.0, 1.0, scale=0.0)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        BoxEqualSums(group, sign).project(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        Simplex(group).project(np.array([0.0, np.nan, 1.0, 2.0]))
    # per-coordinate bounds: one group, z = (2, 1.5) -> (1.75, 1.75) balances both sides
    out = BoxEqualSums(np.array([0, 0]), np.array([1.0, -1.0]), np.array([10.0, 10.0])).project(
        np.array([2.0, 1.5]))
    np.testing.assert_allclose(out, [1.75, 1.75])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_ball_projects_columns_as_it_projects_each(data: st.DataObject) -> None:
    # badly scaled columns (1e-300 .. 1e300) and zero columns: the norm neither overflows nor
    # underflows, and each column is the vector projection within rounding
    rows, cols = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 5))
    scales = data.draw(st.lists(st.sampled_from([0.0, 1e-300, 1e-8, 1.0, 1e8, 1e300]),
                                min_size=cols, max_size=cols))
    seed = data.draw(st.integers(0, 2**32 - 1))
    V = np.random.default_rng(seed).normal(size=(rows, cols)) * np.array(scales)
    ball = L2Ball(data.draw(st.sampled_from([0.0, 0.5, 3.0])), scale=2.0)
    out = ball.project_columns(V)
    for k in range(cols):
        np.testing.assert_allclose(out[:, k], ball.project(V[:, k]), rtol=1e-14, atol=0.0)
    with pytest.raises(ValueError, match="2-D"):
        ball.project_columns(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        ball.project_columns(np.full((2, 2), np.inf))
