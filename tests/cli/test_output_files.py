"""Output files: no command writes over a file it did not create or over one of its inputs,
and every file lands whole (:mod:`cvxrank.utils.output_files`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cvxrank.cli import main as cli_main
from cvxrank.cli.figures import figures_readme
from cvxrank.cli.verify import README_SIGNATURE, written_before_manifests
from cvxrank.errors import DataFormatError, UsageError
from cvxrank.utils.output_files import (
    MANIFEST,
    STAGING_PREFIX,
    OutputDir,
    replacing,
    write_text_atomically,
)

#: The cheapest verification: one solver on the quick instances (about a second).
#: One pair on the small instances (`figures --quick`; `verify` runs them by default).
ONE_PAIR = ("--quick", "--only", "ranksvm-squared_hinge/prsvm+")


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """Run ``cvxrank ARGS`` in-process: (exit code, stdout, stderr)."""
    code = cli_main.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(out: OutputDir, files: dict[str, str]) -> None:
    """Write ``files`` (name -> text) through ``out``."""
    with out.writing() as staging:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")


def leftovers(folder: Path) -> list[str]:
    """Staging folders and temporary files left in ``folder``."""
    return [p.name for p in folder.iterdir()
            if p.name.startswith(STAGING_PREFIX) or p.name.endswith(".tmp")]


def listed(folder: Path) -> list[str]:
    return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]


# --------------------------------------------------------------------------- OutputDir


def test_a_file_cvxrank_did_not_write_is_refused_and_left_untouched(tmp_path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"mine\r\n\x00")
    out = OutputDir(tmp_path)
    with pytest.raises(UsageError, match=r"notes\.md already exists .*--force replaces it"):
        out.check(["notes.md", "new.csv"])
    with pytest.raises(UsageError, match=r"notes\.md"):  # and again when the files are written
        write(out, {"new.csv": "a\n", "notes.md": "theirs\n"})
    assert notes.read_bytes() == b"mine\r\n\x00"
    # nothing was renamed, not even the file without a conflict, and nothing is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_force_replaces_a_file_cvxrank_did_not_write(tmp_path) -> None:
    (tmp_path / "notes.md").write_text("mine\n")
    write(OutputDir(tmp_path, force=True), {"notes.md": "theirs\n"})
    assert (tmp_path / "notes.md").read_text() == "theirs\n"
    assert listed(tmp_path) == ["notes.md"]  # owned from now on


def test_a_second_run_replaces_its_own_files(tmp_path) -> None:
    out_dir = tmp_path / "new" / "out"  # created with its parents
    write(OutputDir(out_dir), {"a.csv": "1\n", "b.png": "2\n"})
    write(OutputDir(out_dir), {"a.csv": "3\n"})
    assert (out_dir / "a.csv").read_text() == "3\n" and (out_dir / "b.png").read_text() == "2\n"
    assert listed(out_dir) == ["a.csv", "b.png"]
    (out_dir / "b.png").unlink()  # a listed file removed by hand is no longer listed
    write(OutputDir(out_dir), {"a.csv": "4\n"})
    assert listed(out_dir) == ["a.csv"]
    assert not leftovers(out_dir)


def test_an_input_file_is_refused_even_with_force(tmp_path) -> None:
    data = tmp_path / "train.txt"
    data.write_text("1 qid:1 1:1\n")
    write(OutputDir(tmp_path), {"model.json": "{}\n"})
    with pytest.raises(UsageError, match="train.txt is the input file .*even with --force"):
        OutputDir(tmp_path, force=True, inputs=[None, str(data)]).check(["train.txt"])
    # the same file under another name (a hard link), even when the manifest lists the name
    os.link(data, tmp_path / "model.json.lnk")
    manifest = {"files": ["model.json", "model.json.lnk"]}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="model.json.lnk is the input file"):
        write(OutputDir(tmp_path, force=True, inputs=[data]), {"model.json.lnk": "x\n"})
    assert data.read_text() == "1 qid:1 1:1\n"


def test_a_file_of_an_input_folder_is_refused_unless_cvxrank_wrote_it(tmp_path) -> None:
    letor = tmp_path / "letor"
    fold = letor / "Fold1"
    fold.mkdir(parents=True)
    (fold / "grid.md").write_text("data\n")
    out = OutputDir(fold, force=True, inputs=[letor])
    with pytest.raises(UsageError, match="in the input folder"):
        out.check(["grid.md"])
    out.check(["grid.csv"])  # a new file in the folder is fine
    write(out, {"grid.csv": "1\n"})
    write(out, {"grid.csv": "2\n"})  # and replacing it again: cvxrank wrote it
    assert (fold / "grid.csv").read_text() == "2\n" and (fold / "grid.md").read_text() == "data\n"


@pytest.mark.parametrize("error", [RuntimeError("writer failed"), KeyboardInterrupt()])
def test_an_interrupted_write_leaves_the_folder_as_it_was(tmp_path, error) -> None:
    write(OutputDir(tmp_path), {"a.csv": "old\n"})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    out = OutputDir(tmp_path)
    with pytest.raises(type(error)), out.writing() as staging:
        (staging / "a.csv").write_text("new\n")
        (staging / "b.png").write_text("half a fig")
        raise error
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_bad_folder_fails_at_once(tmp_path) -> None:
    plain = tmp_path / "file"
    plain.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        OutputDir(plain, option="--figures")
    with pytest.raises(OSError):
        OutputDir(plain / "below")
    (tmp_path / MANIFEST).write_text("[1, 2]")
    with pytest.raises(DataFormatError, match="not a cvxrank manifest"):
        OutputDir(tmp_path)
    staged = tmp_path / "sub"
    staged.mkdir()
    (staged / "a.png").mkdir()
    with pytest.raises(UsageError, match="would replace a folder"):
        OutputDir(staged, force=True).check(["a.png"])


def test_atomic_write_of_one_file(tmp_path) -> None:
    path = tmp_path / "model.json"
    write_text_atomically(path, "one\n")
    with pytest.raises(KeyboardInterrupt), replacing(path) as temporary:
        temporary.write_text("half")
        raise KeyboardInterrupt
    assert path.read_text() == "one\n" and not leftovers(tmp_path)


# --------------------------------------------------------------------------- figures/


def test_files_of_a_figures_folder_from_before_the_manifests_are_cvxrank_s(tmp_path) -> None:
    assert figures_readme().startswith(README_SIGNATURE)
    legacy = tmp_path / "figures"
    legacy.mkdir()
    (legacy / "README.md").write_text(figures_readme(), encoding="utf-8")
    (legacy / "ranksvm-hinge_quick-10q-10f.png").write_bytes(b"old")
    assert written_before_manifests(legacy / "README.md")
    assert written_before_manifests(legacy / "ranksvm-hinge_quick-10q-10f.png")
    other = tmp_path / "other"
    other.mkdir()
    (other / "README.md").write_text("# figures/\n\nMy own figures.\n")
    (other / "ranksvm-hinge_quick-10q-10f.png").write_bytes(b"mine")
    assert not written_before_manifests(other / "README.md")
    assert not written_before_manifests(other / "ranksvm-hinge_quick-10q-10f.png")
    assert not written_before_manifests(tmp_path / "ranksvm-hinge_quick-10q-10f.png")  # no README


@pytest.mark.slow  # two figures runs
def test_figures_refuses_an_existing_readme_and_reruns_over_its_own_files(
        capsys, tmp_path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# My project\n")
    code, out, err = cli(capsys, "figures", *ONE_PAIR, "--out", tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("cvxrank: error: --out ") and err.count("\n") == 1
    assert "README.md" in err and "--force" in err
    assert readme.read_text() == "# My project\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]

    figures = tmp_path / "figures"
    for _ in range(2):  # the second run replaces the files of the first
        code, out, err = cli(capsys, "figures", *ONE_PAIR, "--out", figures)
        assert code == 0, err
        written = sorted(out.split())
        assert written == sorted(str(figures / name) for name in listed(figures))
        assert all(Path(p).is_file() for p in written)
    assert not leftovers(figures)


@pytest.mark.slow  # a verify run
def test_verify_regenerates_a_figures_folder_from_before_the_manifests(capsys, tmp_path) -> None:
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "README.md").write_text(figures_readme(), encoding="utf-8")
    stale = figures / "ranksvm-squared_hinge_quick-10q-10f.png"
    stale.write_bytes(b"an earlier version's figure")
    for _ in range(2):
        code, _, err = cli(capsys, "verify", *ONE_PAIR[1:], "--figures", figures)
        assert code == 0, err
    assert stale.read_bytes()[:4] == b"\x89PNG"
    assert "README.md" not in listed(figures)  # verify does not write the index
    (figures / "README.md").write_text("# notes\n")  # no longer cvxrank's README
    stale.unlink()
    (figures / "ranksvm-squared_hinge_quick-10q-10f.png").write_bytes(b"mine")
    (figures / MANIFEST).unlink()
    code, _, err = cli(capsys, "verify", *ONE_PAIR[1:], "--figures", figures)
    assert code == 2 and "ranksvm-squared_hinge_quick-10q-10f.png" in err
    assert (figures / "ranksvm-squared_hinge_quick-10q-10f.png").read_bytes() == b"mine"


# --------------------------------------------------------------------------- other commands


def test_reproduce_refuses_before_the_run(capsys, tmp_path, monkeypatch) -> None:
    from cvxrank.experiments.chapelle import fig3

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the experiment ran before the output folder was checked")

    monkeypatch.setattr(fig3, "run_fig3", no_run)
    table = tmp_path / "chapelle-fig3.md"
    table.write_text("my notes\n")
    code, _, err = cli(capsys, "reproduce", "chapelle-fig3", "--sizes", "50", "--out",
                       tmp_path)
    assert code == 2 and err.count("\n") == 1 and "chapelle-fig3.md" in err
    assert table.read_text() == "my notes\n"


def test_grid_refuses_a_file_of_the_data_folder_even_with_force(capsys, tmp_path,
                                                                monkeypatch) -> None:
    from cvxrank.experiments import letor

    monkeypatch.setattr(letor, "run_letor_grid", lambda *a, **k: pytest.fail("ran"))
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for split in ("train", "vali", "test"):
        (fold / f"{split}.txt").write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    (fold / "grid.md").write_text("data\n")
    code, _, err = cli(capsys, "grid", "--method", "ranksvm", "--data", tmp_path, "--param",
                       "C=1", "--select", "map", "--out", fold, "--force")
    assert code == 2 and "in the input folder" in err and err.count("\n") == 1
    assert (fold / "grid.md").read_text() == "data\n"


def test_fit_refuses_to_save_the_model_over_an_input(capsys, tmp_path) -> None:
    train = tmp_path / "train.txt"
    train.write_text("1 0 1:1\n")
    query = tmp_path / "train.txt.query"
    query.write_text("1\n")
    for target in (train, query):
        code, _, err = cli(capsys, "fit", "--train", train, "--query", query, "--save-model",
                           target)
        assert code == 2 and "that is the input file" in err and err.count("\n") == 1
    assert train.read_text() == "1 0 1:1\n" and query.read_text() == "1\n"


# ------------------------------------------------------------------- special output paths


def _special(kind: str, folder: Path) -> Path:
    """An output path that is no regular file: a character device (the numbers of
    ``/dev/null``), a FIFO, or a symbolic link to a regular file."""
    import stat

    path = folder / kind
    if kind == "device":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        (folder / "real.txt").write_text("old\n", encoding="utf-8")
        path.symlink_to(folder / "real.txt")
    return path


def _drain(path: Path) -> list[bytes]:
    """Read a FIFO in a thread (a writer's open blocks until a reader opens it)."""
    import threading

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    return got


@pytest.fixture
def fitted(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """A small data file and the model fitted on it."""
    from cvxrank.data import make_synthetic, write_svmlight

    data = tmp_path / "data.txt"
    write_svmlight(make_synthetic(n_queries=3, docs_per_query=5, n_features=3, seed=0), data)
    model = tmp_path / "model.json"
    assert cli(capsys, "fit", "--train", data, "--save-model", model)[0] == 0
    return data, model


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
@pytest.mark.parametrize("kind", ["device", "fifo", "symlink"])
@pytest.mark.parametrize("option", ["--out", "--trec-run", "--save-model"])
def test_a_special_output_path_is_written_through_never_replaced(tmp_path, capsys, fitted,
                                                                 kind, option) -> None:
    data, model = fitted
    path = _special(kind, tmp_path)
    got = _drain(path) if kind == "fifo" else None
    if option == "--save-model":
        args = ("fit", "--train", data, "--save-model", path)
    else:
        args = ("predict", "--model", model, "--data", data, option, path)
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    if kind == "symlink":
        assert path.is_symlink() and path.resolve() == tmp_path / "real.txt"
        assert (tmp_path / "real.txt").read_text(encoding="utf-8") != "old\n"
    else:
        assert not path.is_file() and not path.is_symlink()  # still the device or FIFO
    if got is not None:
        for _ in range(100):
            if got:
                break
            import time

            time.sleep(0.05)
        assert got and got[0]
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("option", ["--out", "--trec-run", "--save-model"])
def test_a_directory_as_output_file_is_refused_as_such(tmp_path, capsys, fitted,
                                                      option) -> None:
    data, model = fitted
    folder = tmp_path / "folder"
    folder.mkdir()
    if option == "--save-model":
        args = ("fit", "--train", data, "--save-model", folder)
    else:
        args = ("predict", "--model", model, "--data", data, option, folder)
    code, out, err = cli(capsys, *args)
    assert code == 2 and err.count("\n") == 1
    assert f"{option} {folder}: is a directory" in err and ".tmp" not in err
    assert not any(folder.iterdir())


@pytest.mark.parametrize("option", ["--out", "--trec-run", "--save-model"])
def test_an_output_file_in_a_missing_folder_is_refused_before_the_run(tmp_path, capsys, fitted,
                                                                      option) -> None:
    data, model = fitted
    target = tmp_path / "missing" / "file.txt"
    if option == "--save-model":
        args = ("fit", "--train", data, "--save-model", target)
    else:
        args = ("predict", "--model", model, "--data", data, option, target)
    code, out, err = cli(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and out == ""
    assert f"{option} {target}: {target.parent} is not an existing folder" in err
    assert ".tmp" not in err and not target.parent.exists()
