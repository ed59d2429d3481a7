"""``figures/``: the curated figures kept in git, and their index.

``cvxrank figures`` (``make figures``) writes one figure per method family on one verify
instance, the CSVs behind them and ``README.md``, their index; these tests check that the
index lists exactly the files the command writes (computed from the same selection code,
without running a solver, and checked against a real run of a tiny selection), that the
copy in git is current and that the folder holds nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cvxrank import tolerances
from cvxrank.cli import main as cli_main
from cvxrank.cli.figures import (
    CURATED,
    CURATED_INSTANCE,
    README,
    curated_selection,
    expected_files,
    figures_readme,
)
from cvxrank.cli.verify import DEFAULT_FIGURES, README_SIGNATURE, figure_names
from cvxrank.data.instances import DEFAULT, QUICK
from cvxrank.plots import figure_stem
from cvxrank.registry import entries
from cvxrank.utils.output_files import MANIFEST

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "figures"

#: A file of the index: ``[`name`](name)``.
LINK = re.compile(r"\[`([^`]+)`\]\(([^)]+)\)")


def indexed(text: str) -> list[str]:
    """The files a figures README links to, in order (and checks each link's target)."""
    names = []
    for shown, target in LINK.findall(text):
        assert shown == target
        names.append(target)
    return names


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli_main.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- the selection


def test_one_curated_figure_per_method_family() -> None:
    families = [family for family, _, _ in CURATED]
    formulations = [name for _, name, _ in CURATED]
    assert len(set(families)) == len(families) and len(set(formulations)) == len(formulations)
    registered = {e.formulation: e for e in entries() if e.check == "reference"}
    assert set(formulations) <= set(registered)
    # every method of the registry with a figure has its family's figure
    methods = {registered[name].method for name in formulations}
    assert methods | {"dorm"} >= {e.method for e in entries() if e.check == "reference"}
    assert CURATED_INSTANCE in {inst.name for inst in DEFAULT}  # a verify instance
    chosen, instances = curated_selection()
    assert [i.name for i in instances] == [CURATED_INSTANCE]
    assert {e.formulation for e in chosen} == set(formulations)
    # every registered solver of a curated formulation is drawn on its figure
    assert {e.name for e in chosen} == {e.name for e in entries()
                                        if e.formulation in formulations}


def test_expected_files_are_the_figures_and_the_index() -> None:
    names = expected_files()
    stems = [figure_stem(name, CURATED_INSTANCE) for _, name, _ in CURATED]
    assert sorted(names) == sorted([f"{s}{x}" for s in stems for x in (".png", ".csv")]
                                   + [README])
    chosen, instances = curated_selection("svmmap/*")
    assert expected_files(chosen, instances) == [f"svmmap_{CURATED_INSTANCE}.png",
                                                 f"svmmap_{CURATED_INSTANCE}.csv", README]


# --------------------------------------------------------------------------- the index


def test_index_lists_exactly_the_files_the_command_writes() -> None:
    text = figures_readme()
    assert text.startswith(README_SIGNATURE)  # a fresh clone's folder counts as cvxrank's
    assert sorted(indexed(text) + [README]) == sorted(expected_files())
    for e in entries():  # every registered pair in the rates table
        assert f"| `{e.formulation}` | `{e.solver}` |" in text
    assert tolerances.RELATIVE_GAP_DEFINITION in text
    assert "Written by `cvxrank figures --out figures`" in text
    assert DEFAULT_FIGURES in text and MANIFEST in text  # where verify writes; the manifest


def test_index_of_every_pair_lists_every_pair() -> None:
    for instances in (DEFAULT, QUICK):
        chosen = entries()
        text = figures_readme(chosen, instances, curated=False)
        assert sorted(indexed(text) + [README]) == sorted(expected_files(chosen, instances))
        assert len(indexed(text)) == len(figure_names(chosen, instances))


def test_committed_index_is_current() -> None:
    committed = FIGURES / README
    assert committed.read_text(encoding="utf-8") == figures_readme(), (
        "figures/README.md is stale: regenerate figures/ with `make figures` "
        "(`cvxrank figures --out figures`)")


def test_the_folder_holds_exactly_the_indexed_files() -> None:
    present = sorted(p.name for p in FIGURES.iterdir()
                     if not p.name.startswith(".") and p.is_file())
    assert present == sorted(expected_files()), (
        "figures/ does not hold exactly the files `cvxrank figures` writes: regenerate it "
        "with `make figures` and remove the files it does not write")
    for name in expected_files():
        if name.endswith(".png"):
            assert (FIGURES / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert (FIGURES / name).stat().st_size < 150_000  # small enough for git


# --------------------------------------------------------------------------- real runs


@pytest.mark.slow  # a figures run
def test_a_run_writes_exactly_what_its_index_lists(capsys, tmp_path) -> None:
    out = tmp_path / "figures"
    for _ in range(2):  # a rerun replaces the files of the first run
        code, printed, err = cli(capsys, "figures", "--only", "svmmap/*", "--out", out)
        assert code == 0, err
        written = sorted(Path(p).name for p in printed.split())
        chosen, instances = curated_selection("svmmap/*")
        assert written == sorted(expected_files(chosen, instances))
        assert sorted(p.name for p in out.iterdir()) == sorted(written + [MANIFEST])
        text = (out / README).read_text(encoding="utf-8")
        assert sorted(indexed(text) + [README]) == written
    code, printed, err = cli(capsys, "figures", "--quick", "--only",
                             "ranksvm-squared_hinge/prsvm+", "--out", tmp_path / "quick")
    assert code == 0, err
    written = sorted(Path(p).name for p in printed.split())
    assert written == sorted([f"ranksvm-squared_hinge_{i.name}{x}" for i in QUICK
                              for x in (".png", ".csv")] + [README])
    text = (tmp_path / "quick" / README).read_text(encoding="utf-8")
    assert sorted(indexed(text) + [README]) == written


def test_only_outside_the_curated_figures_asks_for_all(capsys, tmp_path) -> None:
    code, out, err = cli(capsys, "figures", "--only", "ranksvm-hinge/pg", "--out", tmp_path)
    assert code == 2 and out == "" and "--all" in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())  # refused before anything is written


def test_the_papers_folders_hold_exactly_what_their_reproductions_write() -> None:
    """figures/papers/<experiment>/ holds the files of ``cvxrank reproduce <experiment>``,
    and the Makefile's figures target runs exactly the reproductions of the index."""
    from cvxrank.cli.figures import PAPERS, paper_files

    papers = FIGURES / "papers"
    assert sorted(p.name for p in papers.iterdir()) == sorted(f for f, _, _ in PAPERS)
    for folder, _, _ in PAPERS:
        present = sorted(p.name for p in (papers / folder).iterdir()
                         if not p.name.startswith("."))
        assert present == paper_files(folder), folder
        for name in present:
            if name.endswith(".png"):
                assert (papers / folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    makefile = (FIGURES.parent / "Makefile").read_text(encoding="utf-8")
    runs = re.findall(r"cvxrank reproduce (\S+) (.*?)--out figures/papers/(\S+)", makefile)
    assert [(name, folder) for name, _, folder in runs] == [(f, f) for f, _, _ in PAPERS]
    for (_, given, _), (_, options, _) in zip(runs, PAPERS, strict=True):
        assert given.strip() == options.format(letor3="$(LETOR3)", mq2008="$(MQ2008)")
