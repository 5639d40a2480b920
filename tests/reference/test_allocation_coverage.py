"""Every op's allocation is accounted for (``tensorloop.reference.allocation``).

- **The registry walk.** Every op with a type rule or a reference kernel is predicted (its
  outputs' shapes known before it runs), bounded by its inputs (``BOUNDED_BY_INPUTS``, with the
  factor ``bound_factor`` names), control flow (``CONTROL_FLOW``, accounted by its bodies) or
  held (``HELD``: it hands out a tensor already held). A new op fails here until it is put in
  one of them.
- **Predictions are exact.** On every node of ONNX's backend node tests and on the cases below
  (ops ONNX's tests do not reach, and hostile inputs: empty tensors of many slices, huge
  targets), the reference interpreter predicts each node's outputs before running it and
  compares them after: predicted == actual, output by output.
- **Bounds hold.** On the same nodes, the outputs of each bounded op that are not predicted take
  at most ``bound_factor(op)`` times the inputs' bytes, plus ``BOUND_SLACK``.
- **Refusals.** A dangerous op newly predicted is refused before it allocates, naming the node,
  on the reference and compiled backends.
"""

from __future__ import annotations

import re
import struct
import warnings
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tensorloop as tl
from ops_harness import FAST
from tensorloop.errors import ResourceLimitError, TensorloopError
from tensorloop.ir.graph import Graph, Node, Value
from tensorloop.ir.opdef import get_opdef, registered_ops
from tensorloop.limits import nbytes
from tensorloop.reference import allocation
from tensorloop.reference.allocation import (
    BOUND_SLACK,
    BOUNDED_BY_INPUTS,
    CONTROL_FLOW,
    HELD,
    bound_factor,
    output_shapes,
    predicted,
)
from tensorloop.reference.interpreter import Interpreter
from tensorloop.reference.registry import kernel_ops
from tensorloop.reference.runtime import RunState
from tensorloop.tensor.dtypes import DType, from_numpy
from tensorloop.tensor.types import SequenceType, TensorType, Type, tensor_type_of

_ORIGINAL_RUN = tl.Session.run  # before the suite-wide hook reruns each run on other backends
_ORIGINAL_RUN_NODE = Interpreter.run_node

ALL_OPS = sorted(set(registered_ops()) | set(kernel_ops()))
PREDICTED = [op for op in ALL_OPS if predicted(op)]
BOUNDED = sorted(BOUNDED_BY_INPUTS)


# -- the registry walk -----------------------------------------------------------------------------


def test_every_op_is_predicted_bounded_control_flow_or_held() -> None:
    unaccounted = [
        op
        for op in ALL_OPS
        if not (predicted(op) or op in BOUNDED_BY_INPUTS or op in CONTROL_FLOW or op in HELD)
    ]
    assert unaccounted == [], (
        f"ops whose allocation nothing accounts for: {unaccounted}; give each a prediction "
        "(allocation._predicts) or put it in BOUNDED_BY_INPUTS, CONTROL_FLOW or HELD"
    )


def test_the_sets_name_registered_ops_and_do_not_overlap() -> None:
    named = set(allocation._PREDICTORS) | BOUNDED_BY_INPUTS | CONTROL_FLOW | HELD
    assert sorted(named - set(ALL_OPS)) == []
    assert sorted(set(allocation.WIDER_BOUNDS) - BOUNDED_BY_INPUTS) == []
    for a, b in [
        (CONTROL_FLOW, HELD),
        (CONTROL_FLOW, BOUNDED_BY_INPUTS),
        (HELD, BOUNDED_BY_INPUTS),
        (CONTROL_FLOW | HELD, set(PREDICTED)),
    ]:
        assert sorted(a & b) == []
    # an op both predicted and bounded predicts some outputs only: the bound covers the others
    partial = sorted(set(PREDICTED) & BOUNDED_BY_INPUTS)
    assert partial == ["MatrixNms", "MulticlassNms", "Unique"]
    assert all(f > allocation.BOUND_FACTOR for f in allocation.WIDER_BOUNDS.values())
    assert bound_factor("Relu") == allocation.BOUND_FACTOR
    assert bound_factor("Unique") == 17
    assert bound_factor("Einsum") is None


def test_the_security_doc_counts_the_sets() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text("utf-8")
    assert f"*predicted* ({len(PREDICTED)} ops)" in text
    assert f"(`BOUNDED_BY_INPUTS`, {len(BOUNDED)} ops)" in text
    assert f"(`WIDER_BOUNDS`, {len(allocation.WIDER_BOUNDS)} ops:" in text


# -- the audit: each node's prediction and bound checked as the interpreter runs it ----------------


def _bytes(x: Any) -> int:
    """Bytes of a run-time value as ``limits.nbytes`` counts them (a sequence or optional: the
    tensors it holds; 8 a string)."""
    if x is None:
        return 0
    if isinstance(x, list | tuple):
        return sum(_bytes(v) for v in x)
    a = np.asarray(x)
    return 8 * a.size if a.dtype == object else nbytes(a.shape, from_numpy(a))


