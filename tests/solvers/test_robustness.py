"""Badly scaled and degenerate data, masters that fail, oracles that outlast a time budget:
a certified answer or a stop that says why, never a traceback or a false "converged"."""

from __future__ import annotations

import json
import threading
import time

import cvxpy as cp
import numpy as np
import pytest

from cvxrank.cli.main import main
from cvxrank.core.trace import Status
from cvxrank.data import RankingData, make_synthetic, read_svmlight, write_svmlight
from cvxrank.errors import SolverError
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.solvers import cutting_plane
from cvxrank.solvers.cutting_plane import WorkingSet, solve_master, within_budget
from cvxrank.solvers.newton import hessian_diagonal
from cvxrank.solvers.simplex_product_qp import _CycleGuard, simplex_qp

# ------------------------------------------------------------------ the trial's files


def trial_file(shared_data, tmp_path, name: str, scale) -> str:
    """6 queries of OHSUMED Fold1 vali.txt, 20 documents each, features mapped by
    ``scale(X)`` (the adversarial trial's construction)."""
    vali = read_svmlight(shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" /
                         "vali.txt")
    queries = [q for q in range(vali.n_queries) if vali.query_sizes[q] >= 20][:6]
    rows = np.concatenate([np.flatnonzero(vali.query_index == q)[:20] for q in queries])
    data = vali.take(rows)
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X)
    path = tmp_path / name
    write_svmlight(data.with_features(scale(X.copy())), path)
    return str(path)


def rescaled_hinge_optimum(path: str, loss: str) -> float:
    """p* of the RankSVM on ``path`` at C = 1, by CVXPY on the column-rescaled problem
    (pairs enumerated here, v = S w), Clarabel and ECOS agreeing."""
    data = read_svmlight(path)
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X)
    pairs = [(i, j) for q in range(data.n_queries)
             for i in np.flatnonzero(data.query_index == q)
             for j in np.flatnonzero(data.query_index == q) if data.y[i] > data.y[j]]
    D = np.array([X[i] - X[j] for i, j in pairs])
    s = np.abs(D).max(axis=0)
    s[s == 0] = 1.0
    v = cp.Variable(X.shape[1])
    slack = cp.pos(1 - (D / s) @ v)
    loss_term = cp.sum(slack) if loss == "hinge" else cp.sum_squares(slack)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(cp.multiply(1 / s, v))
                                     + loss_term))
    values = [problem.solve(solver=solver) for solver in ("CLARABEL", "ECOS")]
    assert abs(values[0] - values[1]) <= 1e-7 * abs(values[0]), values
    return values[0]


@pytest.mark.parametrize("factor", [1e8, 1e10])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_one_big_column_gives_the_optimum_or_no_convergence(shared_data, tmp_path, capsys,
                                                            factor: float, loss: str) -> None:
    """Feature 1 times 1e8 or 1e10: ``fit --json`` reports the optimum of the rescaled
    problem (1e-6 relative) or does not say converged, and then says why (the scales);
    the squared hinge's column-scaled Newton reaches the optimum and certifies it."""
    def scale(X):
        X[:, 0] *= factor
        return X

    path = trial_file(shared_data, tmp_path, "big-column.txt", scale)
    code = main(["fit", "--loss", loss, "--C", "1", "--train", path, "--json"])
    report = json.loads(capsys.readouterr().out)
    p_star = rescaled_hinge_optimum(path, loss)
    if report["converged"]:
        assert code == 0
        assert abs(report["objective"] - p_star) <= 1e-6 * p_star, (report, p_star)
    else:
        assert code == 3 and "badly scaled" in report["message"]
    if loss == "squared_hinge":  # certified: the double-word gradient at the last iterate
        assert report["converged"] and report["solver"] == "prsvm+"
        assert 0 < report["relative_gap"] <= 1e-8 and 0 < report["w_radius"] < 1e-2
        assert abs(report["objective"] - p_star) <= 1e-9 * p_star


