"""Write tests/data/hostile/: malformed and hostile models, each with the error it must raise.

Run ``python scripts/make_hostile_corpus.py`` to regenerate the corpus; the files are small and
committed. ``manifest.json`` maps each model file to the exact class name of the error loading
and running it must raise, or ``"ok"`` for a valid control (a list: any of those classes).
``inputs.json`` gives the input shapes of the few cases that need particular ones (the test
otherwise feeds small random inputs, unknown dims as 2).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "hostile"
F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL
LIMITS = ["ResourceLimitError", "LoopLimitError", "RunTimeoutError"]

CASES: dict[str, Any] = {}
INPUTS: dict[str, dict[str, list[int]]] = {}


Writer = Callable[[Path], None]


def case(
    name: str, expect: str | list[str], inputs: dict[str, list[int]] | None = None
) -> Callable[[Writer], Writer]:
    """Register a case: ``fn(path)`` writes the model ``name`` that must raise ``expect``."""

    def register(fn: Writer) -> Writer:
        CASES[name] = (expect, fn)
        if inputs:
            INPUTS[name] = inputs
        return fn

    return register


# -- ONNX -------------------------------------------------------------------------------------


def _model(
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    inits: list[Any] = (),  # type: ignore[assignment]
    opset: int = 17,
    ir: int = 8,
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def _vi(name: str, dtype: int = F, shape: list[Any] | None = (2, 3)) -> Any:  # type: ignore[assignment]
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def _save(model: onnx.ModelProto, path: Path) -> None:
    path.write_bytes(model.SerializeToString())


def _add_model() -> onnx.ModelProto:
    return _model([helper.make_node("Add", ["x", "y"], ["z"])], [_vi("x"), _vi("y")], [_vi("z")])


def _loop_body(extra_outputs: int = 0, cond_out: bool = True) -> Any:
    nodes = [
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
    ]
    outs = [_vi("cond_out", B, []), _vi("v_out", F, [2])] if cond_out else [_vi("v_out", F, [2])]
    return helper.make_graph(
        nodes, "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])], outs
    )


def _loop_model(body: Any, trip: int = 3) -> onnx.ModelProto:
    consts = [
        numpy_helper.from_array(np.array(trip, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "c"),
    ]
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v"], body=body)
    return _model([node], [_vi("v0", F, [2])], [_vi("v", F, [2])], consts)


def _scan_model(len_a: Any = 4, len_b: Any = 4, axis: int = 0) -> onnx.ModelProto:
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "a"], ["t"]),
            helper.make_node("Add", ["t", "b"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["y"]),
        ],
        "body",
        [_vi("s_in", F, [3]), _vi("a", F, [3]), _vi("b", F, [3])],
        [_vi("s_out", F, [3]), _vi("y", F, [3])],
    )
    node = helper.make_node(
        "Scan", ["s0", "A", "B"], ["s", "ys"], body=body, num_scan_inputs=2,
        scan_input_axes=[axis, axis],
    )  # fmt: skip
    return _model(
        [node],
        [_vi("s0", F, [3]), _vi("A", F, [len_a, 3]), _vi("B", F, [len_b, 3])],
        [_vi("s", F, [3]), _vi("ys", F, None)],
        opset=17,
    )


@case("onnx_ok_add.onnx", "ok")
def _(p: Path) -> None:
    _save(_add_model(), p)


@case("onnx_ok_loop.onnx", "ok")
def _(p: Path) -> None:
    _save(_loop_model(_loop_body()), p)


@case("onnx_ok_scan.onnx", "ok")
def _(p: Path) -> None:
    _save(_scan_model(), p)


@case("onnx_ok_external.onnx", "ok")
def _(p: Path) -> None:
    _external(p, "onnx_ok_external.data", 0, None)


@case("onnx_empty.onnx", "FormatError")
def _(p: Path) -> None:
    p.write_bytes(b"")


@case("onnx_truncated.onnx", "FormatError")
def _(p: Path) -> None:
    data = _loop_model(_loop_body()).SerializeToString()
    p.write_bytes(data[: len(data) // 2])


@case("onnx_garbage.onnx", "FormatError")
def _(p: Path) -> None:
    p.write_bytes(np.random.default_rng(1).integers(0, 256, 512, np.uint8).tobytes())


@case("onnx_text_not_proto.onnx", "FormatError")
def _(p: Path) -> None:
    p.write_bytes(b'<?xml version="1.0"?><net version="11"></net>')


@case("onnx_ir_version_future.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], ir=99), p)


@case("onnx_ir_version_zero.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], ir=0), p)


@case("onnx_opset_future.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], opset=99), p)


@case("onnx_opset_zero.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], opset=0), p)


@case("onnx_duplicate_graph_output.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y"), _vi("y")]), p)


@case("onnx_duplicate_graph_input.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x"), _vi("x")], [_vi("y")]), p)


@case("onnx_duplicate_node_output.onnx", "FormatError")
def _(p: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])]
    _save(_model(nodes, [_vi("x")], [_vi("y")]), p)


@case("onnx_output_shadows_input.onnx", "FormatError")
def _(p: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["x"])]
    _save(_model(nodes, [_vi("x")], [_vi("x")]), p)


@case("onnx_negative_input_dim.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [2, -5])], [_vi("y")]), p)


@case("onnx_negative_output_dim.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y", F, [-3, 3])]), p)


@case("onnx_negative_initializer_dim.onnx", "FormatError")
def _(p: Path) -> None:
    t = TensorProto(name="w", data_type=F, dims=[-2, 3])
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    _save(_model(nodes, [_vi("x")], [_vi("y")], [t]), p)


@case("onnx_initializer_size_mismatch.onnx", "FormatError")
def _(p: Path) -> None:
    t = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=bytes(20))
    _save(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [t]), p)


@case("onnx_initializer_dims_overflow.onnx", "FormatError")
def _(p: Path) -> None:
    t = TensorProto(name="w", data_type=F, dims=[1 << 62, 4])
    _save(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [t]), p)


@case("onnx_unknown_elem_type.onnx", "FormatError")
def _(p: Path) -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")])
    m.graph.input[0].type.tensor_type.elem_type = 999
    _save(m, p)


@case("onnx_dangling_input.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Add", ["x", "ghost"], ["y"])], [_vi("x")], [_vi("y")]), p)


@case("onnx_output_not_produced.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("nowhere")]), p)


@case("onnx_cycle.onnx", "FormatError")
def _(p: Path) -> None:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"]),
    ]
    _save(_model(nodes, [_vi("x")], [_vi("b")]), p)


@case("onnx_self_loop.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Add", ["x", "y"], ["y"])], [_vi("x")], [_vi("y")]), p)


@case("onnx_unknown_op.onnx", "UnsupportedOpError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("NoSuchOp", ["x"], ["y"])], [_vi("x")], [_vi("y")]), p)


@case("onnx_unknown_domain.onnx", "FormatError")
def _(p: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], domain="com.nowhere")
    _save(_model([node], [_vi("x")], [_vi("y")]), p)


@case("onnx_type_mismatch.onnx", "FormatError")
def _(p: Path) -> None:
    nodes = [helper.make_node("Add", ["x", "n"], ["y"])]
    _save(_model(nodes, [_vi("x"), _vi("n", I64)], [_vi("y")]), p)


@case("onnx_bad_attribute_type.onnx", "FormatError")
def _(p: Path) -> None:
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[1.5, 0.5])
    _save(_model([node], [_vi("x")], [_vi("y", F, [3, 2])]), p)


@case("onnx_transpose_bad_perm.onnx", "FormatError")
def _(p: Path) -> None:
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 7])
    _save(_model([node], [_vi("x")], [_vi("y", F, [3, 2])]), p)


@case("onnx_concat_axis_out_of_range.onnx", "FormatError")
def _(p: Path) -> None:
    node = helper.make_node("Concat", ["x", "x"], ["y"], axis=9)
    _save(_model([node], [_vi("x")], [_vi("y", F, None)]), p)


@case("onnx_reshape_negative_target.onnx", "FormatError")
def _(p: Path) -> None:
    shape = numpy_helper.from_array(np.array([-5, 2], np.int64), "s")
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    _save(_model(nodes, [_vi("x")], [_vi("y", F, None)], [shape]), p)


@case("onnx_loop_body_no_condition.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_loop_model(_loop_body(cond_out=False)), p)


@case("onnx_loop_body_wrong_arity.onnx", "FormatError")
def _(p: Path) -> None:
    body = _loop_body()
    del body.input[2]
    _save(_loop_model(body), p)


@case("onnx_loop_condition_not_bool.onnx", "FormatError")
def _(p: Path) -> None:
    body = _loop_body()
    body.node[0].op_type = "Cast"
    body.node[0].attribute.append(helper.make_attribute("to", F))
    body.output[0].type.tensor_type.elem_type = F
    _save(_loop_model(body), p)


@case("onnx_loop_trip_count_huge.onnx", LIMITS)
def _(p: Path) -> None:
    _save(_loop_model(_loop_body(), trip=1 << 40), p)


@case("onnx_loop_endless.onnx", LIMITS)
def _(p: Path) -> None:
    consts = [numpy_helper.from_array(np.array(True), "c")]
    node = helper.make_node("Loop", ["", "c", "v0"], ["v"], body=_loop_body())
    _save(_model([node], [_vi("v0", F, [2])], [_vi("v", F, [2])], consts), p)


def _nested_body(trips: int, depth: int) -> Any:
    """A Loop body whose value goes through ``depth`` more Loops of ``trips`` each inside it
    (the innermost negates it: finite however often it runs)."""
    d = str(depth)
    ins = [_vi("i" + d, I64, []), _vi("cond_in" + d, B, []), _vi("v_in" + d, F, [2])]
    outs = [_vi("cond_out" + d, B, []), _vi("v_out" + d, F, [2])]
    nodes = [helper.make_node("Identity", ["cond_in" + d], ["cond_out" + d])]
    if depth == 0:
        nodes.append(helper.make_node("Neg", ["v_in" + d], ["v_out" + d]))
    else:
        nodes += [
            helper.make_node(
                "Constant", [], ["M" + d], value=numpy_helper.from_array(np.array(trips, np.int64))
            ),
            helper.make_node(
                "Loop",
                ["M" + d, "", "v_in" + d],
                ["v_out" + d],
                body=_nested_body(trips, depth - 1),
            ),
        ]
    return helper.make_graph(nodes, "body" + d, ins, outs)


# Nested trips multiply: three Loops of 1000 make 10**9 body runs, refused before the first
# (Limits.max_total_iterations); three of 100 (about 10**6) run.
@case("onnx_loop_nested_billion.onnx", "LoopLimitError")
def _(p: Path) -> None:
    _save(_loop_model(_nested_body(1000, 2), trip=1000), p)


@case("onnx_ok_loop_nested.onnx", "ok")
def _(p: Path) -> None:
    _save(_loop_model(_nested_body(100, 2), trip=100), p)


def _doubling_model(trips: int) -> onnx.ModelProto:
    """A Loop whose carried value doubles its length every trip (``x = Concat(x, x)``)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0),
        ],
        "body",
        [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, None)],
        [_vi("cond_out", B, []), _vi("v_out", F, None)],
    )
    consts = [numpy_helper.from_array(np.array(trips, np.int64), "M")]
    node = helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)
    return _model([node], [_vi("v0", F, [2])], [_vi("v", F, None)], consts)


