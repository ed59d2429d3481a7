"""Output files: nothing replaced that cvxrank did not write, every file renamed into place whole.

Every command that writes files writes them through this module:

* :func:`write_text_atomically` (through :func:`replacing`) writes one file: a temporary
  file beside it, renamed onto it once complete (``cvxrank fit --save-model``,
  ``predict --out`` and ``--trec-run``, the manifest); a symbolic link's file is the one
  replaced, and a path that is no regular file (a device, a FIFO) is written through, never
  replaced; a directory is refused as such.
* :class:`OutputDir` is a folder a command writes several files into (``--out``,
  ``verify --figures``). It keeps the manifest :data:`MANIFEST`, the names of the files
  cvxrank wrote there, and replaces only those: an existing file that the manifest does not
  list is refused (``--force`` replaces it), and an input of the command is refused even
  with ``--force``. The files are written into a staging folder inside the folder and
  renamed into place only once all of them are written; an error or Ctrl-C leaves the folder
  as it was.

A refusal is a :class:`~cvxrank.errors.UsageError`: exit code 2 and one line on stderr.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from cvxrank.errors import CacheWarning, DataFormatError, UsageError

#: The manifest of an output folder: the names of the files cvxrank wrote there (JSON).
MANIFEST = ".cvxrank-files.json"

#: Name prefix of the staging folder (inside the output folder, on the same file system).
STAGING_PREFIX = ".cvxrank-staging-"

#: Names listed in a refusal before "...".
MAX_LISTED = 5

PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def replacing(path: PathLike) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto ``path`` when the block ends normally.

    The block writes the temporary file; on an exception (Ctrl-C included) it is removed
    and ``path`` is left as it was. The rename (:func:`os.replace`) is atomic: a reader sees
    the old file or the new one, never part of one. A symbolic link stays a link: the file
    it names is the one replaced. A path that is not a regular file (a device such as
    ``/dev/null``, a FIFO, ``/dev/stdout``) is never replaced: the block writes through
    it, as named.

    Raises
    ------
    UsageError
        For a directory.
    """
    given = Path(path)
    refuse_directory(given)
    if given.exists() and not given.is_file():  # a device, a FIFO: written through
        yield given
        return
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomically(path: PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replacing`."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def replaced_input(target: PathLike, inputs: Iterable[PathLike | None], *,
                   listed: bool = False) -> str | None:
    """The input that writing ``target`` would replace, described; None when there is none.

    Parameters
    ----------
    target : path-like
        The file to be written.
    inputs : iterable of path-like or None
        The command's input files and folders (None and missing paths are skipped).
    listed : bool
        Whether cvxrank wrote ``target`` itself (its folder's manifest lists it).

    Returns
    -------
    str or None
        ``"the input file X"`` when ``target`` is the input file X (the same file, however
        named: links included); ``"in the input folder X"`` when ``target`` is an existing
        file, not ``listed``, inside the input folder X (which the command may read); None
        otherwise.
    """
    path = Path(target)
    if not path.exists():
        return None
    for given in inputs:
        if given is None or not os.path.exists(given):
            continue
        if os.path.samefile(path, given):
            return f"the input file {os.fspath(given)}"
        if not listed and os.path.isdir(given) and path.resolve().is_relative_to(
                Path(given).resolve()):
            return f"in the input folder {os.fspath(given)}"
    return None


def refuse_directory(path: PathLike, option: str | None = None) -> None:
    """Refuse an output file ``path`` that is a directory, or whose folder does not exist
    (one line, naming ``option`` and the path as given, never a temporary file).

    Raises
    ------
    UsageError
    """
    named = f"{option} {os.fspath(path)}" if option else os.fspath(path)
    if os.path.isdir(path):
        raise UsageError(f"{named}: is a directory; name a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{named}: {folder} is not an existing folder")


def refuse_input(path: PathLike, inputs: Iterable[PathLike | None], *, option: str) -> None:
    """Refuse an output file ``path`` that is a directory or would replace an input
    (:func:`replaced_input`).

    Raises
    ------
    UsageError
        Naming the option, the path and the input.
    """
    refuse_directory(path, option)
    found = replaced_input(path, inputs)
    if found is not None:
        raise UsageError(f"{option} {os.fspath(path)}: that is {found}; choose another path")


def read_manifest(path: PathLike) -> frozenset[str]:
    """The file names a manifest lists (none when there is no manifest).

    Raises
    ------
    DataFormatError
        When the file is not a manifest cvxrank wrote (``{"files": [names]}``).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return frozenset()
    try:
        files = json.loads(text)["files"]
        valid = isinstance(files, list) and all(isinstance(name, str) for name in files)
    except (ValueError, TypeError, KeyError):
        valid = False
    if not valid:
        raise DataFormatError(os.fspath(path), None, "not a cvxrank manifest (expected "
                              '{"files": [names]}); remove it to start the folder afresh')
    return frozenset(files)


def _listed(names: list[str]) -> str:
    """``a, b, c`` (at most :data:`MAX_LISTED` names, then how many more)."""
    more = len(names) - MAX_LISTED
    return ", ".join(names[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


class OutputDir:
    """A folder that a command writes its files into, replacing only the files it owns.

    Parameters
    ----------
    path : path-like
        The folder; created (with its parents) at once, so that a bad path fails before a
        long run.
    force : bool
        Replace existing files that cvxrank did not write (``--force``).
    inputs : iterable of path-like or None
        The command's input files and folders: never replaced, even with ``force``
        (:func:`replaced_input`).
    option : str
        The option that named the folder, for the messages (``--out``, ``--figures``).
    adopt : callable, optional
        Called with an existing file that the manifest does not list (the command writes a
        file of that name): True when the file is recognizably one that cvxrank wrote before
        it kept manifests, to be replaced like a listed one.

    Raises
    ------
    UsageError
        When ``path`` exists and is not a folder.
    OSError
        When the folder cannot be created or written to.
    DataFormatError
        When its manifest is not one cvxrank wrote (:func:`read_manifest`).
    """

    def __init__(self, path: PathLike, *, force: bool = False,
                 inputs: Iterable[PathLike | None] = (), option: str = "--out",
                 adopt: Callable[[Path], bool] | None = None) -> None:
        self.path = Path(path)
        self.force = force
        self.inputs = tuple(p for p in inputs if p is not None)
        self.option = option
        self.adopt = adopt
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(f"{option} {self.path}: not a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(self.path))
        read_manifest(self.manifest)  # a malformed manifest fails now, not after the run

    @property
    def manifest(self) -> Path:
        """The folder's manifest file (:data:`MANIFEST`)."""
        return self.path / MANIFEST

    def check(self, names: Iterable[str]) -> None:
        """Refuse now if writing the files ``names`` would replace an input, or a file that
        cvxrank did not write (unless ``force``).

        Raises
        ------
        UsageError
            One line naming the folder, the files and what ``--force`` would do.
        """
        owned = read_manifest(self.manifest)
        inputs: dict[str, str] = {}
        folders: list[str] = []
        foreign: list[str] = []
        for name in sorted(set(names)):
            target = self.path / name
            found = replaced_input(target, self.inputs, listed=name in owned)
            if found is not None:
                inputs[name] = found
            elif target.is_dir():
                folders.append(name)
            elif target.exists() and name not in owned and not self.force and not (
                    self.adopt is not None and self.adopt(target)):
                foreign.append(name)
        where = f"{self.option} {self.path}"
        if inputs:
            name, found = next(iter(inputs.items()))
            raise UsageError(f"{where}: {name} is {found}; an input is never replaced, even "
                             "with --force; choose another folder")
        if folders:
            raise UsageError(f"{where}: {_listed(folders)} would replace a folder; choose "
                             "another folder")
        if foreign:
            them = "it" if len(foreign) == 1 else "them"
            raise UsageError(f"{where}: {_listed(foreign)} already "
                             f"{'exists' if len(foreign) == 1 else 'exist'} and cvxrank did "
                             f"not write {them} (not listed in {MANIFEST}); --force replaces "
                             f"{them}, or choose another folder")

    @contextlib.contextmanager
    def writing(self) -> Iterator[Path]:
        """A staging folder for the command's files, committed when the block ends normally.

        The block writes its files directly into the staging folder, under their final names
        (so that, e.g., matplotlib infers a figure's format from its suffix). At the end of
        the block they are checked (:meth:`check`: on a refusal nothing is renamed), the
        manifest is updated, then each file is renamed into the folder. The staging folder
        is removed in every case: an exception or Ctrl-C in the block leaves the folder as
        it was.
        """
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.path))
        try:
            yield staging
            self._commit(staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _commit(self, staging: Path) -> None:
        """Move the files of ``staging`` into the folder, after listing them in the manifest
        (an interruption between two renames leaves no file of cvxrank's unlisted; the names
        listed that no longer exist are dropped)."""
        names = sorted(p.name for p in staging.iterdir())
        self.check(names)
        kept = {n for n in read_manifest(self.manifest) if (self.path / n).exists()}
        document = {"written_by": "cvxrank",
                    "about": "the files cvxrank wrote in this folder; it replaces no other "
                    "file here without --force",
                    "files": sorted(kept | set(names))}
        write_text_atomically(self.manifest, json.dumps(document, indent=2) + "\n")
        for name in names:
            os.replace(staging / name, self.path / name)

    def final(self, staged: PathLike) -> Path:
        """Where the file ``staged`` (in the staging folder) is once committed."""
        return self.path / Path(staged).name


#: Cache directories found unusable in this process (each is warned about once).
_UNUSABLE_CACHES: set[str] = set()


def usable_cache_dir(path: str | os.PathLike[str], what: str, without: str) -> Path | None:
    """``path`` if it is (or can be made) a writable directory; else None, with one
    :class:`~cvxrank.errors.CacheWarning` per path and process: "``what`` ``path``: why;
    ``without``" (the reference cache and the parsed-file cache share this check).
    """
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if os.access(directory, os.W_OK | os.X_OK):
            return directory
        reason = "it is not writable"
    except OSError as exc:
        reason = exc.strerror or str(exc)
    if str(directory) not in _UNUSABLE_CACHES:
        _UNUSABLE_CACHES.add(str(directory))
        warnings.warn(f"{what} {directory}: {reason}; {without}", CacheWarning, stacklevel=4)
    return None
