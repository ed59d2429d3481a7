"""``cvxrank evaluate``: ranking metrics of a scores file, or of a saved model, on a data file.

Usage::

    cvxrank evaluate --data FILE (--scores SCORES | --model MODEL.json)
                     [--preset letor3|letor4|trec|sklearn|lightgbm] [--k 10] [--per-query]
                     [--format svmlight|lightgbm] [--query QUERY_FILE] [--json]

With ``--model`` (a file of ``cvxrank fit --save-model``, :mod:`cvxrank.data.model_file`) the
model scores the data, mapped first by the model's normalization as its training data was
(a data file with another number of features than the model is refused), and the report
adds ``certified``: per measure, whether its value is the exact optimum's (every w' within
the model's certified radius ``w_radius`` of its w ranks every query alike,
:mod:`cvxrank.certificates.measure_certificate`) and how many queries are not (null counts: the
model has no certificate, e.g. ConeRank's).

JSON keys (``--json``): those of :func:`cvxrank.metrics.evaluate` (``ndcg@1``..``ndcg@k``,
``p@1``..``p@k``, ``map``, ``mrr``, and ``mean_ndcg`` for letor4; NaN is written as null);
``k``, the cut-off used, and ``k_requested`` when ``--k`` was larger than the longest query
and was clamped to it (the rows beyond it add nothing: every query is shorter); ``ties``:
``rule`` (the tie rule applied, a :class:`cvxrank.metrics.Convention` ``ties`` value),
``description``, ``documents`` (documents whose score equals another one's in their query)
and ``queries`` (queries with such a tie); plus with ``--per-query`` a ``per_query`` object:
``qid`` (the query ids in data order), ``tied_documents`` and each metric name -> list of
per-query values.

Ties matter: OHSUMED lists each query's relevant documents first, so breaking ties by file
order (LETOR's scripts, the ``letor3``/``letor4`` presets) gives constant scores a MAP of
0.315 on Fold1 test, where a random order of the tied documents gives 0.202 on average.
The ``trec`` preset breaks ties by document id, descending, as trec_eval does, using the
``#docid =`` comments; without them it keeps the file order and says so.

``SCORES`` holds one number per line, aligned with the data lines of ``FILE`` (blank and
comment lines of the data file have no score). The metrics are those of
:func:`cvxrank.metrics.evaluate` under the chosen preset's conventions.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import numpy as np

from cvxrank.cli.common import (
    PRESET_NAMES,
    add_data_format_options,
    add_json_flag,
    clamp_k,
    emit_json,
    load_data,
    positive_int,
    read_scores,
)

if TYPE_CHECKING:
    from cvxrank.data.model_file import SavedModel
    from cvxrank.data.ranking_data import RankingData
    from cvxrank.metrics import Convention

#: Per-query columns of the text output (those the metrics module reports).
PER_QUERY_COLUMNS = ("ndcg@{k}", "p@{k}", "map", "mrr", "mean_ndcg")


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
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scores", metavar="SCORES", help="one score per data line of FILE"
    )
    source.add_argument(
        "--model", metavar="MODEL", help="a model saved by `cvxrank fit --save-model`: it "
        "scores FILE, and the report says which measures are certified"
    )
    parser.add_argument(
        "--preset",
        default="letor3",
        metavar="PRESET",
        help=f"metric conventions: {', '.join(PRESET_NAMES)} (default letor3)",
    )
    parser.add_argument(
        "--k",
        type=positive_int,
        default=10,
        help="largest cut-off k of NDCG@k, P@k (default 10; clamped to the longest query)",
    )
    parser.add_argument(
        "--per-query", action="store_true", help="also report every metric for each query"
    )
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` subcommand."""
    from cvxrank.data.model_file import read_model
    from cvxrank.metrics import get_preset

    convention = get_preset(args.preset)  # an unknown preset fails before any file is read
    model = read_model(args.model) if args.model else None
    data, _, _ = load_data(args.data, args.format, args.query, args.read_cache)
    if model is None:
        scores = read_scores(args.scores, data.n_documents, data_source=args.data)
    else:
        data = model.features(data, args.data)
        scores = model_scores(model, data)
    result = measure_scores(data, scores, convention=convention, preset=args.preset, k=args.k,
                            per_query=args.per_query)
    if model is not None:
        result["certified"] = model_certificate(model, data, result, args.preset)
    if args.json:
        emit_json(result)
    else:
        print(
            format_result(
                result,
                data_path=args.data,
                scores_path=args.scores or f"model {args.model}",
                preset=args.preset,
                n_documents=data.n_documents,
                n_queries=data.n_queries,
            )
        )
    return 0


def model_scores(model: SavedModel, data: RankingData) -> np.ndarray:
    """The scores a saved model gives the documents of ``data`` (already mapped by
    :meth:`~cvxrank.data.model_file.SavedModel.features`), with the arithmetic of the fit's
    formulation (``scores``): ``X @ w`` row by row
    (:func:`~cvxrank.data.model_file.linear_scores`, ConeRank's ``X @ v`` too), or ConeRank
    Alg. 2's votes (``scoring: vote``)."""
    from cvxrank.data.model_file import linear_scores

    if model.scoring == "vote":
        from cvxrank.formulations.conerank import vote_scores

        return vote_scores(model.arrays["U"], data.X, data.query_ptr)
    return linear_scores(data.X, model.weights, source=model.path)


