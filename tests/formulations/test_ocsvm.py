"""OC SVM (fixed margin and sum of margins): references, evaluators, projection, fast solver."""

from __future__ import annotations

from dataclasses import replace

import cvxpy as cp
import numpy as np
import pytest
from toolbox import primal_gap, rel

from cvxrank import tolerances
from cvxrank.certificates.reference import SOLVER_OPTIONS, solve_reference
from cvxrank.certificates.validate import RateSpec, validate
from cvxrank.core.capabilities import missing_capabilities
from cvxrank.data import RankingData, make_synthetic
from cvxrank.data.instances import QUICK
from cvxrank.formulations.ocsvm import OrdinalSVM, OrdinalSVMSumOfMargins, grades_from_scores
from cvxrank.numerics.sets import BoxEqualSums
from cvxrank.registry import Entry
from cvxrank.solvers import solve_accelerated_gradient
from cvxrank.verification.sweep import run_pair

CLARABEL_TOL = tolerances.reference_agreement("CLARABEL")

#: (seed, n_queries, docs_per_query, n_features, n_grades, C): 270 to 380 documents,
#: C times the number of hinge rows between about 8 and 20.
INSTANCES = [
    (21, 20, (10, 20), 8, 3, 0.05),
    (22, 25, (8, 16), 10, 4, 0.03),
    (23, 20, (12, 20), 12, 5, 0.02),
]
SEEDS = [inst[0] for inst in INSTANCES]

#: C for the fixed-margin OC SVM on the verify instances: C * m between 10 and 70 there.
OCSVM_VERIFY_C = 0.05


def synthetic(seed: int, nq: int, dpq: tuple[int, int], d: int, grades: int,
              noise: float = 0.5) -> RankingData:
    return make_synthetic(n_queries=nq, docs_per_query=dpq, n_features=d, n_grades=grades,
                          noise=noise, seed=seed)


def small() -> OrdinalSVM:
    return OrdinalSVM(synthetic(5, 6, (6, 10), 4, 3), C=0.3)


def brute_force_rows(data: RankingData) -> set[tuple[int, int, float]]:
    """(threshold, document, sign) of every hinge row, by explicit loops over documents."""
    grades = sorted(set(data.y.tolist()))
    rows = set()
    for i, y in enumerate(data.y.tolist()):
        level = grades.index(y)
        if level <= len(grades) - 2:
            rows.add((level, i, -1.0))
        if level >= 1:
            rows.add((level - 1, i, 1.0))
    return rows


def brute_force_grade(score: float, thresholds: np.ndarray, grades: np.ndarray) -> float:
    """Li's rule read literally: the first r with score - b_r < 0, else the top grade."""
    for r, b in enumerate(thresholds):
        if score - b < 0:
            return float(grades[r])
    return float(grades[-1])


def max_violation(problem: cp.Problem) -> float:
    return max(float(np.max(c.violation())) for c in problem.constraints)


@pytest.fixture(scope="module")
def problems() -> dict[int, tuple[OrdinalSVM, object]]:
    out = {}
    for seed, nq, dpq, d, grades, C in INSTANCES:
        f = OrdinalSVM(synthetic(seed, nq, dpq, d, grades), C=C)
        out[seed] = (f, solve_reference(f, "CLARABEL"))
    return out


# -- certified references ------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_clarabel_certifies_and_ecos_agrees(problems: dict, seed: int) -> None:
    f, ref = problems[seed]
    assert ref.primal_status == cp.OPTIMAL and ref.dual_status == cp.OPTIMAL
    assert ref.rel_gap <= CLARABEL_TOL
    assert f.n_thresholds == len(np.unique(f.data.y)) - 1 == INSTANCES[SEEDS.index(seed)][4] - 1
    ecos = solve_reference(f, "ECOS")
    assert rel(ecos.p_star, ref.p_star) <= CLARABEL_TOL
    assert ref.p_star > 1.0  # not the trivial w = 0 regime


