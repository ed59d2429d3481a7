"""Scale runs: ``cvxrank fit`` (PRSVM+ and the 1-slack) and ``cvxrank evaluate`` as processes.

Synthetic LETOR-like data (:mod:`_synthetic_files`: dense features in [0, 1] with six
decimals, grades 0-4 from a hidden linear model plus noise), cached in the git-ignored
``benchmarks/data/``:

* a ladder at d = 46 (LETOR 4.0's width), ~100 documents per query: 10^5, 10^6 and 10^7
  documents (the exponent of time against n is fitted on it);
* MSLR-WEB30K's shape: 3.7 x 10^6 documents, 136 features, 31,000 queries (~119 documents
  per query), grades 0-4.

Each training file has a test file of a fifth of its size (another draw of the same kind).
Files are written in chunks of 50,000 lines (memory bounded, see :mod:`_synthetic_files`);
the script prints the disk they need and refuses to start when the free space is short
(10^7 x 46 is ~5.6 GB, 3.7 M x 136 ~6.6 GB, ~15 GB with the test files and the 10^6 rung).

For every size, as fresh processes (``run_process``: wall, CPU = user + system, peak RSS of
the child alone), ``--rounds`` times (medians):

1. **read**: ``python -c "read_svmlight(FILE, cache=False)"``: start-up, imports and a cold
   parse, what a first fit pays before its solver starts; a second read then writes the
   parsed-file cache (not timed), from which the fits below read (the JSON's ``read_time``);
2. **squared hinge**: ``cvxrank fit --method ranksvm --loss squared_hinge --C C --tol TOL
   (``--C``, or with ``--c-per-query c`` C = c / queries of each size, so that every rung of
   the ladder has the same conditioning, svm_rank's convention)
   --json --save-model M`` (PRSVM+); the JSON's ``time`` is the **solver clock** (set-up +
   Newton iterations, wall), ``setup_time`` its set-up, ``iterations`` the Newton steps;
3. **hinge**: the same with ``--loss hinge`` (the 1-slack cutting plane), ``--model-radius 0``
   (it stops at its tolerance, svm_rank's precision, as svm_rank does) and ``--time-budget``
   (a run that stops at its budget returns its last certified iterate, exit code 3: shown as
   ``time_budget``);
4. **evaluate**: ``cvxrank evaluate --data TEST --model M --json`` with the squared-hinge
   model (reading the test file, scoring, NDCG/P/MAP).

Then the exponent b of ``time ~ n^b`` by least squares on log-log (over the d = 46 ladder
sizes that ran), for the whole processes (CPU) and the solver clocks.

Usage::

    .venv/bin/python benchmarks/bench_scale.py --max-n 1e5          # smoke test, ~1 min
    .venv/bin/python benchmarks/bench_scale.py                       # all sizes (hours)
    .venv/bin/python benchmarks/bench_scale.py --sizes 1e5x46 1e6x46 --skip hinge
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import add_common_args, markdown_table, print_machine
from _process import CVXRANK, blas_env, run_process, warm_page_cache
from _synthetic_files import DATA, ensure_file, estimate_bytes, file_name

#: name -> (documents, features, documents per query); MSLR-WEB30K: 3,771,125 documents,
#: 31,531 queries, 136 features (all five folds), i.e. ~120 per query.
SIZES = {
    "1e5x46": (10 ** 5, 46, 100),
    "1e6x46": (10 ** 6, 46, 100),
    "1e7x46": (10 ** 7, 46, 100),
    "mslr": (3_700_000, 136, 119),
}

READ_CHILD = ("import sys\nfrom cvxrank.data import read_svmlight\n"
              "d = read_svmlight(sys.argv[1], cache=sys.argv[2] == 'cache')\n"
              "print(d.n_documents, d.n_features, d.n_queries)")


def parse_size(name: str) -> tuple[int, int, int]:
    if name in SIZES:
        return SIZES[name]
    n, d = name.lower().split("x")
    return int(float(n)), int(d), 100


def files_needed(sizes: list[str]) -> list[tuple[Path, int]]:
    """(path, bytes) of every file the sizes need and that is not there yet."""
    out = []
    for name in sizes:
        n, d, q = parse_size(name)
        for part, m in (("train", n), ("test", max(n // 5, 1000))):
            path = DATA / file_name(m, d, docs_per_query=q, part=part)
            if not path.is_file():
                out.append((path, estimate_bytes(m, d, q)))
    return out


def run_json(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> dict:
    proc = run_process(cmd, env=env, ok=ok)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {"stdout": proc.stdout[-500:]}
    return {"wall": proc.wall, "cpu": proc.cpu, "rss": proc.maxrss_mb, "rc": proc.returncode,
            "json": out}


def median_rec(recs: list[dict]) -> dict:
    """Medians of wall, CPU, RSS and the JSON's clocks; the last run's JSON otherwise."""
    med = {k: statistics.median(r[k] for r in recs) for k in ("wall", "cpu", "rss")}
    js = recs[-1]["json"]
    for key in ("time", "setup_time"):
        vals = [r["json"].get(key) for r in recs if isinstance(r["json"].get(key), float)]
        med[key] = statistics.median(vals) if vals else float("nan")
    med["json"] = js
    med["rc"] = recs[-1]["rc"]
    return med


def exponent(ns: list[int], ts: list[float]) -> float:
    """Slope of log t against log n (least squares); NaN with fewer than two points."""
    pts = [(n, t) for n, t in zip(ns, ts, strict=True) if t > 0 and math.isfinite(t)]
    if len(pts) < 2:
        return float("nan")
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def f3(x: float) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e5x46", "1e6x46", "1e7x46", "mslr"],
                        help="names of SIZES (1e5x46, 1e6x46, 1e7x46, mslr) or NxD")
    parser.add_argument("--max-n", type=float, default=None, dest="max_n",
                        help="leave out sizes above this many documents (e.g. 1e5)")
    parser.add_argument("--C", type=float, default=1e-4,
                        help="C of both losses (default 1e-4)")
    parser.add_argument("--c-per-query", type=float, default=None, dest="c_per_query",
                        help="C = this / the number of queries of each size (svm_rank's c), "
                        "so that the fits of the ladder solve problems of the same conditioning "
                        "(default: --C for every size)")
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="PRSVM+'s certified relative gap (default 1e-6)")
    parser.add_argument("--hinge-tol", type=float, default=1e-3, dest="hinge_tol",
                        help="the 1-slack's certified relative gap (default 1e-3, svm_rank's "
                        "precision)")
    parser.add_argument("--hinge-budget", type=float, default=3600.0, dest="hinge_budget",
                        help="--time-budget of the 1-slack fit, seconds (default 3600)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=("read", "squared", "hinge", "evaluate"))
    parser.add_argument("--force-disk", action="store_true",
                        help="write the files even if the free disk looks short")
    add_common_args(parser)
    args = parser.parse_args()
    sizes = [s for s in args.sizes
             if args.max_n is None or parse_size(s)[0] <= args.max_n]
    print_machine()
    need = files_needed(sizes)
    free = shutil.disk_usage(DATA.parent).free
    total = sum(b for _, b in need)
    print(f"\nsizes: {', '.join(sizes)}; C = {args.C:g}, squared-hinge tol {args.tol:g}, "
          f"hinge tol {args.hinge_tol:g} (budget {args.hinge_budget:g} s)")
    print(f"data files to write: {len(need)}, {total / 1e9:.2f} GB; free on "
          f"{DATA.parent}: {free / 1e9:.1f} GB")
    for path, b in need:
        print(f"  {path.name}: {b / 1e9:.2f} GB")
    if total > 0.9 * free and not args.force_disk:
        print("not enough free disk for the data files (--force-disk to try anyway)")
        return 1
    env = blas_env(args.blas_threads)
    results = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for name in sizes:
            n, d, q = parse_size(name)
            train = ensure_file(n, d, docs_per_query=q)
            test = ensure_file(max(n // 5, 1000), d, docs_per_query=q, part="test")
            warm_page_cache(train)
            size_gb = train.stat().st_size / 1e9
            print(f"\n## {name}: {train.name} ({size_gb:.2f} GB), test {test.name}; load "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
            model = tmp / f"{name}.squared.json"
            C = args.C if args.c_per_query is None else args.c_per_query / (n / q)
            print(f"  C = {C:.3g}", flush=True)
            rec: dict = {"name": name, "n": n, "d": d, "gb": size_gb}
            runs: dict[str, list[dict]] = {k: [] for k in ("read", "squared", "hinge",
                                                           "evaluate")}
            for _ in range(args.rounds):
                if "read" not in args.skip:
                    # a cold parse (no cache); the next read (the fits') then comes from the
                    # parsed-file cache, written here if it was missing
                    proc = run_process([sys.executable, "-c", READ_CHILD, str(train), "none"],
                                       env=env)
                    run_process([sys.executable, "-c", READ_CHILD, str(train), "cache"],
                                env=env)
                    runs["read"].append({"wall": proc.wall, "cpu": proc.cpu,
                                         "rss": proc.maxrss_mb, "rc": 0, "json": {}})
                if "squared" not in args.skip:
                    runs["squared"].append(run_json(
                        [CVXRANK, "fit", "--train", str(train), "--method", "ranksvm",
                         "--loss", "squared_hinge", "--C", repr(C), "--tol",
                         repr(args.tol), "--json", "--quiet", "--save-model", str(model)],
                        env, ok=(0, 2, 3)))
                if "hinge" not in args.skip:
                    runs["hinge"].append(run_json(
                        [CVXRANK, "fit", "--train", str(train), "--method", "ranksvm",
                         "--loss", "hinge", "--C", repr(C), "--tol",
                         repr(args.hinge_tol), "--model-radius", "0", "--time-budget",
                         repr(args.hinge_budget), "--json", "--quiet"], env, ok=(0, 2, 3)))
                if "evaluate" not in args.skip and model.is_file():
                    runs["evaluate"].append(run_json(
                        [CVXRANK, "evaluate", "--data", str(test), "--model", str(model),
                         "--json"], env))
            for key, recs in runs.items():
                if recs:
                    rec[key] = median_rec(recs)
                    r = rec[key]
                    js = r["json"]
                    extra = ""
                    if key in ("squared", "hinge"):
                        extra = (f"; solver clock {f3(r['time'])} s (set-up "
                                 f"{f3(r['setup_time'])}), {js.get('iterations')} iterations, "
                                 f"{js.get('status')}, relative gap "
                                 f"{js.get('relative_gap', float('nan')):.1e}, JSON peak "
                                 f"{js.get('peak_memory_mb', float('nan')):.0f} MB")
                        if js.get("cg_iterations"):
                            extra += (f"; Hessian products per Newton step "
                                      f"{js['cg_iterations']}")
                    print(f"  {key:9s} wall {f3(r['wall'])} s, CPU {f3(r['cpu'])} s, peak RSS "
                          f"{r['rss']:.0f} MB{extra}", flush=True)
            results.append(rec)

    headers = ["size", "n", "d", "file [GB]", "read: wall / CPU [s], RSS [MB]",
               "squared hinge fit: wall / CPU [s], RSS [MB]", "its solver clock [s] (it.)",
               "hinge fit: wall / CPU [s], RSS [MB]", "its solver clock [s] (it., status)",
               "evaluate: wall / CPU [s], RSS [MB]"]
    rows = []
    for r in results:
        def cell(key: str, r: dict = r) -> str:
            x = r.get(key)
            return "-" if x is None else f"{f3(x['wall'])} / {f3(x['cpu'])}, {x['rss']:.0f}"

        sq, hi = r.get("squared"), r.get("hinge")
        rows.append([r["name"], f"{r['n']:,}", r["d"], f"{r['gb']:.2f}", cell("read"),
                     cell("squared"),
                     "-" if sq is None else f"{f3(sq['time'])} ({sq['json'].get('iterations')})",
                     cell("hinge"),
                     "-" if hi is None else (f"{f3(hi['time'])} ({hi['json'].get('iterations')}"
                                             f", {hi['json'].get('status')})"),
                     cell("evaluate")])
    print("\n# Scale runs (fresh processes; medians of "
          f"{args.rounds}; CPU = user + system; solver clock = the fit JSON's `time`)\n")
    print(markdown_table(headers, rows))
    ladder = [r for r in results if r["d"] == 46]
    if len(ladder) >= 2:
        ns = [r["n"] for r in ladder]
        print(f"\nexponent b of time ~ n^b over the d = 46 ladder (n = "
              f"{', '.join(f'{n:.0e}' for n in ns)}):")
        for key, field, label in (("read", "cpu", "read process CPU"),
                                  ("squared", "cpu", "squared-hinge fit process CPU"),
                                  ("squared", "time", "PRSVM+ solver clock"),
                                  ("hinge", "cpu", "hinge fit process CPU"),
                                  ("hinge", "time", "1-slack solver clock"),
                                  ("evaluate", "cpu", "evaluate process CPU")):
            ts = [r[key][field] if key in r else float("nan") for r in ladder]
            print(f"  {label:32s} {exponent(ns, ts):.2f}")
    else:
        print("\n(the exponent needs at least two d = 46 sizes)")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
