"""Tests of cvxrank.certificates.measure_certificate.

Soundness is checked by brute force, independently of the rule: for many w' in the ball (200
random points, half of them on the sphere, plus the extreme points of the critical pairs)
the measures of :func:`cvxrank.metrics.evaluate` must not change on a certified query, on
random queries, at each query's largest certified radius (where a missing condition of the
rule shows) and on a real fit. The fast implementation is compared with a pair-by-pair
transcription of the rule, the pair test with the extreme perturbation that decides it, and
planted near-ties with their critical radius.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from toolbox import sampled

from cvxrank.certificates.measure_certificate import (
    RULE,
    MeasureCertificate,
    certify_measures,
)
from cvxrank.data.letor import read_letor_fold
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.metrics import Convention, evaluate, get_preset
from cvxrank.solvers.newton import solve_prsvm_plus

K = 4
MEASURES = [f"ndcg@{k}" for k in range(1, K + 1)] + [f"p@{k}" for k in range(1, K + 1)] + [
    "map", "mrr", "mean_ndcg"]
CONVENTIONS = {
    "letor3": "letor3",
    "trec": "trec",  # docid_descending, with document ids
    "sklearn": "sklearn",  # ties averaged
    "pessimistic": Convention(ties="pessimistic"),
    "optimistic": Convention(ties="optimistic", relevance_threshold=2.0),
}


# ---------------------------------------------------------------- helpers


def scores_of(X: np.ndarray | sp.csr_matrix, w: np.ndarray) -> np.ndarray:
    """Row-by-row scores: equal rows get equal scores (a BLAS ``X @ w`` may not)."""
    return np.asarray(X @ w).ravel() if sp.issparse(X) else np.einsum("ij,j->i", X, w)


def measure_values(X, y, ptr, points, convention, docid=None, k=K) -> dict[str, np.ndarray]:
    """Per measure, the per-query values at each point: arrays of shape (points, queries).

    The data is stacked once per point (one evaluate call per 64 points)."""
    n_queries, out = len(ptr) - 1, {}
    for lo in range(0, len(points), 64):
        chunk = points[lo:lo + 64]
        stacked = np.r_[0, (np.arange(len(chunk))[:, None] * ptr[-1]
                            + np.asarray(ptr)[None, 1:]).ravel()]
        result = evaluate(np.tile(y, len(chunk)),
                          np.concatenate([scores_of(X, w) for w in chunk]), stacked,
                          preset=convention, k=k, per_query=True, mean_ndcg=True,
                          docid=None if docid is None else np.tile(docid, len(chunk)))
        for m, v in result["per_query"].items():
            out.setdefault(m, []).append(np.reshape(v, (len(chunk), n_queries)))
    return {m: np.concatenate(v) for m, v in out.items()}


def ball_points(w: np.ndarray, radius: float, rng: np.random.Generator,
                n: int = 200) -> list[np.ndarray]:
    """n points of the ball: uniform directions, radii in (0, r], every other one r."""
    u = rng.standard_normal((n, w.size))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    t = radius * rng.uniform(0.0, 1.0, n) ** (1.0 / w.size)
    t[::2] = radius
    return list(w + t[:, None] * u)


def critical_pairs(X, y, ptr, w) -> list[tuple[int, int, float]]:
    """Every pair (i, j) of one query, different grades, x_i != x_j, with s_i >= s_j: and
    its critical radius (s_i - s_j)/||x_i - x_j||, below which the pair is fixed."""
    X = X.toarray() if sp.issparse(X) else X
    s = scores_of(X, w)
    out = []
    for a, b in zip(ptr[:-1], ptr[1:], strict=True):
        i, j = np.triu_indices(b - a, 1)
        i, j = i + a, j + a
        swap = s[i] < s[j]
        i, j = np.where(swap, j, i), np.where(swap, i, j)
        norm = np.linalg.norm(X[i] - X[j], axis=1)
        keep = (y[i] != y[j]) & (norm > 0)
        out += list(zip(i[keep], j[keep], (s[i] - s[j])[keep] / norm[keep], strict=True))
    return out


def extreme_points(X, w, radius, pairs) -> list[np.ndarray]:
    """For each pair, the two points w -+ r (x_i - x_j)/||x_i - x_j|| of the sphere."""
    X = X.toarray() if sp.issparse(X) else X
    out = []
    for i, j, _ in pairs:
        u = (X[i] - X[j]) / np.linalg.norm(X[i] - X[j])
        out += [w - radius * u, w + radius * u]
    return out


def assert_sound(cert: MeasureCertificate, X, y, ptr, w, points, convention, docid=None):
    """Every certified query has, at every point, the value it has at w (bit for bit)."""
    base = measure_values(X, y, ptr, [w], convention, docid)
    values = measure_values(X, y, ptr, points, convention, docid)
    for m in MEASURES:
        ok = cert.certified_queries[m]
        moved = ~((values[m] == base[m]) | (np.isnan(values[m]) & np.isnan(base[m])))
        bad = np.flatnonzero(moved[:, ok].any(axis=0))
        assert not bad.size, f"{m}: certified queries {np.flatnonzero(ok)[bad]} change"


def order_of(s, y, docid, ties, a, b) -> list[int]:
    """The rows a..b-1 as evaluate ranks them (written out independently)."""
    key = {
        "pessimistic": lambda i: (-s[i], y[i], i),
        "optimistic": lambda i: (-s[i], -y[i], i),
        "docid_descending": lambda i: (-s[i], [-ord(c) for c in docid[i]] + [1], i),
    }.get(ties, lambda i: (-s[i], i))
    return sorted(range(a, b), key=key)


def naive_rule(X, y, ptr, w, radius, convention, docid=None) -> dict[str, np.ndarray]:
    """The rule of the module docstring, pair by pair with every norm (O(n^2 d) a query)."""
    conv = get_preset(convention) if isinstance(convention, str) else convention
    X = X.toarray() if sp.issparse(X) else X
    s = scores_of(X, w)
    out = {m: np.zeros(len(ptr) - 1, dtype=bool) for m in MEASURES}
    for q, (a, b) in enumerate(zip(ptr[:-1], ptr[1:], strict=True)):
        rows = order_of(s, y, docid, conv.ties, a, b)
        sq, Xq, n = s[rows], X[rows], b - a
        diff = Xq[:, None] - Xq[None]
        identical = ~diff.any(axis=2)
        gap = sq[:, None] - sq[None]
        with np.errstate(invalid="ignore"):  # inf * 0 on the diagonal
            fixed = np.where(identical, gap == 0, gap > radius * np.linalg.norm(diff, axis=2))
        relevant = (y[rows] >= conv.relevance_threshold).astype(float)
        for name, labels in (("graded", y[rows].astype(float)), ("binary", relevant)):
            labels = labels.copy()
            if conv.ties == "average":  # a tied group with several labels: a label of its own
                for t, value in enumerate(np.unique(sq)):
                    group = sq == value
                    if np.unique(labels[group]).size > 1:
                        labels[group] = -1.0 - t

            def ok(cut: int, labels=labels, fixed=fixed) -> bool:
                return naive_prefix_fixed(fixed, labels, cut)

            if name == "graded":
                for k in range(1, K + 1):
                    out[f"ndcg@{k}"][q] = ok(min(k, n))
                out["mean_ndcg"][q] = ok(n)
            else:
                for k in range(1, K + 1):
                    out[f"p@{k}"][q] = ok(min(k, n))
                out["map"][q] = ok(n)
                first = np.flatnonzero(relevant)
                out["mrr"][q] = ok(int(first[0]) + 1 if first.size else 0)
    return out


def naive_prefix_fixed(fixed: np.ndarray, labels: np.ndarray, cut: int) -> bool:
    """Whether the rule holds for the labels of positions 1..cut (0: nothing to check)."""
    if cut == 0:
        return True
    n = labels.size
    starts = [0] + [i for i in range(1, n) if labels[i] != labels[i - 1]]
    blocks = list(zip(starts, starts[1:] + [n], strict=True))
    T = next(t for t, (lo, hi) in enumerate(blocks) if lo <= cut - 1 < hi)
    sets = [(range(*blocks[t]), range(*blocks[t + 1])) for t in range(T)]
    sets += [(range(lo, lo + 1), range(lo + 1, hi)) for lo, hi in blocks[:T + 1]
             if labels[lo] < 0]  # mixed tie groups: identical documents
    lT, V = labels[blocks[T][0]], range(blocks[T][1], n)
    sets.append((range(blocks[T][0], cut), [v for v in V if labels[v] != lT]))
    if T > 0:
        sets.append((range(*blocks[T - 1]), [v for v in V if labels[v] == lT]))
    return all(fixed[i, j] for upper, lower in sets for i in upper for j in lower)


def random_instance(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                        np.ndarray]:
    """Small queries with integer features (exact ties), repeated rows and 2-3 grades."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 6))
    sizes = rng.integers(1, 11, 8)
    n = int(sizes.sum())
    X = rng.integers(0, 3, (n, d)).astype(float)
    repeat = rng.random(n) < 0.2  # copy the previous row of the query
    repeat[np.r_[0, np.cumsum(sizes)[:-1]]] = False
    for i in np.flatnonzero(repeat):
        X[i] = X[i - 1]
    y = rng.integers(0, 2 + seed % 2, n).astype(float)
    w = rng.integers(-2, 3, d).astype(float) if seed % 3 else rng.standard_normal(d)
    docid = np.array([f"d{v}" for v in rng.permutation(n)])
    return X, y, np.r_[0, np.cumsum(sizes)], w, docid


