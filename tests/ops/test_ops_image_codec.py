"""ImageDecoder: what Pillow decodes, bad streams refused naming the node, the output's size
checked against the limits from the header before any pixel is decoded."""

from __future__ import annotations

import io
import struct
import sys
import zlib
from typing import Any

import numpy as np
import onnx
import pytest
from PIL import Image

import tensorloop as tl
from onnx_oracle import one_node
from tensorloop.errors import ExecutionError, FormatError, ResourceLimitError
from tensorloop.formats.onnx import load_onnx

RNG = np.random.default_rng(3)


def _encoded(pixels: np.ndarray, fmt: str, mode: str | None = None) -> np.ndarray:
    image = Image.fromarray(pixels)
    if mode is not None:
        image = image.convert(mode)
    with io.BytesIO() as f:
        image.save(f, format=fmt)
        return np.frombuffer(f.getvalue(), np.uint8).copy()


def _model(data: np.ndarray, pixel_format: str = "RGB") -> onnx.ModelProto:
    return one_node("ImageDecoder", [data], {"pixel_format": pixel_format}, opset=20)


def _decode(data: np.ndarray, pixel_format: str = "RGB", **run: Any) -> np.ndarray:
    model = load_onnx(_model(data, pixel_format), **run)
    return np.asarray(model.run({"x0": data})["y0"])


def _png_header(width: int, height: int) -> np.ndarray:
    """A PNG whose header says width x height RGB pixels, with no pixel data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )
    return np.frombuffer(raw, np.uint8).copy()


@pytest.mark.parametrize("fmt", ["BMP", "JPEG", "JPEG2000", "TIFF", "PNG", "WEBP", "PPM"])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_every_format_decodes_as_pillow_decodes(fmt: str, pixel_format: str) -> None:
    pixels = RNG.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    data = _encoded(pixels, fmt)
    got = _decode(data, pixel_format)
    with Image.open(io.BytesIO(data.tobytes())) as image:
        want = np.asarray(image.convert("L" if pixel_format == "Grayscale" else "RGB"))
    want = want[:, :, None] if pixel_format == "Grayscale" else want
    want = want[:, :, ::-1] if pixel_format == "BGR" else want
    assert got.dtype == np.uint8 and got.shape == want.shape == (
        7,
        5,
        1 if pixel_format == "Grayscale" else 3,
    )
    np.testing.assert_array_equal(got, want)
    if fmt in ("BMP", "PNG", "TIFF", "PPM") and pixel_format != "Grayscale":  # lossless
        np.testing.assert_array_equal(got, pixels[:, :, ::-1] if pixel_format == "BGR" else pixels)


@pytest.mark.parametrize("mode", ["L", "RGBA", "P", "1"])
def test_other_modes_become_the_pixel_format(mode: str) -> None:
    """A grey, paletted or bilevel image is expanded to RGB; RGBA loses its alpha."""
    pixels = RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    data = _encoded(pixels, "PNG", mode)
    got = _decode(data)
    want = np.asarray(Image.fromarray(pixels).convert(mode).convert("RGB"))
    np.testing.assert_array_equal(got, want)
    assert _decode(data, "Grayscale").shape == (4, 6, 1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (np.frombuffer(b"not an image at all", np.uint8).copy(), "not an image in a format"),
        (_encoded(np.zeros((64, 64, 3), np.uint8), "PNG")[:60], "the PNG stream does not decode"),
        (np.zeros(0, np.uint8), "not an image in a format"),
        (_encoded(np.zeros((4, 4), np.uint8), "GIF"), "not an image in a format"),
    ],
    ids=["garbage", "truncated", "empty", "gif"],
)
def test_a_stream_that_does_not_decode_is_an_error_naming_the_node(
    data: np.ndarray, message: str
) -> None:
    with pytest.raises(
        ExecutionError, match=f"ImageDecoder.*input #0 \\(encoded_stream\\): {message}"
    ):
        _decode(data)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_the_output_size_is_checked_from_the_header_before_decoding(backend: str) -> None:
    """A 200-byte PNG that says it holds 9000 x 9000 pixels (243 MB decoded) is refused before
    Pillow decodes a pixel."""
    data = _png_header(9000, 9000)
    assert data.size < 200
    model = load_onnx(_model(data), backend=backend, limits=tl.Limits(max_tensor_bytes=1 << 20))
    with pytest.raises(ResourceLimitError, match=r"ImageDecoder.*\[9000, 9000, 3\]"):
        model.run({"x0": data})


def test_pillow_s_decompression_bomb_check_is_an_error_naming_the_node() -> None:
    with pytest.raises(ExecutionError, match=r"ImageDecoder.*decompression-bomb"):
        _decode(_png_header(20000, 20000))


def test_without_pillow_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _encoded(np.zeros((2, 2, 3), np.uint8), "PNG")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(FormatError, match=r"ImageDecoder needs Pillow.*tensorloop\[image\]"):
        load_onnx(_model(data))


def test_the_writers(tmp_path: Any) -> None:
    """ONNX writes ImageDecoder back; OpenVINO has no such layer and says so."""
    data = _encoded(RNG.integers(0, 256, (3, 4, 3), dtype=np.uint8), "PNG")
    model = load_onnx(_model(data, "BGR"))
    tl.save(model, tmp_path / "m.onnx")
    written = onnx.load(tmp_path / "m.onnx")
    assert [(n.op_type, n.attribute[0].s) for n in written.graph.node] == [("ImageDecoder", b"BGR")]
    back = tl.load(tmp_path / "m.onnx").run({"x0": data})["y0"]
    np.testing.assert_array_equal(back, model.run({"x0": data})["y0"])
    with pytest.raises(FormatError, match="no OpenVINO lowering for op 'ImageDecoder'"):
        tl.save(model, tmp_path / "m.xml")
