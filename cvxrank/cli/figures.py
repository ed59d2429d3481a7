"""``cvxrank figures``: regenerate the convergence figures of ``cvxrank verify``.

Usage::

    cvxrank figures [--out figures] [--force] [--quick] [--only PATTERN]
                    [--reference-solver CLARABEL] [--json]

Runs the same verification as ``cvxrank verify`` (:func:`cvxrank.verification.run_verification`)
without printing its table, and writes one PNG per (formulation, instance)
(:func:`cvxrank.plots.figure_for_formulation`: suboptimality against the certified optimum
vs iteration and vs solver time, deterministic and stochastic solvers in separate rows, the
proven rates as guides), the CSV of the traces behind it (columns formulation, solver,
instance, seed, iteration, time, primal, dual, gap, p_star) and ``README.md``, the index of
the figures and how to read them (:func:`figures_readme`, generated from the registry and
the instance sets, so that it cannot go stale). Prints the written paths (``--json``:
``{"figures": [...], "index": path, "passed": bool, "failed": [names]}``).

The files are written as ``verify --figures`` writes them (:mod:`cvxrank.output_files`):
renamed into place once all are written, and an existing file of a name it writes that
cvxrank did not write is refused before the run (``--force`` replaces it):
``cvxrank figures --out .`` in a project's root leaves its ``README.md`` alone. A rerun
replaces the files it wrote, and a ``figures/`` folder written before the manifests (its
``README.md`` is this command's) is regenerated
(:func:`cvxrank.cli.verify.written_before_manifests`).

Exit codes: 0; 1 when some pair failed its verification (the figures are still written and
the failing solvers are marked "(failed)" in the legends; stderr names them as ``verify``
does); 2 for bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cvxrank.cli.common import add_force_flag, add_json_flag, emit_json, progress_lines
from cvxrank.cli.verify import (
    add_verification_options,
    figure_names,
    figures_output,
    format_row,
    report_failures,
    select,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``figures`` to the top-level parser."""
    parser = subparsers.add_parser(
        "figures",
        help="regenerate the convergence figures (PNG + CSV)",
        description="Run the verification pairs and write their suboptimality figures (PNG), "
        "the traces behind them (CSV) and README.md (the index of the figures), without the "
        "table.",
    )
    parser.add_argument("--out", metavar="DIR", default="figures",
                        help="output directory (default figures)")
    add_force_flag(parser)
    add_verification_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_figures)


def run_figures(args: argparse.Namespace) -> int:
    """The ``figures`` subcommand."""
    from cvxrank.plots import write_figures
    from cvxrank.verification import run_verification

    chosen, instances, ref_solver = select(args)
    out = figures_output(args.out, force=args.force, option="--out")
    out.check([*figure_names(chosen, instances), README])
    lines = progress_lines(args)
    outcomes = run_verification(chosen, instances, ref_solver, progress=None if lines is None
                                else lambda o, done, total: lines(f"[{done}/{total}] "
                                                                  f"{format_row(o)}"))
    with out.writing() as staging:
        written = [out.final(p) for p in write_figures(outcomes, staging)]
        index = out.final(write_figures_readme(staging))
    failed = [o for o in outcomes if not o.passed]
    if args.json:
        emit_json({"figures": [str(p) for p in written], "index": str(index),
                   "passed": not failed, "failed": [o.name for o in failed]})
    else:
        for path in [*written, index]:
            print(path)
    return report_failures(outcomes)


# --------------------------------------------------------------------------- README.md

#: The index's file name.
README = "README.md"

_HEADER = """\
# figures/

Written by `cvxrank figures --out figures` (`make figures`) and by `cvxrank verify`
(`make verify`), never by hand: for every formulation and verify instance, a PNG of the
relative suboptimality of each registered solver against the certified CVXPY optimum (vs
iteration and vs solver time, log axis; median and min-max band over seeds for the
stochastic solvers) and the CSV of the traces behind it (columns `formulation, solver,
instance, seed, iteration, time, primal, dual, gap, p_star`).

The files are regenerated on every run (about 14 MB, most of it the traces of projected
gradient on the hinge dual), so they are not kept in git; `.gitignore` lists them.

This README is written by `cvxrank figures` as well, from the registry and the verify
instances (`cvxrank.cli.figures.figures_readme`), so that it lists what the command writes;
`tests/test_plots.py` checks that the copy in git is current.
"""