@pytest.mark.parametrize("seed", SEEDS)
def test_primal_from_dual_at_reference_alpha_is_optimal(problems: dict, seed: int) -> None:
    f, ref = problems[seed]
    theta = f.primal_from_dual(ref.alpha)
    assert theta.shape == (f.data.n_features + f.n_thresholds,)
    assert rel(f.primal_value(theta), ref.p_star) <= CLARABEL_TOL
    assert f.dual_infeasibility(ref.alpha) <= 1e-8


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_thresholds_equal_cvxpy_minimizer_over_b(problems: dict, seed: int) -> None:
    f, ref = problems[seed]
    rng = np.random.default_rng(seed)
    d = f.data.n_features
    for w in (ref.w[:d], rng.standard_normal(d), 0.05 * rng.standard_normal(d)):
        b = f.optimal_thresholds(w)
        over_b = cp.Problem(f.primal().objective, [f.weight_variable == w])
        over_b.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
        assert over_b.status == cp.OPTIMAL
        exact = f.primal_value(np.concatenate([w, b]))
        assert rel(exact, over_b.value) <= CLARABEL_TOL
        # and no coordinate move improves it (the minimizer is exact, not approximate)
        for r in range(f.n_thresholds):
            for step in (1e-6, -1e-6):
                moved = b.copy()
                moved[r] += step
                assert f.primal_value(np.concatenate([w, moved])) >= exact - 1e-12 * exact


# -- CVXPY expressions vs numpy evaluators (no solve) --------------------------------------
def test_rows_and_primal_match_brute_force() -> None:
    f = small()
    rows = f.rows
    got = set(zip(rows.threshold.tolist(), rows.doc.tolist(), rows.sign.tolist(), strict=True))
    assert got == brute_force_rows(f.data) and len(got) == rows.n_rows == f.n_dual
    X = f.data.X
    grades = np.unique(f.data.y)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w, b = rng.standard_normal(f.data.n_features), rng.standard_normal(f.n_thresholds)
        loss = 0.0
        for r in range(f.n_thresholds):
            for i in range(f.data.n_documents):
                if f.data.y[i] == grades[r]:
                    loss += max(0.0, 1.0 + (X[i] @ w - b[r]))
                elif f.data.y[i] == grades[r + 1]:
                    loss += max(0.0, 1.0 - (X[i] @ w - b[r]))
        expected = 0.5 * w @ w + f.C * loss
        assert rel(f.primal_value(np.concatenate([w, b])), expected) <= tolerances.EXPRESSION_MATCH


def test_cvxpy_objectives_match_numpy_evaluators() -> None:
    f = OrdinalSVM(synthetic(*INSTANCES[1][:5]), C=0.03)
    primal, dual = f.primal(), f.dual()
    rng = np.random.default_rng(1)
    m = f.n_dual
    for C in (0.03, 0.7):  # the second value checks that set_params reaches both problems
        f.set_params(C=C)
        for _ in range(3):
            w = rng.standard_normal(f.data.n_features)
            b = np.sort(rng.standard_normal(f.n_thresholds))
            theta = np.concatenate([w, b])
            slack = f.slacks(theta)
            assert (slack > 0).any() and (slack == 0).any(), "both hinge branches must be hit"
            f.weight_variable.value, f.threshold_variable.value = w, b
            assert rel(primal.objective.value, f.primal_value(theta)) <= tolerances.EXPRESSION_MATCH
            np.testing.assert_allclose(f.w_variable.value, theta)

            alpha = f.project_dual(rng.uniform(-C, 2 * C, m))
            f.alpha_variable.value = alpha
            assert rel(dual.objective.value, f.dual_value(alpha)) <= tolerances.EXPRESSION_MATCH
            assert max_violation(dual) <= tolerances.FEASIBILITY
            assert f.dual_infeasibility(alpha) <= tolerances.FEASIBILITY

            bad = rng.uniform(-C, 2 * C, m)
            f.alpha_variable.value = bad
            assert f.dual_infeasibility(bad) == pytest.approx(max_violation(dual),
                                                              rel=tolerances.EXPRESSION_MATCH)
            assert f.dual_infeasibility(bad) > 0


