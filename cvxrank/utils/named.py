"""An object given by itself or by its name in a table of built-in ones (a loss, a measure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def by_name(value: Any, kind: type[T], table: Mapping[str, T], what: str,
            other: str = "") -> T:
    """``value`` itself when it is a ``kind``, else the entry of ``table`` it names.

    Raises
    ------
    ValueError
        ``"<what> must be one of <names><other>; got <value>"`` for any other name or object.
    """
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in table:
        return table[value]
    raise ValueError(f"{what} must be one of {', '.join(table)}{other}; got {value!r}")
