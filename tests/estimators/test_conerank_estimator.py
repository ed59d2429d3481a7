"""ConeRank (Tran & Pham) as an estimator, a method of the table and ``cvxrank fit``.

Alg. 2's vote against the linear scorer ``pinv(U)^T 1``, the estimator on synthetic data,
its errors, the CLI's JSON and the exclusions (``MethodRanker``, ``fit_formulation``, ``grid``),
and a short fit on MQ2008 (skipped without ``../shared/data``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from toolbox import install_clock

from cvxrank import methods
from cvxrank.cli.main import main as cli_main
from cvxrank.core import trace as trace_module
from cvxrank.core.trace import Status
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import read_svmlight, write_svmlight
from cvxrank.data.synthetic import make_synthetic
from cvxrank.errors import CapabilityError
from cvxrank.estimators import ConeRankRanker, MethodRanker
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.conerank import ConeRank, linear_direction, vote_scores
from cvxrank.metrics import evaluate
from cvxrank.solvers.conerank import STOCHASTIC_PASSES
from cvxrank.utils.threads import blas_threads


@pytest.fixture(autouse=True)
def one_blas_thread():
    """The folding-in multiplies (p x K) by (K x K) matrices; a multi-threaded BLAS on a
    busy 2-core machine makes those up to 15x slower (spin-waiting), so one thread."""
    with blas_threads(1):
        yield


@pytest.fixture(scope="module")
def data() -> RankingData:
    return make_synthetic(n_queries=8, docs_per_query=(6, 14), n_features=5, seed=3)


def expected_votes(scores: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """Alg. 2's votes predicted from linear scores: documents of the query scored lower, plus
    the earlier ones scored equal (a tie's vote goes to the later document)."""
    votes = np.zeros(scores.size)
    for lo, hi in zip(query_ptr[:-1], query_ptr[1:], strict=True):
        s = scores[lo:hi]
        votes[lo:hi] = ((s[None, :] < s[:, None]).sum(axis=1)
                        + np.tril(s[None, :] == s[:, None], k=-1).sum(axis=1))
    return votes


# -- Alg. 2: the vote is the linear scorer's ranking -------------------------------------
@pytest.mark.parametrize("N, K", [(6, 3), (6, 6), (4, 9)])
@pytest.mark.parametrize("seed", [0, 1])
def test_vote_ranks_as_the_linear_scorer(N, K, seed) -> None:
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((N, K))
    sizes = rng.integers(1, 30, size=12)
    X = rng.standard_normal((int(sizes.sum()), N))
    X[5] = X[3]  # an exact duplicate (tied scores) in the first query
    ptr = np.r_[0, np.cumsum(sizes)]
    votes = vote_scores(U, X, ptr)
    scores = X @ linear_direction(U)
    np.testing.assert_array_equal(votes, expected_votes(scores, ptr))
    # the same ranking in every query: for every pair, votes and scores agree in order
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=True):
        i, j = np.triu_indices(hi - lo, k=1)
        s, a = scores[lo:hi], votes[lo:hi]
        untied = s[i] != s[j]
        assert np.all(np.sign(s[i] - s[j])[untied] == np.sign(a[i] - a[j])[untied])
    # a query's votes sum to its number of pairs
    np.testing.assert_array_equal(np.add.reduceat(votes, ptr[:-1]), sizes * (sizes - 1) / 2)


# -- the estimator ------------------------------------------------------------------------
def test_estimator_fits_and_predicts(data) -> None:
    model = ConeRankRanker(K=3, mu=0.05, n_passes=4).fit(data.X, data.y, qid=data.qid)
    f = ConeRank(data, K=3)
    assert model.U_.shape == (data.n_features, 3)
    assert np.all(np.linalg.norm(model.U_, axis=0) <= f.c * (1 + 1e-12))
    np.testing.assert_allclose(model.coef_, linear_direction(model.U_))
    assert model.objective_ == pytest.approx(f.primal_value(model.run_.w), rel=1e-12)
    assert model.n_iter_ == 4 and model.solver_ == "stochastic-sg"
    assert model.n_pairs_ == f.pairs.n_pairs and model.n_features_in_ == data.n_features
    primal = model.run_.trace.as_arrays()["primal"]
    assert primal[-1] < primal[0]  # the passes lower (18)
    # predict: Alg. 2's votes per query; rows given in any order come back in that order
    votes = model.predict(data.X, qid=data.qid)
    np.testing.assert_array_equal(votes, vote_scores(model.U_, data.X, data.query_ptr))
    perm = np.random.default_rng(0).permutation(data.n_documents)
    np.testing.assert_array_equal(model.predict(data.X[perm], qid=data.qid[perm]), votes[perm])
    # without queries all rows are one query; the linear scorer is X @ coef_
    assert model.predict(data.X).max() == data.n_documents - 1
    linear = clone(model).set_params(scoring="linear").fit(data.X, data.y, qid=data.qid)
    np.testing.assert_array_equal(linear.U_, model.U_)
    np.testing.assert_allclose(linear.predict(data.X), data.X @ model.coef_)
    # score is NDCG@10 of those scores; vote and linear rank alike
    expected = evaluate(data.y, votes, data.query_ptr, preset="sklearn")["ndcg@10"]
    assert model.score(data.X, data.y, qid=data.qid, preset="sklearn") == pytest.approx(expected)
    assert linear.score(data.X, data.y, qid=data.qid, preset="sklearn") == pytest.approx(
        expected)
    assert expected > 0.8  # the planted scorer is found (random U: about 0.53)