# -- capabilities of the dual solvers ------------------------------------------------------
def test_project_dual_equals_cvxpy_projection_and_is_idempotent() -> None:
    f = OrdinalSVM(synthetic(*INSTANCES[2][:5]), C=0.02)
    rows, C, m = f.rows, f.C, f.n_dual
    E = np.zeros((f.n_thresholds, m))
    for k in range(m):
        E[rows.threshold[k], k] = rows.sign[k]
    v_par = cp.Parameter(m)
    z = cp.Variable(m)
    proj = cp.Problem(cp.Minimize(cp.sum_squares(z - v_par)), [z >= 0, z <= C, E @ z == 0])
    rng = np.random.default_rng(2)
    points = [
        rng.normal(C / 2, C, m),  # around the box
        rng.uniform(0.0, C, m),  # inside the box, off the equalities
        100 * C * rng.standard_normal(m),  # far outside
        C + rng.exponential(50 * C, m),  # entirely above the box
        -rng.exponential(50 * C, m),  # entirely below it
    ]
    for v in points:
        pv = f.project_dual(v)
        v_par.value = v
        proj.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
        assert proj.status == cp.OPTIMAL
        scale = max(1.0, float(np.abs(v).max()))
        assert np.abs(pv - z.value).max() <= CLARABEL_TOL * scale
        assert np.sum((pv - v) ** 2) <= proj.value + CLARABEL_TOL * scale**2
        assert f.dual_infeasibility(pv) <= tolerances.FEASIBILITY
        assert pv.min() >= 0.0 and pv.max() <= C
        np.testing.assert_allclose(f.project_dual(pv), pv, rtol=0, atol=1e-14 * C)
    feasible = f.project_dual(points[0])
    assert np.abs(f.project_dual(feasible) - feasible).max() <= 1e-14 * C


def test_neg_dual_grad_matches_exact_central_differences() -> None:
    # -D is a quadratic, so central differences with a unit step are exact up to rounding
    f = small()
    rng = np.random.default_rng(3)
    alpha = f.project_dual(rng.uniform(0.0, f.C, f.n_dual))
    grad = f.neg_dual_grad(alpha)
    eye = np.eye(f.n_dual)
    numeric = np.array([(f.dual_value(alpha - e) - f.dual_value(alpha + e)) / 2 for e in eye])
    scale = max(1.0, float(np.abs(numeric).max()))
    assert np.abs(grad - numeric).max() / scale <= tolerances.EXPRESSION_MATCH
    assert np.abs(grad).max() > 1e3 * tolerances.EXPRESSION_MATCH * scale


def test_lipschitz_bounds_the_explicit_hessian_tightly() -> None:
    f = small()
    MX = np.asarray(f.rows.MX)
    top = np.linalg.eigvalsh(MX @ MX.T)[-1]
    assert top <= f.dual_lipschitz() <= 1.01 * top
    assert f.dual_strong_convexity() == 0.0
    start = f.dual_start()
    assert start.shape == (f.n_dual,) and f.dual_infeasibility(start) == 0.0
    assert f.dual_value(start) == 0.0


def test_capabilities_and_dual_set() -> None:
    f = small()
    assert f.capabilities == {"dual_gradient"}
    assert missing_capabilities(f, ["dual_gradient"]) == []
    assert isinstance(f.dual_set, BoxEqualSums)
    g = OrdinalSVMSumOfMargins(f.data, C=5.0)
    assert g.capabilities == frozenset()
    assert missing_capabilities(g, ["dual_gradient"]) == ["dual_gradient"]


