"""Tests of cvxrank.metrics against independent references.

References: Hang Li's worked NDCG example (Table 1), a plain re-implementation of LETOR's
evaluation scripts (tests/letor_eval_reference.py), scikit-learn's ndcg_score and
roc_auc_score, scipy's kendalltau, trec_eval (through pytrec_eval), and brute-force
enumeration of pairs and of the orderings of tied documents.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from letor_eval_reference import eval_score
from scipy.stats import kendalltau
from sklearn.metrics import ndcg_score, roc_auc_score

from cvxrank import metrics
from cvxrank.data.ranking_data import MAX_GRADE
from cvxrank.metrics import Convention

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
OHSUMED_TEST = DATA / "letor3_ohsumed" / "QueryLevelNorm" / "Fold1" / "test.txt"
MQ2008_TEST = DATA / "letor4_mq2008" / "Fold1" / "test.txt"

HANG_LI = Convention(gain="exp2", discount="log2")


def random_queries(
    rng: np.random.Generator,
    n_queries: int,
    max_size: int,
    max_grade: int = 2,
    n_score_values: int | None = 4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grades, scores and query_ptr; scores take few values (many ties) unless None."""
    sizes = rng.integers(1, max_size + 1, n_queries)
    n = int(sizes.sum())
    y = rng.integers(0, max_grade + 1, n)
    if n_score_values is None:
        scores = rng.permutation(n) + rng.uniform(0.0, 0.5, n)
    else:
        scores = rng.integers(0, n_score_values, n) / 4.0
    return y, scores, np.r_[0, np.cumsum(sizes)]


def per_query(ptr: np.ndarray) -> list[slice]:
    return [slice(a, b) for a, b in zip(ptr[:-1], ptr[1:], strict=True)]


# ---------------------------------------------------------------- Hang Li, Table 1
# Table 1 prints the discounts rounded, (1, 0.63, 0.5, ...), and its DCGs are computed with
# 0.63 (7 + 7 * 0.63 = 11.41) where 1/log2(3) = 0.6309 gives 11.4165: the exact DCGs agree
# with the table to within 0.01 and truncate to its digits; the NDCGs round to its digits.


def table1(y: list[int]) -> tuple[np.ndarray, np.ndarray]:
    scores, ptr = -np.arange(7.0), np.array([0, 7])
    dcg = [metrics.dcg_at_k(y, scores, ptr, k, convention=HANG_LI)[0] for k in (1, 2, 3)]
    ndcg = [metrics.ndcg_at_k(y, scores, ptr, k, convention=HANG_LI)[0] for k in range(1, 8)]
    return np.array(dcg), np.array(ndcg)


def test_hang_li_table1_perfect_ranking() -> None:
    dcg, ndcg = table1([3, 3, 2, 2, 1, 1, 1])
    assert np.abs(dcg - [7, 11.41, 12.91]).max() < 0.01
    assert (np.floor(dcg * 100) / 100).tolist() == [7.0, 11.41, 12.91]
    np.testing.assert_allclose(ndcg, 1.0, rtol=1e-15)


def test_hang_li_table1_imperfect_ranking() -> None:
    dcg, ndcg = table1([2, 3, 2, 3, 1, 1, 1])
    assert np.abs(dcg - [3, 7.41, 8.91]).max() < 0.01
    assert (np.floor(dcg * 100) / 100).tolist() == [3.0, 7.41, 8.91]
    assert np.round(ndcg[:3], 2).tolist() == [0.43, 0.65, 0.69]


# ---------------------------------------------------------------- LETOR scripts


