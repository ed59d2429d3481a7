"""``cvxrank reproduce le-smola-digits``: Le & Smola Sect. 6.2's protocol on load_digits."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from cvxrank.cli.main import main
from cvxrank.experiments.le_smola import digits as dg

pytestmark = pytest.mark.slow  # a reproduction run (its quick preset, about 30 s)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    out = tmp_path_factory.mktemp("digits")
    code = main(["reproduce", "le-smola-digits", "--quick", "--out", str(out), "--json"])
    return code, json.loads((out / "le-smola-digits.json").read_text()), str(out)


def test_quick_cli_writes_finite_table(quick_run, capsys) -> None:
    code, result, out = quick_run
    assert code == 0
    assert result["targets"] == list(QUICK["targets"])
    assert result["n_folds"] == QUICK["n_folds"]
    labels = {m["label"] for m in result["methods"]}
    assert labels == {"DORM NDCG@10", "DORM Prec@10", "RankSVM (hinge)", "LinearSVC"}
    for target in result["targets_detail"]:
        assert len(target["methods"]) == 4
        for m in target["methods"]:
            assert len(m["test_per_query"]) == QUICK["n_test_queries"]
            grid = next(x["C_grid"] for x in result["methods"] if x["label"] == m["method"])
            assert m["selected_C"] in grid
            for v in (m["test_mean"], m["test_std"], *m["test_per_query"],
                      *m["cv_ndcg@10"].values()):
                assert math.isfinite(v) and 0.0 <= v <= 100.0
    with open(f"{out}/le-smola-digits.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(0.0 <= float(r["test_mean"]) <= 100.0 for r in rows)
    md = open(f"{out}/le-smola-digits.md").read()
    assert "| mean |" in md and "one-vs-rest" in md and "Differences from the paper" in md


def test_quick_dorm_beats_random_scorer(quick_run) -> None:
    """A broken fit (w = 0, or a wrong sign) would sit at the chance level (about 5-10)."""
    _, result, _ = quick_run
    for target in result["targets_detail"]:
        source = dg.DigitsSource(0, target["target"], QUICK["n_train_queries"],
                                 QUICK["n_test_queries"])
        test = dg.load_queries(source).test
        rng = np.random.default_rng(1)
        random = np.mean([np.mean(dg.ndcg_per_query(test, rng.standard_normal(
            test.n_documents))) for _ in range(5)])
        dorm = next(m for m in target["methods"] if m["method"] == "DORM NDCG@10")
        assert not dorm["zero_model"]
        assert dorm["test_mean"] > random + 50.0
        assert np.mean(target["zero_model_per_query"]) < 50.0


def test_pools_disjoint_and_stratified() -> None:
    train, test = dg.split_pools(0)
    assert np.intersect1d(train, test).size == 0
    assert train.size + test.size == 1797
    labels = dg._digits()[1]
    assert np.all(np.abs(np.bincount(labels[train]) - np.bincount(labels[test])) <= 1)


QUICK = dg.DigitsConfig.QUICK


@pytest.mark.parametrize("sizes", [(dg.N_QUERIES, dg.N_QUERIES),
                                   (QUICK["n_train_queries"], QUICK["n_test_queries"])])
def test_queries_relevance_and_sampling(sizes) -> None:
    n_train, n_test = sizes
    source = dg.DigitsSource(3, 7, n_train, n_test)
    q = dg.load_queries(source)
    X, labels = dg._digits()
    train_pool, test_pool = dg.split_pools(3)
    assert q.train_rows.shape == (n_train, dg.DOCS_PER_QUERY)
    assert q.test_rows.shape == (n_test, dg.DOCS_PER_QUERY)
    assert np.isin(q.train_rows, train_pool).all() and np.isin(q.test_rows, test_pool).all()
    for data, rows in ((q.train, q.train_rows), (q.test, q.test_rows)):
        assert all(np.unique(r).size == r.size for r in rows)  # no repeat within a query
        assert np.array_equal(data.query_sizes, np.full(rows.shape[0], dg.DOCS_PER_QUERY))
        assert np.array_equal(data.y, (labels[rows.ravel()] == 7).astype(float))
        assert np.array_equal(data.X, X[rows.ravel()])
        assert 0.0 <= data.X.min() and data.X.max() <= 1.0
        assert all(data.y[a:b].sum() >= 1 for a, b in zip(data.query_ptr[:-1],
                                                          data.query_ptr[1:], strict=True))
    dg.load_queries.cache_clear()
    again = dg.load_queries(source)
    assert again is not q
    assert np.array_equal(again.train_rows, q.train_rows)
    assert np.array_equal(again.test_rows, q.test_rows)
    other = dg.load_queries(dg.DigitsSource(4, 7, n_train, n_test))
    assert not np.array_equal(other.train_rows, q.train_rows)


def test_sample_queries_redraws_queries_without_relevant() -> None:
    pool = np.arange(200)
    relevant = np.zeros(200, dtype=bool)
    relevant[[5]] = True  # one relevant image: most draws of 10 miss it
    rows = dg.sample_queries(np.random.default_rng(0), pool, relevant, 20, 10)
    assert all(5 in r for r in rows)
    with pytest.raises(ValueError, match="no relevant"):
        dg.sample_queries(np.random.default_rng(0), pool, np.zeros(200, bool), 1, 10)


def test_bad_options_exit_2(tmp_path, capsys) -> None:
    assert main(["reproduce", "le-smola-digits", "--targets", "12",
                 "--out", str(tmp_path)]) == 2
    assert main(["reproduce", "le-smola-digits", "--folds", "1", "--quick",
                 "--out", str(tmp_path)]) == 2
    with pytest.raises(ValueError, match="folds"):
        dg.DigitsConfig(targets=[0], n_train_queries=4, n_folds=5)