@pytest.mark.parametrize("seed", SEEDS)
def test_fast_solver_reaches_reference_at_proven_rate(problems: dict, seed: int) -> None:
    f, ref = problems[seed]
    result = solve_accelerated_gradient(f, tol=1e-6)
    assert result.converged, result.message
    gap = primal_gap(f, result.w, ref)
    assert -tolerances.FAST_SOLVER_GAP <= gap <= tolerances.FAST_SOLVER_GAP
    assert f.dual_infeasibility(result.alpha) <= tolerances.FEASIBILITY
    v = validate(result, ref, RateSpec.sublinear(-2), formulation=f)
    assert v.passed, v.reasons
    assert v.rate_ok is True and v.fitted is not None


# -- prediction ----------------------------------------------------------------------------
def test_predict_grades_beats_majority_and_follows_the_rule() -> None:
    data = make_synthetic(n_queries=20, docs_per_query=(10, 20), n_features=5, n_grades=4,
                          noise=0.1, seed=31)
    f = OrdinalSVM(data, C=0.1)
    theta = solve_reference(f).w
    pred = f.predict_grades(theta, data.X)
    values, counts = np.unique(data.y, return_counts=True)
    majority = values[counts.argmax()]
    assert np.mean(pred == data.y) > np.mean(majority == data.y) + 0.3
    assert np.mean(np.abs(pred - data.y)) < 0.5 * np.mean(np.abs(majority - data.y))
    d = data.n_features
    scores = data.X @ theta[:d]
    assert pred.tolist() == [brute_force_grade(s, theta[d:], values) for s in scores]
    # unordered thresholds (possible at the optimum, Chu & Keerthi 2005): still one grade each
    rng = np.random.default_rng(4)
    shuffled = np.array([0.5, -1.0, 2.0])
    some = rng.normal(0.0, 2.0, 50)
    assert grades_from_scores(some, shuffled, values).tolist() == [
        brute_force_grade(s, shuffled, values) for s in some]
    relabeled = RankingData.from_arrays(data.X, 10.0 * data.y + 3.0, qid=data.qid)
    g = OrdinalSVM(relabeled, C=0.1)
    np.testing.assert_array_equal(g.predict_grades(theta, data.X), 10.0 * pred + 3.0)


# -- hyper-parameters and bad input --------------------------------------------------------
@pytest.mark.parametrize("which", ["primal", "dual"])
def test_changing_C_reuses_the_compiled_problem(which: str) -> None:
    f = small()
    problem = getattr(f, which)()
    assert problem.is_dcp(dpp=True)
    problem.solve(solver="CLARABEL")
    first, compiled = problem.value, problem._cache.param_prog
    assert compiled is not None
    f.set_params(C=2.0)
    problem.solve(solver="CLARABEL")
    assert problem._cache.param_prog is compiled and problem.status == cp.OPTIMAL
    assert rel(problem.value, first) > 1e3 * CLARABEL_TOL
    fresh = getattr(OrdinalSVM(f.data, C=2.0), which)()
    fresh.solve(solver="CLARABEL")
    assert rel(problem.value, fresh.value) <= CLARABEL_TOL


@pytest.mark.parametrize("cls", [OrdinalSVM, OrdinalSVMSumOfMargins])
@pytest.mark.parametrize("C,match", [(0.0, r"C must be in \[1e-12, 1e\+12\]"),
                                     (-1.0, r"C must be in \[1e-12, 1e\+12\]"),
                                     (np.inf, "C must be finite"),
                                     (np.nan, "C must be finite")])
def test_bad_C_is_rejected(cls: type, C: float, match: str) -> None:
    data = small().data
    with pytest.raises(ValueError, match=match):
        cls(data, C=C)
    f = cls(data, C=5.0)
    with pytest.raises(ValueError, match=match):
        f.set_params(C=C)
    assert f.params() == {"C": 5.0}


@pytest.mark.parametrize("cls", [OrdinalSVM, OrdinalSVMSumOfMargins])
def test_single_grade_is_rejected(cls: type) -> None:
    rng = np.random.default_rng(5)
    flat = RankingData.from_arrays(rng.standard_normal((8, 3)), np.full(8, 2.0), group=[4, 4])
    with pytest.raises(ValueError, match="at least two distinct grades; every document has "
                                         "grade 2"):
        cls(flat)


