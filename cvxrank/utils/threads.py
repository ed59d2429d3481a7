"""BLAS thread pools: one place that limits them, for solvers and experiments alike."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one, else
    the machine's count; at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit the BLAS thread pools to ``n`` threads inside the block (None or <= 0: as is).

    On a shared machine with few cores a multi-threaded BLAS can spin-wait on busy cores and
    make a small matrix-vector product a hundred times slower; timing runs are steadier with
    one thread (``threadpoolctl``, a scikit-learn dependency). One thread everywhere also
    makes the floating-point results the same in every process, whatever the backend.
    """
    if n is None or n <= 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(n), user_api="blas"):
        yield


#: Most feature columns for which a solver's products with X run on one BLAS thread
#: (:func:`product_threads`).
ONE_THREAD_MAX_FEATURES = 512


def product_threads(n_features: int) -> int | None:
    """The BLAS threads for a solver whose work is products ``X v`` and ``X' u`` with an
    n x d matrix X: one when d is at most :data:`ONE_THREAD_MAX_FEATURES`, else as is (None).

    Such products are memory-bound (BLAS level 2): a second thread adds no bandwidth to
    speak of for tens or hundreds of columns, and on a busy 2-core machine it spins on the
    other core, doubling the process's CPU. The default ``cvxrank fit`` (PRSVM+, squared
    hinge, C = 1) on synthetic 10^5 x 46: 3.9-5.0 s of CPU with the default two threads,
    3.5-3.6 s with one (``docs/performance.md``).
    """
    return 1 if n_features <= ONE_THREAD_MAX_FEATURES else None
