"""Certificates that hold in floating point: on the real folds every reported radius is
positive and at least a lower bound on ||w - w*|| computed here, independently of cvxrank's
engines, from the explicit preference pairs (issue: a radius of 0 where w is 1e-8 from w*).

* smooth losses (squared hinge, Huber): ||w - w*|| >= ||grad P(w)|| / L, with L = 1 + 2C
  lambda_max(sum_k c_k d_k d_k^T) a Lipschitz constant of the gradient (both losses have
  l'' <= 2), the gradient summed pair by pair with its own rounding bound taken off;
* the hinge: ||w - w*|| >= (P(w) - P(w')) / ||s|| for any w' (p* <= P(w')) and any
  subgradient s at w (convexity), with w' the best point of a line search along -s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cvxrank.data import RankingData, make_synthetic, read_svmlight
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM

FOLDS = [("letor3_ohsumed/QueryLevelNorm", fold) for fold in range(1, 6)] + [
    ("letor4_mq2008", fold) for fold in range(1, 6)]

U = 2.0 ** -53


def explicit_pairs(data: RankingData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (preferred, other) pair of documents of a query with different grades, and the
    dense feature matrix."""
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    upper, lower = [], []
    for q in np.unique(data.query_index):
        rows = np.flatnonzero(data.query_index == q)
        i, j = np.nonzero(data.y[rows][:, None] > data.y[rows][None, :])
        upper.append(rows[i])
        lower.append(rows[j])
    return np.concatenate(upper), np.concatenate(lower), X


def objective_and_slope(X, upper, lower, w, C, loss):
    """P(w) (unit pair weights and margins) and the pairs' derivative l'(r), r = 1 - d.w."""
    r = 1.0 - (X[upper] @ w - X[lower] @ w)
    pos = np.maximum(r, 0.0)
    if loss == "hinge":
        value, slope = pos, (r > 0).astype(float)
    elif loss == "squared_hinge":
        value, slope = pos * pos, 2.0 * pos
    else:
        value, slope = np.where(r > 1.0, 2.0 * r - 1.0, pos * pos), 2.0 * np.minimum(pos, 1.0)
    return 0.5 * float(w @ w) + C * math.fsum(value), slope


def subgradient(X, upper, lower, w, C, slope):
    """w - C sum_k l'(r_k) d_k, and a bound on its rounding (per feature)."""
    weights = np.zeros(X.shape[0])
    np.add.at(weights, upper, -slope)
    np.add.at(weights, lower, slope)
    g = w + C * (X.T @ weights)
    error = 4 * X.shape[0] * U * (np.abs(w) + C * (np.abs(X).T @ np.bincount(
        np.r_[upper, lower], weights=np.r_[slope, slope], minlength=X.shape[0])))
    return g, error


def lower_bound(data: RankingData, w: np.ndarray, C: float, loss: str) -> float:
    """A lower bound on ||w - w*|| (module docstring), computed from the explicit pairs."""
    upper, lower, X = explicit_pairs(data)
    value, slope = objective_and_slope(X, upper, lower, w, C, loss)
    g, error = subgradient(X, upper, lower, w, C, slope)
    if loss != "hinge":
        D = X[upper] - X[lower]
        L = 1.0 + 2.0 * C * float(np.linalg.eigvalsh(D.T @ D)[-1])
        return max(float(np.linalg.norm(g)) - float(np.linalg.norm(error)), 0.0) / L
    norm = float(np.linalg.norm(g))
    best = value
    for step in 10.0 ** -np.arange(1, 13):
        best = min(best, objective_and_slope(X, upper, lower, w - step * g, C, loss)[0])
    rounding = 8 * upper.size * U * value  # both objectives' sums
    return max(value - best - rounding, 0.0) / norm if norm else 0.0


def fold(shared_data, root: str, k: int) -> RankingData:
    return read_svmlight(shared_data / root / f"Fold{k}" / "train.txt")


@pytest.mark.parametrize("root,k", FOLDS)
@pytest.mark.parametrize("loss,C", [("squared_hinge", 1.0), ("squared_hinge", 5e-5),
                                    ("huber", 1.0), ("huber", 5e-5)])
def test_smooth_radii_are_positive_and_sound(shared_data, root, k, loss, C) -> None:
    data = fold(shared_data, root, k)
    run = fit_formulation(RankSVM(data, C=C, loss=loss))
    assert run.converged and run.solver == "prsvm+"
    assert run.w_radius > 0 and run.gap > 0
    assert run.w_radius >= lower_bound(data, run.w, C, loss)


@pytest.mark.parametrize("root,k", FOLDS)
@pytest.mark.parametrize("C", [5e-5, 1e-2])
def test_hinge_radii_are_positive_and_sound(shared_data, root, k, C) -> None:
    # C = 1 costs the 1-slack 5-10 s a fold: the smooth losses cover that C
    data = fold(shared_data, root, k)
    run = fit_formulation(RankSVM(data, C=C, loss="hinge"))
    assert run.converged and run.solver == "1-slack"
    assert run.w_radius > 0 and run.gap > 0
    assert run.w_radius >= lower_bound(data, run.w, C, "hinge")


def test_the_lower_bound_sees_a_point_off_the_optimum() -> None:
    """The independent bound is no formality: moved off the optimum by 0.05, a point's
    bound exceeds the optimum's radius (so a radius of 0 there would fail the tests)."""
    data = make_synthetic(n_queries=6, docs_per_query=12, n_features=5, seed=3)
    for loss in ("squared_hinge", "huber", "hinge"):
        run = fit_formulation(RankSVM(data, C=1.0, loss=loss))
        off = run.w + 0.05 * np.linspace(1.0, -1.0, run.w.size)
        assert lower_bound(data, off, 1.0, loss) > run.w_radius, loss
        assert lower_bound(data, run.w, 1.0, loss) <= run.w_radius, loss
