"""Synthetic LETOR-like SVMlight files for the scale benchmarks, written fast and in chunks.

A file has ``n`` documents with ``d`` dense features in [0, 1] written with six decimals like
LETOR's QueryLevelNorm files (``0.079442``; about six significant digits), queries of about
``docs_per_query`` documents (uniform in [0.5, 1.5] times it; the last query takes what is
left), and grades 0-4 from a hidden linear model plus noise:

* each query has its own feature offsets (a query-level shift, as real queries differ), each
  document uniform noise around them;
* the grade of a document is its score ``x . w_hidden`` (standardized) plus Gaussian noise
  (standard deviation ``noise``), cut at fixed thresholds so that the grades 0, 1, 2, 3, 4
  have about LETOR-like proportions (:data:`GRADE_SHARES`: many zeros, few fours).

The writer builds each chunk of lines as one byte matrix with numpy (every line has the same
width: the query ids are numbered from a power of ten so they all have the same number of
digits, every value has eight characters) and writes it in one call: no Python loop per value
or per line, and memory bounded by the chunk (``chunk`` documents; about 60 MB at d = 136).

Usage as a module: :func:`ensure_file` (cached by name in ``benchmarks/data/``) or
:func:`write_file`; as a script::

    .venv/bin/python benchmarks/_synthetic_files.py N D [--out FILE] [--seed S]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"

#: Shares of the grades 0..4 (LETOR/MSLR-like: most documents irrelevant).
GRADE_SHARES = (0.50, 0.27, 0.15, 0.06, 0.02)

#: Decimals of a feature value (LETOR writes six).
DECIMALS = 6


def file_name(n: int, d: int, *, docs_per_query: int = 100, seed: int = 0,
              part: str = "train") -> str:
    """The cache name of a synthetic file."""
    return f"synthetic_n{n}_d{d}_q{docs_per_query}_s{seed}_{part}.txt"


def bytes_per_line(d: int, n_queries_max: int) -> int:
    """Width in bytes of every line of a file (label, qid, d values, newline)."""
    qid_digits = len(str(10 ** len(str(n_queries_max)) + n_queries_max))
    features = sum(1 + len(str(j)) + 1 + (2 + DECIMALS) for j in range(1, d + 1))
    return 1 + 5 + qid_digits + features + 1


def estimate_bytes(n: int, d: int, docs_per_query: int = 100) -> int:
    """Size in bytes of a file of ``n`` documents and ``d`` features."""
    return n * bytes_per_line(d, 2 * n // docs_per_query + 1)


def _query_sizes(rng: np.random.Generator, n: int, docs_per_query: int) -> np.ndarray:
    """Query sizes summing to ``n``, uniform in [0.5, 1.5] x docs_per_query."""
    lo, hi = max(1, docs_per_query // 2), max(1, (3 * docs_per_query) // 2)
    sizes = rng.integers(lo, hi + 1, size=n // lo + 2)
    ends = np.cumsum(sizes)
    k = int(np.searchsorted(ends, n))  # the query containing document n
    sizes = sizes[:k + 1].copy()
    sizes[k] = n - (int(ends[k - 1]) if k else 0)
    return sizes[sizes > 0]


class _LineTemplate:
    """The fixed-width byte layout of a line and where its variable characters go."""

    def __init__(self, d: int, qid_digits: int) -> None:
        parts = ["0", " qid:", "0" * qid_digits]
        value_starts = []
        pos = 1 + 5 + qid_digits
        for j in range(1, d + 1):
            head = f" {j}:"
            parts.append(head)
            pos += len(head)
            value_starts.append(pos)
            parts.append("0." + "0" * DECIMALS)
            pos += 2 + DECIMALS
        parts.append("\n")
        text = "".join(parts)
        self.row = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        self.width = self.row.size
        self.qid_start = 6
        self.qid_digits = qid_digits
        self.value_starts = np.asarray(value_starts)

    def render(self, labels: np.ndarray, qids: np.ndarray, X: np.ndarray) -> bytes:
        """The lines of a chunk: grade digit, qid digits, values with DECIMALS decimals."""
        m, d = X.shape
        out = np.empty((m, self.width), dtype=np.uint8)
        out[:] = self.row
        out[:, 0] = ord("0") + labels.astype(np.uint8)
        q = qids.astype(np.int64)
        for k in range(self.qid_digits - 1, -1, -1):
            out[:, self.qid_start + k] = ord("0") + (q % 10).astype(np.uint8)
            q //= 10
        # fixed point: integer part (0 or 1) and DECIMALS digits
        fixed = np.rint(np.clip(X, 0.0, 1.0) * 10 ** DECIMALS).astype(np.int64)
        starts = self.value_starts
        out[:, starts] = ord("0") + (fixed // 10 ** DECIMALS).astype(np.uint8)
        rest = fixed % 10 ** DECIMALS
        for k in range(DECIMALS - 1, -1, -1):
            out[:, starts + 2 + k] = ord("0") + (rest % 10).astype(np.uint8)
            rest //= 10
        return out.tobytes()


def write_file(path: str | os.PathLike[str], n: int, d: int, *, docs_per_query: int = 100,
               seed: int = 0, noise: float = 1.0, chunk: int = 50_000,
               verbose: bool = False) -> dict:
    """Write a synthetic ranking file of ``n`` documents x ``d`` features; its description.

    Deterministic in (n, d, docs_per_query, seed, noise, chunk). Written to a temporary name
    and renamed at the end, so an interrupted run leaves no partial file under ``path``.
    """
    path = Path(path)
    rng = np.random.default_rng([seed, n, d, docs_per_query])
    w_hidden = rng.standard_normal(d)
    w_hidden[rng.random(d) < 0.3] = 0.0  # some features carry no signal
    sizes = _query_sizes(rng, n, docs_per_query)
    n_queries = sizes.size
    first_qid = 10 ** len(str(n_queries))  # every qid has the same number of digits
    template = _LineTemplate(d, len(str(first_qid + n_queries)))
    # standardization of x . w for x = offset (U(0.2, 0.8)) + noise (U(-0.2, 0.2)), clipped
    score_sd = float(np.linalg.norm(w_hidden)) * math.sqrt(0.6 ** 2 / 12 + 0.4 ** 2 / 12)
    score_mean = 0.5 * float(w_hidden.sum())
    total_sd = math.sqrt(1.0 + noise ** 2)
    from statistics import NormalDist

    cuts = np.array([NormalDist(0.0, total_sd).inv_cdf(c)
                     for c in np.cumsum(GRADE_SHARES)[:-1]])
    tmp = path.with_name(path.name + ".part")
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    grades = np.zeros(5, dtype=np.int64)
    query_of_doc = np.repeat(np.arange(n_queries), sizes)
    with open(tmp, "wb") as fh:
        offsets_q = rng.uniform(0.2, 0.8, size=(n_queries, d))
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            q = query_of_doc[lo:hi]
            X = offsets_q[q] + rng.uniform(-0.2, 0.2, size=(hi - lo, d))
            np.clip(X, 0.0, 1.0, out=X)
            z = (X @ w_hidden - score_mean) / max(score_sd, 1e-12)
            z += noise * rng.standard_normal(hi - lo)
            labels = np.searchsorted(cuts, z)
            grades += np.bincount(labels, minlength=5)
            fh.write(template.render(labels, first_qid + q, X))
            if verbose and (lo // chunk) % 20 == 0:
                print(f"  {path.name}: {hi:,} / {n:,} lines", flush=True)
    os.replace(tmp, path)
    return {"path": str(path), "n": n, "d": d, "queries": int(n_queries),
            "bytes": path.stat().st_size, "seconds": time.perf_counter() - started,
            "grades": grades.tolist()}


def ensure_file(n: int, d: int, *, docs_per_query: int = 100, seed: int = 0,
                part: str = "train", folder: Path = DATA, verbose: bool = True) -> Path:
    """The cached file of these parameters in ``folder`` (written first if missing).

    ``part`` only changes the seed (a test file is another draw of the same hidden model
    shape, not the same documents).
    """
    path = folder / file_name(n, d, docs_per_query=docs_per_query, seed=seed, part=part)
    if not path.is_file():
        part_seed = seed if part == "train" else seed + 1_000_003
        info = write_file(path, n, d, docs_per_query=docs_per_query, seed=part_seed,
                          verbose=verbose and n >= 10 ** 6)
        if verbose:
            print(f"wrote {path.name}: {info['bytes'] / 1e6:,.0f} MB, {info['queries']:,} "
                  f"queries, grades {info['grades']}, {info['seconds']:.1f} s", flush=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("d", type=int)
    parser.add_argument("--docs-per-query", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.out:
        info = write_file(args.out, args.n, args.d, docs_per_query=args.docs_per_query,
                          seed=args.seed, verbose=True)
        print(info)
    else:
        print(ensure_file(args.n, args.d, docs_per_query=args.docs_per_query, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
