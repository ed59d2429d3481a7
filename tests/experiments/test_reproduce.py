"""Chapelle & Keerthi (2010) reproductions: Table 3 on a real slice, Fig. 3 on tiny sizes, CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from toolbox import install_clock, rel

import cvxrank.cli.main as cli_main
from cvxrank.certificates.reference import solve_reference
from cvxrank.data import count_pairs, read_letor_fold
from cvxrank.data.ranking_data import row_scores
from cvxrank.experiments import timing
from cvxrank.experiments.chapelle import DEFAULT_C, fig3, reports, table3
from cvxrank.experiments.chapelle.reports import plot_auc_scaling
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.metrics import evaluate

OHSUMED = Path("letor3_ohsumed") / "QueryLevelNorm"


@pytest.fixture
def cli():
    """``cvxrank.cli.main.main``."""
    return cli_main.main


@pytest.fixture(scope="module")
def table3_slice(shared_data: Path) -> table3.Table3Result:
    """Table 3 on folds 1 and 2, trained on each fold's first three queries."""
    return table3.run_table3(table3.Table3Config(data=shared_data / OHSUMED, folds=(1, 2),
                                                 max_train_queries=3))


def test_table3_methods_agree_and_ndcg_is_evaluate(table3_slice, shared_data) -> None:
    result = table3_slice
    assert [f.fold for f in result.folds] == [1, 2]
    assert result.C == DEFAULT_C == 5e-5
    for fold in result.folds:
        split = read_letor_fold(shared_data / OHSUMED, fold.fold, splits=("train", "test"))
        train = split["train"].subset(np.arange(3))
        test = split["test"]
        assert fold.n_queries == 3
        assert fold.n_pairs == int(count_pairs(train).sum()) > 1000
        assert set(fold.runs) == {"prsvm", "prsvm+", "linearsvc"}
        objectives = [r.objective for r in fold.runs.values()]
        spread = (max(objectives) - min(objectives)) / min(objectives)
        assert spread <= table3.OBJECTIVE_AGREEMENT
        assert fold.max_objective_difference == pytest.approx(spread, rel=1e-6, abs=1e-15)
        for run in fold.runs.values():
            assert run.time >= run.run.time >= run.setup_time >= 0
            assert run.solver_time == pytest.approx(run.run.time - run.setup_time)
            scores = row_scores(test.X, run.run.w)
            expected = evaluate(test.y, scores, test.query_ptr, preset="letor3", k=10)
            assert run.ndcg10 == expected["ndcg@10"]
            # the objective reported is P(w) of eq. (1) at the returned weights
            f = RankSVM(train, C=result.C, loss="squared_hinge")
            assert run.objective == pytest.approx(f.primal_value(run.run.w), rel=1e-12)
        for name in ("prsvm", "prsvm+"):
            assert fold.runs[name].run.converged
            assert fold.runs[name].certified_gap <= result.tol
            assert fold.runs[name].cg_iterations == list(fold.runs[name].run.info["cg_iterations"])
            assert len(fold.runs[name].cg_iterations) == fold.runs[name].run.n_iter
    assert result.objectives_agree
    assert result.mean_ndcg10("prsvm+") == pytest.approx(
        np.mean([f.runs["prsvm+"].ndcg10 for f in result.folds]))


def test_table3_objective_is_the_certified_optimum(shared_data) -> None:
    """On two queries of fold 1 the three methods reach the CVXPY p* (Clarabel)."""
    result = table3.run_table3(table3.Table3Config(data=shared_data / OHSUMED, folds=(1,),
                                                   max_train_queries=2))
    train = read_letor_fold(shared_data / OHSUMED, 1, splits=("train",))["train"]
    f = RankSVM(train.subset([0, 1]), C=DEFAULT_C, loss="squared_hinge")
    p_star = solve_reference(f, "CLARABEL", cache=False).p_star
    for run in result.folds[0].runs.values():
        assert rel(run.objective, p_star) <= 1e-6


def test_table3_files(table3_slice, tmp_path) -> None:
    files = reports.write_table3(table3_slice, tmp_path / "out")
    text = files["markdown"].read_text()
    assert "| mean |" in text and "| total |" in text and "C = 5e-05" in text
    rows = list(csv.DictReader(files["csv"].open()))
    assert len(rows) == 2 * 3 + 2 * 3  # (fold, method) rows, then mean and total per method
    assert {r["method"] for r in rows} == {"prsvm", "prsvm+", "linearsvc"}
    assert max(float(r["rel_diff_to_first"]) for r in rows) <= table3.OBJECTIVE_AGREEMENT