def assert_matches_letor(y, scores, ptr, qid, version: int) -> None:
    ours = metrics.evaluate(y, scores, ptr, preset=f"letor{version}", k=10, per_query=True)
    ref = eval_score([int(v) for v in y], [float(s) for s in scores], list(qid), version)
    assert set(ours) - set(ref) == {"mrr"}  # the scripts do not report MRR
    by_qid = np.argsort(np.asarray(qid)[ptr[:-1]], kind="stable")  # the script sorts qids
    for name, value in ref["per_query"].items():
        np.testing.assert_allclose(
            np.asarray(ours["per_query"][name])[by_qid], value, rtol=0, atol=1e-12, err_msg=name
        )
        assert ours[name] == pytest.approx(ref[name], abs=1e-12), name


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_letor_presets_match_reference_on_random_data(version: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=25, max_size=14)
    y[ptr[0] : ptr[1]] = 0  # a query without relevant document
    qid = np.repeat(rng.permutation(1000)[:25], np.diff(ptr))  # qids not in increasing order
    assert (np.diff(ptr) < 10).any()  # short queries
    assert_matches_letor(y, scores, ptr, qid, version)


@pytest.mark.parametrize("version", [3, 4])
def test_letor_presets_match_reference_on_continuous_scores(version: int) -> None:
    rng = np.random.default_rng(42)
    y, scores, ptr = random_queries(rng, n_queries=40, max_size=30, n_score_values=None)
    assert_matches_letor(y, scores, ptr, np.repeat(np.arange(40), np.diff(ptr)), version)


def read_labels_qids_feature(path: Path, feature: int) -> tuple[np.ndarray, ...]:
    """Label, qid and one feature of each line of a LETOR file (dense features)."""
    labels, qids, values = [], [], []
    with path.open() as f:
        for line in f:
            tokens = line.split()
            labels.append(int(tokens[0]))
            qids.append(int(tokens[1].removeprefix("qid:")))
            index, value = tokens[1 + feature].split(":")
            assert int(index) == feature
            values.append(float(value))
    return np.array(labels), np.array(qids), np.array(values)


@pytest.mark.slow
@pytest.mark.parametrize(("path", "version"), [(OHSUMED_TEST, 3), (MQ2008_TEST, 4)])
def test_letor_presets_match_reference_on_real_data(path: Path, version: int) -> None:
    if not path.exists():
        pytest.skip(f"{path} is absent")
    y, qid, feature = read_labels_qids_feature(path, feature=1)
    ptr = metrics.query_ptr_from_qid(qid)
    rng = np.random.default_rng(0)
    candidates = {
        "random": rng.standard_normal(y.size),
        "tied": rng.integers(0, 3, y.size).astype(float),
        "feature": feature,
        "constant": np.zeros(y.size),
    }
    for scores in candidates.values():
        assert_matches_letor(y, scores, ptr, qid, version)


def test_letor4_mean_ndcg_and_short_lists_by_hand() -> None:
    # one query of 2 documents ranked (1, 0): NDCG@1 = NDCG@2 = 1, P@1 = 1, P@2 = 1/2.
    y, scores, ptr = np.array([0, 1]), np.array([0.0, 1.0]), np.array([0, 2])
    letor3 = metrics.evaluate(y, scores, ptr, preset="letor3", k=3)
    letor4 = metrics.evaluate(y, scores, ptr, preset="letor4", k=3)
    assert [letor3[f"p@{k}"] for k in (1, 2, 3)] == [1.0, 0.5, 0.0]
    assert [letor4[f"p@{k}"] for k in (1, 2, 3)] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert [letor4[f"ndcg@{k}"] for k in (1, 2, 3)] == [1.0, 1.0, 0.0]
    assert letor4["mean_ndcg"] == 1.0 and "mean_ndcg" not in letor3
    assert metrics.evaluate(y, scores, ptr, preset="trec", k=3)["p@3"] == pytest.approx(1 / 3)
    assert metrics.evaluate(y, scores, ptr, preset="sklearn", k=3)["p@3"] == 0.5


def test_letor_discount_equals_log2_at_positions_one_and_two() -> None:
    # grades (1, 1, 1) in rank order: LETOR DCG@3 = 1 + 1 + 1/log2(3)
    y, scores, ptr = np.ones(3), -np.arange(3.0), np.array([0, 3])
    conv = Convention(discount="letor")
    assert metrics.dcg_at_k(y, scores, ptr, 3, convention=conv)[0] == pytest.approx(
        2 + 1 / math.log2(3), abs=1e-15
    )


