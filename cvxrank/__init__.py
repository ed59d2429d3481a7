"""cvxrank: max-margin learning to rank, written twice.

Every formulation is written declaratively in CVXPY (a certified reference) and as a fast
hand-written solver, and the two are checked against each other.

The top-level names are loaded on first use, so that ``import cvxrank`` (and the command
line's ``--help``) does not import numpy or scipy: the data types from :mod:`cvxrank.data`,
and :func:`load_model` (:func:`cvxrank.estimators.load_model`: the fitted estimator of a
model file of ``cvxrank fit --save-model``), named by import path as in
:mod:`cvxrank.methods`, since the estimators sit above this package in the layers.

Importing cvxrank before numpy starts the BLAS with one thread unless a thread count is set
(:func:`cvxrank.utils.threads.start_blas_on_one_thread`, the thread policy of
``docs/performance.md``).
"""

from __future__ import annotations

from typing import Any

from cvxrank.utils.threads import start_blas_on_one_thread

start_blas_on_one_thread()

__all__ = ["PairSet", "RankingData", "build_pairs", "count_pairs", "load_model"]
__version__ = "0.1.0"

#: Top-level names that live elsewhere than :mod:`cvxrank.data`, by import path.
ELSEWHERE = {"load_model": "cvxrank.estimators:load_model"}


def __getattr__(name: str) -> Any:
    if name in ELSEWHERE:
        from cvxrank.methods import load

        return load(ELSEWHERE[name])
    if name in __all__:
        import cvxrank.data

        return getattr(cvxrank.data, name)
    raise AttributeError(f"module 'cvxrank' has no attribute {name!r}")
