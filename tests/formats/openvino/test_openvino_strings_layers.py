"""OpenVINO string layers (read_strings.py, write_strings.py) vs. the CPU plugin:
"StringTensorUnpack" and "StringTensorPack" (opset 15), read, written back and read again; string
Parameters and Consts included."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import op as ov_op  # noqa: E402
from openvino import opset15, opset16  # noqa: E402
from openvino_layer_checks import check_exactly, compile_cpu, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.errors import ExecutionError, GraphError  # noqa: E402
from tensorloop.tensor.dtypes import string_array  # noqa: E402

Array = np.ndarray[Any, Any]
STRING_OPSETS = [pytest.param(opset15, id="opset15"), pytest.param(opset16, id="opset16")]


def _strings(items: list[str], shape: tuple[int, ...]) -> Array:
    return string_array(items, shape)


def _utf8(items: list[str]) -> tuple[list[int], list[int], Array]:
    """begins, ends and symbols of ``items`` as the spec lays them out."""
    encoded = [s.encode() for s in items]
    ends = np.cumsum([len(b) for b in encoded]).tolist()
    begins = [0, *ends[:-1]]
    return begins, ends, np.frombuffer(b"".join(encoded), dtype=np.uint8)


# -- StringTensorUnpack ----------------------------------------------------------------------------
UNPACK_CASES = [
    pytest.param(["Intel", "OpenVINO"], (2,), id="spec-example"),
    pytest.param(["OMZ", "", "GenAI", " ", "2024"], (5,), id="empty-string"),
    pytest.param(["Intel", "OpenVINO", "OMZ", "GenAI"], (2, 2), id="2d"),
    pytest.param(["héllo", "日本語", "🙂x", "", "a\x00b", "€"], (3, 1, 2), id="utf8-3d"),
    pytest.param(["", "", ""], (3,), id="all-empty"),
    pytest.param(["scalar ß"], (), id="scalar"),
]


@pytest.mark.parametrize("opset", STRING_OPSETS)
@pytest.mark.parametrize(("items", "shape"), UNPACK_CASES)
def test_string_tensor_unpack(
    opset: ModuleType, items: list[str], shape: tuple[int, ...], tmp_path: Path
) -> None:
    x = opset.parameter(list(shape), ov.Type.string, name="x")
    unpacked = opset.string_tensor_unpack(x)
    data = _strings(items, shape)
    got = check_exactly([unpacked.output(i) for i in range(3)], [x], {"x": data}, tmp_path)
    begins, ends, symbols = (got[n] for n in sorted(got))
    want_begins, want_ends, want_symbols = _utf8(items)
    assert begins.dtype == ends.dtype == np.int32
    assert begins.reshape(-1).tolist() == want_begins
    assert ends.reshape(-1).tolist() == want_ends
    np.testing.assert_array_equal(symbols, want_symbols)


def test_string_tensor_unpack_of_a_dynamic_shape(tmp_path: Path) -> None:
    x = opset15.parameter([-1, -1], ov.Type.string, name="x")
    unpacked = opset15.string_tensor_unpack(x)
    data = _strings(["a", "bb", "ccc", "", "é", "ff"], (2, 3))
    check_exactly([unpacked.output(i) for i in range(3)], [x], {"x": data}, tmp_path)


def test_string_tensor_unpack_of_a_string_const(tmp_path: Path) -> None:
    """A string Const as OpenVINO stores it in the .bin (a count, offsets, then the bytes);
    tensorloop writes it back the same way."""
    words = ov_op.Constant(ov.Tensor(np.array([["x", "yé", ""], ["", "日本", "z"]])))
    x = opset15.parameter([2], ov.Type.string, name="x")
    joined = opset15.string_tensor_unpack(words)
    other = opset15.string_tensor_unpack(x)
    outs = [joined.output(0), joined.output(2), other.output(2)]
    got = check_exactly(outs, [x], {"x": _strings(["ab", "c"], (2,))}, tmp_path)
    want = "xyé日本z".encode()
    assert bytes(next(v for v in got.values() if v.size == len(want))) == want


# -- StringTensorPack ------------------------------------------------------------------------------
@pytest.mark.parametrize("opset", STRING_OPSETS)
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize(
    ("items", "shape"),
    [
        pytest.param(["Intel", "OpenVINO"], (2,), id="spec-example"),
        pytest.param(["OMZ", "", "GenAI", " ", "2024"], (5,), id="empty-string"),
        pytest.param(["Intel", "OpenVINO", "OMZ", "GenAI"], (2, 2), id="2d"),
        pytest.param(["ü", "日本", "🙂", "", "x", "€ß"], (1, 2, 3), id="utf8-3d"),
        pytest.param(["only"], (), id="scalar"),
    ],
)
def test_string_tensor_pack(
    opset: ModuleType, index_type: Any, items: list[str], shape: tuple[int, ...], tmp_path: Path
) -> None:
    begins, ends, symbols = _utf8(items)
    b = np.array(begins, index_type).reshape(shape)
    e = np.array(ends, index_type).reshape(shape)
    params = [
        opset.parameter(list(a.shape), a.dtype, name=f"x{i}") for i, a in enumerate([b, e, symbols])
    ]
    packed = opset.string_tensor_pack(*params)
    ours = check_exactly([packed], params, {"x0": b, "x1": e, "x2": symbols}, tmp_path)
    (out,) = ours.values()
    assert out.shape == shape and out.reshape(-1).tolist() == items


def test_string_tensor_pack_skips_and_shares_bytes(tmp_path: Path) -> None:
    """The spec's skipped symbols, a range read twice, one ending inside a UTF-8 character."""
    symbols: Array = np.frombuffer("123456789é!".encode(), dtype=np.uint8)
    b = np.array([0, 0, 8, 8, 9], np.int64)
    e = np.array([1, 1, 9, 10, 12], np.int64)
    params = [opset15.parameter([-1], a.dtype, name=f"x{i}") for i, a in enumerate([b, e, symbols])]
    packed = opset15.string_tensor_pack(*params)
    (out,) = check_exactly([packed], params, {"x0": b, "x1": e, "x2": symbols}, tmp_path).values()
    assert out.tolist()[:3] == ["1", "1", "9"]
    assert out.tolist()[3] == "9\udcc3"  # the first byte of é alone
    assert out.tolist()[4] == "é!"


