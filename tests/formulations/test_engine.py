"""The engine's seams: capabilities, the methods table, the registry families, one run record."""

from __future__ import annotations

import re

import numpy as np
import pytest
from toolbox import install_clock

from cvxrank import methods, registry
from cvxrank.certificates.reference import solve_reference
from cvxrank.certificates.validate import RateSpec
from cvxrank.core import trace as trace_module
from cvxrank.core.capabilities import CAPABILITIES, missing_capabilities, solver
from cvxrank.core.trace import Run, Status, Trace
from cvxrank.data.instances import QUICK
from cvxrank.data.synthetic import make_synthetic
from cvxrank.errors import CapabilityError
from cvxrank.estimators import MethodRanker, RankSVMRanker
from cvxrank.fitting import default_solver, fit_formulation
from cvxrank.formulations.ocsvm import OrdinalSVMSumOfMargins
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import Entry
from cvxrank.solvers import (
    solve_accelerated_gradient,
    solve_prsvm,
    solve_prsvm_plus,
    solve_sgd_queries,
)
from cvxrank.tolerances import relative_gap
from cvxrank.verification.sweep import run_pair


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=6, docs_per_query=(5, 12), n_features=6, seed=3)


# -- capabilities -------------------------------------------------------------------------
@pytest.mark.parametrize("solve, loss, missing", [
    (solve_prsvm_plus, "hinge", "pairwise_newton"),
    (solve_prsvm, "hinge", "pairwise_newton"),
])
def test_solver_refuses_a_formulation_without_its_capability(data, solve, loss, missing):
    f = RankSVM(data, C=0.1, loss=loss)
    calls = []
    f.loss_engine = lambda *a, **k: calls.append(a)  # would be called by a running Newton
    message = f"{solve.solver_name!r} cannot run on ranksvm-{loss}: it needs {missing} ("
    with pytest.raises(CapabilityError, match=re.escape(message)):
        solve(f)
    assert calls == []  # refused before running


def test_explicit_weights_refuse_the_sorted_engines(data):
    from cvxrank.data.pairs import count_pairs

    p = int(count_pairs(data).sum())
    f = RankSVM(data, C=0.1, loss="squared_hinge", pair_weight=np.full(p, 2.0))
    for solve, missing in ((solve_prsvm_plus, "sorted_pairs"), (solve_sgd_queries,
                                                                  "query_blocks")):
        with pytest.raises(CapabilityError, match=f"it needs {missing}"):
            solve(f)
    assert solve_prsvm(f).converged  # the pair engine still applies


def test_dual_solver_refuses_a_formulation_without_a_smooth_dual(data):
    f = OrdinalSVMSumOfMargins(data, C=10.0)
    with pytest.raises(CapabilityError, match="'apg' cannot run on .*dual_gradient"):
        solve_accelerated_gradient(f)


def test_declared_but_unimplemented_capability_counts_as_missing():
    class Claims:
        name = "claims"
        capabilities = frozenset({"primal_certificate"})

    assert missing_capabilities(Claims(), ["primal_certificate"]) == ["primal_certificate"]


def test_every_registered_solver_declares_known_capabilities():
    for entry in registry.entries():
        assert entry.solve.needs and set(entry.solve.needs) <= set(CAPABILITIES), entry.name


def test_unknown_capability_is_refused_at_declaration():
    with pytest.raises(ValueError, match="unknown capabilities"):
        solver("x", needs=("telepathy",))


# -- the methods table --------------------------------------------------------------------
@pytest.mark.parametrize("loss, expected", [("squared_hinge", "prsvm+"), ("huber", "prsvm+"),
                                            ("hinge", "1-slack")])
def test_default_solver_comes_from_the_table(data, loss, expected):
    f = methods.get("ranksvm").build(data, loss=loss, C=0.05)
    assert default_solver(f) == expected


def test_default_solver_skips_solvers_whose_needs_are_not_met(data):
    from cvxrank.data.pairs import count_pairs

    p = int(count_pairs(data).sum())
    f = RankSVM(data, C=0.05, loss="squared_hinge", pair_weight=np.ones(p))
    assert default_solver(f) == "prsvm"  # explicit weights: no sorted engine


def test_formulation_without_hand_written_solver_gets_its_reference(data):
    f = OrdinalSVMSumOfMargins(data, C=10.0)
    assert default_solver(f, method="ocsvm") == f.reference_solver.lower()


def test_method_build_checks_the_loss(data):
    with pytest.raises(ValueError, match="method ocsvm has the losses hinge; got 'huber'"):
        methods.get("ocsvm").build(data, loss="huber", C=1.0)
    with pytest.raises(ValueError, match="unknown method 'nope'; known: ranksvm, irsvm"):
        methods.get("nope")


def test_method_ranker_fits_what_the_named_estimator_fits(data):
    generic = MethodRanker(method="ranksvm", C=0.05, loss="squared_hinge").fit(
        data.X, data.y, qid=data.qid)
    named = RankSVMRanker(C=0.05, loss="squared_hinge").fit(data.X, data.y, qid=data.qid)
    np.testing.assert_allclose(generic.coef_, named.coef_, rtol=1e-10, atol=1e-12)
    est = methods.get("irsvm").make_estimator(C=0.5, loss="hinge", solver="apg", tol=None)
    assert type(est).__name__ == "IRSVMRanker" and est.get_params()["C"] == 0.5


