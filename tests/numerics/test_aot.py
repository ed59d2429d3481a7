"""Kernels compiled ahead of time (:mod:`cvxrank.compiled.aot`): built by ``make install``, loaded
without numba, the same numbers as the just-in-time kernels, never a stale module."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from cvxrank.compiled import aot
from cvxrank.data import svmlight_compiled
from cvxrank.formulations import conerank_kernels, sorted_kernels
from cvxrank.formulations.pair_losses import SortedPairLoss
from cvxrank.numerics import compensated_kernels, l1inf_kernels, simplex_kernels

KERNEL_FILES = (sorted_kernels, l1inf_kernels, svmlight_compiled, conerank_kernels,
                compensated_kernels, simplex_kernels)
#: What numba.pycc needs to build a module: a C compiler and Python's headers.
HAS_COMPILER = ((shutil.which("cc") is not None or shutil.which("gcc") is not None)
                and (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file())


@pytest.mark.skipif(not HAS_COMPILER, reason="no C compiler: the kernels compile just in time")
@pytest.mark.parametrize("module", KERNEL_FILES, ids=lambda m: m.__name__)
def test_make_install_built_the_current_module_of_every_kernel_file(module) -> None:
    path = aot.module_path(module.__file__)
    assert path.is_file(), f"{path.name} missing: run `make install`"
    assert not [p for p in path.parent.glob(f"_aot_{Path(module.__file__).stem}_*")
                if p != path]  # older versions were removed


FRESH_FIT = """
import json, sys
import numpy as np
from cvxrank.data import make_synthetic
from cvxrank.formulations import sorted_kernels
from cvxrank.formulations.ranksvm import RankSVM
data = make_synthetic(n_queries=6, docs_per_query=20, n_features=4, n_grades=3, seed=5)
f = RankSVM(data, C=0.1, loss="squared_hinge")
f.loss_engine("sorted").evaluate(data.X @ np.linspace(-1.0, 1.0, 4))
print(json.dumps({"numba": "numba" in sys.modules, "loaded": sorted_kernels.KERNELS.loaded,
                  "numpy_seconds": sorted_kernels.KERNELS.numpy_seconds}))