def test_string_tensor_pack_then_unpack_keeps_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """Strings hold bytes in OpenVINO: packing bytes that are not UTF-8 and unpacking them gives
    the same bytes (tensorloop keeps each such byte as a lone surrogate, U+DC80 + byte - 0x80)."""
    symbols: Array = np.frombuffer(b"ab\xc3\xa9z\xff\xfe", dtype=np.uint8)
    b = np.array([[0, 1], [3, 3]], np.int32)
    e = np.array([[1, 3], [5, 7]], np.int32)
    params = [
        opset15.parameter(list(a.shape), a.dtype, name=f"x{i}")
        for i, a in enumerate([b, e, symbols])
    ]
    packed = opset15.string_tensor_pack(*params)
    unpacked = opset15.string_tensor_unpack(packed)
    outs = [packed.output(0), *(unpacked.output(i) for i in range(3))]
    got = check_exactly(outs, params, {"x0": b, "x1": e, "x2": symbols}, tmp_path)
    strings = next(v for v in got.values() if v.dtype == object)
    assert strings.tolist() == [["a", "b\udcc3"], ["\udca9z", "\udca9z\udcff\udcfe"]]
    symbols_out = next(v for v in got.values() if v.dtype == np.uint8)
    assert bytes(symbols_out) == b"ab\xc3" + b"\xa9z" + b"\xa9z\xff\xfe"


