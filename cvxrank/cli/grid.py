"""``cvxrank grid``: the LETOR protocol, a grid per fold selected on the validation set.

Usage::

    cvxrank grid --method ranksvm|irsvm|ocsvm [--loss L]
        (--data DIR | --train FILE --vali FILE --test FILE)
        --param C=v1,v2,... [--param NAME=v1,...] [--select map|ndcg@10|...]
        [--preset letor3|letor4] [--k 10] [--folds 1,2,...] [--solver auto] [--tol TOL]
        [--max-train-queries N] [--backend sequential|processes|dask] [--workers N]
        [--scheduler ADDRESS] [--shards N] [--out DIR [--force]] [--progress] [--json]

For each fold ``FoldK`` of DIR (all of them unless ``--folds``), the method is trained on
``train.txt`` at every point of the grid (the product of the ``--param`` axes), every model
is evaluated on ``vali.txt`` and ``test.txt``, the point with the best validation measure
(``--select``, a measure of ``cvxrank evaluate``) is selected, ties going to the first grid
point (the smallest values), and its test measures are reported; then their mean over the
folds (:func:`cvxrank.experiments.letor.run_letor_grid`). This is LETOR's protocol for its
published baselines (QueryLevelNorm, MAP on the validation set selects). ``--train``,
``--vali`` and ``--test`` instead give one fold of any three files, SVMlight/LETOR or
LightGBM (read as ``cvxrank fit`` reads them). A selection at the smallest or largest value
of an axis of three or more is warned about on stderr (the grid may cut it short).

``--backend`` runs the tasks in this process (``sequential``, the default), on ``--workers``
local processes (``processes``, joblib) or on Dask (``dask``: the scheduler at
``--scheduler ADDRESS``, whose workers must see DIR, or a local cluster of ``--workers``
processes; needs ``pip install 'cvxrank[dask]'``). With ``--shards N`` the dask backend
instead fits every grid point of a fold over the fold's training data split by query into N
shards held on the workers (read once here per fold; the methods of ``cvxrank fit
--backend dask``), each shard's part of every fit computed where it lives. Every backend
gives the same selections and measures. A progress bar goes to stderr when it is a terminal
(``--progress`` forces it, ``--no-progress`` or ``--json`` turn it off).

Prints the per-fold table, the mean and the validation measure at every grid point; with
``--out DIR`` writes ``grid.md``, ``grid.csv`` (per fold and mean), ``grid-points.csv``
(every fold and grid point), ``grid.json`` and, for one axis, ``grid-validation.png``,
renamed into place once all are written (:class:`cvxrank.utils.output_files.OutputDir`); one of
them that exists in DIR and was not written by cvxrank is refused before the run
(``--force`` replaces it; a file of the data folder never).
``--json`` prints one JSON object: the selected values (``selected``), the validation and
``test`` measures (the keys of ``cvxrank evaluate``) per fold under ``folds``, their mean over
the folds under ``mean``, and every grid point's run and measures.

Exit codes: 0 on success; 2 for bad input (a missing folder or split file, an unknown method,
loss, parameter, measure, preset or backend, a malformed ``--param`` or ``--folds``, no
scheduler at the address, a malformed data file, an ``--out`` file cvxrank did not write),
with one line ``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cvxrank.cli.common import (
    PRESET_NAMES,
    ListOption,
    add_force_flag,
    add_json_flag,
    add_progress_flag,
    emit_json,
    positive_float,
    positive_int,
    progress_wanted,
)
from cvxrank.errors import UsageError
from cvxrank.utils.output_files import OutputDir

#: The ``--help`` summary (equal to the entry of :data:`cvxrank.cli.main.COMMANDS`).
SUMMARY = "the LETOR protocol: grid per fold, select on vali, report test"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``grid`` to the top-level parser."""
    from cvxrank.experiments.backends import BACKENDS
    from cvxrank.methods import METHODS

    parser = subparsers.add_parser(
        "grid",
        help=SUMMARY,
        description="The LETOR protocol: for each fold, train at every grid point on "
        "train.txt, select by a measure on vali.txt, report the selected model's test "
        "measures per fold and their mean over the folds.",
    )
    parser.add_argument("--method", required=True,
                        help=f"one of {', '.join(METHODS)}")
    parser.add_argument("--loss", default=None,
                        help="the method's loss (default: its first, squared_hinge for "
                        "ranksvm and irsvm)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", metavar="DIR",
                       help="a LETOR folder holding Fold1, Fold2, ... with train.txt, "
                       "vali.txt and test.txt (e.g. letor3_ohsumed/QueryLevelNorm)")
    where.add_argument("--train", metavar="FILE",
                       help="instead of --data: one fold of three files, --train, --vali and "
                       "--test, each SVMlight/LETOR or LightGBM (with FILE.query); e.g. "
                       "LightGBM's lambdarank example, which has no validation file, as "
                       "--train rank.train --vali rank.test --test rank.test")
    parser.add_argument("--vali", metavar="FILE", default=None,
                        help="the validation file of --train")
    parser.add_argument("--test", metavar="FILE", default=None,
                        help="the test file of --train")
    parser.add_argument("--param", action="append", required=True, metavar="NAME=V1,V2,...",
                        help="a grid axis: a hyper-parameter of the method and its values "
                        "(e.g. C=1e-5,5e-5,1e-4); repeat for more axes")
    parser.add_argument("--select", default="map", metavar="MEASURE",
                        help="the validation measure that selects: map (the default, as "
                        "LETOR's baselines select), mrr, ndcg@K or p@K (K <= --k), "
                        "mean_ndcg for letor4")
    parser.add_argument("--preset", default="letor3",
                        help=f"metric conventions: {', '.join(PRESET_NAMES)} (default "
                        "letor3; letor4 for LETOR 4.0)")
    parser.add_argument("--k", type=positive_int, default=10,
                        help="largest cut-off of NDCG@k and P@k (default 10)")
    parser.add_argument("--folds", action=ListOption, element=positive_int, unique=True,
                        default=None, metavar="K",
                        help="fold numbers, '1 2' or '1,2' (default: every FoldK of DIR)")
    parser.add_argument("--solver", default="auto",
                        help="solver, as for cvxrank fit (default auto)")
    parser.add_argument("--tol", type=positive_float, default=None,
                        help="tolerance of a hand-written solver (default: its own)")
    parser.add_argument("--max-train-queries", type=positive_int, default=None,
                        dest="max_train_queries", metavar="N",
                        help="train on the first N queries of each fold only (quick checks)")
    parser.add_argument("--backend", default="sequential",
                        help=f"where tasks run: {', '.join(BACKENDS)} (default sequential)")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="worker processes of the processes and local dask backends "
                        "(default: the number of CPUs)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler (dask backend; default: a "
                        "local cluster)")
    parser.add_argument("--shards", type=positive_int, default=None, metavar="N",
                        help="dask backend: fit every grid point of a fold over its "
                        "training data split by query into N shards on the cluster")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write grid.md, grid.csv, grid-points.csv, grid.json (and "
                        "grid-validation.png) into DIR")
    add_force_flag(parser)
    add_progress_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_grid)