@pytest.mark.parametrize("solver, variant", [("stochastic", "eg"), ("alternation", "sg")])
def test_estimator_solvers_match_fit_formulation(data, solver, variant) -> None:
    model = ConeRankRanker(K=2, solver=solver, variant=variant, n_passes=2,
                           random_state=5).fit(data.X, data.y, qid=data.qid)
    f = ConeRank(data, K=2)
    run = fit_formulation(f, f"{solver}-{variant}", max_iter=2, seed=5)
    np.testing.assert_array_equal(model.run_.w, run.w)
    assert model.solver_ == run.solver == f"{solver}-{variant}" and run.n_iter <= 2
    if solver == "stochastic":  # no stopping test: it makes its passes, as asked
        assert run.status is Status.MAX_ITER and run.finished and run.n_iter == 2
        assert model.status_ == "max_iter"
    if solver == "alternation":
        primal = run.trace.as_arrays()["primal"]
        assert np.all(np.diff(primal) <= 1e-12 * primal[0])  # never increases


def test_default_passes_and_params() -> None:
    model = ConeRankRanker()
    assert model.get_params() == {
        "K": 10, "variant": "sg", "solver": "stochastic", "mu": None, "n_passes": None,
        "c": None, "lambda_l": 1.0, "lambda_u": 1.0, "alpha": 1.0, "rho": None,
        "scoring": "vote", "tol": None, "random_state": 0}
    assert STOCHASTIC_PASSES == {"sg": 20, "eg": 5}
    one = make_synthetic(n_queries=2, docs_per_query=5, n_features=3, seed=0)
    for variant in ("sg", "eg"):
        fitted = ConeRankRanker(K=2, variant=variant).fit(one.X, one.y, qid=one.qid)
        assert fitted.n_iter_ == STOCHASTIC_PASSES[variant]


@pytest.mark.parametrize("params, message", [
    ({"variant": "nope"}, "variant must be 'sg' or 'eg'"),
    ({"solver": "nope"}, "solver must be 'stochastic' or 'alternation'"),
    ({"scoring": "nope"}, "scoring must be one of vote, linear, got 'nope'"),
    ({"K": 0}, "K must be an integer >= 1, got 0"),
    ({"K": 2.5}, "K must be an integer >= 1, got 2.5"),
    ({"n_passes": 0}, "n_passes must be a positive integer"),
    ({"n_passes": 2.5}, "n_passes must be a positive integer"),
    ({"mu": -1.0}, "mu must be a finite number > 0, got -1"),
    ({"solver": "alternation", "mu": 0.01}, "mu is the stochastic solver's step"),
    ({"tol": 1e-3}, "tol is the alternation's stopping test"),
    ({"lambda_u": 2.0}, "lambda_l = lambda_u = 1"),
    ({"lambda_l": 2.0}, "need 0 < lambda_l <= lambda_u"),
    ({"alpha": 0.0}, "alpha and rho must be finite and > 0"),
])
def test_bad_parameters_are_refused(data, params, message) -> None:
    with pytest.raises(ValueError, match=message):
        ConeRankRanker(**{"n_passes": 1, **params}).fit(data.X, data.y, qid=data.qid)


