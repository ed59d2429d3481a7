"""Le & Smola's ranking scores as objects (:mod:`cvxrank.oracles.measures`): a name stands
for its object, a researcher's measure (its position weights and relevance transform) runs
on DORM's cutting plane as a built-in one does, and matches a brute-force score."""

from __future__ import annotations

import pickle
from itertools import permutations

import numpy as np
import pytest

from cvxrank.data import make_synthetic
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.dorm import DORM, parse_measure
from cvxrank.oracles import measures
from cvxrank.oracles.dorm import MEASURES, ranking_score, score_vectors
from cvxrank.oracles.measures import RankingMeasure


class TopHeavyDCG(RankingMeasure):
    """A researcher's measure: DCG's gains with weights 1/i^2 (not one of Le & Smola's)."""

    name = "top_heavy_dcg"

    def vectors(self, y, cutoff, options):
        i = measures.positions(y)
        return 1.0 / i ** 2, np.exp2(y) - 1.0


class SameAsNDCG(RankingMeasure):
    """NDCG written again by hand, to compare with the built-in one."""

    name = "my_ndcg"

    def vectors(self, y, cutoff, options):
        i = measures.positions(y)
        a = 1.0 / np.log2(i + 1.0)
        return a, measures.normalized(a, np.exp2(y) - 1.0)


def test_the_names_are_the_objects() -> None:
    assert MEASURES == tuple(measures.RANKING_MEASURES)
    for name in MEASURES:
        m = measures.ranking_measure(name)
        assert m.name == name and pickle.loads(pickle.dumps(m)) is m
    assert parse_measure("ndcg@10") == (measures.ndcg, 10)
    assert parse_measure("p@3") == (measures.precision, 3)
    assert parse_measure(measures.mrr) == (measures.mrr, None)
    with pytest.raises(ValueError, match="measure must be one of wta, mrr"):
        measures.ranking_measure("nope")


def test_a_measure_object_scores_as_its_brute_force_definition() -> None:
    y = np.array([2.0, 0.0, 1.0, 2.0, 0.0])
    a, b = score_vectors(y, TopHeavyDCG())
    for order in permutations(range(y.size)):
        expected = sum((2.0 ** y[d] - 1.0) / (p + 1) ** 2 for p, d in enumerate(order))
        assert ranking_score(np.array(order), a, b) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="takes no cutoff"):
        score_vectors(y, TopHeavyDCG(), cutoff=3)


def test_a_researcher_s_measure_runs_on_dorm_s_cutting_plane() -> None:
    data = make_synthetic(n_queries=8, docs_per_query=(5, 12), n_features=4, n_grades=3,
                          seed=2)
    built_in = fit_formulation(DORM(data, C=1.0, loss="ndcg"), "cutting-plane")
    by_hand = fit_formulation(DORM(data, C=1.0, loss=SameAsNDCG()), "cutting-plane")
    assert built_in.converged and by_hand.converged
    assert by_hand.objective == pytest.approx(built_in.objective, rel=1e-9)
    own = DORM(data, C=1.0, loss=TopHeavyDCG())
    assert own.name == "dorm-top_heavy_dcg"
    run = fit_formulation(own, "cutting-plane")
    assert run.converged and run.relative_gap <= 1e-6
