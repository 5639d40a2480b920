"""Op definitions (meaning, attributes, type rules); importing this package registers them."""

# The control-flow ops are defined beside their IR classes (ir/loop.py, ir/branch.py).
from ..ir import branch, loop  # noqa: F401
from . import (  # noqa: F401
    attention,
    conv,
    core,
    detection,
    elementwise,
    image,
    image_codec,
    indexing,
    linalg,
    math,
    nn,
    normalization,
    philox,
    pooling,
    quant,
    random,
    random_std,
    reduce,
    sequence,
    shape,
    signal,
    sparse,
    strings,
    training,
    trees,
)
