"""Network layers: refused settings keep the old value, dynamic (-1) dims, call-time errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from network_layer_checks import (
    ACT,
    EW,
    MO,
    RED,
    UN,
    check_typed,
    close,
    const,
    ints,
    rand,
    run,
    softmax_reference,
    unary_net,
)

from tensorloop import NetworkError
from tensorloop.network import ILayer, ITensor, Network, TopKOperation


# -- settings in general --------------------------------------------------------------------------
def _shuffle(net: Network, x: ITensor, dims: tuple[int, ...]) -> ILayer:
    layer = net.add_shuffle(x)
    layer.reshape_dims = dims
    return layer


SETTING_CASES: list[tuple[str, Callable[[Network, ITensor], ILayer], str, Any, str]] = [
    ("concat", lambda n, x: n.add_concatenation([x, x]), "axis", 5, r"axis 5 is out of range"),
    ("reduce", lambda n, x: n.add_reduce(x, RED.SUM, 1, True), "axes", 0, r"names no axis"),
    ("softmax", lambda n, x: n.add_softmax(x), "axes", 0b11, r"must name one axis"),
    ("gather", lambda n, x: n.add_gather(x, const(n, ints(0)), 0), "axis", 3, r"out of range"),
    ("topk", lambda n, x: n.add_topk(x, TopKOperation.MAX, 1, 1), "k", 9, r"k = 9"),
    ("shuffle", lambda n, x: _shuffle(n, x, (3, 2)), "reshape_dims", (5,), r"cannot reshape"),
    ("shuffle2", lambda n, x: _shuffle(n, x, (3, 2)), "second_transpose", (0,), r"permutation"),
    ("slice", lambda n, x: n.add_slice(x, (0, 0), (1, 1), (1, 1)), "start", (3, 0), r"bounds"),
    ("ew", lambda n, x: n.add_elementwise(x, x, EW.SUM), "op", EW.XOR, r"bool"),
    ("unary", lambda n, x: n.add_unary(x, UN.EXP), "op", UN.NOT, r"bool"),
    (
        "matmul",
        lambda n, x: n.add_matrix_multiply(x, MO.NONE, x, MO.TRANSPOSE),
        "op1",
        MO.NONE,
        r"inner dims",
    ),
]


@pytest.mark.parametrize(
    ("builder", "setting", "value", "match"),
    [case[1:] for case in SETTING_CASES],
    ids=[case[0] for case in SETTING_CASES],
)
def test_refused_setting_keeps_the_old_value_and_type(
    builder: Callable[[Network, ITensor], ILayer], setting: str, value: Any, match: str
) -> None:
    x = rand(2, 3)
    net, xt = unary_net(x)
    layer = builder(net, xt)
    old_value, old_types = getattr(layer, setting), [t.type for t in layer.outputs]
    with pytest.raises(NetworkError, match=match):
        setattr(layer, setting, value)
    assert getattr(layer, setting) == old_value
    assert [t.type for t in layer.outputs] == old_types
    arrays = run(net, layer.outputs, {"x": x})
    assert [a.shape for a in arrays] == [t.shape for t in layer.outputs]


# -- dynamic shapes -------------------------------------------------------------------------------
def test_dynamic_input_reports_minus_one() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 4, -1))
    assert x.shape == (-1, 4, -1)
    assert x.is_network_input


def test_dynamic_shapes_through_every_layer_kind() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 4))
    w = rand(4, 3)
    bias = rand(1, 4)
    idx = np.array([3, 0], np.int32)
    t: dict[str, ITensor] = {}
    t["sum"] = net.add_elementwise(x, const(net, bias), EW.SUM).get_output(0)
    t["gt"] = net.add_elementwise(
        x, const(net, np.zeros((1, 1), np.float32)), EW.GREATER
    ).get_output(0)
    t["act"] = net.add_activation(x, ACT.SCALED_TANH).get_output(0)
    t["unary"] = net.add_unary(x, UN.ABS).get_output(0)
    t["mm"] = net.add_matrix_multiply(x, MO.NONE, const(net, w), MO.NONE).get_output(0)
    t["mv"] = net.add_matrix_multiply(x, MO.VECTOR, const(net, w[None]), MO.NONE).get_output(0)
    sh = net.add_shuffle(x)
    sh.reshape_dims, sh.second_transpose = (0, 2, 2), (1, 0, 2)
    t["shuffle"] = sh.get_output(0)
    t["slice"] = net.add_slice(x, (0, 3), (1, 2), (1, -2)).get_output(0)
    t["concat"] = net.add_concatenation([x, x]).get_output(0)
    t["reduce"] = net.add_reduce(x, RED.AVG, 0b01, True).get_output(0)
    t["select"] = net.add_select(t["gt"], x, t["unary"]).get_output(0)
    t["gather"] = net.add_gather(x, const(net, idx), 1).get_output(0)
    t["identity"] = net.add_identity(x).get_output(0)
    t["cast"] = net.add_cast(x, "int32").get_output(0)
    sm = net.add_softmax(x)
    sm.axes = 0b01
    t["softmax"] = sm.get_output(0)
    topk = net.add_topk(x, TopKOperation.MAX, 2, 0b10)
    t["topk"], t["topk_idx"] = topk.get_output(0), topk.get_output(1)
    t["shape"] = net.add_shape(x).get_output(0)

    reported = {name: tensor.shape for name, tensor in t.items()}
    assert reported == {
        "sum": (-1, 4),
        "gt": (-1, 4),
        "act": (-1, 4),
        "unary": (-1, 4),
        "mm": (-1, 3),
        "mv": (-1, 3),
        "shuffle": (2, -1, 2),
        "slice": reported["slice"],  # TensorRT: (1, 2); checked below
        "concat": (-1, 4),
        "reduce": (1, 4),
        "select": (-1, 4),
        "gather": (-1, 2),
        "identity": (-1, 4),
        "cast": (-1, 4),
        "softmax": (-1, 4),
        "topk": (-1, 2),
        "topk_idx": (-1, 2),
        "shape": (2,),
    }
    assert reported["slice"][1] == 2
    assert reported["slice"][0] in (-1, 1)

    tensors = list(t.values())
    for tensor in tensors:
        net.mark_output(tensor)
    model = net.to_model()
    for n in (2, 5):
        xv = rand(n, 4)
        x64 = xv.astype(np.float64)
        result = model.run({"x": xv})
        got = {name: np.asarray(result[tensor.name]) for name, tensor in t.items()}
        for name, tensor in t.items():
            check_typed(tensor, got[name], exact=False)
        close(got["sum"], x64 + bias)
        np.testing.assert_array_equal(got["gt"], xv > 0)
        close(got["act"], np.tanh(x64))
        np.testing.assert_array_equal(got["unary"], np.abs(xv))
        close(got["mm"], x64 @ w, atol=1e-5)
        close(got["mv"], x64 @ w, atol=1e-5)
        np.testing.assert_array_equal(got["shuffle"], xv.reshape(n, 2, 2).transpose(1, 0, 2))
        np.testing.assert_array_equal(got["slice"], xv[0:1, [3, 1]])
        np.testing.assert_array_equal(got["concat"], np.concatenate([xv, xv]))
        close(got["reduce"], x64.mean(axis=0, keepdims=True))
        np.testing.assert_array_equal(got["select"], np.where(xv > 0, xv, np.abs(xv)))
        np.testing.assert_array_equal(got["gather"], xv[:, idx])
        np.testing.assert_array_equal(got["identity"], xv)
        np.testing.assert_array_equal(got["cast"], xv.astype(np.int32))
        close(got["softmax"], softmax_reference(x64, 0))
        np.testing.assert_array_equal(got["topk"], -np.sort(-xv, axis=1)[:, :2])
        np.testing.assert_array_equal(got["topk_idx"], np.argsort(-xv, axis=1)[:, :2])
        np.testing.assert_array_equal(got["shape"], [n, 4])


def test_dynamic_elementwise_broadcast_of_independent_dims() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (-1, 3)), net.add_input("b", "float32", (-1, 3))
    out_t = net.add_elementwise(a, b, EW.PROD).get_output(0)
    assert out_t.shape == (-1, 3)
    net.mark_output(out_t)
    model = net.to_model()
    for na, nb in [(4, 1), (1, 2), (3, 3)]:
        x, y = rand(na, 3), rand(nb, 3)
        out = np.asarray(model.run({"a": x, "b": y})[out_t.name])
        check_typed(out_t, out, exact=False)
        close(out, x.astype(np.float64) * y)


def test_dynamic_reduce_and_topk_over_a_dynamic_axis() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, -1))
    red = net.add_reduce(x, RED.MAX, 0b10, False).get_output(0)
    keep = net.add_reduce(x, RED.SUM, 0b11, True).get_output(0)
    sm = net.add_softmax(x).get_output(0)
    assert (red.shape, keep.shape, sm.shape) == ((3,), (1, 1), (3, -1))
    outs = [red, keep, sm]
    for o in outs:
        net.mark_output(o)
    model = net.to_model()
    for n in (1, 7):
        xv = rand(3, n)
        result = model.run({"x": xv})
        got = [np.asarray(result[o.name]) for o in outs]
        for o, g in zip(outs, got, strict=True):
            check_typed(o, g, exact=False)
        np.testing.assert_array_equal(got[0], xv.max(axis=1))
        close(got[1], xv.astype(np.float64).sum(keepdims=True), atol=1e-5)
        close(got[2], softmax_reference(xv.astype(np.float64), 1))


# -- network-level plumbing the layer tests rely on -----------------------------------------------
def test_network_errors_at_the_call() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2,))
    other = Network().add_input("y", "float32", (2,))
    with pytest.raises(NetworkError, match=r"already has an input named 'x'"):
        net.add_input("x", "float32", (3,))
    with pytest.raises(NetworkError, match=r"constant: 3 weights cannot fill shape \[2, 2\]"):
        net.add_constant((2, 2), np.zeros(3, np.float32))
    with pytest.raises(NetworkError, match=r"is not a tensor of this network"):
        net.add_unary(other, UN.EXP)
    layer = net.add_unary(x, UN.NEG)
    with pytest.raises(NetworkError, match=r"no output 1 \(it has 1\)"):
        layer.get_output(1)
    net.mark_output(layer.get_output(0))
    with pytest.raises(NetworkError, match=r"is already an output"):
        net.mark_output(layer.get_output(0))


def test_outputs_are_keyed_by_tensor_name() -> None:
    x = np.array([1.0, -2.0], np.float32)
    net, xt = unary_net(x)
    layer = net.add_unary(xt, UN.NEG)
    layer.get_output(0).name = "negated"
    net.mark_output(layer.get_output(0))
    result = net.to_model().run({"x": x})
    assert list(result) == ["negated"]
    np.testing.assert_array_equal(result["negated"], -x)
