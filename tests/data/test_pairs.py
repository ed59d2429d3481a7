"""Preference pairs: build_pairs and count_pairs against a brute-force double loop."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cvxrank
from cvxrank.data import (
    PairSet,
    RankingData,
    build_pairs,
    count_pairs,
    level_groups,
    make_synthetic,
    read_lightgbm,
    read_svmlight,
)
from cvxrank.data.pairs import BYTES_PER_PAIR
from cvxrank.errors import CvxrankError, PairLimitError


def brute_force_pairs(data: RankingData) -> set[tuple[int, int, int, float]]:
    """Every (i, j, query, y_i - y_j) with y_i > y_j in the same query, by a double loop."""
    out = set()
    ptr = data.query_ptr
    for q in range(data.n_queries):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(ptr[q], ptr[q + 1]):
                if data.y[i] > data.y[j]:
                    out.add((i, j, q, float(data.y[i] - data.y[j])))
    return out


@st.composite
def ranking_data(draw, fractional: bool = False) -> RankingData:
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=7))
    n = sum(sizes)
    if fractional:
        grade = st.sampled_from([0.0, 0.5, 1.0, 2.25, 3.0])
    else:
        grade = st.integers(0, draw(st.integers(1, 4))).map(float)
    y = draw(st.lists(grade, min_size=n, max_size=n))
    X = np.arange(n * 2, dtype=float).reshape(n, 2)
    return RankingData.from_arrays(X, y, group=sizes)


def check_pairs(data: RankingData, pairs: PairSet) -> None:
    expected = brute_force_pairs(data)
    got = set(
        zip(
            pairs.upper.tolist(),
            pairs.lower.tolist(),
            pairs.query.tolist(),
            pairs.delta.tolist(),
            strict=True,
        )
    )
    assert pairs.n_pairs == len(expected)  # no duplicates
    assert got == expected
    per_query = np.bincount([e[2] for e in expected], minlength=data.n_queries)
    np.testing.assert_array_equal(pairs.pairs_per_query, per_query)
    np.testing.assert_array_equal(count_pairs(data), per_query)
    np.testing.assert_array_equal(pairs.pair_ptr, np.r_[0, np.cumsum(per_query)])
    # documented order: by query, then preferred document, then the other
    keys = np.lexsort((pairs.lower, pairs.upper, pairs.query))
    np.testing.assert_array_equal(keys, np.arange(pairs.n_pairs))
    assert np.all(pairs.delta > 0)
    assert pairs.n_documents == data.n_documents


@settings(max_examples=80, deadline=None)
@given(ranking_data())
def test_build_pairs_matches_brute_force(data: RankingData):
    if count_pairs(data).sum() == 0:
        with pytest.raises(ValueError, match="no preference pairs"):
            build_pairs(data)
        return
    check_pairs(data, build_pairs(data))


@settings(max_examples=40, deadline=None)
@given(ranking_data(fractional=True))
def test_build_pairs_fractional_grades(data: RankingData):
    if count_pairs(data).sum() == 0:
        return
    check_pairs(data, build_pairs(data))


@settings(max_examples=60, deadline=None)
@given(ranking_data(), st.integers(0, 2**31 - 1))
def test_difference_operator(data: RankingData, seed: int):
    if count_pairs(data).sum() == 0:
        return
    pairs = build_pairs(data)
    s = np.random.default_rng(seed).standard_normal(data.n_documents)
    A = pairs.A
    assert A.shape == (pairs.n_pairs, data.n_documents)
    np.testing.assert_array_equal(A @ s, s[pairs.upper] - s[pairs.lower])
    np.testing.assert_array_equal(A.getnnz(axis=1), 2)
    np.testing.assert_array_equal(np.asarray(A.sum(axis=1)).ravel(), 0)
    # every margin of the grades themselves is positive: A @ y == delta
    np.testing.assert_array_equal(A @ data.y, pairs.delta)


@settings(max_examples=60, deadline=None)
@given(ranking_data())
def test_by_lower_groups_pairs(data: RankingData):
    if count_pairs(data).sum() == 0:
        return
    pairs = build_pairs(data)
    order, ptr = pairs.by_lower()
    assert ptr.shape == (data.n_documents + 1,)
    assert ptr[0] == 0 and ptr[-1] == pairs.n_pairs
    np.testing.assert_array_equal(np.sort(order), np.arange(pairs.n_pairs))
    for j in range(data.n_documents):
        block = order[ptr[j] : ptr[j + 1]]
        assert np.all(pairs.lower[block] == j)
        assert np.all(np.diff(block) > 0)  # stable
        # document j is the lower end of exactly the documents of its query with higher grade
        q = data.query_index[j]
        lo, hi = data.query_ptr[q], data.query_ptr[q + 1]
        assert block.size == int(np.sum(data.y[lo:hi] > data.y[j]))


@settings(max_examples=60, deadline=None)
@given(ranking_data())
def test_level_groups(data: RankingData):
    order, ptr, level_query = level_groups(data)
    np.testing.assert_array_equal(np.sort(order), np.arange(data.n_documents))
    distinct = {(int(data.query_index[i]), float(data.y[i])) for i in range(data.n_documents)}
    assert ptr.size - 1 == len(distinct) == level_query.size
    previous = (-1, -np.inf)
    for b in range(ptr.size - 1):
        rows = order[ptr[b] : ptr[b + 1]]
        assert rows.size > 0
        assert np.all(np.diff(rows) > 0)  # rows in data order within a block
        qs = data.query_index[rows]
        assert np.all(qs == level_query[b])
        assert np.unique(data.y[rows]).size == 1
        key = (int(level_query[b]), float(data.y[rows[0]]))
        assert key > previous  # by query, then increasing grade
        previous = key


def test_single_grade_queries_count_zero():
    y = [2, 1, 0, 1, 1, 1, 3, 0, 0]
    data = RankingData.from_arrays(np.zeros((9, 1)), y, group=[3, 3, 1, 2])
    np.testing.assert_array_equal(count_pairs(data), [3, 0, 0, 0])
    pairs = build_pairs(data)
    np.testing.assert_array_equal(pairs.pairs_per_query, [3, 0, 0, 0])
    np.testing.assert_array_equal(pairs.pair_ptr, [0, 3, 3, 3, 3])
    assert set(zip(pairs.upper.tolist(), pairs.lower.tolist(), strict=True)) == {
        (0, 1),
        (0, 2),
        (1, 2),
    }
    np.testing.assert_array_equal(data.queries_with_single_grade(), [1, 2, 3])


def test_all_single_grade_is_an_error():
    data = RankingData.from_arrays(np.zeros((5, 2)), [1, 1, 0, 0, 0], group=[2, 3])
    assert count_pairs(data).sum() == 0
    with pytest.raises(ValueError, match="no preference pairs"):
        build_pairs(data)


def test_pair_limit_error():
    data = make_synthetic(seed=0)
    total = int(count_pairs(data).sum())
    assert build_pairs(data, max_pairs=total).n_pairs == total  # the limit is inclusive
    with pytest.raises(PairLimitError) as info:
        build_pairs(data, max_pairs=total - 1)
    message = str(info.value)
    assert f"{total:,}" in message
    assert "GiB" in message
    assert f"{total * BYTES_PER_PAIR / 2**30:.1f} GiB" in message
    assert isinstance(info.value, CvxrankError) and isinstance(info.value, MemoryError)


def interpreted_lines(function, *args) -> tuple[object, int]:
    """``function(*args)`` and the number of Python lines of cvxrank it executed."""
    root = str(Path(cvxrank.__file__).parent)
    count = 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(root) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        out = function(*args)
    finally:
        sys.settrace(previous)
    return out, count


def test_ohsumed_fold1_train_pairs_fast(shared_data: Path):
    """Fast means vectorized: building OHSUMED's 367,663 pairs runs no more Python than
    building a handful (no Python loop over pairs or queries). Counted in interpreted
    lines, not seconds, so that the verdict does not depend on the machine or its load."""
    data = read_svmlight(shared_data / "letor3_ohsumed/QueryLevelNorm/Fold1/train.txt")
    assert int(count_pairs(data).sum()) == 367663
    tiny = make_synthetic(n_queries=3, docs_per_query=(3, 5), n_features=2, seed=0)
    _, baseline = interpreted_lines(build_pairs, tiny)
    pairs, lines = interpreted_lines(build_pairs, data)
    assert pairs.n_pairs == 367663
    assert lines <= 2 * baseline, (lines, baseline)
    np.testing.assert_array_equal(pairs.delta, data.y[pairs.upper] - data.y[pairs.lower])
    assert np.all(data.qid[pairs.upper] == data.qid[pairs.lower])
    # the one query whose documents are all grade 0 gives no pairs
    assert int(np.sum(pairs.pairs_per_query == 0)) == 1
    assert data.query_ids[pairs.pairs_per_query == 0].tolist() == [8]


def test_lightgbm_pairs_match_brute_force(shared_data: Path):
    data = read_lightgbm(shared_data / "lightgbm_lambdarank/rank.train")
    check_pairs(data, build_pairs(data))
    # "one training query has a single document, so it contributes no pairs"
    assert np.any((data.query_sizes == 1) & (count_pairs(data) == 0))
