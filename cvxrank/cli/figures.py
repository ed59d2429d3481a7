"""``cvxrank figures``: regenerate the convergence figures kept in ``figures/``.

Usage::

    cvxrank figures [--out figures] [--all] [--quick] [--only PATTERN] [--force]
                    [--reference-solver CLARABEL] [--json]

By default it writes the curated figures that git keeps in ``figures/`` (``make figures``):
one per method family (:data:`CURATED`), all on the verify instance
:data:`CURATED_INSTANCE`, each a small PNG (:func:`cvxrank.plots.save_small_png`) and the
CSV of the traces behind it. ``--all`` writes every (formulation, instance) pair of the five
further verify instances instead (``--quick``, which implies ``--all``: the small one),
as ``cvxrank verify --figures DIR`` does (about 28 MB: for a folder outside git); ``--only
PATTERN`` keeps the pairs whose ``<formulation>/<solver>`` matches, in either selection.

It runs the same verification as ``cvxrank verify``
(:func:`cvxrank.verification.sweep.run_verification`) on the selected pairs, without printing its
table, and writes one PNG per (formulation, instance)
(:func:`cvxrank.plots.figure_for_formulation`: suboptimality against the certified optimum
vs iteration and vs solver time after set-up, deterministic and stochastic solvers in
separate rows, the proven rates as guides), the CSV of the traces behind it (columns
formulation, solver, instance, seed, iteration, time, primal, dual, gap, p_star) and
``README.md``, the index of exactly the files of the selection and how to read them
(:func:`figures_readme`, generated from the selection, the registry and the instances, so
that it cannot go stale: :func:`expected_files` gives the same names without running
anything). Prints the written paths (``--json``: ``{"figures": [...], "index": path,
"passed": bool, "failed": [names]}``).

The files are written as ``verify --figures`` writes them (:mod:`cvxrank.utils.output_files`):
renamed into place once all are written, and an existing file of a name it writes that
cvxrank did not write is refused before the run (``--force`` replaces it):
``cvxrank figures --out .`` in a project's root leaves its ``README.md`` alone. A rerun
replaces the files it wrote, and a ``figures/`` folder without a manifest whose
``README.md`` is this command's (a fresh clone: the manifest is git-ignored) is regenerated
(:func:`cvxrank.cli.verify.written_before_manifests`).

Exit codes: 0; 1 when some pair failed its verification (the figures are still written and
the failing solvers are marked "(failed)" in the legends; stderr names them as ``verify``
does); 2 for bad input.
"""

from __future__ import annotations

import argparse
import textwrap
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

#: The paper reproductions' figures under ``figures/papers/``, written by ``make figures``
#: (its ``cvxrank reproduce`` lines): (folder, the command's options after the experiment
#: name, what it reproduces). ``{letor3}`` and ``{mq2008}`` are the data folders.
PAPERS: tuple[tuple[str, str, str], ...] = (
    ("chapelle-fig3", "", "Chapelle & Keerthi (2010) Fig. 3: PRSVM against PRSVM+ training "
     "time against n (one query, two grades), the paper's sizes"),
    ("agarwal-collins-fig1", "--quick --data {letor3}", "Agarwal & Collins (2010) Fig. 1: "
     "RankMM-1/2/3 and RankSVM on OHSUMED, the quick preset (the full grids take minutes)"),
    ("conerank-table1", "--quick --data {mq2008}", "Tran & Pham Table 1 and Figs. 3-4 on "
     "MQ2008, the quick preset (Fold1, fewer passes)"),
)


def paper_files(folder: str) -> list[str]:
    """The files ``cvxrank reproduce <folder>`` writes into its output folder."""
    from cvxrank.experiments.agarwal_collins.report import FIG1_FILES
    from cvxrank.experiments.chapelle.reports import FIG3_FILES
    from cvxrank.experiments.conerank.report import TABLE1_FILES

    files = {"chapelle-fig3": FIG3_FILES, "agarwal-collins-fig1": FIG1_FILES,
             "conerank-table1": TABLE1_FILES}[folder]
    return sorted(files.values())


#: The verify instance of the curated figures: 25 queries of 20 to 40 documents, 20
#: features, four grade levels (every solver has work to do, and the traces stay small).
CURATED_INSTANCE = "grades4-25q-20f"

