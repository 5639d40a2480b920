"""Op definitions (meaning, attributes, type rules); importing this package registers them."""

from . import core, elementwise, linalg, reduce, shape  # noqa: F401
