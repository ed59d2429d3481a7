"""Data sets that a task names by paths and numbers, and the per-process cache that reads them.

A task never carries data: it carries a *source* (a LETOR fold folder, three files of a
grid's one fold, or the numbers of a synthetic generator), and whichever process runs it
rebuilds the data from that. Reading a LETOR file costs far more than fitting a linear
ranker on it (OHSUMED's ``train.txt``: about 0.7 s to parse, 0.02-0.08 s for PRSVM+), so
each process keeps the last
:data:`CACHE_SIZE` data sets it built (:func:`functools.lru_cache`, keyed by the file's
resolved path, modification time and size, or by the generator's numbers): a process that
runs every grid point of a fold reads the fold's files once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from cvxrank.data.files import read_ranking_file
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.synthetic import SyntheticSpec

#: Data sets each process keeps (two LETOR folds' train, vali and test).
CACHE_SIZE = 6

#: The splits of a LETOR fold folder.
LETOR_SPLITS = ("train", "vali", "test")


@dataclass(frozen=True)
class LetorFold:
    """One fold of a LETOR data set: ``root/FoldK/{train,vali,test}.txt``.

    Attributes
    ----------
    root : str
        The folder holding ``Fold1`` ... (e.g. ``letor3_ohsumed/QueryLevelNorm``).
    fold : int
        Fold number K.
    """

    root: str
    fold: int

    @property
    def key(self) -> str:
        """What tasks on the same files share (:func:`cvxrank.experiments.backends.plan_chunks`)."""
        return f"{self.root}/Fold{self.fold}"

    def path(self, split: str) -> Path:
        """The file of ``split`` (``train``, ``vali`` or ``test``)."""
        if split not in LETOR_SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(LETOR_SPLITS)}")
        return Path(self.root) / f"Fold{self.fold}" / f"{split}.txt"

    def load(self, split: str) -> RankingData:
        """The data of ``split``, read once per process (see the module docstring)."""
        return read_cached(self.path(split))


@dataclass(frozen=True)
class SplitFiles:
    """A training, a validation and a test file, each SVMlight/LETOR or LightGBM (with its
    ``FILE.query``; :func:`cvxrank.data.files.read_ranking_file`): the one fold of a grid on
    files that are not in a ``FoldK`` folder.

    Attributes
    ----------
    train, vali, test : str
        The files (resolved paths).
    fold : int
        The number reported for it (1).
    """

    train: str
    vali: str
    test: str
    fold: int = 1

    @property
    def key(self) -> str:
        """What tasks on the same files share."""
        return f"files {self.train} | {self.vali} | {self.test}"

    def path(self, split: str) -> Path:
        """The file of ``split`` (``train``, ``vali`` or ``test``)."""
        if split not in LETOR_SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(LETOR_SPLITS)}")
        return Path(getattr(self, split))

    def load(self, split: str) -> RankingData:
        """The data of ``split``, read once per process (see the module docstring)."""
        return read_cached(self.path(split))


@dataclass(frozen=True)
class Synthetic(SyntheticSpec):
    """A seeded synthetic data set (:class:`~cvxrank.data.synthetic.SyntheticSpec`) as a
    source of tasks. It has one split, ``train``.
    """

    @property
    def key(self) -> str:
        """What tasks on the same data share."""
        return (f"synthetic {self.n_queries}x{self.docs_per_query} d={self.n_features} "
                f"grades={self.n_grades} noise={self.noise:g} seed={self.seed}")

    def load(self, split: str) -> RankingData:
        """The data (built once per process); ``split`` must be ``train``."""
        if split != "train":
            raise ValueError(f"a synthetic source has only a train split; got {split!r}")
        return self.generate()


def read_cached(path: Path) -> RankingData:
    """The data file ``path`` (either format, :func:`cvxrank.data.files.read_ranking_file`),
    read once per process while it is unchanged (see the module docstring)."""
    resolved = path.resolve()
    stat = resolved.stat()
    return _read_file(str(resolved), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _read_file(path: str, mtime_ns: int, size: int) -> RankingData:
    del mtime_ns, size  # part of the cache key: a rewritten file is read again
    return read_ranking_file(path)[0]
