"""Projected gradient on RankSVM's dual (Beck & Teboulle 2009, Thm. 3.1): the box
``0 <= alpha <= C`` (hinge, O(1/k)) or the orthant (squared hinge, linear rate)."""

from benchmark_utils.cvxrank_solver import CvxrankSolver


class Solver(CvxrankSolver):
    """cvxrank's ``pg`` (both losses)."""

    name = "pg"
    solver = "pg"
    losses = ("squared_hinge", "hinge")
