"""Op definitions (meaning, attributes, type rules); importing this package registers them."""

from . import (  # noqa: F401
    attention,
    conv,
    core,
    elementwise,
    image,
    indexing,
    linalg,
    math,
    nn,
    normalization,
    pooling,
    quant,
    reduce,
    sequence,
    shape,
    signal,
    strings,
    training,
)
