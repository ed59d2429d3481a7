"""IR SVM (Li 2011, Sect. 4.2): tau by exhaustive enumeration, mu = 1/n_q, CVXPY references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolbox import rel

from cvxrank import metrics
from cvxrank.certificates.reference import solve_reference
from cvxrank.data import RankingData, build_pairs, count_pairs, make_synthetic
from cvxrank.data.instances import QUICK
from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import entries
from cvxrank.solvers.newton import solve_prsvm_plus
from cvxrank.tolerances import NEWTON_GAP, reference_agreement
from cvxrank.verification.sweep import run_pair


def ranking_data(grades_per_query: list[list[float]]) -> RankingData:
    y = np.concatenate([np.asarray(g, dtype=float) for g in grades_per_query])
    qid = np.repeat(np.arange(len(grades_per_query)), [len(g) for g in grades_per_query])
    X = np.random.default_rng(0).normal(size=(y.size, 3))
    return RankingData.from_arrays(X, y, qid=qid)


def brute_force_tau(data: RankingData) -> dict[tuple[float, float], float]:
    """Mean over queries of the mean NDCG@1 drop over every perfect ranking and every swap.

    For a query: each perfect ranking (grades descending, every order of tied documents) and
    each pair (document of grade a, document of grade b < a), swap the two documents and
    compute NDCG@1 (gain 2^y - 1) with cvxrank.metrics before and after.
    """
    per_type: dict[tuple[float, float], list[float]] = {}
    for q in range(data.n_queries):
        y = data.y[data.query_ptr[q]:data.query_ptr[q + 1]]
        n = y.size
        levels = sorted(set(y.tolist()), reverse=True)
        if len(levels) < 2:
            continue
        groups = [[i for i in range(n) if y[i] == g] for g in levels]
        rankings = [sum((list(p) for p in combo), [])
                    for combo in itertools.product(*(itertools.permutations(g) for g in groups))]
        for a, b in itertools.combinations(levels, 2):  # a > b
            ys, scores = [], []
            for ranking in rankings:
                for i in (i for i in range(n) if y[i] == a):
                    for j in (j for j in range(n) if y[j] == b):
                        for order in (ranking, swapped(ranking, i, j)):
                            s = np.empty(n)
                            s[order] = np.arange(n, 0, -1)  # position 1 gets the top score
                            ys.append(y)
                            scores.append(s)
            ptr = np.arange(0, n * len(ys) + 1, n)
            ndcg = metrics.ndcg_at_k(np.concatenate(ys), np.concatenate(scores), ptr, k=1,
                                     convention="letor3")
            before, after = ndcg[0::2], ndcg[1::2]
            assert np.all(before == 1.0)  # a perfect ranking
            per_type.setdefault((a, b), []).append(float(np.mean(before - after)))
    return {key: float(np.mean(v)) for key, v in per_type.items()}


def swapped(ranking: list[int], i: int, j: int) -> list[int]:
    out = list(ranking)
    pi, pj = out.index(i), out.index(j)
    out[pi], out[pj] = j, i
    return out


# -- tau ----------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(queries=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1,
                        max_size=3))
def test_ndcg1_swap_drop_matches_enumeration(queries) -> None:
    data = ranking_data(queries)
    if all(len(set(g)) < 2 for g in queries):
        with pytest.raises(ValueError, match="no query has documents of two different grades"):
            ndcg1_swap_drop(data)
        return
    expected = brute_force_tau(data)
    positive = [v for v in expected.values() if v > 0]
    assert positive  # a query's top grade always beats its other grades
    floored = ndcg1_swap_drop(data, zero_floor=0.5)
    assert set(floored) == set(expected)
    for key, value in expected.items():
        want = value if value > 0 else 0.5 * min(positive)
        assert floored[key] == pytest.approx(want, rel=1e-12, abs=1e-15)
    if len(positive) < len(expected):
        with pytest.raises(ValueError, match="tau is 0"):
            ndcg1_swap_drop(data)
    else:
        tau = ndcg1_swap_drop(data)
        assert tau == pytest.approx(expected, rel=1e-12)


def test_zero_tau_error_and_zero_floor() -> None:
    # grades 2 > 1 > 0 in one query: 1 vs 0 never reaches position 1, so its tau is 0
    data = ranking_data([[2, 1, 0, 0]])
    with pytest.raises(ValueError, match=r"tau is 0 for the grade pairs \(1, 0\)"):
        ndcg1_swap_drop(data)
    with pytest.raises(ValueError, match=r"tau is 0"):
        IRSVM(data)
    for bad in (0.0, -1.0, 1.5):
        with pytest.raises(ValueError, match=r"zero_floor must be in \(0, 1\]"):
            ndcg1_swap_drop(data, zero_floor=bad)
    tau = ndcg1_swap_drop(data, zero_floor=0.25)
    # (2, 1): 1 - 1/3 = 2/3; (2, 0): 1; (1, 0): 0.25 * 2/3
    assert tau == pytest.approx({(1.0, 0.0): 1 / 6, (2.0, 0.0): 1.0, (2.0, 1.0): 2 / 3})
    assert IRSVM(data, tau=tau).pair_weight.min() > 0


def test_hang_li_example_2() -> None:
    """Fig. 6, Example 2: 14 and 31 pairs, mu = 1/14 and 1/31."""
    data = ranking_data([[3, 2, 2, 1, 1, 1, 1], [3, 3, 2, 2, 2, 1, 1, 1, 1, 1]])
    types: list[dict[tuple[float, float], int]] = []
    for q in range(2):
        y = data.y[data.query_ptr[q]:data.query_ptr[q + 1]]
        counts: dict[tuple[float, float], int] = {}
        for a in y:
            for b in y:
                if a > b:
                    counts[(a, b)] = counts.get((a, b), 0) + 1
        types.append(counts)
    assert types[0] == {(3, 2): 2, (3, 1): 4, (2, 1): 8}
    assert sum(types[0].values()) == 14 and sum(types[1].values()) == 31
    assert count_pairs(data).tolist() == [14, 31]
    # grade pair (2, 1) is never at the top (both queries have a 3): zero tau needs a floor
    with pytest.raises(ValueError, match="tau is 0"):
        IRSVM(data)
    tau = ndcg1_swap_drop(data, zero_floor=0.5)
    # by hand: query 1 has one top document, query 2 two; gains 7, 3, 1
    assert tau[(3.0, 2.0)] == pytest.approx(np.mean([1 - 3 / 7, (1 - 3 / 7) / 2]))
    assert tau[(3.0, 1.0)] == pytest.approx(np.mean([1 - 1 / 7, (1 - 1 / 7) / 2]))
    assert tau[(2.0, 1.0)] == pytest.approx(0.5 * tau[(3.0, 2.0)])
    f = IRSVM(data, tau=tau)
    assert f.mu.tolist() == pytest.approx([1 / 14, 1 / 31])
    assert f.query_weight.tolist() == pytest.approx([1 / 14, 1 / 31])
    # each query's weights sum to the mean tau of its pairs: queries count equally
    sums = np.bincount(f.pairs.query, weights=f.pair_weight)
    mean_tau = [sum(tau[k] * c for k, c in t.items()) / sum(t.values()) for t in types]
    assert sums == pytest.approx(mean_tau)


def test_query_whose_top_grade_is_zero() -> None:
    data = ranking_data([[1, 0, 0], [0, -1, -1]])
    try:
        tau = ndcg1_swap_drop(data, zero_floor=0.5)
    except ValueError:
        return
    assert all(np.isfinite(v) and v > 0 for v in tau.values())


# -- weights and the CVXPY reference ------------------------------------------------------------
def irsvm_data():
    return make_synthetic(n_queries=6, docs_per_query=(5, 14), n_features=4, n_grades=3,
                          seed=17)


def loop_weights(data: RankingData, tau, pairs) -> np.ndarray:
    """tau_k / n_q for each pair, with n_q counted by a double loop."""
    n_q = []
    for q in range(data.n_queries):
        y = data.y[data.query_ptr[q]:data.query_ptr[q + 1]]
        n_q.append(sum(1 for a in y for b in y if a > b))
    query_of = np.repeat(np.arange(data.n_queries), data.query_sizes)
    return np.array([tau[(data.y[i], data.y[j])] / n_q[query_of[i]]
                     for i, j in zip(pairs.upper, pairs.lower, strict=True)])


def test_pair_weights_are_tau_times_mu() -> None:
    data = irsvm_data()
    tau = ndcg1_swap_drop(data, zero_floor=0.5)
    f = IRSVM(data, C=0.1, tau=tau)
    assert f.name == "irsvm-hinge" and f.structured
    assert np.allclose(f.pair_weight, loop_weights(data, tau, f.pairs), rtol=1e-14, atol=0)
    # a callable tau gives the same weights
    g = IRSVM(data, C=0.1, tau=lambda a, b: tau[(a, b)])
    assert np.array_equal(g.pair_weight, f.pair_weight)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "huber"])
def test_reference_equals_ranksvm_with_explicit_weights(loss) -> None:
    data = irsvm_data()
    tau = ndcg1_swap_drop(data, zero_floor=0.5)
    pairs = build_pairs(data)
    C = 2.0
    ir = solve_reference(IRSVM(data, C=C, loss=loss, tau=tau))
    weights = loop_weights(data, tau, pairs)
    rank = solve_reference(RankSVM(data, C=C, loss=loss, pair_weight=weights))
    assert rel(ir.p_star, rank.p_star) <= reference_agreement("CLARABEL")


def test_prsvm_plus_solves_irsvm() -> None:
    data = irsvm_data()
    f = IRSVM(data, C=2.0, loss="squared_hinge", tau=ndcg1_swap_drop(data, zero_floor=0.5))
    ref = solve_reference(f)
    result = solve_prsvm_plus(f)
    assert result.converged
    assert rel(f.primal_value(result.w), ref.p_star) <= NEWTON_GAP


# -- through the registry -----------------------------------------------------------------------
@pytest.mark.parametrize("entry", entries("irsvm"), ids=lambda e: e.name)
def test_registry_irsvm_entries_pass_quick_instance(entry) -> None:
    outcome = run_pair(entry, QUICK[0])
    assert outcome.passed, outcome.summary()
    assert abs(outcome.validation.rel_gap) <= entry.tol
