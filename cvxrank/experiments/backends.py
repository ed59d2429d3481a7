"""Running tasks: in this process, on local processes (joblib) or on a Dask cluster.

:func:`run_tasks` yields ``(index, TaskResult)`` pairs *as they finish* (so a caller can
report progress or stop early), whatever the backend:

* ``"sequential"``: one task after the other in this process, in order.
* ``"processes"``: ``joblib.Parallel(n_jobs=workers, backend="loky",
  return_as="generator_unordered")`` on local worker processes.
* ``"dask"``: ``dask.distributed``: the scheduler at ``scheduler`` (an address such as
  ``tcp://host:8786``; its workers must see the same data paths), or a ``LocalCluster`` of
  ``workers`` single-threaded worker processes (the profiler and malloc trimming off)
  started for the run and closed after it; results come back with ``as_completed``. Needs
  the ``dask`` extra (``pip install 'cvxrank[dask]'``).

Tasks and results are plain data (:mod:`cvxrank.experiments.tasks`); every worker process
reads the files itself, once (:mod:`cvxrank.experiments.sources`). So that it reads as few
as possible, the pool backends send *chunks* of tasks that share their data
(:func:`plan_chunks`): a worker runs every grid point of a fold in one go. Every backend
runs its tasks with ``blas_threads`` BLAS threads per process (default one:
:func:`~cvxrank.experiments.timing.blas_threads`), which also makes the floating-point
results, and so the selections, identical across backends.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from cvxrank.errors import CvxrankError
from cvxrank.experiments.tasks import run_task
from cvxrank.threads import blas_threads as limit_blas

#: The backends of :func:`run_tasks`.
BACKENDS = ("sequential", "processes", "dask")

#: Seconds to wait for a Dask scheduler given by address.
SCHEDULER_TIMEOUT = 10.0

Chunk = list[tuple[int, Any]]


def check_backend(backend: str, *, workers: int | None = None,
                  scheduler: str | None = None) -> None:
    """Refuse an unknown backend, ``workers < 1``, or a scheduler without ``"dask"``.

    Raises
    ------
    ValueError
        Naming the problem.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if scheduler is not None and backend != "dask":
        raise ValueError(f"a scheduler address is for the dask backend, not {backend}")


