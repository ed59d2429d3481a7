"""The training file of a LETOR fold: LETOR 3.0 OHSUMED (``QueryLevelNorm``) or LETOR 4.0
MQ2008, read by :func:`cvxrank.data.read_svmlight`.

The files are looked for in ``$CVXRANK_SHARED_DATA``, else in ``../shared/data`` beside the
project root (:mod:`benchmark_utils.paths`). When the file is not there, ``get_data`` returns
no data and the reason, and the objective skips the dataset (benchopt prints the reason and
runs the rest).
"""

from __future__ import annotations

from benchmark_utils.paths import DATA_VARIABLE, training_file
from benchopt import BaseDataset

from cvxrank.data import RankingData, read_svmlight


class Dataset(BaseDataset):
    """``Fold{fold}/train.txt`` of OHSUMED or MQ2008."""

    name = "letor"
    parameters = {
        "collection": ["ohsumed", "mq2008"],
        "fold": [1],
    }

    def get_data(self) -> dict[str, RankingData | str | None]:
        """The fold's training data, or ``data=None`` and why it is missing."""
        path = training_file(self.collection, self.fold)
        if not path.is_file():
            return {"data": None,
                    "missing": f"{path} not found (set {DATA_VARIABLE} to the folder holding "
                               "letor3_ohsumed/ and letor4_mq2008/)"}
        return {"data": read_svmlight(path), "missing": None}
