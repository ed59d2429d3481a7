"""A Dask client: to a running scheduler, or to a local cluster started for the caller.

One place for what every Dask use of cvxrank shares (the grid backend,
:mod:`cvxrank.experiments.backends`, and the sharded fits of :mod:`cvxrank.distributed`):
the import error that names the extra to install, the local cluster's settings, the
timeout of a scheduler given by address.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from cvxrank.errors import CvxrankError

#: Seconds to wait for a Dask scheduler given by address.
SCHEDULER_TIMEOUT = 10.0


@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int = 2) -> Iterator[Any]:
    """A ``dask.distributed.Client``, closed (with its local cluster) on exit.

    Parameters
    ----------
    scheduler : str or None
        Address of a running scheduler (``tcp://host:8786``); its workers must see the same
        data paths. None: a ``LocalCluster`` of ``workers`` single-threaded worker
        processes, started here and closed on exit.
    workers : int
        Worker processes of the local cluster.

    Raises
    ------
    CvxrankError
        When dask.distributed is not installed (the ``dask`` extra), or no scheduler
        answers at ``scheduler``.

    Notes
    -----
    Two of Dask's defaults slow cvxrank's tasks down and are off in the local cluster: the
    workers' statistical profiler (it samples the running thread every 10 ms), and
    ``MALLOC_TRIM_THRESHOLD_`` in the workers' environment, which turns off glibc's
    adaptive mmap threshold so that every large numpy array is mapped and page-faulted
    afresh (PRSVM's fits took 2.5x longer). The local workers' own logs are silenced below
    CRITICAL: a task's error (a malformed shard) is raised once, on the client, as one line,
    not also printed with the worker's traceback.
    """
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise CvxrankError("Dask needs dask.distributed: pip install 'cvxrank[dask]'") from None
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    cluster = None
    if scheduler is None:
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            # (the dashboard on a free port: none is opened without one, but a second
            # cluster then warns that 8787 is taken)
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            raise CvxrankError(f"no Dask scheduler at {scheduler}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
