"""One fit across a Dask cluster: data sharded by query, the same certified optimum as in
memory.

* :mod:`cvxrank.distributed.cluster`: a Dask client (a running scheduler, or a local
  cluster started for the caller);
* :mod:`cvxrank.distributed.shards`: :class:`ShardedRankingData`, query-aligned shards
  held on the workers, read there from files or split from memory;
* :mod:`cvxrank.distributed.objective`: :class:`~cvxrank.distributed.objective.
  ShardedObjective`, what every family on shards shares (a formulation per shard on its
  worker, calls where the shards live, their time split), and :func:`fit_sharded` (which
  returns the last certified iterate when the cluster loses shards it cannot recompute,
  :class:`ShardsLost`);
* :mod:`cvxrank.distributed.tasks` and :mod:`cvxrank.distributed.ranksvm`:
  :class:`ShardedRankSVM` and :class:`ShardedIRSVM`, the pairwise objectives on the shards
  that the usual solvers (PRSVM+, PRSVM, the 1-slack) fit with their usual certificates;
* :mod:`cvxrank.distributed.query_blocks`: :class:`ShardedQueryBlocks`, the query-level
  families (RankMM-1/2/3, DORM, SVM MAP) whose n-slack cutting plane runs its separation
  oracle where the queries live.

Needs the ``dask`` extra (``pip install 'cvxrank[dask]'``).
"""

from cvxrank.distributed.cluster import connect
from cvxrank.distributed.objective import ShardsLost, fit_sharded
from cvxrank.distributed.query_blocks import ShardedQueryBlocks
from cvxrank.distributed.ranksvm import ShardedIRSVM, ShardedRankSVM
from cvxrank.distributed.shards import ShardedRankingData

__all__ = ["ShardedIRSVM", "ShardedQueryBlocks", "ShardedRankSVM", "ShardedRankingData",
           "ShardsLost", "connect", "fit_sharded"]