@case("onnx_loop_doubling.onnx", LIMITS)
def _(p: Path) -> None:
    _save(_doubling_model(64), p)


@case("onnx_ok_loop_doubling.onnx", "ok")
def _(p: Path) -> None:
    _save(_doubling_model(10), p)


@case("onnx_loop_sequence_grows.onnx", LIMITS)
def _(p: Path) -> None:
    # a fresh float32[2**20] (4 MiB) inserted into a carried sequence on each of 10**5 trips:
    # each tensor is small, together they take 400 GB
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Expand", ["fi", "shape"], ["fresh"]),
            helper.make_node("SequenceInsert", ["seq_in", "fresh"], ["seq_out"]),
        ],
        "body",
        [
            _vi("i", I64, []),
            _vi("cond_in", B, []),
            helper.make_tensor_sequence_value_info("seq_in", F, None),
        ],
        [_vi("cond_out", B, []), helper.make_tensor_sequence_value_info("seq_out", F, None)],
        [numpy_helper.from_array(np.array([1 << 20], np.int64), "shape")],
    )
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
        helper.make_node("Loop", ["M", "", "empty"], ["seq"], body=body),
        helper.make_node("SequenceLength", ["seq"], ["count"]),
        helper.make_node("Add", ["count", "x"], ["y"]),
    ]
    consts = [numpy_helper.from_array(np.array(100_000, np.int64), "M")]
    _save(_model(nodes, [_vi("x", I64, [])], [_vi("y", I64, [])], consts), p)


