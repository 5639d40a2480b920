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
from openvino_layer_checks import (  # noqa: E402
    check,
    compile_cpu,
    const,
    rand_f32,
    run_path,
    save_ir,
    written_runs_alike,
)

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


def _spatial_dims(x: Any) -> Any:
    """ShapeOf(x)[2:4]: a feature map's height and width, known only at run time."""
    return ops.strided_slice(
        ops.shape_of(x), const([2]), const([4]), const([1]), begin_mask=[0], end_mask=[0]
    )


@pytest.mark.parametrize("layer", ["v1", "v8", "clustered"])
@pytest.mark.parametrize("case", [0, 1, 3])
def test_prior_box_of_a_feature_map_known_at_run_time(
    layer: str, case: int, tmp_path: Path
) -> None:
    """ShapeOf(feature map) -> StridedSlice -> PriorBox (the image's size computed likewise, or
    constant): the output's length follows the feature map's size, run by run."""
    fmap = ops.parameter([1, 2, -1, -1], np.float32, name="x0")
    image = ops.parameter([1, 3, -1, -1], np.float32, name="x1")
    sizes = _spatial_dims(fmap)
    image_size = _spatial_dims(image) if case != 3 else ops.constant(np.array([32, 40]))
    if layer == "clustered":
        attrs: dict[str, Any] = {"width": [2.0, 4.5], "height": [3.0, 1.5], "offset": 0.5}
        attrs |= {"step": 8.0} if case == 1 else {}
        out = opset1.prior_box_clustered(sizes, image_size, attrs)
    else:
        attrs = dict(PRIOR_BOX_CASES[case])
        build = opset1.prior_box if layer == "v1" else opset8.prior_box
        out = build(sizes, image_size, attrs)
    path = save_ir([out], [fmap, image], tmp_path)
    model = tl.load(path)
    assert any(n.op.startswith("PriorBox") for n in model.graph.nodes)
    for height, width in [(3, 4), (5, 2), (1, 7)]:
        feeds = {
            "x0": np.zeros((1, 2, height, width), np.float32),
            "x1": np.zeros((1, 3, 30, 44), np.float32),
        }
        got = next(iter(run_path(path, feeds).values()))
        assert got.shape[0] == 2 and got.shape[1] % (4 * height * width) == 0


@pytest.mark.parametrize("case", [1, 2])
def test_prior_box_caffe_order_at_run_time(case: int, tmp_path: Path) -> None:
    """PriorBox-8 with min_max_aspect_ratios_order=false over sizes known only at run time: the
    CPU plugin fails to compile it (docs/openvino.md), so the oracle is the plugin's run of the
    same layer over constant sizes; written back, the order is a Gather the plugin runs."""
    attrs = {**PRIOR_BOX_CASES[case], "min_max_aspect_ratios_order": False}
    sizes = ops.parameter([2], np.int64, name="x0")
    image = ops.constant(np.array([32, 40]))
    path = save_ir([opset8.prior_box(sizes, image, attrs)], [sizes], tmp_path)
    with pytest.raises(RuntimeError, match="PriorBox"):
        compile_cpu(path)
    model = tl.load(path)
    for shape in ([3, 4], [2, 7]):
        folded = opset8.prior_box(ops.constant(np.array(shape)), image, attrs)
        compiled = ov.Core().compile_model(ov.Model([ops.result(folded)], [], "m"), "CPU")
        want = next(iter(compiled({}).values()))
        got = next(iter(model.run({"x0": np.array(shape)}).values()))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        written = tmp_path / f"written_{shape[0]}"
        written.mkdir()
        written_runs_alike(model, {"x0": np.array(shape)}, written)


def test_prior_box_sizes_given_as_inputs(tmp_path: Path) -> None:
    """output_size and image_size straight from the model's inputs."""
    sizes = ops.parameter([2], np.int64, name="x0")
    image = ops.parameter([2], np.int64, name="x1")
    out = opset8.prior_box(sizes, image, dict(PRIOR_BOX_CASES[1]))
    path = save_ir([out], [sizes, image], tmp_path)
    for shape in ([3, 4], [6, 1]):
        run_path(path, {"x0": np.array(shape), "x1": np.array([32, 40])})


def test_prior_box_output_is_predicted_before_it_is_made(tmp_path: Path) -> None:
    """The output's size comes from the run-time output_size: a huge one is refused by the
    tensor size limit before anything is allocated."""
    sizes = ops.parameter([2], np.int64, name="x0")
    out = opset8.prior_box(sizes, ops.constant(np.array([32, 40])), dict(PRIOR_BOX_CASES[0]))
    path = save_ir([out], [sizes], tmp_path)
    model = tl.load(path, limits=tl.Limits(max_tensor_bytes=1 << 20))
    assert next(iter(model.run({"x0": np.array([8, 8])}).values())).shape == (2, 8 * 8 * 3 * 4)
    with pytest.raises(tl.ResourceLimitError, match="PriorBox"):
        model.run({"x0": np.array([10_000, 10_000])})
    with pytest.raises(tl.ExecutionError, match="output_size must be 2 positive integers"):
        model.run({"x0": np.array([0, 4])})


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


