"""Op definitions (meaning, attributes, type rules); importing this package registers them."""

from . import core  # noqa: F401
