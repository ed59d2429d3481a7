"""scikit-learn conventions: ``check_estimator`` on every ranker, and the behaviour behind it.

Without ``qid`` or ``group`` a ranker takes all rows as one query, which is how
scikit-learn's checks call ``fit(X, y)``. Every check must pass except the ones listed in
:data:`EXPECTED_FAILURES` for a case, each with its reason; a listed check that passes is an
error too, so the list stays exact.

Not run here: ``OrdinalSVMRanker()`` with its default solver (``apg`` on the fixed-margin
dual). scikit-learn's ``check_n_features_in`` fits 100 documents with features around 100
(``normal(loc=100)``) and random labels, where ``apg`` stops at ``max_iter=100000`` with a
relative gap of 3e-5 (a ``SolverError``) after 30 s, and the whole run takes about 100 s;
the OC SVM cases use the certified CVXPY reference (Clarabel) instead.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator
from toolbox import slow_if

from cvxrank.data.ranking_data import RankingData
from cvxrank.data.synthetic import make_synthetic
from cvxrank.estimators import (
    AUCSVM,
    ConeRankRanker,
    IRSVMRanker,
    LinearRanker,
    MethodRanker,
    OrdinalSVMRanker,
    RankMMRanker,
    RankSVMRanker,
)


def grade_gap(higher: float, lower: float) -> float:
    """IR SVM pair weight tau = difference of the grades (module level: it pickles)."""
    return higher - lower


#: Why IR SVM with its default tau fails a check that fits one query with three or more
#: grades (make_blobs labels 0, 1, 2 or ``4 * uniform`` rounded down): tau is the expected
#: drop of NDCG@1 when two documents of a grade pair are swapped (Li 2011, Sect. 4.2), which is
#: 0 for every pair of grades below the query's top grade, and IRSVMRanker refuses such data
#: unless ``tau=`` is given ("IR SVM's tau is 0 for the grade pairs ...").
TAU_IS_ZERO = ("IR SVM's default tau is 0 for grade pairs below the top grade of the one "
               "query; IRSVMRanker refuses that data unless tau= is given")

#: Why ConeRank's default scores fail subset invariance: Alg. 2 (Tran & Pham Sect. 4.3)
#: scores a document by its votes against the other documents of its query (without
#: ``qid`` or ``group`` all rows are one query), so a document's score depends on which
#: other rows are predicted with it; ``scoring="linear"`` (the same ranking) passes.
VOTES_ARE_PER_QUERY = ("ConeRank's vote counts the other documents of the query: a subset "
                       "of the rows is another query")

#: Expected failures per case: check name -> reason. The checks listed for the default IR SVM fit
#: one query with three or four grades; the checks not listed fit two grades (random 0/1
#: labels) or expect an error anyway.
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "irsvm-default-tau": dict.fromkeys((
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_dtype_object",
        "check_estimator_sparse_tag",
        "check_estimator_sparse_array",
        "check_estimator_sparse_matrix",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_dict_unchanged",
        "check_fit2d_predict1d",
    ), TAU_IS_ZERO),
    "conerank": {"check_methods_subset_invariance": VOTES_ARE_PER_QUERY},
}

#: The message (in the exception or its causes) that shows an expected failure has its reason.
FAILURE_CAUSE = {"irsvm-default-tau": "IR SVM's tau is 0 for the grade pairs",
                 "conerank": "is not invariant when applied to a subset"}

#: case -> estimator: each ranker with its defaults (RankSVM: squared hinge, PRSVM+), IR SVM
#: also with an explicit tau, OC SVM through the certified reference (see the module note),
#: RankMM with its defaults (the average loss) and its l1,inf loss on the reference, ConeRank
#: with 4 passes (the conventions do not depend on the number of passes; the default 20 of
#: ConeRank's paper steps fold in every pair of a 150-document query, 7,500 pairs, 200 times
#: per pass: 25-30 s for the checks, and ``test_conerank_estimator.py`` fits the defaults).
CASES: dict[str, LinearRanker] = {
    "ranksvm": RankSVMRanker(),
    "irsvm-default-tau": IRSVMRanker(),
    "irsvm-tau": IRSVMRanker(tau=grade_gap),
    "ocsvm-clarabel": OrdinalSVMRanker(solver="clarabel"),
    "method-ranksvm": MethodRanker(),
    "method-ocsvm-clarabel": MethodRanker(method="ocsvm", solver="clarabel"),
    "aucsvm": AUCSVM(),
    "rankmm": RankMMRanker(),
    "rankmm-max_average-clarabel": RankMMRanker(loss="max_average", solver="clarabel"),
    "conerank": ConeRankRanker(n_passes=4),
    "conerank-eg-linear": ConeRankRanker(variant="eg", scoring="linear"),
}

#: Cases run with one BLAS thread: ConeRank's folding-in multiplies (p x K) by (K x K)
#: matrices, which a multi-threaded OpenBLAS on a busy 2-core machine made 15x slower
#: (spin-waiting): 170 s instead of 13 s for the checks of ``ConeRankRanker()``.
ONE_BLAS_THREAD = ("conerank", "conerank-eg-linear")

#: Cases left to ``make test``: ConeRank's paper steps on every pair of a 150-document query
#: (7,500 pairs), some seconds for the checks; ``test_conerank_estimator.py`` keeps the
#: estimator in the fast loop.
SLOW = ("conerank", "conerank-eg-linear")


def _messages(error: BaseException | None) -> str:
    """The messages of ``error`` and of the exceptions it was raised from."""
    parts = []
    while error is not None:
        parts.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return "\n".join(parts)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", [pytest.param(case, marks=slow_if(case in SLOW))
                                  for case in CASES])
def test_check_estimator(case: str) -> None:
    from cvxrank.utils.threads import blas_threads

    expected = EXPECTED_FAILURES.get(case, {})
    with blas_threads(1) if case in ONE_BLAS_THREAD else nullcontext():
        results: list[dict[str, Any]] = check_estimator(
            CASES[case], expected_failed_checks=expected, on_skip=None, on_fail=None)
    failed = {r["check_name"]: _messages(r["exception"]) for r in results
              if r["status"] == "failed"}
    assert not failed, "\n\n".join(f"{name}:\n{msg}" for name, msg in failed.items())
    xfailed = {r["check_name"]: _messages(r["exception"]) for r in results
               if r["status"] == "xfail"}
    assert set(xfailed) == set(expected), (
        f"listed as failing but passed: {sorted(set(expected) - set(xfailed))}")
    for name, messages in xfailed.items():
        assert FAILURE_CAUSE[case] in messages, f"{name} failed for another reason:\n{messages}"
    assert len({r["check_name"] for r in results}) > 35  # the checks ran


# --------------------------------------------------------------------------- behaviour


@pytest.fixture(scope="module")
def data() -> RankingData:
    return make_synthetic(n_queries=5, docs_per_query=(6, 10), n_features=5, seed=11)


@pytest.mark.parametrize("make", [RankSVMRanker, IRSVMRanker, OrdinalSVMRanker, MethodRanker,
                                  AUCSVM, RankMMRanker, ConeRankRanker])
def test_unfitted_model_raises_not_fitted(data, make: type[LinearRanker]) -> None:
    model = make()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.predict(data.X)
    with pytest.raises(NotFittedError):
        model.score(data.X, (data.y > 0).astype(int))


def test_tags() -> None:
    for model in CASES.values():
        tags = get_tags(model)
        assert tags.input_tags.sparse and tags.target_tags.required
        assert not is_classifier(model)
    assert get_tags(AUCSVM()).classifier_tags.multi_class is False
    assert get_tags(RankSVMRanker()).classifier_tags is None


def test_fit_without_queries_is_one_query(data) -> None:
    one = RankSVMRanker(C=0.5).fit(data.X, data.y)
    grouped = RankSVMRanker(C=0.5).fit(data.X, data.y, group=[data.n_documents])
    same_qid = RankSVMRanker(C=0.5).fit(data.X, data.y, qid=np.zeros(data.n_documents, int))
    per_query = RankSVMRanker(C=0.5).fit(data.X, data.y, qid=data.qid)
    np.testing.assert_array_equal(one.coef_, grouped.coef_)
    np.testing.assert_array_equal(one.coef_, same_qid.coef_)
    assert one.n_pairs_ > per_query.n_pairs_  # pairs across the queries too
    assert one.score(data.X, data.y) == grouped.score(data.X, data.y, group=[data.n_documents])
    assert one.score(data.X, data.y) != one.score(data.X, data.y, qid=data.qid)
    for name in ("coef_", "objective_", "n_iter_", "fit_time_", "solver_", "fit_result_",
                 "n_features_in_", "n_pairs_"):
        assert hasattr(one, name), name
    assert one.n_features_in_ == data.n_features and one.solver_ == "prsvm+"


def test_one_grade_per_query_is_refused(data) -> None:
    constant = np.ones(data.n_documents)
    with pytest.raises(ValueError, match="no preference pairs"):
        RankSVMRanker().fit(data.X, constant)
    # two grades, but never in the same query
    split = (data.query_index % 2).astype(float)
    with pytest.raises(ValueError, match="no preference pairs"):
        RankSVMRanker().fit(data.X, split, qid=data.qid)
    with pytest.raises(ValueError, match=r"1 sample\(s\) .* minimum of 2 is required"):
        RankSVMRanker().fit(data.X[:1], data.y[:1])


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.ones((4, 2)) + 1j, [0, 1, 0, 1], "Complex data not supported"),
        (np.empty((4, 0)), [0, 1, 0, 1], r"0 feature\(s\) \(shape=\(4, 0\)\) while a minimum "
                                         "of 1 is required"),
        (np.empty((0, 2)), [], r"0 sample\(s\)"),
        ([[0.0, np.nan], [1.0, 2.0]], [0, 1], "Input X contains NaN"),
        ([[0.0, np.inf], [1.0, 2.0]], [0, 1], "Input X contains infinity"),
        ([[0.0, 1.0], [1.0, 2.0]], [0, np.nan], "Input y contains NaN"),
        ([0.0, 1.0, 2.0], [0, 1, 2], "Reshape your data"),
        ([[0.0, 1.0], [1.0, 2.0]], None, "requires y to be passed"),
    ],
)
def test_fit_refuses_bad_input_with_sklearn_wording(X: Any, y: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RankSVMRanker().fit(X, y)


def test_predict_validates_X(data) -> None:
    model = RankSVMRanker().fit(data.X, data.y, qid=data.qid)
    with pytest.raises(ValueError, match=r"X has 3 features, but RankSVMRanker is expecting 5 "
                                         r"features as input \(X has shape \(\d+, 3\)"):
        model.predict(data.X[:, :3])
    with pytest.raises(ValueError, match="X has 3 features"):
        model.score(data.X[:, :3], data.y, qid=data.qid)
    with pytest.raises(ValueError, match="Complex data not supported"):
        model.predict(data.X + 1j)
    with pytest.raises(ValueError, match="Reshape your data"):
        model.predict(data.X[0])


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_sparse_input_gives_the_dense_model(data, fmt: str) -> None:
    dense = RankSVMRanker(C=0.5).fit(data.X, data.y, qid=data.qid)
    X = sp.csr_matrix(data.X).asformat(fmt)
    sparse = clone(dense).fit(X, data.y, qid=data.qid)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sparse.predict(X), dense.predict(data.X), rtol=1e-10,
                               atol=1e-12)


def test_method_ranker_fits_ocsvm_like_the_ordinal_ranker(data) -> None:
    generic = MethodRanker(method="ocsvm", C=0.5).fit(data.X, data.y, qid=data.qid)
    named = OrdinalSVMRanker(C=0.5).fit(data.X, data.y, qid=data.qid)
    assert generic.coef_.shape == (data.n_features,)
    np.testing.assert_array_equal(generic.coef_, named.coef_)
    np.testing.assert_array_equal(generic.thresholds_, named.thresholds_)
    np.testing.assert_array_equal(generic.classes_, named.classes_)
    np.testing.assert_array_equal(generic.predict(data.X), named.predict(data.X))
