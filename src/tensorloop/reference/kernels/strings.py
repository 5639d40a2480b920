"""Reference kernels for the string ops and the ai.onnx.ml ops LabelEncoder, Binarizer and
ArrayFeatureExtractor. Strings are object arrays of str, which NumPy cannot vectorize, so the
per-string work is a comprehension over the elements (over the distinct ones where it can be)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.strings import compile_pattern, label_tables, tfidf_pool
from ...tensor.dtypes import string_array
from ..registry import KernelContext, kernel
from .elementwise import Array, fail


class _SimpleCase(dict[int, str]):
    """A str.translate table giving each character its simple (one-character) upper or lower
    case, as C's towupper and towlower do, filled as characters are met. Python's str.upper and
    str.lower map some characters to several (ß to SS, İ to i + a combining dot): the simple
    lowercase is the first of those; the simple uppercase is the titlecase when that is one
    character (ᾀ to ᾈ), else the character itself (ß stays ß)."""

    def __init__(self, upper: bool) -> None:
        super().__init__()
        self.upper = upper

    def __missing__(self, code: int) -> str:
        char = chr(code)
        mapped = char.upper() if self.upper else char.lower()
        if len(mapped) > 1:
            title = char.title()
            mapped = (title if len(title) == 1 else char) if self.upper else mapped[0]
        self[code] = mapped
        return mapped


_CASES = {"UPPER": _SimpleCase(upper=True), "LOWER": _SimpleCase(upper=False)}


@kernel("StringNormalizer")
def string_normalizer(ctx: KernelContext, x: Any) -> Array:
    x = np.asarray(x)
    if x.ndim not in (1, 2) or (x.ndim == 2 and x.shape[0] != 1):
        raise fail(ctx, f"expected [C] or [1, C] strings, got shape {list(x.shape)}")
    items: list[str] = x.reshape(-1).tolist()
    stopwords = ctx.attr("stopwords")
    if stopwords:
        if ctx.attr("is_case_sensitive"):
            stop, keys = set(stopwords), items
        else:
            lower = _CASES["LOWER"]
            stop = {w.translate(lower) for w in stopwords}
            keys = [s.translate(lower) for s in items]
        items = [s for s, k in zip(items, keys, strict=True) if k not in stop]
    action = ctx.attr("case_change_action")
    if action in _CASES:
        items = [s.translate(_CASES[action]) for s in items]
    items = items or [""]
    return string_array(items, (len(items),) if x.ndim == 1 else (1, len(items)))


@kernel("StringSplit")
def string_split(ctx: KernelContext, x: Any) -> tuple[Array, Array]:
    x = np.asarray(x)
    maxsplit = ctx.attr("maxsplit")
    delimiter = ctx.attr("delimiter") or None  # None: Python splits at runs of whitespace
    parts = [s.split(delimiter, -1 if maxsplit is None else maxsplit) for s in x.reshape(-1)]
    width = max(map(len, parts), default=0)
    padded = [p for ps in parts for p in (*ps, *[""] * (width - len(ps)))]
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    return string_array(padded, (*x.shape, width)), counts


@kernel("StringConcat")
def string_concat(ctx: KernelContext, x: Any, y: Any) -> Array:
    return np.asarray(np.add(x, y), dtype=object)  # object arrays add by calling str.__add__


@kernel("RegexFullMatch")
def regex_full_match(ctx: KernelContext, x: Any) -> Array:
    x = np.asarray(x)
    try:
        pattern = compile_pattern(ctx.attr("pattern"))  # RE2, as the op's type rule checked
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    matched = [pattern.fullmatch(s) for s in x.reshape(-1).tolist()]
    return np.array(matched, dtype=bool).reshape(x.shape)


@kernel("LabelEncoder")
def label_encoder(ctx: KernelContext, x: Any) -> Array:
    x = np.asarray(x)
    keys, values, default = label_tables(ctx.attrs)
    table = dict(zip(keys.tolist(), values.tolist(), strict=True))  # a repeated key: last wins
    nan_keys = [v for k, v in table.items() if isinstance(k, float) and k != k]
    fallback = default.item()
    # Each distinct element is looked up once; NaN != NaN, so NaN keys are matched apart.
    distinct, where = np.unique(x.reshape(-1), return_inverse=True)
    mapped = [
        (nan_keys[-1] if nan_keys else fallback) if u != u else table.get(u, fallback)
        for u in distinct.tolist()
    ]
    out = np.empty(len(mapped), dtype=values.dtype)
    out[:] = mapped
    return out[where.reshape(-1)].reshape(x.shape)


@kernel("Binarizer")
def binarizer(ctx: KernelContext, x: Any) -> Array:
    x = np.asarray(x)
    return np.where(x > ctx.attr("threshold"), 1, 0).astype(x.dtype)


@kernel("ArrayFeatureExtractor")
def array_feature_extractor(ctx: KernelContext, x: Any, indices: Any) -> Array:
    x, idx = np.asarray(x), np.asarray(indices).reshape(-1)
    size = x.shape[-1]
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise fail(ctx, f"index {int(bad[0])} is out of range for a last axis of {size}")
    out = np.take(x, idx, axis=-1)
    return out.reshape(1, -1) if x.ndim == 1 else out


@kernel("TfIdfVectorizer")
def tfidf_vectorizer(ctx: KernelContext, x: Any) -> Array:
    x = np.asarray(x)
    rows = x.reshape(-1, x.shape[-1])
    tokens = rows if rows.dtype == object else rows.astype(np.int64)
    indexes = np.asarray(ctx.attr("ngram_indexes"), dtype=np.int64)
    size = int(indexes.max()) + 1 if indexes.size else 0
    counts = np.zeros((len(rows), size), dtype=np.float32)
    length = tokens.shape[1]
    for n, grams, where in tfidf_pool(ctx.attrs):
        steps = [1] if n == 1 else range(1, ctx.attr("max_skip_count") + 2)
        for step in steps:
            starts = length - (n - 1) * step
            if starts <= 0 or not len(grams):
                continue
            windows = np.stack([tokens[:, j * step : j * step + starts] for j in range(n)], -1)
            hits = (windows[:, :, None, :] == grams[None, None]).all(-1).sum(1)  # [rows, grams]
            np.add.at(counts.T, where, hits.T.astype(np.float32))  # ``where`` may repeat
    weights = np.ones(size, dtype=np.float32)
    if ctx.attr("weights") is not None:
        weights[indexes] = np.asarray(ctx.attr("weights"), dtype=np.float32)
    mode = ctx.attr("mode")
    if mode == "IDF":
        counts = (counts > 0) * weights
    elif mode == "TFIDF":
        counts = counts * weights
    counts = counts.astype(np.float32)
    return counts[0] if x.ndim == 1 else counts


@kernel("StringTensorUnpack")
def string_tensor_unpack(ctx: KernelContext, x: Any) -> tuple[Array, Array, Array]:
    x = np.asarray(x)
    try:
        encoded = [s.encode("utf-8", "surrogateescape") for s in x.reshape(-1).tolist()]
    except UnicodeEncodeError as exc:
        raise fail(
            ctx, f"a string holds {exc.object[exc.start]!r}, which UTF-8 cannot encode"
        ) from None
    ends = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    if ends.size and ends[-1] > np.iinfo(np.int32).max:
        raise fail(ctx, f"the strings take {int(ends[-1])} bytes, more than i32 offsets reach")
    begins = np.concatenate([[0], ends[:-1]]) if ends.size else ends
    symbols = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return begins.astype(np.int32).reshape(x.shape), ends.astype(np.int32).reshape(x.shape), symbols


@kernel("StringTensorPack")
def string_tensor_pack(ctx: KernelContext, begins: Any, ends: Any, symbols: Any) -> Array:
    begins, ends = np.asarray(begins), np.asarray(ends)
    data = np.asarray(symbols).tobytes()
    if begins.shape != ends.shape:
        raise fail(ctx, f"begins {list(begins.shape)} and ends {list(ends.shape)} differ in shape")
    lo, hi = begins.reshape(-1).tolist(), ends.reshape(-1).tolist()
    bad = next(((b, e) for b, e in zip(lo, hi, strict=True) if not 0 <= b <= e <= len(data)), None)
    if bad is not None:
        raise fail(ctx, f"range [{bad[0]}, {bad[1]}) is not a range of the {len(data)} symbols")
    items = [data[b:e].decode("utf-8", "surrogateescape") for b, e in zip(lo, hi, strict=True)]
    return string_array(items, begins.shape)
