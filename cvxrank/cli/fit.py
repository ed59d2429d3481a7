"""``cvxrank fit``: train a ranking model on a data file, optionally evaluate it on another.

Usage::

    cvxrank fit --method METHOD [--loss LOSS] [--C C] [method parameters]
                --train FILE [--test FILE] [--solver NAME] [--tol TOL] [--max-iter N]
                [--time-budget SECONDS] [--model-radius FRACTION] [--require-converged]
                [--preset letor3] [--k 10]
                [--normalize none|zscore|minmax|query-minmax] [--save-model MODEL.json]
                [--backend memory|dask [--workers N | --scheduler ADDRESS]]
                [--progress] [--json]

Every method of :data:`cvxrank.methods.METHODS` is fitted the same way: its formulation is
built from the training file, ``--loss`` and its parameters (the method's row declares them,
:class:`cvxrank.methods.Param`: ``--C`` for the max-margin families, ``--K``, ``--scoring``
and ``--mu`` for ConeRank; a parameter of another method is refused), and solved by
:func:`cvxrank.fitting.fit_formulation`. ``--solver`` is a CVXPY solver (``clarabel``,
``ecos``, ``osqp``, ``scs``: the certified reference, primal and dual solved and checked
against each other) or a hand-written solver (the ``solver`` column of ``cvxrank verify``,
and ConeRank's ``stochastic-sg``, ``stochastic-eg``, ``alternation-sg``,
``alternation-eg``); the default ``auto`` is :func:`cvxrank.fitting.default_solver`.

**Certified numbers.** With ``--test``, the solver goes on past its tolerance until every
reported measure of the test file is certified, i.e. is the exact optimum's (every w' in the
ball of the run's certified radius ranks every query with the same measure value,
:mod:`cvxrank.certificates.certify`); without ``--test``, until the model radius is at most
:data:`cvxrank.tolerances.MODEL_RADIUS` of ``||w||`` (``--model-radius``; 0 stops at the
tolerance, as svm_rank and LIBLINEAR do). The report says per measure whether it is
certified and how many queries are not (the text: how many measures are not, naming the
first :data:`NAMED_MEASURES`; a stochastic or non-convex solver certifies nothing). Where a
run has no certified gap or radius, the text says so in words and the JSON gives null.
ConeRank's joint problem is not convex; its report gives instead each convex block's
certificate at the returned point (``blocks``: the folding-in, W for the returned U, and
the basis, U for the returned W; :func:`cvxrank.solvers.conerank.block_certificates`).

**Every run returns its model.** A run that stops before its tolerance (``--max-iter``,
``--time-budget``, Ctrl-C, a numerical failure) still prints its report and saves its last
certified iterate, with its ``status`` (``converged``, ``max_iter``, ``time_budget``,
``interrupted``, ``numerical``), its certified gap and radius.

JSON (``--json``): ``method``, ``loss``, the method's parameters, ``train``, ``solver``,
``objective`` (the primal objective at the returned point), ``iterations``, ``time``
(seconds on the solver's clock, set-up included), ``setup_time``, ``clock`` (what ``time``
measures), ``status``, ``converged``, ``message``, ``gap`` (certified duality gap),
``relative_gap``, ``w_radius`` (certified bound on ``||w - w*||``; null without one),
``blocks`` (ConeRank: per block ``block``, ``gap``, ``relative_gap``, ``radius``),
``normalize``, ``zero_model``, the formulation's sizes (``n_dual``, ``n_pairs``;
``n_rankings_log10`` for the structured methods), ``read_time`` (CPU seconds reading the
data files), ``cg_iterations`` (PRSVM and PRSVM+: Hessian products per Newton step),
``peak_memory_mb`` (the process's peak resident memory: reading, fit and report); with
``--test`` also ``preset``, the measure keys of ``cvxrank evaluate --json``
(``ndcg@1``..``ndcg@k``, ``p@1``..``p@k``, ``map``, ``mrr``), ``certified`` (per measure:
``certified`` and ``uncertified_queries``) and, for OC SVM, ``grade_accuracy`` and
``grade_mae``.

``--normalize`` maps the features before the fit
(:data:`cvxrank.data.normalize.NORMALIZATIONS`): ``zscore`` and ``minmax`` column by column
with the training set's statistics, which map the ``--test`` file too (and any data the
saved model scores); ``query-minmax`` inside each query (LETOR's QueryLevelNorm, no
statistics). The default ``none`` keeps them as given.

``--backend dask`` fits RankSVM (any of its losses), RankMM, DORM and SVM MAP over shards
on a Dask cluster
(:mod:`cvxrank.distributed`; ``--scheduler ADDRESS`` or a local cluster of ``--workers``
processes): ``--train`` is a glob of files (or one file), each one shard of whole queries
(a query id in two files is refused), read by the workers, so no training file passes
through this process. The solvers, stopping tests and certificates are the in-memory
fit's, and the report, JSON and model file have its form, with ``backend``, ``n_shards``
and ``time_split`` (``compute_time``, ``communication_time``, ``master_time`` seconds of
the solver clock, ``shard_calls``, ``payload_bytes``) added; ``read_time`` is then the
wall time of reading the shards on the workers. ``--normalize`` fits its map on the
shards (the statistics reduced from them, each shard mapped on its worker) and saves it
in the model file as in memory; ``--query`` is refused with it.

``--save-model`` writes the model file of :mod:`cvxrank.data.model_file` (JSON: the method, its
loss and parameters, the feature count, the normalization and its statistics, a fingerprint
of the training data, the status and certificate, the model's arrays: the weights ``w``; OC
SVM adds its thresholds and grades, ConeRank writes its basis ``U`` and linear scorer
``v``), after the whole report has been rendered (a report that fails leaves no model).
``cvxrank predict`` scores data with it, ``cvxrank evaluate --model`` measures it and says
which measures are certified, :func:`cvxrank.load_model` gives its estimator. It refuses to
write over the training, test or ``--query`` file, and writes through a temporary file
renamed into place (:mod:`cvxrank.utils.output_files`).

Exit codes: 0 when the run converged (status ``converged``); **3** when it returned its
model with any other status (the report and model are still written), a solver without a
stopping test such as ConeRank's stochastic Alg. 1 included: it always stops at its
``max_iter`` passes; ``--require-converged`` makes that an error (exit 1, after the report
and model); 2 for bad input (unreadable data, a loss of another method, an unknown solver
or one that cannot run on the method and loss, a data set too large for the chosen
solver, an option of another method), with one line ``cvxrank: error: <reason>`` on
stderr, whose lists of losses and solvers name only those of the chosen method and loss
(:func:`check_solver`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from cvxrank.cli.common import (
    PRESET_NAMES,
    add_data_format_options,
    add_json_flag,
    add_progress_flag,
    float_option,
    int_option,
    json_text,
    load_data,
    nonnegative_float,
    positive_float,
    positive_int,
    progress_wanted,
)
from cvxrank.errors import CvxrankError, UsageError
from cvxrank.tolerances import MODEL_RADIUS
from cvxrank.utils.output_files import refuse_input

if TYPE_CHECKING:
    from cvxrank.data.model_file import SavedModel
    from cvxrank.data.normalize import Normalization
    from cvxrank.data.ranking_data import RankingData
    from cvxrank.methods import Method

#: What the reported ``time`` measures (the JSON key ``clock``).
CLOCK = ("solver: set-up (pairs, sorted blocks, Lipschitz constant, CVXPY compilation) and "
         "iterations with their stopping test; not data loading, not trace-only evaluation")

#: Exit code of a fit that returned its model without meeting its tolerance.
EXIT_NOT_CONVERGED = 3

#: Exit code of such a fit under ``--require-converged``.
EXIT_REQUIRED_CONVERGENCE = 1


def run_report(run: Any) -> dict[str, Any]:
    """The fields of a fit's report that every method shares: solver, objective,
    iterations, clocks, status and certificate (and, for ConeRank, its blocks' certificates,
    :func:`cvxrank.solvers.conerank.block_certificates`)."""
    return {
        "solver": run.solver,
        "objective": run.objective,
        "iterations": run.n_iter,
        "time": run.time,
        "setup_time": run.setup_time,
        "clock": CLOCK,
        **run.certificate(),
        "message": run.message,
        **({"blocks": [dataclasses.asdict(b) for b in run.info["blocks"]]}
           if "blocks" in run.info else {}),
    }


def method_options(parser: argparse.ArgumentParser) -> None:
    """``--method`` and ``--loss``, from the methods table. The loss is checked against the
    chosen method's (:meth:`cvxrank.methods.Method.check_loss`), so that a refusal names
    that method's losses only."""
    from cvxrank.methods import METHODS

    parser.add_argument("--method", choices=tuple(METHODS), default="ranksvm",
                        help="; ".join(f"{m.name}: {m.description}" for m in METHODS.values()))
    parser.add_argument("--loss", default=None, metavar="LOSS",
                        help="the method's loss (default its first): " + "; ".join(
                            f"{m.name}: {', '.join(m.losses)}" for m in METHODS.values())
                        + "; for a method of pair losses also a cvxrank.losses.PairLoss "
                        "given as module:object (its module importable, e.g. on PYTHONPATH)")


