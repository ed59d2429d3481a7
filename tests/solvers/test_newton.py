"""PRSVM and PRSVM+ (truncated Newton, Chapelle & Keerthi 2010, Alg. 1) against Clarabel.

Objective values are compared with certified CVXPY optima (relative gap <= NEWTON_GAP); the
squared-hinge dual certificate ``dual_value_at`` is checked for weak duality and tightness,
and against the dual evaluator at the KKT multipliers formed by explicit loops.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from toolbox import certified_problem, primal_gap, rel, signed_rel

from cvxrank import metrics
from cvxrank.certificates.reference import solve_reference
from cvxrank.data import RankingData, build_pairs, make_synthetic
from cvxrank.data.instances import QUICK
from cvxrank.errors import CapabilityError
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import entries
from cvxrank.solvers import newton
from cvxrank.solvers.newton import solve_prsvm, solve_prsvm_plus, solve_truncated_newton
from cvxrank.tolerances import EXPRESSION_MATCH, NEWTON_GAP, gap_scale, reference_agreement
from cvxrank.verification.sweep import run_pair

SMOOTH = ("squared_hinge", "huber")
SEEDS = (21, 22, 23)
MAX_NEWTON_ITER = 15  # "a handful" (Chapelle & Keerthi, Sect. 2; the registry's NEWTON_RATE)


def data_for(seed: int, *, sparse: bool = False) -> RankingData:
    data = make_synthetic(n_queries=8, docs_per_query=(8, 20), n_features=6, n_grades=4,
                          seed=seed)
    if sparse:
        X = data.X * (np.random.default_rng(seed).random(data.X.shape) < 0.5)
        data = data.with_features(sp.csr_matrix(X))
    return data


def c_for(data: RankingData) -> float:
    """C * p = 5, the scale of the verify instances."""
    return 5.0 / build_pairs(data).n_pairs


def structured(seed: int, loss: str, *, sparse: bool = False) -> RankSVM:
    """Query weights, grade-pair weights and grade-pair margins."""
    data = data_for(seed, sparse=sparse)
    rng = np.random.default_rng(seed)
    g = np.unique(data.y)
    lw = {(a, b): float(rng.choice([0.5, 1.0, 2.0])) for a in g for b in g if a > b}
    lm = {(a, b): float(rng.choice([0.5, 1.0, 1.5])) for a in g for b in g if a > b}
    qw = rng.uniform(0.3, 2.0, data.n_queries)
    return RankSVM(data, C=c_for(data), loss=loss, query_weight=qw, level_weight=lw,
                   level_margin=lm)


def explicit(seed: int, loss: str) -> RankSVM:
    """Random per-pair weights and margins (some margins negative)."""
    data = data_for(seed)
    p = build_pairs(data).n_pairs
    rng = np.random.default_rng(seed + 1000)
    return RankSVM(data, C=c_for(data), loss=loss, pair_weight=rng.uniform(0.2, 3.0, p),
                   margin=rng.uniform(-0.5, 2.0, p))


@certified_problem
def problem(kind: str, seed: int, loss: str) -> RankSVM:
    return structured(seed, loss) if kind == "structured" else explicit(seed, loss)


def kkt_alpha(f: RankSVM, w: np.ndarray) -> np.ndarray:
    """alpha_k = 2 C c_k max(0, m_k - (s_i - s_j)), pair by pair."""
    s = f.X @ w
    return np.array([2.0 * f.C * c * max(0.0, m - (s[i] - s[j]))
                     for i, j, c, m in zip(f.pairs.upper, f.pairs.lower, f.pair_weight,
                                           f.margin, strict=True)])


# -- reaching the certified optimum -------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loss", SMOOTH)
def test_prsvm_plus_structured_reaches_reference(seed, loss) -> None:
    f, ref = problem("structured", seed, loss)
    result = solve_prsvm_plus(f)
    assert result.converged, result.message
    assert result.solver == "prsvm+" and result.info["engine"] == "sorted"
    assert result.n_iter <= MAX_NEWTON_ITER
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    # the pair engine on the same structured problem gives the same optimum
    same = solve_prsvm(f)
    assert -NEWTON_GAP <= primal_gap(f, same.w, ref) <= NEWTON_GAP
    if loss == "squared_hinge":
        # no residual sits at a kink along the way: the same Newton iterates, engine apart
        # (with the Huber loss every start residual m = 1 is a kink, see test_pair_losses)
        # (a gap within rounding of the tolerance may take one step more on one of them)
        assert abs(same.n_iter - result.n_iter) <= 1
        common = min(len(same.trace), len(result.trace))
        assert np.allclose(same.trace.primal[:common], result.trace.primal[:common],
                           rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loss", SMOOTH)
def test_prsvm_explicit_reaches_reference(seed, loss) -> None:
    f, ref = problem("explicit", seed, loss)
    result = solve_prsvm(f)
    assert result.converged, result.message
    assert result.solver == "prsvm" and result.info["engine"] == "pairs"
    assert result.n_iter <= MAX_NEWTON_ITER
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    assert len(result.info["cg_iterations"]) == len(result.info["steps"]) == result.n_iter


@pytest.mark.parametrize("seed", SEEDS)
def test_certified_gap_bounds_true_gap_at_every_record(seed) -> None:
    for kind, solve in (("structured", solve_prsvm_plus), ("explicit", solve_prsvm)):
        f, ref = problem(kind, seed, "squared_hinge")
        result = solve(f)
        tr = result.trace.as_arrays()
        assert len(tr["primal"]) == result.n_iter + 1  # one record per Newton iteration
        scale = gap_scale(ref.p_star)
        slack = reference_agreement("CLARABEL") * 1e-2 * scale  # the reference's own error
        true_gap = tr["primal"] - ref.p_star
        assert np.all(np.isfinite(tr["gap"]))
        assert np.all(true_gap <= tr["gap"] + slack)
        assert np.all(tr["dual"] <= ref.p_star + slack)
        # the recorded values are the formulation's at the recorded iterates
        assert np.allclose(tr["gap"], tr["primal"] - tr["dual"])
        assert rel(tr["dual"][-1], tr["primal"][-1]) <= NEWTON_GAP  # its stopping rule
        assert np.all(np.diff(tr["primal"]) <= 1e-12 * scale)  # monotone (Armijo)


# -- the dual certificate -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["structured", "explicit"])
def test_dual_value_at_is_tight_at_the_optimum(kind) -> None:
    f, ref = problem(kind, SEEDS[0], "squared_hinge")
    assert rel(f.dual_value_at(ref.w), ref.p_star) <= reference_agreement("CLARABEL")
    # and equals the dual formula at the KKT multipliers built pair by pair
    alpha = kkt_alpha(f, ref.w)
    assert rel(f.dual_value(alpha), f.dual_value_at(ref.w)) <= EXPRESSION_MATCH
    assert f.dual_value(ref.alpha) == pytest.approx(ref.d_star, rel=1e-7)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["structured", "explicit"]), seed=st.integers(0, 10**6),
       scale=st.sampled_from([1e-3, 0.1, 1.0, 10.0]), around_optimum=st.booleans())
def test_dual_value_at_is_a_lower_bound(kind, seed, scale, around_optimum) -> None:
    f, ref = problem(kind, SEEDS[0], "squared_hinge")
    rng = np.random.default_rng(seed)
    w = rng.normal(size=f.data.n_features) * scale
    if around_optimum:
        w = ref.w + w
    d = f.dual_value_at(w)
    assert signed_rel(d, ref.p_star) <= 1e-9  # weak duality
    assert signed_rel(d, f.primal_value(w)) <= 1e-12
    alpha = kkt_alpha(f, w)
    assert f.dual_infeasibility(alpha) == 0.0
    assert rel(f.dual_value(alpha), d) <= EXPRESSION_MATCH


def test_dual_value_at_is_nan_without_certificate() -> None:
    data = data_for(SEEDS[0])
    w = np.ones(data.n_features)
    for loss in ("hinge", "huber"):
        assert np.isnan(RankSVM(data, loss=loss).dual_value_at(w))


# -- refusals -----------------------------------------------------------------------------------
def test_prsvm_plus_refuses_explicit_weights() -> None:
    f = explicit(SEEDS[0], "squared_hinge")
    with pytest.raises(CapabilityError, match="it needs sorted_pairs .weights per query x"):
        solve_prsvm_plus(f)
    data = data_for(SEEDS[0])
    only_margins = RankSVM(data, loss="squared_hinge", margin=np.ones(build_pairs(data).n_pairs))
    with pytest.raises(CapabilityError, match="it needs sorted_pairs"):
        solve_prsvm_plus(only_margins)


@pytest.mark.parametrize("solve", [solve_prsvm, solve_prsvm_plus])
def test_newton_refuses_the_hinge(solve) -> None:
    f = RankSVM(data_for(SEEDS[0]), loss="hinge")
    with pytest.raises(CapabilityError, match="it needs pairwise_newton .a differentiable"):
        solve(f)


def test_unknown_engine_is_refused() -> None:
    f = RankSVM(data_for(SEEDS[0]), loss="squared_hinge")
    with pytest.raises(ValueError, match="engine must be one of"):
        solve_truncated_newton(f, engine="dense")


# -- sparse features, limits --------------------------------------------------------------------
@pytest.mark.parametrize("loss", SMOOTH)
def test_sparse_csr_same_as_dense(loss) -> None:
    dense_f = structured(SEEDS[1], loss)
    sparse_f = structured(SEEDS[1], loss, sparse=True)
    dense_data = sparse_f.data.with_features(sparse_f.X.toarray())
    dense_f = RankSVM(dense_data, C=sparse_f.C, loss=loss, query_weight=sparse_f.query_weight,
                      level_weight=lambda a, b: sparse_f.weight_table[
                          np.searchsorted(sparse_f.grades, a), np.searchsorted(sparse_f.grades, b)],
                      level_margin=lambda a, b: sparse_f.margin_table[
                          np.searchsorted(sparse_f.grades, a), np.searchsorted(sparse_f.grades, b)])
    assert sp.issparse(sparse_f.X) and not sp.issparse(dense_f.X)
    ref = solve_reference(dense_f)
    for solve in (solve_prsvm_plus, solve_prsvm):
        a, b = solve(dense_f), solve(sparse_f)
        assert abs(a.n_iter - b.n_iter) <= 1  # BLAS against CSR: rounding may add a step
        assert -NEWTON_GAP <= primal_gap(sparse_f, b.w, ref) <= NEWTON_GAP
        assert rel(sparse_f.primal_value(b.w), dense_f.primal_value(a.w)) <= 1e-12


def test_max_iter_and_callback_stop_the_run() -> None:
    f, _ = problem("structured", SEEDS[0], "squared_hinge")
    short = solve_prsvm_plus(f, max_iter=1)
    assert not short.converged and short.n_iter == 1 and "max_iter" in short.message
    seen = []
    stopped = solve_prsvm_plus(f, callback=lambda k, w, a, tr: seen.append(k) or k >= 2)
    assert stopped.message == "stopped by callback" and seen == [0, 1, 2]


# -- AUC: one query, two grades -----------------------------------------------------------------
def test_auc_case() -> None:
    rng = np.random.default_rng(5)
    n, d = 120, 5
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0.5).astype(float)
    data = RankingData.from_arrays(X, y, qid=np.zeros(n, dtype=int))
    p = int(y.sum() * (n - y.sum()))
    f = RankSVM(data, C=5.0 / p, loss="squared_hinge")
    ref = solve_reference(f)
    result = solve_prsvm_plus(f)
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    scores = X @ result.w
    sk = roc_auc_score(y, scores)
    ours = metrics.auc(y, scores, np.array([0, n]))
    assert ours.shape == (1,) and ours[0] == pytest.approx(sk, abs=1e-15)
    # and the fraction of correctly ordered pairs, counted pair by pair
    pos, neg = scores[y == 1], scores[y == 0]
    counted = np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg])
    assert sk == pytest.approx(counted, abs=1e-12)
    assert sk > 0.8  # the planted scorer is learned


# -- through the registry -----------------------------------------------------------------------
@pytest.mark.parametrize("entry", entries("prsvm"), ids=lambda e: e.name)
def test_registry_prsvm_entries_pass_quick_instance(entry) -> None:
    outcome = run_pair(entry, QUICK[0])
    assert outcome.passed, outcome.summary()
    assert abs(outcome.validation.rel_gap) <= NEWTON_GAP
    assert outcome.validation.n_iter <= MAX_NEWTON_ITER


def test_an_until_rule_tightens_the_newton_systems() -> None:
    """With an until rule the CG systems are solved to the quadratic forcing term until the
    tolerance is met: more CG work, and the step that meets the tolerance lands deeper than
    the plain run's last."""
    from cvxrank.solvers.newton import solve_prsvm_plus

    data = make_synthetic(n_queries=20, docs_per_query=15, n_features=8, noise=0.5, seed=3)
    plain = solve_prsvm_plus(RankSVM(data, C=1.0, loss="squared_hinge"))
    ruled = solve_prsvm_plus(RankSVM(data, C=1.0, loss="squared_hinge"),
                             until=lambda w, radius: False)  # never satisfied
    assert plain.converged and ruled.converged
    k = len(plain.info["cg_iterations"])
    assert sum(ruled.info["cg_iterations"][:k]) > sum(plain.info["cg_iterations"])
    gaps = (np.asarray(ruled.trace.primal) - np.asarray(ruled.trace.dual)) / np.asarray(
        ruled.trace.primal)
    first = int(np.flatnonzero(gaps <= 1e-8)[0])  # the record that met the tolerance
    assert ruled.trace.radius[first] < plain.trace.radius[-1] / 100