@dataclass
class Audit:
    """What the interpreter saw: per op, how many nodes were checked, and every finding."""

    exact: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    bounded: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    findings: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    worst: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    broken: dict[str, str] = field(default_factory=dict)

    def check(self, node: Node, inputs: Sequence[Any], outputs: Sequence[Any], where: str) -> None:
        op = node.op
        attrs = get_opdef(op).resolve_attrs(node.attrs, node.describe())
        shapes = output_shapes(node, attrs, inputs) if predicted(op) else None
        loose = list(range(len(outputs)))  # the outputs a bound must cover
        if predicted(op):
            if shapes is None:
                self.findings[op].append(f"{where}: no prediction for {node.describe()}")
                return
            loose = []
            for k, (shape, out) in enumerate(zip(shapes, outputs, strict=True)):
                if shape is None:
                    loose.append(k)
                elif shape != np.shape(out):
                    self.findings[op].append(
                        f"{where}: {node.describe()} output #{k}: predicted {shape}, "
                        f"got {np.shape(out)} (attrs {node.attrs}, inputs "
                        f"{[np.shape(x) if x is not None else None for x in inputs]})"
                    )
            if loose and op not in BOUNDED_BY_INPUTS:
                self.findings[op].append(f"{where}: outputs {loose} not predicted or bounded")
            self.exact[op] += 1
        if op in BOUNDED_BY_INPUTS:
            factor = bound_factor(op)
            assert factor is not None
            took, given = sum(_bytes(outputs[k]) for k in loose), sum(map(_bytes, inputs))
            if took > factor * given + BOUND_SLACK:
                self.findings[op].append(
                    f"{where}: {node.describe()} outputs {loose} take {took} bytes, more than "
                    f"{factor} x {given} + {BOUND_SLACK}"
                )
            if given:
                self.worst[op] = max(self.worst[op], took / given)
            self.bounded[op] += 1

    def install(self, mp: pytest.MonkeyPatch, where: list[str]) -> None:
        audit = self

        def run_node(self: Interpreter, node: Node, inputs: Sequence[Any]) -> list[Any]:
            outputs = _ORIGINAL_RUN_NODE(self, node, inputs)
            audit.check(node, inputs, outputs, where[0])
            return outputs

        mp.setattr(Interpreter, "run_node", run_node)


# -- cases ONNX's node tests do not reach, and hostile ones ----------------------------------------

F32, I64 = np.float32, np.int64
RNG = np.random.default_rng(5)


