"""OpenVINO RoI layers (PSROIPooling, DeformablePSROIPooling, ROIAlignRotated, Proposal) read by
tensorloop vs. the CPU plugin and written back, and the core RoI ops written as OpenVINO layers
(write_detection.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset4, opset15  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    ph,
    rand_f32,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

RNG = np.random.default_rng(11)


# (batch, x1, y1, x2, y2) in pixels: inside, partly off each side, halves that round away from
# zero, a point, one off the image altogether.
PIXEL_ROIS = np.array(
    [
        [0, 1.0, 2.0, 6.0, 5.0],
        [1, -3.0, -2.5, 4.5, 3.0],
        [1, 3.5, 0.5, 14.0, 11.0],
        [0, 2.0, 2.0, 2.0, 2.0],
        [1, -1.5, 4.0, 0.4, 9.5],
        [0, 20.0, 20.0, 30.0, 25.0],
    ],
    np.float32,
)

# The same in units of the image size (bilinear PSROIPooling).
UNIT_ROIS = np.array(
    [
        [0, 0.1, 0.2, 0.7, 0.9],
        [1, -0.2, 0.3, 0.6, 1.2],
        [1, 0.5, -0.4, 1.3, 0.5],
        [0, 0.4, 0.4, 0.4, 0.4],
        [1, 0.0, 0.0, 1.0, 1.0],
    ],
    np.float32,
)


def _only(got: dict[str, Array]) -> Array:
    return next(iter(got.values()))


# -- PSROIPooling ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("out_dim", "group", "scale", "size"),
    [(2, 2, 1.0, (8, 10)), (3, 3, 0.5, (9, 7)), (1, 1, 0.25, (6, 6)), (2, 4, 0.75, (5, 12))],
)
def test_ps_roi_pooling_average(
    out_dim: int, group: int, scale: float, size: tuple[int, int], tmp_path: Path
) -> None:
    x = rand_f32(2, out_dim * group * group, *size)
    got = check(
        lambda x, r: opset1.psroi_pooling(x, r, out_dim, group, scale, 1, 1, "average"),
        x,
        PIXEL_ROIS,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )
    out = _only(got)
    assert out.shape == (len(PIXEL_ROIS), out_dim, group, group)
    assert (out[-1] == 0).all() == (scale > 0.3)  # off the image: empty bins average to 0


@pytest.mark.parametrize(
    ("out_dim", "group", "bins", "scale", "size"),
    [
        (2, 2, (1, 1), 1.0, (8, 10)),
        (3, 3, (2, 3), 1.0, (9, 7)),
        (2, 1, (2, 2), 1.0, (6, 6)),
        (1, 4, (3, 1), 0.5, (7, 11)),
    ],
)
def test_ps_roi_pooling_bilinear(
    out_dim: int,
    group: int,
    bins: tuple[int, int],
    scale: float,
    size: tuple[int, int],
    tmp_path: Path,
) -> None:
    bx, by = bins
    x = rand_f32(2, out_dim * bx * by, *size)
    check(
        lambda x, r: opset1.psroi_pooling(x, r, out_dim, group, scale, bx, by, "bilinear"),
        x,
        UNIT_ROIS,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("mode", ["average", "bilinear"])
def test_ps_roi_pooling_stops_at_the_first_roi_of_batch_minus_one(
    mode: str, tmp_path: Path
) -> None:
    """The CPU plugin reads RoIs up to the first whose batch index is -1 (the padding that
    Proposal-style layers leave): it and all after it pool to zeros."""
    rois = (PIXEL_ROIS if mode == "average" else UNIT_ROIS)[:4].copy()
    rois[2, 0] = -1
    bins = 1 if mode == "average" else 2
    got = check(
        lambda x, r: opset1.psroi_pooling(x, r, 2, 2, 1.0, bins, bins, mode),
        rand_f32(2, 8, 8, 8),
        rois,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )
    out = _only(got)
    assert (out[2:] == 0).all() and (out[:2] != 0).any()


# -- DeformablePSROIPooling -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("out_dim", "group", "bins", "part", "classes", "trans_std"),
    [
        (2, 2, (1, 1), 2, 1, 0.1),
        (4, 3, (2, 2), 3, 2, 0.5),
        (3, 2, (3, 1), 1, 3, 1.0),
        (2, 3, (1, 2), 2, 2, 0.0),
    ],
)
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_deformable_psroi_pooling_with_offsets(
    out_dim: int,
    group: int,
    bins: tuple[int, int],
    part: int,
    classes: int,
    trans_std: float,
    scale: float,
    tmp_path: Path,
) -> None:
    bx, by = bins
    x = rand_f32(2, out_dim * group * group, 9, 11)
    offsets = rand_f32(len(PIXEL_ROIS), 2 * classes, part, part)

    def build(x: Any, r: Any, t: Any) -> Any:
        return opset1.deformable_psroi_pooling(
            x, r, out_dim, scale, group, "bilinear_deformable", bx, by, trans_std, part, t
        )

    check(build, x, PIXEL_ROIS, offsets, tmp_path=tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("out_dim", "group", "bins", "scale"),
    [(2, 2, (1, 1), 1.0), (1, 3, (2, 3), 0.5), (3, 1, (4, 4), 0.25)],
)
def test_deformable_psroi_pooling_without_offsets(
    out_dim: int, group: int, bins: tuple[int, int], scale: float, tmp_path: Path
) -> None:
    bx, by = bins
    x = rand_f32(2, out_dim * group * group, 8, 10)

    def build(x: Any, r: Any) -> Any:
        return opset1.deformable_psroi_pooling(
            x, r, out_dim, scale, group, spatial_bins_x=bx, spatial_bins_y=by
        )

    got = check(build, x, PIXEL_ROIS, tmp_path=tmp_path, rtol=1e-5, atol=1e-5)
    assert (_only(got)[-1] == 0).all() == (scale > 0.3)


def test_deformable_psroi_pooling_stops_at_the_first_roi_of_batch_minus_one(
    tmp_path: Path,
) -> None:
    rois = PIXEL_ROIS[:4].copy()
    rois[1, 0] = -1
    got = check(
        lambda x, r: opset1.deformable_psroi_pooling(x, r, 2, 1.0, 2),
        rand_f32(2, 8, 8, 8),
        rois,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )
    out = _only(got)
    assert (out[1:] == 0).all() and (out[0] != 0).any()


def test_deformable_psroi_pooling_other_modes_are_refused(tmp_path: Path) -> None:
    x = opset1.parameter([1, 4, 4, 4], np.float32, name="x0")
    rois = opset1.constant(PIXEL_ROIS[:1])
    out = opset1.deformable_psroi_pooling(x, rois, 1, 1.0, 2, mode="bilinear")
    path = save_ir([out], [x], tmp_path)
    tl_path = path.read_text().replace('mode="bilinear"', 'mode="average"')
    path.write_text(tl_path)
    with pytest.raises(tl.FormatError, match="mode 'average'"):
        tl.load(path)


# -- ROIAlignRotated ------------------------------------------------------------------------------
# (cx, cy, w, h, angle in radians): inside, turned both ways, partly off the image, a point,
# wider than the image, off the image altogether.
ROTATED_ROIS = np.array(
    [
        [4.0, 3.0, 4.0, 2.0, 0.0],
        [5.0, 4.0, 6.0, 3.0, 0.6],
        [1.0, 6.0, 5.0, 4.0, -1.2],
        [3.0, 3.0, 0.0, 0.0, 0.3],
        [6.5, 2.5, 14.0, 3.5, 2.5],
        [30.0, -9.0, 3.0, 3.0, 1.0],
    ],
    np.float32,
)


@pytest.mark.parametrize("clockwise", [False, True])
@pytest.mark.parametrize(
    ("pooled", "ratio", "scale", "channels"),
    [((2, 3), 2, 1.0, 3), ((3, 2), 0, 0.5, 2), ((1, 1), 1, 2.0, 1), ((4, 4), 0, 1.0, 2)],
)
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_roi_align_rotated(
    clockwise: bool,
    pooled: tuple[int, int],
    ratio: int,
    scale: float,
    channels: int,
    index_type: type,
    tmp_path: Path,
) -> None:
    batch: Array = np.array([0, 1, 1, 0, 1, 0], index_type)

    def build(x: Any, rois: Any, which: Any) -> Any:
        return opset15.roi_align_rotated(x, rois, which, *pooled, ratio, scale, clockwise)

    check(
        build,
        rand_f32(2, channels, 8, 10),
        ROTATED_ROIS,
        batch,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )


# -- the core ops' own checks ---------------------------------------------------------------------
def test_ps_roi_pool_checks_its_channels() -> None:
    g = tl.Graph("g")
    x = g.add_input("x", tl.TensorType("f32", [1, 7, 4, 4]))
    r = g.add_input("r", tl.TensorType("f32", [3, 5]))
    with pytest.raises(tl.ShapeInferenceError, match="must have 8 channels"):
        g.add_node("PsRoiPool", [x, r], {"output_dim": 2, "group_size": 2})


def test_roi_align_rotated_types_its_output() -> None:
    g = tl.Graph("g")
    x = g.add_input("x", tl.TensorType("f32", ["N", 3, 8, 8]))
    r = g.add_input("r", tl.TensorType("f32", ["R", 5]))
    i = g.add_input("i", tl.TensorType("i32", [4]))
    node = g.add_node("RoiAlignRotated", [x, r, i], {"output_height": 2, "output_width": 5})
    assert node.outputs[0].type == tl.TensorType("f32", [4, 3, 2, 5])


# -- Proposal -------------------------------------------------------------------------------------
PROPOSAL_RNG = np.random.default_rng(7)


def _proposal_inputs(batch: int, anchors: int, size: tuple[int, int]) -> tuple[Array, Array]:
    scores = PROPOSAL_RNG.uniform(0, 1, (batch, 2 * anchors, *size)).astype(np.float32)
    deltas = (PROPOSAL_RNG.standard_normal((batch, 4 * anchors, *size)) * 0.3).astype(np.float32)
    return scores, deltas


def _proposal_attrs(**given: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "base_size": 16,
        "pre_nms_topn": 40,
        "post_nms_topn": 8,
        "nms_thresh": 0.7,
        "feat_stride": 16,
        "min_size": 4,
        "ratio": [0.5, 1.0, 2.0],
        "scale": [1.0, 2.0],
    }
    attrs.update(given)
    unsigned = ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size")
    typed = {k: np.uint32(v) if k in unsigned else v for k, v in attrs.items()}
    for key in ("ratio", "scale"):
        typed[key] = np.array(attrs[key], np.float32)
    for key in ("nms_thresh", "box_size_scale", "box_coordinate_scale"):
        if key in typed:
            typed[key] = np.float32(typed[key])
    return typed


PROPOSAL_CASES: list[dict[str, Any]] = [
    {},
    {"clip_before_nms": False, "clip_after_nms": True, "normalize": True},
    {"box_size_scale": 2.0, "box_coordinate_scale": 0.5, "nms_thresh": 0.5, "min_size": 12},
    {"framework": "tensorflow", "ratio": [0.5, 2.0], "scale": [0.5, 1.0, 2.0]},
    {"framework": "tensorflow", "clip_after_nms": True, "normalize": True, "pre_nms_topn": 100},
]


@pytest.mark.parametrize("version", ["v1", "v4"])
@pytest.mark.parametrize("case", range(len(PROPOSAL_CASES)))
@pytest.mark.parametrize("image", [[70.0, 90.0, 1.0], [64.0, 80.0, 1.5, 0.5]])
def test_proposal(version: str, case: int, image: list[float], tmp_path: Path) -> None:
    attrs = _proposal_attrs(**PROPOSAL_CASES[case])
    anchors = len(attrs["ratio"]) * len(attrs["scale"])
    scores, deltas = _proposal_inputs(2, anchors, (4, 5))
    module = opset1 if version == "v1" else opset4

    def build(s: Any, d: Any, i: Any) -> Any:
        node = module.proposal(s, d, i, attrs)
        return [node.output(0)] if version == "v1" else [node.output(0), node.output(1)]

    got = check(
        build,
        scores,
        deltas,
        np.array(image, np.float32),
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-4,
    )
    rois = next(v for v in got.values() if v.ndim == 2)
    assert rois.shape == (2 * 8, 5) and (rois[:, 0] >= 0).all()  # every image keeps 8 boxes


def test_proposal_marks_the_end_of_a_short_list(tmp_path: Path) -> None:
    """Fewer boxes than post_nms_topn survive: the row after the last has batch -1, the rest 0."""
    attrs = _proposal_attrs(pre_nms_topn=12, post_nms_topn=10, nms_thresh=0.2)
    scores, deltas = _proposal_inputs(2, 6, (2, 2))
    image = np.array([48.0, 48.0, 1.0], np.float32)
    got = check(
        lambda s, d, i: opset1.proposal(s, d, i, attrs),
        scores,
        deltas,
        image,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-4,
    )
    rois = _only(got).reshape(2, 10, 5)
    kept = int((rois[1, :, 0] == 1).sum())
    assert kept < 10 and rois[1, kept, 0] == -1 and (rois[1, kept, 1:] == 0).all()
    assert (rois[1, kept + 1 :] == 0).all()


def _run_both(build: Any, arrays: list[Array], tmp_path: Path) -> tuple[list[Array], list[Array]]:
    """tensorloop's outputs and the CPU plugin's for the IR ``build`` makes of x0, x1, ..."""
    params = [opset1.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    node = build(*params)
    path = save_ir(list(node.outputs()), params, tmp_path)
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    ours = list(tl.load(path).run(feeds).values())
    compiled = compile_cpu(path)
    theirs = compiled(feeds)
    return ours, [np.asarray(theirs[o]) for o in compiled.outputs]


def test_proposal_drops_boxes_under_min_size_as_the_spec_says(tmp_path: Path) -> None:
    """The spec filters out boxes smaller than min_size; the CPU plugin keeps them with score 0,
    so they fill the list once the others run out. tensorloop ends the list before them."""
    attrs = _proposal_attrs(min_size=30, pre_nms_topn=60, post_nms_topn=20, nms_thresh=0.9)
    scores, deltas = _proposal_inputs(1, 6, (3, 3))
    image = np.array([60.0, 60.0, 1.0], np.float32)
    (rois, probs), (cpu_rois, cpu_probs) = _run_both(
        lambda s, d, i: opset4.proposal(s, d, i, attrs), [scores, deltas, image], tmp_path
    )
    ends = np.flatnonzero(cpu_rois[:, 0] == -1)
    listed = int(ends[0]) if len(ends) else len(cpu_rois)
    big = cpu_probs[:listed] > 0
    assert not big.all(), "the case must make the CPU plugin list small boxes"
    kept = int(big.sum())
    np.testing.assert_allclose(rois[:kept], cpu_rois[:listed][big], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(probs[:kept], cpu_probs[:listed][big], rtol=1e-6)
    assert rois[kept, 0] == -1 and (rois[kept, 1:] == 0).all() and (rois[kept + 1 :] == 0).all()
    assert (probs[kept:] == 0).all()


def test_proposal_with_fewer_boxes_before_nms_than_after(tmp_path: Path) -> None:
    """These sizes crash the CPU plugin (OpenVINO 2026.4); tensorloop lists the at most
    pre_nms_topn boxes NMS keeps, best first, and ends the list with -1."""
    attrs = _proposal_attrs(pre_nms_topn=5, post_nms_topn=9, nms_thresh=0.95)
    scores, deltas = _proposal_inputs(2, 6, (3, 3))
    image = np.array([48.0, 48.0, 1.0], np.float32)
    params = [
        opset1.parameter(a.shape, a.dtype, name=f"x{i}")
        for i, a in enumerate((scores, deltas, image))
    ]
    node = opset4.proposal(*params, attrs)
    path = save_ir(list(node.outputs()), params, tmp_path)
    got = list(tl.load(path).run({"x0": scores, "x1": deltas, "x2": image}).values())
    rois, probs = (v.reshape(2, 9, *v.shape[1:]) for v in got)
    for b in range(2):
        best = np.sort(scores[b, 6:].reshape(-1))[::-1][:5]
        np.testing.assert_array_equal(probs[b, :5], best)  # nothing overlaps enough to go
        assert (rois[b, :5, 0] == b).all() and rois[b, 5, 0] == -1
        assert (
            (rois[b, 5, 1:] == 0).all() and (rois[b, 6:] == 0).all() and (probs[b, 5:] == 0).all()
        )


# -- the writer: RoiAlign, MaxRoiPool, PsRoiPool, DeformablePsRoiPool, RoiAlignRotated, Proposal ---


ROIS = np.array(
    [[0.5, 1.0, 6.0, 5.5], [2.0, 2.0, 2.0, 2.0], [1.2, 0.3, 7.7, 7.9], [3.0, 1.0, 4.5, 6.0]],
    np.float32,
)


PS_ROIS = np.array(
    [[0, 0.5, 1.0, 6.0, 5.5], [1, -2.5, 2.0, 3.0, 9.5], [1, 1.2, 0.3, 7.7, 7.9]], np.float32
)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("coords", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
@pytest.mark.parametrize(("oh", "ow", "scale"), [(2, 3, 1.0), (3, 3, 0.5)])
def test_writer_roi_align(
    mode: str, coords: str, ratio: int, oh: int, ow: int, scale: float, tmp_path: Path
) -> None:
    """avg, and the max mode that takes the largest of 0 and the samples (max_of="samples")."""
    x = rand_f32(2, 3, 8, 9, rng=RNG)
    indices = np.array([0, 1, 1, 0], np.int64)
    attrs = {
        "coordinate_transformation_mode": coords,
        "mode": mode,
        "max_of": "samples" if mode == "max" else "corners",
        "output_height": oh,
        "output_width": ow,
        "sampling_ratio": ratio,
        "spatial_scale": scale,
    }
    y = emit("RoiAlign", [ph("x", x), ph("rois", ROIS), ph("indices", indices)], attrs)
    feeds = {"x": x, "rois": ROIS, "indices": indices}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_roi_align_max_refused(tmp_path: Path) -> None:
    x, indices = rand_f32(1, 2, 6, 6, rng=RNG), np.zeros(4, np.int64)
    y = emit("RoiAlign", [ph("x", x), ph("rois", ROIS), ph("i", indices)], {"mode": "max"})
    with pytest.raises(FormatError, match="max mode takes the largest sample"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("shape", "scale"), [((2, 2), 1.0), ((3, 2), 0.5), ((1, 4), 0.25)])
def test_writer_max_roi_pool(shape: tuple[int, int], scale: float, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 8, 9, rng=RNG)
    rois = np.array(
        [[0, 0.5, 1.0, 6.0, 5.5], [1, 2.0, 2.0, 2.0, 2.0], [1, 1.2, 0.3, 7.7, 7.9]], np.float32
    )
    attrs = {"pooled_shape": list(shape), "spatial_scale": scale}
    y = emit("MaxRoiPool", [ph("x", x), ph("rois", rois)], attrs)
    written_runs_alike(tl.Model({"y": y}), {"x": x, "rois": rois}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("PriorBox", {"min_size": [2.0, 4.0], "max_size": [5.0, 9.0], "aspect_ratio": [2.0, 3.0],
                      "flip": 1, "clip": 1, "step": 8.0, "offset": 0.5,
                      "variance": [0.1, 0.1, 0.2, 0.2]}),
        ("PriorBox", {"min_size": [3.0], "max_size": [7.0], "aspect_ratio": [0.5], "offset": 0.25,
                      "min_max_aspect_ratios_order": 0, "variance": [0.2]}),
        ("PriorBox", {"fixed_size": [8.0, 16.0], "density": [2.0, 3.0], "offset": 0.5}),
        ("PriorBoxClustered", {"width": [6.0, 10.0], "height": [9.0, 2.0], "offset": 0.25,
                               "step_w": 4.0, "step_h": 6.0, "clip": 0}),
        ("PriorBoxClustered", {"width": [2.0], "height": [3.0], "offset": 0.5}),
    ],
)  # fmt: skip
def test_writer_prior_boxes(op: str, attrs: dict[str, Any], tmp_path: Path) -> None:
    """The sizes as the model's inputs: written as PriorBox-8 / PriorBoxClustered-1 over them."""
    sizes, image = np.array([3, 5], np.int64), np.array([24, 30], np.int64)
    y = emit(op, [ph("sizes", sizes, ("two",)), ph("image", image)], attrs)
    written_runs_alike(tl.Model({"y": y}), {"sizes": sizes, "image": image}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("shape", [(2, 2), (1, 3), (4, 1)])
def test_writer_bilinear_roi_pool(shape: tuple[int, int], tmp_path: Path) -> None:
    x = rand_f32(2, 3, 7, 8, rng=RNG)
    y = emit("BilinearRoiPool", [ph("x", x), ph("rois", UNIT_ROIS)], {"pooled_shape": shape})
    written_runs_alike(tl.Model({"y": y}), {"x": x, "rois": UNIT_ROIS}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("mode", "bins", "scale"), [("average", 1, 1.0), ("bilinear", 2, 0.1)])
def test_writer_ps_roi_pool(mode: str, bins: int, scale: float, tmp_path: Path) -> None:
    channels = 2 * (9 if mode == "average" else bins * bins)
    x = rand_f32(2, channels, 8, 9, rng=RNG)
    attrs = {
        "mode": mode,
        "output_dim": 2,
        "group_size": 3,
        "spatial_scale": scale,
        "spatial_bins_x": bins,
        "spatial_bins_y": bins,
    }
    y = emit("PsRoiPool", [ph("x", x), ph("rois", PS_ROIS)], attrs)
    feeds = {"x": x, "rois": PS_ROIS}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("with_offsets", [False, True])
def test_writer_deformable_ps_roi_pool(with_offsets: bool, tmp_path: Path) -> None:
    x, offsets = rand_f32(2, 8, 8, 9, rng=RNG), rand_f32(3, 4, 2, 2, rng=RNG)
    attrs = {
        "output_dim": 2,
        "group_size": 2,
        "spatial_scale": 0.5,
        "spatial_bins_x": 2,
        "spatial_bins_y": 3,
        "trans_std": 0.2,
        "part_size": 2,
    }
    args, feeds = [ph("x", x), ph("rois", PS_ROIS)], {"x": x, "rois": PS_ROIS}
    if with_offsets:
        args.append(ph("offsets", offsets))
        feeds["offsets"] = offsets
    y = emit("DeformablePsRoiPool", args, attrs)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("ratio", "clockwise"), [(0, 0), (2, 1)])
