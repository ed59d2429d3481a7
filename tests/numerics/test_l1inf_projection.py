"""The projection onto the l1,inf ball intersected with the orthant
(``cvxrank.numerics.sets.L1InfBall``).

The contract of ``tests/numerics/test_sets.py``, adapted to a set whose CVXPY constraints carry an
auxiliary variable (the caps ``gamma`` of RankMM-3's printed dual, Agarwal & Collins 2010,
Sect. 3.3), which its constraint-gradient LP cannot see. For 1000 seeded random inputs
(blocks, groups and one-element groups of several sizes, radii including 0, mixed signs,
ties, points already in the set or in it after clipping, magnitudes 1e-8 ... 1e8), with
``p = S.project(v)`` and ``sigma = max(1, ||v||_inf, s max_b r_b)``:

1. ``S.violation(p) <= 1e-14 sigma m``;
2. ``||p - Pi_S(v)||_2 <= 1e-9 sigma``, certified by KKT multipliers that CVXPY finds for p
   (below);
3. ``||p - p_cvxpy||_inf <= 1e-4 sigma``, ``p_cvxpy`` CVXPY's own projection (Clarabel,
   tolerances 1e-10, in units of sigma), which is only as accurate as the square root of
   its gap at degenerate projections (see ``tests/numerics/test_sets.py``);
4. for the first 200 inputs of at most 40 coordinates, ``||p - Pi_S(v)||_inf <= 1e-15 sigma
   m`` against the projection computed in exact rational arithmetic (``fractions``: the
   threshold by bisection to 2^-120, then the caps), independently of the set's algorithm.

The CVXPY problems (the projection and the certificate's LP) are solved for batches of 100
inputs at once: the set is a product over blocks, so the inputs, each in units of its own
sigma, stack into one set.

**The certificate.** The projection of v is the z-part of the solution of
``min 1/2 ||z - v||^2`` over ``0 <= z_j <= gamma_g(j)``, ``sum_{g in b} gamma_g = s r_b``.
At p, take ``gamma_g = max_{j in g} p_j`` in the blocks whose budget is spent
(``sum_g gamma_g >= s r_b - 1e-12 sigma``). KKT multipliers are ``rho >= 0`` on the caps
active at p (``p_j >= gamma_g - 1e-12 sigma``, spent blocks only), ``nu >= 0`` on the
zeros active at p (``p_j <= 1e-12 sigma``) and ``theta_b`` per spent block, with
``sum_{j in g} rho_j = theta_b`` for every group of block b (the stationarity in gamma; a
block with budget left has ``theta_b = 0``, hence no rho). Clarabel solves the LP
``min ||(v - p) - rho + nu||_inf`` over them (one LP for a batch of inputs: its objective
is the sum of the per-input norms, so it separates). In numpy, the multipliers are then
made exactly admissible (clipped at 0, ``theta_b`` raised to the largest group sum of rho
in its block, each group's deficit added to one of its active caps: changes of the order of
the LP's feasibility error), and ``r = (v - p) - rho + nu`` is recomputed. p then satisfies
the KKT conditions of the projection of ``v - r`` (to the 1e-12 sigma of the active sets),
so ``p = Pi_S(v - r)`` and, projections being 1-Lipschitz, ``||p - Pi_S(v)|| <= ||r||``.
Unlike the gradients of ``test_sets.py``, this also covers radius 0 (every cap and every
zero active).

``project`` is the compiled Newton kernel (``cvxrank.numerics.l1inf_kernels``, loaded by a fixture
before any test): the checks above certify it. The sort-based ``project_sorted``, which a
process runs until it loads the kernel and where the kernel reaches its step limit, is
checked against it to rounding on the same inputs, and so are the switch between them and
the fallback.

The paper's order (project onto the ball, then clip) is checked against the
characterisation of ``L1InfBall``'s Notes: where it is the projection and where not, by
how much, and that it stays feasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import install_clock

from cvxrank.certificates.reference import SOLVER_OPTIONS
from cvxrank.compiled import aot
from cvxrank.formulations.base import HyperParameter
from cvxrank.numerics import l1inf_kernels, sets
from cvxrank.numerics.sets import L1InfBall, L1InfLayout, project_l1inf_nonneg

# Clarabel warns on optimal_inaccurate, accepted for the coarse point comparison only.
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")

#: ||p - Pi_S(v)||_2 <= PROJECTION_MATCH * sigma, certified (module docstring).
PROJECTION_MATCH = 1e-9

#: ||p - p_cvxpy||_inf <= CLARABEL_POINT * sigma (Clarabel's point at degenerate projections).
CLARABEL_POINT = 1e-4

#: Clarabel's settings for the certificate's LP: tighter than the reference settings (the
#: stacked LP's objective is a sum over a batch); any status with a point is fine, since the
#: certificate is recomputed in numpy from multipliers made exactly admissible.
LP_OPTIONS = {"tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13, "tol_feas": 1e-13, "max_iter": 500}

#: Active-set tolerance of the certificate, in units of sigma.
ACTIVE = 1e-12

N_INPUTS = 1000

#: Inputs per CVXPY problem: Clarabel's accuracy is relative to the whole (stacked) problem,
#: and 1000 inputs in one LP left a certificate at 1.02e-9 sigma for an exact point.
BATCH = 100

POINT_KINDS = ("random", "ties", "mixed", "feasible", "clipped-feasible", "negative", "zeros")


@dataclass
class Case:
    """One input: the set, the point, its projection and the comparison scale."""

    s: L1InfBall
    v: np.ndarray
    p: np.ndarray
    sigma: float
    kind: str


def random_set(rng: np.random.Generator, *, large: bool = False) -> L1InfBall:
    """Shuffled labels of 1-3 blocks (1-4 groups of 1-5 coordinates; up to 30 x 20 if
    ``large``), a scalar or per-block radius (0 allowed) of a random magnitude, a scale."""
    n_blocks = int(rng.integers(1, 4))
    groups_per_block = rng.integers(1, 31 if large else 5, n_blocks)
    n_groups = int(groups_per_block.sum())
    block = np.repeat(np.arange(n_blocks), groups_per_block)
    sizes = rng.integers(1, 21 if large else 6, n_groups)
    group = np.repeat(np.arange(n_groups), sizes)
    # shuffled labels: relabel groups and blocks, and permute the coordinates
    group_label = rng.permutation(n_groups)
    block_label = rng.permutation(n_blocks)
    group = rng.permutation(group_label[group])
    block = block_label[block][np.argsort(group_label)]
    size = 10.0 ** rng.integers(-8, 9)
    radius_of = lambda k: np.where(rng.random(k) < 0.15, 0.0, rng.uniform(0, 3, k)) * size  # noqa: E731
    radius = float(radius_of(1)[0]) if rng.random() < 0.5 else radius_of(n_blocks)
    return L1InfBall(group, block, radius, scale=float(rng.choice([0.1, 1.0, 7.3])))


def random_point(rng: np.random.Generator, s: L1InfBall, kind: str) -> np.ndarray:
    """A point to project of the given kind (``POINT_KINDS``)."""
    m = s.size
    size = 10.0 ** rng.integers(-8, 9)
    if kind == "ties":
        return rng.uniform(-3, 3, 3)[rng.integers(0, 3, m)] * size
    if kind == "mixed":
        return rng.uniform(-3, 3, m) * 10.0 ** rng.integers(-8, 9, m)
    if kind == "zeros":  # many exact zeros, some negative zeros
        return np.where(rng.random(m) < 0.6, rng.choice([0.0, -0.0], m), rng.normal(size=m))
    v = rng.uniform(-3, 3, m) * size
    if kind == "negative":
        return -np.abs(v)
    if kind == "feasible":
        return s.project(v)  # only an input: in the set up to rounding if project is right
    if kind == "clipped-feasible":  # in the set once its negative coordinates are set to 0
        return np.where(rng.random(m) < 0.4, -np.abs(v), s.project(v))
    return v


def sigma_of(s: L1InfBall, v: np.ndarray) -> float:
    """max(1, ||v||_inf, s max r), the scale of the comparisons."""
    return max(1.0, float(np.abs(v).max()), float(s.scale) * float(np.max(s.radius)))


def make_cases(seed: int, n: int, *, large_every: int = 25) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        s = random_set(rng, large=i % large_every == 0)
        kind = POINT_KINDS[i % len(POINT_KINDS)]
        v = random_point(rng, s, kind)
        cases.append(Case(s, v, s.project(v), sigma_of(s, v), kind))
    return cases


def stacked(cases: list[Case]) -> tuple[L1InfBall, np.ndarray, np.ndarray, np.ndarray]:
    """One set for all the cases in units of their sigma (the set is a product over
    blocks), the stacked v / sigma, and the case of each coordinate and of each block."""
    groups, blocks, radii, vs, owner, block_owner = [], [], [], [], [], []
    n_groups = n_blocks = 0
    for i, c in enumerate(cases):
        s = c.s
        groups.append(s.group + n_groups)
        blocks.append(s.block + n_blocks)
        radii.append(s._budgets() / c.sigma)
        vs.append(c.v / c.sigma)
        owner.append(np.full(s.size, i))
        block_owner.append(np.full(s.n_blocks, i))
        n_groups += s.n_groups
        n_blocks += s.n_blocks
    big = L1InfBall(np.concatenate(groups), np.concatenate(blocks), np.concatenate(radii))
    return big, np.concatenate(vs), np.concatenate(owner), np.concatenate(block_owner)


def cvxpy_projections(cases: list[Case]) -> list[np.ndarray]:
    """CVXPY's projection of every case (one problem, in units of sigma)."""
    big, v, owner, _ = stacked(cases)
    z = cp.Variable(v.size)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(z - v)), big.constraints(z))
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), problem.status
    return [c.sigma * z.value[owner == i] for i, c in enumerate(cases)]


