"""Reading SVMlight/LETOR files: cvxrank's reader cold and from its cache, against
scikit-learn's ``load_svmlight_file``.

The script writes (once; they are reused) synthetic files in ``benchmarks/data/``
(git-ignored): 10^5 and 10^6 documents x 46 dense features (values with 6 decimals as in
LETOR's ``QueryLevelNorm`` files, grades 0-4, 50-150 documents per query) and one sparse file
(2 x 10^5 documents, 30 of 10,000 features each). Each reader then runs in a fresh process,
one after the other, ``--repeat`` times, and the script prints medians of:

* ``read s``: the read inside the process (imports that the read makes lazily, such as
  numba's, included; the module imports before it are not);
* ``process s`` and ``CPU s``: the whole process (interpreter, imports, read), wall-clock and
  user + system;
* ``peak/arrays``: the peak resident memory of the process (``VmHWM``) minus its resident
  memory just before the read, over the bytes of the arrays read (X, y, qid and, for
  cvxrank, the line numbers). The peak includes what the read loads (the kernel compiled
  ahead of time: about 1 MB; with ``CVXRANK_AOT=0``, numba: about 110 MB) and, for a read
  from the cache, the mapped pages of the file once touched.

The readers: cvxrank cold (``CVXRANK_READ_CACHE=0``: the compiled parser on these sizes,
one pass over the text), the same with its one-pass read off (``two passes``: pass 1 counts,
pass 2 fills arrays of the exact sizes, as before the one-pass read), cvxrank's first read
with the cache on (the parse and the writing of the entry, one run), cvxrank from its cache
(a temporary ``CVXRANK_CACHE_DIR``, filled by that first read), scikit-learn
(``query_id=True``), cvxrank's text path (numpy, the 10^5 file only), and the floor ``import
numpy, scipy.sparse``. With ``LIBLINEAR_RANKSVM_TRAIN`` set to LIBLINEAR's
ranksvm ``train`` binary, ``train -s 8 -e 1e30 FILE MODEL`` is timed too (a whole process: its
read and a single-iteration solve).

``--crossover`` instead times cvxrank's text path against the compiled one, each in fresh
processes, on prefixes of the 10^5 file of 2-48 MB: where the compiled parser (import of
numba and loading of its kernel included) starts to pay
(:data:`cvxrank.data.svmlight.COMPILED_MIN_BYTES`).

Usage::

    .venv/bin/python benchmarks/bench_reader.py [--repeat 3] [--sizes 100000 1000000]
    .venv/bin/python benchmarks/bench_reader.py --crossover
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import add_common_args, markdown_table, print_machine, verdict

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"

#: What a child process runs: prints a JSON line with the read time and memory.
CHILD = r"""
import json, os, sys, time
import numpy as np
import scipy.sparse as sp
mode, path = sys.argv[1], sys.argv[2]
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if mode == "sklearn":
    from sklearn.datasets import load_svmlight_file
    before = rss(); start = time.perf_counter()
    X, y, qid = load_svmlight_file(path, query_id=True)
    arrays = [X.data, X.indices, X.indptr, y, qid]
elif mode == "floor":
    before = rss(); start = time.perf_counter(); arrays = []
elif mode == "kernel":
    from cvxrank.data import svmlight_compiled
    before = rss(); start = time.perf_counter(); arrays = []
    svmlight_compiled.compile_kernels()
else:
    import cvxrank.data.svmlight as svmlight
    if mode == "text":
        svmlight.COMPILED_MIN_BYTES = svmlight.AHEAD_OF_TIME_MIN_BYTES = 2**62
    elif mode == "twopass":
        from cvxrank.data import svmlight_compiled
        svmlight_compiled._read_one_pass = lambda *args, **kwargs: None
    elif mode == "compiled":
        svmlight.COMPILED_MIN_BYTES = svmlight.AHEAD_OF_TIME_MIN_BYTES = 0
    before = rss(); start = time.perf_counter()
    data = svmlight.read_svmlight(path, cache=None if mode in ("cold", "cached") else False)
    X = data.X
    arrays = ([X] if not sp.issparse(X) else [X.data, X.indices, X.indptr]) + [
        data.y, data.qid, data.line]
    if mode == "cached":
        float(np.asarray(X.sum()))  # touch every page of the memory map
elapsed = time.perf_counter() - start
with open("/proc/self/status") as fh:  # the peak of this image (ru_maxrss survives exec)
    peak = next(int(x.split()[1]) * 1024 for x in fh if x.startswith("VmHWM:"))
print(json.dumps({"read": elapsed, "bytes": sum(a.nbytes for a in arrays),
                  "extra": max(peak, rss()) - before}))
