"""Foundation: what every layer may use and which imports nothing of cvxrank but its errors.

* :mod:`~cvxrank.utils.jsonable`: numpy values made JSON-ready;
* :mod:`~cvxrank.utils.threads`: the BLAS thread policy and the thread count of a block of
  code;
* :mod:`~cvxrank.utils.lazy_sparse`: ``scipy.sparse``, imported where a sparse matrix is made;
* :mod:`~cvxrank.utils.output_files`: files written whole or not at all, never over a file
  cvxrank did not write.
"""
