"""Named tolerance levels: the one place where cvxrank's numerical thresholds live.

Every test, validation verdict and CLI check reads its threshold from here, so a reader can
see at a glance what "agrees" and "converged" mean.

**Relative means relative to the optimum.** Every relative gap is divided by ``|p*|`` (or,
in a solver's stopping rule, by ``|P(w)|``, which bounds it from above): :func:`relative_gap`,
used alike by the stopping rules (:class:`cvxrank.core.trace.TraceRecorder`), ``validate``,
``verify``, ``fit``, the reproductions and the benchmarks. It is not divided by
``max(1, |p*|)``: that is an *absolute* test whenever the optimum is below 1, and with a
small C (or IR SVM's small weights) the zero model w = 0 would meet a 1e-8 "relative" gap at
iteration 0 and score every document as tied. The objectives here are positive at the
optimum (a sum of squares plus losses with positive margins), so ``|p*|`` is a scale that
cannot degenerate; where it is 0, the gap must be 0.

A relative objective gap alone cannot tell the zero model from the optimum once C is so
small that ``P(0) - p*`` (about ``C^2 ||grad L(0)||^2 / 2``) falls below the tolerance times
``p*`` (about ``C L(0)``). Two rules cover that regime: no solver reports converged at
``w = 0`` while its certificate leaves a gap above rounding (:data:`ZERO_MODEL_GAP`;
:class:`cvxrank.core.trace.TraceRecorder`), and C is accepted only in :data:`C_RANGE`, over
which the solvers are tested against the certified references (``tests/solvers/test_extreme_c.py``).
"""

from __future__ import annotations

#: Relative agreement |p* - d*| / |p*| required between the primal and dual
#: optima of a certified reference solve, per CVXPY solver. Interior-point solvers (Clarabel,
#: ECOS) are held to 1e-7; first-order ones (OSQP, SCS) reach about 1e-4 to 1e-6.
REFERENCE_AGREEMENT: dict[str, float] = {
    "CLARABEL": 1e-7,
    "ECOS": 1e-7,
    "OSQP": 1e-4,
    "SCS": 1e-4,
}

#: Default agreement for a CVXPY solver not listed above.
REFERENCE_AGREEMENT_DEFAULT = 1e-5

#: Relative objective gap (f - p*) / |p*| a fast first-order solver must reach.
FAST_SOLVER_GAP = 1e-6

#: Relative objective gap a Newton-type solver must reach.
NEWTON_GAP = 1e-8

#: Relative objective gap a stochastic solver must reach (median over seeds).
STOCHASTIC_GAP = 1e-3

#: Tolerance on how much slower than the proven rate a fitted rate may be: a fitted slope
#: of log-gap against log-iteration may exceed the proven exponent by at most this much.
RATE_SLACK = 0.25

#: A run may stop at the zero model w = 0 only with a certified relative gap this small:
#: where w = 0 is the exact optimum (as it can be for RankMM's maximum losses, at every C)
#: the certificate shows it to rounding, while a small C only makes P(0) - p* small against
#: the tolerance (see the module docstring).
ZERO_MODEL_GAP = 1e-10

#: Largest violation of the dual constraints accepted as feasible.
FEASIBILITY = 1e-9

#: Agreement of CVXPY expressions with the numpy evaluators (no solve involved).
EXPRESSION_MATCH = 1e-9


def reference_agreement(solver: str) -> float:
    """Primal-dual agreement required of a reference solve by ``solver``."""
    return REFERENCE_AGREEMENT.get(solver.upper(), REFERENCE_AGREEMENT_DEFAULT)

#: How a relative objective gap is defined: the text used in messages and plot labels.
RELATIVE_GAP_DEFINITION = "(P(w) - p*) / |p*|"

