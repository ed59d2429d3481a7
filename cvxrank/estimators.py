"""scikit-learn style rankers: ``fit(X, y, qid=None, group=None)``, ``predict``, ``score``.

Queries are given the way svm_rank, XGBoost and scikit-learn users know (a per-row ``qid``)
or the LightGBM way (``group`` sizes); with neither, all rows form one query, so
``fit(X, y)`` and ``score(X, y)`` work as a scikit-learn user expects.
``get_params``/``set_params`` come from :class:`sklearn.base.BaseEstimator`, so the
estimators work with ``clone`` and grid search over ``C`` (with a group-aware splitter).

The estimators follow scikit-learn's conventions and pass
:func:`sklearn.utils.estimator_checks.check_estimator` except for the checks that
``tests/estimators/test_sklearn_conventions.py`` lists with their reasons: inputs are validated by
:func:`sklearn.utils.check_X_y` and :func:`sklearn.utils.check_array` (dense or any sparse
format, converted to float64 or CSR; complex, non-finite, empty and one-dimensional input
is refused with scikit-learn's wording), ``predict`` before ``fit`` raises
:class:`sklearn.exceptions.NotFittedError`, and the tags say that sparse input works and
that ``y`` is required.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_X_y
from sklearn.utils.validation import check_is_fitted

from cvxrank.core.trace import Run
from cvxrank.data.model_file import SavedModel, linear_scores, read_model
from cvxrank.data.pairs import DEFAULT_MAX_PAIRS
from cvxrank.data.ranking_data import Matrix, RankingData
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.base import Formulation, Objective
from cvxrank.formulations.irsvm import IRSVM
from cvxrank.formulations.ocsvm import OrdinalSVM, OrdinalSVMSumOfMargins, grades_from_scores
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.metrics import auc, evaluate

if TYPE_CHECKING:
    from sklearn.utils import Tags

    from cvxrank.data.normalize import Normalization


def _queries(n: int, qid: Any | None, group: Any | None) -> dict[str, Any]:
    """Keyword arguments of :meth:`RankingData.from_arrays`: one query when neither is given."""
    if qid is None and group is None:
        return {"group": [n]}
    return {"qid": qid, "group": group}


class LinearRanker(BaseEstimator):
    """Base class: a linear scoring function ``s(x) = x @ coef_`` fitted by a formulation.

    Subclasses implement :meth:`_formulation` (and, for a model that is not one weight
    vector, :meth:`_set_model`). ``solver="auto"`` picks
    :func:`cvxrank.fitting.default_solver` (PRSVM+ for the squared hinge and Huber losses,
    the 1-slack cutting plane for the hinge). The fit goes on past its tolerance until the
    model radius is at most :data:`cvxrank.tolerances.MODEL_RADIUS` of ``||w||``
    (:func:`cvxrank.fitting.fit_formulation`); a solver that stops before its tolerance
    (iteration limit, Ctrl-C) still gives its last certified iterate, with a
    :class:`~sklearn.exceptions.ConvergenceWarning`. After :meth:`fit` the estimator has
    ``coef_`` (weights), ``objective_`` (the formulation's ``primal_value`` at the fitted
    point), ``n_iter_``, ``fit_time_``, ``solver_``, ``status_`` (the run's
    :class:`~cvxrank.core.trace.Status` value), ``w_radius_`` (certified bound on
    ``||coef_ - w*||``), ``n_features_in_``, ``n_pairs_`` (preference pairs, the dual
    variables of the pairwise methods), ``fit_result_`` (the full
    :class:`cvxrank.core.trace.Run`) and ``normalization_`` (None: the features are scored as
    given).

    A model saved by ``cvxrank fit --save-model`` loads as its method's fitted estimator
    (:func:`load_model`); when the fit normalized the features (``--normalize``),
    ``normalization_`` holds that map and :meth:`predict` and :meth:`score` apply it to
    ``X`` first (per query for ``query-minmax``: give ``qid`` or ``group``).
    """

    #: The method of the table :data:`cvxrank.methods.METHODS` whose parameters it takes.
    _method = "ranksvm"

    def _formulation(self, data: RankingData) -> Formulation:
        raise NotImplementedError

    def _method_name(self) -> str:
        """The name of the estimator's method in :data:`cvxrank.methods.METHODS`."""
        return self._method

    def _check_params(self) -> None:
        """Check the estimator's values of its method's parameters as the command line and
        model files do (each :class:`cvxrank.methods.Param`'s constraint, declared once in
        the table); None stands for the default."""
        from cvxrank.methods import get

        given = self.get_params()
        for param in get(self._method_name()).params:
            if given.get(param.name) is not None:
                param.check(given[param.name])

    def __sklearn_tags__(self) -> Tags:
        """scikit-learn tags: sparse input works, ``y`` (the grades) is required."""
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags

    def fit(
        self,
        X: Any,
        y: Any,
        qid: Any | None = None,
        group: Any | None = None,
    ) -> LinearRanker:
        """Fit on documents ``X`` with grades ``y``, grouped by ``qid`` or ``group`` sizes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, n_features)
            Finite real features, at least two documents and one feature.
        y : array-like of shape (n_documents,)
            Relevance grades (finite numbers; larger is more relevant).
        qid : array-like of shape (n_documents,), optional
            Query id per row (svm_rank / XGBoost / scikit-learn convention).
        group : array-like of int, optional
            Consecutive query sizes (LightGBM convention). With neither ``qid`` nor
            ``group``, all rows are one query.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For invalid input (scikit-learn's messages), or when no query has documents of
            two different grades (there are no preference pairs to learn from).
        """
        self._check_params()
        X, y = check_X_y(X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True,
                         ensure_min_samples=2, estimator=self)
        data = RankingData.from_arrays(X, y, **_queries(X.shape[0], qid, group))
        formulation, run = self._fit_data(data)
        if not run.finished:
            warnings.warn(f"{type(self).__name__}: {run.solver} stopped with status "
                          f"{run.status.value} ({run.message}); the model is its last "
                          f"certified iterate (relative gap {run.relative_gap:.2e}, "
                          f"w_radius {run.w_radius:.2e})", ConvergenceWarning, stacklevel=2)
        self._set_model(formulation, run)
        self.objective_ = run.objective
        self.n_iter_ = run.n_iter
        self.fit_time_ = run.time
        self.solver_ = run.solver
        self.status_ = run.status.value
        self.w_radius_ = run.w_radius
        self.fit_result_ = run
        self.n_features_in_ = data.n_features
        self.normalization_ = None
        sizes = formulation.sizes()
        self.n_pairs_ = sizes.get("n_pairs", sizes.get("n_dual"))
        return self

    def _fit_data(self, data: RankingData) -> tuple[Objective, Run]:
        """The formulation of ``data`` and its run (:func:`~cvxrank.fitting.fit_formulation`
        with the estimator's solver and options)."""
        formulation = self._formulation(data)
        return formulation, fit_formulation(formulation, self._solver_name(), tol=self.tol,
                                            max_iter=self._max_iter(), seed=self._seed(),
                                            **self._solver_options())

    def _solver_name(self) -> str:
        """The solver :func:`~cvxrank.fitting.fit_formulation` runs (``solver``)."""
        return self.solver

    def _max_iter(self) -> int | None:
        """The solver's iteration limit (``max_iter``)."""
        return self.max_iter

    def _seed(self) -> int | None:
        """The solver's seed (None: the linear rankers' solvers are deterministic, or draw
        from their own default)."""
        return None

    def _solver_options(self) -> dict[str, Any]:
        """The solver's own options (none for the linear rankers)."""
        return {}

    def _solver_params(self, solver: str) -> dict[str, Any]:
        """The parameters that make :meth:`_solver_name` the solver ``solver`` (the inverse
        of :meth:`_solver_name`; a saved model records the solver's name)."""
        return {"solver": solver}

    def _set_saved(self, model: SavedModel) -> None:
        """The fitted attributes of a saved model (:func:`load_model`): ``coef_`` (an
        ordinal model's ``thresholds_`` and ``classes_``), ``n_features_in_``,
        ``normalization_`` and the fit's ``objective_``, ``n_iter_``, ``solver_``,
        ``status_`` and ``w_radius_``."""
        self.coef_ = model.weights.copy()
        if "thresholds" in model.arrays:
            self.thresholds_ = model.arrays["thresholds"].copy()
            self.classes_ = model.arrays["grades"].copy()
        self.objective_ = model.objective
        self.n_iter_ = model.iterations
        self.solver_ = model.solver
        self.status_ = model.status
        self.w_radius_ = model.w_radius
        self.n_features_in_ = model.n_features
        self.normalization_ = (None if model.normalization.kind == "none"
                               else model.normalization)
        # data with fewer columns is padded with zeros, as `cvxrank predict` pads a file
        # whose last features SVMlight left out
        self.pads_features_ = True

    def _set_model(self, formulation: Objective, run: Run) -> None:
        """``coef_`` (the scoring weights) and, for an ordinal model, its thresholds."""
        self.coef_ = run.w
        self._split_solution(formulation)

    def _split_solution(self, formulation: Formulation) -> None:
        """Keep the weights in ``coef_``; an ordinal model's primal point also holds thresholds.

        For OC SVM (whichever estimator fits it: :class:`OrdinalSVMRanker` or
        ``MethodRanker(method="ocsvm")``) this sets ``thresholds_`` and ``classes_``.
        """
        if not isinstance(formulation, OrdinalSVM | OrdinalSVMSumOfMargins):
            return
        parts = formulation.split(self.coef_)
        self.coef_ = parts[0]
        self.thresholds_ = parts[1] if len(parts) == 2 else 0.5 * (parts[1] + parts[2])
        self.classes_ = np.asarray(formulation.grades)

    def _check_X(self, X: Any) -> Matrix:
        """``X`` validated for a fitted model: float64 array or CSR with ``n_features_in_``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            For invalid input, or a number of features other than in :meth:`fit` (a model
            loaded from a file, ``pads_features_``, pads fewer with zero columns, as
            ``cvxrank predict`` does).
        """
        check_is_fitted(self)
        M = check_array(X, accept_sparse="csr", dtype=np.float64, estimator=self)
        if getattr(self, "pads_features_", False) and M.shape[1] < self.n_features_in_:
            M = RankingData.from_arrays(M, np.zeros(M.shape[0]), group=[M.shape[0]]
                                        ).pad_features(self.n_features_in_).X
        if M.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {M.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input (X has shape {M.shape}; fit "
                f"had (n, {self.n_features_in_}))"
            )
        return M

    def _features(self, X: Any, qid: Any | None, group: Any | None) -> Matrix:
        """``X`` validated (:meth:`_check_X`) and mapped by ``normalization_`` (if any),
        its queries given by ``qid`` or ``group`` (neither: one query); rows in the given
        order."""
        M = self._check_X(X)
        normalization: Normalization | None = getattr(self, "normalization_", None)
        if normalization is None:
            return M
        data = RankingData.from_arrays(M, np.zeros(M.shape[0]),
                                       **_queries(M.shape[0], qid, group))
        mapped = normalization.apply(data).X
        return mapped if data.order is None else mapped[np.argsort(data.order)]

    def predict(self, X: Any, qid: Any | None = None, group: Any | None = None) -> np.ndarray:
        """Ranking scores ``X @ coef_`` (higher is more relevant).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, ``n_features_in_``)
        qid, group : array-like, optional
            As in :meth:`fit`; used only by a loaded model whose features are normalized
            per query (``normalization_``).

        Returns
        -------
        ndarray of shape (n_documents,)
        """
        return linear_scores(self._features(X, qid, group), self.coef_)

    def score(
        self,
        X: Any,
        y: Any,
        qid: Any | None = None,
        group: Any | None = None,
        *,
        k: int = 10,
        preset: str = "letor3",
    ) -> float:
        """Mean NDCG@k over the queries (``letor3`` conventions unless told otherwise).

        ``qid`` and ``group`` are as in :meth:`fit` (neither: one query).
        """
        M = self._features(X, qid, group)
        data = RankingData.from_arrays(M, y, **_queries(M.shape[0], qid, group))
        scores = linear_scores(data.X, self.coef_)
        return float(evaluate(data.y, scores, data.query_ptr, preset=preset, k=k)[f"ndcg@{k}"])


class MethodRanker(LinearRanker):
    """Any method of the table :data:`cvxrank.methods.METHODS`, by name.

    The estimator of a method family that needs no parameters of its own beyond C and the
    loss: ``MethodRanker(method="ranksvm", C=1e-3)`` fits what ``cvxrank fit --method
    ranksvm --C 1e-3`` fits.

    Parameters
    ----------
    method : str
        A name of :data:`cvxrank.methods.METHODS`.
    C : float, default 1.0
        Loss weight (> 0).
    loss : str or None
        One of the method's losses (None: its first).
    solver, tol, max_iter
        As in :class:`RankSVMRanker`.
    """

    def __init__(self, method: str = "ranksvm", C: float = 1.0, loss: str | None = None,
                 solver: str = "auto", tol: float | None = None,
                 max_iter: int | None = None) -> None:
        self.method = method
        self.C = C
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter

    def _method_name(self) -> str:
        return self.method

    def _formulation(self, data: RankingData) -> Formulation:
        from cvxrank.methods import get

        return get(self.method).build(data, loss=self.loss, C=self.C)


class _PairwiseRanker(LinearRanker):
    """The parameters of the pairwise SVM rankers (:class:`RankSVMRanker`,
    :class:`IRSVMRanker`, :class:`RankMMRanker`), fitted in memory or, with
    ``backend="dask"``, over the data split by query on a Dask cluster
    (:mod:`cvxrank.distributed`: the in-memory formulation built on each shard, the same
    solvers and certificates)."""

    def __init__(
        self,
        C: float = 1.0,
        loss: str = "squared_hinge",
        solver: str = "auto",
        tol: float | None = None,
        max_iter: int | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        backend: str = "memory",
        n_shards: int | None = None,
        scheduler: str | None = None,
        workers: int = 2,
    ) -> None:
        self.C = C
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.max_pairs = max_pairs
        self.backend = backend
        self.n_shards = n_shards
        self.scheduler = scheduler
        self.workers = workers

    def _formulation(self, data: RankingData) -> Formulation:
        return RankSVM(data, C=self.C, loss=self.loss, max_pairs=self.max_pairs)

    def _sharded(self, shards: Any) -> Objective:
        """The ranker's objective on ``shards`` (a
        :class:`~cvxrank.distributed.ShardedRankingData`)."""
        from cvxrank.distributed import ShardedRankSVM

        return ShardedRankSVM(shards, C=self.C, loss=self.loss)

    def _fit_data(self, data: RankingData) -> tuple[Objective, Run]:
        """In memory, or on Dask shards (``backend="dask"``: :func:`cvxrank.distributed.
        fit_sharded`)."""
        if self.backend not in ("memory", "dask"):
            raise ValueError(f"backend must be 'memory' or 'dask', got {self.backend!r}")
        if self.backend == "memory":
            return super()._fit_data(data)
        from cvxrank.distributed import ShardedRankingData, connect, fit_sharded

        with connect(self.scheduler, self.workers) as client:
            shards = ShardedRankingData.from_data(data, client,
                                                  self.n_shards or 2 * self.workers)
            formulation = self._sharded(shards)
            return formulation, fit_sharded(formulation, self._solver_name(), tol=self.tol,
                                            max_iter=self._max_iter(),
                                            **self._solver_options())


class RankSVMRanker(_PairwiseRanker):
    """Ranking SVM (Herbrich et al.; Joachims) on all preference pairs of each query.

    .. math::

        \\min_w \\; \\tfrac12 \\|w\\|^2 + C \\sum_{(i,j): y_i > y_j} \\ell(w^\\top (x_i - x_j))

    with ``l(t) = max(0, 1 - t)`` (hinge), ``max(0, 1 - t)^2`` (squared hinge) or the Huber
    loss of Chapelle & Keerthi (Sect. 4.1). Note that Chapelle's published code scales the
    loss by C/2, so its C is twice this one.

    Parameters
    ----------
    C : float, default 1.0
        Loss weight (> 0).
    loss : PairLoss or {"hinge", "squared_hinge", "huber"}, default "squared_hinge"
        A loss of :mod:`cvxrank.losses` (``cvxrank.losses.squared_hinge`` fits exactly as
        its name) or a researcher's ramp (:meth:`cvxrank.losses.PairLoss.piecewise`).
    solver : str, default "auto"
        A CVXPY solver name (certified reference) or a hand-written solver of
        :mod:`cvxrank.registry` (``prsvm+``, ``prsvm``, ``apg``, ``pg``, ``sgd-pairs``,
        ``sgd-queries``); ``auto`` picks :func:`cvxrank.fitting.default_solver`.
    tol : float, optional
        Tolerance of a hand-written solver (its default when None).
    max_iter : int, optional
        Iteration limit of a hand-written solver.
    max_pairs : int
        Refuse data sets with more preference pairs than this.
    backend : {"memory", "dask"}, default "memory"
        ``"dask"``: one fit over the data split by query into ``n_shards`` shards on a Dask
        cluster (:mod:`cvxrank.distributed`; PRSVM+, PRSVM or the 1-slack, with the same
        certificates); the fitted attributes are those of an in-memory fit, and
        ``fit_result_.info`` splits its time into ``compute_time``,
        ``communication_time`` and ``master_time``.
    n_shards : int, optional
        Shards of a Dask fit (default: twice the workers).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); None: a local cluster of
        ``workers`` processes started for the fit.
    workers : int, default 2
        Worker processes of that local cluster.

    References
    ----------
    Hang Li, "A Short Introduction to Learning to Rank", IEICE 2011, Sect. 4.1.
    O. Chapelle and S. S. Keerthi, "Efficient algorithms for ranking with SVMs", Information
    Retrieval 13, 2010, Eq. (1).
    """


class IRSVMRanker(_PairwiseRanker):
    """IR SVM (Cao et al. 2006; Li 2011, Sect. 4.2): RankSVM with pair weights tau_k mu_q.

    .. math::

        \\min_w \\; \\tfrac12 \\|w\\|^2 + C \\sum_{(i,j)} \\tau_{t(i,j)}\\, \\mu_{q}\\,
        \\ell(w^\\top (x_i - x_j))

    with :math:`\\tau` per pair of grades (default: the expected drop of NDCG@1 when two
    documents of the grade pair are swapped, :func:`cvxrank.formulations.irsvm.ndcg1_swap_drop`)
    and :math:`\\mu_q = 1/n_q` per query. See :class:`RankSVMRanker` for the other
    parameters (with ``backend="dask"`` tau is reduced from the shards: the in-memory tau);
    ``tau`` is a mapping ``{(higher_grade, lower_grade): weight}`` or a function of the two
    grades. The paper's loss is the hinge (the default here); the squared hinge and Huber
    losses give the fast Newton solver (PRSVM+) with the same weights.
    """

    _method = "irsvm"

    def __init__(
        self,
        C: float = 1.0,
        loss: str = "hinge",
        tau: Any | None = None,
        solver: str = "auto",
        tol: float | None = None,
        max_iter: int | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        backend: str = "memory",
        n_shards: int | None = None,
        scheduler: str | None = None,
        workers: int = 2,
    ) -> None:
        super().__init__(C=C, loss=loss, solver=solver, tol=tol, max_iter=max_iter,
                         max_pairs=max_pairs, backend=backend, n_shards=n_shards,
                         scheduler=scheduler, workers=workers)
        self.tau = tau

    def _formulation(self, data: RankingData) -> Formulation:
        return IRSVM(data, C=self.C, loss=self.loss, tau=self.tau,  # type: ignore[arg-type]
                     max_pairs=self.max_pairs)

    def _sharded(self, shards: Any) -> Objective:
        from cvxrank.distributed import ShardedIRSVM

        return ShardedIRSVM(shards, C=self.C, loss=self.loss, tau=self.tau)


class AUCSVM(RankSVMRanker):
    """AUC maximization: RankSVM on one query with two grades (Chapelle & Keerthi Sect. 5.2).

    The AUC of a scorer is the fraction of (positive, negative) pairs it orders correctly, so
    the RankSVM objective over those pairs is a convex surrogate of 1 - AUC. ``fit(X, y)``
    takes binary labels (any two distinct values; the larger is the positive class) and
    treats all rows as one query; PRSVM+ then costs O(nd + n log n) per Newton iteration
    where the pairs number about n^2 / 4. ``score`` is the AUC
    (:func:`cvxrank.metrics.auc`, equal to :func:`sklearn.metrics.roc_auc_score`).
    See :class:`RankSVMRanker` for the parameters.

    Its scikit-learn tags carry ``classifier_tags.multi_class = False`` (binary labels only;
    scikit-learn's checks then give it two-class targets), while it stays a ranker, not a
    classifier: ``predict`` returns scores, not labels.
    """

    def __sklearn_tags__(self) -> Tags:
        """The ranker's tags, with binary class labels as the target."""
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()
        tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags

    def fit(self, X: Any, y: Any) -> AUCSVM:  # type: ignore[override]
        """Fit on rows ``X`` with binary labels ``y`` (one query)."""
        super().fit(X, y)
        return self

    def _formulation(self, data: RankingData) -> Formulation:
        n_labels = np.unique(data.y).size
        if n_labels != 2:
            raise ValueError(f"AUCSVM needs binary labels (exactly two distinct values); got "
                             f"{n_labels} distinct values")
        return super()._formulation(data)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``X @ coef_`` (larger means more likely positive)."""
        return self.predict(X)

    def score(self, X: Any, y: Any) -> float:  # type: ignore[override]
        """AUC of the scores on ``(X, y)``."""
        labels = np.asarray(y, dtype=np.float64)
        positive = (labels == labels.max()).astype(np.float64)
        return float(auc(positive, self.predict(X), np.array([0, labels.size]),
                         convention="sklearn")[0])


class OrdinalSVMRanker(LinearRanker):
    """OC SVM (Shashua & Levin 2002; Li 2011, Sect. 3.1): parallel hyperplanes between grades.

    A pointwise method: the grades are ordinal classes, separated by thresholds
    :math:`b_1, ..., b_{l-1}` on the score :math:`\\langle w, x \\rangle` with a fixed margin
    (``margin="fixed"``, :class:`cvxrank.formulations.ocsvm.OrdinalSVM`) or the sum-of-margins
    variant (``margin="sum"``, :class:`cvxrank.formulations.ocsvm.OrdinalSVMSumOfMargins`,
    solved by the CVXPY reference). ``predict`` gives ranking scores, ``predict_grades`` the
    grade of each row by Li's rule (the smallest r with :math:`\\langle w, x \\rangle - b_r
    < 0`). ``qid``/``group`` are accepted for a uniform interface; queries play no role.

    Parameters
    ----------
    C : float, default 1.0
        Loss weight (> 0; the sum-of-margins variant needs :math:`C \\min(m_1, m_l) > 1`).
    margin : {"fixed", "sum"}
    solver : str, default "auto"
        ``auto``: ``apg`` on the fixed-margin dual, the ECOS reference for the sum of margins
        (:func:`cvxrank.fitting.default_solver`).
    tol, max_iter
        As in :class:`RankSVMRanker`.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        Weights w.
    thresholds_ : ndarray of shape (l - 1,)
        :math:`b_r` (for ``margin="sum"``, the midpoints of the margins :math:`(a_r + b_r)/2`).
    classes_ : ndarray of shape (l,)
        The grade values, increasing.
    """

    _method = "ocsvm"

    def __init__(self, C: float = 1.0, margin: str = "fixed", solver: str = "auto",
                 tol: float | None = None, max_iter: int | None = None) -> None:
        self.C = C
        self.margin = margin
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter

    def _formulation(self, data: RankingData) -> Formulation:
        if self.margin == "fixed":
            return OrdinalSVM(data, C=self.C)
        if self.margin == "sum":
            return OrdinalSVMSumOfMargins(data, C=self.C)
        raise ValueError(f"margin must be 'fixed' or 'sum', got {self.margin!r}")

    def predict_grades(self, X: Any, qid: Any | None = None,
                       group: Any | None = None) -> np.ndarray:
        """Grade of each row of ``X`` (values of :attr:`classes_`); ``qid`` and ``group`` as
        in :meth:`predict`."""
        return grades_from_scores(self.predict(X, qid, group), self.thresholds_,
                                  self.classes_)


class RankMMRanker(_PairwiseRanker):
    r"""RankMM-1/2/3 (Agarwal & Collins 2010): query-level losses of the relevance-weighted hinge.

    For m training queries (every query of the data, with preference pairs or not), the
    preference pairs :math:`R_i = \{(j, k) : y_j > y_k\}` of query i and the
    relevance-weighted pair hinge :math:`\ell_{jk}(w) = [(y_j - y_k) - w^\top(x_j -
    x_k)]_+` (Sect. 2),

    .. math::

        \min_w \; \tfrac12 \|w\|^2 + \frac{C}{m} \sum_{i=1}^m L_i(w)

    with the query-level loss

    * ``"average"`` (RankMM-1, Sect. 3.1): :math:`L_i = \frac{1}{|R_i|}
      \sum_{(j,k) \in R_i} \ell_{jk}`;
    * ``"max"`` (RankMM-2, Sect. 3.2): :math:`L_i = \max_{(j,k) \in R_i} \ell_{jk}`;
    * ``"max_average"`` (RankMM-3, Sect. 3.3): :math:`L_i = \max_{k : |P_{ik}| > 0}
      \frac{1}{|P_{ik}|} \sum_{j \in P_{ik}} \ell_{jk}`, :math:`P_{ik} = \{j : y_j >
      y_k\}`;

    a query without preference pairs has :math:`L_i = 0` (it still counts in m). The
    formulation is :class:`cvxrank.formulations.rankmm.RankMM`, whose docstring gives the
    three duals as printed (box, simplex, :math:`\ell_{1,\infty}` ball) and the map
    :math:`p^* = -\kappa\, Q^*_{\text{printed}}` from each printed dual to the primal
    optimum. ``objective_`` is the primal objective above at ``coef_``.

    The two max losses can have the zero model as their optimum: at w = 0 every hinge is
    active, so :math:`w = 0` is optimal exactly when 0 is a subgradient of
    :math:`\sum_i L_i` there, a condition that does not involve C (for the average loss
    the loss is differentiable at 0 and its gradient is 0 only by accident).

    Parameters
    ----------
    C : float, default 1.0
        The paper's C (> 0): the loss term is :math:`\frac{C}{m} \sum_i L_i`, with m the
        number of training queries (the paper's grid is 0.1 ... 1000, Sect. 4).
    loss : {"average", "max", "max_average"}, default "average"
        RankMM-1, RankMM-2 or RankMM-3.
    solver : str, default "auto"
        A CVXPY solver name (``clarabel``, ...: the certified reference) or a hand-written
        solver registered for the loss (:mod:`cvxrank.registry`: ``cutting-plane`` on each
        loss, ``apg`` on the box dual, the paper's stochastic ``sgp`` on the box and
        :math:`\ell_{1,\infty}` duals, ``seg`` and ``seg-pairs`` on the simplex dual);
        ``auto`` picks the first of the ``rankmm`` row of
        :data:`cvxrank.methods.METHODS` that is registered and applies
        (:func:`cvxrank.fitting.default_solver`), else the CVXPY reference.
    tol : float, optional
        Relative duality-gap tolerance of a hand-written solver (its default when None).
    max_iter : int, optional
        Iteration (step) limit of a hand-written solver.
    max_pairs : int
        Refuse data sets with more preference pairs than this.
    backend, n_shards, scheduler, workers
        As in :class:`RankSVMRanker` (on shards: the n-slack cutting plane, its separation
        oracle run where each query lives; no ``fit_result_.alpha``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights w.
    objective_ : float
        :math:`\tfrac12 \|w\|^2 + \frac{C}{m} \sum_i L_i(w)` at ``coef_``.
    n_pairs_ : int
        Preference pairs :math:`\sum_i |R_i|` (the ``"max"`` dual also has one
        :math:`\alpha^i_0` per query with pairs: ``fit_result_.alpha``).

    References
    ----------
    S. Agarwal and M. Collins, "Maximum Margin Ranking Algorithms for Information
    Retrieval", ECIR 2010, Sect. 2 (the relevance-weighted hinge) and Sects. 3.1-3.3 (the
    three losses, their duals and stochastic solvers).
    """

    _method = "rankmm"

    def __init__(
        self,
        C: float = 1.0,
        loss: str = "average",
        solver: str = "auto",
        tol: float | None = None,
        max_iter: int | None = None,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        backend: str = "memory",
        n_shards: int | None = None,
        scheduler: str | None = None,
        workers: int = 2,
    ) -> None:
        super().__init__(C=C, loss=loss, solver=solver, tol=tol, max_iter=max_iter,
                         max_pairs=max_pairs, backend=backend, n_shards=n_shards,
                         scheduler=scheduler, workers=workers)

    def _formulation(self, data: RankingData) -> Formulation:
        return RankMM(data, C=self.C, loss=self.loss,  # type: ignore[arg-type]
                      max_pairs=self.max_pairs)

    def _sharded(self, shards: Any) -> Objective:
        from cvxrank.distributed import ShardedQueryBlocks

        return ShardedQueryBlocks(shards, RankMM, C=self.C, loss=self.loss)


class ConeRankRanker(LinearRanker):
    r"""ConeRank (Tran & Pham): a polyhedral cone learned from the pair differences.

    The ordered pairs :math:`r_l > r_m` of each query give differences :math:`z = x_l -
    x_m`, normalized by (5), :math:`z \leftarrow \rho z / (\alpha + \|z\|_2)`, and weighted
    by the relevance difference :math:`\phi = r_l - r_m` (7). The model is a basis
    :math:`U = [u_1, \dots, u_K]` whose conic hull holds them: the approximate formulation
    (18) (Sect. 4),

    .. math::

        \min_{U, \{w_j\}} \frac{1}{P} \sum_{i=1}^P \frac{1}{n_{q_i}} \sum_{j=1}^{n_{q_i}}
        \phi_j \|z_j - U w_j\|_2^2 \quad \text{s.t. } \|u_k\|_2 \le c,\; w_j \ge 0,\;
        \lambda_l \le \|w_j\|_1 \le \lambda_u,

    (:math:`\lambda_l = \lambda_u = 1` is (18); a wider band is the cone regularization
    (8) of (9)); P counts the queries with pairs. It is not convex; both solvers alternate its
    convex blocks (Alg. 1), the folding-in of every pair's coefficients and the basis
    update. A document's score is Alg. 2's vote (Sect. 4.3): for every pair (l, m) of its
    query, the test difference is folded in without constraints (least squares) and the
    document whose side the coefficients' sum favours gets a vote. That vote prefers l
    exactly when :math:`v^\top x_l > v^\top x_m` with :math:`v = (U^+)^\top 1` (``coef_``,
    :func:`cvxrank.formulations.conerank.linear_direction`), so ``scoring="linear"`` ranks every
    query as the vote does up to ties, in :math:`O(n_q N)` instead of :math:`O(n_q^2 N)`
    (``benchmarks/bench_conerank_predict.py``).

    The paper z-scores the features with the training set's mean and standard deviation
    (Sect. 6.1); this estimator uses the features as given (scale them first, e.g. with
    :class:`sklearn.preprocessing.StandardScaler` fitted on the training documents).

    Parameters
    ----------
    K : int, default 10
        Number of basis vectors (Sect. 6.2: the paper's choice, from Fig. 3).
    variant : {"sg", "eg"}, default "sg"
        The folding-in step: clip-and-normalize gradient (Alg. 1 steps 1a-1c, ConeRank-SG)
        or exponentiated gradient (Sect. 4.2, ConeRank-EG).
    solver : {"stochastic", "alternation"}, default "stochastic"
        ``"stochastic"``: the paper's Alg. 1 one query at a time with fixed steps
        (Sect. 4.1, :func:`cvxrank.solvers.conerank.solve_stochastic`);
        ``"alternation"``: Alg. 1 with both blocks over all pairs solved to a certified gap,
        the objective (18) never increasing
        (:func:`cvxrank.solvers.conerank.solve_alternation`).
    mu : float or None, default None
        The stochastic solver's step; None is the paper's (Sect. 6.1): 0.001 for SG, 0.005
        for EG. Not taken by the alternation.
    n_passes : int or None, default None
        Passes over the training queries (stochastic), or most outer iterations
        (alternation, which also stops when an iteration lowers (18) by less than ``tol``).
        None: 20 passes for SG, 5 for EG (:data:`cvxrank.solvers.conerank.STOCHASTIC_PASSES`), where
        the validation MAP of LETOR 4.0 MQ2008 Fold1 peaks at the paper's steps (see
        Notes); 200 outer iterations for the alternation.
    c : float or None, default None
        Radius of each basis vector's ball; None is the paper's :math:`2\rho`.
    lambda_l, lambda_u : float, default 1.0
        The coefficient band (8); 1, 1 is (18), which the stochastic solver and EG need.
    alpha : float, default 1.0
        :math:`\alpha` of the normalization (5).
    rho : float or None, default None
        :math:`\rho` of (5); None is the paper's :math:`\sqrt N`.
    scoring : {"vote", "linear"}, default "vote"
        ``predict`` and ``score`` by Alg. 2's vote per query, or by ``X @ coef_``.
    tol : float or None, default None
        The alternation's relative decrease per outer iteration below which it stops
        (None: its default, 1e-6); not taken by the stochastic solver.
    random_state : int or None, default 0
        Seed of the random start (Sect. 6.1: directions uniform on the sphere of radius c,
        coefficients uniform, normalized) and of the stochastic solver's query order.

    Attributes
    ----------
    U_ : ndarray of shape (n_features, K)
        The basis; its columns span the cone.
    coef_ : ndarray of shape (n_features,)
        :math:`v = (U^+)^\top 1`, the linear scorer equivalent to the vote.
    objective_ : float
        The objective (18) at the fitted basis and coefficients.
    n_iter_ : int
        Passes (stochastic) or outer iterations (alternation) run.
    run_ : cvxrank.core.trace.Run
        The solver's record (``w`` is the stacked ``(U, W)``); also ``fit_result_``.
    n_pairs_ : int
        Ordered training pairs (the coefficient vectors :math:`w_j`).
    fit_time_, solver_, n_features_in_
        As for the other rankers (``solver_`` is ``"stochastic-sg"``, ...).

    Notes
    -----
    The default ``n_passes`` was measured on LETOR 4.0 MQ2008 Fold1: trained on train.txt
    (471 queries, 52,325 ordered pairs, N = 46) with the features z-scored by the training
    mean and standard deviation (Sect. 6.1), K = 10 and the paper's mu, alpha, rho and c;
    MAP of vali.txt by :func:`cvxrank.metrics.evaluate` (``preset="letor4"``) after each
    pass, seeds 0 and 1 (their mean; the vote's MAP agreed with the linear scorer's to
    1e-4, the difference being ties):

    ======  ================================  ================================
    passes  SG (mu = 0.001)                   EG (mu = 0.005)
    ======  ================================  ================================
    1       0.304                             0.387
    3       0.370                             0.467
    4       0.389                             **0.473** (seeds: 0.470, 0.476)
    5       0.410                             0.472 (seeds: 0.470, 0.474)
    10      0.456                             0.453
    15      0.465                             0.437
    20      **0.469** (seeds: 0.462, 0.475)   0.428
    25      0.470                             --
    30      0.466                             --
    45      0.451                             --
    ======  ================================  ================================

    SG's MAP has a plateau from about 15 to 26 passes (highest mean 0.470 at 22 and 25),
    EG's peaks at 4-5 passes (0.473, 0.472); both at mu x passes of about 0.02. After that the
    objective (18) keeps falling and the MAP falls with it: the number of passes
    regularizes. The test MAP (test.txt) at the defaults was 0.424 (SG) and 0.423 (EG);
    the paper reports 0.454 and 0.444 averaged over the five folds (Table 1). The
    alternation (seed 0) reaches a far lower objective, 10.4 after 15 outer iterations
    against 30.0 for SG at 20 passes, with a worse validation MAP: 0.407 after one outer
    iteration, 0.361 after 5 and 0.350 after 15 (SG folding-in; EG 0.407, 0.363 and 0.358
    after 1, 5 and 8).

    References
    ----------
    T. T. Tran and D.-S. Pham, "ConeRANK: Ranking as Learning Generalized Inequalities":
    Sects. 3.2-3.3 (eqs. (1)-(9)), Sect. 4 ((18), Alg. 1, Sects. 4.1-4.2), Sect. 4.3
    (Alg. 2), Sect. 6.1 (settings).
    """

    _method = "conerank"

    def __init__(
        self,
        K: int = 10,
        variant: str = "sg",
        solver: str = "stochastic",
        mu: float | None = None,
        n_passes: int | None = None,
        c: float | None = None,
        lambda_l: float = 1.0,
        lambda_u: float = 1.0,
        alpha: float = 1.0,
        rho: float | None = None,
        scoring: str = "vote",
        tol: float | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.K = K
        self.variant = variant
        self.solver = solver
        self.mu = mu
        self.n_passes = n_passes
        self.c = c
        self.lambda_l = lambda_l
        self.lambda_u = lambda_u
        self.alpha = alpha
        self.rho = rho
        self.scoring = scoring
        self.tol = tol
        self.random_state = random_state

    def _check_scoring(self) -> None:
        from cvxrank.methods import SCORING_PARAM

        SCORING_PARAM.check(self.scoring)

    def _seed(self) -> int | None:
        """``random_state`` as the solvers' seed (a RandomState draws one)."""
        if self.random_state is None or isinstance(self.random_state, int | np.integer):
            return None if self.random_state is None else int(self.random_state)
        from sklearn.utils import check_random_state

        return int(check_random_state(self.random_state).randint(2**31 - 1))

    def _formulation(self, data: RankingData) -> Formulation:
        from cvxrank.formulations.conerank import ConeRank

        self._check_scoring()
        if self.solver not in ("stochastic", "alternation"):
            raise ValueError(f"solver must be 'stochastic' or 'alternation', got "
                             f"{self.solver!r}")
        if self.variant not in ("sg", "eg"):
            raise ValueError(f"variant must be 'sg' or 'eg', got {self.variant!r}")
        if self.solver == "alternation" and self.mu is not None:
            raise ValueError("mu is the stochastic solver's step; the alternation solves "
                             "each block to a certified gap and takes no step")
        if self.solver == "stochastic" and self.tol is not None:
            raise ValueError("tol is the alternation's stopping test; the stochastic solver "
                             "runs n_passes passes over the queries")
        if self.n_passes is not None and (isinstance(self.n_passes, bool)
                                          or not isinstance(self.n_passes, int | np.integer)
                                          or self.n_passes < 1):
            raise ValueError(f"n_passes must be a positive integer, got {self.n_passes!r}")
        return ConeRank(data, K=self.K, c=self.c, lambda_l=self.lambda_l,
                        lambda_u=self.lambda_u, alpha=self.alpha, rho=self.rho,
                        scoring=self.scoring)

    def _solver_name(self) -> str:
        return f"{self.solver}-{self.variant}"

    def _max_iter(self) -> int | None:
        return None if self.n_passes is None else int(self.n_passes)

    def _solver_options(self) -> dict[str, Any]:
        return {} if self.solver == "alternation" else {"mu": self.mu}

    def _solver_params(self, solver: str) -> dict[str, Any]:
        """``solver`` and ``variant`` from a solver name such as ``"stochastic-sg"`` (the
        inverse of :meth:`_solver_name`)."""
        name, _, variant = solver.rpartition("-")
        return {"solver": name, "variant": variant}

    def _set_saved(self, model: SavedModel) -> None:
        """The linear rankers' fitted attributes, and the basis ``U_``."""
        super()._set_saved(model)
        self.U_ = model.arrays["U"].copy()

    def _set_model(self, formulation: Objective, run: Run) -> None:
        """The basis ``U_``, the linear scorer ``coef_`` and ``run_`` (the solver's run)."""
        U, _ = formulation.split(run.w)  # type: ignore[attr-defined]
        self.U_ = U.copy()
        self.coef_ = formulation.weights(run.w)
        self.run_ = run

    def _scores(self, data: RankingData) -> np.ndarray:
        """Scores of ``data``'s rows in its order: votes (Alg. 2) or ``X @ coef_``."""
        if self.scoring == "linear":
            return linear_scores(data.X, self.coef_)
        from cvxrank.formulations.conerank import vote_scores

        return vote_scores(self.U_, data.X, data.query_ptr)

    def predict(self, X: Any, qid: Any | None = None, group: Any | None = None) -> np.ndarray:
        """Ranking scores (higher is more relevant), per query.

        With ``scoring="vote"`` a document's score is its number of votes (Alg. 2) among the
        documents of its query, so it depends on the other documents of the query: give
        ``qid`` or ``group`` (with neither, all rows are one query). With
        ``scoring="linear"`` it is ``X @ coef_``, which orders every query the same way up
        to ties.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, ``n_features_in_``)
        qid, group : array-like, optional
            As in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_documents,)
            In the rows' given order.
        """
        self._check_scoring()
        M = self._features(X, qid, group)
        if self.scoring == "linear":
            return linear_scores(M, self.coef_)
        data = RankingData.from_arrays(M, np.zeros(M.shape[0]),
                                       **_queries(M.shape[0], qid, group))
        scores = self._scores(data)
        if data.order is None:
            return scores
        out = np.empty_like(scores)
        out[data.order] = scores
        return out

    def score(
        self,
        X: Any,
        y: Any,
        qid: Any | None = None,
        group: Any | None = None,
        *,
        k: int = 10,
        preset: str = "letor3",
    ) -> float:
        """Mean NDCG@k over the queries of the scores of :meth:`predict` (``letor3``
        conventions unless told otherwise); ``qid`` and ``group`` as in :meth:`fit`."""
        self._check_scoring()
        M = self._features(X, qid, group)
        data = RankingData.from_arrays(M, y, **_queries(M.shape[0], qid, group))
        scores = self._scores(data)
        return float(evaluate(data.y, scores, data.query_ptr, preset=preset, k=k)[f"ndcg@{k}"])


def load_model(path: str | os.PathLike[str]) -> LinearRanker:
    """The fitted estimator of a model file of ``cvxrank fit --save-model``.

    The estimator is the method's (:meth:`cvxrank.methods.Method.make_estimator`: e.g.
    :class:`RankSVMRanker` for ``ranksvm``, ``MethodRanker(method="dorm")`` for DORM), its
    parameters (``get_params()``) those of the fit: the loss, the method's parameters and
    the solver that made the model; its fitted attributes those the file records
    (``coef_``, OC SVM's ``thresholds_`` and ``classes_``, ConeRank's ``U_``,
    ``n_features_in_``, ``objective_``, ``n_iter_``, ``solver_``, ``status_``,
    ``w_radius_``, and ``normalization_``, the feature map of ``fit --normalize``, which
    :meth:`~LinearRanker.predict` applies); not ``fit_result_``, ``fit_time_`` nor
    ``n_pairs_``, which the file does not hold. ``predict(X)`` then gives the scores that
    ``cvxrank predict`` gives the same documents, bit for bit (one arithmetic:
    :func:`cvxrank.data.model_file.linear_scores`), and pads data with fewer columns with zeros
    as the command does (``pads_features_``).

    Parameters
    ----------
    path : path-like
        The model file (:mod:`cvxrank.data.model_file`).

    Returns
    -------
    LinearRanker

    Raises
    ------
    cvxrank.errors.DataFormatError
        For a file that is not a valid model file (:func:`cvxrank.data.model_file.read_model`).
    """
    from cvxrank.methods import get

    model = read_model(path)
    method = get(model.method)
    estimator = method.make_estimator(loss=method.check_loss(model.loss), **model.params)
    estimator.set_params(**estimator._solver_params(model.solver))
    estimator._set_saved(model)
    return estimator
