"""OpenVINO DetectionOutput (v1, v8) and GenerateProposals (v9) read by tensorloop and written
back, against the CPU plugin: SSD-like priors and box deltas, every attribute."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset8, opset9  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    edit_ir,
    ph,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402

RNG = np.random.default_rng(11)
VARIANCE = [0.1, 0.1, 0.2, 0.2]


# -- DetectionOutput ------------------------------------------------------------------------------
def _grid_priors(cells: int, sizes: list[float], ratios: list[float]) -> Array:
    """[P, 4] normalized SSD priors: every size and ratio centred on each cell of a grid."""
    boxes = []
    for i in range(cells):
        for j in range(cells):
            cx, cy = (j + 0.5) / cells, (i + 0.5) / cells
            for s in sizes:
                for r in ratios:
                    w, h = s * np.sqrt(r), s / np.sqrt(r)
                    boxes.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
    return np.array(boxes, np.float32)


def _priors_input(
    boxes: Array, batch: int = 1, encoded: bool = False, pixels: tuple[int, int] | None = None
) -> Array:
    """The priors input [batch, 1 or 2, P·S]: boxes (in pixels with a leading batch column when
    ``pixels`` gives the image's height and width), then variances unless ``encoded``."""
    if pixels is not None:
        h, w = pixels
        scaled = boxes * np.array([w, h, w, h], np.float32)
        boxes = np.concatenate([np.zeros((len(boxes), 1), np.float32), scaled], axis=1)
    rows = [boxes.reshape(-1)]
    if not encoded:
        rows.append(np.resize(np.array(VARIANCE, np.float32), boxes.size))
    one = np.stack(rows)[None]
    per_image = [one * np.float32(1 + 0.02 * b) for b in range(batch)]
    return np.concatenate(per_image).astype(np.float32)


def _scores(batch: int, priors: int, classes: int, sharp: float = 3.0) -> Array:
    logits = RNG.standard_normal((batch, priors, classes)) * sharp
    e = np.exp(logits - logits.max(-1, keepdims=True))
    probs: Array = (e / e.sum(-1, keepdims=True)).reshape(batch, -1)
    return probs.astype(np.float32)


def _deltas(batch: int, priors: int, locs: int, scale: float) -> Array:
    return (RNG.standard_normal((batch, priors * locs * 4)) * scale).astype(np.float32)


def _attrs(version: str, classes: int, **given: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "keep_top_k": [30],
        "nms_threshold": 0.45,
        "code_type": "caffe.PriorBoxParameter.CENTER_SIZE",
        "normalized": True,
        "confidence_threshold": 0.05,
        "top_k": 40,
    }
    attrs.update(given)
    if version == "v1":
        attrs["num_classes"] = classes
    return attrs


DO_CASES: list[dict[str, Any]] = [
    {},
    {"background_label_id": 2, "keep_top_k": [-1], "top_k": 6},
    {
        "code_type": "caffe.PriorBoxParameter.CORNER",
        "clip_before_nms": True,
        "clip_after_nms": True,
        "nms_threshold": 0.3,
    },
    {"variance_encoded_in_target": True, "keep_top_k": [12], "top_k": -1},
    {"share_location": False, "background_label_id": -1, "keep_top_k": [-1], "top_k": -1},
    {"decrease_label_id": True, "keep_top_k": [20], "confidence_threshold": 0.2},
    {"decrease_label_id": True, "share_location": False, "top_k": 15, "keep_top_k": [-1]},
    {"normalized": False, "input_height": 60, "input_width": 80, "clip_after_nms": True},
    {"confidence_threshold": 0.0, "nms_threshold": 0.7, "keep_top_k": [100], "top_k": -1},
]


def _do_inputs(case: dict[str, Any], batch: int, per_image_priors: bool) -> tuple[Array, ...]:
    boxes = _grid_priors(3, [0.2, 0.45], [1.0, 2.0, 0.5])
    count, classes = len(boxes), 4
    encoded = bool(case.get("variance_encoded_in_target"))
    pixels = None if case.get("normalized", True) else (60, 80)
    priors = _priors_input(boxes, batch if per_image_priors else 1, encoded, pixels)
    locs = 1 if case.get("share_location", True) else classes
    corner = case.get("code_type", "").endswith("CORNER")
    scale = (0.05 if corner else 0.5) * (0.1 if encoded else 1.0)
    return _deltas(batch, count, locs, scale), _scores(batch, count, classes), priors


def _do_check(version: str, attrs: dict[str, Any], arrays: tuple[Array, ...], tmp: Path) -> Any:
    module = opset1 if version == "v1" else opset8

    def build(*params: Any) -> Any:
        return module.detection_output(*params[:3], attrs, *params[3:])

    return check(build, *arrays, tmp_path=tmp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("version", ["v1", "v8"])
@pytest.mark.parametrize("case", range(len(DO_CASES)))
def test_detection_output(version: str, case: int, tmp_path: Path) -> None:
    given = DO_CASES[case]
    arrays = _do_inputs(given, 2, per_image_priors=case % 2 == 1)
    got = _do_check(version, _attrs(version, 4, **given), arrays, tmp_path)
    out = next(iter(got.values()))
    assert (out[0, 0, :, 0] >= 0).sum() > 2, "the case must detect something"


@pytest.mark.parametrize("version", ["v1", "v8"])
@pytest.mark.parametrize(
    "given",
    [
        {"objectness_score": 0.4},
        {"objectness_score": 0.6, "share_location": False, "keep_top_k": [-1], "top_k": 8},
        {"objectness_score": 0.5, "decrease_label_id": True, "confidence_threshold": 0.1},
        {"objectness_score": 0.3, "code_type": "caffe.PriorBoxParameter.CORNER"},
    ],
)
def test_detection_output_with_arm_inputs(
    version: str, given: dict[str, Any], tmp_path: Path
) -> None:
    """RefineDet's two extra inputs: arm_conf drops weak priors, arm_loc moves them first."""
    loc, conf, priors = _do_inputs(given, 2, per_image_priors=False)
    count = priors.shape[2] // 4
    arm_conf = _scores(2, count, 2, sharp=1.5)
    corner = given.get("code_type", "").endswith("CORNER")
    arm_loc = np.asarray(RNG.standard_normal(loc.shape) * (0.05 if corner else 0.3), np.float32)
    arrays = (loc, conf, priors, arm_conf, arm_loc)
    got = _do_check(version, _attrs(version, 4, **given), arrays, tmp_path)
    assert (next(iter(got.values()))[0, 0, :, 0] >= 0).any()


def test_detection_output_stops_at_a_prior_of_batch_minus_one(tmp_path: Path) -> None:
    """Unnormalized priors end at the first whose batch column is -1: those after never score."""
    given = {"normalized": False, "input_height": 60, "input_width": 80, "keep_top_k": [-1]}
    loc, conf, priors = _do_inputs(given, 1, per_image_priors=False)
    priors[0, 0, 5 * 10] = -1  # prior 10 ends the list
    attrs = _attrs("v8", 4, **given)
    got = next(iter(_do_check("v8", attrs, (loc, conf, priors), tmp_path).values()))[0, 0]
    rows = got[: int(np.flatnonzero(got[:, 0] == -1)[0])]
    assert len(rows) > 0
    listed = conf.reshape(-1, 4)[:10]
    assert all(np.isclose(listed[:, int(c)], s).any() for c, s in rows[:, 1:3])


# -- GenerateProposals ----------------------------------------------------------------------------
def _anchors(h: int, w: int, stride: int = 16) -> Array:
    """[H, W, A, 4] pixel anchors of sizes 16 and 40, ratios 0.5, 1, 2, centred on each cell."""
    base = []
    for size in (16.0, 40.0):
        for ratio in (0.5, 1.0, 2.0):
            bw, bh = size / np.sqrt(ratio), size * np.sqrt(ratio)
            base.append([-bw / 2, -bh / 2, bw / 2, bh / 2])
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    centres = (np.stack([xs, ys, xs, ys], -1) + 0.5) * stride
    return (centres[:, :, None, :] + np.array(base)[None, None]).astype(np.float32)


def _gp_inputs(batch: int, h: int, w: int, info: list[float]) -> tuple[Array, ...]:
    anchors = _anchors(h, w)
    a = anchors.shape[2]
    # Inputs of their own (the same in any test order), each case keeping some proposals.
    rng = np.random.default_rng([batch, h, w, len(info), 5])
    deltas = (rng.standard_normal((batch, 4 * a, h, w)) * 0.3).astype(np.float32)
    scores = rng.uniform(0, 1, (batch, a, h, w)).astype(np.float32)
    im_info = np.array([[v * (1 + 0.1 * b) for v in info] for b in range(batch)], np.float32)
    return im_info, anchors, deltas, scores


GP_CASES: list[dict[str, Any]] = [
    {"min_size": 4.0, "nms_threshold": 0.7, "pre_nms_count": 60, "post_nms_count": 20},
    {
        "min_size": 0.0,
        "nms_threshold": 0.5,
        "pre_nms_count": 200,
        "post_nms_count": 40,
        "normalized": False,
    },
    {
        "min_size": 30.0,
        "nms_threshold": 0.6,
        "pre_nms_count": 30,
        "post_nms_count": 25,
        "roi_num_type": "i32",
    },
    {
        "min_size": 8.0,
        "nms_threshold": 0.3,
        "pre_nms_count": 1000,
        "post_nms_count": 500,
        "normalized": False,
        "roi_num_type": "i32",
    },
]


@pytest.mark.parametrize("case", range(len(GP_CASES)))
@pytest.mark.parametrize("info", [[64.0, 96.0, 1.0], [56.0, 80.0, 1.5, 0.5]])
@pytest.mark.parametrize("size", [(4, 6), (3, 3)])
def test_generate_proposals(
    case: int, info: list[float], size: tuple[int, int], tmp_path: Path
) -> None:
    attrs = GP_CASES[case]
    arrays = _gp_inputs(2, *size, info)
    got = check(
        lambda *p: list(opset9.generate_proposals(*p, **attrs).outputs()),
        *arrays,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-4,
    )
    counts = next(v for v in got.values() if v.ndim == 1 and v.dtype.kind == "i")
    assert counts.dtype == (np.int32 if attrs.get("roi_num_type") == "i32" else np.int64)
    assert (counts > 0).all() and (counts <= attrs["post_nms_count"]).all()


def _cpu_run(arrays: tuple[Array, ...], tmp_path: Path, **attrs: Any) -> list[Array]:
    """The CPU plugin's outputs of GenerateProposals-9 with ``attrs``."""
    params = [opset1.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    path = save_ir(list(opset9.generate_proposals(*params, **attrs).outputs()), params, tmp_path)
    compiled = compile_cpu(path)
    theirs = compiled({f"x{i}": a for i, a in enumerate(arrays)})
    return [np.asarray(theirs[o]) for o in compiled.outputs]


def _eta_ir(arrays: tuple[Array, ...], tmp_path: Path, eta: str, **attrs: Any) -> Path:
    """GenerateProposals-9 IR with nms_eta set to ``eta`` in the text: OpenVINO's Python API
    builds only nms_eta 1."""
    params = [opset1.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    node = opset9.generate_proposals(*params, **attrs)
    path = save_ir(list(node.outputs()), params, tmp_path)
    edit_ir(path, 'nms_eta="1"', f'nms_eta="{eta}"')
    return path


def test_generate_proposals_adapts_the_nms_threshold_as_the_spec_says(tmp_path: Path) -> None:
    """nms_eta < 1 lowers the threshold by nms_eta after each box kept while it is above 0.5
    (OpenVINO refuses any nms_eta but 1). From 0.6 with eta 0.5 it is 0.3 after the first box,
    which every later box is held to: the plugin's plain NMS at 0.3 gives the same list."""
    arrays = _gp_inputs(2, 4, 5, [64.0, 80.0, 1.0])
    common = {"min_size": 2.0, "pre_nms_count": 80, "post_nms_count": 30}
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    path = _eta_ir(arrays, tmp_path, "0.5", nms_threshold=0.6, **common)
    with pytest.raises(RuntimeError, match="nms_eta"):
        ov.Core().read_model(str(path))
    model = tl.load(path)
    ours = list(model.run(feeds).values())
    sub = tmp_path / "at_0.3"
    sub.mkdir()
    wanted = _cpu_run(arrays, sub, nms_threshold=0.3, **common)
    for got, want in zip(ours, wanted, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    written = tmp_path / "w.xml"
    tl.save(model, written)
    assert 'nms_eta="0.5"' in written.read_text()
    for got, want in zip(tl.load(written).run(feeds).values(), ours, strict=True):
        np.testing.assert_array_equal(got, want)


# -- the writer: DetectionOutput and GenerateProposals ---------------------------------------------


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("code_type", ["corner", "center_size"])
def test_writer_detection_output(code_type: str, tmp_path: Path) -> None:
    centres = RNG.uniform(0.2, 0.8, (12, 2))
    sizes = RNG.uniform(0.1, 0.4, (12, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).reshape(-1)
    variance = np.resize(np.array([0.1, 0.1, 0.2, 0.2]), boxes.size)
    priors = np.stack([boxes, variance])[None].astype(np.float32)
    loc = (RNG.standard_normal((2, 12 * 3 * 4)) * 0.3).astype(np.float32)
    conf = RNG.uniform(0, 1, (2, 12 * 3)).astype(np.float32)
    attrs = {
        "code_type": code_type,
        "share_location": 0,
        "nms_threshold": 0.4,
        "confidence_threshold": 0.2,
        "top_k": 6,
        "keep_top_k": 9,
        "normalized": 1,
        "clip_after_nms": 1,
    }
    args = [ph("loc", loc), ph("conf", conf), ph("priors", priors)]
    y = emit("DetectionOutput", args, attrs)
    feeds = {"loc": loc, "conf": conf, "priors": priors}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_generate_proposals(tmp_path: Path) -> None:
    ys, xs = np.meshgrid(np.arange(3) * 16.0, np.arange(4) * 16.0, indexing="ij")
    corners = np.stack([xs, ys, xs + 20, ys + 28], -1)[:, :, None, :]
    moved = corners + np.array([2.0, -3.0, 10.0, 5.0])
    anchors = np.concatenate([corners, moved], axis=2).astype(np.float32)
    info = np.array([[48.0, 64.0, 1.0]], np.float32)
    deltas = (RNG.standard_normal((1, 8, 3, 4)) * 0.3).astype(np.float32)
    scores = RNG.uniform(0, 1, (1, 2, 3, 4)).astype(np.float32)
    attrs = {
        "min_size": 2.0,
        "nms_threshold": 0.6,
        "pre_nms_count": 20,
        "post_nms_count": 8,
        "normalized": 0,
    }
    args = [ph("info", info), ph("anchors", anchors), ph("deltas", deltas), ph("s", scores)]
    rois, probs, counts = emit_node("GenerateProposals", args, attrs)
    feeds = {"info": info, "anchors": anchors, "deltas": deltas, "s": scores}
    model = tl.Model({"rois": rois, "probs": probs, "counts": counts})
    written_runs_alike(model, feeds, tmp_path, rtol=1e-5, atol=1e-5)
