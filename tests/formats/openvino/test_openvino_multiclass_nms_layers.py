"""OpenVINO's MulticlassNms (v8, v9) read by tensorloop vs. the CPU plugin, written back as
MulticlassNms-9 (write_nms.py); where the plugin strays from the specification, the
specification's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset8, opset9, opset13  # noqa: E402
from openvino_layer_checks import check, compile_cpu, run_path, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(23)
OPSETS = {8: opset8, 9: opset9}


def _boxes(*lead: int, scale: float = 1.0) -> Array:
    """Well-formed boxes (x1 <= x2, y1 <= y2) on a unit field, or one ``scale`` wide."""
    low = RNG.uniform(0, 0.7, (*lead, 2))
    size = RNG.uniform(0.05, 0.5, (*lead, 2))
    return (np.concatenate([low, low + size], -1) * scale).astype(np.float32)


def _scores(*shape: int, ties: bool = True) -> Array:
    """Distinct scores, but (``ties``) for exact ties within a class and across classes."""
    scores = RNG.permutation(np.arange(1, np.prod(shape) + 1)).reshape(shape) / np.prod(shape)
    flat = scores.reshape(-1)
    if ties:
        flat[1:3] = flat[0]
        flat[-1] = flat[0]
    return scores.astype(np.float32)


def _nms(version: int, **attrs: Any) -> Any:
    return lambda *xs: OPSETS[version].multiclass_nms(*xs, **attrs).outputs()


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("sort", ["none", "classid", "score"])
@pytest.mark.parametrize("across", [False, True])
def test_sorting_modes(version: int, sort: str, across: bool, tmp_path: Path) -> None:
    boxes, scores = _boxes(3, 10), _scores(3, 4, 10)
    attrs = {"sort_result_type": sort, "sort_result_across_batch": across, "iou_threshold": 0.3}
    out = check(_nms(version, **attrs), boxes, scores, tmp_path=tmp_path)
    assert sum(len(v) for v in out.values()) > 0


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize(
    "attrs",
    [
        {"iou_threshold": 0.5, "score_threshold": 0.4},
        {"iou_threshold": 0.2, "nms_top_k": 3},
        {"iou_threshold": 0.4, "keep_top_k": 5, "sort_result_type": "classid"},
        {"iou_threshold": 0.4, "keep_top_k": -1, "nms_top_k": -1, "background_class": 0},
        {"iou_threshold": 0.4, "background_class": 2, "sort_result_type": "score"},
        {"iou_threshold": 0.4, "background_class": 7},  # no such class: none skipped
        {"iou_threshold": 0.6, "keep_top_k": 0},
        {"score_threshold": 2.0},  # nothing selected
        {"iou_threshold": 0.3, "output_type": "i32", "sort_result_across_batch": True},
    ],
)
def test_attributes(version: int, attrs: dict[str, Any], tmp_path: Path) -> None:
    boxes, scores = _boxes(2, 12), _scores(2, 3, 12)
    check(_nms(version, **attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 2, 6), (4, 3, 5), (2, 6, 20)])
def test_shapes(shape: tuple[int, int, int], tmp_path: Path) -> None:
    batches, classes, count = shape
    boxes, scores = _boxes(batches, count), _scores(batches, classes, count)
    attrs = {"iou_threshold": 0.35, "sort_result_type": "score"}
    check(_nms(9, **attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("version", [8, 9])
def test_f16(version: int, tmp_path: Path) -> None:
    """f16 boxes give f16 rows."""
    boxes, scores = _boxes(2, 8).astype(np.float16), _scores(2, 3, 8).astype(np.float16)
    attrs = {"iou_threshold": 0.3, "keep_top_k": 7}
    check(_nms(version, **attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("version", [8, 9])
def test_no_candidates(version: int, tmp_path: Path) -> None:
    """nms_top_k 0 feeds no box to NMS: no rows, and a count of 0 for each image. (The CPU
    plugin leaves the counts uninitialised here, so it is not the judge.)"""
    boxes, scores = _boxes(2, 8), _scores(2, 3, 8)
    params = [
        opset9.parameter(x.shape, np.float32, name=f"x{i}") for i, x in enumerate((boxes, scores))
    ]
    path = save_ir(_nms(version, nms_top_k=0)(*params), params, tmp_path)
    model = tl.load(path)
    rows, indices, counts = model.run({"x0": boxes, "x1": scores}).values()
    assert rows.shape == (0, 6) and indices.shape == (0, 1)
    np.testing.assert_array_equal(counts, [0, 0])
    written = tmp_path / "w.xml"
    tl.save(model, written)
    again = tl.load(written).run({"x0": boxes, "x1": scores}).values()
    for got, want in zip(again, (rows, indices, counts), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layer", ["multiclass", "matrix", "rotated"])
def test_dynamic_boxes(layer: str, tmp_path: Path) -> None:
    """Boxes and scores of unknown batch and box counts (the plugin wants the box width)."""
    scores = _scores(2, 3, 9, ties=False)
    if layer == "rotated":
        boxes, build = _rotated_boxes(2, 9), _rotated(3, 0.3, 0.1)
    else:
        boxes = _boxes(2, 9)
        build = _nms(9, iou_threshold=0.4) if layer == "multiclass" else _matrix(post_threshold=0.2)
    shapes = [[-1, -1, boxes.shape[2]], [-1, 3, -1]]
    params = [opset9.parameter(shape, np.float32, name=f"x{i}") for i, shape in enumerate(shapes)]
    run_path(save_ir(build(*params), params, tmp_path), {"x0": boxes, "x1": scores})


@pytest.mark.parametrize("version", [8, 9])
def test_unnormalized_boxes(version: int, tmp_path: Path) -> None:
    """Sides one longer: IoUs of pixel boxes grow, and more are suppressed."""
    boxes, scores = np.round(_boxes(2, 10, scale=12)), _scores(2, 2, 10)
    attrs = {"iou_threshold": 0.3137, "normalized": False}  # no ratio of small integers
    check(_nms(version, **attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("sort", ["none", "classid", "score"])
@pytest.mark.parametrize("across", [False, True])
@pytest.mark.parametrize("counts", [[3, 5, 4], [12], [0, 7, 5], [4, 0, 0, 6]])
def test_roisnum_form(sort: str, across: bool, counts: list[int], tmp_path: Path) -> None:
    """v9's per-class boxes [C, N, 4] with scores [C, N] and the boxes per image."""
    boxes, scores = _boxes(3, 12), _scores(3, 12)
    rois = np.array(counts, np.int32)
    attrs = {
        "sort_result_type": sort,
        "sort_result_across_batch": across,
        "iou_threshold": 0.3,
        "keep_top_k": 6,
        "background_class": 1,
    }
    check(_nms(9, **attrs), boxes, scores, rois, tmp_path=tmp_path)


