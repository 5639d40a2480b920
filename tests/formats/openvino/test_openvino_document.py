"""The OpenVINO IR document model: what the writer writes reads back as the same document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import tensorloop as tl
from tensorloop.formats.openvino.document import Edge, Layer, Net, Port
from tensorloop.formats.openvino.reader import read_xml


def _loops_and_branches() -> tl.Model:
    xs = tl.placeholder("float32", ("N", 3), name="xs")
    flag = tl.placeholder("bool", (), name="flag")

    def outer(c: Any, x: Any) -> Any:
        inner = tl.fori_loop(0, 3, lambda i, a: a * 0.5 + x, c)
        picked = tl.cond(tl.reduce_sum(x) > 0.0, lambda a: a + 1.0, lambda a: a - x, inner)
        return picked, picked * 2.0

    final, ys = tl.scan(outer, tl.constant(np.zeros(3, np.float32)), xs, reverse=True)
    top = tl.cond(flag, lambda a: a * 2.0, lambda a: -a, final)
    return tl.Model({"final": final, "ys": ys, "top": top})


def _layers(net: Net) -> list[Layer]:
    out = []
    for layer in net.layers.values():
        out.append(layer)
        bodies = [layer.body, *(b.body for b in (layer.then_branch, layer.else_branch) if b)]
        for body in bodies:
            if body is not None:
                out += _layers(body)
    return out


def test_a_written_ir_reads_back_as_the_document_that_wrote_it(tmp_path: Path) -> None:
    tl.reset()
    path = tmp_path / "m.xml"
    tl.save(_loops_and_branches(), path)
    doc = read_xml(path)
    xml, weights = doc.serialize()
    assert xml == path.read_bytes()
    assert weights == b""  # read constants keep their offsets into the file's .bin
    layers = _layers(doc)
    loop = next(layer for layer in layers if layer.type == "Loop")
    assert loop.body is not None and loop.back_edges
    purposes = {e.purpose for e in (*loop.input_map, *loop.output_map)}
    assert {"current_iteration", "execution_condition"} <= purposes
    branches = [layer for layer in layers if layer.type == "If"]
    assert len(branches) == 2
    for layer in branches:
        assert layer.then_branch is not None and layer.else_branch is not None
        assert [e.external_port_id for e in layer.then_branch.input_map] == list(
            range(1, len(layer.inputs))
        )


def _port(port_id: int, names: tuple[str, ...] = ()) -> Port:
    return Port(port_id, "FP32", (2,), names)


def _const(layer_id: str, value: np.ndarray[Any, Any]) -> Layer:
    layer = Layer(
        layer_id, f"c{layer_id}", "Const", "opset1", {"element_type": "f32", "shape": "2"}, [], []
    )
    layer.outputs.append(_port(0))
    layer.value = value
    return layer


def test_a_document_built_by_hand_is_written_with_its_weights(tmp_path: Path) -> None:
    one, two = np.ones(2, np.float32), np.array([2, 3], np.float32)
    param = Layer(
        "0",
        "x",
        "Parameter",
        "opset1",
        {"shape": "2", "element_type": "f32"},
        [],
        [_port(0, ("x",))],
    )
    add1 = Layer("4", "a1", "Add", "opset1", {}, [_port(0), _port(1)], [_port(2)])
    add2 = Layer("5", "a2", "Add", "opset1", {}, [_port(0), _port(1)], [_port(2, ("y",))])
    result = Layer("6", "y/result", "Result", "opset1", {}, [_port(0)], [])
    layers = [
        param,
        _const("1", one),
        _const("2", two),
        _const("3", one.copy()),
        add1,
        add2,
        result,
    ]
    edges = [
        Edge("0", 0, "4", 0),
        Edge("1", 0, "4", 1),
        Edge("4", 2, "5", 0),
        Edge("2", 0, "5", 1),
        Edge("5", 2, "6", 0),
    ]
    net = Net("hand", 11, {layer.id: layer for layer in layers}, edges)
    path = tmp_path / "hand.xml"
    net.save(path)
    # Identical constants share their bytes; each Const says where its bytes lie.
    assert path.with_suffix(".bin").read_bytes() == one.tobytes() + two.tobytes()
    consts = [layer for layer in read_xml(path).layers.values() if layer.type == "Const"]
    assert [(c.data["offset"], c.data["size"]) for c in consts] == [
        ("0", "8"),
        ("8", "8"),
        ("0", "8"),
    ]
    assert read_xml(path).serialize()[0] == path.read_bytes()
    x = np.array([1, -1], np.float32)
    np.testing.assert_array_equal(tl.load(path).run({"x": x})["y"], x + one + two)
