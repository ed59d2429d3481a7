"""RankMM (Agarwal & Collins 2010, Sects. 2-3): losses by brute force, the printed duals,
strong duality after the stated scaling, and the numpy evaluators against CVXPY."""

from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxrank.certificates.reference import SOLVER_OPTIONS, solve_reference
from cvxrank.data import RankingData, make_synthetic
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.tolerances import EXPRESSION_MATCH, relative_gap

#: Primal and printed-dual optima must agree to this after the stated scaling (issue 7).
DUALITY_MATCH = 1e-7


def small_data(seed: int, *, empty_query: bool = True) -> RankingData:
    """Five queries of 3 grades with ties, the last one (optionally) without pairs."""
    rng = np.random.default_rng(seed)
    sizes = [7, 5, 9, 6, 4]
    y = np.concatenate([rng.integers(0, 3, size=k) for k in sizes]).astype(float)
    y[:3] = [2.0, 1.0, 0.0]  # the first query has every grade
    if empty_query:
        y[-4:] = 1.0
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(y.size, 4))
    return RankingData.from_arrays(X, y, qid=qid)


def brute_force_losses(data: RankingData, w: np.ndarray, loss: str) -> np.ndarray:
    """L_i(w) from the definitions, looping over every preference pair of every query."""
    s = np.asarray(data.X @ w)
    out = np.zeros(data.n_queries)
    for i in range(data.n_queries):
        docs = range(data.query_ptr[i], data.query_ptr[i + 1])
        hinge = {(j, k): max(0.0, (data.y[j] - data.y[k]) - (s[j] - s[k]))
                 for j, k in itertools.product(docs, docs) if data.y[j] > data.y[k]}
        if not hinge:
            continue
        if loss == "average":
            out[i] = np.mean(list(hinge.values()))
        elif loss == "max":
            out[i] = max(hinge.values())
        else:
            lows = {k for _, k in hinge}
            out[i] = max(np.mean([v for (_, k2), v in hinge.items() if k2 == k]) for k in lows)
    return out


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1e-3, 0.3, 1.0, 30.0]))
def test_query_losses_match_brute_force(loss: str, seed: int, scale: float) -> None:
    data = small_data(seed)
    f = RankMM(data, C=1.0, loss=loss)
    w = np.random.default_rng(seed + 1).normal(size=data.n_features) * scale
    expected = brute_force_losses(data, w, loss)
    got = f.query_losses(w)
    assert got.shape == (data.n_queries,)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * max(1.0, scale))
    assert got[-1] == 0.0  # the query without pairs
    m = data.n_queries
    assert f.primal_value(w) == pytest.approx(0.5 * w @ w + expected.sum() / m, rel=1e-12)


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_losses_at_zero_are_the_largest_relevance_differences(loss: str) -> None:
    """At w = 0 every hinge is y_j - y_k: the means and maxima of the grade differences."""
    data = small_data(3)
    losses = RankMM(data, loss=loss).query_losses(np.zeros(data.n_features))
    np.testing.assert_allclose(losses, brute_force_losses(data, np.zeros(4), loss), rtol=1e-14)
    if loss == "max":
        assert losses[0] == 2.0


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [0.5, 20.0])
def test_strong_duality_with_the_printed_dual(loss: str, seed: int, C: float) -> None:
    """p* = -kappa x (printed dual's optimum), and w(alpha*) attains p*."""
    data = small_data(seed)
    f = RankMM(data, C=C, loss=loss)
    ref = solve_reference(f, cache=False)  # primal vs dual, certified to 1e-7
    assert relative_gap(ref.d_star, ref.p_star) <= DUALITY_MATCH
    printed = f.printed_dual()
    printed.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"])
    assert printed.status == cp.OPTIMAL
    assert relative_gap(-f.kappa * printed.value, ref.p_star) <= DUALITY_MATCH
    alpha = np.asarray(f.alpha_variable.value)
    assert f.printed_dual_value(alpha) == pytest.approx(printed.value, rel=1e-9, abs=1e-12)
    assert f.dual_infeasibility(alpha) <= 1e-7
    w = f.primal_from_dual(alpha)
    assert relative_gap(f.primal_value(w), ref.p_star) <= 1e-6
    np.testing.assert_allclose(w, ref.w, atol=1e-4 * max(1.0, np.abs(ref.w).max()))


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_numpy_dual_matches_cvxpy_expression(loss: str) -> None:
    """D(alpha) in numpy equals the CVXPY dual objective at random feasible points."""
    data = small_data(4)
    f = RankMM(data, C=7.0, loss=loss)
    problem = f.dual()
    rng = np.random.default_rng(0)
    for _ in range(5):
        alpha = f.dual_set.project(rng.exponential(size=f.n_dual) * 0.5)
        f.alpha_variable.value = alpha
        u = f._variable("u", data.n_documents)
        weighted = alpha[: f.n_pairs] * (f.pair_base_scale if loss == "max_average" else 1.0)
        u.value = f.pairs.A.T @ weighted
        expected = problem.objective.value
        assert f.dual_value(alpha) == pytest.approx(expected, rel=EXPRESSION_MATCH)


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_dual_gradient_and_lipschitz(loss: str) -> None:
    data = small_data(5)
    f = RankMM(data, C=4.0, loss=loss)
    rng = np.random.default_rng(1)
    alpha = rng.normal(size=f.n_dual)
    g = f.neg_dual_grad(alpha)
    eps = 1e-6
    for i in rng.choice(f.n_dual, size=8, replace=False):
        e = np.zeros(f.n_dual)
        e[i] = eps
        fd = -(f.dual_value(alpha + e) - f.dual_value(alpha - e)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    L = f.dual_lipschitz()
    for _ in range(20):
        a, b = rng.normal(size=(2, f.n_dual))
        assert np.linalg.norm(f.neg_dual_grad(a) - f.neg_dual_grad(b)) <= L * np.linalg.norm(
            a - b) * (1 + 1e-9)


def test_dual_sets_and_starts() -> None:
    data = small_data(6)
    m = data.n_queries
    box = RankMM(data, C=2.0, loss="average")
    per_pair = box.pairs_per_query[box.pairs.query]
    upper = box.dual_set.project(np.full(box.n_dual, 1e9))
    np.testing.assert_allclose(upper, 2.0 / (m * per_pair))
    simplex = RankMM(data, C=2.0, loss="max")
    assert simplex.n_dual == simplex.n_pairs + simplex.queries_with_pairs.size
    start = simplex.dual_start()
    assert simplex.dual_infeasibility(start) <= 1e-15 and start.min() > 0
    l1inf = RankMM(data, C=2.0, loss="max_average")
    assert l1inf.dual_infeasibility(l1inf.dual_start()) == 0.0
    # changing C rescales the box and the l1,inf ball (the Scale protocol)
    box.set_params(C=4.0)
    np.testing.assert_allclose(box.dual_set.project(np.full(box.n_dual, 1e9)), 2 * upper)


def test_m_counts_queries_without_pairs() -> None:
    """The loss weight is C/m with m every training query, pairs or not."""
    with_empty = small_data(7, empty_query=True)
    f = RankMM(with_empty, C=5.0, loss="average")
    assert f.m == with_empty.n_queries == 5
    w = np.zeros(with_empty.n_features)
    assert f.primal_value(w) == pytest.approx(5.0 / 5 * f.query_losses(w).sum())


def test_bad_input() -> None:
    data = small_data(0)
    with pytest.raises(ValueError, match="loss must be one of"):
        RankMM(data, loss="hinge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="C must be"):
        RankMM(data, C=0.0)
    flat = RankingData.from_arrays(np.ones((4, 2)), np.zeros(4), qid=np.zeros(4))
    with pytest.raises(ValueError, match="no preference pairs"):
        RankMM(flat)


def test_synthetic_reference_all_losses() -> None:
    """A larger synthetic instance: the three references certify and differ."""
    data = make_synthetic(n_queries=6, docs_per_query=(5, 12), n_features=5, seed=3)
    values = {}
    for loss in RANKMM_LOSSES:
        f = RankMM(data, C=10.0, loss=loss)
        ref = solve_reference(f, cache=False)
        values[loss] = ref.p_star
        assert f.primal_value(ref.w) == pytest.approx(ref.p_star, rel=1e-6)
    # max >= max_average >= average query by query, hence the optima are ordered
    assert values["max"] >= values["max_average"] - 1e-7 >= values["average"] - 2e-7


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1e-3, 0.3, 1.0, 30.0]),
       C=st.sampled_from([0.1, 1.0, 100.0]))
