"""Paper reproductions: functions that run an experiment of a paper and return plain data.

Each module reproduces one paper's experiments; its functions return dataclasses (with a
``to_dict()`` for JSON) and write tables (markdown, CSV) and figures (PNG, CSV) on request.
The command line (``cvxrank reproduce``) only parses arguments, calls them and prints.

* :mod:`cvxrank.experiments.chapelle`: Chapelle & Keerthi (2010), Sect. 5.1 Table 3
  (OHSUMED, PRSVM / PRSVM+ / LinearSVC on pairs) and Sect. 5.2 Fig. 3 (AUC scaling).
"""

from cvxrank.experiments.chapelle import (
    DEFAULT_C,
    FIG3_SIZES,
    ScalingResult,
    ScalingRun,
    Table3Result,
    plot_fig3,
    run_fig3,
    run_table3,
    write_fig3,
    write_table3,
)

__all__ = [
    "DEFAULT_C",
    "FIG3_SIZES",
    "ScalingResult",
    "ScalingRun",
    "Table3Result",
    "plot_fig3",
    "run_fig3",
    "run_table3",
    "write_fig3",
    "write_table3",
]
