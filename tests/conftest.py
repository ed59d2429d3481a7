"""Shared fixtures and settings.

``shared_data`` is the folder of real ranking data (``../shared/data`` beside the project
root, see its README.md); tests that read it skip cleanly when it is absent.

Property tests draw their examples from a seed fixed per test (Hypothesis's
``derandomize``): every run of the suite, on any clone, tests the same examples, so a
result never depends on the draw of the day (a fresh clone has no example database).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

#: ``<project>/../shared/data``.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
