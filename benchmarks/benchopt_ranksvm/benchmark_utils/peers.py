"""LIBLINEAR ranksvm (Lee & Lin 2014), built from its published source by the project's
``benchmarks/build_peers.py`` into the git-ignored ``benchmarks/build/``.

``train -s 8 -c C -e eps FILE MODEL`` minimizes ``(1/2)||w||^2 + C sum_pairs max(0, 1 - w.(x_i
- x_j))^2`` over the pairs of different grades within a query: cvxrank's squared-hinge RankSVM
with the same C (``benchmarks/bench_liblinear.py`` checks the two optima agree). It stops once
``||grad f(w)|| <= eps ||grad f(0)||``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np

from .paths import BENCHMARKS

#: Where ``build_peers`` builds the peers (git-ignored).
BUILD = BENCHMARKS / "build"


def _build_peers() -> ModuleType:
    """``benchmarks/build_peers.py`` as a module."""
    path = BENCHMARKS / "build_peers.py"
    spec = importlib.util.spec_from_file_location("cvxrank_build_peers", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def liblinear_train() -> Path:
    """LIBLINEAR ranksvm's ``train``, built on first use (under a file lock in
    ``benchmarks/build/``, so that two processes importing the solver at once do not build it
    into the same folder together).

    Raises
    ------
    ImportError
        With ``build_peers``' reason when it cannot be built (no source, no compiler): benchopt
        then lists the solver as not installed and runs the others.
    """
    try:
        BUILD.mkdir(parents=True, exist_ok=True)
        with open(BUILD / ".benchopt-liblinear.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            paths, message = _build_peers().liblinear_ranksvm()
    except (OSError, RuntimeError, ValueError, subprocess.CalledProcessError) as exc:
        raise ImportError(f"LIBLINEAR ranksvm skipped: {exc}") from exc
    if paths is None:
        raise ImportError(message)
    return Path(paths["train"])


def train_liblinear(train: Path, data_file: Path, model_file: Path, *, C: float,
                    eps: float) -> None:
    """One ``train -s 8 -c C -e eps -q`` process on ``data_file``, writing ``model_file``.

    Raises
    ------
    RuntimeError
        When the process fails (its stderr in the message).
    """
    done = subprocess.run([str(train), "-s", "8", "-c", repr(float(C)), "-e", repr(float(eps)),
                           "-q", str(data_file), str(model_file)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"LIBLINEAR train exited with {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")


def read_liblinear_weights(model_file: Path, n_features: int) -> np.ndarray:
    """The weights of a LIBLINEAR model file: one per line after its ``w`` line, features it
    never saw (beyond its ``nr_feature``) zero.

    Raises
    ------
    ValueError
        For a file without a ``w`` line or with more weights than ``n_features``.
    """
    lines = model_file.read_text().splitlines()
    try:
        start = lines.index("w") + 1
    except ValueError:
        raise ValueError(f"{model_file}: no 'w' line in the LIBLINEAR model") from None
    values = np.array([float(line.split()[0]) for line in lines[start:] if line.strip()])
    if values.size > n_features:
        raise ValueError(f"{model_file}: {values.size} weights for {n_features} features")
    w = np.zeros(n_features)
    w[: values.size] = values
    return w
