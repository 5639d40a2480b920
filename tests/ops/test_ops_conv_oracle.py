"""The convolution kernels against direct convolutions written out from the definition, over
random geometries: every path of the kernels (1x1 at stride 1, strided im2col, the flattened
planes at stride 1, groups a block at a time, depthwise, the tiled ConvTranspose)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_oracle import run_core
from tensorloop.reference.kernels import nn

SETTINGS = settings(max_examples=150, deadline=None)
AUTO_PADS = ["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]


def _pads(auto_pad: str, size: int, stride: int, span: int, given: tuple[int, int]) -> list[int]:
    """(begin, end) pads along one axis, as ONNX defines auto_pad."""
    if auto_pad == "NOTSET":
        return list(given)
    if auto_pad == "VALID":
        return [0, 0]
    total = max(0, (-(-size // stride) - 1) * stride + span - size)
    small, big = total // 2, total - total // 2
    return [small, big] if auto_pad == "SAME_UPPER" else [big, small]


def direct_conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    group: int,
    strides: list[int],
    dilations: list[int],
    pads: list[list[int]],
) -> np.ndarray:
    """Conv by its definition, in float64: per output position, output channel and tap."""
    n = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *[tuple(p) for p in pads]])
    w64 = w.astype(np.float64)
    cg, mg = w.shape[1], w.shape[0] // group
    kernel = w.shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    out = [(xp.shape[2 + i] - spans[i]) // strides[i] + 1 for i in range(n)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for o in np.ndindex(*out):
        for m in range(w.shape[0]):
            g = m // mg
            for t in np.ndindex(*kernel):
                at = tuple(o[i] * strides[i] + t[i] * dilations[i] for i in range(n))
                y[(slice(None), m, *o)] += (
                    xp[(slice(None), slice(g * cg, (g + 1) * cg), *at)] @ w64[(m, slice(None), *t)]
                )
    if b is not None:
        y += b.astype(np.float64).reshape(-1, *[1] * n)
    return y


@st.composite
def conv_cases(draw: Any) -> dict[str, Any]:
    """A Conv's X and W shapes and attributes: 1-D to 3-D, any group (depthwise included)."""
    n = draw(st.integers(1, 3))
    top_k, top_size = {1: (4, 12), 2: (3, 7), 3: (2, 4)}[n]
    group = draw(st.integers(1, 3))
    depthwise = draw(st.booleans())
    cg = 1 if depthwise else draw(st.integers(1, 3))
    mg = draw(st.integers(1, 2 if depthwise else 3))
    auto_pad = draw(st.sampled_from(AUTO_PADS))
    kernel, strides, dilations, sizes, pads = [], [], [], [], []
    for _ in range(n):
        k, s, d = draw(st.integers(1, top_k)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        given_pads = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
        span = (k - 1) * d + 1
        fixed = sum(given_pads) if auto_pad == "NOTSET" else 0
        low = 1 if auto_pad.startswith("SAME") else max(1, span - fixed)
        size = draw(st.integers(low, max(low, top_size)))
        kernel.append(k)
        strides.append(s)
        dilations.append(d)
        sizes.append(size)
        pads.append(_pads(auto_pad, size, s, span, given_pads))
    attrs: dict[str, Any] = {"group": group, "strides": strides, "dilations": dilations}
    if auto_pad == "NOTSET":
        attrs["pads"] = [p[0] for p in pads] + [p[1] for p in pads]
    else:
        attrs["auto_pad"] = auto_pad
    return {
        "x": (draw(st.integers(1, 2)), group * cg, *sizes),
        "w": (group * mg, cg, *kernel),
        "attrs": attrs,
        "pads": pads,
        "bias": draw(st.booleans()),
        "fortran": draw(st.booleans()),  # X in another memory layout
        "block": draw(st.sampled_from([nn.COLUMN_BYTES, 64])),  # groups one block at a time
    }


def _run_conv(case: dict[str, Any], dtype: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(case["x"]).astype(dtype)
    w = rng.standard_normal(case["w"]).astype(dtype)
    b = rng.standard_normal(case["w"][0]).astype(dtype) if case["bias"] else None
    if case["fortran"]:
        x = np.asfortranarray(x)
    attrs = case["attrs"]
    want = direct_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], case["pads"])
    saved = nn.COLUMN_BYTES
    nn.COLUMN_BYTES = case["block"]
    try:
        (got,) = run_core("Conv", [x, w, b], **attrs)
    finally:
        nn.COLUMN_BYTES = saved
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    return got, want


