"""String ops and the ai.onnx.ml ops on strings and labels against onnxruntime."""

from __future__ import annotations

import math
import re
import sys
import time
from typing import Any

import numpy as np
import pytest
from dtype_oracle import Array, D, assert_same, ort_node, strings
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import tensorloop as tl
from onnx_oracle import run_core
from tensorloop.errors import FormatError, GraphError, UnsupportedOpError
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
    with pytest.raises(GraphError, match=r"'\(unclosed' is not valid RE2 syntax: missing \)"):
        run_core("RegexFullMatch", [TEXT], {"pattern": "(unclosed"})


# -- RegexFullMatch: RE2, as onnxruntime runs it ---------------------------------------------
# Strings where RE2 and Python's re part: \v (not in RE2's \s), Unicode case folding (the
# long s, the Kelvin sign, ẞ), non-ASCII digits and letters (not in \d \w), combining marks, NUL.
REGEX_TEXT = strings(
    "", "a", "A", "abc", "ABC", "é", "É", "ß", "ẞ", "\u017f", "s", "k", "K", "\u212a", "٣", "5",
    "x\u00a0y", "x\vy", "x\ty", "a\nb", "a\n", "中文", "ǅ", "aé1_", "é_", "e\u0301", "🙂",
    "a b", "x1", "Straße", "STRASSE", "\x00", "a\x00b", "hello world !", "  a-b--c ",
)  # fmt: skip
REGEX_PATTERNS = [
    "", r"\d", r"\d+", r"\w+", r"\W", r"\s", r"x\sy", r"\S+", r"x\Sy", r"\bé\b", r"a\b.*",
    r"(?i)é", r"(?i)ß", r"(?i)s", r"(?i)k", r"(?i)strasse", r"(?i)\x{212a}", r"(?i)ǅ", ".", ".*",
    "(?s).*", "a$", "^a$", "(?m)a$", "(?m)^b", r"[[:alpha:]]+", r"[[:^space:]]", r"\pL+",
    r"\p{Han}+", r"\PL", r"[^a]", r"\x{e9}", r"[a-zé]+", "a*?", "(a|ab)(c|bcd)?", r"(?U)a+",
    r"\C", r"\C+", r"a\x00b", r"[\d\s]+", r"(?i)[a-z]+", r"\Q.*\E", r"\A.*\z",
    r"(?P<w>\w+) (?P<x>\w+) !", r"(?<w>a)", r"a{,2}", r"x{2}", r"[[:word:]]+",
    r"\w+ \w+ !", r"x\.\w\.[a-z]", r".*-{2}.*", r"(?i)HELLO.*", r"\s+a.*",
]  # fmt: skip


@pytest.mark.parametrize("pattern", REGEX_PATTERNS)
def test_regex_full_match_is_re2_as_onnxruntime_runs_it(pattern: str) -> None:
    attrs = {"pattern": pattern}
    (want,) = ort_node("RegexFullMatch", [REGEX_TEXT], attrs, [D.bool], opset=20)
    assert_same(run_core("RegexFullMatch", [REGEX_TEXT], attrs)[0], want, pattern)


_REGEX_ATOMS = [
    "a", "b", "A", "é", "ß", "k", "1", " ", "-", ".", r"\.", r"\d", r"\w", r"\s", r"\W", r"\S",
    r"\b", r"\B", r"\pL", r"\p{Han}", "[a-zé]", "[^a]", "[[:alpha:]]", r"\x{212a}", "\u017f", "^",
    "$", r"\z", r"\A", r"\v", r"[\d\s]",
    r"\1", "(?=a)",  # outside RE2's syntax: both refuse the pattern
]  # fmt: skip
_REGEX_ALPHABET = "aAbB1 _-.éÉß\u017fkK\u212a٣\t\v\n中🙂\x00"


def _regexes() -> st.SearchStrategy[str]:
    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.tuples(inner, inner).map("|".join),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}", "*?", "+?", "{2}"])).map(
                lambda p: f"(?:{p[0]}){p[1]}"
            ),
            st.tuples(st.sampled_from(["(", "(?:", "(?i:", "(?s:", "(?i)("]), inner).map(
                lambda p: f"{p[0]}{p[1]})"
            ),
        )

    return st.recursive(st.sampled_from(_REGEX_ATOMS), grow, max_leaves=6)


