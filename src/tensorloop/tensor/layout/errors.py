"""Layout errors: LayoutError, and LayoutIndexError for an index out of bounds."""

from __future__ import annotations

from ...errors import GraphError


class LayoutError(GraphError):
    """A layout or view request that cannot be honoured (bad shape, axis, stride or write)."""


class LayoutIndexError(LayoutError, IndexError):
    """An index outside a tensor's bounds.

    Also an IndexError so that Python's sequence protocols (and callers used to NumPy) see the
    usual exception type.
    """
