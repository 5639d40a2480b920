"""String ops (StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer,
StringTensorUnpack, StringTensorPack) and the ai.onnx.ml ops LabelEncoder, Binarizer and
ArrayFeatureExtractor."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import UnsupportedOpError
from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType, from_numpy, string_array
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import broadcast_dims, expect, expect_one_of, reported

Array = np.ndarray[Any, Any]
CASE_ACTIONS = ("NONE", "LOWER", "UPPER")
TFIDF_MODES = ("TF", "IDF", "TFIDF")
_LIST = (tuple, list)

# Helpers shared with the reference kernels; they raise ValueError, re-raised by each side.


_UNSUPPORTED = [
    # (a fragment of RE2's error message, what it is), most specific first
    (r"invalid escape sequence: \\[1-9]", "backreferences"),
    (r"invalid escape sequence: \\[gk]", "backreferences"),
    (r"invalid perl operator: \(\?[=!]", "lookahead"),
    (r"invalid perl operator: \(\?<[=!]", "lookbehind"),
    (r"invalid perl operator: \(\?>", "atomic groups"),
    (r"invalid perl operator: \(\?\(", "conditionals"),
    (r"invalid perl operator: \(\?(R|[0-9+-]|&|P>)", "recursion"),
    (r"invalid perl operator: \(\?#", "comments"),
    (r"bad repetition operator: [*+?}]\+", "possessive quantifiers"),
    (r"invalid escape sequence: \\Z", "\\Z (write \\z)"),
    (r"invalid escape sequence: \\[uU]", "\\u escapes (write \\x{...})"),
]


class Regex:
    """RegexFullMatch's pattern compiled by RE2, as onnxruntime compiles it (UTF-8, RE2's
    syntax: \\d \\s \\w \\b ASCII-only, (?i) folding all of Unicode, no backreferences or
    lookaround), matched in time linear in the string's length."""

    __slots__ = ("_regexp", "pattern")

    def __init__(self, pattern: str, regexp: Any) -> None:
        self.pattern = pattern
        self._regexp = regexp

    def fullmatch(self, text: str | bytes) -> bool:
        """Whether all of ``text`` matches, matched on its UTF-8 bytes as onnxruntime does (a
        lone surrogate U+DC80..U+DCFF, an undecodable byte as the string ops keep it, is that
        byte again; other lone surrogates are their CESU-8 bytes). A TypeError for what is
        neither str nor bytes."""
        if isinstance(text, bytes):
            data = text
        elif isinstance(text, str):
            try:
                data = text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                data = text.encode("utf-8", "surrogatepass")
        else:
            raise TypeError(f"expected strings, got a {type(text).__name__} {text!r:.40}")
        return self._regexp.fullmatch(data) is not None


def compile_pattern(pattern: str) -> Regex:
    """RegexFullMatch's ``pattern`` compiled with RE2 (the ``google-re2`` binding), as the ONNX
    spec names and onnxruntime runs it; a ValueError saying why where RE2 refuses it
    (Python's ``re`` extras such as backreferences and lookaround among them)."""
    re2 = _re2()
    shown = repr(pattern) if len(pattern) <= 80 else f"{pattern[:60]!r}... ({len(pattern)} chars)"
    options = re2.Options()
    options.log_errors = False  # onnxruntime's RE2::Quiet: the error is ours to report
    try:
        return Regex(pattern, re2.compile(pattern, options))
    except UnicodeEncodeError:
        raise ValueError(f"pattern {shown} is not valid Unicode (a lone surrogate)") from None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        reason = reason if len(reason) <= 200 else reason[:200] + "..."
        if "(?P=" in pattern and "invalid perl operator: (?P" in reason:
            feature: str | None = "backreferences"
        else:
            feature = next((f for rx, f in _UNSUPPORTED if re.search(rx, reason)), None)
        if feature is not None:
            raise ValueError(
                f"pattern {shown}: RE2 does not support {feature} ({reason}; "
                "RegexFullMatch takes RE2 syntax)"
            ) from None
        raise ValueError(
            f"pattern {shown} is not valid RE2 syntax: {reason} (RegexFullMatch takes RE2 syntax)"
        ) from None


def _re2() -> Any:
    """The ``re2`` module of the ``google-re2`` package (a dependency of tensorloop)."""
    try:
        import re2
    except ImportError as exc:
        raise UnsupportedOpError(
            f"RegexFullMatch needs the google-re2 package, which cannot be imported ({exc}): "
            "install it with `pip install google-re2`"
        ) from None
    return re2


