"""``cvxrank fit``: train a ranking model on a data file, optionally evaluate it on another.

Usage::

    cvxrank fit --method ranksvm|irsvm|ocsvm|rankmm [--loss LOSS] --C 1e-3
                --train FILE [--test FILE] [--solver NAME] [--tol TOL] [--max-iter N]
                [--preset letor3] [--k 10] [--save-model MODEL.json] [--json]
    cvxrank fit --method conerank [--variant sg|eg] [--K 10] [--passes N] [--mu MU]
                [--solver auto|stochastic|alternation|sg|eg] [--tol TOL]
                [--scoring vote|linear] --train FILE [--test FILE] ... [--json]

``--solver`` is a CVXPY solver (``clarabel``, ``ecos``, ``osqp``, ``scs``: the certified
reference, primal and dual solved and checked against each other) or a hand-written solver
of :mod:`cvxrank.registry`; the default ``auto`` is :func:`cvxrank.fitting.default_solver`:
the first solver of the method's row in :data:`cvxrank.methods.METHODS` whose needs the
formulation meets (PRSVM+ for the squared hinge and Huber losses, ``apg`` on the dual for the
hinge). The methods, their losses and estimators come from that table.

``--method irsvm`` is IR SVM (Li 2011, Sect. 4.2): pair weights tau_k mu_q, with tau from the
expected drop of NDCG@1 (:func:`cvxrank.formulations.irsvm.ndcg1_swap_drop`). ``--method
ocsvm`` is the fixed-margin OC SVM (Li 2011, Sect. 3.1; the hinge loss only); with
``--test`` it also reports ``grade_accuracy`` and ``grade_mae`` of the predicted grades.
``--method rankmm`` is RankMM (Agarwal & Collins 2010, Sects. 2-3) with ``--loss average``,
``max`` or ``max_average`` (RankMM-1/2/3): the objective is (1/2)||w||^2 + (C/m) sum_i L_i(w),
m the number of training queries (a query without preference pairs counts, with L_i = 0) and
L_i the average, the maximum, or the maximum over lower documents of the average, of the
relevance-weighted hinge [(y_j - y_k) - w.(x_j - x_k)]_+ over the query's preference pairs.

``--method conerank`` is ConeRank (Tran & Pham, (18), Alg. 1 and 2): a basis of K vectors
(``--K``, default 10) whose cone holds the normalized pair differences (5), weighted by the
relevance differences (7), with the paper's c, alpha and rho (Sect. 6.1). ``--variant`` is
the folding-in step (``sg``: Alg. 1's clip-and-normalize gradient step; ``eg``:
exponentiated gradient, Sect. 4.2; default ``sg``). ``--solver auto`` (or ``stochastic``) is
the paper's Alg. 1 one query at a time with the fixed step ``--mu`` (default 0.001 for SG,
0.005 for EG), for ``--passes`` passes over the queries (default 20 for SG, 5 for EG: where
the validation MAP of MQ2008 Fold1 peaks, :data:`cvxrank.fitting.CONERANK_PASSES`);
``alternation`` (or ``sg``/``eg``, its registered names) solves both blocks to a certified
gap, the objective never increasing, for at most ``--passes`` outer iterations (default 200)
or until one lowers the objective by less than ``--tol`` (relative). ``--scoring`` scores
``--test`` by Alg. 2's vote per query (``vote``, the default) or by the equivalent linear
scorer v = pinv(U)^T 1 (``linear``: the same ranking up to ties). ``--variant``, ``--K``,
``--passes``, ``--mu`` and ``--scoring`` are for conerank only; conerank takes no ``--C``
and no ``--max-iter`` (its iterations are ``--passes``). Its JSON has ``method``, ``loss``
(``squared_distance``), ``variant``, ``K``, ``solver`` (``stochastic-sg``,
``alternation-eg``, ...), ``n_passes``, ``mu`` (null for the alternation), ``scoring``,
``objective`` (the objective (18) at the fitted basis and coefficients), ``iterations``
(passes or outer iterations), ``time``, ``setup_time``, ``clock``, ``converged`` (false when
the run used all its passes: always for the stochastic solver, which has no stopping test),
``message``, ``n_pairs`` and, with ``--test``, the measures. ``--save-model`` writes the
basis ``U`` (N x K, a list of rows) and ``v``.

JSON (``--json``): ``method``, ``loss``, ``C``, ``solver``, ``objective`` (the primal
objective at the returned weights), ``iterations``, ``time`` (seconds on the solver's clock,
set-up included), ``setup_time``, ``clock`` (what ``time`` measures), ``converged``,
``message``, ``n_dual`` (dual variables: RankMM's maximum loss has one more per query with
pairs) and ``n_pairs`` (preference pairs; pairwise methods); with
``--test`` also ``preset`` and the measure keys of
``cvxrank evaluate --json`` (``ndcg@1``..``ndcg@k``, ``p@1``..``p@k``, ``map``, ``mrr``).

``--save-model`` writes a JSON file with the method, its parameters and the weights ``w``.

Exit codes: 0 on success; 2 for bad input (unreadable data, C <= 0, an unknown solver, a
data set too large for the chosen solver, a solver that did not reach its tolerance, an
option of another method), with one line ``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.cli.common import (
    add_data_format_options,
    add_json_flag,
    emit_json,
    load_data,
    positive_float,
    positive_int,
    to_jsonable,
)
from cvxrank.errors import UsageError

#: What the reported ``time`` measures (the JSON key ``clock``).
CLOCK = ("solver: set-up (pairs, sorted blocks, Lipschitz constant, CVXPY compilation) and "
         "iterations with their stopping test; not data loading, not trace-only evaluation")


def _run_report(fit: Any, formulation: Any) -> dict[str, Any]:
    """The fields of a fit's JSON that every method shares: solver, objective (the
    formulation's primal value at the returned point), iterations, clocks, verdict."""
    return {
        "solver": fit.solver,
        "objective": formulation.primal_value(fit.w),
        "iterations": fit.n_iter,
        "time": fit.time,
        "setup_time": fit.setup_time,
        "clock": CLOCK,
        "converged": fit.converged,
        "message": fit.message,
    }


