"""The pairwise-loss engines of PRSVM (explicit pairs) and PRSVM+ (sorting, no pairs).

Every quantity is checked against a brute-force double loop over all pairs (i, j) with
y_i > y_j in the same query, written here in plain Python from the definitions (Chapelle &
Keerthi 2010, Sect. 4.1 for the Huber loss), and against finite differences away from the
kinks. At ties (residuals exactly 0, or exactly 1 for the Huber loss) the value and the
gradient of the smooth losses are unique; the hinge subgradient and the generalized Hessian
are not, and are checked to be valid choices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from toolbox import rel

from cvxrank.compiled import aot
from cvxrank.data import PairSet, build_pairs, count_pairs, make_synthetic
from cvxrank.errors import PairLimitError
from cvxrank.formulations import sorted_kernels
from cvxrank.formulations.pair_losses import ExplicitPairLoss, SortedPairLoss
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.methods import PAIR_LOSSES
from cvxrank.tolerances import EXPRESSION_MATCH

LOSSES = PAIR_LOSSES
SMOOTH = ("squared_hinge", "huber")


# -- the definitions, written independently of cvxrank ------------------------------------------
def ell(loss: str, r: float) -> float:
    """Pair loss of the residual r = m - (s_i - s_j)."""
    if loss == "hinge":
        return max(0.0, r)
    if loss == "squared_hinge":
        return max(0.0, r) ** 2
    return max(0.0, r) ** 2 - max(0.0, r - 1.0) ** 2


def ell_slope(loss: str, r: float) -> float:
    """d ell / d r (the right choice 0 at the hinge's kink r = 0)."""
    if loss == "hinge":
        return 1.0 if r > 0 else 0.0
    if loss == "squared_hinge":
        return 2.0 * max(0.0, r)
    return 2.0 * min(max(0.0, r), 1.0)


def ell_curvature(loss: str, r: float, *, inclusive: bool = False) -> float:
    """d^2 ell / d r^2 off the kinks; at a kink 0 (``inclusive``: 2, the other valid value)."""
    if loss == "squared_hinge":
        return 2.0 if (r >= 0 if inclusive else r > 0) else 0.0
    if loss == "huber":
        return 2.0 if ((0 <= r <= 1) if inclusive else (0 < r < 1)) else 0.0
    return 0.0


def huber_ck(t: float) -> float:
    """Chapelle & Keerthi's Huber loss of the score difference t (unit margin), Sect. 4.1."""
    if t >= 1:
        return 0.0
    if t >= 0:
        return (1.0 - t) ** 2
    return 1.0 - 2.0 * t


def brute_pairs(query, level) -> list[tuple[int, int]]:
    """All (i, j), level_i > level_j, same query, by a double loop (any document order)."""
    n = len(query)
    return [(i, j) for i in range(n) for j in range(n)
            if query[i] == query[j] and level[i] > level[j]]


def brute_force(pairs, weight, margin, s, loss):
    """Value, gradient, Hessian (off kinks), inclusive Hessian and margin-hinge sum.

    ``weight[k]`` and ``margin[k]`` belong to ``pairs[k]``.
    """
    n = len(s)
    value, mh = 0.0, 0.0
    grad = np.zeros(n)
    hess = np.zeros((n, n))
    hess_incl = np.zeros((n, n))
    residuals = []
    for (i, j), c, m in zip(pairs, weight, margin, strict=True):
        r = m - (s[i] - s[j])
        residuals.append(r)
        value += c * ell(loss, r)
        mh += c * m * max(0.0, r)
        g = c * ell_slope(loss, r)
        grad[i] -= g
        grad[j] += g
        for out, incl in ((hess, False), (hess_incl, True)):
            h = c * ell_curvature(loss, r, inclusive=incl)
            out[i, i] += h
            out[j, j] += h
            out[i, j] -= h
            out[j, i] -= h
    return value, grad, hess, hess_incl, mh, np.array(residuals)


def operator(pairs, n) -> sp.csr_matrix:
    """The p x n difference operator, built entry by entry."""
    A = sp.lil_matrix((len(pairs), n))
    for k, (i, j) in enumerate(pairs):
        A[k, i] = 1.0
        A[k, j] = -1.0
    return A.tocsr()


def dense_hessian(hessp, n) -> np.ndarray:
    return np.column_stack([hessp(e) for e in np.eye(n)])


def directional_derivative(pairs, weight, margin, s, delta) -> float:
    """L'(s; delta) of the hinge loss (one-sided, exact)."""
    out = 0.0
    for (i, j), c, m in zip(pairs, weight, margin, strict=True):
        r = m - (s[i] - s[j])
        dr = -(delta[i] - delta[j])
        if r > 0:
            out += c * dr
        elif r == 0:
            out += c * max(0.0, dr)
    return out


def structured_weights(pairs, query, level, qw, wt, mt):
    weight = [qw[query[i]] * wt[level[i], level[j]] for i, j in pairs]
    margin = [mt[level[i], level[j]] for i, j in pairs]
    return np.array(weight), np.array(margin)


def check_engine_at_ties(ev, pairs, weight, margin, s, loss, rng) -> None:
    """Value and smooth-loss gradient exact; hinge subgradient and Hessian valid choices."""
    n = len(s)
    value, grad, hess, hess_incl, mh, _ = brute_force(pairs, weight, margin, s, loss)
    assert rel(ev.value, value) <= EXPRESSION_MATCH
    if loss == "hinge":
        assert ev.hessp is None and np.isnan(ev.margin_hinge)
        # ev.grad is a subgradient: g . delta <= L'(s; delta) for every direction delta
        scale = max(1.0, float(np.abs(ev.grad).sum()))
        for delta in [*np.eye(n), *(-np.eye(n)), *rng.normal(size=(20, n))]:
            bound = directional_derivative(pairs, weight, margin, s, delta)
            assert ev.grad @ delta <= bound + EXPRESSION_MATCH * scale
        return
    assert np.allclose(ev.grad, grad, rtol=0, atol=EXPRESSION_MATCH * max(1.0, abs(value)))
    if loss == "squared_hinge":
        assert rel(ev.margin_hinge, mh) <= EXPRESSION_MATCH
    else:
        assert np.isnan(ev.margin_hinge)
    # generalized Hessian: between the one with every kink pair inactive and active
    H = dense_hessian(ev.hessp, n)
    assert np.allclose(H, H.T, atol=1e-12)
    tol = 1e-10 * max(1.0, float(np.abs(hess_incl).max()))
    assert np.linalg.eigvalsh(H - hess).min() >= -tol
    assert np.linalg.eigvalsh(hess_incl - H).min() >= -tol


# -- hypothesis: random small instances, both engines vs brute force ----------------------------
GRID = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5)  # scores on this grid make residuals exactly 0 or 1


