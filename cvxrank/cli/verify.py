"""``cvxrank verify``: every registered fast solver against a certified CVXPY optimum.

Usage::

    cvxrank verify [--all] [--json] [--figures DIR | --no-figures] [--force]
                   [--only PATTERN] [--reference-solver CLARABEL]

For each (formulation, solver) pair of :mod:`cvxrank.registry` and each embedded instance of
:mod:`cvxrank.data.instances` (the small instance of :data:`~cvxrank.data.instances.QUICK`,
every family and solver in about a minute of CPU; ``--all``: every instance, the five of
:data:`~cvxrank.data.instances.DEFAULT` too), it solves
the formulation's primal and dual with CVXPY to a certified optimum, runs the solver, and
validates the run (:func:`cvxrank.certificates.validate.validate`): relative objective gap
``(P(w) - p*) / |p*|`` within the entry's tolerance and a fitted convergence rate at least as
fast as the proven one.

The table has one row per pair: relative objective gap ``rel.gap``, relative duality gap
of the final iterate ``duality.gap``, fitted and proven rates, the reference's primal solve
time ``ref[s]`` (CVXPY compilation included), the solver's time (trace evaluation excluded)
and the speed-up (reference time / solver time). Figures (PNG)
and the CSV of the traces behind them, one pair of files per (formulation, instance), go to
``--figures`` (default :data:`DEFAULT_FIGURES`, ``results/verify-figures``: a git-ignored
folder, so that ``make verify`` leaves ``git status`` clean; the figures kept in git,
``figures/``, are a curated few that ``cvxrank figures`` writes). ``--no-figures`` writes
none. They are written through :class:`cvxrank.utils.output_files.OutputDir`: renamed into place
once all are written, and an existing file that cvxrank did not write is refused before the
run (``--force`` replaces it). The PNG and CSV files of a folder whose ``README.md`` is the
one ``cvxrank figures`` writes count as cvxrank's (:func:`written_before_manifests`), so that
a ``figures/`` folder from before the manifests is still regenerated.

JSON (``--json``): ``{"pairs": [...], "passed": bool, "failed": [names], "instances": [...],
"reference_solver": str, "figures": [paths]}``; each pair holds the numbers of the table and
the verdict's ``reasons``.

Exit codes: 0 when every pair passes; 1 when some pair fails, with one line per failing pair
on stderr: ``verify failed: <formulation>/<solver> on <instance>: <reasons>``; 2 for bad input
(an ``--only`` pattern matching nothing, an unknown reference solver, an unwritable figures
directory, one holding files that cvxrank did not write).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from cvxrank.cli.common import (
    add_force_flag,
    add_json_flag,
    add_progress_flag,
    emit_json,
    progress_lines,
)
from cvxrank.utils.output_files import OutputDir

#: Where ``verify`` writes its figures by default: inside ``results/``, which ``.gitignore``
#: lists (every pair's figure and traces, about 28 MB: not for git).
DEFAULT_FIGURES = "results/verify-figures"

#: (header, width) of the table columns.
COLUMNS = (
    ("formulation", 22), ("solver", 6), ("instance", 15), ("pairs", 6), ("rel.gap", 8),
    ("duality.gap", 11), ("fitted rate", 13), ("proven rate", 15), ("ref[s]", 7),
    ("solver[s]", 9), ("speed-up", 8), ("verdict", 7),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``verify`` to the top-level parser."""
    parser = subparsers.add_parser(
        "verify",
        help="check every fast solver against certified CVXPY optima",
        description="Run every registered (formulation, solver) pair on the embedded seeded "
        "instances: certified CVXPY reference, solver run, relative gap and fitted rate "
        "against the proven rate. Prints a table, writes figures, exits 1 naming the pairs "
        "that fail.",
    )
    parser.add_argument("--all", action="store_true",
                        help="every embedded instance: the small one, a second small one and "
                        "four larger ones (some minutes; default: the small one, every pair)")
    add_verification_options(parser)
    add_json_flag(parser)
    parser.add_argument("--figures", metavar="DIR", default=DEFAULT_FIGURES,
                        help="directory for the PNG figures and trace CSVs, one pair per "
                        f"formulation and instance (default {DEFAULT_FIGURES}, git-ignored; "
                        "the curated figures in git are written by `cvxrank figures`)")
    parser.add_argument("--no-figures", action="store_true", help="do not write figures")
    add_force_flag(parser)
    parser.set_defaults(func=run_verify)


def add_verification_options(parser: argparse.ArgumentParser) -> None:
    """``--only`` and ``--reference-solver`` (shared with ``figures``)."""
    parser.add_argument("--only", metavar="PATTERN", default=None,
                        help="only the pairs whose '<formulation>/<solver>' matches PATTERN "
                        "(shell wildcards, e.g. 'ranksvm-hinge/*' or '*/apg'; without a "
                        "wildcard, a substring)")
    parser.add_argument("--reference-solver", metavar="SOLVER", default="CLARABEL",
                        help="CVXPY solver of the certified references (CLARABEL, ECOS, OSQP, "
                        "SCS, ...; default CLARABEL)")
    add_progress_flag(parser)


def select(args: argparse.Namespace,
           instances: Sequence[Any]) -> tuple[list[Any], list[Any], str]:
    """(entries, instances, reference solver) from the options (``--only``,
    ``--reference-solver``) and the instances; ValueError on bad input."""
    from cvxrank.certificates.reference import check_solver
    from cvxrank.registry import REGISTRY, entries

    chosen = entries(args.only)
    if not chosen:
        names = ", ".join(e.name for e in REGISTRY) or "none registered"
        raise ValueError(f"--only {args.only!r} matches no registered pair (pairs: {names})")
    solver = check_solver(args.reference_solver)
    return chosen, list(instances), solver