def _f(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(F32)


def _i(*values: Any) -> np.ndarray[Any, Any]:
    return np.array(values, I64)


def _boxes(b: int, n: int) -> np.ndarray[Any, Any]:
    corners = RNG.uniform(0, 0.5, (b, n, 4)).astype(F32)
    corners[..., 2:] += corners[..., :2]
    return corners


@dataclass(frozen=True)
class Case:
    """One node of ``op`` on ``inputs`` (arrays; lists are sequences), with ``attrs``."""

    op: str
    inputs: tuple[Any, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    outputs: int | None = None  # how many outputs the node has (default: as the op makes)
    name: str = ""

    @property
    def id(self) -> str:
        return f"{self.op}-{self.name}" if self.name else self.op


def _ps_inputs() -> tuple[Any, ...]:
    rois = np.array([[0, 0.5, 1.0, 6.0, 5.5], [1, -2.5, 2.0, 3.0, 9.5]], F32)
    return (_f(2, 8, 8, 9), rois)


def _detection_inputs() -> tuple[Any, ...]:
    centres, sizes = RNG.uniform(0.2, 0.8, (12, 2)), RNG.uniform(0.1, 0.4, (12, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).reshape(-1)
    variance = np.resize(np.array([0.1, 0.1, 0.2, 0.2]), boxes.size)
    priors = np.stack([boxes, variance])[None].astype(F32)
    loc = (RNG.standard_normal((2, 12 * 3 * 4)) * 0.3).astype(F32)
    conf = RNG.uniform(0, 1, (2, 12 * 3)).astype(F32)
    return (loc, conf, priors)


def _proposal_inputs() -> tuple[Any, ...]:
    scores = RNG.uniform(0, 1, (2, 8, 3, 4)).astype(F32)
    deltas = (RNG.standard_normal((2, 16, 3, 4)) * 0.3).astype(F32)
    return (scores, deltas, np.array([50.0, 60.0, 1.0], F32))


def _generate_proposals_inputs() -> tuple[Any, ...]:
    ys, xs = np.meshgrid(np.arange(3) * 16.0, np.arange(4) * 16.0, indexing="ij")
    corners = np.stack([xs, ys, xs + 20, ys + 28], -1)[:, :, None, :]
    anchors = np.concatenate([corners, corners + np.array([2.0, -3.0, 10.0, 5.0])], 2)
    info = np.array([[48.0, 64.0, 1.0]], F32)
    deltas = (RNG.standard_normal((1, 8, 3, 4)) * 0.3).astype(F32)
    scores = RNG.uniform(0, 1, (1, 2, 3, 4)).astype(F32)
    return (info, anchors.astype(F32), deltas, scores)


_TREE = {
    "nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [1, 0, 0],
    "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"], "nodes_values": [0.0, 0.0, 0.0],
    "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0], "target_treeids": [0, 0],
    "target_nodeids": [1, 2], "target_weights": [1.5, -2.0],
}  # fmt: skip
"""One stump on feature 1, its two leaves voting for targets (classes) 0 and 2."""


PROPOSAL = {
    "base_size": 16,
    "pre_nms_topn": 30,
    "post_nms_topn": 5,
    "nms_thresh": 0.7,
    "feat_stride": 16,
    "min_size": 4,
    "ratio": [0.5, 2.0],
    "scale": [1.0, 2.0],
}
DETECTION = {
    "share_location": 0,
    "nms_threshold": 0.4,
    "confidence_threshold": 0.2,
    "top_k": 6,
    "keep_top_k": 9,
    "normalized": 1,
}
STRINGS = np.array(["a b  c", "", "x,y,,z", "héllo wörld", "日本 語"], object)
EMPTY_ROWS = np.zeros((1000, 0), F32)  # no bytes, many (empty) slices

CASES: list[Case] = [
    # ops ONNX's node tests do not reach
    Case("PsRoiPool", _ps_inputs(), {"output_dim": 2, "group_size": 2}),
    Case(
        "PsRoiPool",
        (_f(2, 4, 8, 9), _ps_inputs()[1]),
        {"mode": "bilinear", "output_dim": 2, "group_size": 5, "spatial_bins_x": 2},
        name="bilinear",
    ),
    Case("DeformablePsRoiPool", _ps_inputs(), {"output_dim": 2, "group_size": 2}),
    Case(
        "RoiAlignRotated",
        (_f(2, 3, 8, 9), np.array([[4, 3, 5, 2, 0.4], [1, 7, 6, 3, -2.0]], F32), _i(1, 0)),
        {"output_height": 2, "output_width": 3},
    ),
    Case(
        "MaxRoiPool",
        (_f(2, 3, 8, 9), np.array([[0, 0.5, 1.0, 6.0, 5.5], [1, 2, 2, 2, 2]], F32)),
        {"pooled_shape": [3, 2], "spatial_scale": 0.5},
    ),
    Case(
        "BilinearRoiPool",
        (_f(2, 3, 8, 9), np.array([[0, 0.1, 0.2, 0.7, 0.9], [1, -0.2, 0.3, 0.6, 1.2]], F32)),
        {"pooled_shape": [3, 2]},
    ),
    Case(
        "PriorBox",
        (np.array([30, 40], np.int64), np.array([300, 400], np.int64)),
        {
            "min_size": [2.0, 4.0],
            "max_size": [5.0, 9.0],
            "aspect_ratio": [2.0],
            "flip": 1,
            "offset": 0.5,
        },
    ),
    Case(
        "PriorBoxClustered",
        (np.array([20, 10], np.int32), np.array([300, 400], np.int32)),
        {"width": [2.0, 4.5], "height": [3.0, 1.5], "offset": 0.5},
    ),
    Case("Proposal", _proposal_inputs(), PROPOSAL),
    Case("DetectionOutput", _detection_inputs(), DETECTION),
    Case(
        "DetectionOutput",
        _detection_inputs(),
        {**DETECTION, "keep_top_k": -1},
        name="top_k",
    ),
    Case(
        "GenerateProposals",
        _generate_proposals_inputs(),
        {"min_size": 2.0, "nms_threshold": 0.6, "pre_nms_count": 20, "post_nms_count": 8},
    ),
    Case(
        "MulticlassNms",
        (_boxes(2, 8), RNG.uniform(0, 1, (2, 3, 8)).astype(F32)),
        {"iou_threshold": 0.3, "sort_result": "class", "keep_top_k": 5, "background_class": 0},
    ),
    Case(
        "MulticlassNms",
        (_boxes(2, 8)[:, :, :], RNG.uniform(0, 1, (2, 8)).astype(F32), np.array([3, 5], np.int32)),
        {"iou_threshold": 0.3},
        name="roisnum",
    ),
    Case(
        "MatrixNms",
        (_boxes(2, 8), RNG.uniform(0.01, 1, (2, 3, 8)).astype(F32)),
        {"post_threshold": 0.2, "sort_result": "score", "keep_top_k": 7},
    ),
    Case(
        "NmsRotated",
        (
            np.concatenate([_boxes(2, 9), RNG.uniform(-3, 3, (2, 9, 1))], -1).astype(F32),
            RNG.uniform(0, 1, (2, 2, 9)).astype(F32),
            _i(3),
            np.array(0.2, F32),
            np.array(0.1, F32),
        ),
    ),
    Case(
        "SparseFillEmptyRows",
        (_f(3), _i(5, 4), np.array([[0, 1], [3, 2], [0, 3]], I64), np.array(9.0, F32)),
    ),
    Case("StringTensorUnpack", (STRINGS,)),
    Case(
        "StringTensorPack",
        (
            np.array([0, 2, 1], np.int32),
            np.array([3, 2, 5], np.int32),
            np.arange(65, 75, dtype=np.uint8),
        ),
    ),
    Case("StringSplit", (STRINGS,), name="whitespace"),
    Case("StringSplit", (STRINGS,), {"delimiter": ",", "maxsplit": 2}, name="comma"),
    Case("GlobalLpPool", (_f(2, 3, 4, 5),)),
    Case("Inverse", (_f(3, 4, 4),)),
    Case("PrefixSum", (_f(3, 4),), {"axis": 1}),
    Case("Size", (_f(3, 4),)),
    Case("Check", (np.array(True), _f(3)), {"message": "no"}),
    Case("ConcatFromSequence", ([_f(2, 3), _f(4, 3)],), {"axis": 0}),
    Case("ConcatFromSequence", ([_f(2, 3), _f(2, 3)],), {"axis": 1, "new_axis": 1}, name="new"),
    Case("SequenceErase", ([_f(2, 3), _f(4, 3)], _i(0))),
    Case("CausalConvWithState", (_f(2, 3, 7), _f(3, 1, 4)), {"activation": "silu"}),
    Case(
        "LinearAttention",
        (_f(2, 5, 8), _f(2, 5, 8), _f(2, 5, 6)),
        {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
    ),
    Case("FlexAttention", (_f(1, 2, 3, 4), _f(1, 2, 5, 4), _f(1, 2, 5, 6))),
    Case("TreeEnsembleRegressor", (_f(4, 2),), {**_TREE, "n_targets": 3, "target_ids": [0, 2]}),
    Case(
        "TreeEnsembleClassifier",
        (_f(4, 2),),
        {
            **{k: v for k, v in _TREE.items() if k.startswith("nodes")},
            **{k.replace("target", "class"): v for k, v in _TREE.items() if k.startswith("target")},
            "class_ids": [0, 1],
            "classlabels_int64s": [5, 6],
        },
    ),
    Case("RandomNormal", (), {"shape": [3, 4], "seed": 1.0}),
    Case("RandomUniform", (), {"shape": [2, 0, 5], "dtype": DType.float64}),
    Case("RandomNormalLike", (_i(1, 2, 3),), {"dtype": DType.float16}),
    Case("Multinomial", (_f(3, 5),), {"sample_size": 40, "seed": 2.0, "dtype": DType.int64}),
    Case("PhiloxUniform", (_i(2, 3), np.array(-1.0, F32), np.array(2.0, F32)), {"op_seed": 5}),
    Case("PhiloxMultinomial", (np.abs(_f(3, 4)), _i(6)), {"global_seed": 1}),
    # hostile: outputs far larger than their inputs
    Case("Einsum", (_f(30), _f(40)), {"equation": "i,j->ij"}),
    Case("Einsum", (_f(2, 1, 4, 3), _f(5, 3, 6)), {"equation": "...ij,...jk->...ik"}, name="batch"),
    Case("Einsum", (_f(3, 4),), {"equation": "ij"}, name="implicit"),
    Case("DFT", (_f(2, 5, 1), _i(64)), {"onesided": 1}, name="length"),
    Case("DFT", (_f(2, 5, 2), _i(12), _i(0)), {"inverse": 1, "onesided": 1}, name="irfft"),
    Case("STFT", (_f(2, 40, 1), _i(3), None, _i(9)), {"onesided": 0}),
    Case("STFT", (_f(1, 40, 2), _i(1), np.hanning(16).astype(F32)), name="window"),
    Case("AffineGrid", (_f(2, 2, 3), _i(2, 3, 40, 50))),
    Case("AffineGrid", (_f(1, 3, 4), _i(1, 1, 4, 5, 6)), name="3d"),
    Case("GridSample", (_f(1, 3, 4, 4), RNG.uniform(-1, 1, (1, 30, 20, 2)).astype(F32))),
    Case(
        "ConvTranspose",
        (_f(1, 2, 3, 3), _f(2, 3, 3, 3)),
        {"strides": [40, 30], "output_padding": [1, 2], "dilations": [2, 1], "group": 1},
    ),
    Case(
        "ConvTranspose",
        (_f(1, 4, 3), _f(4, 1, 2)),
        {"strides": [3], "output_shape": [50], "group": 2},
        name="output_shape",
    ),
    Case(
        "ConvTranspose",
        (_f(1, 1, 5), _f(1, 1, 3)),
        {"auto_pad": "SAME_UPPER", "strides": [2]},
        name="same",
    ),
    Case("Conv", (_f(1, 1, 2, 2), _f(7, 1, 1, 1)), {"pads": [30, 20, 30, 20]}),
    Case(
        "Conv",
        (_f(1, 1, 9, 9), _f(2, 1, 3, 3)),
        {"dilations": [3, 2], "strides": [2, 1]},
        name="dilated",
    ),
    Case(
        "MaxPool", (_f(1, 2, 3, 3),), {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}
    ),
    Case("AveragePool", (_f(1, 2, 5),), {"kernel_shape": [2], "pads": [1, 1]}, name="padded"),
    Case(
        "MaxUnpool",
        (_f(1, 1, 2, 2), _i(0, 1, 2, 3).reshape(1, 1, 2, 2)),
        {"kernel_shape": [2, 2], "strides": [30, 20]},
    ),
    Case("Resize", (_f(1, 2, 3, 4), None, None, _i(40, 50)), {"axes": [2, 3]}, name="sizes-axes"),
    Case(
        "Resize",
        (_f(1, 2, 3, 4), None, np.array([7.5, 3.3], F32)),
        {"axes": [3, 2]},
        name="scales-axes",
    ),
    Case(
        "Resize",
        (_f(1, 2, 3, 4), None, None, _i(10, 30)),
        {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
        name="not-larger",
    ),
    Case(
        "Resize",
        (_f(1, 2, 3, 4), np.zeros(0, F32), np.array([1, 1, 2.5, 3.7], F32)),
        name="scales",
    ),
    Case("OneHot", (_i(1, 0, 3), _i(9), np.array([0, 1], F32)), {"axis": 0}),
    Case("Range", (np.array(-(1 << 62), I64), np.array(1 << 62, I64), np.array(1 << 59, I64))),
    Case(
        "Range",
        (np.array(1.0, np.float16), np.array(9.0, np.float16), np.array(0.3, np.float16)),
        name="f16",
    ),
    Case("MatMul", (_f(4), _f(4, 6)), name="vector"),
    Case("MatMul", (_f(3, 5), _f(5)), name="vector2"),
    Case("MatMul", (_f(5), _f(5)), name="dot"),
    Case("GatherND", (_f(2, 3, 4), _i(0, 1, 1, 2, 0, 0).reshape(3, 2)), name="tuples"),
    Case("GatherND", (_f(2, 3, 4), _i(0, 2).reshape(2, 1, 1)), {"batch_dims": 1}, name="batch"),
    Case("ArrayFeatureExtractor", (_f(5), _i(0, 3, 3, 1)), name="vector"),
    Case("ArrayFeatureExtractor", (_f(2, 5), _i(0, 3, 3, 1, 4, 4)), name="matrix"),
    Case("NonZero", (np.ones((3, 4, 5), bool),), name="all"),
    Case("NonZero", (np.array(3.0, F32),), name="scalar"),
    Case("TopK", (_f(3, 7), _i(4)), {"axis": 1}),
    Case(
        "TfIdfVectorizer",
        (_i(1, 2, 3, 1, 2, 4).reshape(2, 3),),
        {
            "mode": "TF",
            "min_gram_length": 1,
            "max_gram_length": 2,
            "max_skip_count": 0,
            "ngram_counts": [0, 3],
            "ngram_indexes": [0, 1, 2, 7],
            "pool_int64s": [1, 2, 3, 1, 2],
        },
    ),
    # hostile: empty inputs of many slices, reduced or indexed to non-empty outputs
    Case("ReduceSum", (EMPTY_ROWS, _i(1)), name="empty-axis"),
    Case("ReduceMax", (EMPTY_ROWS, _i(1)), {"keepdims": 0}, name="empty-axis"),
    Case("ReduceL2", (EMPTY_ROWS,), name="empty-all"),
    Case("ReduceMean", (EMPTY_ROWS, np.zeros(0, I64)), {"noop_with_empty_axes": 1}, name="noop"),
    Case("GlobalAveragePool", (np.zeros((50, 40, 0), F32),), name="empty"),
    Case(
        "LayerNormalization",
        (np.zeros((30, 40, 0), F32), np.zeros(0, F32)),
        {"axis": -1},
        outputs=3,
    ),
    Case("Det", (np.zeros((500, 0, 0), F32),), name="empty"),
    Case("Unique", (EMPTY_ROWS,), {"axis": 0}, name="empty-slices"),
    Case("Unique", (np.array([3, 1, 3, 2, 1, 1], np.int8),), name="int8"),
    Case("Unique", (np.zeros(0, F32),), name="empty"),
    Case("MulticlassNms", (np.zeros((300, 0, 4), F32), np.zeros((300, 2, 0), F32)), name="empty"),
    Case("MatrixNms", (np.zeros((300, 0, 4), F32), np.zeros((300, 2, 0), F32)), name="empty"),
    Case(
        "NonMaxSuppression",
        (np.zeros((300, 0, 4), F32), np.zeros((300, 2, 0), F32), _i(5)),
        name="empty",
    ),
    Case(
        "Einsum",
        (np.zeros((40, 0), F32), np.zeros((0, 30), F32)),
        {"equation": "ij,jk->ik"},
        name="empty",
    ),
    Case("MatMul", (np.zeros((40, 0), F32), np.zeros((0, 30), F32)), name="empty"),
    Case(
        "SparseFillEmptyRows",
        (np.zeros(0, F32), _i(300, 1), np.zeros((0, 2), I64), np.array(1.0, F32)),
        name="empty",
    ),
    Case("Shape", (np.zeros((0,) * 30, F32),), name="empty"),
    Case("Size", (np.zeros((0, 7), F32),), name="empty"),
    Case("Cast", (np.ones(100, bool),), {"to": DType.float64}, name="widest"),
    Case("Cast", (np.ones(100, np.int8),), {"to": DType.string}, name="string"),
    Case("DequantizeLinear", (np.ones(64, np.int8), np.array(0.5, F32)), name="int8"),
    Case("GatherElements", (_f(3, 4), np.zeros((3, 9), I64)), {"axis": 1}, name="wide"),
    Case("Compress", (_f(3, 4), np.array([True, False, True])), {"axis": 0}),
    Case("SplitToSequence", (np.zeros((200, 0), F32),), {"axis": 0, "keepdims": 0}, name="empty"),
    Case("ArgMax", (np.zeros((30, 4, 0), F32),), {"axis": 1}, name="empty"),
    Case("TopK", (np.zeros((30, 4, 0), F32), _i(2)), {"axis": 1}, name="empty"),
    Case("NegativeLogLikelihoodLoss", (_f(3, 4, 5), np.zeros((3, 5), I64))),
    Case("Dropout", (_f(3, 4),), outputs=2),
]


def _type(x: Any) -> Type:
    if isinstance(x, list):
        return SequenceType(TensorType(from_numpy(np.asarray(x[0])), ["?"] * np.ndim(x[0])))
    return tensor_type_of(np.asarray(x))


def _graph(case: Case) -> tuple[Graph, list[Any]]:
    g = Graph(case.op.lower())
    values: list[Value | None] = []
    args = []
    for i, x in enumerate(case.inputs):
        if x is None:
            values.append(None)
            continue
        values.append(g.add_input(f"x{i}", _type(x)))
        args.append(x)
    node = g.add_node(case.op, values, case.attrs)
    outs = node.outputs if case.outputs is None else node.outputs[: case.outputs]
    g.set_outputs(list(outs))
    return g, args


def _run_case(case: Case) -> None:
    graph, args = _graph(case)
    Interpreter().run(graph, args)


@cache
def _onnx_cases() -> list[Any]:
    from tensorloop.formats.onnx.backend import node_test_cases

    return node_test_cases()


def _run_onnx_case(case: Any) -> None:
    from tensorloop.formats.onnx.backend import TensorloopBackend, _array

    rep = TensorloopBackend.prepare(case.model, backend="reference")
    for inputs, _ in case.data_sets:
        rep.run([_array(x) for x in inputs])


@pytest.fixture(scope="module")
def audit() -> Iterator[Audit]:
    """Every ONNX node test and every case above run once on the reference interpreter, each
    node audited; a case the interpreter refuses (ONNX's expected failures) is skipped."""
    found = Audit()
    where = [""]
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        mp.setattr(tl.Session, "run", _ORIGINAL_RUN)
        found.install(mp, where)
        for onnx_case in _onnx_cases():
            where[0] = str(onnx_case.name)
            try:
                _run_onnx_case(onnx_case)
            except ResourceLimitError as exc:  # a prediction refused a test's small input
                found.broken[str(onnx_case.name)] = f"{type(exc).__name__}: {exc}"
            except TensorloopError:
                pass  # a case tensorloop fails (onnx_node_expected_failures.txt)
        for case in CASES:
            where[0] = case.id
            try:
                _run_case(case)
            except Exception as exc:  # reported by test_every_case_runs
                found.broken[case.id] = f"{type(exc).__name__}: {exc}"
    yield found


def test_every_case_runs(audit: Audit) -> None:
    """The hand-made cases are all valid (a typo would leave an op unchecked), and no ONNX
    node test is refused for its size."""
    assert audit.broken == {}
    assert sum(audit.exact.values()) > 2000
    assert sum(audit.bounded.values()) > 2000


@pytest.mark.parametrize("op", PREDICTED)
def test_predictions_are_exact(op: str, audit: Audit) -> None:
    assert audit.exact[op] > 0, f"no case ran {op}: add one to CASES"
    assert audit.findings[op] == []


@pytest.mark.parametrize("op", BOUNDED)
def test_bounded_claims_hold(op: str, audit: Audit) -> None:
    unreached = {"Assign"}  # it has no outputs
    if op not in unreached:
        assert audit.bounded[op] > 0, f"no case ran {op}: add one to CASES"
    assert audit.findings[op] == []


def test_the_wider_bounds_are_needed(audit: Audit) -> None:
    """The cases reach past BOUND_FACTOR only for ops with a wider bound of their own."""
    past = sorted(op for op, ratio in audit.worst.items() if ratio > allocation.BOUND_FACTOR)
    assert set(past) <= set(allocation.WIDER_BOUNDS), past


def test_a_prediction_names_each_output_and_totals_their_bytes() -> None:
    graph, _ = _graph(Case("Unique", (EMPTY_ROWS,), {"axis": 0}))
    (node,) = graph.nodes
    attrs = get_opdef("Unique").resolve_attrs(node.attrs, node.describe())
    # only the inverse indices (int64, one a slice) are predicted; the rest are bounded
    assert output_shapes(node, attrs, [EMPTY_ROWS]) == [None, None, (1000,), None]
    assert allocation.output_bytes(node, attrs, [EMPTY_ROWS]) == 8000
    assert allocation.output_shape(node, attrs, [EMPTY_ROWS]) == (1000,)
    # inputs the kernel will refuse predict nothing: its own error names the fault
    assert output_shapes(node, attrs, [np.float32(1)]) is None
    assert allocation.output_bytes(node, attrs, [np.float32(1)]) is None
    state = RunState(limits=tl.Limits(max_tensor_bytes=4000))
    refusal = re.escape(f"{node.describe()} output #2: a tensor int64[1000]")
    with pytest.raises(ResourceLimitError, match=refusal):
        allocation.check_outputs(state, node, attrs, [EMPTY_ROWS])
    graph, _ = _graph(Case("LayerNormalization", (_f(3, 4), _f(4)), outputs=3))
    (node,) = graph.nodes
    attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
    assert output_shapes(node, attrs, [_f(3, 4), _f(4)]) == [(3, 4), (3, 1), (3, 1)]
    assert allocation.output_bytes(node, attrs, [_f(3, 4), _f(4)]) == 4 * (12 + 3 + 3)
    assert allocation.output_shape(node, attrs, [_f(3, 4), _f(4)]) == (3, 4)


# -- drawn cases: the geometry of windows, resizes and equations ----------------------------------


def _audited(case: Case) -> Audit | None:
    """``case`` run and audited on its own; None if the op refuses it (its type rule or kernel)."""
    found = Audit()
    with pytest.MonkeyPatch.context() as mp, np.errstate(all="ignore"):
        mp.setattr(tl.Session, "run", _ORIGINAL_RUN)
        found.install(mp, [case.id])
        try:
            _run_case(case)
        except TensorloopError:
            return None
    return found


def _assert_exact(case: Case) -> None:
    found = _audited(case)
    assume(found is not None)
    assert found is not None and found.exact[case.op] == 1
    assert dict(found.findings) == {}


def _ints_of(draw: Any, n: int, low: int, high: int) -> list[int]:
    return draw(st.lists(st.integers(low, high), min_size=n, max_size=n))


@FAST
@given(st.data())
def test_window_predictions_are_exact(data: st.DataObject) -> None:
    draw = data.draw
    op = draw(st.sampled_from(["Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"]))
    rank = draw(st.integers(1, 2))
    size, kernel = _ints_of(draw, rank, 1, 7), _ints_of(draw, rank, 1, 3)
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": _ints_of(draw, rank, 1, 4)}
    attrs["auto_pad"] = auto_pad
    if auto_pad == "NOTSET":
        attrs["pads"] = _ints_of(draw, 2 * rank, 0, 3)
    if op != "AveragePool" or draw(st.booleans()):
        attrs["dilations"] = _ints_of(draw, rank, 1, 3)
    if op in ("MaxPool", "AveragePool", "LpPool"):
        attrs["ceil_mode"] = draw(st.integers(0, 1))
        inputs: tuple[Any, ...] = (_f(1, 2, *size),)
    elif op == "Conv":
        inputs = (_f(2, 2, *size), _f(3, 2, *kernel))
    else:
        group = draw(st.integers(1, 2))
        attrs["group"] = group
        attrs["output_padding"] = [draw(st.integers(0, s - 1)) for s in attrs["strides"]]
        if draw(st.booleans()):
            attrs["output_shape"] = _ints_of(draw, rank, 1, 30)
        inputs = (_f(1, 2, *size), _f(2, draw(st.integers(1, 3)), *kernel))
    _assert_exact(Case(op, inputs, attrs, outputs=2 if op == "MaxPool" else None))


@FAST
@given(st.data())
def test_resize_predictions_are_exact(data: st.DataObject) -> None:
    draw = data.draw
    shape = _ints_of(draw, 4, 1, 5)
    axes = draw(st.sampled_from([None, [2, 3], [3, 2], [-1], [0, 1, 2, 3]]))
    n = 4 if axes is None else len(axes)
    attrs: dict[str, Any] = {} if axes is None else {"axes": axes}
    attrs["mode"] = draw(st.sampled_from(["nearest", "linear"]))
    if draw(st.booleans()):
        factors = draw(st.lists(st.floats(0.25, 9.0, width=32), min_size=n, max_size=n))
        inputs: tuple[Any, ...] = (_f(*shape), None, np.array(factors, F32))
    else:
        attrs["keep_aspect_ratio_policy"] = draw(
            st.sampled_from(["stretch", "not_larger", "not_smaller"])
        )
        inputs = (_f(*shape), None, None, np.array(_ints_of(draw, n, 1, 40), I64))
    _assert_exact(Case("Resize", inputs, attrs))


@FAST
@given(st.data())
def test_einsum_predictions_are_exact(data: st.DataObject) -> None:
    draw = data.draw
    sizes = dict(zip("ijkl", _ints_of(draw, 4, 0, 4), strict=True))
    count = draw(st.integers(1, 3))
    terms = [draw(st.text("ijkl", min_size=0, max_size=3)) for _ in range(count)]
    terms = ["".join(dict.fromkeys(t)) for t in terms]  # each label once a term
    used = sorted(set("".join(terms)))
    output = draw(st.sampled_from([None, "".join(draw(st.permutations(used)))]))
    broadcast = draw(st.booleans())
    equation = ",".join(f"...{t}" if broadcast else t for t in terms)
    if output is not None:
        equation += "->" + ("..." if broadcast else "") + output
    batch = draw(st.sampled_from([(), (2,), (3, 1)]))

    def dims(k: int, term: str) -> list[int]:
        lead = (batch if k % 2 else batch[-1:]) if broadcast else ()
        return [*lead, *(sizes[c] for c in term)]

    inputs = tuple(_f(*dims(k, t)) for k, t in enumerate(terms))
    _assert_exact(Case("Einsum", inputs, {"equation": equation}))


# -- refusals: a dangerous op refused before it allocates --------------------------------------


def _png_header(width: int, height: int) -> np.ndarray[Any, Any]:
    """A PNG whose header says width x height RGB pixels, with no pixel data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")
    return np.frombuffer(raw, np.uint8).copy()


def _refused_graph(op: str) -> tuple[Graph, dict[str, Any]]:
    """A one-node graph of ``op`` whose output, on the feed, takes far more than 1 MiB."""
    g = Graph(op.lower())

    def param(name: str, x: np.ndarray[Any, Any], dims: Sequence[Any] | None = None) -> Value:
        t = TensorType(from_numpy(x), list(dims) if dims is not None else ["?"] * x.ndim)
        return g.add_input(name, t)

    big = np.ones(100_000, F32)
    feeds: dict[str, Any]
    if op == "Einsum":
        a, b = param("a", big), param("b", big)
        out = g.add_node(op, [a, b], {"equation": "i,j->ij"}).output
        feeds = {"a": big, "b": big}
    elif op == "DFT":
        x, n = param("x", np.ones((1, 4, 1), F32)), param("n", _i(1 << 20), [])
        out = g.add_node(op, [x, n], {}).output
        feeds = {"x": np.ones((1, 4, 1), F32), "n": np.array(1 << 20, I64)}
    elif op == "STFT":
        x, step = param("x", np.ones((1, 4, 1), F32)), param("step", _i(1), [])
        out = g.add_node(op, [x, step, None, param("n", _i(1), [])], {"onesided": 0}).output
        feeds = {
            "x": np.ones((64, 40_000, 1), F32),
            "step": np.array(1, I64),
            "n": np.array(2, I64),
        }
    elif op == "AffineGrid":
        theta, size = param("theta", _f(1, 2, 3)), param("size", _i(1, 1, 1, 1), [4])
        out = g.add_node(op, [theta, size], {}).output
        feeds = {"theta": _f(1, 2, 3), "size": _i(1, 1, 1000, 1000)}
    elif op == "ConvTranspose":
        x, w = param("x", _f(1, 1, 2, 2)), param("w", _f(1, 1, 1, 1))
        out = g.add_node(op, [x, w], {"strides": [1000, 1000]}).output
        feeds = {"x": _f(1, 1, 2, 2), "w": _f(1, 1, 1, 1)}
    elif op == "ReduceSum":
        x = param("x", np.zeros((1, 0, 1), F32))
        out = g.add_node(op, [x, g.add_node("Constant", [], {"value": _i(1)}).output], {}).output
        feeds = {"x": np.zeros((1000, 0, 1000), F32)}
    elif op == "Unique":
        x = param("x", np.zeros((1, 0), F32))
        out = g.add_node(op, [x], {"axis": 0}).outputs[2]
        feeds = {"x": np.zeros((1 << 20, 0), F32)}
    elif op == "ImageDecoder":  # a PNG header saying 9000 x 9000 pixels, no pixel data
        data = _png_header(9000, 9000)
        out = g.add_node(op, [param("data", data)], {}).output
        feeds = {"data": data}
    else:  # Resize by sizes on two of its axes
        x, s = param("x", _f(1, 1, 2, 2)), param("s", _i(2, 2), [2])
        out = g.add_node(op, [x, None, None, s], {"axes": [2, 3]}).output
        feeds = {"x": _f(1, 1, 2, 2), "s": _i(1000, 1000)}
    g.set_outputs([out])
    return g, feeds


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize(
    "op",
    [
        "Einsum", "DFT", "STFT", "AffineGrid", "ConvTranspose", "ReduceSum", "Unique", "Resize",
        "ImageDecoder",
    ],
)  # fmt: skip
def test_dangerous_ops_are_refused_before_allocating(op: str, backend: str) -> None:
    graph, feeds = _refused_graph(op)
    node = next(n for n in graph.nodes if n.op == op)
    model = tl.Model(graph, backend=backend, limits=tl.Limits(max_tensor_bytes=1 << 20))
    with pytest.raises(ResourceLimitError, match=re.escape(node.describe())) as raised:
        model.run(feeds)
    assert "more than the limit of 1 MiB" in str(raised.value)


def _source(model: tl.Model, args: Sequence[Any]) -> str:
    from tensorloop.backends.compiled import CompiledExecutable

    exe = model.prepared("compiled")
    assert isinstance(exe, CompiledExecutable)
    return exe.plan(list(args)).source


def test_the_compiled_plan_checks_static_outputs_once_and_others_per_run() -> None:
    # ConvTranspose's output is static in a plan for these shapes: checked once, at the start
    graph, feeds = _refused_graph("ConvTranspose")
    model = tl.Model(graph, limits=tl.Limits(max_tensor_bytes=1 << 20))
    source = _source(model, list(feeds.values()))
    assert "guard_ConvTranspose" not in source
    assert "state.limits.max_tensor_bytes < 4008004:" in source  # f32[1, 1, 1001, 1001]
    # StringTensorUnpack's symbols have a length known only at run time (its begins and ends
    # are static): checked before the node, each run
    g = Graph("unpack")
    x = g.add_input("x", TensorType("str", ["n"]))
    g.set_outputs(g.add_node("StringTensorUnpack", [x]).outputs)
    model = tl.Model(g, backend="compiled", limits=tl.Limits(max_tensor_bytes=1000))
    words = np.array(["ab", "cdé"], object)
    assert "guard_StringTensor" in _source(model, [words])  # (the name is cut short)
    assert bytes(model.run({"x": words})[model.output_names[2]]) == "abcdé".encode()
    with pytest.raises(ResourceLimitError, match=r"output #2: a tensor uint8\[2000\]"):
        model.run({"x": np.array(["x" * 1000, "y" * 1000], object)})