def test_every_feature_huge_is_refused_in_one_line(shared_data, tmp_path, capsys) -> None:
    """Every feature times 1e150 (and 1e300): squares overflow; a one-line error, exit 2."""
    for factor in (1e150, 1e300):
        path = trial_file(shared_data, tmp_path, f"huge-{factor:g}.txt", lambda X, f=factor:
                          X * f)
        code = main(["fit", "--loss", "hinge", "--C", "1", "--train", path])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "overflow float64" in err


def test_every_feature_large_never_converges_at_zero(shared_data, tmp_path, capsys) -> None:
    """Every feature times 1e10: never "converged" at w = 0 when a better point exists."""
    path = trial_file(shared_data, tmp_path, "large.txt", lambda X: X * 1e10)
    main(["fit", "--loss", "hinge", "--C", "1", "--train", path, "--json",
          "--time-budget", "5"])
    report = json.loads(capsys.readouterr().out)
    p_star = rescaled_hinge_optimum(path, "hinge")
    assert report["objective"] > p_star * (1 + 1e-3)  # w = 0 or not far from it ...
    assert not report["converged"] and "unit scale" in report["message"]  # ... and says so


def test_constant_features_give_the_exact_zero_model(tmp_path, capsys) -> None:
    """Features equal in every document: w = 0 is the optimum, certified with gap 0."""
    data = make_synthetic(n_queries=4, docs_per_query=6, n_features=3, seed=0)
    path = tmp_path / "constant.txt"
    write_svmlight(data.with_features(np.ones_like(np.asarray(data.X))), path)
    for loss in ("hinge", "squared_hinge"):
        code = main(["fit", "--loss", loss, "--C", "1", "--train", str(path), "--json"])
        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["converged"] and report["gap"] == 0.0
        assert report["zero_model"]


# ------------------------------------------------------------------------ the masters


def test_the_one_block_master_solves_a_zero_gram_as_an_lp() -> None:
    x, _ = simplex_qp(np.zeros((3, 3)), np.array([0.0, 5.0, 2.0]), 2.0, np.array([2.0, 0, 0]))
    assert x.tolist() == [0.0, 2.0, 0.0]


def test_cycling_and_the_iteration_cap_raise() -> None:
    guard = _CycleGuard("a master", 10, None)
    support = np.array([0, 3])
    guard.optimal_on(support)
    guard.optimal_on(support)  # once more: a coordinate that entered and left at once
    with pytest.raises(SolverError, match="cycled"):
        guard.optimal_on(support)
    rng = np.random.default_rng(0)
    G = rng.normal(size=(40, 5))
    with pytest.raises(SolverError, match="did not terminate in 1 iterations"):
        simplex_qp(G @ G.T, rng.normal(size=40), 1.0, max_iter=1)
    stopped = _CycleGuard("a master", 10, lambda: True)
    assert stopped.stop()  # out of time: the caller returns its feasible point


def working_set(seed: int) -> WorkingSet:
    rng = np.random.default_rng(seed)
    working = WorkingSet(4, gram=True, zero_cut=1.0)
    working.add(rng.normal(size=6), rng.normal(size=(6, 4)), np.zeros(6, dtype=np.int64))
    return working


def test_a_hand_written_master_that_fails_falls_back_to_cvxpy(monkeypatch) -> None:
    working = working_set(1)
    expected_w, _ = solve_master(working, 1, 1.0, "active-set")

    def broken(*args, **kwargs):
        raise SolverError("the one-block master QP cycled")

    monkeypatch.setattr(cutting_plane, "simplex_qp", broken)
    w, lam = solve_master(working, 1, 1.0, "active-set")
    assert np.allclose(w, expected_w, atol=1e-6)
    assert lam.min() >= 0 and lam.sum() <= 1.0 + 1e-12