def radii_of(pairs, rng) -> list[float]:
    """Radii between the critical radii of the pairs, a hair off each."""
    ratios = np.array([r for *_, r in pairs if r > 0])
    return [float(np.quantile(ratios, q)) * (1 + 1e-6 * rng.choice([-1, 1]))
            for q in (0.1, 0.5)]


# ---------------------------------------------------------------- 1. soundness


@pytest.mark.parametrize("name", CONVENTIONS)
@pytest.mark.parametrize("seed", range(4))
def test_sound_on_random_queries(seed: int, name: str):
    X, y, ptr, w, docid = random_instance(seed)
    convention = CONVENTIONS[name]
    rng = np.random.default_rng(100 + seed)
    pairs = critical_pairs(X, y, ptr, w)
    n_certified = n_uncertified = 0
    for radius in radii_of(pairs, rng):
        cert = certify_measures(X, y, ptr, w, radius, measures=MEASURES,
                                convention=convention, docid=docid)
        points = ball_points(w, radius, rng) + extreme_points(X, w, radius, pairs)
        assert_sound(cert, X, y, ptr, w, points, convention, docid)
        counts = np.array([cert.certified_queries[m] for m in MEASURES])
        n_certified += counts.sum()
        n_uncertified += (~counts).sum()
    assert n_certified > 0 and n_uncertified > 0  # the sampling had something to refute