def kkt_residuals(cases: list[Case], points: list[np.ndarray] | None = None) -> np.ndarray:
    """||r||_2 of the certificate (module docstring) of each case's point (``c.p`` unless
    ``points`` are given)."""
    points = [c.p for c in cases] if points is None else points
    big, v, owner, block_owner = stacked(cases)
    sigma = np.array([c.sigma for c in cases])
    p = np.concatenate(points) / sigma[owner]
    d = v - p
    group, block, m = big.group, big.block, big.size
    cap = np.zeros(big.n_groups)
    np.maximum.at(cap, group, p)
    spent = np.bincount(block, weights=cap, minlength=big.n_blocks) >= big._budgets() - ACTIVE
    on_cap = np.flatnonzero(spent[block[group]] & (p >= cap[group] - ACTIVE))
    at_zero = np.flatnonzero(p <= ACTIVE)
    spent_blocks = np.flatnonzero(spent)
    n_cap, n_zero, n_theta = on_cap.size, at_zero.size, spent_blocks.size
    P_cap = sp.csr_matrix((np.ones(n_cap), (on_cap, np.arange(n_cap))), shape=(m, n_cap))
    P_zero = sp.csr_matrix((np.ones(n_zero), (at_zero, np.arange(n_zero))), shape=(m, n_zero))
    # sum_{j in g} rho_j - theta_b(g) = 0 for every group of a spent block
    spent_groups = np.flatnonzero(spent[block])
    row = np.full(big.n_groups, -1)
    row[spent_groups] = np.arange(spent_groups.size)
    theta_column = np.full(big.n_blocks, -1)
    theta_column[spent_blocks] = np.arange(n_theta)
    sums = sp.csr_matrix((np.ones(n_cap), (row[group[on_cap]], np.arange(n_cap))),
                         shape=(spent_groups.size, n_cap))
    theta_of = sp.csr_matrix((np.ones(spent_groups.size),
                              (np.arange(spent_groups.size), theta_column[block[spent_groups]])),
                             shape=(spent_groups.size, n_theta))
    rho = cp.Variable(n_cap, nonneg=True)
    nu = cp.Variable(n_zero, nonneg=True)
    theta = cp.Variable(n_theta, nonneg=True)
    bound = cp.Variable(len(cases))
    residual = d - P_cap @ rho + P_zero @ nu
    owner_of = sp.csr_matrix((np.ones(m), (np.arange(m), owner)), shape=(m, len(cases)))
    constraints = [residual <= owner_of @ bound, -residual <= owner_of @ bound]
    if spent_groups.size:
        constraints.append(sums @ rho == theta_of @ theta)
    problem = cp.Problem(cp.Minimize(cp.sum(bound)), constraints)
    problem.solve(solver="CLARABEL", **LP_OPTIONS)
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), problem.status
    # exactly admissible multipliers: rho, nu >= 0, sum_{j in g} rho_j = theta_b
    rho_value = np.maximum(rho.value, 0.0) if n_cap else np.zeros(0)
    nu_value = np.maximum(nu.value, 0.0) if n_zero else np.zeros(0)
    group_sum = np.bincount(group[on_cap], weights=rho_value, minlength=big.n_groups)
    theta_b = np.zeros(big.n_blocks)
    np.maximum.at(theta_b, block, group_sum)
    deficit = theta_b[block] - group_sum
    first_cap = np.full(big.n_groups, -1)
    first_cap[group[on_cap][::-1]] = np.arange(n_cap)[::-1]
    has = spent[block]
    assert np.all(first_cap[has] >= 0)  # every group of a spent block has an active cap
    rho_value[first_cap[has]] += deficit[has]
    r = d - P_cap @ rho_value + P_zero @ nu_value
    return sigma * np.sqrt(np.bincount(owner, weights=r * r, minlength=len(cases)))


