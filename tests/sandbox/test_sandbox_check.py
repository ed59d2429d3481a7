"""cvxrank.sandbox.check and register: a user's solver judged as verify judges the package's.

A good solver passes; a broken one (wrong gradient, a run stopped short, a rate claimed
faster than it is, something that is not a run) fails with its reason; a registered solver
is run by verify's engine and is gone when its ``with`` block ends, even on an error.
"""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank import registry
from cvxrank.certificates.validate import RateSpec
from cvxrank.core.trace import Status, TraceRecorder
from cvxrank.data import make_synthetic
from cvxrank.data.instances import QUICK
from cvxrank.formulations.base import squared_operator_norm
from cvxrank.registry.rates import NEWTON_RATE
from cvxrank.sandbox import (
    PairwiseFormulation,
    as_solver,
    check,
    figure,
    logistic,
    register,
    registered,
)
from cvxrank.solvers import solve_prsvm


def formulation(C: float = 0.05) -> PairwiseFormulation:
    return PairwiseFormulation(make_synthetic(n_queries=6, docs_per_query=(5, 12),
                                              n_features=5, seed=0), logistic(), C=C)


def lipschitz(f: PairwiseFormulation) -> float:
    """Of the primal gradient: 1 + C sup l'' ||A X||^2."""
    return 1.0 + f.C * f.loss.curvature_range[1] * squared_operator_norm(f.X, f.pairs.A)


def gradient_descent(f: PairwiseFormulation):
    """Gradient descent with step 1/L, as a generator of iterates."""
    step = 1.0 / lipschitz(f)
    w = np.zeros(f.data.n_features)
    while True:
        yield w
        w = w - step * (w + f.C * (f.X.T @ f.evaluate_loss(w).grad))


def gd_rate(f: PairwiseFormulation) -> RateSpec:
    """(1 - mu/L)^k with mu = 1 (Nesterov 2004, Thm. 2.1.15)."""
    return RateSpec.linear(1.0 - 1.0 / lipschitz(f))


def test_builtin_and_user_solvers_pass_on_a_user_formulation() -> None:
    f = formulation()
    newton = check(solve_prsvm, f, NEWTON_RATE)
    assert newton.passed, newton.summary()
    assert newton.rel_gap <= 1e-8 and "it" in newton.fitted
    user = check(gradient_descent, f, gd_rate)
    assert user.passed, user.summary()
    assert user.runs[0].solver == "gradient_descent" and user.runs[0].converged
    assert user.validation.fitted < gd_rate(f).factor  # faster than the bound
    assert user.runs[0].trace.time[-1] > 0  # the generator's own clock
    fig = figure(newton, user)
    assert len(fig.axes) >= 2 and newton.figure is not None
    assert "passed" in repr(user)


def test_a_plain_function_and_a_list_of_iterates_are_solvers_too() -> None:
    f = formulation()

    def newton_by_hand(f, options):  # written like the package's solvers
        return solve_prsvm(f, options)

    assert check(newton_by_hand, f, NEWTON_RATE, tol=1e-8).passed
    iterates = [w for w, _ in zip(gradient_descent(f), range(400), strict=False)]
    listed = check(iterates, f, gd_rate, name="gd-list")
    assert listed.passed and listed.runs[0].solver == "gd-list"


@pytest.mark.parametrize("broken, reason", [
    ("wrong_gradient", "relative objective gap"),
    ("too_few_steps", "relative objective gap"),
    ("too_fast_claim", "slower than the proven"),
    ("not_a_run", "not a Run"),
])
def test_a_broken_solver_fails_with_its_reason(broken: str, reason: str) -> None:
    f = formulation()
    rate = gd_rate
    if broken == "wrong_gradient":
        def solver(f):
            w = np.zeros(f.data.n_features)
            for _ in range(300):
                yield w
                w = w - (w + 0.5 * f.C * (f.X.T @ f.evaluate_loss(w).grad)) / lipschitz(f)
    elif broken == "too_few_steps":
        def solver(f):
            yield from (w for w, _ in zip(gradient_descent(f), range(3), strict=False))
    elif broken == "too_fast_claim":
        solver, rate = gradient_descent, RateSpec.linear(1e-3)
    else:
        def solver(f, options):
            return TraceRecorder(f, options)
    result = check(solver, f, rate)
    assert not result.passed
    assert any(reason in r for r in result.reasons), result.reasons


def test_registered_solvers_run_in_verify_and_leave_with_the_block() -> None:
    from cvxrank.verification.sweep import run_verification

    def build(data, C):
        return PairwiseFormulation(data, logistic(), C=C)

    before = [e.name for e in registry.entries()]
    with registered(gradient_descent, gd_rate, build) as entry:
        assert entry.name == "pairwise-logistic/gradient_descent"
        assert registry.entries("pairwise-logistic/*") == [entry]
        outcome, = run_verification(registry.entries("pairwise-logistic/*"), QUICK[:1])
        assert outcome.passed, outcome.summary()
        with pytest.raises(ValueError, match="already registered"):
            register(gradient_descent, gd_rate, build)
    assert [e.name for e in registry.entries()] == before
    with pytest.raises(RuntimeError), registered(solve_prsvm, NEWTON_RATE, build):
        assert registry.entries("pairwise-logistic/prsvm")
        raise RuntimeError("inside the block")
    assert [e.name for e in registry.entries()] == before


def test_register_lasts_until_unregistered() -> None:
    entry = register(solve_prsvm, NEWTON_RATE, lambda data, C: formulation(C),
                     formulation="pairwise-logistic")
    try:
        assert registry.find_entry("pairwise-logistic", "prsvm") is entry
    finally:
        registry.unregister(entry)
    with pytest.raises(ValueError, match="not registered"):
        registry.unregister(entry)


def test_as_solver_keeps_declared_solvers_and_names_the_others() -> None:
    assert as_solver(solve_prsvm) is solve_prsvm
    wrapped = as_solver(gradient_descent)
    assert wrapped.solver_name == "gradient_descent" and wrapped.needs == ()
    run = wrapped(formulation(), max_iter=5, tol=0.0)
    assert run.status is Status.MAX_ITER and run.n_iter == 5