@pytest.mark.parametrize("name", CONVENTIONS)
@pytest.mark.parametrize("seed", sampled(range(10), fast=3))
def test_sound_at_each_critical_radius(seed: int, name: str):
    """Each (query, measure) at the largest radius it is certified at, where a missing
    condition of the rule would show: just below one of the pairs' critical radii."""
    X, y, ptr, w, docid = random_instance(seed)
    convention = CONVENTIONS[name]
    rng = np.random.default_rng(300 + seed)
    pairs = critical_pairs(X, y, ptr, w)
    ratios = np.unique([r for *_, r in pairs if r > 0])
    radii = np.r_[ratios * (1 - 1e-7), 2 * ratios[-1]]
    status = np.array([[certify_measures(X, y, ptr, w, r, measures=MEASURES,
                                         convention=convention, docid=docid
                                         ).certified_queries[m] for m in MEASURES]
                       for r in radii])  # radius x measure x query
    assert not (np.diff(status.astype(int), axis=0) > 0).any()  # monotone in r
    last = status.sum(axis=0) - 1  # per measure and query: index of its critical radius
    for q, (a, b) in enumerate(zip(ptr[:-1], ptr[1:], strict=True)):
        mine = [p for p in pairs if a <= p[0] < b]
        for i in np.unique(last[:, q][last[:, q] >= 0]):
            radius = radii[i]
            points = ball_points(w, radius, rng, 40) + extreme_points(X, w, radius, mine)
            sub = slice(a, b)
            cert = MeasureCertificate(radius, RULE, {m: status[i, j, q:q + 1] for j, m in
                                                     enumerate(MEASURES)})
            assert_sound(cert, X[sub], y[sub], np.array([0, b - a]), w, points, convention,
                         None if docid is None else docid[sub])