# -- the registry -------------------------------------------------------------------------
def test_registry_is_discovered_per_family():
    families = {e.method for e in registry.entries()}
    assert families == {"ranksvm", "irsvm", "kernel-ranksvm", "ocsvm", "rankmm", "conerank",
                        "dorm", "svmmap"}
    names = [e.name for e in registry.entries()]
    assert len(names) == len(set(names))
    sgd = registry.find_entry("ranksvm-squared_hinge", "sgd-pairs")
    assert sgd.solve.keywords == {"batch_size": 16}  # the algorithm fit and verify run


def test_entry_needs_a_declared_solver():
    with pytest.raises(TypeError, match="declared with cvxrank.core.capabilities.solver"):
        Entry("ranksvm-hinge", "ranksvm", lambda f: None, RateSpec.sublinear(-1))


def test_alternation_entries_are_judged_by_monotone_descent():
    def run_with(values):
        trace = Trace()
        for k, v in enumerate(values):
            trace.append(k, 0.01 * k, v, float("nan"), float("nan"), {"half_step": k % 2})
        return Run(w=np.zeros(2), alpha=None, trace=trace, status=Status.CONVERGED, message="ok",
                   n_iter=len(values), solver="alt", formulation="ranksvm-squared_hinge")

    @solver("alt-descending", needs=())
    def descending(formulation, options):
        return run_with([5.0, 3.0, 2.5, 2.5, 2.4])

    @solver("alt-rising", needs=())
    def rising(formulation, options):
        return run_with([5.0, 3.0, 3.3, 2.4])

    from cvxrank.core.capabilities import SOLVERS

    for name in ("alt-descending", "alt-rising"):  # this test's solvers only
        SOLVERS.pop(name)
    for solve, passed in ((descending, True), (rising, False)):
        entry = Entry("ranksvm-squared_hinge", "ranksvm", solve, RateSpec.sublinear(-1),
                      loss="squared_hinge", check="alternation")
        outcome = run_pair(entry, QUICK[0])
        assert outcome.reference is None  # no CVXPY reference for a non-convex method
        assert outcome.passed is passed, outcome.summary()
    assert "the objective rose by 1.00e-01 (relative) at record 2" in outcome.summary()


# -- one run record -----------------------------------------------------------------------
def test_trace_extra_columns_do_not_touch_other_solvers():
    trace = Trace()
    trace.append(0, 0.0, 2.0, 1.0, 0.5)
    trace.append(1, 0.1, 1.5, 1.2, 0.5, {"cuts": 3})
    trace.append(2, 0.2, 1.4, 1.3, 0.5)
    arrays = trace.as_arrays()
    np.testing.assert_array_equal(arrays["cuts"], [np.nan, 3.0, np.nan])
    np.testing.assert_allclose(arrays["gap"], [1.0, 0.3, 0.1])
    assert list(arrays)[:len(Trace.COLUMNS)] == list(Trace.COLUMNS)
    np.testing.assert_array_equal(arrays["radius"], [np.inf] * 3)  # no certificate given


def test_cvxpy_and_hand_written_fits_return_the_same_record(data):
    f = RankSVM(data, C=0.05, loss="squared_hinge")
    ref = solve_reference(f, cache=False)
    runs = [fit_formulation(f, name) for name in ("clarabel", "prsvm+", "apg")]
    for run in runs:
        assert isinstance(run, Run) and run.converged
        assert 0.0 <= run.setup_time <= run.time and run.solve_time >= 0.0
        assert relative_gap(f.primal_value(run.w), ref.p_star) <= 1e-6
    assert runs[0].info["p_star"] == pytest.approx(ref.p_star, rel=1e-12)
    assert runs[0].alpha is not None and runs[0].n_iter > 0


def test_the_stopping_test_is_on_the_solver_clock_and_trace_only_evaluation_is_not(
        data, monkeypatch):
    """apg decides to stop on the duality gap, so evaluating it is part of its cost; with
    tol = 0 nothing is tested and the same evaluation (for the trace) is off the clock. On a
    clock where each dual evaluation takes 10 ms: 21 of them are charged (iterations 0 to
    20), then none. (tol = 1e-300 tests the gap at every iteration without stopping: the
    gap stays far above rounding in 20 iterations.)"""
    clock = install_clock(monkeypatch, trace_module)
    f = RankSVM(data, C=0.05, loss="hinge")
    slow = f.dual_value

    def dual_value(alpha):
        clock.advance(0.01)
        return slow(alpha)

    f.dual_value = dual_value
    tested = solve_accelerated_gradient(f, tol=1e-300, max_iter=20)
    untested = solve_accelerated_gradient(f, tol=0.0, max_iter=20)
    assert tested.n_iter == untested.n_iter == 20
    assert 21 * 0.01 <= tested.time < 22 * 0.01  # 21 gap evaluations charged
    assert untested.time < 0.01  # none


def test_fit_progress_goes_to_stderr(tmp_path, capsys, data):
    from cvxrank.cli.main import main
    from cvxrank.data.svmlight import write_svmlight

    path = tmp_path / "train.txt"
    write_svmlight(data, path)
    assert main(["fit", "--loss", "hinge", "--C", "0.05", "--train", str(path),
                 "--solver", "apg", "--progress"]) == 0
    out, err = capsys.readouterr()
    assert "apg (converged): converged" in out
    assert err.startswith("\rranksvm hinge: iteration 0  objective") and err.endswith("\n")
    assert main(["fit", "--loss", "hinge", "--C", "0.05", "--train", str(path),
                 "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