def parameter_options(parser: argparse.ArgumentParser) -> None:
    """One option per parameter of the methods table (:class:`cvxrank.methods.Param`),
    saying which methods take it."""
    from cvxrank.methods import METHODS

    seen: dict[str, list[str]] = {}
    params = {}
    for method in METHODS.values():
        for param in method.params:
            seen.setdefault(param.name, []).append(method.name)
            params.setdefault(param.name, param)
    for name, param in params.items():
        parser.add_argument(f"--{name}", dest=f"param_{name}", default=None,
                            type=option_type(param), choices=param.choices or None,
                            help=f"{param.help} (methods: {', '.join(seen[name])})")


def option_type(param: Any) -> Callable[[str], Any]:
    """The argparse ``type=`` of a parameter (:class:`cvxrank.methods.Param`): its
    :class:`~cvxrank.methods.Interval` as bounds, a choice as a string."""
    from cvxrank.methods import Interval

    bounds = param.constraint
    if not isinstance(bounds, Interval):
        return str
    if bounds.integer:
        return int_option(minimum=int(bounds.low) + int(bounds.open_low),
                          maximum=None if bounds.high is None else int(bounds.high))
    return float_option(minimum=bounds.low, maximum=bounds.high,
                        exclusive_minimum=bounds.open_low)


