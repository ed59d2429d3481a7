"""cvxrank: max-margin learning to rank, written twice.

Every formulation is written declaratively in CVXPY (a certified reference) and as a fast
hand-written solver, and the two are checked against each other.
"""

from cvxrank.data import PairSet, RankingData, build_pairs, count_pairs

__all__ = ["PairSet", "RankingData", "build_pairs", "count_pairs"]
__version__ = "0.1.0"
