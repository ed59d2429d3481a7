"""The separation oracles of DORM (Le & Smola) and SVM MAP (Yue et al.) against brute force.

Every oracle is compared with an exhaustive search over all rankings of random queries of up
to 7 documents (5040 rankings), with the scores and losses of the brute force computed
independently of the oracle (the rankings listed by itertools, the features summed
position by position, average precision by cvxrank.metrics), and the DORM scores
<a(pi), b(y)> are checked against cvxrank.metrics where the definitions coincide.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank import metrics
from cvxrank.oracles import (
    MEASURES,
    ap_loss,
    feature_map,
    ideal_order,
    joint_feature_map,
    measure_loss,
    most_violated_permutation,
    most_violated_position_loss,
    most_violated_ranking,
    mwta_cutoff,
    position_coefficients,
    position_cost,
    position_loss,
    ranking_score,
    score_vectors,
    sorted_assignment,
)

PERMUTATIONS = {n: np.array(list(itertools.permutations(range(n)))) for n in range(1, 8)}
FAMILIES = [("power", 0.5), ("power", 1.0), ("power", 3.0), ("log", 1.0), ("loglog", 1.0)]


def random_query(rng: np.random.Generator, n: int, d: int = 3):
    """Features, weights and grades 0..3; every other query with integers (tied scores)."""
    if rng.random() < 0.5:
        X, w = rng.normal(size=(n, d)), rng.normal(size=d)
    else:
        X, w = rng.integers(-2, 3, size=(n, d)).astype(float), rng.integers(-1, 2, size=d) * 1.0
    return X, w, rng.integers(0, 4, size=n).astype(float)


def measure_options(rng: np.random.Generator, measure: str) -> dict:
    if measure in ("dcg", "ndcg"):
        return {"cutoff": [None, 1, 2, 3, 5, 10][rng.integers(6)]}
    if measure == "precision":
        return {"cutoff": int(rng.choice([1, 2, 3, 5, 10])), "relevance_threshold": 2.0}
    if measure in ("eru", "normalized_eru"):
        return {"neutral": float(rng.integers(0, 2)), "half_life": float(rng.choice([2, 5]))}
    return {}


def brute_features(X: np.ndarray, c: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Phi(x, order) = sum_p c_p x_{order[p]}, for every order (one per row)."""
    return sum(c[p] * X[orders[:, p]] for p in range(orders.shape[1]))


def ranks(orders: np.ndarray) -> np.ndarray:
    """Position of every document, one row per order."""
    return np.argsort(orders, axis=1)


