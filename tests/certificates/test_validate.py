"""validate(): gaps, fitted rates and verdicts, on real runs and on hand-made traces."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from toolbox import certified, primal_gap

from cvxrank import tolerances
from cvxrank.certificates.validate import RateSpec, fit_rate, validate, validate_runs
from cvxrank.core.trace import Run, Status, Trace
from cvxrank.data.synthetic import make_synthetic
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers import solve_accelerated_gradient, solve_projected_gradient
from cvxrank.utils.jsonable import to_jsonable

P_STAR = 10.0


def _ref(p_star: float = P_STAR, d_star: float | None = None, rel_gap: float = 1e-12):
    return SimpleNamespace(p_star=p_star, d_star=p_star if d_star is None else d_star,
                           rel_gap=rel_gap)


def _result(subopt: np.ndarray, *, iterations: np.ndarray | None = None, p_star: float = P_STAR,
            dual: bool = True, final_gap: float | None = None) -> Run:
    """A run whose relative primal and dual suboptimality are both ``subopt``."""
    subopt = np.asarray(subopt, dtype=float)
    k = np.arange(subopt.size) if iterations is None else np.asarray(iterations)
    scale = tolerances.gap_scale(p_star)
    primal = p_star + scale * subopt
    dvals = p_star - scale * subopt if dual else np.full(subopt.size, np.nan)
    if final_gap is not None:
        primal[-1] = p_star + scale * final_gap
    tr = Trace(iteration=[int(i) for i in k], time=list(np.linspace(0, 1, subopt.size)),
               primal=list(primal), dual=list(dvals), gap=list(primal - dvals),
               step=[np.nan] * subopt.size)
    return Run(w=np.zeros(2), alpha=np.zeros(2) if dual else None, trace=tr,
                        status=Status.CONVERGED, message="converged", n_iter=int(k[-1]),
                        solver="fake", formulation="toy")


# ----------------------------------------------------------------------------- rate fits


def test_one_over_k_fits_exponent_minus_one() -> None:
    k = np.arange(0, 2001)
    s = 1.0 / np.maximum(k, 1) * 1e-2  # ends at 5e-6 > tol: give a converged final point
    r = _result(s, final_gap=1e-7)
    r.trace.dual[-1] = P_STAR - 1e-7 * P_STAR
    v = validate(r, _ref(), RateSpec.sublinear(-1))
    assert v.fitted == pytest.approx(-1.0, abs=0.05)
    assert v.rate_ok is True
    v2 = validate(r, _ref(), RateSpec.sublinear(-2))
    assert v2.rate_ok is False and not v2.passed
    assert any("slower than the proven O(1/k^2)" in reason for reason in v2.reasons)


def test_too_slow_rate_fails_even_with_a_good_final_gap() -> None:
    k = np.arange(0, 5001)
    s = 1e-3 / np.sqrt(np.maximum(k, 1))
    s[-1] = 1e-8
    v = validate(_result(s), _ref(), RateSpec.sublinear(-1))
    assert v.rel_gap <= tolerances.FAST_SOLVER_GAP
    assert not v.passed and v.rate_ok is False
    assert v.fitted == pytest.approx(-0.5, abs=0.1)
    assert len(v.reasons) == 1 and "fitted rate k^-0.5" in v.reasons[0]
    assert "O(1/k)" in v.reasons[0]


def test_linear_contraction_fit_and_verdict() -> None:
    k = np.arange(0, 200)
    s = 0.9 ** k  # ends at 8e-10
    fit = fit_rate(RateSpec.linear(0.95), k, s, floor=1e-14)
    assert fit.value == pytest.approx(0.9, rel=1e-9)
    assert validate(_result(s), _ref(), RateSpec.linear(0.95)).passed
    assert validate(_result(s), _ref(), RateSpec.linear()).passed
    slow = validate(_result(s), _ref(), RateSpec.linear(0.5))
    assert not slow.passed and slow.rate_ok is False
    assert "contraction 0.9/it" in slow.reasons[0] and "0.5" in slow.reasons[0]
    flat = validate(_result(np.r_[np.full(100, 1e-3), 1e-9]), _ref(), RateSpec.linear(0.95))
    assert not flat.passed and "contraction" in " ".join(flat.reasons)


def test_points_below_the_noise_floor_are_ignored() -> None:
    k = np.arange(0, 3000)
    s = np.maximum(1.0 / np.maximum(k, 1) ** 2, 1e-15)  # flat at the machine-noise level
    v = validate(_result(s), _ref(), RateSpec.sublinear(-2))
    assert v.passed, v.reasons
    assert v.fitted == pytest.approx(-2.0, abs=0.05)
    # an inaccurate reference (large rel_gap) raises the floor: fewer points, same slope
    v2 = validate(_result(s), _ref(rel_gap=1e-6), RateSpec.sublinear(-2))
    assert v2.noise_floor == pytest.approx(1e-5) and v2.n_points < v.n_points
    assert v2.fitted == pytest.approx(-2.0, abs=0.05)


def test_rate_not_measurable_is_a_note_not_a_failure() -> None:
    v = validate(_result(np.array([1.0, 1e-3, 1e-9])), _ref(), RateSpec.sublinear(-1))
    assert v.passed and v.rate_ok is None and v.fitted is None
    assert any("rate not measured" in n for n in v.notes)


def test_newton_iterations_and_superlinear_phase() -> None:
    quad = np.array([1.0, 1e-1, 1e-2, 1e-4, 1e-8, 1e-16])
    ok = validate(_result(quad, dual=False), _ref(), RateSpec.newton(10))
    assert ok.passed and ok.measure == "primal" and ok.fitted == 5
    many = validate(_result(quad, dual=False), _ref(), RateSpec.newton(3))
    assert not many.passed and "5 iterations > the expected 3" in many.reasons[0]
    lin = np.r_[0.5 ** np.arange(40), 0.0]
    v = validate(_result(lin, dual=False), _ref(), RateSpec.newton(50))
    assert not v.passed and any("superlinear" in r for r in v.reasons)


# ----------------------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def hinge():
    data = make_synthetic(n_queries=8, docs_per_query=(10, 25), n_features=8, seed=21)
    return certified(RankSVM(data, C=0.01, loss="hinge"))


@pytest.fixture(scope="module")
def pg_run(hinge):
    """The projected-gradient run on :func:`hinge` that the tests below perturb (a frozen
    ``Run``: each test derives its own with ``dataclasses.replace``)."""
    return solve_projected_gradient(hinge[0])


def test_good_run_passes_with_consistent_numbers(hinge) -> None:
    f, ref = hinge
    r = solve_accelerated_gradient(f)
    v = validate(r, ref, RateSpec.sublinear(-2), formulation=f)
    assert v.passed, v.reasons
    scale = tolerances.gap_scale(ref.p_star, f.gap_floor)
    assert v.rel_gap == pytest.approx(primal_gap(f, r.w, ref))
    assert v.dual_gap == pytest.approx((ref.d_star - f.dual_value(r.alpha)) / scale)
    assert v.duality_gap == pytest.approx(f.duality_gap(r.w, r.alpha) / scale)
    assert v.feasibility <= tolerances.FEASIBILITY and v.measure == "dual"
    assert v.n_iter == r.n_iter and v.time == r.time and v.converged
    json.dumps(to_jsonable(v.as_dict()))  # JSON-ready


def test_perturbed_w_fails_on_the_gap(hinge, pg_run) -> None:
    f, ref = hinge
    r = pg_run
    bad = replace(r, w=r.w + 0.05 * np.linalg.norm(r.w))
    v = validate(bad, ref, RateSpec.sublinear(-1), formulation=f)
    assert not v.passed
    assert any(reason.startswith("relative objective gap") for reason in v.reasons)
    # without the formulation the trace is all validate sees, and the trace is fine
    assert validate(bad, ref, RateSpec.sublinear(-1)).passed


def test_infeasible_alpha_fails(hinge, pg_run) -> None:
    f, ref = hinge
    r = pg_run
    alpha = r.alpha.copy()
    alpha[0] = -1e-3
    v = validate(replace(r, alpha=alpha), ref, RateSpec.sublinear(-1), formulation=f)
    assert not v.passed and any("dual infeasibility" in reason for reason in v.reasons)


def test_median_over_seeds(hinge, pg_run) -> None:
    f, ref = hinge
    good = pg_run
    bad = replace(good, w=good.w * 1.5)
    rate = RateSpec.sublinear(-1)
    v = validate_runs([good, bad, good], ref, rate, formulation=f)
    assert v.passed and v.n_runs == 3
    v = validate_runs([bad, good, bad], ref, rate, formulation=f)
    assert not v.passed
    assert v.reasons[0].startswith("median over 3 seeds: relative objective gap")


def test_rate_as_function_of_formulation(hinge, pg_run) -> None:
    f, ref = hinge
    r = pg_run
    v = validate(r, ref, lambda form: RateSpec.sublinear(-1, label=form.name), formulation=f)
    assert v.rate.expected == f.name
    with pytest.raises(ValueError, match="formulation"):
        validate(r, ref, lambda form: RateSpec.sublinear(-1))


def test_ratespec_checks_and_labels() -> None:
    assert RateSpec.sublinear(-1).expected == "O(1/k)"
    assert RateSpec.sublinear(-2).expected == "O(1/k^2)"
    assert RateSpec.sublinear(-0.5).expected == "O(1/k^1/2)"
    assert RateSpec.linear(0.99).expected == "<=0.99/it"
    assert RateSpec.newton(20).expected.startswith("<=20 it")
    for bad in (lambda: RateSpec("quadratic"), lambda: RateSpec.sublinear(1.0),
                lambda: RateSpec.linear(1.5), lambda: RateSpec("newton"),
                lambda: RateSpec.sublinear(-1, measure="gap")):
        with pytest.raises(ValueError):
            bad()