@st.composite
def instances(draw, ties: bool):
    n = draw(st.integers(2, 12))
    n_queries = draw(st.integers(1, 3))
    n_levels = draw(st.integers(2, 4))
    query = np.array(draw(st.lists(st.integers(0, n_queries - 1), min_size=n, max_size=n)))
    level = np.array(draw(st.lists(st.integers(0, n_levels - 1), min_size=n, max_size=n)))
    if ties:
        s = np.array(draw(st.lists(st.sampled_from(GRID), min_size=n, max_size=n)))
    else:
        s = np.array(draw(st.lists(st.floats(-3, 3), min_size=n, max_size=n)))
    qw = np.array(draw(st.lists(st.sampled_from([0.25, 1.0, 3.0]), min_size=n_queries,
                                max_size=n_queries)))
    # few distinct values, so that lower grades of one upper grade both share and split blocks
    wt = np.array(draw(st.lists(st.sampled_from([0.5, 2.0]), min_size=n_levels ** 2,
                                max_size=n_levels ** 2))).reshape(n_levels, n_levels)
    mt = np.array(draw(st.lists(st.sampled_from([-0.5, 0.0, 0.5, 1.0, 2.0]),
                                min_size=n_levels ** 2,
                                max_size=n_levels ** 2))).reshape(n_levels, n_levels)
    return query, level, s, qw, wt, mt


@settings(max_examples=60, deadline=None)
@given(inst=instances(ties=True), loss=st.sampled_from(LOSSES))
def test_engines_match_brute_force_with_ties(inst, loss) -> None:
    query, level, s, qw, wt, mt = inst
    pairs = brute_pairs(query, level)
    rng = np.random.default_rng(0)
    sorted_engine = SortedPairLoss(query, level, qw, wt, mt, loss)
    if not pairs:
        ev = sorted_engine.evaluate(s)
        assert ev.value == 0.0 and not np.any(ev.grad)
        return
    weight, margin = structured_weights(pairs, query, level, qw, wt, mt)
    explicit = ExplicitPairLoss(operator(pairs, len(s)), weight, margin, loss)
    for engine in (sorted_engine, explicit):
        check_engine_at_ties(engine.evaluate(s), pairs, weight, margin, s, loss, rng)


@settings(max_examples=60, deadline=None)
@given(inst=instances(ties=False), loss=st.sampled_from(LOSSES))
def test_engines_match_brute_force_off_kinks(inst, loss) -> None:
    query, level, s, qw, wt, mt = inst
    pairs = brute_pairs(query, level)
    if not pairs:
        return
    weight, margin = structured_weights(pairs, query, level, qw, wt, mt)
    value, grad, hess, _, mh, residuals = brute_force(pairs, weight, margin, s, loss)
    assume(np.abs(residuals).min() > 1e-6 and np.abs(residuals - 1.0).min() > 1e-6)
    engines = (SortedPairLoss(query, level, qw, wt, mt, loss),
               ExplicitPairLoss(operator(pairs, len(s)), weight, margin, loss))
    for engine in engines:
        ev = engine.evaluate(s)
        assert rel(ev.value, value) <= EXPRESSION_MATCH
        assert np.allclose(ev.grad, grad, rtol=0, atol=EXPRESSION_MATCH * max(1.0, value))
        if loss != "hinge":
            # off the kinks (probability 1 for these scores) the Hessian is unique
            H = dense_hessian(ev.hessp, len(s))
            assert np.allclose(H, hess, rtol=0, atol=1e-10)
        if loss == "squared_hinge":
            assert rel(ev.margin_hinge, mh) <= EXPRESSION_MATCH


