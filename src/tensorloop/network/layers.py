"""Tensors and layers of a network, and the interior layers (everything but loop boundaries).

Each interior layer knows one thing: how to write itself as core ops (``_emit``). The network
types a layer by emitting it into a scratch graph, and ``to_model`` emits it for real, so the
shape rules live in one place, the core ops' type rules, plus the few rules TensorRT adds
(equal ranks for broadcasting, one softmax axis), which ``_emit`` checks.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

from ..errors import NetworkError
from ..ir.emit import Emitter
from ..ir.graph import Value
from ..tensor.dtypes import DType, DTypeLike, dtype
from ..tensor.types import TensorType

if TYPE_CHECKING:
    from .network import Network


class LayerType(enum.Enum):
    CONSTANT = "constant"
    ELEMENTWISE = "elementwise"
    ACTIVATION = "activation"
    UNARY = "unary"
    MATRIX_MULTIPLY = "matrix_multiply"
    SHUFFLE = "shuffle"
    SLICE = "slice"
    CONCATENATION = "concatenation"
    REDUCE = "reduce"
    SELECT = "select"
    GATHER = "gather"
    IDENTITY = "identity"
    CAST = "cast"
    SOFTMAX = "softmax"
    TOPK = "topk"
    SHAPE = "shape"
    TRIP_LIMIT = "trip_limit"
    ITERATOR = "iterator"
    RECURRENCE = "recurrence"
    LOOP_OUTPUT = "loop_output"


class ElementWiseOperation(enum.Enum):
    SUM = "Add"
    PROD = "Mul"
    MAX = "Max"
    MIN = "Min"
    SUB = "Sub"
    DIV = "Div"
    POW = "Pow"
    FLOOR_DIV = "FloorDiv"
    AND = "And"
    OR = "Or"
    XOR = "Xor"
    EQUAL = "Equal"
    GREATER = "Greater"
    LESS = "Less"


class ActivationType(enum.Enum):
    RELU = "relu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    LEAKY_RELU = "leaky_relu"
    ELU = "elu"
    SELU = "selu"
    SOFTSIGN = "softsign"
    SOFTPLUS = "softplus"
    CLIP = "clip"
    HARD_SIGMOID = "hard_sigmoid"
    SCALED_TANH = "scaled_tanh"
    THRESHOLDED_RELU = "thresholded_relu"
    GELU_ERF = "gelu_erf"
    GELU_TANH = "gelu_tanh"


# alpha and beta each activation starts with; TensorRT starts every one at 0, which for most of
# them is a degenerate function, so these are the functions' usual parameters (docs/network.md)
ACTIVATION_DEFAULTS: dict[ActivationType, tuple[float, float]] = {
    ActivationType.LEAKY_RELU: (0.01, 0.0),
    ActivationType.ELU: (1.0, 0.0),
    ActivationType.SELU: (1.6732632423543772, 1.0507009873554805),
    ActivationType.SOFTPLUS: (1.0, 1.0),
    ActivationType.CLIP: (0.0, 6.0),
    ActivationType.HARD_SIGMOID: (0.2, 0.5),
    ActivationType.SCALED_TANH: (1.0, 1.0),
    ActivationType.THRESHOLDED_RELU: (1.0, 0.0),
}


class UnaryOperation(enum.Enum):
    EXP = "Exp"
    LOG = "Log"
    SQRT = "Sqrt"
    RECIP = "Reciprocal"
    ABS = "Abs"
    NEG = "Neg"
    SIN = "Sin"
    COS = "Cos"
    TAN = "Tan"
    SINH = "Sinh"
    COSH = "Cosh"
    ASIN = "Asin"
    ACOS = "Acos"
    ATAN = "Atan"
    ASINH = "Asinh"
    ACOSH = "Acosh"
    ATANH = "Atanh"
    CEIL = "Ceil"
    FLOOR = "Floor"
    ERF = "Erf"
    NOT = "Not"
    SIGN = "Sign"
    ROUND = "Round"
    ISINF = "IsInf"
    ISNAN = "IsNaN"


class MatrixOperation(enum.Enum):
    NONE = "none"
    TRANSPOSE = "transpose"
    VECTOR = "vector"


class ReduceOperation(enum.Enum):
    SUM = "ReduceSum"
    PROD = "ReduceProd"
    MAX = "ReduceMax"
    MIN = "ReduceMin"
    AVG = "ReduceMean"


class TopKOperation(enum.Enum):
    MAX = 1
    MIN = 0


class ITensor:
    """A tensor of a network: a network input or a layer's output."""

    def __init__(
        self,
        network: Network,
        name: str,
        producer: ILayer | None = None,
        index: int = 0,
        input_type: TensorType | None = None,
    ) -> None:
        self._network = network
        self._name = name
        self.producer = producer
        self.index = index
        self._input_type = input_type

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        if not value:
            raise NetworkError("a tensor name cannot be empty")
        self._name = value

    @property
    def type(self) -> TensorType:
        """The element type and shape (a per-iteration one for a tensor inside a loop)."""
        if self._input_type is not None:
            return self._input_type
        assert self.producer is not None
        return self._network._output_types(self.producer)[self.index]

    @property
    def shape(self) -> tuple[int, ...]:
        """The dims, -1 for one known only when the network runs (as TensorRT's Dims)."""
        shape = self.type.shape
        assert shape is not None, "network tensors always have a known rank"
        return tuple(d if isinstance(d, int) else -1 for d in shape)

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def is_network_input(self) -> bool:
        return self.producer is None

    @property
    def is_network_output(self) -> bool:
        return any(t is self for t in self._network._outputs)

    def __repr__(self) -> str:
        return f"<ITensor '{self.name}': {self.type}>"


