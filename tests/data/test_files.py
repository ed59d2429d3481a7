"""The one reader of data files (:mod:`cvxrank.data.files`): the format is what the file is,
the command line offers the same formats."""

from __future__ import annotations

import numpy as np
import pytest

from cvxrank.cli.common import FORMATS as CLI_FORMATS
from cvxrank.data.files import FORMATS, detect_format, read_ranking_file
from cvxrank.errors import DataFormatError


def test_the_command_line_offers_the_reader_s_formats() -> None:
    assert CLI_FORMATS == FORMATS == ("svmlight", "lightgbm")


def test_each_format_is_read_as_what_it_is(tmp_path) -> None:
    letor = tmp_path / "a.txt"
    letor.write_text("2 qid:1 1:0.5 2:1\n0 qid:1 1:0.1\n1 qid:2 2:3\n")
    lightgbm = tmp_path / "b.train"
    lightgbm.write_text("2 1:0.5 2:1\n0 1:0.1\n1 2:3\n")
    (tmp_path / "b.train.query").write_text("2\n1\n")
    assert detect_format(letor) == "svmlight" and detect_format(lightgbm) == "lightgbm"
    a, fmt_a, query_a = read_ranking_file(letor)
    b, fmt_b, query_b = read_ranking_file(lightgbm)
    assert (fmt_a, query_a, fmt_b, query_b) == ("svmlight", None, "lightgbm",
                                                 str(lightgbm) + ".query")
    assert np.array_equal(a.X.toarray() if hasattr(a.X, "toarray") else a.X,
                          b.X.toarray() if hasattr(b.X, "toarray") else b.X)
    assert np.array_equal(a.query_ptr, b.query_ptr) and np.array_equal(a.y, b.y)
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        detect_format(letor, "csv")
    binary = tmp_path / "c.txt"
    binary.write_bytes(b"\xff\xfe\x00 qid:1")
    with pytest.raises(DataFormatError, match="c.txt.*not a UTF-8 text file"):
        read_ranking_file(binary)
