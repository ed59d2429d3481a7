"""Ranking data: the RankingData type, readers and writers, normalization, pairs."""

from cvxrank.data.letor import list_folds, read_letor_fold
from cvxrank.data.lightgbm import read_group_sizes, read_lightgbm
from cvxrank.data.normalize import query_minmax, query_zscore
from cvxrank.data.pairs import PairSet, build_pairs, count_pairs, level_groups
from cvxrank.data.ranking_data import RankingData, qid_from_group
from cvxrank.data.svmlight import read_svmlight, write_svmlight
from cvxrank.data.synthetic import make_synthetic

__all__ = [
    "PairSet",
    "RankingData",
    "build_pairs",
    "count_pairs",
    "level_groups",
    "list_folds",
    "make_synthetic",
    "qid_from_group",
    "query_minmax",
    "query_zscore",
    "read_group_sizes",
    "read_letor_fold",
    "read_lightgbm",
    "read_svmlight",
    "write_svmlight",
]
