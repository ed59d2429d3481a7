"""Certified reference solutions: a formulation's primal and dual solved by a CVXPY solver.

:func:`solve_reference` solves both :meth:`~cvxrank.formulations.base.Formulation.primal` and
:meth:`~cvxrank.formulations.base.Formulation.dual` with tight solver settings and accepts the
result only when

* both solver statuses are ``optimal``,
* the relative primal-dual gap ``|p* - d*| / |p*|`` is at most
  :func:`cvxrank.tolerances.reference_agreement` of the solver, and
* the formulation's own numpy evaluators agree with the solver's optimal values to the same
  tolerance: ``primal_value(w*)`` with p* and ``dual_value(alpha*)`` with d*.

A formulation whose dual CVXPY cannot state well (``dual_from_primal``: a user's loss, whose
conjugate is only known to numpy) is certified from one solve: its dual point is the
multiplier CVXPY returns with the primal, d* the numpy dual value there, and the same
agreement with p* is required (weak duality makes that value a lower bound on p*).

Otherwise it raises :class:`~cvxrank.errors.SolverError`. Certified references are cached in
memory (and optionally on disk) by the formulation's :meth:`cache_key`, a hash of the
formulation's code (:func:`code_version`) and the solver name, so a notebook or a test suite
asking again for the same problem and C does not solve again. The disk cache is the
``cache_dir`` argument, or else the directory named by the environment variable
:data:`CACHE_DIR_VARIABLE` (``CVXRANK_CACHE_DIR``), so that parallel workers share one cache;
with neither, nothing is written to disk. Files are written atomically (a temporary file, then
a rename), so workers may write the same reference concurrently.

**The disk cache is not trusted.** Each entry carries its certificate, the primal and dual
points; on load the formulation's own numpy evaluators recompute ``primal_value(w*)``,
``dual_value(alpha*)`` and the dual infeasibility, and the entry is used only if they give
back its p* and d* within the solver's agreement. A forged, stale, corrupt, truncated or
incomplete entry is deleted and re-solved, with a :class:`~cvxrank.errors.CacheWarning`; a
cache path that cannot be used (a regular file, no permission) degrades to no disk cache,
with one warning.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np

from cvxrank.errors import CacheWarning, SolverError
from cvxrank.formulations.base import Formulation
from cvxrank.tolerances import FEASIBILITY, reference_agreement, relative_gap
from cvxrank.utils.output_files import usable_cache_dir

#: Solver settings used for reference solves (keys are CVXPY solver names). Interior-point
#: solvers are run close to machine precision; ECOS stops with ``optimal_inaccurate`` on
#: some RankSVM instances at 1e-10, so it gets 1e-9. The first-order solvers (OSQP, SCS) get
#: 1e-8: tighter settings make them hit the iteration limit on degenerate duals even when
#: their objective is already correct to 1e-9. A solver not listed runs with its defaults.
SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                 "max_iter": 500},
    "ECOS": {"abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9, "max_iters": 500},
    "OSQP": {"eps_abs": 1e-8, "eps_rel": 1e-8, "polishing": True, "max_iter": 100_000},
    "SCS": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 100_000},
}


@dataclass(frozen=True, eq=False)
class Reference:
    """A certified optimum of a formulation (primal and dual).

    Attributes
    ----------
    p_star : float
        Optimal primal value (minimization) reported by the solver.
    d_star : float
        Optimal dual value (maximization) reported by the solver.
    w : ndarray
        Primal solution (read-only).
    alpha : ndarray
        Dual solution (read-only).
    primal_status, dual_status : str
        CVXPY statuses of the two solves (``"optimal"`` for a certified reference).
    solver : str
        CVXPY solver name, upper case.
    primal_time, dual_time : float
        Wall-clock seconds of each ``Problem.solve`` call (compilation included).
    rel_gap : float
        ``|p* - d*| / |p*|``.
    key : str
        The formulation's :meth:`~cvxrank.formulations.base.Formulation.cache_key` at
        solve time (data, formulation, weights, hyper-parameter values) and its
        :func:`code_version`.
    """

    p_star: float
    d_star: float
    w: np.ndarray
    alpha: np.ndarray
    primal_status: str
    dual_status: str
    solver: str
    primal_time: float
    dual_time: float
    rel_gap: float
    key: str


_CACHE: dict[tuple[str, str], Reference] = {}

#: Environment variable naming the disk cache directory used when ``cache_dir`` is not given.
CACHE_DIR_VARIABLE = "CVXRANK_CACHE_DIR"


def default_cache_dir() -> Path | None:
    """The directory in ``$CVXRANK_CACHE_DIR``, or None when it is unset or empty."""
    value = os.environ.get(CACHE_DIR_VARIABLE, "")
    return Path(value) if value else None


def _usable(cache_dir: str | os.PathLike[str]) -> Path | None:
    """``cache_dir`` if it is (or can be made) a writable directory; else None, with one
    :class:`~cvxrank.errors.CacheWarning` per path and process."""
    return usable_cache_dir(cache_dir, "reference cache", "running without a disk cache")


@functools.cache
def code_version(cls: type) -> str:
    """A short hash of the source of ``cls``'s module and of every cvxrank module of its base
    classes: a cached reference is stale once the formulation's code changes."""
    h = hashlib.sha256()
    for klass in cls.__mro__:
        module = inspect.getmodule(klass)
        if module is None or not module.__name__.startswith("cvxrank"):
            continue
        try:
            h.update(Path(inspect.getfile(module)).read_bytes())
        except (OSError, TypeError):
            h.update(module.__name__.encode())
    return h.hexdigest()[:16]


