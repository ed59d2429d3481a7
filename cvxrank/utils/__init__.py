"""Foundation: what every layer may use and which imports nothing of cvxrank but its errors.

* :mod:`~cvxrank.utils.jsonable`: numpy values made JSON-ready;
* :mod:`~cvxrank.utils.threads`: the BLAS thread count of a block of code;
* :mod:`~cvxrank.utils.output_files`: files written whole or not at all, never over a file
  cvxrank did not write.
"""
