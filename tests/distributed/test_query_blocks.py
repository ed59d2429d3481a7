"""The query-level families on shards (issue 36): RankMM-1/2/3, DORM and SVM MAP fitted by
the n-slack cutting plane with the separation oracle run where each query lives.

Each sharded fit is checked against the in-memory fit of the same data (itself certified
against CVXPY by the families' own tests): the objective to 1e-6 relative (the cutting
planes' tolerance), w within the two runs' certified radii, the same certified test
measures; on OHSUMED Fold1 split into 4 query-aligned files on a local cluster of 2 worker
processes (real data) and on synthetic data (every machine). A worker killed during a
sharded DORM fit and a sharded RankMM fit changes nothing of the result.
"""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
from toolbox import assert_same_certified_measures, letor_measures

import cvxrank.cli.main as cli_main
from cvxrank.certificates.certify import EvaluationTarget
from cvxrank.data import make_synthetic, write_svmlight
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import read_svmlight
from cvxrank.distributed.shards import balanced_split
from cvxrank.errors import CapabilityError
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.svmmap import SVMMAP

distributed = pytest.importorskip("dask.distributed")

from cvxrank.distributed import (  # noqa: E402 (after the skip: needs dask.distributed)
    ShardedQueryBlocks,
    ShardedRankingData,
    connect,
    fit_sharded,
)

pytestmark = pytest.mark.slow

#: Every query-level family, with a C at which its synthetic optimum is not w = 0.
FAMILIES = [(DORM, {"loss": "ndcg@10", "C": 1.0}), (DORM, {"loss": "dcg@5", "C": 1.0}),
            (SVMMAP, {"C": 1.0}), (RankMM, {"loss": "average", "C": 10.0}),
            (RankMM, {"loss": "max", "C": 10.0}), (RankMM, {"loss": "max_average", "C": 10.0})]


def family_id(case: tuple[type, dict]) -> str:
    family, params = case
    return f"{family.__name__}-{params.get('loss', '')}"


@pytest.fixture(scope="module")
def client():
    """A local cluster of two single-threaded worker processes, shared by the module."""
    with connect(workers=2) as c:
        yield c


def synthetic(seed: int) -> RankingData:
    return make_synthetic(n_queries=24, docs_per_query=20, n_features=6, seed=seed)


def write_shards(data: RankingData, folder, n: int) -> str:
    folder.mkdir()
    for i, queries in enumerate(balanced_split(data, n)):
        write_svmlight(data.subset(queries), folder / f"shard{i}.txt")
    return str(folder / "shard*.txt")


def assert_same_optimum(run, ref, formulation, rel: float = 1e-6) -> None:
    """The sharded ``run`` and the in-memory ``ref`` reach the same optimum: each converged,
    the objectives (evaluated in memory) within ``rel`` relative, the run's objective its
    point's, and w within the sum of the two certified radii."""
    assert run.converged and ref.converged, (run.message, ref.message)
    p_run, p_ref = formulation.primal_value(run.w), formulation.primal_value(ref.w)
    assert abs(p_run - p_ref) <= rel * abs(p_ref)
    assert run.objective == pytest.approx(p_run, rel=1e-12)
    assert np.linalg.norm(run.w - ref.w) <= run.w_radius + ref.w_radius


