"""A plain re-implementation of LETOR's evaluation scripts, used as a test oracle.

Written from the rules of ``Eval-Score-3.0.pl`` (LETOR 3.0) and ``Eval-Score-4.0.pl``
(LETOR 4.0), by J. Xu and T.-Y. Liu, with Python lists and one loop per query, and without
sharing any code with :mod:`cvxrank.metrics`:

- per query, documents are sorted by descending prediction, ties keeping the file order;
- NDCG gain table 0 -> 0, 1 -> 1, 2 -> 3 (2^y - 1); DCG adds the gain at positions 1 and 2
  and ``gain * log(2) / log(p)`` at position p >= 3, as a running sum in position order;
  the ideal DCG uses the labels sorted by decreasing gain; NDCG@k = DCG@k / idealDCG@k, and
  0 when idealDCG@k is 0;
- P@k = (#labels >= 1 in the top k) / k; AP = mean of the precisions at the positions of
  the relevant documents, 0 for a query without relevant document;
- every mean divides by the number of queries (queries sorted by numeric qid);
- 3.0 keeps only min(n, 10) positions per query, so a query with n < k documents adds 0 to
  NDCG@k and P@k; 4.0 counts the missing positions of P@k as irrelevant (divides by k),
  scores NDCG@k 0 for k > n, and reports MeanNDCG, the mean over queries of each query's
  mean of NDCG@1..NDCG@n.
"""

from __future__ import annotations

import math

NDCG_GAIN = {0: 0.0, 1: 1.0, 2: 3.0}
MAX_POSITION = 10


def _group(labels: list[int], preds: list[float], qids: list[int]) -> dict[int, list]:
    """Per qid, the (label, prediction) pairs in file order."""
    queries: dict[int, list] = {}
    for label, pred, qid in zip(labels, preds, qids, strict=True):
        queries.setdefault(qid, []).append((label, pred))
    return queries


def _ranked_labels(docs: list) -> list[int]:
    ranked = sorted(docs, key=lambda doc: -doc[1])  # Python's sort is stable
    return [label for label, _ in ranked]


def _dcg(top_n: int, rates: list[int], pad: bool) -> list[float]:
    dcg = [NDCG_GAIN[rates[0]]]
    last = top_n if pad else min(top_n, len(rates))
    for i in range(1, last):
        gain = NDCG_GAIN[rates[i]] if i < len(rates) else 0.0
        if i < 2:
            dcg.append(dcg[i - 1] + gain)
        else:
            dcg.append(dcg[i - 1] + gain * math.log(2.0) / math.log(i + 1.0))
    return dcg


def _ndcg(top_n: int, rates: list[int], pad: bool) -> list[float]:
    dcg = _dcg(top_n, rates, pad)
    best = _dcg(top_n, sorted(rates, key=lambda r: -NDCG_GAIN[r]), pad)
    ndcg = []
    for i in range(min(top_n, len(rates))):
        ndcg.append(dcg[i] / best[i] if best[i] != 0 else 0.0)
    return ndcg


def _precision(top_n: int, rates: list[int], pad: bool) -> list[float]:
    result = []
    relevant = 0
    last = top_n if pad else min(top_n, len(rates))
    for i in range(last):
        rate = rates[i] if i < len(rates) else 0
        if rate >= 1:
            relevant += 1
        result.append(relevant / (i + 1))
    return result


def _average_precision(rates: list[int]) -> float:
    relevant = 0
    total = 0.0
    for i, rate in enumerate(rates):
        if rate >= 1:
            relevant += 1
            total += relevant / (i + 1)
    if relevant == 0:
        return 0.0
    return total / relevant


def eval_score(
    labels: list[int], preds: list[float], qids: list[int], version: int
) -> dict[str, object]:
    """LETOR 3.0 (``version=3``) or 4.0 (``version=4``) evaluation of one prediction file.

    Returns the means under the keys ``ndcg@1..10``, ``p@1..10``, ``map`` (and
    ``mean_ndcg`` for 4.0), and under ``"per_query"`` the same keys mapped to per-query
    lists, queries in increasing qid order.
    """
    queries = _group(labels, preds, qids)
    per_query: dict[str, list[float]] = {f"ndcg@{k}": [] for k in range(1, MAX_POSITION + 1)}
    per_query.update({f"p@{k}": [] for k in range(1, MAX_POSITION + 1)})
    per_query["map"] = []
    if version == 4:
        per_query["mean_ndcg"] = []
    for qid in sorted(queries):
        rates = _ranked_labels(queries[qid])
        if version == 3:
            ndcg = _ndcg(MAX_POSITION, rates, pad=False)
            precision = _precision(MAX_POSITION, rates, pad=False)
        else:
            ndcg = _ndcg(len(rates), rates, pad=True)
            precision = _precision(MAX_POSITION, rates, pad=True)
            per_query["mean_ndcg"].append(sum(ndcg) / len(ndcg))
        for k in range(1, MAX_POSITION + 1):
            per_query[f"ndcg@{k}"].append(ndcg[k - 1] if k <= len(ndcg) else 0.0)
            per_query[f"p@{k}"].append(precision[k - 1] if k <= len(precision) else 0.0)
        per_query["map"].append(_average_precision(rates))
    result: dict[str, object] = {}
    for name, values in per_query.items():
        total = 0.0
        for value in values:
            total += value
        result[name] = total / len(values)
    result["per_query"] = per_query
    return result