def test_roisnum_of_i64_with_i32_outputs(tmp_path: Path) -> None:
    boxes, scores = _boxes(2, 9), _scores(2, 9)
    rois = np.array([5, 4], np.int64)
    attrs = {"iou_threshold": 0.4, "output_type": "i32", "nms_top_k": 2}
    check(_nms(9, **attrs), boxes, scores, rois, tmp_path=tmp_path)


@pytest.mark.parametrize("eta", [1.0, 0.5])
def test_eta_without_adaptation(eta: float, tmp_path: Path) -> None:
    """nms_eta < 1 lowers only thresholds above 0.5: here nothing changes."""
    boxes, scores = _boxes(2, 15), _scores(2, 3, 15)
    check(_nms(9, iou_threshold=0.5, nms_eta=eta), boxes, scores, tmp_path=tmp_path)


# -- where the plugin strays from the specification ------------------------------------------------
def _both(build: Any, arrays: list[Array], tmp_path: Path) -> tuple[list[Array], list[Array]]:
    """tensorloop's outputs and the plugin's for the IR ``build`` makes of ``arrays``."""
    params = [opset9.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    path = save_ir(build(*params), params, tmp_path)
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    ours = list(tl.load(path).run(feeds).values())
    compiled = compile_cpu(path)
    got = compiled(feeds)
    return ours, [np.asarray(got[out]) for out in compiled.outputs]


# Corners on the unit square: A the square, B its band y 0.5..0.8 (IoU(A, B) 0.3), C its lower
# half (IoU(A, C) 0.5, IoU(B, C) 0), D apart from them all.
SQUARE = np.array([[0, 0, 1, 1], [0, 0.5, 1, 0.8], [0, 0, 1, 0.5], [2, 2, 3, 3]], np.float32)


@pytest.mark.parametrize("version", [8, 9])
def test_the_default_threshold_keeps_disjoint_boxes(version: int, tmp_path: Path) -> None:
    """iou_threshold 0: the spec drops boxes whose IoU is above 0, so D, apart, stays; the
    plugin drops IoU >= 0, keeping one box a class (docs/openvino.md)."""
    scores = np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32)
    ours, theirs = _both(_nms(version), [SQUARE[None], scores], tmp_path)
    np.testing.assert_array_equal(ours[1][:, 0], [0, 3])
    np.testing.assert_array_equal(ours[0][:, 1], scores[0, 0, [0, 3]])
    np.testing.assert_array_equal(theirs[1][:, 0], [0])


