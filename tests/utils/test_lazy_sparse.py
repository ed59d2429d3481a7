"""``cvxrank.utils.lazy_sparse``: scipy.sparse only where a sparse matrix is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

#: A dense fit from a fresh process (reading, PRSVM+ and the 1-slack, their certificates),
#: then whether scipy.sparse was imported; then a sparse matrix through the stand-in.
PROBE = r"""
import json, sys
from cvxrank.data.synthetic import make_synthetic
from cvxrank.fitting import fit_formulation
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.registry import entries
from cvxrank.utils.lazy_sparse import sp
entries()
data = make_synthetic(n_queries=8, docs_per_query=(10, 20), n_features=5, seed=0)
runs = [fit_formulation(RankSVM(data, C=1.0, loss=loss), "auto")
        for loss in ("squared_hinge", "hinge")]
dense = ("scipy.sparse" in sys.modules, sp.issparse(data.X), "scipy.sparse" in sys.modules)
matrix = sp.csr_matrix(data.X)
print(json.dumps({"dense": dense, "converged": [r.converged for r in runs],
                  "sparse": sp.issparse(matrix), "loaded": "scipy.sparse" in sys.modules}))
"""


def test_a_dense_fit_never_imports_scipy_sparse_and_a_sparse_matrix_does():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          check=True, env=env)
    out = json.loads(done.stdout)
    assert out["dense"] == [False, False, False]
    assert out["converged"] == [True, True]
    assert out["sparse"] is True and out["loaded"] is True


def test_issparse_is_scipys_once_loaded():
    import scipy.sparse

    from cvxrank.utils.lazy_sparse import sp

    X = np.eye(3)
    assert sp.issparse(scipy.sparse.csr_matrix(X)) and not sp.issparse(X)
    assert sp.csr_matrix is scipy.sparse.csr_matrix
    assert "loaded" in repr(sp)