def clear_reference_cache() -> None:
    """Forget the in-memory references (files written to a ``cache_dir`` are kept)."""
    _CACHE.clear()


def check_solver(name: str) -> str:
    """The upper-case name of an installed CVXPY solver; ValueError listing them otherwise."""
    upper = str(name).upper()
    installed = cp.installed_solvers()
    if upper not in installed:
        raise ValueError(f"reference solver {name!r} is not an installed CVXPY solver; "
                         f"installed: {', '.join(installed)}")
    return upper


def solve_reference(
    formulation: Formulation,
    solver: str = "CLARABEL",
    *,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    verbose: bool = False,
) -> Reference:
    """Solve a formulation's primal and dual with a CVXPY solver and certify the optimum.

    Parameters
    ----------
    formulation : Formulation
        The problem, at its current hyper-parameter values.
    solver : str
        An installed CVXPY solver (``"CLARABEL"``, ``"ECOS"``, ``"OSQP"``, ``"SCS"``, ...),
        run with the settings in :data:`SOLVER_OPTIONS`.
    cache : bool
        Return a previously certified reference for the same
        ``(formulation.cache_key(), solver)`` and remember this one. With False, always
        solve and store nothing.
    cache_dir : path or None
        Also look for and store the reference as an ``.npz`` file in this directory (the file
        name is a hash of the key and the solver); None means :func:`default_cache_dir`
        (``$CVXRANK_CACHE_DIR``, or no disk cache when it is unset).
    verbose : bool
        Passed to ``Problem.solve``.

    Returns
    -------
    Reference

    Raises
    ------
    ValueError
        If ``solver`` is not an installed CVXPY solver (the message lists those that are).
    SolverError
        If the solver fails, a status is not ``optimal``, the primal-dual gap exceeds
        :func:`~cvxrank.tolerances.reference_agreement`, or the numpy evaluators disagree
        with the solver's values; the message names the solver, the formulation, the
        statuses, p*, d* and the gap.
    """
    name = check_solver(solver)
    key = f"{formulation.cache_key()}|code={code_version(type(formulation))}"
    if cache_dir is None:
        cache_dir = default_cache_dir()
    if cache and cache_dir is not None:
        cache_dir = _usable(cache_dir)
    if cache:
        if (key, name) in _CACHE:
            return _CACHE[(key, name)]
        if cache_dir is not None:
            loaded = _load(_cache_path(cache_dir, key, name), key, name, formulation)
            if loaded is not None:
                _CACHE[(key, name)] = loaded
                return loaded

    primal, primal_time = _solve(formulation.primal(), formulation, name, "primal", verbose)
    if formulation.dual_from_primal:
        dual, dual_time = primal, 0.0
    else:
        dual, dual_time = _solve(formulation.dual(), formulation, name, "dual", verbose)
    p_star, d_star = _value(primal), _dual_star(formulation, dual)
    rel_gap = relative_gap(d_star, p_star, formulation.gap_floor)
    tol = reference_agreement(name)
    summary = (f"{name} on {formulation.name} {formulation.params()}: primal status "
               f"{primal.status}, dual status {dual.status}, p* = {p_star!r}, d* = {d_star!r}, "
               f"relative gap {rel_gap:.3e} (allowed {tol:.1e})")
    if primal.status != cp.OPTIMAL or dual.status != cp.OPTIMAL:
        raise SolverError(f"not certified, a status is not optimal: {summary}")
    if not rel_gap <= tol:
        raise SolverError(f"not certified, primal and dual optima disagree: {summary}")
    w = np.array(formulation.w_variable.value, dtype=np.float64)
    alpha = np.array(formulation.alpha_variable.value, dtype=np.float64)
    for what, evaluated, solved in (
        ("primal_value(w*)", formulation.primal_value(w), p_star),
        ("dual_value(alpha*)", formulation.dual_value(alpha), d_star),
    ):
        disagreement = relative_gap(evaluated, solved, formulation.gap_floor)
        if not disagreement <= tol:
            raise SolverError(
                f"not certified, {what} = {evaluated!r} disagrees with the solver's value "
                f"{solved!r} (relative {disagreement:.3e}): {summary}"
            )
    w.flags.writeable = False
    alpha.flags.writeable = False
    ref = Reference(
        p_star=p_star, d_star=d_star, w=w, alpha=alpha, primal_status=primal.status,
        dual_status=dual.status, solver=name, primal_time=primal_time, dual_time=dual_time,
        rel_gap=rel_gap, key=key,
    )
    if cache:
        _CACHE[(key, name)] = ref
        if cache_dir is not None:
            _store(_cache_path(cache_dir, key, name), ref)
    return ref


