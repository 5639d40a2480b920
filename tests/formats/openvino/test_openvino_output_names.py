"""Output names of every multi-output layer type of opset 16: tensorloop's model outputs are named
and ordered as OpenVINO's compiled model names and orders them (``get_any_name``), hold the values
OpenVINO computes under those names, and keep the names when written back as IR."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
o16 = pytest.importorskip("openvino.opset16")

from openvino_layer_checks import compile_cpu  # noqa: E402

import tensorloop as tl  # noqa: E402

Array = np.ndarray[Any, Any]
Built = tuple[list[Any], list[Any]]
F32 = np.float32


def _p(name: str, shape: list[int], dtype: Any = F32) -> Any:
    return o16.parameter(shape, dtype, name=name)


def _c(values: Any, dtype: Any = np.int64) -> Any:
    return o16.constant(np.array(values, dtype))


def _ones(*shape: int) -> Any:
    return o16.constant(np.full(shape, 0.1, F32))


def _rnn(kind: str, gates: int) -> Built:
    x, h = _p("x", [2, 5, 3]), _p("h", [2, 1, 4])
    lengths, w, r, b = _c([5, 3], np.int32), _ones(1, gates, 3), _ones(1, gates, 4), _ones(1, gates)
    if kind == "lstm":
        c = _p("c", [2, 1, 4])
        return o16.lstm_sequence(x, h, c, lengths, w, r, b, 4, "forward").outputs(), [x, h, c]
    build = o16.gru_sequence if kind == "gru" else o16.rnn_sequence
    return build(x, h, lengths, w, r, b, 4, "forward").outputs(), [x, h]


def _boxes(n: int, classes: int, width: int = 4) -> tuple[Any, Any]:
    return _p("boxes", [1, n, width]), _p("scores", [1, classes, n])


def _proposal() -> Built:
    s, d = _p("s", [1, 6, 4, 5]), _p("d", [1, 12, 4, 5])
    unsigned = {k: np.uint32(v) for k, v in (("base_size", 8), ("pre_nms_topn", 20))}
    unsigned |= {k: np.uint32(v) for k, v in (("post_nms_topn", 5), ("feat_stride", 4))}
    attrs = {**unsigned, "min_size": np.uint32(1), "nms_thresh": np.float32(0.5)}
    attrs |= {"ratio": np.array([1.0], F32), "scale": np.array([1.0, 2.0, 4.0], F32)}
    return o16.proposal(s, d, _c([40.0, 50.0, 1.0], F32), attrs).outputs(), [s, d]


def _generate_proposals() -> Built:
    info = _c([[40.0, 50.0, 1.0], [30.0, 40.0, 1.0]], F32)
    anchors = _c(np.tile([0.0, 0.0, 8.0, 8.0], (4, 5, 3, 1)), F32)
    deltas, scores = _p("deltas", [2, 12, 4, 5]), _p("scores", [2, 3, 4, 5])
    node = o16.generate_proposals(info, anchors, deltas, scores, 0.0, 0.7, 6, 10)
    return node.outputs(), [deltas, scores]


def _if() -> Built:
    x, cond = _p("x", [2, 3]), _p("cond", [], np.bool_)
    node = o16.if_op(cond)
    bodies = []
    for scale in (2.0, 3.0):
        inner = _p("inner", [2, 3])
        outs = [o16.multiply(inner, _c(scale, F32)), o16.relu(inner)]
        bodies.append((ov.Model([o16.result(v) for v in outs], [inner]), inner))
    node.set_then_body(bodies[0][0])
    node.set_else_body(bodies[1][0])
    node.set_input(x.output(0), bodies[0][1], bodies[1][1])
    results = [m.get_results() for m, _ in bodies]
    return [node.set_output(t, e) for t, e in zip(*results, strict=True)], [x, cond]


def _loop() -> Built:
    x = _p("x", [1, 3])
    acc, xb = _p("acc", [1, 3]), _p("xb", [1, 3])
    total = o16.add(acc, xb)
    body = ov.Model([o16.result(_c(True, np.bool_)), o16.result(total)], [acc, xb])
    loop = o16.loop(_c(4), _c(True, np.bool_))
    loop.set_function(body)
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(
        acc, _c([[0.0, 0.0, 0.0]], F32).output(0), body.get_results()[1].output(0)
    )
    loop.set_invariant_input(xb, x.output(0))
    last = loop.get_iter_value(body.get_results()[1].output(0), -1)
    stacked = loop.get_concatenated_slices(body.get_results()[1].output(0), 0, 1, 1, -1, 0)
    return [last, stacked], [x]


def _tensor_iterator() -> Built:
    x, h0 = _p("x", [4, 3]), _p("h0", [1, 3])
    row, h = _p("row", [1, 3]), _p("h", [1, 3])
    nxt = o16.add(h, row)
    body = ov.Model([o16.result(nxt)], [row, h])
    ti = o16.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(row, x.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(h, h0.output(0), body.get_results()[0].output(0))
    last = ti.get_iter_value(body.get_results()[0].output(0), -1)
    stacked = ti.get_concatenated_slices(body.get_results()[0].output(0), 0, 1, 1, -1, 0)
    return [last, stacked], [x, h0]


def _named_promoted() -> Built:
    """Ports with two tensor names each, the first output the input passed through."""
    x, y = _p("x", [2]), _p("y", [2], np.int8)
    node = o16.convert_promote_types(x, y)
    node.output(0).get_tensor().set_names({"x_promoted", "x_cast"})
    node.output(1).get_tensor().set_names({"y_promoted", "y_cast"})
    return node.outputs(), [x, y]


def _split_outputs(picks: list[int]) -> Callable[[], Built]:
    def build() -> Built:
        x = _p("x", [2, 6])
        node = o16.split(x, _c(1), 3)
        return [node.output(i) for i in picks], [x]

    return build


CASES: dict[str, Callable[[], Built]] = {
    "AdaptiveMaxPool": lambda: (
        o16.adaptive_max_pool(x := _p("x", [1, 2, 5, 6]), _c([2, 3]), "i32").outputs(),
        [x],
    ),
    "ConvertPromoteTypes": lambda: (
        o16.convert_promote_types(x := _p("x", [2]), y := _p("y", [2], np.int8)).outputs(),
        [x, y],
    ),
    "ConvertPromoteTypes of one input": lambda: (
        o16.convert_promote_types(x := _p("x", [2]), x).outputs(),
        [x],
    ),
    "ConvertPromoteTypes with two names a port": _named_promoted,
    "CTCGreedyDecoderSeqLen": lambda: (
        o16.ctc_greedy_decoder_seq_len(
            x := _p("x", [2, 4, 5]), n := _p("n", [2], np.int32)
        ).outputs(),
        [x, n],
    ),
    "GenerateProposals": _generate_proposals,
    "GRUSequence": lambda: _rnn("gru", 12),
    "If": _if,
    "Loop": _loop,
    "LSTMCell": lambda: (
        o16.lstm_cell(
            x := _p("x", [2, 3]),
            h := _p("h", [2, 4]),
            c := _p("c", [2, 4]),
            _ones(16, 3),
            _ones(16, 4),
            _ones(16),
            4,
        ).outputs(),
        [x, h, c],
    ),
    "LSTMSequence": lambda: _rnn("lstm", 16),
    "MatrixNms": lambda: (o16.matrix_nms(*(b := _boxes(4, 2))).outputs(), list(b)),
    "MaxPool": lambda: (
        o16.max_pool(x := _p("x", [1, 2, 5, 6]), [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).outputs(),
        [x],
    ),
    "MulticlassNms": lambda: (
        o16.multiclass_nms(*(b := _boxes(4, 2)), iou_threshold=0.5).outputs(),
        list(b),
    ),
    "NMSRotated": lambda: (
        o16.nms_rotated(*(b := _boxes(4, 1, 5)), _c(2), _c(0.5, F32), _c(0.0, F32)).outputs(),
        list(b),
    ),
    "NonMaxSuppression": lambda: (
        o16.non_max_suppression(*(b := _boxes(4, 1)), _c(2), _c(0.5, F32)).outputs(),
        list(b),
    ),
    "Proposal": _proposal,
    "RNNSequence": lambda: _rnn("rnn", 4),
    "SparseFillEmptyRows": lambda: (
        o16.sparse_fill_empty_rows(
            v := _p("v", [3]), _c([4, 3]), i := _p("i", [3, 2], np.int64), _c(0.0, F32)
        ).outputs(),
        [v, i],
    ),
    "Split": _split_outputs([0, 1, 2]),
    "Split, outputs reordered": _split_outputs([2, 0]),
    "Split, one port read twice": _split_outputs([1, 1, 0]),
    "StringTensorUnpack": lambda: (
        o16.string_tensor_unpack(x := _p("x", [3], ov.Type.string)).outputs(),
        [x],
    ),
    "TensorIterator": _tensor_iterator,
    "TopK": lambda: (o16.topk(x := _p("x", [2, 6]), _c(2), 1, "max", "value").outputs(), [x]),
    "Unique": lambda: (o16.unique(x := _p("x", [6])).outputs(), [x]),
    "VariadicSplit": lambda: (
        o16.variadic_split(x := _p("x", [2, 6]), _c(1), _c([2, 4])).outputs(),
        [x],
    ),
}


def _feed(param: Any, rng: np.random.Generator) -> Array:
    shape = [d.get_length() for d in param.get_partial_shape()]
    kind = param.get_element_type()
    if kind == ov.Type.string:
        return np.array(["ab", "", "\u00e9t\u00e9"][: shape[0]], dtype=object)
    if kind == ov.Type.boolean:
        return np.array(True)
    if kind.is_integral():
        return rng.integers(1, 3, shape).astype(kind.to_dtype())
    return rng.uniform(0, 1, shape).astype(kind.to_dtype())


def _names(path: Path) -> list[str]:
    return [port.get_any_name() for port in ov.Core().read_model(str(path)).outputs]


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_are_named_and_ordered_as_openvino_names_them(case: str, tmp_path: Path) -> None:
    outputs, params = CASES[case]()
    if case not in ("Loop", "TensorIterator", "If") and "reordered" not in case:
        assert len({id(p.get_node()) for p in outputs}) == 1 and len(outputs) > 1, case
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([o16.result(v) for v in outputs], params, "m"), str(path))
    model = tl.load(path)
    assert model.output_names == _names(path)

    rng = np.random.default_rng(7)
    feeds = {p.get_friendly_name(): _feed(p, rng) for p in params}
    ours = model.run(feeds)
    compiled = compile_cpu(path)
    theirs = compiled({k: v.astype(str) if v.dtype == object else v for k, v in feeds.items()})
    for port, name in zip(compiled.outputs, model.output_names, strict=True):
        want = np.asarray(theirs[port])
        assert (ours[name].dtype, ours[name].shape) == (want.dtype, want.shape), name
        np.testing.assert_allclose(ours[name], want, rtol=1e-5, atol=1e-6, err_msg=name)

    written = tmp_path / "w" / "w.xml"
    written.parent.mkdir()
    tl.save(model, written)
    assert _names(written) == model.output_names
    assert tl.load(written).output_names == model.output_names


def test_every_multi_output_layer_type_is_named() -> None:
    """The cases cover every opset-16 builder whose layer has more than one output port."""
    multi = {
        "adaptive_max_pool", "convert_promote_types", "ctc_greedy_decoder_seq_len",
        "generate_proposals", "gru_sequence", "if_op", "loop", "lstm_cell", "lstm_sequence",
        "matrix_nms", "max_pool", "multiclass_nms", "nms_rotated", "non_max_suppression",
        "proposal", "rnn_sequence", "sparse_fill_empty_rows", "split", "string_tensor_unpack",
        "tensor_iterator", "topk", "unique", "variadic_split",
    }  # fmt: skip
    assert multi <= set(dir(o16))
    spelled = {"".join(w.capitalize() for w in f.split("_")).lower() for f in multi}
    covered = {c.split(" ")[0].rstrip(",").lower() for c in CASES}
    spelled = {s.replace("ifop", "if") for s in spelled}
    assert spelled <= covered, spelled - covered
