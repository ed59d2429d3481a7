"""The LETOR protocol (``cvxrank grid``): grids, chunks, selection, the three backends, CLI."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from toolbox import write_letor_folds

import cvxrank.cli.main as cli_main
from cvxrank.data import read_letor_fold
from cvxrank.data.ranking_data import row_scores
from cvxrank.errors import CvxrankError
from cvxrank.experiments.backends import plan_chunks
from cvxrank.experiments.grid import Grid
from cvxrank.experiments.letor import GridResult, run_letor_grid
from cvxrank.experiments.reports import grid_markdown
from cvxrank.experiments.selection import select_best
from cvxrank.experiments.sources import LetorFold
from cvxrank.experiments.tasks import Task, TaskResult
from cvxrank.fitting import fit_formulation
from cvxrank.methods import get
from cvxrank.metrics import evaluate
from cvxrank.tolerances import NEWTON_GAP
from cvxrank.utils.threads import blas_threads

#: C values of the small synthetic grid (the selections differ between the folds).
C_VALUES = (1e-3, 1e-2, 1e-1, 1.0)
GRID = Grid.from_dict({"C": C_VALUES})
OHSUMED = Path("letor3_ohsumed") / "QueryLevelNorm"


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two folds of small synthetic LETOR files (noisy grades, so that C matters)."""
    return write_letor_folds(tmp_path_factory.mktemp("letor"), n_queries=8,
                             docs_per_query=(6, 14), n_features=6, noise=1.5)


@pytest.fixture(scope="module")
def sequential(letor_dir: Path) -> GridResult:
    return run_letor_grid(letor_dir, method="ranksvm", grid=GRID, select="map")


@pytest.fixture
def cli():
    return cli_main.main


def reference(root: Path, fold: int, C: float) -> tuple[dict, dict, float]:
    """Fit directly at C (one BLAS thread) and evaluate on vali and test."""
    split = read_letor_fold(root, fold)
    with blas_threads(1):
        f = get("ranksvm").build(split["train"], loss="squared_hinge", C=C)
        run = fit_formulation(f, "auto")
        measures = [evaluate(split[s].y, row_scores(split[s].X, run.w), split[s].query_ptr,
                             preset="letor3", k=10) for s in ("vali", "test")]
    return measures[0], measures[1], run.objective


def outcome(result: GridResult) -> list:
    """Everything that must not depend on the backend."""
    return [(f.fold, f.selected, [(r.measures, r.run.objective, r.run.n_iter)
                                  for r in f.results]) for f in result.folds]


# --------------------------------------------------------------------------- grid, chunks


def test_grid_points_are_sorted_products() -> None:
    grid = Grid.parse(["C=1e-2,1e-4,1e-3", "other=2,1"])
    assert grid.names == ("C", "other")
    assert grid.values("C") == (1e-4, 1e-3, 1e-2)
    assert len(grid) == 6
    assert list(grid.points())[:3] == [{"C": 1e-4, "other": 1.0}, {"C": 1e-4, "other": 2.0},
                                       {"C": 1e-3, "other": 1.0}]


@pytest.mark.parametrize(("specs", "match"), [
    (["C"], "expected NAME=v1,v2"),
    (["C="], "expected NAME=v1,v2"),
    (["=1"], "expected NAME=v1,v2"),
    (["C=1e-3,abc"], "'abc' is not a number"),
    (["C=1e-3,nan"], "not finite"),
    (["C=1", "C=2"], "given twice"),
    (["1C=1"], "not an identifier"),
    ([], "at least one axis"),
])
def test_grid_refuses_malformed_params(specs, match) -> None:
    with pytest.raises(ValueError, match=match):
        Grid.parse(specs)


def _task(fold: int) -> Task:
    return Task(source=LetorFold("/data", fold), method="ranksvm")


@pytest.mark.parametrize(("folds", "points", "workers", "sizes"), [
    (5, 10, 2, [10, 10, 10, 10, 5, 5]),  # four whole folds, the fifth shared by both
    (4, 10, 2, [10, 10, 10, 10]),
    (1, 10, 2, [5, 5]),
    (1, 3, 4, [1, 1, 1]),
    (2, 4, 1, [4, 4]),
])
def test_plan_chunks_keeps_folds_together(folds, points, workers, sizes) -> None:
    tasks = [_task(k) for k in range(1, folds + 1) for _ in range(points)]
    chunks = plan_chunks(tasks, workers)
    assert [len(c) for c in chunks] == sizes
    assert [i for c in chunks for i, _ in c] == list(range(len(tasks)))  # each task once
    for chunk in chunks:
        assert len({t.source.fold for _, t in chunk}) == 1