def method_parameters(method: Any, args: argparse.Namespace) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
    """The method's parameters from ``args``: (formulation keywords, solver options).

    Raises
    ------
    UsageError
        For a parameter the method does not take.
    """
    taken = {p.name: p for p in method.params}
    given = {k.removeprefix("param_"): v for k, v in vars(args).items()
             if k.startswith("param_") and v is not None}
    foreign = sorted(set(given) - set(taken))
    if foreign:
        raise UsageError(f"{', '.join('--' + f for f in foreign)}: not a parameter of "
                         f"--method {method.name} (its parameters: "
                         f"{', '.join('--' + p for p in taken) or 'none'})")
    formulation, solver = {}, {}
    for name, param in taken.items():
        value = given.get(name, param.default)
        if value is not None:
            (formulation if param.target == "formulation" else solver)[name] = value
    return formulation, solver


def solver_help() -> str:
    """Help text of ``--solver``: the CVXPY solvers and the methods' hand-written ones."""
    from cvxrank.fitting import CVXPY_SOLVERS
    from cvxrank.methods import METHODS

    preferred = dict.fromkeys(s for m in METHODS.values() for s in m.solvers)
    return (f"auto (default: the first of the method's {', '.join(preferred)} that applies), "
            f"a CVXPY solver ({', '.join(CVXPY_SOLVERS)}: the certified reference) or any "
            "hand-written solver whose needs the formulation meets (the solver column of "
            "`cvxrank verify`)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fit`` to the top-level parser."""
    parser = subparsers.add_parser(
        "fit",
        help="train a ranking model (and evaluate it on a test file)",
        description="Fit a ranking model on a training file with a CVXPY reference solver "
        "or a hand-written one; report objective, iterations, time, status and certificate "
        "and, with --test, the test measures and whether each is the optimum's.",
    )
    method_options(parser)
    parameter_options(parser)
    parser.add_argument("--c", type=positive_float, default=None, dest="svm_rank_c",
                        metavar="c", help="svm_rank's -c, for --method ranksvm: C = c / "
                        "the training queries (svm_rank's objective averages the loss over "
                        "the queries); not with --C")
    parser.add_argument("--train", required=True, metavar="FILE", help="training data file")
    parser.add_argument("--test", metavar="FILE", default=None, help="test data file")
    parser.add_argument("--solver", default="auto", help=solver_help())
    parser.add_argument("--tol", type=positive_float, default=None,
                        help="tolerance of a hand-written solver (relative duality gap; "
                        "ConeRank's alternation: relative decrease per outer iteration)")
    parser.add_argument("--max-iter", type=positive_int, default=None, dest="max_iter",
                        help="iteration limit of a hand-written solver (ConeRank: passes "
                        "over the queries, or outer iterations of the alternation)")
    parser.add_argument("--time-budget", type=positive_float, default=None,
                        dest="time_budget", metavar="SECONDS",
                        help="stop after this many wall-clock seconds of solving and return "
                        "the last certified iterate (status time_budget, exit code 3)")
    parser.add_argument("--model-radius", type=nonnegative_float, default=MODEL_RADIUS,
                        dest="model_radius", metavar="FRACTION",
                        help="without --test, go on past the tolerance until the certified "
                        "model radius is at most this fraction of ||w|| (default "
                        f"{MODEL_RADIUS:g}; 0: stop at the tolerance)")
    parser.add_argument("--require-converged", action="store_true",
                        help="a run that does not meet its tolerance is an error (exit 1, "
                        "after the report and model are written)")
    parser.add_argument("--preset", default="letor3",
                        help=f"metric conventions for --test: {', '.join(PRESET_NAMES)} "
                        "(default letor3)")
    parser.add_argument("--k", type=positive_int, default=10, help="largest cut-off k (default 10)")
    normalize_option(parser)
    add_progress_flag(parser)
    parser.add_argument("--save-model", metavar="MODEL", default=None,
                        help="write the fitted model (JSON) to MODEL")
    parser.add_argument("--backend", choices=("memory", "dask"), default="memory",
                        help="memory (default): the data in this process; dask: one fit "
                        "over shards on a Dask cluster, --train a glob of files (one shard "
                        "each, read by the workers), RankSVM only")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="worker processes of the local Dask cluster (--backend dask; "
                        "default 2)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler (--backend dask; its "
                        "workers must see the training files; default: a local cluster)")
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    """The ``fit`` subcommand."""
    from cvxrank.certificates.certify import EvaluationTarget
    from cvxrank.fitting import fit_formulation
    from cvxrank.methods import get
    from cvxrank.metrics import get_preset

    method = get(args.method)
    loss_object = method.check_loss(args.loss)  # a name, or the object of --loss module:object
    loss = args.loss or method.default_loss
    params, solver_options = method_parameters(method, args)
    get_preset(args.preset)  # an unknown preset fails before the (long) fit
    if args.backend != "dask" and (args.workers is not None or args.scheduler is not None):
        raise UsageError("--workers and --scheduler are options of --backend dask")
    if args.save_model:
        refuse_input(args.save_model, (args.train, args.test, args.query),
                     option="--save-model")
    if args.backend == "dask":
        return fit_on_shards(args, loss, loss_object, params, solver_options)
    reading = time.process_time()
    train, _, _ = load_data(args.train, args.format, args.query, args.read_cache)
    params = svm_rank_params(args, method, params, train.n_queries)
    test = load_data(args.test, args.format, None, args.read_cache)[0] if args.test else None
    read_time = time.process_time() - reading
    training = training_record(args.train, train) if args.save_model else {}
    train, test, normalization = normalized(args.normalize, train, test)
    # The formulation and fit_formulation directly (what the estimators call), so that a
    # fit from the command line does not import scikit-learn (about 1 s of start-up).
    formulation = method.build(train, loss=loss_object, **params)
    check_solver(method, formulation, args.solver)
    target = EvaluationTarget.of([test], k=args.k, convention=args.preset)
    run = fit_with_progress(args, loss, formulation, lambda options: fit_formulation(
        formulation, certify=target, **options, **solver_options))
    return report_fit(args, formulation, run, loss=loss, params=params,
                      solver_options=solver_options, test=test, target=target,
                      read_time=read_time, training=training, normalization=normalization)