def _one_of(attrs: dict[str, Any], prefix: str, kinds: Mapping[str, type | None]) -> Array:
    """The one ``prefix`` + kind attribute that is set, as a 1-D array of its element type."""
    given = [k for k in kinds if attrs.get(prefix + k) is not None]
    if len(given) != 1:
        names = ", ".join(prefix + k for k in kinds)
        raise ValueError(f"exactly one of {names} must be set, got {len(given)}")
    value = attrs[prefix + given[0]]
    kind = kinds[given[0]]
    if kind is None:
        return np.asarray(value).reshape(-1)
    return string_array(value) if kind is object else np.asarray(value, dtype=kind).reshape(-1)


_LABEL_KINDS = {"floats": np.float32, "int64s": np.int64, "strings": object, "tensor": None}


def label_tables(attrs: dict[str, Any]) -> tuple[Array, Array, Array]:
    """LabelEncoder's keys, values (same length) and default (a 0-d array of the values' type)."""
    keys, values = _one_of(attrs, "keys_", _LABEL_KINDS), _one_of(attrs, "values_", _LABEL_KINDS)
    if len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    kind = from_numpy(values)
    if attrs.get("default_tensor") is not None:
        default = np.asarray(attrs["default_tensor"])
        if default.size != 1 or from_numpy(default) != kind:
            raise ValueError(
                f"default_tensor must hold one {kind}, got {default.dtype}{default.shape}"
            )
        return keys, values, default.reshape(())
    if kind is DType.string:
        return keys, values, string_array([attrs["default_string"]], ())
    key = "default_float" if kind.is_float else "default_int64"
    return keys, values, np.asarray(attrs[key], dtype=kind.numpy)


def tfidf_pool(attrs: dict[str, Any]) -> list[tuple[int, Array, Array]]:
    """TfIdfVectorizer's pool per n-gram length: (n, n-grams as [count, n], output indexes)."""
    pool = _one_of(attrs, "pool_", {"int64s": np.int64, "strings": object})
    starts, indexes = list(attrs["ngram_counts"]), np.asarray(attrs["ngram_indexes"], np.int64)
    lo, hi = attrs["min_gram_length"], attrs["max_gram_length"]
    if not 1 <= lo <= hi or len(starts) < hi:
        raise ValueError(
            f"need 1 <= min_gram_length ({lo}) <= max_gram_length ({hi}) and a start per length "
            f"in ngram_counts {starts}"
        )
    ends = [*starts[1:], len(pool)]
    out, taken = [], 0
    for n, (start, end) in enumerate(zip(starts, ends, strict=True), start=1):
        if not 0 <= start <= end <= len(pool) or (end - start) % n:
            raise ValueError(f"ngram_counts {starts} do not split the pool into {n}-grams")
        count = (end - start) // n
        if lo <= n <= hi:
            out.append((n, pool[start:end].reshape(count, n), indexes[taken : taken + count]))
        taken += count
    if taken != len(indexes):
        raise ValueError(f"the pool holds {taken} n-grams, ngram_indexes lists {len(indexes)}")
    if np.any(indexes < 0):
        raise ValueError(f"ngram_indexes {indexes.tolist()} holds a negative index")
    return out


@op(
    "StringNormalizer",
    attrs={
        "case_change_action": AttrSpec(str, "NONE"),
        "is_case_sensitive": AttrSpec(int, 0),
        "locale": AttrSpec(str, ""),
        "stopwords": AttrSpec(_LIST, ()),
    },
)
def _string_normalizer(ctx: InferContext) -> list[Type]:
    """The [C] or [1, C] strings without the ``stopwords`` (compared ignoring case unless
    ``is_case_sensitive``), then LOWER- or UPPER-cased per ``case_change_action``, one character
    at a time (ß stays ß). If none is left the result is one empty string, [1] or [1, 1].
    ``locale`` is accepted and ignored: case follows Unicode."""
    x = expect_one_of(ctx, 0, {DType.string})
    if ctx.attr("case_change_action") not in CASE_ACTIONS:
        raise ctx.error(
            f"case_change_action must be one of {', '.join(CASE_ACTIONS)}, "
            f"got {ctx.attr('case_change_action')!r}"
        )
    if x.shape is None:
        return [x]
    if len(x.shape) not in (1, 2) or (len(x.shape) == 2 and x.shape[0] not in (1, UNKNOWN)):
        raise ctx.error(f"input #0: expected [C] or [1, C] strings, got {x}")
    if not ctx.attr("stopwords"):
        return [x]
    return [x.with_shape([*x.shape[:-1], UNKNOWN])]


