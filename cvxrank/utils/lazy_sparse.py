"""``scipy.sparse``, imported on first use: :data:`sp` stands for the module.

Importing ``scipy.sparse`` costs a process about 0.1 s of start-up (0.11 s of the 0.19 s that
``cvxrank fit`` spends importing; most of it scipy's array-API layer, which imports numpy's
``f2py``, ``testing`` and ``ma`` to copy numpy's namespace), more than fitting a LETOR fold
takes. A dense data set, the common case, needs none of it, and the question every module
asks of an array, :meth:`issparse`, has its answer without the import: no sparse matrix
exists in a process that has not imported ``scipy.sparse`` (creating or unpickling one
imports it). So the modules write ``from cvxrank.utils.lazy_sparse import sp`` where they
would write ``import scipy.sparse as sp``: ``sp.issparse(x)`` is False at no cost until the
module is loaded, and any other name (``sp.csr_matrix``, ``sp.diags``, ...) loads it.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any


class _LazySparse:
    """A stand-in for the module ``scipy.sparse`` that imports it when a name other than
    :meth:`issparse` is first looked up."""

    @staticmethod
    def issparse(x: Any) -> bool:
        """:func:`scipy.sparse.issparse`, False without importing it while it is not loaded
        (nothing can be sparse then)."""
        module = sys.modules.get("scipy.sparse")
        return module is not None and module.issparse(x)

    @staticmethod
    def module() -> ModuleType:
        """``scipy.sparse`` itself (imported here)."""
        return importlib.import_module("scipy.sparse")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.module(), name)

    def __repr__(self) -> str:
        loaded = "loaded" if "scipy.sparse" in sys.modules else "not loaded yet"
        return f"<scipy.sparse, imported on first use ({loaded})>"


#: ``scipy.sparse`` (:class:`_LazySparse`).
sp = _LazySparse()
