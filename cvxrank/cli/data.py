"""``cvxrank data summary``: what a ranking data file holds, with every line accounted for.

Usage::

    cvxrank data summary FILE [--format svmlight|lightgbm] [--query QUERY_FILE] [--json]
    cvxrank data summary --synthetic [--seed N] [--n-queries N] [--docs-per-query N]
                         [--n-features N] [--n-grades N] [--noise S] [--json]

JSON keys (``--json``): ``source``, ``format`` (``svmlight``, ``lightgbm`` or ``synthetic``),
``query_file`` (LightGBM group sizes, else null), ``lines`` (``total``, ``data``, ``blank``,
``comment``; null for synthetic data), ``documents``, ``queries``, ``features``,
``nonzeros``, ``density``, ``grades`` (grade as a string -> count), ``pairs``,
``queries_without_pairs`` (``count`` and ``qids``; for LightGBM data a qid is the 0-based
query index), ``documents_per_query`` (``min``, ``median``, ``max``) and, with
``--synthetic``, ``synthetic`` (the arguments of :func:`cvxrank.data.make_synthetic`).

The preference pairs are counted (:func:`cvxrank.data.pairs.count_pairs`), never built, so a
summary is cheap even for data sets with billions of pairs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from cvxrank.cli.common import (
    add_data_format_options,
    add_json_flag,
    emit_json,
    int_option,
    load_data,
    nonnegative_float,
    nonnegative_int,
    positive_int,
)
from cvxrank.data.pairs import count_pairs
from cvxrank.data.ranking_data import MAX_GRADE, RankingData
from cvxrank.data.svmlight import MAX_FEATURES, open_data_file, physical_memory
from cvxrank.data.synthetic import make_synthetic
from cvxrank.utils.lazy_sparse import sp

#: The default synthetic instance of ``--synthetic`` (small: it runs in ``make verify``).
SYNTHETIC_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "n_queries": 20,
    "docs_per_query": 20,
    "n_features": 10,
    "n_grades": 3,
    "noise": 0.5,
}

#: How many qids of queries without pairs the text output lists before "...".
MAX_LISTED_QIDS = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data`` (with its ``summary`` subcommand) to the top-level parser."""
    parser = subparsers.add_parser(
        "data", help="inspect ranking data files", description="Inspect ranking data files."
    )
    sub = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)
    summary = sub.add_parser(
        "summary",
        help="documents, queries, features, grades, pairs and lines of a data file",
        description="Summarize a ranking data file (SVMlight/LETOR with qid:, or LightGBM with "
        "a .query file of group sizes) or a synthetic instance: lines (data, blank, comment), "
        "documents, queries, features, grade counts, preference pairs (counted, not built), "
        "queries without pairs and documents per query.",
    )
    summary.add_argument("file", nargs="?", metavar="FILE", help="the data file")
    add_data_format_options(summary)
    syn = summary.add_argument_group("synthetic data (instead of FILE)")
    syn.add_argument(
        "--synthetic", action="store_true", help="summarize a seeded synthetic instance"
    )
    syn.add_argument(
        "--seed",
        type=nonnegative_int,
        help=f"random seed, >= 0 (default {SYNTHETIC_DEFAULTS['seed']})",
    )
    syn.add_argument(
        "--n-queries",
        type=positive_int,
        metavar="N",
        help=f"queries (default {SYNTHETIC_DEFAULTS['n_queries']})",
    )
    syn.add_argument(
        "--docs-per-query",
        type=positive_int,
        metavar="N",
        help=f"documents per query (default {SYNTHETIC_DEFAULTS['docs_per_query']})",
    )
    syn.add_argument(
        "--n-features",
        type=int_option(minimum=1, maximum=MAX_FEATURES),
        metavar="N",
        help=f"features, at most {MAX_FEATURES:,} (default {SYNTHETIC_DEFAULTS['n_features']})",
    )
    syn.add_argument(
        "--n-grades",
        type=int_option(minimum=2, maximum=MAX_GRADE + 1),
        metavar="N",
        help=f"grade levels 0..N-1, 2 <= N <= {MAX_GRADE + 1} "
        f"(default {SYNTHETIC_DEFAULTS['n_grades']})",
    )
    syn.add_argument(
        "--noise",
        type=nonnegative_float,
        metavar="S",
        help=f"latent-score noise std, finite and >= 0 (default {SYNTHETIC_DEFAULTS['noise']})",
    )
    add_json_flag(summary)
    summary.set_defaults(func=run_summary, _parser=summary)


