"""Exact separation oracles of structured max-margin ranking: one query at a time.

Each oracle finds, for one query and the current weights w, the ranking whose constraint is
most violated, and returns it as a :class:`Violation`: an affine minorant
``loss + <v, feature_difference>`` of the query's slack, exact at w, ready for a cutting
plane. Rankings are ``order`` arrays: ``order[p]`` is the document at position ``p``.

* :mod:`cvxrank.oracles.dorm`: Le & Smola's DORM. Scores as <a(pi), b(y)> (Eqs. (9)-(16)),
  the loss (17) and the position-dependent loss (19), the feature map (20) with decreasing
  coefficients, and the most violated permutation (8) as a linear assignment problem (24),
  with the sorting shortcut where it is provably optimal.
* :mod:`cvxrank.oracles.svmmap`: SVM MAP (Yue et al. 2007; Li's survey, Sect. 5.1). The
  loss 1 - AP, the joint feature map over (relevant, irrelevant) pairs, and the exact
  greedy search for the most violated ranking.
"""

from cvxrank.oracles.dorm import (
    MEASURES,
    Violation,
    feature_map,
    ideal_order,
    measure_loss,
    most_violated_permutation,
    most_violated_position_loss,
    mwta_cutoff,
    position_coefficients,
    position_cost,
    position_loss,
    ranking_score,
    score_vectors,
    sorted_assignment,
)
from cvxrank.oracles.svmmap import ap_loss, joint_feature_map, most_violated_ranking

__all__ = [
    "MEASURES",
    "Violation",
    "ap_loss",
    "feature_map",
    "ideal_order",
    "joint_feature_map",
    "measure_loss",
    "most_violated_permutation",
    "most_violated_position_loss",
    "most_violated_ranking",
    "mwta_cutoff",
    "position_coefficients",
    "position_cost",
    "position_loss",
    "ranking_score",
    "score_vectors",
    "sorted_assignment",
]