@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(
    _regexes(),
    st.lists(st.text(_REGEX_ALPHABET, max_size=6), min_size=1, max_size=16),
)
def test_regex_full_match_agrees_with_onnxruntime(pattern: str, items: list[str]) -> None:
    x = strings(*items)
    attrs = {"pattern": pattern}
    try:
        (want,) = ort_node("RegexFullMatch", [x], attrs, [D.bool], opset=20)
    except Exception:  # onnxruntime's RE2 refuses the pattern: so must tensorloop
        with pytest.raises(GraphError, match="RE2"):
            run_core("RegexFullMatch", [x], attrs)
        return
    assert_same(run_core("RegexFullMatch", [x], attrs)[0], want, pattern)


def test_regex_full_match_runs_in_linear_time() -> None:
    # (a+)+$ backtracks exponentially in Python's re (forty a's and a '!': never finishes)
    x = strings("a" * 40 + "!", "a" * 100_000 + "!", "a" * 100_000, "a" * 25 + "b")
    started = time.perf_counter()
    (got,) = run_core("RegexFullMatch", [x], {"pattern": "(a+)+$"})
    (nested,) = run_core("RegexFullMatch", [x], {"pattern": "(a|aa|a*)*(a*)*b"})
    assert time.perf_counter() - started < 0.5
    assert got.tolist() == [False, False, True, False]
    assert nested.tolist() == [False, False, False, True]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "backreferences"),
        (r"(?P<n>a)(?P=n)", "backreferences"),
        (r"(?P<n>a)\k<n>", "backreferences"),
        (r"(?=a)a", "lookahead"),
        (r"a(?!b)", "lookahead"),
        (r"(?<=a)b", "lookbehind"),
        (r"(?<!a)b", "lookbehind"),
        (r"a++", "possessive quantifiers"),
        (r"(?>a+)b", "atomic groups"),
        (r"(a)?(?(1)b|c)", "conditionals"),
        (r"a\Z", r"\\Z \(write \\z\)"),
    ],
)
def test_regex_outside_re2_syntax_is_refused_at_load(pattern: str, why: str) -> None:
    want = rf"pattern {re.escape(repr(pattern))}: RE2 does not support {why} .*RE2 syntax"
    with pytest.raises(GraphError, match=want):
        run_core("RegexFullMatch", [TEXT], {"pattern": pattern})
    with pytest.raises(Exception, match=r"(?i)pattern"):  # onnxruntime refuses them too
        ort_node("RegexFullMatch", [TEXT], {"pattern": pattern}, [D.bool], opset=20)
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)],
            "regex",
            [helper.make_tensor_value_info("x", TensorProto.STRING, [None])],
            [helper.make_tensor_value_info("y", TensorProto.BOOL, [None])],
        ),
        opset_imports=[helper.make_opsetid("", 20)],
    )
    with pytest.raises(FormatError, match=want):  # the ONNX reader's error names the node
        tl.load(model)


@pytest.mark.parametrize(
    "backend",
    [
        "reference",
        "compiled",
        pytest.param("jax", marks=pytest.mark.handoff("XLA has no strings: compiled runs them")),
    ],
)
def test_every_backend_matches_with_re2(backend: str) -> None:
    # x\sy on "x\vy" and (?i)k on the Kelvin sign: RE2's answers, not Python's re's
    g = tl.Graph("regex")
    x = g.add_input("x", tl.TensorType("string", ["n"]))
    g.set_outputs(
        [g.add_node("RegexFullMatch", [x], {"pattern": p}).output for p in (r"x\sy", "(?i)k")]
    )
    model = tl.Model(g)
    feed = {"x": strings("x\vy", "x y", "\u212a", "K", "\udcff")}
    out = model.run(feed, backend=backend)
    assert [v.tolist() for v in out.values()] == [
        [False, True, False, False, False],
        [False, False, True, True, False],
    ]


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


def test_regex_without_google_re2_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "re2", None)  # import re2 raises ImportError
    with pytest.raises(UnsupportedOpError, match=r"google-re2.*pip install google-re2"):
        run_core("RegexFullMatch", [TEXT], {"pattern": "a"})
