"""The Formulation abstraction: one paper's convex problem on one data set.

A formulation gives, side by side,

* the declarative reference: :meth:`Formulation.primal` and :meth:`Formulation.dual` as CVXPY
  problems whose hyper-parameters are ``cp.Parameter`` objects (DPP), built on first use and
  re-solved, not rebuilt, when a parameter changes;
* cheap numpy evaluators of the same objectives (:meth:`primal_value`, :meth:`dual_value`), the
  map from a dual point to the primal weights (:meth:`primal_from_dual`) and the duality gap,
  which the hand-written solvers and their traces use.

Hyper-parameters are floats (:class:`HyperParameter`); their ``cp.Parameter`` objects, the
CVXPY variables and the problems are made only when a CVXPY problem or variable is asked for,
so building a formulation and evaluating it with numpy does not import CVXPY. Pickling drops
the CVXPY objects, and the unpickled formulation rebuilds them on first use.

Sign convention: the primal is a minimization with optimal value p*, the dual a maximization
with optimal value d*; weak duality gives ``dual_value(alpha) <= d* = p* <= primal_value(w)``.
"""

from __future__ import annotations

import functools
import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.data.ranking_data import RankingData, row_scores
from cvxrank.data.scales import check_magnitude
from cvxrank.methods import C_PARAM
from cvxrank.numerics import rounding
from cvxrank.numerics.sets import ConvexSet
from cvxrank.utils.lazy_sparse import sp

if TYPE_CHECKING:
    import cvxpy as cp

#: Largest feature dimension for which :func:`squared_operator_norm` forms the d x d matrix
#: ``X^T R^T R X`` (via the sparse n x n matrix ``R^T R``) and takes its exact largest
#: eigenvalue; above it, ARPACK (``eigsh``) runs on the matrix-free operator.
DENSE_GRAM_MAX_FEATURES = 512

#: Factor applied to the computed squared operator norm so that rounding (dense path) or the
#: ARPACK tolerance (matrix-free path, ``tol=1e-10``) cannot make a Lipschitz constant an
#: underestimate.
LIPSCHITZ_SAFETY = 1.0 + 1e-6


def data_fingerprint(data: RankingData) -> str:
    """A short hash of ``X``, ``y`` and the queries (for caching reference solutions)."""
    h = hashlib.sha1()
    X = data.X
    if sp.issparse(X):
        for part in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    h.update(str(X.shape).encode())
    h.update(data.y.tobytes())
    h.update(data.query_ptr.tobytes())
    return h.hexdigest()[:16]


def largest_row_norm(X: np.ndarray | sp.spmatrix) -> float:
    """The largest Euclidean norm of a row of a dense or sparse matrix (0 without rows)."""
    squares = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
               else np.einsum("ij,ij->i", X, X))
    return float(np.sqrt(squares.max(initial=0.0)))


def squared_operator_norm(X: np.ndarray | sp.spmatrix, R: sp.spmatrix) -> float:
    r""":data:`LIPSCHITZ_SAFETY` times :math:`\|R X\|_2^2 = \lambda_{\max}(X^\top R^\top R X)`.

    The Lipschitz constant of the gradient of a dual :math:`\tfrac12 \|X^\top R^\top
    \alpha\|^2` term: R is RankSVM's pair operator A (Chapelle & Keerthi 2010, Sect. 3) or
    OC SVM's hinge-row matrix M. ``R X`` is never formed (it would have up to p x d
    nonzeros): up to :data:`DENSE_GRAM_MAX_FEATURES` features the d x d matrix
    ``X^T (R^T R) X`` is built through the sparse n x n ``R^T R`` and its largest eigenvalue
    taken exactly; above, ARPACK runs on ``v -> X^T R^T R X v``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    R : sparse matrix of shape (k, n)

    Returns
    -------
    float
        The safety factor times the (nonnegative) largest eigenvalue.
    """
    d = X.shape[1]
    if d <= DENSE_GRAM_MAX_FEATURES:
        middle = (R.T @ R).tocsr()  # n x n, at most n + 2k nonzeros for rows of two entries
        gram = X.T @ (middle @ X)
        gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
        top = float(np.linalg.eigvalsh(0.5 * (gram + gram.T))[-1])
    else:
        import scipy.sparse.linalg as spla  # here: its import costs every fit 0.1 s

        op = spla.LinearOperator(
            (d, d), dtype=np.float64,
            matvec=lambda v: X.T @ (R.T @ (R @ (X @ np.ravel(v)))),
        )
        top = float(spla.eigsh(op, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0])
    return LIPSCHITZ_SAFETY * max(top, 0.0)