def run_grid(args: argparse.Namespace) -> int:
    """The ``grid`` subcommand."""
    from cvxrank.experiments.backends import check_backend
    from cvxrank.experiments.grid import Grid
    from cvxrank.experiments.letor import (
        check_letor_dir,
        check_params,
        find_folds,
        run_letor_grid,
        split_files,
    )
    from cvxrank.experiments.reports import GRID_FILES, grid_markdown, write_grid
    from cvxrank.experiments.selection import check_measure

    grid = Grid.parse(args.param)
    check_params(args.method, args.loss, grid)
    check_measure(args.select, preset=args.preset, k=args.k)
    check_backend(args.backend, workers=args.workers, scheduler=args.scheduler)
    if args.shards is not None and args.backend != "dask":
        raise UsageError("--shards is an option of --backend dask")
    if args.train is not None:
        if args.vali is None or args.test is None or args.folds is not None:
            raise UsageError("--train needs --vali and --test (one fold of three files), "
                             "and takes no --folds")
        data: Any = split_files(args.train, args.vali, args.test)
        folds, inputs = None, [args.train, args.vali, args.test]
    else:
        if args.vali is not None or args.test is not None:
            raise UsageError("--vali and --test go with --train; --data names a folder of "
                             "FoldK folders")
        data, inputs = args.data, [args.data]
        folds = args.folds or find_folds(args.data)
        check_letor_dir(args.data, folds)
    out = None
    if args.out is not None:  # created and checked now, so that it fails before the run
        out = OutputDir(args.out, force=args.force, inputs=inputs)
        out.check(GRID_FILES.values())
    progress = progress_wanted(args)
    result = run_letor_grid(
        data, method=args.method, grid=grid, loss=args.loss, select=args.select,
        preset=args.preset, k=args.k, folds=folds, solver=args.solver, tol=args.tol,
        max_train_queries=args.max_train_queries, backend=args.backend,
        workers=args.workers, scheduler=args.scheduler, progress=progress,
        shards=args.shards,
    )
    for line in result.at_edges():  # a selection the grid may have cut short
        print(f"cvxrank: warning: {line}: extend the grid", file=sys.stderr)
    files: dict[str, Path] = {}
    if out is not None:
        with out.writing() as staging:
            files = {k: out.final(p) for k, p in write_grid(result, staging).items()}
    if args.json:
        emit_json({**result.to_dict(), "files": {k: str(v) for k, v in files.items()}})
    else:
        print(grid_markdown(result), end="")
        if files:
            print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return 0
