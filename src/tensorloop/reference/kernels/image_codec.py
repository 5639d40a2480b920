"""Reference kernel of ImageDecoder: the stream decoded by Pillow (``ops/image_codec.py``)."""

from __future__ import annotations

from typing import Any

from ...ops.image_codec import decode_image
from ..registry import KernelContext, kernel
from .elementwise import Array, fail


@kernel("ImageDecoder")
def image_decoder(ctx: KernelContext, encoded: Any) -> Array:
    # The output's size was checked against the limits from the header before this runs
    # (reference/allocation.py predicts it).
    try:
        return decode_image(encoded, ctx.attr("pixel_format"))
    except (ImportError, ValueError) as exc:
        raise fail(ctx, f"input #0 (encoded_stream): {exc}") from None