def test_cvxpy_master_tries_the_next_solver_then_says_why(monkeypatch) -> None:
    working = working_set(2)
    tried = []
    solve = cp.Problem.solve

    def flaky(problem, *args, solver=None, **kwargs):
        tried.append(solver)
        if solver == "CLARABEL":
            raise cp.error.SolverError("Solver 'CLARABEL' failed.")
        return solve(problem, *args, solver=solver, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", flaky)
    w, _ = cutting_plane.solve_master_cvxpy(working, 1, 1.0)
    assert tried == ["CLARABEL", "ECOS"] and np.all(np.isfinite(w))

    def failing(problem, *args, solver=None, **kwargs):
        raise cp.error.SolverError(f"Solver '{solver}' failed.")

    monkeypatch.setattr(cp.Problem, "solve", failing)
    with pytest.raises(SolverError, match="CLARABEL.*ECOS"):
        cutting_plane.solve_master_cvxpy(working, 1, 1.0)


def test_a_failed_master_is_a_status_with_the_last_certified_point(monkeypatch) -> None:
    f = RankMM(make_synthetic(n_queries=6, docs_per_query=8, n_features=4, seed=3), C=10.0,
               loss="max")
    calls = []
    master = cutting_plane.solve_master

    def fails_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise SolverError("the cutting-plane master QP was not solved")
        return master(*args, **kwargs)

    monkeypatch.setattr(cutting_plane, "solve_master", fails_third)
    run = fit_formulation(f, "cutting-plane")
    assert run.status is Status.NUMERICAL and "master QP was not solved" in run.message
    assert np.isfinite(run.gap) and run.gap >= 0 and run.objective == f.primal_value(run.w)


@pytest.mark.parametrize("loss", ["max", "max_average"])
def test_rankmm_at_an_exact_zero_optimum_converges(loss: str) -> None:
    """RankMM-2/3 on grades unrelated to the features (w = 0 exactly optimal): certified,
    not refused, on every seed where the fit returns 0."""
    seen = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(60, 3))
        y = rng.integers(0, 3, size=60).astype(float)
        data = RankingData.from_arrays(X, y, qid=np.repeat(np.arange(6), 10))
        run = fit_formulation(RankMM(data, C=1.0, loss=loss), "cutting-plane")
        if not np.any(run.w):
            seen += 1
            assert run.converged and run.w_radius == 0.0 and run.relative_gap <= 1e-12
    assert seen >= 3


# ---------------------------------------------------------------- Newton's Jacobi


def test_hessian_diagonal_is_the_newton_systems_diagonal() -> None:
    data = make_synthetic(n_queries=5, docs_per_query=7, n_features=4, seed=2)
    X = np.asarray(data.X) * np.array([1.0, 1e6, 1e-3, 10.0])
    for loss in ("squared_hinge", "huber"):
        f = RankSVM(data.with_features(X), C=0.7, loss=loss)
        ev = f.loss_engine("sorted").evaluate(X @ np.array([0.3, 1e-6, 2.0, -0.1]))
        M = np.column_stack([X.T @ ev.hessp(X @ e) for e in np.eye(4)])
        diagonal = hessian_diagonal([np.ascontiguousarray(c) for c in X.T], ev.hessp)
        assert np.allclose(diagonal, np.diag(M), rtol=1e-10)


# -------------------------------------------------------------------- time budgets


def test_within_budget_abandons_a_slow_call_and_passes_errors_on() -> None:
    release = threading.Event()
    started = time.perf_counter()
    assert within_budget(lambda w: release.wait(5) and "late", np.zeros(1), 0.2) is None
    assert time.perf_counter() - started < 4.0  # abandoned: the call takes 5 s (slack for load)
    release.set()
    assert within_budget(lambda w: "cuts", np.zeros(1), 1.0) == "cuts"
    assert within_budget(lambda w: "cuts", np.zeros(1), None) == "cuts"

    def broken(w):
        raise ValueError("oracle failed")

    with pytest.raises(ValueError, match="oracle failed"):
        within_budget(broken, np.zeros(1), 1.0)