@pytest.mark.parametrize("case", FAMILIES, ids=family_id)
def test_sharded_query_blocks_reach_the_in_memory_optimum(client, case) -> None:
    family, params = case
    data = synthetic(3)
    memory = family(data, **params)
    ref = fit_formulation(memory, tol=1e-8)
    sharded = ShardedQueryBlocks(ShardedRankingData.from_data(data, client, 4), family,
                                 **params)
    assert (sharded.name, sharded.method, sharded.m) == (memory.name, memory.method, memory.m)
    np.testing.assert_array_equal(sharded.queries_with_pairs, memory.queries_with_pairs)
    run = fit_sharded(sharded, tol=1e-8)
    assert run.solver == ref.solver == "cutting-plane"
    assert np.any(ref.w)  # a case where the optimum is not the zero model
    assert_same_optimum(run, ref, memory, rel=1e-8)
    assert run.alpha is None  # the pair weights stay on the workers
    assert run.info["n_shards"] == 4 and run.info["shard_calls"] > 0
    # the pieces are the in-memory oracle's, block by block
    w = ref.w
    here, there = memory.separation_oracle(w), sharded.separation_oracle(w)
    np.testing.assert_allclose(there.loss, here.loss, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(there.gradient, here.gradient, rtol=1e-12, atol=1e-12)
    kappa, R, losses = sharded.cut_bounds()
    kappa_m, R_m, losses_m = memory.cut_bounds()
    assert (kappa, R) == pytest.approx((kappa_m, R_m), rel=1e-12)
    np.testing.assert_allclose(losses, losses_m, rtol=1e-12)
    assert sharded.primal_value(w) == pytest.approx(memory.primal_value(w), rel=1e-12)


def test_a_shard_without_pairs_adds_no_block(client) -> None:
    """A shard whose queries have one grade each holds no block; the others' blocks are
    numbered among all queries, and RankMM's m counts the flat queries too."""
    data = synthetic(4)
    y = data.y.copy()
    first = data.query_index < 8  # the first shard of three: its queries flattened
    y[first] = 0.0
    data = RankingData(X=data.X, y=y, qid=data.qid)
    shards = ShardedRankingData.from_data(data, client, 3)
    sharded = ShardedQueryBlocks(shards, RankMM, C=10.0, loss="average")
    memory = RankMM(data, C=10.0, loss="average")
    np.testing.assert_array_equal(sharded.queries_with_pairs, memory.queries_with_pairs)
    assert sharded.queries_with_pairs.min() >= 8
    assert sharded.m == memory.m == data.n_queries
    assert_same_optimum(fit_sharded(sharded, tol=1e-8), fit_formulation(memory, tol=1e-8),
                        memory, rel=1e-8)


def test_what_needs_the_pairs_in_this_process_is_refused(client) -> None:
    shards = ShardedRankingData.from_data(synthetic(5), client, 2)
    sharded = ShardedQueryBlocks(shards, RankMM, C=1.0, loss="average")
    assert sharded.capabilities == {"separation_oracle", "cut_bounds"}
    with pytest.raises(CapabilityError, match="dual_gradient"):
        fit_sharded(sharded, "apg")


# ------------------------------------------------------------------ OHSUMED, 4 files


#: OHSUMED Fold1's families, with C where the optimum is interesting where it can be (DORM's
#: and RankMM-2/3's optima on OHSUMED are w = 0 at every C; the shards must say so too).
OHSUMED_FAMILIES = [(DORM, {"loss": "ndcg@10", "C": 10.0}), (SVMMAP, {"C": 1.0}),
                    (RankMM, {"loss": "average", "C": 1.0}),
                    (RankMM, {"loss": "max", "C": 100.0}),
                    (RankMM, {"loss": "max_average", "C": 100.0})]


def test_ohsumed_fold1_in_four_files_gives_the_in_memory_optima(shared_data, tmp_path,
                                                                client) -> None:
    root = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1"
    train, test = read_svmlight(root / "train.txt"), read_svmlight(root / "test.txt")
    pattern = write_shards(train, tmp_path / "shards", 4)
    shards = ShardedRankingData.from_files(pattern, client)
    assert shards.n_shards == 4 and shards.n_queries == train.n_queries
    target = EvaluationTarget.of([test], k=10, convention="letor3")
    for family, params in OHSUMED_FAMILIES:
        memory = family(train, **params)
        ref = fit_formulation(memory, certify=target)
        run = fit_sharded(ShardedQueryBlocks(shards, family, **params), certify=target)
        assert_same_optimum(run, ref, memory)
        assert_same_certified_measures(letor_measures(test, run.w), letor_measures(test, ref.w),
                                       target.report(memory, run)[0],
                                       target.report(memory, ref)[0], memory.name)


# ------------------------------------------------------------------------------ faults


@pytest.mark.parametrize("case", [(DORM, {"loss": "ndcg@10", "C": 1.0}),
                                  (RankMM, {"loss": "average", "C": 10.0})], ids=family_id)
def test_a_worker_killed_during_a_sharded_fit_changes_nothing(tmp_path, case) -> None:
    family, params = case
    data = make_synthetic(n_queries=40, docs_per_query=20, n_features=8, seed=7)
    pattern = write_shards(data, tmp_path / "shards", 6)
    memory = family(data, **params)
    ref = fit_formulation(memory, tol=1e-8)
    killed: list[int] = []
    with connect(workers=2) as client:
        shards = ShardedRankingData.from_files(pattern, client)
        pids = client.run(os.getpid)

        def kill_one(k, w, alpha, trace):
            if k == 3 and not killed:
                victim = next(iter(pids.values()))
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
            return None

        run = fit_sharded(ShardedQueryBlocks(shards, family, **params), tol=1e-8,
                          callback=kill_one)
    assert killed, "the fit ended before a worker was killed"
    assert_same_optimum(run, ref, memory, rel=1e-8)


# ------------------------------------------------------------------ the command line


@pytest.mark.parametrize(("method", "loss"), [("dorm", "ndcg@10"), ("svmmap", "map"),
                                              ("rankmm", "max"), ("irsvm", "squared_hinge")])
def test_cli_fits_over_shards_as_in_memory(tmp_path, capsys, client, method, loss) -> None:
    # small queries: IR SVM's tau is positive for every grade pair
    data = make_synthetic(n_queries=40, docs_per_query=6, n_features=6, seed=6)
    pattern = write_shards(data, tmp_path / "shards", 3)
    whole = tmp_path / "whole.txt"
    write_svmlight(data, whole)
    common = ["fit", "--method", method, "--loss", loss, "--C", "1", "--json"]
    assert cli_main.main([*common, "--train", str(whole)]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert cli_main.main([*common, "--train", pattern, "--backend", "dask", "--scheduler",
                          client.scheduler.address]) == 0
    sharded = json.loads(capsys.readouterr().out)
    assert sharded["backend"] == "dask" and sharded["n_shards"] == 3
    assert sharded["status"] == memory["status"] == "converged"
    assert sharded["objective"] == pytest.approx(memory["objective"], rel=1e-8)
