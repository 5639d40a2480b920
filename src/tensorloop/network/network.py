"""Network: the layer-by-layer builder, with TensorRT's Python API names."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import GraphError, NetworkError
from ..reference.runtime import DEFAULT_MAX_ITERATIONS
from ..tensor.dtypes import DTypeLike
from ..tensor.types import TensorType
from .enums import (
    ActivationType,
    ElementWiseOperation,
    MatrixOperation,
    ReduceOperation,
    TopKOperation,
    UnaryOperation,
)
from .layers import IConstantLayer, ILayer, ITensor
from .loops import ILoop
from .math_layers import (
    IActivationLayer,
    ICastLayer,
    IElementWiseLayer,
    IMatrixMultiplyLayer,
    IReduceLayer,
    ISelectLayer,
    ISoftMaxLayer,
    ITopKLayer,
    IUnaryLayer,
)
from .shape_layers import (
    IConcatenationLayer,
    IGatherLayer,
    IIdentityLayer,
    IShapeLayer,
    IShuffleLayer,
    ISliceLayer,
)

if TYPE_CHECKING:
    from ..model import Model

L = TypeVar("L", bound=ILayer)


class Network:
    """A network built layer by layer, as with TensorRT's ``INetworkDefinition``.

    Layers are typed as they are added, so a bad layer fails at the call that made it. Loops
    are made with ``add_loop``; ``validate`` checks the rules that need the whole network
    (limits, back edges, clean nesting), and ``to_model`` lowers it to canonical Loops.
    """

    def __init__(self, name: str = "network") -> None:
        self.name = name
        self._layers: list[ILayer] = []
        self._inputs: list[ITensor] = []
        self._outputs: list[ITensor] = []
        self._loops: list[ILoop] = []
        self._types: dict[ILayer, list[TensorType]] = {}
        self._typing: list[ILayer] = []
        self._counts: Counter[str] = Counter()

    # -- inspection -------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self._layers)

    def get_layer(self, index: int) -> ILayer:
        return self._layers[index]

    @property
    def layers(self) -> list[ILayer]:
        return list(self._layers)

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]

    @property
    def loops(self) -> list[ILoop]:
        return list(self._loops)

    @property
    def inputs(self) -> list[ITensor]:
        """The network inputs, in the order they were added."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[ITensor]:
        """The tensors marked as outputs, in the order they were marked."""
        return list(self._outputs)

    # -- building ---------------------------------------------------------------------------------
    def add_input(self, name: str, dtype: DTypeLike, shape: Sequence[int | str]) -> ITensor:
        """A network input; -1 marks a dim known only when the network runs (a str names it)."""
        if any(t.name == name for t in self._inputs):
            raise NetworkError(f"add_input: the network already has an input named '{name}'")
        stem = re.sub(r"\W", "_", name) or "input"
        dims = [f"{stem}_d{i}" if d == -1 else d for i, d in enumerate(shape)]
        try:
            t = TensorType(dtype, dims)
        except GraphError as exc:
            raise NetworkError(f"add_input '{name}': {exc}") from None
        tensor = ITensor(self, name, input_type=t)
        self._inputs.append(tensor)
        return tensor

    def mark_output(self, tensor: ITensor) -> None:
        self.check_tensor(tensor, "mark_output")
        if tensor.is_network_output:
            raise NetworkError(f"mark_output: tensor '{tensor.name}' is already an output")
        self._outputs.append(tensor)

    def unmark_output(self, tensor: ITensor) -> None:
        self._outputs = [t for t in self._outputs if t is not tensor]

    def add_constant(self, shape: Sequence[int], weights: Any) -> IConstantLayer:
        return self.add_layer(IConstantLayer(self, shape, weights))

    def add_elementwise(
        self, input1: ITensor, input2: ITensor, op: ElementWiseOperation
    ) -> IElementWiseLayer:
        return self.add_layer(IElementWiseLayer(self, input1, input2, op))

    def add_activation(self, input: ITensor, type: ActivationType) -> IActivationLayer:
        return self.add_layer(IActivationLayer(self, input, type))

    def add_unary(self, input: ITensor, op: UnaryOperation) -> IUnaryLayer:
        return self.add_layer(IUnaryLayer(self, input, op))

    def add_matrix_multiply(
        self,
        input0: ITensor,
        op0: MatrixOperation,
        input1: ITensor,
        op1: MatrixOperation,
    ) -> IMatrixMultiplyLayer:
        return self.add_layer(IMatrixMultiplyLayer(self, input0, op0, input1, op1))

    def add_shuffle(self, input: ITensor) -> IShuffleLayer:
        return self.add_layer(IShuffleLayer(self, input))

    def add_slice(
        self,
        input: ITensor,
        start: Sequence[int],
        shape: Sequence[int],
        stride: Sequence[int],
    ) -> ISliceLayer:
        return self.add_layer(ISliceLayer(self, input, start, shape, stride))

    def add_concatenation(self, inputs: Sequence[ITensor]) -> IConcatenationLayer:
        return self.add_layer(IConcatenationLayer(self, inputs))

    def add_reduce(
        self, input: ITensor, op: ReduceOperation, axes: int, keep_dims: bool
    ) -> IReduceLayer:
        """Reduce over the axes set in the bitmask ``axes`` (bit i is axis i)."""
        return self.add_layer(IReduceLayer(self, input, op, axes, keep_dims))

    def add_select(
        self, condition: ITensor, then_input: ITensor, else_input: ITensor
    ) -> ISelectLayer:
        return self.add_layer(ISelectLayer(self, [condition, then_input, else_input]))

    def add_gather(self, input: ITensor, indices: ITensor, axis: int) -> IGatherLayer:
        return self.add_layer(IGatherLayer(self, input, indices, axis))

    def add_identity(self, input: ITensor) -> IIdentityLayer:
        return self.add_layer(IIdentityLayer(self, [input]))

    def add_cast(self, input: ITensor, to_type: DTypeLike) -> ICastLayer:
        return self.add_layer(ICastLayer(self, input, to_type))

    def add_softmax(self, input: ITensor) -> ISoftMaxLayer:
        return self.add_layer(ISoftMaxLayer(self, input))

    def add_topk(self, input: ITensor, op: TopKOperation, k: int, axes: int) -> ITopKLayer:
        return self.add_layer(ITopKLayer(self, input, op, k, axes))

    def add_shape(self, input: ITensor) -> IShapeLayer:
        return self.add_layer(IShapeLayer(self, [input]))

    def add_loop(self) -> ILoop:
        loop = ILoop(self, self.unique_name("loop"))
        self._loops.append(loop)
        return loop

    # -- checking and lowering --------------------------------------------------------------------
    def validate(self) -> None:
        """Raise a NetworkError listing every rule of TensorRT's the network breaks."""
        from .analysis import analyze

        analyze(self)

    def to_model(
        self, name: str | None = None, *, max_iterations: int = DEFAULT_MAX_ITERATIONS
    ) -> Model:
        """The network as a runnable Model whose loops are canonical Loops."""
        from .lower import lower

        return lower(self, name or self.name, max_iterations)

    # -- for the layers and loops: names, membership, typing ---------------------------------------
    def unique_name(self, stem: str) -> str:
        """A fresh name for a layer or loop: ``stem`` and its count so far (``relu_2``)."""
        self._counts[stem] += 1
        return f"{stem}_{self._counts[stem]}"

    def check_tensor(self, tensor: object, where: str) -> None:
        """Raise a NetworkError unless ``tensor`` is a tensor of this network."""
        if not isinstance(tensor, ITensor) or tensor.network is not self:
            raise NetworkError(f"{where}: {tensor!r} is not a tensor of this network")

    def add_layer(self, layer: L) -> L:
        """Add a layer made for this network (what the add_* methods and ILoop's do), typing it
        at once; a type error removes it again unless the layer's settings follow the add."""
        self._layers.append(layer)
        try:
            self.output_types(layer)
        except NetworkError:
            if not layer.settings_follow:
                self._layers.pop()
                raise
        return layer

    def retype(self, layer: ILayer) -> None:
        """A layer's inputs or settings changed: re-type, failing now if the layer cannot be."""
        self.clear_types()
        self.output_types(layer)

    def clear_types(self) -> None:
        """Forget every layer's output types; each is inferred again when next asked for."""
        self._types.clear()

    def output_types(self, layer: ILayer) -> list[TensorType]:
        """The types of ``layer``'s outputs (per iteration inside a loop), inferred on first use;
        a NetworkError if the layer cannot be typed or depends on its own output."""
        known = self._types.get(layer)
        if known is not None:
            return known
        if layer in self._typing:
            cycle = self._typing[self._typing.index(layer) :]
            path = " -> ".join(f"'{x.name}'" for x in (*cycle, layer))
            raise NetworkError(
                f"{layer.describe()}: its input depends on its own output ({path}); the only "
                "back edge TensorRT allows is a recurrence layer's second input"
            )
        self._typing.append(layer)
        try:
            types = [
                None if t is None or i in layer.back_edge_inputs else t.type
                for i, t in enumerate(layer.inputs)
            ]
            try:
                out = layer.infer_types(types)
            except NetworkError:
                raise
            except GraphError as exc:
                raise NetworkError(f"{layer.describe()}: {exc}") from None
        finally:
            self._typing.pop()
        self._types[layer] = out
        return out

    def __repr__(self) -> str:
        return (
            f"<Network '{self.name}': {len(self._layers)} layers, {len(self._loops)} loops, "
            f"{len(self._inputs)} inputs, {len(self._outputs)} outputs>"
        )
