"""DORM (Le & Smola) and SVM MAP (Yue et al.): the complete problems over every ranking,
the n-slack cutting plane against them, the tie-averaged reference and Lemma 1's bound by
brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from cvxrank.certificates.reference import solve_reference
from cvxrank.cli import main as cli_main
from cvxrank.data import RankingData, make_synthetic
from cvxrank.fitting import default_solver, fit_formulation
from cvxrank.formulations.dorm import DORM, parse_measure, tie_averaged_reference
from cvxrank.formulations.svmmap import SVMMAP
from cvxrank.methods import DORM_LOSSES
from cvxrank.oracles import measures
from cvxrank.oracles.dorm import feature_map, measure_loss
from cvxrank.oracles.svmmap import ap_loss, joint_feature_map
from cvxrank.solvers.cutting_plane import solve_cutting_plane


def tiny(seed: int, docs=(3, 5), n_queries: int = 6) -> RankingData:
    return make_synthetic(n_queries=n_queries, docs_per_query=docs, n_features=4,
                          n_grades=3, seed=seed)


def brute_loss(f: DORM, w: np.ndarray) -> np.ndarray:
    """L_i(w) = max over every permutation, written out."""
    out = []
    for q in f._queries:
        n = q.b.size
        out.append(max(measure_loss(np.array(o), q.a, q.b)
                       + w @ (feature_map(q.X, np.array(o), q.c) - q.phi_ref)
                       for o in itertools.permutations(range(n))))
    return np.asarray(out)


@pytest.mark.parametrize("loss", ["ndcg@10", "mrr", "wta", "p@2", "eru", "dcg@3", "mwta"])
@pytest.mark.parametrize("family", ["power", "log", "loglog"])
def test_oracle_loss_is_the_maximum_over_every_permutation(loss: str, family: str) -> None:
    f = DORM(tiny(1), C=1.0, loss=loss, c_family=family)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(size=f.data.n_features)
        np.testing.assert_allclose(f.query_losses(w), brute_loss(f, w), rtol=1e-10,
                                   atol=1e-12)


def test_tie_averaged_reference_is_the_mean_over_ideal_rankings() -> None:
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(6, 3)), np.array([1.0, 0.0, 1.0, 2.0, 0.0, 1.0])
    c = 1.0 / np.sqrt(np.arange(2, 8))
    weights = np.arange(6, 0, -1)  # any decreasing weights single out the ideal rankings
    best = np.sort(y)[::-1] @ weights
    ideal = [np.array(o) for o in itertools.permutations(range(6))
             if y[list(o)] @ weights == best]
    assert len(ideal) == 1 * 6 * 2  # 1! x 3! x 2!: the orders of each grade's documents
    mean = np.mean([feature_map(X, o, c) for o in ideal], axis=0)
    np.testing.assert_allclose(tie_averaged_reference(X, y, c), mean, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_lemma_1_the_slack_bounds_the_loss_of_the_predicted_ranking(seed: int) -> None:
    """L_i(w) >= Delta(y_i, pi_w) with pi_w the ranking by the scores (argmax <w, Phi>)."""
    f = DORM(tiny(seed), C=1.0, loss="ndcg@10")
    rng = np.random.default_rng(seed)
    for _ in range(5):
        w = rng.normal(size=f.data.n_features)
        losses = f.query_losses(w)
        for q, value in zip(f._queries, losses, strict=True):
            ranking = np.argsort(-(q.X @ w), kind="stable")
            assert value >= measure_loss(ranking, q.a, q.b) - 1e-12


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("loss", ["ndcg@10", "mrr", "p@2", "eru"])
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_cutting_plane_reaches_the_complete_optimum(seed: int, loss: str, C: float) -> None:
    f = DORM(tiny(seed, docs=(3, 6)), C=C, loss=loss)
    ref = solve_reference(f)  # the complete primal (27) and dual (28) agree
    run = solve_cutting_plane(f, tol=1e-7)
    assert run.converged
    extra = run.trace.extra
    assert set(extra) == {"cuts", "oracle_time", "master_time", "violation"}
    assert np.all(np.asarray(extra["violation"][1:]) >= -1e-9)  # the oracle's max is exact
    assert abs(run.objective - ref.p_star) <= 1e-6 * abs(ref.p_star)
    assert f.primal_value(ref.w) == pytest.approx(ref.p_star, rel=1e-7)
    assert run.trace.dual[-1] <= ref.p_star * (1 + 1e-9)


def test_the_complete_problem_refuses_large_queries_with_the_count() -> None:
    f = DORM(tiny(0, docs=(7, 8), n_queries=2), C=1.0)
    with pytest.raises(ValueError, match=r"documents \(\d[\d,]* permutations\), [\d,]+ "
                                         r"constraints in all"):
        f.primal()


def test_bad_names_and_data_are_refused() -> None:
    assert parse_measure("NDCG@5") == (measures.ndcg, 5)
    assert parse_measure("p@3") == (measures.precision, 3)
    for bad in ("ndcg@0", "auc", "ndcg@x"):
        with pytest.raises(ValueError):
            parse_measure(bad)
    flat = RankingData.from_arrays(np.ones((4, 2)), np.zeros(4), qid=[1, 1, 2, 2])
    with pytest.raises(ValueError, match="nothing to rank"):
        DORM(flat)


def test_fit_dorm_on_ohsumed_certifies_the_zero_model(shared_data, capsys) -> None:
    """On OHSUMED's long queries (about 150 documents, three grades) the optimum of DORM's
    NDCG@10 bound is w = 0: the worst rankings (any ten irrelevant documents on top) can
    otherwise follow the scores, so every direction raises the bound. The cutting plane
    certifies it (gap <= 1e-10, the zero-model rule)."""
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "vali.txt"
    code = cli_main.main(["fit", "--method", "dorm", "--loss", "ndcg@10", "--C", "10",
                          "--train", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["solver"] == "cutting-plane" and out["converged"]
    assert out["zero_model"]


@pytest.mark.parametrize("loss", DORM_LOSSES)
def test_every_dorm_loss_fits_by_its_verified_cutting_plane(loss: str) -> None:
    """``cvxrank fit --method dorm --loss L`` picks the cutting plane for every loss it
    offers (one registry entry per measure; the cut-off is a parameter), never the complete
    CVXPY problem, which refuses queries of 7 documents or more (a regression: wta, p@10
    and eru were not registered and fell to it)."""
    data = make_synthetic(n_queries=4, docs_per_query=12, n_features=3, n_grades=3, seed=5)
    f = DORM(data, C=1.0, loss=loss)
    assert default_solver(f) == "cutting-plane"
    run = fit_formulation(f, "auto")
    assert run.converged and run.relative_gap <= 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_svmmap_loss_is_the_maximum_over_every_ranking(seed: int) -> None:
    f = SVMMAP(tiny(seed, docs=(3, 6)), C=1.0)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        w = rng.normal(size=f.data.n_features)
        brute = [max(ap_loss(np.array(o), q.relevant)
                     + w @ (joint_feature_map(q.X, np.array(o), q.relevant) - q.psi_star)
                     for o in itertools.permutations(range(q.X.shape[0])))
                 for q in f._queries]
        np.testing.assert_allclose(f.query_losses(w), brute, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_svmmap_cutting_plane_reaches_the_complete_optimum(seed: int, C: float) -> None:
    f = SVMMAP(tiny(seed, docs=(3, 6)), C=C)
    ref = solve_reference(f)
    run = solve_cutting_plane(f, tol=1e-7)
    assert run.converged
    assert abs(run.objective - ref.p_star) <= 1e-6 * abs(ref.p_star)
    assert run.trace.dual[-1] <= ref.p_star * (1 + 1e-9)


@pytest.mark.parametrize("make", [
    lambda d: DORM(d, C=1.0, loss="ndcg@10"),
    lambda d: SVMMAP(d, C=5.0),
])
def test_hand_written_n_slack_master_matches_cvxpy_on_recorded_working_sets(make) -> None:
    from cvxrank.solvers.cutting_plane import (
        WorkingSet,
        solve_master_blocks,
        solve_master_cvxpy,
    )
    from cvxrank.solvers.simplex_product_qp import simplex_product_interior

    f = make(tiny(4, docs=(3, 6), n_queries=8))
    working = WorkingSet(f.data.n_features)
    kappa, n_blocks, w = f.C / f.m, len(f._queries), np.zeros(f.data.n_features)
    for _ in range(4):  # grow a working set by the oracle, as the solver does
        cuts = f.separation_oracle(w)
        working.add(cuts.offset, cuts.gradient, np.arange(n_blocks), cuts.supports())
        w, lam = solve_master_cvxpy(working, n_blocks, kappa)
        hand_w, hand_lam = solve_master_blocks(working, n_blocks, kappa, tol=1e-12,
                                               max_sweeps=5000)
        assert working.dual_value(hand_lam) == pytest.approx(working.dual_value(lam),
                                                             rel=1e-6)
        totals = np.bincount(working.block, weights=hand_lam, minlength=n_blocks)
        assert hand_lam.min() >= 0 and totals.max() <= kappa * (1 + 1e-12)
        np.testing.assert_allclose(hand_w, w, atol=1e-4 * (1 + np.abs(w).max()))
        # the interior point alone: feasible, its value the optimum's to its accuracy
        inner = simplex_product_interior(working.gradient, working.offset, working.block,
                                         n_blocks, kappa)
        totals = np.bincount(working.block, weights=inner, minlength=n_blocks)
        assert inner.min() >= 0 and totals.max() <= kappa * (1 + 1e-12)
        assert working.dual_value(inner) <= working.dual_value(hand_lam) + 1e-9 * (
            1 + abs(working.dual_value(hand_lam)))
        assert working.dual_value(inner) == pytest.approx(working.dual_value(hand_lam),
                                                          rel=1e-6)


@pytest.mark.parametrize("master", ["blocks", "interior"])
def test_cutting_plane_with_the_hand_written_master_reaches_the_complete_optimum(master) -> None:
    f = DORM(tiny(5, docs=(3, 6)), C=2.0, loss="mrr")
    ref = solve_reference(f)
    run = solve_cutting_plane(f, master=master)
    assert run.converged and abs(run.objective - ref.p_star) <= 1e-6 * ref.p_star
    # the certified bound is below the complete optimum (any feasible multipliers give one)
    assert run.trace.dual[-1] <= ref.p_star * (1 + 1e-9)
