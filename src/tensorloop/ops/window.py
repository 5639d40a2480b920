"""Sliding-window geometry (Window) for type rules and kernels, and the NN rules' shape checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir.opdef import AttrSpec, InferContext
from ..tensor.types import UNKNOWN, Dim, TensorType
from .common import expect, reported

INTS = (tuple, list)
FLOAT = (float, int)
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
EPSILON = AttrSpec(FLOAT, 1e-5)


# --- Sliding-window geometry, shared by the type rules and the kernels ---------------------------


@dataclass(frozen=True)
class Window:
    """A window sliding over the n spatial axes; ``pads`` lists n begins then n ends."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    auto_pad: str = "NOTSET"
    ceil_mode: bool = False

    def span(self, i: int) -> int:
        """How many input positions the dilated window covers along spatial axis ``i``."""
        return (self.kernel[i] - 1) * self.dilations[i] + 1

    def along(self, i: int, size: int) -> tuple[int, int, int]:
        """(output size, pad at the begin, pad at the end) along spatial axis ``i`` of ``size``.

        SAME_* pads so that the output has ceil(size / stride) entries, the odd pad going to the
        end (UPPER) or the begin (LOWER). With ceil_mode the last, partial window is kept unless
        it would start in the end padding.
        """
        s, span = self.strides[i], self.span(i)
        if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-size // s)
            return (out, *_split(max(0, (out - 1) * s + span - size), self.auto_pad))
        n = len(self.kernel)
        begin, end = (0, 0) if self.auto_pad == "VALID" else (self.pads[i], self.pads[i + n])
        room = size + begin + end - span
        if room < 0:
            raise ValueError(
                f"spatial axis {i}: the window spans {span} positions but the padded input has "
                f"only {size + begin + end}"
            )
        if not self.ceil_mode or self.auto_pad == "VALID":
            return room // s + 1, begin, end
        out = -(-room // s) + 1
        if (out - 1) * s >= size + begin:
            out -= 1
        return out, begin, end

    def transposed(
        self, i: int, size: int, output_padding: int, output_shape: int | None
    ) -> tuple[int, int, int]:
        """ConvTranspose's (output size, begin crop, end crop) along spatial axis ``i``: the
        full result has stride * (size - 1) + output_padding + span entries, cropped by the pads
        or, given output_shape (or SAME_*), by whatever leaves that size."""
        full = self.strides[i] * (size - 1) + output_padding + self.span(i)
        same = self.auto_pad in ("SAME_UPPER", "SAME_LOWER")
        if output_shape is None and not same:
            n = len(self.kernel)
            begin, end = (0, 0) if self.auto_pad == "VALID" else (self.pads[i], self.pads[i + n])
            if full - begin - end < 0:
                raise ValueError(f"spatial axis {i}: pads {begin}+{end} exceed the {full} outputs")
            return full - begin - end, begin, end
        out = size * self.strides[i] if output_shape is None else output_shape
        total = full - out
        if total < 0:
            # SAME with a kernel narrower than the stride keeps the full result (as onnxruntime
            # does); an output_shape past the full result reads zeros after it.
            return (full, 0, 0) if output_shape is None else (out, 0, total)
        return (out, *_split(total, self.auto_pad))


def _split(total: int, auto_pad: str) -> tuple[int, int]:
    """``total`` padding as (begin, end): halves, the odd one at the end for SAME_UPPER and at
    the begin otherwise."""
    half = total // 2
    return (half, total - half) if auto_pad == "SAME_UPPER" else (total - half, half)


def _ints_attr(attrs: Mapping[str, Any], key: str, n: int, fill: int) -> tuple[int, ...]:
    value = attrs.get(key)
    if value is None:
        return (fill,) * n
    got = tuple(int(v) for v in value)
    if len(got) != n:
        raise ValueError(f"{key} {list(got)} has {len(got)} values, expected {n}")
    return got


def window(attrs: Mapping[str, Any], kernel: Sequence[int]) -> Window:
    """The Window that the resolved attributes describe for a kernel of this shape (checked)."""
    n = len(kernel)
    strides = _ints_attr(attrs, "strides", n, 1)
    dilations = _ints_attr(attrs, "dilations", n, 1)
    pads = _ints_attr(attrs, "pads", 2 * n, 0)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise ValueError(f"auto_pad must be one of {', '.join(AUTO_PADS)}, got {auto_pad!r}")
    for key, values, low in (
        ("kernel_shape", tuple(kernel), 1),
        ("strides", strides, 1),
        ("dilations", dilations, 1),
    ):
        if any(v < low for v in values):
            raise ValueError(f"{key} {list(values)} must all be at least {low}")
    if any(p < 0 for p in pads):
        raise ValueError(f"pads {list(pads)} must not be negative")
    ceil = bool(attrs.get("ceil_mode", 0))
    return Window(tuple(kernel), strides, dilations, pads, auto_pad, ceil)


def transpose_out_shape(
    attrs: Mapping[str, Any], kernel: Sequence[int], sizes: Sequence[int]
) -> list[tuple[int, int, int]]:
    """ConvTranspose's (output size, begin crop, end crop) per spatial axis of ``sizes``."""
    n = len(kernel)
    win = window(attrs, kernel)
    extra = _ints_attr(attrs, "output_padding", n, 0)
    given = attrs.get("output_shape")
    if given is not None:
        given = [int(v) for v in given][-n:]
        if len(given) != n:
            raise ValueError(f"output_shape {list(given)} has fewer than {n} spatial values")
    return [
        win.transposed(i, sizes[i], extra[i], None if given is None else given[i]) for i in range(n)
    ]


# --- Shared pieces of the type rules ----------------------------------------------------------


def spatial_rank(ctx: InferContext, x: TensorType, what: str = "X") -> int | None:
    if x.shape is None:
        return None
    if len(x.shape) < 3:
        raise ctx.error(f"{what}: expected (N, C, D1, ...) with at least one spatial axis, got {x}")
    return len(x.shape) - 2


def kernel_shape(ctx: InferContext, w: TensorType | None, n: int | None) -> list[int] | None:
    """The kernel's spatial shape: the kernel_shape attribute, else W's trailing dims."""
    given = ctx.attr("kernel_shape")
    if given is not None:
        k = [int(v) for v in given]
        if n is not None and len(k) != n:
            raise ctx.error(f"kernel_shape {k} has {len(k)} values, expected {n} (spatial rank)")
        if w is not None and w.shape is not None:
            for a, b in zip(k, w.shape[2:], strict=False):
                if isinstance(b, int) and a != b:
                    raise ctx.error(f"kernel_shape {k} does not match W of {w}")
        return k
    if w is None or w.shape is None or not all(isinstance(d, int) for d in w.shape[2:]):
        return None
    return [int(d) for d in w.shape[2:]]


def windowed(
    ctx: InferContext, x: TensorType, channels: Dim, kernel: list[int] | None
) -> list[Dim] | None:
    """(N, channels, *spatial out) of a sliding-window op over ``x``, or None if rank unknown."""
    n = spatial_rank(ctx, x)
    if n is None or x.shape is None:
        return None
    if kernel is None:
        return [x.shape[0], channels, *[UNKNOWN] * n]
    if len(kernel) != n:
        raise ctx.error(f"the kernel has {len(kernel)} spatial dims but {x} has {n}")
    with reported(ctx):
        win = window(ctx.attrs, kernel)
        out = [
            win.along(i, d)[0] if isinstance(d, int) else UNKNOWN for i, d in enumerate(x.shape[2:])
        ]
    return [x.shape[0], channels, *out]


def check_dim(ctx: InferContext, what: str, got: Dim, want: Dim) -> None:
    if isinstance(got, int) and isinstance(want, int) and got != want:
        raise ctx.error(f"{what}: expected {want}, got {got}")


def per_channel(ctx: InferContext, index: int, channels: Dim) -> TensorType:
    """Input ``index`` as a 1-D float tensor of one entry per channel."""
    t = expect(ctx, index, "float", rank=1)
    if t.shape is not None:
        check_dim(ctx, f"input #{index} length (one per channel)", t.shape[0], channels)
    return t
