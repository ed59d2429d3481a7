"""Tran & Pham (ConeRank) Table 1 / Figs. 3-4 reproduction: z-scoring, pass snapshots,
spectrum, selection, reports, CLI."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import cvxrank.cli.main as cli_main
from cvxrank.data import make_synthetic, read_svmlight, write_svmlight
from cvxrank.experiments.conerank import LABELS, PAPER_TABLE1_MQ2008, RANKSVM, protocol, report
from cvxrank.experiments.conerank.standardize import StandardizedFold, fit_standardization
from cvxrank.experiments.tasks import Task, run_task
from cvxrank.formulations.conerank import ConeRank, cone_pairs, linear_direction, vote_scores
from cvxrank.metrics import evaluate
from cvxrank.solvers.conerank import solve_stochastic

SMALL = {"passes": 3, "K": 3, "K_grid": (2, 3), "ranksvm_C": (1e-2, 1.0)}


@pytest.fixture
def cli():
    return cli_main.main


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory) -> Path:
    """Two synthetic LETOR folds with shifted, scaled features and one constant feature."""
    root = tmp_path_factory.mktemp("mq")
    for k in (1, 2):
        folder = root / f"Fold{k}"
        folder.mkdir()
        for j, split in enumerate(("train", "vali", "test")):
            data = make_synthetic(n_queries=6, docs_per_query=(5, 9), n_features=4,
                                  n_grades=3, noise=0.5, seed=10 * k + j)
            X = np.asarray(data.X) * np.array([1.0, 3.0, 0.5, 2.0]) + np.array([5, -2, 0, 1])
            X = np.column_stack([X, np.full(X.shape[0], 7.0 if split == "train" else j)])
            write_svmlight(data.with_features(X), folder / f"{split}.txt")
    return root


@pytest.fixture(scope="module")
def small_result(letor_dir) -> protocol.Table1Result:
    return protocol.run_table1(protocol.Table1Config(data=letor_dir, seeds=(0, 1), **SMALL))


# -- z-scoring ---------------------------------------------------------------------------
def test_standardized_fold_uses_the_training_statistics(letor_dir) -> None:
    src = StandardizedFold(str(letor_dir), 1)
    raw_train, raw_vali = (read_svmlight(letor_dir / "Fold1" / f"{s}.txt")
                           for s in ("train", "vali"))
    train, vali = src.load("train"), src.load("vali")
    Xt = np.asarray(train.X)
    np.testing.assert_allclose(Xt[:, :4].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xt[:, :4].std(axis=0), 1.0, rtol=1e-12)
    # the constant feature (5th) is 0 in every split, even where vali has other values
    assert list(src.standardization().constant) == [4]
    assert not np.any(Xt[:, 4]) and not np.any(np.asarray(vali.X)[:, 4])
    Xr = raw_train.X.toarray() if hasattr(raw_train.X, "toarray") else raw_train.X
    Xv = raw_vali.X.toarray() if hasattr(raw_vali.X, "toarray") else raw_vali.X
    mean, std = Xr.mean(axis=0), Xr.std(axis=0)
    np.testing.assert_allclose(np.asarray(vali.X)[:, :4], (Xv[:, :4] - mean[:4]) / std[:4],
                               rtol=1e-12)
    np.testing.assert_array_equal(vali.y, raw_vali.y)
    assert src.key != f"{letor_dir}/Fold1" and src.load("train") is train  # cached
    s = fit_standardization(raw_train)
    assert s.scale[4] == 0 and s.std[4] == 0


# -- snapshots ---------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["sg", "eg"])
def test_a_run_of_t_passes_is_the_prefix_of_a_longer_run(variant) -> None:
    data = make_synthetic(n_queries=5, docs_per_query=(4, 7), n_features=4, seed=2)
    f = ConeRank(data, K=3)
    seen = {}
    long_run = solve_stochastic(f, variant=variant, max_iter=4, seed=5,
                                callback=lambda k, w, a, t: seen.update({k: w.copy()}))
    assert sorted(seen) == [0, 1, 2, 3]  # the last pass is the run's own point
    seen[4] = long_run.w
    for t in (1, 2, 4):
        short = solve_stochastic(ConeRank(data, K=3), variant=variant, max_iter=t, seed=5)
        np.testing.assert_array_equal(short.w, seen[t])


def test_linear_scorer_ranks_as_the_votes() -> None:
    data = make_synthetic(n_queries=5, docs_per_query=(4, 7), n_features=4, seed=2)
    U = np.random.default_rng(0).standard_normal((4, 3))
    votes = vote_scores(U, data.X, data.query_ptr)
    linear = np.asarray(data.X @ linear_direction(U))
    assert (evaluate(data.y, votes, data.query_ptr, preset="letor4")
            == evaluate(data.y, linear, data.query_ptr, preset="letor4"))


# -- spectrum ----------------------------------------------------------------------------
def test_pair_spectrum_is_the_second_moment_of_the_normalized_differences() -> None:
    data = make_synthetic(n_queries=5, docs_per_query=(4, 7), n_features=4, seed=2)
    lam, p, rho = protocol.pair_spectrum(data)
    Z = cone_pairs(data).Z
    assert p == Z.shape[0] and rho == pytest.approx(2.0)
    assert np.all(np.diff(lam) <= 0)
    np.testing.assert_allclose(lam, np.sort(np.linalg.eigvalsh(Z.T @ Z / p))[::-1])
    assert lam.sum() == pytest.approx(np.mean(np.sum(Z * Z, axis=1)))
    assert np.all(np.linalg.norm(Z, axis=1) < rho)  # the normalization (5) bounds ||z||
    result = protocol.SpectrumResult(protocol.SpectrumTask(StandardizedFold(".", 1)), lam, p,
                                     rho, [], 0.0)
    assert result.energy[-1] == pytest.approx(1.0)
    n90 = result.components_for(0.9)
    assert result.energy[n90 - 1] >= 0.9 - 1e-12 and (n90 == 1 or result.energy[n90 - 2] < 0.9)


# -- the protocol ------------------------------------------------------------------------
def test_protocol_selects_passes_by_validation_map(small_result, letor_dir) -> None:
    r = small_result
    assert r.folds == [1, 2] and r.seeds == [0, 1]
    assert set(r.choices) == {"ConeRank-SG", "ConeRank-EG", RANKSVM}
    for variant, label in LABELS.items():
        for c in r.choices[label]:
            assert [p.params["passes"] for p in c.points] == [1, 2, 3]
            vali = [p.measures["vali"]["map"] for p in c.points]
            assert c.selected == int(np.argmax(vali))  # the first of the largest
            assert c.best.n_runs == 2 and c.setting == {"K": 3}
            # the selected point's test measures are the mean over the seeds of the basis
            # after that many passes, scored by the linear scorer
            src = StandardizedFold(str(Path(letor_dir).resolve()), c.fold)
            test = src.load("test")
            maps = []
            for seed in (0, 1):
                f = ConeRank(src.load("train"), K=3)
                run = solve_stochastic(f, variant=variant, max_iter=int(c.best.params["passes"]),
                                       seed=seed)
                U, _ = f.split(run.w)
                maps.append(evaluate(test.y, np.asarray(test.X @ linear_direction(U)),
                                     test.query_ptr, preset="letor4")["map"])
            assert c.best.measures["test"]["map"] == pytest.approx(np.mean(maps), abs=1e-12)
        mean = r.mean(label)
        assert mean["map"] == pytest.approx(np.mean([c.best.measures["test"]["map"]
                                                     for c in r.choices[label]]))
        assert {"map", "mean_ndcg", "ndcg@10"} <= set(mean)


def test_ranksvm_is_the_hinge_grid_on_the_z_scored_folds(small_result, letor_dir) -> None:
    for c in small_result.choices[RANKSVM]:
        assert [p.params["C"] for p in c.points] == [1e-2, 1.0]
        vali = [p.measures["vali"]["map"] for p in c.points]
        assert c.selected == int(np.argmax(vali))
        src = StandardizedFold(str(Path(letor_dir).resolve()), c.fold)
        again = run_task(Task(source=src, method="ranksvm", loss="hinge",
                              params={"C": c.best.params["C"]}, tol=1e-6,
                              evaluate_on=("vali", "test"), preset="letor4"))
        assert again.measures["test"]["map"] == pytest.approx(c.best.measures["test"]["map"],
                                                              abs=1e-9)


def test_sweep_and_spectrum(small_result) -> None:
    r = small_result
    assert list(r.sweep) == ["sg"] and sorted(r.sweep["sg"]) == [2, 3]
    assert r.settings["sweep_seeds"] == [0]
    # K = 3 is the table's K: the sweep uses the first seed of the same runs
    for c in r.sweep["sg"][3]:
        assert c.best.n_runs == 1
    assert len(r.spectrum) == 2 and all(s.eigenvalues.size == 5 for s in r.spectrum)
    assert all(s.constant_features == [5] for s in r.spectrum)
    assert all(s.eigenvalues[-1] == pytest.approx(0.0, abs=1e-12) for s in r.spectrum)
    # every (fold, variant, K, seed) ran once: 2 folds x (2 variants x 2 seeds + K = 2)
    assert len(r.runs) == 2 * (2 * 2 + 1) and all(x["error"] is None for x in r.runs)


@pytest.mark.slow  # a reproduction's reports
def test_reports_are_written(small_result, tmp_path) -> None:
    files = report.write_table1(small_result, tmp_path)
    for key in ("markdown", "csv", "points_csv", "runs_csv", "json", "png", "passes_png",
                "fig3_csv", "fig3_png", "fig4_csv", "fig4_png"):
        assert files[key].is_file() and files[key].stat().st_size > 0, key
    text = files["markdown"].read_text()
    assert "0.454" in text and "RankSVM-struct" in text and "MeanNDCG" in text
    rows = list(csv.DictReader(files["csv"].open()))
    means = {r["method"]: r for r in rows if r["fold"] == "mean"}
    assert set(means) == {"ConeRank-SG", "ConeRank-EG", RANKSVM}
    assert float(means["ConeRank-SG"]["paper_map"]) == PAPER_TABLE1_MQ2008["ConeRank-SG"]["map"]
    assert float(means[RANKSVM]["test_map"]) == pytest.approx(small_result.mean(RANKSVM)["map"])
    fig4 = list(csv.DictReader(files["fig4_csv"].open()))
    assert len(fig4) == 5 and float(fig4[-1]["energy_mean"]) == pytest.approx(1.0)
    data = json.loads(files["json"].read_text())
    assert data["experiment"] == "conerank-table1" and data["preset"] == "letor4"
    assert set(data["methods"]["ConeRank-EG"]) >= {"folds", "mean", "paper", "mean_votes"}


def test_bad_options_are_refused(letor_dir) -> None:
    with pytest.raises(ValueError, match="passes"):
        protocol.Table1Config(data=letor_dir, passes=0)
    with pytest.raises(ValueError, match="mu"):
        protocol.Table1Config(data=letor_dir, mu_sg=-1.0)
    with pytest.raises(ValueError, match="variant"):
        protocol.Table1Config(data=letor_dir, sweep_variants=("xx",))
    with pytest.raises(FileNotFoundError):
        protocol.run_table1(protocol.Table1Config(data=Path(letor_dir) / "nowhere"))


# -- CLI ---------------------------------------------------------------------------------
@pytest.mark.slow  # a reproduction on processes
def test_cli_quick_on_processes_selects_as_sequential(cli, letor_dir, small_result, tmp_path,
                                                      capsys) -> None:
    out = tmp_path / "out"
    code = cli(["reproduce", "conerank-table1", "--data", str(letor_dir), "--quick",
                "--seeds", "0", "1", "--K", "3", "--sweep-K", "--no-spectrum", "--backend",
                "processes", "--workers", "2", "--out", str(out), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["passes"] == 3 and data["workers"] == 2
    assert Path(data["files"]["png"]).is_file() and "fig3_png" not in data["files"]
    for label, choices in small_result.choices.items():
        if label == RANKSVM:
            continue
        got = data["methods"][label]["folds"]
        assert [g["selected"] for g in got] == [c.best.params for c in choices]
        assert [g["test"]["map"] for g in got] == pytest.approx(
            [c.best.measures["test"]["map"] for c in choices], abs=1e-12)


@pytest.mark.slow  # reproduction runs
def test_cli_without_sweep_or_spectrum_and_bad_input(cli, letor_dir, tmp_path, capsys) -> None:
    out = tmp_path / "o"
    code = cli(["reproduce", "conerank-table1", "--data", str(letor_dir), "--quick", "--K", "2",
                "--folds", "1", "--sweep-K", "2", "--no-spectrum", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "ConeRank-SG" in text and "Fig. 3" in text and "Fig. 4" not in text
    assert (out / "conerank-fig3.png").is_file() and not (out / "conerank-fig4.csv").exists()
    assert cli(["reproduce", "conerank-table1", "--data", str(tmp_path / "none"),
                "--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err


def test_standardization_on_mq2008(shared_data) -> None:
    root = shared_data / "letor4_mq2008"
    if not (root / "Fold1" / "train.txt").is_file():
        pytest.skip("letor4_mq2008 not present")
    src = StandardizedFold(str(root), 1)
    train = src.load("train")
    X = np.asarray(train.X)
    varying = src.standardization().scale > 0
    np.testing.assert_allclose(X[:, varying].mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X[:, varying].std(axis=0), 1.0, rtol=1e-10)
    assert not np.any(X[:, ~varying]) and train.n_features == 46


def test_quick_figures_say_the_models_are_under_trained() -> None:
    quick = protocol.Table1Config.quick(data=Path("x"))
    assert quick.protocol() == "quick" and protocol.Table1Config(data=Path("x")).protocol() == (
        "paper")
    result = protocol.Table1Result(data_dir="x", folds=[], seeds=[],
                                   settings={"passes": quick.passes}, choices={}, sweep={},
                                   spectrum=[], protocol="quick")
    assert f"{quick.passes} passes only, its models under-trained" in report._training_note(
        result)
    assert report._training_note(replace(result, protocol="paper")) == ""
