"""Model selection by a validation measure, with a stated, deterministic tie-break.

:func:`select_best` picks, among the grid points of one fold that ran, the one with the
largest validation measure; among points with *exactly* equal values (the same ranking of
every validation query gives bit-identical measures), the first in the grid's order, i.e.
the smallest value of the first axis, then of the second, ... (for a grid over C alone: the
smallest C, the most regularized model). Points whose task failed are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cvxrank.errors import CvxrankError
from cvxrank.experiments.tasks import TaskResult

#: The tie-break of :func:`select_best`, as reports state it.
TIE_BREAK = ("largest validation measure; among exactly equal values the first grid point "
             "(smallest value of the first axis, then of the next)")


def check_measure(measure: str, *, preset: str, k: int) -> str:
    """``measure`` if :func:`cvxrank.metrics.evaluate` reports it for ``preset`` and ``k``.

    Raises
    ------
    ValueError
        Listing the measures that can select: ``ndcg@1``..``ndcg@k``, ``p@1``..``p@k``,
        ``map``, ``mrr`` (and ``mean_ndcg`` for ``letor4``).
    """
    from cvxrank.metrics import PRESETS, get_preset

    conv = get_preset(preset)
    known = [f"ndcg@{i}" for i in range(1, k + 1)] + [f"p@{i}" for i in range(1, k + 1)]
    known += ["map", "mrr"] + (["mean_ndcg"] if conv == PRESETS["letor4"] else [])
    name = measure.lower()
    if name not in known:
        raise ValueError(f"unknown selection measure {measure!r}; expected map, mrr, "
                         f"ndcg@1..ndcg@{k} or p@1..p@{k}"
                         + (" or mean_ndcg" if "mean_ndcg" in known else "")
                         + f" (preset {preset}, k = {k})")
    return name


def check_C_grids(**grids: Sequence[float]) -> None:
    """Refuse an empty C grid or a C that is not a finite positive number.

    Parameters
    ----------
    **grids
        Method name -> its C grid.

    Raises
    ------
    ValueError
        Naming the method.
    """
    for name, grid in grids.items():
        if not grid:
            raise ValueError(f"{name}: empty C grid")
        bad = [c for c in grid if not (math.isfinite(c) and c > 0)]
        if bad:
            raise ValueError(f"{name}: C must be finite and > 0, got {bad[0]}")


def select_best(results: Sequence[TaskResult], measure: str, *, split: str = "vali") -> int:
    """Position in ``results`` (given in grid order) of the selected point (module docstring).

    Raises
    ------
    CvxrankError
        When no point ran (every task failed), with the first failure's message.
    """
    best = -1
    for i, result in enumerate(results):
        if result.ok and (best < 0 or result.measures[split][measure]
                          > results[best].measures[split][measure]):
            best = i
    if best < 0:
        first = results[0].error if results else "no grid points"
        raise CvxrankError(f"every grid point failed; the first: {first}")
    return best
