"""Tensors and layers of a network: ITensor, ILayer, IConstantLayer and the helpers of emit.

Each interior layer knows one thing: how to write itself as core ops (``emit``). The network
types a layer by emitting it into a scratch graph, and ``to_model`` emits it for real, so the
shape rules live in one place, the core ops' type rules, plus the few rules TensorRT adds
(equal ranks for broadcasting, one softmax axis), which ``emit`` checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

from ..errors import NetworkError
from ..ir.emit import Emitter
from ..ir.graph import Value
from ..tensor.dtypes import DType
from ..tensor.types import TensorType
from .enums import ACTIVATION_DEFAULTS, LayerType

if TYPE_CHECKING:
    from .network import Network

__all__ = [
    "ACTIVATION_DEFAULTS",
    "IConstantLayer",
    "ILayer",
    "ITensor",
    "Setting",
    "as_int64",
    "axes_of",
    "check_same_dtypes",
    "check_same_ranks",
    "rank_of",
    "required_arg",
    "scalar_like",
    "static_value",
]


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
    def network(self) -> Network:
        """The network the tensor belongs to."""
        return self._network

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
        return self._network.output_types(self.producer)[self.index]

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
        return any(t is self for t in self._network.outputs)

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
            obj.network.retype(obj)
        except NetworkError:
            setattr(obj, self.slot, old)
            obj.network.clear_types()
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
        self._name = network.unique_name(self.type.value)
        self._outputs = [
            ITensor(network, _output_name(self._name, i), self, i) for i in range(num_outputs)
        ]
        for i, t in enumerate(self._inputs):
            if t is not None:
                network.check_tensor(t, f"{self.describe()} input {i}")

    @property
    def network(self) -> Network:
        """The network the layer belongs to."""
        return self._network

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
        self._network.check_tensor(tensor, f"{self.describe()} input {index}")
        before = list(self._inputs)
        self._inputs.extend([None] * (index + 1 - len(self._inputs)))
        self._inputs[index] = tensor
        try:
            self._network.retype(self)
        except NetworkError:
            self._inputs = before
            self._network.clear_types()
            raise

    def describe(self) -> str:
        return f"{self.type.value} layer '{self._name}'"

    def required_input(self, index: int) -> ITensor:
        """Input ``index``, which must be set (a NetworkError says so otherwise)."""
        t = self._inputs[index] if index < len(self._inputs) else None
        if t is None:
            raise NetworkError(f"{self.describe()}: input {index} is not set")
        return t

    def infer_types(self, types: list[TensorType | None]) -> list[TensorType]:
        """Output types from input types (None for an unset input or a back edge): by emitting
        into a scratch graph."""
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
        return [v.tensor_type for v in self.emit(em, args)]

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        """The layer as core ops added with ``em``, given its inputs' values; its outputs."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}'>"


def _output_name(layer: str, index: int) -> str:
    return f"{layer}_output{index or ''}"


# -- helpers for emit ----------------------------------------------------------------------------
def required_arg(args: list[Value | None], index: int) -> Value:
    v = args[index] if index < len(args) else None
    assert v is not None, "the network checks required inputs before emitting"
    return v


def rank_of(v: Value) -> int:
    shape = v.tensor_type.shape
    assert shape is not None
    return len(shape)


def check_same_ranks(layer: ILayer, values: Sequence[Value]) -> None:
    ranks = [rank_of(v) for v in values]
    if len(set(ranks)) > 1:
        raise NetworkError(
            f"{layer.describe()}: inputs have ranks {ranks}; TensorRT broadcasts only between "
            "tensors of equal rank (add size-1 dims with a shuffle layer)"
        )


def check_same_dtypes(layer: ILayer, values: Sequence[Value]) -> None:
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


def scalar_like(em: Emitter, value: float, like: Value) -> Value:
    return em.const(np.asarray(value, like.tensor_type.dtype.numpy))


def axes_of(layer: ILayer, mask: int, rank: int) -> list[int]:
    if mask < 0 or mask >> rank:
        raise NetworkError(
            f"{layer.describe()}: axes bitmask {mask:#b} names an axis a rank-{rank} input lacks"
        )
    return [a for a in range(rank) if mask >> a & 1]


class IConstantLayer(ILayer):
    """A tensor of fixed ``weights`` and ``shape`` (TensorRT's ``IConstantLayer``)."""

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

    def emit(self, em: Emitter, args: list[Value | None]) -> list[Value]:
        return [em.op("Constant", [], {"value": self._weights})]


def static_value(t: ITensor) -> np.ndarray[Any, Any] | None:
    """The value of a tensor a constant layer makes, else None."""
    layer = t.producer
    return layer.weights if isinstance(layer, IConstantLayer) else None