@pytest.mark.parametrize("gradient_radius", [True, False])
def test_gap_floor_stops_an_until_rule_only_for_the_gap_radius(gradient_radius: bool) -> None:
    """At a gap within its rounding bound more iterations cannot shrink the gap's radius,
    but a gradient's radius whose gap (half its square) is still above its own rounding
    bound shrinks: the recorder goes on for the latter, and stops for the former."""
    from cvxrank.core.trace import SolverOptions, TraceRecorder

    f = RankSVM(make_synthetic(n_queries=4, docs_per_query=6, n_features=3, seed=0), C=1.0,
                loss="squared_hinge")
    rec = TraceRecorder(f, SolverOptions(tol=1e-8, max_iter=100,
                                         until=lambda w, radius: False))
    w = np.ones(f.data.n_features)
    if gradient_radius:  # ||g|| = 1e-9 with a rounding bound of 1e-14
        g, e = 1e-9, 1e-14
        go_on = rec.record(3, w=w, values=(1.0, 1.0 - 0.5 * g * g), gap=0.5 * g * g,
                           gap_error=0.5 * (g + e) ** 2 - 0.5 * g * g, radius=g + e)
    else:  # a gap of 1e-15 below the rounding of values of size 1
        go_on = rec.record(3, w=w, values=(1.0, 1.0 - 1e-15))
        assert rec.trace.gap_error[-1] > 1e-15
    assert go_on == gradient_radius


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_newton_steps_reach_the_reference(seed, monkeypatch) -> None:
    # columns 1 to 300 apart (not badly scaled: no Jacobi) and a large C: CG needs d
    # products, so PRSVM+ forms the d x d Newton matrix; the optimum is the reference's
    # with and without the exact steps
    data = data_for(seed)
    data = data.with_features(data.X * np.array([1.0, 3.0, 10.0, 30.0, 100.0, 300.0]))
    f = RankSVM(data, C=100 * c_for(data), loss="squared_hinge")
    ref = solve_reference(f)
    result = solve_prsvm_plus(f)
    assert result.converged, result.message
    assert result.info["explicit_steps"] >= 1
    assert -NEWTON_GAP <= primal_gap(f, result.w, ref) <= NEWTON_GAP
    monkeypatch.setattr(newton, "EXPLICIT_MAX_FEATURES", 0)
    plain = solve_prsvm_plus(f)
    assert plain.converged and plain.info["explicit_steps"] == 0
    assert -NEWTON_GAP <= primal_gap(f, plain.w, ref) <= NEWTON_GAP
    assert sum(result.info["cg_iterations"]) < sum(plain.info["cg_iterations"])