@pytest.mark.parametrize("name", CONVENTIONS)
@pytest.mark.parametrize("seed", range(6))
def test_fast_rule_matches_pair_by_pair_rule(seed: int, name: str):
    X, y, ptr, w, docid = random_instance(seed)
    rng = np.random.default_rng(200 + seed)
    for radius in [*radii_of(critical_pairs(X, y, ptr, w), rng), 1e-9, 10.0, np.inf]:
        expected = naive_rule(X, y, ptr, w, radius, CONVENTIONS[name], docid)
        for matrix in (X, sp.csr_matrix(X)):
            cert = certify_measures(matrix, y, ptr, w, radius, measures=MEASURES,
                                    convention=CONVENTIONS[name], docid=docid)
            for m in MEASURES:
                np.testing.assert_array_equal(cert.certified_queries[m], expected[m],
                                              err_msg=f"{m} at r = {radius}")


def test_pair_decision_is_exact():
    """Two-document queries: certified iff the extreme perturbation keeps the order."""
    rng = np.random.default_rng(7)
    n_pairs, d, radius = 300, 4, 0.1
    X = rng.standard_normal((2 * n_pairs, d))
    w = rng.standard_normal(d)
    s = scores_of(X, w)
    # Move each upper document along w so that gap / ||x_i - x_j|| spreads around r.
    target = radius * rng.uniform(0.2, 1.8, n_pairs)
    for p in range(n_pairs):
        i, j = 2 * p, 2 * p + 1
        for _ in range(3):  # the norm changes a little with each move
            norm = np.linalg.norm(X[i] - X[j])
            X[i] += (target[p] * norm - (s[i] - s[j])) * w / (w @ w)
            s = scores_of(X, w)
    y = np.tile([1.0, 0.0], n_pairs)
    ptr = np.arange(0, 2 * n_pairs + 1, 2)
    cert = certify_measures(X, y, ptr, w, radius, measures=["map"])
    certified = cert.certified_queries["map"]
    assert 0 < certified.sum() < n_pairs
    for p in range(n_pairs):
        i, j = 2 * p, 2 * p + 1
        u = (X[i] - X[j]) / np.linalg.norm(X[i] - X[j])
        s2 = scores_of(X[[i, j]], w - radius * u)
        assert (s2[0] > s2[1]) == certified[p], p


