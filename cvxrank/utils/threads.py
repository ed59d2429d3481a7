"""BLAS thread pools: one place that limits them, for solvers and experiments alike."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


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