# -- deterministic cases: many queries, unsorted order, explicit weights ------------------------
def random_tables(rng, n_levels):
    """Tables where, for each upper level, some lower levels share (weight, margin)."""
    wt = rng.choice([0.5, 2.0], size=(n_levels, n_levels))
    mt = rng.choice([0.5, 1.0], size=(n_levels, n_levels))
    return wt, mt


@pytest.mark.parametrize("loss", LOSSES)
def test_many_queries_unsorted_order(loss) -> None:
    rng = np.random.default_rng(3)
    n, n_queries, n_levels = 90, 12, 4
    query = rng.integers(0, n_queries, n)  # interleaved, not contiguous
    level = rng.integers(0, n_levels, n)
    qw = rng.uniform(0.2, 3.0, n_queries)
    wt, mt = random_tables(rng, n_levels)
    s = rng.normal(size=n)
    pairs = brute_pairs(query, level)
    weight, margin = structured_weights(pairs, query, level, qw, wt, mt)
    value, grad, hess, _, mh, _ = brute_force(pairs, weight, margin, s, loss)
    engine = SortedPairLoss(query, level, qw, wt, mt, loss)
    ev = engine.evaluate(s)
    assert rel(ev.value, value) <= EXPRESSION_MATCH
    assert np.allclose(ev.grad, grad, rtol=0, atol=1e-10)
    if loss != "hinge":
        assert np.allclose(dense_hessian(ev.hessp, n), hess, rtol=0, atol=1e-10)
    # the same documents in contiguous (query, grade) order: a permutation of everything
    perm = np.lexsort((level, query))
    ev_perm = SortedPairLoss(query[perm], level[perm], qw, wt, mt, loss).evaluate(s[perm])
    assert rel(ev_perm.value, ev.value) <= EXPRESSION_MATCH
    assert np.allclose(ev_perm.grad, ev.grad[perm], rtol=0, atol=1e-10)
    # blocks split: some (query, upper level) has lower levels of different weights
    n_blocks = engine.blocks.ptr.size - 1
    merged = SortedPairLoss(query, level, qw, np.ones_like(wt), np.ones_like(mt), loss)
    assert n_blocks > merged.blocks.ptr.size - 1


@pytest.mark.parametrize("loss", LOSSES)
def test_explicit_engine_per_pair_weights_and_margins(loss) -> None:
    rng = np.random.default_rng(4)
    data = make_synthetic(n_queries=6, docs_per_query=(4, 10), n_features=3, n_grades=3, seed=4)
    pairs = brute_pairs(data.query_index, data.y)
    order = build_pairs(data)
    assert sorted(pairs) == sorted(zip(order.upper.tolist(), order.lower.tolist(), strict=True))
    p = len(order.upper)
    c, m = rng.uniform(0.2, 3.0, p), rng.uniform(-0.5, 2.0, p)
    f = RankSVM(data, C=0.3, loss=loss, pair_weight=c, margin=m)
    w = rng.normal(size=data.n_features)
    s = data.X @ w
    value, grad, hess, _, mh, _ = brute_force(
        list(zip(order.upper, order.lower, strict=True)), c, m, s, loss)
    ev = f.evaluate_loss(w)
    assert rel(ev.value, value) <= EXPRESSION_MATCH
    assert np.allclose(ev.grad, grad, rtol=0, atol=1e-10)
    if loss != "hinge":
        assert np.allclose(dense_hessian(ev.hessp, data.n_documents), hess, atol=1e-10)
    if loss == "squared_hinge":
        assert rel(ev.margin_hinge, mh) <= EXPRESSION_MATCH
    assert rel(f.primal_value(w), 0.5 * w @ w + 0.3 * value) <= EXPRESSION_MATCH
    with pytest.raises(ValueError, match="explicit per-pair"):
        f.loss_engine("sorted")
    with pytest.raises(ValueError, match="loss engine"):
        f.loss_engine("quick")


def structured_formulation(loss: str, seed: int = 5, **kw) -> RankSVM:
    data = make_synthetic(n_queries=7, docs_per_query=(5, 12), n_features=4, n_grades=4,
                          seed=seed, **kw)
    rng = np.random.default_rng(seed)
    g = np.unique(data.y)
    lw = {(a, b): float(rng.choice([0.5, 2.0])) for a in g for b in g if a > b}
    lm = {(a, b): float(rng.choice([0.5, 1.0, 1.5])) for a in g for b in g if a > b}
    qw = rng.uniform(0.2, 3.0, data.n_queries)
    return RankSVM(data, C=0.2, loss=loss, query_weight=qw, level_weight=lw, level_margin=lm)


