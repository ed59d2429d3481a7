"""RankSVM: CVXPY expressions vs numpy evaluators vs brute force, dual capabilities, inputs."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import rel

from cvxrank.core.capabilities import CAPABILITIES, missing_capabilities
from cvxrank.data import PairSet, RankingData, build_pairs, make_synthetic
from cvxrank.formulations import IRSVM, RankSVM
from cvxrank.formulations.base import DENSE_GRAM_MAX_FEATURES
from cvxrank.methods import PAIR_LOSSES
from cvxrank.numerics.sets import Box
from cvxrank.tolerances import EXPRESSION_MATCH, FEASIBILITY, reference_agreement

LOSSES = list(PAIR_LOSSES)

#: Upper bound of the dual box as a multiple of C c (None: no upper bound).
BOX = {"hinge": 1.0, "squared_hinge": None, "huber": 2.0}


def tiny_data(seed: int = 0, *, sparse: bool = False, n_features: int = 4) -> RankingData:
    """A few small queries; about half the features are zero so that CSR is meaningful."""
    data = make_synthetic(n_queries=3, docs_per_query=(4, 7), n_features=n_features,
                          n_grades=3, seed=seed)
    rng = np.random.default_rng(seed + 100)
    X = data.X * (rng.random(data.X.shape) < 0.5)
    return data.with_features(sp.csr_matrix(X) if sparse else X)


def weights_and_margins(p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 3.0, p), rng.uniform(-0.5, 2.0, p)


def make(loss: str, *, sparse: bool = False, weighted: bool = True, C: float = 0.37,
         seed: int = 0, n_features: int = 4) -> RankSVM:
    data = tiny_data(seed, sparse=sparse, n_features=n_features)
    if not weighted:
        return RankSVM(data, C=C, loss=loss)
    c, m = weights_and_margins(build_pairs(data).n_pairs, seed)
    return RankSVM(data, C=C, loss=loss, pair_weight=c, margin=m)


def feasible_alpha(f: RankSVM, rng: np.random.Generator) -> np.ndarray:
    """A random dual-feasible point with some coordinates at the bounds."""
    p = f.pairs.n_pairs
    if BOX[f.loss.name] is not None:
        top = BOX[f.loss.name] * f.C * f.pair_weight
        alpha = rng.uniform(0.0, 1.0, p) * top
        alpha[rng.random(p) < 0.2] = 0.0
        at_top = rng.random(p) < 0.2
        alpha[at_top] = top[at_top]
        return alpha
    alpha = rng.exponential(1.0, p)
    alpha[rng.random(p) < 0.2] = 0.0
    return alpha


def brute_force_pairs(data: RankingData) -> list[tuple[int, int]]:
    """All (i, j) with y_i > y_j in the same query, by explicit loops."""
    X = data.X.toarray() if sp.issparse(data.X) else data.X
    assert X.shape[0] == data.n_documents
    out = []
    for q in range(data.n_queries):
        rows = range(data.query_ptr[q], data.query_ptr[q + 1])
        out += [(i, j) for i in rows for j in rows if data.y[i] > data.y[j]]
    return out


def explicit_differences(f: RankSVM) -> np.ndarray:
    """Rows x_i - x_j in the formulation's pair order, formed explicitly (p x d)."""
    X = f.data.X.toarray() if sp.issparse(f.data.X) else f.data.X
    return np.array([X[i] - X[j] for i, j in zip(f.pairs.upper, f.pairs.lower, strict=True)])


# -- CVXPY expressions vs numpy evaluators (no solve) -----------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_cvxpy_objectives_match_numpy_evaluators(loss: str, sparse: bool, weighted: bool) -> None:
    f = make(loss, sparse=sparse, weighted=weighted)
    rng = np.random.default_rng(1)
    primal, dual = f.primal(), f.dual()
    for C in (0.37, 4.2):  # the second value checks that set_params reaches both problems
        f.set_params(C=C)
        for _ in range(3):
            w = rng.standard_normal(f.data.n_features)
            slack = f.slacks(w)
            assert (slack > 0).any() and (slack == 0).any(), "both hinge branches must be hit"
            f.w_variable.value = w
            f.score_variable.value = f.data.X @ w
            assert rel(primal.objective.value, f.primal_value(w)) <= EXPRESSION_MATCH
            assert max(float(np.max(c.violation())) for c in primal.constraints) <= FEASIBILITY

            alpha = feasible_alpha(f, rng)
            f.alpha_variable.value = alpha
            f.document_variable.value = f.pairs.A.T @ alpha
            assert rel(dual.objective.value, f.dual_value(alpha)) <= EXPRESSION_MATCH
            assert max(float(np.max(c.violation())) for c in dual.constraints) <= FEASIBILITY
            assert f.dual_infeasibility(alpha) == 0.0


