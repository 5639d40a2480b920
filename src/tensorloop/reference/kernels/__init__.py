"""Built-in reference kernels; importing this package registers them all."""

from . import (  # noqa: F401
    attention,
    control_flow,
    core,
    detection_output,
    elementwise,
    image,
    indexing,
    linalg,
    math,
    nms,
    nn,
    quant,
    reduce,
    roi,
    sequence,
    shape,
    signal,
    sparse,
    strings,
    training,
)