T = TypeVar("T")


class Setting(Generic[T]):
    """A layer property whose change re-types the network; a value the layer cannot take is
    refused at once and the old one kept."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, obj: ILayer, owner: type) -> T: ...

    def __get__(self, obj: ILayer | None, owner: type) -> T | Setting[T]:
        if obj is None:
            return self
        value: T = getattr(obj, self.slot)
        return value

    def __set__(self, obj: ILayer, value: T) -> None:
        old = getattr(obj, self.slot)
        setattr(obj, self.slot, value)
        try:
            obj._network._changed(obj)
        except NetworkError:
            setattr(obj, self.slot, old)
            obj._network._types.clear()
            raise


class ILayer:
    """A layer: inputs (some optional), outputs, a name. ``set_input`` rewires an input."""

    type: LayerType
    max_inputs: int = 1
    back_edge_inputs: tuple[int, ...] = ()
    """Inputs that may close a cycle (a recurrence's next value); typing skips them."""
    settings_follow: bool = False
    """Whether TensorRT code sets what makes the layer valid after adding it (a concatenation's
    axis): a type error at the add is then left to the first use, the setting or validate()."""

    def __init__(
        self, network: Network, inputs: Sequence[ITensor | None], num_outputs: int = 1
    ) -> None:
        self._network = network
        self._inputs: list[ITensor | None] = list(inputs)
        self._name = network._layer_name(self.type)
        self._outputs = [
            ITensor(network, _output_name(self._name, i), self, i) for i in range(num_outputs)
        ]
        for i, t in enumerate(self._inputs):
            if t is not None:
                network._check_tensor(t, f"{self.describe()} input {i}")

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        for i, t in enumerate(self._outputs):  # outputs the user did not name follow the layer
            if t.name == _output_name(self._name, i):
                t.name = _output_name(value, i)
        self._name = value

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_input(self, index: int) -> ITensor | None:
        if not 0 <= index < len(self._inputs):
            raise NetworkError(f"{self.describe()}: no input {index} (it has {len(self._inputs)})")
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        if not 0 <= index < len(self._outputs):
            raise NetworkError(
                f"{self.describe()}: no output {index} (it has {len(self._outputs)})"
            )
        return self._outputs[index]

    @property
    def inputs(self) -> list[ITensor | None]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[ITensor]:
        return list(self._outputs)

    def set_input(self, index: int, tensor: ITensor) -> None:
        """Set input ``index`` (optional inputs before it stay unset); a change that leaves the
        layer untypable is refused and undone."""
        if not 0 <= index < self.max_inputs:
            raise NetworkError(
                f"{self.describe()}: cannot set input {index}; it takes inputs 0 to "
                f"{self.max_inputs - 1}"
            )
        self._network._check_tensor(tensor, f"{self.describe()} input {index}")
        before = list(self._inputs)
        self._inputs.extend([None] * (index + 1 - len(self._inputs)))
        self._inputs[index] = tensor
        try:
            self._network._changed(self)
        except NetworkError:
            self._inputs = before
            self._network._types.clear()
            raise

    def describe(self) -> str:
        return f"{self.type.value} layer '{self._name}'"

    def _input(self, index: int) -> ITensor:
        t = self._inputs[index] if index < len(self._inputs) else None
        if t is None:
            raise NetworkError(f"{self.describe()}: input {index} is not set")
        return t

    def _infer(self, types: list[TensorType | None]) -> list[TensorType]:
        """Output types from input types: by emitting into a scratch graph."""
        from ..ir.graph import Graph

        scratch = Graph("scratch")
        em = Emitter(scratch)
        args: list[Value | None] = []
        for i, (t, src) in enumerate(zip(types, self._inputs, strict=True)):
            value = None if src is None else static_value(src)
            if t is None:
                args.append(None)
            elif value is not None:  # constants stay constants, as they will when lowered
                args.append(em.const(value))
            else:
                args.append(scratch.add_input(f"in{i}", t))
        return [v.tensor_type for v in self._emit(em, args)]

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}'>"


