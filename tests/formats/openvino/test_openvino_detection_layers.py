"""OpenVINO detection layers (priors, YOLO regions, ROI align) read by tensorloop vs. the CPU
plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset2, opset3, opset8, opset9  # noqa: E402
from openvino_layer_checks import check, rand_f32, run_path, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402


def _with_dummy(outputs: list[Any], tmp_path: Path) -> dict[str, Any]:
    """Save ``outputs`` beside an Add of a dummy parameter; run here and on the CPU plugin."""
    x = ops.parameter([2], np.float32, name="x0")
    path = save_ir([*outputs, ops.add(x, x)], [x], tmp_path)
    return run_path(path, {"x0": np.ones(2, np.float32)})


# -- PriorBox / PriorBoxClustered ----------------------------------------------------------------

PRIOR_BOX_CASES: list[dict[str, Any]] = [
    {"min_size": [2.0], "aspect_ratio": [2.0], "flip": True, "offset": 0.5},
    {
        "min_size": [2.0, 4.0],
        "max_size": [5.0, 9.0],
        "aspect_ratio": [2.0, 3.0],
        "flip": True,
        "clip": True,
        "step": 8.0,
        "offset": 0.5,
        "variance": [0.1, 0.1, 0.2, 0.2],
    },
    {
        "min_size": [3.0],
        "max_size": [7.0],
        "aspect_ratio": [0.5],
        "flip": False,
        "step": 0.0,
        "offset": 0.25,
        "variance": [0.2],
    },
    {
        "min_size": [0.1, 0.2],
        "aspect_ratio": [2.0],
        "flip": True,
        "scale_all_sizes": False,
        "step": 0.125,
        "offset": 0.5,
    },
    {
        "fixed_size": [8.0],
        "density": [2.0],
        "aspect_ratio": [2.0],
        "offset": 0.5,
        "step": 4.0,
    },
    {
        "fixed_size": [8.0],
        "fixed_ratio": [2.0],
        "density": [2.0],
        "offset": 0.5,
    },
    {
        "fixed_size": [8.0, 16.0],
        "density": [2.0, 3.0],
        "offset": 0.5,
        "clip": True,
    },
]


@pytest.mark.parametrize("case", range(len(PRIOR_BOX_CASES)))
@pytest.mark.parametrize("version", ["v1", "v8", "v8-caffe-order"])
def test_prior_box(case: int, version: str, tmp_path: Path) -> None:
    attrs = dict(PRIOR_BOX_CASES[case])
    layer = np.array([3, 4], np.int64)
    image = np.array([32, 40], np.int32 if case % 2 else np.int64)
    if version == "v1":
        build = opset1.prior_box
    else:
        build = opset8.prior_box
        attrs["min_max_aspect_ratios_order"] = version == "v8"
    out = build(ops.constant(layer.astype(image.dtype)), ops.constant(image), attrs)
    _with_dummy([out], tmp_path)


@pytest.mark.parametrize(
    "attrs",
    [
        {"width": [2.0, 4.5], "height": [3.0, 1.5], "offset": 0.5},
        {"width": [6.0], "height": [9.0], "offset": 0.5, "clip": False, "step": 8.0},
        {
            "width": [6.0, 10.0, 3.0],
            "height": [9.0, 2.0, 30.0],
            "offset": 0.25,
            "step_widths": 4.0,
            "step_heights": 6.0,
            "variance": [0.1, 0.1, 0.2, 0.3],
        },
    ],
)
def test_prior_box_clustered(attrs: dict[str, Any], tmp_path: Path) -> None:
    out = opset1.prior_box_clustered(
        ops.constant(np.array([3, 5], np.int64)), ops.constant(np.array([24, 30], np.int64)), attrs
    )
    _with_dummy([out], tmp_path)


def test_prior_box_output_sizes_disagreeing_with_the_boxes_are_refused(tmp_path: Path) -> None:
    # OpenVINO sizes this output for 8 priors a cell while its formulas give 10.
    attrs = {
        "fixed_size": [8.0, 16.0],
        "fixed_ratio": [1.0, 2.0],
        "density": [2.0, 1.0],
        "offset": 0.5,
    }
    two = ops.constant(np.array([2, 2], np.int64))
    path = save_ir([opset8.prior_box(two, two, attrs)], [], tmp_path)
    with pytest.raises(tl.FormatError, match="priors"):
        tl.load(path)


def test_prior_box_needs_constant_shapes(tmp_path: Path) -> None:
    x = ops.parameter([2], np.int64, name="x0")
    out = opset8.prior_box(
        x, ops.constant(np.array([32, 40], np.int64)), {"min_size": [2.0], "offset": 0.5}
    )
    path = save_ir([out], [x], tmp_path)
    with pytest.raises(tl.FormatError, match="must be a constant"):
        tl.load(path)


# -- ReorgYolo / RegionYolo ----------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "stride"), [((1, 8, 4, 6), 2), ((2, 18, 6, 3), 3)])
def test_reorg_yolo(shape: tuple[int, ...], stride: int, tmp_path: Path) -> None:
    check(lambda x: opset2.reorg_yolo(x, [stride]), rand_f32(*shape), tmp_path=tmp_path)


@pytest.mark.parametrize(
    ("coords", "classes", "num", "softmax", "mask", "axis", "end_axis"),
    [
        (4, 3, 5, True, [], 1, 3),
        (4, 2, 2, True, [], 1, 2),
        (4, 5, 3, True, [], 2, 3),
        (4, 3, 9, False, [0, 1, 2], 1, 3),
        (4, 80 // 20, 9, False, [3, 4], 1, 3),
        (6, 2, 9, False, [1], 1, 3),
    ],
)
def test_region_yolo(
    coords: int,
    classes: int,
    num: int,
    softmax: bool,
    mask: list[int],
    axis: int,
    end_axis: int,
    tmp_path: Path,
) -> None:
    regions = num if softmax else len(mask)
    x = rand_f32(2, regions * (coords + 1 + classes), 3, 4) * 3
    check(
        lambda p: opset1.region_yolo(
            p, coords, classes, num, softmax, mask, axis, end_axis, [1.0, 2.0] * num
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-5,
    )


# -- ROIAlign / ROIPooling -----------------------------------------------------------------------

ROIS = np.array(
    [
        [0.5, 1.0, 6.0, 7.5],
        [2.0, 0.0, 3.0, 1.0],  # smaller than a pixel
        [-3.0, -2.0, 9.5, 12.0],  # reaching outside the map
        [4.25, 3.5, 4.25, 6.0],  # zero width
        [1.0, 2.0, 15.0, 9.0],
    ],
    np.float32,
)
BATCH = np.array([0, 1, 1, 0, 1], np.int32)


@pytest.mark.parametrize(
    ("version", "aligned"),
    [("v3", None), ("v9", "asymmetric"), ("v9", "half_pixel_for_nn"), ("v9", "half_pixel")],
)
@pytest.mark.parametrize(("pooled", "ratio", "scale"), [((2, 3), 2, 1.0), ((3, 2), 0, 0.5)])
def test_roi_align(
    version: str,
    aligned: str | None,
    pooled: tuple[int, int],
    ratio: int,
    scale: float,
    tmp_path: Path,
) -> None:
    def build(x: Any, rois: Any, batch: Any) -> Any:
        if version == "v3":
            return opset3.roi_align(x, rois, batch, *pooled, ratio, scale, "avg")
        return opset9.roi_align(x, rois, batch, *pooled, ratio, scale, "avg", aligned)

    # The zero-width RoI gets no samples with an adaptive ratio: OpenVINO's NaN where not clamped.
    got = check(build, rand_f32(2, 3, 8, 10), ROIS, BATCH, tmp_path=tmp_path, rtol=1e-5, atol=1e-5)
    nan = np.isnan(next(iter(got.values())))
    assert nan.any() == (ratio == 0 and aligned not in (None, "asymmetric"))


@pytest.mark.parametrize("version", ["v3", "v9"])
def test_roi_align_max_mode_is_refused(version: str, tmp_path: Path) -> None:
    x, rois, batch = (
        ops.parameter([1, 2, 4, 4], np.float32, name="x0"),
        ops.constant(ROIS[:1]),
        ops.constant(np.array([0], np.int32)),
    )
    module = opset3 if version == "v3" else opset9
    path = save_ir([module.roi_align(x, rois, batch, 2, 2, 2, 1.0, "max")], [x], tmp_path)
    with pytest.raises(tl.FormatError, match="max mode"):
        tl.load(path)


def test_roi_pooling_bilinear_is_refused(tmp_path: Path) -> None:
    x = ops.parameter([1, 2, 4, 4], np.float32, name="x0")
    rois = ops.constant(np.array([[0, 0.1, 0.2, 0.7, 0.9]], np.float32))
    out = opset2.roi_pooling(x, rois, output_roi=[2, 2], spatial_scale=1.0, method="bilinear")
    path = save_ir([out], [x], tmp_path)
    with pytest.raises(tl.FormatError, match="bilinear"):
        tl.load(path)


@pytest.mark.parametrize(("pooled", "scale"), [((2, 2), 1.0), ((3, 4), 0.5), ((1, 1), 0.25)])
def test_roi_pooling_max(pooled: tuple[int, int], scale: float, tmp_path: Path) -> None:
    rois = np.concatenate([BATCH[:, None].astype(np.float32), ROIS * 1.5], axis=1)
    check(
        lambda x, r: opset2.roi_pooling(x, r, output_roi=list(pooled), spatial_scale=scale),
        rand_f32(2, 3, 8, 10),
        rois,
        tmp_path=tmp_path,
    )