# --------------------------------------------------------------------------- selection


def _result(value: float | None) -> TaskResult:
    task = _task(1)
    if value is None:
        return TaskResult(task=task, runs=[], wall_times=[], sizes={}, measures={},
                          error="did not converge", error_type="SolverError")
    return TaskResult(task=task, runs=[], wall_times=[], sizes={},
                      measures={"vali": {"map": value}})


def test_selection_takes_the_first_of_equal_values_and_skips_failures() -> None:
    assert select_best([_result(0.5), _result(0.7), _result(0.7), _result(0.6)], "map") == 1
    assert select_best([_result(None), _result(0.2), _result(0.2)], "map") == 1
    with pytest.raises(CvxrankError, match="every grid point failed.*did not converge"):
        select_best([_result(None), _result(None)], "map")


def test_tied_rankings_select_the_smallest_c(letor_dir) -> None:
    """At tiny C, w is C times the same direction: every point ranks alike, so the
    validation MAPs are exactly equal and the smallest C is selected."""
    result = run_letor_grid(letor_dir, method="ranksvm", select="map", folds=[1],
                            grid=Grid.from_dict({"C": [4e-9, 1e-9, 2e-9]}))
    maps = {r.measures["vali"]["map"] for r in result.folds[0].results}
    assert len(maps) == 1
    assert result.folds[0].selected_params == {"C": 1e-9}
    # the smallest value of a three-value axis: at the grid's edge, said in the report
    assert result.at_edges() == ["fold 1 selected C = 1e-09, the smallest value of the grid"]
    assert "At the edge of the grid" in grid_markdown(result)
    two = run_letor_grid(letor_dir, method="ranksvm", select="map", folds=[1],
                         grid=Grid.from_dict({"C": [1e-9, 2e-9]}))
    assert two.at_edges() == []  # two values have no inside


# --------------------------------------------------------------------------- protocol


def test_selection_and_measures_match_direct_fits(letor_dir, sequential) -> None:
    assert [f.fold for f in sequential.folds] == [1, 2]
    selected = []
    for f in sequential.folds:
        refs = [reference(letor_dir, f.fold, C) for C in C_VALUES]
        maps = [vali["map"] for vali, _, _ in refs]
        best = int(np.argmax(maps))  # argmax: the first of equal values
        assert f.selected == best and f.selected_params == {"C": C_VALUES[best]}
        selected.append(C_VALUES[best])
        for r, (vali, test, objective) in zip(f.results, refs, strict=True):
            assert r.ok and r.run.converged
            assert r.measures["vali"] == pytest.approx(vali, rel=1e-12)
            assert r.measures["test"] == pytest.approx(test, rel=1e-12)
            assert r.run.objective == pytest.approx(objective, rel=NEWTON_GAP)  # both certified
        assert f.test == pytest.approx(refs[best][1], rel=1e-12)
    assert selected[0] != selected[1]  # the grid is not degenerate
    mean = sequential.mean()
    assert set(mean) == set(sequential.folds[0].test)
    assert mean["ndcg@10"] == pytest.approx(np.mean([f.test["ndcg@10"]
                                                     for f in sequential.folds]))


def test_processes_backend_gives_the_same_results(letor_dir, sequential) -> None:
    result = run_letor_grid(letor_dir, method="ranksvm", grid=GRID, select="map",
                            backend="processes", workers=2)
    assert outcome(result) == outcome(sequential)
    pids = {r.pid for f in result.folds for r in f.results}
    assert os.getpid() not in pids


