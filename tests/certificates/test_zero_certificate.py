"""The exact-zero certificate (cvxrank.certificates.zero_certificate): proven only where w = 0 is
the optimum (independent minimum-norm subgradient, CVXPY optima at several C, directional
derivatives by brute force), refuted where it is not, silent on the boundary; and a fit
that returns a proven w = 0 reports radius 0 and certified measures."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.certificates.certify import EvaluationTarget
from cvxrank.certificates.reference import solve_reference
from cvxrank.certificates.zero_certificate import certify_zero
from cvxrank.data import RankingData, make_synthetic
from cvxrank.data.letor import read_letor_fold
from cvxrank.experiments.agarwal_collins.zero_optimality import zero_optimality
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.svmmap import SVMMAP


def noise_data(seed: int, *, n_features: int = 3, docs: int = 30) -> RankingData:
    """Grades unrelated to the features: many documents a query that no w ranks well."""
    rng = np.random.default_rng(seed)
    sizes = [docs] * 6
    X = rng.normal(size=(sum(sizes), n_features))
    y = rng.integers(0, 3, size=sum(sizes)).astype(float)
    return RankingData.from_arrays(X, y, qid=np.repeat(np.arange(len(sizes)), sizes))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("loss", ["max", "max_average"])
def test_rankmm_zero_agrees_with_the_min_norm_subgradient_and_cvxpy(seed: int,
                                                                     loss: str) -> None:
    """Proven means: the independent minimum-norm subgradient at 0 vanishes, and the CVXPY
    optimum is 0 at every C; refuted means it does not and the optima are not 0."""
    signal = make_synthetic(n_queries=6, docs_per_query=12, n_features=3, noise=0.1,
                            seed=seed)
    for data in (noise_data(seed), signal):
        f = RankMM(data, C=1.0, loss=loss)
        zero = certify_zero(f)
        check = zero_optimality(data, loss)
        assert zero.proven or zero.not_optimal
        assert not (zero.proven and zero.not_optimal)
        if zero.proven:
            assert check.zero_optimal and check.relative_norm < 1e-7
            assert zero.ball_radius > 0
        if zero.not_optimal:
            assert not check.zero_optimal and check.descent_slope < 0
        for C in (0.1, 10.0, 1000.0):
            ref = solve_reference(RankMM(data, C=C, loss=loss), cache=False)
            norm = float(np.linalg.norm(ref.w))
            if zero.proven:
                assert norm <= 1e-5
            if zero.not_optimal:
                assert norm > 1e-5


def test_both_outcomes_occur() -> None:
    outcomes = {certify_zero(RankMM(d, loss="max")).proven
                for d in (noise_data(0), make_synthetic(n_queries=6, docs_per_query=12,
                                                        n_features=3, noise=0.1, seed=0))}
    assert outcomes == {True, False}


@pytest.mark.parametrize("seed", range(3))
def test_proven_zero_has_positive_directional_derivatives(seed: int) -> None:
    """Brute force: P(t d) > P(0) for random unit directions d and small t."""
    f = RankMM(noise_data(seed), C=1.0, loss="max")
    zero = certify_zero(f)
    assert zero.proven
    rng = np.random.default_rng(seed)
    p0 = f.primal_value(np.zeros(f.data.n_features))
    for _ in range(200):
        d = rng.normal(size=f.data.n_features)
        d /= np.linalg.norm(d)
        assert f.primal_value(1e-6 * d) > p0


def pair_data(second: float) -> RankingData:
    """Two one-pair queries whose differences cancel (second = -1: S = {0}, on its
    boundary) or nearly (otherwise: 0 is not a subgradient)."""
    X = np.array([[1.0, 1.0], [0.0, 0.0], [-1.0, second], [0.0, 0.0]])
    return RankingData.from_arrays(X, np.array([1.0, 0.0, 1.0, 0.0]),
                                   qid=np.array([0, 0, 1, 1]))


def test_boundary_is_not_proven_and_a_descent_is_refuted() -> None:
    boundary = certify_zero(RankMM(pair_data(-1.0), loss="max"))
    assert not boundary.proven and not boundary.not_optimal
    off = certify_zero(RankMM(pair_data(-1.001), loss="max"))
    assert off.not_optimal and not off.proven


def test_constant_features_are_left_out() -> None:
    """A column constant within every query moves a query's scores alike."""
    data = noise_data(1, n_features=3)
    X = np.asarray(data.X).copy()
    X[:, 1] = np.repeat(np.arange(6.0), 30)  # a query-level feature
    data = RankingData.from_arrays(X, data.y, qid=np.repeat(np.arange(6), 30))
    np.testing.assert_array_equal(data.varying_columns(), [0, 2])
    assert certify_zero(RankMM(data, loss="max")).proven
    flat = RankingData.from_arrays(np.repeat(np.arange(6.0), 30)[:, None], data.y,
                                   qid=np.repeat(np.arange(6), 30))
    assert certify_zero(RankMM(flat, loss="max")).proven  # the loss ignores w


