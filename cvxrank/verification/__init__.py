"""``cvxrank verify``: every registered (formulation, solver) pair on every embedded instance,
against its certified CVXPY reference (:mod:`~cvxrank.verification.sweep`).
"""