def _reading_guide() -> str:
    """The "Reading a figure" section, with the numbers taken from the code that draws."""
    from cvxrank.plots import (
        GUIDE_OFFSET,
        LOG_AXIS_RATIO,
        MARKER_MAX_POINTS,
        RELATIVE_GAP_DEFINITION,
        SETUP_NOTE_FRACTION,
    )
    from cvxrank.validate import SUBLINEAR_TAIL

    return f"""\
## Reading a figure

`<formulation>_<instance>.png` shows every registered solver of one formulation on one
instance, against the optimum certified by the CVXPY reference (primal and dual solved,
their agreement checked); `<formulation>_<instance>.csv` holds the traces it is drawn from.

* **Rows.** Deterministic solvers on top. Stochastic solvers (SGD), where the formulation
  has some, get a row of their own below: their iteration is one step on a sample (a batch
  of pairs, or one query), not comparable with a full-gradient or Newton iteration.
* **Columns.** Left, against iterations; right, against seconds on the solver's own clock
  (set-up included, the evaluation of the trace excluded): the first record is at the end
  of the set-up, and the legend gives the set-up time where it is {SETUP_NOTE_FRACTION:.0%} of
  the solver's time or more. The two panels of a row share their y axis.
* **x axes** are logarithmic where the solvers of a panel end {LOG_AXIS_RATIO:g} or more times
  apart (Newton's handful of iterations against projected gradient's hundreds), and in a
  row where a solver's proven rate is a power law O(1/k^a). A logarithmic iteration axis
  is linear between 0 and 1 (symlog), so that iteration 0 stays on it.
* **y axis** (log): the relative suboptimality `{RELATIVE_GAP_DEFINITION}`. Solid, the
  primal P(w_k) - p* at the solver's iterate; dashed, the dual d* - D(alpha_k), scaled the
  same, for deterministic solvers that record a dual value (a dual solver's iterate, or
  the dual point a Newton iterate certifies). Records at or below the optimum (within the
  reference's accuracy) cannot be drawn on a log axis and are left out.
* **Markers**: a solver with at most {MARKER_MAX_POINTS} records (Newton's handful of iterations)
  has a hollow marker at each, one shape per solver, so that curves that coincide (PRSVM
  and PRSVM+ compute the same Newton steps in two ways) stay apart.
* **Stochastic solvers**: the line is the median over the seeds, the shaded band their
  min-max range; only the primal is drawn (their rate and tolerance are about P(w)).
* **Dotted grey lines**: the relative gap each solver must reach (its tolerance, from
  `cvxrank/tolerances.py`), naming the solvers it applies to.
* **Broad pale strokes**: the rate the solver's theory proves, O(1/k^a) or (1 - x)^k (the
  contraction factor computed on the instance), over the iterations where `cvxrank verify`
  fits the rate (the last decade, k >= k_end / {SUBLINEAR_TAIL:g}, for O(1/k^a); the second half
  for a linear rate), starting {GUIDE_OFFSET:g} times above the curve the rate is about (the
  dual for dual solvers, the primal median for SGD). A curve that falls at least as
  steeply as its stroke matches the theory. Newton methods (proven: a handful of
  iterations and a superlinear end) have none; the legend says so.
* A solver marked `(failed)` in the legend did not pass the verification.
"""


def _cell(text: str) -> str:
    """``text`` made safe for a markdown table cell."""
    return text.replace("|", "\\|")


def _rate_text(entry: Any) -> str:
    """The proven rate of a registry entry as the index prints it."""
    from cvxrank.plots import rate_guide_text
    from cvxrank.validate import RateSpec

    if isinstance(entry.rate, RateSpec):
        return rate_guide_text(entry.rate)
    return "computed on each instance (the figure's legend gives it)"


