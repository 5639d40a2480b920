"""String ops and the ai.onnx.ml ops on strings and labels against onnxruntime."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from dtype_oracle import Array, D, assert_same, ort_node, strings

from onnx_oracle import run_core
from tensorloop.errors import GraphError
from tensorloop.tensor.dtypes import DType, dtype

# -- string ops ----------------------------------------------------------------------------------
TEXT = strings("hello world !", "  a-b--c ", "x.y.z", "o-n--n  x-", "a")


SPLITS = [{}, {"delimiter": "-"}, {"delimiter": "."}, {"maxsplit": 1}]


@pytest.mark.parametrize("attrs", [*SPLITS, {"delimiter": "-", "maxsplit": 2}])
def test_string_split_matches_onnxruntime(attrs: dict[str, Any]) -> None:
    x = TEXT.reshape(5, 1)
    want = ort_node("StringSplit", [x], attrs, [D.string, D.int64], opset=20)
    for g, w in zip(run_core("StringSplit", [x], attrs), want, strict=True):
        assert_same(g, w)


def test_string_split_corner_cases() -> None:
    # Every whitespace character separates (onnxruntime splits at spaces only), and an empty
    # string is one empty part when a delimiter is given (onnxruntime: none), as in Python.
    parts, counts = run_core("StringSplit", [strings("tab\tsep\n x", "")])
    assert parts.tolist() == [["tab", "sep", "x"], ["", "", ""]] and counts.tolist() == [3, 0]
    parts, counts = run_core("StringSplit", [strings("", "a;b")], {"delimiter": ";"})
    assert parts.tolist() == [["", ""], ["a", "b"]] and counts.tolist() == [1, 2]
    parts, counts = run_core("StringSplit", [strings().reshape(0, 2)])
    assert parts.shape == (0, 2, 0) and counts.shape == (0, 2)


def test_string_concat_and_regex_match_onnxruntime() -> None:
    x, y = TEXT.reshape(5, 1), strings("?", "é中")
    (want,) = ort_node("StringConcat", [x, y], {}, [D.string], opset=20)
    assert_same(run_core("StringConcat", [x, y])[0], want)
    for pattern in [r"\w+ \w+ !", r"x\.\w\.[a-z]", r".*-{2}.*", "", r"(?i)HELLO.*", r"\s+a.*"]:
        attrs = {"pattern": pattern}
        (want,) = ort_node("RegexFullMatch", [TEXT], attrs, [D.bool], opset=20)
        assert_same(run_core("RegexFullMatch", [TEXT], attrs)[0], want, pattern)
    with pytest.raises(GraphError, match="not a valid regex"):
        run_core("RegexFullMatch", [TEXT], {"pattern": "(unclosed"})


@pytest.mark.parametrize(
    ("x", "attrs"),
    [
        (strings("Monday", "tuesday", "MONDAY", "Straße", "ǅ"), {"stopwords": ("monday", "ǆ")}),
        (strings("Monday", "tuesday", "Straße"),
         {"case_change_action": "UPPER", "is_case_sensitive": 1, "stopwords": ("Monday",)}),
        (strings("İx", "ABC").reshape(1, 2), {"case_change_action": "LOWER"}),
        (strings("ᾀß", "ﬁ ǰ", "ǆ"), {"case_change_action": "UPPER"}),
        (strings("a", "A").reshape(1, 2), {"stopwords": ("a",)}),
    ],
)  # fmt: skip
def test_string_normalizer_matches_onnxruntime(x: Array, attrs: dict[str, Any]) -> None:
    # onnxruntime needs an installed locale; tensorloop ignores ``locale`` and folds Unicode.
    (want,) = ort_node("StringNormalizer", [x], {**attrs, "locale": "C.UTF-8"}, [D.string])
    assert_same(run_core("StringNormalizer", [x], attrs)[0], want)


ML = "ai.onnx.ml"
LABEL_CASES = [
    (strings("a", "b", "zz", "c"), D.int64,
     {"keys_strings": ("a", "b", "c"), "values_int64s": (1, 2, 3)}),
    (np.array([[1, 5], [9, 2]], np.int64), D.string,
     {"keys_int64s": (1, 2), "values_strings": ("one", "two"), "default_string": "?"}),
    (np.array([1.5, math.nan, -0.0, 7], np.float32), D.float32,
     {"keys_floats": (1.5, math.nan, 0.0), "values_floats": (10.0, 20.0, 30.0)}),
    (np.array([3, 4], np.int64), D.float32,
     {"keys_int64s": (3,), "values_floats": (0.5,), "default_float": 9.0}),
]  # fmt: skip


@pytest.mark.parametrize(("x", "out", "attrs"), LABEL_CASES)
def test_label_encoder_matches_onnxruntime(x: Array, out: DType, attrs: dict[str, Any]) -> None:
    (want,) = ort_node("LabelEncoder", [x], attrs, [out], domain=ML)
    assert_same(run_core("LabelEncoder", [x], attrs)[0], want)


def test_label_encoder_repeated_keys_take_the_last_value() -> None:
    # The spec's rule; onnxruntime keeps the first.
    attrs = {"keys_strings": ("a", "b", "a"), "values_int64s": (1, 2, 3)}
    assert run_core("LabelEncoder", [strings("a", "b", "c")], attrs)[0].tolist() == [3, 2, -1]


def test_label_encoder_tensor_attributes() -> None:
    attrs = {
        "keys_tensor": np.array([1, 2], np.int32),
        "values_tensor": np.array([10, 20], np.int16),
        "default_tensor": np.array([-7], np.int16),
    }
    (got,) = run_core("LabelEncoder", [np.array([2, 3, 1], np.int32)], attrs)
    assert_same(got, np.array([20, -7, 10], np.int16))
    with pytest.raises(GraphError, match="input #0: expected i32 like the keys"):
        run_core("LabelEncoder", [np.array([2], np.int64)], attrs)
    with pytest.raises(GraphError, match="exactly one of keys_floats"):
        run_core("LabelEncoder", [np.array([2], np.int64)], {"values_int64s": (1,)})


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.arange(12, dtype=np.float32).reshape(3, 4), np.array([0, 3, 3], np.int64)),
        (np.arange(5, dtype=np.int64), np.array([[4], [1]], np.int64)),
        (strings("a", "b", "c").reshape(1, 3), np.array(2, np.int64)),
    ],
)
def test_array_feature_extractor_matches_onnxruntime(x: Array, y: Array) -> None:
    (want,) = ort_node("ArrayFeatureExtractor", [x, y], {}, [dtype(x.dtype)], domain=ML)
    assert_same(run_core("ArrayFeatureExtractor", [x, y])[0], want)


def test_binarizer() -> None:
    x = np.array([0.5, 1.0, 1.5, math.nan, -math.inf], np.float64)
    (got,) = run_core("Binarizer", [x], {"threshold": 1.0})
    assert_same(got, np.array([0, 0, 1, 0, 0], np.float64))


TFIDF = {
    "max_gram_length": 2,
    "min_gram_length": 1,
    "max_skip_count": 2,
    "ngram_counts": (0, 4),
    "ngram_indexes": (5, 1, 2, 3, 0, 4, 6),
    "pool_int64s": (2, 3, 5, 4, 5, 6, 7, 8, 6, 7),
}


TOKENS = np.array([2, 3, 5, 5, 6, 7, 8, 6, 7, 2], np.int64)
WEIGHTS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5)
WORDS = {
    "max_gram_length": 2, "min_gram_length": 1, "max_skip_count": 1, "mode": "TF",
    "ngram_counts": (0, 2), "ngram_indexes": (0, 1, 2, 3),
    "pool_strings": ("a", "c", "a", "b", "b", "a"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("x", "attrs"),
    [
        (np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32), {**TFIDF, "mode": "TF"}),
        (TOKENS, {**TFIDF, "mode": "IDF", "weights": WEIGHTS}),
        (TOKENS, {**TFIDF, "mode": "TFIDF", "weights": WEIGHTS, "min_gram_length": 2}),
        (strings("a", "b", "a", "c", "b", "a"), WORDS),
    ],
)
def test_tfidf_vectorizer_matches_onnxruntime(x: Array, attrs: dict[str, Any]) -> None:
    (want,) = ort_node("TfIdfVectorizer", [x], attrs, [D.float32], opset=9)
    assert_same(run_core("TfIdfVectorizer", [x], attrs)[0], want)
