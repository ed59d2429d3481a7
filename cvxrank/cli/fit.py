"""``cvxrank fit``: train a ranking model on a data file, optionally evaluate it on another.

Usage::

    cvxrank fit --method ranksvm|irsvm|ocsvm [--loss hinge|squared_hinge|huber] --C 1e-3
                --train FILE [--test FILE] [--solver NAME] [--tol TOL] [--max-iter N]
                [--preset letor3] [--k 10] [--save-model MODEL.json] [--json]

``--solver`` is a CVXPY solver (``clarabel``, ``ecos``, ``osqp``, ``scs``: the certified
reference, primal and dual solved and checked against each other) or a hand-written solver
of :mod:`cvxrank.registry` (``cvxrank fit --help`` lists them); the default ``auto`` is
:func:`cvxrank.fitting.default_solver`: PRSVM+ (truncated Newton, O(n log n) gradients) for
the squared hinge and Huber losses, ``apg`` on the dual for the hinge.

``--method irsvm`` is IR SVM (Li 2011, Sect. 4.2): pair weights tau_k mu_q, with tau from the
expected drop of NDCG@1 (:func:`cvxrank.formulations.irsvm.ndcg1_swap_drop`). ``--method
ocsvm`` is the fixed-margin OC SVM (Li 2011, Sect. 3.1; hinge loss, ``--loss`` ignored); with
``--test`` it also reports ``grade_accuracy`` and ``grade_mae`` of the predicted grades.

JSON (``--json``): ``method``, ``loss``, ``C``, ``solver``, ``objective`` (the primal
objective at the returned weights), ``iterations``, ``time`` (solver seconds), ``converged``,
``message``, ``n_dual`` (dual variables) and ``n_pairs`` (pairwise methods); with
``--test`` also ``preset`` and the measure keys of
``cvxrank evaluate --json`` (``ndcg@1``..``ndcg@k``, ``p@1``..``p@k``, ``map``, ``mrr``).

``--save-model`` writes a JSON file with the method, its parameters and the weights ``w``.

Exit codes: 0 on success; 2 for bad input (unreadable data, C <= 0, an unknown solver, a
data set too large for the chosen solver, a solver that did not reach its tolerance), with
one line ``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.cli.common import (
    add_data_format_options,
    add_json_flag,
    emit_json,
    load_data,
    to_jsonable,
)

#: Methods ``fit`` knows.
METHODS = ("ranksvm", "irsvm", "ocsvm")
LOSSES = ("hinge", "squared_hinge", "huber")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fit`` to the top-level parser."""
    from cvxrank.fitting import available_solvers

    parser = subparsers.add_parser(
        "fit",
        help="train a ranking model (and evaluate it on a test file)",
        description="Fit a max-margin ranking model on a training file with a CVXPY "
        "reference solver or a hand-written one; report objective, iterations, time and, "
        "with --test, the test measures.",
    )
    parser.add_argument("--method", choices=METHODS, default="ranksvm")
    parser.add_argument("--loss", choices=LOSSES, default="squared_hinge",
                        help="pair loss (default squared_hinge)")
    parser.add_argument("--C", type=float, default=1.0, dest="C",
                        help="weight of the loss term, as in (1/2)||w||^2 + C sum loss, the C "
                        "of Chapelle & Keerthi's eq. (1); their Matlab code's C is twice this "
                        "(default 1)")
    parser.add_argument("--train", required=True, metavar="FILE", help="training data file")
    parser.add_argument("--test", metavar="FILE", default=None, help="test data file")
    parser.add_argument("--solver", default="auto",
                        help=f"one of {', '.join(available_solvers())} (default auto)")
    parser.add_argument("--tol", type=float, default=None,
                        help="tolerance of a hand-written solver (relative duality gap)")
    parser.add_argument("--max-iter", type=int, default=None, dest="max_iter",
                        help="iteration limit of a hand-written solver")
    parser.add_argument("--preset", default="letor3",
                        help="metric conventions for --test (default letor3)")
    parser.add_argument("--k", type=int, default=10, help="largest cut-off k (default 10)")
    parser.add_argument("--save-model", metavar="MODEL", default=None,
                        help="write the fitted model (JSON with the weights) to MODEL")
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    """The ``fit`` subcommand."""
    from cvxrank.estimators import IRSVMRanker, OrdinalSVMRanker, RankSVMRanker
    from cvxrank.metrics import evaluate, get_preset

    get_preset(args.preset)  # an unknown preset fails before the (long) fit
    train, _, _ = load_data(args.train, args.format, args.query)
    test = load_data(args.test, args.format, None)[0] if args.test else None
    common = {"C": args.C, "solver": args.solver, "tol": args.tol, "max_iter": args.max_iter}
    if args.method == "ocsvm":
        model = OrdinalSVMRanker(**common)
        loss = "hinge"
    else:
        loss = args.loss
        model = {"ranksvm": RankSVMRanker, "irsvm": IRSVMRanker}[args.method](loss=loss,
                                                                              **common)
    model.fit(train.X, train.y, qid=train.qid)
    fit = model.fit_result_
    report: dict[str, Any] = {
        "method": args.method,
        "loss": loss,
        "C": args.C,
        "train": args.train,
        "solver": fit.solver,
        "objective": fit.objective,
        "iterations": fit.n_iter,
        "time": fit.time,
        "converged": fit.converged,
        "message": fit.message,
        "n_dual": model.n_pairs_,
    }
    if args.method != "ocsvm":
        report["n_pairs"] = model.n_pairs_
    if test is not None:
        X_test = test.pad_features(train.n_features).X
        scores = model.predict(X_test)
        report["test"] = args.test
        report["preset"] = args.preset
        report.update(evaluate(test.y, scores, test.query_ptr, preset=args.preset, k=args.k))
        if args.method == "ocsvm":
            grades = model.predict_grades(X_test)
            report["grade_accuracy"] = float(np.mean(grades == test.y))
            report["grade_mae"] = float(np.mean(np.abs(grades - test.y)))
    if args.save_model:
        model_doc = {key: report[key] for key in ("method", "loss", "C", "solver", "objective")}
        model_doc["w"] = model.coef_
        if args.method == "ocsvm":
            model_doc["thresholds"] = model.thresholds_
            model_doc["grades"] = model.classes_
        Path(args.save_model).write_text(json.dumps(to_jsonable(model_doc), indent=2) + "\n")
    if args.json:
        emit_json(report)
    else:
        print(format_report(report, k=args.k))
    return 0


def format_report(report: dict[str, Any], *, k: int) -> str:
    """The text form of a fit report."""
    lines = [
        f"method     {report['method']} ({report['loss']}, C={report['C']:g})",
        f"train      {report['train']} ({report['n_dual']:,} dual variables)",
        f"solver     {report['solver']}: {report['message']}",
        f"objective  {report['objective']:.10g}",
        f"iterations {report['iterations']}",
        f"time       {report['time']:.3f} s",
    ]
    if "test" in report:
        lines.append(f"test       {report['test']} (preset {report['preset']})")
        measures = [f"ndcg@{i}" for i in (1, 3, 5, 10) if i <= k] + ["map", "mrr"]
        lines.append("  ".join(f"{m.upper()}={report[m]:.4f}" for m in measures if m in report))
    return "\n".join(lines)
