"""BLAS thread pools: one place that sets them, for solvers and experiments alike.

**The policy** (``docs/performance.md``). cvxrank's work is matrix-vector products with a
tall n x d matrix X and sorting passes: memory-bound work, where a second BLAS thread adds
little bandwidth and, on a shared machine, spin-waits on a busy core. OpenBLAS's threads
spin for about 0.1 s after starting and after every product they share, so a default
two-thread OpenBLAS costs a process 0.1-0.3 s of CPU doing nothing (numpy and scipy each load
one): measured, the five OHSUMED folds' hinge fits in one process take 1.34 s of CPU with the
default threads and 1.07 s with one. Hence:

* :func:`start_blas_on_one_thread` (run by ``import cvxrank``): a process that imports
  cvxrank before numpy, and has not chosen a thread count itself
  (:data:`THREAD_VARIABLES`), starts its BLAS libraries with one thread;
* the solvers run their products on :func:`product_threads` threads: one for products with
  at most :data:`ONE_THREAD_MAX_FEATURES` columns, whatever the environment;
* the one kind of product where more threads pay, a level-3 product of at least
  :data:`LEVEL3_MIN_FLOPS` (a kernel's Gram matrix), runs on :func:`level3_threads`: every
  usable core, raised through threadpoolctl.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

#: The variables through which a user chooses the BLAS and OpenMP thread counts; when any is
#: set, cvxrank's start-up leaves the thread pools as that choice makes them.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: The variables :func:`start_blas_on_one_thread` sets: the BLAS libraries' own, not
#: ``OMP_NUM_THREADS`` (which other OpenMP code in the process, scikit-learn's, also reads).
BLAS_START_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


#: Set beside :data:`BLAS_START_VARIABLES` by :func:`start_blas_on_one_thread`, so that this
#: process and those it starts tell cvxrank's start-up choice from a user's.
START_MARKER = "CVXRANK_BLAS_START"


def start_blas_on_one_thread(environ: dict[str, str] | None = None) -> bool:
    """Make the BLAS libraries start with one thread, if nothing has chosen otherwise.

    Sets :data:`BLAS_START_VARIABLES` to ``"1"`` (and :data:`START_MARKER`) when none of
    :data:`THREAD_VARIABLES` is set and numpy is not imported yet (its BLAS reads them once,
    when it is loaded). The variables stay set, so the processes this one starts (Dask or
    joblib workers, notebook kernels) start the same way. :func:`level3_threads` raises the
    threads where that pays.

    Parameters
    ----------
    environ : dict, optional
        The environment to set (default ``os.environ``).

    Returns
    -------
    bool
        Whether the variables were set.
    """
    environ = os.environ if environ is None else environ
    if "numpy" in sys.modules or any(name in environ for name in THREAD_VARIABLES):
        return False
    for name in BLAS_START_VARIABLES:
        environ[name] = "1"
    environ[START_MARKER] = "1"
    return True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one, else
    the machine's count; at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Set the BLAS thread pools to ``n`` threads inside the block (None or <= 0: as is).

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


#: Fewest floating-point operations of a level-3 product (matrix times matrix) that
#: :func:`level3_threads` spreads over the cores: a product of 2 x 10^9 takes about 0.1 s
#: on one core here, and a second thread halves that for the same CPU time plus its spin.
LEVEL3_MIN_FLOPS = 2e9


def level3_threads(flops: float) -> int | None:
    """The BLAS threads for one level-3 product of ``flops`` operations: every usable core
    (:func:`usable_cores`) from :data:`LEVEL3_MIN_FLOPS` on, else as is (None); a thread
    count the user chose (:func:`user_chose_threads`) stands."""
    if flops < LEVEL3_MIN_FLOPS or user_chose_threads():
        return None
    return usable_cores()


def user_chose_threads(environ: dict[str, str] | None = None) -> bool:
    """Whether a thread count was set other than by :func:`start_blas_on_one_thread`: one of
    :data:`THREAD_VARIABLES` set without :data:`START_MARKER`, or to other than its value."""
    environ = os.environ if environ is None else environ
    if environ.get(START_MARKER) != "1":
        return any(name in environ for name in THREAD_VARIABLES)
    return ("OMP_NUM_THREADS" in environ
            or any(environ.get(name, "1") != "1" for name in BLAS_START_VARIABLES))
