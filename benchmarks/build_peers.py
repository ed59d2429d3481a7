"""Build the benchmarks' C peers from their published sources into ``benchmarks/build/``.

Nothing of the peers is committed: the sources are unpacked and compiled into the git-ignored
``benchmarks/build/`` with their own Makefiles and default flags.

* **LIBLINEAR ranksvm 2.11** (Lee & Lin, BSD licence; ``train -s 8``: L2-regularized
  squared-hinge RankSVM by trust-region Newton with selection trees). Source, first found:
  the environment variable ``LIBLINEAR_RANKSVM_SRC`` (a source directory, the official
  ``liblinear-ranksvm-2.11.zip``, or a git directory whose HEAD is that source), else the
  mirror :data:`LIBLINEAR_RANKSVM_MIRROR` (a git import of the official zip). Built with
  ``make train predict`` (its Makefile: ``-O3``).
* **svm_rank V1.00** (Joachims; svm_struct V3.10, svm_light V6.20; its licence allows
  research use and forbids redistribution, so nothing of it is committed). Source, first
  found: ``SVM_RANK_LEARN`` (a built ``svm_rank_learn``), ``SVM_RANK_SRC`` (a directory,
  ``svm_rank.tar.gz`` or a .zip, or a git directory), else the fetched copy
  :data:`SVM_RANK_MIRROR` (the public repository RSL-NEU/person-reid-benchmark, folder
  :data:`SVM_RANK_MIRROR_FOLDER`: svm_rank V1.00 edited only to build as a MATLAB mex, so
  the build drops the ``#include "mex.h"`` line of ``svm_light/svm_common.h`` and takes the
  command-line ``svm_struct/svm_struct_main.c``, which the mex edit left unbuildable, from
  :data:`SVM_STRUCT_MAIN_MIRROR`, greysakura/ranking_SVM_test, with its include of
  ``svm_struct_api.h`` pointed at ``../svm_struct_api.h``). Built with ``make svm_rank_learn``
  (its Makefile's flags, plus ``-fcommon`` so that GCC >= 10 links it).

Usage (prints where the binaries are, or why a peer is skipped)::

    .venv/bin/python benchmarks/build_peers.py [--force]

The benchmark scripts call :func:`liblinear_ranksvm` and :func:`svm_rank_learn` themselves;
those build on first use and reuse the binaries afterwards (a stamp file records the source).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"

#: A bare git repository holding the official liblinear-ranksvm-2.11.zip, unpacked.
LIBLINEAR_RANKSVM_MIRROR = Path("/work/.mirror/UnixJunkie+liblinear-ranksvm/repo/.git")
#: A fetched RSL-NEU/person-reid-benchmark (git directory) and its svm_rank V1.00 folder.
SVM_RANK_MIRROR = Path("/work/.mirror/RSL-NEU+person-reid-benchmark/repo/.git")
SVM_RANK_MIRROR_FOLDER = "MetricLearning/RANKSVM/svm_rank"
#: A fetched greysakura/ranking_SVM_test: svm_struct V3.10's command-line svm_struct_main.c.
SVM_STRUCT_MAIN_MIRROR = Path("/work/.mirror/greysakura+ranking_SVM_test/repo")


def _git_dir(path: Path) -> Path | None:
    """``path`` as a git directory (bare, a ``.git`` folder, or a work tree's), else None."""
    for candidate in (path, path / ".git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def _single_root(folder: Path) -> Path:
    """The one top-level directory of an unpacked archive, or ``folder`` itself."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return folder


def unpack(source: Path, dest: Path, folder: str = "") -> str:
    """Copy or unpack ``source`` (directory, .zip, .tar.gz/.tgz/.tar, git dir) into ``dest``.

    Returns a one-line description of the source (for the stamp file and the report). The
    sources end up directly in ``dest`` (an archive's single top-level folder is removed);
    ``folder`` takes one folder of a git directory's HEAD.
    """
    if dest.exists():
        shutil.rmtree(dest)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp_name:
        tmp = Path(tmp_name)
        git = _git_dir(source) if source.is_dir() else None
        if git is not None:
            head = subprocess.run(["git", "--git-dir", str(git), "rev-parse", "HEAD"],
                                  capture_output=True, text=True, check=True).stdout.strip()
            tree = f"HEAD:{folder}" if folder else "HEAD"
            archive = subprocess.run(["git", "--git-dir", str(git), "archive", tree],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
            what = f"git {git} at {head}" + (f" folder {folder}" if folder else "")
        elif source.is_dir():
            shutil.copytree(source, tmp / "src")
            what = f"directory {source}"
        elif source.suffix == ".zip":
            with zipfile.ZipFile(source) as zf:
                zf.extractall(tmp)
            what = f"zip {source}"
        elif tarfile.is_tarfile(source):
            with tarfile.open(source) as tf:
                tf.extractall(tmp, filter="data")
            what = f"tar {source}"
        else:
            raise ValueError(f"{source}: not a directory, .zip, tar archive or git directory")
        shutil.move(str(_single_root(tmp)), dest)
    return what


def _stamp_ok(folder: Path, what: str, binaries: list[Path]) -> bool:
    stamp = folder / ".cvxrank-source"
    return (stamp.is_file() and stamp.read_text() == what
            and all(b.is_file() and os.access(b, os.X_OK) for b in binaries))


def _source_id(source: Path, folder: str = "") -> str:
    """What identifies a source for the stamp (git HEAD, or path, size and mtime)."""
    git = _git_dir(source) if source.is_dir() else None
    if git is not None:
        head = subprocess.run(["git", "--git-dir", str(git), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        return f"git {git} at {head}" + (f" folder {folder}" if folder else "")
    st = source.stat()
    return f"{source} {st.st_size} {st.st_mtime_ns}"


def build(name: str, source: Path, targets: list[str], binaries: list[str], *,
          force: bool = False, quiet: bool = True, subfolder: str = "",
          prepare: Callable[[Path], None] | None = None) -> dict[str, Path]:
    """Unpack ``source`` into ``BUILD/name`` and ``make targets``; the binaries' paths.

    ``subfolder`` takes one folder of a git source; ``prepare`` edits the unpacked copy before
    ``make``. Reuses an earlier build of the same source (stamp file) unless ``force``.
    """
    folder = BUILD / name
    paths = {b: folder / b for b in binaries}
    ident = _source_id(source, subfolder)
    if not force and _stamp_ok(folder, ident, list(paths.values())):
        return paths
    BUILD.mkdir(parents=True, exist_ok=True)
    unpack(source, folder, subfolder)
    if prepare is not None:
        prepare(folder)
    done = subprocess.run(["make", *targets], cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {name} failed (make {' '.join(targets)} in {folder}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    if not quiet:
        print(done.stdout[-1000:])
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise RuntimeError(f"building {name}: make succeeded but {missing} are missing")
    (folder / ".cvxrank-source").write_text(ident)
    return paths


def liblinear_ranksvm(*, force: bool = False) -> tuple[dict[str, Path] | None, str]:
    """LIBLINEAR ranksvm's ``train`` and ``predict`` (built if needed), or None and why not."""
    env = os.environ.get("LIBLINEAR_RANKSVM_SRC")
    if env:
        source = Path(env).expanduser()
        if not source.exists():
            return None, f"LIBLINEAR ranksvm skipped: LIBLINEAR_RANKSVM_SRC={env} does not exist"
    elif LIBLINEAR_RANKSVM_MIRROR.exists():
        source = LIBLINEAR_RANKSVM_MIRROR
    else:
        return None, ("LIBLINEAR ranksvm skipped: no source (set LIBLINEAR_RANKSVM_SRC to "
                      "liblinear-ranksvm-2.11.zip or its unpacked folder)")
    try:
        paths = build("liblinear-ranksvm", source, ["train", "predict"], ["train", "predict"],
                      force=force)
    except (RuntimeError, ValueError, OSError, subprocess.CalledProcessError) as exc:
        return None, f"LIBLINEAR ranksvm skipped: {exc}"
    return paths, f"LIBLINEAR ranksvm built from {_source_id(source)} in {paths['train'].parent}"


def _standalone_svm_rank(folder: Path) -> None:
    """Undo the mex edits of a MATLAB copy of svm_rank: drop the ``mex.h`` include and put
    back svm_struct's command-line ``svm_struct_main.c`` (from :data:`SVM_STRUCT_MAIN_MIRROR`)."""
    header = folder / "svm_light" / "svm_common.h"
    lines = header.read_bytes().splitlines(keepends=True)
    header.write_bytes(b"".join(line for line in lines if line.strip() != b'#include "mex.h"'))
    git = _git_dir(SVM_STRUCT_MAIN_MIRROR)
    if git is None:
        raise RuntimeError(f"svm_struct_main.c: {SVM_STRUCT_MAIN_MIRROR} is not fetched "
                           "(greysakura/ranking_SVM_test)")
    text = subprocess.run(["git", "--git-dir", str(git), "show",
                           "HEAD:svm_struct/svm_struct_main.c"],
                          capture_output=True, check=True).stdout
    text = text.replace(b'"../svm_extra/svm_struct_api.h"', b'"../svm_struct_api.h"')
    (folder / "svm_struct" / "svm_struct_main.c").write_bytes(text)


def svm_rank_learn(*, force: bool = False) -> tuple[Path | None, str]:
    """svm_rank's ``svm_rank_learn``: ``SVM_RANK_LEARN``, else built from ``SVM_RANK_SRC`` or
    the fetched :data:`SVM_RANK_MIRROR`."""
    given = os.environ.get("SVM_RANK_LEARN")
    if given:
        path = Path(given).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path, f"svm_rank: SVM_RANK_LEARN={path}"
        return None, f"svm_rank skipped: SVM_RANK_LEARN={given} is not an executable file"
    src = os.environ.get("SVM_RANK_SRC")
    subfolder, prepare = "", None
    if src:
        source = Path(src).expanduser()
        if not source.exists():
            return None, f"svm_rank skipped: SVM_RANK_SRC={src} does not exist"
    elif SVM_RANK_MIRROR.exists():
        source, subfolder, prepare = SVM_RANK_MIRROR, SVM_RANK_MIRROR_FOLDER, _standalone_svm_rank
    else:
        return None, ("svm_rank skipped: set SVM_RANK_LEARN (path to svm_rank_learn) or "
                      "SVM_RANK_SRC (svm_rank.tar.gz or its folder), or fetch "
                      "RSL-NEU/person-reid-benchmark, to time it")
    try:
        # -fcommon: svm_light/svm_struct define shared globals in headers, which GCC >= 10
        # (-fno-common by default) refuses to link; it changes no code generation flag.
        paths = build("svm_rank", source,
                      ["svm_rank_learn", "CC=gcc -fcommon", "LD=gcc -fcommon"],
                      ["svm_rank_learn"], force=force, subfolder=subfolder, prepare=prepare)
    except (RuntimeError, ValueError, OSError, subprocess.CalledProcessError) as exc:
        return None, f"svm_rank skipped: {exc}"
    path = paths["svm_rank_learn"]
    return path, f"svm_rank built from {_source_id(source, subfolder)}: {path}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args()
    print(liblinear_ranksvm(force=args.force)[1])
    print(svm_rank_learn(force=args.force)[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