# ---------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("seed", range(5))
def test_sklearn_preset_matches_ndcg_score_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=30, max_size=15, max_grade=4)
    for k in (1, 2, 3, 5, 10, 20):
        ours = metrics.ndcg_at_k(y, scores, ptr, k, convention="sklearn")
        for q, rows in enumerate(per_query(ptr)):
            if rows.stop - rows.start < 2:  # ndcg_score refuses a single document
                continue
            expected = ndcg_score(y[None, rows], scores[None, rows], k=k)
            assert ours[q] == pytest.approx(expected, abs=1e-12), (q, k)


# ---------------------------------------------------------------- trec_eval


@pytest.mark.parametrize("seed", range(3))
def test_trec_preset_matches_trec_eval_on_distinct_scores(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(
        rng, n_queries=30, max_size=25, max_grade=3, n_score_values=None
    )
    y[ptr[1] : ptr[2]] = 0  # a query without relevant document
    qrels, run = {}, {}
    for q, rows in enumerate(per_query(ptr)):
        docs = [f"d{i}" for i in range(rows.start, rows.stop)]
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(docs, y[rows], strict=True)}
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs, scores[rows], strict=True)}
    cutoffs = (1, 2, 3, 5, 10, 20, 30)
    spec = ",".join(map(str, cutoffs))
    measures = {f"ndcg_cut.{spec}", f"P.{spec}", f"map_cut.{spec}", "map", "recip_rank"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    expected = {
        "map": metrics.average_precision(y, scores, ptr, convention="trec"),
        "recip_rank": metrics.reciprocal_rank(y, scores, ptr, convention="trec"),
    }
    for k in cutoffs:
        expected[f"ndcg_cut_{k}"] = metrics.ndcg_at_k(y, scores, ptr, k, convention="trec")
        expected[f"P_{k}"] = metrics.precision_at_k(y, scores, ptr, k, convention="trec")
        expected[f"map_cut_{k}"] = metrics.average_precision(y, scores, ptr, k, convention="trec")
    for name, ours in expected.items():
        theirs = [trec[f"q{q}"][name] for q in range(len(ptr) - 1)]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9, err_msg=name)