def svm_rank_params(args: argparse.Namespace, method: Any, params: dict[str, Any],
                    n_queries: int) -> dict[str, Any]:
    """``params`` with C from svm_rank's ``--c`` (``c / n_queries``) when it is given.

    Raises
    ------
    UsageError
        For ``--c`` with ``--C`` or with another method than ranksvm.
    """
    c = args.svm_rank_c
    if c is None:
        return params
    if method.name != "ranksvm":
        raise UsageError(f"--c is svm_rank's convention for --method ranksvm, not "
                         f"{method.name} (give --C)")
    if args.param_C is not None:
        raise UsageError("give --c (svm_rank's, C = c / the training queries) or --C, not "
                         "both")
    return {**params, "C": c / n_queries}


def usable_solvers(method: Method, formulation: Any) -> list[str]:
    """The solvers that run on ``formulation`` (its method and loss): the hand-written ones
    that can (:func:`cvxrank.solvers.solvers_for`: needs and loss), those ``auto`` tries
    first in its order, then the CVXPY solvers when its certified reference applies (a
    convex formulation of at most :data:`cvxrank.fitting.REFERENCE_MAX_VARIABLES` dual
    variables)."""
    from cvxrank import fitting
    from cvxrank.formulations.base import Formulation
    from cvxrank.solvers import solvers_for

    usable = solvers_for(formulation)
    ordered = [s for s in method.solvers if s in usable]
    ordered += [s for s in usable if s not in ordered]
    if (isinstance(formulation, Formulation)
            and formulation.n_dual <= fitting.REFERENCE_MAX_VARIABLES):
        ordered += fitting.CVXPY_SOLVERS
    return ordered


