"""Strided tensor layouts and views over one linear buffer: l-tensors, r-tensors, padding.

The nGraph tensor model, split by what each module defines: ``strided`` (Layout), ``padded``
(PaddedView), ``views`` (TensorView, PaddedTensor), ``strides`` (stride arithmetic),
``arguments`` (argument types and checks) and ``errors``.
"""

from .arguments import Index, Scalar
from .errors import LayoutError, LayoutIndexError
from .padded import PaddedView
from .strided import Layout
from .views import PaddedTensor, TensorView

__all__ = [
    "Index",
    "Layout",
    "LayoutError",
    "LayoutIndexError",
    "PaddedTensor",
    "PaddedView",
    "Scalar",
    "TensorView",
]
