"""Shared fixtures.

``shared_data`` is the folder of real ranking data (``../shared/data`` beside the project
root, see its README.md); tests that read it skip cleanly when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: ``<project>/../shared/data``.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder ``../shared/data``, or skip the test when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data not present")
    return SHARED_DATA