def test_string_tensor_pack_in_any_order_follows_the_spec(tmp_path: Path) -> None:
    """The spec asks only for non-negative offsets. The CPU plugin (2026.4) decodes ranges in any
    order where the shapes are static, but where they are dynamic its shape inference refuses
    begins or ends that are not ascending ("Indices must be in ascending order"). tensorloop
    decodes each range either way."""
    feeds: dict[str, Array] = {
        "x0": np.array([5, 0, 0], np.int32),
        "x1": np.array([13, 5, 13], np.int32),
        "x2": np.frombuffer(b"IntelOpenVINO", dtype=np.uint8),
    }
    want = ["OpenVINO", "Intel", "IntelOpenVINO"]
    static = [opset15.parameter(list(a.shape), a.dtype, name=k) for k, a in feeds.items()]
    got = check_exactly([opset15.string_tensor_pack(*static)], static, feeds, tmp_path / "static")
    assert [v.tolist() for v in got.values()] == [want]
    dynamic = [opset15.parameter([-1], a.dtype, name=k) for k, a in feeds.items()]
    path = save_ir([opset15.string_tensor_pack(*dynamic)], dynamic, tmp_path)
    assert [v.tolist() for v in tl.load(path).run(feeds).values()] == [want]
    with pytest.raises(RuntimeError, match="ascending"):
        compile_cpu(path)(feeds)


@pytest.mark.parametrize(
    ("begins", "ends", "message"),
    [([2], [1], r"range \[2, 1\)"), ([0], [9], r"range \[0, 9\) is not a range of the 4"),
     ([-1], [2], r"range \[-1, 2\)")],
)  # fmt: skip
def test_string_tensor_pack_refuses_ranges_outside_the_symbols(
    begins: list[int], ends: list[int], message: str, tmp_path: Path
) -> None:
    params = [
        opset15.parameter([1], np.int32, name="x0"),
        opset15.parameter([1], np.int32, name="x1"),
    ]
    params.append(opset15.parameter([4], np.uint8, name="x2"))
    path = save_ir([opset15.string_tensor_pack(*params)], params, tmp_path)
    feeds = {"x0": np.array(begins, np.int32), "x1": np.array(ends, np.int32)}
    feeds["x2"] = np.frombuffer(b"abcd", dtype=np.uint8)
    with pytest.raises(ExecutionError, match=message):
        tl.load(path).run(feeds)


def test_the_core_ops_type_their_outputs() -> None:
    g = tl.Graph("g")
    x = g.add_input("x", tl.TensorType("str", [2, "N"]))
    begins, ends, symbols = g.add_node("StringTensorUnpack", [x]).outputs
    assert [v.type for v in (begins, ends, symbols)] == [
        tl.TensorType("i32", [2, "N"]),
        tl.TensorType("i32", [2, "N"]),
        tl.TensorType("u8", ["?"]),
    ]
    packed = g.add_node("StringTensorPack", [begins, ends, symbols]).outputs[0]
    assert packed.type == tl.TensorType("str", [2, "N"])
    with pytest.raises(GraphError, match=r"begins .* and ends .* must have the same shape"):
        g.add_node(
            "StringTensorPack", [begins, g.add_input("e", tl.TensorType("i64", [3])), symbols]
        )
    v = g.add_input("v", tl.TensorType("f32", ["M"]))
    i = g.add_input("i", tl.TensorType("i32", ["M", 2]))
    s = g.add_input("s", tl.TensorType("i32", [2]))
    d = g.add_input("d", tl.TensorType("f32", []))
    outs = g.add_node("SparseFillEmptyRows", [v, s, i, d]).outputs
    assert [o.type for o in outs] == [
        tl.TensorType("i32", ["?", 2]),
        tl.TensorType("f32", ["?"]),
        tl.TensorType("bool", ["?"]),
    ]
    with pytest.raises(GraphError, match="expected i64 like dense_shape"):
        g.add_node("SparseFillEmptyRows", [v, g.add_input("s64", tl.TensorType("i64", [2])), i, d])
    with pytest.raises(GraphError, match="expected f32 like values"):
        g.add_node("SparseFillEmptyRows", [v, s, i, g.add_input("d64", tl.TensorType("f64", []))])


def test_onnx_cannot_hold_the_string_and_sparse_ops(tmp_path: Path) -> None:
    g = tl.Graph("g")
    x = g.add_input("x", tl.TensorType("str", [2]))
    g.set_outputs(g.add_node("StringTensorUnpack", [x]).outputs)
    with pytest.raises(tl.FormatError, match="ONNX has no op 'StringTensorUnpack'"):
        tl.save(tl.Model(g), tmp_path / "m.onnx")