@pytest.mark.parametrize("loss", LOSSES)
def test_dual_set_is_the_papers_box_and_follows_C(loss: str) -> None:
    # the bounds written out here from the class docstring, independently of cvxrank.numerics.sets:
    # [0, C c] (hinge), [0, inf) (squared hinge), [0, 2 C c] (Huber)
    f = make(loss)
    rng = np.random.default_rng(2)
    assert isinstance(f.dual_set, Box)
    for C in (0.37, 4.2):
        f.set_params(C=C)
        upper = np.inf if BOX[loss] is None else BOX[loss] * C * f.pair_weight
        scale = C * f.pair_weight
        for _ in range(5):
            alpha = rng.uniform(-3.0, 3.0, f.n_dual) * scale
            expected = np.clip(alpha, 0.0, upper)
            np.testing.assert_array_equal(f.project_dual(alpha), expected)
            violation = max(0.0, float(-alpha.min()), float((alpha - upper).max()))
            assert f.dual_infeasibility(alpha) == violation
            assert f.dual_infeasibility(expected) == 0.0
            assert violation > 0
    # above C c only: infeasible for the hinge, feasible for the squared hinge, and for the
    # Huber loss infeasible exactly where it exceeds 2 C c
    alpha = f.C * f.pair_weight + rng.uniform(0.0, 2.0, f.pairs.n_pairs) * f.C * f.pair_weight
    box = BOX[loss]
    expected = 0.0 if box is None else max(0.0, float((alpha - box * f.C * f.pair_weight).max()))
    assert f.dual_infeasibility(alpha) == pytest.approx(expected, rel=EXPRESSION_MATCH)


@pytest.mark.parametrize("loss", LOSSES)
def test_dual_constraints_are_the_dual_sets(loss: str) -> None:
    # the CVXPY dual's constraint violation at alpha is the set's (plus u = A^T alpha)
    f = make(loss)
    rng = np.random.default_rng(3)
    dual = f.dual()
    for C in (0.37, 4.2):
        f.set_params(C=C)
        alpha = rng.uniform(-2.0, 2.0, f.pairs.n_pairs) * f.C * f.pair_weight * 2
        f.alpha_variable.value = alpha
        f.document_variable.value = f.pairs.A.T @ alpha
        violation = max(float(np.max(c.violation())) for c in dual.constraints)
        assert f.dual_infeasibility(alpha) == pytest.approx(violation, rel=EXPRESSION_MATCH)


# -- numpy evaluators vs brute force ----------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_evaluators_match_brute_force_over_pairs(loss: str, sparse: bool) -> None:
    f = make(loss, sparse=sparse, seed=3)
    # the pairs themselves, against explicit loops
    assert sorted(brute_force_pairs(f.data)) == sorted(
        zip(f.pairs.upper.tolist(), f.pairs.lower.tolist(), strict=True))
    D = explicit_differences(f)
    c, m, C = f.pair_weight, f.margin, f.C
    rng = np.random.default_rng(4)
    for _ in range(5):
        w = rng.standard_normal(f.data.n_features)
        loss_sum = 0.0
        for k in range(len(D)):
            r = m[k] - float(D[k] @ w)
            t = max(0.0, r)
            if loss == "hinge":
                loss_sum += c[k] * t
            elif loss == "squared_hinge" or r <= 1.0:
                loss_sum += c[k] * t * t
            else:  # Huber, linear part: 2r - 1 (Chapelle & Keerthi Sect. 4.1)
                loss_sum += c[k] * (2.0 * r - 1.0)
        expected = 0.5 * float(w @ w) + C * loss_sum
        assert rel(f.primal_value(w), expected) <= EXPRESSION_MATCH
        np.testing.assert_allclose(f.margins(w), [float(d @ w) for d in D],
                                   rtol=EXPRESSION_MATCH, atol=EXPRESSION_MATCH)

        alpha = feasible_alpha(f, rng)
        w_alpha = np.zeros(f.data.n_features)
        for k in range(len(D)):
            w_alpha += alpha[k] * D[k]
        expected = float(m @ alpha) - 0.5 * float(w_alpha @ w_alpha)
        if loss != "hinge":
            expected -= sum(alpha[k] ** 2 / (4 * C * c[k]) for k in range(len(D)))
        assert rel(f.dual_value(alpha), expected) <= EXPRESSION_MATCH
        np.testing.assert_allclose(f.primal_from_dual(alpha), w_alpha,
                                   rtol=EXPRESSION_MATCH, atol=EXPRESSION_MATCH)