def stacked(y: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every order as one query of cvxrank.metrics: grades, scores ranking it, offsets."""
    n = y.size
    scores = (n - ranks(orders)).astype(float).ravel()
    return np.tile(y, len(orders)), scores, np.arange(len(orders) + 1) * n


# --- conventions ----------------------------------------------------------------------------


def test_an_order_lists_the_document_at_each_position() -> None:
    y = np.array([0.0, 2.0, 1.0])
    a, b = score_vectors(y, "dcg")
    np.testing.assert_allclose(a, [1.0, 1.0 / math.log2(3), 0.5])
    np.testing.assert_allclose(b, [0.0, 3.0, 1.0])
    np.testing.assert_array_equal(ideal_order(y), [1, 2, 0])
    assert ranking_score([1, 2, 0], a, b) == pytest.approx(3.0 + 1.0 / math.log2(3))
    assert ranking_score([0, 1, 2], a, b) == pytest.approx(3.0 / math.log2(3) + 0.5)
    assert measure_loss([1, 2, 0], a, b) == 0.0
    for order in PERMUTATIONS[3]:  # the paper's pi (document -> position) is argsort(order)
        pi = np.argsort(order)
        assert ranking_score(order, a, b) == pytest.approx(sum(a[pi[d]] * b[d] for d in range(3)))
    X = np.eye(3)
    np.testing.assert_allclose(feature_map(X, [2, 0, 1], [3.0, 2.0, 1.0]), [2.0, 1.0, 3.0])


def test_paper_grades_sorted_in_descending_order_make_the_identity_optimal() -> None:
    y = np.array([3.0, 2.0, 2.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ideal_order(y), np.arange(6))
    for measure in MEASURES:
        a, b = score_vectors(y, measure, **({"cutoff": 3} if measure == "precision" else {}))
        assert measure_loss(np.arange(6), a, b) == 0.0


def test_mrr_keeps_the_first_document_of_the_top_grade_and_wta_all_of_them() -> None:
    y = np.array([1.0, 2.0, 0.0, 2.0])
    a, b = score_vectors(y, "mrr")
    np.testing.assert_array_equal(b, [0, 1, 0, 0])
    assert ranking_score([3, 0, 1, 2], a, b) == pytest.approx(1 / 3)
    a, b = score_vectors(y, "wta")
    np.testing.assert_array_equal(a, [1, 0, 0, 0])
    np.testing.assert_array_equal(b, [0, 1, 0, 1])


@pytest.mark.parametrize(
    ("y", "n"),
    [
        ([2, 1, 0, 0], 3),
        ([2, 2, 1, 0], 3),
        ([0, 1, 2, 1, 0], 3),
        ([2, 2, 2, 2, 1, 0], 5),
        ([1, 0, 1, 1, 0, 1, 1], 6),
        ([0, 0, 0, 0], 4),
        ([1, 1, 1], 3),
        ([3, 3], 2),
        ([2], 1),
    ],
)
def test_mwta_cutoff(y: list[int], n: int) -> None:
    assert mwta_cutoff(y) == n


def test_position_coefficients_are_the_papers_decreasing_sequences() -> None:
    np.testing.assert_allclose(position_coefficients(3, "power", d=1.0), [1 / 2, 1 / 3, 1 / 4])
    np.testing.assert_allclose(position_coefficients(2, "power", d=0.5), [2**-0.5, 3**-0.5])
    np.testing.assert_allclose(position_coefficients(2, "log"), [1 / math.log(3), 1 / math.log(4)])
    loglog = position_coefficients(2, "loglog")
    np.testing.assert_allclose(loglog, [1 / math.log(math.log(3)), 1 / math.log(math.log(4))])
    assert loglog[0] == pytest.approx(10.6329, abs=1e-4)
    for family, d in FAMILIES:
        c = position_coefficients(10_000, family, d=d)
        assert np.all(c > 0) and np.all(np.diff(c) < 0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: score_vectors([1, 0], "precision"), "needs a cutoff"),
        (lambda: score_vectors([1, 0], "wta", cutoff=3), "takes no cutoff"),
        (lambda: score_vectors([1, 0], "map"), "measure must be one of"),
        (lambda: score_vectors([1, -1], "dcg"), "finite and >= 0"),
        (lambda: ranking_score([0, 0], [1, 0], [1, 0]), "permutation"),
        (lambda: position_coefficients(3, "power", d=0.0), "d must be > 0"),
        (lambda: most_violated_ranking(np.eye(2), [1, 1], [1, 2]), "booleans"),
    ],
)
def test_bad_input_is_refused(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# --- DORM scores against cvxrank.metrics ------------------------------------------------


def metric_values(measure: str, y: np.ndarray, options: dict, orders: np.ndarray) -> np.ndarray:
    """The measure of every order by cvxrank.metrics, under the matching convention."""
    ys, scores, ptr = stacked(y, orders)
    exp2 = metrics.Convention(gain="exp2", discount="log2", ndcg_short_list="truncate")
    top = metrics.Convention(relevance_threshold=float(y.max()))
    cutoff = options.get("cutoff") or y.size
    if measure == "wta":
        return metrics.winner_takes_all(ys, scores, ptr, convention=top)
    if measure == "mrr":
        return metrics.reciprocal_rank(ys, scores, ptr, convention=top)
    if measure == "dcg":
        return metrics.dcg_at_k(ys, scores, ptr, cutoff, convention=exp2)
    if measure in ("ndcg", "mwta"):
        k = mwta_cutoff(y) if measure == "mwta" else cutoff
        return metrics.ndcg_at_k(ys, scores, ptr, k, convention=exp2)
    if measure == "precision":
        pad = metrics.Convention(
            precision_short_list="pad", relevance_threshold=options["relevance_threshold"]
        )
        return metrics.precision_at_k(ys, scores, ptr, cutoff, convention=pad)
    return metrics.expected_rank_utility(
        ys,
        scores,
        ptr,
        neutral=options["neutral"],
        half_life=options["half_life"],
        normalize=measure == "normalized_eru",
        convention=metrics.Convention(),
    )


@pytest.mark.parametrize("measure", MEASURES)
def test_scores_equal_cvxrank_metrics_on_every_ranking(measure: str) -> None:
    rng = np.random.default_rng(sum(map(ord, measure)))
    for _ in range(12):
        n = int(rng.integers(1, 7))
        y = rng.integers(0, 4, size=n).astype(float)
        if measure == "mrr":  # (10) assumes a single most relevant document
            y[rng.integers(n)] = 4.0
        options = measure_options(rng, measure)
        a, b = score_vectors(y, measure, **options)
        orders = PERMUTATIONS[n]
        expected = metric_values(measure, y, options, orders)
        got = np.array([ranking_score(order, a, b) for order in orders])
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        losses = np.array([measure_loss(order, a, b) for order in orders])
        np.testing.assert_allclose(losses, expected.max() - expected, rtol=1e-12, atol=1e-12)


# --- the general position-dependent loss (19) --------------------------------------------


def test_loss_17_is_the_position_loss_19_of_its_cost() -> None:
    rng = np.random.default_rng(19)
    for measure in MEASURES:
        y = rng.integers(0, 4, size=5).astype(float)
        a, b = score_vectors(y, measure, **({"cutoff": 2} if measure == "precision" else {}))
        cost, constant = position_cost(a, b)
        for order in PERMUTATIONS[5]:
            assert position_loss(order, cost, constant) == pytest.approx(
                measure_loss(order, a, b), abs=1e-12
            )


# --- DORM's most violated permutation against brute force ---------------------------------


def brute_dorm(X, w, a, b, c, reference, orders):
    """Delta(y, pi) + <w, Phi(pi) - Phi(ref)> for every order, with Delta by maximization."""
    score = (a[None, :] * b[orders]).sum(axis=1)
    loss = score.max() - score
    difference = brute_features(X, c, orders) - brute_features(X, c, reference[None, :])
    return loss, difference, loss + difference @ w


def check_violation(violation, orders, loss, difference, objective) -> None:
    assert violation.value == pytest.approx(objective.max(), abs=1e-9 * (1 + abs(objective.max())))
    row = int(np.flatnonzero((orders == violation.order).all(axis=1))[0])
    assert violation.loss == pytest.approx(loss[row], abs=1e-12)
    np.testing.assert_allclose(violation.feature_difference, difference[row], atol=1e-12)


@pytest.mark.parametrize("method", ["auto", "lap"])
@pytest.mark.parametrize(("family", "d"), FAMILIES)
@pytest.mark.parametrize("measure", MEASURES)
def test_most_violated_permutation_equals_brute_force(
    measure: str, family: str, d: float, method: str
) -> None:
    rng = np.random.default_rng([MEASURES.index(measure), FAMILIES.index((family, d))])
    for _ in range(30):
        n = int(rng.integers(1, 8))
        X, w, y = random_query(rng, n)
        a, b = score_vectors(y, measure, **measure_options(rng, measure))
        c = position_coefficients(n, family, d=d)
        reference = ideal_order(y)
        v = most_violated_permutation(X, w, a, b, c, reference, method=method)
        orders = PERMUTATIONS[n]
        loss, difference, objective = brute_dorm(X, w, a, b, c, reference, orders)
        assert loss[int(np.flatnonzero((orders == reference).all(axis=1))[0])] == 0.0
        check_violation(v, orders, loss, difference, objective)
        assert v.value == pytest.approx(v.loss + w @ v.feature_difference, abs=1e-12)
        assert v.solver == "lap" or method == "auto"


def test_most_violated_permutation_accepts_sparse_documents() -> None:
    rng = np.random.default_rng(5)
    X, w, y = random_query(rng, 6, d=4)
    a, b = score_vectors(y, "ndcg", cutoff=3)
    c = position_coefficients(6, "log")
    dense = most_violated_permutation(X, w, a, b, c, ideal_order(y))
    sparse = most_violated_permutation(sp.csr_matrix(X), w, a, b, c, ideal_order(y))
    np.testing.assert_array_equal(dense.order, sparse.order)
    np.testing.assert_allclose(dense.feature_difference, sparse.feature_difference)


# --- the sorting shortcut ----------------------------------------------------------------


def lap_value(X, w, a, b, c, reference) -> float:
    return most_violated_permutation(X, w, a, b, c, reference, method="lap").value


def test_sorting_shortcut_when_a_is_proportional_to_c_equals_the_lap_and_brute_force() -> None:
    rng = np.random.default_rng(24)
    for trial in range(200):
        n = int(rng.integers(1, 8))
        X, w, y = random_query(rng, n)
        family, d = FAMILIES[trial % len(FAMILIES)]
        c = position_coefficients(n, family, d=d)
        a = float(rng.uniform(0.1, 3.0)) * c  # the paper's case a = c, scaled
        b = np.exp2(y) - 1.0
        reference = ideal_order(y)
        v = most_violated_permutation(X, w, a, b, c, reference)
        assert v.solver == "sort"
        assert v.value == pytest.approx(lap_value(X, w, a, b, c, reference), abs=1e-9)
        loss, difference, objective = brute_dorm(X, w, a, b, c, reference, PERMUTATIONS[n])
        check_violation(v, PERMUTATIONS[n], loss, difference, objective)


@pytest.mark.parametrize("measure", MEASURES)
def test_sorting_shortcut_when_scores_and_relevance_disagree_everywhere(measure: str) -> None:
    rng = np.random.default_rng(MEASURES.index(measure) + 100)
    for trial in range(60):
        n = int(rng.integers(1, 8))
        X, _, y = random_query(rng, n)
        a, b = score_vectors(y, measure, **measure_options(rng, measure))
        if trial % 2:  # w = 0: the first iteration of a cutting plane
            w = np.zeros(X.shape[1])
        else:  # scores in the reverse order of b: g = -lambda b
            X, w = np.c_[-b, X], np.r_[rng.uniform(0.1, 5.0), np.zeros(X.shape[1])]
        c = position_coefficients(n, "power", d=float(rng.choice([0.5, 1.0])))
        reference = ideal_order(y)
        v = most_violated_permutation(X, w, a, b, c, reference)
        assert v.solver == "sort"
        loss, difference, objective = brute_dorm(X, w, a, b, c, reference, PERMUTATIONS[n])
        check_violation(v, PERMUTATIONS[n], loss, difference, objective)


def test_sorting_shortcut_answers_only_when_optimal() -> None:
    rng = np.random.default_rng(26)
    answered = refused = 0
    for _ in range(400):
        n = int(rng.integers(2, 8))
        X, w, y = random_query(rng, n)
        measure = MEASURES[rng.integers(len(MEASURES))]
        a, b = score_vectors(y, measure, **measure_options(rng, measure))
        c = position_coefficients(n, "power", d=1.0)
        g = X @ w
        order = sorted_assignment(g, a, b, c)
        if order is None:
            refused += 1
            continue
        answered += 1
        value = (c * g[order]).sum() - (a * b[order]).sum()
        _, _, objective = brute_dorm(X, w, a, b, c, ideal_order(y), PERMUTATIONS[n])
        best = objective.max() - (a * np.sort(b)[::-1]).sum() + (c * g[ideal_order(y)]).sum()
        assert value == pytest.approx(best, abs=1e-9)
    assert answered > 20 and refused > 20


def test_sorting_by_g_minus_b_is_not_optimal_in_general() -> None:
    """Without a = lambda c the shortcut must refuse: sorting by g - b loses here (WTA)."""
    c = position_coefficients(2, "power", d=1.0)
    a, b = score_vectors(np.array([1.0, 0.0]), "wta")
    X, w, reference = np.array([[5.0], [0.0]]), np.ones(1), np.arange(2)
    assert sorted_assignment(X @ w, a, b, c) is None
    lap = most_violated_permutation(X, w, a, b, c, reference)
    np.testing.assert_array_equal(lap.order, [1, 0])
    naive = np.argsort(-(X @ w - b))
    naive_value = measure_loss(naive, a, b) + w @ (
        feature_map(X, naive, c) - feature_map(X, reference, c)
    )
    assert lap.value > naive_value + 0.1


# --- the general position-dependent loss (19): most violated permutation -----------------


def test_most_violated_position_loss_equals_brute_force() -> None:
    rng = np.random.default_rng(190)
    for _ in range(150):
        n = int(rng.integers(1, 8))
        X, w, _ = random_query(rng, n)
        cost, constant = rng.normal(size=(n, n)), float(rng.normal())
        c = position_coefficients(n, "log")
        reference = rng.permutation(n)
        v = most_violated_position_loss(X, w, cost, c, reference, constant=constant)
        orders = PERMUTATIONS[n]
        loss = cost[orders, np.arange(n)].sum(axis=1) + constant
        difference = brute_features(X, c, orders) - brute_features(X, c, reference[None, :])
        check_violation(v, orders, loss, difference, loss + difference @ w)


def test_position_loss_oracle_with_the_cost_of_17_is_the_dorm_oracle() -> None:
    rng = np.random.default_rng(17)
    for _ in range(50):
        n = int(rng.integers(1, 8))
        X, w, y = random_query(rng, n)
        a, b = score_vectors(y, "ndcg", cutoff=int(rng.integers(1, 5)))
        c = position_coefficients(n, "power", d=0.5)
        cost, constant = position_cost(a, b)
        general = most_violated_position_loss(X, w, cost, c, ideal_order(y), constant=constant)
        dorm = most_violated_permutation(X, w, a, b, c, ideal_order(y), method="lap")
        assert general.value == pytest.approx(dorm.value, abs=1e-9)


# --- SVM MAP ---------------------------------------------------------------------------


def brute_map(X, w, relevant, orders):
    """AP(perfect) - AP(pi) by cvxrank.metrics and Psi by an explicit sum over pairs."""
    ys, scores, ptr = stacked(relevant.astype(float), orders)
    ap = metrics.average_precision(ys, scores, ptr, convention=metrics.Convention())
    perfect = np.argsort(~relevant, kind="stable")
    ys, scores, ptr = stacked(relevant.astype(float), perfect[None, :])
    loss = metrics.average_precision(ys, scores, ptr, convention=metrics.Convention())[0] - ap
    rank = ranks(orders)
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    psi = np.zeros((len(orders), X.shape[1]))
    for i in rel:
        for j in irr:
            sign = np.where(rank[:, i] < rank[:, j], 1.0, -1.0)
            psi += sign[:, None] * (X[i] - X[j])[None, :]
    if rel.size and irr.size:
        psi /= rel.size * irr.size
    difference = psi - psi[int(np.flatnonzero((orders == perfect).all(axis=1))[0])]
    return loss, difference, loss + difference @ w


def test_ap_loss_and_feature_map_equal_their_definitions() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(1, 7))
        X, w, y = random_query(rng, n)
        relevant = y >= 2
        orders = PERMUTATIONS[n]
        loss, difference, _ = brute_map(X, w, relevant, orders)
        perfect = np.argsort(~relevant, kind="stable")
        psi_star = joint_feature_map(X, perfect, relevant)
        for row, order in enumerate(orders):
            assert ap_loss(order, relevant) == pytest.approx(loss[row], abs=1e-12)
            np.testing.assert_allclose(
                joint_feature_map(X, order, relevant) - psi_star, difference[row], atol=1e-12
            )


def test_svmmap_most_violated_ranking_equals_brute_force() -> None:
    rng = np.random.default_rng(2007)
    for trial in range(400):
        n = int(rng.integers(1, 8))
        X, w, y = random_query(rng, n)
        if trial % 3 == 0:  # large weights: the pair term dominates the loss
            w = 10.0 * w
        relevant = y >= rng.integers(1, 4)
        v = most_violated_ranking(X, w, relevant)
        orders = PERMUTATIONS[n]
        loss, difference, objective = brute_map(X, w, relevant, orders)
        check_violation(v, orders, loss, difference, objective)
        assert v.value == pytest.approx(v.loss + w @ v.feature_difference, abs=1e-12)
        assert v.solver == "greedy"


def test_svmmap_query_without_pairs_gives_the_zero_piece() -> None:
    X = np.arange(6.0).reshape(3, 2)
    for relevant in ([True, True, True], [False, False, False]):
        v = most_violated_ranking(X, np.ones(2), relevant)
        assert v.loss == 0.0 and v.value == 0.0 and not v.feature_difference.any()
