"""Helpers shared by the benchmark's objective, datasets and solvers (benchopt imports this
package as ``benchmark_utils``): the certified optimum (:mod:`.optimum`), the base class of
the cvxrank solvers driven by benchopt's callback (:mod:`.cvxrank_solver`), LIBLINEAR ranksvm
(:mod:`.peers`) and where the real data are (:mod:`.paths`)."""
