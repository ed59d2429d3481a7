"""A grid of hyper-parameters over named axes (``C=1e-5,5e-5,1e-4``).

The points are the Cartesian product of the axes in the order the axes were given, each
axis's values sorted in increasing order, so that the *first* point is the smallest value of
every axis (for C, the most regularized model). Selection breaks ties by this order
(:mod:`cvxrank.experiments.selection`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Grid:
    """Named axes of hyper-parameter values.

    Attributes
    ----------
    axes : tuple of (str, tuple of float)
        ``(name, values)`` per axis, in the order given; values distinct and increasing.
    """

    axes: tuple[tuple[str, tuple[float, ...]], ...]

    @classmethod
    def from_dict(cls, axes: Mapping[str, Sequence[float]]) -> Grid:
        """A grid from ``{"C": [1e-5, 1e-4]}`` (values sorted, duplicates removed).

        Raises
        ------
        ValueError
            For no axis, an axis without values, a name that is not an identifier, or a value
            that is not a finite number.
        """
        if not axes:
            raise ValueError("a grid needs at least one axis (--param NAME=v1,v2,...)")
        out = []
        for name, values in axes.items():
            if not _NAME.fullmatch(name):
                raise ValueError(f"parameter name {name!r} is not an identifier")
            numbers = sorted({float(v) for v in values})
            if not numbers:
                raise ValueError(f"parameter {name} has no values")
            bad = [v for v in numbers if not math.isfinite(v)]
            if bad:
                raise ValueError(f"parameter {name} has a value that is not finite: {bad[0]}")
            out.append((name, tuple(numbers)))
        return cls(tuple(out))

    @classmethod
    def parse(cls, specs: Sequence[str]) -> Grid:
        """A grid from command-line specs ``["C=1e-5,5e-5", "NAME=v1,v2"]``.

        Raises
        ------
        ValueError
            Naming the spec: no ``=``, an empty name or value, a value that is not a number,
            an axis given twice, or what :meth:`from_dict` refuses.
        """
        axes: dict[str, list[float]] = {}
        for spec in specs:
            name, sep, text = spec.partition("=")
            name = name.strip()
            if not sep or not name or not text.strip():
                raise ValueError(f"--param {spec!r}: expected NAME=v1,v2,... (e.g. "
                                 "C=1e-5,5e-5,1e-4)")
            if name in axes:
                raise ValueError(f"--param {name} given twice; put all its values in one "
                                 "NAME=v1,v2,...")
            values = []
            for token in text.split(","):
                try:
                    values.append(float(token))
                except ValueError:
                    raise ValueError(f"--param {spec!r}: {token.strip()!r} is not a "
                                     "number") from None
            axes[name] = values
        return cls.from_dict(axes)

    @property
    def names(self) -> tuple[str, ...]:
        """The axes' names, in order."""
        return tuple(name for name, _ in self.axes)

    def values(self, name: str) -> tuple[float, ...]:
        """The values of axis ``name``."""
        return dict(self.axes)[name]

    def points(self) -> Iterator[dict[str, float]]:
        """Every point ``{name: value}``, in the grid's order (see the module docstring)."""
        for combo in itertools.product(*(values for _, values in self.axes)):
            yield dict(zip(self.names, combo, strict=True))

    def __len__(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    def to_dict(self) -> dict[str, list[float]]:
        """``{name: values}``."""
        return {name: list(values) for name, values in self.axes}