@pytest.mark.parametrize("loss", LOSSES)
def test_ranksvm_structured_weights_both_engines(loss) -> None:
    f = structured_formulation(loss)
    data = f.data
    # the per-pair weights and margins RankSVM derives, by loops over the tables' definition
    lw = {(a, b): f.weight_table[ia, ib] for ia, a in enumerate(f.grades)
          for ib, b in enumerate(f.grades)}
    pairs = brute_pairs(data.query_index, data.y)
    weight = np.array([f.query_weight[data.query_index[i]] * lw[data.y[i], data.y[j]]
                       for i, j in pairs])
    margin = np.array([f.margin_table[np.searchsorted(f.grades, data.y[i]),
                                      np.searchsorted(f.grades, data.y[j])] for i, j in pairs])
    key = {(i, j): k for k, (i, j) in enumerate(zip(f.pairs.upper, f.pairs.lower, strict=True))}
    idx = [key[pair] for pair in pairs]
    assert np.array_equal(f.pair_weight[idx], weight)
    assert np.array_equal(f.margin[idx], margin)
    rng = np.random.default_rng(6)
    w = rng.normal(size=data.n_features)
    value, grad, hess, _, mh, _ = brute_force(pairs, weight, margin, data.X @ w, loss)
    for engine in ("sorted", "pairs", "auto"):
        ev = f.evaluate_loss(w, engine)
        assert rel(ev.value, value) <= EXPRESSION_MATCH
        assert np.allclose(ev.grad, grad, rtol=0, atol=1e-10)
        if loss != "hinge":
            assert np.allclose(dense_hessian(ev.hessp, data.n_documents), hess, atol=1e-10)
    assert isinstance(f.loss_engine(), SortedPairLoss)
    assert isinstance(f.loss_engine("pairs"), ExplicitPairLoss)
    assert f.loss_engine("sorted") is f.loss_engine("sorted")  # cached


def test_huber_is_chapelle_keerthi_with_unit_margins() -> None:
    rng = np.random.default_rng(7)
    data = make_synthetic(n_queries=4, docs_per_query=(4, 9), n_features=3, seed=7)
    f = RankSVM(data, loss="huber")
    pairs = brute_pairs(data.query_index, data.y)
    for w in (rng.normal(size=3), 3 * rng.normal(size=3), np.zeros(3)):
        s = data.X @ w
        expected = sum(huber_ck(s[i] - s[j]) for i, j in pairs)
        for engine in ("sorted", "pairs"):
            assert rel(f.evaluate_loss(w, engine).value, expected) <= EXPRESSION_MATCH
    # the kinks of C&K's definition: t = 1 (r = 0) and t = 0 (r = 1), t < 0 linear
    query, level = np.zeros(2, int), np.array([1, 0])
    for t in (1.0, 0.0, 0.5, -2.0, 3.0):
        ev = SortedPairLoss(query, level, [1.0], np.ones((2, 2)), np.ones((2, 2)),
                            "huber").evaluate(np.array([t, 0.0]))
        assert ev.value == huber_ck(t)


# -- finite differences -------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("engine", ["sorted", "pairs"])
def test_gradient_and_hessian_vs_finite_differences(loss, engine) -> None:
    f = structured_formulation(loss, seed=8)
    rng = np.random.default_rng(8)
    w = rng.normal(size=f.data.n_features)
    s = f.X @ w
    eng = f.loss_engine(engine)
    h = 1e-6
    r = f.margin - f.pairs.A @ s
    kinks = (0.0, 1.0) if loss == "huber" else (0.0,)
    assert min(np.abs(r - k).min() for k in kinks) > 1e-4  # away from the kinks
    ev = eng.evaluate(s)
    fd = np.array([(eng.evaluate(s + h * e).value - eng.evaluate(s - h * e).value) / (2 * h)
                   for e in np.eye(s.size)])
    assert np.allclose(ev.grad, fd, rtol=1e-6, atol=1e-6)
    assert np.any(ev.grad != 0)
    if loss == "hinge":
        return
    for _ in range(3):
        delta = rng.normal(size=s.size)
        fd_h = (eng.evaluate(s + h * delta).grad - eng.evaluate(s - h * delta).grad) / (2 * h)
        assert np.allclose(ev.hessp(delta), fd_h, rtol=1e-6, atol=1e-6)
        # the explicit A^T D A product of the paper's Sect. 3
        A = f.pairs.A
        curvature = 2.0 * f.pair_weight * ((r > 0) & ((r < 1) if loss == "huber" else True))
        expected = A.T @ (curvature * (A @ delta))
        assert np.allclose(ev.hessp(delta), expected, rtol=1e-12, atol=1e-12)


# -- no pairs are built; cost O(E) --------------------------------------------------------------
def test_sorted_engine_never_builds_pairs() -> None:
    data = make_synthetic(n_queries=2, docs_per_query=1500, n_features=3, n_grades=3, seed=9)
    p = int(count_pairs(data).sum())
    limit = 1000
    assert p > 1000 * limit
    with pytest.raises(PairLimitError):
        build_pairs(data, max_pairs=limit)
    f = RankSVM(data, C=1e-4, loss="squared_hinge", max_pairs=limit)
    assert f.n_dual == p
    w = np.random.default_rng(9).normal(size=3)
    ev = f.evaluate_loss(w, "sorted")
    # brute force with numpy broadcasting, query by query (pairs never stored whole)
    s = data.X @ w
    value, grad = 0.0, np.zeros(data.n_documents)
    for q in range(data.n_queries):
        rows = np.arange(data.query_ptr[q], data.query_ptr[q + 1])
        y, sq = data.y[rows], s[rows]
        better = y[:, None] > y[None, :]
        r = np.where(better, 1.0 - (sq[:, None] - sq[None, :]), 0.0)
        pos = np.maximum(r, 0.0)
        value += float((pos * pos).sum())
        grad[rows] += -2.0 * pos.sum(axis=1) + 2.0 * pos.sum(axis=0)
    assert rel(ev.value, value) <= EXPRESSION_MATCH
    assert np.allclose(ev.grad, grad, rtol=1e-10, atol=1e-9)
    assert rel(f.primal_value(w), 0.5 * w @ w + 1e-4 * value) <= EXPRESSION_MATCH
    assert f.dual_value_at(w) <= f.primal_value(w)
    with pytest.raises(PairLimitError):
        f.evaluate_loss(w, "pairs")
    with pytest.raises(PairLimitError):
        _ = f.pairs
    assert f.loss_engine("sorted").n_entries <= 3 * data.n_documents