class HyperParameter:
    """A positive scalar hyper-parameter: a float, and its ``cp.Parameter`` once one is needed.

    Implements :class:`cvxrank.numerics.sets.Scale`, so a feasible set can scale its bounds by it.

    Parameters
    ----------
    name : str
        The name (also the ``cp.Parameter``'s).
    value : float
        The current value.

    Notes
    -----
    The ``cp.Parameter`` (nonnegative) is created by the first :meth:`expression` call, which
    imports CVXPY; :meth:`assign` keeps it in sync. It is not pickled.
    """

    def __init__(self, name: str, value: float) -> None:
        self.name = name
        self.value = float(value)
        self._parameter: cp.Parameter | None = None

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"HyperParameter({self.name!r}, {self.value!r})"

    def expression(self) -> cp.Parameter:
        """The ``cp.Parameter`` standing for this value in CVXPY problems (made once)."""
        if self._parameter is None:
            import cvxpy as cp

            self._parameter = cp.Parameter(nonneg=True, name=self.name, value=self.value)
        return self._parameter

    def assign(self, value: float) -> None:
        """Set the value (and the ``cp.Parameter``'s, if there is one)."""
        self.value = float(value)
        if self._parameter is not None:
            self._parameter.value = self.value

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["value"])  # type: ignore[misc]


