"""``cvxrank fit --backend dask``: one RankSVM fit over shards on a Dask cluster.

``--train`` is a glob of files (or one file), each one shard of whole queries (a query id
in two files is refused), read by the workers: no training file passes through this
process. The fit runs on :class:`cvxrank.distributed.ShardedRankSVM` with the solvers,
stopping tests and certificates of an in-memory fit (PRSVM+ for the squared hinge and
Huber, the 1-slack for the hinge), and the report, JSON and model file have the form of an
in-memory fit's, with ``backend``, ``n_shards`` and ``time_split`` (``compute``,
``communication``, ``master`` seconds of the solver clock, ``shard_calls``,
``payload_bytes``) added; ``read_time`` is the wall time of reading the shards on the
workers. ``--test`` is read here (the measures are certified as in memory).
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

from cvxrank.cli.common import load_data
from cvxrank.cli.fit import fit_with_progress, report_fit
from cvxrank.errors import UsageError


def read_shard_file(path: str, fmt: str | None, cache: bool | None) -> Any:
    """A shard file, as ``cvxrank fit`` reads a training file (run on a worker)."""
    return load_data(path, fmt, None, cache)[0]


def fit_on_shards(args: argparse.Namespace, loss: str, params: dict[str, Any],
                  solver_options: dict[str, Any]) -> int:
    """The ``fit`` subcommand with ``--backend dask``.

    Raises
    ------
    UsageError
        For a method other than RankSVM, ``--normalize`` other than none, ``--query``, or
        a glob that matches no file.
    """
    from cvxrank.certify import EvaluationTarget
    from cvxrank.data.normalize import Normalization
    from cvxrank.distributed import ShardedRankingData, ShardedRankSVM, connect, fit_sharded
    from cvxrank.distributed.shards import shard_paths

    if args.method != "ranksvm":
        raise UsageError(f"--backend dask fits --method ranksvm (any of its losses), not "
                         f"{args.method}")
    if args.normalize != "none":
        raise UsageError("--normalize needs the whole training set in one process; "
                         "with --backend dask normalize the shards beforehand")
    if args.query is not None:
        raise UsageError("--query names one group-sizes file; with --backend dask each "
                         "LightGBM shard FILE needs its FILE.query beside it")
    paths = shard_paths(args.train)
    test = load_data(args.test, args.format, None, args.read_cache)[0] if args.test else None
    with connect(args.scheduler, args.workers or 2) as client:
        reading = time.perf_counter()
        data = ShardedRankingData.from_files(paths, client, reader=functools.partial(
            read_shard_file, fmt=args.format, cache=args.read_cache))
        read_time = time.perf_counter() - reading
        if test is not None:
            test = test.pad_features(data.n_features)
        formulation = ShardedRankSVM(data, loss=loss, **params)
        target = EvaluationTarget.of([test], k=args.k, convention=args.preset)
        run = fit_with_progress(args, loss, formulation, lambda options: fit_sharded(
            formulation, certify=target, **options, **solver_options))
        training = {"file": args.train, "fingerprint": data.fingerprint,
                    "n_documents": data.n_documents, "n_queries": data.n_queries}
        split = {key: run.info[key] for key in ("compute_time", "communication_time",
                                                "master_time", "shard_calls",
                                                "payload_bytes")}
        return report_fit(args, formulation, run, loss=loss, params=params,
                          solver_options=solver_options, test=test, target=target,
                          read_time=read_time, training=training,
                          normalization=Normalization("none"),
                          extra={"backend": "dask", "time_split": split})