@pytest.mark.parametrize("loss", LOSSES)
def test_number_of_entries_is_at_most_grades_times_documents(loss) -> None:
    rng = np.random.default_rng(10)
    for n_grades in (2, 3, 5):
        data = make_synthetic(n_queries=10, docs_per_query=(5, 30), n_features=2,
                              n_grades=n_grades, seed=n_grades)
        R = np.unique(data.y).size
        f = RankSVM(data, loss=loss)
        # constant tables: one block per (query, upper level) with every lower document
        expected = 0
        for q in range(data.n_queries):
            y = data.y[data.query_ptr[q]:data.query_ptr[q + 1]]
            for g in np.unique(y)[1:]:
                expected += int(np.sum(y <= g))
        copies = 2 if loss == "huber" else 1  # Huber: a second, negative block per block
        assert f.loss_engine("sorted").n_entries == copies * expected
        assert f.loss_engine("sorted").n_entries <= copies * R * data.n_documents
        # random tables split blocks, still at most R entries per document
        wt, mt = random_tables(rng, R)
        split = SortedPairLoss(data.query_index, np.searchsorted(np.unique(data.y), data.y),
                               np.ones(data.n_queries), wt, mt, loss)
        assert split.n_entries <= copies * R * data.n_documents


def test_many_blocks_use_the_wide_block_key() -> None:
    # more than 2**16 blocks: the block ids no longer fit the uint16 radix key
    n_queries = 2**16 + 10
    rng = np.random.default_rng(11)
    query = np.repeat(np.arange(n_queries), 2)
    level = np.tile([1, 0], n_queries)
    s = rng.normal(size=2 * n_queries)
    qw = rng.uniform(0.5, 2.0, n_queries)
    engine = SortedPairLoss(query, level, qw, np.ones((2, 2)), np.full((2, 2), 0.7),
                            "squared_hinge")
    assert engine.blocks.ptr.size - 1 == n_queries
    ev = engine.evaluate(s)
    r = np.maximum(0.7 - (s[0::2] - s[1::2]), 0.0)
    assert rel(ev.value, float(qw @ (r * r))) <= EXPRESSION_MATCH
    assert np.allclose(ev.grad[0::2], -2 * qw * r) and np.allclose(ev.grad[1::2], 2 * qw * r)


def test_unknown_loss_is_refused() -> None:
    with pytest.raises(ValueError, match="loss must be one of"):
        SortedPairLoss(np.zeros(2, int), np.array([1, 0]), [1.0], np.ones((2, 2)),
                       np.ones((2, 2)), "logistic")
    with pytest.raises(ValueError, match="loss must be one of"):
        ExplicitPairLoss(sp.csr_matrix(np.array([[1.0, -1.0]])), [1.0], [1.0], "logistic")


# -- shift invariance ---------------------------------------------------------------------------
def test_value_is_invariant_to_a_query_offset_of_moderate_size() -> None:
    f = structured_formulation("squared_hinge", seed=12)
    rng = np.random.default_rng(12)
    s = f.X @ rng.normal(size=f.data.n_features)
    offset = rng.uniform(-100, 100, f.data.n_queries)[f.data.query_index]
    base = f.loss_engine("pairs").evaluate(s)
    shifted = f.loss_engine("sorted").evaluate(s + offset)
    assert rel(shifted.value, base.value) <= EXPRESSION_MATCH
    assert np.allclose(shifted.grad, base.grad, rtol=0, atol=1e-9)


@pytest.mark.parametrize("loss", SMOOTH)
def test_value_is_invariant_to_a_large_query_offset(loss) -> None:
    f = structured_formulation(loss, seed=13)
    rng = np.random.default_rng(13)
    s = f.X @ rng.normal(size=f.data.n_features)
    base = f.loss_engine("pairs").evaluate(s)
    shifted = f.loss_engine("sorted").evaluate(s + 1e5)
    assert rel(shifted.value, base.value) <= EXPRESSION_MATCH


# -- the start point of Newton: every Huber residual at a kink ----------------------------------
def test_huber_hessian_at_zero_scores_is_a_valid_generalized_hessian() -> None:
    """At s = 0 with unit margins every residual is 1, the Huber kink, for every pair.

    Any curvature in [0, 2c] per pair is a valid generalized Hessian there; the two engines
    may pick different ones (the pair engine takes 0, the sorted one what its sort order of
    the tied entries gives), so only the bracket is checked.
    """
    data = make_synthetic(n_queries=4, docs_per_query=(5, 9), n_features=3, seed=14)
    f = RankSVM(data, loss="huber")
    s = np.zeros(data.n_documents)
    pairs = list(zip(f.pairs.upper, f.pairs.lower, strict=True))
    rng = np.random.default_rng(14)
    for engine in ("sorted", "pairs"):
        check_engine_at_ties(f.loss_engine(engine).evaluate(s), pairs, f.pair_weight, f.margin,
                             s, "huber", rng)


