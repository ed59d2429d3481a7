"""Property-based tests of cvxrank.metrics (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxrank import metrics
from cvxrank.metrics import PRESETS, Convention

CONVENTIONS = [
    *PRESETS.values(),
    Convention(ties="average", no_relevant=1.0),
    Convention(ties="pessimistic", discount="letor", ndcg_short_list="zero"),
    Convention(ties="optimistic", gain="linear", precision_short_list="zero"),
]
TOLERANCE = 1e-12  # averaged ties divide sums of gains by block sizes


@st.composite
def ranking_data(draw, distinct_scores: bool = False):
    """Grades, scores and query_ptr of 1-5 queries of 1-12 documents each."""
    sizes = draw(st.lists(st.integers(1, 12), min_size=1, max_size=5))
    n = sum(sizes)
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    if distinct_scores:
        scores = np.array(draw(st.permutations(range(n))), dtype=float)
    else:
        values = st.sampled_from([0.0, 0.5, 1.0, -2.0])
        scores = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    return y, scores, np.r_[0, np.cumsum(sizes)]


@settings(max_examples=100, deadline=None)
@given(data=ranking_data(), convention=st.sampled_from(CONVENTIONS), k=st.integers(1, 14))
def test_ndcg_and_precision_lie_in_unit_interval(data, convention, k) -> None:
    ndcg = metrics.ndcg_at_k(*data, k, convention=convention)
    precision = metrics.precision_at_k(*data, k, convention=convention)
    for values in (ndcg, precision):
        assert np.all((values >= -TOLERANCE) & (values <= 1 + TOLERANCE))


@settings(max_examples=100, deadline=None)
@given(data=ranking_data(), convention=st.sampled_from(CONVENTIONS))
def test_map_mrr_mean_ndcg_lie_in_unit_interval(data, convention) -> None:
    for measure in (metrics.average_precision, metrics.reciprocal_rank, metrics.mean_ndcg):
        values = measure(*data, convention=convention)
        assert np.all((values >= -TOLERANCE) & (values <= 1 + TOLERANCE))


@settings(max_examples=100, deadline=None)
@given(data=ranking_data(), convention=st.sampled_from(CONVENTIONS), k=st.integers(1, 14))
def test_perfect_ranking_scores_one(data, convention, k) -> None:
    y, _, ptr = data
    sizes = np.diff(ptr)
    has_gain = np.add.reduceat(y, ptr[:-1]) > 0
    ndcg = metrics.ndcg_at_k(y, y, ptr, k, convention=convention)
    counted = has_gain & ((sizes >= k) | (convention.ndcg_short_list == "truncate"))
    np.testing.assert_allclose(ndcg[counted], 1.0, rtol=0, atol=TOLERANCE)
    relevant = np.add.reduceat(y >= convention.relevance_threshold, ptr[:-1]) > 0
    for measure in (metrics.average_precision, metrics.reciprocal_rank, metrics.mean_ndcg):
        values = measure(y, y, ptr, convention=convention)
        np.testing.assert_allclose(values[relevant & has_gain], 1.0, rtol=0, atol=TOLERANCE)
    accuracy = metrics.pairwise_accuracy(y, y, ptr)
    assert np.all(np.isnan(accuracy) | (accuracy == 1.0))


@settings(max_examples=100, deadline=None)
@given(
    data=ranking_data(distinct_scores=True),
    convention=st.sampled_from(CONVENTIONS),
    seed=st.integers(0, 2**32 - 1),
)
def test_permuting_documents_within_queries_changes_nothing(data, convention, seed) -> None:
    y, scores, ptr = data
    rng = np.random.default_rng(seed)
    shuffle = np.concatenate(
        [a + rng.permutation(b - a) for a, b in zip(ptr[:-1], ptr[1:], strict=True)]
    )
    before = metrics.evaluate(y, scores, ptr, preset=convention, k=12, per_query=True)
    after = metrics.evaluate(
        y[shuffle], scores[shuffle], ptr, preset=convention, k=12, per_query=True
    )
    for name, values in before["per_query"].items():
        np.testing.assert_allclose(after["per_query"][name], values, rtol=1e-12, err_msg=name)
    for measure in (metrics.kendall_tau, metrics.pairwise_accuracy, metrics.auc):
        np.testing.assert_allclose(
            measure(y[shuffle], scores[shuffle], ptr), measure(y, scores, ptr), rtol=1e-12
        )


@settings(max_examples=100, deadline=None)
@given(data=ranking_data())
def test_pair_measures_are_consistent(data) -> None:
    y, scores, ptr = data
    accuracy = metrics.pairwise_accuracy(y, scores, ptr)
    reversed_accuracy = metrics.pairwise_accuracy(y, -scores, ptr)
    defined = ~np.isnan(accuracy)
    np.testing.assert_allclose(accuracy[defined] + reversed_accuracy[defined], 1.0, atol=1e-12)
    tau = metrics.kendall_tau(y, scores, ptr)
    assert np.all(np.isnan(tau) | (np.abs(tau) <= 1 + TOLERANCE))
    np.testing.assert_allclose(metrics.kendall_tau(y, -scores, ptr), -tau, atol=1e-12)
