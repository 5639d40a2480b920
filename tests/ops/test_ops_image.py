"""The image ops agree with onnxruntime on one-node models: Resize, GridSample, RoiAlign, NMS..."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from test_ops_indexing import RNG, T, ints, randn
from test_ops_indexing import same_as_onnxruntime as same

import tensorloop as tl
from onnx_oracle import infer, one_node, ort_run, run_core, tensorloop_run
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.ir.graph import Graph
from tensorloop.tensor.types import tensor_type_of


def floats(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


# --- Resize --------------------------------------------------------------------------------------

IMAGE = randn(2, 3, 6, 7)
SCALES = [(2.0, 3.0), (0.5, 0.6), (1.5, 0.7), (0.34, 2.5), (1.3, 1.7)]
# align_corners and tf_crop_and_resize are left out here: where in_len * scale is fractional the
# ONNX node tests (which tensorloop follows) and onnxruntime disagree; see the test further down.
TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "asymmetric"]


@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize(
    "extra",
    [
        {"mode": "nearest"},
        {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
        {"mode": "nearest", "nearest_mode": "floor"},
        {"mode": "nearest", "nearest_mode": "ceil"},
        {"mode": "linear"},
        {"mode": "linear", "antialias": 1},
        {"mode": "cubic"},
        {"mode": "cubic", "antialias": 1, "cubic_coeff_a": -0.5},
        {"mode": "cubic", "exclude_outside": 1},
    ],
)
def test_resize_by_scales_matches_onnxruntime(
    scales: tuple[float, float], transform: str, extra: dict[str, Any]
) -> None:
    attrs = {"coordinate_transformation_mode": transform, **extra}
    same("Resize", [IMAGE, None, floats(1, 1, *scales)], attrs, opset=19, consts=(2,))


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("sizes", [(4, 5), (13, 7), (20, 30)])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("axes", [(2, 3), (3, 2)])
def test_resize_by_sizes_matches_onnxruntime(
    policy: str, sizes: tuple[int, int], mode: str, axes: tuple[int, int]
) -> None:
    attrs: dict[str, Any] = {"mode": mode, "keep_aspect_ratio_policy": policy, "axes": list(axes)}
    target = ints(*sizes) if axes == (2, 3) else ints(*sizes[::-1])
    x = randn(2, 3, 9, 11)
    got = same("Resize", [x, None, None, target], attrs, opset=19, consts=(3,))[0]
    shapes = infer("Resize", [T("f32", x.shape), None, None, ("c", target)], **attrs)
    assert shapes == [f"f32[{','.join(map(str, got.shape))}]"]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_matches_onnxruntime(mode: str) -> None:
    roi = floats(0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4)
    attrs = {
        "mode": mode,
        "coordinate_transformation_mode": "tf_crop_and_resize",
        "extrapolation_value": 7.5,
    }
    for sizes in (ints(2, 3, 7, 8), ints(2, 3, 1, 1)):
        got = same("Resize", [IMAGE, roi, None, sizes], attrs, opset=19, consts=(1, 3))[0]
        assert np.any(got == 7.5) == (sizes[2] > 1)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_align_corners_matches_onnxruntime_when_scales_divide(mode: str) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": "align_corners"}
    same("Resize", [IMAGE, None, floats(1, 1, 0.5, 3.0)], attrs, opset=19, consts=(2,))
    same("Resize", [IMAGE, None, None, ints(2, 3, 1, 20)], attrs, opset=19, consts=(3,))


def test_resize_align_corners_with_a_fractional_length_follows_the_node_tests() -> None:
    # 4 cells scaled by 0.6 give 2 cells; like ONNX's node tests (test_resize_downsample_scales_
    # linear_align_corners), the output length in the formula is 2.4, so cell 1 reads 3/1.4.
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    (got,) = run_core("Resize", [x, None, ("c", floats(1, 1, 0.6, 0.6))], **attrs)
    np.testing.assert_allclose(got.reshape(-1), [1, 1 + 3 / 1.4], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_integers_match_onnxruntime(dtype: Any, mode: str) -> None:
    # Results truncate toward zero; where the exact value is an integer, f32 rounding noise can
    # land onnxruntime one below or above it, so linear may differ by one there.
    x = RNG.integers(0, 120, size=(1, 2, 5, 6)).astype(dtype)
    model = one_node(
        "Resize", [x, None, floats(1, 1, 0.5, 0.7)], {"mode": mode}, opset=19, consts=(2,)
    )
    (got,), (want,) = tensorloop_run(model, [x]), ort_run(model, [x])
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.abs(got.astype(int) - want).max() <= (mode == "linear")


def test_resize_other_ranks_and_types() -> None:
    for shape, scales in (((4, 5, 6), (1, 2, 0.5)), ((1, 2, 3, 4, 5), (1, 1, 2, 1.5, 0.6))):
        same("Resize", [randn(*shape), None, floats(*scales)], {"mode": "nearest"}, consts=(2,))
    x = randn(1, 1, 4, 4).astype(np.float16)
    (got,) = run_core("Resize", [x, None, ("c", floats(1, 1, 2, 2))], mode="linear")
    (want,) = run_core(
        "Resize", [x.astype(np.float32), None, ("c", floats(1, 1, 2, 2))], mode="linear"
    )
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    flags = np.array([[[[True, False], [False, True]]]])
    (grown,) = run_core("Resize", [flags, None, ("c", floats(1, 1, 2, 1))])
    assert grown.tolist() == [[[[True, False], [True, False], [False, True], [False, True]]]]


def test_resize_types_and_errors() -> None:
    x = T("f32", ["N", 3, 6, 7])
    assert infer("Resize", [x, None, ("c", floats(1, 1, 0.5, 1.5))]) == ["f32[N,3,3,10]"]
    assert infer("Resize", [x, None, None, ("c", ints(9, 8))], axes=(2, 3)) == ["f32[N,3,9,8]"]
    assert infer("Resize", [x, None, T("f32", [4])]) == ["f32[?,?,?,?]"]
    assert infer("Resize", [x, None, None, T("i64", [2])], axes=(-1, 1)) == ["f32[N,?,6,?]"]
    # opset 11 style: an empty scales tensor beside sizes
    assert infer("Resize", [x, ("c", floats()), ("c", floats()), ("c", ints(1, 3, 2, 2))]) == [
        "f32[1,3,2,2]"
    ]
    with pytest.raises(GraphError, match="give only one of scales and sizes"):
        infer("Resize", [x, None, ("c", floats(1, 1, 2, 2)), ("c", ints(1, 3, 2, 2))])
    with pytest.raises(GraphError, match="mode must be one of"):
        infer("Resize", [x, None, ("c", floats(1, 1, 2, 2))], mode="bilinear")
    with pytest.raises(GraphError, match="one value per axis"):
        infer("Resize", [x, None, ("c", floats(2, 2))])
    with pytest.raises(GraphError, match="give one of scales and sizes"):
        run_core("Resize", [randn(2, 2), None, floats(), ints()])


@pytest.mark.parametrize(
    "scales", [(1, 1, 2, 3), (1, 1, 0.5, 0.6), (1, 1, 1.5, 0.7), (1, 1, 0.3, 3.7)]
)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("const", [True, False])
def test_resize_of_opset_10_matches_onnxruntime(
    scales: tuple[float, ...], mode: str, const: bool
) -> None:
    # Nearest rounds down where an axis grows and up where it shrinks, as onnxruntime does.
    same("Resize", [IMAGE, floats(*scales)], {"mode": mode}, opset=10, consts=(1,) if const else ())


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_matches_onnxruntime(mode: str) -> None:
    same("Upsample", [IMAGE, floats(1, 1, 2, 1.5)], {"mode": mode}, opset=9, consts=(1,))
    same("Upsample", [IMAGE], {"mode": mode, "scales": [1.0, 1.0, 1.5, 3.0]}, opset=7)


def test_resize_of_opset_11_reads_empty_scales_and_tf_half_pixel_for_nn() -> None:
    attrs = {"coordinate_transformation_mode": "tf_half_pixel_for_nn"}
    inputs = [IMAGE, floats(), floats(), ints(2, 3, 9, 5)]
    same("Resize", inputs, attrs, opset=11, consts=(1, 2, 3))


# --- GridSample and AffineGrid -------------------------------------------------------------------


def _grid(*shape: int) -> np.ndarray:
    grid = RNG.uniform(-1.6, 1.6, size=shape).astype(np.float32)
    grid.reshape(-1)[:6] = [-1, 1, 0, -1, 1, 0.2]  # the corners, and ties for nearest
    return grid


@pytest.mark.parametrize(
    ("mode", "padding", "align"),
    list(
        itertools.product(["nearest", "linear", "cubic"], ["zeros", "border", "reflection"], [0, 1])
    ),
)
def test_grid_sample_matches_onnxruntime(mode: str, padding: str, align: int) -> None:
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    same("GridSample", [randn(2, 3, 5, 6), _grid(2, 4, 7, 2)], attrs)
    if mode != "cubic":
        same("GridSample", [randn(2, 2, 4, 5, 3), _grid(2, 3, 2, 4, 3)], attrs)


@pytest.mark.parametrize(("mode", "core"), [("bilinear", "linear"), ("bicubic", "cubic")])
def test_grid_sample_of_opset_16_names_modes_as_before(mode: str, core: str) -> None:
    x, grid = randn(1, 2, 5, 6), _grid(1, 3, 4, 2)
    model = one_node("GridSample", [x, grid], {"mode": mode}, opset=16)
    got, want = tensorloop_run(model, [x, grid])[0], ort_run(model, [x, grid])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
    np.testing.assert_array_equal(got, run_core("GridSample", [x, grid], mode=core)[0])


# A single pixel with align_corners=1 sits at -1 here and in ONNX's reference; onnxruntime
# puts it at +1, PyTorch at 0, and ONNX's function body divides by zero.
@pytest.mark.parametrize(
    ("size", "align"),
    [
        ((2, 3, 4, 5), 0),
        ((2, 3, 4, 5), 1),
        ((1, 2, 3, 4, 2), 0),
        ((1, 2, 3, 4, 2), 1),
        ((2, 1, 1, 6), 0),
    ],
)
def test_affine_grid_matches_onnxruntime(size: tuple[int, ...], align: int) -> None:
    r = len(size) - 2
    got = same(
        "AffineGrid",
        [randn(size[0], r, r + 1), ints(*size)],
        {"align_corners": align},
        opset=20,
        consts=(1,),
    )
    assert infer("AffineGrid", [T("f32", [size[0], r, r + 1]), ("c", ints(*size))]) == [
        f"f32[{','.join(map(str, got[0].shape))}]"
    ]


@pytest.mark.parametrize("align", [0, 1])
def test_identity_affine_grid_samples_the_image_back(align: int) -> None:
    x = randn(2, 3, 5, 7)
    theta = np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1))
    (grid,) = run_core("AffineGrid", [theta, ints(*x.shape)], align_corners=align)
    (back,) = run_core("GridSample", [x, grid], align_corners=align)
    np.testing.assert_allclose(back, x, rtol=1e-5, atol=1e-5)


# --- Col2Im --------------------------------------------------------------------------------------


def _block_counts(
    image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]
) -> list[int]:
    r = len(image)
    strides, dil = attrs.get("strides", [1] * r), attrs.get("dilations", [1] * r)
    pads = attrs.get("pads", [0] * 2 * r)
    return [
        (image[d] + pads[d] + pads[d + r] - dil[d] * (block[d] - 1) - 1) // strides[d] + 1
        for d in range(r)
    ]


def _coverage(image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]) -> np.ndarray:
    """How many (block position, kernel offset) pairs land on each pixel, counted by loops."""
    r = len(image)
    strides, dil = attrs.get("strides", [1] * r), attrs.get("dilations", [1] * r)
    pads = attrs.get("pads", [0] * 2 * r)
    cover = np.zeros(image)
    for start in np.ndindex(*_block_counts(image, block, attrs)):
        for offset in np.ndindex(*block):
            pos = tuple(start[d] * strides[d] - pads[d] + offset[d] * dil[d] for d in range(r))
            if all(0 <= p < image[d] for d, p in enumerate(pos)):
                cover[pos] += 1
    return cover


@pytest.mark.parametrize(
    ("image", "block", "attrs"),
    [
        ((5, 5), (2, 2), {}),
        ((6, 7), (3, 2), {"strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]}),
        ((5,), (2,), {"strides": [2], "pads": [0, 1]}),
        ((4, 3, 5), (2, 1, 3), {"dilations": [1, 1, 2]}),
    ],
)
def test_col2im_matches_onnxruntime_and_folds_ones_into_coverage(
    image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    k, blocks = int(np.prod(block)), int(np.prod(_block_counts(image, block, attrs)))
    x = randn(2, 3 * k, blocks)
    if len(image) == 2:
        same("Col2Im", [x, ints(*image), ints(*block)], attrs, opset=18, consts=(1, 2))
    (got,) = run_core("Col2Im", [x, ("c", ints(*image)), ("c", ints(*block))], **attrs)
    assert got.shape == (2, 3, *image)
    ones = np.ones((1, k, blocks), np.float32)
    (cover,) = run_core("Col2Im", [ones, ints(*image), ints(*block)], **attrs)
    np.testing.assert_array_equal(cover[0, 0], _coverage(image, block, attrs))


def test_col2im_errors() -> None:
    with pytest.raises(ExecutionError, match="must hold 16 blocks"):
        run_core("Col2Im", [randn(1, 4, 15), ints(5, 5), ints(2, 2)])
    assert infer("Col2Im", [T("f32", ["N", 12, 16]), ("c", ints(5, 5)), ("c", ints(2, 2))]) == [
        "f32[N,3,5,5]"
    ]


# --- Detection: NonMaxSuppression, RoiAlign, MaxRoiPool ------------------------------------------


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize(
    ("limit", "iou", "score"), [(3, 0.5, None), (10, 0.3, 0.4), (0, 0.5, None), (2, 0.0, 0.0)]
)
def test_nms_matches_onnxruntime(center: int, limit: int, iou: float, score: float | None) -> None:
    corners = RNG.uniform(0, 10, size=(2, 12, 4)).astype(np.float32)
    scores = RNG.uniform(0, 1, size=(2, 3, 12)).astype(np.float32)
    scores[0, 0, :3] = 0.5  # equal scores: the lower box index goes first
    inputs = [corners, scores, ints(limit), floats(iou), None if score is None else floats(score)]
    got = same("NonMaxSuppression", inputs, {"center_point_box": center}, opset=11)[0]
    assert got.shape[1] == 3 and (limit or got.shape[0] == 0)
    assert infer("NonMaxSuppression", [T("f32", [2, 12, 4]), T("f32", [2, 3, 12])]) == [
        "i64[?,3]",
        "f64[?,3]",
        "i64[1]",
    ]


def _iou_pair(a: np.ndarray, b: np.ndarray) -> float:
    (low_a, high_a), (low_b, high_b) = np.sort(a.reshape(2, 2), 0), np.sort(b.reshape(2, 2), 0)
    inter = np.prod(np.clip(np.minimum(high_a, high_b) - np.maximum(low_a, low_b), 0, None))
    union = np.prod(high_a - low_a) + np.prod(high_b - low_b) - inter
    return float(inter / union) if inter > 0 else 0.0


def _soft_nms_spec(
    boxes: np.ndarray,
    score: np.ndarray,
    limit: int,
    iou: float,
    floor: float,
    sigma: float,
    cut: int,
) -> list[tuple[int, float]]:
    """OpenVINO's specification of Soft-NMS, eagerly: take the best live box, keep it if it
    scores above the floor, decay every live box by its IoU with it; f64 throughout."""
    live = {i: float(v) for i, v in enumerate(score)}
    kept: list[tuple[int, float]] = []
    while live and len(kept) < limit:
        best = min(live, key=lambda i: (-live[i], i))
        value = live.pop(best)
        if value <= floor:
            break
        kept.append((best, value))
        for i in live:
            overlap = _iou_pair(boxes[best], boxes[i])
            live[i] *= 0.0 if cut and overlap > iou else np.exp(-0.5 * overlap**2 / sigma)
    return kept


@pytest.mark.parametrize("cut", [0, 1])
@pytest.mark.parametrize(
    ("sigma", "floor", "iou"), [(0.5, 0.0, 0.5), (0.2, 0.3, 0.3), (2.0, 0.6, 1)]
)
def test_soft_nms_follows_the_eager_algorithm(
    sigma: float, floor: float, iou: float, cut: int
) -> None:
    """The kernel decays lazily (a box only when it comes up); the specification eagerly."""
    boxes = RNG.uniform(0, 10, size=(2, 14, 4))
    scores = RNG.uniform(0, 1, size=(2, 2, 14))
    inputs = [boxes, scores, ints(8), floats(iou), floats(floor), floats(sigma)]
    attrs = {"soft_nms_iou_cutoff": cut}
    selected, picked, count = run_core("NonMaxSuppression", inputs, attrs)
    want = [
        (b, c, i, v)
        for b, c in itertools.product(range(2), range(2))
        for i, v in _soft_nms_spec(boxes[b], scores[b, c], 8, iou, floor, sigma, cut)
    ]
    assert selected.tolist() == [list(w[:3]) for w in want]
    np.testing.assert_allclose(picked, [(b, c, v) for b, c, _, v in want], rtol=1e-7)
    assert count.tolist() == [len(want)] and picked.dtype == np.float64


def test_nms_sorted_by_score_in_f32() -> None:
    """sort_by_score: rows by descending score, then batch, class and box; precision f32 gives
    f32 scores. An IoU equal to the threshold keeps the box."""
    boxes = np.array([[[0, 0, 1, 2], [0, 0, 1, 1], [5, 5, 6, 6]]] * 2, np.float32)
    scores = np.array([[[0.5, 0.9, 0.7]], [[0.9, 0.1, 0.7]]], np.float32)
    attrs = {"sort_by_score": 1, "precision": "f32"}
    selected, picked, count = run_core(
        "NonMaxSuppression", [boxes, scores, ints(5), floats(0.5)], attrs
    )
    assert selected.tolist() == [[0, 0, 1], [1, 0, 0], [0, 0, 2], [1, 0, 2], [0, 0, 0], [1, 0, 1]]
    assert picked.dtype == np.float32
    np.testing.assert_array_equal(picked[:, 2], floats(0.9, 0.9, 0.7, 0.7, 0.5, 0.1))
    assert count.tolist() == [6]
    (plain, *_) = run_core("NonMaxSuppression", [boxes, scores, ints(5), floats(0.4)])
    assert plain.tolist() == [[0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 0, 2]]


@pytest.mark.parametrize(
    ("attrs", "extra", "error"),
    [
        ({}, [], None),
        ({"sort_by_score": 1}, [], "'sort_by_score' = 1 does not exist in NonMaxSuppression"),
        ({"precision": "f32"}, [], "'precision' = 'f32' does not exist in NonMaxSuppression"),
        ({}, [floats(0.5)], "Soft-NMS .* has no ONNX equivalent"),
    ],
)
def test_nms_written_as_onnx(
    attrs: dict[str, Any], extra: list[np.ndarray], error: str | None, tmp_path: Path
) -> None:
    """With the defaults the core op is ONNX's; the other attributes and Soft-NMS are refused."""
    boxes = RNG.uniform(0, 10, size=(2, 12, 4)).astype(np.float32)
    scores = RNG.uniform(0, 1, size=(2, 3, 12)).astype(np.float32)
    g = Graph()
    b, s = (g.add_input(f"x{i}", tensor_type_of(a)) for i, a in enumerate((boxes, scores)))
    consts = [ints(3), floats(0.4), floats(0.1), *extra]
    values = [g.add_node("Constant", [], {"value": c}).output for c in consts]
    node = g.add_node("NonMaxSuppression", [b, s, *values], attrs)
    g.set_outputs(node.outputs[:1])
    model, feeds = tl.Model(g), {"x0": boxes, "x1": scores}
    if error is not None:
        with pytest.raises(tl.FormatError, match=error):
            tl.save(model, tmp_path / "nms.onnx")
        return
    tl.save(model, tmp_path / "nms.onnx")
    want = next(iter(model.run(feeds).values()))
    (theirs,) = ort_run(onnx.load(str(tmp_path / "nms.onnx")), [boxes, scores])
    np.testing.assert_array_equal(theirs, want)