def test_sound_on_ohsumed_fit(shared_data: Path):
    folds = read_letor_fold(shared_data / "letor3_ohsumed" / "QueryLevelNorm", 1,
                            splits=("train", "test"))
    run = solve_prsvm_plus(RankSVM(folds["train"], C=1e-4, loss="squared_hinge"))
    test, w = folds["test"], run.w
    X, y, ptr = test.X, test.y, test.query_ptr
    r_gap = run.w_radius  # the fit's own certified ball
    rng = np.random.default_rng(3)
    pairs = critical_pairs(X, y, ptr, w)
    query = np.searchsorted(ptr, [i for i, *_ in pairs], side="right") - 1
    ratio = np.array([r for *_, r in pairs])
    chosen = [pairs[i] for q in range(test.n_queries)  # the 10 most critical of each query
              for i in np.flatnonzero(query == q)[np.argsort(ratio[query == q])[:10]]]
    for radius in (r_gap, 10 * r_gap):
        points = extreme_points(X, w, radius, chosen) + ball_points(w, radius, rng)
        for convention in ("letor3", "sklearn"):
            cert = certify_measures(X, y, ptr, w, radius, measures=MEASURES,
                                    convention=convention)
            assert_sound(cert, X, y, ptr, w, points, convention)
        # Each chosen pair alone (a two-document query): certified iff the extreme
        # perturbation keeps its order.
        rows = np.array([[i, j] for i, j, _ in chosen]).ravel()
        two = certify_measures(X[rows], y[rows], np.arange(0, rows.size + 1, 2), w, radius,
                               measures=["mean_ndcg"])
        kept = [np.subtract(*scores_of(X[[i, j]], p)) > 0 for (i, j, _), p in
                zip(chosen, extreme_points(X, w, radius, chosen)[::2], strict=True)]
        np.testing.assert_array_equal(two.certified_queries["mean_ndcg"], kept)
    assert 0 < cert.uncertified("map") < test.n_queries  # at 10 r_gap
    assert 0 < sum(kept) < len(kept)
    sparse = certify_measures(sp.csr_matrix(X), y, ptr, w, radius, measures=MEASURES,
                              convention="sklearn")
    for m in MEASURES:
        np.testing.assert_array_equal(sparse.certified_queries[m], cert.certified_queries[m])


# ---------------------------------------------------------------- 2. and 4. planted near-ties


def line_query(scores: list[float], grades: list[float], tilt: dict[int, float]):
    """One query in d = 2 with w = (1, 0): x_i = (s_i, tilt_i); a tilt sets ||x_i - x_j||."""
    X = np.array([[s, tilt.get(i, 0.0)] for i, s in enumerate(scores)])
    return X, np.array(grades), np.array([0, len(scores)]), np.array([1.0, 0.0])


def critical(X, i, j, w) -> float:
    return float((X[i] - X[j]) @ w / np.linalg.norm(X[i] - X[j]))


def test_planted_near_tie_deciding_the_top():
    X, y, ptr, w = line_query([10.0, 9.999, 5.0, 4.0], [0, 2, 1, 0], {1: 1.0})
    r_c = critical(X, 0, 1, w)  # 0.001 / sqrt(1 + 1e-6)
    above = certify_measures(X, y, ptr, w, 1.01 * r_c, measures=MEASURES)
    assert all(above.uncertified(m) == 1 for m in MEASURES)  # the pair decides position 1
    below = certify_measures(X, y, ptr, w, 0.99 * r_c, measures=MEASURES)
    assert below.all_certified
    # At the extreme point the two documents do swap, and the measures move.
    u = (X[0] - X[1]) / np.linalg.norm(X[0] - X[1])
    before, after = (measure_values(X, y, ptr, [p], "letor3") for p in (w, w - 1.01 * r_c * u))
    assert after["ndcg@1"][0, 0] != before["ndcg@1"][0, 0]
    assert after["map"][0, 0] != before["map"][0, 0]


def test_planted_near_tie_below_the_top_k():
    # Top 2: grades 2, 2 far above; a near-tie of grades 1 and 0 at positions 3-4.
    X, y, ptr, w = line_query([10.0, 9.0, 5.0, 4.999, 1.0], [2, 2, 1, 0, 0], {3: 1.0})
    r_c = critical(X, 2, 3, w)
    cert = certify_measures(X, y, ptr, w, 1.01 * r_c, measures=MEASURES)
    for m in ("ndcg@1", "ndcg@2", "p@1", "p@2", "mrr"):
        assert cert.certified(m), m
    for m in ("ndcg@3", "ndcg@4", "p@3", "p@4", "map", "mean_ndcg"):
        assert not cert.certified(m), m
    assert certify_measures(X, y, ptr, w, 0.99 * r_c, measures=MEASURES).all_certified


