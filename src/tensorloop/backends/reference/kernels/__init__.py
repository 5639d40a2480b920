"""Built-in reference kernels; importing this package registers them all."""

from . import control_flow, core, elementwise, linalg, reduce, shape  # noqa: F401