"""


def write_dense(path: Path, n: int, d: int, seed: int = 0) -> None:
    """``n`` documents x ``d`` features, all written (6 decimals, 20 % of them zero)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(50, 151, size=n // 50 + 1)
    qid = np.repeat(np.arange(1, sizes.size + 1), sizes)[:n]
    grade = rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    prefixes = [f"{j}:".encode() for j in range(1, d + 1)]
    template = b" ".join(p + b"0.000000" for p in prefixes) + b"\n"
    starts, offset = [], 0
    for p in prefixes:
        starts.append(offset + len(p) + 2)  # the first decimal
        offset += len(p) + 9
    row = np.frombuffer(template, dtype=np.uint8)
    with open(path, "wb") as fh:
        for lo in range(0, n, 50_000):
            hi = min(n, lo + 50_000)
            values = rng.integers(0, 10**6, size=(hi - lo, d))
            values[rng.random(values.shape) < 0.2] = 0
            body = np.tile(row, (hi - lo, 1))
            for j, s in enumerate(starts):
                for k in range(6):
                    body[:, s + k] = 48 + (values[:, j] // 10 ** (5 - k)) % 10
            width = row.size
            text = body.tobytes()
            fh.write(b"".join(
                f"{g} qid:{q} ".encode() + text[i * width:(i + 1) * width]
                for i, (g, q) in enumerate(zip(grade[lo:hi].tolist(), qid[lo:hi].tolist(),
                                               strict=True))))


def write_sparse(path: Path, n: int, d: int, k: int, seed: int = 1) -> None:
    """``n`` documents with ``k`` of ``d`` features each (6 decimals)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(50, 151, size=n // 50 + 1)
    qid = np.repeat(np.arange(1, sizes.size + 1), sizes)[:n]
    grade = rng.integers(0, 5, size=n)
    with open(path, "w", encoding="ascii") as fh:
        for i in range(n):
            cols = np.sort(rng.choice(d, size=k, replace=False)) + 1
            vals = rng.integers(1, 10**6, size=k)
            feats = " ".join(f"{c}:0.{v:06d}" for c, v in zip(cols.tolist(), vals.tolist(),
                                                                strict=True))
            fh.write(f"{grade[i]} qid:{qid[i]} {feats}\n")


def data_files(sizes: list[int]) -> list[Path]:
    """The benchmark files (written when missing)."""
    DATA.mkdir(exist_ok=True)
    files = []
    for n in sizes:
        path = DATA / f"dense_{n}x46.txt"
        if not path.exists():
            print(f"writing {path} ...", flush=True)
            write_dense(path.with_suffix(".tmp"), n, 46)
            path.with_suffix(".tmp").rename(path)
        files.append(path)
    path = DATA / "sparse_200000x10000_30.txt"
    if not path.exists():
        print(f"writing {path} ...", flush=True)
        write_sparse(path.with_suffix(".tmp"), 200_000, 10_000, 30)
        path.with_suffix(".tmp").rename(path)
    files.append(path)
    return files


def child(mode: str, path: Path, env: dict[str, str], timeout: float | None = None
          ) -> dict[str, float]:
    """Run one read in a fresh process: its own measures, plus wall and CPU seconds (all
    NaN but ``process``, the timeout, when it runs longer than ``timeout`` seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, **env}, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        nan = float("nan")
        return {"read": nan, "bytes": nan, "extra": nan, "process": float(timeout or 0),
                "cpu": nan, "timeout": 1.0}
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process"] = wall
    out["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


def liblinear(path: Path, binary: str) -> dict[str, float]:
    """LIBLINEAR ranksvm's ``train`` with a stopping tolerance that ends at once."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([binary, "-s", "8", "-e", "1e30", str(path), f"{tmp}/model"],
                       capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"read": float("nan"), "process": wall, "cpu": cpu, "extra": float("nan"),
            "bytes": float("nan")}


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def compare(files: list[Path], repeat: int, timeout: float) -> None:
    binary = os.environ.get("LIBLINEAR_RANKSVM_TRAIN")
    for path in files:
        size = path.stat().st_size
        print(f"\n## {path.name} ({size / 2**20:,.0f} MiB)\n", flush=True)
        results: dict[str, dict[str, float]] = {}
        with tempfile.TemporaryDirectory() as cache:
            env_cold = {"CVXRANK_READ_CACHE": "0"}
            env_cache = {"CVXRANK_CACHE_DIR": cache}
            # fills the cache
            results["cvxrank first read (entry written; 1 run)"] = child("cold", path, env_cache)
            modes = [("floor: import numpy, scipy.sparse", "floor", env_cold),
                     ("kernel loaded (part of cold)", "kernel", env_cold),
                     ("cvxrank cold (no cache)", "cold", env_cold),
                     ("cvxrank cold, two passes (one-pass read off)", "twopass", env_cold),
                     ("cvxrank from its cache", "cached", env_cache),
                     ("scikit-learn load_svmlight_file", "sklearn", env_cold)]
            if size < 100 * 2**20:
                modes.append(("cvxrank text path (numpy)", "text", env_cold))
            for label, mode, env in modes:
                runs = [child(mode, path, env, timeout)]
                if "timeout" not in runs[0]:
                    runs += [child(mode, path, env) for _ in range(repeat - 1)]
                results[label] = median(runs)
            if binary:
                results["LIBLINEAR ranksvm train -e 1e30"] = median(
                    [liblinear(path, binary) for _ in range(repeat)])
        rows = []
        for label, r in results.items():
            if r.get("timeout"):
                rows.append([label, f"> {timeout:.0f} (stopped)", "-", "-", "-", "-", "-"])
                continue
            ratio = r["extra"] / r["bytes"] if r["bytes"] == r["bytes"] and r["bytes"] else None
            rows.append([label, f"{r['read']:.3f}", f"{r['process']:.2f}", f"{r['cpu']:.2f}",
                         f"{r['bytes'] / 2**20:,.0f}" if r["bytes"] == r["bytes"] else "-",
                         f"{r['extra'] / 2**20:,.0f}" if r["extra"] == r["extra"] else "-",
                         f"{ratio:.2f}" if ratio is not None else "-"])
        print(markdown_table(["reader", "read s", "process s", "CPU s", "arrays MiB",
                              "peak - before MiB", "peak/arrays"], rows))
        cold = results["cvxrank cold (no cache)"]
        cached = results["cvxrank from its cache"]
        sk = results["scikit-learn load_svmlight_file"]
        if sk.get("timeout"):
            print(f"\ncold read vs scikit-learn: more than {timeout / cold['read']:.0f}x "
                  "faster -> MET")
        else:
            print(f"\ncold read vs scikit-learn: {sk['read'] / cold['read']:.2f}x faster "
                  f"(whole process {sk['process'] / cold['process']:.2f}x) -> "
                  f"{verdict(cold['read'] <= sk['read'])}")
        print(f"cached read vs cold read: {cold['read'] / cached['read']:.1f}x faster")
        fixed = results["kernel loaded (part of cold)"]["extra"]
        print(f"cold peak/arrays: {cold['extra'] / cold['bytes']:.2f}; without loading the kernel "
              f"({fixed / 2**20:.0f} MiB): {(cold['extra'] - fixed) / cold['bytes']:.2f} "
              f"(target <= 1.5) -> {verdict(cold['extra'] - fixed <= 1.5 * cold['bytes'])}")
        if binary:
            lib = results["LIBLINEAR ranksvm train -e 1e30"]
            print(f"cached read / LIBLINEAR's whole process: "
                  f"{cached['read'] / lib['process']:.3f} (target <= 0.1) -> "
                  f"{verdict(cached['read'] <= 0.1 * lib['process'])}")


def crossover(files: list[Path], repeat: int) -> None:
    source = files[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mib in (2, 4, 8, 16, 24, 32, 48):
            path = Path(tmp) / f"prefix_{mib}.txt"
            with open(source, "rb") as fh:
                text = fh.read(mib * 2**20)
            path.write_bytes(text[: text.rfind(b"\n") + 1])
            env = {"CVXRANK_READ_CACHE": "0"}
            text_t = median([child("text", path, env) for _ in range(repeat)])
            comp_t = median([child("compiled", path, env) for _ in range(repeat)])
            rows.append([mib, f"{text_t['read']:.3f}", f"{comp_t['read']:.3f}",
                         f"{text_t['extra'] / 2**20:,.0f}", f"{comp_t['extra'] / 2**20:,.0f}"])
            print(rows[-1], flush=True)
    print(markdown_table(["MiB", "text path s", "compiled s (numba import included)",
                          "text peak MiB", "compiled peak MiB"], rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--crossover", action="store_true")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds after which a reader's process is stopped (scikit-learn's "
                        "reader takes minutes on the 10^6-document file here)")
    args = parser.parse_args()
    if args.blas_threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    print_machine()
    files = data_files(args.sizes)
    # compile (or load) the kernel once, so that no timed process compiles it
    subprocess.run([sys.executable, "-c", "from cvxrank.data.svmlight_compiled import "
                    "compile_kernels; compile_kernels()"], check=True, cwd=ROOT)
    if args.crossover:
        crossover(files, args.repeat)
    else:
        compare(files, args.repeat, args.timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