@case("onnx_loop_scan_output_grows.onnx", LIMITS)
def _(p: Path) -> None:
    body = _loop_body()
    body.node.append(helper.make_node("Identity", ["v_out"], ["scan"]))
    body.output.append(_vi("scan", F, [2]))
    consts = [
        numpy_helper.from_array(np.array(1 << 36, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "c"),
    ]
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v", "s"], body=body)
    _save(_model([node], [_vi("v0", F, [2])], [_vi("v", F, [2]), _vi("s", F, None)], consts), p)


@case("onnx_loop_scan_output_changing_shape.onnx", "ExecutionError")
def _(p: Path) -> None:
    """A scan output of length i at iteration i: OpenVINO returns garbage, it cannot stack."""
    body = _loop_body()
    body.node.extend(
        [
            helper.make_node(
                "Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))
            ),
            helper.make_node(
                "Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))
            ),
            helper.make_node("Range", ["zero", "i", "one"], ["scan"]),
        ]
    )
    body.output.append(_vi("scan", I64, None))
    consts = [
        numpy_helper.from_array(np.array(3, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "c"),
    ]
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v", "s"], body=body)
    outs = [_vi("v", F, [2]), _vi("s", I64, None)]
    _save(_model([node], [_vi("v0", F, [2])], outs, consts), p)


@case("onnx_scan_unequal_lengths.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_scan_model(4, 5), p)


@case("onnx_scan_unequal_lengths_at_run.onnx", "ExecutionError", {"A": [4, 3], "B": [5, 3]})
def _(p: Path) -> None:
    _save(_scan_model("n", "m"), p)


@case("onnx_scan_axis_out_of_range.onnx", "FormatError")
def _(p: Path) -> None:
    _save(_scan_model(4, 4, axis=5), p)


@case("onnx_constant_of_shape_terabytes.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20, 1 << 10], np.int64), "s")
    nodes = [
        helper.make_node("ConstantOfShape", ["s"], ["big"]),
        helper.make_node("ReduceSum", ["big"], ["y"], keepdims=0),
    ]
    _save(_model(nodes, [], [_vi("y", F, [])], [shape]), p)


@case("onnx_expand_terabytes.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20, 3], np.int64), "s")
    nodes = [helper.make_node("Expand", ["x", "s"], ["y"])]
    _save(_model(nodes, [_vi("x", F, [1, 3])], [_vi("y", F, None)], [shape]), p)


@case("onnx_range_terabytes.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "a"),
        numpy_helper.from_array(np.array(1 << 42, np.int64), "b"),
        numpy_helper.from_array(np.array(1, np.int64), "d"),
    ]
    nodes = [helper.make_node("Range", ["a", "b", "d"], ["y"])]
    _save(_model(nodes, [], [_vi("y", I64, None)], inits), p)


@case("onnx_tile_terabytes.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    reps = numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "r")
    nodes = [helper.make_node("Tile", ["x", "r"], ["y"])]
    _save(_model(nodes, [_vi("x")], [_vi("y", F, None)], [reps]), p)


@case("onnx_rank_huge.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    _save(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [1] * 20_000)],
                 [_vi("y", F, None)]), p)  # fmt: skip


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand: the protobuf library refuses to
    build messages nested deeper than its own limit, and a hostile file is exactly that."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _nested_if(depth: int) -> bytes:
    """``depth`` If nodes, each in the then branch of the one above (the else branch a leaf)."""
    leaf = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["r0"])], "leaf", [], [_vi("r0", F, [2, 3])]
    )
    inner = leaf.SerializeToString()
    for k in range(depth):
        node = helper.make_node("If", ["c"], [f"r{k + 1}"], else_branch=leaf).SerializeToString()
        then = _field(1, b"then_branch") + _varint(20 << 3) + _varint(5) + _field(6, inner)
        node += _field(5, then)  # NodeProto.attribute
        graph = helper.make_graph([], f"level{k}", [], [_vi(f"r{k + 1}", F, [2, 3])])
        inner = graph.SerializeToString() + _field(1, node)  # GraphProto.node
    top = _model([], [_vi("c", B, []), _vi("x")], [_vi("y")])
    node = helper.make_node("If", ["c"], ["y"], else_branch=leaf).SerializeToString()
    node += _field(5, _field(1, b"then_branch") + _varint(20 << 3) + _varint(5) + _field(6, inner))
    graph = top.graph.SerializeToString() + _field(1, node)
    top.ClearField("graph")
    head: bytes = top.SerializeToString()
    return head + _field(7, graph)  # ModelProto.graph


@case("onnx_nested_if_deep.onnx", ["FormatError", "ResourceLimitError"])
def _(p: Path) -> None:
    p.write_bytes(_nested_if(300))


@case("onnx_ok_nested_if.onnx", "ok")
def _(p: Path) -> None:
    p.write_bytes(_nested_if(3))


def _doubling_functions(levels: int) -> onnx.ModelProto:
    """Model-local functions f0 (Neg, Sin) .. f{levels-1}, each calling the one before twice;
    the graph calls the last: 2**levels nodes once inlined (onnx's inliner and onnxruntime hang
    on 64 levels; tensorloop predicts the size first and refuses it, Limits.max_nodes)."""
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    nodes = [helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Sin", ["t"], ["y"])]
    functions = [helper.make_function("local", "f0", ["x"], ["y"], nodes, opsets)]
    for k in range(1, levels):
        calls = [
            helper.make_node(f"f{k - 1}", ["x"], ["t"], domain="local"),
            helper.make_node(f"f{k - 1}", ["t"], ["y"], domain="local"),
        ]
        functions.append(helper.make_function("local", f"f{k}", ["x"], ["y"], calls, opsets))
    call = helper.make_node(f"f{levels - 1}", ["x"], ["y"], domain="local")
    graph = helper.make_graph([call], "g", [_vi("x")], [_vi("y")])
    return helper.make_model(graph, opset_imports=opsets, functions=functions, ir_version=8)


@case("onnx_functions_doubling_64.onnx", "ResourceLimitError")
def _(p: Path) -> None:
    _save(_doubling_functions(64), p)


@case("onnx_ok_functions_nested.onnx", "ok")
def _(p: Path) -> None:
    _save(_doubling_functions(4), p)


def _external(p: Path, location: str, offset: int, length: int | None) -> None:
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    if location == p.name.replace(".onnx", ".data"):
        (p.parent / location).write_bytes(t.raw_data)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        t.external_data.append(onnx.StringStringEntryProto(key=k, value=v))
    _save(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [t]), p)


@case("onnx_external_absolute.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "/etc/hostname", 0, None)


@case("onnx_external_dotdot.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "../hostile/onnx_ok_external.data", 0, None)


@case("onnx_external_symlink.onnx", "FormatError")
def _(p: Path) -> None:
    link = p.parent / "onnx_external_symlink.link"
    if link.is_symlink() or link.exists():
        link.unlink()
    os.symlink("/etc/hostname", link)
    _external(p, link.name, 0, None)


@case("onnx_external_missing.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "no_such_file.data", 0, None)


@case("onnx_external_offset_beyond.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "onnx_ok_external.data", 1 << 30, None)


@case("onnx_external_length_mismatch.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "onnx_ok_external.data", 0, 7)


@case("onnx_external_negative_offset.onnx", "FormatError")
def _(p: Path) -> None:
    _external(p, "onnx_ok_external.data", -8, None)


def _regex(p: Path, pattern: str, items: list[str]) -> None:
    """RegexFullMatch (opset 20) of ``pattern`` over constant strings (the corpus feeds no
    string inputs)."""
    text = numpy_helper.from_array(np.array(items, dtype=object), "text")
    nodes = [
        helper.make_node("Constant", [], ["s"], value=text),
        helper.make_node("RegexFullMatch", ["s"], ["y"], pattern=pattern),
    ]
    _save(_model(nodes, [], [_vi("y", B, [len(items)])], opset=20, ir=9), p)


@case("onnx_ok_regex.onnx", "ok")
def _(p: Path) -> None:
    _regex(p, r"[\w.]+@\w+\.com", ["me@example.com", "not an address"])


@case("onnx_regex_catastrophic.onnx", "ok")  # RE2: linear time; Python's re never finishes
def _(p: Path) -> None:
    _regex(p, "(a+)+$", ["a" * 40 + "!", "a" * 100_000 + "!", "a" * 64])


@case("onnx_regex_backreference.onnx", "FormatError")  # not RE2 syntax: refused at load
def _(p: Path) -> None:
    _regex(p, r"(a+)\1", ["aa"])


@case("onnx_regex_lookahead.onnx", "FormatError")
def _(p: Path) -> None:
    _regex(p, r"(?=a)\w+", ["ab"])


# -- OpenVINO IR ------------------------------------------------------------------------------

PRECISION = {"f32": "FP32", "i64": "I64", "boolean": "BOOL", "i32": "I32"}


def _port(pid: int, dims: list[Any], et: str = "f32", names: str = "") -> str:
    named = f' names="{names}"' if names else ""
    body = "".join(f"<dim>{d}</dim>" for d in dims)
    return f'<port id="{pid}" precision="{PRECISION[et]}"{named}>{body}</port>'


def _layer(
    lid: Any,
    ltype: str,
    inputs: list[list[Any]] = (),  # type: ignore[assignment]
    outputs: list[list[Any]] = (),  # type: ignore[assignment]
    data: dict[str, Any] | None = None,
    et: str = "f32",
    extra: str = "",
    version: str = "opset1",
    name: str = "",
) -> str:
    attrs = "".join(f' {k}="{v}"' for k, v in (data or {}).items())
    n = len(inputs)
    ins = "".join(_port(k, d, et) for k, d in enumerate(inputs))
    outs = "".join(
        _port(n + k, d, et, f"{ltype.lower()}{lid}" + (f".{k}" if k else ""))
        for k, d in enumerate(outputs)
    )
    return (
        f'<layer id="{lid}" name="{name or f"{ltype.lower()}{lid}"}" type="{ltype}" '
        f'version="{version}">'
        + (f"<data{attrs}/>" if data is not None else "")
        + (f"<input>{ins}</input>" if inputs else "")
        + (f"<output>{outs}</output>" if outputs else "")
        + extra
        + "</layer>"
    )


def _param(lid: Any, dims: list[Any], et: str = "f32") -> str:
    shape = ",".join(str(d) for d in dims)
    return _layer(lid, "Parameter", [], [dims], {"shape": shape, "element_type": et}, et)


def _result(lid: Any, dims: list[Any], et: str = "f32") -> str:
    return _layer(lid, "Result", [dims], [], None, et)


def _edges(edges: list[tuple[Any, int, Any, int]]) -> str:
    return "".join(
        f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
        for a, b, c, d in edges
    )


def _net(layers: list[str], edges: list[tuple[Any, int, Any, int]], tag: str = "net") -> str:
    head = ' name="m" version="11"' if tag == "net" else ""
    return f"<{tag}{head}><layers>{''.join(layers)}</layers><edges>{_edges(edges)}</edges></{tag}>"


def _write_ir(p: Path, xml: str, weights: bytes | None = None) -> None:
    p.write_text('<?xml version="1.0"?>\n' + xml + "\n", encoding="utf-8")
    if weights is not None:
        p.with_suffix(".bin").write_bytes(weights)


def _relu_net(dims: list[Any] = (2, 3)) -> str:  # type: ignore[assignment]
    d = list(dims)
    layers = [_param(0, d), _layer(1, "ReLU", [d], [d]), _result(2, d)]
    return _net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])


def _const_net(offset: int, size: int, shape: list[int], et: str = "f32") -> str:
    data = {
        "element_type": et,
        "shape": ",".join(map(str, shape)),
        "offset": offset,
        "size": size,
    }
    layers = [
        _param(0, [2, 3]),
        _layer(1, "Const", [], [shape], data, et),
        _layer(2, "Add", [[2, 3], shape], [[2, 3]]),
        _result(3, [2, 3]),
    ]
    return _net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])


def _ti(
    entries: str | None = None,
    back: str = '<edge from-layer="3" to-layer="1"/>',
    x_len: Any = 4,
    y_len: Any = 4,
    out_len: Any = 4,
    body_extra: tuple[list[str], list[tuple[Any, int, Any, int]]] = ([], []),
) -> str:
    """A TensorIterator summing two sliced inputs into a carried h; concatenates the sums."""
    entries = entries or (
        '<input axis="0" external_port_id="0" internal_layer_id="0" part_size="1" stride="1"/>'
        '<input axis="0" external_port_id="1" internal_layer_id="5" part_size="1" stride="1"/>'
        '<input external_port_id="2" internal_layer_id="1"/>'
        '<output external_port_id="3" internal_layer_id="3"/>'
        '<output axis="0" external_port_id="4" internal_layer_id="4" part_size="1" stride="1"/>'
    )
    body_layers = [
        _param(0, [1, 3]),
        _param(1, [1, 3]),
        _param(5, [1, 3]),
        _layer(2, "Add", [[1, 3], [1, 3]], [[1, 3]]),
        _layer(6, "Add", [[1, 3], [1, 3]], [[1, 3]]),
        _result(3, [1, 3]),
        _result(4, [1, 3]),
        *body_extra[0],
    ]
    body_edges = [
        (0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 6, 0), (5, 0, 6, 1), (6, 2, 3, 0), (6, 2, 4, 0),
        *body_extra[1],
    ]  # fmt: skip
    body = _net(body_layers, body_edges, "body")
    ti = _layer(
        3,
        "TensorIterator",
        [[x_len, 3], [y_len, 3], [1, 3]],
        [[1, 3], [out_len, 3]],
        None,
        extra=f"<port_map>{entries}</port_map><back_edges>{back}</back_edges>{body}",
    )
    layers = [
        _param(0, [x_len, 3]),
        _param(1, [y_len, 3]),
        _param(2, [1, 3]),
        ti,
        _result(4, [1, 3]),
        _result(5, [out_len, 3]),
    ]
    return _net(layers, [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0), (3, 4, 5, 0)])


_SLICE_X = '<input axis="0" external_port_id="0" internal_layer_id="0" part_size="1" stride="1"/>'
_REST = (
    '<input axis="0" external_port_id="1" internal_layer_id="5" part_size="1" stride="1"/>'
    '<input external_port_id="2" internal_layer_id="1"/>'
    '<output external_port_id="3" internal_layer_id="3"/>'
    '<output axis="0" external_port_id="4" internal_layer_id="4" part_size="1" stride="1"/>'
)


def _ti_with(x_entry: str, **kw: Any) -> str:
    return _ti(x_entry + _REST, **kw)


def _const_layer(lid: int, et: str, offset: int, size: int) -> str:
    """A scalar Const of element type ``et`` read from the .bin."""
    data = {"element_type": et, "shape": "", "offset": offset, "size": size}
    return _layer(lid, "Const", [], [[]], data, et)


def _loop5(trip: int, cond_entry: bool = True, body_cond: str = "11") -> tuple[str, bytes]:
    """A Loop-5 doubling a carried [2] value ``trip`` times (the trip count from the .bin)."""
    weights = np.array([trip], np.int64).tobytes() + np.array([True], np.bool_).tobytes()
    body_layers = [
        _param(0, [2]),
        _layer(1, "Add", [[2], [2]], [[2]]),
        _result(2, [2]),
        _const_layer(10, "boolean", 8, 1),
        _result(11, [], "boolean"),
    ]
    body = _net(body_layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0), (10, 0, 11, 0)], "body")
    cond = (
        f'<output external_port_id="-1" internal_layer_id="{body_cond}" '
        'purpose="execution_condition"/>'
        if cond_entry
        else ""
    )
    pm = (
        '<input external_port_id="2" internal_layer_id="0"/>'
        '<output external_port_id="3" internal_layer_id="2"/>' + cond
    )
    loop = _layer(
        3,
        "Loop",
        [[], [], [2]],
        [[2]],
        None,
        extra=f'<port_map>{pm}</port_map><back_edges><edge from-layer="2" to-layer="0"/>'
        f"</back_edges>{body}",
        version="opset5",
    )
    layers = [
        _const_layer(0, "i64", 0, 8),
        _const_layer(1, "boolean", 8, 1),
        _param(2, [2]),
        loop,
        _result(4, [2]),
    ]
    layers[3] = layers[3].replace(
        '<input><port id="0" precision="FP32"></port><port id="1" precision="FP32"></port>',
        '<input><port id="0" precision="I64"></port><port id="1" precision="BOOL"></port>',
    )
    return _net(layers, [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0)]), weights