def test_document_below_may_replace_one_of_its_label_but_not_pass_the_block_above():
    # Grades 2, 1 | 0, 1, 0: for the top 2 (B_T = {grade 1 at 8}) the grade-1 document at
    # 6.99 may rise above the one at 8 (same label), not above the grade-2 one at 10.
    X, y, ptr, w = line_query([10.0, 8.0, 7.0, 6.99, 2.0], [2, 1, 0, 1, 0], {3: 3.0})
    r_same, r_above = critical(X, 1, 3, w), critical(X, 0, 3, w)  # 0.319, 0.708
    assert r_same < 0.5 < r_above < 0.8 < min(critical(X, 1, 2, w), critical(X, 1, 4, w))
    cert = certify_measures(X, y, ptr, w, 0.5, measures=MEASURES)
    for m in ("ndcg@1", "ndcg@2", "p@1", "p@2", "mrr"):
        assert cert.certified(m), m
    assert not cert.certified("map") and not cert.certified("mean_ndcg")
    cert = certify_measures(X, y, ptr, w, 0.8, measures=MEASURES)
    assert not cert.certified("ndcg@2") and not cert.certified("ndcg@1")
    assert cert.certified("p@2")  # binary labels: positions 1-2 stay relevant
    u = (X[0] - X[3]) / np.linalg.norm(X[0] - X[3])
    before, after = (measure_values(X, y, ptr, [p], "letor3") for p in (w, w - 0.8 * u))
    assert after["ndcg@1"][0, 0] != before["ndcg@1"][0, 0]
    # (NDCG@2 keeps its value there: LETOR's discount is 1 at positions 1 and 2. The rule is
    # sufficient, not necessary.)
    assert after["ndcg@2"][0, 0] == before["ndcg@2"][0, 0]


# ---------------------------------------------------------------- 3. ties, edge radii


@pytest.mark.parametrize("name", CONVENTIONS)
def test_identical_documents_of_different_grades_are_certified(name: str):
    X, y, ptr, w = line_query([3.0, 2.0, 2.0, 1.0], [2, 0, 1, 0], {})  # rows 1, 2 equal
    docid = np.array(["a", "b", "c", "d"])
    cert = certify_measures(X, y, ptr, w, 1e-3, measures=MEASURES,
                            convention=CONVENTIONS[name], docid=docid)
    assert cert.all_certified
    X, y, ptr = X[[1, 2, 1]], np.array([0.0, 2.0, 1.0]), np.array([0, 3])
    cert = certify_measures(X, y, ptr, w, np.inf, measures=MEASURES,
                            convention=CONVENTIONS[name], docid=docid[:3])
    assert cert.all_certified


@pytest.mark.parametrize("name", CONVENTIONS)
def test_exact_tie_of_distinct_documents_is_not_certified(name: str):
    X, y, ptr, w = line_query([3.0, 2.0, 2.0, 1.0], [2, 0, 2, 0], {2: 1.0})
    cert = certify_measures(X, y, ptr, w, 1e-9, measures=MEASURES,
                            convention=CONVENTIONS[name], docid=np.array(["a", "b", "c", "d"]))
    assert not cert.certified("mean_ndcg")
    assert cert.certified("ndcg@1")
    # The same tie between documents of one grade is harmless.
    y = np.array([2.0, 0.0, 0.0, 0.0])
    cert = certify_measures(X, y, ptr, w, 1e-9, measures=MEASURES,
                            convention=CONVENTIONS[name], docid=np.array(["a", "b", "c", "d"]))
    assert cert.all_certified


def test_identical_documents_with_unequal_scores_are_not_fixed():
    """Given scores where equal rows differ in the last bit, the ranking is rounding's."""
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    y, ptr, w = np.array([0.0, 1.0]), np.array([0, 2]), np.array([1.0, 1.0])
    exact = certify_measures(X, y, ptr, w, 1e-3, measures=["map"])
    noisy = certify_measures(X, y, ptr, w, 1e-3, measures=["map"],
                             scores=np.array([3.0, np.nextafter(3.0, 0.0)]))
    assert exact.certified("map") and not noisy.certified("map")


