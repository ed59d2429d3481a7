"""``cvxrank reproduce``: rerun a paper's experiment, print its table and write its files.

Usage::

    cvxrank reproduce chapelle-table3 --data DIR [--C 5e-5] [--folds 1 2 3 4 5]
        [--tol 1e-8] [--linearsvc-tol 1e-8] [--max-train-queries N]
        [--out results/chapelle-table3] [--blas-threads 1] [--verbose] [--json]
    cvxrank reproduce chapelle-fig3 [--sizes 1200 2400 4800 9600 19200] [--d 20]
        [--noise 1.0] [--seed 0] [--c0 10 | --C C] [--max-pairs 20000000] [--repeat 3]
        [--memory] [--out results/chapelle-fig3] [--blas-threads 1] [--verbose] [--json]

``chapelle-table3`` is Chapelle & Keerthi (2010), Sect. 5.1, Table 3: on the five LETOR 3.0
OHSUMED folds under DIR (the ``QueryLevelNorm`` folder holding ``Fold1`` ... ``Fold5``), the
squared-hinge RankSVM trained on ``train.txt`` by PRSVM, PRSVM+ and LinearSVC on explicit
pairs; test NDCG@10 (LETOR 3.0 conventions), time and objective per fold, the mean, and the
relative objective differences of the three methods. ``C`` is the C of the paper's eq. (1);
the published code multiplies the loss by C/2, so its C = 1e-4 is the default 5e-5 here.
Writes ``chapelle-table3.md`` and ``chapelle-table3.csv`` into ``--out`` (default
``results/chapelle-table3``, relative to the current directory).

``chapelle-fig3`` is Sect. 5.2, Fig. 3: training time against n for the one-query,
two-grade (AUC) problem on synthetic data, PRSVM against PRSVM+ (PRSVM refused once it would
build more than ``--max-pairs`` pairs), with Newton and CG iteration counts per n. C is
``c0 / p`` by default (``C p`` constant across n); ``--C`` fixes it instead. Writes
``chapelle-fig3.png`` (log-log, fitted slopes in the legend), ``chapelle-fig3.csv`` and
``chapelle-fig3.md`` into ``--out`` (default ``results/chapelle-fig3``).

Both print the markdown table (``--json``: one JSON object, the result and the files
written). ``--verbose`` reports progress on stderr. Timings run with one BLAS thread by
default (``--blas-threads 0`` keeps the library's default).

Exit codes: 0 on success; 2 for bad input (a missing folder or fold file, a malformed data
file, C <= 0, an output path that is not a directory), with one line
``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cvxrank.cli.common import (
    add_json_flag,
    blas_thread_count,
    emit_json,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
)

#: Default output folders (relative to the current directory).
TABLE3_OUT = "results/chapelle-table3"
FIG3_OUT = "results/chapelle-fig3"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``reproduce`` (with its experiments) to the top-level parser."""
    from cvxrank.data.pairs import DEFAULT_MAX_PAIRS
    from cvxrank.experiments import chapelle as ch
    from cvxrank.experiments.chapelle import fig3, table3

    parser = subparsers.add_parser(
        "reproduce",
        help="rerun a paper's experiment (table or figure)",
        description="Rerun a published experiment with cvxrank's solvers; print its table and "
        "write the table (markdown, CSV) or figure (PNG, CSV) files.",
    )
    experiments = parser.add_subparsers(dest="reproduce_command", metavar="EXPERIMENT",
                                        required=True)

    t3 = experiments.add_parser(
        "chapelle-table3",
        help="Chapelle & Keerthi (2010) Table 3: OHSUMED, PRSVM / PRSVM+ / LinearSVC",
        description="Chapelle & Keerthi (2010), Sect. 5.1, Table 3: squared-hinge RankSVM on "
        "the five LETOR 3.0 OHSUMED folds (train.txt), trained by PRSVM, PRSVM+ and "
        "LinearSVC on explicit pairs; test NDCG@10 (letor3), time and objective per fold and "
        "their mean, and the relative objective differences of the three methods.",
    )
    t3.add_argument("--data", required=True, metavar="DIR",
                    help="the LETOR 3.0 OHSUMED QueryLevelNorm folder holding Fold1..Fold5")
    t3.add_argument("--C", type=positive_float, default=ch.DEFAULT_C, dest="C",
                    help="C of the paper's eq. (1), (1/2)||w||^2 + C sum_pairs loss "
                    f"(default {ch.DEFAULT_C:g}: the published code multiplies the loss term by "
                    f"C/2, so its C = {ch.PUBLISHED_CODE_C:g} is {ch.DEFAULT_C:g} here)")
    t3.add_argument("--folds", type=positive_int, nargs="+", default=list(table3.FOLDS),
                    metavar="K", help="fold numbers (default 1 2 3 4 5)")
    t3.add_argument("--tol", type=positive_float, default=1e-8,
                    help="certified relative duality gap of PRSVM and PRSVM+ (default 1e-8)")
    t3.add_argument("--linearsvc-tol", type=positive_float, default=table3.LINEARSVC_TOL,
                    dest="linearsvc_tol",
                    help=f"LIBLINEAR's tolerance (default {table3.LINEARSVC_TOL:g})")
    t3.add_argument("--max-train-queries", type=positive_int, default=None,
                    dest="max_train_queries", metavar="N",
                    help="train on the first N queries of each fold only")
    t3.add_argument("--out", metavar="OUTDIR", default=TABLE3_OUT,
                    help=f"where to write chapelle-table3.md and .csv (default {TABLE3_OUT}, "
                    "relative to the current directory)")
    _add_common(t3)
    t3.set_defaults(func=run_table3)

    f3 = experiments.add_parser(
        "chapelle-fig3",
        help="Chapelle & Keerthi (2010) Fig. 3: AUC training time against n",
        description="Chapelle & Keerthi (2010), Sect. 5.2, Fig. 3: training time against n "
        "for the one-query, two-grade (AUC) RankSVM on synthetic data, PRSVM against PRSVM+, "
        "with Newton and CG iteration counts and fitted log-log slopes.",
    )
    f3.add_argument("--sizes", type=positive_int, nargs="+", default=list(fig3.FIG3_SIZES),
                    metavar="N", help="numbers of documents (default the paper's "
                    f"{' '.join(map(str, fig3.FIG3_SIZES))})")
    f3.add_argument("--d", type=positive_int, default=fig3.FIG3_FEATURES,
                    help=f"number of features (default {fig3.FIG3_FEATURES})")
    f3.add_argument("--noise", type=nonnegative_float, default=fig3.FIG3_NOISE,
                    help=f"noise of the planted scorer (default {fig3.FIG3_NOISE:g})")
    f3.add_argument("--seed", type=nonnegative_int, default=0, help="data seed (default 0)")
    group = f3.add_mutually_exclusive_group()
    group.add_argument("--c0", type=positive_float, default=fig3.FIG3_C0,
                       help=f"C = c0 / p at each n, C p constant (default {fig3.FIG3_C0:g})")
    group.add_argument("--C", type=positive_float, default=None, dest="C",
                       help="a fixed C of eq. (1) at every n instead of c0 / p")
    f3.add_argument("--tol", type=positive_float, default=1e-8,
                    help="certified relative duality gap of both methods (default 1e-8)")
    f3.add_argument("--max-pairs", type=positive_int, default=DEFAULT_MAX_PAIRS, dest="max_pairs",
                    help=f"PRSVM's pair limit (default {DEFAULT_MAX_PAIRS:,}); above it PRSVM "
                    "is marked refused")
    f3.add_argument("--repeat", type=positive_int, default=3,
                    help="timed runs per point, median reported (default 3; fast points are "
                    "repeated until they total 0.2 s)")
    f3.add_argument("--memory", action="store_true",
                    help="also measure each run's peak memory with tracemalloc (extra run)")
    f3.add_argument("--out", metavar="OUTDIR", default=FIG3_OUT,
                    help=f"where to write chapelle-fig3.png, .csv and .md (default {FIG3_OUT}, "
                    "relative to the current directory)")
    _add_common(f3)
    f3.set_defaults(func=run_fig3)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--blas-threads", type=blas_thread_count, default=1, dest="blas_threads",
                        help="BLAS threads during the run (default 1: steadier timings on a "
                        "shared machine; 0 keeps the library default)")
    parser.add_argument("--verbose", action="store_true", help="report progress on stderr")
    add_json_flag(parser)