def test_a_slow_oracle_does_not_outlast_the_time_budget(monkeypatch) -> None:
    """DORM whose oracle takes 3 s away from w = 0 (as the assignment on a query of 5,000
    documents takes 30 s, where all-tied scores take a sort), under a 1 s budget: the run
    stops at about 1 s with status time_budget and its certified first point."""
    f = DORM(make_synthetic(n_queries=4, docs_per_query=5, n_features=3, seed=1), C=1.0,
             loss="ndcg@10")
    oracle = f.separation_oracle

    def slow(w):
        if np.any(w):
            time.sleep(3.0)
        return oracle(w)

    monkeypatch.setattr(f, "separation_oracle", slow)
    started = time.perf_counter()
    run = fit_formulation(f, "cutting-plane", time_budget=1.0)
    assert time.perf_counter() - started < 2.9  # the 3 s call abandoned (slack for load)
    assert run.status is Status.TIME_BUDGET and "separation oracle" in run.message
    assert np.isfinite(run.objective)


def test_a_report_that_fails_leaves_no_model(tmp_path, monkeypatch, capsys) -> None:
    """The model is written only once the whole report is rendered."""
    import cvxrank.cli.fit as cli_fit

    data = make_synthetic(n_queries=3, docs_per_query=5, n_features=2, seed=0)
    train, model = tmp_path / "train.txt", tmp_path / "model.json"
    write_svmlight(data, train)

    def broken(report):
        raise ValueError("the report cannot be rendered")

    monkeypatch.setattr(cli_fit, "format_report", broken)
    code = main(["fit", "--train", str(train), "--save-model", str(model)])
    assert code != 0 and not model.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.txt"]
    capsys.readouterr()


def test_a_huge_ranking_count_is_reported_as_log10(tmp_path, capsys) -> None:
    """DORM on a query of 200 documents: 200! rankings, never a long integer in the JSON."""
    data = make_synthetic(n_queries=1, docs_per_query=200, n_features=3, seed=0)
    path = tmp_path / "one-query.txt"
    write_svmlight(data, path)
    main(["fit", "--method", "dorm", "--train", str(path), "--json", "--time-budget", "5"])
    out = capsys.readouterr().out
    report = json.loads(out)
    assert "n_dual" not in report and abs(report["n_rankings_log10"] - 374.9) < 0.1
    assert not any(isinstance(v, int) and abs(v) > 2 ** 53 for v in report.values())
    main(["fit", "--method", "dorm", "--train", str(path), "--time-budget", "5"])
    assert "10^374.9 rankings" in capsys.readouterr().out


def test_gzip_files_are_read_directly(tmp_path) -> None:
    import gzip

    data = make_synthetic(n_queries=3, docs_per_query=5, n_features=2, seed=0)
    plain = tmp_path / "train.txt"
    write_svmlight(data, plain)
    packed = tmp_path / "train.txt.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert np.array_equal(np.asarray(read_svmlight(packed).X), np.asarray(read_svmlight(plain).X))


def test_a_negative_certificate_is_broken_only_beyond_its_rounding_bound() -> None:
    """A gap below 0 within its rounding bound is rounding (the radius then comes from the
    bound); beyond it, the certificate is broken; the default bound grows with the data."""
    from cvxrank.core.trace import _broken_certificate, certified_radius

    primal = 238.493532
    assert _broken_certificate(primal, primal + 1e-12, -1e-12, 2e-12) == ""
    assert certified_radius(-1e-12, 1.0, 2e-12) == pytest.approx(np.sqrt(2e-12))
    assert "negative" in _broken_certificate(primal, primal + 3e-12, -3e-12, 2e-12)
    assert certified_radius(-3e-12, 1.0, 2e-12) == np.inf
    small, large = (RankSVM(make_synthetic(n_queries=q, docs_per_query=10, n_features=3,
                                           seed=0), C=1.0) for q in (2, 200))
    w = np.ones(3)
    assert 0 < small.rounding_error(w, primal, primal) < large.rounding_error(w, primal, primal)


def test_a_broken_certificate_is_said_in_words_without_nan_or_inf() -> None:
    from cvxrank.core.trace import _broken_certificate

    for primal, dual in ((float("nan"), 1.0), (1.0, float("inf")), (float("inf"), float("nan"))):
        message = _broken_certificate(primal, dual, primal - dual, 0.0)
        assert message.startswith("stopped:") and "nan" not in message
        assert "inf" not in message.replace("undefined", "")