def _trec_eval(y, scores, ptr, docid, measures):
    """pytrec_eval's per-query values (queries named q0, q1, ...), docnos ``docid``."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = {}, {}
    for q, rows in enumerate(per_query(ptr)):
        docs = [str(d) for d in docid[rows]]
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(docs, y[rows], strict=True)}
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs, scores[rows], strict=True)}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize("seed", range(4))
def test_trec_preset_breaks_ties_as_trec_eval(seed: int) -> None:
    """Heavily tied scores: trec_eval orders a tie by docno, descending, as strings."""
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=30, max_size=25, max_grade=3)
    # numbers of different lengths ("10" < "9" as strings), letters, a non-ASCII letter
    pool = [str(i) for i in range(200)] + [f"GX{i:03d}" for i in range(50)] + ["é1", "Z"]
    docid = np.empty(y.size, dtype=object)
    for rows in per_query(ptr):
        docid[rows] = rng.choice(pool, size=rows.stop - rows.start, replace=False)
    cutoffs = (1, 2, 3, 5, 10, 20)
    spec = ",".join(map(str, cutoffs))
    trec = _trec_eval(y, scores, ptr, docid,
                      {f"ndcg_cut.{spec}", f"P.{spec}", f"map_cut.{spec}", "map", "recip_rank"})
    expected = {
        "map": metrics.average_precision(y, scores, ptr, convention="trec", docid=docid),
        "recip_rank": metrics.reciprocal_rank(y, scores, ptr, convention="trec", docid=docid),
    }
    for k in cutoffs:
        expected[f"ndcg_cut_{k}"] = metrics.ndcg_at_k(y, scores, ptr, k, convention="trec",
                                                      docid=docid)
        expected[f"P_{k}"] = metrics.precision_at_k(y, scores, ptr, k, convention="trec",
                                                    docid=docid)
        expected[f"map_cut_{k}"] = metrics.average_precision(y, scores, ptr, k,
                                                             convention="trec", docid=docid)
    table = metrics.evaluate(y, scores, ptr, preset="trec", k=max(cutoffs), per_query=True,
                             docid=docid)["per_query"]
    for name, ours in expected.items():
        theirs = [trec[f"q{q}"][name] for q in range(len(ptr) - 1)]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9, err_msg=name)
    for k in cutoffs:
        theirs = [trec[f"q{q}"][f"ndcg_cut_{k}"] for q in range(len(ptr) - 1)]
        np.testing.assert_allclose(table[f"ndcg@{k}"], theirs, rtol=0, atol=1e-9)
    theirs = [trec[f"q{q}"]["map"] for q in range(len(ptr) - 1)]
    np.testing.assert_allclose(table["map"], theirs, rtol=0, atol=1e-9)


def test_trec_ties_by_hand_and_without_docids() -> None:
    """Docnos "9" and "10" tied: "9" > "10" as strings, so "9" is ranked first."""
    y, scores, ptr = np.array([0, 1]), np.array([0.5, 0.5]), np.array([0, 2])
    rr = metrics.reciprocal_rank(y, scores, ptr, convention="trec", docid=["10", "9"])
    assert rr.tolist() == [1.0]
    rr = metrics.reciprocal_rank(y, scores, ptr, convention="trec", docid=["9", "10"])
    assert rr.tolist() == [0.5]
    # without document ids the input order is kept (the documented fallback)
    assert metrics.reciprocal_rank(y, scores, ptr, convention="trec").tolist() == [0.5]
    input_order = Convention(gain="linear", ties="input_order")
    assert metrics.reciprocal_rank(y, scores, ptr, convention=input_order).tolist() == [0.5]
    # other tie rules ignore docid
    assert metrics.reciprocal_rank(y, scores, ptr, convention="letor3",
                                   docid=["10", "9"]).tolist() == [0.5]
    with pytest.raises(ValueError, match=r"docid\[1\] is None"):
        metrics.reciprocal_rank(y, scores, ptr, convention="trec", docid=["a", None])
    with pytest.raises(ValueError, match="docid has shape"):
        metrics.reciprocal_rank(y, scores, ptr, convention="trec", docid=["a"])


@pytest.mark.parametrize("seed", range(3))
def test_tied_documents_by_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    _, scores, ptr = random_queries(rng, n_queries=20, max_size=9)
    expected = [
        sum(1 for i in range(a, b) if any(scores[i] == scores[j] for j in range(a, b) if j != i))
        for a, b in zip(ptr[:-1], ptr[1:], strict=True)
    ]
    got = metrics.tied_documents(scores, ptr)
    assert got.tolist() == expected and got.dtype == np.int64
    assert metrics.tied_documents([1.0, 2.0, 3.0], [0, 3]).tolist() == [0]
    assert metrics.tied_documents([1.0, 1.0, 1.0], [0, 1, 3]).tolist() == [0, 2]


def test_exp2_gain_refuses_grades_above_max_grade() -> None:
    """A grade of 2000 used to overflow 2^y - 1: NDCG NaN, written as null."""
    scores, ptr = [0.3, 0.2, 0.1], [0, 3]
    top = metrics.ndcg_at_k([MAX_GRADE, 0, 1], scores, ptr, 3, convention=HANG_LI)
    ideal = (2.0**MAX_GRADE - 1) + 1 / np.log2(3)  # grades 30, 1, 0 in that order
    assert top[0] == pytest.approx((2.0**MAX_GRADE - 1 + 1 / np.log2(4)) / ideal, rel=1e-15)
    for preset in ("letor3", "letor4", "lightgbm"):
        with pytest.raises(ValueError, match=rf"y\[0\] is 2000, above {MAX_GRADE}"):
            metrics.evaluate([2000, 0, 1], scores, ptr, preset=preset)
    for preset in ("trec", "sklearn"):  # linear gain: any finite grade
        got = metrics.evaluate([2000, 0, 1], scores, ptr, preset=preset, k=3)
        assert got["ndcg@1"] == 1.0 and np.isfinite(got["ndcg@3"])


# ---------------------------------------------------------------- pairs: AUC, tau, accuracy


def brute_force_pairwise_accuracy(y: np.ndarray, s: np.ndarray) -> float:
    good, total = 0.0, 0
    for i, j in itertools.permutations(range(y.size), 2):
        if y[i] > y[j]:
            total += 1
            good += 1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0
    return good / total if total else math.nan


@pytest.mark.parametrize("seed", range(4))
def test_pairwise_accuracy_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=40, max_size=12, max_grade=3)
    ours = metrics.pairwise_accuracy(y, scores, ptr)
    expected = [brute_force_pairwise_accuracy(y[r], scores[r]) for r in per_query(ptr)]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)


def test_pair_counts_on_a_large_query() -> None:
    rng = np.random.default_rng(7)
    n = 3000
    y = rng.integers(0, 5, n)
    scores = np.round(y + rng.standard_normal(n), 1)
    ptr = np.array([0, 1000, n])
    for rows, accuracy, tau in zip(
        per_query(ptr),
        metrics.pairwise_accuracy(y, scores, ptr),
        metrics.kendall_tau(y, scores, ptr),
        strict=True,
    ):
        yq, sq = y[rows], scores[rows]
        higher = yq[:, None] > yq[None, :]
        wins = (sq[:, None] > sq[None, :]) + 0.5 * (sq[:, None] == sq[None, :])
        assert accuracy == pytest.approx(wins[higher].mean(), abs=1e-12)
        assert tau == pytest.approx(kendalltau(sq, yq).statistic, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_kendall_tau_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=40, max_size=20, max_grade=3)
    ours = metrics.kendall_tau(y, scores, ptr)
    for q, rows in enumerate(per_query(ptr)):
        if rows.stop - rows.start < 2:
            assert math.isnan(ours[q])
            continue
        expected = kendalltau(scores[rows], y[rows]).statistic
        if math.isnan(expected):
            assert math.isnan(ours[q])
        else:
            assert ours[q] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_auc_matches_roc_auc_score(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=40, max_size=20, max_grade=3)
    for threshold in (1, 2):
        conv = Convention(relevance_threshold=threshold)
        ours = metrics.auc(y, scores, ptr, convention=conv)
        for q, rows in enumerate(per_query(ptr)):
            labels = y[rows] >= threshold
            if labels.all() or not labels.any():
                assert math.isnan(ours[q])
            else:
                expected = roc_auc_score(labels, scores[rows])
                assert ours[q] == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- ties, by enumeration


def tie_orderings(grades: np.ndarray, scores: np.ndarray):
    """Every ranking (grades in rank order) that sorts ``scores`` in descending order."""
    blocks = [grades[scores == level].tolist() for level in sorted(set(scores), reverse=True)]
    for combo in itertools.product(*(itertools.permutations(block) for block in blocks)):
        yield [g for block in combo for g in block]


def plain_dcg(ranked: list, k: int, gain, discount) -> float:
    return sum(gain(g) * discount(i + 1) for i, g in enumerate(ranked[:k]))


def plain_average_precision(ranked: list, threshold: float) -> float:
    hits, total = 0, 0.0
    for i, g in enumerate(ranked):
        if g >= threshold:
            hits += 1
            total += hits / (i + 1)
    return total / hits


def plain_reciprocal_rank(ranked: list, threshold: float) -> float:
    return next(1 / (i + 1) for i, g in enumerate(ranked) if g >= threshold)


def plain_precision(ranked: list, k: int, threshold: float) -> float:
    return sum(g >= threshold for g in ranked[:k]) / k


def brute_force_average(y, scores, ptr, measure) -> list[float]:
    values = []
    for rows in per_query(ptr):
        outcomes = [measure(ranked) for ranked in tie_orderings(y[rows], scores[rows])]
        values.append(sum(outcomes) / len(outcomes))
    return values


def tiny_tied_queries(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y, scores, ptr = random_queries(rng, n_queries=25, max_size=7, max_grade=3, n_score_values=3)
    has_relevant = [bool((y[rows] >= 1).any()) for rows in per_query(ptr)]
    keep = np.flatnonzero(has_relevant)
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in keep])
    return y[rows], scores[rows], np.r_[0, np.cumsum(np.diff(ptr)[keep])]


@pytest.mark.parametrize("seed", range(3))
def test_average_ties_ndcg_and_precision_equal_enumeration(seed: int) -> None:
    y, scores, ptr = tiny_tied_queries(seed)

    def gain(g: float) -> float:
        return 2.0**g - 1

    def discount(i: int) -> float:
        return 1 / math.log2(i + 1)

    conv = Convention(gain="exp2", discount="log2", ties="average", precision_short_list="pad")
    for k in (1, 2, 3, 5):
        ideal = [
            plain_dcg(sorted(y[r].tolist(), reverse=True), k, gain, discount)
            for r in per_query(ptr)
        ]
        expected_dcg = brute_force_average(
            y, scores, ptr, lambda ranked, k=k: plain_dcg(ranked, k, gain, discount)
        )
        np.testing.assert_allclose(
            metrics.dcg_at_k(y, scores, ptr, k, convention=conv), expected_dcg, rtol=1e-12
        )
        np.testing.assert_allclose(
            metrics.ndcg_at_k(y, scores, ptr, k, convention=conv),
            np.array(expected_dcg) / ideal,
            rtol=1e-12,
        )
        expected_p = brute_force_average(
            y, scores, ptr, lambda ranked, k=k: plain_precision(ranked, k, 1)
        )
        np.testing.assert_allclose(
            metrics.precision_at_k(y, scores, ptr, k, convention=conv), expected_p, rtol=1e-12
        )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threshold", [1, 2])
def test_average_ties_ap_rr_wta_equal_enumeration(seed: int, threshold: int) -> None:
    y, scores, ptr = tiny_tied_queries(seed)
    keep = [q for q, r in enumerate(per_query(ptr)) if (y[r] >= threshold).any()]
    conv = Convention(ties="average", relevance_threshold=threshold, no_relevant="skip")
    ap = metrics.average_precision(y, scores, ptr, convention=conv)
    rr = metrics.reciprocal_rank(y, scores, ptr, convention=conv)
    wta = metrics.winner_takes_all(y, scores, ptr, convention=conv)
    for values in (ap, rr, wta):
        assert np.isnan(np.delete(values, keep)).all()
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in keep])
    yk, sk, pk = y[rows], scores[rows], np.r_[0, np.cumsum(np.diff(ptr)[keep])]
    for values, measure in (
        (ap, lambda ranked: plain_average_precision(ranked, threshold)),
        (rr, lambda ranked: plain_reciprocal_rank(ranked, threshold)),
        (wta, lambda ranked: float(ranked[0] >= threshold)),
    ):
        np.testing.assert_allclose(
            values[keep], brute_force_average(yk, sk, pk, measure), rtol=1e-12
        )


def test_reciprocal_rank_average_ties_in_a_large_block() -> None:
    # 1 relevant document among m tied ones after 3 irrelevant ones: E[1/(3 + J)], J uniform
    m = 400
    y = np.r_[np.zeros(3), 1.0, np.zeros(m - 1)]
    scores = np.r_[np.ones(3) * 2, np.zeros(m)]
    rr = metrics.reciprocal_rank(y, scores, [0, m + 3], convention="sklearn")
    assert rr[0] == pytest.approx(np.mean(1 / (3 + np.arange(1, m + 1))), rel=1e-12)


def test_pessimistic_and_optimistic_ties() -> None:
    y, scores, ptr = np.array([0, 2, 1]), np.zeros(3), np.array([0, 3])
    gains = {"pessimistic": [0, 1, 3], "optimistic": [3, 1, 0], "input_order": [0, 3, 1]}
    for ties, ranked in gains.items():
        conv = Convention(gain="exp2", discount="log2", ties=ties)
        expected = sum(g / math.log2(i + 2) for i, g in enumerate(ranked))
        assert metrics.dcg_at_k(y, scores, ptr, 3, convention=conv)[0] == pytest.approx(
            expected, abs=1e-14
        )
    ap = {
        t: metrics.average_precision(y, scores, ptr, convention=Convention(ties=t))[0]
        for t in ("pessimistic", "optimistic")
    }
    assert ap == {"pessimistic": pytest.approx((1 / 2 + 2 / 3) / 2), "optimistic": 1.0}


# ---------------------------------------------------------------- other measures and presets


def test_lightgbm_preset_conventions() -> None:
    # query 0: no relevant document; query 1: 3 documents ranked (2, 0, 1)
    y = np.array([0, 0, 0, 2, 1])
    scores = np.array([0.5, 0.1, 2.0, 3.0, 1.0])
    ptr = np.array([0, 2, 5])
    ndcg = metrics.ndcg_at_k(y, scores, ptr, 10, convention="lightgbm")
    assert ndcg[0] == 1.0  # LightGBM scores a query without relevant document 1
    assert ndcg[1] == pytest.approx((3 + 1 / 2) / (3 + 1 / math.log2(3)), abs=1e-15)
    # AP@k: LightGBM divides by min(R, k), trec_eval's map_cut by R
    lightgbm = [
        metrics.average_precision(y, scores, ptr, k, convention="lightgbm") for k in (1, 2, 3)
    ]
    trec = [metrics.average_precision(y, scores, ptr, k, convention="trec") for k in (1, 2, 3)]
    assert [v.tolist() for v in lightgbm] == [[1.0, 1.0], [1.0, 0.5], [1.0, (1 + 2 / 3) / 2]]
    assert [v[1] for v in trec] == [0.5, 0.5, (1 + 2 / 3) / 2]
    full = metrics.average_precision(y, scores, ptr, convention="lightgbm")
    assert full.tolist() == [1.0, (1 + 2 / 3) / 2]


def test_no_relevant_skip_is_left_out_of_the_mean() -> None:
    y = np.array([0, 0, 1, 0])
    scores = np.array([1.0, 0.0, 0.0, 1.0])
    ptr = np.array([0, 2, 4])
    conv = Convention(no_relevant="skip")
    result = metrics.evaluate(y, scores, ptr, preset=conv, k=2, per_query=True)
    assert math.isnan(result["per_query"]["map"][0])
    assert result["map"] == 0.5 and result["mrr"] == 0.5 and result["p@2"] == 0.5
    assert result["ndcg@1"] == 0.0
    assert metrics.evaluate(y, scores, ptr, preset=Convention(no_relevant=1.0), k=2)["map"] == 0.75
    assert math.isnan(metrics.mean_over_queries([math.nan, math.nan]))


def test_expected_rank_utility_by_hand() -> None:
    y = np.array([1.0, 3.0, 0.0, 2.0])
    scores = np.array([4.0, 3.0, 2.0, 1.0])
    ptr = np.array([0, 4])
    # neutral 1, half-life 3: weights 2^{-(i-1)/2}, utilities (0, 2, 0, 1) in rank order
    eru = metrics.expected_rank_utility(y, scores, ptr, neutral=1.0, half_life=3.0)
    assert eru[0] == pytest.approx(2 * 2**-0.5 + 1 * 2**-1.5)
    normalized = metrics.expected_rank_utility(
        y, scores, ptr, neutral=1.0, half_life=3.0, normalize=True
    )
    assert normalized[0] == pytest.approx(eru[0] / (2 + 2**-0.5))
    nothing_to_gain = metrics.expected_rank_utility(
        np.zeros(2), np.zeros(2), [0, 2], normalize=True, convention=Convention(no_relevant=1)
    )
    assert nothing_to_gain.tolist() == [1.0]


def test_winner_takes_all_and_reciprocal_rank() -> None:
    y = np.array([0, 1, 2, 0, 0, 1])
    scores = np.array([3.0, 2.0, 1.0, 1.0, 2.0, 0.0])
    ptr = np.array([0, 3, 6])
    assert metrics.winner_takes_all(y, scores, ptr).tolist() == [0.0, 0.0]
    assert metrics.reciprocal_rank(y, scores, ptr).tolist() == [0.5, 1 / 3]
    top_grade = Convention(relevance_threshold=2)
    assert metrics.reciprocal_rank(y, scores, ptr, convention=top_grade).tolist() == [1 / 3, 0]


def test_evaluate_keys_and_per_query() -> None:
    rng = np.random.default_rng(3)
    y, scores, ptr = random_queries(rng, n_queries=5, max_size=8)
    result = metrics.evaluate(y, scores, ptr, preset="letor4", k=3, per_query=True)
    names = ["ndcg@1", "ndcg@2", "ndcg@3", "p@1", "p@2", "p@3", "map", "mrr", "mean_ndcg"]
    assert list(result) == [*names, "per_query"]
    assert list(result["per_query"]) == names
    assert all(len(v) == 5 for v in result["per_query"].values())
    assert result["mrr"] == pytest.approx(np.mean(result["per_query"]["mrr"]))
    ndcg2 = metrics.ndcg_at_k(y, scores, ptr, 2, convention="letor4")
    np.testing.assert_array_equal(result["per_query"]["ndcg@2"], ndcg2)
    ap = metrics.average_precision(y, scores, ptr, convention="letor4")
    np.testing.assert_array_equal(result["per_query"]["map"], ap)
    mean = metrics.mean_ndcg(y, scores, ptr, convention="letor4")
    np.testing.assert_array_equal(result["per_query"]["mean_ndcg"], mean)
    assert "mean_ndcg" in metrics.evaluate(y, scores, ptr, preset="trec", mean_ndcg=True)


def test_gain_table() -> None:
    y, scores, ptr = np.array([2, 0, 1]), np.array([0.0, 2.0, 1.0]), np.array([0, 3])
    table = Convention(gain=[0, 1, 3], discount="letor")
    assert table.gain == (0.0, 1.0, 3.0)
    assert (
        metrics.dcg_at_k(y, scores, ptr, 3, convention=table)[0]
        == (metrics.dcg_at_k(y, scores, ptr, 3, convention="letor3")[0])
    )
    with pytest.raises(ValueError, match=r"y\[0\] is 2.0, which has no entry"):
        metrics.dcg_at_k(y, scores, ptr, 3, convention=Convention(gain=[0, 1]))


# ---------------------------------------------------------------- input checking


def test_query_ptr_from_qid() -> None:
    np.testing.assert_array_equal(metrics.query_ptr_from_qid([7, 7, 3, 9, 9, 9]), [0, 2, 3, 6])
    np.testing.assert_array_equal(metrics.query_ptr_from_qid(["a", "b"]), [0, 1, 2])
    with pytest.raises(ValueError, match="qid 7 reappears at row 3"):
        metrics.query_ptr_from_qid([7, 7, 3, 7])


@pytest.mark.parametrize(
    ("y", "scores", "ptr", "message"),
    [
        ([0, 1, 2], [0.1, 0.2], [0, 3], "y has 3 rows but scores has 2"),
        ([0, 1], [0.1, np.nan], [0, 2], r"scores\[1\] is nan"),
        ([0, 1], [0.1, np.inf], [0, 2], r"scores\[1\] is inf"),
        ([0, -1], [0.1, 0.2], [0, 2], r"y\[1\] is -1.0; grades must be finite and >= 0"),
        ([0, np.nan], [0.1, 0.2], [0, 2], r"y\[1\] is nan"),
        ([0, 1], [0.1, 0.2], [0, 3], "end at the number of rows 2"),
        ([0, 1], [0.1, 0.2], [0, 0, 2], "query 0 has no rows"),
        ([0, 1], [0.1, 0.2], [0.0, 2.0], "integer"),
    ],
)
def test_bad_input_raises(y, scores, ptr, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        metrics.evaluate(y, scores, ptr)


def test_unknown_preset_and_bad_convention() -> None:
    with pytest.raises(ValueError, match="unknown metrics preset 'letor5'.*letor3, letor4"):
        metrics.evaluate([1], [0.0], [0, 1], preset="letor5")
    with pytest.raises(ValueError, match="ties must be one of"):
        Convention(ties="random")
    with pytest.raises(ValueError, match="no_relevant"):
        Convention(no_relevant="drop")
    with pytest.raises(ValueError, match="k must be a positive integer"):
        metrics.ndcg_at_k([1], [0.0], [0, 1], 0)
    assert metrics.get_preset("trec") is metrics.PRESETS["trec"]
