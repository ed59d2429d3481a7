r"""The z-scored LETOR folds of Tran & Pham Sect. 6.1, as a data source tasks can name.

"We normalize these features so that they are roughly distributed as Gaussian with zero means
and unit standard deviations": every feature is centred by its mean on the fold's
``train.txt`` and divided by its (population) standard deviation there, and the same affine
map is applied to ``vali.txt`` and ``test.txt`` (their own statistics are never used). A
feature that is constant on ``train.txt`` (MQ2008 has a few) carries no training information;
it is set to 0 in all three splits, so that a model cannot weigh values it never saw vary.

:class:`StandardizedFold` is a :class:`~cvxrank.experiments.sources.LetorFold` whose
:meth:`~StandardizedFold.load` returns the z-scored split (dense), computed once per process
from the cached raw files, so that :func:`~cvxrank.experiments.tasks.run_task` (RankSVM) and
this reproduction's own tasks run on the same features in any worker.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from cvxrank.data.ranking_data import RankingData
from cvxrank.experiments.sources import LetorFold


@dataclass(frozen=True)
class Standardization:
    """The affine map of one fold: ``(x - mean) * scale`` with ``scale = 1 / std`` (0 where
    the feature is constant on ``train.txt``)."""

    mean: np.ndarray
    std: np.ndarray
    scale: np.ndarray

    @property
    def constant(self) -> np.ndarray:
        """Indices (0-based) of the features constant on the training set."""
        return np.flatnonzero(self.scale == 0)

    def apply(self, data: RankingData) -> RankingData:
        """``data`` with its features mapped (dense; fewer columns are padded with zeros)."""
        d = self.mean.size
        data = data.pad_features(d)
        X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
        return data.with_features((X - self.mean) * self.scale)


def fit_standardization(train: RankingData) -> Standardization:
    """The training set's mean and population standard deviation per feature."""
    X = train.X.toarray() if hasattr(train.X, "toarray") else np.asarray(train.X)
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    constant = X.max(axis=0) == X.min(axis=0)
    scale = np.divide(1.0, std, out=np.zeros_like(std), where=~constant & (std > 0))
    return Standardization(mean=mean, std=std, scale=scale)


@dataclass(frozen=True)
class StandardizedFold(LetorFold):
    """A LETOR fold whose splits are z-scored with the training set's statistics."""

    @property
    def key(self) -> str:
        return f"{super().key} (z-scored on train)"

    def raw(self, split: str) -> RankingData:
        """The split as read from its file."""
        return LetorFold(self.root, self.fold).load(split)

    def standardization(self) -> Standardization:
        """The fold's map (from ``train.txt``), computed once per process."""
        path = self.path("train").resolve()
        stat = path.stat()
        return _fit(self.root, self.fold, stat.st_mtime_ns, stat.st_size)

    def load(self, split: str) -> RankingData:
        """The z-scored split (computed once per process)."""
        path = self.path(split).resolve()
        stat = path.stat()
        return _standardized(self.root, self.fold, split, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _fit(root: str, fold: int, mtime_ns: int, size: int) -> Standardization:
    del mtime_ns, size  # part of the cache key
    return fit_standardization(LetorFold(root, fold).load("train"))


@functools.lru_cache(maxsize=6)
def _standardized(root: str, fold: int, split: str, mtime_ns: int, size: int) -> RankingData:
    del mtime_ns, size
    source = StandardizedFold(root, fold)
    return source.standardization().apply(source.raw(split))