def test_dense_and_csr_features_give_the_same_values() -> None:
    dense, csr = make("squared_hinge", sparse=False), make("squared_hinge", sparse=True)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(dense.data.n_features)
    alpha = feasible_alpha(dense, rng)
    assert rel(csr.primal_value(w), dense.primal_value(w)) <= EXPRESSION_MATCH
    assert rel(csr.dual_value(alpha), dense.dual_value(alpha)) <= EXPRESSION_MATCH
    assert dense.cache_key() == make("squared_hinge").cache_key()
    assert dense.cache_key() != make("hinge").cache_key()
    assert dense.cache_key() != make("squared_hinge", weighted=False).cache_key()
    # each of weights, margins and the pair set enters the key
    data, c, m = dense.data, dense.pair_weight, dense.margin
    keys = {
        RankSVM(data, C=0.37, loss="squared_hinge", pair_weight=c, margin=m).cache_key(),
        RankSVM(data, C=0.37, loss="squared_hinge", pair_weight=c, margin=m + 1).cache_key(),
        RankSVM(data, C=0.37, loss="squared_hinge", pair_weight=c + 1, margin=m).cache_key(),
        RankSVM(data, C=0.5, loss="squared_hinge", pair_weight=c, margin=m).cache_key(),
    }
    assert dense.cache_key() in keys and len(keys) == 4
    half = build_pairs(data)
    half = PairSet(half.upper[::2], half.lower[::2], half.query[::2], half.delta[::2],
                   half.n_documents, half.pairs_per_query)
    assert RankSVM(data, pairs=half).cache_key() != RankSVM(data).cache_key()


# -- capabilities of the dual solvers ---------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_neg_dual_grad_matches_exact_central_differences(loss: str, sparse: bool) -> None:
    # -D is a quadratic, so (q(a + e_k) - q(a - e_k)) / 2 is its k-th partial derivative
    # exactly; only rounding separates the two sides.
    f = make(loss, sparse=sparse, seed=6)
    rng = np.random.default_rng(7)
    alpha = feasible_alpha(f, rng)
    grad = f.neg_dual_grad(alpha)
    eye = np.eye(f.pairs.n_pairs)
    numeric = np.array([(f.dual_value(alpha - e) - f.dual_value(alpha + e)) / 2 for e in eye])
    scale = max(1.0, float(np.abs(numeric).max()))
    assert np.abs(grad - numeric).max() / scale <= EXPRESSION_MATCH
    assert np.abs(grad).max() > 1e3 * EXPRESSION_MATCH * scale  # a non-trivial gradient


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "sparse,n_features",
    [(False, 4), (True, DENSE_GRAM_MAX_FEATURES + 88)],  # exact d x d path and ARPACK path
)
def test_lipschitz_and_strong_convexity_bracket_the_explicit_hessian(
    loss: str, weighted: bool, sparse: bool, n_features: int
) -> None:
    f = make(loss, sparse=sparse, weighted=weighted, n_features=n_features, seed=8)
    D = explicit_differences(f)
    gram_top = np.linalg.eigvalsh(D @ D.T)[-1]
    for C in (0.37, 0.05):
        f.set_params(C=C)
        ridge = 1.0 / (2 * C * f.pair_weight) if loss != "hinge" else np.zeros(len(D))
        eig = np.linalg.eigvalsh(D @ D.T + np.diag(ridge))
        lipschitz = f.dual_lipschitz()
        assert eig[-1] <= lipschitz
        # the documented constant ||X^T A^T||^2 + max(ridge), which is lambda_max of the
        # Hessian itself when the ridge is a multiple of the identity (unit weights)
        assert lipschitz <= 1.01 * (gram_top + ridge.max())
        if not weighted:
            assert lipschitz <= 1.01 * eig[-1]
        mu = f.dual_strong_convexity()
        assert 0.0 <= mu <= eig[0] + EXPRESSION_MATCH * eig[-1]
        assert mu == pytest.approx(ridge.min() if loss != "hinge" else 0.0,
                                  rel=EXPRESSION_MATCH)


@pytest.mark.parametrize("loss", LOSSES)
def test_dual_start_is_feasible_and_margins_follow_w(loss: str) -> None:
    f = make(loss)
    start = f.dual_start()
    assert start.shape == (f.pairs.n_pairs,)
    assert f.dual_infeasibility(start) == 0.0
    assert f.dual_value(start) == 0.0
    assert f.primal_value(np.zeros(f.data.n_features)) == pytest.approx(
        f.C * float(f.pair_weight @ {"hinge": np.maximum(f.margin, 0),
                                     "squared_hinge": np.maximum(f.margin, 0) ** 2,
                                     "huber": np.where(f.margin > 1, 2 * f.margin - 1,
                                                       np.maximum(f.margin, 0) ** 2)}[loss]),
        rel=EXPRESSION_MATCH)


