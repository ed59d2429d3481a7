"""Every solver honours a time budget to within one iteration (issue 32, item 3).

Each declared solver runs, on every formulation it can run on (each method and loss of
:mod:`cvxrank.methods`, the registry's kernel RankSVM and ConeRank's two convex blocks),
under a 0.5 s budget with tolerance 0 (no gap stops the run). A callback pauses at every
record, so that every run needs longer than its budget, also those of the solvers that would
converge within it (Newton's few steps, the cutting planes' masters); a solver whose records
are far apart (the stochastic ones record every few thousand steps) must check the budget
between them. The run ends with status ``time_budget``, and the call returns by the budget
plus one iteration (the longest time per iteration between two records, plus the callback's
pause) plus :data:`SLACK` for what follows the last record (the run's result, ConeRank's
block certificates), times the machine's contention (:func:`contention`: the work after the
last record takes longer on a loaded machine). The runs use one BLAS thread: the budget's
logic is under test, not BLAS threads spinning on a busy machine.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from cvxrank.core.capabilities import SOLVERS
from cvxrank.core.trace import Run, Status
from cvxrank.data.synthetic import make_synthetic
from cvxrank.methods import METHODS
from cvxrank.registry import entries
from cvxrank.solvers import solvers_for
from cvxrank.utils.threads import blas_threads

pytestmark = pytest.mark.slow  # every solver for a second each

BUDGET = 0.5
#: The callback's pause at every record (seconds).
PAUSE = 0.1
#: Time allowed after the last record: the result, its certificates (seconds; 0.2-0.3 s
#: alone, more on a loaded machine).
SLACK = 1.0

#: A data set on which the first-order and stochastic solvers need far more than the budget.
DATA = make_synthetic(n_queries=120, docs_per_query=(20, 50), n_features=25, n_grades=3,
                      noise=1.0, seed=11)
#: A larger one for ConeRank, on which one block solve of its alternation, or one pass of
#: its stochastic solver, takes several times the budget.
CONERANK_DATA = make_synthetic(n_queries=500, docs_per_query=(20, 50), n_features=25,
                               n_grades=3, noise=1.0, seed=11)
#: A smaller one for the kernel RankSVM (its Gram matrix is n x n).
KERNEL_DATA = make_synthetic(n_queries=30, docs_per_query=(20, 40), n_features=10,
                             n_grades=4, noise=1.0, seed=11)

#: Hyper-parameters that make the problems hard (a large C).
PARAMS = {"ranksvm": {"C": 1.0}, "irsvm": {"C": 1.0}, "ocsvm": {"C": 10.0},
          "rankmm": {"C": 10.0}, "dorm": {"C": 10.0}, "svmmap": {"C": 10.0}}


def _cases() -> list[tuple[str, str, object]]:
    """(label, solver, make) for every method, loss and solver that runs on it, then the
    registry's formulations the methods table does not build (kernel, ConeRank blocks)."""
    cases: list[tuple[str, str, object]] = []
    for name, method in METHODS.items():
        for loss in method.losses:
            def make(name=name, loss=loss):
                data = CONERANK_DATA if name == "conerank" else DATA
                return METHODS[name].build(data, loss=loss, **PARAMS.get(name, {}))

            for solver in solvers_for(make()):
                cases.append((f"{name}-{loss}", solver, make))
    others = {e.formulation: e for e in entries(lambda e: e.method not in METHODS
                                                or e.formulation.startswith("conerank-"))}
    for label, entry in others.items():
        data = {"kernel-ranksvm": KERNEL_DATA, "conerank": CONERANK_DATA}.get(entry.method, DATA)

        def make(entry=entry, data=data):
            return entry.build(data, {"C": 1.0} if "C" in entry.params else None)

        cases.extend((label, solver, make) for solver in solvers_for(make()))
    return cases


CASES = _cases()


def one_iteration(run: Run) -> float:
    """The longest time per iteration between two records of the run's trace, the
    iteration in which the budget ran out included (a Newton iteration near the end, with
    more CG products, takes longer than the earlier ones)."""
    k = np.asarray(run.trace.iteration, dtype=float)
    t = np.asarray(run.trace.time, dtype=float)
    dk, dt = np.diff(k), np.diff(t)
    per = dt[dk > 0] / dk[dk > 0]
    return float(per.max()) if per.size else 0.0


def test_every_solver_is_covered() -> None:
    """Each declared solver is run on at least one formulation here."""
    covered = {solver for _, solver, _ in CASES}
    assert covered >= set(SOLVERS) - {name for name in SOLVERS if name.startswith("test-")}, (
        sorted(set(SOLVERS) - covered))


@pytest.mark.parametrize(("label", "solver", "make"), CASES,
                         ids=[f"{label}/{solver}" for label, solver, _ in CASES])
def test_the_budget_holds_to_one_iteration(label: str, solver: str, make) -> None:
    formulation = make()

    def pause(*_: object) -> bool:
        time.sleep(PAUSE)
        return False

    started = time.perf_counter()
    with blas_threads(1):  # the budget's logic, not BLAS threads spinning on a busy machine
        run = SOLVERS[solver](formulation, tol=0.0, max_iter=10**8, time_budget=BUDGET,
                              seed=0, callback=pause)
    wall = time.perf_counter() - started
    assert run.status is Status.TIME_BUDGET, (run.status, run.message)
    allowed = BUDGET + one_iteration(run) + PAUSE + SLACK * contention()
    assert wall <= allowed, (f"{label}/{solver}: {wall:.2f} s under a {BUDGET:g} s budget "
                             f"(one iteration {one_iteration(run):.3f} s, allowed "
                             f"{allowed:.2f} s)")


def contention() -> float:
    """How much slower than alone the work after the last record runs on this machine now:
    the runnable processes per core over the last minute, at least 1 (on a shared machine
    with twice as many busy processes as cores, the result takes twice its wall time)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