@op("StringSplit", attrs={"delimiter": AttrSpec(str, ""), "maxsplit": AttrSpec(int, None)})
def _string_split(ctx: InferContext) -> list[Type]:
    """Each string split at ``delimiter`` (empty or unset: runs of whitespace, ignoring leading
    and trailing ones), at most ``maxsplit`` times. Y gains a last axis as long as the most
    parts any string has, padded with empty strings; Z counts each string's parts."""
    x = expect_one_of(ctx, 0, {DType.string})
    shape = None if x.shape is None else [*x.shape, UNKNOWN]
    return [TensorType(DType.string, shape), x.with_dtype(DType.int64)]


@op("StringConcat", inputs=2)
def _string_concat(ctx: InferContext) -> list[Type]:
    """X + Y per element (concatenated strings), broadcast NumPy-style."""
    x, y = expect_one_of(ctx, 0, {DType.string}), expect_one_of(ctx, 1, {DType.string})
    return [TensorType(DType.string, broadcast_dims(ctx, [x.shape, y.shape]))]


@op("RegexFullMatch", attrs={"pattern": AttrSpec(str, "")})
def _regex_full_match(ctx: InferContext) -> list[Type]:
    """True where the whole string matches ``pattern``, in RE2's syntax and semantics (as
    onnxruntime runs it: linear time, no backreferences or lookaround, which are refused)."""
    x = expect_one_of(ctx, 0, {DType.string})
    with reported(ctx):
        compile_pattern(ctx.attr("pattern"))
    return [x.with_dtype(DType.bool)]


_NUMERIC = {DType.float32, DType.float64, DType.int64, DType.int32}


@op(
    "LabelEncoder",
    attrs={
        **{f"keys_{kind}": AttrSpec(_LIST, None) for kind in ("floats", "int64s", "strings")},
        **{f"values_{kind}": AttrSpec(_LIST, None) for kind in ("floats", "int64s", "strings")},
        "keys_tensor": AttrSpec(np.ndarray, None),
        "values_tensor": AttrSpec(np.ndarray, None),
        "default_float": AttrSpec((float, int), -0.0),
        "default_int64": AttrSpec(int, -1),
        "default_string": AttrSpec(str, "_Unused"),
        "default_tensor": AttrSpec(np.ndarray, None),
    },
)
def _label_encoder(ctx: InferContext) -> list[Type]:
    """Each element replaced by the value of the equal key (NaN keys match NaN; of repeated keys
    the last counts), else by the default. The one keys_* attribute set gives the input's type,
    the one values_* attribute the result's; default_tensor, else default_string, default_float
    or default_int64 after the values' kind, is the default."""
    with reported(ctx):
        keys, values, _ = label_tables(ctx.attrs)
    x = ctx.tensor(0)
    if x.dtype != from_numpy(keys):
        raise ctx.error(f"input #0: expected {from_numpy(keys)} like the keys, got {x}")
    return [x.with_dtype(from_numpy(values))]


@op("Binarizer", attrs={"threshold": AttrSpec((float, int), 0.0)})
def _binarizer(ctx: InferContext) -> list[Type]:
    """1 where x > ``threshold``, else 0 (NaN included), in x's type."""
    return [expect_one_of(ctx, 0, _NUMERIC)]


@op("ArrayFeatureExtractor", inputs=2)
def _array_feature_extractor(ctx: InferContext) -> list[Type]:
    """The elements of X's last axis at the (flattened) int64 indices Y; a 1-D X gives [1, n]."""
    x = expect_one_of(ctx, 0, {*_NUMERIC, DType.string})
    y = expect(ctx, 1, "int")
    if y.dtype is not DType.int64:
        raise ctx.error(f"input #1: expected i64 indices, got {y}")
    if x.shape is None:
        return [x.with_shape(None)]
    if len(x.shape) == 0:
        raise ctx.error(f"input #0: expected at least 1 dim, got {x}")
    n: Dim = UNKNOWN
    if y.shape is not None and all(isinstance(d, int) for d in y.shape):
        n = math.prod(int(d) for d in y.shape)
    return [x.with_shape([*(x.shape[:-1] or [1]), n])]


