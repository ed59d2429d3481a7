"""What every objective on shards shares: the per-shard formulations held on the workers,
calls that run where the shards live, the time split of those calls, and the fit that
returns its last certified iterate when the cluster loses shards for good.

A family sharded through this class (:class:`~cvxrank.distributed.ranksvm.ShardedRankSVM`,
:class:`~cvxrank.distributed.query_blocks.ShardedQueryBlocks`) builds one in-memory
formulation per shard on its worker (``build(data, ...)``, a Dask task whose lineage
rebuilds it where a shard is read again after a worker is lost) and implements each of its
capabilities as a reduction of the shards' results on the client: the solvers then run
on it unchanged, with their usual stopping tests and certificates.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

import numpy as np

from cvxrank.core.trace import Run, Status, Trace, certified_radius
from cvxrank.distributed import tasks
from cvxrank.distributed.shards import ShardedRankingData
from cvxrank.errors import CvxrankError, UsageError
from cvxrank.formulations.base import Objective, WeightedByC


class ShardsLost(CvxrankError):
    """The cluster lost shards it cannot recompute: a shard split from memory whose every
    copy was on workers that died, or a task that killed worker after worker (Dask's
    ``KilledWorker``)."""


class ShardedObjective(WeightedByC, Objective):
    """An objective :math:`\\tfrac12\\|w\\|^2 + C \\cdot` (a loss that is a sum over
    query-aligned shards), each shard's part computed by an in-memory formulation on the
    worker that holds the shard.

    Parameters
    ----------
    data : ShardedRankingData
    build : callable
        ``build(shard_data, C=C, **options) -> part``, run on the workers (picklable): the
        shard's part (its formulation and what it keeps between calls), which the functions
        given to :meth:`map` take.
    C : float
        The loss weight (checked here, before any shard is built, and given to ``build``).
    **options
        ``build``'s keyword arguments (the same for every shard, sent with the tasks).

    Attributes
    ----------
    clock : dict
        Seconds since the last :meth:`reset_clock`: ``compute_time`` (the slowest worker's
        compute, summed over calls: the critical path on the workers),
        ``communication_time`` (each call's wall time less that), ``shard_calls`` and
        ``payload_bytes`` (the arrays sent to and returned by the workers).
    """

    def __init__(self, data: ShardedRankingData, build: Callable[..., Any], *, C: float,
                 **options: Any) -> None:
        super().__init__(data, C=C)  # type: ignore[arg-type]  (C's range, magnitudes)
        from dask.distributed import wait

        client = data.client
        wait(data.futures)  # read (from files) or scattered: where they are is known
        holders = client.who_has(data.futures)
        workers = sorted(client.scheduler_info().get("workers", {}))
        places = _least_loaded([workers] * len(data.futures),
                               [s.n_documents for s in data.summaries],
                               prefer=[holders.get(f.key, ()) for f in data.futures])
        # each formulation built on the worker chosen for its shard, the documents balanced
        # over the workers (a worker that does not hold the shard fetches it once): left to
        # the scheduler, every one may be built on one worker (where a shard from memory is
        # after the scheduler's memory manager has dropped its second copy)
        self._shards = [client.submit(build, future, C=self.C, **options, pure=False,
                                      workers=None if worker is None else [worker],
                                      allow_other_workers=True)
                        for future, worker in zip(data.futures, places, strict=True)]
        self._placement: list[tuple[str | None, list[int]]] | None = None
        self._groups()  # the shards' formulations built (as an in-memory one is) and placed
        self.clock: dict[str, float] = {}
        self.reset_clock()

    def set_params(self, **values: float) -> None:
        """Refused: the shards' formulations are built with their C (make a new one)."""
        raise UsageError("a sharded formulation's parameters are fixed; build a new one")

    def reset_clock(self) -> None:
        """Zero :attr:`clock`."""
        self.clock = {"compute_time": 0.0, "communication_time": 0.0, "shard_calls": 0,
                      "payload_bytes": 0}

    def _groups(self) -> list[tuple[str | None, list[int]]]:
        """The shards by the worker that holds them (one task per worker and call: Dask's
        cost grows with the tasks of a call, 11 ms for one and 31 ms for eight on two
        local workers), found once; a shard moved since (a worker lost) is fetched by
        the worker of its group, or its group runs elsewhere. The error of a shard whose
        formulation could not be built (a bad grade table, ...) is raised here."""
        if self._placement is None:
            from dask.distributed import wait

            client = self.data.client
            wait(self._shards)
            for future in self._shards:
                if future.status == "error":
                    future.result()
            holders = client.who_has(self._shards)
            places = _least_loaded([holders.get(f.key, ()) for f in self._shards],
                                   [s.n_documents for s in self.data.summaries])
            by_worker: dict[str | None, list[int]] = {}
            for i, worker in enumerate(places):
                by_worker.setdefault(worker, []).append(i)
            self._placement = list(by_worker.items())
        return self._placement

    def map(self, function: Callable[..., Any], *args: Any) -> list[Any]:
        """``function(part, *args)`` on every shard's part, where it lives (one task per
        worker, :func:`~cvxrank.distributed.tasks.each`); the results in shard order. Each
        result is a :class:`~cvxrank.distributed.tasks.Terms` or a pair ``(result,
        seconds)``; the call's wall time is split into compute (the slowest worker's, from
        those seconds) and communication."""
        from dask.distributed import KilledWorker

        client = self.data.client
        started = time.perf_counter()
        groups = self._groups()
        futures = [client.submit(tasks.each, function, [self._shards[i] for i in members],
                                 *args, pure=False, allow_other_workers=True,
                                 workers=None if worker is None else [worker])
                   for worker, members in groups]
        try:
            gathered = client.gather(futures)
        except (CancelledError, KilledWorker) as error:
            raise ShardsLost(f"the Dask cluster lost shards it cannot recompute ({error})"
                             ) from error
        wall = time.perf_counter() - started
        results: list[Any] = [None] * len(self._shards)
        compute = 0.0
        for (_, members), group in zip(groups, gathered, strict=True):
            seconds = 0.0
            for i, result in zip(members, group, strict=True):
                results[i] = result
                seconds += result.seconds if isinstance(result, tasks.Terms) else result[1]
            compute = max(compute, seconds)
        sent = sum(a.nbytes for a in args if isinstance(a, np.ndarray)) * len(futures)
        self.clock["compute_time"] += compute
        self.clock["communication_time"] += max(wall - compute, 0.0)
        self.clock["shard_calls"] += 1
        self.clock["payload_bytes"] += sent + sum(_returned_bytes(r) for r in results)
        return results


def _least_loaded(candidates: list[Any], sizes: list[int],
                  prefer: list[Any] | None = None) -> list[str | None]:
    """For each shard, of its ``candidates`` (workers), the one with the fewest documents
    (``sizes``) so far, so that the calls' work splits; at equal load one of ``prefer``
    (the workers that hold the shard already). None for a shard without candidates."""
    load: dict[str | None, int] = {}
    places: list[str | None] = []
    for i, (where, size) in enumerate(zip(candidates, sizes, strict=True)):
        held = set(prefer[i]) if prefer is not None else set()
        worker = min(sorted(where) or [None], key=lambda w: (load.get(w, 0), w not in held))
        load[worker] = load.get(worker, 0) + size
        places.append(worker)
    return places


def _returned_bytes(result: Any) -> int:
    """The bytes of the arrays a shard's call returned (a :class:`~cvxrank.distributed.
    tasks.Terms`'s vector, the array fields of a dataclass, or an array)."""
    if isinstance(result, tasks.Terms):
        arrays = [result.vector]
    elif dataclasses.is_dataclass(result[0]):
        arrays = [getattr(result[0], field.name) for field in dataclasses.fields(result[0])]
    else:
        arrays = [result[0]]
    return int(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))


