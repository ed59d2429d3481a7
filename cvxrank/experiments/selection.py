"""Model selection by a validation measure, with a stated, deterministic tie-break.

:func:`select_best` picks, among the grid points of one fold that ran, the one with the
largest validation measure; among points with *exactly* equal values (the same ranking of
every validation query gives bit-identical measures), the first in the grid's order, i.e.
the smallest value of the first axis, then of the second, ... (for a grid over C alone: the
smallest C, the most regularized model). Points whose task failed are skipped.

What every reproduction selects from and reports, one set for all of them:

* :class:`Point`: one candidate model of one fold (a grid point), its measures per split
  averaged over the seeds that ran (:meth:`Point.mean_of`), a few summary numbers
  (``stats``: the objective, the relative duality gap, ...), or its failure;
* :func:`task_points`: the points of standard task results (a baseline's C grid);
* :class:`Choice` (:func:`choose`): one method's selected point on one fold, with every
  candidate;
* :func:`mean_measures`, :func:`mean_split_measures`, :func:`fold_mean`: the means over
  seeds and over folds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cvxrank.errors import CvxrankError
from cvxrank.experiments.tasks import TaskResult

#: Measures of one split: :func:`cvxrank.metrics.evaluate`'s keys to values.
Measures = dict[str, float]

#: Measures per split (``{"vali": ..., "test": ...}``).
SplitMeasures = dict[str, Measures]

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


class Candidate(Protocol):
    """What :func:`select_best` reads: a :class:`Point` or a
    :class:`~cvxrank.experiments.tasks.TaskResult`."""

    measures: Mapping[str, Mapping[str, float]]
    error: str | None

    @property
    def ok(self) -> bool: ...


def select_best(results: Sequence[Candidate], measure: str, *, split: str = "vali") -> int:
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


def mean_measures(items: Sequence[Mapping[str, float]]) -> Measures:
    """The mean of every measure over ``items`` (the keys of the first, in its order)."""
    return {key: float(np.mean([m[key] for m in items])) for key in items[0]}


def mean_split_measures(items: Sequence[Mapping[str, Mapping[str, float]]]) -> SplitMeasures:
    """:func:`mean_measures` split by split (the splits of the first item)."""
    return {split: mean_measures([m[split] for m in items]) for split in items[0]}


@dataclass
class Point:
    """One candidate model of one fold, its measures averaged over the seeds that ran.

    Attributes
    ----------
    params : dict
        The grid point (``{"C": C}``, ``{"passes": t}``, ``{"C", "eta0", "T"}``).
    measures : dict
        ``{split: measures}`` (``"vali"``, ``"test"``, ...), each the mean over the seeds.
    stats : dict
        Summary numbers of the model, means over the seeds (ConeRank: ``objective``;
        RankMM: ``relative_gap`` and ``w_norm``); NaN when the point failed.
    n_runs : int
        Seeds that ran (0: the point failed).
    error : str or None
        Why it failed.
    """

    params: dict[str, float]
    measures: SplitMeasures
    stats: dict[str, float]
    n_runs: int
    error: str | None = None

    @classmethod
    def mean_of(cls, params: dict[str, float], measures: Sequence[SplitMeasures],
                stats: Mapping[str, Sequence[float]]) -> Point:
        """The point of the runs (seeds) whose measures and stats are given, one item per
        run."""
        return cls(params, mean_split_measures(measures),
                   {name: float(np.mean(values)) for name, values in stats.items()},
                   len(measures))

    @classmethod
    def failed(cls, params: dict[str, float], error: str | None,
               stats: Sequence[str]) -> Point:
        """A point without a run: no measures, its ``stats`` NaN."""
        return cls(params, {}, dict.fromkeys(stats, math.nan), 0, error)

    @classmethod
    def of_task(cls, result: TaskResult,
                stats: Mapping[str, Callable[[TaskResult], float]]) -> Point:
        """The point of one :class:`~cvxrank.experiments.tasks.TaskResult` (its parameters,
        measures and the ``stats`` computed from it)."""
        params = dict(result.task.params)
        if not result.ok:
            return cls.failed(params, result.error, list(stats))
        return cls.mean_of(params, [result.measures],
                           {name: [stat(result)] for name, stat in stats.items()})

    @property
    def ok(self) -> bool:
        """Whether any seed ran (what :func:`select_best` reads)."""
        return self.n_runs > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain values."""
        return {"params": self.params, "ok": self.ok, "n_runs": self.n_runs, **self.stats,
                "error": self.error, **self.measures}


@dataclass
class Choice:
    """One method's selected model on one fold.

    Attributes
    ----------
    method : str
        The method's label (``"RankMM-1"``, ``"ConeRank-SG"``, ``"RankSVM"``, ...).
    fold : int
    selected : int
        Position of the selected point in ``points``.
    points : list of Point
        Every candidate of the fold, in the grid's order.
    time : float or None
        Seconds of the runs behind the points (None: not measured).
    setting : dict
        The method's fixed settings beside the selected ones (ConeRank's ``K``).
    """

    method: str
    fold: int
    selected: int
    points: list[Point]
    time: float | None = None
    setting: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> Point:
        """The selected point."""
        return self.points[self.selected]

    def to_dict(self, *, with_points: bool = True) -> dict[str, Any]:
        """Plain values: the selection, its measures (``validation``, then every other
        split), its stats and, by default, every point."""
        best = self.best
        out = {"method": self.method, "fold": self.fold, **self.setting,
               "selected": best.params, "validation": best.measures["vali"],
               **{split: m for split, m in best.measures.items() if split != "vali"},
               **best.stats, "n_runs": best.n_runs}
        if self.time is not None:
            out["time"] = self.time
        if with_points:
            out["points"] = [p.to_dict() for p in self.points]
        return out


def task_points(results: Sequence[TaskResult],
                stats: Mapping[str, Callable[[TaskResult], float]]) -> list[Point]:
    """The points of standard task results (one run each), in the grid's order (the values
    of the first axis increasing, then of the next: the order that breaks ties)."""
    return [Point.of_task(r, stats)
            for r in sorted(results, key=lambda r: tuple(r.task.params.values()))]


def choose(method: str, fold: int, points: list[Point], measure: str, *,
           time: float | None = None, setting: dict[str, Any] | None = None) -> Choice:
    """Select among ``points`` by the validation ``measure`` (:data:`TIE_BREAK`)."""
    return Choice(method, fold, select_best(points, measure), points, time, setting or {})


def fold_mean(choices: Sequence[Choice], split: str = "test") -> Measures:
    """Mean over the folds of the selected models' measures on ``split``."""
    return mean_measures([c.best.measures[split] for c in choices])