def test_theta_of_the_wrong_length_is_rejected() -> None:
    f = small()
    with pytest.raises(ValueError, match=r"theta must have shape \(6,\)"):
        f.primal_value(np.zeros(5))


# -- the verification engine, without editing registry.py -----------------------------------
def _make_ocsvm(data: RankingData, params: dict) -> OrdinalSVM:
    return OrdinalSVM(data, C=params.get("C", 1.0))


@pytest.mark.slow  # verify's pairs, every seed
def test_run_pair_passes_on_quick_instances() -> None:
    entry = Entry("ocsvm-fixed", "ocsvm", solve_accelerated_gradient, RateSpec.sublinear(-2),
                  make_formulation=_make_ocsvm,
                  limits={"max_iter": 100_000, "time_budget": 60.0})
    for inst in QUICK:
        # the instance's own C (chosen for RankSVM's pair counts), then the OC SVM one
        for params in (inst.params, {"C": OCSVM_VERIFY_C}):
            outcome = run_pair(entry, replace(inst, params=params))
            assert outcome.passed, outcome.summary()
            assert outcome.validation.n_iter > 10


# -- sum of margins ------------------------------------------------------------------------
#: (seed, n_grades, k) with C = k / min(m_1, m_l): all three have p* < 0 (a real margin).
SUM_INSTANCES = [(0, 3, 1.2), (1, 2, 1.5), (2, 3, 1.1)]


def sum_of_margins(seed: int, grades: int, k: float) -> OrdinalSVMSumOfMargins:
    data = synthetic(seed, 20, (10, 20), 8, grades, noise=0.3)
    counts = np.unique(data.y, return_counts=True)[1]
    return OrdinalSVMSumOfMargins(data, C=k / min(counts[0], counts[-1]))


@pytest.fixture(scope="module")
def margins_problems() -> dict:
    out = {}
    for inst in SUM_INSTANCES:
        g = sum_of_margins(*inst)
        out[inst[0]] = (g, solve_reference(g, "ECOS"))
    return out


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("seed", [inst[0] for inst in SUM_INSTANCES])
def test_sum_of_margins_primal_and_dual_agree(margins_problems: dict, seed: int) -> None:
    # ECOS certifies (both statuses optimal, gap and evaluators within 1e-7). Clarabel at the
    # reference settings solves the primal to "optimal" but stops at "optimal_inaccurate" on
    # most of these second-order-cone duals; its dual *value* still agrees to 1e-7.
    g, ref = margins_problems[seed]
    assert ref.primal_status == cp.OPTIMAL and ref.dual_status == cp.OPTIMAL
    assert ref.rel_gap <= tolerances.reference_agreement("ECOS")
    assert ref.p_star < -0.05
    primal = g.primal()
    primal.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert primal.status == cp.OPTIMAL
    assert rel(primal.value, ref.p_star, g.gap_floor) <= CLARABEL_TOL
    assert rel(g.primal_value(g.w_variable.value), ref.p_star, g.gap_floor) <= CLARABEL_TOL
    dual = g.dual()
    dual.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert dual.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    assert rel(dual.value, ref.p_star, g.gap_floor) <= CLARABEL_TOL
    assert rel(g.dual_value(g.alpha_variable.value), ref.p_star, g.gap_floor) <= CLARABEL_TOL