def plan_chunks(tasks: Sequence[Any], n_workers: int,
                max_chunk: int | None = None) -> list[Chunk]:
    """Group the tasks into chunks that one worker runs in one go, reading their data once.

    Tasks on the same data (the same fold) form a group, in order of first appearance. With
    G groups and W workers, the first ``G - G mod W`` groups are one chunk each; each of the
    last ``G mod W`` groups (every group when G < W) is split into W chunks of near-equal
    size, so that no worker idles at the end while another runs a whole fold (five folds on
    two workers: two folds each, and the fifth shared). Indices are the tasks' positions.
    ``max_chunk`` cuts every chunk into pieces of at most that many tasks (in order), so that
    progress is reported while a long fold runs.
    """
    groups: dict[str, Chunk] = {}
    for i, task in enumerate(tasks):
        groups.setdefault(task.source.key, []).append((i, task))
    ordered = list(groups.values())
    whole = len(ordered) - len(ordered) % n_workers
    chunks = ordered[:whole]
    for group in ordered[whole:]:
        size = -(-len(group) // n_workers)
        chunks += [group[start:start + size] for start in range(0, len(group), size)]
    if max_chunk is None:
        return chunks
    return [chunk[i:i + max_chunk] for chunk in chunks for i in range(0, len(chunk), max_chunk)]


def run_chunk(chunk: Chunk, blas_threads: int | None,
              runner: Callable[[Any], Any] = run_task) -> list[tuple[int, Any]]:
    """Run a chunk's tasks with ``runner`` in this process (the function the pool backends
    send).

    An error that stops the run crosses back to the caller as a :class:`CvxrankError` with
    the original message (some exception classes, like ``DataFormatError``, cannot be
    rebuilt from their pickled arguments).
    """
    try:
        with limit_blas(blas_threads):
            return [(i, runner(task)) for i, task in chunk]
    except (CvxrankError, ValueError, OSError) as exc:
        raise CvxrankError(_message(exc)) from None


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def run_tasks(tasks: Sequence[Any], *, backend: str = "sequential",
              workers: int | None = None, scheduler: str | None = None,
              blas_threads: int | None = 1, progress: bool = False,
              runner: Callable[[Any], Any] = run_task, max_chunk: int | None = None,
              desc: str | None = None) -> Iterator[tuple[int, Any]]:
    """Run ``tasks``; yield ``(index, result)`` as each finishes (see the module docstring).

    Parameters
    ----------
    tasks : sequence
        :class:`~cvxrank.experiments.tasks.Task` objects, or any picklable tasks with a
        ``source`` (whose ``key`` groups them) that ``runner`` runs.
    backend : {"sequential", "processes", "dask"}
    workers : int or None
        Worker processes (default: the number of CPUs); ignored by ``"sequential"`` and
        with ``scheduler``.
    scheduler : str or None
        Address of a running Dask scheduler (``"dask"`` only; None: a local cluster).
    blas_threads : int or None
        BLAS threads per process while tasks run (None or 0: the library's default).
    progress : bool
        Show a progress bar (tqdm) on stderr.
    runner : callable
        A module-level function (pickled by reference) run on each task:
        :func:`~cvxrank.experiments.tasks.run_task` by default.
    max_chunk : int or None
        Largest number of tasks a worker runs in one go (:func:`plan_chunks`).
    desc : str or None
        The progress bar's label (default ``"cvxrank <backend>"``).

    Raises
    ------
    ValueError
        For a bad backend, workers or scheduler combination (:func:`check_backend`).
    CvxrankError
        When dask is not installed or no scheduler answers at ``scheduler``; and for an error
        raised by a task (with its message).
    """
    from tqdm import tqdm

    check_backend(backend, workers=workers, scheduler=scheduler)
    n_workers = workers or os.cpu_count() or 1
    bar = tqdm(total=len(tasks), file=sys.stderr, disable=not progress, unit="task",
               desc=desc or f"cvxrank {backend}", leave=False)
    try:
        if backend == "sequential":
            with limit_blas(blas_threads):
                for i, task in enumerate(tasks):
                    yield i, runner(task)
                    bar.update(1)
            return
        stream = (_run_processes if backend == "processes" else _run_dask)(
            tasks, n_workers, scheduler, blas_threads, runner, max_chunk)
        for results in stream:
            yield from results
            bar.update(len(results))
    finally:
        bar.close()


def _run_processes(tasks: Sequence[Any], n_workers: int, scheduler: str | None,
                   blas_threads: int | None, runner: Callable[[Any], Any],
                   max_chunk: int | None) -> Iterator[list[tuple[int, Any]]]:
    from joblib import Parallel, delayed

    del scheduler
    chunks = plan_chunks(tasks, n_workers, max_chunk)
    parallel = Parallel(n_jobs=min(n_workers, len(chunks)), backend="loky", batch_size=1,
                        return_as="generator_unordered")
    yield from parallel(delayed(run_chunk)(chunk, blas_threads, runner) for chunk in chunks)


def _run_dask(tasks: Sequence[Any], n_workers: int, scheduler: str | None,
              blas_threads: int | None, runner: Callable[[Any], Any],
              max_chunk: int | None) -> Iterator[list[tuple[int, Any]]]:
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise CvxrankError("the dask backend needs dask.distributed: pip install "
                           "'cvxrank[dask]'") from None
    cluster = None
    if scheduler is None:
        # Two of Dask's defaults slow these tasks down: the workers' statistical profiler
        # (it samples the running thread every 10 ms), and MALLOC_TRIM_THRESHOLD_ in the
        # workers' environment, which turns off glibc's adaptive mmap threshold so that every
        # large numpy array is mapped and page-faulted afresh (PRSVM's fits took 2.5x longer).
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            raise CvxrankError(f"no Dask scheduler at {scheduler}: {exc}") from None
    try:
        if scheduler is not None:  # plan for the threads the cluster has
            n_workers = max(1, sum(client.nthreads().values()))
        chunks = plan_chunks(tasks, n_workers, max_chunk)
        futures = [client.submit(run_chunk, chunk, blas_threads, runner, pure=False)
                   for chunk in chunks]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