def exact_projection(s: L1InfBall, v: np.ndarray) -> np.ndarray:
    """The projection in exact rational arithmetic (independent of the set's algorithm):
    per block, bisection to 2^-120 of the threshold theta of sum_g mu_g(theta) = s r_b,
    each cap mu_g(theta) = the mu >= 0 with sum_{j in g} (a_j - mu)_+ = theta (0 if none),
    z = min(a, mu_g), a = max(v, 0). Small inputs only."""
    a = [Fraction(max(float(x), 0.0)) for x in v]
    members = [np.flatnonzero(s.group == g) for g in range(s.n_groups)]
    values = [sorted((a[j] for j in members[g]), reverse=True) for g in range(s.n_groups)]

    def cap(g: int, theta: Fraction) -> Fraction:
        total = Fraction(0)
        for r, x in enumerate(values[g], start=1):
            total += x
            following = values[g][r] if r < len(values[g]) else Fraction(0)
            if total - r * following >= theta:  # theta on segment r: mu = (S_r - theta) / r
                return max((total - theta) / r, Fraction(0))
        return Fraction(0)

    z = np.zeros(s.size)
    for b, radius in enumerate(s._budgets()):
        groups = np.flatnonzero(s.block == b)
        budget = Fraction(float(radius))
        theta, high = Fraction(0), sum(sum(values[g]) for g in groups)
        if sum(values[g][0] for g in groups) > budget:
            low = Fraction(0)
            for _ in range(120):
                middle = (low + high) / 2
                if sum(cap(g, middle) for g in groups) > budget:
                    low = middle
                else:
                    high = middle
            theta = high
        for g in groups:
            mu = cap(g, theta)
            z[members[g]] = [float(min(a[j], mu)) for j in members[g]]
    return z


