"""One fit across a Dask cluster: data sharded by query, the same certified optimum as in
memory.

* :mod:`cvxrank.distributed.cluster`: a Dask client (a running scheduler, or a local
  cluster started for the caller);
* :mod:`cvxrank.distributed.shards`: :class:`ShardedRankingData`, query-aligned shards
  held on the workers, read there from files or split from memory;
* :mod:`cvxrank.distributed.tasks`: what a worker computes on a shard (loss, gradient,
  Hessian products, margin band), summed on the client;
* :mod:`cvxrank.distributed.ranksvm`: :class:`ShardedRankSVM`, the RankSVM objective on the
  shards that the usual solvers (PRSVM+, PRSVM, the 1-slack) fit with their usual
  certificates, and :func:`fit_sharded` (which returns the last certified iterate when the
  cluster loses shards it cannot recompute, :class:`ShardsLost`).

Needs the ``dask`` extra (``pip install 'cvxrank[dask]'``).
"""

from cvxrank.distributed.cluster import connect
from cvxrank.distributed.ranksvm import ShardedRankSVM, ShardsLost, fit_sharded
from cvxrank.distributed.shards import ShardedRankingData

__all__ = ["ShardedRankSVM", "ShardedRankingData", "ShardsLost", "connect", "fit_sharded"]