def test_bad_input_is_refused(data) -> None:
    with pytest.raises(NotFittedError):
        ConeRankRanker().predict(data.X)
    with pytest.raises(ValueError, match="no preference pairs"):
        ConeRankRanker(n_passes=1).fit(data.X, np.ones(data.n_documents))
    split = (data.query_index % 2).astype(float)  # two grades, never in one query
    with pytest.raises(ValueError, match="no preference pairs"):
        ConeRankRanker(n_passes=1).fit(data.X, split, qid=data.qid)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ConeRankRanker(n_passes=1).fit(np.full((3, 2), np.nan), [0, 1, 2])
    model = ConeRankRanker(K=2, n_passes=1).fit(data.X, data.y, qid=data.qid)
    with pytest.raises(ValueError, match="X has 3 features, but ConeRankRanker is expecting 5"):
        model.predict(data.X[:, :3])
    with pytest.raises(ValueError, match="qid has shape"):
        model.predict(data.X, qid=data.qid[:-1])


# -- the methods table and what does not take ConeRank -----------------------------------
def test_methods_row_and_exclusions(data) -> None:
    row = methods.get("conerank")
    assert row.losses == ("squared_distance",)
    assert row.solvers == ("stochastic-sg", "stochastic-eg", "alternation-sg", "alternation-eg")
    est = row.make_estimator(K=3, solver="alternation", C=1.0)
    assert type(est) is ConeRankRanker and est.K == 3 and est.solver == "alternation"
    f = row.build(data, K=2)
    assert isinstance(f, ConeRank) and f.K == 2
    with pytest.raises(ValueError, match=r"conerank takes no C \(its parameters: K, c, .*"
                                         "ConeRankRanker"):
        MethodRanker(method="conerank").fit(data.X, data.y, qid=data.qid)
    # an objective like the others: fit_formulation runs its solvers, nothing else does
    run = fit_formulation(f, "auto", max_iter=1)
    assert run.solver == "stochastic-sg" and run.finished and np.isnan(run.gap)
    assert run.w_radius == np.inf  # non-convex: no certificate on the model
    with pytest.raises(CapabilityError, match="stochastic-sg.*cone_blocks"):
        fit_formulation(methods.get("ranksvm").build(data, C=1.0), "stochastic-sg")
    with pytest.raises(ValueError, match="not convex"):
        fit_formulation(f, "clarabel")


# -- cvxrank fit --------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path, data):
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    write_svmlight(data, train)
    write_svmlight(make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=4), test)
    return train, test


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli_main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("variant", ["sg", "eg"])
def test_fit_cli_json(capsys, files, data, tmp_path, variant, monkeypatch) -> None:
    install_clock(monkeypatch, trace_module)  # the solver clock ticks: time > 0 anywhere
    train, test = files
    model_path = tmp_path / "model.json"
    code, out, err = run(capsys, "fit", "--method", "conerank", "--solver",
                         f"stochastic-{variant}", "--K", "3", "--max-iter", "2",
                         "--train", train, "--test", test, "--json", "--save-model", model_path)
    assert code == 3, err  # no stopping test: it stops at its max_iter passes
    report = json.loads(out)
    model = ConeRankRanker(K=3, variant=variant, n_passes=2).fit(data.X, data.y, qid=data.qid)
    assert report["method"] == "conerank" and report["loss"] == "squared_distance"
    assert report["K"] == 3 and "C" not in report
    assert report["solver"] == f"stochastic-{variant}" and report["iterations"] == 2
    assert report["objective"] == pytest.approx(model.objective_, rel=1e-12)
    assert report["n_pairs"] == model.n_pairs_ and report["time"] > 0
    assert report["status"] == "max_iter" and report["converged"] is False
    assert "2 passes" in report["message"] and report["w_radius"] is None
    # nothing is certified for a non-convex model
    assert not any(c["certified"] for c in report["certified"].values())
    # the test measures are the estimator's vote scores evaluated like `cvxrank evaluate`
    test_data = make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=4)
    votes = model.predict(test_data.X, qid=test_data.qid)
    expected = evaluate(test_data.y, votes, test_data.query_ptr, preset="letor3")
    assert report["map"] == pytest.approx(expected["map"], abs=1e-12)
    assert report["ndcg@10"] == pytest.approx(expected["ndcg@10"], abs=1e-12)
    saved = json.loads(model_path.read_text())
    np.testing.assert_allclose(saved["U"], model.U_, rtol=1e-12)
    np.testing.assert_allclose(saved["v"], model.coef_, rtol=1e-12)