# -- a given pair set ---------------------------------------------------------------------------
def half_of_the_pairs(data) -> PairSet:
    P = build_pairs(data)
    keep = np.arange(P.n_pairs) % 2 == 0
    return PairSet(P.upper[keep], P.lower[keep], P.query[keep], P.delta[keep], P.n_documents,
                   np.bincount(P.query[keep], minlength=data.n_queries))


def test_given_pair_set_with_explicit_weights() -> None:
    data = make_synthetic(n_queries=4, docs_per_query=8, n_features=3, seed=15)
    half = half_of_the_pairs(data)
    f = RankSVM(data, C=0.5, loss="squared_hinge", pairs=half,
                pair_weight=np.ones(half.n_pairs))
    w = np.array([0.3, -0.2, 0.1])
    s = data.X @ w
    brute = sum(max(0.0, 1.0 - (s[i] - s[j])) ** 2 for i, j in zip(half.upper, half.lower,
                                                                     strict=True))
    assert rel(f.primal_value(w), 0.5 * w @ w + 0.5 * brute) <= EXPRESSION_MATCH


def test_given_pair_set_with_default_weights() -> None:
    data = make_synthetic(n_queries=4, docs_per_query=8, n_features=3, seed=15)
    half = half_of_the_pairs(data)
    f = RankSVM(data, C=0.5, loss="squared_hinge", pairs=half)
    w = np.array([0.3, -0.2, 0.1])
    s = data.X @ w
    brute = sum(max(0.0, 1.0 - (s[i] - s[j])) ** 2 for i, j in zip(half.upper, half.lower,
                                                                     strict=True))
    assert rel(f.primal_value(w), 0.5 * w @ w + 0.5 * brute) <= EXPRESSION_MATCH


@pytest.mark.slow  # compiles the kernels (seconds)
def test_compiled_passes_are_cached_on_disk(tmp_path) -> None:
    # without the ahead-of-time module (CVXRANK_AOT=0): a first process compiles both
    # kernels and writes them to the cache; a second one loads them (cache hits, no miss)
    # instead of compiling again
    code = ("from cvxrank.formulations import sorted_kernels as k; k.warm_up(); "
            "print(*(sum(getattr(f.stats, n).values()) for f in (k.block_sums, k.block_hessp) "
            "for n in ('cache_hits', 'cache_misses')))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "CVXRANK_AOT": "0"}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    first, second = ([int(x) for x in run.stdout.split()] for run in runs)
    assert first[1] > 0 and first[3] > 0  # compiled (cache misses) ...
    assert second[0] > 0 and second[2] > 0 and second[1] == second[3] == 0  # ... then loaded
    assert list(tmp_path.rglob("*.nbi"))


# -- the numpy passes are the compiled passes, bit for bit; which one runs ---------------------
def both_passes(engine: SortedPairLoss, s: np.ndarray, deltas) -> None:
    """Run the compiled passes on their order (the merge) and the numpy passes on theirs
    (numpy's stable sorts) at ``s``; assert equal results, bit for bit."""
    b = engine.blocks
    scores = np.asarray(s, dtype=np.float64)
    values = scores[b.doc] + b.shift
    order = engine._sort(values, scores, compiled=False)
    merged = engine._sort(values, scores, compiled=True)
    squared = not engine.ramp.linear
    compiled = sorted_kernels.block_sums(values, merged, b.doc, b.upper, b.block_weight,
                                         b.block_margin, b.ptr, engine.n_documents, squared)
    numpy_ = sorted_kernels.numpy_block_sums(values, order, b.doc, b.upper, b.weight, b.margin,
                                             engine.layout, engine.n_documents, squared)
    assert compiled[0] == numpy_[0] and compiled[2] == numpy_[2]  # value, margin-hinge sum
    assert np.array_equal(compiled[1], numpy_[1]) and np.array_equal(compiled[3], numpy_[3])
    assert numpy_[1].dtype == np.float64 and numpy_[3].dtype == np.float64
    for delta in deltas:
        delta = np.ascontiguousarray(delta, dtype=np.float64)
        hc = sorted_kernels.block_hessp(delta, merged, compiled[3], b.doc, b.upper,
                                        b.block_weight, b.ptr)
        hn = sorted_kernels.NumpyHessp(b.doc, b.upper, order, numpy_[3], b.weight,
                                       engine.layout)(delta)
        assert np.array_equal(hc, hn) and hn.dtype == np.float64


@settings(max_examples=80, deadline=None)
@given(inst=instances(ties=True), loss=st.sampled_from(LOSSES))
def test_numpy_passes_equal_compiled_passes_with_ties(inst, loss) -> None:
    query, level, s, qw, wt, mt = inst
    engine = SortedPairLoss(query, level, qw, wt, mt, loss)
    both_passes(engine, s, [*np.eye(len(s)), np.linspace(-1.0, 2.0, len(s))])


@pytest.mark.parametrize("loss", LOSSES)
def test_numpy_passes_equal_compiled_passes_on_random_data(loss) -> None:
    rng = np.random.default_rng(21)
    for trial in range(40):
        n = int(rng.integers(2, 300))
        n_queries, n_levels = int(rng.integers(1, 9)), int(rng.integers(2, 6))
        query, level = rng.integers(0, n_queries, n), rng.integers(0, n_levels, n)
        qw = rng.choice([0.25, 0.7, 1.0, 3.0], n_queries)
        wt = rng.choice([0.5, 1 / 3, 2.0], (n_levels, n_levels))
        mt = rng.choice([-0.5, 0.0, 0.3, 1.0, 2.0], (n_levels, n_levels))
        if trial % 2:  # ties, residuals exactly 0 and 1, a huge score
            s = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 1e8], n)
        else:  # scales from 1e-3 to 1e3, a common offset up to 1e6
            scale, offset = 10 ** rng.uniform(-3, 3), rng.normal() * 10 ** rng.uniform(0, 6)
            s = rng.normal(size=n) * scale + offset
        engine = SortedPairLoss(query, level, qw, wt, mt, loss)
        both_passes(engine, s, [rng.normal(size=n), np.zeros(n)])


