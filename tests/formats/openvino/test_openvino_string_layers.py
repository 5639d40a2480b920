"""OpenVINO string and sparse layers (ov_strings.py, write_strings.py) vs. the CPU plugin:
"StringTensorUnpack" and "StringTensorPack" (opset 15) and "SparseFillEmptyRows" (opset 16), read,
written back and read again; string Parameters and Consts included."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import op as ov_op  # noqa: E402
from openvino import opset15, opset16  # noqa: E402
from openvino_layer_checks import check, compile_cpu, record_layer_types, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.errors import ExecutionError, GraphError, TensorloopError  # noqa: E402
from tensorloop.tensor.dtypes import string_array  # noqa: E402

Array = np.ndarray[Any, Any]
STRING_OPSETS = [pytest.param(opset15, id="opset15"), pytest.param(opset16, id="opset16")]


def _shown(value: Any) -> Any:
    """A tensorloop string as OpenVINO's Python API shows it: bytes that are not UTF-8 (which
    tensorloop keeps as lone surrogates) read as U+FFFD."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _assert_same(ours: Array, theirs: Array, name: str) -> None:
    if ours.dtype == object:
        assert theirs.dtype.kind == "U", (name, theirs.dtype)
        assert ours.shape == theirs.shape, (name, ours.shape, theirs.shape)
        assert [_shown(s) for s in ours.reshape(-1)] == theirs.reshape(-1).tolist(), name
        return
    assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


def _assert_equal(got: Any, want: Array, name: str) -> None:
    got = np.asarray(got)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), name
    assert got.tolist() == want.tolist(), name


def _ov_feed(value: Array) -> Array:
    """What OpenVINO's Python API takes for a tensor: str arrays instead of object arrays."""
    return value.astype(str) if value.dtype == object else value


def _runs_alike(model: tl.Model, path: Path, feeds: dict[str, Array]) -> dict[str, Array]:
    """tensorloop's run of ``model`` against the CPU plugin's run of the IR at ``path``: same
    dtypes, shapes and values."""
    ours = model.run(feeds)
    compiled = compile_cpu(path)
    theirs = compiled({k: _ov_feed(v) for k, v in feeds.items()})
    assert len(compiled.outputs) == len(model.output_names)
    for port in compiled.outputs:
        name = next(k for k in model.output_names if k in port.get_names())
        _assert_same(np.asarray(ours[name]), np.asarray(theirs[port]), name)
    return {k: np.asarray(v) for k, v in ours.items()}


def _check(
    outputs: list[Any], params: list[Any], feeds: dict[str, Array], tmp_path: Path
) -> dict[str, Array]:
    """Save the OpenVINO model, read it, and compare with the CPU plugin; then write what
    tensorloop read as IR, and compare that on the plugin and read back by tensorloop."""
    path = save_ir(outputs, params, tmp_path)
    model = tl.load(path)
    ours = _runs_alike(model, path, feeds)
    record_layer_types(path, "compared")
    for backend in ("compiled", "jax"):
        again = model.run(feeds, backend=backend)
        for name, value in ours.items():
            _assert_equal(again[name], value, f"{backend} {name}")
    written = tmp_path / "written" / "w.xml"
    written.parent.mkdir()
    tl.save(model, written)
    _runs_alike(model, written, feeds)
    reread = tl.load(written).run(feeds)
    for name, value in ours.items():
        _assert_equal(reread[name], value, f"re-read {name}")
    record_layer_types(path, "written")
    return ours


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
    got = _check([unpacked.output(i) for i in range(3)], [x], {"x": data}, tmp_path)
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
    _check([unpacked.output(i) for i in range(3)], [x], {"x": data}, tmp_path)


def test_string_tensor_unpack_of_a_string_const(tmp_path: Path) -> None:
    """A string Const as OpenVINO stores it in the .bin (a count, offsets, then the bytes);
    tensorloop writes it back the same way."""
    words = ov_op.Constant(ov.Tensor(np.array([["x", "yé", ""], ["", "日本", "z"]])))
    x = opset15.parameter([2], ov.Type.string, name="x")
    joined = opset15.string_tensor_unpack(words)
    other = opset15.string_tensor_unpack(x)
    outs = [joined.output(0), joined.output(2), other.output(2)]
    got = _check(outs, [x], {"x": _strings(["ab", "c"], (2,))}, tmp_path)
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
    ours = _check([packed], params, {"x0": b, "x1": e, "x2": symbols}, tmp_path)
    (out,) = ours.values()
    assert out.shape == shape and out.reshape(-1).tolist() == items


