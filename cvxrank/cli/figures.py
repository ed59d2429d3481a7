"""``cvxrank figures``: regenerate the convergence figures of ``cvxrank verify``.

Usage::

    cvxrank figures [--out figures] [--quick] [--only PATTERN] [--reference-solver CLARABEL]
                    [--json]

Runs the same verification as ``cvxrank verify`` (:func:`cvxrank.verification.run_verification`)
without printing its table, and writes one PNG per (formulation, instance), suboptimality
against the certified optimum vs iteration and vs solver time for every solver, plus the CSV
of the traces behind it (columns formulation, solver, instance, seed, iteration, time,
primal, dual, gap, p_star). Prints the written paths (``--json``: ``{"figures": [...],
"passed": bool, "failed": [names]}``).

Exit codes: 0; 1 when some pair failed its verification (the figures are still written and
the failing solvers are marked "(failed)" in the legends; stderr names them as ``verify``
does); 2 for bad input.
"""

from __future__ import annotations

import argparse

from cvxrank.cli.common import add_json_flag, emit_json
from cvxrank.cli.verify import add_verification_options, prepare_dir, report_failures, select


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``figures`` to the top-level parser."""
    parser = subparsers.add_parser(
        "figures",
        help="regenerate the convergence figures (PNG + CSV)",
        description="Run the verification pairs and write their suboptimality figures (PNG) "
        "and the traces behind them (CSV), without the table.",
    )
    parser.add_argument("--out", metavar="DIR", default="figures",
                        help="output directory (default figures)")
    add_verification_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_figures)


def run_figures(args: argparse.Namespace) -> int:
    """The ``figures`` subcommand."""
    from cvxrank.plots import write_figures
    from cvxrank.verification import run_verification

    chosen, instances, ref_solver = select(args)
    out_dir = prepare_dir(args.out)
    outcomes = run_verification(chosen, instances, ref_solver)
    written = write_figures(outcomes, out_dir)
    failed = [o for o in outcomes if not o.passed]
    if args.json:
        emit_json({"figures": [str(p) for p in written], "passed": not failed,
                   "failed": [o.name for o in failed]})
    else:
        for path in written:
            print(path)
    return report_failures(outcomes)