def figures_readme(entries: Sequence[Any] | None = None,
                   instance_sets: Sequence[tuple[str, Sequence[Any]]] | None = None) -> str:
    """The text of ``figures/README.md``: what writes the folder, how to read a figure, and
    the index of the figure files.

    Parameters
    ----------
    entries : sequence of Entry, optional
        Registry entries (default: every registered one, :func:`cvxrank.registry.entries`);
        those checked against a reference are indexed (the others have no figure).
    instance_sets : sequence of (name, instances), optional
        The instance sets and how to ask for them (default: ``cvxrank figures`` for
        :data:`cvxrank.instances.DEFAULT` and ``cvxrank figures --quick`` for
        :data:`cvxrank.instances.QUICK`).

    Returns
    -------
    str
        Markdown. It depends only on the registry, the instances and the plotting
        constants, never on a run, so every run writes the same text.
    """
    from cvxrank.instances import DEFAULT, QUICK
    from cvxrank.plots import figure_stem
    from cvxrank.registry import entries as registered

    listed = list(registered() if entries is None else entries)
    chosen = [e for e in listed if e.check == "reference"]
    sets = list(instance_sets if instance_sets is not None else (
        ("`cvxrank figures`", DEFAULT), ("`cvxrank figures --quick`", QUICK)))
    formulations = list(dict.fromkeys(e.formulation for e in chosen))
    lines = [_HEADER, _reading_guide(), "## Index", "",
             "One PNG (and its CSV) per formulation and instance; `--only PATTERN` writes",
             "those of the formulations it matches. Pairs that `cvxrank verify` judges",
             "without a certified optimum (`check=\"alternation\"` in the registry: a",
             "non-convex alternation, judged by monotone descent) have no figure.", "",
             "| formulation | figures | deterministic solvers | stochastic solvers |",
             "|---|---|---|---|"]
    for name in formulations:
        files = "<br>".join(
            f"{how}: " + ", ".join(f"`{figure_stem(name, inst.name)}.png`" for inst in insts)
            for how, insts in sets)
        kinds = []
        for stochastic in (False, True):
            solvers = [e for e in chosen if e.formulation == name and e.stochastic == stochastic]
            kinds.append(", ".join(
                f"`{e.solver}`" + (f" ({len(e.run_seeds())} seeds)" if stochastic else "")
                for e in solvers) or "-")
        lines.append(f"| `{name}` | {files} | {kinds[0]} | {kinds[1]} |")
    lines += ["", "## Solvers and the rates their theory proves", "",
              "| formulation | solver | kind | proven rate | method |", "|---|---|---|---|---|"]
    for e in listed:
        kind = ("alternation (monotone descent, no figure)" if e.check == "alternation"
                else "stochastic" if e.stochastic else "deterministic")
        lines.append(f"| `{e.formulation}` | `{e.solver}` | {kind} | "
                     f"{_cell(_rate_text(e))} | {_cell(e.description)} |")
    lines += ["", "## Instances", "",
              "Seeded synthetic data (`cvxrank/instances.py`); C is RankSVM's, rescaled where a",
              "method's loss sums over other things than pairs (`cvxrank/instances.py` says how).",
              "",
              "| instance | written by | queries | documents per query | features | grades "
              "| noise | seed | parameters |", "|---|---|---|---|---|---|---|---|---|"]
    for how, insts in sets:
        for inst in insts:
            docs = inst.docs_per_query
            docs_text = f"{docs[0]}-{docs[1]}" if isinstance(docs, tuple) else str(docs)
            params = ", ".join(f"{k} = {v:g}" for k, v in inst.params.items()) or "-"
            lines.append(f"| `{inst.name}` | {how} | {inst.n_queries} | {docs_text} | "
                         f"{inst.n_features} | {inst.n_grades} | {inst.noise:g} | {inst.seed} "
                         f"| {params} |")
    return "\n".join(lines) + "\n"


def write_figures_readme(out_dir: str | Path) -> Path:
    """Write :func:`figures_readme` to ``out_dir/README.md`` and return its path."""
    path = Path(out_dir) / README
    path.write_text(figures_readme(), encoding="utf-8")
    return path