class Objective(ABC):
    r"""An objective to minimize on a fixed data set: the minimal contract of cvxrank.

    What every solver, ``fit``, the estimators and the reports need: a name, the data, the
    hyper-parameters, the capabilities offered to solvers, and the primal value. A convex
    problem with a CVXPY primal and dual is a :class:`Formulation` on top of it; a
    non-convex model (ConeRank's joint problem) is an objective whose solvers alternate
    certified convex blocks.

    Subclasses set :attr:`name`, pass their hyper-parameters to ``__init__`` (floats, each
    checked by :meth:`_check_param`), declare :attr:`capabilities` and implement
    :meth:`primal_value`.

    Parameters
    ----------
    data : RankingData
        The training data.
    **hyper_parameters : float
        Initial hyper-parameter values, by name (e.g. ``C=1.0``).

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"ranksvm-hinge"``.
    capabilities : frozenset of str
        What it offers to solvers, names of :data:`cvxrank.core.capabilities.CAPABILITIES`.
    strong_convexity : float
        The modulus :math:`\mu` of strong convexity of the primal in the scoring weights
        (:meth:`weights`): 1 for the :math:`\tfrac12\|w\|^2` regularizer of every max-margin
        family here, 0 when there is none (then no model radius is certified,
        :mod:`cvxrank.core.trace`).
    data : RankingData
        The training data. A float32 ``X`` is converted to float64 once, before any
        subclass reads it (:meth:`__init_subclass__`): every formulation, loss engine and
        solver computes in float64.
    """

    name: str = "objective"

    #: The method of :data:`cvxrank.methods.METHODS` it is (``"ranksvm"``), whose row's
    #: solvers ``"auto"`` tries (:func:`cvxrank.fitting.default_solver`); None for a
    #: formulation that is no method's (a ConeRank block, a kernel RankSVM, the sandbox's).
    method: str | None = None

    #: Capabilities offered to the solvers (:mod:`cvxrank.core.capabilities`).
    capabilities: frozenset[str] = frozenset()

    #: Smallest divisor of this formulation's relative gaps
    #: (:func:`cvxrank.tolerances.gap_scale`): 0, i.e. gaps relative to ``|p*|``, for the
    #: objectives whose optimum is positive; a formulation whose optimum can be 0 or
    #: negative sets the natural size of its objective's terms.
    gap_floor: float = 0.0

    #: Strong convexity of the primal in the scoring weights (class docstring).
    strong_convexity: float = 0.0

    #: Whether :meth:`scores` is ``X @ weights(w)``, linear in the features (a measure
    #: certificate, :mod:`cvxrank.certificates.certify`, needs it); a kernel or voting model sets
    #: False.
    linear_scores: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give every subclass's ``__init__`` its data with a float64 ``X``
        (:meth:`RankingData.as_float64`, a copy of a float32 ``X`` made once, before the
        subclass reads it), so that every formulation and solver computes in float64."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def float64_init(self: Objective, data: RankingData, *args: Any, **kw: Any) -> None:
            init(self, data.as_float64() if isinstance(data, RankingData) else data, *args,
                 **kw)

        cls.__init__ = float64_init  # type: ignore[method-assign]

    def __init__(self, data: RankingData, **hyper_parameters: float) -> None:
        data = data.as_float64()
        check_magnitude(data)  # features whose squares overflow: refused up front
        self.data = data
        self._hyper: dict[str, HyperParameter] = {}
        for key, value in hyper_parameters.items():
            self._check_param(key, float(value))
            self._hyper[key] = HyperParameter(key, value)
        self._derived = {k: HyperParameter(k, v) for k, v in self._derived_values().items()}

    # -- hyper-parameters ---------------------------------------------------------------
    def params(self) -> dict[str, float]:
        """Current hyper-parameter values."""
        return {k: p.value for k, p in self._hyper.items()}

    def set_params(self, **values: float) -> None:
        """Change hyper-parameter values; CVXPY problems are re-solved, not rebuilt.

        All values are checked before any is changed.
        """
        for key, value in values.items():
            if key not in self._hyper:
                raise ValueError(f"{self.name} has no parameter {key!r}; it has "
                                 f"{sorted(self._hyper)}")
            self._check_param(key, float(value))
        for key, value in values.items():
            self._hyper[key].assign(value)
        for key, value in self._derived_values().items():
            self._derived[key].assign(value)

    def hyper_parameter(self, name: str) -> HyperParameter:
        """The hyper-parameter (or derived parameter) ``name`` (a
        :class:`cvxrank.numerics.sets.Scale`)."""
        return self._hyper[name] if name in self._hyper else self._derived[name]

    def parameter(self, name: str) -> cp.Parameter:
        """The ``cp.Parameter`` of hyper-parameter (or derived parameter) ``name``."""
        return self.hyper_parameter(name).expression()

    def _check_param(self, key: str, value: float) -> None:
        """Validate a hyper-parameter value (subclasses add their conditions)."""
        if not np.isfinite(value):
            raise ValueError(f"{key} must be finite, got {value}")

    def _derived_values(self) -> dict[str, float]:
        """Quantities computed from the hyper-parameters that must be ``cp.Parameter``
        objects of their own to keep the CVXPY problems DPP (e.g. ``1/(4C)``), by name."""
        return {}

    def cache_key(self) -> str:
        """Identifies (data, formulation, parameter values) for the reference cache."""
        params = ",".join(f"{k}={v!r}" for k, v in sorted(self.params().items()))
        return f"{self.name}|{data_fingerprint(self.data)}|{self._extra_key()}|{params}"

    def _extra_key(self) -> str:
        """Anything else that defines the problem (weights, margins), for :meth:`cache_key`."""
        return ""

    # -- the model ------------------------------------------------------------------------
    @abstractmethod
    def primal_value(self, w: np.ndarray) -> float:
        """Primal objective at ``w`` (numpy, no solve)."""

    def rounding_terms(self) -> int:
        """The longest accumulation of terms the primal and dual values make (the n of
        their :func:`~cvxrank.numerics.rounding.gamma` bound): the documents and features here; a
        formulation with dual variables adds them."""
        return int(self.data.n_documents) + int(self.data.n_features)

    def rounding_error(self, w: np.ndarray, primal: float, dual: float) -> float:
        r"""A bound on the rounding of ``primal - dual`` at ``w``, for a certificate whose
        solver gives none of its own (:meth:`cvxrank.core.trace.TraceRecorder.record`):
        :math:`\gamma_{N+4}(|P| + |D| + \|w\|^2 + f)` with N :meth:`rounding_terms` and f
        the :attr:`gap_floor`, the size of the terms whose sum the values are: the primal's
        terms are nonnegative (their sum is :math:`|P|`), the dual's cancel by at most the
        regularizer's :math:`\|w\|^2`. The solvers of badly conditioned certificates
        (Newton's gradient, the cutting planes' cuts) bound their own rounding instead."""
        w = np.asarray(w, dtype=np.float64)
        size = abs(float(primal)) + (abs(float(dual)) if math.isfinite(dual) else 0.0)
        return rounding.value_error(self.rounding_terms(), size + float(w @ w)
                                    + float(self.gap_floor))

    def zero_is_exact(self) -> str:
        """Why w = 0 is exactly this problem's optimum by its structure alone, or "" (no
        such reason: a solver's certificate or :mod:`cvxrank.certificates.zero_certificate` must
        show it)."""
        return ""

    def weights(self, w: np.ndarray) -> np.ndarray:
        """The scoring weights of a primal point (the first ``n_features`` entries; a point
        that stacks other variables after them, such as thresholds, drops those)."""
        return np.asarray(w, dtype=np.float64)[: self.data.n_features]

    def scores(self, w: np.ndarray, data: RankingData) -> np.ndarray:
        """The model's scores of ``data``'s documents (``X @ weights(w)`` row by row,
        :func:`~cvxrank.data.ranking_data.row_scores`; ``data`` padded with zero features
        when it has fewer)."""
        return row_scores(data.pad_features(self.data.n_features).X, self.weights(w))

    def sizes(self) -> dict[str, int]:
        """The counts a report prints beside the fit (dual variables, pairs, ...)."""
        return {}

    def model_arrays(self, w: np.ndarray) -> dict[str, Any]:
        """What a saved model holds of the point ``w``: the weights ``w`` (a model with
        more, such as thresholds or a basis, adds or replaces arrays)."""
        return {"w": self.weights(w)}

    def test_report(self, w: np.ndarray, data: RankingData) -> dict[str, float]:
        """Measures of the model on ``data`` beyond the ranking measures (none here; an
        ordinal model adds its grade accuracy)."""
        return {}

    def describe(self) -> dict[str, Any]:
        """A small summary for tables and JSON output."""
        return {"formulation": self.name, **self.params()}