def _output_name(layer: str, index: int) -> str:
    return f"{layer}_output{index or ''}"


# -- helpers for _emit ----------------------------------------------------------------------------
def _arg(args: list[Value | None], index: int) -> Value:
    v = args[index] if index < len(args) else None
    assert v is not None, "the network checks required inputs before emitting"
    return v


def _rank(v: Value) -> int:
    shape = v.tensor_type.shape
    assert shape is not None
    return len(shape)


def _same_ranks(layer: ILayer, values: Sequence[Value]) -> None:
    ranks = [_rank(v) for v in values]
    if len(set(ranks)) > 1:
        raise NetworkError(
            f"{layer.describe()}: inputs have ranks {ranks}; TensorRT broadcasts only between "
            "tensors of equal rank (add size-1 dims with a shuffle layer)"
        )


def _same_dtypes(layer: ILayer, values: Sequence[Value]) -> None:
    dts = [v.tensor_type.dtype for v in values]
    if len(set(dts)) > 1:
        raise NetworkError(
            f"{layer.describe()}: inputs have types {[d.value for d in dts]}; they must agree "
            "(add a cast layer)"
        )


def as_int64(em: Emitter, v: Value) -> Value:
    """An integer tensor as int64; a constant stays a constant, so shapes stay known."""
    if v.constant is not None:
        return em.const(v.constant.astype(np.int64))
    if v.tensor_type.dtype == DType.int64:
        return v
    return em.op("Cast", [v], {"to": DType.int64})


def _scalar(em: Emitter, value: float, like: Value) -> Value:
    return em.const(np.asarray(value, like.tensor_type.dtype.numpy))


def _axes_of(layer: ILayer, mask: int, rank: int) -> list[int]:
    if mask < 0 or mask >> rank:
        raise NetworkError(
            f"{layer.describe()}: axes bitmask {mask:#b} names an axis a rank-{rank} input lacks"
        )
    return [a for a in range(rank) if mask >> a & 1]


# -- interior layers ------------------------------------------------------------------------------
class IConstantLayer(ILayer):
    type = LayerType.CONSTANT
    max_inputs = 0

    def __init__(self, network: Network, shape: Sequence[int], weights: Any) -> None:
        data = np.asarray(weights)
        shape = tuple(int(d) for d in shape)
        if data.size != int(np.prod(shape, dtype=np.int64)):
            raise NetworkError(
                f"constant: {data.size} weights cannot fill shape {list(shape)} "
                f"({int(np.prod(shape, dtype=np.int64))} elements)"
            )
        self._weights = np.array(data.reshape(shape), copy=True)
        self._weights.setflags(write=False)
        super().__init__(network, [])

    @property
    def weights(self) -> np.ndarray[Any, Any]:
        return self._weights

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._weights.shape)

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Constant", [], {"value": self._weights})]


class IElementWiseLayer(ILayer):
    type = LayerType.ELEMENTWISE
    max_inputs = 2
    op: Setting[ElementWiseOperation] = Setting()

    def __init__(self, network: Network, a: ITensor, b: ITensor, op: ElementWiseOperation) -> None:
        self._op = ElementWiseOperation(op)
        super().__init__(network, [a, b])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        a, b = _arg(args, 0), _arg(args, 1)
        _same_ranks(self, [a, b])
        _same_dtypes(self, [a, b])
        if self._op is ElementWiseOperation.FLOOR_DIV:
            if a.tensor_type.dtype.numpy.kind == "f":
                return [em.op("Floor", [em.op("Div", [a, b])])]
            # exact for integers: a - mod(a, b) is a multiple of b, mod taking b's sign
            rest = em.op("Mod", [a, b], {"fmod": 0})
            return [em.op("Div", [em.op("Sub", [a, rest]), b])]
        return [em.op(self._op.value, [a, b])]


