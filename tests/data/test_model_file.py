"""Saved models: the model file, ``cvxrank predict``, ``evaluate --model`` and ``load_model``.

A model saved by ``cvxrank fit --save-model`` scores data as the fit scored its test file
(with the same normalization), loads as its method's fitted estimator, and a file that is
malformed, of another version or of another feature count is refused in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cvxrank
from cvxrank.cli.fit import saved_model, training_record
from cvxrank.cli.main import main
from cvxrank.data import make_synthetic, read_svmlight, write_svmlight
from cvxrank.data.model_file import FORMAT, VERSION, SavedModel, read_model, write_model
from cvxrank.data.normalize import NORMALIZATIONS, Normalization, fit_normalization
from cvxrank.errors import DataFormatError
from cvxrank.estimators import load_model
from cvxrank.fitting import fit_formulation
from cvxrank.methods import METHODS

OHSUMED_FOLD1 = Path("letor3_ohsumed") / "QueryLevelNorm" / "Fold1"

#: The keys of ``evaluate --json`` that ``fit --test --json`` reports alike.
NOT_MEASURES = ("k", "ties")


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args: object) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2 and out == ""
    assert err.startswith("cvxrank: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A small training file and a test file (5 features, every value nonzero)."""
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    write_svmlight(make_synthetic(n_queries=8, docs_per_query=8, n_features=5, seed=1), train)
    write_svmlight(make_synthetic(n_queries=4, docs_per_query=(5, 9), n_features=5, seed=2),
                   test)
    return train, test


def measures_of(report: dict) -> dict:
    """The measures of an ``evaluate --json`` report."""
    return {k: v for k, v in report.items() if k not in NOT_MEASURES + ("certified",)}


# --------------------------------------------------------------------------- fit -> predict


@pytest.mark.parametrize("normalize", NORMALIZATIONS)
@pytest.mark.parametrize("method", ["ranksvm", "ocsvm"])
def test_predict_then_evaluate_gives_the_fits_test_measures(capsys, files, tmp_path, method,
                                                            normalize) -> None:
    train, test = files
    model, scores = tmp_path / "m.json", tmp_path / "s.txt"
    report = run_json(capsys, "fit", "--method", method, "--C", "0.5", "--train", train,
                      "--test", test, "--normalize", normalize, "--save-model", model)
    assert report["normalize"] == normalize
    predicted = run_json(capsys, "predict", "--model", model, "--data", test, "--out", scores)
    assert predicted["out"] == str(scores) and predicted["normalization"] == normalize
    evaluated = run_json(capsys, "evaluate", "--data", test, "--scores", scores)
    measures = measures_of(evaluated)
    assert measures and all(report[key] == value for key, value in measures.items()), (
        {k: (report[k], v) for k, v in measures.items() if report[k] != v})
    # evaluate --model: the same measures, and the same certificate as the fit's
    by_model = run_json(capsys, "evaluate", "--data", test, "--model", model)
    assert measures_of(by_model) == measures
    certified = by_model["certified"]
    assert certified == {key: report["certified"][key] for key in certified}


def test_saved_model_records_the_fit(capsys, files, tmp_path) -> None:
    train, test = files
    path = tmp_path / "m.json"
    report = run_json(capsys, "fit", "--C", "0.5", "--train", train, "--save-model", path,
                      "--normalize", "minmax")
    saved = json.loads(path.read_text())
    assert saved["format"] == FORMAT and saved["version"] == VERSION
    assert (saved["method"], saved["loss"], saved["params"]) == (
        "ranksvm", "squared_hinge", {"C": 0.5})
    assert saved["n_features"] == 5 and saved["normalization"]["kind"] == "minmax"
    for key in ("solver", "objective", "status", "converged", "gap", "relative_gap",
                "w_radius"):
        assert saved[key] == report[key], key
    data = read_svmlight(train)
    assert saved["training_data"] == training_record(str(train), data)
    stats = fit_normalization("minmax", data)
    np.testing.assert_array_equal(saved["normalization"]["shift"], stats.shift)
    np.testing.assert_array_equal(saved["normalization"]["scale"], stats.scale)
    model = read_model(path)
    assert model.path == str(path) and model.scoring == "linear"
    assert model.document() == saved


# --------------------------------------------------------------------------- normalization