def test_rankmm1_is_its_ranksvm(seed: int, scale: float, C: float) -> None:
    """RankMM-1's objective is its RankSVM's (query weight 1/(m |R_i|), margin y_j - y_k),
    against the brute-force losses; a query without pairs counts in m."""
    data = small_data(seed)
    f = RankMM(data, C=C, loss="average")
    svm = f.as_ranksvm()
    w = np.random.default_rng(seed + 2).normal(size=data.n_features) * scale
    expected = 0.5 * w @ w + C / data.n_queries * brute_force_losses(data, w, "average").sum()
    assert svm.primal_value(w) == pytest.approx(expected, rel=1e-12, abs=1e-14)
    assert f.primal_value(w) == pytest.approx(expected, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [0.5, 20.0, 1000.0])
def test_rankmm1_optimum_by_the_one_slack(seed: int, C: float) -> None:
    """The 1-slack on RankMM-1's RankSVM reaches RankMM-1's certified CVXPY optimum."""
    from cvxrank.fitting import fit_formulation

    data = small_data(seed)
    f = RankMM(data, C=C, loss="average")
    ref = solve_reference(f, cache=False)
    run = fit_formulation(f.as_ranksvm(), "1-slack", tol=1e-9)
    assert run.converged
    assert relative_gap(f.primal_value(run.w), ref.p_star) <= 1e-7
    assert np.linalg.norm(run.w - ref.w) <= 1e-3 * max(1.0, np.linalg.norm(ref.w))


@pytest.mark.parametrize("loss", ["max", "max_average"])
def test_only_rankmm1_is_a_ranksvm(loss: str) -> None:
    with pytest.raises(ValueError, match="only the average loss"):
        RankMM(small_data(0), loss=loss).as_ranksvm()
