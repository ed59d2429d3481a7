"""cvxrank: max-margin learning to rank, written twice.

Every formulation is written declaratively in CVXPY (a certified reference) and as a fast
hand-written solver, and the two are checked against each other.

The top-level names are loaded on first use, so that ``import cvxrank`` (and the command
line's ``--help``) does not import numpy or scipy.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PairSet", "RankingData", "build_pairs", "count_pairs"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        import cvxrank.data

        return getattr(cvxrank.data, name)
    raise AttributeError(f"module 'cvxrank' has no attribute {name!r}")
