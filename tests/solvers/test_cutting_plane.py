"""The n-slack cutting plane on RankMM's three losses, and RankMM's separation oracle.

The oracle is checked against the formulation's brute-force-tested query losses and for the
validity of every cut (an affine minorant of L_i everywhere, tight at the query point); the
solver against certified Clarabel optima over seeds, losses and C, its dual point for
feasibility and its certificate for honesty (the gap it reports is recomputed here from the
returned w and alpha with the formulation's own evaluators). On OHSUMED Fold1 ``vali.txt``
at C = 10 (the issue's acceptance run) ``cvxrank fit`` is checked the same way.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import install_clock

from cvxrank.certificates.certify import radius_rule
from cvxrank.certificates.reference import solve_reference
from cvxrank.cli.main import main
from cvxrank.data import RankingData, make_synthetic, read_svmlight
from cvxrank.formulations.rankmm import RANKMM_LOSSES, RankMM
from cvxrank.solvers import cutting_plane
from cvxrank.solvers.cutting_plane import solve_cutting_plane
from cvxrank.tolerances import FAST_SOLVER_GAP, FEASIBILITY, relative_gap


def synthetic(seed: int, sparse: bool = False) -> RankingData:
    data = make_synthetic(n_queries=12, docs_per_query=(5, 18), n_features=6, n_grades=3,
                          noise=0.8, seed=seed)
    if not sparse:
        return data
    return RankingData.from_arrays(sp.csr_matrix(data.X), data.y, qid=data.qid)


def certificate(f: RankMM, run) -> tuple[float, float, float]:
    """``(P(w), D(alpha), infeasibility)`` recomputed from the run's point."""
    return (f.primal_value(run.w), f.dual_value(run.alpha), f.dual_infeasibility(run.alpha))


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_oracle_cuts_are_tight_minorants(loss: str, sparse: bool) -> None:
    f = RankMM(synthetic(3, sparse), C=2.0, loss=loss)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.3, 3.0):
        w = scale * rng.normal(size=f.data.n_features)
        cuts = f.separation_oracle(w)
        losses = f.query_losses(w)[f.queries_with_pairs]
        np.testing.assert_allclose(cuts.loss, losses, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cuts.offset - cuts.gradient @ w, losses, atol=1e-11)
        for _ in range(5):  # a minorant everywhere
            v = 3.0 * rng.normal(size=f.data.n_features)
            below = cuts.offset - cuts.gradient @ v
            assert np.all(below <= f.query_losses(v)[f.queries_with_pairs] + 1e-10)
        # the pair weights of each piece give its offset and gradient
        P = f.pairs
        offset = np.bincount(cuts.pair_block, weights=cuts.pair_weight * P.delta,
                             minlength=cuts.n_blocks)
        np.testing.assert_allclose(offset, cuts.offset, atol=1e-12)


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_unit_pieces_are_dual_feasible(loss: str) -> None:
    """kappa times any piece's pair weights is a feasible dual point (beta = c alpha)."""
    f = RankMM(synthetic(4), C=3.0, loss=loss)
    cuts = f.separation_oracle(np.random.default_rng(1).normal(size=f.data.n_features))
    beta = (f.C / f.m) * cuts.pair_weight
    assert f.dual_infeasibility(f.dual_from_pair_weights(beta)) <= FEASIBILITY


@pytest.mark.parametrize("master", ["cvxpy", "interior"])
@pytest.mark.parametrize("loss", RANKMM_LOSSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [0.1, 10.0, 1000.0])
def test_reaches_the_certified_optimum(loss: str, seed: int, C: float, master: str) -> None:
    f = RankMM(synthetic(seed), C=C, loss=loss)
    ref = solve_reference(f)
    run = solve_cutting_plane(f, tol=FAST_SOLVER_GAP, master=master)
    assert run.converged, run.message
    p, d, infeasible = certificate(f, run)
    assert infeasible <= FEASIBILITY
    assert d <= ref.p_star * (1 + 1e-7) + 1e-12  # a true lower bound
    assert (p - d) <= FAST_SOLVER_GAP * p  # the reported certificate holds
    assert relative_gap(p, ref.p_star) <= FAST_SOLVER_GAP


