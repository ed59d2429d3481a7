"""Sphinx configuration of cvxrank's documentation site.

The site is the pages of this folder (MyST markdown), an API reference generated from the
numpydoc docstrings (:file:`api.rst`: every public module, class and function of the package,
by ``sphinx.ext.autosummary``), and the executed notebooks of ``notebooks/`` as a gallery,
shown with the outputs they are committed with (never re-executed by the build). ``make docs``
builds it into ``docs/_build/html`` with every warning an error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpydoc.docscrape_sphinx

ROOT = Path(__file__).resolve().parents[1]

project = "cvxrank"
author = "the cvxrank developers"
copyright = "2026, the cvxrank developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# the API reference: one page per module with an entry for each of its public classes and
# functions (_templates/autosummary/module.rst), members in source order, type hints in the
# signatures
autosummary_generate = True
autosummary_imported_members = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # scikit-learn adds these to every estimator (metadata routing); its own docs explain them
    "exclude-members": "set_fit_request, set_predict_request, set_score_request",
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# A numpydoc References section lists the papers a function implements (``.. [1] ...``); the
# text names them by author, section and equation rather than citing ``[1]_``, so Sphinx's
# check for citations the text never refers to does not apply to them.
suppress_warnings = ["ref.citation"]

# the gallery: the notebooks as committed (executed once by
# tests/project/test_notebooks.py's refresh), not run again here
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = "cvxrank"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}


def _copy_notebooks() -> None:
    """Copy ``notebooks/*.ipynb`` into ``docs/gallery/`` (git-ignored): Sphinx reads only the
    files below its source folder."""
    gallery = Path(__file__).resolve().parent / "gallery"
    gallery.mkdir(exist_ok=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        target = gallery / notebook.name
        if not target.exists() or target.read_bytes() != notebook.read_bytes():
            shutil.copyfile(notebook, target)


_copy_notebooks()


class _SharedTemplates(numpydoc.docscrape_sphinx.SandboxedEnvironment):
    """numpydoc's template environment, its compiled templates shared by every docstring.

    numpydoc 1.x builds a new environment, and so compiles its docstring template again, for
    each of the about 4,000 docstrings it renders (sharing it: 101 s to 89 s per build); the
    template depends only on the builder, which is the same for the whole build.
    """

    _compiled: dict[str, object] = {}

    def get_template(self, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name not in self._compiled:
            self._compiled[name] = super().get_template(name, *args, **kwargs)
        return self._compiled[name]


numpydoc.docscrape_sphinx.SandboxedEnvironment = _SharedTemplates
