"""RankMMRanker and ``cvxrank fit --method rankmm`` (Agarwal & Collins 2010, Sects. 2-3).

The estimator's objective against the certified CVXPY optimum for each loss (with explicit
solvers, so that the test does not depend on ``"auto"``'s choice), the objective against a
brute-force evaluation over the explicit pairs (m counts the queries without pairs), predict
and score, qid and group inputs, and the command line's JSON and bad input.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from toolbox import rankmm_query_losses, rel

from cvxrank.certificates.reference import solve_reference
from cvxrank.cli.main import main as cli_main
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import write_svmlight
from cvxrank.estimators import MethodRanker, RankMMRanker
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.metrics import evaluate
from cvxrank.registry import entries
from cvxrank.tolerances import FAST_SOLVER_GAP

C = 2.0


def small_data(seed: int = 5) -> RankingData:
    """Six queries of 5 to 11 documents, three grades, the last query without pairs."""
    rng = np.random.default_rng(seed)
    sizes = [9, 7, 11, 8, 6, 5]
    y = np.concatenate([rng.integers(0, 3, size=k) for k in sizes]).astype(float)
    y[:3] = [2.0, 1.0, 0.0]
    y[-5:] = 1.0  # one grade: no pairs, but it counts in m
    X = rng.normal(size=(y.size, 4)) + 0.5 * np.outer(y, [1.0, -0.5, 0.3, 0.0])
    return RankingData.from_arrays(X, y, qid=np.repeat(np.arange(len(sizes)) * 3 + 7, sizes))


def brute_force_objective(data: RankingData, w: np.ndarray, loss: str) -> float:
    """(1/2)||w||^2 + (C/m) sum_i L_i over explicit loops (Sects. 3.1-3.3)."""
    total = float(rankmm_query_losses(data, w, loss).sum())
    return 0.5 * float(w @ w) + C / data.n_queries * total


@pytest.fixture(scope="module")
def data() -> RankingData:
    return small_data()


@pytest.fixture(scope="module")
def references(data) -> dict:
    return {loss: solve_reference(RankMM(data, C=C, loss=loss)) for loss in RANKMM_LOSSES}


#: (loss, solver) pairs: the CVXPY solvers and the registered hand-written solvers of each
#: loss (apg is registered for the box dual only; see cvxrank/registry/rankmm.py).
CASES = [(loss, solver) for loss in RANKMM_LOSSES for solver in ("clarabel", "ecos")] + [
    (e.formulation.removeprefix("rankmm-"), e.solver) for e in entries()
    if e.method == "rankmm" and not e.stochastic]


@pytest.mark.parametrize(("loss", "solver"), CASES)
def test_estimator_reaches_the_certified_optimum(data, references, loss, solver) -> None:
    model = RankMMRanker(C=C, loss=loss, solver=solver).fit(data.X, data.y, qid=data.qid)
    ref = references[loss]
    assert model.solver_ == solver
    assert rel(model.objective_, ref.p_star) <= FAST_SOLVER_GAP
    assert model.objective_ >= ref.p_star * (1 - 1e-9)  # a primal value, not below p*
    f = RankMM(data, C=C, loss=loss)
    assert model.objective_ == pytest.approx(f.primal_value(model.coef_), rel=1e-12)
    assert model.objective_ == pytest.approx(brute_force_objective(data, model.coef_, loss),
                                             rel=1e-10)
    assert model.n_pairs_ == f.n_pairs and model.n_features_in_ == data.n_features


def test_m_counts_the_queries_without_pairs(data, references) -> None:
    """Dropping the query without pairs changes m from 6 to 5: the optimum of C is the optimum
    of C * 5/6 on the smaller data."""
    last = data.query_ptr[-2]
    short = RankingData.from_arrays(data.X[:last], data.y[:last], qid=data.qid[:last])
    model = RankMMRanker(C=C * 5 / 6, solver="clarabel").fit(short.X, short.y, qid=short.qid)
    assert rel(model.objective_, references["average"].p_star) <= 1e-7


def test_predict_score_and_query_inputs(data) -> None:
    model = RankMMRanker(C=C, loss="max_average", solver="clarabel")
    by_qid = clone(model).fit(data.X, data.y, qid=data.qid)
    by_group = clone(model).fit(data.X, data.y, group=data.query_sizes)
    np.testing.assert_allclose(by_group.coef_, by_qid.coef_, atol=1e-8)
    np.testing.assert_allclose(by_qid.predict(data.X), data.X @ by_qid.coef_)
    expected = evaluate(data.y, data.X @ by_qid.coef_, data.query_ptr, preset="letor3",
                        k=10)["ndcg@10"]
    assert by_qid.score(data.X, data.y, qid=data.qid) == pytest.approx(expected, abs=1e-12)
    assert by_qid.score(data.X, data.y, group=data.query_sizes) == pytest.approx(expected,
                                                                                 abs=1e-12)
    one = clone(model).fit(data.X, data.y)  # no qid: one query, pairs across the queries
    assert one.n_pairs_ > by_qid.n_pairs_
    assert model.get_params() == {"C": C, "loss": "max_average", "solver": "clarabel",
                                  "tol": None, "max_iter": None,
                                  "max_pairs": model.max_pairs, "backend": "memory",
                                  "n_shards": None, "scheduler": None, "workers": 2}


def test_method_ranker_fits_the_same_model(data) -> None:
    named = RankMMRanker(C=C, loss="max", solver="clarabel").fit(data.X, data.y, qid=data.qid)
    generic = MethodRanker(method="rankmm", C=C, loss="max", solver="clarabel").fit(
        data.X, data.y, qid=data.qid)
    np.testing.assert_array_equal(generic.coef_, named.coef_)


@pytest.mark.parametrize("bad, message", [
    ({"loss": "hinge"}, "loss must be one of average, max, max_average"),
    ({"C": -1.0}, "C"),
])
def test_estimator_refuses_bad_parameters(data, bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        RankMMRanker(**bad).fit(data.X, data.y, qid=data.qid)


def test_no_preference_pairs_is_refused(data) -> None:
    with pytest.raises(ValueError, match="no preference pairs"):
        RankMMRanker().fit(data.X, np.ones(data.n_documents), qid=data.qid)


# -- cvxrank fit --method rankmm ---------------------------------------------------------------
@pytest.fixture(scope="module")
def train_file(data, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("rankmm") / "train.txt"
    write_svmlight(data, path)
    return str(path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_fit_cli_json_objective(capsys, data, references, train_file, loss, tmp_path) -> None:
    model_path = tmp_path / "model.json"
    code, out, err = run(capsys, "fit", "--method", "rankmm", "--loss", loss, "--C", str(C),
                         "--train", train_file, "--test", train_file, "--solver", "clarabel",
                         "--save-model", str(model_path), "--json")
    assert code == 0, err
    report = json.loads(out)
    f = RankMM(data, C=C, loss=loss)
    w = np.array(json.loads(model_path.read_text())["w"])
    assert report["objective"] == pytest.approx(f.primal_value(w), rel=1e-12)
    assert rel(report["objective"], references[loss].p_star) <= 1e-7
    assert report["method"] == "rankmm" and report["loss"] == loss
    assert report["n_pairs"] == f.n_pairs and report["n_dual"] == f.n_dual
    assert report["converged"] is True and "ndcg@10" in report


def test_fit_cli_help_states_the_objective(capsys) -> None:
    code, out, _ = run(capsys, "fit", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "(1/2)||w||^2 + (C/m) sum_i L_i" in text and "number of training queries" in text


@pytest.mark.parametrize("args, reason", [
    (("--loss", "foo"), "method rankmm has the losses average, max, max_average; got 'foo'"),
    (("--loss", "hinge"), "method rankmm has the losses average, max, max_average"),
    (("--C", "0"), "--C"),
])
def test_fit_cli_bad_input_one_line(capsys, train_file, args, reason) -> None:
    code, out, err = run(capsys, "fit", "--method", "rankmm", "--train", train_file, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cvxrank: error: ") and reason in err