@SETTINGS
@given(conv_cases(), st.integers(0, 2**32 - 1))
def test_conv_matches_a_direct_convolution_in_float64(case: dict[str, Any], seed: int) -> None:
    got, want = _run_conv(case, np.float64, seed)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(conv_cases(), st.integers(0, 2**32 - 1))
def test_conv_matches_a_direct_convolution_in_float32(case: dict[str, Any], seed: int) -> None:
    got, want = _run_conv(case, np.float32, seed)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@SETTINGS
@given(conv_cases(), st.integers(0, 2**32 - 1))
def test_conv_integer_is_exact(case: dict[str, Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, case["x"]).astype(np.uint8)
    w = rng.integers(0, 256, case["w"]).astype(np.uint8)
    x_zero, w_zero = np.array(rng.integers(0, 256), np.uint8), np.array(131, np.uint8)
    attrs = case["attrs"]
    want = direct_conv(
        x.astype(np.int64) - int(x_zero),
        w.astype(np.int64) - int(w_zero),
        None,
        attrs["group"],
        attrs["strides"],
        attrs["dilations"],
        case["pads"],
    )
    (got,) = run_core("ConvInteger", [x, w, x_zero, w_zero], **attrs)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want.astype(np.int64))


def direct_conv_transpose(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    group: int,
    strides: list[int],
    dilations: list[int],
    pads: list[list[int]],
    output_padding: list[int],
) -> np.ndarray:
    """ConvTranspose by its definition, in float64: each input entry adds its weights, scaled,
    into the full result at stride steps, which the pads then crop."""
    n = x.ndim - 2
    cg, mg = x.shape[1] // group, w.shape[1]
    kernel = w.shape[2:]
    full = [
        (x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i]
        for i in range(n)
    ]
    y = np.zeros((x.shape[0], group * mg, *full))
    for i in np.ndindex(*x.shape[2:]):
        for c in range(x.shape[1]):
            g = c // cg
            for t in np.ndindex(*kernel):
                at = tuple(i[a] * strides[a] + t[a] * dilations[a] for a in range(n))
                y[(slice(None), slice(g * mg, (g + 1) * mg), *at)] += np.multiply.outer(
                    x[(slice(None), c, *i)].astype(np.float64), w[(c, slice(None), *t)]
                )
    crop = tuple(slice(p[0], full[a] - p[1]) for a, p in enumerate(pads))
    y = y[(slice(None), slice(None), *crop)]
    if b is not None:
        y = y + b.astype(np.float64).reshape(-1, *[1] * n)
    return y


@SETTINGS
@given(st.data())
def test_conv_transpose_matches_a_direct_scatter(data: Any) -> None:
    draw = data.draw
    n = draw(st.integers(1, 2))
    group, cg, mg = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    tiled = draw(st.booleans())  # the stride is the kernel's size: the blocks tile the result
    kernel, strides, dilations, sizes, pads, extra = [], [], [], [], [], []
    for _ in range(n):
        k = draw(st.integers(1, 3))
        s, d = (k, 1) if tiled else (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
        size = draw(st.integers(1, 5))
        full = (size - 1) * s + (k - 1) * d + 1
        begin = draw(st.integers(0, min(2, full - 1)))
        end = draw(st.integers(0, min(2, full - 1 - begin)))
        kernel.append(k)
        strides.append(s)
        dilations.append(d)
        sizes.append(size)
        pads.append([begin, end])
        extra.append(draw(st.integers(0, max(s, d) - 1)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((draw(st.integers(1, 2)), group * cg, *sizes))
    w = rng.standard_normal((group * cg, mg, *kernel))
    b = rng.standard_normal(group * mg) if draw(st.booleans()) else None
    attrs = {
        "group": group,
        "strides": strides,
        "dilations": dilations,
        "pads": [p[0] for p in pads] + [p[1] for p in pads],
        "output_padding": extra,
    }
    want = direct_conv_transpose(x, w, b, group, strides, dilations, pads, extra)
    (got,) = run_core("ConvTranspose", [x, w, b], **attrs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