@op(
    "TfIdfVectorizer",
    attrs={
        "max_gram_length": AttrSpec(int),
        "max_skip_count": AttrSpec(int),
        "min_gram_length": AttrSpec(int),
        "mode": AttrSpec(str),
        "ngram_counts": AttrSpec(_LIST),
        "ngram_indexes": AttrSpec(_LIST),
        "pool_int64s": AttrSpec(_LIST, None),
        "pool_strings": AttrSpec(_LIST, None),
        "weights": AttrSpec(_LIST, None),
    },
)
def _tfidf_vectorizer(ctx: InferContext) -> list[Type]:
    """Counts of the pool's n-grams (min..max_gram_length long) in each [C] row of X. An n-gram
    takes tokens i, i+k, ..., i+(n-1)k for a step k from 1 to max_skip_count + 1 (unigrams count
    once). Counts land at ngram_indexes; TF keeps them, IDF turns them into 0/1 times weights,
    TFIDF multiplies them by weights (weights default to 1). Result: [max index + 1] per row."""
    with reported(ctx):
        tfidf_pool(ctx.attrs)
    x = ctx.tensor(0)
    strings = ctx.attr("pool_strings") is not None
    if strings != (x.dtype is DType.string) or x.dtype not in (
        DType.string, DType.int32, DType.int64
    ):  # fmt: skip
        want = "str" if strings else "i32 or i64"
        raise ctx.error(f"input #0: expected {want} tokens like the pool, got {x}")
    if ctx.attr("mode") not in TFIDF_MODES:
        raise ctx.error(f"mode must be one of {', '.join(TFIDF_MODES)}, got {ctx.attr('mode')!r}")
    weights = ctx.attr("weights")
    count = len(ctx.attr("ngram_indexes"))
    if weights is not None and len(weights) != count:
        raise ctx.error(f"weights has {len(weights)} entries, ngram_indexes {count}")
    if x.rank not in (None, 1, 2):
        raise ctx.error(f"input #0: expected [C] or [N, C] tokens, got {x}")
    size = max((int(i) + 1 for i in ctx.attr("ngram_indexes")), default=0)
    shape = None if x.shape is None else [*x.shape[:-1], size]
    return [TensorType(DType.float32, shape)]


_INDEX_TYPES = {DType.int32, DType.int64}


@op("StringTensorUnpack")
def _string_tensor_unpack(ctx: InferContext) -> list[Type]:
    """The strings' UTF-8 bytes one after another in row-major order (``symbols``, u8 [total]),
    and where each string's bytes begin and end in them (``begins``, ``ends``: i32 of the
    input's shape; string i is ``symbols[begins[i]:ends[i]]``). A character that stands for an
    undecodable byte (a lone surrogate U+DC80..U+DCFF, as StringTensorPack makes) is that byte."""
    x = expect_one_of(ctx, 0, {DType.string})
    bounds = x.with_dtype(DType.int32)
    return [bounds, bounds, TensorType(DType.uint8, [UNKNOWN])]


@op("StringTensorPack", inputs=3)
def _string_tensor_pack(ctx: InferContext) -> list[Type]:
    """String i is bytes ``symbols[begins[i]:ends[i]]`` decoded as UTF-8, in the shape of
    ``begins`` and ``ends`` (i32 or i64, equal shapes). Each range must lie within ``symbols``
    with begin <= end; ranges may overlap, skip bytes and come in any order. A byte that is not
    part of valid UTF-8 becomes a lone surrogate (U+DC80 + byte - 0x80, Python's
    surrogateescape), so that StringTensorUnpack gives the bytes back."""
    begins = expect_one_of(ctx, 0, _INDEX_TYPES, "begins")
    ends = expect_one_of(ctx, 1, _INDEX_TYPES, "ends")
    symbols = expect_one_of(ctx, 2, {DType.uint8}, "symbols")
    if symbols.rank not in (None, 1):
        raise ctx.error(f"input #2 (symbols): expected a 1-D u8 tensor, got {symbols}")
    if not begins.compatible(ends.with_dtype(begins.dtype)):
        raise ctx.error(f"begins {begins} and ends {ends} must have the same shape")
    shape = ends.shape if begins.shape is None else begins.shape
    if begins.shape is not None and ends.shape is not None:
        shape = tuple(
            b if isinstance(b, int) else e for b, e in zip(begins.shape, ends.shape, strict=True)
        )
    return [TensorType(DType.string, shape)]