def _progress(args: argparse.Namespace) -> Any:
    if not args.verbose:
        return None
    return lambda line: print(line, file=sys.stderr, flush=True)


def _out_dir(path: str) -> Path:
    """Create the output folder now, so that a bad path fails before the long run."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def run_table3(args: argparse.Namespace) -> int:
    """``reproduce chapelle-table3``."""
    from cvxrank.experiments.chapelle import reports, table3
    from cvxrank.experiments.letor import check_letor_dir

    check_letor_dir(args.data, args.folds, splits=("train", "test"))
    out = _out_dir(args.out)
    result = table3.run_table3(args.data, C=args.C, folds=args.folds, tol=args.tol,
                           linearsvc_tol=args.linearsvc_tol,
                           max_train_queries=args.max_train_queries,
                           n_blas_threads=args.blas_threads, progress=_progress(args))
    files = reports.write_table3(result, out)
    if args.json:
        emit_json({**result.to_dict(), "files": {k: str(v) for k, v in files.items()}})
    else:
        print(reports.table3_markdown(result), end="")
        print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return 0


def run_fig3(args: argparse.Namespace) -> int:
    """``reproduce chapelle-fig3``."""
    from cvxrank.experiments.chapelle import fig3, reports

    fig3.check_fig3_options(args.sizes, d=args.d, c0=args.c0, C=args.C, repeat=args.repeat)
    out = _out_dir(args.out)
    result = fig3.run_fig3(args.sizes, d=args.d, noise=args.noise, seed=args.seed, c0=args.c0,
                         C=args.C, tol=args.tol, max_pairs=args.max_pairs, repeat=args.repeat,
                         measure_memory=args.memory, n_blas_threads=args.blas_threads,
                         progress=_progress(args))
    files = reports.write_fig3(result, out)
    if args.json:
        emit_json({**result.to_dict(), "files": {k: str(v) for k, v in files.items()}})
    else:
        print(reports.fig3_markdown(result), end="")
        print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return 0
