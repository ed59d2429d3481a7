"""The model file of ``cvxrank fit --save-model``, read back by ``cvxrank predict``,
``cvxrank evaluate --model`` and :func:`cvxrank.load_model`.

This module is the one place that writes, reads and checks the format. A model file is one
plain JSON object (never a pickle: reading a model runs no code) with these keys:

``format``, ``version``
    ``"cvxrank-model"`` and :data:`VERSION`; a file without them, or of another version, is
    refused.
``method``, ``loss``, ``params``
    The method's name in :data:`cvxrank.methods.METHODS`, its loss, and the parameters the
    fit was given (``{"C": 0.001}``; ConeRank's ``K``, ``scoring``, ``mu``; a parameter left
    to its default is absent).
``n_features``
    The number of feature columns of the training data: data of another width is refused.
``normalization``
    ``{"kind": KIND}`` (:data:`cvxrank.data.normalize.NORMALIZATIONS`), with the training
    columns' ``shift`` and ``scale`` for ``zscore`` and ``minmax``: the map applied to the
    training features, and so to any data the model scores (:meth:`SavedModel.features`).
``training_data``
    ``file`` (as given to ``fit``), ``fingerprint`` (a hash of the training data as read,
    before normalization: :func:`cvxrank.formulations.base.data_fingerprint`),
    ``n_documents`` and ``n_queries``.
``solver``, ``iterations``, ``objective``
    The solver that made the model, its iterations, and the primal objective at the model.
``status``, ``converged``, ``gap``, ``relative_gap``, ``w_radius``
    The fit's certificate (:meth:`cvxrank.core.trace.Run.certificate`): why it stopped, the
    certified duality gap and the certified bound on ``||w - w*||``; null where there is
    none (ConeRank's, a run without a dual).
the arrays
    ``w``, the scoring weights (``n_features``); OC SVM adds its ``thresholds`` and the
    ``grades`` they separate; ConeRank has its basis ``U`` (``n_features`` x K) and its
    linear scorer ``v`` instead of ``w``.

Every problem found in a file is a :class:`~cvxrank.errors.DataFormatError` naming it: the
command line reports it as one line, exit code 2.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from cvxrank.data.normalize import COLUMN_NORMALIZATIONS, NORMALIZATIONS, Normalization
from cvxrank.data.ranking_data import MAX_GRADE, RankingData, row_scores
from cvxrank.errors import DataFormatError
from cvxrank.methods import METHODS, Method, is_reference
from cvxrank.utils.jsonable import to_jsonable
from cvxrank.utils.output_files import write_text_atomically

#: The ``format`` of a model file.
FORMAT = "cvxrank-model"

#: The version this cvxrank writes and reads.
VERSION = 1

#: The arrays a model file may hold, in the order they are written.
ARRAY_NAMES = ("w", "thresholds", "grades", "U", "v")

#: The keys of the fit's certificate, in the order they are written.
CERTIFICATE_KEYS = ("status", "converged", "gap", "relative_gap", "w_radius")

#: Every key a model file has (the arrays by method: :data:`METHOD_ARRAYS`).
KEYS = frozenset({"format", "version", "method", "loss", "params", "n_features",
                  "normalization", "training_data", "solver", "iterations", "objective",
                  *CERTIFICATE_KEYS})

#: The arrays of each method's model files; a method not named has ``w`` alone.
METHOD_ARRAYS = {"conerank": frozenset({"U", "v"}),
                 "ocsvm": frozenset({"w", "thresholds", "grades"})}

#: Largest model file read (bytes): a 10^6-feature model's weights take about 25 MB.
MAX_BYTES = 256 * 2**20

#: The statuses a model file may record (:class:`cvxrank.core.trace.Status`).
STATUSES = ("converged", "max_iter", "time_budget", "interrupted", "numerical")


@dataclass(frozen=True, eq=False)
class SavedModel:
    """A fitted model as a model file holds it (module docstring).

    Attributes
    ----------
    method, loss : str
        The method (:data:`cvxrank.methods.METHODS`) and its loss.
    params : dict
        The parameters the fit was given (formulation and solver parameters).
    n_features : int
        The width of the training data.
    normalization : Normalization
        The feature map applied to the training data and to any data the model scores.
    training_data : dict
        ``file``, ``fingerprint``, ``n_documents``, ``n_queries``.
    solver : str
        The solver that made the model.
    iterations : int
        Its iterations.
    objective : float
        The primal objective at the model (NaN when unknown).
    status : str
        Why the solver stopped (a :class:`cvxrank.core.trace.Status` value).
    converged : bool
        Whether it met its tolerance.
    gap, relative_gap : float
        The certified duality gap, absolute and relative (NaN without one).
    w_radius : float
        The certified bound on ``||w - w*||`` (infinite without one).
    arrays : dict of str to ndarray
        The model's arrays (:data:`ARRAY_NAMES`).
    path : str or None
        The file it was read from, for messages.
    """

    method: str
    loss: str
    params: dict[str, Any]
    n_features: int
    normalization: Normalization
    training_data: dict[str, Any]
    solver: str
    iterations: int
    objective: float
    status: str
    converged: bool
    gap: float
    relative_gap: float
    w_radius: float
    arrays: dict[str, np.ndarray]
    path: str | None = None

    @property
    def weights(self) -> np.ndarray:
        """The linear scorer: ``w``, or ConeRank's ``v``."""
        return self.arrays["w"] if "w" in self.arrays else self.arrays["v"]

    @property
    def scoring(self) -> str:
        """``"vote"`` for ConeRank's Alg. 2 (a basis ``U`` and ``scoring`` not
        ``"linear"``), else ``"linear"`` (``X @ weights``)."""
        if "U" in self.arrays and self.params.get("scoring", "vote") == "vote":
            return "vote"
        return "linear"

    def features(self, data: RankingData, source: str | None = None) -> RankingData:
        """``data`` as the model scores it: :attr:`n_features` columns, then mapped by
        :attr:`normalization`. A file with fewer columns is padded with zeros (SVMlight
        leaves zero features out, so a file whose last features are 0 everywhere reads
        narrower); one with more is refused.

        Raises
        ------
        DataFormatError
            Naming the model file and ``source`` (default ``data.source``) with both
            feature counts, when the data has features the model was not trained on.
        """
        if data.n_features > self.n_features:
            where = source or data.source or "the data"
            raise DataFormatError(self.path or "the model", None,
                                  f"the model has {self.n_features} features but {where} has "
                                  f"{data.n_features}; it scores only data with the features "
                                  "it was trained on")
        if data.n_features < self.n_features:
            data = data.pad_features(self.n_features)
        return self.normalization.apply(data)

    def document(self) -> dict[str, Any]:
        """The JSON object of the model file (plain values: NaN and infinities as null)."""
        norm: dict[str, Any] = {"kind": self.normalization.kind}
        if self.normalization.kind in COLUMN_NORMALIZATIONS:
            norm.update(shift=self.normalization.shift, scale=self.normalization.scale)
        certificate = {key: getattr(self, key) for key in CERTIFICATE_KEYS}
        arrays = {name: self.arrays[name] for name in ARRAY_NAMES if name in self.arrays}
        return to_jsonable({
            "format": FORMAT, "version": VERSION, "method": self.method, "loss": self.loss,
            "params": self.params, "n_features": self.n_features, "normalization": norm,
            "training_data": self.training_data, "solver": self.solver,
            "iterations": self.iterations, "objective": self.objective, **certificate,
            **arrays,
        })


