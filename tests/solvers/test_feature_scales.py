"""Every registered solver on badly scaled features: the optimum of the user's problem, or a
stop that says why; never "converged" above the optimum (issue: robust to real feature
scales).

The data are one feature column multiplied by 10^k, or every feature, k = 0 ... 12. The
reference is CVXPY on the column-rescaled problem: with ``X_s = X S`` (S diagonal) and
``v = S w``, the problem :math:`\\tfrac12\\|w\\|^2 + C L(X_s w)` is
:math:`\\tfrac12\\|S^{-1} v\\|^2 + C L(X v)`, the formulation's own CVXPY primal built on the
well-scaled X with its regularizer term replaced (a DCP problem that an interior point
solves at any k), mapped back by ``w = S^{-1} v``. The kernel RankSVM (an RBF Gram
matrix, bounded at any feature scale) and ConeRank's convex subproblems (a cone basis, no
norm regularizer) are compared with the certified CVXPY reference of the scaled problem
itself, where CVXPY certifies one; ConeRank's alternation (non-convex: no certified
optimum) is held to the stop-or-say-why part alone.
"""

from __future__ import annotations

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

from cvxrank.certificates.reference import solve_reference
from cvxrank.core.trace import Status
from cvxrank.data.synthetic import make_synthetic
from cvxrank.errors import SolverError, UsageError
from cvxrank.fitting import fit_formulation
from cvxrank.registry import REGISTRY, _load_families

pytestmark = pytest.mark.slow  # every solver on every scaling: a verify sweep

_load_families()

#: Every registered pair.
ENTRIES = list(REGISTRY)

#: Formulations whose data enter other than as 1/2 ||w||^2 + C L(Xw) (OC SVM's thresholds
#: included): compared with the reference of the scaled problem itself.
OTHER_MAPS = ("kernel-", "conerank")

#: (which columns, k): one column, or every column, times 10^k.
SCALINGS = [("one", k) for k in range(0, 13, 2)] + [("all", k) for k in range(2, 13, 2)]

#: Each run's time budget and iteration limit: a solver that cannot make progress on the
#: scaled problem stops there, saying so.
BUDGET = {"time_budget": 0.25, "max_iter": 3000}


def base_data():
    """Small noisy queries (no separating w: the optimum's loss stays O(1) at any scale), 4
    documents each so that the structured formulations' CVXPY primal enumerates 4!."""
    return make_synthetic(n_queries=5, docs_per_query=4, n_features=3, n_grades=3,
                          noise=3.0, seed=11)


def scale_vector(which: str, k: int, n_features: int) -> np.ndarray:
    s = np.ones(n_features)
    if which == "one":
        s[0] = 10.0 ** k
    else:
        s[:] = 10.0 ** k
    return s


def reference_optimum(entry, data, s: np.ndarray) -> float | None:
    """The optimal value of ``entry`` on the scaled data (None: none to compare with)."""
    if entry.check != "reference":
        return None
    if not entry.formulation.startswith(OTHER_MAPS):
        return rescaled_optimum(entry, data, s)
    scaled = entry.build(data.with_features(np.asarray(data.X) * s), {"C": 1.0})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solve_reference(scaled, cache=False).p_star
    except SolverError:
        return None


def rescaled_optimum(entry, data, s: np.ndarray) -> float:
    """p* of the problem on ``X S`` from the formulation's CVXPY primal on X, its
    regularizer term :math:`\\tfrac12\\|v\\|^2` replaced by :math:`\\tfrac12\\|S^{-1}v\\|^2`."""
    f = entry.build(data, {"C": 1.0})
    problem = f.primal()
    weights = [v for v in problem.variables() if v.size == data.n_features
               and v.name() in ("w", "theta")]
    assert len(weights) == 1, [v.name() for v in problem.variables()]
    v = weights[0]
    terms = problem.objective.expr.args
    regularizer = [t for t in terms if {x.id for x in t.variables()} == {v.id}]
    assert len(regularizer) == 1, "the primal's objective is 1/2||w||^2 + (loss terms)"
    loss = [t for t in terms if t is not regularizer[0]]
    objective = 0.5 * cp.sum_squares(cp.multiply(1.0 / s, v)) + cp.sum(cp.hstack(loss))
    rescaled = cp.Problem(cp.Minimize(objective), problem.constraints)
    values = []
    for solver in ("CLARABEL", "ECOS"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rescaled.solve(solver=solver)
            except cp.error.SolverError:
                continue
        if rescaled.status == cp.OPTIMAL:
            values.append(float(rescaled.value))
    assert values, "no certified reference"
    if len(values) == 2:  # two interior points agree: the reference is the optimum
        assert math.isclose(*values, rel_tol=1e-6), values
    return min(values)


@pytest.fixture(scope="module")
def references():
    return {}


@pytest.mark.parametrize("which,k", SCALINGS, ids=[f"{w}{k}" for w, k in SCALINGS])
def test_every_solver_reaches_the_optimum_or_says_why(which: str, k: int,
                                                      references: dict) -> None:
    data = base_data()
    s = scale_vector(which, k, data.n_features)
    scaled = data.with_features(np.asarray(data.X) * s)
    outcomes = {}
    for entry in ENTRIES:
        key = (entry.formulation, which, k)
        if key not in references:
            references[key] = reference_optimum(entry, data, s)
        p_star = references[key]
        f = entry.build(scaled, {"C": 1.0})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the Newton solvers' check below is unconditional: an iteration limit only,
            # so that a loaded machine cannot cut them short
            newton = entry.solver in ("prsvm", "prsvm+")
            run = fit_formulation(f, entry.solver, **({"max_iter": BUDGET["max_iter"]}
                                                       if newton else BUDGET))
        objective = f.primal_value(run.w)
        assert math.isfinite(objective), (entry.name, run.message)
        excess = math.nan if p_star is None else (objective - p_star) / abs(p_star)
        outcomes[entry.name] = (run.status.value, f"{excess:.1e}")
        if run.converged and p_star is not None:
            assert excess <= max(10 * entry.tol, 1e-6), (entry.name, run.message, excess)
            assert excess >= -1e-6, (entry.name, "below the reference", excess)
        elif not run.finished:
            assert run.status in (Status.NUMERICAL, Status.MAX_ITER, Status.TIME_BUDGET)
            assert run.message.startswith("stopped:"), run.message
    # the column-scaled Newton solvers reach the optimum at every column scale (their
    # certificate may stop at rounding above a tight tolerance: they then say so)
    for name, (_, excess) in outcomes.items():
        if name.endswith(("/prsvm+", "/prsvm")) and which == "one":
            assert abs(float(excess)) <= 1e-6, (name, outcomes[name])


def test_features_whose_squares_overflow_are_refused() -> None:
    data = base_data()
    huge = data.with_features(np.asarray(data.X) * 1e160)
    for entry in ENTRIES:
        with pytest.raises(UsageError, match="overflow float64"):
            entry.build(huge, {"C": 1.0})
