"""The test suite's shared helpers: one relative gap, certified references, a test clock.

Import them as ``from toolbox import ...`` (pytest puts ``tests/`` on ``sys.path``, as for
``letor_eval_reference``).

Gaps
    A relative gap is :func:`cvxrank.tolerances.relative_gap`'s, the definition the stopping
    rules, ``validate``, ``verify`` and ``fit`` use
    (:data:`cvxrank.tolerances.RELATIVE_GAP_DEFINITION`): ``|value - reference| /
    |reference|``, or the formulation's ``gap_floor`` where its optimum can be 0 or negative.
    Never ``max(1, |reference|)``: that is an absolute test whenever the optimum is below 1
    (see :mod:`cvxrank.tolerances`).

    * :func:`rel` -- the relative gap itself (non-negative);
    * :func:`signed_rel` -- the same size, with the sign of ``value - reference`` (a primal
      value can only be above the optimum, a dual value only below, up to rounding);
    * :func:`primal_gap` -- :func:`signed_rel` of ``P(w)`` to a certified ``p*``, with the
      formulation's ``gap_floor``: what ``validate`` reports as ``rel_gap``.

Certified references
    * :func:`certified` -- ``(f, solve_reference(f, solver))``, by default with the solver the
      formulation names (:attr:`~cvxrank.formulations.base.Formulation.reference_solver`);
      :func:`cvxrank.certificates.reference.solve_reference` caches by the formulation's content, so
      asking again costs a hash, not a solve;
    * :func:`certified_problem` -- a decorator for a test file's builder of formulations: the
      decorated builder returns the ``(formulation, reference)`` pair, built and certified
      once per distinct arguments in a session.

Clocks
    * :func:`install_clock` -- a :class:`TickingClock` in place of the ``time`` module of the
      given cvxrank modules: durations, time budgets and "charged to the solver's clock" are
      then tested on a clock that advances by known amounts, not on the wall clock.

Data
    * :func:`write_letor_folds` -- a folder of synthetic LETOR folds (``FoldK/train.txt``,
      ``vali.txt``, ``test.txt``).

Measures
    * :func:`letor_measures` -- the test report of ``cvxrank fit --test`` for a model w;
    * :func:`assert_same_certified_measures` -- two models' measures agree wherever both
      certify them (two fits of one problem: in memory and on shards, say).

Sweeps
    * :func:`sampled` -- the values of a parametrized sweep (seeds, instances) with all but the
      first few marked ``slow``: ``make test-fast`` checks the property on a sample of the
      sweep, ``make test`` on all of it;
    * :func:`slow_if` -- the marks of one case of a sweep: ``slow`` or none.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from cvxrank.certificates.reference import Reference, solve_reference
from cvxrank.tolerances import relative_gap


def rel(value: float, reference: float, floor: float = 0.0) -> float:
    """``|value - reference| / |reference|`` (``floor``: the formulation's ``gap_floor``):
    :func:`cvxrank.tolerances.relative_gap`."""
    return relative_gap(value, reference, floor)


def signed_rel(value: float, reference: float, floor: float = 0.0) -> float:
    """:func:`rel` with the sign of ``value - reference``: ``(value - reference) /
    |reference|``."""
    return math.copysign(relative_gap(value, reference, floor),
                         float(value) - float(reference))


def primal_gap(f: Any, w: np.ndarray, ref: Any) -> float:
    """``(P(w) - p*) / |p*|`` with ``f.gap_floor``: how far ``w`` is above the certified
    optimum ``ref.p_star`` (negative only by rounding)."""
    return signed_rel(f.primal_value(w), ref.p_star, f.gap_floor)


def certified(f: Any, solver: str | None = None) -> tuple[Any, Reference]:
    """``(f, solve_reference(f, solver))``; ``solver`` defaults to ``f.reference_solver``."""
    return f, solve_reference(f, solver or f.reference_solver)


def certified_problem(build: Callable[..., Any]) -> Callable[..., tuple[Any, Reference]]:
    """Decorate ``build(*args) -> formulation``: the decorated function returns
    :func:`certified` of it, built and solved once per distinct (hashable) arguments."""

    @functools.cache
    def pair(*args: Any) -> tuple[Any, Reference]:
        return certified(build(*args))

    return functools.wraps(build)(pair)


class TickingClock:
    """A deterministic stand-in for the ``time`` module of the cvxrank modules it is put in
    (:func:`install_clock`): :meth:`perf_counter` advances by ``tick`` seconds at every call
    (2**-20 s, so the readings are exact binary fractions), :meth:`advance` by a given amount
    (what a test's "slow" callback or evaluation does instead of sleeping); any other
    attribute is the real :mod:`time` module's. Timing assertions are made on this clock,
    never on the wall clock."""

    def __init__(self, tick: float = 2.0**-20) -> None:
        self.now = 0.0
        self.tick = tick

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def install_clock(monkeypatch: Any, *modules: Any, tick: float = 2.0**-20) -> TickingClock:
    """One :class:`TickingClock` as the ``time`` of each of ``modules`` (each does
    ``import time`` and reads ``time.perf_counter()``), until the test ends."""
    clock = TickingClock(tick)
    for module in modules:
        assert getattr(module, "time", None) is time, f"{module.__name__} has no time module"
        monkeypatch.setattr(module, "time", clock)
    return clock


def rankmm_query_losses(data: Any, w: np.ndarray, loss: str) -> np.ndarray:
    """Each query's RankMM loss :math:`L_i` over explicit loops over its pairs (Agarwal &
    Collins, Sects. 3.1-3.3; ``loss`` a name: ``average``, ``max`` or ``max_average``)."""
    from itertools import product

    s, out = data.X @ w, np.zeros(data.n_queries)
    for q in range(data.n_queries):
        lo, hi = data.query_ptr[q], data.query_ptr[q + 1]
        y, sq = data.y[lo:hi], s[lo:hi]
        hinge = {(j, k): max(0.0, (y[j] - y[k]) - (sq[j] - sq[k]))
                 for j, k in product(range(hi - lo), repeat=2) if y[j] > y[k]}
        if not hinge:
            continue
        if loss == "average":
            out[q] = sum(hinge.values()) / len(hinge)
        elif loss == "max":
            out[q] = max(hinge.values())
        else:
            out[q] = max(np.mean([v for (_, k), v in hinge.items() if k == low])
                         for low in {k for _, k in hinge})
    return out


def sampled(values: Any, fast: int = 1) -> list[Any]:
    """The values of a parametrized sweep, the first ``fast`` of them as they are and the rest
    marked ``slow`` (``make test-fast`` runs the sample, ``make test`` the whole sweep).

    Parameters
    ----------
    values : iterable
        The sweep, in the order of ``pytest.mark.parametrize``'s argument values.
    fast : int
        How many values the fast loop keeps.
    """
    return [pytest.param(value, marks=slow_if(i >= fast)) for i, value in enumerate(values)]


def slow_if(condition: bool) -> tuple[pytest.MarkDecorator, ...]:
    """``marks=`` for one ``pytest.param`` of a sweep: ``slow`` where ``condition`` holds."""
    return (pytest.mark.slow,) if condition else ()


def letor_measures(data: Any, w: np.ndarray) -> dict:
    """The test report of ``cvxrank fit --test`` for the model w (LETOR 3.0 conventions)."""
    from cvxrank.cli.evaluate import measure_scores
    from cvxrank.data.ranking_data import row_scores
    from cvxrank.metrics import get_preset

    return measure_scores(data, row_scores(data.X, w), convention=get_preset("letor3"),
                          preset="letor3", k=10)


def assert_same_certified_measures(a: dict, b: dict, certified_a: dict, certified_b: dict,
                                   label: object = None) -> None:
    """Two models' measures agree wherever both certify them (each is then the optimum's);
    a measure one of them does not certify may differ (its ball holds both values), and
    how many each certifies depends on its radius, i.e. on rounding."""
    both = [m for m in certified_a if certified_a[m]["certified"] and certified_b[m]["certified"]]
    for measure in both:
        assert a[measure] == b[measure], (label, measure)


def write_letor_folds(root: Any, folds: Any = (1, 2), **synthetic: Any) -> Any:
    """Synthetic LETOR folds in ``root``: ``FoldK/{train,vali,test}.txt`` for each K of
    ``folds``, each split :func:`cvxrank.data.make_synthetic` (``synthetic``'s arguments) with
    seed ``10 K + j`` (j the split's place); returns ``root``."""
    from cvxrank.data import make_synthetic, write_svmlight

    for fold in folds:
        (root / f"Fold{fold}").mkdir()
        for j, split in enumerate(("train", "vali", "test")):
            write_svmlight(make_synthetic(**synthetic, seed=10 * fold + j),
                           root / f"Fold{fold}" / f"{split}.txt")
    return root