def cvxpy_violations(s: L1InfBall, v: np.ndarray) -> tuple[float, np.ndarray, float]:
    """CVXPY's violations of s's constraints at x = v with the caps gamma that minimize the
    largest: ``gamma_g = max_{j in g} v_j + (s r_b - sum_{g in b} max v) / G_b``. Returns
    (violation of x >= 0, per-block largest violation of x <= gamma, of S gamma == s r)."""
    x = cp.Variable(s.size)
    x.value = v
    nonneg, capped, total = s.constraints(x)
    gamma = next(var for var in capped.variables() if var.name() == "gamma")
    group_max = np.full(s.n_groups, -np.inf)
    np.maximum.at(group_max, s.group, v)
    per_block = np.bincount(s.block, minlength=s.n_blocks)
    slack = (s._budgets() - np.bincount(s.block, weights=group_max)) / per_block
    gamma.value = group_max + slack[s.block]
    cap_violation = np.zeros(s.n_blocks)
    np.maximum.at(cap_violation, s.block[s.group], np.ravel(capped.violation()))
    return (float(np.max(nonneg.violation())), cap_violation,
            float(np.max(total.violation())))


def paper_order_is_exact(s: L1InfBall, v: np.ndarray, paper: np.ndarray, tol: float) -> bool:
    """The characterisation of L1InfBall's Notes: the paper's point is the projection iff in
    every block either it keeps a = max(v, 0), or its caps Z spend the whole budget and
    f_g(Z_g) = sum_{j in g} (a_j - Z_g)_+ is one theta > 0 over the groups with Z_g > 0
    (with f_g(0) <= theta for the others)."""
    a = np.maximum(v, 0.0)
    Z = np.zeros(s.n_groups)
    np.maximum.at(Z, s.group, paper)
    f = np.bincount(s.group, weights=np.maximum(a - Z[s.group], 0.0), minlength=s.n_groups)
    f0 = np.bincount(s.group, weights=a, minlength=s.n_groups)
    budgets = s._budgets()
    for b in range(s.n_blocks):
        coords, groups = s.block[s.group] == b, s.block == b
        if np.abs(paper[coords] - a[coords]).max() <= tol:
            continue
        if abs(Z[groups].sum() - budgets[b]) > tol:
            return False
        positive = groups & (Z > tol)
        if not positive.any():  # z' = 0 on the block: any theta >= max_g f_g(0) does
            continue
        theta = f[positive].max()
        if np.ptp(f[positive]) > tol or np.any(f0[groups & ~positive] > theta + tol):
            return False
    return True


# -- the projection: certified, against CVXPY's, feasible ---------------------------------------
@pytest.fixture(scope="module", autouse=True)
def compiled_kernel() -> None:
    """Every projection of this module by the compiled kernel (not the numpy method that a
    process runs before loading it)."""
    l1inf_kernels.warm_up()


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return make_cases(seed=20100, n=N_INPUTS)


def test_inputs_cover_the_hard_shapes(cases: list[Case]) -> None:
    kinds = {c.kind for c in cases}
    assert kinds == set(POINT_KINDS)
    assert any(np.any(np.asarray(c.s.radius) == 0) for c in cases)
    assert any(np.any(np.bincount(c.s.group) == 1) for c in cases)
    assert any(c.s.n_blocks == 3 and c.s.size > 300 for c in cases)
    inside = sum(c.s.violation(np.maximum(c.v, 0.0)) == 0.0 for c in cases)
    assert 50 <= inside <= N_INPUTS - 300  # both points inside (after clipping) and outside
    magnitudes = np.log10([np.abs(c.v).max() for c in cases if np.abs(c.v).max() > 0])
    assert magnitudes.min() < -7 and magnitudes.max() > 7


def test_projection_is_feasible_and_certified(cases: list[Case]) -> None:
    residuals = np.concatenate([kkt_residuals(cases[k:k + BATCH])
                                for k in range(0, len(cases), BATCH)])
    for i, c in enumerate(cases):
        assert c.p.shape == c.v.shape
        assert c.s.violation(c.p) <= 1e-14 * c.sigma * c.v.size, i
        assert residuals[i] <= PROJECTION_MATCH * c.sigma, (i, residuals[i] / c.sigma)
        # idempotent, to rounding
        assert np.abs(c.s.project(c.p) - c.p).max() <= 1e-14 * c.sigma * c.v.size, i


