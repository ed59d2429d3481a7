"""Numerics below the formulations: floating-point error bounds, convex sets and their
projections, kernels, cutting-plane bundles.

* :mod:`~cvxrank.numerics.rounding`: rounding-error bounds (Higham's gamma_n);
* :mod:`~cvxrank.numerics.compensated`: double-word arithmetic (error-free sums and products);
* :mod:`~cvxrank.numerics.sets`: the dual feasible sets and their projections;
* :mod:`~cvxrank.numerics.l1inf_kernels`: the compiled l1,inf projection;
* :mod:`~cvxrank.numerics.simplex_kernels`: the compiled active set of the 1-slack's master QP;
* :mod:`~cvxrank.numerics.kernel`: kernel matrices;
* :mod:`~cvxrank.numerics.cuts`: a bundle of cutting planes.
"""
