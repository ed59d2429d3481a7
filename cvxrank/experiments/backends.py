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

Tasks and results are plain data (:mod:`cvxrank.experiments.tasks`) and every task carries
its own ``run()``, the one dispatch of every backend (a LETOR fit, a reproduction's
stochastic run, ...); every worker process reads the files itself, once
(:mod:`cvxrank.experiments.sources`). So that it reads as few as possible, the pool
backends send *chunks* of tasks that share their data
(:func:`plan_chunks`): a worker runs every grid point of a fold in one go. Every backend
runs its tasks with ``blas_threads`` BLAS threads per process (default one:
:func:`~cvxrank.utils.threads.blas_threads`), which also makes the floating-point results, and so
the selections, identical across backends.

:class:`Execution` holds those choices (backend, workers, scheduler, BLAS threads) as one
frozen value, the part of every reproduction's configuration that says where its tasks run;
:meth:`Execution.run` and :meth:`Execution.run_by_kind` gather the results in the tasks'
order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cvxrank.errors import CvxrankError
from cvxrank.utils.threads import blas_threads as limit_blas

#: The backends of :func:`run_tasks`.
BACKENDS = ("sequential", "processes", "dask")

Chunk = list[tuple[int, Any]]

#: A progress callback: called with one line of text.
Log = Callable[[str], None]


class Source(Protocol):
    """Where a task's data comes from; tasks with the same ``key`` share their data."""

    @property
    def key(self) -> str: ...


class Runnable(Protocol):
    """A task any backend runs: picklable, with a data :class:`Source` and its own
    ``run()`` (the whole dispatch: :class:`~cvxrank.experiments.tasks.Task`, a
    reproduction's own tasks)."""

    @property
    def source(self) -> Source: ...

    def run(self) -> Any: ...


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


