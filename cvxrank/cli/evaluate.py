"""``cvxrank evaluate``: ranking metrics of a scores file against a data file.

Usage::

    cvxrank evaluate --data FILE --scores SCORES [--preset letor3|letor4|trec|sklearn|lightgbm]
                     [--k 10] [--per-query] [--format svmlight|lightgbm] [--query QUERY_FILE]
                     [--json]

JSON keys (``--json``): those of :func:`cvxrank.metrics.evaluate` (``ndcg@1``..``ndcg@k``,
``p@1``..``p@k``, ``map``, ``mrr``, and ``mean_ndcg`` for letor4; NaN is written as null),
plus with ``--per-query`` a ``per_query`` object: ``qid`` (the query ids in data order) and
each metric name -> list of per-query values.

``SCORES`` holds one number per line, aligned with the data lines of ``FILE`` (blank and
comment lines of the data file have no score). The metrics are those of
:func:`cvxrank.metrics.evaluate` under the chosen preset's conventions.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from cvxrank.cli.common import (
    add_data_format_options,
    add_json_flag,
    emit_json,
    load_data,
    read_scores,
)

#: Presets listed in ``--help`` when :mod:`cvxrank.metrics` cannot be imported (that module's
#: ``PRESETS`` is the authority; ``get_preset`` rejects unknown names).
KNOWN_PRESETS = ("letor3", "letor4", "trec", "sklearn", "lightgbm")

#: Per-query columns of the text output (those the metrics module reports).
PER_QUERY_COLUMNS = ("ndcg@{k}", "p@{k}", "map", "mrr", "mean_ndcg")


def _preset_names() -> tuple[str, ...]:
    try:
        from cvxrank.metrics import PRESETS
    except ImportError:  # pragma: no cover (the metrics module is part of the package)
        return KNOWN_PRESETS
    return tuple(PRESETS)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` to the top-level parser."""
    parser = subparsers.add_parser(
        "evaluate",
        help="NDCG@k, P@k, MAP and MRR of a scores file",
        description="Evaluate a ranking: the scores file has one number per line, aligned "
        "with the data lines of the data file. Reports NDCG@1..k, P@1..k, MAP and MRR "
        "(and MeanNDCG for letor4) under a preset's conventions.",
    )
    parser.add_argument("--data", required=True, metavar="FILE", help="the data file")
    parser.add_argument(
        "--scores", required=True, metavar="SCORES", help="one score per data line of FILE"
    )
    parser.add_argument(
        "--preset",
        default="letor3",
        metavar="PRESET",
        help=f"metric conventions: {', '.join(_preset_names())} (default letor3)",
    )
    parser.add_argument(
        "--k", type=_positive_int, default=10, help="largest cut-off k of NDCG@k, P@k (default 10)"
    )
    parser.add_argument(
        "--per-query", action="store_true", help="also report every metric for each query"
    )
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_evaluate)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` subcommand."""
    from cvxrank.metrics import evaluate, get_preset

    get_preset(args.preset)  # an unknown preset fails (ValueError) before any file is read
    data, _, _ = load_data(args.data, args.format, args.query)
    scores = read_scores(args.scores, data.n_documents, data_source=args.data)
    result = dict(
        evaluate(
            data.y,
            scores,
            data.query_ptr,
            preset=args.preset,
            k=args.k,
            per_query=args.per_query,
        )
    )
    if args.per_query:
        per_query = dict(result.pop("per_query"))
        result["per_query"] = {"qid": data.query_ids.tolist(), **per_query}
    if args.json:
        emit_json(result)
    else:
        print(
            format_result(
                result,
                data_path=args.data,
                scores_path=args.scores,
                preset=args.preset,
                k=args.k,
                n_documents=data.n_documents,
                n_queries=data.n_queries,
            )
        )
    return 0


def _num(value: Any) -> str:
    if value is None:
        return "-"
    f = float(value)
    return f"{f:.4f}" if np.isfinite(f) else str(f)


def format_result(
    result: dict[str, Any],
    *,
    data_path: str,
    scores_path: str,
    preset: str,
    k: int,
    n_documents: int,
    n_queries: int,
) -> str:
    """The text form: a table of NDCG@k and P@k by k, then MAP, MRR (and MeanNDCG)."""
    out = [
        f"data    {data_path} ({n_documents:,} documents, {n_queries:,} queries)",
        f"scores  {scores_path}",
        f"preset  {preset}",
        "",
        f"{'k':>3}  {'NDCG@k':>8}  {'P@k':>8}",
    ]
    ks = sorted(int(key[5:]) for key in result if key.startswith("ndcg@") and key[5:].isdigit())
    for i in ks or range(1, k + 1):
        out.append(f"{i:>3}  {_num(result.get(f'ndcg@{i}')):>8}  {_num(result.get(f'p@{i}')):>8}")
    out.append("")
    summary = [("MAP", "map"), ("MRR", "mrr"), ("MeanNDCG", "mean_ndcg")]
    for label, key in summary:
        if key in result:
            out.append(f"{label:<9} {_num(result[key])}")
    per_query = result.get("per_query")
    if per_query:
        cols = [c.format(k=k) for c in PER_QUERY_COLUMNS if c.format(k=k) in per_query]
        out.append("")
        names = {"map": "AP", "mrr": "RR", "mean_ndcg": "MeanNDCG"}
        out.append(f"{'qid':>10}  " + "  ".join(f"{names.get(c, c.upper()):>8}" for c in cols))
        for i, q in enumerate(per_query["qid"]):
            out.append(f"{q!s:>10}  " + "  ".join(f"{_num(per_query[c][i]):>8}" for c in cols))
    return "\n".join(out)
