"""Op definitions (meaning, attributes, type rules); importing this package registers them."""

from . import (  # noqa: F401
    attention,
    core,
    elementwise,
    image,
    indexing,
    linalg,
    math,
    nn,
    quant,
    reduce,
    sequence,
    shape,
    signal,
    strings,
    training,
)