def test_writer_roi_align_rotated(ratio: int, clockwise: int, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 8, 9, rng=RNG)
    rois = np.array([[4.0, 3.0, 5.0, 2.0, 0.4], [1.0, 7.0, 6.0, 3.0, -2.0]], np.float32)
    indices = np.array([1, 0], np.int32)
    attrs = {
        "output_height": 2,
        "output_width": 3,
        "sampling_ratio": ratio,
        "spatial_scale": 1.0,
        "clockwise": clockwise,
    }
    y = emit("RoiAlignRotated", [ph("x", x), ph("rois", rois), ph("i", indices)], attrs)
    feeds = {"x": x, "rois": rois, "i": indices}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("framework", ["", "tensorflow"])
def test_writer_proposal(framework: str, tmp_path: Path) -> None:
    scores = RNG.uniform(0, 1, (2, 8, 3, 4)).astype(np.float32)
    deltas = (RNG.standard_normal((2, 16, 3, 4)) * 0.3).astype(np.float32)
    image = np.array([50.0, 60.0, 1.0], np.float32)
    attrs = {
        "base_size": 16,
        "pre_nms_topn": 30,
        "post_nms_topn": 5,
        "nms_thresh": 0.7,
        "feat_stride": 16,
        "min_size": 4,
        "ratio": [0.5, 2.0],
        "scale": [1.0, 2.0],
        "clip_after_nms": 1,
        "normalize": 1,
        "framework": framework,
    }
    args = [ph("scores", scores), ph("deltas", deltas), ph("image", image)]
    rois, probs = emit_node("Proposal", args, attrs)
    feeds = {"scores": scores, "deltas": deltas, "image": image}
    model = tl.Model({"rois": rois, "probs": probs})
    written_runs_alike(model, feeds, tmp_path, rtol=1e-5, atol=1e-5)
