"""Convex learning-to-rank formulations: CVXPY primal and dual plus numpy evaluators."""

from cvxrank.formulations.base import Formulation
from cvxrank.formulations.ranksvm import RankSVM

__all__ = ["Formulation", "RankSVM"]