def test_radius_zero_and_infinite():
    X, y, ptr, w, docid = random_instance(1)
    zero = certify_measures(X, y, ptr, w, 0.0, measures=MEASURES)
    assert zero.all_certified  # the ball is the point w, exact ties included
    inf = certify_measures(X, y, ptr, w, np.inf, measures=MEASURES)
    queries = list(zip(ptr[:-1], ptr[1:], strict=True))
    distinct = np.array([np.unique(X[a:b], axis=0).shape[0] == b - a for a, b in queries])
    for m, labels in (("mean_ndcg", y), ("map", y >= 1)):
        # A query of distinct rows is certified iff it has one label.
        single = np.array([np.unique(labels[a:b]).size == 1 for a, b in queries])
        assert single[distinct].any() and not single[distinct].all()
        np.testing.assert_array_equal(inf.certified_queries[m][distinct], single[distinct])


def test_one_document_and_one_label_queries():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [3.0, 0.0]])
    y, ptr = np.array([2.0, 1.0, 1.0, 1.0]), np.array([0, 1, 4])
    cert = certify_measures(X, y, ptr, np.array([1.0, -1.0]), np.inf, measures=MEASURES)
    assert cert.all_certified


def test_empty_query_is_refused_as_evaluate_does():
    X, y = np.ones((2, 2)), np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="has no rows"):
        evaluate(y, X @ np.ones(2), np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="has no rows"):
        certify_measures(X, y, np.array([0, 0, 2]), np.ones(2), 1.0, measures=["map"])


def test_mrr_without_relevant_document_is_certified():
    X, y, ptr, w = line_query([1.0, 1.0], [0, 0], {1: 1.0})
    assert certify_measures(X, y, ptr, w, np.inf, measures=["mrr", "p@1"]).all_certified


# ---------------------------------------------------------------- 5. dense and CSR


@pytest.mark.parametrize("seed", range(4))
def test_dense_and_csr_agree(seed: int):
    X, y, ptr, w, docid = random_instance(seed)
    X[:, 0] = 0.0  # a column of explicit zeros
    for radius in (1e-3, 0.3, 3.0):
        dense = certify_measures(X, y, ptr, w, radius, measures=MEASURES, convention="trec",
                                 docid=docid)
        csr = certify_measures(sp.csr_matrix(X), y, ptr, w, radius, measures=MEASURES,
                               convention="trec", docid=docid)
        assert dense.as_dict() == csr.as_dict()
        for m in MEASURES:
            np.testing.assert_array_equal(dense.certified_queries[m], csr.certified_queries[m])


# ---------------------------------------------------------------- API


def test_certificate_api():
    X, y, ptr, w = line_query([10.0, 9.999, 5.0, 4.0], [0, 2, 1, 0], {1: 1.0})
    cert = certify_measures(X, y, ptr, w, 0.01, measures=["ndcg@1", "map", "ndcg@2",
                                                           "my_measure"])
    assert cert.rule == RULE and cert.radius == 0.01
    assert cert.as_dict()["map"] == {"certified": False, "uncertified_queries": 1}
    assert json.loads(json.dumps(cert.as_dict())) == cert.as_dict()
    assert cert.uncertified("ndcg@1") == 1 and not cert.all_certified
    # An unknown key gets the full graded rule.
    full = certify_measures(X, y, ptr, w, 0.01, measures=["mean_ndcg"])
    np.testing.assert_array_equal(cert.certified_queries["my_measure"],
                                  full.certified_queries["mean_ndcg"])
    with pytest.raises(KeyError, match="no certificate for 'p@1'"):
        cert.certified("p@1")
    with pytest.raises(ValueError, match="not writable|read-only"):
        cert.certified_queries["map"][0] = True


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"measures": "map"}, "collection of keys"),
    ({"measures": ["map", "ties"]}, "not a measure"),
    ({"radius": -1.0}, "radius must be >= 0"),
    ({"radius": float("nan")}, "radius must be >= 0"),
    ({"w": np.ones(3)}, "w has shape"),
    ({"scores": np.ones(3)}, "scores has shape"),
])
def test_bad_input(kwargs, message):
    args = {"X": np.eye(2), "y": np.array([1.0, 0.0]), "query_ptr": np.array([0, 2]),
            "w": np.ones(2), "radius": 1.0, "measures": ["map"]} | kwargs
    with pytest.raises(ValueError, match=message):
        certify_measures(**args)


