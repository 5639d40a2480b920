"""A TensorRT-style network builder: layers, loops defined by their boundary layers, nesting
inferred from data flow, validated as TensorRT validates and lowered to canonical Loops.

    from tensorloop.network import Network, TripLimit, LoopOutput, ElementWiseOperation

    net = Network()
    x = net.add_input("x", "float32", (5, 3))
    loop = net.add_loop()
    loop.add_trip_limit(net.add_constant((), np.int32(5)).get_output(0), TripLimit.COUNT)
    row = loop.add_iterator(x).get_output(0)
    acc = loop.add_recurrence(net.add_constant((3,), np.zeros(3, np.float32)).get_output(0))
    total = net.add_elementwise(acc.get_output(0), row, ElementWiseOperation.SUM).get_output(0)
    acc.set_input(1, total)
    net.mark_output(loop.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    model = net.to_model()

See docs/network.md.
"""

from .enums import (
    ActivationType,
    ElementWiseOperation,
    LayerType,
    MatrixOperation,
    ReduceOperation,
    TopKOperation,
    UnaryOperation,
)
from .layers import IConstantLayer, ILayer, ITensor
from .loops import (
    IIteratorLayer,
    ILoop,
    ILoopBoundaryLayer,
    ILoopOutputLayer,
    IRecurrenceLayer,
    ITripLimitLayer,
    LoopOutput,
    LoopOutputKind,
    TripLimit,
)
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
from .network import Network
from .shape_layers import (
    IConcatenationLayer,
    IGatherLayer,
    IIdentityLayer,
    IShapeLayer,
    IShuffleLayer,
    ISliceLayer,
)

__all__ = [
    "ActivationType",
    "ElementWiseOperation",
    "IActivationLayer",
    "ICastLayer",
    "IConcatenationLayer",
    "IConstantLayer",
    "IElementWiseLayer",
    "IGatherLayer",
    "IIdentityLayer",
    "IIteratorLayer",
    "ILayer",
    "ILoop",
    "ILoopBoundaryLayer",
    "ILoopOutputLayer",
    "IMatrixMultiplyLayer",
    "IRecurrenceLayer",
    "IReduceLayer",
    "ISelectLayer",
    "IShapeLayer",
    "IShuffleLayer",
    "ISliceLayer",
    "ISoftMaxLayer",
    "ITensor",
    "ITopKLayer",
    "ITripLimitLayer",
    "IUnaryLayer",
    "LayerType",
    "LoopOutput",
    "LoopOutputKind",
    "MatrixOperation",
    "Network",
    "ReduceOperation",
    "TopKOperation",
    "TripLimit",
    "UnaryOperation",
]
