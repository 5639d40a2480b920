"""Layers that move data: shuffle, slice, concatenation, gather, identity and shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NetworkError
from ..ir.emit import Emitter
from ..ir.graph import Value
from ..tensor.dtypes import DType
from .enums import LayerType
from .layers import (
    ILayer,
    ITensor,
    Setting,
    as_int64,
    check_same_ranks,
    rank_of,
    required_arg,
)

if TYPE_CHECKING:
    from .network import Network


class IShuffleLayer(ILayer):
    """first_transpose, then reshape (to ``reshape_dims``, or to the shape tensor set as input 1),
    then second_transpose. In reshape dims a 0 copies the input dim when ``zero_is_placeholder``
    and one -1 is inferred."""

    type = LayerType.SHUFFLE
    max_inputs = 2
    first_transpose: Setting[tuple[int, ...] | None] = Setting()
    reshape_dims: Setting[tuple[int, ...] | None] = Setting()
    second_transpose: Setting[tuple[int, ...] | None] = Setting()
    zero_is_placeholder: Setting[bool] = Setting()

    def __init__(self, network: Network, x: ITensor) -> None:
        self._first_transpose: tuple[int, ...] | None = None
        self._reshape_dims: tuple[int, ...] | None = None
        self._second_transpose: tuple[int, ...] | None = None
        self._zero_is_placeholder = True
        super().__init__(network, [x])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = required_arg(args, 0)
        if self._first_transpose is not None:
            x = em.op("Transpose", [x], {"perm": [int(p) for p in self._first_transpose]})
        spec = args[1] if len(args) > 1 else None
        if spec is None and self._reshape_dims is not None:
            spec = em.ints([int(d) for d in self._reshape_dims])
        if spec is not None:
            allowzero = 0 if self._zero_is_placeholder else 1
            x = em.op("Reshape", [x, as_int64(em, spec)], {"allowzero": allowzero})
        if self._second_transpose is not None:
            x = em.op("Transpose", [x], {"perm": [int(p) for p in self._second_transpose]})
        if x is args[0]:
            x = em.op("Identity", [x])  # a shuffle that changes nothing still has its own output
        return [x]


_FAR_BEFORE_START = -(2**62)  # an ONNX Slice end that means "past the first element"


class ISliceLayer(ILayer):
    """``out[i] = in[start + i * stride]`` for i < shape on every axis, all of it in bounds (a
    stride of 0 repeats one element). Inputs 1, 2 and 3 may replace start, shape and stride with
    1-D int tensors; bounds that are known when building are checked then, the rest when the
    network runs."""

    type = LayerType.SLICE
    max_inputs = 4
    start: Setting[tuple[int, ...]] = Setting()
    shape: Setting[tuple[int, ...]] = Setting()
    stride: Setting[tuple[int, ...]] = Setting()

    def __init__(
        self,
        network: Network,
        x: ITensor,
        start: Sequence[int],
        shape: Sequence[int],
        stride: Sequence[int],
    ) -> None:
        self._start = tuple(int(s) for s in start)
        self._shape = tuple(int(s) for s in shape)
        self._stride = tuple(int(s) for s in stride)
        super().__init__(network, [x])

    def _params(self, em: Emitter, args: list[Value | None], rank: int) -> list[list[int] | Value]:
        """start, shape and stride: the static lists, or int64 values for dynamic inputs."""
        out: list[list[int] | Value] = []
        names = ("start", "shape", "stride")
        settings = (self._start, self._shape, self._stride)
        for i, (what, values) in enumerate(zip(names, settings, strict=True)):
            dyn = args[i + 1] if i + 1 < len(args) else None
            if dyn is not None and dyn.constant is None:
                out.append(as_int64(em, dyn))
                continue
            if dyn is not None:
                values = tuple(int(v) for v in np.asarray(dyn.constant).reshape(-1))
            if len(values) != rank:
                raise NetworkError(
                    f"{self.describe()}: {what} {list(values)} has {len(values)} entries for "
                    f"a rank-{rank} input"
                )
            out.append(list(values))
        return out

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = required_arg(args, 0)
        rank = rank_of(x)
        start, size, stride = self._params(em, args, rank)
        if isinstance(start, list) and isinstance(size, list) and isinstance(stride, list):
            return [self._static_slice(em, x, start, size, stride)]
        start_v, size_v, stride_v = (
            p if isinstance(p, Value) else em.ints(p) for p in (start, size, stride)
        )
        # TensorRT's bounds: start in [0, dim) and the last element read in [0, dim) (or nothing
        # read); ONNX Slice would clamp instead, so check before slicing
        dims = em.op("Shape", [x])
        last = em.op("Add", [start_v, em.op("Mul", [em.op("Sub", [size_v, em.ints(1)]), stride_v])])
        inside = em.op(
            "And",
            [
                em.op(
                    "And",
                    [
                        em.op("GreaterOrEqual", [start_v, em.ints(0)]),
                        em.op("Less", [start_v, dims]),
                    ],
                ),
                em.op(
                    "And",
                    [em.op("GreaterOrEqual", [last, em.ints(0)]), em.op("Less", [last, dims])],
                ),
            ],
        )
        empty = em.op("Equal", [size_v, em.ints(0)])
        ok_axes = em.op("Or", [inside, empty])
        as_ints = em.op("Cast", [ok_axes], {"to": DType.int64})
        ok = em.op(
            "Equal", [em.op("ReduceMin", [as_ints, em.ints([0])], {"keepdims": 0}), em.ints(1)]
        )
        x = em.op("Check", [ok, x], {"message": self._bounds_message()})
        # a stride of 0 reads one element: slice it with step 1, then repeat it
        zero = em.op("Equal", [stride_v, em.ints(0)])
        step = em.op("Where", [zero, em.ints(1), stride_v])
        taken = em.op("Where", [zero, em.op("Min", [size_v, em.ints(1)]), size_v])
        end = em.op("Add", [start_v, em.op("Mul", [taken, step])])
        end = em.op("Where", [em.op("Less", [end, em.ints(0)]), em.ints(_FAR_BEFORE_START), end])
        out = em.op("Slice", [x, start_v, end, em.ints(list(range(rank))), step])
        return [em.op("Expand", [out, em.op("Where", [zero, size_v, em.ints(1)])])]

    def _bounds_message(self) -> str:
        return f"{self.describe()}: the slice reads outside its input (TensorRT's strict bounds)"

    def _static_slice(
        self, em: Emitter, x: Value, start: list[int], size: list[int], stride: list[int]
    ) -> Value:
        shape = x.tensor_type.shape
        assert shape is not None
        ends, steps, repeat = [], [], []
        for axis, (s, n, k, d) in enumerate(zip(start, size, stride, shape, strict=True)):
            if n < 0:
                raise NetworkError(f"{self.describe()}: axis {axis} has negative shape {n}")
            last = s + (n - 1) * k
            if n > 0 and isinstance(d, int) and not (0 <= s < d and 0 <= last < d):
                raise NetworkError(
                    f"{self.describe()}: axis {axis} reads elements {s} to {last} of {d}; "
                    "a slice must stay in bounds"
                )
            if n > 0 and not (s >= 0 and last >= 0):
                raise NetworkError(
                    f"{self.describe()}: axis {axis} reads elements {s} to {last}; a slice "
                    "must stay in bounds"
                )
            taken = min(n, 1) if k == 0 else n
            end = s + taken * (k or 1)
            ends.append(_FAR_BEFORE_START if end < 0 else end)
            steps.append(k or 1)
            repeat.append(n if k == 0 else 1)
        axes = em.ints(list(range(len(ends))))
        out = em.op("Slice", [x, em.ints(start), em.ints(ends), axes, em.ints(steps)])
        if any(r != 1 for r in repeat):
            out = em.op("Expand", [out, em.ints(repeat)])
        if not all(isinstance(d, int) for d in shape):
            # a dynamic input clamps only where the slice is out of bounds: check that, and say
            # the shape the slice has whenever it is in bounds
            off = em.op("Abs", [em.op("Sub", [em.op("Shape", [out]), em.ints(size)])])
            ok = em.op("Equal", [em.op("ReduceSum", [off], {"keepdims": 0}), em.ints(0)])
            out = em.op("Check", [ok, out], {"message": self._bounds_message()})
            out = em.op("Reshape", [out, em.ints(size)], {"allowzero": 1})
        return out


class IConcatenationLayer(ILayer):
    """Its inputs joined along ``axis`` (TensorRT's ``IConcatenationLayer``)."""

    type = LayerType.CONCATENATION
    settings_follow = True
    axis: Setting[int] = Setting()

    def __init__(self, network: Network, inputs: Sequence[ITensor]) -> None:
        if not inputs:
            raise NetworkError("concatenation: needs at least one input")
        rank = inputs[0].type.rank if isinstance(inputs[0], ITensor) else None
        self._axis = max(0, (rank or 0) - 3)  # TensorRT's default: C of NCHW
        self.max_inputs = len(inputs)
        super().__init__(network, inputs)

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        values = [required_arg(args, i) for i in range(len(args))]
        check_same_ranks(self, values)
        return [em.op("Concat", values, {"axis": self._axis})]


class IGatherLayer(ILayer):
    """The entries of input 0 along ``axis`` picked by the integer indices of input 1, in
    TensorRT's default gather mode (TensorRT's ``IGatherLayer``)."""

    type = LayerType.GATHER
    max_inputs = 2
    axis: Setting[int] = Setting()

    def __init__(self, network: Network, x: ITensor, indices: ITensor, axis: int) -> None:
        self._axis = int(axis)
        super().__init__(network, [x, indices])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [
            em.op("Gather", [required_arg(args, 0), required_arg(args, 1)], {"axis": self._axis})
        ]


class IIdentityLayer(ILayer):
    """Its input, unchanged (TensorRT's ``IIdentityLayer``)."""

    type = LayerType.IDENTITY

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Identity", [required_arg(args, 0)])]


class IShapeLayer(ILayer):
    """The input's dims as a 1-D int64 tensor."""

    type = LayerType.SHAPE

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Shape", [required_arg(args, 0)])]