def test_projection_matches_cvxpy(cases: list[Case]) -> None:
    references = [ref for k in range(0, len(cases), BATCH)
                  for ref in cvxpy_projections(cases[k:k + BATCH])]
    for i, (c, ref) in enumerate(zip(cases, references, strict=True)):
        assert np.abs(c.p - ref).max() <= CLARABEL_POINT * c.sigma, i
        # no farther from v than CVXPY's point, which may be outside the set by ~1e-10 sigma
        # (and then closer to v by up to ~1e-9 sigma)
        assert np.linalg.norm(c.p - c.v) <= np.linalg.norm(ref - c.v) + 1e-8 * c.sigma, i


def test_projection_matches_the_exact_rational_projection(cases: list[Case]) -> None:
    # the first 200 inputs with at most 40 coordinates, in exact arithmetic
    small = [c for c in cases if c.s.size <= 40][:200]
    assert len(small) == 200 and {c.kind for c in small} == set(POINT_KINDS)
    for c in small:
        exact = exact_projection(c.s, c.v)
        assert np.abs(c.p - exact).max() <= 1e-15 * c.sigma * c.s.size, (c.kind, c.s, c.v)


def test_the_certificate_rejects_a_wrong_projection() -> None:
    # a projection moved by 1e-7 along the boundary, still in the set
    s = L1InfBall(np.array([0, 0, 1, 1]), None, 1.0)
    v = np.array([2.0, 0.5, 1.5, -1.0])
    p = s.project(v)
    np.testing.assert_allclose(p, [0.75, 0.5, 0.25, 0.0], rtol=0, atol=1e-15)
    case = Case(s, v, p, sigma_of(s, v), "random")
    moved = p + np.array([1e-7, 0.0, -1e-7, 0.0])
    assert s.violation(moved) <= 1e-15
    good, bad = kkt_residuals([case, case], [p, moved])
    assert good <= 1e-11
    assert bad >= 1e-7


def test_the_sort_based_method_gives_the_same_points(cases: list[Case]) -> None:
    # Quattoni et al.'s sorted breakpoints against the Newton kernel: the same caps,
    # thresholds and points to rounding
    for i, c in enumerate(cases):
        s, tol = c.s, 1e-15 * c.sigma * c.v.size
        fast, ref = s.project_with_threshold(c.v), s._layout.project_sorted(c.v, s._budgets())
        assert np.abs(fast.point - ref.point).max() <= tol, i
        assert np.abs(fast.cap - ref.cap).max() <= tol, i
        spent = np.bincount(s.block, weights=ref.cap) >= s._budgets() - tol
        both = spent & (np.bincount(s.group, weights=np.maximum(c.v, 0.0)).max() > tol)
        assert np.all(np.abs(fast.threshold - ref.threshold)[both & (s._budgets() > 0)]
                      <= tol), i