def test_fit_cli_alternation_text(capsys, files) -> None:
    train, test = files
    code, out, err = run(capsys, "fit", "--method", "conerank", "--solver", "alternation-eg",
                         "--K", "2", "--max-iter", "1", "--scoring", "linear", "--train",
                         train, "--test", test)
    assert code in (0, 3), err
    assert "conerank (squared_distance, K=2, scoring=linear)" in out and "alternation-eg" in out
    assert "MAP=" in out


@pytest.mark.parametrize("args, message", [
    (["--method", "ranksvm", "--K", "3"], "--K: not a parameter of --method ranksvm"),
    (["--method", "irsvm", "--mu", "0.1"], "--mu: not a parameter of --method irsvm"),
    (["--method", "conerank", "--C", "1"], "--C: not a parameter of --method conerank"),
    (["--method", "conerank", "--solver", "prsvm+"], "solver 'prsvm+' cannot run on"),
    (["--method", "conerank", "--solver", "nope"], "unknown solver 'nope'"),
    (["--method", "conerank", "--loss", "hinge"], "method conerank has the losses"),
    (["--method", "conerank", "--scoring", "xx"], "argument --scoring: invalid choice"),
    (["--method", "conerank", "--max-iter", "0"], "argument --max-iter"),
])
def test_fit_cli_bad_options(capsys, files, args, message) -> None:
    train, _ = files
    code, out, err = run(capsys, "fit", "--train", train, *args)
    assert code == 2 and out == ""
    assert err.startswith("cvxrank: error:") and message in err and err.count("\n") == 1


def test_grid_fits_conerank_like_any_method(capsys, tmp_path) -> None:
    """One contract: the LETOR grid runs ConeRank's default solver and scores by its votes;
    a non-convex model certifies none of its measures."""
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for seed, split in enumerate(("train", "vali", "test")):
        write_svmlight(make_synthetic(n_queries=3, docs_per_query=5, n_features=3, seed=seed),
                       fold / f"{split}.txt")
    code, out, err = run(capsys, "grid", "--method", "conerank", "--data", tmp_path,
                         "--param", "lambda_u=1", "--select", "map", "--json")
    assert code == 0, err
    (result,) = json.loads(out)["folds"]
    assert result["solver"] == "stochastic-sg" and result["status"] == "max_iter"
    assert not any(c["certified"] for c in result["certified"]["test"].values())
    train = ConeRank(read_svmlight(fold / "train.txt"), K=10, lambda_u=1.0)
    run_ = fit_formulation(train, "auto", seed=0)
    test = read_svmlight(fold / "test.txt")
    expected = evaluate(test.y, train.scores(run_.w, test), test.query_ptr, preset="letor3")
    assert result["test"]["map"] == pytest.approx(expected["map"], abs=1e-12)


# -- real data ----------------------------------------------------------------------------
def test_mq2008_vote_and_linear_agree(shared_data) -> None:
    """One outer iteration of the alternation on 80 queries of MQ2008 Fold1 (z-scored with
    the training statistics, as the paper does): it ranks far better than its random start,
    and the vote and the linear scorer order every test pair alike (ties aside) and give the
    same test MAP up to their tie rule."""
    from cvxrank.data.letor import read_letor_fold

    folds = read_letor_fold(shared_data / "letor4_mq2008", 1, splits=("train", "test"))
    train, test = folds["train"].subset(np.arange(80)), folds["test"]
    X = np.asarray(train.X.toarray() if hasattr(train.X, "toarray") else train.X)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    Xt = (np.asarray(test.X.toarray() if hasattr(test.X, "toarray") else test.X) - mean) / std
    model = ConeRankRanker(solver="alternation", n_passes=1).fit((X - mean) / std, train.y,
                                                                   qid=train.qid)
    votes = model.predict(Xt, qid=test.qid)
    scores = Xt @ model.coef_
    bad = 0
    for lo, hi in zip(test.query_ptr[:-1], test.query_ptr[1:], strict=True):
        i, j = np.triu_indices(hi - lo, k=1)
        s, a = scores[lo:hi], votes[lo:hi]
        far = np.abs(s[i] - s[j]) > 1e-9 * np.abs(s).max()
        bad += int(np.count_nonzero((np.sign(s[i] - s[j]) != np.sign(a[i] - a[j])) & far))
    assert bad == 0
    maps = [evaluate(test.y, s, test.query_ptr, preset="letor4")["map"]
            for s in (votes, scores)]
    assert maps[0] == pytest.approx(maps[1], abs=5e-3)
    assert maps[0] > 0.35  # 0.385 here; the random start (the paper's) scores 0.25
