"""The per-op OpenVINO lowering: each core op as OpenVINO layers, in one table of emitters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.shape import INT64_MAX, split_sizes
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import (
    I64,
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    all_axes,
    binary,
    broadcast,
    convert,
    dim_of,
    gather,
    insert_unit,
    reverse,
    scalar,
    shape_of,
    shape_text,
)


def _direct(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    """An op OpenVINO has, perhaps under another name, with the same inputs and meaning; a
    callable in ``data`` works its attribute out from the call."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        ins = [t for t in call.ins if t is not None]
        attrs = {k: v(call) if callable(v) else v for k, v in data.items()}
        return net.layer(type_, ins, call.outs, version, **attrs)

    return emit


def _broadcasting(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    return _direct(type_, version, auto_broadcast="numpy", **data)


def _variadic(type_: str) -> Emitter:
    """ONNX Min/Max take any number of inputs; OpenVINO's Minimum/Maximum take two."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        acc = call.arg(0)
        for x in call.ins[1:]:
            assert x is not None
            acc = net.op(
                type_,
                [acc, x],
                acc.type.with_shape(broadcast(acc.type.shape, x.type.shape)),
                auto_broadcast="numpy",
            )
        return [acc]

    return emit


def _pow(net: NetBuilder, call: Call) -> list[Tensor]:
    # OpenVINO's Power wants one element type; tensorloop's exponent may have another.
    x, y = call.arg(0), call.arg(1)
    if x.type.dtype.is_float or not y.type.dtype.is_float:
        y = convert(net, y, x.type.dtype)
        return [net.op("Power", [x, y], call.out, auto_broadcast="numpy")]
    # An integer base to a float power is real arithmetic, truncated back, as tensorloop does.
    wide = [convert(net, v, DType.float64) for v in (x, y)]
    real = net.op("Power", wide, call.out.with_dtype(DType.float64), auto_broadcast="numpy")
    return [convert(net, real, x.type.dtype)]


def _gemm(net: NetBuilder, call: Call) -> list[Tensor]:
    alpha, beta = float(call.attrs["alpha"]), float(call.attrs["beta"])
    dt = call.out.dtype
    # Integer Gemm with fractional factors scales in f64 and truncates back, as tensorloop does.
    work = dt if dt.is_float or (alpha.is_integer() and beta.is_integer()) else DType.float64
    y = net.op(
        "MatMul",
        [call.arg(0), call.arg(1)],
        call.out,
        transpose_a=bool(call.attrs["transA"]),
        transpose_b=bool(call.attrs["transB"]),
    )
    y = convert(net, y, work)
    if alpha != 1:
        y = net.op("Multiply", [y, net.const(alpha, work)], y.type, auto_broadcast="numpy")
    c = call.opt(2)
    if c is not None:
        c = convert(net, c, work)
        if beta != 1:
            c = net.op("Multiply", [c, net.const(beta, work)], c.type, auto_broadcast="numpy")
        y = net.op("Add", [y, c], y.type, auto_broadcast="numpy")
    return [convert(net, y, dt)]


def _reduce(type_: str) -> Emitter:
    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        x, axes = call.arg(0), call.opt(1)
        # ONNX reduces over all axes when none are listed; OpenVINO then reduces over none.
        if axes is None or (axes.value is not None and axes.value.size == 0):
            if call.attrs["noop_with_empty_axes"]:
                return [x]
            axes = all_axes(net, x)
        layer = type_
        if x.type.dtype is DType.bool:  # OpenVINO's arithmetic reductions refuse booleans
            layer = {"ReduceMax": "ReduceLogicalOr", "ReduceMin": "ReduceLogicalAnd"}.get(type_, "")
            if not layer:
                raise call.error(f"{type_} of booleans has no OpenVINO layer")
        return [net.op(layer, [x, axes], call.out, keep_dims=bool(call.attrs["keepdims"]))]

    return emit


def _argmax(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    if call.attrs["select_last_index"]:
        x = reverse(net, x, axis)
    kept = insert_unit(call.out, axis) if not call.attrs["keepdims"] else call.out
    # A stable TopK keeps the first of equal values, which is ArgMax's tie rule.
    _, index = net.layer(
        "TopK",
        [x, net.ints(1)],
        [kept.with_dtype(x.type.dtype), kept],
        "opset11",
        axis=axis,
        mode="max",
        sort="value",
        index_element_type=DType.int64,
        stable=True,
    )
    if call.attrs["select_last_index"]:
        last = binary(net, "Subtract", dim_of(net, x, axis), net.ints(1), np.subtract)
        index = net.op("Subtract", [last, index], kept, auto_broadcast="numpy")
    if not call.attrs["keepdims"]:
        index = net.op("Squeeze", [index, net.ints([axis])], call.out)
    return [index]


def _topk(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    values, index = net.layer(
        "TopK",
        [x, scalar(net, call.arg(1))],
        call.outs,
        "opset11",
        axis=call.normalize_axis(call.attrs["axis"], x.rank),
        mode="max" if call.attrs["largest"] else "min",
        sort="value" if call.attrs["sorted"] else "none",
        index_element_type=DType.int64,
        stable=True,  # equal values keep the lower index first, as the core op says
    )
    return [values, index]


def _cumsum(net: NetBuilder, call: Call) -> list[Tensor]:
    flags = {k: bool(call.attrs[k]) for k in ("exclusive", "reverse")}
    return [net.op("CumSum", [call.arg(0), scalar(net, call.arg(1))], call.out, "opset3", **flags)]


def _squeeze(net: NetBuilder, call: Call) -> list[Tensor]:
    axes = call.opt(1)
    if axes is not None and axes.value is not None and axes.value.size == 0:
        axes = None  # both mean "every axis of size 1"
    ins = [call.arg(0)] if axes is None else [call.arg(0), axes]
    return [net.op("Squeeze", ins, call.out)]


def _transpose(net: NetBuilder, call: Call) -> list[Tensor]:
    perm = call.attrs["perm"]
    # An empty order makes OpenVINO reverse the axes, ONNX's default, whatever the rank.
    order = net.ints([] if perm is None else list(perm))
    return [net.op("Transpose", [call.arg(0), order], call.out)]


def _split(net: NetBuilder, call: Call) -> list[Tensor]:
    x, sizes = call.arg(0), call.opt(1)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    if sizes is None:
        parts: int = call.attrs["num_outputs"]
        dim = None if x.type.shape is None else x.type.shape[axis]
        if isinstance(dim, int) and dim % parts == 0:
            return net.layer("Split", [x, net.ints(axis)], call.outs, num_splits=parts)
        if isinstance(dim, int):
            sizes = net.ints(split_sizes(dim, parts))
        else:  # ONNX's rule at run time: ceil(dim / parts) each, the rest (-1) last
            n = dim_of(net, x, axis)
            total = binary(net, "Add", n, net.ints(parts - 1), np.add)
            chunk = net.op(
                "Divide", [total, net.ints(parts)], I64, auto_broadcast="numpy", m_pythondiv=False
            )
            vec = TensorType(DType.int64, [parts - 1])
            head = net.op("Broadcast", [chunk, net.ints([parts - 1])], vec, "opset3", mode="numpy")
            sizes = net.op("Concat", [head, net.ints([-1])], vec.with_shape([parts]), axis=0)
    return net.layer("VariadicSplit", [x, net.ints(axis), sizes], call.outs)


def _slice(net: NetBuilder, call: Call) -> list[Tensor]:
    data, starts, ends = call.arg(0), call.arg(1), call.arg(2)
    axes, steps = call.opt(3), call.opt(4)
    if steps is None:  # OpenVINO's Slice needs steps: ones, as many as starts
        length = None if starts.type.shape is None else starts.type.shape[0]
        if isinstance(length, int):
            steps = net.const(np.ones(length, starts.type.dtype.numpy))
        else:
            one = net.const(1, starts.type.dtype)
            steps = net.op(
                "Broadcast", [one, shape_of(net, starts)], starts.type, "opset3", mode="numpy"
            )
    ins = [data, starts, ends, steps] + ([] if axes is None else [axes])
    return [net.op("Slice", ins, call.out, "opset8")]


def _shape(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    start, end = call.attrs["start"], call.attrs["end"]
    full = shape_of(net, x)
    if start == 0 and end is None:
        return [full]
    # Python's slice clamping is ONNX Slice's for step 1.
    stop = net.ints([INT64_MAX if end is None else end])
    ins = [full, net.ints([start]), stop, net.ints([1]), net.ints([0])]
    return [net.op("Slice", ins, call.out, "opset8")]


def _size(net: NetBuilder, call: Call) -> list[Tensor]:
    dims = shape_of(net, call.arg(0))
    return [net.op("ReduceProd", [dims, net.ints([0])], call.out, keep_dims=False)]


def _constant_of_shape(net: NetBuilder, call: Call) -> list[Tensor]:
    fill = net.const(np.asarray(call.attrs["value"]).reshape(()))
    return [net.op("Broadcast", [fill, call.arg(0)], call.out, "opset3", mode="numpy")]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad(net: NetBuilder, call: Call) -> list[Tensor]:
    x, pads, value, axes = call.arg(0), call.arg(1), call.opt(2), call.opt(3)
    mode: str = call.attrs["mode"]
    begins, ends = _pad_amounts(net, call, x, pads, axes)
    if mode == "wrap":
        return [_wrap(net, call, x, begins, ends)]
    ins = [x, begins, ends]
    if mode == "constant" and value is not None:  # OpenVINO rejects a pad value in other modes
        ins.append(scalar(net, value))
    return [net.op("Pad", ins, call.out, "opset12", pad_mode=_PAD_MODES[mode])]


def _pad_amounts(
    net: NetBuilder, call: Call, x: Tensor, pads: Tensor, axes: Tensor | None
) -> tuple[Tensor, Tensor]:
    """ONNX's pads [begins..., ends...] over ``axes`` as OpenVINO's begins and ends per axis."""
    if axes is None:
        if pads.value is not None:
            half = pads.value.size // 2
            return net.const(pads.value[:half]), net.const(pads.value[half:])
        vec = pads.type.with_shape([UNKNOWN])
        a, b = net.layer("Split", [pads, net.ints(0)], [vec, vec], num_splits=2)
        return a, b
    if axes.value is None or x.rank is None:
        raise call.error("pads over listed axes need constant axes and a known rank")
    if pads.value is None:  # computed pads scattered into zeros at the listed axes
        listed = [call.normalize_axis(int(a), x.rank, "pad axis") for a in axes.value.reshape(-1)]
        vec = pads.type.with_shape([len(listed)])
        halves = net.layer("Split", [pads, net.ints(0)], [vec, vec], num_splits=2)
        full = pads.type.with_shape([x.rank])
        zeros, at = net.const(np.zeros(x.rank, pads.type.dtype.numpy)), net.ints(listed)
        begin, end = (
            net.op("ScatterUpdate", [zeros, at, h, net.ints(0)], full, "opset3") for h in halves
        )
        return begin, end
    begins, ends = np.zeros(x.rank, pads.value.dtype), np.zeros(x.rank, pads.value.dtype)
    listed = [call.normalize_axis(int(a), x.rank, "pad axis") for a in axes.value.reshape(-1)]
    begins[listed], ends[listed] = np.split(pads.value.reshape(-1), 2)
    return net.const(begins), net.const(ends)


def _wrap(net: NetBuilder, call: Call, x: Tensor, begins: Tensor, ends: Tensor) -> Tensor:
    """Pad mode "wrap" (OpenVINO has none): gather indices (-begin .. dim+end) mod dim per axis."""
    if begins.value is None or ends.value is None:
        raise call.error('pad mode "wrap" needs constant pads')
    vector = TensorType(DType.int64, [UNKNOWN])
    for axis, (b, e) in enumerate(zip(begins.value.tolist(), ends.value.tolist(), strict=True)):
        if b == 0 and e == 0:
            continue
        n = dim_of(net, x, axis)
        if n.value is not None:
            indices = net.ints((np.arange(-b, int(n.value) + e) % max(int(n.value), 1)).tolist())
        else:
            stop = net.op("Add", [n, net.ints(e)], I64, auto_broadcast="numpy")
            span = net.op(
                "Range",
                [net.ints(-b), stop, net.ints(1)],
                vector,
                "opset4",
                output_type=DType.int64,
            )
            indices = net.op("FloorMod", [span, n], vector, auto_broadcast="numpy")
        shape = x.type.shape
        d = shape[axis] if shape is not None else UNKNOWN
        grown = d + b + e if isinstance(d, int) else UNKNOWN
        out = (
            x.type
            if shape is None
            else x.type.with_shape((*shape[:axis], grown, *shape[axis + 1 :]))
        )
        x = gather(net, x, indices, axis, out)
    return x


def _read_variable(net: NetBuilder, call: Call) -> list[Tensor]:
    name: str = call.attrs["variable"]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    if name in net.file.assigned:
        raise call.error(
            f"reads variable '{name}' after assigning it; OpenVINO's ReadValue would see the "
            "value from before the run"
        )
    return [_read_value(net, name)]


def _read_value(net: NetBuilder, name: str) -> Tensor:
    if name not in net.file.read_values:
        var = net.file.root.variables[name]
        t = var.type
        # OpenVINO starts a variable without an init input at zeros. Leaving the input out then
        # also dodges a CPU plugin bug: an i64 ReadValue with an init input fails to compile.
        init = [net.const(var.initial)] if np.any(var.initial) else []
        net.file.read_values[name] = net.op(
            "ReadValue",
            init,
            t,
            "opset6",
            variable_id=name,
            variable_type=t.dtype,
            variable_shape=shape_text(t),
        )
    return net.file.read_values[name]


def _assign(net: NetBuilder, call: Call) -> list[Tensor]:
    name: str = call.attrs["variable"]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    read = _read_value(
        net, name
    )  # OpenVINO learns a variable from its ReadValue, so one must exist
    net.file.assigned.add(name)
    value = call.arg(0)
    if value.value is not None:
        # OpenVINO's CPU plugin (2026.4) ignores an Assign of a constant: the variable keeps its
        # value. Selected by a condition on the variable itself, the constant is assigned.
        same = net.op("Equal", [read, read], read.type.with_dtype(DType.bool))
        value = net.op("Select", [same, value, value], value.type)
    net.add("Assign", [value], [], "opset6", variable_id=name)
    return []


_FLOAT8 = {DType.float8e4m3fn: 448.0, DType.float8e5m2: 57344.0}


def _cast(net: NetBuilder, call: Call) -> list[Tensor]:
    """Convert; to f8 only from f16 (OpenVINO takes wider floats there through f16, rounding
    twice), clamped first where the Cast saturates (OpenVINO's Convert does not)."""
    x, to = call.arg(0), call.attrs["to"]
    if to in _FLOAT8 and x.type.dtype is not DType.bool:
        if x.type.dtype is not DType.float16:
            raise call.error(
                f"OpenVINO converts {x.type.dtype} to {to} through f16, rounding twice: "
                "cast to float16 first"
            )
        if call.attrs["saturate"]:
            x = net.op("Clamp", [x], x.type, min=-_FLOAT8[to], max=_FLOAT8[to])
    return net.layer("Convert", [x], call.outs, destination_type=to)


def _attr(key: str) -> Callable[[Call], Any]:
    return lambda call: call.attrs[key]


_BINARY = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Equal": "Equal", "Less": "Less",
    "Greater": "Greater", "LessOrEqual": "LessEqual", "GreaterOrEqual": "GreaterEqual",
    "And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor", "Where": "Select",
}  # fmt: skip
_RENAMED = {
    "Neg": "Negative", "Abs": "Abs", "Relu": "ReLU", "Sqrt": "Sqrt", "Exp": "Exp", "Log": "Log",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Not": "LogicalNot", "Unsqueeze": "Unsqueeze",
}  # fmt: skip

OP_EMITTERS: dict[str, Emitter] = {
    **{op: _broadcasting(ov) for op, ov in _BINARY.items()},
    **{op: _direct(ov) for op, ov in _RENAMED.items()},
    # ONNX integer division truncates; OpenVINO's floors unless told otherwise.
    "Div": _broadcasting("Divide", m_pythondiv=False),
    "Min": _variadic("Minimum"),
    "Max": _variadic("Maximum"),
    "Pow": _pow,
    "MatMul": _direct("MatMul", transpose_a=False, transpose_b=False),
    "Gemm": _gemm,
    **{op: _reduce(op) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")},
    "ArgMax": _argmax,
    "TopK": _topk,
    "CumSum": _cumsum,
    "Softmax": _direct("SoftMax", "opset8", axis=_attr("axis")),
    "Reshape": _direct("Reshape", special_zero=lambda call: not call.attrs["allowzero"]),
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Concat": _direct("Concat", axis=_attr("axis")),
    "Split": _split,
    "Slice": _slice,
    "Gather": lambda net, call: [
        gather(net, call.arg(0), call.arg(1), call.attrs["axis"], call.out)
    ],
    "Expand": _direct("Broadcast", "opset3", mode="bidirectional"),
    "Shape": _shape,
    "Size": _size,
    "ConstantOfShape": _constant_of_shape,
    "Range": _direct("Range", "opset4", output_type=lambda call: call.out.dtype),
    "Cast": _cast,
    "Pad": _pad,
    "Constant": lambda net, call: [net.const(call.attrs["value"])],
    "Identity": lambda net, call: [call.arg(0)],  # no layer: the value passes straight through
    # OpenVINO has no assertion: the checked values pass through (docs/network.md)
    "Check": lambda net, call: [call.arg(i) for i in range(1, len(call.ins))],
    "ReadVariable": _read_variable,
    "Assign": _assign,
}
"""Every op but Loop and If (write_control.py)."""

from . import (  # noqa: E402  (the op families' emitters)
    write_image,
    write_indexing,
    write_math,
    write_nms,
    write_nn,
    write_signal,
    write_strings,
)

for _family in (
    write_math,
    write_nn,
    write_indexing,
    write_signal,
    write_image,
    write_strings,
    write_nms,
):
    _twice = sorted(set(_family.EMITTERS) & set(OP_EMITTERS))
    assert not _twice, f"ops written twice: {_twice}"
    OP_EMITTERS.update(_family.EMITTERS)
