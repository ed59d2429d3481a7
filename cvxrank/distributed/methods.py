"""Which objective on shards stands for each method of :data:`cvxrank.methods.METHODS`.

* ``ranksvm`` (its three losses and a researcher's ramp) and ``irsvm``:
  :class:`~cvxrank.distributed.ranksvm.ShardedRankSVM` and
  :class:`~cvxrank.distributed.ranksvm.ShardedIRSVM`;
* a method whose formulation has a separation oracle with cut bounds (RankMM's three
  losses, DORM, SVM MAP): :class:`~cvxrank.distributed.query_blocks.ShardedQueryBlocks`
  of its formulation class.

The others (the OC SVMs' thresholds, ConeRank's blocks) are refused with the list of those
that run on shards.
"""

from __future__ import annotations

from typing import Any

from cvxrank.distributed.objective import ShardedObjective
from cvxrank.distributed.shards import ShardedRankingData
from cvxrank.errors import UsageError

#: The pairwise methods on shards, by name: their sharded objective's class name in
#: :mod:`cvxrank.distributed.ranksvm`.
PAIRWISE = {"ranksvm": "ShardedRankSVM", "irsvm": "ShardedIRSVM"}


def on_shards(method: Any) -> str:
    """``"pairwise"``, ``"query_blocks"``, or ``""`` for a method that does not run on
    shards (``method`` a :class:`cvxrank.methods.Method`)."""
    if method.name in PAIRWISE:
        return "pairwise"
    cls = method.formulation_class()
    if hasattr(cls, "separation_oracle") and hasattr(cls, "cut_bounds"):
        return "query_blocks"
    return ""


def sharded_methods() -> list[str]:
    """The methods that run on shards, in :data:`cvxrank.methods.METHODS`'s order."""
    from cvxrank.methods import METHODS

    return [name for name, method in METHODS.items() if on_shards(method)]


def sharded_formulation(method: Any, data: ShardedRankingData, *, loss: Any = None,
                        **params: Any) -> ShardedObjective:
    """The method's objective on ``data`` with ``loss`` (a name or a loss object, as
    :meth:`cvxrank.methods.Method.build` takes it) and its hyper-parameters.

    Raises
    ------
    UsageError
        For a method that does not run on shards (the message lists those that do).
    """
    from cvxrank.distributed import ranksvm
    from cvxrank.distributed.query_blocks import ShardedQueryBlocks

    kind = on_shards(method)
    if not kind:
        raise UsageError(f"--method {method.name} does not run on shards yet; --backend dask "
                         f"fits {', '.join(sharded_methods())}")
    loss = method.check_loss(loss)
    if kind == "pairwise":
        return getattr(ranksvm, PAIRWISE[method.name])(data, loss=loss, **params)
    if len(method.losses) > 1:
        params["loss"] = loss
    return ShardedQueryBlocks(data, method.formulation_class(), **params)
