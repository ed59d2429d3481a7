"""PRSVM+ (Chapelle & Keerthi 2010, Sect. 4): truncated Newton on the squared-hinge primal,
its gradient and Hessian products in O(nd + n log n) by sorting, without the pairs."""

from benchmark_utils.cvxrank_solver import CvxrankSolver


class Solver(CvxrankSolver):
    """cvxrank's ``prsvm+`` (squared hinge)."""

    name = "prsvm-plus"
    solver = "prsvm+"
    losses = ("squared_hinge",)
