r"""Certificates on what a fit reports: its model and the measures it is judged by.

A duality gap certifies the objective; researchers report ranking measures, which depend on
w. With the :math:`\tfrac12\|w\|^2` regularizer the primal is 1-strongly convex, so a
certified gap g puts the optimum in the ball :math:`\|w - w^*\| \le r = \sqrt{2g}` (the run's
``w_radius``, :mod:`cvxrank.core.trace`); :mod:`cvxrank.certificates.measure_certificate` decides,
per query and measure, whether every w' of that ball ranks the query with the same measure value,
i.e. whether the reported value is the exact optimum's.

This module turns that into stopping rules and report fields:

* :class:`EvaluationTarget`: the evaluation sets (validation, test) and measures a fit
  reports; its :meth:`~EvaluationTarget.until` rule keeps a solver iterating, once its
  tolerance is met, until every measure of every set is certified;
* :func:`radius_rule`: without an evaluation set, until the model radius is a small
  fraction of :math:`\|w\|` (:data:`cvxrank.tolerances.MODEL_RADIUS`);
* :func:`measure_report`: per measure, ``certified`` and the number of queries that are
  not, as ``fit --json``, ``grid`` and the reproductions print them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.ranking_data import RankingData

if TYPE_CHECKING:
    from cvxrank.certificates.measure_certificate import MeasureCertificate
    from cvxrank.core.trace import Run, StopRule
    from cvxrank.formulations.base import Objective


#: The smallest positive radius: a ball this small certifies every order but exact score
#: ties (a ball of radius 0 is one point, where ties are as permanent as any order).
TIES = float(np.finfo(float).tiny)


def reported_measures(k: int, *, mean_ndcg: bool = False) -> tuple[str, ...]:
    """The measure keys :func:`cvxrank.metrics.evaluate` reports at cut-off ``k``."""
    keys = [f"ndcg@{i}" for i in range(1, k + 1)] + [f"p@{i}" for i in range(1, k + 1)]
    return (*keys, "map", "mrr", *(("mean_ndcg",) if mean_ndcg else ()))


def certifiable(formulation: Objective) -> bool:
    """Whether a run on ``formulation`` can certify measures: a strongly convex primal in
    weights that score documents linearly (``Objective.linear_scores``)."""
    return formulation.strong_convexity > 0 and formulation.linear_scores


@dataclass(frozen=True)
class EvaluationTarget:
    """Evaluation sets whose reported measures a fit must certify.

    Attributes
    ----------
    sets : tuple of RankingData
        The sets (validation, test, ...), each padded to the training features when scored.
    measures : tuple of str
        Measure keys (:func:`reported_measures`).
    convention : str
        The metrics preset (:data:`cvxrank.metrics.PRESETS`): its relevance threshold and
        tie rule decide what a measure depends on.
    """

    sets: tuple[RankingData, ...]
    measures: tuple[str, ...]
    convention: str = "letor3"

    @classmethod
    def of(cls, sets: Sequence[RankingData | None], *, k: int = 10,
           convention: str = "letor3") -> EvaluationTarget | None:
        """The target of the given sets (None entries skipped) with the measures
        ``evaluate`` reports at ``k``; None when no set is given."""
        given = tuple(s for s in sets if s is not None)
        return cls(given, reported_measures(k), convention) if given else None

    def certificates(self, formulation: Objective, w: np.ndarray,
                     radius: float) -> list[MeasureCertificate]:
        """One :class:`~cvxrank.certificates.measure_certificate.MeasureCertificate` per set, for
        the model ``w`` of ``formulation`` and the radius ``radius``."""
        from cvxrank.certificates.measure_certificate import certify_measures

        weights = formulation.weights(w)
        d = weights.size
        out = []
        for data in self.sets:
            X = data.pad_features(d).X
            out.append(certify_measures(X, data.y, data.query_ptr, weights, radius,
                                        measures=self.measures, convention=self.convention))
        return out

    def until(self, formulation: Objective) -> StopRule | None:
        """``until(w, radius)``: every measure of every set certified, or some measure not
        certified even in the smallest ball (radius ``TIES``: then exact score ties between
        documents of different labels decide it at w, as at an optimum such as w = 0 where
        every score ties, and more iterations cannot certify it; the report says which).
        None when the formulation cannot certify measures (:func:`certifiable`)."""
        if not certifiable(formulation):
            return None

        def certified_or_tied(w: np.ndarray, radius: float) -> bool:
            if math.isfinite(radius) and all(
                    c.all_certified for c in self.certificates(formulation, w, radius)):
                return True
            return not all(c.all_certified for c in self.certificates(formulation, w, TIES))

        return certified_or_tied

    def report(self, formulation: Objective, run: Run) -> list[dict[str, Any]]:
        """Per set, :func:`measure_report` of ``run``'s model and radius."""
        if not certifiable(formulation):
            return [measure_report(None, self.measures) for _ in self.sets]
        return [measure_report(c, self.measures)
                for c in self.certificates(formulation, run.w, run.w_radius)]


def radius_rule(formulation: Objective, level: float) -> StopRule:
    """``until(w, radius)``: ``radius <= level * ||weights(w)||`` (a model known to that
    relative precision)."""

    def small(w: np.ndarray, radius: float) -> bool:
        return radius <= level * float(np.linalg.norm(formulation.weights(w)))

    return small


def combined_report(reports: Sequence[Mapping[str, dict[str, Any]]],
                    measures: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Several sets' (or folds') :func:`measure_report` as one: per measure, ``certified``
    on every one (so a mean of them is the optima's) and ``uncertified_queries`` summed
    (None when one has no certificate or no entry for the measure)."""
    out: dict[str, dict[str, Any]] = {}
    for key in measures:
        entries = [r.get(key) for r in reports]
        counts = [e["uncertified_queries"] if e else None for e in entries]
        out[key] = {"certified": bool(entries) and all(bool(e and e["certified"])
                                                       for e in entries),
                    "uncertified_queries": None if None in counts else int(sum(counts))}
    return out


def measure_report(certificate: MeasureCertificate | None,
                   measures: Sequence[str]) -> dict[str, Any]:
    """Per measure: ``{"certified": bool, "uncertified_queries": int or None}``; a run
    without a certificate (no radius, a non-convex model) certifies nothing."""
    if certificate is None:
        return {m: {"certified": False, "uncertified_queries": None} for m in measures}
    return {m: {"certified": certificate.certified(m),
                "uncertified_queries": int(certificate.uncertified(m))} for m in measures}
