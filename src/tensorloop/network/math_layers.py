"""Computing layers: elementwise, activation, unary, matmul, reduce, select, cast, softmax, topk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import NetworkError
from ..ir.emit import Emitter
from ..ir.graph import Value
from ..tensor.dtypes import DType, DTypeLike, dtype
from .enums import (
    ACTIVATION_DEFAULTS,
    ActivationType,
    ElementWiseOperation,
    LayerType,
    MatrixOperation,
    ReduceOperation,
    TopKOperation,
    UnaryOperation,
)
from .layers import (
    ILayer,
    ITensor,
    Setting,
    axes_of,
    check_same_dtypes,
    check_same_ranks,
    rank_of,
    required_arg,
    scalar_like,
)

if TYPE_CHECKING:
    from .network import Network


class IElementWiseLayer(ILayer):
    """``op(a, b)`` element by element, broadcasting size-1 dims between equal ranks
    (TensorRT's ``IElementWiseLayer``)."""

    type = LayerType.ELEMENTWISE
    max_inputs = 2
    op: Setting[ElementWiseOperation] = Setting()

    def __init__(self, network: Network, a: ITensor, b: ITensor, op: ElementWiseOperation) -> None:
        self._op = ElementWiseOperation(op)
        super().__init__(network, [a, b])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        a, b = required_arg(args, 0), required_arg(args, 1)
        check_same_ranks(self, [a, b])
        check_same_dtypes(self, [a, b])
        if self._op is ElementWiseOperation.FLOOR_DIV:
            if a.tensor_type.dtype.is_float:  # bfloat16 too, whose NumPy kind is "V"
                return [em.op("Floor", [em.op("Div", [a, b])])]
            # exact for integers: a - mod(a, b) is a multiple of b, mod taking b's sign
            rest = em.op("Mod", [a, b], {"fmod": 0})
            return [em.op("Div", [em.op("Sub", [a, rest]), b])]
        return [em.op(self._op.value, [a, b])]


class IActivationLayer(ILayer):
    """An activation function applied element-wise, some parameterized by ``alpha`` and
    ``beta`` (TensorRT's ``IActivationLayer``)."""

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

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x, kind = required_arg(args, 0), self._type_
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
            return [em.op("Clip", [x, scalar_like(em, alpha, x), scalar_like(em, beta, x)])]
        if kind is ActivationType.GELU_ERF:
            return [em.op("Gelu", [x])]
        if kind is ActivationType.GELU_TANH:
            return [em.op("Gelu", [x], {"approximate": "tanh"})]
        inner = "Softplus" if kind is ActivationType.SOFTPLUS else "Tanh"  # alpha * f(beta * x)
        scaled = em.op("Mul", [x, scalar_like(em, beta, x)])
        return [em.op("Mul", [scalar_like(em, alpha, x), em.op(inner, [scaled])])]


class IUnaryLayer(ILayer):
    """A unary function (exp, log, abs, ...) applied element-wise (TensorRT's ``IUnaryLayer``)."""

    type = LayerType.UNARY
    op: Setting[UnaryOperation] = Setting()

    def __init__(self, network: Network, x: ITensor, op: UnaryOperation) -> None:
        self._op = UnaryOperation(op)
        super().__init__(network, [x])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op(self._op.value, [required_arg(args, 0)])]


class IMatrixMultiplyLayer(ILayer):
    """The matrix product of its two inputs, each read as is, transposed or as a vector per its
    ``MatrixOperation`` (TensorRT's ``IMatrixMultiplyLayer``)."""

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

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        a, b = required_arg(args, 0), required_arg(args, 1)
        check_same_dtypes(self, [a, b])
        ranks = [rank_of(a), rank_of(b)]
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
                r = rank_of(v)
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


class IReduceLayer(ILayer):
    """Reduces its input (sum, product, max, min or average) over the axes set in the ``axes``
    bitmask, keeping them as size 1 when ``keep_dims`` (TensorRT's ``IReduceLayer``)."""

    type = LayerType.REDUCE
    op: Setting[ReduceOperation] = Setting()
    axes: Setting[int] = Setting()
    keep_dims: Setting[bool] = Setting()

    def __init__(
        self, network: Network, x: ITensor, op: ReduceOperation, axes: int, keep_dims: bool
    ) -> None:
        self._op, self._axes, self._keep_dims = ReduceOperation(op), int(axes), bool(keep_dims)
        super().__init__(network, [x])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = required_arg(args, 0)
        axes = axes_of(self, self._axes, rank_of(x))
        if not axes:
            raise NetworkError(f"{self.describe()}: the axes bitmask names no axis")
        return [em.op(self._op.value, [x, em.ints(axes)], {"keepdims": int(self._keep_dims)})]


class ISelectLayer(ILayer):
    """``a`` where the bool ``cond`` holds, else ``b``, element by element (TensorRT's
    ``ISelectLayer``)."""

    type = LayerType.SELECT
    max_inputs = 3

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        cond, a, b = required_arg(args, 0), required_arg(args, 1), required_arg(args, 2)
        check_same_ranks(self, [cond, a, b])
        return [em.op("Where", [cond, a, b])]


class ICastLayer(ILayer):
    """Its input converted to the element type ``to_type`` (TensorRT's ``ICastLayer``)."""

    type = LayerType.CAST
    to_type: Setting[DType] = Setting()

    def __init__(self, network: Network, x: ITensor, to_type: DTypeLike) -> None:
        self._to_type = dtype(to_type)
        super().__init__(network, [x])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Cast", [required_arg(args, 0)], {"to": dtype(self._to_type)})]


class ISoftMaxLayer(ILayer):
    """Softmax over the one axis set in the ``axes`` bitmask (default: the last axis)."""

    type = LayerType.SOFTMAX
    axes: Setting[int | None] = Setting()

    def __init__(self, network: Network, x: ITensor) -> None:
        self._axes: int | None = None
        super().__init__(network, [x])

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = required_arg(args, 0)
        rank = rank_of(x)
        axes = [rank - 1] if self._axes is None else axes_of(self, self._axes, rank)
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

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        x = required_arg(args, 0)
        axes = axes_of(self, self._axes, rank_of(x))
        if len(axes) != 1:
            raise NetworkError(f"{self.describe()}: the axes bitmask must name one axis")
        values, indices = em.ops(
            "TopK", [x, em.ints([self._k])], {"axis": axes[0], "largest": self._op.value}
        )
        return [values, em.op("Cast", [indices], {"to": DType.int32})]
