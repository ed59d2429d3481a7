"""The 1-slack cutting plane for the hinge RankSVM (Joachims 2006; Joachims, Finley & Yu
2009): Joachims' O(n log n) separation oracle, cvxrank's active-set master and exact finish."""

from benchmark_utils.cvxrank_solver import CvxrankSolver


class Solver(CvxrankSolver):
    """cvxrank's ``1-slack`` (hinge)."""

    name = "1-slack"
    solver = "1-slack"
    losses = ("hinge",)
    #: ``benchopt test`` runs it on the hinge (the objective's test loss is the squared hinge).
    test_config = {"objective": {"loss": "hinge"}}