def test_fig3_tiny_sizes_refuses_prsvm_above_the_pair_limit(tmp_path, monkeypatch) -> None:
    install_clock(monkeypatch, timing)  # each timed fit is one tick: a time > 0 anywhere
    result = fig3.run_fig3(fig3.Fig3Config(sizes=(60, 120, 240), max_pairs=2000, repeat=1,
                                           min_time=0.0, measure_memory=True))
    assert result.sizes == [60, 120, 240]
    assert len(result.runs) == 6
    prsvm = result.runs_of("prsvm")
    plus = result.runs_of("prsvm+")
    assert [r.status for r in prsvm] == ["ok", "refused", "refused"]
    assert [r.status for r in plus] == ["ok", "ok", "ok"]
    assert result.refused_from("prsvm") == 120
    assert result.refused_from("prsvm+") is None
    assert "max_pairs=2,000" in prsvm[1].message
    for r in plus + prsvm[:1]:
        data = fig3.auc_data(r.n)
        p = int(count_pairs(data).sum())
        assert r.n_pairs == p and r.C == pytest.approx(fig3.FIG3_C0 / p)
        assert r.converged and r.certified_gap <= result.tol
        assert r.time > 0 and r.newton_iterations == len(r.cg_iterations) >= 1
        assert r.peak_bytes is not None and r.peak_bytes > 0
        assert r.x_bytes == data.X.nbytes
    # both methods reach the same optimum, the CVXPY one
    assert result.objective_difference(60) <= 1e-9
    f = RankSVM(fig3.auc_data(60), C=prsvm[0].C, loss="squared_hinge")
    p_star = solve_reference(f, "CLARABEL", cache=False).p_star
    assert rel(plus[0].objective, p_star) <= 1e-6
    assert np.isfinite(result.slope("prsvm+"))
    assert np.isnan(result.slope("prsvm"))  # one point only

    files = reports.write_fig3(result, tmp_path)
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(files["csv"].open()))
    assert [(int(r["n"]), r["method"], r["status"]) for r in rows] == [
        (60, "prsvm", "ok"), (60, "prsvm+", "ok"), (120, "prsvm", "refused"),
        (120, "prsvm+", "ok"), (240, "prsvm", "refused"), (240, "prsvm+", "ok")]
    ax = plot_auc_scaling(result)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("PRSVM+ (slope") for label in labels)
    assert any("refused from n = 120" in label for label in labels)
    # every size is labelled on the log axis, not only the decades between them
    ticks = {t.get_text() for t in ax.get_xticklabels()}
    assert {"60", "120", "240"} <= ticks


def test_fig3_fixed_c() -> None:
    result = fig3.run_fig3(fig3.Fig3Config(sizes=(40, 80), C=1e-3, repeat=1, min_time=0.0,
                                           methods=("prsvm+",)))
    assert result.c_mode == "fixed" and {r.C for r in result.runs} == {1e-3}
    with pytest.raises(ValueError, match="sizes"):
        fig3.Fig3Config(sizes=(2, 50))
    with pytest.raises(ValueError, match="methods"):
        fig3.Fig3Config(sizes=(50,), methods=("svmlight",))


def test_cli_missing_folder_exits_2_with_one_line(cli, tmp_path, capsys) -> None:
    missing = tmp_path / "nowhere"
    code = cli(["reproduce", "chapelle-table3", "--data", str(missing),
                "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("cvxrank: error: ")
    assert str(missing) in err
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_cli_missing_fold_file_exits_2(cli, tmp_path, capsys) -> None:
    for k in range(1, 6):
        (tmp_path / f"Fold{k}").mkdir()
        for split in ("train", "test"):
            if (k, split) != (3, "test"):
                (tmp_path / f"Fold{k}" / f"{split}.txt").write_text("1 qid:1 1:0.5\n")
    code = cli(["reproduce", "chapelle-table3", "--data", str(tmp_path),
                "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "Fold3" in err and "test.txt" in err


def test_cli_help_states_the_c_convention(cli, capsys) -> None:
    assert cli(["reproduce", "chapelle-table3", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default 5e-05" in out and "C/2" in out and "results/chapelle-table3" in out


@pytest.mark.slow  # a reproduction run
def test_cli_fig3_json(cli, tmp_path, capsys) -> None:
    code = cli(["reproduce", "chapelle-fig3", "--sizes", "50", "100", "--max-pairs", "1000",
                "--repeat", "1", "--out", str(tmp_path), "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["experiment"] == "chapelle-fig3"
    assert doc["refused_from"] == {"prsvm": 100, "prsvm+": None}
    assert all(Path(p).is_file() for p in doc["files"].values())


def test_cli_table3_json_on_a_slice(cli, shared_data, tmp_path, capsys) -> None:
    code = cli(["reproduce", "chapelle-table3", "--data", str(shared_data / OHSUMED),
                "--folds", "4", "--max-train-queries", "2", "--out", str(tmp_path),
                "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["C"] == 5e-5 and doc["C_published_code"] == 1e-4
    assert doc["objectives_agree"] is True
    assert [f["fold"] for f in doc["folds"]] == [4]
    assert (tmp_path / "chapelle-table3.csv").is_file()


def test_configs_say_which_options_made_the_run() -> None:
    """Default options are the paper's protocol, --quick's are the quick preset, any other
    change is custom; the run's result and its figure's footer say which."""
    from matplotlib.figure import Figure

    from cvxrank.experiments.config import PROTOCOLS
    from cvxrank.experiments.reports import finish_figure

    assert fig3.Fig3Config().protocol() == "paper"
    assert fig3.Fig3Config.quick().protocol() == "quick"
    assert fig3.Fig3Config(sizes=(40, 80)).protocol() == "custom"
    assert fig3.Fig3Config(seed=3).protocol() == "paper"  # an option --quick leaves alone
    result = fig3.run_fig3(fig3.Fig3Config(sizes=(40, 80), repeat=1, min_time=0.0,
                                           methods=("prsvm+",)))
    assert result.protocol == "custom" and result.to_dict()["protocol"] == "custom"
    fig = Figure()
    reports.plot_auc_scaling(result, fig.add_subplot(1, 1, 1))
    finish_figure(fig, result.protocol, "a detail")
    (footer,) = fig.texts
    assert footer.get_text() == f"Run with {PROTOCOLS['custom']}; a detail."
