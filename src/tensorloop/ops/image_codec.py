"""ImageDecoder: an encoded image (BMP, JPEG, JPEG 2000, TIFF, PNG, WebP, PNM) decoded by Pillow.

Pillow is an optional dependency (the ``image`` extra); ``pillow()`` imports it or says which
extra to install. ``image_header`` reads a stream's size without decoding its pixels (what the
allocation check predicts from), ``decode_image`` decodes it; both raise ValueError on a stream
Pillow cannot read, re-raised by each side naming the node.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, TensorType, Type
from .common import expect_one_of

if TYPE_CHECKING:
    from PIL import Image

PIXEL_FORMATS = {"RGB": 3, "BGR": 3, "Grayscale": 1}
"""ImageDecoder's pixel formats and the channels each gives."""

FORMATS = ("BMP", "JPEG", "JPEG2000", "TIFF", "PNG", "WEBP", "PPM")
"""The Pillow plugins the spec's formats need (PPM reads PBM, PGM, PPM and PNM). No other
plugin is tried: some (EPS) run external programs, and the spec lists these only."""

MISSING = "ImageDecoder needs Pillow, which is not installed (pip install 'tensorloop[image]')"


def pillow() -> Any:
    """Pillow's ``PIL.Image`` module; ImportError naming the extra when it is not installed."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(MISSING) from None
    return Image


def _open(data: np.ndarray[Any, Any]) -> Image.Image:
    """The stream opened (its header read, no pixel decoded), or ValueError."""
    pil = pillow()
    try:
        return pil.open(io.BytesIO(np.ascontiguousarray(data).tobytes()), formats=FORMATS)  # type: ignore[no-any-return]
    except pil.DecompressionBombError as exc:
        raise ValueError(f"refused by Pillow's decompression-bomb check: {exc}") from None
    except Exception as exc:  # Pillow's plugins raise many types on a malformed header
        raise ValueError(f"not an image in a format ImageDecoder reads ({exc})") from None


def image_header(data: np.ndarray[Any, Any], pixel_format: str) -> tuple[int, int, int]:
    """The (height, width, channels) ``decode_image`` will return, from the header only."""
    with _open(data) as img:
        width, height = img.size
    return height, width, PIXEL_FORMATS[pixel_format]


def decode_image(data: np.ndarray[Any, Any], pixel_format: str) -> np.ndarray[Any, Any]:
    """The first frame of the image as uint8 [height, width, channels]: converted to RGB (BGR:
    its channels reversed) or to 8-bit luma by Pillow's ``convert`` (Grayscale: ITU-R 601-2,
    L = (19595 R + 38470 G + 7471 B + 2**15) >> 16), alpha dropped; ValueError if undecodable."""
    with _open(data) as img:
        try:
            img.load()
            converted = img.convert("L" if pixel_format == "Grayscale" else "RGB")
        except Exception as exc:  # Pillow's decoders raise many types on malformed data
            raise ValueError(f"the {img.format} stream does not decode ({exc})") from None
        pixels = np.asarray(converted, dtype=np.uint8)
    if pixel_format == "Grayscale":
        return np.ascontiguousarray(pixels[:, :, None])
    return np.ascontiguousarray(pixels[:, :, ::-1] if pixel_format == "BGR" else pixels)


@op("ImageDecoder", attrs={"pixel_format": AttrSpec(str, "RGB")})
def _image_decoder(ctx: InferContext) -> list[Type]:
    """The encoded uint8 stream (BMP, JPEG, JPEG 2000, TIFF, PNG, WebP or PNM) decoded to uint8
    [height, width, C], its first frame: ``pixel_format`` RGB or BGR (C = 3), or Grayscale
    (C = 1). Decoded by Pillow (the ``image`` extra); a stream that does not decode is an error."""
    x = expect_one_of(ctx, 0, {DType.uint8})
    fmt = ctx.attr("pixel_format")
    if fmt not in PIXEL_FORMATS:
        raise ctx.error(f"pixel_format must be one of RGB, BGR, Grayscale, got {fmt!r}")
    if x.rank is not None and x.rank != 1:
        raise ctx.error(f"input #0: expected a 1-D stream of bytes, got {x}")
    try:
        pillow()
    except ImportError as exc:
        raise ctx.error(str(exc)) from None
    return [TensorType(DType.uint8, [UNKNOWN, UNKNOWN, PIXEL_FORMATS[fmt]])]