def test_string_tensor_pack_skips_and_shares_bytes(tmp_path: Path) -> None:
    """The spec's skipped symbols, a range read twice, one ending inside a UTF-8 character."""
    symbols: Array = np.frombuffer("123456789é!".encode(), dtype=np.uint8)
    b = np.array([0, 0, 8, 8, 9], np.int64)
    e = np.array([1, 1, 9, 10, 12], np.int64)
    params = [opset15.parameter([-1], a.dtype, name=f"x{i}") for i, a in enumerate([b, e, symbols])]
    packed = opset15.string_tensor_pack(*params)
    (out,) = _check([packed], params, {"x0": b, "x1": e, "x2": symbols}, tmp_path).values()
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
    got = _check(outs, params, {"x0": b, "x1": e, "x2": symbols}, tmp_path)
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
    got = _check([opset15.string_tensor_pack(*static)], static, feeds, tmp_path / "static")
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


# -- SparseFillEmptyRows ---------------------------------------------------------------------------
def _fill_empty_rows(values: Array, shape: list[int], indices: Array, default: Any) -> list[Array]:
    """The spec's answer, written out: entries sorted by (row, column), a default per empty row."""
    rows = shape[0]
    present = {int(r) for r in indices[:, 0]}
    empty = [r for r in range(rows) if r not in present]
    entries = [((int(i[0]), int(i[1])), v) for i, v in zip(indices, values.tolist(), strict=True)]
    entries += [((r, 0), default) for r in empty]
    entries.sort(key=lambda entry: entry[0])
    return [
        np.array([p for p, _ in entries], dtype=indices.dtype).reshape(-1, 2),
        np.array([v for _, v in entries], dtype=values.dtype),
        np.array([r in empty for r in range(rows)], dtype=bool),
    ]


SPARSE_CASES = [
    # values, dense_shape, indices
    pytest.param([1, 2, 3, 4], [5, 6], [[0, 1], [0, 3], [2, 0], [3, 1]], id="spec-example"),
    pytest.param([1, 2], [4, 4], [[3, 0], [3, 3]], id="empty-at-start"),
    pytest.param([1, 2], [4, 3], [[0, 2], [1, 0]], id="empty-at-end"),
    pytest.param([1, 2, 3], [3, 2], [[0, 1], [1, 1], [2, 0]], id="none-empty"),
    pytest.param([5, 6, 7, 8], [4, 7], [[3, 1], [0, 3], [2, 6], [0, 1]], id="unsorted-rows"),
    pytest.param([1, 2, 3, 4, 5], [3, 6], [[2, 5], [2, 1], [0, 3], [2, 0], [0, 1]], id="unsorted"),
    pytest.param([9], [6, 1], [[2, 0]], id="one-column"),
    pytest.param([1, 2], [1, 5], [[0, 4], [0, 0]], id="one-row"),
]