#: The curated figures, one per method family: (family, formulation, what it shows).
CURATED: tuple[tuple[str, str, str], ...] = (
    ("RankSVM", "ranksvm-squared_hinge",
     "projected gradient and Nesterov against their linear rates, PRSVM and PRSVM+ "
     "(Newton), and SGD on pairs and on queries against O(1/k)"),
    ("IR SVM", "irsvm-hinge",
     "FISTA against O(1/k^2), and the 1-slack cutting plane"),
    ("OC SVM", "ocsvm-fixed", "FISTA against O(1/k^2)"),
    ("kernel RankSVM", "kernel-ranksvm-squared_hinge",
     "Newton on the kernel PCA map: a handful of iterations after a long set-up"),
    ("RankMM", "rankmm-average",
     "FISTA and the cutting plane, and stochastic projected gradient on the dual against "
     "O(1/sqrt(k))"),
    ("ConeRank", "conerank-basis",
     "the basis-update block: accelerated projected gradient against O(1/k^2)"),
    ("DORM / SVM-MAP", "svmmap",
     "the n-slack cutting plane with the exact most violated ranking"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``figures`` to the top-level parser."""
    parser = subparsers.add_parser(
        "figures",
        help="regenerate the convergence figures of figures/ (PNG + CSV)",
        description="Run the verification of the curated pairs (one per method family, on "
        f"{CURATED_INSTANCE}; --all or --quick: every pair) and write their suboptimality "
        "figures "
        "(PNG), the traces behind them (CSV) and README.md (the index of the figures), "
        "without the table.",
    )
    parser.add_argument("--out", metavar="DIR", default="figures",
                        help="output directory (default figures)")
    parser.add_argument("--all", action="store_true",
                        help="every (formulation, instance) pair of the verify instances, "
                        "not the curated figures kept in git (one per method family); "
                        "--quick implies it, on the quick instances")
    parser.add_argument("--quick", action="store_true",
                        help="every pair of the small verify instance")
    add_force_flag(parser)
    add_verification_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_figures)


def curated_selection(only: str | None = None) -> tuple[list[Any], list[Any]]:
    """(entries, instances) of the curated figures: the registry entries of the
    :data:`CURATED` formulations checked against a reference (matching ``only``, a
    ``--only`` pattern), and :data:`CURATED_INSTANCE`. ValueError when ``only`` matches none
    of them."""
    from cvxrank.data.instances import get_instance
    from cvxrank.registry import entries

    formulations = {name for _, name, _ in CURATED}
    chosen = [e for e in entries(only) if e.formulation in formulations
              and e.check == "reference"]
    if not chosen:
        raise ValueError(f"--only {only!r} matches no pair of the curated figures "
                         f"({', '.join(sorted(formulations))}); add --all for every pair")
    return chosen, [get_instance(CURATED_INSTANCE)]


def select_figures(args: argparse.Namespace) -> tuple[list[Any], list[Any], str]:
    """(entries, instances, reference solver) of a ``figures`` run: the curated selection
    (:func:`curated_selection`), or with ``--all`` or ``--quick`` every pair of the instance
    set (:func:`cvxrank.cli.verify.select`); ValueError on bad input."""
    from cvxrank.data.instances import instance_set

    chosen, instances, solver = select(args, instance_set(args.quick))
    if args.all or args.quick:
        return chosen, instances, solver
    chosen, instances = curated_selection(args.only)
    return chosen, instances, solver


def expected_files(chosen: Sequence[Any] | None = None,
                   instances: Sequence[Any] | None = None) -> list[str]:
    """The names of the files ``cvxrank figures`` writes for ``chosen`` on ``instances``
    (default: the curated selection, :func:`curated_selection`): the PNG and CSV of each
    figure, then :data:`README`. Computed without running anything; the index lists them."""
    if chosen is None or instances is None:
        chosen, instances = curated_selection()
    return [*figure_names(chosen, instances), README]


def run_figures(args: argparse.Namespace) -> int:
    """The ``figures`` subcommand."""
    from cvxrank.plots import write_figures
    from cvxrank.verification.sweep import run_verification

    chosen, instances, ref_solver = select_figures(args)
    curated = not (args.all or args.quick)
    out = figures_output(args.out, force=args.force, option="--out")
    out.check(expected_files(chosen, instances))
    lines = progress_lines(args)
    outcomes = run_verification(chosen, instances, ref_solver, progress=None if lines is None
                                else lambda o, done, total: lines(f"[{done}/{total}] "
                                                                  f"{format_row(o)}"))
    with out.writing() as staging:
        written = [out.final(p) for p in write_figures(outcomes, staging, small=curated)]
        index = out.final(write_figures_readme(staging, chosen, instances, curated=curated))
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

{intro}

This README is written by the same command, from the selection of figures, the registry
and the verify instances (`cvxrank.cli.figures.figures_readme`), so that it lists exactly
the files the command writes; `tests/verification/test_figures_index.py` checks that it
does and that the copy in git is current. A rerun rewrites every file (the solver times,
hence the figures and CSVs, change from run to run).

Every pair's figure (every formulation on every verify instance, about 28 MB) is not for
git: `cvxrank verify` writes them to `results/verify-figures/` (git-ignored; `--figures
DIR` elsewhere, `--no-figures` none), and `cvxrank figures --all --out DIR` writes them
with their index.

`.cvxrank-files.json`, the manifest of the files cvxrank wrote in this folder (so that a
rerun replaces them and nothing else, `cvxrank/utils/output_files.py`), is local state and
git-ignored: in a fresh clone, this README's first lines mark the folder's figures and CSVs
as cvxrank's, and the first `make figures` writes the manifest.
"""

_INTRO = ("Written by `cvxrank figures --out figures` (`make figures`), never by hand: {what}, "
          "and the CSV of the traces behind each (columns `formulation, solver, instance, "
          "seed, iteration, time, primal, dual, gap, p_star`). Each figure is the relative "
          "suboptimality of every registered solver of one formulation against the certified "
          "CVXPY optimum, vs iteration and vs solver time, on a log axis.")

_CURATED_WHAT = ("one convergence figure per method family, on the verify instance `{instance}`, "
                 "as a small PNG ({dpi} dpi, at most 256 colours)")

_ALL_WHAT = ("the convergence figures of the (formulation, instance) pairs it was asked for "
             "(`--all`, `--quick`, `--only`), one PNG ({dpi} dpi) per pair")


def _reading_guide() -> str:
    """The "Reading a figure" section, with the numbers taken from the code that draws."""
    from cvxrank.certificates.validate import SUBLINEAR_TAIL
    from cvxrank.plots import (
        GUIDE_OFFSET,
        LOG_AXIS_RATIO,
        MARKER_MAX_POINTS,
        RELATIVE_GAP_DEFINITION,
        SETUP_NOTE_FRACTION,
    )

    return f"""\
## Reading a figure

`<formulation>_<instance>.png` shows every registered solver of one formulation on one
instance, against the optimum certified by the CVXPY reference (primal and dual solved,
their agreement checked); `<formulation>_<instance>.csv` holds the traces it is drawn from.

* **Rows.** Deterministic solvers on top. Stochastic solvers (SGD, RankMM's stochastic dual
  solvers), where the formulation has some, get a row of their own below: their iteration
  is one step on a sample (a batch of pairs, or one query), not comparable with a
  full-gradient or Newton iteration.
* **Columns.** Left, against iterations; right, against seconds on the solver's own clock
  since its first record, taken at the end of its set-up (the evaluation of the trace
  excluded), so that the axis starts at 0 however long the set-up took; the legend gives
  the set-up time where it is {SETUP_NOTE_FRACTION:.0%} of the solver's time or more (the
  CSV's `time` column is the clock itself, set-up included). The two panels of a row share
  their y axis.
* **x axes** are logarithmic where the solvers of a panel end {LOG_AXIS_RATIO:g} or more times
  apart (Newton's handful of iterations against projected gradient's hundreds), and in a
  row where a solver's proven rate is a power law O(1/k^a). A logarithmic axis is linear
  near 0 (symlog: between 0 and 1 for iterations, between 0 and the power of ten below the
  first positive time for seconds), so that the first record stays on it; only its decades
  are labelled.
* **y axis** (log): the relative suboptimality `{RELATIVE_GAP_DEFINITION}`. Solid, the
  primal P(w_k) - p* at the solver's iterate; dashed, the dual d* - D(alpha_k), scaled the
  same, for solvers that record a dual value (a dual solver's iterate, or the dual point a
  Newton iterate certifies). Records at or below the optimum (within the reference's
  accuracy) cannot be drawn on a log axis and are left out.
* **Markers**: a solver with at most {MARKER_MAX_POINTS} records (Newton's handful of iterations)
  has a hollow marker at each, one shape per solver, so that curves that coincide (PRSVM
  and PRSVM+ compute the same Newton steps in two ways) stay apart. A longer curve that is,
  per iteration, the curve of a solver drawn before it (EG with the factored and with the
  plain step on `rankmm-max`) is drawn thin over that solver's broad pale line, and the
  legend says so.
* **Stochastic solvers**: the line is the median over the seeds, the shaded band their
  min-max range, both taken per iteration (the seeds aligned on their iterations); against
  time, each point of the median is at the seeds' median time of that iteration, so that
  the median is one line over the same seeds throughout. The primal is drawn, and the dual
  too where the proven rate is about the dual (RankMM's stochastic dual solvers).
* **Dotted grey lines**: the relative gap each solver must reach (its tolerance, from
  `cvxrank/tolerances.py`), naming the solvers it applies to.
* **Broad pale strokes** (left panels): the rate the solver's theory proves, O(1/k^a) or
  (1 - x)^k (the contraction factor computed on the instance), over the iterations where
  `cvxrank verify` fits the rate (the last decade, k >= k_end / {SUBLINEAR_TAIL:g}, for
  O(1/k^a); the second half for a linear rate), starting {GUIDE_OFFSET:g} times above the
  curve the rate is about (the dual for dual solvers, deterministic or stochastic; the
  primal median for SGD). Every solver with a proven rate of this kind has one, stochastic
  ones included. A curve that falls at least as steeply as its stroke matches the theory.
  Newton methods (proven: a handful of iterations and a superlinear end) and cutting
  planes (proven: a bound on the number of iterations) have none; the legend says so.
* A solver marked `(failed)` in the legend did not pass the verification.
"""


def _cell(text: str) -> str:
    """``text`` made safe for a markdown table cell."""
    return text.replace("|", "\\|")


def _rate_text(entry: Any) -> str:
    """The proven rate of a registry entry as the index prints it."""
    from cvxrank.certificates.validate import RateSpec
    from cvxrank.plots import rate_guide_text

    if isinstance(entry.rate, RateSpec):
        return rate_guide_text(entry.rate)
    return "computed on each instance (the figure's legend gives it)"


def figures_readme(chosen: Sequence[Any] | None = None, instances: Sequence[Any] | None = None,
                   *, curated: bool | None = None) -> str:
    """The text of ``figures/README.md``: what writes the folder, how to read a figure, and
    the index of exactly the files of the selection (:func:`expected_files`).

    Parameters
    ----------
    chosen : sequence of Entry, optional
        The registry entries run (default: the curated selection,
        :func:`curated_selection`); those checked against a reference have figures.
    instances : sequence of Instance, optional
        The instances they run on (default: the curated one).
    curated : bool, optional
        Whether the files are the curated small figures (default: when ``chosen`` and
        ``instances`` are not given).

    Returns
    -------
    str
        Markdown. It depends only on the selection, the registry, the instances and the
        plotting constants, never on a run, so every run writes the same text.
    """
    from cvxrank.data.instances import DEFAULT, QUICK
    from cvxrank.plots import DPI, figure_stem
    from cvxrank.registry import entries as registered

    if chosen is None or instances is None:
        chosen, instances = curated_selection()
        curated = True if curated is None else curated
    curated = bool(curated)
    what = (_CURATED_WHAT.format(instance=CURATED_INSTANCE, dpi=DPI) if curated
            else _ALL_WHAT.format(dpi=DPI))
    families = {name: (family, shows) for family, name, shows in CURATED}
    figured = [e for e in chosen if e.check == "reference"]
    order = [name for _, name, _ in CURATED]
    formulations = sorted(dict.fromkeys(e.formulation for e in figured),
                          key=lambda f: order.index(f) if f in order else len(order))
    intro = textwrap.fill(_INTRO.format(what=what), width=90, break_on_hyphens=False,
                          break_long_words=False)
    lines = [_HEADER.format(intro=intro), _reading_guide(), "## Index", ""]
    if curated:
        lines += [f"`cvxrank figures` writes one figure per method family, all on the verify "
                  f"instance `{CURATED_INSTANCE}`",
                  "(`cvxrank.cli.figures.CURATED`): the formulation whose solvers show most of",
                  "the family's algorithms. `--only PATTERN` writes those of the pairs it "
                  "matches.", ""]
    else:
        lines += ["One PNG (and its CSV) per formulation and instance of the selection. "
                  "Pairs that", "`cvxrank verify` judges without a certified optimum "
                  "(`check=\"alternation\"` in the", "registry: a non-convex alternation, "
                  "judged by monotone descent) have no figure.", ""]
    lines += ["| figure | traces | family | formulation | instance | deterministic solvers "
              "| stochastic solvers | what it shows |", "|---|---|---|---|---|---|---|---|"]
    for name in formulations:
        family, shows = families.get(name, ("-", "-"))
        kinds = []
        for stochastic in (False, True):
            solvers = [e for e in figured if e.formulation == name and e.stochastic == stochastic]
            kinds.append(", ".join(
                f"`{e.solver}`" + (f" ({len(e.run_seeds())} seeds)" if stochastic else "")
                for e in solvers) or "-")
        for inst in instances:
            stem = figure_stem(name, inst.name)
            lines.append(f"| [`{stem}.png`]({stem}.png) | [`{stem}.csv`]({stem}.csv) | "
                         f"{family} | `{name}` | `{inst.name}` | {kinds[0]} | {kinds[1]} | "
                         f"{_cell(shows)} |")
    if curated:
        lines += ["", "## Paper reproductions", "",
                  "`make figures` also runs `cvxrank reproduce` for these, into "
                  "`papers/<experiment>/` (the real data", "of `../shared/data`; each "
                  "folder's `.md` is the reproduced table with how it was measured):", "",
                  "| folder | command | what it reproduces |", "|---|---|---|"]
        for folder, options, reproduces in PAPERS:
            command = f"cvxrank reproduce {folder} {options}".strip().format(
                letor3="LETOR3", mq2008="MQ2008")
            lines.append(f"| [papers/{folder}/](papers/{folder}/) | `{command}` | "
                         f"{_cell(reproduces)} |")
    listed = list(registered())
    lines += ["", "## Solvers and the rates their theory proves", "",
              "Every registered pair (those of the figures above and the others, which "
              "`cvxrank figures", "--all` and `cvxrank verify` draw).", "",
              "| formulation | solver | kind | proven rate | method |", "|---|---|---|---|---|"]
    for e in listed:
        kind = ("alternation (monotone descent, no figure)" if e.check == "alternation"
                else "stochastic" if e.stochastic else "deterministic")
        lines.append(f"| `{e.formulation}` | `{e.solver}` | {kind} | "
                     f"{_cell(_rate_text(e))} | {_cell(e.description)} |")
    shown = {inst.name for inst in instances}
    lines += ["", "## Instances", "",
              "Seeded synthetic data (`cvxrank/data/instances.py`), named "
              "`<set or what is special>-<queries>q-<features>f`;",
              "C is RankSVM's, rescaled where a method's loss sums over other things than "
              "pairs", "(`cvxrank/data/instances.py` says how). The figures of this folder are "
              "on the instances in bold.", "",
              "| instance | run by | queries | documents per query | features | grades "
              "| noise | seed | parameters |", "|---|---|---|---|---|---|---|---|---|"]
    for how, insts in (("`cvxrank verify --all`, `cvxrank figures --all`", DEFAULT),
                       ("`cvxrank verify`, `cvxrank figures --quick`", QUICK)):
        for inst in insts:
            docs = inst.docs_per_query
            docs_text = f"{docs[0]}-{docs[1]}" if isinstance(docs, tuple) else str(docs)
            params = ", ".join(f"{k} = {v:g}" for k, v in inst.params.items()) or "-"
            label = f"**`{inst.name}`**" if inst.name in shown else f"`{inst.name}`"
            lines.append(f"| {label} | {how} | {inst.n_queries} | {docs_text} | "
                         f"{inst.n_features} | {inst.n_grades} | {inst.noise:g} | {inst.seed} "
                         f"| {params} |")
    return "\n".join(lines) + "\n"


def write_figures_readme(out_dir: str | Path, chosen: Sequence[Any] | None = None,
                         instances: Sequence[Any] | None = None, *,
                         curated: bool | None = None) -> Path:
    """Write :func:`figures_readme` (of the selection; default the curated one) to
    ``out_dir/README.md`` and return its path."""
    path = Path(out_dir) / README
    path.write_text(figures_readme(chosen, instances, curated=curated), encoding="utf-8")
    return path