class Formulation(Objective):
    """A convex learning-to-rank problem on a fixed data set, with its CVXPY primal and dual.

    On top of :class:`Objective`: the declarative reference (:meth:`primal`, :meth:`dual`),
    the dual value, the map from a dual point to the primal one and the dual feasibility.
    Builders of CVXPY problems take their variables from :meth:`_variable` and their
    parameters from :meth:`parameter`, and import CVXPY themselves.

    Attributes
    ----------
    reference_solver : str
        The CVXPY solver that certifies it best (default Clarabel).
    """

    name: str = "formulation"

    #: The CVXPY solver that certifies this formulation best (``fit`` uses it when no
    #: hand-written solver is registered).
    reference_solver: str = "CLARABEL"

    #: Settings of the reference solves that replace
    #: :data:`cvxrank.certificates.reference.SOLVER_OPTIONS` for this formulation, by CVXPY solver
    #: name: looser interior-point tolerances where its cones cannot reach the default ones
    #: (Clarabel stalls near a 1e-9 gap on exponential cones). The certificate, primal-dual
    #: agreement checked by the reference, is unchanged.
    reference_options: dict[str, dict[str, Any]] = {}

    #: Whether the reference takes the dual point from the primal solve: ``alpha_variable``
    #: is then the dual variable of a constraint of :meth:`primal` (CVXPY's own multiplier),
    #: d* its :meth:`dual_value` in numpy, and :meth:`dual` is not solved
    #: (:func:`cvxrank.certificates.reference.solve_reference`).
    dual_from_primal: bool = False

    def __init__(self, data: RankingData, **hyper_parameters: float) -> None:
        super().__init__(data, **hyper_parameters)
        self._cvxpy: dict[str, Any] = {}

    # -- pickling -----------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The state without the CVXPY objects (problems, variables), rebuilt on first use."""
        state = self.__dict__.copy()
        state["_cvxpy"] = {}
        return state

    # -- CVXPY reference ----------------------------------------------------------------
    def primal(self) -> cp.Problem:
        """The primal as a CVXPY problem (built once, parameters as ``cp.Parameter``)."""
        return self._cached("primal", self._build_primal)

    def dual(self) -> cp.Problem:
        """The dual as a CVXPY problem (built once, parameters as ``cp.Parameter``)."""
        return self._cached("dual", self._build_dual)

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        """The CVXPY object ``key``, built by ``build`` on first use."""
        if key not in self._cvxpy:
            self._cvxpy[key] = build()
        return self._cvxpy[key]

    def _variable(self, name: str, size: int) -> cp.Variable:
        """The CVXPY variable ``name`` of length ``size`` (made on first use, then kept)."""

        def make() -> cp.Variable:
            import cvxpy as cp

            return cp.Variable(size, name=name)

        return self._cached(f"variable:{name}", make)

    @abstractmethod
    def _build_primal(self) -> cp.Problem: ...

    @abstractmethod
    def _build_dual(self) -> cp.Problem: ...

    @property
    @abstractmethod
    def w_variable(self) -> cp.Expression:
        """The primal point of :meth:`primal` (the weights, or an expression stacking the
        weights and any other primal variables such as thresholds; read after a solve)."""

    @property
    @abstractmethod
    def alpha_variable(self) -> cp.Variable:
        """The dual variable of :meth:`dual` (read after a solve)."""

    # -- numpy evaluators ---------------------------------------------------------------
    @abstractmethod
    def dual_value(self, alpha: np.ndarray) -> float:
        """Dual objective formula at ``alpha`` (numpy, no solve).

        The formula is evaluated wherever it is defined, feasible or not; a lower bound on
        p* needs a feasible ``alpha``, which :meth:`dual_infeasibility` measures.
        """

    @abstractmethod
    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """The primal point w(alpha) given by the stationarity (and optimality) conditions."""

    @abstractmethod
    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of the dual constraints at ``alpha`` (0 if feasible)."""

    @property
    @abstractmethod
    def n_dual(self) -> int:
        """Number of dual variables."""

    def sizes(self) -> dict[str, int]:
        """``n_dual``: the number of dual variables."""
        return {"n_dual": int(self.n_dual)}

    def rounding_terms(self) -> int:
        """The documents, features and dual variables (at most 2**53: beyond, every
        rounding bound is infinite anyway)."""
        return super().rounding_terms() + min(int(self.n_dual), 2 ** 53)

    def duality_gap(self, w: np.ndarray, alpha: np.ndarray) -> float:
        """``primal_value(w) - dual_value(alpha)`` (>= 0 by weak duality for feasible alpha)."""
        return self.primal_value(w) - self.dual_value(alpha)


class WeightedByC:
    r"""The loss weight C of an :class:`Objective`, finite and in
    :data:`cvxrank.tolerances.C_RANGE` (checked when set, :func:`check_C`); a primal
    :math:`\tfrac12\|w\|^2` plus C times a convex loss is 1-strongly convex in w
    (:attr:`~Objective.strong_convexity`). The in-memory formulations
    (:class:`LossWeighted`) and the sharded RankSVM
    (:class:`cvxrank.distributed.ShardedRankSVM`) share it.
    """

    strong_convexity = 1.0
    _hyper: dict[str, HyperParameter]

    @property
    def C(self) -> float:  # noqa: N802 (the papers' name)
        """Current value of C."""
        return self._hyper["C"].value

    def _check_param(self, key: str, value: float) -> None:
        super()._check_param(key, value)  # type: ignore[misc]
        if key == "C":
            check_C(value)


class LossWeighted(WeightedByC, Formulation):
    """A formulation whose one hyper-parameter is the loss weight C (:class:`WeightedByC`).

    The papers' C (Li 2011, Sects. 3.1 and 4.1; Chapelle & Keerthi 2010, eq. (1)): RankSVM,
    its kernel form and the OC SVMs. Change it with :meth:`set_params`.
    """

    def __init__(self, data: RankingData, *, C: float) -> None:
        super().__init__(data, C=C)


def check_C(C: float) -> float:  # noqa: N802 (the papers' name)
    """``C`` as a float, or ValueError when it is not finite and in
    :data:`cvxrank.tolerances.C_RANGE` (the range over which the solvers are tested): the
    constraint of :data:`cvxrank.methods.C_PARAM`, which the command line, the estimators
    and model files read too."""
    return float(C_PARAM.check(C))


def no_pairs_error(source: str | None) -> ValueError:
    """The error of a data set without preference pairs (every query of one grade)."""
    return ValueError(f"{source or 'the data'}: no query has documents of two different "
                      "grades, so there are no preference pairs")


class ProjectableDual(ABC):
    """Mixin of a formulation whose dual feasible set is one set of :mod:`cvxrank.numerics.sets`.

    The formulation declares the set once, as :attr:`dual_set`; the exact projection
    (:meth:`project_dual`) of the dual solvers, the feasibility measure
    (:meth:`dual_infeasibility`) and the constraints of the CVXPY dual
    (``dual_set.constraints(alpha)``) all come from it.
    """

    @property
    @abstractmethod
    def dual_set(self) -> ConvexSet:
        """The dual feasible set (bounds scaled by the hyper-parameters it depends on)."""

    def project_dual(self, alpha: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the dual feasible set (:attr:`dual_set`)."""
        return self.dual_set.project(alpha)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of the dual constraints at ``alpha`` (:attr:`dual_set`)."""
        return self.dual_set.violation(alpha)