#: The values of C (the loss weight of every formulation here) that cvxrank accepts. Over
#: this range every registered fast solver meets the certified reference or reports that it
#: did not converge (``tests/solvers/test_extreme_c.py``); beyond it the loss term is so small or so
#: large against ``||w||^2 / 2`` that the solutions are the zero model or the C -> infinity
#: limit to floating-point precision (and at C = 1e300 the objective, C times a sum over
#: pairs, overflows).
C_RANGE = (1e-12, 1e12)


def gap_scale(reference: float, floor: float = 0.0) -> float:
    """The divisor of relative gaps to ``reference``: ``|reference|``, or a formulation's
    ``floor`` where its optimum can be 0 or negative (OC SVM's sum of margins: a linear
    objective, :attr:`~cvxrank.formulations.base.Formulation.gap_floor`); 1 when both are 0."""
    return max(abs(float(reference)), float(floor)) or 1.0


def relative_gap(value: float, reference: float, floor: float = 0.0) -> float:
    """``|value - reference| / |reference|``, as :data:`RELATIVE_GAP_DEFINITION` says: the
    one definition used by the stopping rules, ``validate``, ``verify``, ``fit``, the
    reproductions and the benchmarks (see the module docstring for why not
    ``max(1, |reference|)``). ``floor``: see :func:`gap_scale`."""
    return abs(float(value) - float(reference)) / gap_scale(reference, floor)


def within(gap: float, scale: float, tol: float) -> bool:
    """Whether ``gap <= tol * |scale|``: a gap meets a relative tolerance (stopping rules)."""
    return gap <= tol * abs(scale)

#: Largest relative increase of the objective between two records of an alternation
#: (block-coordinate descent on a non-convex problem) that is still taken as rounding.
MONOTONE_SLACK = 1e-10

#: Relative duality gap at rounding level: a certificate down to ``-GAP_FLOOR`` times the
#: objective is rounding (a gap of 0), below it the certificate is broken (the dual bound
#: above the primal value: status ``numerical``); and a run whose extra stopping rule
#: (:attr:`cvxrank.core.trace.SolverOptions.until`) still fails at a gap this small stops, since
#: more iterations cannot tighten its certificate.
GAP_FLOOR = 1e-13


#: Once a run's tolerance is met, its extra stopping rule is checked again only after the
#: gap has fallen by this factor (each check is a pass over the evaluation data).
UNTIL_GAP_FACTOR = 4.0

#: Once a run's tolerance is met at iteration k, its extra stopping rule may take
#: ``max(a, b * k)`` more iterations, ``(a, b)`` here: Newton needs one or two, a cutting
#: plane at most triples its iterations (beyond, its certificate stalls at the master's
#: accuracy); what is still not certified then is reported so.
UNTIL_EXTRA_ITERATIONS = (10, 2.0)

#: A fit without an evaluation set stops when its certified model radius is at most this
#: fraction of ``||w||`` (once its tolerance is met): the weights are then known to this
#: relative precision, whatever data they later score.
MODEL_RADIUS = 1e-4

#: Feature columns whose largest magnitudes are this many times apart (or features this far
#: from unit scale) make a problem ill-conditioned for the dual and first-order solvers: a
#: run that stops short of its tolerance on such data says so (:mod:`cvxrank.data.scales`).
SCALE_SPREAD = 1e3

#: Headroom of the overflow check (:func:`cvxrank.data.scales.check_magnitude`): the
#: largest feature magnitude squared, times features and documents squared (a sum of
#: squared pair differences), must stay below this fraction of the largest float64.
OVERFLOW_HEADROOM = 1e-10


# --------------------------------------------------------------------------------------------
# Solver-internal thresholds: rounding slacks, floors and iteration limits inside the solvers'
# own arithmetic (not stopping rules: a run's stop is decided by its certified gap above).

