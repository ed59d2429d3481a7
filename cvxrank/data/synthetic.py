"""Seeded synthetic ranking data with a planted linear model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cvxrank.data.ranking_data import MAX_GRADE, RankingData


def make_synthetic(
    n_queries: int = 20,
    docs_per_query: int | tuple[int, int] = 20,
    n_features: int = 10,
    n_grades: int = 3,
    noise: float = 0.5,
    seed: int | np.random.Generator | None = 0,
    return_coef: bool = False,
) -> RankingData | tuple[RankingData, np.ndarray]:
    """Random queries whose grades come from a planted linear scorer plus noise.

    Features are standard normal; the planted ``w`` is a random unit vector; the latent
    score of a document is ``x @ w + noise * eps`` with standard normal ``eps``. Grades
    ``0 .. n_grades-1`` are cut from the latent scores at global quantiles with masses
    proportional to ``2**-g`` (high grades rarer, as in LETOR).

    Parameters
    ----------
    n_queries : int
        Number of queries.
    docs_per_query : int or (low, high)
        Documents per query, fixed or drawn uniformly from ``[low, high]``.
    n_features : int
        Number of features.
    n_grades : int
        Number of grade levels, from 2 to ``MAX_GRADE + 1`` (grades ``0..n_grades-1``).
    noise : float
        Standard deviation of the latent-score noise (finite, >= 0).
    seed : int, Generator or None
        Randomness; the same seed gives the same data.
    return_coef : bool
        Also return the planted ``w``.

    Returns
    -------
    RankingData, or (RankingData, ndarray) with ``return_coef``.

    Raises
    ------
    ValueError
        If a size is below 1, ``n_grades`` lies outside ``[2, MAX_GRADE + 1]`` or ``noise``
        is negative or not finite (NaN noise would make every latent score NaN).
    """
    if n_queries < 1 or n_features < 1:
        raise ValueError("n_queries and n_features must be >= 1")
    if not 2 <= n_grades <= MAX_GRADE + 1:
        raise ValueError(f"n_grades must lie in [2, {MAX_GRADE + 1}] (grades 0..MAX_GRADE), "
                         f"got {n_grades}")
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    if isinstance(docs_per_query, tuple):
        low, high = docs_per_query
        if not 1 <= low <= high:
            raise ValueError("docs_per_query=(low, high) needs 1 <= low <= high")
        sizes = rng.integers(low, high + 1, size=n_queries)
    else:
        if docs_per_query < 1:
            raise ValueError("docs_per_query must be >= 1")
        sizes = np.full(n_queries, docs_per_query)
    n = int(sizes.sum())
    X = rng.standard_normal((n, n_features))
    w = rng.standard_normal(n_features)
    w /= np.linalg.norm(w)
    latent = X @ w + noise * rng.standard_normal(n)
    mass = 2.0 ** -np.arange(n_grades)
    cuts = np.quantile(latent, np.cumsum(mass / mass.sum())[:-1])
    y = np.searchsorted(cuts, latent, side="right").astype(np.float64)
    data = RankingData.from_arrays(
        X, y, group=sizes,
        source=f"synthetic(n_queries={n_queries}, n={n}, d={n_features}, seed={seed})",
    )
    return (data, w) if return_coef else data


@dataclass(frozen=True, kw_only=True)
class SyntheticSpec:
    """The arguments of :func:`make_synthetic` that name one seeded data set: the one
    description shared by the verify instances (:class:`cvxrank.data.instances.Instance`)
    and the experiments' synthetic source (:class:`cvxrank.experiments.sources.Synthetic`).

    Attributes
    ----------
    n_queries, docs_per_query, n_features, n_grades, noise, seed
        As :func:`make_synthetic` takes them (an integer seed: the data are the same on any
        machine).
    """

    n_queries: int
    docs_per_query: int | tuple[int, int]
    n_features: int
    n_grades: int = 3
    noise: float = 0.5
    seed: int = 0

    def generate(self) -> RankingData:
        """The data set (generated once per process for the same arguments, then cached)."""
        return _generate(self.n_queries, self.docs_per_query, self.n_features, self.n_grades,
                         self.noise, self.seed)


#: Synthetic data sets a process keeps (the six verify instances; an experiment's few).
CACHE_SIZE = 8


@lru_cache(maxsize=CACHE_SIZE)
def _generate(n_queries: int, docs_per_query: int | tuple[int, int], n_features: int,
              n_grades: int, noise: float, seed: int) -> RankingData:
    return make_synthetic(n_queries=n_queries, docs_per_query=docs_per_query,  # type: ignore[return-value]
                          n_features=n_features, n_grades=n_grades, noise=noise, seed=seed)