#: How ``README.md`` of a figures folder begins, as ``cvxrank figures`` writes it
#: (:func:`cvxrank.cli.figures.figures_readme`) in this version and the earlier ones.
README_SIGNATURE = "# figures/\n\nWritten by `cvxrank figures"


def written_before_manifests(path: Path) -> bool:
    """Whether ``path``, an existing file of a figures folder that the folder's manifest does
    not list, is one that ``cvxrank figures`` or ``verify`` wrote before they kept manifests.

    ``path`` is named like a file the command writes (:meth:`OutputDir.check
    <cvxrank.utils.output_files.OutputDir.check>` asks only about those); it is cvxrank's when it
    is a ``README.md`` that begins with :data:`README_SIGNATURE`, or a figure or trace CSV
    beside such a ``README.md`` (a folder whose README says cvxrank writes it, never by hand).
    """
    readme = path.with_name("README.md")
    try:
        with open(readme, encoding="utf-8") as fh:
            return fh.read(len(README_SIGNATURE)) == README_SIGNATURE
    except (OSError, UnicodeDecodeError):
        return False


def figures_output(path: str, *, force: bool, option: str) -> OutputDir:
    """The folder of the figures (``verify --figures``, ``figures --out``), created now so
    that a bad path fails before the long run; files that the figures commands wrote before
    they kept manifests count as theirs (:func:`written_before_manifests`)."""
    return OutputDir(path, force=force, option=option, adopt=written_before_manifests)


def figure_names(chosen: Sequence[Any], instances: Sequence[Any]) -> list[str]:
    """The PNG and CSV names :func:`cvxrank.plots.write_figures` may write for the registry
    entries ``chosen`` on ``instances`` (those checked against a reference have figures)."""
    from cvxrank.plots import figure_stem

    formulations = dict.fromkeys(e.formulation for e in chosen if e.check == "reference")
    return [f"{figure_stem(f, i.name)}{suffix}" for f in formulations for i in instances
            for suffix in (".png", ".csv")]


def _sci(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1e}"


def _secs(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def format_header() -> str:
    """The table's header line."""
    return "  ".join(f"{h:<{w}}" for h, w in COLUMNS).rstrip()


def format_row(outcome: Any) -> str:
    """One table row for a :class:`~cvxrank.verification.sweep.PairOutcome`."""
    v = outcome.validation
    speed = outcome.speedup
    cells = [
        outcome.formulation, outcome.solver, outcome.instance.name,
        str(outcome.n_pairs or "-"),
        _sci(v.rel_gap) if v else "-",
        _sci(v.duality_gap) if v else "-",
        v.fitted_label if v else "-",
        v.rate.expected if v else "-",
        _secs(outcome.reference_time),
        _secs(outcome.solver_time),
        f"{speed:.2g}x" if math.isfinite(speed) else "-",
        "ok" if outcome.passed else "FAIL",
    ]
    return "  ".join(f"{c:<{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True)).rstrip()


def report_failures(outcomes: list[Any], stream: TextIO | None = None) -> int:
    """Write ``verify failed: ...`` lines to stderr; return 1 if any pair failed, else 0."""
    from cvxrank.verification.sweep import failure_messages

    lines = failure_messages(outcomes)
    out = sys.stderr if stream is None else stream
    for line in lines:
        out.write(line + "\n")
    return 1 if lines else 0


def run_verify(args: argparse.Namespace) -> int:
    """The ``verify`` subcommand."""
    from cvxrank.data.instances import ALL, QUICK
    from cvxrank.plots import write_figures
    from cvxrank.verification.sweep import run_verification

    chosen, instances, ref_solver = select(args, tuple(ALL.values()) if args.all else QUICK)
    out = None
    if not args.no_figures:
        out = figures_output(args.figures, force=args.force, option="--figures")
        out.check(figure_names(chosen, instances))
    start = time.perf_counter()

    lines = progress_lines(args)

    def progress(outcome: Any, done: int, total: int) -> None:
        if not args.json:  # the table's rows are the progress
            print(format_row(outcome), flush=True)
        elif lines is not None:
            lines(f"[{done}/{total}] {format_row(outcome)}")

    if not args.json:
        sizes = ", ".join(i.name for i in instances)
        print(f"cvxrank verify: {len(chosen)} pairs x {len(instances)} instances ({sizes}), "
              f"reference {ref_solver}")
        print(format_header(), flush=True)
    outcomes = run_verification(chosen, instances, ref_solver, progress=progress)
    figures: list[Path] = []
    if out is not None:
        with out.writing() as staging:
            figures = [out.final(p) for p in write_figures(outcomes, staging)]
    elapsed = time.perf_counter() - start
    failed = [o for o in outcomes if not o.passed]
    if args.json:
        emit_json({
            "pairs": [o.as_dict() for o in outcomes],
            "passed": not failed,
            "failed": [o.name for o in failed],
            "instances": [i.describe() for i in instances],
            "reference_solver": ref_solver,
            "figures": [str(p) for p in figures],
            "elapsed": elapsed,
        })
    else:
        if figures:
            print(f"wrote {len(figures) // 2} figures (PNG + CSV) to {args.figures}")
        verdict = "all passed" if not failed else f"{len(failed)} FAILED"
        print(f"{len(outcomes)} pairs verified in {elapsed:.1f}s: {verdict}")
    return report_failures(outcomes)