def run_summary(args: argparse.Namespace) -> int:
    """The ``data summary`` subcommand."""
    parser: argparse.ArgumentParser = args._parser
    synthetic_opts = {key: getattr(args, key) for key in SYNTHETIC_DEFAULTS}
    if args.synthetic:
        if args.file is not None:
            parser.error("give either FILE or --synthetic, not both")
        if args.format is not None or args.query is not None:
            parser.error("--format and --query apply to FILE, not to --synthetic")
        opts = {k: (SYNTHETIC_DEFAULTS[k] if v is None else v) for k, v in synthetic_opts.items()}
        _check_synthetic_fits(opts)
        data = make_synthetic(**opts)
        report = summarize(data, fmt="synthetic")
        report["synthetic"] = opts
    else:
        if args.file is None:
            parser.error("give a data FILE or --synthetic")
        given = [f"--{k.replace('_', '-')}" for k, v in synthetic_opts.items() if v is not None]
        if given:
            parser.error(f"{', '.join(given)}: only with --synthetic")
        data, fmt, query_path = load_data(args.file, args.format, args.query, args.read_cache)
        report = summarize(data, fmt=fmt, query_file=query_path)
    if args.json:
        emit_json(report)
    else:
        print(format_summary(report))
    return 0


def _check_synthetic_fits(opts: dict[str, Any]) -> None:
    """Refuse a synthetic instance whose feature matrix alone exceeds the physical memory."""
    need = 8 * opts["n_queries"] * opts["docs_per_query"] * opts["n_features"]
    have = physical_memory()
    if have is not None and need > have:
        raise ValueError(
            f"--n-queries x --docs-per-query x --n-features = {need // 8:,} feature values "
            f"would take {need / 2**30:,.1f} GiB, more than this machine's "
            f"{have / 2**30:,.1f} GiB"
        )


def count_lines(path: str | os.PathLike[str]) -> dict[str, int]:
    """Lines of a data file: total, data, blank and comment-only (they add up to total)."""
    total = blank = comment = 0
    with open_data_file(path) as fh:
        for raw in fh:
            total += 1
            text = raw.strip()
            if not text:
                blank += 1
            elif text.startswith("#"):
                comment += 1
    return {"total": total, "data": total - blank - comment, "blank": blank, "comment": comment}


def summarize(data: RankingData, *, fmt: str, query_file: str | None = None) -> dict[str, Any]:
    """The summary of ``data`` as a JSON-ready dict (see the module docstring for the keys)."""
    pairs = count_pairs(data)
    without = data.query_ids[pairs == 0]
    sizes = data.query_sizes
    median = float(np.median(sizes))
    lines: dict[str, int] | None = None
    if data.source is not None and fmt != "synthetic" and os.path.isfile(data.source):
        lines = count_lines(data.source)
        if lines["data"] != data.n_documents:  # pragma: no cover (reader and count disagree)
            raise ValueError(
                f"{data.source}: counted {lines['data']} data lines but read "
                f"{data.n_documents} documents"
            )
    nnz = data.X.nnz if sp.issparse(data.X) else int(np.count_nonzero(data.X))
    cells = data.n_documents * data.n_features
    return {
        "source": data.source,
        "format": fmt,
        "query_file": query_file,
        "lines": lines,
        "documents": data.n_documents,
        "queries": data.n_queries,
        "features": data.n_features,
        "nonzeros": int(nnz),
        "density": nnz / cells if cells else 0.0,
        "grades": {str(g): c for g, c in data.grade_counts().items()},
        "pairs": int(pairs.sum()),
        "queries_without_pairs": {"count": int(without.size), "qids": without.tolist()},
        "documents_per_query": {
            "min": int(sizes.min()),
            "median": int(median) if median.is_integer() else median,
            "max": int(sizes.max()),
        },
    }


def format_summary(report: dict[str, Any]) -> str:
    """The text form of :func:`summarize`."""
    rows: list[tuple[str, str]] = [("source", str(report["source"]))]
    fmt = report["format"]
    if report.get("query_file"):
        fmt += f" (group sizes from {report['query_file']})"
    rows.append(("format", fmt))
    lines = report["lines"]
    if lines is not None:
        rows.append(
            (
                "lines",
                f"{lines['total']:,} = {lines['data']:,} data + {lines['blank']:,} blank + "
                f"{lines['comment']:,} comment",
            )
        )
    rows += [
        ("documents", f"{report['documents']:,}"),
        ("queries", f"{report['queries']:,}"),
        ("features", f"{report['features']:,} ({report['density']:.1%} non-zero)"),
        ("grades", "  ".join(f"{g}: {c:,}" for g, c in report["grades"].items())),
        ("pairs", f"{report['pairs']:,} (counted, not built)"),
    ]
    without = report["queries_without_pairs"]
    text = str(without["count"])
    if without["count"]:
        shown = ", ".join(str(q) for q in without["qids"][:MAX_LISTED_QIDS])
        more = ", ..." if without["count"] > MAX_LISTED_QIDS else ""
        text += f" (qid {shown}{more})"
    rows.append(("queries without pairs", text))
    dpq = report["documents_per_query"]
    rows.append(
        ("documents per query", f"min {dpq['min']}, median {dpq['median']}, max {dpq['max']}")
    )
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