def plan_chunks(tasks: Sequence[Runnable], n_workers: int,
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


def run_chunk(chunk: Chunk, blas_threads: int | None) -> list[tuple[int, Any]]:
    """Run a chunk's tasks in this process (the function the pool backends send).

    An error that stops the run crosses back to the caller as a :class:`CvxrankError` with
    the original message (some exception classes, like ``DataFormatError``, cannot be
    rebuilt from their pickled arguments).
    """
    try:
        with limit_blas(blas_threads):
            return [(i, task.run()) for i, task in chunk]
    except (CvxrankError, ValueError, OSError) as exc:
        raise CvxrankError(_message(exc)) from None


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def run_tasks(tasks: Sequence[Runnable], *, backend: str = "sequential",
              workers: int | None = None, scheduler: str | None = None,
              blas_threads: int | None = 1, progress: bool = False,
              max_chunk: int | None = None,
              desc: str | None = None) -> Iterator[tuple[int, Any]]:
    """Run ``tasks``; yield ``(index, result)`` as each finishes (see the module docstring).

    Parameters
    ----------
    tasks : sequence of Runnable
        :class:`~cvxrank.experiments.tasks.Task` objects, or any picklable tasks with a
        ``source`` (whose ``key`` groups them) and a ``run()`` method.
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
                    yield i, task.run()
                    bar.update(1)
            return
        stream = (_run_processes if backend == "processes" else _run_dask)(
            tasks, n_workers, scheduler, blas_threads, max_chunk)
        for results in stream:
            yield from results
            bar.update(len(results))
    finally:
        bar.close()


def _run_processes(tasks: Sequence[Runnable], n_workers: int, scheduler: str | None,
                   blas_threads: int | None,
                   max_chunk: int | None) -> Iterator[list[tuple[int, Any]]]:
    from joblib import Parallel, delayed

    del scheduler
    chunks = plan_chunks(tasks, n_workers, max_chunk)
    parallel = Parallel(n_jobs=min(n_workers, len(chunks)), backend="loky", batch_size=1,
                        return_as="generator_unordered")
    yield from parallel(delayed(run_chunk)(chunk, blas_threads) for chunk in chunks)


def _run_dask(tasks: Sequence[Runnable], n_workers: int, scheduler: str | None,
              blas_threads: int | None,
              max_chunk: int | None) -> Iterator[list[tuple[int, Any]]]:
    from cvxrank.distributed.cluster import connect

    with connect(scheduler, n_workers) as client:
        from dask.distributed import as_completed

        if scheduler is not None:  # plan for the threads the cluster has
            n_workers = max(1, sum(client.nthreads().values()))
        chunks = plan_chunks(tasks, n_workers, max_chunk)
        futures = [client.submit(run_chunk, chunk, blas_threads, pure=False)
                   for chunk in chunks]
        for future in as_completed(futures):
            yield future.result()


@dataclass(frozen=True)
class Execution:
    """Where and how a reproduction's tasks run: the options of :func:`run_tasks`.

    Attributes
    ----------
    backend : {"sequential", "processes", "dask"}
    workers : int or None
        Worker processes (default: the number of CPUs).
    scheduler : str or None
        Address of a running Dask scheduler (``"dask"`` only; None: a local cluster).
    blas_threads : int or None
        BLAS threads per process while tasks run (None or 0: the library's default).

    Raises
    ------
    ValueError
        When made with a bad combination (:func:`check_backend`).
    """

    backend: str = "sequential"
    workers: int | None = None
    scheduler: str | None = None
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        check_backend(self.backend, workers=self.workers, scheduler=self.scheduler)

    @property
    def started_workers(self) -> int | None:
        """Worker processes started for a run (None: sequential, or a Dask scheduler's
        own)."""
        if self.backend == "sequential" or self.scheduler:
            return None
        return self.workers or os.cpu_count()

    def stream(self, tasks: Sequence[Runnable], *, progress: bool = False,
               desc: str | None = None,
               max_chunk: int | None = None) -> Iterator[tuple[int, Any]]:
        """:func:`run_tasks` with these options: ``(index, result)`` as each finishes."""
        return run_tasks(tasks, backend=self.backend, workers=self.workers,
                         scheduler=self.scheduler, blas_threads=self.blas_threads,
                         progress=progress, max_chunk=max_chunk, desc=desc)

    def run(self, tasks: Sequence[Runnable], *, on_result: Callable[[Any], None] | None = None,
            progress: bool = False, desc: str | None = None,
            max_chunk: int | None = None) -> list[Any]:
        """Run ``tasks``; return their results in the tasks' order.

        ``on_result(result)`` is called as each finishes (progress lines); ``progress``,
        ``desc`` and ``max_chunk`` are :func:`run_tasks`'s.
        """
        return self._gather(tasks, None if on_result is None else lambda i, r: on_result(r),
                            progress=progress, desc=desc, max_chunk=max_chunk)

    def run_by_kind(self, tasks: Sequence[tuple[str, Runnable]], *,
                    on_result: Callable[[str, Any], None] | None = None,
                    progress: bool = False, desc: str | None = None,
                    max_chunk: int | None = None) -> dict[str, list[Any]]:
        """Run ``(kind, task)`` pairs in one go; return each kind's results in the tasks'
        order (``{kind: [result, ...]}``, kinds in order of first appearance).

        ``on_result(kind, result)`` is called as each finishes; the other options are
        :meth:`run`'s.
        """
        kinds = [kind for kind, _ in tasks]
        results = self._gather([task for _, task in tasks],
                               None if on_result is None
                               else lambda i, r: on_result(kinds[i], r),
                               progress=progress, desc=desc, max_chunk=max_chunk)
        by_kind: dict[str, list[Any]] = {kind: [] for kind in kinds}
        for kind, result in zip(kinds, results, strict=True):
            by_kind[kind].append(result)
        return by_kind

    def _gather(self, tasks: Sequence[Runnable], on_result: Callable[[int, Any], None] | None,
                **options: Any) -> list[Any]:
        results: list[Any] = [None] * len(tasks)
        for i, result in self.stream(tasks, **options):
            results[i] = result
            if on_result is not None:
                on_result(i, result)
        return results