def fit_sharded(objective: ShardedObjective, solver: str = "auto", **options: Any) -> Run:
    """:func:`cvxrank.fitting.fit_formulation` on the shards, with the run's time split in
    its ``info``: ``compute_time``, ``communication_time`` and ``master_time`` (the rest of
    the solver's clock: the client's CG, line search, master QP and certificates), and
    ``shard_calls``, ``payload_bytes``, ``n_shards``.

    A fit that cannot go on because the cluster lost shards it cannot recompute
    (:class:`ShardsLost`) returns its last certified iterate, with status ``interrupted``
    and a message that says why.

    Parameters
    ----------
    objective : ShardedObjective
        A :class:`~cvxrank.distributed.ranksvm.ShardedRankSVM` or
        :class:`~cvxrank.distributed.query_blocks.ShardedQueryBlocks`.
    solver : str
        ``"auto"`` (the method's first solver that the shards offer: PRSVM+ for the squared
        hinge and Huber, the 1-slack for the hinge, the n-slack cutting plane for RankMM,
        DORM and SVM MAP) or a solver's name.
    **options
        :func:`~cvxrank.fitting.fit_formulation`'s (``tol``, ``max_iter``, ``time_budget``,
        ``callback``, ``certify``, ``model_radius``, the solver's own options).

    Raises
    ------
    CapabilityError
        For a solver that needs what shards do not offer (a dual solver's pairs).
    ShardsLost
        When shards are lost before the first iterate was recorded.
    """
    from cvxrank.fitting import default_solver, fit_formulation

    last: dict[str, Any] = {}
    callback = options.pop("callback", None)

    def remember(k: int, w: np.ndarray, alpha: np.ndarray | None, trace: Trace) -> Any:
        last.update(k=k, w=np.array(w, dtype=np.float64), trace=trace)
        return None if callback is None else callback(k, w, alpha, trace)

    objective.reset_clock()
    try:
        run = fit_formulation(objective, solver, callback=remember, **options)
    except ShardsLost as lost:
        if not last:
            raise
        name = default_solver(objective) if solver.lower() == "auto" else solver.lower()
        run = _last_iterate(objective, name, last, lost)
    clock = dict(objective.clock)
    clock["master_time"] = max(run.time - clock["compute_time"] - clock["communication_time"],
                               0.0)
    return run.replace(info={**clock, "n_shards": objective.data.n_shards})


def _last_iterate(objective: ShardedObjective, solver: str, last: dict[str, Any],
                  lost: ShardsLost) -> Run:
    """The run of a fit stopped by :class:`ShardsLost`: its last recorded point with the
    certificate the trace holds (the best lower bound recorded; the solver's radius at that
    point, or the gap's)."""
    trace: Trace = last["trace"]
    objective_value = float(trace.primal[-1])
    duals = np.asarray(trace.dual, dtype=float)
    duals = duals[np.isfinite(duals)]
    dual = float(duals.max()) if duals.size else math.nan
    gap = objective_value - dual
    gap_error = (float(trace.gap_error[-1]) if dual == trace.dual[-1]
                 else objective.rounding_error(last["w"], objective_value, dual))
    radius = min(float(trace.radius[-1]) if math.isfinite(trace.radius[-1]) else math.inf,
                 certified_radius(gap, objective.strong_convexity, gap_error)
                 if duals.size else math.inf)
    return Run(w=last["w"], alpha=None, trace=trace, status=Status.INTERRUPTED,
               message=f"stopped: {lost}; the last certified iterate is returned",
               n_iter=int(last["k"]), solver=solver, formulation=objective.name,
               objective=objective_value, gap=gap + gap_error, gap_error=gap_error,
               w_radius=radius)