@pytest.mark.parametrize("preconditioned", [False, True])
def test_conjugate_gradient_solves(preconditioned: bool) -> None:
    # the hand-written CG against numpy's solve on I + C X^T D X
    from cvxrank.solvers.newton import _conjugate_gradient

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 8)) * np.logspace(0, 3, 8)
    D = rng.uniform(0.0, 2.0, 60)
    A = np.eye(8) + 0.5 * X.T @ (D[:, None] * X)
    b = rng.normal(size=8)
    diagonal = np.diag(A).copy() if preconditioned else None
    x, products = _conjugate_gradient(lambda v: A @ v, b, 1e-12, 100, diagonal)
    assert 0 < products <= 100
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-8)
    assert _conjugate_gradient(lambda v: A @ v, np.zeros(8), 0.5, 10, None) == (
        pytest.approx(np.zeros(8)), 0)


def test_ohsumed_fold3_certifies_its_test_measures(shared_data) -> None:
    """PRSVM+ at C = 1 on OHSUMED Fold3 reaches the exact optimum and certifies every test
    measure in a few Newton steps (with the step's scores summed from CG's products it
    crawled for 15 steps at a radius of 3.4e-3, 21 MAP queries uncertified; with CG at its
    iteration limit on this ill-conditioned system, it crawled 15 steps at 1.6e-3 on a CPU
    whose rounding gave CG a poorer direction, until the exact Newton system replaced it)."""
    from cvxrank.certificates.certify import EvaluationTarget
    from cvxrank.data import read_svmlight
    from cvxrank.fitting import fit_formulation

    root = shared_data / "letor3_ohsumed" / "QueryLevelNorm" / "Fold3"
    test = read_svmlight(root / "test.txt")
    target = EvaluationTarget.of([test], k=10, convention="letor3")
    f = RankSVM(read_svmlight(root / "train.txt"), C=1.0, loss="squared_hinge")
    run = fit_formulation(f, certify=target)
    assert run.converged and run.n_iter <= 8
    assert all(c["certified"] for c in target.report(f, run)[0].values())