def test_zscore_predict_applies_the_training_statistics(capsys, files, tmp_path) -> None:
    train, test = files
    model, scores = tmp_path / "m.json", tmp_path / "s.txt"
    run_json(capsys, "fit", "--train", train, "--normalize", "zscore", "--save-model", model)
    run_json(capsys, "predict", "--model", model, "--data", test, "--out", scores)
    got = np.loadtxt(scores)
    X_train, X_test = read_svmlight(train).X, read_svmlight(test).X
    w = np.array(json.loads(model.read_text())["w"])
    expected = (X_test - X_train.mean(axis=0)) / X_train.std(axis=0) @ w
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # not the test file's own statistics
    own = (X_test - X_test.mean(axis=0)) / X_test.std(axis=0) @ w
    assert not np.allclose(got, own)
    # the loaded estimator applies them too
    np.testing.assert_allclose(load_model(model).predict(X_test), got, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("kind", ["zscore", "minmax"])
def test_column_normalization_fits_on_training_data(kind) -> None:
    data = make_synthetic(n_queries=4, docs_per_query=6, n_features=3, seed=3)
    X = np.array(data.X)
    X[:, 1] = 0.1  # constant (and not exact in binary): scale 1, maps to exactly 0
    data = data.with_features(X)
    normalization = fit_normalization(kind, data)
    mapped = normalization.apply(data).X
    assert normalization.scale[1] == 1.0 and np.all(mapped[:, 1] == 0.0)
    if kind == "zscore":
        np.testing.assert_allclose(mapped[:, [0, 2]].mean(axis=0), 0.0, atol=1e-12)
        np.testing.assert_allclose(mapped[:, [0, 2]].std(axis=0), 1.0, rtol=1e-12)
    else:
        assert mapped.min() == 0.0 and np.max(mapped) == 1.0
    with pytest.raises(ValueError, match="statistics have 3 features, the data 2"):
        normalization.apply(data.with_features(X[:, :2]))


# --------------------------------------------------------------------------- load_model


def fitted(name: str, data, **params):
    """A small fit of method ``name`` on ``data``: its formulation and run."""
    formulation = METHODS[name].build(data, **params)
    solver = "stochastic-sg" if name == "conerank" else "auto"
    max_iter = 2 if name == "conerank" else None
    return formulation, fit_formulation(formulation, solver, max_iter=max_iter, seed=0)


CASES = [(name, {"K": 2} if name == "conerank" else {"C": 0.5}) for name in METHODS] + [
    ("conerank", {"K": 2, "scoring": "linear"}),
    ("ranksvm", {"C": 0.5, "loss": "hinge"}),
]


@pytest.mark.parametrize("name, params", CASES, ids=[f"{n}-{'-'.join(map(str, p.values()))}"
                                                    for n, p in CASES])
def test_load_model_round_trips_every_method(tmp_path, name, params) -> None:
    train = make_synthetic(n_queries=6, docs_per_query=6, n_features=4, seed=1)
    test = make_synthetic(n_queries=3, docs_per_query=7, n_features=4, seed=2)
    formulation, result = fitted(name, train, **params)
    loss = params.pop("loss", METHODS[name].default_loss)
    path = tmp_path / "model.json"
    write_model(path, saved_model(formulation, result, method=name, loss=loss, params=params,
                                  training=training_record("train", train),
                                  normalization=Normalization("none")))
    estimator = load_model(path)
    assert isinstance(estimator, METHODS[name].estimator_class())
    expected = formulation.scores(result.w, test)
    np.testing.assert_allclose(estimator.predict(test.X, qid=test.qid), expected, rtol=1e-12,
                               atol=1e-12)
    got = estimator.get_params()
    assert {k: got[k] for k in params} == params
    if "loss" in got:
        assert got["loss"] == loss
    if "method" in got:
        assert got["method"] == name
    assert estimator.n_features_in_ == 4 and estimator.normalization_ is None
    assert estimator.solver_ == result.solver and estimator.status_ == result.status.value
    if name == "conerank":
        assert (got["solver"], got["variant"]) == ("stochastic", "sg")
        np.testing.assert_array_equal(estimator.U_, formulation.split(result.w)[0])
    else:
        assert got["solver"] == result.solver
        assert estimator.w_radius_ == result.w_radius
    if name == "ocsvm":
        np.testing.assert_array_equal(estimator.thresholds_, formulation.thresholds(result.w))
        grades = estimator.predict_grades(test.X)
        np.testing.assert_array_equal(grades, formulation.predict_grades(result.w, test.X))


def test_load_model_is_exported_lazily() -> None:
    assert "load_model" in cvxrank.__all__ and cvxrank.load_model is load_model
    code = ("import sys, cvxrank; heavy = {'numpy', 'sklearn', 'cvxpy'} & set(sys.modules); "
            "print(sorted(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_loaded_query_minmax_model_normalizes_per_query(capsys, files, tmp_path) -> None:
    train, test = files
    model, scores = tmp_path / "m.json", tmp_path / "s.txt"
    run_json(capsys, "fit", "--train", train, "--normalize", "query-minmax", "--save-model",
             model)
    run_json(capsys, "predict", "--model", model, "--data", test, "--out", scores)
    data = read_svmlight(test)
    shuffled = np.random.default_rng(0).permutation(data.n_documents)
    got = load_model(model).predict(data.X[shuffled], qid=data.qid[shuffled])
    np.testing.assert_allclose(got, np.loadtxt(scores)[shuffled], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- refusals


def test_another_feature_count_is_refused(capsys, files, tmp_path) -> None:
    """More features than the model: refused in one line. Fewer: the file's last features
    are 0 (SVMlight leaves zeros out), scored as such."""
    train, _ = files
    model = tmp_path / "m.json"
    run_json(capsys, "fit", "--train", train, "--save-model", model)
    wide = tmp_path / "other6.txt"
    write_svmlight(make_synthetic(n_queries=2, docs_per_query=4, n_features=6, seed=5), wide)
    for command in ("predict", "evaluate"):
        code, out, err = run(capsys, command, "--model", model, "--data", wide)
        assert_one_line_error(code, out, err, str(model), "the model has 5 features",
                              f"{wide} has 6")
    narrow_data = make_synthetic(n_queries=2, docs_per_query=4, n_features=4, seed=5)
    narrow = tmp_path / "other4.txt"
    write_svmlight(narrow_data, narrow)
    scores = tmp_path / "s.txt"
    code, _, _ = run(capsys, "predict", "--model", model, "--data", narrow, "--out", scores)
    w = np.asarray(json.loads(model.read_text())["w"])
    expected = np.asarray(narrow_data.X) @ w[:4]
    assert code == 0 and np.allclose(np.loadtxt(scores), expected, rtol=1e-12)
    X = read_svmlight(train).X
    with pytest.raises(ValueError, match="X has 6 features"):
        load_model(model).predict(np.hstack([X, X[:, :1]]))


GARBAGE = {
    "truncated": None,  # the first half of a real model file
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
    "empty": b"",
    "not an object": b"[1, 2, 3]\n",
    "old format": b'{"method": "ranksvm", "loss": "hinge", "w": [1, 2, 3, 4, 5]}\n',
    "version 2": "version",
    "unknown method": "method",
    "negative C": "params",
    "short w": "w",
    "nan in w": "nan",
    "bad normalization": "normalization",
}

#: What the message says for each kind of garbage.
REASONS = {
    "truncated": "not a JSON model file", "binary": "not UTF-8", "empty": "not a JSON",
    "not an object": "not a cvxrank model file", "old format": "not a cvxrank model file",
    "version 2": "version 2 is not supported", "unknown method": "'method' is \"svm\"",
    "negative C": "'params' is {\"C\": -1.0}",
    "short w": "'w' is of shape (2,)", "nan in w": "not a JSON model file (NaN",
    "bad normalization": "'normalization scale' is of shape (1,)",
}


def garbage(kind: str, good: str) -> bytes:
    """The bytes of a model file broken as ``kind`` says, from the good file ``good``."""
    doc = json.loads(good)
    change = GARBAGE[kind]
    if change is None:
        return good[: len(good) // 2].encode()
    if isinstance(change, bytes):
        return change
    if change == "version":
        doc["version"] = 2
    elif change == "method":
        doc["method"] = "svm"
    elif change == "params":
        doc["params"] = {"C": -1.0}
    elif change == "w":
        doc["w"] = doc["w"][:2]
    elif change == "nan":
        return good.replace(str(doc["w"][0]), "NaN", 1).encode()
    else:
        doc["normalization"] = {"kind": "zscore", "shift": [0.0] * 5, "scale": [1.0]}
    return json.dumps(doc).encode()


@pytest.mark.parametrize("kind", GARBAGE)
def test_a_malformed_model_file_is_refused_in_one_line(capsys, files, tmp_path, kind) -> None:
    train, test = files
    good = tmp_path / "good.json"
    run_json(capsys, "fit", "--train", train, "--save-model", good)
    bad = tmp_path / "bad.json"
    bad.write_bytes(garbage(kind, good.read_text()))
    for command in ("predict", "evaluate"):
        code, out, err = run(capsys, command, "--model", bad, "--data", test)
        assert_one_line_error(code, out, err, f"{bad}", REASONS[kind])
    with pytest.raises(DataFormatError, match=str(bad)):
        load_model(bad)


def test_predict_refuses_to_write_over_an_input(capsys, files, tmp_path) -> None:
    train, test = files
    model = tmp_path / "m.json"
    run_json(capsys, "fit", "--train", train, "--save-model", model)
    before = {p: p.read_bytes() for p in (model, test)}
    for option, target in (("--out", test), ("--trec-run", model)):
        code, out, err = run(capsys, "predict", "--model", model, "--data", test, option,
                             target)
        assert_one_line_error(code, out, err, f"{option} {target}: that is the input file")
    assert all(p.read_bytes() == content for p, content in before.items())


# --------------------------------------------------------------------------- TREC run


def linear_model(tmp_path: Path, w: list[float]) -> Path:
    """A model file of weights ``w`` (no normalization)."""
    path = tmp_path / "linear.json"
    data = make_synthetic(n_queries=2, docs_per_query=3, n_features=len(w), seed=0)
    write_model(path, SavedModel(
        method="ranksvm", loss="hinge", params={"C": 1.0}, n_features=len(w),
        normalization=Normalization("none"), training_data=training_record("t", data),
        solver="prsvm+", iterations=1, objective=1.0, status="converged", converged=True,
        gap=0.0, relative_gap=0.0, w_radius=0.0, arrays={"w": np.array(w)}))
    return path


def test_trec_run_format(capsys, tmp_path) -> None:
    model = linear_model(tmp_path, [1.0, 0.5])
    data = tmp_path / "tiny.txt"
    data.write_text("2 qid:7 1:0.5 2:1 #docid = d1\n"  # score 1.0
                    "0 qid:7 1:0.25 #docid = d2\n"  # 0.25
                    "1 qid:7 1:1 #docid = d3\n"  # 1.0, tied with d1: file order
                    "# a comment line\n"
                    "1 qid:3 1:-1 2:4 #docid = e1\n"  # 1.0
                    "0 qid:3 1:2 2:2 #docid = e2\n")  # 3.0
    run_file = tmp_path / "run.txt"
    code, out, err = run(capsys, "predict", "--model", model, "--data", data, "--trec-run",
                         run_file, "--run-name", "myrun")
    assert code == 0, err
    assert out == f"wrote {run_file} (TREC run of 5 documents, 2 queries)\n"
    assert run_file.read_text() == ("7 Q0 d1 1 1.0 myrun\n"
                                    "7 Q0 d3 2 1.0 myrun\n"
                                    "7 Q0 d2 3 0.25 myrun\n"
                                    "3 Q0 e2 1 3.0 myrun\n"
                                    "3 Q0 e1 2 1.0 myrun\n")
    # without docids on every line: the row numbers; default run name; scores to stdout
    data.write_text("2 qid:7 1:0.5 2:1\n0 qid:7 1:0.25 #docid = d2\n")
    code, _, err = run(capsys, "predict", "--model", model, "--data", data, "--trec-run",
                       run_file)
    assert code == 0, err
    assert run_file.read_text() == "7 Q0 1 1 1.0 cvxrank\n7 Q0 2 2 0.25 cvxrank\n"
    code, out, err = run(capsys, "predict", "--model", model, "--data", data)
    assert code == 0 and out == "1.0\n0.25\n", err


@pytest.mark.parametrize("argv, fragment", [
    (["--run-name", "my run", "--trec-run", "r.txt"], "--run-name 'my run': expected a name"),
    (["--run-name", "x"], "--run-name applies to --trec-run only"),
    (["--out", "s.txt", "--trec-run", "r.txt"], "not allowed with argument"),
])
def test_predict_usage_errors(capsys, tmp_path, argv, fragment) -> None:
    model = linear_model(tmp_path, [1.0])
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    code, out, err = run(capsys, "predict", "--model", model, "--data", data,
                         *(str(tmp_path / a) if a.endswith(".txt") else a for a in argv))
    assert_one_line_error(code, out, err, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt", "linear.json"]


def test_predict_of_a_linear_model_imports_neither_cvxpy_nor_sklearn(tmp_path) -> None:
    model = linear_model(tmp_path, [1.0])
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    probe = ("import sys; from cvxrank.cli.main import main; code = main(sys.argv[1:]); "
             "heavy = {'cvxpy', 'sklearn', 'cvxrank.formulations'} & set(sys.modules); "
             "print(code, sorted(heavy), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", probe, "predict", "--model", str(model),
                             "--data", str(data)], capture_output=True, text=True, timeout=120,
                            env={**os.environ})
    assert result.stderr.strip().splitlines()[-1] == "0 []"


# --------------------------------------------------------------------------- OHSUMED


def test_ohsumed_fold1_model_trec_run_and_evaluate(capsys, shared_data, tmp_path) -> None:
    fold = shared_data / OHSUMED_FOLD1
    model, run_file = tmp_path / "m.json", tmp_path / "run.txt"
    report = run_json(capsys, "fit", "--C", "1e-3", "--train", fold / "train.txt", "--test",
                      fold / "test.txt", "--save-model", model)
    by_model = run_json(capsys, "evaluate", "--data", fold / "test.txt", "--model", model)
    assert measures_of(by_model) and all(report[k] == v for k, v in
                                         measures_of(by_model).items())
    certified = by_model["certified"]
    assert certified == {key: report["certified"][key] for key in certified}
    code, _, err = run(capsys, "predict", "--model", model, "--data", fold / "test.txt",
                       "--trec-run", run_file, "--run-name", "ranksvm")
    assert code == 0, err
    data = read_svmlight(fold / "test.txt")
    rows = [line.split() for line in run_file.read_text().splitlines()]
    assert len(rows) == data.n_documents and all(len(r) == 6 for r in rows)
    assert {r[0] for r in rows} == {str(q) for q in data.query_ids}
    assert sorted(r[2] for r in rows) == sorted(data.docid.tolist())
    for qid in data.query_ids[:5]:
        ranked = [r for r in rows if r[0] == str(qid)]
        assert [int(r[3]) for r in ranked] == list(range(1, len(ranked) + 1))
        scores = [float(r[4]) for r in ranked]
        assert scores == sorted(scores, reverse=True)


# ----------------------------------------------------------------- strict model files


def _mutants() -> list:
    """(name, change of the saved document, words of the one-line error)."""
    def set_key(key, value):
        return lambda doc: {**doc, key: value}

    def nested(doc):
        return "[" * 2000 + "]" * 2000

    return [
        ("deeply nested", nested, "nested too deeply"),
        ("weights as strings", lambda d: {**d, "w": [str(x) for x in d["w"]]}, "'w'"),
        ("weights as booleans", lambda d: {**d, "w": [True] * len(d["w"])}, "'w'"),
        ("weights null", lambda d: {**d, "w": [None] * len(d["w"])}, "'w'"),
        ("version true", set_key("version", True), "version true"),
        ("version 1.0", set_key("version", 1.0), "version 1.0"),
        ("negative radius", set_key("w_radius", -1), "'w_radius'"),
        ("negative gap", set_key("gap", -1e-3), "'gap'"),
        ("unknown status", set_key("status", "done"), "'status'"),
        ("converged against status", set_key("converged", False), "'converged'"),
        ("a basis in a RankSVM file", lambda d: {**d, "U": [[1.0]] * len(d["w"])}, "'U'"),
        ("an unknown key", set_key("comment", "x"), "'comment'"),
        ("an integer of 10^400", lambda d: {**d, "w": [10 ** 400] * len(d["w"])}, "'w'"),
    ]


@pytest.mark.parametrize("name,change,words", _mutants(), ids=[m[0] for m in _mutants()])
def test_a_mutated_model_file_is_refused_in_one_line(files, tmp_path, capsys, name, change,
                                                     words) -> None:
    train, test = files
    model = tmp_path / "model.json"
    assert run(capsys, "fit", "--train", train, "--save-model", model)[0] == 0
    doc = change(json.loads(model.read_text()))
    bad = tmp_path / "bad.json"
    bad.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    for args in (("predict", "--model", bad, "--data", test),
                 ("evaluate", "--model", bad, "--data", test)):
        assert_one_line_error(*run(capsys, *args), str(bad), words)
    with pytest.raises(DataFormatError, match="bad.json"):
        load_model(bad)


def test_ordinal_grades_must_be_distinct_and_thresholds_present(files, tmp_path,
                                                                capsys) -> None:
    train, test = files
    model = tmp_path / "model.json"
    assert run(capsys, "fit", "--method", "ocsvm", "--train", train, "--save-model",
               model)[0] == 0
    doc = json.loads(model.read_text())
    assert len(doc["thresholds"]) >= 2
    for key, value, words in (("grades", [doc["grades"][0]] * len(doc["grades"]), "distinct"),
                              ("thresholds", None, "'thresholds'")):
        bad = tmp_path / "bad.json"
        changed = {k: v for k, v in doc.items() if not (k == key and value is None)}
        if value is not None:
            changed[key] = value
        bad.write_text(json.dumps(changed))
        assert_one_line_error(*run(capsys, "predict", "--model", bad, "--data", test),
                              words)


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "directory"])
def test_a_model_path_that_is_no_regular_file_is_refused_at_once(files, tmp_path, capsys,
                                                                 special) -> None:
    _, test = files
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "model.fifo"
        os.mkfifo(path)
    elif special == "directory":
        path = tmp_path
    assert_one_line_error(*run(capsys, "predict", "--model", path, "--data", test),
                          str(path))


def test_scores_that_overflow_are_refused(files, tmp_path, capsys) -> None:
    train, test = files
    model = tmp_path / "model.json"
    assert run(capsys, "fit", "--train", train, "--save-model", model)[0] == 0
    doc = json.loads(model.read_text())
    doc["w"] = [1e308] * len(doc["w"])
    model.write_text(json.dumps(doc))
    assert_one_line_error(*run(capsys, "predict", "--model", model, "--data", test),
                          str(model), "not finite")


@pytest.mark.parametrize("method,normalize,loss", [("ranksvm", "zscore", "hinge"),
                                                   ("ocsvm", "none", None),
                                                   ("conerank", "none", None)])
def test_load_model_scores_as_the_command_line_bit_for_bit(shared_data, tmp_path, capsys,
                                                           method, normalize, loss) -> None:
    """``load_model(...).predict`` and ``cvxrank predict`` on OHSUMED Fold1 test: equal
    bits, and a file with fewer columns padded alike."""
    root = shared_data / OHSUMED_FOLD1
    model = tmp_path / "model.json"
    train = tmp_path / "train.txt"  # 12 queries of vali.txt: a fit of a second or less
    write_svmlight(read_svmlight(root / "vali.txt").subset(range(12)), train)
    args = ["fit", "--method", method, "--train", train, "--normalize",
            normalize, "--save-model", model, "--model-radius", "0", "--max-iter",
            "1" if method == "conerank" else "200"]  # any model will do: its scores
    if loss:
        args += ["--loss", loss]
    if method == "conerank":
        args += ["--scoring", "linear"]
    assert run(capsys, *args)[0] in (0, 3)
    test = read_svmlight(root / "test.txt")
    narrow = tmp_path / "narrow.txt"
    write_svmlight(test.with_features(np.asarray(test.X.toarray() if hasattr(
        test.X, "toarray") else test.X)[:, :-2]), narrow)
    estimator = load_model(model)
    for path in (root / "test.txt", narrow):
        data = read_svmlight(path)
        out = tmp_path / "scores.txt"
        assert run(capsys, "predict", "--model", model, "--data", path, "--out", out)[0] == 0
        cli = np.array([float(x) for x in out.read_text().split()])
        mine = estimator.predict(data.X, qid=data.qid)
        assert mine.tobytes() == cli.tobytes(), path