def test_nms_attributes_checked() -> None:
    with pytest.raises(GraphError, match="precision must be one of f64, f32"):
        infer("NonMaxSuppression", [T("f32", [1, 3, 4]), T("f32", [1, 1, 3])], precision="f16")
    with pytest.raises(GraphError, match="sort_by_score must be 0 or 1"):
        infer("NonMaxSuppression", [T("f32", [1, 3, 4]), T("f32", [1, 1, 3])], sort_by_score=2)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ratio", [0, 2])
@pytest.mark.parametrize("opset", [10, 16])
def test_roi_align_matches_onnxruntime(mode: str, ratio: int, opset: int) -> None:
    x = randn(2, 3, 10, 12)
    rois = floats(0, 0, 9, 9, 2.5, 1.2, 7.3, 8.8, -2, -1, 4, 3, 8, 6, 11.5, 13, 3, 3, 3, 3)
    rois = rois.reshape(5, 4)
    which = ints(0, 1, 1, 0, 1)
    attrs = {
        "mode": mode,
        "sampling_ratio": ratio,
        "output_height": 3,
        "output_width": 4,
        "spatial_scale": 0.8,
    }
    got = same("RoiAlign", [x, rois, which], attrs, opset=opset)[0]
    assert got.shape == (5, 3, 3, 4)


