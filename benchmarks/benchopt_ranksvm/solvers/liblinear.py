"""LIBLINEAR ranksvm 2.11 (Lee & Lin 2014), ``train -s 8``: trust-region Newton on the
squared-hinge RankSVM with selection trees, run as a process on an SVMlight file.

benchopt samples its curve by tolerance: the run at ``eps`` is one ``train -e eps`` process
from w = 0 (its start-up and its reading of the file included: the file is written once, off
the clock, by ``set_objective``); ``get_result`` reads the model file off the clock. Its C is
cvxrank's (:mod:`benchmark_utils.peers`). Where the peer cannot be built (no source, no
compiler), benchopt lists it as not installed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from benchmark_utils.cvxrank_solver import progress_criterion, unsupported
from benchopt import BaseSolver, safe_import_context

from cvxrank.data import RankingData, write_svmlight

with safe_import_context() as import_ctx:
    from benchmark_utils.peers import liblinear_train, read_liblinear_weights, train_liblinear

    TRAIN = liblinear_train()


class Solver(BaseSolver):
    """LIBLINEAR ranksvm (squared hinge), sampled by its ``-e`` tolerance."""

    name = "liblinear"
    sampling_strategy = "tolerance"
    stopping_criterion = progress_criterion("tolerance")

    def skip(self, data: RankingData, C: float, loss: str) -> tuple[bool, str | None]:
        """LIBLINEAR ranksvm has the squared hinge only."""
        return unsupported(loss, ("squared_hinge",), self.name)

    def set_objective(self, data: RankingData, C: float, loss: str) -> None:
        """Write the data as an SVMlight file with query ids (off the clock)."""
        self.C, self.n_features = float(C), data.n_features
        self._folder = tempfile.TemporaryDirectory(prefix="benchopt-liblinear-")
        folder = Path(self._folder.name)
        self.data_file, self.model_file = folder / "train.txt", folder / "model"
        write_svmlight(data, self.data_file)
        self.trained = False

    def get_next(self, stop_val: float) -> float:
        """Tolerances 1, 0.1, 0.01, ... (down to 1e-15)."""
        return max(min(1.0, stop_val / 10.0), 1e-15)

    def run(self, stop_val: float) -> None:
        """One ``train -s 8 -c C -e eps`` process, ``eps = min(stop_val, 1)``."""
        train_liblinear(TRAIN, self.data_file, self.model_file, C=self.C,
                        eps=min(float(stop_val), 1.0))
        self.trained = True

    def get_result(self) -> dict[str, np.ndarray]:
        """The weights of the model file (zero before the first run)."""
        if not self.trained:
            return {"w": np.zeros(self.n_features)}
        return {"w": read_liblinear_weights(self.model_file, self.n_features)}