def linear_scores(X: np.ndarray | Any, weights: np.ndarray, *,
                  source: str | None = None) -> np.ndarray:
    """The scores ``X @ weights`` of a linear model, the one arithmetic of ``cvxrank
    predict``, ``evaluate --model`` and the estimators' ``predict``
    (:func:`~cvxrank.data.ranking_data.row_scores`: row by row, identical documents scored
    alike), refused when they are not finite.

    Raises
    ------
    DataFormatError
        Naming ``source`` (the model file), for scores that overflow float64.
    """
    scores = row_scores(X, weights)
    if not np.all(np.isfinite(scores)):
        raise DataFormatError(source or "the model", None, "its scores of the data are not "
                              "finite (weights too large for these features: the products "
                              "overflow float64)")
    return scores


def write_model(path: str | os.PathLike[str], model: SavedModel) -> None:
    """Write ``model`` to ``path`` as JSON, through a temporary file renamed into place
    (:func:`cvxrank.utils.output_files.write_text_atomically`)."""
    write_text_atomically(path, json.dumps(model.document(), indent=2, allow_nan=False) + "\n")


def read_model(path: str | os.PathLike[str]) -> SavedModel:
    """The model of a file written by :func:`write_model`, checked.

    Raises
    ------
    DataFormatError
        Naming the file, for one that is not UTF-8 JSON, not a cvxrank model, of another
        :data:`VERSION`, or whose fields or arrays are missing or malformed (an unknown
        method or loss, arrays of the wrong shape or not finite, ...).
    OSError
        When the file cannot be read.
    """
    path = os.fspath(path)
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise DataFormatError(path, None, f"{kind} (a device, a FIFO, a directory); name a "
                              "model file of `cvxrank fit --save-model`")
    if info.st_size > MAX_BYTES:
        raise DataFormatError(path, None, f"{info.st_size:,} bytes is more than a model file "
                              f"holds (at most {MAX_BYTES:,})")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh, parse_constant=_refuse_constant)
    except RecursionError:
        raise DataFormatError(path, None, "not a model file (JSON nested too deeply)") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, f"not a JSON model file (not UTF-8 text: "
                              f"{exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, f"not a JSON model file ({exc.msg}); is it "
                              "complete?") from None
    except ValueError as exc:  # NaN or Infinity, refused by _refuse_constant
        raise DataFormatError(path, None, f"not a JSON model file ({exc})") from None
    return _Fields(path, doc).model()


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