class IActivationLayer(ILayer):
    type = LayerType.ACTIVATION
    type_: Setting[ActivationType] = Setting()
    alpha: Setting[float] = Setting()
    beta: Setting[float] = Setting()

    def __init__(self, network: Network, x: ITensor, kind: ActivationType) -> None:
        self._type_ = ActivationType(kind)
        self._alpha, self._beta = ACTIVATION_DEFAULTS.get(self._type_, (0.0, 0.0))
        super().__init__(network, [x])

    @property
    def activation_type(self) -> ActivationType:
        return self._type_

    @activation_type.setter
    def activation_type(self, kind: ActivationType) -> None:
        self.type_ = kind

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x, kind = _arg(args, 0), self._type_
        alpha, beta = float(self._alpha), float(self._beta)
        simple = {
            ActivationType.RELU: "Relu",
            ActivationType.SIGMOID: "Sigmoid",
            ActivationType.TANH: "Tanh",
            ActivationType.SOFTSIGN: "Softsign",
        }
        if kind in simple:
            return [em.op(simple[kind], [x])]
        if kind is ActivationType.LEAKY_RELU:
            return [em.op("LeakyRelu", [x], {"alpha": alpha})]
        if kind is ActivationType.ELU:
            return [em.op("Elu", [x], {"alpha": alpha})]
        if kind is ActivationType.SELU:
            return [em.op("Selu", [x], {"alpha": alpha, "gamma": beta})]
        if kind is ActivationType.THRESHOLDED_RELU:
            return [em.op("ThresholdedRelu", [x], {"alpha": alpha})]
        if kind is ActivationType.HARD_SIGMOID:
            return [em.op("HardSigmoid", [x], {"alpha": alpha, "beta": beta})]
        if kind is ActivationType.CLIP:
            return [em.op("Clip", [x, _scalar(em, alpha, x), _scalar(em, beta, x)])]
        if kind is ActivationType.GELU_ERF:
            return [em.op("Gelu", [x])]
        if kind is ActivationType.GELU_TANH:
            return [em.op("Gelu", [x], {"approximate": "tanh"})]
        inner = "Softplus" if kind is ActivationType.SOFTPLUS else "Tanh"  # alpha * f(beta * x)
        scaled = em.op("Mul", [x, _scalar(em, beta, x)])
        return [em.op("Mul", [_scalar(em, alpha, x), em.op(inner, [scaled])])]


class IUnaryLayer(ILayer):
    type = LayerType.UNARY
    op: Setting[UnaryOperation] = Setting()

    def __init__(self, network: Network, x: ITensor, op: UnaryOperation) -> None:
        self._op = UnaryOperation(op)
        super().__init__(network, [x])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op(self._op.value, [_arg(args, 0)])]


class IMatrixMultiplyLayer(ILayer):
    type = LayerType.MATRIX_MULTIPLY
    max_inputs = 2
    op0: Setting[MatrixOperation] = Setting()
    op1: Setting[MatrixOperation] = Setting()

    def __init__(
        self,
        network: Network,
        a: ITensor,
        op0: MatrixOperation,
        b: ITensor,
        op1: MatrixOperation,
    ) -> None:
        self._op0, self._op1 = MatrixOperation(op0), MatrixOperation(op1)
        super().__init__(network, [a, b])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        a, b = _arg(args, 0), _arg(args, 1)
        _same_dtypes(self, [a, b])
        ranks = [_rank(a), _rank(b)]
        ops = (self._op0, self._op1)
        need = [1 if op is MatrixOperation.VECTOR else 2 for op in ops]
        if ranks[0] < need[0] or ranks[1] < need[1]:
            raise NetworkError(
                f"{self.describe()}: inputs of ranks {ranks} are too small for operations "
                f"{[op.name for op in ops]}"
            )
        if ranks[0] - need[0] != ranks[1] - need[1]:
            raise NetworkError(
                f"{self.describe()}: inputs of ranks {ranks} have different batch ranks for "
                f"operations {[op.name for op in ops]}; TensorRT broadcasts only between equal "
                "ranks"
            )

        def operand(v: Value, op: MatrixOperation, vector_axis: int) -> Value:
            if op is MatrixOperation.TRANSPOSE:
                r = _rank(v)
                perm = [*range(r - 2), r - 1, r - 2]
                return em.op("Transpose", [v], {"perm": perm})
            if op is MatrixOperation.VECTOR:
                return em.op("Unsqueeze", [v, em.ints([vector_axis])])
            return v

        out = em.op("MatMul", [operand(a, ops[0], -2), operand(b, ops[1], -1)])
        squeeze = [ax for ax, op in ((-2, ops[0]), (-1, ops[1])) if op is MatrixOperation.VECTOR]
        if squeeze:
            out = em.op("Squeeze", [out, em.ints(squeeze)])
        return [out]


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

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = _arg(args, 0)
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

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = _arg(args, 0)
        rank = _rank(x)
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

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        values = [_arg(args, i) for i in range(len(args))]
        _same_ranks(self, values)
        return [em.op("Concat", values, {"axis": self._axis})]