@pytest.mark.parametrize("version", [8, 9])
def test_an_iou_equal_to_the_threshold_keeps_the_box(version: int, tmp_path: Path) -> None:
    """IoU(A, C) is exactly 0.5: the spec keeps C at threshold 0.5, the plugin drops it."""
    scores = np.array([[[0.9, 0.1, 0.7, 0.1]]], np.float32)
    attrs = {"iou_threshold": 0.5, "score_threshold": 0.5}
    ours, theirs = _both(_nms(version, **attrs), [SQUARE[None], scores], tmp_path)
    np.testing.assert_array_equal(ours[1][:, 0], [0, 2])
    np.testing.assert_array_equal(ours[2], [2])
    np.testing.assert_array_equal(theirs[1][:, 0], [0])


def test_eta_lowers_the_threshold_after_each_kept_box(tmp_path: Path) -> None:
    """nms_eta 0.7 from 0.8: A is kept and the threshold falls to 0.56, B (IoU 0.3) is kept
    and it falls to 0.392. The spec drops a box by the threshold of the moment the box over it
    was kept, so C (IoU 0.5 with A, under 0.56) stays; the plugin compares C with A at the
    threshold of C's turn, 0.392, and drops it."""
    scores = np.array([[[0.9, 0.8, 0.7, 0.1]]], np.float32)
    attrs = {"iou_threshold": 0.8, "nms_eta": 0.7, "score_threshold": 0.5}
    ours, theirs = _both(_nms(9, **attrs), [SQUARE[None], scores], tmp_path)
    np.testing.assert_array_equal(ours[1][:, 0], [0, 1, 2])
    np.testing.assert_array_equal(theirs[1][:, 0], [0, 1])


# -- MatrixNms-8 ----------------------------------------------------------------------------------
def _matrix(**attrs: Any) -> Any:
    return lambda *xs: opset8.matrix_nms(*xs, **attrs).outputs()


@pytest.mark.parametrize("decay", ["linear", "gaussian"])
@pytest.mark.parametrize("sort", ["none", "classid", "score"])
@pytest.mark.parametrize("across", [False, True])
def test_matrix_sorting_modes(decay: str, sort: str, across: bool, tmp_path: Path) -> None:
    """Scores without ties: the plugin ranks tied candidates in no set order (std::partial_sort),
    tensorloop by index."""
    boxes, scores = _boxes(3, 10), _scores(3, 4, 10, ties=False)
    attrs = {
        "decay_function": decay,
        "sort_result_type": sort,
        "sort_result_across_batch": across,
        "post_threshold": 0.2,
    }
    if sort != "classid" or across:
        check(_matrix(**attrs), boxes, scores, tmp_path=tmp_path)
        return
    # The spec sorts each batch's rows by class; the plugin leaves them by score (docs/openvino.md).
    ours, theirs = _both(_matrix(**attrs), [boxes, scores], tmp_path)
    rows, indices = ours[0], ours[1][:, 0]
    batch = indices // boxes.shape[1]
    by_class = np.lexsort((indices, -rows[:, 1], rows[:, 0], batch))
    np.testing.assert_array_equal(by_class, np.arange(len(rows)))
    by_score = np.lexsort((indices, rows[:, 0], -rows[:, 1], batch))
    np.testing.assert_allclose(theirs[0], rows[by_score], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(theirs[1][:, 0], indices[by_score])
    np.testing.assert_array_equal(theirs[2], ours[2])


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"score_threshold": 0.4, "post_threshold": 0.3},
        {"nms_top_k": 4, "keep_top_k": 6, "sort_result_type": "score"},
        {"keep_top_k": -1, "nms_top_k": -1, "background_class": 0},
        {"background_class": 2, "keep_top_k": 1},
        {"background_class": 9, "decay_function": "gaussian", "gaussian_sigma": 0.5},
        {"decay_function": "gaussian", "gaussian_sigma": 4.0, "post_threshold": 0.1},
        {"post_threshold": 0.25, "output_type": "i32", "sort_result_across_batch": True},
    ],
)
def test_matrix_attributes(attrs: dict[str, Any], tmp_path: Path) -> None:
    boxes, scores = _boxes(2, 12), _scores(2, 3, 12, ties=False)
    check(_matrix(**attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 2, 6), (4, 3, 5), (2, 6, 30)])