@pytest.mark.parametrize(
    ("version", "aligned"),
    [("v3", None), ("v9", "asymmetric"), ("v9", "half_pixel_for_nn"), ("v9", "half_pixel")],
)
@pytest.mark.parametrize(
    ("pooled", "ratio", "scale", "size"),
    [((2, 3), 2, 1.0, (8, 10)), ((3, 2), 0, 0.5, (8, 10)), ((1, 1), 1, 0.75, (5, 13))],
)
def test_roi_align_max(
    version: str,
    aligned: str | None,
    pooled: tuple[int, int],
    ratio: int,
    scale: float,
    size: tuple[int, int],
    tmp_path: Path,
) -> None:
    """The largest of 0 and the bilinear samples of each bin (not ONNX's largest weighted
    corner; an empty bin, all-negative samples or samples off the map give 0)."""

    def build(x: Any, rois: Any, batch: Any) -> Any:
        if version == "v3":
            return opset3.roi_align(x, rois, batch, *pooled, ratio, scale, "max")
        return opset9.roi_align(x, rois, batch, *pooled, ratio, scale, "max", aligned)

    x = rand_f32(2, 3, *size)
    x[1, 1] = -np.abs(x[1, 1]) - 0.5  # every sample of this channel is negative
    got = check(build, x, ROIS, BATCH, tmp_path=tmp_path, rtol=1e-5, atol=1e-5)
    out = next(iter(got.values()))
    assert (out >= 0).all() and (out[BATCH == 1, 1] == 0).all()
    assert (out > 0).any()
    model = tl.load(tmp_path / "m.xml")
    (node,) = [n for n in model.graph.nodes if n.op == "RoiAlign"]
    assert node.attrs["max_of"] == "samples"


def test_roi_align_max_of_samples_is_not_onnx_max(tmp_path: Path) -> None:
    """One RoI one bin one sample at (0.5, 0.5) of [[0, 4], [8, 12]]: OpenVINO's max is the
    bilinear sample 6, ONNX's the largest weighted corner 12 / 4 = 3; ONNX refuses the first."""
    x = np.array([[[[0, 4], [8, 12]]]], np.float32)
    rois = np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    got = check(
        lambda x, r, b: opset9.roi_align(x, r, b, 1, 1, 1, 1.0, "max", "asymmetric"),
        x,
        rois,
        np.zeros(1, np.int32),
        tmp_path=tmp_path,
    )
    assert next(iter(got.values())).item() == 6.0
    model = tl.load(tmp_path / "m.xml")
    with pytest.raises(tl.FormatError, match="'max_of' = 'samples' does not exist in RoiAlign"):
        tl.save(model, tmp_path / "m.onnx")
    (node,) = [n for n in model.graph.nodes if n.op == "RoiAlign"]
    node.attrs["max_of"] = "corners"
    feeds = {"x0": x, "x1": rois, "x2": np.zeros(1, np.int32)}
    assert next(iter(model.run(feeds).values())).item() == 3.0


# (batch, x1, y1, x2, y2) in units of the image size: inside, partly off each side, a point, the
# whole image, one off it altogether, reversed.
UNIT_ROIS = np.array(
    [
        [0, 0.1, 0.2, 0.7, 0.9],
        [1, -0.2, 0.3, 0.6, 1.2],
        [1, 0.5, -0.4, 1.3, 0.5],
        [0, 0.4, 0.4, 0.4, 0.4],
        [1, 0.0, 0.0, 1.0, 1.0],
        [0, 1.5, 1.2, 2.0, 1.9],
        [1, 0.8, 0.9, 0.2, 0.1],
    ],
    np.float32,
)


@pytest.mark.parametrize(
    ("pooled", "size"), [((2, 2), (8, 10)), ((3, 4), (7, 5)), ((1, 1), (6, 6)), ((1, 3), (1, 9))]
)
def test_roi_pooling_bilinear(
    pooled: tuple[int, int], size: tuple[int, int], tmp_path: Path
) -> None:
    """One bilinear sample a bin, spread from the RoI's start to its end (its centre for one
    bin); spatial_scale plays no part; samples off the image read 0."""
    got = check(
        lambda x, r: opset2.roi_pooling(
            x, r, output_roi=list(pooled), spatial_scale=0.3, method="bilinear"
        ),
        rand_f32(2, 3, *size),
        UNIT_ROIS,
        tmp_path=tmp_path,
    )
    out = next(iter(got.values()))
    assert (out[5] == 0).all()  # off the image


def test_roi_pooling_bilinear_samples_at_the_ends(tmp_path: Path) -> None:
    """On a ramp x = 10·row + col, each sample reads its own position: the bins of the RoI
    (0.25, 0, 1, 0.5) of a 5 x 9 map sit at rows 0, 1, 2 and columns 2, 5, 8 (its ends)."""
    x = (10 * np.arange(5)[:, None] + np.arange(9)).astype(np.float32).reshape(1, 1, 5, 9)
    rois = np.array([[0, 0.25, 0.0, 1.0, 0.5], [-1, 0, 0, 1, 1], [0, 0, 0, 1, 1]], np.float32)
    got = check(
        lambda x, r: opset2.roi_pooling(
            x, r, output_roi=[3, 3], spatial_scale=1.0, method="bilinear"
        ),
        x,
        rois,
        tmp_path=tmp_path,
    )
    out = next(iter(got.values()))
    np.testing.assert_array_equal(out[0, 0], [[2, 5, 8], [12, 15, 18], [22, 25, 28]])
    assert (out[1:] == 0).all()  # batch -1 ends the list


@pytest.mark.parametrize(("pooled", "scale"), [((2, 2), 1.0), ((3, 4), 0.5), ((1, 1), 0.25)])
def test_roi_pooling_max(pooled: tuple[int, int], scale: float, tmp_path: Path) -> None:
    rois = np.concatenate([BATCH[:, None].astype(np.float32), ROIS * 1.5], axis=1)
    check(
        lambda x, r: opset2.roi_pooling(x, r, output_roi=list(pooled), spatial_scale=scale),
        rand_f32(2, 3, 8, 10),
        rois,
        tmp_path=tmp_path,
    )