class IReduceLayer(ILayer):
    type = LayerType.REDUCE
    op: Setting[ReduceOperation] = Setting()
    axes: Setting[int] = Setting()
    keep_dims: Setting[bool] = Setting()

    def __init__(
        self, network: Network, x: ITensor, op: ReduceOperation, axes: int, keep_dims: bool
    ) -> None:
        self._op, self._axes, self._keep_dims = ReduceOperation(op), int(axes), bool(keep_dims)
        super().__init__(network, [x])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = _arg(args, 0)
        axes = _axes_of(self, self._axes, _rank(x))
        if not axes:
            raise NetworkError(f"{self.describe()}: the axes bitmask names no axis")
        return [em.op(self._op.value, [x, em.ints(axes)], {"keepdims": int(self._keep_dims)})]


class ISelectLayer(ILayer):
    type = LayerType.SELECT
    max_inputs = 3

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        cond, a, b = _arg(args, 0), _arg(args, 1), _arg(args, 2)
        _same_ranks(self, [cond, a, b])
        return [em.op("Where", [cond, a, b])]


class IGatherLayer(ILayer):
    type = LayerType.GATHER
    max_inputs = 2
    axis: Setting[int] = Setting()

    def __init__(self, network: Network, x: ITensor, indices: ITensor, axis: int) -> None:
        self._axis = int(axis)
        super().__init__(network, [x, indices])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Gather", [_arg(args, 0), _arg(args, 1)], {"axis": self._axis})]


class IIdentityLayer(ILayer):
    type = LayerType.IDENTITY

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Identity", [_arg(args, 0)])]


class ICastLayer(ILayer):
    type = LayerType.CAST
    to_type: Setting[DType] = Setting()

    def __init__(self, network: Network, x: ITensor, to_type: DTypeLike) -> None:
        self._to_type = dtype(to_type)
        super().__init__(network, [x])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Cast", [_arg(args, 0)], {"to": dtype(self._to_type)})]


class ISoftMaxLayer(ILayer):
    """Softmax over the one axis set in the ``axes`` bitmask (default: the last axis)."""

    type = LayerType.SOFTMAX
    axes: Setting[int | None] = Setting()

    def __init__(self, network: Network, x: ITensor) -> None:
        self._axes: int | None = None
        super().__init__(network, [x])

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = _arg(args, 0)
        rank = _rank(x)
        axes = [rank - 1] if self._axes is None else _axes_of(self, self._axes, rank)
        if len(axes) != 1:
            raise NetworkError(f"{self.describe()}: the axes bitmask must name one axis")
        return [em.op("Softmax", [x], {"axis": axes[0]})]


class ITopKLayer(ILayer):
    """The k largest (MAX) or smallest (MIN) entries along the one axis in ``axes``: values and
    int32 indices."""

    type = LayerType.TOPK
    op: Setting[TopKOperation] = Setting()
    k: Setting[int] = Setting()
    axes: Setting[int] = Setting()

    def __init__(self, network: Network, x: ITensor, op: TopKOperation, k: int, axes: int) -> None:
        self._op, self._k, self._axes = TopKOperation(op), int(k), int(axes)
        super().__init__(network, [x], num_outputs=2)

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = _arg(args, 0)
        axes = _axes_of(self, self._axes, _rank(x))
        if len(axes) != 1:
            raise NetworkError(f"{self.describe()}: the axes bitmask must name one axis")
        values, indices = em.ops(
            "TopK", [x, em.ints([self._k])], {"axis": axes[0], "largest": self._op.value}
        )
        return [values, em.op("Cast", [indices], {"to": DType.int32})]


class IShapeLayer(ILayer):
    """The input's dims as a 1-D int64 tensor."""

    type = LayerType.SHAPE

    def _emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Shape", [_arg(args, 0)])]


def static_value(t: ITensor) -> np.ndarray[Any, Any] | None:
    """The value of a tensor a constant layer makes, else None."""
    layer = t.producer
    return layer.weights if isinstance(layer, IConstantLayer) else None