def test_roi_align_types_and_errors() -> None:
    assert infer(
        "RoiAlign", [T("f32", ["N", 3, 8, 8]), T("f32", ["R", 4]), T("i64", ["R"])], output_width=2
    ) == ["f32[R,3,1,2]"]
    with pytest.raises(ExecutionError, match="batch_indices \\[2\\] must lie in \\[0, 1\\)"):
        run_core("RoiAlign", [randn(1, 1, 4, 4), floats(0, 0, 2, 2).reshape(1, 4), ints(2)])
    with pytest.raises(GraphError, match="mode must be one of avg, max"):
        infer("RoiAlign", [T("f32", [1, 1, 4, 4]), T("f32", [1, 4]), T("i64", [1])], mode="min")


def test_max_roi_pool_matches_onnxruntime() -> None:
    x = randn(2, 3, 9, 10)
    rois = floats(
        0, 0, 0, 8, 8, 1, 2.4, 1.6, 7.5, 5, 1, -3, -2, 4, 3, 0, 5, 5, 5, 5, 0, 6, 4, 30, 30
    )
    got = same(
        "MaxRoiPool",
        [x, rois.reshape(5, 5)],
        {"pooled_shape": [2, 3], "spatial_scale": 0.9},
        opset=21,
    )[0]
    assert got.shape == (5, 3, 2, 3)
    assert infer(
        "MaxRoiPool", [T("f32", ["N", 3, 9, 9]), T("f32", ["R", 5])], pooled_shape=(2, 2)
    ) == ["f32[R,3,2,2]"]
