"""Compiled kernels: the ahead-of-time modules and the build that fills them.

* :mod:`~cvxrank.compiled.aot`: builds and loads a kernel file's ahead-of-time extension
  module (no numba import at run time);
* :mod:`~cvxrank.compiled.precompile`: ``python -m cvxrank.compiled.precompile``, run by
  ``make install``, builds every kernel file's module.
"""
