"""The Formulation abstraction: one paper's convex problem on one data set.

A formulation gives, side by side,

* the declarative reference: :meth:`Formulation.primal` and :meth:`Formulation.dual` as CVXPY
  problems whose hyper-parameters are ``cp.Parameter`` objects (DPP), built once and re-solved
  when a parameter changes;
* cheap numpy evaluators of the same objectives (:meth:`primal_value`, :meth:`dual_value`), the
  map from a dual point to the primal weights (:meth:`primal_from_dual`) and the duality gap,
  which the hand-written solvers and their traces use.

Sign convention: the primal is a minimization with optimal value p*, the dual a maximization
with optimal value d*; weak duality gives ``dual_value(alpha) <= d* = p* <= primal_value(w)``.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from cvxrank.data.ranking_data import RankingData


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


class Formulation(ABC):
    """A convex learning-to-rank problem on a fixed data set.

    Subclasses set :attr:`name`, create their ``cp.Parameter`` objects in ``__init__`` (so
    that :meth:`set_params` changes values without rebuilding), and implement the abstract
    methods. The CVXPY problems are built lazily on first use and then kept.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"ranksvm-hinge"``.
    reference_solver : str
        The CVXPY solver that certifies it best (default Clarabel).
    data : RankingData
        The training data.
    """

    name: str = "formulation"

    #: The CVXPY solver that certifies this formulation best (``fit`` uses it when no
    #: hand-written solver is registered).
    reference_solver: str = "CLARABEL"

    def __init__(self, data: RankingData) -> None:
        self.data = data
        self._problems: dict[str, cp.Problem] = {}

    # -- hyper-parameters ---------------------------------------------------------------
    @property
    @abstractmethod
    def parameters(self) -> dict[str, cp.Parameter]:
        """The hyper-parameters as CVXPY Parameters, by name (e.g. ``{"C": C}``)."""

    def params(self) -> dict[str, float]:
        """Current hyper-parameter values."""
        return {k: float(p.value) for k, p in self.parameters.items()}

    def set_params(self, **values: float) -> None:
        """Change hyper-parameter values; the CVXPY problems are re-solved, not rebuilt."""
        for key, value in values.items():
            if key not in self.parameters:
                raise ValueError(f"{self.name} has no parameter {key!r}; it has "
                                 f"{sorted(self.parameters)}")
            self._check_param(key, float(value))
            self.parameters[key].value = float(value)

    def _check_param(self, key: str, value: float) -> None:
        """Validate a hyper-parameter value (subclasses raise ValueError)."""
        if not np.isfinite(value):
            raise ValueError(f"{key} must be finite, got {value}")

    def cache_key(self) -> str:
        """Identifies (data, formulation, parameter values) for the reference cache."""
        params = ",".join(f"{k}={v!r}" for k, v in sorted(self.params().items()))
        return f"{self.name}|{data_fingerprint(self.data)}|{self._extra_key()}|{params}"

    def _extra_key(self) -> str:
        """Anything else that defines the problem (weights, margins), for :meth:`cache_key`."""
        return ""

    # -- CVXPY reference ----------------------------------------------------------------
    def primal(self) -> cp.Problem:
        """The primal as a CVXPY problem (built once, parameters as ``cp.Parameter``)."""
        if "primal" not in self._problems:
            self._problems["primal"] = self._build_primal()
        return self._problems["primal"]

    def dual(self) -> cp.Problem:
        """The dual as a CVXPY problem (built once, parameters as ``cp.Parameter``)."""
        if "dual" not in self._problems:
            self._problems["dual"] = self._build_dual()
        return self._problems["dual"]

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
    def primal_value(self, w: np.ndarray) -> float:
        """Primal objective at ``w`` (numpy, no solve)."""

    @abstractmethod
    def dual_value(self, alpha: np.ndarray) -> float:
        """Dual objective formula at ``alpha`` (numpy, no solve).

        The formula is evaluated wherever it is defined, feasible or not; a lower bound on
        p* needs a feasible ``alpha``, which :meth:`dual_infeasibility` measures.
        """

    @abstractmethod
    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """The primal point w(alpha) given by the stationarity (and optimality) conditions."""

    def duality_gap(self, w: np.ndarray, alpha: np.ndarray) -> float:
        """``primal_value(w) - dual_value(alpha)`` (>= 0 by weak duality for feasible alpha)."""
        return self.primal_value(w) - self.dual_value(alpha)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of the dual constraints at ``alpha`` (0 if feasible)."""
        return 0.0

    @property
    def n_dual(self) -> int:
        """Number of dual variables."""
        return int(self.alpha_variable.shape[0])

    def describe(self) -> dict[str, Any]:
        """A small summary for tables and JSON output."""
        return {"formulation": self.name, **self.params()}