class _Fields:
    """Reads and checks the fields of a model file's JSON object ``doc``."""

    def __init__(self, path: str, doc: Any) -> None:
        self.path = path
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            self.fail(f'not a cvxrank model file (no "format": "{FORMAT}"); save one with '
                      "`cvxrank fit --save-model`")
        version = doc.get("version")
        if not (_is_int(version) and version == VERSION):
            self.fail(f"model format version {_shown(version)} is not supported (this "
                      f"cvxrank reads version {VERSION}); save the model again with this "
                      "cvxrank's `cvxrank fit --save-model`")
        self.doc = doc

    def fail(self, message: str) -> NoReturn:
        """Raise :class:`DataFormatError` naming the file."""
        raise DataFormatError(self.path, None, message)

    def get(self, key: str, check: Callable[[Any], bool], expected: str) -> Any:
        """The value of ``key``, refused unless ``check(value)``."""
        if key not in self.doc:
            self.fail(f"the field {key!r} is missing")
        value = self.doc[key]
        if not check(value):
            self.fail(f"the field {key!r} is {_shown(value)}; expected {expected}")
        return value

    def number(self, key: str, *, missing: float, low: float = -math.inf) -> float:
        """A number (at least ``low``) or null (``missing``)."""
        value = self.get(key, lambda v: v is None or _is_number(v) and v >= low,
                         "a number or null" if low == -math.inf else f"a number >= {low:g} "
                         "or null")
        return missing if value is None else float(value)

    def model(self) -> SavedModel:
        """The checked :class:`SavedModel`."""
        name = self.get("method", lambda v: isinstance(v, str) and v in METHODS,
                        f"one of {', '.join(METHODS)}")
        method = METHODS[name]
        loss = self.get("loss", lambda v: isinstance(v, str) and (
            v in method.losses or (method.takes_pair_losses and is_reference(v))),
            f"a loss of {name}: {', '.join(method.losses)}"
            + (" or a pair loss as module:object" if method.takes_pair_losses else ""))
        n = self.get("n_features", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
        arrays = METHOD_ARRAYS.get(name, frozenset({"w"}))
        unknown = sorted(set(self.doc) - KEYS - arrays)
        if unknown:
            self.fail(f"the field {unknown[0]!r} is not one of a {name} model file's")
        status = self.get("status", lambda v: v in STATUSES, f"one of {', '.join(STATUSES)}")
        return SavedModel(
            method=name, loss=loss, params=self.params(method), n_features=n,
            normalization=self.normalization(n),
            training_data=self.get("training_data", lambda v: isinstance(v, dict) and (
                isinstance(v.get("fingerprint"), str)), 'an object with a "fingerprint"'),
            solver=self.get("solver", lambda v: isinstance(v, str), "a string"),
            iterations=self.get("iterations", lambda v: _is_int(v) and v >= 0,
                                "an integer >= 0"),
            objective=self.number("objective", missing=math.nan),
            status=status,
            converged=self.get("converged", lambda v: v is (status == "converged"),
                               f"{str(status == 'converged').lower()} (the status is "
                               f"{status})"),
            gap=self.number("gap", missing=math.nan, low=0.0),
            relative_gap=self.number("relative_gap", missing=math.nan, low=0.0),
            w_radius=self.number("w_radius", missing=math.inf, low=0.0),
            arrays=self.arrays(n, arrays),
            path=self.path,
        )

    def params(self, method: Method) -> dict[str, Any]:
        """The ``params`` field: parameters of ``method``, each of its kind
        (:class:`cvxrank.methods.Param`)."""
        taken = {p.name: p for p in method.params}
        return self.get("params", lambda v: isinstance(v, dict) and all(
            k in taken and taken[k].constraint.accepts(x) for k, x in v.items()),
            f"an object of {method.name}'s parameters ({', '.join(taken) or 'none'}), "
            "each of its kind")

    def normalization(self, n: int) -> Normalization:
        """The ``normalization`` field, its statistics checked against ``n`` features."""
        norm = self.get("normalization", lambda v: isinstance(v, dict) and (
            v.get("kind") in NORMALIZATIONS),
            f"an object with a kind of {', '.join(NORMALIZATIONS)}")
        if norm["kind"] not in COLUMN_NORMALIZATIONS:
            return Normalization(norm["kind"])
        shift = self.array(norm.get("shift"), "normalization shift", (n,))
        scale = self.array(norm.get("scale"), "normalization scale", (n,))
        if not np.all(scale > 0):
            self.fail("the normalization scale has an entry <= 0; expected positive scales")
        return Normalization(norm["kind"], shift=shift, scale=scale)

    def arrays(self, n: int, names: frozenset[str]) -> dict[str, np.ndarray]:
        """The model's arrays, those of its method (``names``: ``w``, or ConeRank's ``U``
        and ``v``, OC SVM's ``w``, thresholds and grades), their shapes checked against
        ``n`` features; OC SVM's grades distinct integers in increasing order."""
        missing = sorted(names - set(self.doc))
        if missing:
            self.fail(f"the array {missing[0]!r} is missing (a {self.doc['method']} model "
                      f"holds {', '.join(sorted(names))})")
        present = set(names)
        out: dict[str, np.ndarray] = {}
        for name in ("w", "v"):
            if name in present:
                out[name] = self.array(self.doc[name], name, (n,))
        if "U" in present:
            out["U"] = self.array(self.doc["U"], "U", (n, None))
        if "grades" in present:
            grades = self.array(self.doc["grades"], "grades", (None,))
            if not (np.all(grades == np.round(grades)) and np.all(np.diff(grades) > 0)
                    and grades.min() >= 0 and grades.max() <= MAX_GRADE):
                self.fail(f"the array 'grades' is {_shown(self.doc['grades'])}; expected "
                          f"distinct integers of 0 to {MAX_GRADE} in increasing order")
            out["grades"] = grades
            # thresholds need not be sorted: the fixed-margin OC SVM's optimum can cross
            # them (a grade then never predicted), as on OHSUMED Fold1 vali.txt
            out["thresholds"] = self.array(self.doc["thresholds"], "thresholds",
                                           (grades.size - 1,))
        return out

    def array(self, value: Any, name: str, shape: tuple[int | None, ...]) -> np.ndarray:
        """``value`` as a finite float64 array of ``shape`` (None: any length >= 1)."""
        dims = ["any" if s is None else str(s) for s in shape]
        expected = f"shape ({dims[0]},)" if len(dims) == 1 else f"shape ({', '.join(dims)})"
        out = np.asarray(value, dtype=np.float64) if _numbers(value, len(shape)) else None
        ok = out is not None and out.ndim == len(shape) and all(
            (s is None and k >= 1) or s == k for s, k in zip(shape, out.shape, strict=True))
        if not ok or not np.all(np.isfinite(out)):
            got = "not an array of numbers" if out is None else (
                f"of shape {out.shape}" if not ok else "not finite everywhere")
            self.fail(f"the array {name!r} is {got}; expected finite numbers of {expected}")
        return out


def _is_number(value: Any) -> bool:
    """A JSON number that is a finite float64 (not a boolean; an integer too large for
    float64 is not)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _numbers(value: Any, depth: int) -> bool:
    """Whether ``value`` is a list (of lists, ``depth`` levels) of JSON numbers
    (:func:`_is_number`): no strings, booleans or nulls that numpy would convert."""
    if depth == 0:
        return _is_number(value)
    return isinstance(value, list) and all(_numbers(v, depth - 1) for v in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """``value`` for a message, shortened to one short line."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
