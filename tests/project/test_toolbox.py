"""The tests' own helpers (tests/toolbox.py): the one gap definition, the certified pair,
the ticking clock."""

from __future__ import annotations

import time

import pytest
from toolbox import (
    TickingClock,
    certified,
    certified_problem,
    install_clock,
    primal_gap,
    rel,
    signed_rel,
)

from cvxrank import tolerances
from cvxrank.core import trace as trace_module
from cvxrank.data import make_synthetic
from cvxrank.formulations.ranksvm import RankSVM


def test_gaps_are_relative_to_the_reference_never_to_max_1() -> None:
    # an optimum below 1: max(1, |p*|) would make these absolute (0.1 and -0.1)
    assert rel(0.3, 0.2) == pytest.approx(0.5) == tolerances.relative_gap(0.3, 0.2)
    assert signed_rel(0.1, 0.2) == pytest.approx(-0.5)
    assert rel(-0.3, -0.2) == pytest.approx(0.5)  # a negative optimum: divided by |p*|
    assert rel(0.5, 0.0) == 0.5 and signed_rel(0.0, 0.0) == 0.0  # 0 optimum: absolute
    assert rel(1.0, 0.0, floor=4.0) == 0.25  # a formulation's gap_floor


def test_certified_pair_and_primal_gap() -> None:
    data = make_synthetic(n_queries=4, docs_per_query=(4, 8), n_features=3, seed=2)
    build = certified_problem(lambda C: RankSVM(data, C=C, loss="hinge"))
    f, ref = build(0.1)
    assert build(0.1)[0] is f  # built and certified once
    assert certified(f)[1] is ref  # the reference cache, by content
    assert ref.solver == f.reference_solver == "CLARABEL"
    assert abs(primal_gap(f, ref.w, ref)) <= tolerances.reference_agreement("CLARABEL")
    assert primal_gap(f, 0 * ref.w, ref) == pytest.approx(
        (f.primal_value(0 * ref.w) - ref.p_star) / ref.p_star)
    assert primal_gap(f, 0 * ref.w, ref) > 0


def test_ticking_clock(monkeypatch) -> None:
    clock = install_clock(monkeypatch, trace_module)
    assert trace_module.time is clock and isinstance(clock, TickingClock)
    first = trace_module.time.perf_counter()
    clock.advance(0.5)
    assert trace_module.time.perf_counter() - first == 0.5 + clock.tick
    assert trace_module.time.sleep is time.sleep  # everything else is the real module
    monkeypatch.undo()
    assert trace_module.time is time
