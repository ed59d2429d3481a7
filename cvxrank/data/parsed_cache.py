"""A disk cache of parsed data files: a second read of an unchanged file is a memory map.

:func:`cvxrank.data.svmlight.read_svmlight` stores the arrays it parsed from a large file
(:data:`CACHE_MIN_BYTES`) as ``.npy`` files in one directory per entry under
:func:`cache_root`, and loads them back with ``np.load(mmap_mode="r")``: the pages are read
when used, from the page cache.

An entry is found by a key (:func:`entry_key`) that hashes the parser's
:data:`FORMAT_VERSION`, the reader's options, the file's resolved path, size and
modification time, and its **whole content** (:func:`content_digest`: a CRC-32 of every
byte, about 2.7 GB/s here, and a blake2b of the first and last MiB and
:data:`SAMPLE_WINDOWS` evenly spaced windows of 64 KiB): a file edited anywhere is parsed
again, whatever its size and modification time. When an entry is loaded its arrays are
checked against its metadata (dtype, shape), its small arrays (grades, query ids, line
numbers, the sparse structure) against the checksums stored with them, and the data they
make against the reader's rules (grades in range, every query's lines contiguous): an entry
that fails (truncated, corrupt, edited, of another layout) is discarded with a
:class:`~cvxrank.errors.CacheWarning` and the file parsed again. The feature values are not
checksummed (that would read them whole, which a memory map avoids). Entries are written
under a temporary name and renamed into place; a cache directory that cannot be written
means no cache, with one warning per directory and process.

``CVXRANK_READ_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.errors import CacheWarning
from cvxrank.utils.output_files import usable_cache_dir

#: Version of the parsed layout and of the parser's results; part of every key.
FORMAT_VERSION = 2

#: Smallest file (bytes on disk) cached by default: below it parsing costs less than the
#: cache's own work (hashing the sample, writing the entry) is worth.
CACHE_MIN_BYTES = 16 * 2**20

#: The cache directory of cvxrank (:data:`cvxrank.certificates.reference.CACHE_DIR_VARIABLE`, named
#: again here so that reading a file does not import cvxpy with that module).
CACHE_DIR_VARIABLE = "CVXRANK_CACHE_DIR"

#: Set to ``0`` to turn the cache off.
ENABLE_VARIABLE = "CVXRANK_READ_CACHE"

#: Evenly spaced 64 KiB windows hashed besides the first and the last MiB of a file.
SAMPLE_WINDOWS = 16

#: The arrays of an entry whose checksums are stored and verified on load (all but the
#: feature values).
CHECKSUMMED = ("y", "qid", "line", "indices", "indptr", "comment_offsets", "comment_present")

_EDGE = 2**20
_WINDOW = 2**16
_CHUNK = 2**23
_META = "meta.json"

def cache_root() -> Path:
    """``$CVXRANK_CACHE_DIR/parsed``, else ``$XDG_CACHE_HOME/cvxrank/parsed``, else
    ``~/.cache/cvxrank/parsed``."""
    base = os.environ.get(CACHE_DIR_VARIABLE, "")
    if base:
        return Path(base) / "parsed"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "cvxrank" / "parsed"


def wanted(cache: bool | None, size: int) -> bool:
    """Whether to use the cache for a file of ``size`` bytes: never when
    ``CVXRANK_READ_CACHE=0``; else ``cache`` when given, else when the file has at least
    :data:`CACHE_MIN_BYTES`."""
    if os.environ.get(ENABLE_VARIABLE, "").strip() == "0":
        return False
    return cache if cache is not None else size >= CACHE_MIN_BYTES


def content_digest(path: str, size: int) -> bytes:
    """A digest of the whole file: the CRC-32 of every byte (read in 8 MiB chunks) and the
    blake2b digest of its first and last MiB and evenly spaced windows."""
    h = hashlib.blake2b(digest_size=32)
    crc = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
        if size <= 2 * _EDGE + SAMPLE_WINDOWS * _WINDOW:
            fh.seek(0)
            h.update(fh.read())
        else:
            offsets = [0, size - _EDGE]
            step = (size - 2 * _EDGE) // (SAMPLE_WINDOWS + 1)
            windows = [_EDGE + step * (k + 1) for k in range(SAMPLE_WINDOWS)]
            for offset, length in ([(o, _EDGE) for o in offsets]
                                   + [(w, _WINDOW) for w in windows]):
                fh.seek(offset)
                h.update(fh.read(length))
    return crc.to_bytes(4, "little") + h.digest()


def checksum(array: np.ndarray) -> int:
    """The CRC-32 of an array's bytes (the small arrays of an entry)."""
    return zlib.crc32(np.ascontiguousarray(array).view(np.uint8))


