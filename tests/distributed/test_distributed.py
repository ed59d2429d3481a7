"""One fit across a Dask cluster (issue 23): shards by query, the in-memory optimum.

The sharded fits run the in-memory solvers (PRSVM+, PRSVM, the 1-slack) on sums over the
shards, so they are checked against the in-memory fit of the same data (itself certified
against CVXPY by the other tests): the objective to 1e-10 relative, w within the two runs'
certified radii of each other, the same test measures; on OHSUMED's five folds split into
4-8 shards (real data) and on synthetic data (every machine). A worker killed during a fit
from files changes nothing of the result (the shards are read again elsewhere).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from toolbox import assert_same_certified_measures, letor_measures

import cvxrank.cli.main as cli_main
from cvxrank.certificates.certify import EvaluationTarget
from cvxrank.data import count_pairs, make_synthetic, write_svmlight
from cvxrank.data.normalize import fit_normalization
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import read_svmlight
from cvxrank.distributed.shards import balanced_split, shard_paths
from cvxrank.errors import UsageError
from cvxrank.estimators import IRSVMRanker, RankMMRanker, RankSVMRanker, load_model
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.dorm import DORM
from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.losses import PairLoss

distributed = pytest.importorskip("dask.distributed")

from cvxrank.distributed import (  # noqa: E402 (after the skip: needs dask.distributed)
    ShardedIRSVM,
    ShardedQueryBlocks,
    ShardedRankingData,
    ShardedRankSVM,
    connect,
    fit_sharded,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    """A local cluster of two single-threaded worker processes, shared by the module."""
    with connect(workers=2) as c:
        yield c


def synthetic(seed: int, n_queries: int = 24) -> RankingData:
    return make_synthetic(n_queries=n_queries, docs_per_query=30, n_features=8, seed=seed)


def assert_same_optimum(run, ref, formulation) -> None:
    """The sharded run ``run`` and the in-memory ``ref`` reach the same optimum: objective
    to 1e-10 relative (each evaluated in memory) and w within the sum of their radii, with
    no allowance (each radius bounds its rounding: neither is 0)."""
    assert run.converged and ref.converged
    assert run.w_radius > 0 and ref.w_radius > 0
    p_run, p_ref = formulation.primal_value(run.w), formulation.primal_value(ref.w)
    assert abs(p_run - p_ref) <= 1e-10 * abs(p_ref)
    assert abs(run.objective - p_run) <= 1e-12 * abs(p_run)
    assert np.linalg.norm(run.w - ref.w) <= run.w_radius + ref.w_radius


# ------------------------------------------------------------------------- the shards


@pytest.mark.parametrize("n_shards", [1, 2, 3, 5, 8, 40])
def test_balanced_split_keeps_queries_whole_and_balances(n_shards) -> None:
    data = make_synthetic(n_queries=17, docs_per_query=9, n_features=3, seed=n_shards)
    parts = balanced_split(data, n_shards)
    assert len(parts) == min(n_shards, data.n_queries)
    assert np.array_equal(np.concatenate(parts), np.arange(data.n_queries))  # each once
    sizes = [int(data.query_sizes[p].sum()) for p in parts]
    assert max(sizes) - min(sizes) <= 2 * int(data.query_sizes.max())


def test_a_query_split_across_files_is_refused(tmp_path, client) -> None:
    data = synthetic(1, n_queries=4)
    write_svmlight(data.subset([0, 1]), tmp_path / "a.txt")
    write_svmlight(data.subset([1, 2]), tmp_path / "b.txt")
    with pytest.raises(UsageError, match=r"query id \d+ is in both .*a.txt and .*b.txt"):
        ShardedRankingData.from_files(str(tmp_path / "*.txt"), client)


def test_shard_paths_name_what_is_missing(tmp_path) -> None:
    with pytest.raises(UsageError, match="no file matches"):
        shard_paths(str(tmp_path / "*.txt"))
    with pytest.raises(UsageError, match="no such file"):
        shard_paths([str(tmp_path / "none.txt")])


def test_shards_from_files_pad_features_and_add_up(tmp_path, client) -> None:
    data = synthetic(2, n_queries=6)
    X = np.asarray(data.X).copy()
    X[:90, -2:] = 0.0  # the first file's last two features are all zero: not written
    data = data.with_features(X)
    write_svmlight(data.subset(range(3)), tmp_path / "s0.txt")
    write_svmlight(data.subset(range(3, 6)), tmp_path / "s1.txt")
    shards = ShardedRankingData.from_files(str(tmp_path / "s*.txt"), client)
    assert (shards.n_shards, shards.n_documents, shards.n_queries, shards.n_features) == (
        2, data.n_documents, data.n_queries, data.n_features)
    assert np.array_equal(shards.column_scales, data.column_scales)
    f, ref = ShardedRankSVM(shards, C=0.3, loss="squared_hinge"), RankSVM(data, C=0.3,
                                                                         loss="squared_hinge")
    assert f.sizes()["n_pairs"] == ref.sizes()["n_pairs"]
    w = np.random.default_rng(0).normal(size=data.n_features)
    assert f.primal_value(w) == pytest.approx(ref.primal_value(w), rel=1e-13)


def test_a_shards_formulation_error_is_raised_when_it_is_built(client) -> None:
    data = synthetic(12, n_queries=6)
    shards = ShardedRankingData.from_data(data, client, 2)
    with pytest.raises(ValueError, match="level_weight"):
        RankSVM(data, C=1.0, loss="hinge", level_weight={(2.0, 1.0): 1.0})
    with pytest.raises(ValueError, match="level_weight"):
        ShardedRankSVM(shards, C=1.0, loss="hinge", level_weight={(2.0, 1.0): 1.0})


def test_shards_are_refused_as_the_data_in_memory(client) -> None:
    """The sharded formulation runs the in-memory checks: the same errors, the same words,
    and the same capabilities for each loss (with PRSVM+'s sorted passes)."""
    def error(cls, data, params) -> tuple[type, str]:
        with pytest.raises((ValueError, TypeError)) as info:
            cls(data, **params)
        return type(info.value), str(info.value).replace(info.value.args[0].split(":")[0], "")

    data = synthetic(14, n_queries=6)
    one_grade = RankingData(data.X, np.zeros(data.n_documents), data.qid)
    cases = [(data, {"C": 0.0, "loss": "hinge"}), (data, {"C": 1.0, "loss": "logistic"}),
             (one_grade, {"C": 1.0, "loss": "hinge"})]
    for source, params in cases:
        shards = ShardedRankingData.from_data(source, client, 2)
        assert error(ShardedRankSVM, shards, params) == error(RankSVM, source, params), params
    shards = ShardedRankingData.from_data(data, client, 2)
    # what needs the pairs or queries in this process (the duals, the pair samples, the
    # queries' cut bounds) is not offered; "sorted_pairs" stands on shards for Newton's
    # model of the sorted passes, which the hinge has none of
    in_memory_only = {"dual_gradient", "pair_samples", "cut_bounds", "query_blocks"}
    for loss in ("hinge", "squared_hinge", "huber"):
        sharded = ShardedRankSVM(shards, C=1.0, loss=loss).capabilities
        local = RankSVM(data, C=1.0, loss=loss).capabilities
        newton = set() if loss == "hinge" else {"sorted_pairs"}
        assert sharded == (local - in_memory_only - {"sorted_pairs"}) | newton, loss


# ----------------------------------------------------------- the optimum, as in memory


#: A researcher's ramps (cvxrank.losses.PairLoss.piecewise), sent to the workers as objects.
SQUARED_2 = PairLoss.piecewise("squared_hinge_2", [2.0], [1.0], power=2)
HINGE_2 = PairLoss.piecewise("hinge_2", [2.0], [0.5], power=1)


@pytest.mark.parametrize(("loss", "solver"), [("squared_hinge", "auto"), ("huber", "auto"),
                                              ("squared_hinge", "prsvm"), ("hinge", "auto"),
                                              (SQUARED_2, "auto"), (HINGE_2, "auto")],
                         ids=lambda x: getattr(x, "name", x))
def test_sharded_fit_reaches_the_in_memory_optimum(client, loss, solver) -> None:
    data = synthetic(3)
    shards = ShardedRankingData.from_data(data, client, 5)
    linear = RankSVM(data, C=1.0, loss=loss).ramp.linear
    for C in (0.01, 0.3 if linear else 3.0):  # (the hinge's iterations grow with C)
        memory = RankSVM(data, C=C, loss=loss)
        ref = fit_formulation(memory, solver)
        run = fit_sharded(ShardedRankSVM(shards, C=C, loss=loss), solver)
        assert run.solver == ref.solver
        assert_same_optimum(run, ref, memory)
        split = run.info
        assert split["n_shards"] == 5 and split["shard_calls"] > 0
        assert split["compute_time"] + split["communication_time"] <= run.time + 1e-9


@pytest.mark.parametrize("solver", ["prsvm+", "prsvm"])
def test_a_warm_start_on_shards_is_the_in_memory_one(client, solver) -> None:
    # the Newton solvers' first iterate (their option ``start``) on the shards: the same
    # first objective and optimum as in memory from the same start
    data = synthetic(4)
    shards = ShardedRankingData.from_data(data, client, 3)
    start = fit_formulation(RankSVM(data, C=0.1, loss="squared_hinge"), solver).w
    memory = RankSVM(data, C=2.0, loss="squared_hinge")
    ref = fit_formulation(memory, solver, start=start)
    run = fit_sharded(ShardedRankSVM(shards, C=2.0, loss="squared_hinge"), solver, start=start)
    assert run.trace.primal[0] == pytest.approx(memory.primal_value(start), rel=1e-12)
    assert run.trace.primal[0] == pytest.approx(ref.trace.primal[0], rel=1e-12)
    assert_same_optimum(run, ref, memory)


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
def test_the_shards_compensated_gradient_is_the_in_memory_one(client, loss) -> None:
    """Each shard's double-word part of the gradient (no pairs built), summed on the client:
    the in-memory compensated gradient and the explicit-pair one, within their bounds."""
    data = synthetic(5)
    shards = ShardedRankingData.from_data(data, client, 3)
    memory, sharded = RankSVM(data, C=2.0, loss=loss), ShardedRankSVM(shards, C=2.0, loss=loss)
    w = np.random.default_rng(5).normal(size=data.n_features)
    g_s, e_s = sharded.compensated_gradient(w)
    for g, e in (memory.compensated_gradient(w), memory.accurate_gradient(w)):
        assert np.all(np.abs(g_s - g) <= e_s + e)
    assert np.all(e_s <= 1e-14 * (1.0 + np.abs(g_s)))


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_sharded_irsvm_reaches_the_in_memory_optimum(client, loss) -> None:
    """IR SVM's tau reduced from the shards is the in-memory one to the last digit; its
    mu_q is each query's own; the fit is the in-memory fit's optimum."""
    # small queries: some have grade 1 at the top, so every grade pair's tau is positive
    data = make_synthetic(n_queries=60, docs_per_query=6, n_features=8, seed=8)
    shards = ShardedRankingData.from_data(data, client, 4)
    sharded = ShardedIRSVM(shards, C=1.0, loss=loss)
    memory = IRSVM(data, C=1.0, loss=loss)
    assert sharded.tau == memory.tau == ndcg1_swap_drop(data)
    assert (sharded.name, sharded.method) == (memory.name, memory.method)
    assert sharded.capabilities == ShardedRankSVM(shards, C=1.0, loss=loss).capabilities
    w = np.random.default_rng(8).normal(size=data.n_features)
    assert sharded.primal_value(w) == pytest.approx(memory.primal_value(w), rel=1e-13)
    ref = fit_formulation(memory)
    run = fit_sharded(sharded)
    assert run.solver == ref.solver
    assert_same_optimum(run, ref, memory)


def test_ohsumed_fold1_in_four_files_gives_the_pairwise_in_memory_optima(shared_data, tmp_path,
                                                                          client) -> None:
    """IR SVM's two losses, RankSVM's Huber loss and a researcher's ramp, each over OHSUMED
    Fold1 in 4 query-aligned files (the squared hinge and hinge RankSVM: the five-fold test
    above)."""
    root = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1"
    train, test = read_svmlight(root / "train.txt"), read_svmlight(root / "test.txt")
    shards = ShardedRankingData.from_files(write_shards(train, tmp_path / "shards", 4), client)
    target = EvaluationTarget.of([test], k=10, convention="letor3")
    cases = [(IRSVM, ShardedIRSVM, "squared_hinge", 1.0), (IRSVM, ShardedIRSVM, "hinge", 1.0),
             (RankSVM, ShardedRankSVM, "huber", 1e-3),
             (RankSVM, ShardedRankSVM, SQUARED_2, 1e-3)]
    for family, sharded, loss, C in cases:
        memory = family(train, C=C, loss=loss)
        ref = fit_formulation(memory, certify=target)
        run = fit_sharded(sharded(shards, C=C, loss=loss), certify=target)
        assert_same_optimum(run, ref, memory)
        assert_same_certified_measures(letor_measures(test, run.w), letor_measures(test, ref.w),
                                       target.report(memory, run)[0],
                                       target.report(memory, ref)[0], loss)


def test_shards_kept_on_two_workers_split_their_calls(client) -> None:
    """Shards split from memory are kept on both workers; each call still sends half of
    them to each worker (the calls' work splits)."""
    shards = ShardedRankingData.from_data(synthetic(9), client, 4)
    groups = ShardedRankSVM(shards, C=1.0, loss="squared_hinge")._groups()
    assert sorted(len(members) for _, members in groups) == [2, 2]


def test_shards_on_one_worker_are_built_over_both(client) -> None:
    """Every shard held by one worker (as a shard from memory is once the scheduler's memory
    manager has dropped its second copy, or a file read there): the formulations are built
    half on each worker, so the calls' work still splits (a regression: they were all built
    where the data were, and DORM's sharded iteration took 1.05x the in-memory one)."""
    first = sorted(client.scheduler_info()["workers"])[0]
    data = synthetic(10)
    parts = [data.subset(q) for q in balanced_split(data, 4)]
    futures = client.scatter(parts, hash=False, workers=[first])
    shards = ShardedRankingData._summarized(client, futures)
    assert {w for held in client.who_has(futures).values() for w in held} == {first}
    for objective in (ShardedRankSVM(shards, C=1.0, loss="squared_hinge"),
                      ShardedQueryBlocks(shards, DORM, loss="ndcg@10", C=1.0)):
        groups = objective._groups()
        assert sorted(len(members) for _, members in groups) == [2, 2]
        assert len({worker for worker, _ in groups}) == 2


def test_ohsumed_five_folds_in_shards_give_the_in_memory_optima(shared_data, client) -> None:
    root = shared_data / "letor3_ohsumed" / "QueryLevelNorm"
    for fold, n_shards in zip(range(1, 6), (4, 5, 6, 7, 8), strict=True):
        train = read_svmlight(root / f"Fold{fold}" / "train.txt")
        test = read_svmlight(root / f"Fold{fold}" / "test.txt")
        shards = ShardedRankingData.from_data(train, client, n_shards)
        assert shards.n_shards == n_shards
        for loss, C in (("squared_hinge", 1.0), ("hinge", 0.01)):
            target = EvaluationTarget.of([test], k=10, convention="letor3")
            memory = RankSVM(train, C=C, loss=loss)
            ref = fit_formulation(memory, certify=target)
            run = fit_sharded(ShardedRankSVM(shards, C=C, loss=loss), certify=target)
            assert_same_optimum(run, ref, memory)
            assert_same_certified_measures(letor_measures(test, run.w),
                                           letor_measures(test, ref.w),
                                           target.report(memory, run)[0],
                                           target.report(memory, ref)[0], (fold, loss))


# ------------------------------------------------------------------------------ faults


def test_a_worker_killed_during_a_fit_from_files_changes_nothing(tmp_path) -> None:
    data = make_synthetic(n_queries=40, docs_per_query=40, n_features=10, seed=7)
    for i, queries in enumerate(balanced_split(data, 6)):
        write_svmlight(data.subset(queries), tmp_path / f"part{i}.txt")
    memory = RankSVM(data, C=1.0, loss="squared_hinge")
    ref = fit_formulation(memory)
    killed: list[int] = []
    with connect(workers=2) as client:
        shards = ShardedRankingData.from_files(str(tmp_path / "part*.txt"), client)
        pids = client.run(os.getpid)
        client_pid = os.getpid()

        def kill_one(k, w, alpha, trace):
            if k == 2 and not killed:
                victim = next(pid for pid in pids.values() if pid != client_pid)
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
            return None

        run = fit_sharded(ShardedRankSVM(shards, C=1.0, loss="squared_hinge"),
                          callback=kill_one)
    assert killed, "the fit ended before a worker was killed"
    assert_same_optimum(run, ref, memory)


@pytest.mark.parametrize("family", ["ranksvm", "dorm"])
def test_shards_lost_for_good_end_the_fit_with_its_last_certified_iterate(family) -> None:
    """One worker, shards split from memory (no file to read again, no second copy): the
    worker killed, the fit says so and returns the point it last recorded (a Newton fit,
    and a cutting plane whose oracle runs on the shards)."""
    data = make_synthetic(n_queries=40, docs_per_query=40, n_features=10, seed=11)
    if family == "ranksvm":
        memory = RankSVM(data, C=1.0, loss="squared_hinge")

        def sharded(shards):
            return ShardedRankSVM(shards, C=1.0, loss="squared_hinge")
    else:
        memory = DORM(data, C=1.0, loss="ndcg@10")

        def sharded(shards):
            return ShardedQueryBlocks(shards, DORM, C=1.0, loss="ndcg@10")
    seen: list[np.ndarray] = []
    with connect(workers=1) as client:
        shards = ShardedRankingData.from_data(data, client, 3)
        pid = next(iter(client.run(os.getpid).values()))

        def kill_at_two(k, w, alpha, trace):
            seen.append(np.array(w))
            if k == 2:
                os.kill(pid, signal.SIGKILL)
            return None

        run = fit_sharded(sharded(shards), tol=1e-8, callback=kill_at_two)
    assert run.status.value == "interrupted" and not run.finished
    assert "lost shards it cannot recompute" in run.message
    assert run.n_iter == 2 and np.array_equal(run.w, seen[-1])
    # its certificate is sound: the in-memory optimum lies within the radius
    optimum = fit_formulation(memory, tol=1e-12).w
    assert np.isfinite(run.w_radius) and np.linalg.norm(run.w - optimum) <= run.w_radius
    assert run.objective == pytest.approx(memory.primal_value(run.w), rel=1e-12)


# ------------------------------------------------------------------ the command line


def write_shards(data: RankingData, folder: Path, n: int) -> str:
    folder.mkdir()
    for i, queries in enumerate(balanced_split(data, n)):
        write_svmlight(data.subset(queries), folder / f"shard{i}.txt")
    return str(folder / "shard*.txt")


def test_cli_and_ranker_use_a_running_scheduler(tmp_path, capsys, client) -> None:
    data = synthetic(10)
    pattern = write_shards(data, tmp_path / "shards", 3)
    address = client.scheduler.address
    assert cli_main.main(["fit", "--train", pattern, "--backend", "dask", "--scheduler",
                          address, "--loss", "hinge", "--C", "0.01", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    memory = fit_formulation(RankSVM(data, C=0.01, loss="hinge"))
    assert report["n_shards"] == 3 and report["solver"] == "1-slack"
    assert report["objective"] == pytest.approx(memory.objective, rel=1e-10)
    ranker = RankSVMRanker(C=0.01, loss="hinge", backend="dask", scheduler=address,
                           n_shards=2).fit(np.asarray(data.X), data.y, qid=data.qid)
    assert ranker.objective_ == pytest.approx(memory.objective, rel=1e-10)
    assert client.scheduler_info()["workers"]  # the running cluster is still up


@pytest.mark.parametrize("normalize", ["none", "zscore"])
def test_cli_fit_over_a_glob_reports_as_in_memory(tmp_path, capsys, normalize) -> None:
    data = synthetic(4)
    data = data.with_features(data.X * 40.0 + 7.0)
    whole = tmp_path / "train.txt"
    write_svmlight(data, whole)
    pattern = write_shards(data, tmp_path / "shards", 4)
    common = ["fit", "--loss", "squared_hinge", "--C", "0.5", "--test", str(whole), "--json",
              "--normalize", normalize]
    assert cli_main.main([*common, "--train", str(whole),
                          "--save-model", str(tmp_path / "memory.json")]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert cli_main.main([*common, "--train", pattern, "--backend", "dask", "--workers", "2",
                          "--save-model", str(tmp_path / "sharded.json")]) == 0
    sharded = json.loads(capsys.readouterr().out)
    assert set(memory) <= set(sharded)
    assert set(sharded) - set(memory) == {"backend", "n_shards", "time_split"}
    assert sharded["n_shards"] == 4 and sharded["n_pairs"] == memory["n_pairs"]
    assert sharded["objective"] == pytest.approx(memory["objective"], rel=1e-10)
    assert_same_certified_measures(sharded, memory, sharded["certified"], memory["certified"])
    assert sharded["status"] == "converged"
    split = sharded["time_split"]
    assert {"compute_time", "communication_time", "master_time", "shard_calls",
            "payload_bytes"} == set(split)
    saved = [json.loads((tmp_path / f"{name}.json").read_text())
             for name in ("memory", "sharded")]
    assert set(saved[0]) == set(saved[1])
    models = [load_model(tmp_path / f"{name}.json") for name in ("memory", "sharded")]
    w = [model.coef_ for model in models]
    assert np.linalg.norm(w[0] - w[1]) <= memory["w_radius"] + sharded["w_radius"]
    if normalize != "none":  # the map fitted on the shards is saved as in memory
        maps = [model.normalization_ for model in models]
        assert maps[0].kind == maps[1].kind == normalize
        assert np.allclose(maps[1].shift, maps[0].shift, rtol=1e-14, atol=0)
        assert np.allclose(maps[1].scale, maps[0].scale, rtol=1e-14, atol=0)
        scores = [model.predict(data.X) for model in models]
        assert np.allclose(scores[0], scores[1], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("kind", ["zscore", "minmax", "query-minmax"])
def test_normalization_over_shards_is_the_in_memory_one(client, kind) -> None:
    """The column maps' statistics reduced from the shards are the whole set's (minima and
    maxima exactly, the means and standard deviations to rounding, on badly scaled
    columns too); each shard mapped on its worker holds the in-memory map's features."""
    data = synthetic(12)
    scales = np.exp(np.random.default_rng(12).normal(size=data.n_features) * 5)
    data = data.with_features(data.X * scales + 1e3)  # spreads down to 1e-9 of the values
    memory = fit_normalization(kind, data)
    mapped, sharded = ShardedRankingData.from_data(data, client, 4).normalized(kind)
    assert sharded.kind == kind
    if kind == "query-minmax":
        assert sharded.shift is None and memory.shift is None
    else:
        assert np.allclose(sharded.shift, memory.shift, rtol=1e-14, atol=0)
        assert np.allclose(sharded.scale, memory.scale, rtol=1e-12, atol=0)
        if kind == "minmax":
            assert np.array_equal(sharded.shift, memory.shift)
    parts = client.gather(mapped.futures)
    X = np.vstack([part.X for part in parts])
    assert np.allclose(X, memory.apply(data).X, rtol=0, atol=1e-9)
    assert mapped.n_documents == data.n_documents and mapped.n_shards == 4


def test_lightgbm_shards_number_their_groups_apart(tmp_path, capsys) -> None:
    """LightGBM files, each with its own ``.query`` file, number their groups from 0; as
    shards their queries stay apart and the fit is the in-memory fit of the whole set."""
    data = synthetic(12)
    folder = tmp_path / "lightgbm"
    folder.mkdir()
    for i, queries in enumerate(balanced_split(data, 3)):
        part = data.subset(queries)
        path = folder / f"part{i}.train"
        write_svmlight(part, path)
        path.write_text(re.sub(r" qid:\S+", "", path.read_text()))
        (folder / f"part{i}.train.query").write_text(
            "".join(f"{size}\n" for size in part.query_sizes))
    assert cli_main.main(["fit", "--train", str(folder / "part*.train"), "--backend", "dask",
                          "--workers", "2", "--loss", "squared_hinge", "--C", "0.5",
                          "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    memory = fit_formulation(RankSVM(data, C=0.5, loss="squared_hinge"))
    assert report["n_shards"] == 3 and report["n_pairs"] == int(count_pairs(data).sum())
    assert report["objective"] == pytest.approx(memory.objective, rel=1e-10)


def test_a_bad_shard_is_reported_once_in_one_line(tmp_path) -> None:
    """A malformed shard's error is the command's one line on stderr, without the workers'
    log of the failed task."""
    pattern = write_shards(synthetic(13, n_queries=6), tmp_path / "s", 2)
    bad = tmp_path / "s" / "shard1.txt"
    lines = bad.read_text().splitlines()
    lines[2] = "1 qid:999 1:abc"
    bad.write_text("\n".join(lines) + "\n")
    out = subprocess.run([sys.executable, "-m", "cvxrank.cli.main", "fit", "--train", pattern,
                          "--backend", "dask", "--workers", "2"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL)
    assert out.returncode == 2
    assert out.stderr == (f"cvxrank: error: {bad}:3: value of feature 1 'abc' is not a "
                          "number\n"), out.stderr


@pytest.mark.parametrize(("extra", "message"), [
    (["--method", "ocsvm"], "--backend dask fits --method ranksvm, irsvm"),
    (["--train", "/nonexistent/*.txt"], "no file matches /nonexistent/"),
])
def test_cli_dask_refusals_are_one_line(tmp_path, capsys, extra, message) -> None:
    pattern = write_shards(synthetic(5, n_queries=4), tmp_path / "s", 2)
    code = cli_main.main(["fit", "--train", pattern, "--backend", "dask", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


def test_cli_workers_without_dask_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "t.txt"
    write_svmlight(synthetic(6, n_queries=4), path)
    assert cli_main.main(["fit", "--train", str(path), "--workers", "2"]) == 2
    assert "--workers and --scheduler are options of --backend dask" in capsys.readouterr().err


def test_a_fit_over_files_does_not_load_them_on_the_client(tmp_path) -> None:
    """The client's peak memory (the command's own ``peak_memory_mb``: the workers are other
    processes) grows by far less than the data: the files are read by the workers."""
    big = make_synthetic(n_queries=300, docs_per_query=200, n_features=46, seed=8)
    small = make_synthetic(n_queries=6, docs_per_query=20, n_features=46, seed=8)
    x_mb = np.asarray(big.X).nbytes / 2**20
    peaks = {}
    for name, data in (("small", small), ("big", big)):
        pattern = write_shards(data, tmp_path / name, 4)
        out = subprocess.run([sys.executable, "-m", "cvxrank.cli.main", "fit", "--train", pattern,
                              "--backend", "dask", "--loss", "squared_hinge", "--C", "1e-4",
                              "--json"], capture_output=True, text=True, check=True)
        peaks[name] = json.loads(out.stdout)["peak_memory_mb"]
    assert x_mb > 20  # (the client's peak grew by 0.8 MB for 21 MB of X when measured)
    assert peaks["big"] - peaks["small"] < 0.25 * x_mb, (peaks, x_mb)


# ---------------------------------------------------------------------- the estimator


def test_ranker_with_the_dask_backend_fits_the_in_memory_model() -> None:
    data = synthetic(9)
    X, y, qid = np.asarray(data.X), data.y, data.qid
    memory = RankSVMRanker(C=0.2, loss="huber").fit(X, y, qid=qid)
    sharded = RankSVMRanker(C=0.2, loss="huber", backend="dask", n_shards=3).fit(X, y, qid=qid)
    assert sharded.fit_result_.info["n_shards"] == 3
    assert sharded.objective_ == pytest.approx(memory.objective_, rel=1e-10)
    assert np.linalg.norm(sharded.coef_ - memory.coef_) <= (
        sharded.w_radius_ + memory.w_radius_)
    with pytest.raises(ValueError, match="backend must be"):
        RankSVMRanker(backend="spark").fit(X, y, qid=qid)


@pytest.mark.parametrize(("ranker", "params"), [
    (IRSVMRanker, {"loss": "squared_hinge", "C": 1.0}),
    (RankMMRanker, {"loss": "average", "C": 10.0})], ids=lambda x: getattr(x, "__name__", ""))
def test_the_other_pairwise_rankers_fit_on_shards_as_in_memory(client, ranker, params) -> None:
    # small queries: IR SVM's tau is positive for every grade pair
    data = make_synthetic(n_queries=40, docs_per_query=6, n_features=5, seed=10)
    X, y, qid = np.asarray(data.X), data.y, data.qid
    memory = ranker(**params).fit(X, y, qid=qid)
    sharded = clone(ranker(**params, backend="dask", n_shards=3,
                           scheduler=client.scheduler.address)).fit(X, y, qid=qid)
    assert sharded.fit_result_.info["n_shards"] == 3
    assert sharded.objective_ == pytest.approx(memory.objective_, rel=1e-9)
    assert np.linalg.norm(sharded.coef_ - memory.coef_) <= (
        sharded.w_radius_ + memory.w_radius_)
