"""Le & Smola (DORM) Sect. 6 on LETOR folds: tasks, selection, Table 2 account, reports, CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import cvxrank.cli.main as cli_main
from cvxrank.data import make_synthetic, write_svmlight
from cvxrank.experiments.le_smola import protocol, report
from cvxrank.experiments.tasks import run_task


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory) -> Path:
    """Two tiny synthetic LETOR folds."""
    root = tmp_path_factory.mktemp("ohsumed")
    for k in (1, 2):
        folder = root / f"Fold{k}"
        folder.mkdir()
        for j, split in enumerate(("train", "vali", "test")):
            data = make_synthetic(n_queries=6, docs_per_query=(5, 8), n_features=4,
                                  n_grades=3, noise=0.5, seed=10 * k + j)
            write_svmlight(data, folder / f"{split}.txt")
    return root


@pytest.fixture(scope="module")
def config(letor_dir) -> protocol.LeSmolaConfig:
    return protocol.LeSmolaConfig(data=letor_dir, dorm_variants=("power-0.5", "log"),
                                  dorm_C=(1.0, 10.0), svmmap_C=(1.0, 100.0),
                                  ranksvm_C=(1e-2, 1.0))


@pytest.fixture(scope="module")
def specs(config) -> list[protocol.MethodSpec]:
    return config.specs()


@pytest.fixture(scope="module")
def result(config) -> protocol.LeSmolaResult:
    return protocol.run_le_smola(config)


def test_specs_pass_dorm_c_to_the_formulation(letor_dir, specs) -> None:
    tasks = protocol.build_tasks(letor_dir, [1], specs)
    assert len(tasks) == 2 * 2 + 2 + 2
    dorm = [t for t in tasks if t.method == "dorm"]
    assert dorm[0].params == {"C": 1.0, "c_family": "power", "d": 0.5}
    assert dorm[2].params["c_family"] == "log" and dorm[0].loss == "ndcg@10"
    r = run_task(dorm[2])
    assert r.ok and r.run.formulation.startswith("dorm")
    with pytest.raises(ValueError, match="unknown DORM variant"):
        protocol.LeSmolaConfig(data=letor_dir, dorm_variants=("cubic",))
    with pytest.raises(ValueError, match="finite and > 0"):
        protocol.method_specs(svmmap_C=(0.0,))


def test_selection_and_means(result, specs) -> None:
    assert [m.spec.label for m in result.methods] == [s.label for s in specs]
    for m in result.methods:
        assert len(m.folds) == 2
        for f in m.folds:
            vals = [r.measures["vali"]["map"] for r in f.results]
            assert f.selected == int(np.argmax(vals))  # first of the largest: smallest C
        mean = m.mean()
        assert set(mean) == set(protocol.MEASURES)
        assert mean["map"] == pytest.approx(np.mean([f.test["map"] for f in m.folds]))


def test_table2_columns(result) -> None:
    for m in result.methods:
        for s in m.stats():
            assert s["iterations"] >= 1 and s["converged"]
            assert 0.0 <= s["master_share"] <= 1.0
            assert 0 <= s["support_vectors"] <= max(s["cuts"], 1)
    ranksvm = result.methods[-1].stats()
    assert all(not s["zero_model"] for s in ranksvm)


def test_reports(result, tmp_path) -> None:
    files = report.write_le_smola(result, tmp_path)
    md = files["markdown"].read_text()
    assert "SVM MAP" in md and "support vectors" in md and "RankSVM (hinge)" in md
    rows = list(csv.DictReader(files["csv"].open()))
    assert len(rows) == len(result.methods) * 3
    data = json.loads(files["json"].read_text())
    assert data["select"] == "map" and len(data["methods"]) == len(result.methods)
    assert len(data["methods"][0]["selected_C"]) == 2


@pytest.mark.slow  # a reproduction run
def test_cli_quick(letor_dir, tmp_path, capsys) -> None:
    code = cli_main.main(["reproduce", "le-smola-ohsumed", "--data", str(letor_dir), "--quick",
                          "--select", "ndcg@10", "--out", str(tmp_path), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["select"] == "ndcg@10" and data["max_train_queries"] == (
        protocol.LeSmolaConfig.QUICK["max_train_queries"])
    assert [m["method"] for m in data["methods"]] == ["dorm", "svmmap", "ranksvm"]
    assert (tmp_path / "le-smola-ohsumed.md").is_file()
    assert cli_main.main(["reproduce", "le-smola-ohsumed", "--data", str(tmp_path / "none"),
                          "--quick", "--out", str(tmp_path)]) == 2
    assert "cvxrank: error:" in capsys.readouterr().err
