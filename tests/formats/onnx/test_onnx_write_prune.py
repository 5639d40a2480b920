"""The ONNX writer leaves out what nothing uses: nodes no output depends on and initializers no
kept node reads, in the main graph and in loop bodies; onnxruntime loads the result without a
warning and computes what the source model computes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")

import tensorloop as tl  # noqa: E402
from tensorloop.formats.onnx.write_prune import prune  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"


def _read_names(graph: onnx.GraphProto) -> set[str]:
    """Every name a node of ``graph`` or of its bodies reads, and its outputs."""
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                names |= _read_names(body)
    return names


def _load_quietly(proto: onnx.ModelProto, capfd: pytest.CaptureFixture[str]) -> Any:
    """An onnxruntime session on ``proto``, asserting that onnxruntime warned about nothing."""
    options = ort.SessionOptions()
    options.log_severity_level = 1  # warnings and worse
    capfd.readouterr()
    session = ort.InferenceSession(
        proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    printed = capfd.readouterr()
    warnings = [
        line for line in (printed.out + printed.err).splitlines() if "[W:" in line or "[E:" in line
    ]
    assert not warnings, "\n".join(warnings[:5])
    return session


def test_the_bidirectional_lstm_round_trip_keeps_only_used_initializers(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source = DATA / "torch_lstm_gru_torchscript.onnx"
    target = tmp_path / "lstm.onnx"
    tl.save(tl.load(source), target)
    proto = onnx.load(target)
    onnx.checker.check_model(proto, full_check=True)
    read = _read_names(proto.graph)
    unused = [t.name for t in proto.graph.initializer if t.name not in read]
    assert not unused, f"{len(unused)} unused initializers: {unused[:5]}"
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    got = _load_quietly(proto, capfd).run(None, {"x": x})
    want = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _dead_code_model() -> onnx.ModelProto:
    """A Loop whose body reads an outer weight it needs and one only a dead node needs, beside
    a dead top-level branch of nodes and an unused initializer."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    v = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "v")
    u = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "u")
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
            helper.make_node("Tanh", ["hw"], ["h_out"]),
            helper.make_node("MatMul", ["h_in", "v"], ["dead_in_body"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 4]),
        ],
    )
    main = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "u"], ["dead1"]),
            helper.make_node("Relu", ["dead1"], ["dead2"]),
            helper.make_node("Loop", ["n", "", "x"], ["h"], body=body),
        ],
        "main",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4])],
        initializer=[w, v, u],
    )
    return helper.make_model(main, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_prune_follows_bodies_and_their_outer_reads() -> None:
    proto = _dead_code_model()
    prune(proto)
    assert [n.op_type for n in proto.graph.node] == ["Loop"]
    assert [t.name for t in proto.graph.initializer] == ["w"]
    body = proto.graph.node[0].attribute[0].g
    assert [n.op_type for n in body.node] == ["MatMul", "Tanh", "Identity"]
    assert [i.name for i in body.input] == ["i", "cond_in", "h_in"]  # formal inputs stay
    onnx.checker.check_model(proto, full_check=True)


def test_an_imported_model_with_dead_code_exports_clean(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source = _dead_code_model()
    target = tmp_path / "m.onnx"
    tl.save(tl.load(source), target)
    proto = onnx.load(target)
    read = _read_names(proto.graph)
    assert all(t.name in read for t in proto.graph.initializer)
    assert not {"dead1", "dead2", "dead_in_body"} & {o for n in proto.graph.node for o in n.output}
    x = np.random.default_rng(2).standard_normal((1, 4)).astype(np.float32)
    feeds = {"x": x, "n": np.array(3, np.int64)}
    got = _load_quietly(proto, capfd).run(None, feeds)
    want = ort.InferenceSession(source.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got[0], want.run(None, feeds)[0], rtol=1e-5, atol=1e-6)
