"""Plain JSON values from numpy scalars and arrays, paths and tuples."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, paths and tuples into plain JSON values.

    Non-finite floats become ``null`` so that the output is strict JSON.
    """
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