# -- DPP: changing C re-solves without recompiling --------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("which", ["primal", "dual"])
def test_changing_C_reuses_the_compiled_problem(loss: str, which: str) -> None:
    data = make_synthetic(n_queries=5, docs_per_query=10, n_features=5, seed=10)
    f = RankSVM(data, C=0.1, loss=loss)
    problem = getattr(f, which)()
    assert problem.is_dcp(dpp=True)
    problem.solve(solver="CLARABEL")
    first = problem.value
    # cvxpy keeps the parametrized program of a DPP problem in Problem._cache.param_prog; a
    # recompilation (cache invalidation, or a non-DPP problem) would replace or drop it.
    compiled = problem._cache.param_prog
    assert compiled is not None

    f.set_params(C=2.0)
    problem.solve(solver="CLARABEL")
    assert problem._cache.param_prog is compiled
    assert problem.status == cp.OPTIMAL
    tol = reference_agreement("CLARABEL")
    assert rel(problem.value, first) > 1e3 * tol

    fresh = getattr(RankSVM(data, C=2.0, loss=loss), which)()
    fresh.solve(solver="CLARABEL")
    assert rel(problem.value, fresh.value) <= tol


# -- capabilities ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("structured", [False, True])
def test_capabilities_follow_loss_and_weights(loss: str, structured: bool) -> None:
    f = make(loss, weighted=not structured)
    assert f.structured is structured
    expected = {"dual_gradient", "pair_samples", "loss_subgradient"}
    expected |= ({"pairwise_newton", "accurate_gradient"} if loss != "hinge"
                 else {"cut_bounds", "margin_band"})
    expected |= {"primal_certificate"} if loss == "squared_hinge" else set()
    expected |= {"sorted_pairs", "query_blocks"} if structured else set()
    assert f.capabilities == expected
    assert missing_capabilities(f, sorted(f.capabilities)) == []
    assert missing_capabilities(f, ["kernel_matrix", "separation_oracle"]) == [
        "kernel_matrix", "separation_oracle"]
    irsvm = IRSVM(f.data, loss=loss, tau=lambda hi, lo: hi - lo)
    assert irsvm.capabilities == expected | {"sorted_pairs", "query_blocks"}
    assert set(f.capabilities) <= set(CAPABILITIES)


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("C", [0.0, -1.0])
def test_nonpositive_C_is_rejected(C: float) -> None:
    data = tiny_data()
    with pytest.raises(ValueError, match=r"C must be in \[1e-12, 1e\+12\]"):
        RankSVM(data, C=C)
    f = RankSVM(data, C=0.5)
    with pytest.raises(ValueError, match=r"C must be in \[1e-12, 1e\+12\]"):
        f.set_params(C=C)
    assert f.C == 0.5


@pytest.mark.parametrize("C", [np.inf, np.nan])
def test_nonfinite_C_is_rejected(C: float) -> None:
    with pytest.raises(ValueError, match="C must be"):
        RankSVM(tiny_data(), C=C)


def test_unknown_parameter_and_loss_are_rejected() -> None:
    data = tiny_data()
    with pytest.raises(ValueError, match="loss"):
        RankSVM(data, loss="logistic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no parameter"):
        RankSVM(data).set_params(lam=1.0)


@pytest.mark.parametrize(
    "field,make_bad,match",
    [
        ("pair_weight", lambda p: np.ones(p - 1), "shape"),
        ("pair_weight", lambda p: np.ones((p, 1)), "shape"),
        ("pair_weight", lambda p: np.r_[np.ones(p - 1), 0.0], "> 0"),
        ("pair_weight", lambda p: np.r_[-1.0, np.ones(p - 1)], "> 0"),
        ("pair_weight", lambda p: np.r_[np.ones(p - 1), np.nan], "finite"),
        ("margin", lambda p: np.ones(p + 1), "shape"),
        ("margin", lambda p: np.r_[np.ones(p - 1), np.inf], "finite"),
        ("margin", lambda p: np.r_[np.nan, np.ones(p - 1)], "finite"),
    ],
)
def test_bad_weights_and_margins_are_rejected(field: str, make_bad, match: str) -> None:
    data = tiny_data()
    p = build_pairs(data).n_pairs
    with pytest.raises(ValueError, match=f"{field}.*{match}"):
        RankSVM(data, **{field: make_bad(p)})


def test_data_without_pairs_and_foreign_pairs_are_rejected() -> None:
    rng = np.random.default_rng(11)
    flat = RankingData.from_arrays(rng.standard_normal((6, 3)), np.r_[1, 1, 1, 0, 0, 0],
                                   group=[3, 3])
    with pytest.raises(ValueError, match="no preference pairs"):
        RankSVM(flat)
    other = make_synthetic(n_queries=2, docs_per_query=9, n_features=4, seed=12)
    with pytest.raises(ValueError, match="documents"):
        RankSVM(tiny_data(), pairs=build_pairs(other))
