"""Where the benchmark finds the real LETOR data and the project's other benchmark scripts."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable naming the folder that holds ``letor3_ohsumed/`` and
#: ``letor4_mq2008/`` (default: ``../shared/data`` beside the project root).
DATA_VARIABLE = "CVXRANK_SHARED_DATA"

#: ``benchmarks/`` of the project (``build_peers.py`` lives there).
BENCHMARKS = Path(__file__).resolve().parents[2]

#: The project root.
ROOT = BENCHMARKS.parent

#: Each collection's training file of fold k, relative to the data folder.
COLLECTIONS = {
    "ohsumed": "letor3_ohsumed/QueryLevelNorm/Fold{fold}/train.txt",
    "mq2008": "letor4_mq2008/Fold{fold}/train.txt",
}


def shared_data() -> Path:
    """The real-data folder: ``$CVXRANK_SHARED_DATA`` when set, else ``../shared/data``
    beside the project root (it need not exist)."""
    value = os.environ.get(DATA_VARIABLE, "").strip()
    if value:
        return Path(value).expanduser()
    return ROOT.parent / "shared" / "data"


def training_file(collection: str, fold: int) -> Path:
    """The ``train.txt`` of ``collection`` (a key of :data:`COLLECTIONS`) and ``fold``.

    Raises
    ------
    ValueError
        For an unknown collection.
    """
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; known: {', '.join(COLLECTIONS)}")
    return shared_data() / COLLECTIONS[collection].format(fold=int(fold))
