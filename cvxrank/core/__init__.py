"""The core every solver shares: the run loop and the solver contract.

* :mod:`~cvxrank.core.trace`: the recorder that times, records, certifies and stops a run,
  and the frozen :class:`~cvxrank.core.trace.Run` it returns;
* :mod:`~cvxrank.core.capabilities`: what a solver needs of a formulation, and the
  declaration of a solver (:func:`~cvxrank.core.capabilities.solver`).
"""