#: PRSVM's CG iteration limit per Newton step is ``max(NEWTON_CG_MIN_ITER,
#: NEWTON_CG_ITER_PER_FEATURE * d)`` (when not given): CG on the d x d Newton system ends
#: within d products in exact arithmetic, and twice that leaves room for rounding; the floor
#: keeps a few-feature system from being cut short (:mod:`cvxrank.solvers.newton`).
NEWTON_CG_MIN_ITER = 50
NEWTON_CG_ITER_PER_FEATURE = 2

#: Largest relative residual CG is asked for in a Newton step, the cap ``eta_max`` of the
#: forcing sequence ``min(eta_max, ...)`` (Dembo & Steihaug 1983; Nocedal & Wright, Alg. 7.1):
#: far from the optimum a direction solved to half its right-hand side already descends, and
#: costs few products.
NEWTON_FORCING_MAX = 0.5

#: A Newton step makes progress when the certified gap falls below this fraction of the
#: best gap so far (it halves); :data:`cvxrank.solvers.newton.STALL_STEPS` steps without
#: such progress stop the run as stalled.
NEWTON_STALL_FACTOR = 0.5

#: The hinge finish's active set (:func:`cvxrank.solvers.one_slack.margin_active_set`) is at
#: its face's minimizer when its step p has ``||p||^2 <= MARGIN_STEP_FLOOR (1 + ||w||^2)``:
#: a step of 1e-13 of the point's scale (about a thousand ulps) is rounding.
MARGIN_STEP_FLOOR = 1e-26

#: A pair held on its margin leaves it when its multiplier lies outside ``[0, u_k]`` by more
#: than this fraction of ``u_k``; less is the rounding of the face's linear solve.
MARGIN_RELEASE = 1e-9

#: In the finish's line search a pair's margin is crossed only when ``|d_k' p|`` exceeds this
#: fraction of ``||d_k|| ||p||``: below it the product is rounding and the pair does not move.
MARGIN_CROSSING = 1e-12

#: The hand-written several-block master is solved this factor closer (its gap tolerance
#: times this) each time the oracle finds nothing violated at its inexact point; once that
#: factor is at most :data:`SHARPEN_FLOOR` the master's point is taken as exact and the run
#: stops (:func:`cvxrank.solvers.cutting_plane.run_cutting_plane`).
SHARPEN_FACTOR = 1e-3
SHARPEN_FLOOR = 1e-12

#: A block whose multipliers sum to at least ``(1 - MASTER_SATURATION)`` times its cap is
#: saturated in the master finish's KKT system (its slack may be positive): the sums of an
#: interior-point or active-set master reach the cap only to rounding.
MASTER_SATURATION = 1e-9

#: The cutting plane's iteration bound is reported at most this large: it stays a machine
#: integer when the proven bound is astronomically large (a tolerance near 0).
ITERATION_BOUND_CAP = 2 ** 62

#: A warm start of the one-block master is feasible when its sum is within this fraction of
#: the cap (and it is nonnegative); else the method starts from a vertex.
MASTER_START_SLACK = 1e-9

#: The masters' KKT systems get a ridge of this fraction of the largest squared cut gradient
#: (the largest diagonal entry of ``Q = G G'``): it keeps them nonsingular when cuts are
#: collinear, and perturbs the QP by only 1e-12 of its scale.
MASTER_RIDGE = 1e-12

#: A master coordinate at most this fraction of the cap after a ratio-test step is zero (it
#: leaves the support): a few ulps of the cap, the rounding of the step.
MASTER_DROP = 1e-15

#: Times an active-set master may solve the QP on one support: in exact arithmetic a support
#: comes back at most once (a coordinate that entered at 0 and leaves again at once), so a
#: third time is cycling on rounding (:class:`cvxrank.solvers.simplex_product_qp._CycleGuard`).
MASTER_CYCLE_REPEATS = 2

#: The interior-point start of the several-block master steps this fraction of the way to
#: the boundary of the positive orthant (the step rule of Nocedal & Wright, Alg. 16.4): its
#: iterates stay strictly interior.
INTERIOR_STEP_FRACTION = 0.99
