"""A fit returns its model whatever its status, and certifies the measures it reports.

* a planted near-tie in the test set (two documents of different grades whose scores at the
  optimum differ by less than the radius of a loosely converged run times their distance)
  is reported as not certified, and continuing the solve certifies it;
* ``cvxrank fit`` under ``--time-budget``, Ctrl-C (SIGINT) and ``--require-converged``
  prints its report, saves its model and exits with the documented code.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cvxrank.certificates.certify import EvaluationTarget
from cvxrank.cli.fit import EXIT_NOT_CONVERGED, EXIT_REQUIRED_CONVERGENCE
from cvxrank.cli.main import main as cli_main
from cvxrank.core.trace import Status
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import write_svmlight
from cvxrank.data.synthetic import make_synthetic
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM

#: Score difference of the planted pair at the optimum.
NEAR_TIE = 1e-7


@pytest.fixture(scope="module")
def train() -> RankingData:
    return make_synthetic(n_queries=10, docs_per_query=(8, 14), n_features=6, seed=21)


def planted_test_set(w_star: np.ndarray, seed: int = 0, tie: float = NEAR_TIE) -> RankingData:
    """One query: documents spread far apart in score, and a pair (grades 2 and 0) a unit
    apart whose scores at ``w_star`` differ by ``tie`` in favour of the grade 2."""
    rng = np.random.default_rng(seed)
    unit = w_star / np.linalg.norm(w_star)
    anchor = rng.standard_normal(w_star.size)
    side = rng.standard_normal(w_star.size)
    side -= (side @ unit) * unit
    side /= np.linalg.norm(side)  # a unit step that leaves the score unchanged
    near = anchor + side - (tie / np.linalg.norm(w_star)) * unit
    far = [anchor + t * unit / np.linalg.norm(w_star) for t in (-40.0, -20.0, 20.0, 40.0)]
    X = np.vstack([anchor, near, *far])
    y = np.array([2.0, 0.0, 0.0, 1.0, 1.0, 2.0])
    return RankingData.from_arrays(X, y, group=[X.shape[0]])


def test_near_tie_is_not_certified_then_continuing_certifies_it(train) -> None:
    f = RankSVM(train, C=0.5, loss="squared_hinge")
    exact = fit_formulation(f, "prsvm+", tol=1e-14)
    test = planted_test_set(exact.w)
    target = EvaluationTarget.of([test], k=6)
    scores = test.X @ exact.w
    assert 0 < scores[0] - scores[1] < 1.5 * NEAR_TIE  # the planted near-tie

    loose = fit_formulation(f, "prsvm+", tol=1e-3, model_radius=None)
    assert loose.w_radius > NEAR_TIE  # this ball holds orders where the pair is swapped
    (report,) = target.report(f, loose)
    assert not report["map"]["certified"] and report["map"]["uncertified_queries"] == 1
    assert not report["ndcg@6"]["certified"]

    certified = fit_formulation(f, "prsvm+", tol=1e-3, certify=target)
    (report,) = target.report(f, certified)
    assert all(m["certified"] for m in report.values()), report
    assert certified.converged and certified.n_iter > loose.n_iter
    assert certified.w_radius < NEAR_TIE


def test_continuing_certifies_the_hinge_too(train) -> None:
    f = RankSVM(train, C=0.5, loss="hinge")
    exact = fit_formulation(f, "1-slack", tol=1e-14, model_radius=None)
    tie = 1e-4
    test = planted_test_set(exact.w, seed=1, tie=tie)
    target = EvaluationTarget.of([test], k=6)
    loose = fit_formulation(f, "1-slack", tol=1e-2, model_radius=None)
    assert loose.w_radius > tie
    assert not target.report(f, loose)[0]["map"]["certified"]
    run = fit_formulation(f, "1-slack", tol=1e-2, certify=target)
    (report,) = target.report(f, run)
    assert all(m["certified"] for m in report.values()), report
    # past the tolerance: the 1-slack's exact finish (tried there) ends at the optimum
    assert run.converged and run.info["finishes"] >= 1 and run.w_radius < tie


@pytest.fixture
def files(tmp_path):
    data = make_synthetic(n_queries=30, docs_per_query=(10, 20), n_features=8, seed=5)
    path = tmp_path / "train.txt"
    write_svmlight(data, path)
    return path


def fit(capsys, *args: str) -> tuple[int, dict, str]:
    code = cli_main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_time_budget_returns_the_model(capsys, files, tmp_path) -> None:
    model = tmp_path / "model.json"
    code, report, err = fit(capsys, "fit", "--method", "ocsvm", "--train", files,
                            "--solver", "pg", "--tol", "1e-15", "--max-iter", "100000000",
                            "--time-budget", "0.5", "--json", "--save-model", model)
    assert code == EXIT_NOT_CONVERGED, err
    assert report["status"] == "time_budget" and report["converged"] is False
    assert report["gap"] > 0 and report["w_radius"] > 0
    saved = json.loads(model.read_text())
    assert saved["status"] == "time_budget" and saved["w_radius"] == report["w_radius"]
    assert len(saved["w"]) == 8


def test_require_converged_is_an_error_after_the_report(capsys, files, tmp_path) -> None:
    model = tmp_path / "model.json"
    code, report, err = fit(capsys, "fit", "--train", files, "--loss", "hinge", "--solver",
                            "pg", "--max-iter", "3", "--json", "--save-model", model,
                            "--require-converged")
    assert code == EXIT_REQUIRED_CONVERGENCE
    assert report["status"] == "max_iter" and model.exists()
    assert err.startswith("cvxrank: error: pg stopped with status max_iter") and (
        err.count("\n") == 1)


def test_save_model_onto_an_input_file_is_refused(capsys, files) -> None:
    before = files.read_bytes()
    code, report, err = fit(capsys, "fit", "--train", files, "--save-model", files)
    assert code == 2 and report == {} and "that is the input file" in err
    assert files.read_bytes() == before


def test_ctrl_c_returns_the_interrupted_model(files, tmp_path) -> None:
    model = tmp_path / "model.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "cvxrank.cli.main", "fit", "--method", "ocsvm", "--train",
         str(files), "--solver", "pg", "--tol", "1e-15", "--max-iter", "100000000",
         "--json", "--progress", "--save-model", str(model)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.monotonic()
    while time.monotonic() - started < 60:  # until the solver shows its first progress line
        if process.stderr.read(1) == b"\r":
            break
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=60)
    report = json.loads(out)
    assert process.returncode == EXIT_NOT_CONVERGED
    assert report["status"] == Status.INTERRUPTED.value and "interrupted" in report["message"]
    assert json.loads(model.read_text())["status"] == "interrupted"
