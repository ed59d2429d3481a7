"""PRSVM (Chapelle & Keerthi 2010, Sect. 3): truncated Newton on the squared-hinge primal
through the sparse pair operator A, O(nd + p) a product."""

from benchmark_utils.cvxrank_solver import CvxrankSolver


class Solver(CvxrankSolver):
    """cvxrank's ``prsvm`` (squared hinge)."""

    name = "prsvm"
    solver = "prsvm"
    losses = ("squared_hinge",)