def check_solver(method: Method, formulation: Any, solver: str) -> None:
    """Refuse, before the fit, a ``--solver`` that cannot run on ``formulation``, naming
    the ones that can (:func:`usable_solvers`).

    Raises
    ------
    UsageError
        For an unknown solver, a hand-written one whose needs or loss the formulation does
        not meet, or a CVXPY solver on a non-convex formulation or one too large for it.
    """
    name = solver.lower()
    usable = usable_solvers(method, formulation)
    if name != "auto" and name not in usable:
        raise UsageError(f"{solver_refusal(formulation, name)}; the solvers for "
                         f"{formulation.name}: {', '.join(usable)}")


def solver_refusal(formulation: Any, name: str) -> str:
    """Why the solver ``name``, not one of :func:`usable_solvers`, cannot run on
    ``formulation``."""
    from cvxrank import fitting
    from cvxrank.core.capabilities import refusal
    from cvxrank.formulations.base import Formulation
    from cvxrank.solvers import get_solver, solver_names

    if name in fitting.CVXPY_SOLVERS:
        if not isinstance(formulation, Formulation):
            return f"{formulation.name} is not convex: it has no CVXPY reference"
        return (f"{formulation.n_dual:,} dual variables is too large for the CVXPY reference "
                f"solver {name} (limit {fitting.REFERENCE_MAX_VARIABLES:,})")
    if name not in solver_names():
        return f"unknown solver {name!r}"
    solve = get_solver(name)
    return refusal(formulation, name, solve.needs)


#: A LightGBM file numbers its groups from 0: read as the i-th shard, group g gets query id
#: ``i * LIGHTGBM_QID_STRIDE + g``, so that the queries of two files stay apart.
LIGHTGBM_QID_STRIDE = 2**32


def read_shard_file(path: str, fmt: str | None, cache: bool | None,
                    positions: dict[str, int]) -> Any:
    """A shard file, as ``cvxrank fit`` reads a training file (run on a worker); a LightGBM
    shard's groups numbered apart from the other files' (``positions``: each file's place
    in the shards, :data:`LIGHTGBM_QID_STRIDE`)."""
    data, used, _ = load_data(path, fmt, None, cache)
    if used == "lightgbm":
        data = dataclasses.replace(data, qid=data.qid + positions[path] * LIGHTGBM_QID_STRIDE)
    return data