@pytest.mark.parametrize("seed", [inst[0] for inst in SUM_INSTANCES])
def test_sum_of_margins_primal_from_dual_and_exact_thresholds(margins_problems: dict,
                                                              seed: int) -> None:
    g, ref = margins_problems[seed]
    theta = g.primal_from_dual(ref.alpha)
    assert g.primal_infeasibility(theta) <= 1e-12
    # w(alpha) normalizes X^T M^T alpha of an ECOS solution, hence 1e-6 rather than 1e-7
    assert rel(g.primal_value(theta), ref.p_star, g.gap_floor) <= 1e-6
    rng = np.random.default_rng(seed)
    d = g.data.n_features
    a_var, b_var = g.threshold_variables
    chain = [a_var <= b_var] + ([b_var[:-1] <= a_var[1:]] if g.n_thresholds > 1 else [])
    direction = rng.standard_normal(d)
    for w in (theta[:d], 0.8 * direction / np.linalg.norm(direction)):
        a, b = g.optimal_thresholds(w)
        # w fixed (||w|| <= 1 holds, to rounding, and is left out): minimize over (a, b)
        fixed = cp.Problem(g.primal().objective, chain + [g.weight_variable == w])
        fixed.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
        assert fixed.status == cp.OPTIMAL
        exact = np.concatenate([w, a, b])
        assert g.primal_infeasibility(exact) <= 1e-12
        assert rel(g.primal_value(exact), fixed.value, g.gap_floor) <= CLARABEL_TOL


def test_sum_of_margins_cvxpy_objectives_match_numpy_evaluators() -> None:
    g = sum_of_margins(*SUM_INSTANCES[0])
    primal, dual = g.primal(), g.dual()
    a_var, b_var = g.threshold_variables
    rng = np.random.default_rng(6)
    d, l1, m = g.data.n_features, g.n_thresholds, g.n_dual
    for C in (g.C, 3 * g.C):
        g.set_params(C=C)
        for scale in (0.5, 2.0):  # feasible (||w|| < 1, ordered chain), then infeasible
            w = rng.standard_normal(d)
            w *= scale / np.linalg.norm(w)
            chain = np.sort(rng.normal(0.0, 1.0, 2 * l1))
            if scale > 1:
                chain = chain[::-1]
            theta = np.concatenate([w, chain[0::2], chain[1::2]])
            g.weight_variable.value, a_var.value, b_var.value = w, chain[0::2], chain[1::2]
            slack = g.slacks(theta)
            assert (slack > 0).any() and (slack == 0).any()
            assert rel(primal.objective.value, g.primal_value(theta), g.gap_floor) <= \
                tolerances.EXPRESSION_MATCH
            np.testing.assert_allclose(g.w_variable.value, theta)
            assert g.primal_infeasibility(theta) == pytest.approx(max_violation(primal),
                                                                  abs=1e-12)
            assert (g.primal_infeasibility(theta) > 0) == (scale > 1)

            alpha = rng.uniform(-C, 2 * C, m)
            g.alpha_variable.value = alpha
            assert rel(dual.objective.value, g.dual_value(alpha), g.gap_floor) <= \
                tolerances.EXPRESSION_MATCH
            assert g.dual_infeasibility(alpha) == pytest.approx(max_violation(dual),
                                                                rel=tolerances.EXPRESSION_MATCH)


def test_sum_of_margins_rejects_unbounded_C_and_predicts_from_midpoints() -> None:
    data = sum_of_margins(*SUM_INSTANCES[0]).data
    counts = np.unique(data.y, return_counts=True)[1]
    extreme = min(counts[0], counts[-1])
    with pytest.raises(ValueError, match=r"C \* min\(m_1, m_l\) must exceed 1"):
        OrdinalSVMSumOfMargins(data, C=1.0 / extreme)
    g = OrdinalSVMSumOfMargins(data, C=1.2 / extreme)
    with pytest.raises(ValueError, match="must exceed 1"):
        g.set_params(C=0.5 / extreme)
    theta = np.r_[np.ones(data.n_features) / np.sqrt(data.n_features), -1.0, 1.0, 0.0, 3.0]
    scores = data.X @ theta[:data.n_features]
    values = np.unique(data.y)
    assert g.predict_grades(theta, data.X).tolist() == [
        brute_force_grade(s, np.array([-0.5, 2.0]), values) for s in scores]