def test_dask_cluster_of_two_worker_processes(letor_dir, sequential) -> None:
    """A scheduler and two worker processes; the grid runs through them by address."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        worker_pids = set(client.run(os.getpid).values())
        result = run_letor_grid(letor_dir, method="ranksvm", grid=GRID, select="map",
                                backend="dask", scheduler=cluster.scheduler_address)
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids
    assert {r.pid for f in result.folds for r in f.results} <= worker_pids
    assert outcome(result) == outcome(sequential)


def test_ohsumed_five_folds_select_by_validation_map(shared_data) -> None:
    """The issue's acceptance run: squared hinge, C in {1e-5, 5e-5, 1e-4, 5e-4}, MAP on vali."""
    root = shared_data / OHSUMED
    values = (1e-5, 5e-5, 1e-4, 5e-4)
    result = run_letor_grid(root, method="ranksvm", loss="squared_hinge", select="map",
                            grid=Grid.from_dict({"C": values}))
    assert [f.fold for f in result.folds] == [1, 2, 3, 4, 5]
    for f in result.folds:
        source = LetorFold(str(root.resolve()), f.fold)
        vali, test = source.load("vali"), source.load("test")
        maps, tests = [], []
        with blas_threads(1):
            for C in values:
                run = fit_formulation(get("ranksvm").build(source.load("train"),
                                                           loss="squared_hinge", C=C), "auto")
                maps.append(evaluate(vali.y, row_scores(vali.X, run.w), vali.query_ptr)["map"])
                tests.append(evaluate(test.y, row_scores(test.X, run.w), test.query_ptr))
        best = int(np.argmax(maps))
        assert f.selected_params == {"C": values[best]}
        assert f.validation["map"] == pytest.approx(maps[best], rel=1e-12)
        assert f.test == pytest.approx(tests[best], rel=1e-12)
    mean = result.mean()
    assert mean["map"] == pytest.approx(np.mean([f.test["map"] for f in result.folds]))
    assert 0.40 < mean["ndcg@10"] < 0.50 and 0.40 < mean["map"] < 0.50


# --------------------------------------------------------------------------- command line


