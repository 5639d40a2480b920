"""Core image ops written as OpenVINO layers: Resize (as Interpolate), GridSample and Col2Im."""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert, insert_unit, ints_text

_GRID_MODES = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}


def _grid_sample(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if x.rank != 4:
        raise call.error(
            f"OpenVINO's GridSample samples 2-D images [N, C, H, W] only, got {x.type}"
        )
    return net.layer(
        "GridSample",
        [x, call.arg(1)],
        call.outs,
        "opset9",
        align_corners=bool(call.attrs["align_corners"]),
        mode=_GRID_MODES[call.attrs["mode"]],
        padding_mode=call.attrs["padding_mode"],
    )


def _col2im(net: NetBuilder, call: Call) -> list[Tensor]:
    """Col2Im over two spatial axes as Col2Im-15; over one (as ISTFT folds frames) as Col2Im-15
    over a unit axis and that axis; OpenVINO's has no other number of axes."""
    x, image, block = call.arg(0), call.arg(1), call.arg(2)
    dims = image.type.shape
    if dims is None or dims[0] not in (1, 2):
        raise call.error("OpenVINO's Col2Im folds one or two spatial axes: image_shape must be [2]")
    n = int(dims[0])
    pads = list(call.attrs["pads"] or [0] * 2 * n)
    data = {
        "strides": list(call.attrs["strides"] or [1] * n),
        "dilations": list(call.attrs["dilations"] or [1] * n),
        "pads_begin": pads[:n],
        "pads_end": pads[n:],
    }
    if any(len(v) != n for v in data.values()):
        raise call.error(f"strides, dilations and pads must cover {n} spatial axes, got {data}")
    image, block = convert(net, image, DType.int64), convert(net, block, DType.int64)
    out = call.out
    if n == 1:
        data = {k: [1 if k in ("strides", "dilations") else 0, *v] for k, v in data.items()}
        unit = net.ints([1])
        pair = TensorType(DType.int64, [2])
        image = net.op("Concat", [unit, image], pair, axis=0)
        block = net.op("Concat", [unit, block], pair, axis=0)
        out = insert_unit(call.out, 2)
    text = {k: ",".join(map(str, v)) for k, v in data.items()}
    y = net.op("Col2Im", [x, image, block], out, "opset15", **text)
    if n == 1:
        y = net.op("Squeeze", [y, net.ints([2])], call.out)
    return [y]


_RESIZE_COORDINATES = (
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "align_corners",
)
_RESIZE_MODES = {"nearest": "nearest", "linear": "linear_onnx", "cubic": "cubic"}


def _present(t: Tensor | None) -> bool:
    """Resize counts an empty tensor as an absent input."""
    if t is None:
        return False
    shape = t.type.shape
    return not (shape is not None and len(shape) == 1 and shape[0] == 0)


def _scale_list(call: Call, x: Tensor, axes: list[int]) -> list[float] | None:
    """Each listed axis's scale (output / input dim) where constants and static dims tell it."""
    scales, sizes, dims = call.opt(2), call.opt(3), x.type.shape
    if _present(sizes):
        assert sizes is not None
        if sizes.value is None or dims is None:
            return None
        given = np.asarray(sizes.value).reshape(-1).tolist()
        known = [dims[a] for a in axes]
        if not all(isinstance(d, int) and d for d in known):
            return None
        return [int(v) / int(d) for v, d in zip(given, known, strict=True)]
    if scales is None or scales.value is None:
        return None
    return [float(np.float32(v)) for v in np.asarray(scales.value).reshape(-1)]


def _pillow_axes(rank: int, axes: list[int]) -> bool:
    """The axes OpenVINO's CPU plugin resamples as the Pillow modes: H and W of NCHW or NHWC."""
    spatial = {3: [(1, 2)], 4: [(2, 3), (1, 2)]}.get(rank, [])
    return any(set(axes) <= set(pair) for pair in spatial)


def _antialiased(net: NetBuilder, call: Call, x: Tensor, axes: list[int]) -> list[Tensor]:
    """Resize with antialias and exclude_outside (the filter widened by 1 / scale when shrinking,
    its weights renormalized over the taps on the input): bilinear_pillow / bicubic_pillow at
    half_pixel where the scale is input / output (sizes, or scales that divide evenly), else
    linear with antialias over 5-D data, all axes shrinking (below rank 5 the CPU plugin
    ignores antialias)."""
    a = call.attrs
    mode, ctm = a["mode"], a["coordinate_transformation_mode"]
    if mode == "nearest" or not a["antialias"] or not a["exclude_outside"]:
        raise call.error(
            "Resize with exclude_outside but no antialias (or antialias without "
            "exclude_outside) has no OpenVINO Interpolate that computes the same"
        )
    if not x.type.dtype.is_float:
        raise call.error(f"OpenVINO resamples {x.type} with rounding between passes")
    assert x.rank is not None
    scales, dims, out = _scale_list(call, x, axes), x.type.shape, call.out.shape
    if scales is None or dims is None or out is None or not all(isinstance(d, int) for d in out):
        raise call.error("antialiased Resize needs constant scales or sizes and static dims")
    outs = [int(d) for d in out]
    pillow_scale = all(
        outs[ax] and abs(outs[ax] / int(dims[ax]) - s) <= 1e-6 * s
        for ax, s in zip(axes, scales, strict=True)
    )
    if ctm == "half_pixel" and pillow_scale and _pillow_axes(x.rank, axes):
        if mode == "cubic" and a["cubic_coeff_a"] != -0.5:
            raise call.error(
                f"cubic_coeff_a {a['cubic_coeff_a']}: OpenVINO's CPU plugin computes "
                "bicubic_pillow with -0.5 whatever cube_coeff says"
            )
        order = sorted(axes)
        return [
            net.op(
                "Interpolate",
                [x, net.ints([outs[ax] for ax in order]), net.ints(order)],
                call.out,
                "opset11",
                mode="bilinear_pillow" if mode == "linear" else "bicubic_pillow",
                shape_calculation_mode="sizes",
                coordinate_transformation_mode="half_pixel",
                nearest_mode="round_prefer_floor",
                antialias=False,
                pads_begin=ints_text([0] * x.rank),
                pads_end=ints_text([0] * x.rank),
                cube_coeff=float(a["cubic_coeff_a"]),
            )
        ]
    if mode == "linear" and x.rank == 5 and all(ax >= 2 for ax in axes) and max(scales) <= 1:
        return []  # OpenVINO's linear mode with antialias computes it
    raise call.error(
        f"antialiased {mode} Resize ({ctm}, scales {scales}, axes {axes} of {x.type}) has no "
        "OpenVINO Interpolate the CPU plugin computes alike"
    )


def _resize(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    x = call.arg(0)
    ctm = a["coordinate_transformation_mode"]
    if ctm not in _RESIZE_COORDINATES:
        raise call.error(f"coordinate_transformation_mode '{ctm}' has no OpenVINO Interpolate")
    if a["keep_aspect_ratio_policy"] != "stretch":
        raise call.error(
            "Resize with a keep_aspect_ratio_policy other than stretch has no OpenVINO "
            "Interpolate that computes the same"
        )
    if x.rank is None:
        raise call.error(f"OpenVINO needs X of a known rank, got {x.type}")
    axes = [
        call.normalize_axis(int(v), x.rank, "axes")
        for v in (range(x.rank) if a["axes"] is None else a["axes"])
    ]
    antialias = bool(a["antialias"] or a["exclude_outside"])
    if antialias:
        written = _antialiased(net, call, x, axes)
        if written:
            return written
    scales, sizes = call.opt(2), call.opt(3)
    if _present(sizes):
        assert sizes is not None
        given, calc = sizes, "sizes"
    elif scales is not None:
        given, calc = convert(net, scales, DType.float32), "scales"
        if ctm == "align_corners":
            # Resize aligns the corners of dim * scale cells, OpenVINO those of floor(that):
            # the same only where the scale divides evenly.
            shape = x.type.shape
            values = scales.value
            if values is None or shape is None:
                raise call.error("align_corners with scales needs constant scales and static dims")
            for axis, s in zip(axes, np.asarray(values).reshape(-1).tolist(), strict=True):
                d = shape[axis]
                length = np.float32(s) * np.float32(d) if isinstance(d, int) else None
                if length is None or not float(length).is_integer():
                    raise call.error(
                        f"align_corners with scale {s} on axis {axis} of {x.type}: OpenVINO "
                        "aligns a different output length"
                    )
    else:
        raise call.error("Resize needs scales or sizes")
    return [
        net.op(
            "Interpolate",
            [x, given, net.ints(axes)],
            call.out,
            "opset11",
            mode="linear" if antialias else _RESIZE_MODES[a["mode"]],
            shape_calculation_mode=calc,
            coordinate_transformation_mode=ctm,
            nearest_mode=a["nearest_mode"],
            antialias=antialias,
            pads_begin=ints_text([0] * x.rank),
            pads_end=ints_text([0] * x.rank),
            cube_coeff=float(a["cubic_coeff_a"]),
        )
    ]


EMITTERS: dict[str, Emitter] = {
    "Resize": _resize,
    "GridSample": _grid_sample,
    "Col2Im": _col2im,
}
"""Emitters of this family, by core op name."""