def entry_key(path: str, options: dict[str, Any]) -> str:
    """The name of the entry of ``path`` read with ``options``: a prefix that depends on the
    resolved path only (entries of older versions of the file share it) and a hash of
    everything else."""
    resolved = os.path.realpath(path)
    st = os.stat(resolved)
    h = hashlib.blake2b(digest_size=20)
    h.update(json.dumps([FORMAT_VERSION, sorted(options.items()), resolved, st.st_size,
                         st.st_mtime_ns]).encode())
    h.update(content_digest(resolved, st.st_size))
    return f"{_path_prefix(resolved)}-{h.hexdigest()}"


def _path_prefix(resolved: str) -> str:
    return hashlib.blake2b(resolved.encode(), digest_size=8).hexdigest()


def _usable(root: Path) -> Path | None:
    """``root`` if it is (or can be made) a writable directory; else None, with one
    :class:`CacheWarning` per directory and process."""
    return usable_cache_dir(root, "parsed-file cache",
                            f"reading without it (set {ENABLE_VARIABLE}=0 to silence this)")


def load(key: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """The arrays (memory-mapped, read-only) and the metadata of entry ``key``; None when
    there is no entry, or when it cannot be read whole or fails its checksums (then it is
    discarded, with a :class:`CacheWarning`)."""
    entry = cache_root() / key
    meta_path = entry / _META
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"layout version {meta.get('version')!r}")
        arrays = {}
        for name, (dtype, shape) in meta["arrays"].items():
            file = entry / f"{name}.npy"
            array = np.load(file, mmap_mode="r" if np.prod(shape) > 0 else None,
                            allow_pickle=False)
            if array.dtype != np.dtype(dtype) or list(array.shape) != shape:
                raise ValueError(f"{name}.npy holds {array.dtype} {array.shape}, expected "
                                 f"{dtype} {tuple(shape)}")
            if name in CHECKSUMMED and checksum(array) != meta["checksums"][name]:
                raise ValueError(f"{name}.npy does not match its checksum")
            arrays[name] = array
        info = meta["meta"]
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        discard(key, exc)
        return None
    return arrays, info


def discard(key: str, reason: BaseException) -> None:
    """Remove entry ``key``, whose arrays could not be used, with a :class:`CacheWarning`."""
    entry = cache_root() / key
    warnings.warn(f"parsed-file cache entry {entry} is unreadable ({reason}); parsing the "
                  "file again", CacheWarning, stacklevel=3)
    shutil.rmtree(entry, ignore_errors=True)


def store(key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write entry ``key`` (atomically: a temporary directory renamed into place) and remove
    the entries of older versions of the same file; an error leaves no entry, with a
    :class:`CacheWarning`."""
    root = _usable(cache_root())
    if root is None:
        return
    final = root / key
    tmp = root / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.mkdir()
        layout, checksums = {}, {}
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
            layout[name] = [array.dtype.str, list(array.shape)]
            if name in CHECKSUMMED:
                checksums[name] = checksum(array)
        (tmp / _META).write_text(json.dumps({"version": FORMAT_VERSION, "arrays": layout,
                                             "checksums": checksums, "meta": meta}),
                                 encoding="utf-8")
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        warnings.warn(f"parsed-file cache {root}: could not write an entry ({exc})",
                      CacheWarning, stacklevel=3)
        return
    prefix = key.split("-", 1)[0] + "-"
    for other in root.glob(prefix + "*"):
        if other.name != key:
            shutil.rmtree(other, ignore_errors=True)
