"""``cvxrank reproduce``: rerun a paper's experiment, print its table and write its files.

Usage::

    cvxrank reproduce chapelle-table3 --data DIR [--C 5e-5] [--folds 1 2 3 4 5]
        [--tol 1e-8] [--linearsvc-tol 1e-8] [--max-train-queries N] [--quick]
        [--out results/chapelle-table3] [--blas-threads 1] [--progress] [--json]
    cvxrank reproduce chapelle-fig3 [--sizes 1200 2400 4800 9600 19200] [--d 20]
        [--noise 1.0] [--seed 0] [--c0 10 | --C C] [--max-pairs 20000000] [--repeat 3]
        [--memory] [--quick] [--out results/chapelle-fig3] [--blas-threads 1] [--progress]
        [--json]
    cvxrank reproduce agarwal-collins-fig1 --data DIR [--folds 1 2 3 4 5] [--seeds 0]
        [--C ...] [--eta0 ...] [--T ...] [--ranksvm-C ...] [--no-certified]
        [--certified-solver auto] [--certified-time-budget S] [--max-train-queries N]
        [--quick] [--backend sequential|processes|dask] [--workers N] [--scheduler ADDRESS]
        [--out results/agarwal-collins-fig1] [--blas-threads 1] [--progress] [--json]
    cvxrank reproduce conerank-table1 --data DIR [--folds 1 2 3 4 5] [--seeds 0] [--K 10]
        [--passes 40] [--mu-sg 0.001] [--mu-eg 0.005] [--sweep-K 2 5 10 15 20 30 46]
        [--sweep-variants sg] [--sweep-all-seeds] [--ranksvm-C ...] [--no-spectrum]
        [--max-train-queries N] [--quick] [--backend sequential|processes|dask] [--workers N]
        [--scheduler ADDRESS] [--out results/conerank-table1] [--blas-threads 1] [--progress]
        [--json]
    cvxrank reproduce le-smola-ohsumed --data DIR [--folds 1 2 3 4 5] [--select map|ndcg@10]
        [--C ...] [--svmmap-C ...] [--ranksvm-C ...] [--dorm-c power-0.5 log loglog]
        [--max-train-queries N] [--quick] [--backend sequential|processes|dask] [--workers N]
        [--out results/le-smola-ohsumed] [--blas-threads 1] [--progress] [--json]
    cvxrank reproduce le-smola-digits [--seed 0] [--targets 0 ... 9] [--folds 5] [--quick]
        [--backend sequential|processes|dask] [--workers N] [--out results/le-smola-digits]
        [--blas-threads 1] [--progress] [--json]

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

``agarwal-collins-fig1`` is Agarwal & Collins (2010), Sect. 4, Fig. 1: RankMM-1/2/3 with the
paper's stochastic solvers over its grid (C, eta0, T), selected per fold by validation MAP,
beside the hinge RankSVM, plus each RankMM at its certified optimum for the selected C and
the exact test of whether w = 0 is optimal (:mod:`cvxrank.experiments.agarwal_collins`).
``--quick`` is a small run for checks (C = 10, eta0 in 1e-3 1e-2, T in 100 250, RankSVM
C = 1e-4, the first 20 training queries). Writes ``agarwal-collins-fig1.{md,csv,json,png}``
and ``agarwal-collins-fig1-points.csv`` into ``--out``.

``conerank-table1`` is Tran & Pham (ConeRank), Sect. 6: Table 1's MQ2008 columns (ConeRank-SG,
ConeRank-EG at K = 10 with the paper's steps, and the hinge RankSVM, on z-scored LETOR 4.0
folds, the number of passes and C selected per fold by validation MAP; test MAP, MeanNDCG and
NDCG@1..10, letor4) beside the published numbers, with Fig. 3's analogue (test measures against
K) and Fig. 4's (the spectrum of the normalized ordered pair differences) on MQ2008
(:mod:`cvxrank.experiments.conerank`). ``--quick`` is a small run for checks (3 passes, K in
2 4, two C, the first 50 training queries). Writes ``conerank-table1.{md,csv,json,png}``,
``conerank-table1-points.csv``, ``conerank-runs.csv``, ``conerank-passes.png`` and
``conerank-fig3.{csv,png}``, ``conerank-fig4.{csv,png}`` into ``--out``.

Each experiment runs from one frozen configuration (``Table1Config``, ``Fig1Config``, ...
beside its run function in :mod:`cvxrank.experiments`) that :func:`config_from` builds from
the options: an option's ``dest`` is the configuration's field, ``--quick`` starts from the
configuration's quick preset, the options given explicitly win, and the backend options
make its :class:`~cvxrank.experiments.backends.Execution`; :func:`reproduce` checks the data,
runs it, writes and prints. All print the markdown table (``--json``: one JSON object, the
result and the files written). ``--progress`` reports progress on stderr (a bar on a
terminal, a line per task otherwise; the default on a terminal without ``--json``). Timings
run with one BLAS thread by default (``--blas-threads 0`` keeps the library's default).

The files go through :class:`cvxrank.utils.output_files.OutputDir`: before the run, an
experiment refuses an ``--out`` folder holding a file of a name it writes that cvxrank did
not write there (``--force``, which every experiment takes, replaces it; a file of the
``--data`` folder or file never), and its files are renamed into place only once all are
written (an error or Ctrl-C leaves the folder as it was).

Exit codes: 0 on success; 2 for bad input (a missing folder or fold file, a malformed data
file, C <= 0, an output path that is not a directory or holds a file cvxrank did not write),
with one line ``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cvxrank.cli.common import (
    ListOption,
    add_force_flag,
    add_json_flag,
    add_progress_flag,
    blas_thread_count,
    emit_json,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    progress_lines,
    progress_wanted,
)
from cvxrank.utils.output_files import OutputDir

if TYPE_CHECKING:
    from cvxrank.experiments.backends import Execution
    from cvxrank.experiments.config import ExperimentConfig

C = TypeVar("C", bound="ExperimentConfig")

#: Default output folders (relative to the current directory).
TABLE3_OUT = "results/chapelle-table3"
FIG3_OUT = "results/chapelle-fig3"
FIG1_OUT = "results/agarwal-collins-fig1"
CONERANK_OUT = "results/conerank-table1"


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
    t3.add_argument("--folds", action=ListOption, element=positive_int, unique=True,
                    default=None, metavar="K",
                    help=f"fold numbers (default {' '.join(map(str, table3.FOLDS))})")
    t3.add_argument("--tol", type=positive_float, default=1e-8,
                    help="certified relative duality gap of PRSVM and PRSVM+ (default 1e-8)")
    t3.add_argument("--linearsvc-tol", type=positive_float, default=table3.LINEARSVC_TOL,
                    dest="linearsvc_tol",
                    help=f"LIBLINEAR's tolerance (default {table3.LINEARSVC_TOL:g})")
    t3.add_argument("--max-train-queries", type=positive_int, default=None,
                    dest="max_train_queries", metavar="N",
                    help="train on the first N queries of each fold only")
    t3.add_argument("--quick", action="store_true",
                    help="a small run for checks: Fold1's first 20 training queries (options "
                    "given explicitly win); not the paper's table")
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
    f3.add_argument("--sizes", action=ListOption, element=positive_int, default=None,
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
    f3.add_argument("--repeat", type=positive_int, default=None,
                    help="timed runs per point, median reported (default 3, --quick 1; fast "
                    "points are repeated until they total 0.2 s)")
    f3.add_argument("--quick", action="store_true",
                    help="a small run for checks: n = 300, 600, 1200, one timed run each "
                    "(options given explicitly win); not the paper's figure")
    f3.add_argument("--memory", action="store_true", dest="measure_memory",
                    help="also measure each run's peak memory with tracemalloc (extra run)")
    f3.add_argument("--out", metavar="OUTDIR", default=FIG3_OUT,
                    help=f"where to write chapelle-fig3.png, .csv and .md (default {FIG3_OUT}, "
                    "relative to the current directory)")
    _add_common(f3)
    f3.set_defaults(func=run_fig3)

    _register_agarwal_collins(experiments)
    _register_rankmm_convergence(experiments)
    _register_conerank(experiments)
    _register_le_smola(experiments)
    _register_le_smola_digits(experiments)


def _report(args: argparse.Namespace, result: Any, files: dict[str, Path],
            markdown: Any) -> int:
    """Print a reproduction's result (JSON with the files written, or its markdown and the
    files) and return the exit code 0."""
    if args.json:
        emit_json({**result.to_dict(), "files": {k: str(v) for k, v in files.items()}})
    else:
        print(markdown(result), end="")
        print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return 0


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_force_flag(parser)
    parser.add_argument("--blas-threads", type=blas_thread_count, default=1, dest="blas_threads",
                        help="BLAS threads during the run (default 1: steadier timings on a "
                        "shared machine; 0 keeps the library default)")
    add_progress_flag(parser)
    add_json_flag(parser)


def _add_parallel(parser: argparse.ArgumentParser, out: str, *, scheduler: bool = True) -> None:
    """``--backend``, ``--workers``, ``--scheduler`` (unless False) and ``--out`` (default
    ``out``) of an experiment whose tasks run on a backend."""
    from cvxrank.experiments.backends import BACKENDS

    parser.add_argument("--backend", choices=BACKENDS, default="sequential",
                        help="where the tasks run (default sequential)")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="worker processes (default: the number of CPUs)")
    if scheduler:
        parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                            help="a running Dask scheduler (dask backend)")
    parser.add_argument("--out", metavar="OUTDIR", default=out,
                        help=f"where to write the files (default {out})")


def _progress(args: argparse.Namespace) -> Any:
    """Progress lines on stderr, when progress is wanted and stderr is not a terminal (a
    terminal gets the bar)."""
    return None if sys.stderr.isatty() else progress_lines(args)


def _progress_bar(args: argparse.Namespace) -> bool:
    """A progress bar on stderr: on a terminal, when progress is wanted."""
    return progress_wanted(args) and sys.stderr.isatty()


def _output(args: argparse.Namespace, names: Iterable[str],
            *inputs: str | None) -> OutputDir:
    """The output folder ``--out``, created and checked now (``--force``; the files ``names``
    may not replace ``inputs`` nor, without ``--force``, a file cvxrank did not write), so
    that a bad path fails before the long run."""
    out = OutputDir(args.out, force=args.force, inputs=inputs)
    out.check(names)
    return out


def _write(out: OutputDir, write: Callable[[Any, Path], dict[str, Path]],
           result: Any) -> dict[str, Path]:
    """``write(result, folder)`` into ``out``'s staging folder, committed once it returns;
    the written paths by kind."""
    with out.writing() as staging:
        return {kind: out.final(path) for kind, path in write(result, staging).items()}


def _execution(args: argparse.Namespace) -> Execution:
    """The :class:`~cvxrank.experiments.backends.Execution` of the backend options (the
    sequential backend where the experiment has none)."""
    from cvxrank.experiments.backends import Execution

    return Execution(backend=getattr(args, "backend", "sequential"),
                     workers=getattr(args, "workers", None),
                     scheduler=getattr(args, "scheduler", None),
                     blas_threads=args.blas_threads)


def config_from(cls: type[C], args: argparse.Namespace) -> C:
    """The configuration ``cls`` of the parsed options: every field whose option was given
    (not None), over ``cls.quick()`` with ``--quick`` or the defaults, and
    :func:`_execution`'s backend.

    Raises
    ------
    ValueError
        For a bad option (the configuration checks them).
    """
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
             if getattr(args, f.name, None) is not None}
    given["execution"] = _execution(args)
    return (cls.quick if getattr(args, "quick", False) else cls)(**given)


def reproduce(args: argparse.Namespace, config: ExperimentConfig, run: Callable[..., Any],
              write: Callable[[Any, Path], dict[str, Path]],
              markdown: Callable[[Any], str], names: Iterable[str]) -> int:
    """Check the data, create and check the output folder for the files ``names`` that
    ``write`` may write, ``run(config)``, ``write`` its files and report (:func:`_report`)."""
    config.check_data()
    out = _output(args, names, getattr(args, "data", None))
    result = run(config, log=_progress(args), progress_bar=_progress_bar(args))
    return _report(args, result, _write(out, write, result), markdown)


def run_table3(args: argparse.Namespace) -> int:
    """``reproduce chapelle-table3``."""
    from cvxrank.experiments.chapelle import reports, table3

    return reproduce(args, config_from(table3.Table3Config, args), table3.run_table3,
                     reports.write_table3, reports.table3_markdown,
                     reports.TABLE3_FILES.values())


def run_fig3(args: argparse.Namespace) -> int:
    """``reproduce chapelle-fig3``."""
    from cvxrank.experiments.chapelle import fig3, reports

    return reproduce(args, config_from(fig3.Fig3Config, args), fig3.run_fig3,
                     reports.write_fig3, reports.fig3_markdown, reports.FIG3_FILES.values())


def _register_agarwal_collins(experiments: argparse._SubParsersAction) -> None:
    """Add ``agarwal-collins-fig1``."""
    from cvxrank.experiments import agarwal_collins as ac

    fig1 = experiments.add_parser(
        "agarwal-collins-fig1",
        help="Agarwal & Collins (2010) Fig. 1: RankMM-1/2/3 and RankSVM on OHSUMED",
        description="Agarwal & Collins (2010), Sect. 4, Fig. 1: RankMM-1/2/3 trained by the "
        "paper's stochastic solvers on train.txt over C x eta0 x T, selected per fold by "
        "validation MAP (ties: smallest C, then eta0, then T), beside the hinge RankSVM; test "
        "NDCG@1..10, P@1..10 and MAP (letor3) as fold means; each RankMM also at its certified "
        "optimum for the selected C, and whether w = 0 is optimal for each loss.",
    )
    fig1.add_argument("--data", required=True, metavar="DIR",
                      help="the LETOR 3.0 OHSUMED QueryLevelNorm folder holding Fold1..Fold5")
    fig1.add_argument("--folds", action=ListOption, element=positive_int, unique=True,
                      default=None, metavar="K",
                      help="fold numbers (default: every FoldK folder of DIR)")
    fig1.add_argument("--seeds", action=ListOption, element=nonnegative_int,
                      default=[0], metavar="S",
                      help="seeds of the stochastic runs; a grid point's measures are their "
                      "mean (default 0)")
    fig1.add_argument("--C", action=ListOption, element=positive_float, default=None,
                      dest="C_grid", metavar="C", help="the C grid (default the paper's "
                      f"{' '.join(f'{c:g}' for c in ac.C_GRID)})")
    fig1.add_argument("--eta0", action=ListOption, element=positive_float, default=None,
                      dest="eta0_grid", metavar="ETA0", help="the eta0 grid (default the "
                      f"paper's {' '.join(f'{e:g}' for e in ac.ETA0_GRID)})")
    fig1.add_argument("--T", action=ListOption, element=positive_int, default=None,
                      dest="T_grid", metavar="T", help="the grid of steps (default the "
                      f"paper's {' '.join(map(str, ac.T_GRID))}; one run of max(T) steps "
                      "serves them all)")
    fig1.add_argument("--ranksvm-C", action=ListOption, element=positive_float,
                      default=None, dest="ranksvm_C", metavar="C",
                      help="the hinge RankSVM's C grid (default "
                      f"{' '.join(f'{c:g}' for c in ac.RANKSVM_C_GRID)})")
    fig1.add_argument("--no-certified", action="store_false", dest="certified",
                      help="skip the certified optima at the selected C")
    fig1.add_argument("--certified-solver", default="auto", metavar="NAME",
                      help="solver of the certified optima (default auto)")
    fig1.add_argument("--certified-time-budget", type=positive_float, default=None,
                      metavar="SECONDS", dest="certified_time_budget",
                      help="solver seconds per certified fit (default the solver's own limits)")
    fig1.add_argument("--max-train-queries", type=positive_int, default=None,
                      dest="max_train_queries", metavar="N",
                      help="train on the first N queries of each fold only")
    fig1.add_argument("--quick", action="store_true",
                      help="a small run for checks: C = 10, eta0 in 1e-3 1e-2, T in 100 250, "
                      "RankSVM C = 1e-4, the first 20 training queries (options given "
                      "explicitly win)")
    _add_parallel(fig1, FIG1_OUT)
    _add_common(fig1)
    fig1.set_defaults(func=run_agarwal_collins_fig1)


def run_agarwal_collins_fig1(args: argparse.Namespace) -> int:
    """``reproduce agarwal-collins-fig1``."""
    from cvxrank.experiments.agarwal_collins import protocol, report

    return reproduce(args, config_from(protocol.Fig1Config, args), protocol.run_fig1,
                     report.write_fig1, report.fig1_markdown, report.FIG1_FILES.values())


#: Default output folder of ``rankmm-convergence``.
CONVERGENCE_OUT = "results/rankmm-convergence"


def _register_rankmm_convergence(experiments: argparse._SubParsersAction) -> None:
    """Add ``rankmm-convergence``."""
    from cvxrank.experiments import rankmm_convergence as rc

    conv = experiments.add_parser(
        "rankmm-convergence",
        help="RankMM's three duals: the paper's stochastic solvers against certified optima",
        description="Agarwal & Collins (2010), Sects. 3.1-3.3: on one data set and one C, the "
        "stochastic solvers of RankMM's box (sgp), simplex (seg, factored, and seg-pairs, "
        "plain EG) and l1,inf (sgp, exact projection and the paper's order) duals over "
        "several seeds, with apg on each dual as the deterministic baseline, against the "
        "certified CVXPY optimum; relative suboptimality against passes and solver time with "
        "the proven rates O(1/sqrt(T)) and O(1/T). Writes rankmm-duals.png, rankmm-eg.png, "
        "rankmm-projection.png, the CSV of the records behind each and "
        "rankmm-convergence.csv (medians and fitted rates per solver).",
    )
    conv.add_argument("--data", metavar="FILE", default=None,
                      help="a LETOR/SVMlight or LightGBM training file (default: a seeded "
                      "synthetic instance, 30 queries of 10-30 documents, 10 features, "
                      "3 grades)")
    conv.add_argument("--C", type=positive_float, default=rc.DEFAULT_C, dest="C",
                      help="C of (1/2)||w||^2 + (C/m) sum_i L_i, m the number of queries "
                      f"(default {rc.DEFAULT_C:g})")
    conv.add_argument("--seeds", type=positive_int, default=None, metavar="N",
                      help=f"seeds 0..N-1 of the stochastic runs (default {rc.DEFAULT_SEEDS}, "
                      f"--quick {rc.QUICK['seeds']})")
    conv.add_argument("--steps", type=positive_int, default=None, metavar="T",
                      help=f"stochastic steps per run (default {rc.DEFAULT_STEPS:,}, --quick "
                      f"{rc.QUICK['steps']:,}); apg runs as many passes over the data")
    conv.add_argument("--quick", action="store_true",
                      help="a small run for checks (fewer seeds and steps; options given "
                      "explicitly win): the rates are not fitted over the paper's horizon")
    conv.add_argument("--step-scale", type=positive_float, default=None, dest="step_scale",
                      help="multiple of the theory's worst-case step eta0 for the stochastic "
                      "solvers (default: their own default, the pilot's choice)")
    conv.add_argument("--out", metavar="OUTDIR", default=CONVERGENCE_OUT,
                      help=f"where to write the figures and CSVs (default {CONVERGENCE_OUT}, "
                      "relative to the current directory)")
    _add_common(conv)
    conv.set_defaults(func=run_rankmm_convergence)


def run_rankmm_convergence(args: argparse.Namespace) -> int:
    """``reproduce rankmm-convergence``."""
    from cvxrank.cli.common import load_data
    from cvxrank.experiments import rankmm_convergence as rc
    from cvxrank.experiments.rankmm_convergence.protocol import (
        run_convergence,
        synthetic_instance,
    )
    from cvxrank.experiments.rankmm_convergence.report import (
        CONVERGENCE_FILES,
        summary_markdown,
        write_convergence,
    )
    from cvxrank.utils.threads import blas_threads

    if args.data is None:
        data, source = synthetic_instance(), "synthetic (seed 0)"
    else:
        data, source = load_data(args.data)[0], Path(args.data).name
    out = _output(args, CONVERGENCE_FILES, args.data,
                  None if args.data is None else f"{args.data}.query")
    with blas_threads(args.blas_threads or None):
        preset = rc.QUICK if args.quick else {"seeds": rc.DEFAULT_SEEDS,
                                               "steps": rc.DEFAULT_STEPS}
        seeds = preset["seeds"] if args.seeds is None else args.seeds
        steps = preset["steps"] if args.steps is None else args.steps
        result = run_convergence(data, C=args.C, seeds=seeds, steps=steps,
                                 step_scale=args.step_scale, source=source,
                                 log=_progress(args))
    return _report(args, result, _write(out, write_convergence, result), summary_markdown)


def _register_conerank(experiments: argparse._SubParsersAction) -> None:
    """Add ``conerank-table1``."""
    from cvxrank.experiments import conerank as cr
    from cvxrank.experiments.conerank.protocol import Table1Config

    quick = Table1Config.QUICK
    t1 = experiments.add_parser(
        "conerank-table1",
        help="Tran & Pham (ConeRank) Table 1 on MQ2008, with Figs. 3 and 4's analogues",
        description="Tran & Pham (ConeRank), Sect. 6: ConeRank-SG and ConeRank-EG (K = 10, "
        "mu 0.001 and 0.005, alpha 1, rho sqrt(N), c 2 rho; Sect. 4.1's stochastic Alg. 1) and "
        "the hinge RankSVM on the z-scored LETOR 4.0 MQ2008 folds, the number of passes (and "
        "RankSVM's C) selected per fold by validation MAP; test MAP, MeanNDCG and NDCG@1..10 "
        "(letor4) as fold means beside the published Table 1; Fig. 3's analogue (test measures "
        "against K) and Fig. 4's (eigenvalues of the normalized ordered pair differences' "
        "second moment), both on MQ2008 (the paper's figures are on MQ2007).",
    )
    t1.add_argument("--data", required=True, metavar="DIR",
                    help="the LETOR 4.0 MQ2008 folder holding Fold1..Fold5")
    t1.add_argument("--folds", action=ListOption, element=positive_int, unique=True,
                    default=None, metavar="K",
                    help="fold numbers (default: every FoldK folder of DIR)")
    t1.add_argument("--seeds", action=ListOption, element=nonnegative_int,
                    default=[0], metavar="S",
                    help="seeds of the table's ConeRank runs; a pass's measures are their "
                    "mean (default 0)")
    t1.add_argument("--K", type=positive_int, default=cr.PAPER_K, dest="K",
                    help=f"basis vectors of the table's ConeRank (default the paper's "
                    f"{cr.PAPER_K})")
    t1.add_argument("--passes", type=positive_int, default=None,
                    help=f"passes of every run; the number of passes is selected in "
                    f"1..PASSES by validation MAP (default {cr.PASSES}; --quick: "
                    f"{quick['passes']})")
    t1.add_argument("--mu-sg", type=positive_float, default=cr.PAPER_MU["sg"], dest="mu_sg",
                    help=f"step of ConeRank-SG (default the paper's {cr.PAPER_MU['sg']:g})")
    t1.add_argument("--mu-eg", type=positive_float, default=cr.PAPER_MU["eg"], dest="mu_eg",
                    help=f"step of ConeRank-EG (default the paper's {cr.PAPER_MU['eg']:g})")
    t1.add_argument("--sweep-K", type=positive_int, nargs="*", default=None, dest="K_grid",
                    metavar="K", help="Fig. 3's K axis (default "
                    f"{' '.join(map(str, cr.K_GRID))}; --quick: "
                    f"{' '.join(map(str, quick['K_grid']))}; no value: no sweep)")
    t1.add_argument("--sweep-variants", nargs="+", choices=tuple(cr.LABELS),
                    default=list(cr.SWEEP_VARIANTS), dest="sweep_variants",
                    help="variants run at every K of the sweep (default sg)")
    t1.add_argument("--sweep-all-seeds", action="store_true", dest="sweep_all_seeds",
                    help="run the sweep with every seed (default: the first seed only)")
    t1.add_argument("--ranksvm-C", action=ListOption, element=positive_float, default=None,
                    dest="ranksvm_C", metavar="C",
                    help="the hinge RankSVM's C grid (default "
                    f"{' '.join(f'{c:g}' for c in cr.RANKSVM_C_GRID)})")
    t1.add_argument("--no-spectrum", action="store_false", dest="spectrum",
                    help="skip Fig. 4's spectrum")
    t1.add_argument("--max-train-queries", type=positive_int, default=None,
                    dest="max_train_queries", metavar="N",
                    help="train on the first N queries of each fold only")
    t1.add_argument("--quick", action="store_true",
                    help="a small run for checks: 3 passes, K in 2 4, RankSVM C in 0.01 1, the "
                    "first 50 training queries (options given explicitly win)")
    _add_parallel(t1, CONERANK_OUT)
    _add_common(t1)
    t1.set_defaults(func=run_conerank_table1)


def run_conerank_table1(args: argparse.Namespace) -> int:
    """``reproduce conerank-table1``."""
    from cvxrank.experiments.conerank import protocol, report

    return reproduce(args, config_from(protocol.Table1Config, args), protocol.run_table1,
                     report.write_table1, report.table1_markdown, report.TABLE1_FILES.values())


#: Default output folder of ``le-smola-ohsumed``.
LE_SMOLA_OUT = "results/le-smola-ohsumed"


def _register_le_smola(experiments: argparse._SubParsersAction) -> None:
    """Add ``le-smola-ohsumed``."""
    from cvxrank.experiments import le_smola as ls

    p = experiments.add_parser(
        "le-smola-ohsumed",
        help="Le & Smola (DORM) Sect. 6: DORM NDCG@10 against SVM MAP and RankSVM on OHSUMED",
        description="Le & Smola (DORM), Sect. 6: DORM with the NDCG@10 loss (one row per "
        "decreasing c of (20)), SVM MAP and the hinge RankSVM, all by certified cutting "
        "planes, on the LETOR 3.0 OHSUMED folds, C selected per fold on vali.txt (--select, "
        "default MAP; ties: smallest C); test NDCG@1, NDCG@10, MAP (letor3) as fold means, "
        "the selected C per fold, and a Table 2 style account (support vectors, "
        "column-generation iterations, share of time in the master). Writes "
        "le-smola-ohsumed.{md,csv,json}.",
    )
    p.add_argument("--data", required=True, metavar="DIR",
                   help="the LETOR 3.0 OHSUMED QueryLevelNorm folder holding Fold1..Fold5")
    p.add_argument("--folds", action=ListOption, element=positive_int, unique=True,
                   default=None, metavar="K",
                   help="fold numbers (default: every FoldK folder of DIR)")
    p.add_argument("--select", choices=("map", "ndcg@10"), default="map",
                   help="validation measure that selects C (default map)")
    p.add_argument("--C", action=ListOption, element=positive_float, default=None, dest="dorm_C",
                   metavar="C", help="DORM's C grid (default "
                   f"{' '.join(f'{c:g}' for c in ls.DORM_C_GRID)})")
    p.add_argument("--svmmap-C", action=ListOption, element=positive_float, default=None,
                   dest="svmmap_C", metavar="C", help="SVM MAP's C grid (default "
                   f"{' '.join(f'{c:g}' for c in ls.SVMMAP_C_GRID)})")
    p.add_argument("--ranksvm-C", action=ListOption, element=positive_float, default=None,
                   dest="ranksvm_C", metavar="C", help="the hinge RankSVM's C grid (default "
                   f"{' '.join(f'{c:g}' for c in ls.RANKSVM_C_GRID)})")
    p.add_argument("--dorm-c", nargs="+", choices=tuple(ls.DORM_VARIANTS), default=None,
                   dest="dorm_variants", help="DORM's c of (20) (default "
                   f"{' '.join(ls.DEFAULT_DORM_VARIANTS)})")
    p.add_argument("--max-train-queries", type=positive_int, default=None,
                   dest="max_train_queries", metavar="N",
                   help="train on the first N queries of each fold only")
    p.add_argument("--quick", action="store_true",
                   help="a small run for checks: two C per method, DORM c = power-0.5, the "
                   "first 20 training queries (options given explicitly win)")
    _add_parallel(p, LE_SMOLA_OUT)
    _add_common(p)
    p.set_defaults(func=run_le_smola_ohsumed)


def run_le_smola_ohsumed(args: argparse.Namespace) -> int:
    """``reproduce le-smola-ohsumed``."""
    from cvxrank.experiments.le_smola import protocol, report

    return reproduce(args, config_from(protocol.LeSmolaConfig, args), protocol.run_le_smola,
                     report.write_le_smola, report.le_smola_markdown,
                     report.LE_SMOLA_FILES.values())


#: Default output folder of ``le-smola-digits``.
LE_SMOLA_DIGITS_OUT = "results/le-smola-digits"

#: The stem of the files :func:`cvxrank.experiments.le_smola.digits.write_digits` writes
#: (:func:`cvxrank.experiments.reports.write_table_files`).
DIGITS_STEM = "le-smola-digits"


def _register_le_smola_digits(experiments: argparse._SubParsersAction) -> None:
    """Add ``le-smola-digits``."""
    from cvxrank.experiments.le_smola import digits as dg

    p = experiments.add_parser(
        "le-smola-digits",
        help="Le & Smola (DORM) Sect. 6.2 / Table 1's protocol on sklearn's load_digits",
        description="Le & Smola (DORM), Sect. 6.2, Table 1's protocol on scikit-learn's "
        "load_digits (the stand-in for UCI OptDigits): per target digit (one-vs-rest "
        "relevance), 50 training and 50 test queries of 100 documents from disjoint pools; "
        "DORM NDCG@10 (c_i = 1/(i+1)), DORM Prec@10, the hinge RankSVM (ROCArea) and "
        "LinearSVC (SVM classification), C selected by k-fold CV over the training queries; "
        "test NDCG@10 x 100 (mean ± std over the test queries). Writes "
        "le-smola-digits.{md,csv,json}.",
    )
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the pools and the query draws (default 0)")
    p.add_argument("--targets", type=int, nargs="+", choices=dg.TARGETS, default=None,
                   metavar="T", help="target digits (default 0..9; --quick: "
                   f"{' '.join(map(str, dg.DigitsConfig.QUICK['targets']))})")
    p.add_argument("--folds", type=positive_int, default=None, dest="n_folds", metavar="K",
                   help=f"cross-validation folds (default {dg.N_FOLDS}; --quick: "
                   f"{dg.DigitsConfig.QUICK['n_folds']})")
    p.add_argument("--quick", action="store_true",
                   help="a small run for checks: targets 0 1, 10 + 10 queries, 3-fold CV, two "
                   "C per method (options given explicitly win)")
    _add_parallel(p, LE_SMOLA_DIGITS_OUT, scheduler=False)
    _add_common(p)
    p.set_defaults(func=run_le_smola_digits)


def run_le_smola_digits(args: argparse.Namespace) -> int:
    """``reproduce le-smola-digits``."""
    from cvxrank.experiments.le_smola import digits as dg
    from cvxrank.experiments.reports import table_files

    return reproduce(args, config_from(dg.DigitsConfig, args), dg.run_digits, dg.write_digits,
                     dg.digits_markdown, table_files(DIGITS_STEM).values())
