"""The BLAS thread policy (:mod:`cvxrank.utils.threads`): one thread from cvxrank's start-up
unless the user chose, every usable core for large level-3 products."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cvxrank.utils import threads

#: Prints the BLAS pools' thread counts after the imports given as argv[1], and inside a
#: block that :func:`level3_threads` sizes for a large product.
PROBE = r"""
import json, os, sys
exec(sys.argv[1])
from threadpoolctl import threadpool_info
from cvxrank.utils.threads import blas_threads, level3_threads, usable_cores
def counts():
    return sorted({pool["num_threads"] for pool in threadpool_info()
                   if pool["user_api"] == "blas"})
start = counts()
with blas_threads(level3_threads(1e12)):
    raised = counts()
print(json.dumps({"start": start, "raised": raised, "cores": usable_cores(),
                  "marker": os.environ.get("CVXRANK_BLAS_START"),
                  "openblas": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def probe(imports: str, **env: str) -> dict:
    """Run :data:`PROBE` in a fresh process whose environment has no thread variables but
    ``env``."""
    clean = {k: v for k, v in os.environ.items()
             if k not in (*threads.THREAD_VARIABLES, threads.START_MARKER)}
    done = subprocess.run([sys.executable, "-c", PROBE, imports], env={**clean, **env},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_cvxrank_first_starts_the_blas_on_one_thread_and_large_products_use_every_core():
    out = probe("import cvxrank, numpy, scipy.linalg")
    assert out["start"] == [1]
    assert out["marker"] == "1" and out["openblas"] == "1"
    assert out["raised"] == [out["cores"]]


def test_a_thread_count_the_user_set_stands():
    out = probe("import cvxrank, numpy", OPENBLAS_NUM_THREADS="1")
    assert out["marker"] is None
    assert out["start"] == [1] and out["raised"] == [1]  # level3_threads leaves it as is


def test_numpy_imported_first_keeps_its_own_start():
    out = probe("import numpy, cvxrank")
    assert out["marker"] is None and out["openblas"] is None


@pytest.mark.parametrize(("environ", "chose"), [
    ({}, False),
    ({"OMP_NUM_THREADS": "2"}, True),
    ({"OPENBLAS_NUM_THREADS": "1"}, True),
    ({"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CVXRANK_BLAS_START": "1"}, False),
    ({"OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "1", "CVXRANK_BLAS_START": "1"}, True),
    ({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "CVXRANK_BLAS_START": "1"}, True),
])
def test_user_chose_threads(environ, chose):
    assert threads.user_chose_threads(environ) is chose


def test_start_sets_only_the_blas_variables_and_only_when_nothing_is_chosen(monkeypatch):
    monkeypatch.delitem(sys.modules, "numpy", raising=False)  # as before numpy is imported
    environ: dict[str, str] = {}
    assert threads.start_blas_on_one_thread(environ)
    assert environ == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                       "CVXRANK_BLAS_START": "1"}
    chosen = {"OMP_NUM_THREADS": "4"}
    assert not threads.start_blas_on_one_thread(chosen)
    assert chosen == {"OMP_NUM_THREADS": "4"}


def test_level3_threads_only_from_the_threshold(monkeypatch):
    for name in (*threads.THREAD_VARIABLES, threads.START_MARKER):
        monkeypatch.delenv(name, raising=False)
    assert threads.level3_threads(threads.LEVEL3_MIN_FLOPS / 2) is None
    assert threads.level3_threads(threads.LEVEL3_MIN_FLOPS) == threads.usable_cores()
