"""The notebooks in notebooks/: each runs (nbclient) within a time budget, and each is committed
with the outputs of one clean run.

The notebooks hold no logic of their own: they import cvxrank and call it. A notebook that
raises, or that takes longer than its budget, fails the test suite. The run starts from a clean
copy (committed outputs cleared) and writes nothing back.

The committed files carry their outputs, so that a reader on GitHub sees the tables and
figures. To refresh them after a change, run the notebooks again and save them in place with
the same client settings as the test:

    .venv/bin/python tests/project/test_notebooks.py [NAME.ipynb ...]   # default: every notebook
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

#: Seconds a single notebook cell may take; the whole notebook is bounded by the test too.
CELL_TIMEOUT = 300

#: Largest size of a committed notebook, outputs included (figures at modest dpi).
MAX_NOTEBOOK_BYTES = 2 * 1024 * 1024

REFRESH = ".venv/bin/python tests/project/test_notebooks.py {name}"


def _read(path: Path) -> Any:
    """The notebook at ``path`` as an ``nbformat.NotebookNode`` (imported here: nbformat's
    schema validation takes seconds to import, which only the tests that run notebooks pay;
    the checks of the committed files read the JSON)."""
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(path, as_version=4)


def _code_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def _errors(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [out for cell in _code_cells(nb) for out in cell.get("outputs", [])
            if out.get("output_type") == "error"]


def execute(nb: Any) -> Any:
    """Run ``nb`` top to bottom in a fresh ``python3`` kernel, from a clean state (outputs,
    execution counts and timing metadata cleared first), in notebooks/ as working directory.
    Raises ``nbclient.exceptions.CellExecutionError`` at the first cell that raises."""
    for cell in _code_cells(nb):
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("execution", None)
    os.environ.setdefault("MPLBACKEND", "Agg")
    nbclient = pytest.importorskip("nbclient")
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()
    return nb


def coalesce_streams(nb: Any) -> Any:
    """Merge consecutive outputs of the same stream (stdout, stderr) of each cell into one, so
    that a cell's printed text is one block whatever the kernel's flushing."""
    for cell in _code_cells(nb):
        merged: list[Any] = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
            else:
                merged.append(out)
        cell.outputs = merged
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    nb = execute(_read(path))
    errors = _errors(nb)
    assert not errors, f"{path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_committed_with_outputs(path: Path) -> None:
    """The committed file holds the outputs of one clean run, top to bottom: every code cell
    executed, with execution counts 1, 2, 3, ... in cell order; no error; nothing that changes
    from machine to machine or run to run without meaning (this checkout's absolute path,
    object addresses); and the file under MAX_NOTEBOOK_BYTES."""
    refresh = REFRESH.format(name=path.name)
    size = path.stat().st_size
    assert size <= MAX_NOTEBOOK_BYTES, (
        f"{path.name} is {size / 2**20:.2f} MiB (limit {MAX_NOTEBOOK_BYTES / 2**20:g} MiB): "
        "smaller figures (dpi) or shorter printouts")
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in _code_cells(nb) if "".join(cell["source"]).strip()]
    assert code, f"{path.name} has no code cell"
    not_run = [i for i, cell in enumerate(code, 1)
               if cell["execution_count"] is None and not cell["outputs"]]
    assert not not_run, (f"{path.name}: code cells {not_run} have no outputs (committed "
                         f"without running?); refresh with: {refresh}")
    counts = [cell["execution_count"] for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts} are not those of one clean run top to "
        f"bottom; refresh with: {refresh}")
    errors = _errors(nb)
    assert not errors, f"{path.name}: committed with an error output ({errors[0].get('ename')})"
    outputs = json.dumps([cell["outputs"] for cell in code])
    assert str(ROOT) not in outputs, f"{path.name}: outputs show the absolute path {ROOT}"
    assert " at 0x" not in outputs, f"{path.name}: outputs show an object's memory address"


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


def main(names: list[str]) -> None:
    """Run the named notebooks (default: all) and save them in place with their outputs."""
    paths = [NOTEBOOK_DIR / Path(name).name for name in names] or NOTEBOOKS
    for path in paths:
        nb = coalesce_streams(execute(_read(path)))
        pytest.importorskip("nbformat").write(nb, path)
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} kB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