@pytest.mark.parametrize("normalized", [True, False])
def test_matrix_shapes(shape: tuple[int, int, int], normalized: bool, tmp_path: Path) -> None:
    batches, classes, count = shape
    boxes = _boxes(batches, count) if normalized else np.round(_boxes(batches, count, scale=12))
    scores = _scores(batches, classes, count, ties=False)
    attrs = {"post_threshold": 0.1, "normalized": normalized, "sort_result_type": "score"}
    check(_matrix(**attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("attrs", [{"score_threshold": 2.0}, {"keep_top_k": 0}])
def test_matrix_selecting_nothing(attrs: dict[str, Any], tmp_path: Path) -> None:
    """The spec's empty outputs and counts of 0; the plugin raises (docs/openvino.md)."""
    boxes, scores = _boxes(2, 5), _scores(2, 2, 5)
    params = [
        opset9.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate((boxes, scores))
    ]
    path = save_ir(_matrix(**attrs)(*params), params, tmp_path)
    rows, indices, counts = tl.load(path).run({"x0": boxes, "x1": scores}).values()
    assert rows.shape == (0, 6) and indices.shape == (0, 1) and counts.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="Total number of boxes"):
        compile_cpu(path)({"x0": boxes, "x1": scores})


def test_matrix_duplicate_and_inverted_boxes(tmp_path: Path) -> None:
    """A duplicate box (IoU 1: linear decay divides by 1e-10 over 0) and boxes with x2 < x1
    (area 0)."""
    boxes = np.concatenate([SQUARE, SQUARE[:1], [[1, 1, 0.5, 0.5]]])[None].astype(np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.6, 0.5, 0.4]]], np.float32)
    for decay in ("linear", "gaussian"):
        out = check(_matrix(decay_function=decay), boxes, scores, tmp_path=tmp_path / decay)
        assert len(next(iter(out.values()))) >= 4


# -- NMSRotated-13 --------------------------------------------------------------------------------
def _rotated_boxes(batches: int, count: int) -> Array:
    """Boxes (cx, cy, w, h, angle) on a 6 x 6 field, turned by any angle."""
    centre = RNG.uniform(0, 6, (batches, count, 2))
    size = RNG.uniform(1, 4, (batches, count, 2))
    angle = RNG.uniform(-np.pi, np.pi, (batches, count, 1))
    return np.concatenate([centre, size, angle], -1).astype(np.float32)


def _rotated(limit: int, iou: float, score: float, **attrs: Any) -> Any:
    extra = [np.array([limit], np.int64), np.array(iou, np.float32), np.array(score, np.float32)]
    return lambda *xs: opset13.nms_rotated(*xs, *extra, **attrs).outputs()


@pytest.mark.parametrize("clockwise", [True, False])
@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize(
    ("limit", "iou", "score"), [(5, 0.3, 0.2), (100, 0.55, 0.0), (2, 0.1, 0.5)]
)
def test_rotated(
    clockwise: bool, descending: bool, limit: int, iou: float, score: float, tmp_path: Path
) -> None:
    boxes, scores = _rotated_boxes(2, 12), _scores(2, 3, 12)
    attrs = {"clockwise": clockwise, "sort_result_descending": descending}
    check(_rotated(limit, iou, score, **attrs), boxes, scores, tmp_path=tmp_path)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 2, 7), (3, 4, 5), (2, 2, 25)])
def test_rotated_shapes(shape: tuple[int, int, int], tmp_path: Path) -> None:
    batches, classes, count = shape
    boxes, scores = _rotated_boxes(batches, count), _scores(batches, classes, count)
    check(_rotated(4, 0.25, 0.1, output_type="i32"), boxes, scores, tmp_path=tmp_path)


def test_rotated_no_boxes_asked_for(tmp_path: Path) -> None:
    """max_output_boxes_per_class 0: nothing selected and a count of 0; the plugin leaves the
    count uninitialised, as for NonMaxSuppression (docs/openvino.md)."""
    boxes, scores = _rotated_boxes(2, 6), _scores(2, 2, 6)
    ours, theirs = _both(_rotated(0, 0.3, 0.0), [boxes, scores], tmp_path)
    assert [v.shape for v in ours] == [v.shape for v in theirs] == [(0, 3), (0, 3), (1,)]
    assert ours[2].tolist() == [0]


# Axis-aligned boxes: A the unit square, B its lower half (IoU 0.5), C apart from both.
AXIS = np.array([[[0.5, 0.5, 1, 1, 0], [0.5, 0.25, 1, 0.5, 0], [3, 3, 1, 1, 0]]], np.float32)


@pytest.mark.parametrize(("iou", "kept"), [(0.5, [0, 1, 2]), (0.0, [0, 2]), (0.49, [0, 2])])
def test_rotated_iou_equal_to_the_threshold(iou: float, kept: list[int], tmp_path: Path) -> None:
    """A box whose IoU equals the threshold stays (func = 1 if iou <= threshold): B at 0.5,
    and at threshold 0 the disjoint C; here the plugin agrees with the spec."""
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    out = check(_rotated(10, iou, 0.0), AXIS, scores, tmp_path=tmp_path)
    np.testing.assert_array_equal(next(iter(out.values()))[:, 2], kept)