def fit_on_shards(args: argparse.Namespace, loss: str, loss_object: Any,
                  params: dict[str, Any],
                  solver_options: dict[str, Any]) -> int:
    """The ``fit`` subcommand with ``--backend dask``.

    Raises
    ------
    UsageError
        For a method that does not run on shards
        (:func:`cvxrank.distributed.methods.sharded_formulation`), ``--query``, or a glob
        that matches no file.
    """
    import functools

    from cvxrank.certificates.certify import EvaluationTarget
    from cvxrank.distributed import ShardedRankingData, connect, fit_sharded
    from cvxrank.distributed.methods import on_shards, sharded_formulation, sharded_methods
    from cvxrank.distributed.shards import shard_paths
    from cvxrank.methods import get

    method = get(args.method)
    if not on_shards(method):
        raise UsageError(f"--backend dask fits --method {', '.join(sharded_methods())}, not "
                         f"{args.method}")
    if args.query is not None:
        raise UsageError("--query names one group-sizes file; with --backend dask each "
                         "LightGBM shard FILE needs its FILE.query beside it")
    paths = shard_paths(args.train)
    test = load_data(args.test, args.format, None, args.read_cache)[0] if args.test else None
    with connect(args.scheduler, args.workers or 2) as client:
        reading = time.perf_counter()
        data = ShardedRankingData.from_files(paths, client, reader=functools.partial(
            read_shard_file, fmt=args.format, cache=args.read_cache,
            positions={path: i for i, path in enumerate(paths)}))
        read_time = time.perf_counter() - reading
        params = svm_rank_params(args, method, params, data.n_queries)
        training = {"file": args.train, "fingerprint": data.fingerprint,
                    "n_documents": data.n_documents, "n_queries": data.n_queries}
        data, normalization = data.normalized(args.normalize)
        if test is not None:
            test = normalization.apply(test.pad_features(data.n_features))
        formulation = sharded_formulation(method, data, loss=loss_object, **params)
        target = EvaluationTarget.of([test], k=args.k, convention=args.preset)
        run = fit_with_progress(args, loss, formulation, lambda options: fit_sharded(
            formulation, certify=target, **options, **solver_options))
        split = {key: run.info[key] for key in ("compute_time", "communication_time",
                                                "master_time", "shard_calls",
                                                "payload_bytes")}
        return report_fit(args, formulation, run, loss=loss, params=params,
                          solver_options=solver_options, test=test, target=target,
                          read_time=read_time, training=training,
                          normalization=normalization,
                          extra={"backend": "dask", "time_split": split})


def fit_with_progress(args: argparse.Namespace, loss: str, formulation: Any,
                      fit: Callable[..., Any]) -> Any:
    """``fit(options)`` with the options of ``args`` (solver, tolerance, limits, model
    radius) and, with ``--progress``, a progress line on stderr."""
    from cvxrank.cli.progress import progress_printer
    from cvxrank.fitting import default_solver

    progress = progress_wanted(args)
    # resolved once, here: the progress line's unit and the fit both need it
    solver = default_solver(formulation) if args.solver.lower() == "auto" else args.solver
    unit = "pass" if solver.lower().startswith("stochastic") else "iteration"  # ConeRank's Alg. 1
    callback = (progress_printer(f"{args.method} {loss}", sys.stderr, unit=unit) if progress
                else None)
    try:
        return fit({"solver": solver, "tol": args.tol, "max_iter": args.max_iter,
                    "time_budget": args.time_budget, "seed": 0, "callback": callback,
                    "model_radius": args.model_radius or None})
    finally:
        if progress:
            sys.stderr.write("\n")


def report_fit(args: argparse.Namespace, formulation: Any, run: Any, *, loss: str,
               params: dict[str, Any], solver_options: dict[str, Any], test: Any, target: Any,
               read_time: float, training: dict[str, Any], normalization: Normalization,
               extra: dict[str, Any] | None = None) -> int:
    """Print the fit's report (text or ``--json``), write ``--save-model`` after it has been
    rendered, and return the exit code."""
    from cvxrank.metrics import get_preset

    report: dict[str, Any] = {
        "method": args.method,
        "loss": loss,
        **params,
        "train": args.train,
        **run_report(run),
        "normalize": args.normalize,
        "zero_model": bool(run.info.get("zero_model", False)),
        **formulation.sizes(),
        "read_time": read_time,
        **({"cg_iterations": list(run.info["cg_iterations"])}
           if "cg_iterations" in run.info else {}),
        "peak_memory_mb": peak_memory_mb(),
        **(extra or {}),
    }
    if test is not None:
        report.update(test_report(formulation, run, test, target,
                                  get_preset(args.preset), args))
    # the whole report is rendered before the model is written: a report that fails
    # leaves no model behind
    text = json_text(report) if args.json else format_report(report)
    if args.save_model:
        from cvxrank.data.model_file import write_model

        write_model(args.save_model, saved_model(
            formulation, run, method=args.method, loss=loss,
            params={**params, **solver_options}, training=training,
            normalization=normalization))
    print(text)
    if run.converged:
        return 0
    if args.require_converged:
        raise NotConverged(f"{run.solver} stopped with status {run.status.value}: "
                           f"{run.message}")
    return EXIT_NOT_CONVERGED