@pytest.mark.parametrize("compiled", [True, False])
def test_at_the_huber_cap_the_hessian_takes_the_quadratic_side(compiled: bool) -> None:
    # Chapelle & Keerthi's Huber loss has its cap at t = margin - width = 0: at w = 0 every
    # pair sits on that kink, where both one-sided curvatures are valid; the passes take the
    # larger (the squared hinge's), whatever the sort, as a Newton start needs on badly
    # scaled features (a regression: one tie order left the regularizer's Hessian alone)
    rng = np.random.default_rng(2)
    query, level = np.repeat(np.arange(6), 8), rng.integers(0, 3, 48)
    engines = [SortedPairLoss(query, level, np.ones(6), np.ones((3, 3)), np.ones((3, 3)), loss)
               for loss in ("huber", "squared_hinge")]
    s = np.zeros(48)
    delta = rng.normal(size=48)
    products = []
    for engine in engines:
        b = engine.blocks
        values = s[b.doc] + b.shift
        order = engine._sort(values, s, compiled=compiled)
        squared = True  # both are squared ramps
        if compiled:
            _, _, _, count = sorted_kernels.block_sums(values, order, b.doc, b.upper,
                                                       b.block_weight, b.block_margin, b.ptr,
                                                       48, squared)
            products.append(sorted_kernels.block_hessp(delta, order, count, b.doc, b.upper,
                                                       b.block_weight, b.ptr))
        else:
            *_, count = sorted_kernels.numpy_block_sums(values, order, b.doc, b.upper,
                                                        b.weight, b.margin, engine.layout, 48,
                                                        squared)
            products.append(sorted_kernels.NumpyHessp(b.doc, b.upper, order, count, b.weight,
                                                      engine.layout)(delta))
    assert np.any(products[1])
    np.testing.assert_allclose(products[0], products[1], rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("loss", LOSSES)
def test_passes_agree_where_the_shift_rounds_distinct_scores_together(loss) -> None:
    # each level of each query holds scores 1e-17 apart around 0, 1 and 2: with the shift
    # of +-1/2 they round to equal values, which are in score order in the merge's runs;
    # the merge orders them as numpy's stable sorts do, by entry, and the passes agree
    rng = np.random.default_rng(8)
    n_queries, per_level = 5, 6
    query = np.repeat(np.arange(n_queries), 3 * per_level)
    level = np.tile(np.repeat(np.arange(3), per_level), n_queries)
    s = rng.permutation(np.tile(np.array([0.0, 1e-17, 2e-17, 1.0, 1.0 + 2**-52, 2.0]),
                                query.size // 6))
    engine = SortedPairLoss(query, level, np.ones(n_queries), np.ones((3, 3)),
                            np.ones((3, 3)), loss)
    b = engine.blocks
    values = s[b.doc] + b.shift
    merged, by_entry = (engine._sort(values, s, compiled=c) for c in (True, False))
    assert np.array_equal(merged, by_entry)
    ties = sorted_kernels.tie_rank(b.upper, b.weight < 0)
    assert np.array_equal(merged, np.lexsort((np.arange(values.size), ties, values, b.block)))
    in_runs = s[b.runs.doc]  # the runs do hold distinct scores that round together
    assert np.any((np.diff(in_runs) != 0) & (np.diff(in_runs + 0.5) == 0))
    both_passes(engine, s, [rng.normal(size=s.size)])


def test_no_pairs_numpy_passes() -> None:
    engine = SortedPairLoss(np.zeros(4, int), np.zeros(4, int), np.ones(1), np.ones((1, 1)),
                            np.ones((1, 1)), "squared_hinge")
    assert engine.n_entries == 0
    both_passes(engine, np.arange(4.0), [np.ones(4)])


RULE_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])  # tests/, for the toolbox
import numpy as np
from cvxrank.data import make_synthetic
from cvxrank.formulations import pair_losses, sorted_kernels
from cvxrank.formulations.ranksvm import RankSVM
from toolbox import TickingClock
pair_losses.time = TickingClock()  # each numpy pass charges one tick, whatever the machine
data = make_synthetic(n_queries=6, docs_per_query=20, n_features=4, n_grades=3, seed=5)
f = RankSVM(data, C=0.1, loss="squared_hinge")
s = data.X @ np.linspace(-1.0, 1.0, 4)
first = f.loss_engine("sorted").evaluate(s)
report = {"numba_after_first": "numba" in sys.modules,
          "loaded_after_first": sorted_kernels.KERNELS.loaded,
          "numpy_seconds": sorted_kernels.KERNELS.numpy_seconds}
sorted_kernels.KERNELS.numpy_budget = 0.0  # as if the numpy passes had spent their budget
second = f.loss_engine("sorted").evaluate(s)
delta = np.linspace(0.0, 1.0, s.size)
report.update(numba_after_budget="numba" in sys.modules,
              loaded_after_budget=sorted_kernels.KERNELS.loaded,
              same=bool(first.value == second.value and np.array_equal(first.grad, second.grad)
                        and np.array_equal(first.hessp(delta), second.hessp(delta))))
print(json.dumps(report))
"""


@pytest.mark.slow  # compiles the kernels just in time in a fresh process
def test_numpy_passes_first_then_compiled_once_the_budget_is_spent() -> None:
    # a fresh process without the ahead-of-time passes (CVXRANK_AOT=0, as when they could
    # not be built): the first evaluations run in numpy (numba not even imported); once the
    # budget is spent the just-in-time passes are loaded and give the same numbers
    run = subprocess.run([sys.executable, "-c", RULE_PROBE, str(Path(__file__).parents[1])],
                         capture_output=True, text=True,
                         env={**os.environ, "CVXRANK_AOT": "0"})
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert not report["numba_after_first"] and not report["loaded_after_first"]
    assert report["numpy_seconds"] >= 2.0**-20  # the first evaluation's pass was charged
    assert report["numba_after_budget"] and report["loaded_after_budget"]
    assert report["same"]


def test_compiled_passes_once_loaded_and_for_padded_tables(monkeypatch) -> None:
    kernels = sorted_kernels.KERNELS
    monkeypatch.setattr(aot, "load", lambda source: None)  # no AOT module
    monkeypatch.setattr(kernels, "loaded", False)
    monkeypatch.setattr(kernels, "numpy_seconds", 0.0)
    monkeypatch.setattr(kernels, "warm_up", lambda: setattr(kernels, "loaded", True))
    assert not sorted_kernels.use_compiled(1000, 2300)
    # one long query among many short ones: the table would be mostly padding
    assert sorted_kernels.use_compiled(1000, 100_000)
    assert kernels.loaded and sorted_kernels.use_compiled(1000, 2300)
    kernels.loaded = False
    assert sorted_kernels.use_compiled(sorted_kernels.NUMPY_MAX_ENTRIES + 1, 0)


@pytest.mark.parametrize("loss", ["hinge", "huber"])
@pytest.mark.parametrize("n_queries", [25, 2])  # runs of about 6 and 75 documents
def test_merged_order_is_a_stable_sort_inside_each_block(loss: str, n_queries: int) -> None:
    # the merge of sorted runs of the compiled passes: by block, then value, ties by tie
    # rank (the Huber loss's blocks of weight -c: lower entries first) and in entry order
    # (numpy's lexsort on those keys is the reference), with many ties (scores on a grid of
    # halves, margins 1 and 0.5), several lower-level groups and missing levels
    rng = np.random.default_rng(5)
    n = 600
    query = np.sort(rng.integers(0, n_queries, n))
    grade = rng.integers(0, 4, n)
    weight = np.where(np.arange(4)[:, None] - np.arange(4)[None, :] > 1, 2.0, 1.0)
    margin = np.where(np.arange(4)[:, None] - np.arange(4)[None, :] > 2, 0.5, 1.0)
    engine = SortedPairLoss(query, grade, np.ones(n_queries), weight, margin, loss)
    b = engine.blocks
    scores = rng.integers(-4, 5, n) / 2
    values = scores[b.doc] + b.shift
    ties = sorted_kernels.tie_rank(b.upper, b.weight < 0)
    expected = np.lexsort((np.arange(values.size), ties, values, b.block))
    merged, rank = sorted_kernels.merged_order(values, scores, b.runs, b.segments,
                                               b.block_weight)
    assert np.array_equal(merged, expected)
    # from the last order at other scores, from a reversed one (long runs sorted afresh)
    # and from shuffled ones: the same order
    runs = b.runs
    position = np.arange(runs.doc.size) - np.repeat(runs.start, runs.length)
    backwards = np.repeat(runs.length, runs.length) - 1 - position
    others = rng.integers(-4, 5, n) / 2
    _, last = sorted_kernels.merged_order(others[b.doc] + b.shift, others, runs, b.segments,
                                          b.block_weight)
    starts = [rank, last, backwards,
              *(np.concatenate([rng.permutation(c) for c in runs.length]) for _ in range(3))]
    for start in starts:
        again, rank_again = sorted_kernels.merged_order(values, scores, runs, b.segments,
                                                        b.block_weight, start)
        assert np.array_equal(again, expected) and np.array_equal(rank_again, rank)

