"""Convex learning-to-rank formulations: CVXPY primal and dual plus numpy evaluators."""

from cvxrank.formulations.base import Formulation
from cvxrank.formulations.irsvm import IRSVM, ndcg1_swap_drop
from cvxrank.formulations.kernel_ranksvm import KernelRankSVM
from cvxrank.formulations.ocsvm import OrdinalSVM, OrdinalSVMSumOfMargins
from cvxrank.formulations.rankmm import RankMM
from cvxrank.formulations.ranksvm import RankSVM

__all__ = ["IRSVM", "Formulation", "KernelRankSVM", "OrdinalSVM", "OrdinalSVMSumOfMargins",
           "RankMM", "RankSVM", "ndcg1_swap_drop"]