def test_cli_json_and_files(cli, letor_dir, sequential, tmp_path, capsys) -> None:
    code = cli(["grid", "--method", "ranksvm", "--data", str(letor_dir),
                "--param", "C=1,1e-1,1e-2,1e-3", "--select", "map", "--folds", "1,2",
                "--out", str(tmp_path), "--json"])
    assert code == 0
    captured = capsys.readouterr()
    # no progress bar with --json; a warning per selection at the grid's edge
    assert captured.err == "".join(f"cvxrank: warning: {line}: extend the grid\n"
                                   for line in sequential.at_edges())
    doc = json.loads(captured.out)
    assert doc["at_edges"] == sequential.at_edges()
    assert doc["select"] == "map" and doc["grid"] == {"C": list(C_VALUES)}
    assert "smallest value" in doc["tie_break"]
    for fold, f in zip(doc["folds"], sequential.folds, strict=True):
        assert fold["selected"] == f.selected_params
        assert fold["test"] == pytest.approx(f.test)
        assert set(fold["test"]) == set(evaluate([1, 0], [1.0, 0.0], [0, 2]))
        assert [p["selected"] for p in fold["points"]].index(True) == f.selected
    assert doc["mean"] == pytest.approx(sequential.mean())
    rows = list(csv.DictReader((tmp_path / "grid.csv").open()))
    assert [r["fold"] for r in rows] == ["1", "2", "mean"]
    assert float(rows[-1]["test_map"]) == pytest.approx(doc["mean"]["map"])
    points = list(csv.DictReader((tmp_path / "grid-points.csv").open()))
    assert len(points) == 2 * len(C_VALUES)
    assert (tmp_path / "grid-validation.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "grid.json").read_text())["mean"] == doc["mean"]


def test_cli_table_on_the_local_dask_cluster(cli, letor_dir, sequential, capsys) -> None:
    pytest.importorskip("dask.distributed")
    code = cli(["grid", "--method", "ranksvm", "--data", str(letor_dir), "--param",
                "C=1e-3,1e-2,1e-1,1", "--select", "ndcg@10", "--backend", "dask",
                "--workers", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| mean |" in out and "vali NDCG@10" in out and "dask backend (2 workers)" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--data", "{missing}"], "no such directory"),
    (["--select", "ndcg@11"], "unknown selection measure 'ndcg@11'"),
    (["--param", "C=1e-3;1e-2"], "is not a number"),
    (["--param", "gamma=1"], "no numeric hyper-parameter gamma"),
    (["--backend", "threads"], "unknown backend 'threads'"),
    (["--folds", "1,two"], "argument --folds: '1,two': expected an integer >= 1"),
    (["--folds", "3"], "Fold3: no such fold directory"),
    (["--method", "lambdamart"], "unknown method 'lambdamart'"),
    (["--preset", "letor5"], "letor5"),
    (["--scheduler", "tcp://127.0.0.1:9"], "scheduler address is for the dask backend"),
])
def test_cli_bad_input_is_one_line_exit_2(cli, letor_dir, tmp_path, capsys, args,
                                          message) -> None:
    base = {"--method": "ranksvm", "--data": str(letor_dir), "--param": "C=1e-3,1e-2",
            "--select": "map"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    given = {k: v.replace("{missing}", str(tmp_path / "nowhere")) for k, v in given.items()}
    argv = ["grid"] + [x for k, v in {**base, **given}.items() for x in (k, v)]
    code = cli(argv + ["--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("cvxrank: error: ") and err.count("\n") == 1
    assert message in err
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_cli_no_scheduler_at_the_address(cli, letor_dir, capsys, monkeypatch) -> None:
    pytest.importorskip("dask.distributed")
    from cvxrank.distributed import cluster

    monkeypatch.setattr(cluster, "SCHEDULER_TIMEOUT", 1.0)
    code = cli(["grid", "--method", "ranksvm", "--data", str(letor_dir), "--param", "C=1",
                "--select", "map", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("cvxrank: error: no Dask scheduler at tcp://127.0.0.1:9")


# --------------------------------------------------------------------------- three files


def test_grid_on_three_files_equals_the_fold_folder(letor_dir, sequential, cli, capsys,
                                                    tmp_path) -> None:
    """``--train/--vali/--test`` on a fold's three files gives that fold's selection and
    measures; the files may be anywhere and in LightGBM format (FILE.query)."""
    fold = letor_dir / "Fold2"

    def argv(train: Path, vali: Path, test: Path) -> list[str]:
        return ["grid", "--method", "ranksvm", "--train", str(train), "--vali", str(vali),
                "--test", str(test), "--param", "C=" + ",".join(map(str, C_VALUES)), "--json"]

    assert cli(argv(fold / "train.txt", fold / "vali.txt", fold / "test.txt")) == 0
    report = json.loads(capsys.readouterr().out)
    (only,) = report["folds"]
    expected = sequential.folds[1]
    assert only["selected"] == expected.selected_params
    assert only["test"] == expected.results[expected.selected].measures["test"]
    # the same three files in LightGBM's format, elsewhere
    for split in ("train", "vali", "test"):
        data = read_letor_fold(letor_dir, 2)[split]
        lines = (fold / f"{split}.txt").read_text().splitlines()
        body = [" ".join(p for p in line.split() if not p.startswith("qid:")) for line in lines]
        (tmp_path / f"rank.{split}").write_text("\n".join(body) + "\n")
        (tmp_path / f"rank.{split}.query").write_text(
            "\n".join(str(int(n)) for n in np.diff(data.query_ptr)) + "\n")
    assert cli(argv(tmp_path / "rank.train", tmp_path / "rank.vali", tmp_path / "rank.test")) == 0
    lightgbm = json.loads(capsys.readouterr().out)["folds"][0]
    assert lightgbm["selected"] == only["selected"] and lightgbm["test"] == only["test"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--train", "T"], "--train needs --vali and --test"),
    (["--data", "D", "--vali", "V"], "--vali and --test go with --train"),
    (["--train", "T", "--vali", "V", "--test", "S", "--folds", "1"], "takes no --folds"),
    (["--train", "nope.txt", "--vali", "V", "--test", "S"], "nope.txt: no such train file"),
])
def test_grid_file_options_are_checked(cli, capsys, extra, message) -> None:
    assert cli(["grid", "--method", "ranksvm", "--param", "C=1", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_grid_takes_a_researcher_s_loss_as_module_object(letor_dir, cli, capsys, tmp_path,
                                                         monkeypatch) -> None:
    """``--loss module:object`` (a user's ramp): every grid point is that loss's fit, the
    report names the loss as given."""
    (tmp_path / "grid_losses.py").write_text(
        "from cvxrank.losses import squared_hinge\nsq2 = squared_hinge.with_margin(2.0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "grid_losses", raising=False)  # imported afresh here
    assert cli(["grid", "--method", "ranksvm", "--loss", "grid_losses:sq2", "--data",
                str(letor_dir), "--folds", "1", "--param", "C=0.01,0.1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["loss"] == "grid_losses:sq2"
    grid_losses = sys.modules["grid_losses"]  # the module the command imported

    split = read_letor_fold(letor_dir, 1)
    points = report["folds"][0]["points"]
    assert [p["params"]["C"] for p in points] == [0.01, 0.1]
    for point in points:
        f = get("ranksvm").build(split["train"], loss=grid_losses.sq2, C=point["params"]["C"])
        run = fit_formulation(f, "auto")
        assert point["objective"] == pytest.approx(run.objective, rel=1e-9)