@pytest.mark.parametrize("values", ["geometric", "exponential", "harmonic", "cubes", "ties"])
@pytest.mark.parametrize("per_group", [1, 10, 1000])
def test_the_kernel_converges_on_structured_values(values: str, per_group: int) -> None:
    # values spread over many scales or tied, budgets down to 1e-6 of the norm: the Newton
    # steps (at most 7 on random inputs) stay far below the cap (36 here)
    n = 10_000
    v = {"geometric": 0.999 ** np.arange(n), "exponential": 1.0001 ** np.arange(n),
         "harmonic": 1.0 / np.arange(1, n + 1), "cubes": np.arange(n) ** 3.0,
         "ties": np.repeat([3.0, 2.0, 1.0], n)[:n]}[values]
    layout = L1InfLayout(np.arange(n) // per_group)
    norm = np.maximum.reduceat(v, np.arange(0, n, per_group)).sum()
    for fraction in (0.9, 0.3, 1e-3, 1e-6):
        budget = np.array([fraction * norm])
        *_, steps = l1inf_kernels.project_blocks(v, layout.perm, layout.group_ptr,
                                                 layout.block_ptr, layout.group_label,
                                                 budget, l1inf_kernels.step_limit(n))
        assert 0 < steps <= 16 < l1inf_kernels.step_limit(n), (fraction, steps)
        np.testing.assert_allclose(layout.project(v, budget).point,
                                   layout.project_sorted(v, budget).point, rtol=0,
                                   atol=1e-15 * v.max() * n)


def test_a_block_at_the_step_limit_falls_back_to_sorting(
        cases: list[Case], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(l1inf_kernels, "step_limit", lambda m: 0)
    for c in cases[:50]:
        ref = c.s._layout.project_sorted(c.v, c.s._budgets())
        np.testing.assert_array_equal(c.s.project(c.v), ref.point)


def test_numpy_until_its_budget_then_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    # a process starts with the sort-based method, charged to its account, and switches
    # once the account reaches the budget; on a clock where a projection takes one tick,
    # one projection charges exactly one tick (without the ahead-of-time kernel, which
    # otherwise runs from the first projection)
    kernels = l1inf_kernels.KERNELS
    monkeypatch.setattr(aot, "load", lambda source: None)
    monkeypatch.setattr(kernels, "_dispatchers", None)
    monkeypatch.setattr(kernels, "loaded", False)
    monkeypatch.setattr(kernels, "numpy_seconds", 0.0)
    clock = install_clock(monkeypatch, sets)
    rng = np.random.default_rng(2)
    s = L1InfBall(rng.integers(0, 20, 500) % 20, None, 1.0)
    v = rng.normal(size=500)
    np.testing.assert_array_equal(s.project(v), s._layout.project_sorted(v, 1.0).point)
    assert kernels.numpy_seconds == clock.tick < l1inf_kernels.NUMPY_BUDGET
    assert not kernels.use_compiled()
    kernels.charge_numpy(l1inf_kernels.NUMPY_BUDGET)
    assert kernels.use_compiled() and kernels.loaded
    compiled = s.project(v)
    assert np.abs(compiled - s._layout.project_sorted(v, 1.0).point).max() <= 1e-15 * 500


def test_the_blocks_are_projected_independently(cases: list[Case]) -> None:
    # the stacked projection (all blocks of 1000 inputs at once) is each input's own
    big, v, owner, _ = stacked(cases)
    together = big.project(v)
    for i, c in enumerate(cases):
        np.testing.assert_allclose(c.sigma * together[owner == i], c.p, rtol=0,
                                   atol=1e-13 * c.sigma, err_msg=str(i))


def test_caps_and_thresholds_satisfy_the_kkt_conditions(cases: list[Case]) -> None:
    for i, c in enumerate(cases):
        s, tol = c.s, 1e-12 * c.sigma * c.v.size
        z, cap, theta = s.project_with_threshold(c.v)
        np.testing.assert_array_equal(z, c.p)
        a = np.maximum(c.v, 0.0)
        np.testing.assert_array_equal(z, np.minimum(a, cap[s.group]))
        assert np.all(theta >= 0.0)
        above = np.bincount(s.group, weights=np.maximum(a - cap[s.group], 0.0),
                            minlength=s.n_groups)
        total = np.bincount(s.group, weights=a, minlength=s.n_groups)
        spent = np.bincount(s.block, weights=cap) >= s._budgets() - tol
        assert np.all(spent | (theta == 0.0)), i
        positive = cap > 0
        assert np.all(np.abs(above - theta[s.block])[positive] <= tol), i
        assert np.all((total - theta[s.block])[~positive] <= tol), i


def test_one_element_groups_give_the_l1_ball() -> None:
    # with one coordinate per group, the set is the l1 ball in the orthant: soft thresholding
    v = np.array([3.0, 1.0, -2.0, 0.5, 2.0])
    s = L1InfBall(np.arange(5), None, 4.0)
    z, cap, theta = s.project_with_threshold(v)
    np.testing.assert_allclose(z, [7 / 3, 1 / 3, 0.0, 0.0, 4 / 3], atol=1e-15)
    assert theta[0] == pytest.approx(2 / 3, rel=1e-15)
    np.testing.assert_array_equal(cap, z)


def test_one_group_per_block_gives_a_box() -> None:
    rng = np.random.default_rng(3)
    group = rng.integers(0, 4, 40)
    group[:4] = np.arange(4)
    radius = np.array([0.0, 0.5, 2.0, 10.0])
    s = L1InfBall(group, np.arange(4), radius, scale=2.0)
    v = rng.normal(scale=3.0, size=40)
    np.testing.assert_allclose(s.project(v), np.clip(v, 0.0, 2.0 * radius[group]), rtol=0,
                               atol=1e-15)


def test_more_than_65536_groups_and_blocks() -> None:
    # the radix sorts by group and by block take two 16-bit digits: one group per block of
    # two coordinates (a box), and pairs of one-coordinate groups per block (soft threshold)
    rng = np.random.default_rng(4)
    n = 70_000
    group = rng.permutation(np.repeat(np.arange(n), 2))
    radius = rng.uniform(0.0, 2.0, n)
    v = rng.normal(size=2 * n)
    box = L1InfBall(group, rng.permutation(n), radius[rng.permutation(n)])
    np.testing.assert_allclose(box.project(v),
                               np.clip(v, 0.0, box._budgets()[box.block[group]]), rtol=0,
                               atol=1e-15)
    pairs = L1InfBall(np.arange(2 * n), np.arange(2 * n) // 2, radius)
    a = np.maximum(v, 0.0).reshape(n, 2)
    # the l1 ball of two coordinates: soft thresholding by half the excess, or, when the
    # smaller one would go below 0, (0, radius)
    half = (np.maximum(a.sum(axis=1) - radius, 0.0) / 2)[:, None]
    larger = a == a.max(axis=1, keepdims=True)
    expected = np.where(a.min(axis=1, keepdims=True) >= half, a - half,
                        np.where(larger, radius[:, None], 0.0))
    np.testing.assert_allclose(pairs.project(v).reshape(n, 2), expected, rtol=0, atol=1e-15)


# -- the violation ---------------------------------------------------------------------------
def test_violation_agrees_with_cvxpy(cases: list[Case]) -> None:
    for i, c in enumerate(cases[:150]):
        s = c.s
        for point in (c.v, c.p):
            nonneg, cap_violation, total = cvxpy_violations(s, point)
            assert total <= 1e-14 * c.sigma * s.n_groups
            # CVXPY's best caps spread a block's excess over its G_b groups
            per_block = np.bincount(s.block, minlength=s.n_blocks)
            expected = max(nonneg, float((per_block * cap_violation).max()))
            assert s.violation(point) == pytest.approx(expected, rel=1e-12,
                                                       abs=1e-14 * c.sigma * s.size), i
        # strictly inside: no violation for either
        nonneg, cap_violation, total = cvxpy_violations(s, 0.5 * c.p)
        assert s.violation(0.5 * c.p) == 0.0 and nonneg == 0.0 and cap_violation.max() == 0.0


def test_violation_is_zero_exactly_in_the_set_and_positive_outside() -> None:
    s = L1InfBall(np.array([0, 0, 1, 2]), np.array([0, 0, 1]), np.array([3.0, 1.0]))
    inside = np.array([1.0, 2.0, 1.0, 1.0])  # 2 + 1 <= 3, 1 <= 1
    assert s.violation(inside) == 0.0
    np.testing.assert_array_equal(s.project(inside), inside)
    assert s.violation(np.array([1.0, 2.5, 1.0, 1.0])) == pytest.approx(0.5)
    assert s.violation(np.array([1.0, 2.0, 1.0, 1.75])) == pytest.approx(0.75)
    assert s.violation(np.array([-0.25, 2.0, 1.0, 1.0])) == pytest.approx(0.25)
    np.testing.assert_array_equal(s.block_sums(inside), [3.0, 1.0])


# -- the paper's order: project onto the ball, then clip ----------------------------------------
def test_paper_order_differs_on_the_documented_example() -> None:
    s = L1InfBall(np.array([0, 0, 1]), None, 10.0)
    v = np.array([10.0, -100.0, 10.0])
    exact, paper = s.project(v), s.project_then_clip(v)
    np.testing.assert_allclose(exact, [5.0, 0.0, 5.0], atol=1e-14)
    np.testing.assert_allclose(paper, [10.0, 0.0, 0.0], atol=1e-14)
    assert s.violation(paper) == 0.0
    assert np.linalg.norm(paper - v) ** 2 == pytest.approx(np.linalg.norm(exact - v) ** 2 + 50)
    assert not paper_order_is_exact(s, v, paper, 1e-12)


def test_paper_order_where_it_coincides() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        s = random_set(rng)
        v = rng.uniform(-3, 3, s.size) * float(np.max(s._budgets()) + 1.0)
        sigma = sigma_of(s, v)
        # v >= 0: the same computation
        np.testing.assert_array_equal(s.project_then_clip(np.abs(v)), s.project(np.abs(v)))
        # |v| inside the ball: both keep max(v, 0)
        inside = s.project(np.abs(v)) * np.where(rng.random(s.size) < 0.5, -1.0, 1.0)
        assert np.abs(s.project_then_clip(inside) - np.maximum(inside, 0.0)).max() <= (
            1e-13 * sigma)
        assert np.abs(s.project(inside) - np.maximum(inside, 0.0)).max() <= 1e-13 * sigma
        # negatives at most the exact caps (which are then also the paper's caps)
        caps = s.project_with_threshold(v).cap
        small = np.where(v < 0, -rng.random(s.size) * caps[s.group], v)
        assert np.abs(s.project_then_clip(small) - s.project(small)).max() <= 1e-13 * sigma
        # one group per block: a box
        box = L1InfBall(s.group, np.arange(s.n_groups), rng.uniform(0, 2, s.n_groups))
        assert np.abs(box.project_then_clip(v) - box.project(v)).max() <= 1e-13 * sigma


def test_paper_order_where_it_differs_matches_the_characterisation() -> None:
    rng = np.random.default_rng(11)
    n_differ = n_same = 0
    differences = []
    for _ in range(400):
        s = random_set(rng, large=rng.random() < 0.1)
        v = rng.normal(size=s.size) * float(np.max(s._budgets()) or 1.0)
        # the scale of this input (sigma's floor of 1 would hide inputs of size 1e-8)
        sigma = max(float(np.abs(v).max()), float(np.max(s._budgets())))
        exact, paper = s.project(v), s.project_then_clip(v)
        # feasible, and no closer
        assert s.violation(paper) <= 1e-14 * sigma * s.size
        difference = float(np.linalg.norm(paper - exact))
        excess = np.linalg.norm(paper - v) ** 2 - np.linalg.norm(exact - v) ** 2
        assert excess >= difference**2 - 1e-12 * sigma**2
        # at most the negative part
        assert difference <= np.linalg.norm(np.minimum(v, 0.0)) + 1e-12 * sigma
        differs = difference > 1e-9 * sigma
        assert differs == (not paper_order_is_exact(s, v, paper, 1e-9 * sigma))
        n_differ += differs
        n_same += not differs
        if differs:
            differences.append(difference / sigma)
    # both outcomes are common on random mixed-sign inputs, and the differences are not
    # rounding
    assert n_differ >= 100 and n_same >= 50, (n_differ, n_same)
    assert np.median(differences) > 1e-3


def test_paper_order_can_move_the_budget_to_a_group_with_a_large_negative() -> None:
    # the negative coordinate raises its own group's cap above the exact one
    s = L1InfBall(np.array([0, 0, 1, 1]), None, 2.0)
    v = np.array([1.5, -5.0, 1.5, 1.0])
    exact, paper = s.project(v), s.project_then_clip(v)
    np.testing.assert_allclose(exact, [1.0, 0.0, 1.0, 1.0], atol=1e-14)
    np.testing.assert_allclose(paper, [1.5, 0.0, 0.0, 0.0], atol=1e-14)
    assert paper[0] > exact[0] and paper[2] < exact[2]
    assert s.violation(paper) == 0.0


# -- the scale: a hyper-parameter, live values, DPP -------------------------------------------
def test_scaled_radius_follows_the_hyper_parameter_without_recompiling() -> None:
    C = HyperParameter("C", 0.3)
    s = L1InfBall(np.array([0, 0, 1, 2, 2]), np.array([0, 0, 1]), np.array([1.0, 2.0]),
                  scale=C)
    v = np.array([2.0, -1.0, 0.7, 3.0, 2.5])
    v_par = cp.Parameter(5)
    z = cp.Variable(5)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(z - v_par)), s.constraints(z))
    assert problem.is_dcp(dpp=True)
    v_par.value = v
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    compiled = problem._cache.param_prog
    first = s.project(v)
    np.testing.assert_allclose(first, z.value, atol=1e-7)
    C.assign(2.5)  # the set reads the new value; the compiled problem is re-solved
    problem.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert problem._cache.param_prog is compiled
    second = s.project(v)
    np.testing.assert_allclose(second, z.value, atol=1e-7)
    assert np.abs(second - first).max() > 0.1
    fixed = L1InfBall(s.group, s.block, s.radius, scale=2.5)
    np.testing.assert_allclose(second, fixed.project(v), rtol=0, atol=1e-15)
    # the module function with the scaled radii is the same kernel
    np.testing.assert_array_equal(
        second, project_l1inf_nonneg(v, s.group, s.block, 2.5 * s.radius))


# -- the kernel for one block, and bad input ----------------------------------------------------
def test_module_function_on_one_block() -> None:
    rng = np.random.default_rng(5)
    group = rng.integers(0, 50, 2000)
    group[:50] = np.arange(50)
    v = rng.normal(size=2000)
    s = L1InfBall(group, None, 3.0)
    np.testing.assert_array_equal(project_l1inf_nonneg(v, group, None, 3.0), s.project(v))
    layout = L1InfLayout(group, np.zeros(50, dtype=np.int64))
    out = layout.project(v, np.array([3.0]))
    np.testing.assert_array_equal(out.point, s.project(v))
    assert out.threshold.shape == (1,) and out.cap.shape == (50,)
    assert out.cap.sum() == pytest.approx(3.0, rel=1e-14)
    # the layout is reusable: another point, another budget
    w = rng.normal(size=2000)
    np.testing.assert_array_equal(layout.project(w, 0.5).point,
                                  L1InfBall(group, None, 0.5).project(w))


def test_bad_sets_and_points_are_refused() -> None:
    with pytest.raises(ValueError, match="group 1 is empty"):
        L1InfBall(np.array([0, 2, 2]))
    with pytest.raises(ValueError, match="block must give the block"):
        L1InfBall(np.array([0, 1, 1]), np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="group 1 is empty"):  # block 1 without a group
        L1InfBall(np.array([0, 1]), np.array([0, 2]))
    with pytest.raises(ValueError, match="a label is >= 2"):
        L1InfBall(np.array([0, 1, 2]), np.array([0, 1, 2]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="radius must be finite and >= 0"):
        L1InfBall(np.array([0, 1]), None, -1.0)
    with pytest.raises(ValueError, match="radius must be finite and >= 0"):
        L1InfBall(np.array([0, 1]), np.array([0, 1]), np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="scalar or 1-D"):
        L1InfBall(np.array([0, 1]), None, np.ones((1, 1)))
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        L1InfBall(np.array([0, 1]), scale=-1.0)
    s = L1InfBall(np.array([0, 0, 1]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        s.project(np.ones(4))
    with pytest.raises(ValueError, match="finite"):
        s.project_then_clip(np.array([0.0, np.nan, 1.0]))
