"""Synthetic ranking data: queries whose grades come from a planted linear scorer plus noise
(:func:`cvxrank.data.make_synthetic`, seeded: the same parameters give the same data)."""

from __future__ import annotations

from benchopt import BaseDataset

from cvxrank.data import RankingData, make_synthetic


class Dataset(BaseDataset):
    """``make_synthetic(n_queries, docs_per_query, n_features, n_grades=3, seed)``."""

    name = "simulated"
    parameters = {
        "n_queries": [50],
        "docs_per_query": [30],
        "n_features": [20],
        "seed": [0],
    }
    #: ``benchopt test``'s instance: 10 queries of 10 documents (256 pairs).
    test_parameters = {
        "n_queries": [10],
        "docs_per_query": [10],
        "n_features": [5],
        "seed": [0],
    }

    def get_data(self) -> dict[str, RankingData]:
        """The seeded synthetic data."""
        data = make_synthetic(n_queries=self.n_queries, docs_per_query=self.docs_per_query,
                              n_features=self.n_features, n_grades=3, noise=0.5,
                              seed=self.seed)
        return {"data": data}
