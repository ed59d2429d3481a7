"""What the reproductions' configurations share: the quick preset, the LETOR folder, checks.

Every reproduction runs from one frozen configuration, a dataclass holding every option of
its run (:class:`~cvxrank.experiments.conerank.protocol.Table1Config`,
:class:`~cvxrank.experiments.agarwal_collins.protocol.Fig1Config`, ...), checked and
normalized when it is made (grids sorted, duplicates dropped), so that a bad option fails
before anything runs and the run function reads the configuration and nothing else.

* :class:`ExperimentConfig`, the base of every configuration: ``Config.quick(**changes)``,
  the small run for checks behind ``--quick`` (the class's
  :attr:`~ExperimentConfig.QUICK` values, under the options given explicitly), and
  :meth:`~ExperimentConfig.check_data`, the check of the input files before anything runs.
* :class:`LetorConfig`: the options of a reproduction on LETOR folds (folder, folds, the
  first training queries only, where the tasks run) and the checked folds' data sources
  (:meth:`LetorConfig.fold_sources`).
* :func:`check_grid`, :func:`check_positive_int`, :func:`check_seeds`,
  :func:`check_sequential`, :func:`increasing`: the checks and the normalization the
  configurations share.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from cvxrank.experiments.backends import Execution
from cvxrank.experiments.letor import check_letor_dir, find_folds
from cvxrank.experiments.sources import LETOR_SPLITS, LetorFold

C = TypeVar("C", bound="ExperimentConfig")
T = TypeVar("T", int, float)
S = TypeVar("S")


#: What each value of :meth:`ExperimentConfig.protocol` says in a reproduction's figures.
PROTOCOLS = {
    "paper": "the paper's protocol (the default options)",
    "quick": "the --quick preset: a check that the protocol runs, not the paper's protocol",
    "custom": "options changed from the defaults: not the paper's protocol as given",
}


class ExperimentConfig:
    """The base of the frozen configuration classes: the quick preset, the data check."""

    #: The options of the small run for checks (``--quick``); empty: the defaults.
    QUICK: ClassVar[Mapping[str, Any]] = {}

    def protocol(self) -> str:
        """Which options made the run (a key of :data:`PROTOCOLS`): ``"quick"`` when the
        options of :attr:`QUICK` have their quick values, ``"paper"`` when they have their
        defaults, else ``"custom"``."""
        if self.QUICK and self == dataclasses.replace(self, **self.QUICK):  # type: ignore[type-var]
            return "quick"
        defaults = {f.name: (f.default_factory() if f.default is dataclasses.MISSING  # type: ignore[misc]
                             else f.default)
                    for f in dataclasses.fields(self) if f.name in self.QUICK}  # type: ignore[arg-type]
        return "paper" if self == dataclasses.replace(self, **defaults) else "custom"  # type: ignore[type-var]

    @classmethod
    def quick(cls: type[C], **changes: Any) -> C:
        """The quick run: :attr:`QUICK`'s options, under ``changes`` (options given
        explicitly win)."""
        return cls(**{**cls.QUICK, **changes})

    def check_data(self) -> None:
        """Check the input files before anything runs (nothing to read by default: the
        data is generated)."""


def normalize(config: Any, **values: Any) -> None:
    """Set fields of a frozen dataclass (from its ``__post_init__``)."""
    for name, value in values.items():
        object.__setattr__(config, name, value)


def increasing(values: Iterable[Any], kind: Callable[[Any], T] = float) -> tuple[T, ...]:
    """The distinct ``values`` converted by ``kind``, in increasing order (a grid's order,
    the one that breaks ties)."""
    return tuple(sorted({kind(v) for v in values}))


def check_grid(name: str, values: Sequence[float]) -> None:
    """Refuse an empty grid or a value that is not a finite positive number.

    Raises
    ------
    ValueError
        Naming the grid (``"the RankSVM C grid ..."``).
    """
    if not values:
        raise ValueError(f"the {name} grid is empty")
    bad = [v for v in values if not (math.isfinite(float(v)) and float(v) > 0)]
    if bad:
        raise ValueError(f"the {name} grid needs values finite and > 0, got {bad[0]}")


def check_positive_int(name: str, value: Any) -> None:
    """Refuse a ``value`` that is not an integer >= 1 (booleans included).

    Raises
    ------
    ValueError
        Naming the option.
    """
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_sequential(execution: Execution, experiment: str) -> None:
    """Refuse a backend other than ``"sequential"`` for a timing experiment (its fits run
    in this process, one after the other).

    Raises
    ------
    ValueError
    """
    if execution.backend != "sequential":
        raise ValueError(f"{experiment} times its fits one after the other in this process: "
                         f"the backend must be sequential, not {execution.backend}")


def check_seeds(seeds: Sequence[int]) -> None:
    """Refuse no seeds or a negative one.

    Raises
    ------
    ValueError
    """
    if not seeds or min(seeds) < 0:
        raise ValueError(f"seeds must be >= 0, got {list(seeds)}")


@dataclass(frozen=True)
class LetorConfig(ExperimentConfig):
    """The options every reproduction on LETOR folds has.

    Attributes
    ----------
    data : str
        The folder holding ``Fold1`` ... (``QueryLevelNorm`` for LETOR 3.0 OHSUMED).
    folds : tuple of int or None
        Fold numbers (None: every ``FoldK`` folder of ``data``).
    max_train_queries : int or None
        Train on each fold's first this many queries only (quick checks; None: all).
    execution : Execution
        Where the tasks run (backend, workers, BLAS threads).
    """

    #: The split files every fold must have.
    SPLITS: ClassVar[tuple[str, ...]] = LETOR_SPLITS

    data: str
    folds: tuple[int, ...] | None = None
    max_train_queries: int | None = None
    execution: Execution = Execution()

    def __post_init__(self) -> None:
        if self.max_train_queries is not None:
            check_positive_int("max_train_queries", self.max_train_queries)
        normalize(self, data=str(self.data),
                  folds=None if self.folds is None else tuple(int(k) for k in self.folds))

    def check_data(self) -> None:
        """:meth:`letor_folds` (a missing folder or split file fails before the run)."""
        self.letor_folds()

    def letor_folds(self) -> tuple[Path, list[int]]:
        """The checked folder and the fold numbers (every ``FoldK`` when none were given).

        Raises
        ------
        FileNotFoundError
            Naming a missing folder or split file.
        ValueError
            For a fold number below 1.
        """
        folds = find_folds(self.data) if self.folds is None else list(self.folds)
        return check_letor_dir(self.data, folds, self.SPLITS), folds

    def fold_sources(self, source: Callable[[str, int], S] = LetorFold,
                     ) -> tuple[Path, dict[int, S]]:
        """The checked folder and one data source per fold, ``source(root, k)`` with the
        folder's resolved path (:meth:`letor_folds`)."""
        root, folds = self.letor_folds()
        return root, {k: source(str(root.resolve()), k) for k in folds}