@case("ov_ok_relu.xml", "ok")
def _(p: Path) -> None:
    _write_ir(p, _relu_net())


@case("ov_ok_const.xml", "ok")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 24, [2, 3]), np.ones(6, np.float32).tobytes())


@case("ov_ok_tensor_iterator.xml", "ok")
def _(p: Path) -> None:
    _write_ir(p, _ti())


@case("ov_ok_tensor_iterator_dynamic.xml", "ok", {"parameter0": [3, 3], "parameter1": [3, 3]})
def _(p: Path) -> None:
    _write_ir(p, _ti(x_len=-1, y_len=-1, out_len=-1))


@case("ov_ok_loop.xml", "ok")
def _(p: Path) -> None:
    xml, w = _loop5(3)
    _write_ir(p, xml, w)


@case("ov_ok_loop_zero_trip.xml", "ok")
def _(p: Path) -> None:
    xml, w = _loop5(0)
    _write_ir(p, xml, w)


@case("ov_empty.xml", "FormatError")
def _(p: Path) -> None:
    p.write_bytes(b"")


@case("ov_not_xml.xml", "FormatError")
def _(p: Path) -> None:
    p.write_bytes(b"\x00\xff\xfe garbage <net")


@case("ov_truncated.xml", "FormatError")
def _(p: Path) -> None:
    text = '<?xml version="1.0"?>\n' + _relu_net()
    p.write_text(text[: len(text) // 2], encoding="utf-8")


@case("ov_wrong_root.xml", "FormatError")
def _(p: Path) -> None:
    p.write_text('<?xml version="1.0"?><model version="11"/>', encoding="utf-8")


@case("ov_billion_laughs.xml", "FormatError")
def _(p: Path) -> None:
    ents = '<!ENTITY a "lol">' + "".join(
        f'<!ENTITY {chr(98 + k)} "{("&" + chr(97 + k) + ";") * 10}">' for k in range(9)
    )
    p.write_text(f'<?xml version="1.0"?><!DOCTYPE net [{ents}]><net version="11">&j;</net>')


@case("ov_external_entity.xml", "FormatError")
def _(p: Path) -> None:
    p.write_text(
        '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<net name="&x;" version="11"><layers/></net>'
    )


@case("ov_dtd_only.xml", "FormatError")
def _(p: Path) -> None:
    p.write_text('<?xml version="1.0"?><!DOCTYPE net SYSTEM "http://x/y.dtd">' + _relu_net())


@case("ov_version_future.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net().replace('version="11"', 'version="99"', 1))


@case("ov_version_old.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net().replace('version="11"', 'version="7"', 1))


@case("ov_version_missing.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net().replace(' version="11"', "", 1))


@case("ov_deep_xml.xml", "FormatError")
def _(p: Path) -> None:
    depth = 20_000
    p.write_text(
        '<?xml version="1.0"?><net name="m" version="11"><layers/>'
        + "<a>" * depth
        + "</a>" * depth
        + "</net>"
    )


@case("ov_deep_bodies.xml", ["FormatError", "ResourceLimitError"])
def _(p: Path) -> None:
    depth = 2_000
    inner = '<layers><layer id="0" name="p" type="Parameter"/></layers>'
    for _ in range(depth):
        inner = f'<layers><layer id="0" name="t" type="TensorIterator"><body>{inner}</body>'
        inner += "</layer></layers>"
    p.write_text(f'<?xml version="1.0"?><net name="m" version="11">{inner}</net>')


@case("ov_no_layers.xml", "FormatError")
def _(p: Path) -> None:
    p.write_text('<?xml version="1.0"?><net name="m" version="11"></net>')


@case("ov_duplicate_layer_id.xml", "FormatError")
def _(p: Path) -> None:
    layers = [_param(0, [2, 3]), _layer(0, "Relu", [[2, 3]], [[2, 3]]), _result(2, [2, 3])]
    _write_ir(p, _net(layers, [(0, 0, 0, 0), (0, 1, 2, 0)]))


@case("ov_duplicate_layer_name.xml", "ok")
def _(p: Path) -> None:  # names need not be unique in OpenVINO; ids must
    layers = [
        _param(0, [2, 3]),
        _layer(1, "ReLU", [[2, 3]], [[2, 3]], name="same"),
        _layer(2, "ReLU", [[2, 3]], [[2, 3]], name="same"),
        _result(3, [2, 3]),
    ]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0)]))


@case("ov_duplicate_tensor_name.xml", "ok")
def _(p: Path) -> None:  # OpenVINO itself writes IR where two ports share a tensor name
    layers = [
        _param(0, [2, 3]),
        _param(1, [2, 3]),
        _layer(2, "Add", [[2, 3], [2, 3]], [[2, 3]]),
        _result(3, [2, 3]),
    ]
    xml = _net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])
    _write_ir(p, xml.replace('names="parameter1"', 'names="parameter0"'))


