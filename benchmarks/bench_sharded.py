"""One fit across Dask workers against the in-memory fit: time per iteration, traffic, scaling.

Issue 23's targets: per-iteration overhead of the sharded solvers against the in-memory
ones on the same machine at most 1.5x at 10^6 documents with 2 workers; the communication
per Newton iteration in bytes; how time per iteration scales with workers and documents
(weak scaling: documents per worker fixed; 1 and 2 workers measured, more extrapolated from
the measured compute and per-call costs).

Data: the synthetic 10^6 x 46 LETOR-like file of :mod:`_synthetic_files` (grades 0-4, ~100
documents per query), read once into this process; the sharded runs split it by query into
``--shards`` shards sent to a local cluster of ``--workers`` single-threaded worker
processes (:meth:`cvxrank.distributed.ShardedRankingData.from_data`). The in-memory runs use
this process with the BLAS threads it has (``--blas-threads``, default 1 as elsewhere in
``benchmarks/``; the workers have one each).

Measured, alternated ``--rounds`` times (medians), all wall clock (the sharded solver's
time is spread over three processes: the client's CG, line search and certificate, and the
workers' shard computations):

1. **fits** at C = ``--C`` and ``--C-hinge``: PRSVM+ (squared hinge) to ``--tol`` (model
   radius off: the same stopping test in both) and the 1-slack (hinge) for
   ``--hinge-iterations`` cutting-plane iterations: the solver clock per Newton or cutting-
   plane iteration, the sharded run's split (compute on the workers on the critical path,
   communication, master on the client) and its payload per Newton iteration (the arrays
   sent to and returned by the workers; Dask's own messages not counted);
2. **calls**: the Newton model's loss evaluation at a trial point and its Hessian-vector
   product, in memory and sharded (median of 7);
3. **per-call cost**: a no-op task on every worker (``tasks.each`` on no shard), the fixed
   cost of one call, for 1 and 2 workers;
4. **weak scaling**: ``n / 2`` documents on 1 worker, ``n`` on 2 (documents per worker
   fixed): time per Hessian product and per loss evaluation; extrapolated to k workers as
   ``t(k) = compute(n / 2 per worker) + call(k)`` with ``call(k)`` the per-call cost fitted
   linearly in k on the measured 1 and 2 (the client adds k d-vectors: negligible at d = 46).

Usage::

    .venv/bin/python benchmarks/bench_sharded.py                  # 10^6 x 46, ~5 min
    .venv/bin/python benchmarks/bench_sharded.py --n 100000       # smoke test
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_common_args, markdown_table, print_machine, verdict  # noqa: E402
from _synthetic_files import ensure_file  # noqa: E402

from cvxrank.data.svmlight import read_svmlight  # noqa: E402
from cvxrank.distributed import (  # noqa: E402
    ShardedRankingData,
    ShardedRankSVM,
    connect,
    fit_sharded,
    tasks,  # noqa: E402
)
from cvxrank.fitting import fit_formulation  # noqa: E402
from cvxrank.formulations.ranksvm import RankSVM  # noqa: E402
from cvxrank.solvers.newton import LocalNewtonModel  # noqa: E402
from cvxrank.utils.threads import blas_threads  # noqa: E402


def call_times(model, d: int, rng: np.random.Generator) -> tuple[float, float]:
    """Median seconds of a loss evaluation at a trial point and of a Hessian product."""
    direction = rng.normal(size=d) * 1e-3
    model.set_direction(direction)
    evaluations, products = [], []
    for rep in range(7):
        t = 0.5 / (rep + 1)  # a new trial point each time (nothing kept to reuse)
        started = time.perf_counter()
        model.try_step(-t * direction, t)
        evaluations.append(time.perf_counter() - started)
        v = rng.normal(size=d)
        started = time.perf_counter()
        model.hessian_product(v)
        products.append(time.perf_counter() - started)
    return statistics.median(evaluations), statistics.median(products)


def noop_call(client, n_calls: int = 40) -> float:
    """Seconds of one call that runs a task on each worker and does nothing."""
    workers = list(client.scheduler_info()["workers"])
    started = time.perf_counter()
    for _ in range(n_calls):
        client.gather([client.submit(tasks.each, tasks.loss, [], pure=False, workers=[w])
                       for w in workers])
    return (time.perf_counter() - started) / n_calls


def fits(data, args, client) -> list[list]:
    """Alternated in-memory and sharded fits; one row per (loss, where)."""
    shards = ShardedRankingData.from_data(data, client, args.shards)
    rows: dict[tuple[str, str], list] = {}
    for _ in range(args.rounds):
        for loss, C, options in (
                ("squared_hinge", args.C, {"tol": args.tol}),
                ("hinge", args.C_hinge, {"max_iter": args.hinge_iterations, "tol": 1e-12})):
            memory = fit_formulation(RankSVM(data, C=C, loss=loss), model_radius=None,
                                     **options)
            sharded = fit_sharded(ShardedRankSVM(shards, C=C, loss=loss), model_radius=None,
                                  **options)
            for where, run in (("memory", memory), ("sharded", sharded)):
                rows.setdefault((loss, where), []).append(run)
    out = []
    for (loss, where), runs in rows.items():
        per = statistics.median(r.time / max(r.n_iter, 1) for r in runs)
        run = runs[0]
        info = run.info
        split = ("" if where == "memory" else
                 f"{info['compute_time'] / run.time:.0%} / "
                 f"{info['communication_time'] / run.time:.0%} / "
                 f"{info['master_time'] / run.time:.0%}")
        traffic = ("" if where == "memory" else
                   f"{info['payload_bytes'] / max(run.n_iter, 1):,.0f}")
        clock = statistics.median(r.time for r in runs)
        out.append([loss, where, run.solver, run.n_iter, f"{clock:.2f}", f"{per * 1e3:.0f}",
                    split, info.get("shard_calls", ""), traffic, f"{run.objective:.12g}"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6, help="documents (default 1e6)")
    parser.add_argument("--d", type=int, default=46)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--C", type=float, default=1e-4)
    parser.add_argument("--C-hinge", type=float, default=1e-4, dest="C_hinge")
    parser.add_argument("--tol", type=float, default=1e-9)
    parser.add_argument("--hinge-iterations", type=int, default=30, dest="hinge_iterations")
    parser.add_argument("--rounds", type=int, default=3)
    add_common_args(parser)
    args = parser.parse_args()
    n = int(args.n)
    print_machine()
    print(f"\nsynthetic {n:,} x {args.d}; {args.workers} workers x 1 thread, {args.shards} "
          f"shards; in memory with {args.blas_threads or 'default'} BLAS thread(s)\n")
    data = read_svmlight(ensure_file(n, args.d))
    rng = np.random.default_rng(0)
    with blas_threads(args.blas_threads or None), connect(workers=args.workers) as client:
        table = fits(data, args, client)
        print(markdown_table(["loss", "where", "solver", "iterations", "solver clock s",
                              "ms / iteration", "compute / comm. / master",
                              "calls", "payload bytes / iteration", "objective"], table))
        per = {(r[0], r[1]): float(r[5]) for r in table}
        ratios = {loss: per[(loss, "sharded")] / per[(loss, "memory")]
                  for loss in ("squared_hinge", "hinge")}
        for loss, ratio in ratios.items():
            print(f"\n{loss}: sharded / in-memory time per iteration {ratio:.2f}x "
                  f"(target <= 1.5x: {verdict(ratio <= 1.5)})")

        memory_model = LocalNewtonModel(RankSVM(data, C=args.C, loss="squared_hinge"),
                                        "sorted")
        shards = ShardedRankingData.from_data(data, client, args.shards)
        sharded_model = ShardedRankSVM(shards, C=args.C, loss="squared_hinge").newton_model(
            "sorted")
        calls = {"memory": call_times(memory_model, args.d, rng),
                 "sharded": call_times(sharded_model, args.d, rng)}
        print("\n" + markdown_table(
            ["where", "loss at a trial point ms", "Hessian product ms"],
            [[k, f"{e * 1e3:.1f}", f"{h * 1e3:.1f}"] for k, (e, h) in calls.items()]))
        two_workers = noop_call(client)
    half = data.subset(np.arange(data.n_queries // 2))
    with connect(workers=1) as client:
        one_worker = noop_call(client)
        shards = ShardedRankingData.from_data(half, client, args.shards // 2 or 1)
        weak_one = call_times(ShardedRankSVM(shards, C=args.C, loss="squared_hinge")
                              .newton_model("sorted"), args.d, rng)
    weak_two = calls["sharded"]
    slope = two_workers - one_worker
    print(f"\nper-call cost (a no-op task on each worker): 1 worker {one_worker * 1e3:.1f} ms, "
          f"2 workers {two_workers * 1e3:.1f} ms (+{slope * 1e3:.1f} ms a worker)")
    rows = []
    compute = [max(weak_two[i] - two_workers, 0.0) for i in (0, 1)]
    for k in (1, 2, 4, 8, 16, 32):
        measured = {1: weak_one, 2: weak_two}.get(k)
        call = one_worker + slope * (k - 1)
        model = [compute[i] + call for i in (0, 1)]
        rows.append([k, f"{k * half.n_documents:,}",
                     f"{measured[0] * 1e3:.1f}" if measured else "",
                     f"{model[0] * 1e3:.1f}",
                     f"{measured[1] * 1e3:.1f}" if measured else "",
                     f"{model[1] * 1e3:.1f}"])
    print("\nweak scaling (documents per worker fixed), ms per call:")
    print(markdown_table(["workers", "documents", "loss measured", "loss model",
                          "Hessian product measured", "Hessian product model"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
