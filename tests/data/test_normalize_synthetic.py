"""Per-query normalization and seeded synthetic data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data import (
    RankingData,
    build_pairs,
    make_synthetic,
    query_minmax,
    query_zscore,
    read_svmlight,
)


def _random(seed: int, sparse: bool = False) -> RankingData:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=8)
    n = int(sizes.sum())
    X = rng.standard_normal((n, 6)) * 10.0 ** rng.integers(-3, 4, size=6)
    X[:, 2] = 0.1  # constant everywhere (and 0.1 is not exact in binary)
    start = int(sizes[0])
    X[start : start + sizes[1], 4] = -7.3  # constant inside query 1 only
    if sparse:
        drop = rng.random((n, 6)) < 0.5
        drop[:, [2, 4]] = False  # keep the constant features constant
        X[drop] = 0.0
        return RankingData.from_arrays(sp.csr_matrix(X), np.zeros(n), group=sizes)
    return RankingData.from_arrays(X, np.zeros(n), group=sizes)


def minmax_reference(data: RankingData) -> np.ndarray:
    X = data.X.toarray() if sp.issparse(data.X) else data.X
    out = np.zeros_like(X)
    for q in range(data.n_queries):
        rows = slice(data.query_ptr[q], data.query_ptr[q + 1])
        for k in range(X.shape[1]):
            col = X[rows, k]
            lo, hi = col.min(), col.max()
            if hi > lo:
                out[rows, k] = (col - lo) / (hi - lo)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sparse", [False, True])
def test_query_minmax_matches_loop(seed: int, sparse: bool):
    data = _random(seed, sparse)
    out = query_minmax(data)
    np.testing.assert_allclose(out.X, minmax_reference(data), rtol=0, atol=1e-15)
    assert np.all((out.X >= 0) & (out.X <= 1))
    assert np.all(out.X[:, 2] == 0)  # constant feature -> 0
    start, stop = data.query_ptr[1], data.query_ptr[2]
    assert np.all(out.X[start:stop, 4] == 0)
    # where a feature varies inside a query, min -> 0 and max -> 1 exactly
    for q in range(data.n_queries):
        block = out.X[data.query_ptr[q] : data.query_ptr[q + 1]]
        varies = block.max(axis=0) > 0
        assert np.all(block.min(axis=0) == 0)
        assert np.all(block.max(axis=0)[varies] == 1)
    np.testing.assert_array_equal(out.y, data.y)
    np.testing.assert_array_equal(out.qid, data.qid)


def test_query_minmax_on_query_level_norm_data_is_identity(shared_data: Path):
    # LETOR's QueryLevelNorm files are already min-max scaled per query: within every query
    # every feature has min exactly 0 and max exactly 0 or 1, so scaling again changes nothing.
    for k in (1, 3):
        data = read_svmlight(shared_data / f"letor3_ohsumed/QueryLevelNorm/Fold{k}/test.txt")
        starts = data.query_ptr[:-1]
        lo = np.minimum.reduceat(data.X, starts, axis=0)
        hi = np.maximum.reduceat(data.X, starts, axis=0)
        assert np.all(lo == 0)
        assert set(np.unique(hi).tolist()) == {0.0, 1.0}
        np.testing.assert_array_equal(query_minmax(data).X, data.X)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sparse", [False, True])
def test_query_zscore_per_query_moments(seed: int, sparse: bool):
    data = _random(seed, sparse)
    out = query_zscore(data).X
    ref = minmax_reference(data)  # only to know where a feature varies
    for q in range(data.n_queries):
        rows = slice(data.query_ptr[q], data.query_ptr[q + 1])
        block = out[rows]
        varies = ref[rows].max(axis=0) > 0
        np.testing.assert_allclose(block.mean(axis=0), 0, atol=1e-12)
        np.testing.assert_allclose(block.std(axis=0)[varies], 1, rtol=1e-10)
        assert np.all(block[:, ~varies] == 0)  # constant (incl. single-document) -> 0


def test_query_zscore_constant_inexact_value_is_zero():
    # 0.1 * 3 / 3 != 0.1 in floating point: the feature must still count as constant
    X = np.column_stack([np.full(3, 0.1), [1.0, 2.0, 3.0]])
    out = query_zscore(RankingData.from_arrays(X, [0, 1, 2], qid=[1, 1, 1])).X
    np.testing.assert_array_equal(out[:, 0], 0)
    np.testing.assert_allclose(out[:, 1], [-np.sqrt(1.5), 0, np.sqrt(1.5)])


def test_make_synthetic_deterministic_per_seed():
    a, wa = make_synthetic(seed=3, return_coef=True)
    b, wb = make_synthetic(seed=3, return_coef=True)
    c, wc = make_synthetic(seed=4, return_coef=True)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.qid, b.qid)
    np.testing.assert_array_equal(wa, wb)
    assert not np.array_equal(a.X, c.X)
    assert not np.array_equal(wa, wc)
    assert np.isclose(np.linalg.norm(wa), 1.0)
    g = np.random.default_rng(7)
    d = make_synthetic(seed=g)
    assert d.n_documents == 400


@pytest.mark.parametrize("n_grades", [2, 3, 5])
def test_make_synthetic_shape_and_grades(n_grades: int):
    data = make_synthetic(
        n_queries=30, docs_per_query=(5, 15), n_features=4, n_grades=n_grades, seed=1
    )
    assert data.n_queries == 30 and data.n_features == 4
    assert data.query_sizes.min() >= 5 and data.query_sizes.max() <= 15
    counts = data.grade_counts()
    assert list(counts) == list(range(n_grades))  # every grade present, integers
    values = list(counts.values())
    assert values == sorted(values, reverse=True)  # higher grades rarer


def test_make_synthetic_fixed_sizes_defaults():
    data = make_synthetic()
    assert (data.n_queries, data.n_documents, data.n_features) == (20, 400, 10)
    np.testing.assert_array_equal(data.query_sizes, 20)


def _pairwise_accuracy(data: RankingData, w: np.ndarray) -> float:
    pairs = build_pairs(data)
    return float(np.mean(pairs.A @ (data.X @ w) > 0))


def test_planted_model_ranks_well():
    data, w = make_synthetic(n_queries=30, noise=0.1, seed=2, return_coef=True)
    assert _pairwise_accuracy(data, w) > 0.9
    noisy, w2 = make_synthetic(n_queries=30, noise=2.0, seed=2, return_coef=True)
    assert 0.5 < _pairwise_accuracy(noisy, w2) < _pairwise_accuracy(data, w)
    random_w = np.random.default_rng(0).standard_normal(data.n_features)
    assert _pairwise_accuracy(data, w) > _pairwise_accuracy(data, random_w)


def test_noiseless_planted_model_ranks_every_pair():
    # grades are cut from X @ w itself, so every preference pair is ordered by X @ w
    data, w = make_synthetic(noise=0.0, seed=5, return_coef=True)
    assert _pairwise_accuracy(data, w) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_queries": 0},
        {"n_features": 0},
        {"n_grades": 1},
        {"noise": -1.0},
        {"docs_per_query": 0},
        {"docs_per_query": (5, 2)},
        {"docs_per_query": (0, 2)},
    ],
)
def test_make_synthetic_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_synthetic(**kwargs)
