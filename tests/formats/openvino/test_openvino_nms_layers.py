"""OpenVINO's NonMaxSuppression (v1, v3, v4, v5, v9) read by tensorloop vs. the CPU plugin, and the
core "NonMaxSuppression" op written back as IR (write_nms.py); where the plugin strays from the
specification, the specification's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset3, opset4, opset5, opset9  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit_node  # noqa: E402

RNG = np.random.default_rng(11)
OPSETS = {1: opset1, 3: opset3, 4: opset4, 5: opset5, 9: opset9}


def _boxes(batches: int, count: int, center: bool = False) -> Array:
    """Random boxes on a 10 x 10 field; corners in either order, or centres and sizes."""
    if center:
        mid = RNG.uniform(0, 10, (batches, count, 2))
        size = RNG.uniform(0.5, 5, (batches, count, 2))
        return np.concatenate([mid, size], -1).astype(np.float32)
    return RNG.uniform(0, 10, (batches, count, 4)).astype(np.float32)


def _scores(batches: int, classes: int, count: int) -> Array:
    scores = RNG.uniform(0, 1, (batches, classes, count)).astype(np.float32)
    scores[0, 0, 1:4] = scores[0, 0, 0]  # ties within a class: the lower box index first
    scores[-1, -1, 2] = scores[0, 0, 0]  # and across classes and batches
    return scores


def _nms(version: int, boxes: Any, scores: Any, *extra: Any, **attrs: Any) -> Any:
    inputs = [
        opset9.constant(np.array(v, np.int64 if i == 0 else np.float32))
        for i, v in enumerate(extra)
    ]
    return OPSETS[version].non_max_suppression(boxes, scores, *inputs, **attrs)


def _run_padded(version: int, boxes: Array, scores: Array, tmp_path: Path, **kw: Any) -> Array:
    """A v1-v4 layer: tensorloop's rows are the plugin's (which it does not pad: see
    docs/openvino.md), cut or padded with -1 to the static size the layer declares; then the
    model tensorloop read, written back as IR, runs alike on the plugin."""
    extra = kw.pop("extra")
    params = [
        opset9.parameter(a.shape, np.float32, name=f"x{i}") for i, a in enumerate((boxes, scores))
    ]
    node = _nms(version, *params, *extra, **kw)
    path = save_ir([node.output(0)], params, tmp_path)
    feeds = {"x0": boxes, "x1": scores}
    model = tl.load(path)
    ours: Array = next(iter(model.run(feeds).values()))
    size = node.get_output_partial_shape(0)[0].get_length()
    compiled = compile_cpu(path)
    theirs = np.asarray(compiled(feeds)[compiled.outputs[0]])
    assert ours.shape == (size, 3) and ours.dtype == theirs.dtype
    want = np.full((size, 3), -1, theirs.dtype)
    want[: min(size, len(theirs))] = theirs[:size]
    np.testing.assert_array_equal(ours, want)
    written = tmp_path / "written"
    written.mkdir()
    written_runs_alike(model, feeds, written)
    return ours


# -- NonMaxSuppression-1, -3, -4: one output of a static size ------------------------------------


@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize("encoding", ["corner", "center"])
@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize(
    ("limit", "iou", "score"), [(2, 0.3, 0.2), (10, 0.5, 0.0), (0, 0.5, 0.0), (3, 0.7, 0.95)]
)
def test_nms_v1_v4(
    version: int,
    encoding: str,
    descending: bool,
    limit: int,
    iou: float,
    score: float,
    tmp_path: Path,
) -> None:
    boxes, scores = _boxes(2, 12, encoding == "center"), _scores(2, 3, 12)
    attrs: dict[str, Any] = {"box_encoding": encoding, "sort_result_descending": descending}
    if version > 1:
        attrs["output_type"] = "i32" if limit == 2 else "i64"
    got = _run_padded(version, boxes, scores, tmp_path, extra=(limit, iou, score), **attrs)
    if version == 4:
        assert got.shape == (min(12, limit) * 6, 3)
    else:  # v1, v3: min(boxes, limit * classes) rows, fewer than may be selected
        assert got.shape == (min(12, limit * 3), 3)


@pytest.mark.parametrize("version", [1, 3, 4])
def test_nms_v1_v4_default_inputs(version: int, tmp_path: Path) -> None:
    """max_output_boxes_per_class defaults to 0: no rows, and a static size of 0."""
    boxes, scores = _boxes(1, 6), _scores(1, 2, 6)
    assert _run_padded(version, boxes, scores, tmp_path, extra=()).shape == (0, 3)


@pytest.mark.parametrize("version", [1, 3, 4, 5, 9])
def test_the_default_thresholds(version: int, tmp_path: Path) -> None:
    """Absent thresholds are 0: boxes scoring above 0 are kept unless they overlap a kept one
    at all. The plugin suppresses disjoint boxes too (IoU 0 equals the threshold; see below),
    so its answer here is taken with an IoU threshold just above 0."""
    boxes, scores = _boxes(2, 10), _scores(2, 2, 10)
    scores[0, 1, :4] = 0  # not above the default score threshold
    feeds = {"x0": boxes, "x1": scores}
    rows = []
    for extra in ((6,), (6, 1e-30)):
        params = [
            opset9.parameter(a.shape, np.float32, name=f"x{i}")
            for i, a in enumerate((boxes, scores))
        ]
        node = _nms(version, *params, *extra)
        path = save_ir([node.output(0)], params, tmp_path / str(len(extra)))
        if len(extra) == 1:
            rows.append(next(iter(tl.load(path).run(feeds).values())))
        else:
            compiled = compile_cpu(path)
            rows.append(np.asarray(compiled(feeds)[compiled.outputs[0]]))
    ours, theirs = rows
    assert len(theirs) > 4
    np.testing.assert_array_equal(ours[: len(theirs)], theirs[: len(ours)])
    assert (ours[len(theirs) :] == -1).all()


# -- NonMaxSuppression-5, -9: selected indices, selected scores, their count ---------------------


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize("encoding", ["corner", "center"])
@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("output_type", ["i64", "i32"])
@pytest.mark.parametrize(("limit", "iou", "score"), [(2, 0.3, 0.2), (10, 0.5, 0.0), (4, 0.6, 0.9)])
def test_nms_v5_v9(
    version: int,
    encoding: str,
    descending: bool,
    output_type: str,
    limit: int,
    iou: float,
    score: float,
    tmp_path: Path,
) -> None:
    attrs = {
        "box_encoding": encoding,
        "sort_result_descending": descending,
        "output_type": output_type,
    }
    got = check(
        lambda b, s: list(_nms(version, b, s, limit, iou, score, **attrs).outputs()),
        _boxes(3, 10, encoding == "center"),
        _scores(3, 2, 10),
        tmp_path=tmp_path,
    )
    indices, _, count = got.values()
    assert indices.dtype == np.dtype(output_type.replace("i", "int")) == count.dtype
    assert len(indices) == count[0]


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize("given", [2, 3])
def test_nms_v5_v9_default_inputs(version: int, given: int, tmp_path: Path) -> None:
    extra = (5, 0.4, 0.3)[:given]
    check(
        lambda b, s: list(_nms(version, b, s, *extra).outputs()),
        _boxes(2, 8),
        _scores(2, 2, 8),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize("encoding", ["corner", "center"])
@pytest.mark.parametrize(("sigma", "score"), [(0.5, 0.0), (0.2, 0.3), (1.0, 0.5)])
def test_soft_nms(version: int, encoding: str, sigma: float, score: float, tmp_path: Path) -> None:
    """Soft-NMS with an IoU threshold of 1, which no IoU exceeds: v5 and v9 agree."""
    check(
        lambda b, s: list(
            _nms(version, b, s, 6, 1.0, score, sigma, box_encoding=encoding).outputs()
        ),
        _boxes(2, 12, encoding == "center"),
        _scores(2, 3, 12),
        tmp_path=tmp_path,
        rtol=1e-5,
    )


def test_scores_at_the_threshold_are_dropped(tmp_path: Path) -> None:
    """The spec's "greater or equal" would, taken literally, keep every box that hard NMS set
    to 0 under the default threshold 0; OpenVINO (plugin and reference) keeps scores above it."""
    scores = np.array([[[0.5, 0.25, 0.75, 0.25]]], np.float32)
    boxes = np.arange(16, dtype=np.float32).reshape(1, 4, 4) * 3  # disjoint
    got = check(
        lambda b, s: list(_nms(9, b, s, 4, 0.5, 0.25).outputs()), boxes, scores, tmp_path=tmp_path
    )
    assert next(iter(got.values())).tolist() == [[0, 0, 2], [0, 0, 0]]


# -- where the CPU plugin strays from the specification ------------------------------------------

# Box 1 overlaps box 0 with an IoU of exactly 0.5 (half of box 0), box 2 meets neither.
TIE_BOXES = np.array([[[0, 0, 1, 2], [0, 0, 1, 1], [5, 5, 6, 6]]], np.float32)
TIE_SCORES = np.array([[[0.9, 0.8, 0.7]]], np.float32)


def _ours_and_theirs(node: Any, tmp_path: Path) -> tuple[Array, Array]:
    params = [n for n in (node.input_value(0).node, node.input_value(1).node)]
    path = save_ir([node.output(0)], params, tmp_path)
    feeds = {"x0": TIE_BOXES, "x1": TIE_SCORES}
    (ours,) = tl.load(path).run(feeds).values()
    compiled = compile_cpu(path)
    return ours, np.asarray(compiled(feeds)[compiled.outputs[0]])


def _tie_params() -> list[Any]:
    return [
        opset9.parameter(a.shape, np.float32, name=f"x{i}")
        for i, a in enumerate((TIE_BOXES, TIE_SCORES))
    ]


@pytest.mark.parametrize("version", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("iou", [0.5, 0.0])
def test_an_iou_equal_to_the_threshold_keeps_the_box(
    version: int, iou: float, tmp_path: Path
) -> None:
    """The spec suppresses a box whose IoU is above the threshold ("func(iou) = 1 if iou <=
    iou_threshold"); the CPU plugin suppresses it at equality too, so with the default threshold
    0 it keeps one box a class (docs/openvino.md)."""
    node = _nms(version, *_tie_params(), 10, iou, 0.0)
    ours, theirs = _ours_and_theirs(node, tmp_path)
    kept = [[0, 0, 0], [0, 0, 1], [0, 0, 2]] if iou == 0.5 else [[0, 0, 0], [0, 0, 2]]
    assert ours[: len(kept)].tolist() == kept
    assert (ours[len(kept) :] == -1).all()
    assert len(theirs) < len(kept)  # the plugin's: remove this test's note once it agrees


@pytest.mark.parametrize("version", [5, 9])
def test_soft_nms_iou_cutoff_of_v5(version: int, tmp_path: Path) -> None:
    """v5's Soft-NMS drops a box whose IoU is above the threshold (func = 0); v9's decays it
    like any other. The CPU plugin runs v5 as v9 (docs/openvino.md)."""
    node = _nms(version, *_tie_params(), 10, 0.4, 0.0, 0.5)
    ours, theirs = _ours_and_theirs(node, tmp_path)
    assert theirs.tolist() == [[0, 0, 0], [0, 0, 2], [0, 0, 1]]
    want = theirs if version == 9 else theirs[:2]
    np.testing.assert_array_equal(ours, want)


# -- the core op written as NonMaxSuppression-9 (or -5) ------------------------------------------


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("sort", [0, 1])
@pytest.mark.parametrize("score", [None, 0.3])
def test_writer_onnx_semantics(center: int, sort: int, score: float | None, tmp_path: Path) -> None:
    """The core "NonMaxSuppression" with ONNX's defaults (f64, no score threshold): an absent
    threshold is written as -inf, the f64 scores output converted back."""
    boxes, scores = _boxes(2, 10, bool(center)), _scores(2, 3, 10)
    scores[1, 1, :3] = -0.5  # kept with no threshold
    b = tl.placeholder(np.float32, boxes.shape, name="boxes")
    s = tl.placeholder(np.float32, scores.shape, name="scores")
    limit, iou = tl.constant(np.array([4], np.int64)), tl.constant(np.array([0.45], np.float32))
    floor = None if score is None else tl.constant(np.array([score], np.float32))
    outs = emit_node(
        "NonMaxSuppression",
        [b, s, limit, iou, floor],
        {"center_point_box": center, "sort_by_score": sort},
    )
    model = tl.Model(dict(zip(("selected", "picked", "count"), outs, strict=True)))
    written_runs_alike(model, {"boxes": boxes, "scores": scores}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("cutoff", [0, 1])
def test_writer_soft_nms(cutoff: int, tmp_path: Path) -> None:
    boxes, scores = _boxes(1, 12), _scores(1, 2, 12)
    b = tl.placeholder(np.float32, boxes.shape, name="boxes")
    s = tl.placeholder(np.float32, scores.shape, name="scores")
    consts = [np.array(6, np.int32), np.array(1.0, np.float32), np.array(0.1, np.float32)]
    extra = [tl.constant(c) for c in (*consts, np.array(0.5, np.float32))]
    attrs = {"precision": "f32", "soft_nms_iou_cutoff": cutoff, "sort_by_score": 1}
    outs = emit_node("NonMaxSuppression", [b, s, *extra], attrs)
    model = tl.Model(dict(zip(("selected", "picked", "count"), outs, strict=True)))
    written_runs_alike(model, {"boxes": boxes, "scores": scores}, tmp_path, rtol=1e-5)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ((10, 0.5, 0.0), "'precision' = 'f32' does not exist in NonMaxSuppression"),
        ((10, 0.5, 0.0, 0.5), "Soft-NMS .* has no ONNX equivalent"),
    ],
)
def test_onnx_writer_refuses_openvino_nms(extra: Any, error: str, tmp_path: Path) -> None:
    params = _tie_params()
    node = _nms(9, *params, *extra)
    path = save_ir([node.output(0)], params, tmp_path)
    with pytest.raises(tl.FormatError, match=error):
        tl.save(tl.load(path), tmp_path / "m.onnx")


@pytest.mark.parametrize("version", [5, 9])
def test_no_boxes_asked_for(version: int, tmp_path: Path) -> None:
    """max_output_boxes_per_class 0: nothing selected, a count of 0 (the CPU plugin leaves the
    count uninitialised; docs/openvino.md)."""
    params = _tie_params()
    node = _nms(version, *params, 0, 0.5, 0.0)
    path = save_ir(list(node.outputs()), params, tmp_path)
    selected, picked, count = tl.load(path).run({"x0": TIE_BOXES, "x1": TIE_SCORES}).values()
    assert selected.shape == picked.shape == (0, 3) and count.tolist() == [0]


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rois", [False, True])
def test_writer_multiclass_nms(dtype: Any, rois: bool, tmp_path: Path) -> None:
    """The core "MulticlassNms" written as MulticlassNms-9 (an f64 graph converted to f32 around
    it), with shared boxes or per-class boxes and roisnum; more in
    test_openvino_multiclass_nms_layers.py."""
    boxes = RNG.uniform(0, 0.5, (2, 8, 4)).astype(np.float32)
    boxes[..., 2:] += boxes[..., :2]
    scores = _scores(2, 3, 8)[:, :, :] if not rois else _scores(1, 2, 8)[0]
    feeds = {"boxes": boxes.astype(dtype), "scores": scores.astype(dtype)}
    args = [tl.placeholder(dtype, a.shape, name=k) for k, a in feeds.items()]
    if rois:
        feeds["roisnum"] = np.array([3, 5], np.int32)
        args.append(tl.placeholder(np.int32, (2,), name="roisnum"))
    attrs = {"iou_threshold": 0.3, "sort_result": "class", "keep_top_k": 5, "background_class": 0}
    outs = emit_node("MulticlassNms", args, attrs)
    model = tl.Model(dict(zip(("rows", "indices", "counts"), outs, strict=True)))
    written_runs_alike(model, feeds, tmp_path)


def test_onnx_writer_refuses_multiclass_nms(tmp_path: Path) -> None:
    params = _tie_params()
    node = opset9.multiclass_nms(*params, iou_threshold=0.5)
    path = save_ir(list(node.outputs()), params, tmp_path)
    with pytest.raises(tl.FormatError, match="MulticlassNms"):
        tl.save(tl.load(path), tmp_path / "m.onnx")


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("decay", ["linear", "gaussian"])
def test_writer_matrix_nms(decay: str, tmp_path: Path) -> None:
    """The core "MatrixNms" written as MatrixNms-8 (test_openvino_multiclass_nms_layers.py has
    the layer read)."""
    boxes = RNG.uniform(0, 0.5, (2, 8, 4)).astype(np.float32)
    boxes[..., 2:] += boxes[..., :2]
    scores = (RNG.permutation(48).reshape(2, 3, 8) / 48 + 0.01).astype(np.float32)
    feeds = {"boxes": boxes, "scores": scores}
    args = [tl.placeholder(np.float32, a.shape, name=k) for k, a in feeds.items()]
    attrs = {"decay_function": decay, "post_threshold": 0.2, "sort_result": "score"}
    outs = emit_node("MatrixNms", args, attrs | {"keep_top_k": 7, "sort_across_batch": 1})
    model = tl.Model(dict(zip(("rows", "indices", "counts"), outs, strict=True)))
    written_runs_alike(model, feeds, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("clockwise", [0, 1])
def test_writer_nms_rotated(clockwise: int, tmp_path: Path) -> None:
    """The core "NmsRotated" written as NMSRotated-13 (test_openvino_multiclass_nms_layers.py
    has the layer read)."""
    centre, size = RNG.uniform(0, 6, (2, 9, 2)), RNG.uniform(1, 4, (2, 9, 2))
    angle = RNG.uniform(-np.pi, np.pi, (2, 9, 1))
    boxes = np.concatenate([centre, size, angle], -1).astype(np.float32)
    scores = (RNG.permutation(36).reshape(2, 2, 9) / 36).astype(np.float32)
    feeds = {"boxes": boxes, "scores": scores}
    args = [tl.placeholder(np.float32, a.shape, name=k) for k, a in feeds.items()]
    limit = tl.constant(np.array([3], np.int64))
    iou, floor = (tl.constant(np.array(v, np.float32)) for v in (0.2, 0.1))
    attrs = {"clockwise": clockwise, "sort_by_score": 1 - clockwise}
    outs = emit_node("NmsRotated", [*args, limit, iou, floor], attrs)
    model = tl.Model(dict(zip(("selected", "picked", "count"), outs, strict=True)))
    written_runs_alike(model, feeds, tmp_path)