def _solve(problem: cp.Problem, formulation: Formulation, solver: str, which: str,
           verbose: bool) -> tuple[cp.Problem, float]:
    """Solve one problem with the reference settings (:data:`SOLVER_OPTIONS`, updated by the
    formulation's ``reference_options``); solver crashes become SolverError."""
    start = time.perf_counter()
    try:
        options = {**SOLVER_OPTIONS.get(solver, {}),
                   **formulation.reference_options.get(solver, {})}
        problem.solve(solver=solver, verbose=verbose, **options)
    except cp.SolverError as exc:
        raise SolverError(
            f"{solver} failed on the {which} of {formulation.name} {formulation.params()}: "
            f"{exc}"
        ) from exc
    return problem, time.perf_counter() - start


def _value(problem: cp.Problem) -> float:
    return float("nan") if problem.value is None else float(problem.value)


def _dual_star(formulation: Formulation, dual: cp.Problem) -> float:
    """d*: the dual problem's value or, for a formulation whose dual point is the primal's
    multipliers (``dual_from_primal``), the numpy dual value there (NaN without one)."""
    if not formulation.dual_from_primal:
        return _value(dual)
    alpha = formulation.alpha_variable.value
    return float("nan") if alpha is None else float(formulation.dual_value(alpha))


def _cache_path(cache_dir: str | os.PathLike[str], key: str, solver: str) -> Path:
    digest = hashlib.sha256(f"{key}|{solver}".encode()).hexdigest()[:32]
    return Path(cache_dir) / f"reference-{digest}.npz"


_SCALARS = ("p_star", "d_star", "primal_time", "dual_time", "rel_gap")
_STRINGS = ("primal_status", "dual_status", "solver", "key")


def _store(path: Path, ref: Reference) -> None:
    """Write ``ref`` to ``path`` atomically (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {k: np.float64(getattr(ref, k)) for k in _SCALARS}
    fields.update({k: np.str_(getattr(ref, k)) for k in _STRINGS})
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    with os.fdopen(fd, "wb") as fh:
        np.savez(fh, w=ref.w, alpha=ref.alpha, **fields)
    os.replace(tmp, path)


def _load(path: Path, key: str, solver: str, formulation: Formulation) -> Reference | None:
    """The reference stored at ``path``, if one was stored for ``key`` and ``solver`` and
    its certificate checks out on ``formulation`` (:func:`_check_entry`); an entry that
    cannot be read or fails the check is deleted, with a warning."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["key"]) != key or str(f["solver"]) != solver:
                return None  # a hash collision: another problem's entry, left alone
            w, alpha = np.array(f["w"], dtype=np.float64), np.array(f["alpha"],
                                                                     dtype=np.float64)
            ref = Reference(w=w, alpha=alpha, **{k: float(f[k]) for k in _SCALARS},
                            **{k: str(f[k]) for k in _STRINGS})
        problem = _check_entry(ref, formulation)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        problem = f"unreadable ({type(exc).__name__}: {exc})"
    if problem:
        warnings.warn(f"reference cache entry {path} for {formulation.name} "
                      f"{formulation.params()}: {problem}; deleted, solving again",
                      CacheWarning, stacklevel=3)
        path.unlink(missing_ok=True)
        return None
    ref.w.flags.writeable = False
    ref.alpha.flags.writeable = False
    return ref


def _check_entry(ref: Reference, formulation: Formulation) -> str:
    """Why a stored reference is not a certificate of ``formulation`` (empty when it is):
    the numpy evaluators at its points must give back its p* and d*, its dual point must be
    feasible, and p* and d* must agree, all within the solver's agreement."""
    tol = reference_agreement(ref.solver)
    floor = formulation.gap_floor
    for what, evaluated, stored in (
        ("primal_value(w*)", formulation.primal_value(ref.w), ref.p_star),
        ("dual_value(alpha*)", formulation.dual_value(ref.alpha), ref.d_star),
    ):
        if not relative_gap(evaluated, stored, floor) <= tol:
            return f"{what} = {evaluated!r} but the entry says {stored!r}"
    if not relative_gap(ref.d_star, ref.p_star, floor) <= tol:
        return f"p* = {ref.p_star!r} and d* = {ref.d_star!r} disagree"
    infeasible = formulation.dual_infeasibility(ref.alpha)
    if not infeasible <= FEASIBILITY * max(1.0, float(np.max(np.abs(ref.alpha), initial=0.0))):
        return f"its dual point is infeasible by {infeasible:.3g}"
    return ""
