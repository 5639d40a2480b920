"""Built-in reference kernels; importing this package registers them all."""

from . import control_flow, core  # noqa: F401