def test_a_fit_at_a_proven_zero_has_radius_zero_and_certified_measures() -> None:
    data, test = noise_data(2), noise_data(3)
    f = RankMM(data, C=1.0, loss="max")
    target = EvaluationTarget.of([test])
    run = fit_formulation(f, "cutting-plane", certify=target)
    assert not np.any(run.w) and run.converged
    assert run.w_radius == 0.0 and run.info["zero_certificate"].proven
    assert all(m["certified"] for m in target.report(f, run)[0].values())
    # a fit that does not return 0 keeps its radius
    g = RankMM(make_synthetic(n_queries=6, docs_per_query=12, n_features=3, noise=0.1,
                              seed=0), C=1.0, loss="max")
    other = fit_formulation(g, "cutting-plane")
    assert np.any(other.w) and "zero_certificate" not in other.info


def small_queries(seed: int, n_features: int) -> RankingData:
    """Twelve queries of five documents (the complete problems stay small), grades unrelated
    to the features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, n_features))
    y = rng.integers(0, 3, size=60).astype(float)
    return RankingData.from_arrays(X, y, qid=np.repeat(np.arange(12), 5))


@pytest.mark.parametrize("formulation", [DORM, SVMMAP])
def test_structured_losses_against_their_complete_problems(formulation) -> None:
    """DORM and SVM MAP: every verdict agrees with the CVXPY optimum of the complete
    (enumerated) problem; DORM is proven on some instances and refuted on others."""
    outcomes = set()
    for seed in range(4):
        f = formulation(small_queries(seed, 2), C=1.0)
        zero = certify_zero(f)
        assert zero.proven or zero.not_optimal
        outcomes.add(zero.proven)
        ref = solve_reference(f, cache=False)
        assert (float(np.linalg.norm(ref.w)) <= 1e-6) == zero.proven
    assert outcomes == ({True, False} if formulation is DORM else {False})


def test_dorm_on_ohsumed_is_exactly_zero(shared_data) -> None:
    """Le & Smola's DORM (NDCG@10) on an OHSUMED fold: the cutting plane returns w = 0 and
    its pieces prove it exact, so the test measures are certified."""
    fold = read_letor_fold(shared_data / "letor3_ohsumed" / "QueryLevelNorm", 1)
    f = DORM(fold["train"], C=1.0, loss="ndcg@10")
    target = EvaluationTarget.of([fold["test"]])
    run = fit_formulation(f, "cutting-plane", certify=target)
    assert not np.any(run.w) and run.w_radius == 0.0
    zero = run.info["zero_certificate"]
    assert zero.proven and zero.ball_radius > 1e3 * 1e-9 * zero.scale
    assert all(m["certified"] for m in target.report(f, run)[0].values())