"""


@pytest.mark.skipif(not HAS_COMPILER, reason="no C compiler: the kernels compile just in time")
def test_a_fresh_process_runs_the_compiled_passes_from_the_first_call_without_numba() -> None:
    run = subprocess.run([sys.executable, "-c", FRESH_FIT], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report == {"numba": False, "loaded": True, "numpy_seconds": 0.0}


@pytest.fixture(scope="module")
def just_in_time() -> dict:
    """The sorted passes compiled just in time, beside the ahead-of-time ones."""
    if aot.load(sorted_kernels.__file__) is None:
        pytest.skip("no ahead-of-time module to compare")
    from numba import njit

    return {name: njit(cache=True)(kernel) for name, kernel in sorted_kernels._KERNELS.items()}


@pytest.mark.parametrize("loss", ["squared_hinge", "huber", "hinge"])
@pytest.mark.parametrize("seed", range(4))
def test_ahead_of_time_passes_equal_the_just_in_time_ones_bit_for_bit(
        just_in_time: dict, loss: str, seed: int) -> None:
    ahead = aot.load(sorted_kernels.__file__)
    rng = np.random.default_rng(seed)
    n = 400
    query = np.sort(rng.integers(0, 12, n))
    grade = rng.integers(0, 4, n)
    engine = SortedPairLoss(query, grade, rng.uniform(0.5, 2.0, 12), np.ones((4, 4)),
                            np.ones((4, 4)), loss)
    b = engine.blocks
    # scores on a grid of halves (many ties) or spread over scales
    s = rng.integers(-4, 5, n) / 2.0 if seed % 2 else rng.normal(size=n) * 10.0 ** seed
    values = s[b.doc] + b.shift
    order = engine._sort(values, s, False)
    args = (values, order, b.doc, b.upper, b.block_weight, b.block_margin, b.ptr, n,
            loss != "hinge")
    mine, theirs = ahead.block_sums(*args), just_in_time["block_sums"](*args)
    assert mine[0] == theirs[0] and mine[2] == theirs[2]
    assert np.array_equal(mine[1], theirs[1]) and np.array_equal(mine[3], theirs[3])
    delta = rng.normal(size=n)
    hess = (delta, order, mine[3], b.doc, b.upper, b.block_weight, b.ptr)
    assert np.array_equal(ahead.block_hessp(*hess), just_in_time["block_hessp"](*hess))
    start = np.concatenate([rng.permutation(c) for c in b.runs.length])  # each run shuffled
    merge = (values, s, b.runs.doc, b.runs.start, b.runs.length, b.segments.ptr,
             b.segments.entry, b.segments.run, b.segments.length, b.block_weight, start)
    for mine, theirs in zip(ahead.merged_order(*merge), just_in_time["merged_order"](*merge),
                            strict=True):
        assert np.array_equal(mine, theirs)


def test_a_module_built_for_another_version_of_the_file_is_not_loaded(tmp_path: Path) -> None:
    source = tmp_path / "sorted_kernels.py"
    shutil.copy(sorted_kernels.__file__, source)
    built = aot.module_path(sorted_kernels.__file__)
    assert aot.module_name(source) == aot.module_name(sorted_kernels.__file__)
    source.write_text(source.read_text() + "\n# edited\n")
    assert aot.module_name(source) != aot.module_name(sorted_kernels.__file__)
    if built.is_file():  # the module of the unedited file, beside the edited one
        shutil.copy(built, tmp_path / built.name)
    assert aot.load(str(source)) is None


def test_cvxrank_aot_0_compiles_just_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CVXRANK_AOT", "0")
    monkeypatch.setattr(aot, "_LOADED", {})
    assert not aot.enabled() and aot.load(sorted_kernels.__file__) is None


TINY = '''
def twice(x):
    return {factor} * x
'''


@pytest.mark.skipif(not HAS_COMPILER, reason="no C compiler")
@pytest.mark.slow  # compiles a module (seconds)
def test_build_writes_a_module_that_loads_and_replaces_its_older_versions(
        tmp_path: Path) -> None:
    source = tmp_path / "tiny_kernels.py"
    modules = []
    for factor in (2.0, 3.0):
        source.write_text(TINY.format(factor=factor))
        spec = importlib.util.spec_from_file_location(f"tiny_{int(factor)}", source)
        kernels = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kernels)
        modules.append(aot.build(str(source), {"twice": (kernels.twice, "f8(f8)")}))
        assert aot.load(str(source)).twice(1.5) == 1.5 * factor
    assert not modules[0].exists() and modules[1].is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([modules[1].name,
                                                                 source.name])


def test_cvxrank_aot_0_in_a_fresh_process_leaves_the_just_in_time_rule() -> None:
    # without the ahead-of-time module a small fit runs the numpy passes and never imports
    # numba (sorted_kernels' ski rental)
    run = subprocess.run([sys.executable, "-c", FRESH_FIT], capture_output=True, text=True,
                         env={**os.environ, "CVXRANK_AOT": "0"})
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert not report["numba"] and not report["loaded"] and report["numpy_seconds"] > 0


def test_a_module_built_on_another_cpu_is_not_loaded(monkeypatch) -> None:
    """The module's name holds the CPU's instruction sets: on a CPU that reports others (a
    copied environment, a virtual machine that masks AVX-512) the kernels compile just in
    time instead of loading machine code that may not run there."""
    source = sorted_kernels.__file__
    here = aot.module_name(source)
    tag = aot.cpu_tag()
    assert tag  # this machine reports its instruction sets
    monkeypatch.setattr(aot, "cpu_tag", lambda: tag + " avx512f")
    assert aot.module_name(source) != here
    assert not aot.module_path(source).is_file()