@case("ov_duplicate_port_id.xml", "FormatError")
def _(p: Path) -> None:
    layers = [
        _param(0, [2, 3]),
        _layer(1, "Add", [[2, 3], [2, 3]], [[2, 3]]).replace('port id="1"', 'port id="0"', 1),
        _result(2, [2, 3]),
    ]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (1, 2, 2, 0)]))


@case("ov_edge_missing_layer.xml", "FormatError")
def _(p: Path) -> None:
    layers = [_param(0, [2, 3]), _layer(1, "ReLU", [[2, 3]], [[2, 3]]), _result(2, [2, 3])]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (7, 1, 2, 0)]))


@case("ov_edge_missing_port.xml", "FormatError")
def _(p: Path) -> None:
    layers = [_param(0, [2, 3]), _layer(1, "ReLU", [[2, 3]], [[2, 3]]), _result(2, [2, 3])]
    _write_ir(p, _net(layers, [(0, 5, 1, 0), (1, 1, 2, 0)]))


@case("ov_edge_duplicate_target.xml", "FormatError")
def _(p: Path) -> None:
    layers = [
        _param(0, [2, 3]),
        _param(3, [2, 3]),
        _layer(1, "ReLU", [[2, 3]], [[2, 3]]),
        _result(2, [2, 3]),
    ]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (3, 0, 1, 0), (1, 1, 2, 0)]))


