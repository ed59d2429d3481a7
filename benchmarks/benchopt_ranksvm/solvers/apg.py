"""Accelerated projected gradient on RankSVM's dual: FISTA (Beck & Teboulle 2009, Thm. 4.4)
for the hinge, constant-momentum Nesterov for the strongly concave squared-hinge dual."""

from benchmark_utils.cvxrank_solver import CvxrankSolver


class Solver(CvxrankSolver):
    """cvxrank's ``apg`` (both losses)."""

    name = "apg"
    solver = "apg"
    losses = ("squared_hinge", "hinge")