def peak_memory_mb() -> float:
    """The process's peak resident memory so far, in MB (reading, the fit and the report
    together): Linux's ``VmHWM`` of this process, else ``getrusage``'s ``ru_maxrss`` (which
    a process started by a larger one may inherit from it); NaN where neither exists."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


class NotConverged(CvxrankError):
    """``--require-converged`` and a run that did not converge (exit code 1)."""

    exit_code = EXIT_REQUIRED_CONVERGENCE


def test_report(formulation: Any, run: Any, test: Any, target: Any, convention: Any,
                args: argparse.Namespace) -> dict[str, Any]:
    """The ``--test`` part of the report: measures, their certificate, the model's extras."""
    from cvxrank.cli.evaluate import measure_scores

    scores = formulation.scores(run.w, test)
    out: dict[str, Any] = {"test": args.test, "preset": args.preset}
    out.update(measure_scores(test, scores, convention=convention, preset=args.preset,
                              k=args.k))
    out["certified"] = target.report(formulation, run)[0]
    out.update(formulation.test_report(run.w, test))
    return out


def normalize_option(parser: argparse.ArgumentParser) -> None:
    """``--normalize``: the feature map fitted on the training data."""
    from cvxrank.data.normalize import NORMALIZATIONS

    parser.add_argument("--normalize", choices=NORMALIZATIONS, default="none",
                        help="map the features before the fit: zscore or minmax per column "
                        "with the training set's statistics (applied to --test and stored "
                        "in the saved model), query-minmax inside each query (LETOR's "
                        "QueryLevelNorm); default none")


def normalized(kind: str, train: RankingData, test: RankingData | None) -> tuple[
        RankingData, RankingData | None, Normalization]:
    """The training and test data mapped by the normalization ``kind`` fitted on the
    training data, and that map. The test data is first padded with zero features to the
    training width (an SVMlight file need not list trailing zero features; a wider test
    file is refused, :meth:`~cvxrank.data.ranking_data.RankingData.pad_features`)."""
    from cvxrank.data.normalize import fit_normalization

    normalization = fit_normalization(kind, train)
    if test is not None:
        test = normalization.apply(test.pad_features(train.n_features))
    return normalization.apply(train), test, normalization


def training_record(path: str, train: RankingData) -> dict[str, Any]:
    """What a saved model records of its training data (as read, before normalization):
    the file, a fingerprint (:func:`cvxrank.formulations.base.data_fingerprint`) and the
    counts."""
    from cvxrank.formulations.base import data_fingerprint

    return {"file": path, "fingerprint": data_fingerprint(train),
            "n_documents": train.n_documents, "n_queries": train.n_queries}


def saved_model(formulation: Any, run: Any, *, method: str, loss: str, params: dict[str, Any],
                training: dict[str, Any], normalization: Normalization) -> SavedModel:
    """The model file's content (:class:`cvxrank.data.model_file.SavedModel`) of the ``run`` of
    a fit of ``formulation``: method ``method`` with ``loss`` and parameters ``params``, on
    training data recorded by :func:`training_record`, mapped by ``normalization``."""
    import numpy as np

    from cvxrank.data.model_file import SavedModel

    arrays = {name: np.asarray(value, dtype=np.float64)
              for name, value in formulation.model_arrays(run.w).items()}
    return SavedModel(
        method=method, loss=loss, params=params, n_features=formulation.data.n_features,
        normalization=normalization, training_data=training, solver=run.solver,
        iterations=run.n_iter, objective=run.objective, status=run.status.value,
        converged=run.converged, gap=run.gap, relative_gap=run.relative_gap,
        w_radius=run.w_radius, arrays=arrays)


#: How many of the measures that are not certified the text report names (the JSON's
#: ``certified`` has every one).
NAMED_MEASURES = 3

#: The text report's names of ConeRank's blocks (:func:`block_lines`) and of the point
#: each block's radius bounds.
BLOCK_NAMES = {"folding-in": ("folding-in (W for the returned U)", "W"),
               "basis": ("basis (U for the returned W)", "U")}


def finite(value: Any, form: str, missing: str) -> str:
    """``form.format(value)``, or the words ``missing`` for a value that is None, NaN or
    infinite (a text report prints no nan or inf)."""
    if value is None or not math.isfinite(value):
        return missing
    return form.format(value)


