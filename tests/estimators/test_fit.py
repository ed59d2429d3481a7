"""RankSVM estimator and ``cvxrank fit``: optima against the certified CVXPY reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from toolbox import install_clock, rel, slow_if

from cvxrank import fitting
from cvxrank.certificates.reference import solve_reference
from cvxrank.cli.main import main as cli_main
from cvxrank.core import trace as trace_module
from cvxrank.data.ranking_data import row_scores
from cvxrank.data.svmlight import write_svmlight
from cvxrank.data.synthetic import make_synthetic
from cvxrank.errors import CvxrankError
from cvxrank.estimators import RankSVMRanker
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.metrics import evaluate
from cvxrank.tolerances import FAST_SOLVER_GAP

LOSSES = ("hinge", "squared_hinge")


@pytest.fixture(scope="module")
def data():
    return make_synthetic(n_queries=8, docs_per_query=(6, 14), n_features=5, seed=3)


#: pg on the hinge's dual (O(1/k)) takes most of this file's time: left to ``make test``.
@pytest.mark.parametrize("solver, loss", [
    pytest.param(solver, loss, marks=slow_if((solver, loss) == ("pg", "hinge")))
    for solver in ("auto", "pg", "clarabel", "ecos") for loss in LOSSES])
def test_estimator_reaches_reference_optimum(data, loss, solver) -> None:
    ref = solve_reference(RankSVM(data, C=0.3, loss=loss))
    model = RankSVMRanker(C=0.3, loss=loss, solver=solver).fit(data.X, data.y, qid=data.qid)
    assert rel(model.objective_, ref.p_star) <= FAST_SOLVER_GAP
    assert model.n_pairs_ == RankSVM(data, C=0.3).n_dual
    expected = {"hinge": "1-slack", "squared_hinge": "prsvm+"}[loss] if solver == "auto" else solver
    assert model.solver_ == expected
    np.testing.assert_allclose(model.predict(data.X), data.X @ model.coef_)


def test_qid_and_group_give_the_same_model(data) -> None:
    a = RankSVMRanker(C=0.5, solver="clarabel").fit(data.X, data.y, qid=data.qid)
    b = RankSVMRanker(C=0.5, solver="clarabel").fit(data.X, data.y, group=data.query_sizes)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)


def test_params_clone_and_score(data) -> None:
    model = RankSVMRanker(C=2.0, loss="hinge", max_pairs=10_000)
    assert model.get_params() == {
        "C": 2.0, "loss": "hinge", "solver": "auto", "tol": None, "max_iter": None,
        "max_pairs": 10_000, "backend": "memory", "n_shards": None, "scheduler": None,
        "workers": 2,
    }
    copy = clone(model).set_params(C=0.1)
    assert copy.C == 0.1 and model.C == 2.0
    copy.fit(data.X, data.y, qid=data.qid)
    expected = evaluate(data.y, copy.predict(data.X), data.query_ptr, preset="letor3")["ndcg@10"]
    assert copy.score(data.X, data.y, qid=data.qid) == pytest.approx(expected)
    # the planted linear model ranks far better than chance (letor3 scores NDCG@10 of a
    # query with fewer than 10 documents as 0, so look at scikit-learn's convention here)
    assert copy.score(data.X, data.y, qid=data.qid, preset="sklearn") > 0.9


def test_estimator_errors(data) -> None:
    with pytest.raises(ValueError, match="not fitted"):
        RankSVMRanker().predict(data.X)
    model = RankSVMRanker(C=1.0, solver="clarabel").fit(data.X, data.y, qid=data.qid)
    with pytest.raises(ValueError, match="shape"):
        model.predict(data.X[:, :3])
    with pytest.raises(ValueError, match=r"C must be in \[1e-12, 1e\+12\]"):
        RankSVMRanker(C=0.0).fit(data.X, data.y, qid=data.qid)
    with pytest.raises(ValueError, match="solver"):
        RankSVMRanker(solver="nope").fit(data.X, data.y, qid=data.qid)


def test_too_large_for_reference_is_refused(data, monkeypatch) -> None:
    monkeypatch.setattr(fitting, "REFERENCE_MAX_VARIABLES", 10)
    with pytest.raises(CvxrankError, match="too large for the CVXPY reference"):
        RankSVMRanker(solver="clarabel").fit(data.X, data.y, qid=data.qid)


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def files(tmp_path, data):
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    write_svmlight(data, train)
    write_svmlight(make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=4), test)
    return train, test


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_svm_rank_c_is_c_over_the_training_queries(capsys, files, data, tmp_path) -> None:
    """``--c`` (svm_rank's -c) fits ``C = c / n_queries``: the same model file as ``--C``;
    refused with --C or another method, in one line."""
    train, _ = files
    saved = {}
    for name, option in (("c", ["--c", "3"]), ("C", ["--C", repr(3.0 / data.n_queries)])):
        path = tmp_path / f"{name}.json"
        code, _, err = run(capsys, "fit", "--train", str(train), *option, "--save-model",
                           str(path))
        assert code == 0, err
        saved[name] = json.loads(path.read_text())
    assert saved["c"]["params"] == saved["C"]["params"] and saved["c"]["w"] == saved["C"]["w"]
    for extra, message in ((["--C", "1"], "not both"), (["--method", "irsvm"], "ranksvm")):
        code, _, err = run(capsys, "fit", "--train", str(train), "--c", "3", *extra)
        assert code == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("loss", LOSSES)
def test_fit_cli_json(capsys, files, data, tmp_path, loss, monkeypatch) -> None:
    install_clock(monkeypatch, trace_module)  # the solver clock ticks: time > 0 anywhere
    train, test = files
    model_path = tmp_path / "model.json"
    code, out, err = run(capsys, "fit", "--method", "ranksvm", "--loss", loss, "--C", "0.3",
                         "--train", str(train), "--test", str(test), "--json",
                         "--save-model", str(model_path))
    assert code == 0, err
    report = json.loads(out)
    ref = solve_reference(RankSVM(data, C=0.3, loss=loss))
    assert rel(report["objective"], ref.p_star) <= FAST_SOLVER_GAP
    assert report["solver"] == {"hinge": "1-slack", "squared_hinge": "prsvm+"}[loss]
    assert report["converged"] is True
    assert report["iterations"] > 0 and report["time"] > 0
    saved = json.loads(model_path.read_text())
    assert saved["loss"] == loss and len(saved["w"]) == data.n_features
    # the test measures are those of `cvxrank evaluate --json` on the model's scores
    scores = tmp_path / "scores.txt"
    test_data = make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=4)
    scores.write_text("\n".join(repr(float(s)) for s in row_scores(test_data.X,
                                                                     np.array(saved["w"]))))
    code, out, err = run(capsys, "evaluate", "--data", str(test), "--scores", str(scores),
                         "--json")
    assert code == 0, err
    measures = json.loads(out)
    assert set(measures) <= set(report)
    for key, value in measures.items():
        assert report[key] == pytest.approx(value, abs=1e-12), key


def test_fit_cli_text_and_cvxpy_solver(capsys, files) -> None:
    train, _ = files
    code, out, err = run(capsys, "fit", "--C", "0.3", "--train", str(train),
                         "--solver", "clarabel")
    assert code == 0, err
    assert "certified optimal" in out and "objective" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--C", "0"], "argument --C: expected a finite number in [1e-12, 1e+12]"),
        (["--method", "ocsvm", "--loss", "huber"], "method ocsvm has the losses hinge"),
        (["--solver", "nope"], "nope"),
        (["--preset", "nope"], "nope"),
    ],
)
def test_fit_cli_bad_input(capsys, files, args, message) -> None:
    train, _ = files
    code, out, err = run(capsys, "fit", "--train", str(train), *args)
    assert code == 2 and out == ""
    assert err.startswith("cvxrank: error:") and message in err and err.count("\n") == 1


def test_fit_cli_too_large(capsys, files, monkeypatch) -> None:
    monkeypatch.setattr(fitting, "REFERENCE_MAX_VARIABLES", 10)
    train, _ = files
    code, _, err = run(capsys, "fit", "--train", str(train), "--solver", "ecos")
    assert code == 2 and "too large for the CVXPY reference solver ecos" in err


def test_fit_cli_fewer_test_features_are_zero_padded(capsys, files, tmp_path) -> None:
    train, _ = files
    narrow = tmp_path / "narrow.txt"
    narrow.write_text("2 qid:1 1:0.5\n0 qid:1 2:0.25\n1 qid:1 1:-1\n")
    code, out, err = run(capsys, "fit", "--train", str(train), "--test", str(narrow), "--json")
    assert code == 0, err
    assert 0.0 <= json.loads(out)["ndcg@1"] <= 1.0
    wide = tmp_path / "wide.txt"
    wide.write_text("2 qid:1 9:0.5\n0 qid:1 2:0.25\n")
    code, _, err = run(capsys, "fit", "--train", str(train), "--test", str(wide))
    assert code == 2 and "9 features" in err


@pytest.mark.parametrize(
    "loss, p_star_solver", [("hinge", "CLARABEL"), ("squared_hinge", "CLARABEL")]
)
def test_fit_cli_ohsumed_fold1_test_set(capsys, shared_data, loss, p_star_solver) -> None:
    """Issue 3 acceptance: 78,983 pairs, C = 1e-3, optimum to 1e-6 relative."""
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "test.txt"
    code, out, err = run(capsys, "fit", "--method", "ranksvm", "--loss", loss, "--C", "1e-3",
                         "--train", str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["n_pairs"] == 78_983
    from cvxrank.data.svmlight import read_svmlight

    ref = solve_reference(RankSVM(read_svmlight(path), C=1e-3, loss=loss), p_star_solver)
    assert rel(report["objective"], ref.p_star) <= 1e-6


# --------------------------------------------------------------------------- other estimators


def test_irsvm_estimator_reaches_the_irsvm_optimum(data) -> None:
    from cvxrank.estimators import IRSVMRanker
    from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop

    tau = ndcg1_swap_drop(data, zero_floor=0.5)
    for loss, solver in (("hinge", "1-slack"), ("squared_hinge", "prsvm+")):
        ref = solve_reference(IRSVM(data, C=20.0, loss=loss, tau=tau))
        model = IRSVMRanker(C=20.0, loss=loss, tau=tau).fit(data.X, data.y, qid=data.qid)
        assert model.solver_ == solver
        assert rel(model.objective_, ref.p_star) <= FAST_SOLVER_GAP
    # IR SVM is RankSVM with pair weights tau_k / n_q: a different optimum than RankSVM's
    plain = solve_reference(RankSVM(data, C=20.0, loss="squared_hinge"))
    assert rel(model.objective_, plain.p_star) > 1e-3


def test_auc_svm_scores_with_roc_auc_and_fits_one_query() -> None:
    from sklearn.metrics import roc_auc_score

    from cvxrank.data.ranking_data import RankingData
    from cvxrank.estimators import AUCSVM

    source = make_synthetic(n_queries=1, docs_per_query=300, n_features=6, n_grades=2, seed=8)
    X, y = source.X, np.where(source.y > 0, 1, -1)  # labels +-1, as a classifier user has them
    model = AUCSVM(C=1e-3).fit(X, y)
    assert model.solver_ == "prsvm+"
    ref = solve_reference(RankSVM(RankingData.from_arrays(X, y, group=[y.size]), C=1e-3,
                                  loss="squared_hinge"))
    assert rel(model.objective_, ref.p_star) <= FAST_SOLVER_GAP
    scores = model.decision_function(X)
    assert model.score(X, y) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    assert model.score(X, y) > 0.8  # the planted scorer is recovered
    with pytest.raises(ValueError, match="binary labels"):
        AUCSVM().fit(X, np.arange(y.size) % 3)


@pytest.mark.parametrize("margin, solver", [("fixed", "apg"), ("sum", "ecos")])
def test_ordinal_svm_estimator(data, margin, solver) -> None:
    from cvxrank.estimators import OrdinalSVMRanker
    from cvxrank.formulations.ocsvm import OrdinalSVM, OrdinalSVMSumOfMargins

    C = 0.5 if margin == "fixed" else 5.0
    f = (OrdinalSVM if margin == "fixed" else OrdinalSVMSumOfMargins)(data, C=C)
    ref = solve_reference(f, f.reference_solver)
    model = OrdinalSVMRanker(C=C, margin=margin).fit(data.X, data.y, qid=data.qid)
    assert model.solver_ == solver
    # the sum of margins' optimum is 0 here (7e-13): relative to its gap_floor
    assert rel(model.objective_, ref.p_star, f.gap_floor) <= FAST_SOLVER_GAP
    assert model.coef_.shape == (data.n_features,)
    assert model.thresholds_.shape == (np.unique(data.y).size - 1,)
    np.testing.assert_array_equal(model.classes_, np.unique(data.y))
    grades = model.predict_grades(data.X)
    theta = np.concatenate([model.coef_, model.thresholds_]) if margin == "fixed" else None
    if theta is not None:
        np.testing.assert_array_equal(grades, f.predict_grades(theta, data.X))
    assert set(np.unique(grades)) <= set(np.unique(data.y))


def test_fit_cli_irsvm_and_ocsvm(capsys, files, data, tmp_path) -> None:
    train, test = files
    code, out, err = run(capsys, "fit", "--method", "ocsvm", "--C", "0.5", "--train",
                         str(train), "--test", str(test), "--json", "--save-model",
                         str(tmp_path / "oc.json"))
    assert code == 0, err
    report = json.loads(out)
    from cvxrank.formulations.ocsvm import OrdinalSVM

    assert rel(report["objective"], solve_reference(OrdinalSVM(data, C=0.5)).p_star) \
        <= FAST_SOLVER_GAP
    assert "n_pairs" not in report and report["n_dual"] > 0
    assert 0.0 <= report["grade_accuracy"] <= 1.0 and report["grade_mae"] >= 0.0
    saved = json.loads((tmp_path / "oc.json").read_text())
    assert len(saved["thresholds"]) == len(saved["grades"]) - 1
    # IR SVM on data where a grade pair never reaches the top: a one-line error, exit 2
    flat = tmp_path / "flat.txt"
    flat.write_text("2 qid:1 1:1\n1 qid:1 1:0.5\n0 qid:1 1:0\n")
    code, out, err = run(capsys, "fit", "--method", "irsvm", "--train", str(flat))
    assert code == 2 and "tau is 0" in err and err.count("\n") == 1


def test_fit_reports_the_process_peak_memory(tmp_path, capsys) -> None:
    """``peak_memory_mb``: the process's peak, at least what the fit's X takes."""
    import json

    import numpy as np

    from cvxrank.cli.main import main
    from cvxrank.data import make_synthetic, write_svmlight

    data = make_synthetic(n_queries=40, docs_per_query=50, n_features=200, seed=0)
    path = tmp_path / "train.txt"
    write_svmlight(data, path)
    assert main(["fit", "--train", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    x_mb = np.asarray(data.X).nbytes / 2 ** 20
    assert x_mb < report["peak_memory_mb"] < 100_000


def test_fit_model_radius_zero_stops_at_the_tolerance(capsys, shared_data) -> None:
    # the 1-slack at svm_rank's precision on OHSUMED Fold1 (c = 1): by default it goes on to
    # the model radius 1e-4 ||w||; with --model-radius 0 it stops where the tolerance is met
    # (as svm_rank does), its certificate as good
    train = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "train.txt"
    args = ("fit", "--loss", "hinge", "--C", repr(1 / 63), "--tol", "1e-3", "--train",
            str(train), "--json")
    code, out, err = run(capsys, *args)
    assert code == 0, err
    default = json.loads(out)
    code, out, err = run(capsys, *args, "--model-radius", "0")
    assert code == 0, err
    at_tol = json.loads(out)
    assert at_tol["converged"] and 0 <= at_tol["relative_gap"] <= 1e-3
    assert at_tol["iterations"] < default["iterations"]
    assert at_tol["objective"] >= default["objective"] - 1e-3 * default["objective"]
    assert at_tol["read_time"] >= 0 and "cg_iterations" not in at_tol
    code, _, err = run(capsys, *args, "--model-radius", "-1")
    assert code == 2 and "--model-radius" in err


def test_fit_json_reports_newton_products_and_reading(capsys, files) -> None:
    train, _ = files
    code, out, err = run(capsys, "fit", "--C", "0.3", "--train", str(train), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["cg_iterations"]) == report["iterations"]
    assert all(k >= 1 for k in report["cg_iterations"])
    assert 0 <= report["read_time"] < 60
    assert report["peak_memory_mb"] > 10
