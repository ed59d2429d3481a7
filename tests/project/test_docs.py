"""The documentation site (``make docs``): it builds with no warning, and its API reference has
an entry for every public module, class and function of the package.

The build is Sphinx with the project's ``docs/conf.py`` (autosummary and numpydoc over the
docstrings, MyST for the pages and the committed notebooks) into a temporary folder, as
``make docs`` runs it, with every warning an error.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import cvxrank

ROOT = Path(__file__).resolve().parents[2]

# a whole Sphinx build (a minute or two), once: every test of this file in one xdist worker
# (`--dist loadgroup`), since a build writes its autosummary pages and gallery into docs/
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sphinx-build")]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx")
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
        capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0 and "WARNING" not in run.stderr, run.stderr[-4000:]
    return out / "html"


def public_members() -> dict[str, list[str]]:
    """Module name -> the public classes and functions defined in it, for every module of the
    package (its own, not the ones it imports)."""
    modules = {"cvxrank": cvxrank}
    for info in pkgutil.walk_packages(cvxrank.__path__, "cvxrank."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules[info.name] = importlib.import_module(info.name)
    return {name: [member for member, obj in vars(module).items()
                   if not member.startswith("_")
                   and (inspect.isclass(obj) or inspect.isfunction(obj))
                   and getattr(obj, "__module__", None) == name]
            for name, module in modules.items()}


def test_every_public_module_class_and_function_has_an_entry(site: Path) -> None:
    missing = []
    for module, members in public_members().items():
        page = site / "api" / f"{module}.html"
        if not page.is_file():
            missing.append(module)
            continue
        html = page.read_text(encoding="utf-8")
        missing += [f"{module}.{m}" for m in members if f'id="{module}.{m}"' not in html]
    assert not missing, f"{len(missing)} without an API entry: {missing[:20]}"


@pytest.mark.parametrize("entry", [
    "cvxrank.estimators.RankSVMRanker",
    "cvxrank.losses.pair_loss_type.PairLoss",
    "cvxrank.formulations.base.Formulation",
    "cvxrank.formulations.query_losses.QueryLoss",
    "cvxrank.sandbox.checking.check",
    "cvxrank.core.trace.Run",
    "cvxrank.fitting.fit_formulation",
    "cvxrank.solvers.newton.solve_prsvm_plus",
])
def test_the_names_users_start_from_have_their_pages(site: Path, entry: str) -> None:
    module, name = entry.rsplit(".", 1)
    html = (site / "api" / f"{module}.html").read_text(encoding="utf-8")
    assert f'id="{entry}"' in html
    assert "Parameters" in html or "Returns" in html  # the numpydoc sections are rendered


def test_the_gallery_shows_every_notebook_with_its_figures(site: Path) -> None:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        figures = sum("image/png" in out.get("data", {}) for cell in cells
                      for out in cell.get("outputs", []))
        html = (site / "gallery" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        assert html.count("<img") >= figures > 0, notebook.name  # as committed, not rerun


def test_the_guide_pages_are_in_the_site(site: Path) -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert (site / f"{page.stem}.html").is_file(), page.name