@pytest.mark.parametrize("index_type", [np.int64, np.int32])
@pytest.mark.parametrize("value_type", [np.float32, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize(("values", "dense_shape", "indices"), SPARSE_CASES)
def test_sparse_fill_empty_rows(
    values: list[int],
    dense_shape: list[int],
    indices: list[list[int]],
    value_type: Any,
    index_type: Any,
    tmp_path: Path,
) -> None:
    arrays = (
        np.array(values, value_type),
        np.array(dense_shape, index_type),
        np.array(indices, index_type),
        np.array(42, value_type),
    )
    got = check(
        lambda v, s, i, d: [opset16.sparse_fill_empty_rows(v, s, i, d).output(k) for k in range(3)],
        *arrays,
        tmp_path=tmp_path,
    )
    want = _fill_empty_rows(arrays[0], dense_shape, arrays[2], 42)
    for ours, theirs in zip(got.values(), want, strict=True):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("value_type", [np.float16, np.int8, np.bool_])
def test_sparse_fill_empty_rows_of_other_value_types(value_type: Any, tmp_path: Path) -> None:
    values = np.array([1, 0, 1], value_type)
    default = np.array(1, value_type)
    arrays = (values, np.array([5, 3]), np.array([[4, 2], [1, 0], [1, 2]]), default)
    check(
        lambda v, s, i, d: [opset16.sparse_fill_empty_rows(v, s, i, d).output(k) for k in range(3)],
        *arrays,
        tmp_path=tmp_path,
    )


def test_sparse_fill_empty_rows_with_a_constant_dense_shape_and_dynamic_entries(
    tmp_path: Path,
) -> None:
    """A constant dense_shape gives the indicator a static length (OpenVINO declares it too)."""
    values = opset16.parameter([-1], np.float32, name="v")
    indices = opset16.parameter([-1, 2], np.int64, name="i")
    default = opset16.parameter([], np.float32, name="d")
    dense = opset16.constant(np.array([4, 5], np.int64))
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    feeds: dict[str, Array] = {
        "v": np.array([1.5, -2.0, 3.0], np.float32),
        "i": np.array([[2, 4], [0, 0], [2, 1]], np.int64),
        "d": np.array(-1.0, np.float32),
    }
    path = save_ir([node.output(k) for k in range(3)], [values, indices, default], tmp_path)
    assert tl.load(path).graph.outputs[2].type == tl.TensorType("bool", [4])
    _check([node.output(k) for k in range(3)], [values, indices, default], feeds, tmp_path / "c")


def test_sparse_fill_empty_rows_with_no_entries(tmp_path: Path) -> None:
    """No entries at all: every row gets the default. (The CPU plugin fails on empty Parameter
    tensors here, "ptr is Null", so the entries are constants.)"""
    values = opset16.constant(np.zeros(0, np.float32))
    indices = opset16.constant(np.zeros((0, 2), np.int64))
    dense = opset16.parameter([2], np.int64, name="s")
    default = opset16.parameter([], np.float32, name="d")
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    feeds: dict[str, Array] = {"s": np.array([3, 4], np.int64), "d": np.array(5.0, np.float32)}
    got = _check([node.output(k) for k in range(3)], [dense, default], feeds, tmp_path)
    out_indices, out_values, empty = got.values()
    assert out_indices.tolist() == [[0, 0], [1, 0], [2, 0]]
    assert out_values.tolist() == [5.0, 5.0, 5.0] and empty.all()


@pytest.mark.parametrize(
    ("indices", "message"),
    [([[0, 0], [5, 0]], r"index \[5, 0\] lies outside dense_shape \[2, 4\]"),
     ([[0, 4], [1, 0]], r"index \[0, 4\] lies outside"),
     ([[0, -1], [1, 0]], r"index \[0, -1\] lies outside")],
)  # fmt: skip
def test_sparse_fill_empty_rows_refuses_indices_outside_the_dense_shape(
    indices: list[list[int]], message: str, tmp_path: Path
) -> None:
    """As the CPU plugin does ("Sparse tensor index out of bounds") where the shapes are
    dynamic; where they are static it checks nothing (2026.4: a row outside is dropped, a column
    outside kept) and returns what tensorloop refuses to make up."""
    arrays = (np.array([1.0, 2.0], np.float32), np.array([2, 4]), np.array(indices))
    feeds = {f"x{i}": a for i, a in enumerate(arrays)} | {"x3": np.array(0.0, np.float32)}
    for dynamic in (True, False):
        params = [
            opset16.parameter([-1] * a.ndim if dynamic else list(a.shape), a.dtype, name=f"x{i}")
            for i, a in enumerate(arrays)
        ]
        params.append(opset16.parameter([], np.float32, name="x3"))
        node = opset16.sparse_fill_empty_rows(*params)
        path = save_ir([node.output(k) for k in range(3)], params, tmp_path / str(dynamic))
        with pytest.raises(ExecutionError, match=message):
            tl.load(path).run(feeds)
        if dynamic:
            with pytest.raises(RuntimeError, match="out of bounds"):
                compile_cpu(path)(feeds)
        else:
            assert len(compile_cpu(path)(feeds)) == 3


def test_sparse_fill_empty_rows_refuses_string_values(tmp_path: Path) -> None:
    """The spec's values are numeric (the CPU plugin returns garbage indices for strings)."""
    values = opset16.parameter([2], ov.Type.string, name="v")
    dense = opset16.parameter([2], np.int64, name="s")
    indices = opset16.parameter([2, 2], np.int64, name="i")
    default = opset16.parameter([], ov.Type.string, name="d")
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    path = save_ir([node.output(k) for k in range(3)], [values, dense, indices, default], tmp_path)
    with pytest.raises(TensorloopError, match="expected numbers or bools"):
        tl.load(path)


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
