"""Shared fixtures and settings.

``shared_data`` is the folder of real ranking data (``../shared/data`` beside the project
root, see its README.md); tests that read it skip cleanly when it is absent.

Property tests draw their examples from a seed fixed per test (Hypothesis's
``derandomize``): every run of the suite, on any clone, tests the same examples, so a
result never depends on the draw of the day (a fresh clone has no example database).

Under pytest-xdist each worker gets its share of the cores for its thread pools (the cores
divided by the workers, at least one: scikit-learn's convention), also in the processes it
starts (command lines, notebook kernels, Dask workers), so that two workers on two cores do
not each spin two BLAS threads. The suite gives the same results with any thread count (run
it with ``OPENBLAS_NUM_THREADS=1`` and ``=2``); the share only keeps a loaded machine busy
with work.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

#: ``<project>/../shared/data``.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_configure(config: pytest.Config) -> None:
    """In a pytest-xdist worker: thread pools limited to the worker's share of the cores, set
    through the thread-count variables (:data:`cvxrank.utils.threads.THREAD_VARIABLES`) for
    the processes it starts too."""
    from cvxrank.utils.threads import THREAD_VARIABLES, usable_cores, user_chose_threads

    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or user_chose_threads():
        return  # one process, or thread counts chosen by whoever runs the suite
    share = max(usable_cores() // int(workers), 1)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(share)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=share)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder ``../shared/data``, or skip the test when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data not present")
    return SHARED_DATA


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that reads the real data (the ``shared_data`` fixture) is ``slow``: ``make
    test-fast`` (``-m "not slow"``) leaves them, with the files marked slow themselves
    (notebooks, ``verify`` sweeps, reproductions), to ``make test``."""
    slow = pytest.mark.slow
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(slow)