@case("ov_unconnected_input.xml", "FormatError")
def _(p: Path) -> None:
    layers = [_param(0, [2, 3]), _layer(1, "Add", [[2, 3], [2, 3]], [[2, 3]]), _result(2, [2, 3])]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (1, 2, 2, 0)]))


@case("ov_cycle.xml", "FormatError")
def _(p: Path) -> None:
    layers = [
        _param(0, [2, 3]),
        _layer(1, "Add", [[2, 3], [2, 3]], [[2, 3]]),
        _layer(2, "ReLU", [[2, 3]], [[2, 3]]),
        _result(3, [2, 3]),
    ]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (2, 1, 1, 1), (1, 2, 2, 0), (2, 1, 3, 0)]))


@case("ov_no_result.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _net([_param(0, [2, 3]), _layer(1, "ReLU", [[2, 3]], [[2, 3]])], [(0, 0, 1, 0)]))


@case("ov_negative_dim.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net([2, -7]))


@case("ov_bad_dim_text.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net([2, "three"]))


@case("ov_huge_dim_text.xml", ["FormatError", "ResourceLimitError"])
def _(p: Path) -> None:
    _write_ir(p, _relu_net([2, "9" * 40]))


@case("ov_unknown_layer_type.xml", "UnsupportedLayerError")
def _(p: Path) -> None:
    layers = [_param(0, [2, 3]), _layer(1, "NoSuchLayer", [[2, 3]], [[2, 3]]), _result(2, [2, 3])]
    _write_ir(p, _net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)]))


