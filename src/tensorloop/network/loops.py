"""A loop and its boundary layers: trip limits, iterators, recurrences and loop outputs.

A loop is whatever its boundary layers say; its interior is every layer whose inputs depend on
one of its iterators or recurrences (see ``analysis``). Per TensorRT's formal semantics each
tensor inside a loop is a lazy sequence, one element per iteration:

* iterator(X) is ⟨X[0], X[1], ...⟩ along its axis (from the end when reversed);
* recurrence(X, Y) is ⟨X, Y0, Y1, ...⟩;
* a loop output is X_n (LAST_VALUE), or X_0 ... X_{n-1} stacked on a new axis and padded with
  zero rows to its length (CONCATENATE; REVERSE is that result reversed on the axis);
* n is the count of a COUNT limit, or the least n where a WHILE limit's X_n is false (the
  smaller of the two when a loop has both).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ..errors import NetworkError
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, normalize_axis
from .enums import LayerType
from .layers import ILayer, ITensor, Setting, static_value

if TYPE_CHECKING:
    from .network import Network


class TripLimit(enum.Enum):
    """What a trip limit layer's input is (TensorRT's ``TripLimit``): COUNT, a 0-D integer
    iteration count; WHILE, a 0-D bool that must hold for each iteration to run."""

    COUNT = "count"
    WHILE = "while"


class LoopOutput(enum.Enum):
    """What a loop output layer yields (TensorRT's ``LoopOutput``, also exported as
    ``LoopOutputKind``): LAST_VALUE, a recurrence's final value; CONCATENATE, every iteration's
    value stacked on a new axis; REVERSE, that stack reversed along the axis."""

    LAST_VALUE = "last_value"
    CONCATENATE = "concatenate"
    REVERSE = "reverse"


LoopOutputKind = LoopOutput

COUNT_TYPES = (DType.int32, DType.int64)


class ILoop:
    """A loop of a network, made by ``Network.add_loop``; its boundary layers define it."""

    def __init__(self, network: Network, name: str) -> None:
        self._network = network
        self.name = name
        self.trip_limits: dict[TripLimit, ITripLimitLayer] = {}
        self.iterators: list[IIteratorLayer] = []
        self.recurrences: list[IRecurrenceLayer] = []
        self.outputs: list[ILoopOutputLayer] = []

    @property
    def network(self) -> Network:
        """The network the loop belongs to."""
        return self._network

    @property
    def boundary_layers(self) -> list[ILoopBoundaryLayer]:
        return [*self.trip_limits.values(), *self.iterators, *self.recurrences, *self.outputs]

    def add_trip_limit(self, tensor: ITensor, kind: TripLimit) -> ITripLimitLayer:
        """COUNT: a 0-D int32 (or int64) count computed outside the loop. WHILE: a 0-D bool
        whose sequence decides whether each iteration runs."""
        kind = TripLimit(kind)
        if kind in self.trip_limits:
            raise NetworkError(
                f"loop '{self.name}' already has a {kind.name} trip limit "
                f"('{self.trip_limits[kind].name}'); a loop takes at most one of each kind"
            )
        layer = self._network.add_layer(ITripLimitLayer(self, tensor, kind))
        self.trip_limits[kind] = layer
        return layer

    def add_iterator(self, tensor: ITensor, axis: int = 0, reverse: bool = False) -> IIteratorLayer:
        layer = self._network.add_layer(IIteratorLayer(self, tensor, axis, reverse))
        self.iterators.append(layer)
        return layer

    def add_recurrence(self, initial: ITensor) -> IRecurrenceLayer:
        """Its output is ``initial`` on the first iteration, then what ``set_input(1, next)``
        gave on the iteration before."""
        layer = self._network.add_layer(IRecurrenceLayer(self, initial))
        self.recurrences.append(layer)
        return layer

    def add_loop_output(self, tensor: ITensor, kind: LoopOutput, axis: int = 0) -> ILoopOutputLayer:
        """LAST_VALUE of a recurrence, or every iteration's value stacked on a new ``axis``
        (CONCATENATE, REVERSE), which also needs its length: ``set_input(1, length)``."""
        layer = self._network.add_layer(ILoopOutputLayer(self, tensor, kind, axis))
        self.outputs.append(layer)
        return layer

    def __repr__(self) -> str:
        return f"<ILoop '{self.name}'>"


class ILoopBoundaryLayer(ILayer):
    """A layer that defines a loop (TensorRT's ``ILoopBoundaryLayer``): the base of trip limit,
    iterator, recurrence and loop output layers; ``get_loop()`` is its loop."""

    def __init__(self, loop: ILoop, inputs: list[ITensor | None], num_outputs: int = 1) -> None:
        self.loop = loop
        super().__init__(loop.network, inputs, num_outputs)

    def get_loop(self) -> ILoop:
        return self.loop

    def describe(self) -> str:
        return f"{super().describe()} of loop '{self.loop.name}'"


def _scalar_of(layer: ILayer, t: TensorType, what: str, dtypes: tuple[DType, ...]) -> None:
    if t.shape != () or t.dtype not in dtypes:
        wanted = " or ".join(d.value for d in dtypes)
        raise NetworkError(f"{layer.describe()}: {what} is {t}, expected a 0-D {wanted} tensor")


class ITripLimitLayer(ILoopBoundaryLayer):
    """Limits the number of iterations of its loop (TensorRT's ``ITripLimitLayer``): a COUNT or
    WHILE trip limit, with no outputs."""

    type = LayerType.TRIP_LIMIT

    def __init__(self, loop: ILoop, tensor: ITensor, kind: TripLimit) -> None:
        self.kind = kind
        super().__init__(loop, [tensor], num_outputs=0)

    @property
    def tensor(self) -> ITensor:
        """What limits the loop: the trip count (COUNT) or the continue condition (WHILE)."""
        return self.required_input(0)

    def infer_types(self, types: list[TensorType | None]) -> list[TensorType]:
        t = types[0]
        assert t is not None
        if self.kind is TripLimit.WHILE:
            _scalar_of(self, t, "the WHILE limit's input", (DType.bool,))
        else:
            _scalar_of(self, t, "the COUNT limit's input", COUNT_TYPES)
        return []


class IIteratorLayer(ILoopBoundaryLayer):
    """Outputs slice ``i`` of its input along ``axis`` on iteration ``i`` (from the end when
    ``reverse``), that axis dropped (TensorRT's ``IIteratorLayer``)."""

    type = LayerType.ITERATOR
    axis: Setting[int] = Setting()
    reverse: Setting[bool] = Setting()

    def __init__(self, loop: ILoop, tensor: ITensor, axis: int, reverse: bool) -> None:
        self._axis, self._reverse = int(axis), bool(reverse)
        super().__init__(loop, [tensor])

    def normalized_axis(self, rank: int) -> int:
        return normalize_axis(self._axis, rank, self.describe(), error=NetworkError)

    @property
    def source(self) -> ITensor:
        """The tensor it walks, one slice per iteration."""
        return self.required_input(0)

    @property
    def source_axis(self) -> int:
        """The axis of the input tensor it walks, in [0, rank)."""
        rank = self.source.type.rank
        assert rank is not None, "network tensors always have a known rank"
        return self.normalized_axis(rank)

    @property
    def source_length(self) -> Dim:
        """How many slices the input holds: an int, or a symbol known only at run time."""
        shape = self.source.type.shape
        assert shape is not None
        return shape[self.source_axis]

    def infer_types(self, types: list[TensorType | None]) -> list[TensorType]:
        t = types[0]
        assert t is not None and t.shape is not None
        if not t.shape:
            raise NetworkError(f"{self.describe()}: cannot iterate over a 0-D tensor")
        axis = self.normalized_axis(len(t.shape))
        return [t.with_shape(d for i, d in enumerate(t.shape) if i != axis)]


class IRecurrenceLayer(ILoopBoundaryLayer):
    """A loop-carried value (TensorRT's ``IRecurrenceLayer``): input 0 on the first iteration,
    then input 1 as computed on the iteration before."""

    type = LayerType.RECURRENCE
    max_inputs = 2
    back_edge_inputs = (1,)

    def __init__(self, loop: ILoop, initial: ITensor) -> None:
        super().__init__(loop, [initial])

    @property
    def initial(self) -> ITensor:
        """Its value on the first iteration (input 0)."""
        return self.required_input(0)

    @property
    def next_value(self) -> ITensor:
        """Its value on the next iteration (input 1, which must be set)."""
        return self.required_input(1)

    def infer_types(self, types: list[TensorType | None]) -> list[TensorType]:
        t = types[0]
        assert t is not None
        return [t]

    def set_input(self, index: int, tensor: ITensor) -> None:
        super().set_input(index, tensor)
        if index == 1:
            self.check_next()

    def check_next(self) -> None:
        """The second input must have the first's type: same element type and rank, and the
        same dims wherever both are known."""
        first, nxt = self.initial.type, self.next_value.type
        if first.compatible(nxt) or nxt.compatible(first):
            return
        raise NetworkError(
            f"{self.describe()}: input 1 (next value, tensor '{self.next_value.name}') is {nxt}, "
            f"but input 0 (initial value) is {first}; the two must match"
        )


class ILoopOutputLayer(ILoopBoundaryLayer):
    """A loop's result outside it (TensorRT's ``ILoopOutputLayer``): a recurrence's last value,
    or every iteration's value stacked on a new ``axis`` (input 1: the stack's length)."""

    type = LayerType.LOOP_OUTPUT
    max_inputs = 2
    axis: Setting[int] = Setting()

    def __init__(self, loop: ILoop, tensor: ITensor, kind: LoopOutput, axis: int) -> None:
        self.kind = LoopOutput(kind)
        self._axis = int(axis)
        super().__init__(loop, [tensor])

    @property
    def stacked(self) -> bool:
        return self.kind is not LoopOutput.LAST_VALUE

    @property
    def value(self) -> ITensor:
        """The tensor whose last value (LAST_VALUE) or every iteration's value it outputs."""
        return self.required_input(0)

    @property
    def length(self) -> ITensor:
        """A stacked output's length (input 1, which must be set)."""
        return self.required_input(1)

    def infer_types(self, types: list[TensorType | None]) -> list[TensorType]:
        t = types[0]
        assert t is not None and t.shape is not None
        if not self.stacked:
            producer = self.value.producer
            if not (isinstance(producer, IRecurrenceLayer) and producer.loop is self.loop):
                raise NetworkError(
                    f"{self.describe()}: a LAST_VALUE output's input must be the output of a "
                    f"recurrence layer of loop '{self.loop.name}', but tensor "
                    f"'{self.value.name}' comes from "
                    + ("a network input" if producer is None else producer.describe())
                )
            return [t]
        if not 0 <= self._axis <= len(t.shape):
            raise NetworkError(
                f"{self.describe()}: axis {self._axis} is out of range; a {self.kind.name} "
                f"output of a rank-{len(t.shape)} tensor inserts its axis at 0..{len(t.shape)}"
            )
        length: Dim = UNKNOWN
        if len(types) > 1 and types[1] is not None:
            _scalar_of(self, types[1], "the length (input 1)", COUNT_TYPES)
            value = static_value(self.length)
            if value is not None:
                length = max(int(value), 0)
        return [t.with_shape((*t.shape[: self._axis], length, *t.shape[self._axis :]))]
