"""LETOR fold directories: ``FoldK/{train,vali,test}.txt``."""

from __future__ import annotations

import os
from pathlib import Path

from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import read_svmlight

SPLITS = ("train", "vali", "test")


def read_letor_fold(
    root: str | os.PathLike[str], fold: int, *, splits: tuple[str, ...] = SPLITS
) -> dict[str, RankingData]:
    """Read the splits of one LETOR fold.

    Parameters
    ----------
    root : path-like
        The directory holding ``Fold1`` ... ``Fold5`` (e.g.
        ``shared/data/letor3_ohsumed/QueryLevelNorm``), or a ``FoldK`` directory itself.
    fold : int
        Fold number K (1-based, as in the directory names).
    splits : tuple of str
        Which of ``train``, ``vali``, ``test`` to read.

    Returns
    -------
    dict of str to RankingData

    Raises
    ------
    FileNotFoundError
        Naming the missing file.
    """
    base = Path(root)
    folder = base if base.name == f"Fold{fold}" else base / f"Fold{fold}"
    out: dict[str, RankingData] = {}
    for split in splits:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
        path = folder / f"{split}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such LETOR split file")
        out[split] = read_svmlight(path)
    return out


def list_folds(root: str | os.PathLike[str]) -> list[int]:
    """The fold numbers K for which ``root/FoldK`` exists, sorted."""
    base = Path(root)
    return sorted(
        int(p.name[4:]) for p in base.glob("Fold*") if p.is_dir() and p.name[4:].isdigit()
    )