@case("ov_bad_element_type.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net().replace('element_type="f32"', 'element_type="q7"'))


@case("ov_bin_missing.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 24, [2, 3]))


@case("ov_bin_offset_beyond.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(1 << 40, 24, [2, 3]), np.ones(6, np.float32).tobytes())


@case("ov_bin_negative_offset.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(-4, 24, [2, 3]), np.ones(6, np.float32).tobytes())


@case("ov_bin_size_mismatch.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 20, [2, 3]), np.ones(6, np.float32).tobytes())


@case("ov_bin_short_file.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 24, [2, 3]), np.ones(5, np.float32).tobytes())


@case("ov_const_terabytes.xml", ["FormatError", "ResourceLimitError"])
def _(p: Path) -> None:
    shape = [1 << 20, 1 << 20, 1 << 10]
    _write_ir(p, _const_net(0, 4 << 50, shape), np.ones(6, np.float32).tobytes())


@case("ov_const_shape_overflow.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 0, [1 << 62, 4]), np.ones(6, np.float32).tobytes())


@case("ov_const_empty_huge_dim.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _const_net(0, 1, [1 << 62, 0]), np.ones(6, np.float32).tobytes())


@case("ov_port_disagrees_with_shape.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _relu_net().replace('shape="2,3"', 'shape="2,3,5"', 1))


@case("ov_ti_part_size_zero.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('part_size="1"', 'part_size="0"')))


@case("ov_ti_stride_zero.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('stride="1"', 'stride="0"')))


@case("ov_ti_axis_out_of_range.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('axis="0"', 'axis="5"')))


@case("ov_ti_start_beyond_axis.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('part_size="1"', 'part_size="1" start="9"')))


@case("ov_ti_end_beyond_axis.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('part_size="1"', 'part_size="1" start="0" end="9"')))


@case("ov_ti_start_on_dynamic_axis.xml", "FormatError")
def _(p: Path) -> None:
    entry = _SLICE_X.replace('part_size="1"', 'part_size="1" start="9"')
    _write_ir(p, _ti_with(entry, x_len=-1, y_len=-1, out_len=-1))


@case("ov_ti_unequal_lengths.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti(x_len=4, y_len=5))


@case("ov_ti_unequal_lengths_at_run.xml", "ExecutionError",
      {"parameter0": [4, 3], "parameter1": [5, 3]})  # fmt: skip
def _(p: Path) -> None:
    _write_ir(p, _ti(x_len=-1, y_len=-1, out_len=-1))


@case("ov_ti_port_map_missing_layer.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('internal_layer_id="0"', 'internal_layer_id="77"')))


@case("ov_ti_port_map_missing_port.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('external_port_id="0"', 'external_port_id="42"')))


@case("ov_ti_port_map_bad_int.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti_with(_SLICE_X.replace('axis="0"', 'axis="zero"')))


@case("ov_ti_back_edge_not_result.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti(back='<edge from-layer="2" to-layer="1"/>'))


@case("ov_ti_back_edge_not_parameter.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti(back='<edge from-layer="3" to-layer="2"/>'))


@case("ov_ti_back_edge_missing_layer.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti(back='<edge from-layer="3" to-layer="99"/>'))


@case("ov_ti_back_edge_malformed.xml", "FormatError")
def _(p: Path) -> None:
    _write_ir(p, _ti(back='<edge from-layer="3"/>'))


@case("ov_ti_no_body.xml", "FormatError")
def _(p: Path) -> None:
    xml = _ti()
    start = xml.index("<body>")
    _write_ir(p, xml[:start] + xml[xml.index("</body>") + len("</body>") :])


@case("ov_ti_body_cycle.xml", "FormatError")
def _(p: Path) -> None:
    layers = [_layer(7, "ReLU", [[1, 3]], [[1, 3]]), _layer(8, "ReLU", [[1, 3]], [[1, 3]])]
    _write_ir(p, _ti(body_extra=(layers, [(7, 1, 8, 0), (8, 1, 7, 0)])))


@case("ov_loop_no_condition.xml", "FormatError")
def _(p: Path) -> None:
    xml, w = _loop5(3, cond_entry=False)
    _write_ir(p, xml.replace('trip=""', ""), w)


@case("ov_loop_condition_missing_layer.xml", "FormatError")
def _(p: Path) -> None:
    xml, w = _loop5(3, body_cond="55")
    _write_ir(p, xml, w)


@case("ov_loop_trip_count_huge.xml", LIMITS)
def _(p: Path) -> None:
    xml, w = _loop5(1 << 40)
    _write_ir(p, xml, w)


# -- text IR ----------------------------------------------------------------------------------

_TL_OK = """graph @m(%x: f32[2,3], %y: f32[2,3]) {
  %z = Add(%x, %y) : f32[2,3]
  return %z
}
"""


def _tl(text: str) -> Writer:
    def write(p: Path) -> None:
        p.write_text(text, encoding="utf-8")

    return write


def _tl_loop(depth: int) -> str:
    body = "graph @b0(%i0: i64[], %c0: f32[2]) {\n  %t0 = Constant() {value = dense<bool[]>[true]} : bool[]\n  return %t0, %c0\n}"  # noqa: E501
    for k in range(1, depth + 1):
        body = (
            f"graph @b{k}(%i{k}: i64[], %c{k}: f32[2]) {{\n"
            f"  %n{k} = Constant() {{value = dense<i64[]>[1]}} : i64[]\n"
            f"  %r{k} = Loop(max_trip_count=%n{k}, carried=[%c{k}]) {{body = {body}, "
            f"sliced = [], stacked = []}} : f32[2]\n"
            f"  %t{k} = Constant() {{value = dense<bool[]>[true]}} : bool[]\n"
            f"  return %t{k}, %r{k}\n}}"
        )
    return (
        "graph @m(%x: f32[2]) {\n  %n = Constant() {value = dense<i64[]>[2]} : i64[]\n"
        f"  %y = Loop(max_trip_count=%n, carried=[%x]) {{body = {body}, sliced = [], "
        "stacked = []} : f32[2]\n  return %y\n}\n"
    )


for _name, _expect, _text in [
    ("tl_ok_add.tl", "ok", _TL_OK),
    ("tl_ok_loop.tl", "ok", _tl_loop(2)),
    ("tl_empty.tl", "ParseError", ""),
    ("tl_garbage.tl", "ParseError", "}}}{{{ %%% @@@"),
    ("tl_truncated.tl", "ParseError", _TL_OK[: len(_TL_OK) // 2]),
    ("tl_undefined_value.tl", "ParseError", _TL_OK.replace("%y)", "%nope)")),
    ("tl_duplicate_value.tl", "ParseError", _TL_OK.replace("%y: f32[2,3]", "%x: f32[2,3]")),
    ("tl_redefined_result.tl", "ParseError",
     _TL_OK.replace("  return", "  %z = Add(%x, %x) : f32[2,3]\n  return")),
    ("tl_negative_dim.tl", "ParseError", _TL_OK.replace("f32[2,3], %y", "f32[2,-3], %y")),
    ("tl_bad_dtype.tl", "ParseError", _TL_OK.replace("%y: f32", "%y: q13")),
    ("tl_unknown_op.tl", "VerificationError", _TL_OK.replace("Add(", "NoSuchOp(")),
    ("tl_declared_type_mismatch.tl", "VerificationError",
     _TL_OK.replace(": f32[2,3]\n  return", ": f32[7]\n  return")),
    ("tl_arity.tl", "VerificationError", _TL_OK.replace("Add(%x, %y)", "Add(%x)")),
    ("tl_bad_number.tl", "ParseError",
     "graph @m() {\n  %c = Constant() {value = dense<i64[]>[99999999999999999999999]} : i64[]\n"
     "  return %c\n}\n"),
    ("tl_dense_count.tl", "ParseError",
     "graph @m() {\n  %c = Constant() {value = dense<f32[3]>[1.0]} : f32[3]\n  return %c\n}\n"),
    ("tl_deep_loops.tl", ["ParseError", "ResourceLimitError"], _tl_loop(400)),
    ("tl_deep_brackets.tl", "ParseError",
     "graph @m(%x: f32[2]) {\n  %c = Constant() {value = " + "[" * 50_000 + "]" * 50_000
     + "} : f32[2]\n  return %x\n}\n"),
    ("tl_deep_types.tl", "ParseError",
     "graph @m(%x: " + "seq<" * 5_000 + "f32[2]" + ">" * 5_000 + ") {\n  return %x\n}\n"),
    ("tl_huge_rank.tl", ["ParseError", "ResourceLimitError"],
     "graph @m(%x: f32[" + ",".join(["1"] * 20_000) + "]) {\n  return %x\n}\n"),
    ("tl_terabyte_input.tl", ["InputError", "ResourceLimitError"],
     "graph @m(%x: f32[1048576,1048576]) {\n  return %x\n}\n"),
]:  # fmt: skip
    CASES[_name] = (_expect, _tl(_text))


@case("tl_invalid_utf8.tl", "ParseError")
def _(p: Path) -> None:
    p.write_bytes(_TL_OK.encode() + b"\xff\xfe\x80 # bad bytes\n")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest: dict[str, Any] = {}
    # The external-data control writes the data file others point at: it goes first.
    for name in sorted(CASES, key=lambda n: n != "onnx_ok_external.onnx"):
        expect, write = CASES[name]
        write(out / name)
        manifest[name] = expect
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    (out / "inputs.json").write_text(json.dumps(INPUTS, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(manifest)} cases to {out}")


if __name__ == "__main__":
    main()
