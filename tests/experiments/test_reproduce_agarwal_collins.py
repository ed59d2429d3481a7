"""Agarwal & Collins (2010) Fig. 1 reproduction: snapshots, the zero test, the protocol, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from toolbox import rel

import cvxrank.cli.main as cli_main
from cvxrank import tolerances
from cvxrank.certificates.reference import solve_reference
from cvxrank.data import make_synthetic, write_svmlight
from cvxrank.data.ranking_data import RankingData, row_scores
from cvxrank.experiments.agarwal_collins import LABELS, protocol, report
from cvxrank.experiments.agarwal_collins.snapshots import (
    record_interval,
    run_snapshots,
    solve_stochastic,
)
from cvxrank.experiments.agarwal_collins.zero_optimality import zero_optimality
from cvxrank.experiments.backends import Execution
from cvxrank.formulations.rankmm import RankMM
from cvxrank.metrics import evaluate
from cvxrank.numerics import l1inf_kernels

OHSUMED = Path("letor3_ohsumed") / "QueryLevelNorm"
LOSSES = tuple(LABELS)
SMALL_GRID = {"C_grid": (1.0, 10.0), "eta0_grid": (1e-3, 1e-2), "T_grid": (20, 50),
              "ranksvm_C": (1e-3, 1e-2)}


@pytest.fixture
def cli():
    """``cvxrank.cli.main.main``."""
    return cli_main.main


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory) -> Path:
    """Two synthetic LETOR folds (train, vali, test) written as SVMlight files."""
    root = tmp_path_factory.mktemp("letor")
    for k in (1, 2):
        folder = root / f"Fold{k}"
        folder.mkdir()
        for j, split in enumerate(("train", "vali", "test")):
            data = make_synthetic(n_queries=8, docs_per_query=(6, 12), n_features=5,
                                  n_grades=3, noise=0.5, seed=10 * k + j)
            write_svmlight(data, folder / f"{split}.txt")
    return root


# -- snapshots ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
def test_snapshot_equals_a_separate_run_of_T_steps(loss, monkeypatch) -> None:
    # RankMM-3's l1,inf projection switches from numpy to the compiled kernel once the
    # process has spent a time budget in numpy (cvxrank.numerics.l1inf_kernels), and the two agree
    # to rounding, not bit for bit: the runs compared bit for bit here keep one of them
    compiled = l1inf_kernels.KERNELS.use_compiled()
    monkeypatch.setattr(l1inf_kernels.KERNELS, "use_compiled", lambda: compiled)
    data = make_synthetic(n_queries=6, docs_per_query=(5, 9), n_features=4, seed=3)
    f = RankMM(data, C=10.0, loss=loss)
    horizons = (20, 50, 100)
    snapshots, long_run = run_snapshots(f, eta0=1e-2, horizons=horizons, seed=7)
    assert [s.T for s in snapshots] == list(horizons) and long_run.n_iter == 100
    for snap in snapshots:
        short = solve_stochastic(RankMM(data, C=10.0, loss=loss), eta0=1e-2, max_iter=snap.T,
                                 seed=7, record_every=record_interval(horizons))
        assert short.n_iter == snap.T
        if loss == "max":  # seg's w from its coefficients vs from the materialized alpha
            np.testing.assert_allclose(snap.w, short.w, rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_array_equal(snap.w, short.w)
        assert snap.primal == pytest.approx(short.trace.primal[-1], rel=1e-12)
        assert snap.dual == pytest.approx(short.trace.dual[-1], rel=1e-12, abs=1e-14)
        assert 0 <= snap.relative_gap


def test_snapshots_of_a_run_that_stops_at_the_optimum() -> None:
    """At a small C with a large step, sgp reaches RankMM-1's optimum (every alpha at its
    bound) at step 9 and stops at its next check, step 10 (it checks every gcd(T grid) = 10
    steps); a run of any longer T stops at the same step, and every snapshot from there on
    is that run's final state.

    The certified gap from step 9 on is rounding (1.7e-18 on one machine, exactly 0 on
    another), so a stop at a gap <= 0 would depend on rounding; the snapshots' runs stop at
    a certified relative gap of at most ZERO_MODEL_GAP, the library's "optimal to rounding"
    level."""
    from cvxrank.solvers import rankmm

    exact_sgp = rankmm.solve_sgp
    data = make_synthetic(n_queries=6, docs_per_query=(5, 9), n_features=4, seed=3)
    # the certified relative gap step by step: far from 0 at step 8, rounding at step 9
    steps = exact_sgp(RankMM(data, C=1e-2, loss="average"), eta0=10.0, max_iter=10, tol=0.0,
                      seed=7, record_every=1).trace
    relative = {k: rel(d, p) for k, p, d in zip(steps.iteration, steps.primal, steps.dual,
                                                strict=True)}
    assert relative[8] > 0.1 and relative[9] <= tolerances.ZERO_MODEL_GAP
    snapshots, run = run_snapshots(RankMM(data, C=1e-2, loss="average"), eta0=10.0,
                                   horizons=(20, 50, 100), seed=7)
    assert run.converged and run.n_iter == 10
    assert [s.T for s in snapshots] == [20, 50, 100] and [s.steps for s in snapshots] == [10] * 3
    for snap in snapshots:
        np.testing.assert_array_equal(snap.w, run.w)
        assert (snap.primal, snap.dual) == (run.trace.primal[-1], run.trace.dual[-1])
        assert abs(snap.relative_gap) <= tolerances.ZERO_MODEL_GAP
        short = solve_stochastic(RankMM(data, C=1e-2, loss="average"), eta0=10.0,
                                 max_iter=snap.T, seed=7, record_every=10)
        assert short.converged and short.n_iter == 10
        np.testing.assert_array_equal(snap.w, short.w)


def test_record_interval_is_the_gcd() -> None:
    assert record_interval((100, 250, 500, 750, 1000)) == 50
    with pytest.raises(ValueError, match="T grid"):
        record_interval((0, 10))


# -- the zero test -----------------------------------------------------------------------
def _two_queries() -> RankingData:
    """Query 1: grade 2 at e1, grade 1 at 5 e2, grade 0 at 0; query 2: grade 2 at 0,
    grade 0 at e1. The maximal pairs (2, 0) give -e1 and +e1: w = 0 optimal for "max";
    "average" and "max_average" see the grade-1 document."""
    X = np.array([[1.0, 0.0], [0.0, 5.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    return RankingData.from_arrays(X, np.array([2, 1, 0, 2, 0]), qid=np.array([1, 1, 1, 2, 2]))


def test_zero_test_on_a_case_known_by_hand() -> None:
    data = _two_queries()
    z_max = zero_optimality(data, "max")
    assert z_max.zero_optimal and z_max.min_norm < 1e-7
    z_avg = zero_optimality(data, "average")
    # query 1: pairs (e1 - 5e2), (e1 - 0), (5e2 - 0) averaged over 3: (2 e1 + 0 e2)/3;
    # query 2: e1 - ... (0 - e1) = -e1; g = -(2/3 e1) + e1 = (1/3) e1
    np.testing.assert_allclose(z_avg.g, [1.0 / 3.0, 0.0], atol=1e-15)
    assert not z_avg.zero_optimal and z_avg.descent_slope == pytest.approx(-1.0 / 3.0)
    # max_average, query 1: k of grade 0 has mean (2 + 1)/2 - 0 = 1.5 > 1 (grade 1), so
    # the point is x_0 - mean(e1, 5e2) = (-0.5, -2.5); query 2: 0 - 0... x_k - x_j = e1
    z_ma = zero_optimality(data, "max_average")
    np.testing.assert_allclose(z_ma.g, [0.5, -2.5], atol=1e-7)
    assert not z_ma.zero_optimal and z_ma.descent_slope < 0
    assert 0 < z_ma.relative_norm <= 1
    with pytest.raises(ValueError, match="loss"):
        zero_optimality(data, "hinge")


@pytest.mark.parametrize("loss", LOSSES)
def test_zero_test_against_certified_optima(loss) -> None:
    """For small C the optimum is exactly -(C/m) g*; where the test says w = 0 is optimal,
    the certified optimum is 0 at a large C too."""
    for data in (make_synthetic(n_queries=5, docs_per_query=(4, 7), n_features=3, seed=1),
                 _two_queries()):
        z = zero_optimality(data, loss)
        small = RankMM(data, C=1e-3, loss=loss)
        w_small = solve_reference(small, cache=False).w
        np.testing.assert_allclose(w_small, -(1e-3 / small.m) * z.g, atol=1e-8)
        w_large = solve_reference(RankMM(data, C=100.0, loss=loss), cache=False).w
        assert (np.linalg.norm(w_large) < 1e-6) == z.zero_optimal


# -- the protocol ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_result(letor_dir) -> protocol.Fig1Result:
    return protocol.run_fig1(protocol.Fig1Config(data=letor_dir, seeds=(0, 1),
                                                 certified_solver="clarabel", **SMALL_GRID))


def test_protocol_selects_by_validation_map_and_averages_folds(small_result, letor_dir) -> None:
    r = small_result
    assert r.folds == [1, 2] and r.seeds == [0, 1]
    assert set(r.choices) == {"RankMM-1", "RankMM-2", "RankMM-3", "RankSVM"}
    for method, choices in r.choices.items():
        for c in choices:
            n = 8 if method != "RankSVM" else 2
            assert len(c.points) == n
            vali = [p.measures["vali"]["map"] for p in c.points]
            assert c.selected == int(np.argmax(vali))  # first of the largest
            assert all(p.n_runs == (2 if method != "RankSVM" else 1) for p in c.points)
        mean = r.mean(method)
        assert mean["map"] == pytest.approx(np.mean([c.best.measures["test"]["map"]
                                                     for c in choices]))
    # a RankMM point is the mean over the seeds of the snapshot at T: check one by hand
    c = r.choices["RankMM-1"][0]
    params = c.points[3].params  # C = 1, eta0 = 1e-2, T = 50
    tests = []
    for seed in (0, 1):
        task = protocol.StochasticTask(protocol.LetorFold(str(letor_dir), 1), "average",
                                       params["C"], params["eta0"], seed, (20, 50))
        tests.append(task.run().measures[50]["test"]["map"])
    assert c.points[3].measures["test"]["map"] == pytest.approx(np.mean(tests), rel=1e-12)


def test_certified_optima_and_zero_tests(small_result, letor_dir) -> None:
    r = small_result
    for loss in LOSSES:
        runs = r.certified[loss]
        assert [run.task.source.fold for run in runs] == [1, 2]
        for j, run in enumerate(runs):
            assert run.ok and run.solver == "clarabel"
            assert run.task.C == r.choices[LABELS[loss]][j].best.params["C"]
            train = protocol.LetorFold(str(letor_dir), j + 1).load("train")
            ref = solve_reference(RankMM(train, C=run.task.C, loss=loss), cache=False)
            assert run.objective == pytest.approx(ref.p_star, rel=1e-6)
            test = protocol.LetorFold(str(letor_dir), j + 1).load("test")
            expected = evaluate(test.y, row_scores(test.X, ref.w), test.query_ptr,
                                preset="letor3", k=10)
            assert run.measures["test"]["map"] == pytest.approx(expected["map"], abs=1e-9)
        assert [z["fold"] for z in r.zero[loss]] == [1, 2]
    assert r.certified_mean("average") is not None


def test_report_files(small_result, tmp_path) -> None:
    files = report.write_fig1(small_result, tmp_path)
    assert all(p.is_file() and p.stat().st_size > 0 for p in files.values())
    text = files["markdown"].read_text()
    for label in ("RankMM-1", "RankMM-2 (optimum", "RankSVM", "w = 0 optimal"):
        assert label in text
    doc = json.loads(files["json"].read_text())
    assert doc["methods"]["RankMM-3"]["mean"]["map"] == small_result.mean("RankMM-3")["map"]
    assert doc["protocol"] == small_result.protocol == "custom"  # a smaller grid
    assert protocol.Fig1Config(data=Path("x")).protocol() == "paper"
    assert protocol.Fig1Config.quick(data=Path("x")).protocol() == "quick"
    assert len(files["csv"].read_text().splitlines()) == 1 + 4 * 3 + 3 * 3


def test_report_notes_are_whole(small_result, tmp_path) -> None:
    text = report.write_fig1(small_result, tmp_path)["markdown"].read_text()
    notes = [r.error or r.note for runs in small_result.certified.values() for r in runs]
    assert notes and all(f"| {note} |" in text for note in notes)


def test_figure_shows_identical_curves_and_bars_from_zero(small_result, monkeypatch) -> None:
    """Two optima at w = 0 have the same curve: one line in both colours, named for both;
    the MAP bars start at 0 and carry their values."""
    from matplotlib.figure import Figure

    rows = report.summary_rows(small_result)
    zero = {k: 0.4 for k in rows[0][2]}
    twins = [("RankMM-2 (optimum: w = 0)", "RankMM-2", zero),
             ("RankMM-3 (optimum: w = 0)", "RankMM-3", dict(zero))]
    monkeypatch.setattr(report, "summary_rows", lambda result: rows + twins)
    fig = Figure()
    report.plot_fig1(small_result, fig)
    ndcg, prec, bars = fig.axes
    for ax in (ndcg, prec):
        curves = [tuple(line.get_ydata()) for line in ax.get_lines()]
        assert len(curves) == len(set(curves)) == len(rows) + 1
        (merged,) = [line for line in ax.get_lines() if tuple(line.get_ydata()) == (0.4,) * 10]
        assert merged.get_label() == "RankMM-2 = RankMM-3 (optimum: w = 0)"
        assert merged.get_gapcolor() is not None
    assert bars.get_ylim()[0] == 0.0
    assert len(bars.texts) == len(rows) + 2  # every bar's value


@pytest.mark.slow  # a reproduction on processes
def test_processes_backend_gives_the_same_selections(small_result, letor_dir) -> None:
    other = protocol.run_fig1(protocol.Fig1Config(
        data=letor_dir, seeds=(0, 1), certified=False,
        execution=Execution(backend="processes", workers=2), **SMALL_GRID))
    for method, choices in small_result.choices.items():
        assert [c.best.params for c in choices] == [c.best.params
                                                    for c in other.choices[method]]
        assert other.mean(method) == small_result.mean(method)
    assert other.certified == {}


# -- command line ------------------------------------------------------------------------
def _small_args(data: Path, out: Path) -> list[str]:
    return ["reproduce", "agarwal-collins-fig1", "--data", str(data), "--out", str(out),
            "--C", "1", "--eta0", "1e-2", "--T", "10", "20", "--ranksvm-C", "1e-3",
            "--certified-solver", "clarabel"]


def test_cli_json(cli, letor_dir, tmp_path, capsys) -> None:
    code = cli(_small_args(letor_dir, tmp_path / "out") + ["--folds", "2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["folds"] == [2]
    assert set(doc["methods"]) == {"RankMM-1", "RankMM-2", "RankMM-3", "RankSVM"}
    assert set(doc["zero_optimality"]) == {"RankMM-1", "RankMM-2", "RankMM-3"}
    assert Path(doc["files"]["png"]).is_file()


@pytest.mark.parametrize("problem", ["missing", "malformed", "bad-eta0", "bad-solver"])
def test_cli_bad_input_exits_2_with_one_line(cli, letor_dir, tmp_path, capsys,
                                             problem) -> None:
    data = letor_dir
    extra: list[str] = []
    if problem == "missing":
        data = tmp_path / "nowhere"
    elif problem == "malformed":
        data = tmp_path / "bad"
        for split in ("train", "vali", "test"):
            (data / "Fold1").mkdir(parents=True, exist_ok=True)
            (data / "Fold1" / f"{split}.txt").write_text("1 qid:1 1:0.5\nx qid:1 1:0.1\n")
    elif problem == "bad-eta0":
        extra = ["--eta0", "0"]
    else:
        extra = ["--certified-solver", "nope"]
    code = cli(_small_args(data, tmp_path / "out") + extra)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("cvxrank: error: ")
    if problem == "missing":
        assert str(data) in err
    if problem == "malformed":
        assert "train.txt:2" in err


# -- real data ---------------------------------------------------------------------------
def test_zero_test_on_ohsumed_fold1(shared_data) -> None:
    """On OHSUMED Fold1 train, w = 0 is optimal for RankMM-2 and RankMM-3 (every C) and not
    for RankMM-1."""
    train = protocol.LetorFold(str(shared_data / OHSUMED), 1).load("train")
    found = {loss: zero_optimality(train, loss) for loss in LOSSES}
    assert not found["average"].zero_optimal and found["average"].descent_slope < 0
    assert found["max"].zero_optimal and found["max_average"].zero_optimal


def test_one_ohsumed_fold_end_to_end(cli, shared_data, tmp_path, capsys) -> None:
    code = cli(["reproduce", "agarwal-collins-fig1", "--data", str(shared_data / OHSUMED),
                "--folds", "1", "--C", "10", "--eta0", "1e-3", "1e-2", "--T", "100", "250",
                "--ranksvm-C", "1e-4", "--max-train-queries", "20", "--out",
                str(tmp_path / "out"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["folds"] == [1] and doc["max_train_queries"] == 20
    # the size of the job, not its wall-clock time: per loss a zero test, one stochastic run
    # per (eta0, seed) and one certified solve, plus the one RankSVM fit, on 20 queries
    assert doc["n_tasks"] == len(LOSSES) * (1 + 2 * len(doc["seeds"]) + 1) + 1
    assert all(check["n_queries"] == 20 for checks in doc["zero_optimality"].values()
               for check in checks)
    for label in ("RankMM-1", "RankMM-2", "RankMM-3", "RankSVM"):
        assert 0.2 < doc["methods"][label]["mean"]["map"] < 0.7
    for label in ("RankMM-1", "RankMM-2", "RankMM-3"):
        fold = doc["certified"][label]["folds"][0]
        assert fold["error"] is None and fold["relative_gap"] <= 1e-6