def test_certificate_is_recorded_and_monotone(monkeypatch) -> None:
    f = RankMM(synthetic(5), C=10.0, loss="average")
    install_clock(monkeypatch, cutting_plane)  # every oracle and master call takes a tick
    run = solve_cutting_plane(f, tol=1e-9)
    primal, dual = np.asarray(run.trace.primal), np.asarray(run.trace.dual)
    assert np.all(np.diff(primal) <= 0) and np.all(np.diff(dual) >= 0)  # best seen
    assert run.trace.dual[0] == 0.0  # lambda = 0 before the first cut
    assert run.info["master_time"] > 0 and run.info["oracle_time"] > 0


def test_iteration_limit_is_reported_not_converged() -> None:
    f = RankMM(synthetic(6), C=100.0, loss="average")
    run = solve_cutting_plane(f, tol=1e-12, max_iter=2)
    assert not run.converged and "max_iter" in run.message
    p, d, infeasible = certificate(f, run)
    assert infeasible <= FEASIBILITY and d <= p


def test_bad_option() -> None:
    f = RankMM(synthetic(0), C=1.0, loss="max")
    with pytest.raises(ValueError, match="prune_after"):
        solve_cutting_plane(f, prune_after=0)


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
def test_fit_reaches_the_optimum_on_ohsumed_vali(shared_data, capsys, loss: str) -> None:
    """The acceptance run: ``cvxrank fit --method rankmm`` on Fold1 vali.txt at C = 10; the
    certificate (P(w) - D(alpha)) / P(w) <= 1e-6 is recomputed here from the saved model's w
    and a re-run's alpha (p* of Clarabel, primal and dual: 11.57578878, 20, 14.31659715)."""
    path = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "vali.txt"
    code = main(["fit", "--method", "rankmm", "--loss", loss, "--C", "10",
                 "--train", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["solver"] == "cutting-plane" and out["converged"]
    f = RankMM(read_svmlight(path), C=10.0, loss=loss)
    run = solve_cutting_plane(f, tol=FAST_SOLVER_GAP)
    p, d, infeasible = certificate(f, run)
    assert infeasible <= FEASIBILITY and (p - d) <= FAST_SOLVER_GAP * p
    assert abs(out["objective"] - p) <= FAST_SOLVER_GAP * p


@pytest.mark.parametrize("loss", RANKMM_LOSSES)
@pytest.mark.parametrize("C", [10.0, 1000.0])
def test_master_finish_closes_the_gap_to_rounding(loss: str, C: float) -> None:
    """Asked for a model radius the CVXPY master cannot give, the exact finish solves the
    restricted master exactly: the gap falls to rounding, the objective is the certified
    optimum's and the returned dual point carries the bound."""
    f = RankMM(synthetic(7), C=C, loss=loss)
    ref = solve_reference(f)
    until = radius_rule(f, 0.0)  # never met: on to the rounding floor
    run = solve_cutting_plane(f, until=until)
    assert run.converged and run.info["finishes"] >= 1
    p, d, infeasible = certificate(f, run)
    assert infeasible <= FEASIBILITY
    assert p - d <= 1e-12 * p and relative_gap(p, ref.p_star) <= 1e-8
    without = solve_cutting_plane(f, until=until, finish=False)  # the CVXPY master alone
    assert without.info["finishes"] == 0 and without.relative_gap > 1e-11
    assert run.w_radius <= without.w_radius / 30


def test_gap_by_block_is_the_gap() -> None:
    """Away from the optimum (no cancellation) the blockwise sum is P(w) - D(lambda)."""
    f = RankMM(synthetic(8), C=5.0, loss="max")
    run = solve_cutting_plane(f, tol=1e-3, finish=False)
    cuts = run.info["cuts"]
    working = cutting_plane.WorkingSet(f.data.n_features)
    working.add(np.array(cuts.offset), np.array(cuts.gradient), np.array(cuts.block),
                [None] * cuts.offset.size)
    kappa = f.C / f.m
    lam = np.array(cuts.multiplier)
    w = working.w(lam)
    loss = f.separation_oracle(w).loss
    direct = 0.5 * (w @ w) + kappa * loss.sum() - working.dual_value(lam)
    got = cutting_plane.gap_by_block(working, lam, w, loss, kappa)
    assert got == pytest.approx(direct, rel=1e-9, abs=1e-14) and got > 0