def method_options(parser: argparse.ArgumentParser) -> None:
    """``--method`` and ``--loss``, from the methods table (shared with ``grid``)."""
    from cvxrank.methods import METHODS

    losses = sorted({loss for m in METHODS.values() for loss in m.losses})
    parser.add_argument("--method", choices=tuple(METHODS), default="ranksvm",
                        help="; ".join(f"{m.name}: {m.description}" for m in METHODS.values()))
    parser.add_argument("--loss", choices=losses, default=None,
                        help="pair loss (default: the method's first: " + ", ".join(
                            f"{m.name} {m.default_loss}" for m in METHODS.values()) + ")")


def solver_help() -> str:
    """Help text of ``--solver``: the CVXPY solvers and the methods' hand-written ones."""
    from cvxrank.fitting import CVXPY_SOLVERS
    from cvxrank.methods import METHODS

    preferred = dict.fromkeys(s for m in METHODS.values() for s in m.solvers)
    return (f"auto (default: the first of {', '.join(preferred)} that applies), a CVXPY "
            f"solver ({', '.join(CVXPY_SOLVERS)}: the certified reference) or any hand-written "
            "solver registered for the formulation (the solver column of `cvxrank verify`)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fit`` to the top-level parser."""
    parser = subparsers.add_parser(
        "fit",
        help="train a ranking model (and evaluate it on a test file)",
        description="Fit a max-margin ranking model on a training file with a CVXPY "
        "reference solver or a hand-written one; report objective, iterations, time and, "
        "with --test, the test measures.",
    )
    method_options(parser)
    parser.add_argument("--C", type=positive_float, default=None, dest="C",
                        help="weight of the loss term: for ranksvm and irsvm (1/2)||w||^2 + C "
                        "sum loss, the C of Chapelle & Keerthi's eq. (1) (their Matlab code's "
                        "C is twice this); for rankmm (1/2)||w||^2 + (C/m) sum_i L_i with m "
                        "the number of training queries, Agarwal & Collins' C (default 1); "
                        "the JSON's objective is this primal objective at the fitted w; "
                        "conerank has no C")
    parser.add_argument("--train", required=True, metavar="FILE", help="training data file")
    parser.add_argument("--test", metavar="FILE", default=None, help="test data file")
    parser.add_argument("--solver", default="auto", help=solver_help())
    parser.add_argument("--tol", type=positive_float, default=None,
                        help="tolerance of a hand-written solver (relative duality gap)")
    parser.add_argument("--max-iter", type=positive_int, default=None, dest="max_iter",
                        help="iteration limit of a hand-written solver")
    conerank = parser.add_argument_group(
        "conerank", "options of --method conerank only (Tran & Pham: a cone basis of K "
        "vectors, (18), Alg. 1 and 2); its --solver is auto (= stochastic: the paper's Alg. 1, "
        "a query at a time), or alternation (sg, eg: both blocks solved, certified)")
    conerank.add_argument("--variant", choices=("sg", "eg"), default=None,
                          help="folding-in step: sg (Alg. 1, clip and normalize) or eg "
                          "(exponentiated gradient, Sect. 4.2); default sg")
    conerank.add_argument("--K", type=positive_int, default=None, dest="K",
                          help="number of basis vectors (default 10, the paper's)")
    conerank.add_argument("--passes", type=positive_int, default=None,
                          help="passes over the queries of the stochastic solver (default 20 "
                          "for sg, 5 for eg), or most outer iterations of the alternation "
                          "(default 200)")
    conerank.add_argument("--mu", type=positive_float, default=None,
                          help="step of the stochastic solver (default the paper's: 0.001 "
                          "for sg, 0.005 for eg)")
    conerank.add_argument("--scoring", choices=("vote", "linear"), default=None,
                          help="--test scores: Alg. 2's vote per query (default) or the "
                          "equivalent linear scorer pinv(U)^T 1")
    parser.add_argument("--preset", default="letor3",
                        help="metric conventions for --test (default letor3)")
    parser.add_argument("--k", type=positive_int, default=10, help="largest cut-off k (default 10)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a hand-written solver's iterations, objective and gap on "
                        "stderr as it runs (default: on when stderr is a terminal)")
    parser.add_argument("--save-model", metavar="MODEL", default=None,
                        help="write the fitted model (JSON with the weights) to MODEL")
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    """The ``fit`` subcommand."""
    from cvxrank.fitting import fit_formulation
    from cvxrank.methods import get
    from cvxrank.metrics import get_preset
    from cvxrank.trace import progress_printer

    method = get(args.method)
    only = {"--variant": args.variant, "--K": args.K, "--passes": args.passes,
            "--mu": args.mu, "--scoring": args.scoring}
    if args.method == "conerank":
        return run_fit_conerank(args)
    given = [name for name, value in only.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only for --method conerank (got --method "
                         f"{args.method})")
    if args.C is None:
        args.C = 1.0
    loss = method.check_loss(args.loss)
    convention = get_preset(args.preset)  # an unknown preset fails before the (long) fit
    train, _, _ = load_data(args.train, args.format, args.query)
    test = load_data(args.test, args.format, None)[0] if args.test else None
    # The formulation and fit_formulation directly (what the estimators call), so that a
    # fit from the command line does not import scikit-learn (about 1 s of start-up).
    formulation = method.build(train, loss=loss, C=args.C)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    callback = progress_printer(f"{args.method} {loss}", sys.stderr) if progress else None
    try:
        fit = fit_formulation(formulation, args.solver, tol=args.tol, max_iter=args.max_iter,
                              callback=callback)
    finally:
        if progress:
            sys.stderr.write("\n")
    d = train.n_features
    report: dict[str, Any] = {
        "method": args.method,
        "loss": loss,
        "C": args.C,
        "train": args.train,
        **_run_report(fit, formulation),
        "zero_model": fit.info["zero_model"],
        "n_dual": formulation.n_dual,
    }
    ordinal = hasattr(formulation, "predict_grades")  # grades by thresholds, not pairs
    if not ordinal:
        report["n_pairs"] = getattr(formulation, "n_pairs", formulation.n_dual)
    if test is not None:
        from cvxrank.cli.evaluate import measure_scores

        X_test = test.pad_features(d).X
        scores = np.asarray(X_test @ fit.w[:d]).ravel()
        report["test"] = args.test
        report["preset"] = args.preset
        report.update(measure_scores(test, scores, convention=convention, preset=args.preset,
                                     k=args.k))
        if ordinal:
            grades = formulation.predict_grades(fit.w, X_test)
            report["grade_accuracy"] = float(np.mean(grades == test.y))
            report["grade_mae"] = float(np.mean(np.abs(grades - test.y)))
    model_doc = None
    if args.save_model:
        model_doc = {key: report[key] for key in ("method", "loss", "C", "solver", "objective")}
        model_doc["w"] = fit.w[:d]
        if ordinal:
            model_doc["thresholds"] = formulation.split(fit.w)[1]
            model_doc["grades"] = formulation.grades
    return _finish(args, report, model_doc)


def _finish(args: argparse.Namespace, report: dict[str, Any],
            model_doc: dict[str, Any] | None) -> int:
    """Save ``model_doc`` to ``--save-model`` (when given) and print the report."""
    if model_doc is not None:
        Path(args.save_model).write_text(json.dumps(to_jsonable(model_doc), indent=2) + "\n")
    if args.json:
        emit_json(report)
    else:
        print(format_report(report))
    return 0


def conerank_solver(solver: str, variant: str | None) -> tuple[str, str]:
    """``(solver, variant)`` of :func:`cvxrank.fitting.fit_conerank` from ``--solver`` and
    ``--variant``: ``auto`` is ``stochastic``, ``sg``/``eg`` (the registered names) the
    alternation with that folding-in."""
    name = solver.lower()
    if name in ("sg", "eg"):
        if variant is not None and variant != name:
            raise UsageError(f"--solver {name} is the alternation with the {name} folding-in; "
                             f"it contradicts --variant {variant}")
        return "alternation", name
    if name == "auto":
        name = "stochastic"
    if name not in ("stochastic", "alternation"):
        raise UsageError(f"conerank's solvers are auto (stochastic), stochastic, alternation, "
                         f"sg and eg (the alternation with that folding-in); got {solver!r}")
    return name, variant or "sg"


def run_fit_conerank(args: argparse.Namespace) -> int:
    """``fit --method conerank``: ConeRank (Tran & Pham) by :func:`fit_conerank`."""
    from cvxrank.fitting import fit_conerank
    from cvxrank.methods import get
    from cvxrank.metrics import get_preset
    from cvxrank.solvers.conerank import PAPER_MU, linear_direction, vote_scores
    from cvxrank.trace import progress_printer

    if args.C is not None:
        raise UsageError("--C: conerank has no loss weight C (its hyper-parameters are --K "
                         "and, for the stochastic solver, --mu and --passes)")
    if args.max_iter is not None:
        raise UsageError("--max-iter: conerank's iterations are --passes (passes over the "
                         "queries, or the alternation's outer iterations)")
    method = get("conerank")
    loss = method.check_loss(args.loss)
    solver, variant = conerank_solver(args.solver, args.variant)
    if solver == "alternation" and args.mu is not None:
        raise UsageError("--mu is the stochastic solver's step; the alternation takes none")
    if solver == "stochastic" and args.tol is not None:
        raise UsageError("--tol is the alternation's stopping test; the stochastic solver "
                         "runs --passes passes")
    scoring = args.scoring or "vote"
    convention = get_preset(args.preset)
    train, _, _ = load_data(args.train, args.format, args.query)
    test = load_data(args.test, args.format, None)[0] if args.test else None
    params = {} if args.K is None else {"K": args.K}
    formulation = method.build(train, loss=loss, **params)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    callback = progress_printer(f"conerank {solver}-{variant}", sys.stderr) if progress else None
    try:
        fit = fit_conerank(formulation, solver, variant=variant, mu=args.mu,
                           n_passes=args.passes, tol=args.tol, seed=0, callback=callback)
    finally:
        if progress:
            sys.stderr.write("\n")
    U, _ = formulation.split(fit.w)
    v = linear_direction(U)
    d = train.n_features
    report: dict[str, Any] = {
        "method": "conerank",
        "loss": loss,
        "variant": variant,
        "K": formulation.K,
        "train": args.train,
        "n_passes": fit.info["n_passes"],
        "mu": None if solver == "alternation" else (
            PAPER_MU[variant] if args.mu is None else args.mu),
        "scoring": scoring,
        **_run_report(fit, formulation),
        "n_pairs": formulation.pairs.n_pairs,
    }
    if test is not None:
        from cvxrank.cli.evaluate import measure_scores

        X_test = test.pad_features(d).X
        scores = (vote_scores(U, X_test, test.query_ptr) if scoring == "vote"
                  else np.asarray(X_test @ v).ravel())
        report["test"] = args.test
        report["preset"] = args.preset
        report.update(measure_scores(test, scores, convention=convention, preset=args.preset,
                                     k=args.k))
    model_doc = None
    if args.save_model:
        model_doc = {key: report[key] for key in ("method", "loss", "variant", "K", "solver",
                                                  "objective", "scoring")}
        model_doc["U"] = U
        model_doc["v"] = v
    return _finish(args, report, model_doc)


def format_report(report: dict[str, Any]) -> str:
    """The text form of a fit report."""
    if report["method"] == "conerank":
        head = [
            f"method     conerank ({report['loss']}, {report['variant']}, K={report['K']})",
            f"train      {report['train']} ({report['n_pairs']:,} ordered pairs)",
        ]
    else:
        head = [
            f"method     {report['method']} ({report['loss']}, C={report['C']:g})",
            f"train      {report['train']} ({report['n_dual']:,} dual variables)",
        ]
    lines = [
        *head,
        f"solver     {report['solver']}: {report['message']}",
        f"objective  {report['objective']:.10g}",
        f"iterations {report['iterations']}",
        f"time       {report['time']:.3f} s (solver clock; set-up {report['setup_time']:.3f} s)",
    ]
    if "test" in report:
        lines.append(f"test       {report['test']} (preset {report['preset']})")
        measures = [f"ndcg@{i}" for i in (1, 3, 5, 10) if i <= report["k"]] + ["map", "mrr"]
        lines.append("  ".join(f"{m.upper()}={report[m]:.4f}" for m in measures if m in report))
        ties = report["ties"]
        lines.append(f"ties       {ties['documents']} documents in {ties['queries']} queries "
                     f"have tied scores; broken by {ties['description']}")
    return "\n".join(lines)