def model_certificate(model: SavedModel, data: RankingData, result: dict[str, Any],
                      preset: str) -> dict[str, Any]:
    """Per measure of ``result``, whether the saved model certifies it on ``data`` (mapped
    as the model scores it; :func:`cvxrank.certificates.certify.measure_report`; nothing without a
    finite radius, e.g. ConeRank's)."""
    from cvxrank.certificates.certify import measure_report
    from cvxrank.certificates.measure_certificate import certify_measures

    measures = [m for m in result if m not in ("k", "k_requested", "ties", "per_query")]
    if "w" not in model.arrays or not np.isfinite(model.w_radius):
        return measure_report(None, measures)
    certificate = certify_measures(data.X, data.y, data.query_ptr, model.arrays["w"],
                                   model.w_radius, measures=measures, convention=preset)
    return measure_report(certificate, measures)


def measure_scores(data: RankingData, scores: np.ndarray, *, convention: Convention,
                   preset: str, k: int, per_query: bool = False) -> dict[str, Any]:
    """The report of ``evaluate`` for ``scores`` of ``data`` (also used by ``fit``).

    The measures of :func:`cvxrank.metrics.evaluate` with the preset's tie rule
    (:func:`tie_rule`), ``k`` clamped to the longest query (:func:`clamp_k`; ``k_requested``
    when it was), and ``ties``: the rule, its description and how many documents and queries
    have tied scores (:func:`cvxrank.metrics.tied_documents`).
    """
    from cvxrank.metrics import evaluate, tied_documents

    used_k = clamp_k(k, int(data.query_sizes.max()))
    rule, description, docid = tie_rule(convention, data)
    result = dict(evaluate(data.y, scores, data.query_ptr, preset=preset, k=used_k,
                           per_query=per_query, docid=docid))
    tied = tied_documents(scores, data.query_ptr)
    result["k"] = used_k
    if used_k != k:
        result["k_requested"] = k
    result["ties"] = {
        "rule": rule,
        "description": description,
        "documents": int(tied.sum()),
        "queries": int(np.count_nonzero(tied)),
    }
    if per_query:
        columns = dict(result.pop("per_query"))
        result["per_query"] = {
            "qid": data.query_ids.tolist(),
            "tied_documents": tied.tolist(),
            **columns,
        }
    return result


#: What each tie rule of :class:`cvxrank.metrics.Convention` does, for the report.
TIE_RULES = {
    "input_order": "file order (a stable sort by score, as LETOR's Eval-Score scripts)",
    "docid_descending": "document id, descending (string order, as trec_eval)",
    "average": "expected value over the orderings of tied documents (as scikit-learn)",
    "pessimistic": "lowest grade first",
    "optimistic": "highest grade first",
}


def tie_rule(
    convention: Convention, data: RankingData
) -> tuple[str, str, np.ndarray | None]:
    """The tie rule applied to ``data``, its description, and the docids to pass (or None).

    The ``docid_descending`` rule (``trec``) needs a document id on every line; otherwise the
    file order is kept, and the description says so.
    """
    rule = convention.ties
    if rule != "docid_descending":
        return rule, TIE_RULES[rule], None
    if data.docid is not None and all(d is not None for d in data.docid):
        return rule, TIE_RULES[rule], data.docid
    return (
        "input_order",
        f"{TIE_RULES['input_order']}: the data has no document id on every line "
        "(#docid = ...), so trec_eval's rule (document id, descending) cannot be applied",
        None,
    )


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
    n_documents: int,
    n_queries: int,
) -> str:
    """The text form: k and ties, a table of NDCG@k and P@k by k, then MAP, MRR (MeanNDCG)."""
    k = result["k"]
    ties = result["ties"]
    clamp = ""
    if "k_requested" in result:
        clamp = f" (--k {result['k_requested']} clamped to the longest query)"
    out = [
        f"data    {data_path} ({n_documents:,} documents, {n_queries:,} queries)",
        f"scores  {scores_path}",
        f"preset  {preset}",
        f"k       {k}{clamp}",
        f"ties    {ties['documents']:,} documents share their score with another document of "
        f"their query ({ties['queries']:,} queries); broken by {ties['description']}",
        "",
        f"{'k':>3}  {'NDCG@k':>8}  {'P@k':>8}",
    ]
    for i in range(1, k + 1):
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
        out.append(
            f"{'qid':>10}  " + "  ".join(f"{names.get(c, c.upper()):>8}" for c in cols)
            + f"  {'tied':>6}"
        )
        for i, q in enumerate(per_query["qid"]):
            out.append(
                f"{q!s:>10}  " + "  ".join(f"{_num(per_query[c][i]):>8}" for c in cols)
                + f"  {per_query['tied_documents'][i]:>6}"
            )
    return "\n".join(out)