def certificate_text(gap: float, relative_gap: float, radius: float, point: str) -> str:
    """``gap G (relative R), ||w - w*|| <= r``, each part in words where there is no
    certificate."""
    return ", ".join((
        finite(gap, "gap {:.3g}", "no certified gap")
        + finite(relative_gap, " (relative {:.2e})", ""),
        finite(radius, f"||{point} - {point}*|| <= {{:.3g}}", "no certified radius")))


def block_lines(blocks: Iterable[dict[str, Any]]) -> list[str]:
    """One line per ConeRank block certificate (:func:`run_report`'s ``blocks``)."""
    lines = []
    for block in blocks:
        name, point = BLOCK_NAMES[block["block"]]
        label = "blocks     " if not lines else " " * 11
        lines.append(f"{label}{name}: " + certificate_text(block["gap"], block["relative_gap"],
                                                           block["radius"], point))
    return lines


def uncertified_text(certified: dict[str, dict[str, Any]]) -> str:
    """The measures that are not certified: their count and the first
    :data:`NAMED_MEASURES` of them (with their uncertified queries where the model has a
    certificate), or that every measure is."""
    missing = {m: c["uncertified_queries"] for m, c in certified.items()
               if not c["certified"]}
    if not missing:
        return "every measure certified"
    named = [m.upper() + ("" if n is None else f" ({n} quer{'y' if n == 1 else 'ies'})")
             for m, n in list(missing.items())[:NAMED_MEASURES]]
    more = ", ..." if len(missing) > NAMED_MEASURES else ""
    why = (" (no certified radius)" if all(n is None for n in missing.values()) else "")
    return (f"{len(missing)} measure{'' if len(missing) == 1 else 's'} not certified{why}: "
            f"{', '.join(named)}{more}")


def format_report(report: dict[str, Any]) -> str:
    """The text form of a fit report."""
    from cvxrank.methods import get

    params = ", ".join(f"{p.name}={report[p.name]}" for p in get(report["method"]).params
                       if p.name in report)
    counts = [f"{report[key]:,} {label}" for key, label in
              (("n_pairs", "pairs"), ("n_dual", "dual variables")) if key in report]
    if "n_dual" not in report and "n_rankings_log10" in report:
        counts.append(f"10^{report['n_rankings_log10']:.1f} rankings (dual variables)")
    sizes = ", ".join(counts)
    normalize = report.get("normalize", "none")
    if normalize != "none":
        sizes = ", ".join(filter(None, (sizes, f"features {normalize}-normalized")))
    lines = [
        f"method     {report['method']} ({report['loss']}{', ' + params if params else ''})",
        f"train      {report['train']}" + (f" ({sizes})" if sizes else ""),
        f"solver     {report['solver']} ({report['status']}): {report['message']}",
        "objective  " + finite(report["objective"], "{:.10g}", "none recorded"),
        f"iterations {report['iterations']}",
        f"time       {report['time']:.3f} s (solver clock; set-up {report['setup_time']:.3f} s)",
        "memory     " + finite(report["peak_memory_mb"], "{:.0f} MB (peak of the whole "
                               "process)", "unknown"),
        "certified  " + certificate_text(report["gap"], report["relative_gap"],
                                         report["w_radius"], "w")
        + (" (the joint problem is not convex; its blocks below)" if "blocks" in report
           else ""),
        *block_lines(report.get("blocks", ())),
    ]
    if "time_split" in report:
        split = report["time_split"]
        lines.append(f"backend    {report['backend']}: {report['n_shards']} shards; compute "
                     f"{split['compute_time']:.3f} s, communication "
                     f"{split['communication_time']:.3f} s, master {split['master_time']:.3f} s "
                     f"({split['shard_calls']} calls, {split['payload_bytes']:,} bytes)")
    if "test" in report:
        lines.append(f"test       {report['test']} (preset {report['preset']})")
        measures = [f"ndcg@{i}" for i in (1, 3, 5, 10) if i <= report["k"]] + ["map", "mrr"]
        lines.append("  ".join(f"{m.upper()}={finite(report[m], '{:.4f}', 'none')}"
                               for m in measures if m in report))
        lines.append("optimum's  " + uncertified_text(report["certified"]))
        ties = report["ties"]
        lines.append(f"ties       {ties['documents']} documents in {ties['queries']} queries "
                     f"have tied scores; broken by {ties['description']}")
    return "\n".join(lines)
