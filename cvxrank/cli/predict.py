"""``cvxrank predict``: score a data file with a saved model.

Usage::

    cvxrank predict --model MODEL.json --data FILE
                    [--out SCORES | --trec-run RUN [--run-name NAME]]
                    [--format svmlight|lightgbm] [--query QUERY_FILE] [--json]

The model (a file of ``cvxrank fit --save-model``, :mod:`cvxrank.data.model_file`) scores the
documents of ``FILE`` after mapping their features by its normalization, as its training
data was; a data file with another number of features than the model is refused. The scores
are those of the fit's formulation (``cvxrank fit --test`` reports the measures of the same
numbers): ``X @ w``, or ConeRank's votes (Alg. 2) or linear scorer.

Output:

* ``--out SCORES``: one score per line, in the data lines' order: the file
  ``cvxrank evaluate --data FILE --scores SCORES`` reads.
* ``--trec-run RUN``: a TREC run file, one line ``qid Q0 docid rank score run_name`` per
  document, each query's documents by descending score (ties in file order), ranks from 1.
  The docid is the LETOR ``#docid = X`` comment when every data line has one, else the
  document's 1-based row number in ``FILE`` (data lines only). ``--run-name`` names the run
  (default ``cvxrank``; no white space).
* neither: the scores on stdout, one per line (with a file, stdout gets one line saying
  what was written).

Scores are written in Python's shortest round-trip notation (``repr``): read back, they are
the same numbers. A file is written through a temporary file renamed into place, never over
the model or a data file (:mod:`cvxrank.utils.output_files`).

JSON (``--json``): ``model``, ``data``, ``n_documents``, ``n_queries``, ``normalization``
(the kind), ``scoring`` (``linear`` or ``vote``), and ``out`` or ``trec_run`` (the file
written) or, with neither, ``scores`` (the list).

Exit codes: 0 on success; 2 for bad input (an unreadable or malformed model or data file,
another feature count, an output path that is an input), with one line
``cvxrank: error: <reason>`` on stderr.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from cvxrank.cli.common import add_data_format_options, add_json_flag, emit_json, load_data
from cvxrank.errors import UsageError
from cvxrank.utils.output_files import refuse_input, write_text_atomically

if TYPE_CHECKING:
    import numpy as np

    from cvxrank.data.model_file import SavedModel
    from cvxrank.data.ranking_data import RankingData

#: The run name of ``--trec-run`` by default.
DEFAULT_RUN_NAME = "cvxrank"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``predict`` to the top-level parser."""
    parser = subparsers.add_parser(
        "predict",
        help="score a data file with a saved model (scores file or TREC run)",
        description="Score the documents of a data file with a model saved by `cvxrank fit "
        "--save-model` (its normalization applied first): one score per data line, to "
        "stdout, to a scores file (--out, what `cvxrank evaluate --scores` reads) or as a "
        "TREC run (--trec-run).",
    )
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a model file of `cvxrank fit --save-model`")
    parser.add_argument("--data", required=True, metavar="FILE", help="the data file to score")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--out", metavar="SCORES", default=None,
                        help="write one score per data line of FILE to SCORES")
    output.add_argument("--trec-run", metavar="RUN", default=None, dest="trec_run",
                        help="write a TREC run file: qid Q0 docid rank score run_name")
    parser.add_argument("--run-name", metavar="NAME", default=None, dest="run_name",
                        help=f"the run name of --trec-run (default {DEFAULT_RUN_NAME})")
    add_data_format_options(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run_predict)


def run_predict(args: argparse.Namespace) -> int:
    """The ``predict`` subcommand."""
    from cvxrank.cli.evaluate import model_scores
    from cvxrank.data.model_file import read_model

    run_name = check_run_name(args)
    target = args.out or args.trec_run
    if target:
        refuse_input(target, (args.model, args.data, args.query),
                     option="--out" if args.out else "--trec-run")
    model = read_model(args.model)
    data, _, _ = load_data(args.data, args.format, args.query, args.read_cache)
    scores = model_scores(model, model.features(data, args.data))
    if args.trec_run:
        text = trec_run(data, scores, run_name)
    else:
        text = "".join(f"{score!r}\n" for score in scores.tolist())
    if target:
        write_text_atomically(target, text)
    if args.json:
        emit_json(summary(args, data, model, scores))
    elif target:
        print(f"wrote {target} ({'TREC run' if args.trec_run else 'scores'} of "
              f"{data.n_documents:,} documents, {data.n_queries:,} queries)")
    else:
        sys.stdout.write(text)
    return 0


def summary(args: argparse.Namespace, data: RankingData, model: SavedModel,
            scores: np.ndarray) -> dict[str, Any]:
    """The ``--json`` report: the inputs, what the model did, and where the scores went (the
    scores themselves without ``--out`` or ``--trec-run``)."""
    report: dict[str, Any] = {
        "model": args.model, "data": args.data, "n_documents": data.n_documents,
        "n_queries": data.n_queries, "normalization": model.normalization.kind,
        "scoring": model.scoring,
    }
    if args.out:
        report["out"] = args.out
    elif args.trec_run:
        report["trec_run"] = args.trec_run
    else:
        report["scores"] = scores
    return report


def check_run_name(args: argparse.Namespace) -> str:
    """The run name of ``--trec-run``.

    Raises
    ------
    UsageError
        For ``--run-name`` without ``--trec-run``, or a name that is empty or has white
        space (a run file's fields are separated by it).
    """
    if args.run_name is None:
        return DEFAULT_RUN_NAME
    if not args.trec_run:
        raise UsageError("predict: --run-name applies to --trec-run only")
    if not re.fullmatch(r"\S+", args.run_name):
        raise UsageError(f"predict: --run-name {args.run_name!r}: expected a name without "
                         "white space")
    return args.run_name


def trec_run(data: RankingData, scores: np.ndarray, run_name: str) -> str:
    """The TREC run file of ``scores``: per query (in data order), its documents by
    descending score, ties in file order (a stable sort), ranks from 1."""
    import numpy as np

    docids = document_ids(data)
    lines = []
    for q in range(data.n_queries):
        lo, hi = int(data.query_ptr[q]), int(data.query_ptr[q + 1])
        order = lo + np.argsort(-scores[lo:hi], kind="stable")
        qid = int(data.qid[lo])
        lines.extend(f"{qid} Q0 {docids[i]} {rank} {float(scores[i])!r} {run_name}\n"
                     for rank, i in enumerate(order.tolist(), start=1))
    return "".join(lines)


def document_ids(data: RankingData) -> list[str]:
    """The LETOR ``#docid = X`` of every row when each has one, else the 1-based row
    numbers."""
    if data.docid is not None and all(d is not None for d in data.docid):
        return [str(d) for d in data.docid]
    return [str(i) for i in range(1, data.n_documents + 1)]
