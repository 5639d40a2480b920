"""The training step as one stateful model: the same steps as the NumPy path, a falling loss,
trained weights baked back into a model that onnxruntime runs, and clear errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import tensorloop as tl
from tensorloop import train

rng = np.random.default_rng(7)
X = rng.standard_normal((8, 3)).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
BATCH = {"x": X, "y": Y}


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()  # so the weights keep the names they are built with


def squared_error(pred: tl.Tensor, y: tl.Tensor) -> tl.Tensor:
    d = pred - y
    return tl.reduce_sum(d * d) * (1.0 / 8)


def linear() -> tl.Model:
    x, y = tl.placeholder("float32", [8, 3], "x"), tl.placeholder("float32", [8, 1], "y")
    w = tl.constant(np.full((3, 1), 0.1, np.float32), name="w")
    b = tl.constant(np.zeros((1, 1), np.float32), name="b")
    pred = x @ w + b
    return tl.Model({"loss": squared_error(pred, y), "pred": pred})


def mlp() -> tl.Model:
    """The same weights whichever test builds it first (its own generator)."""
    rng = np.random.default_rng(8)
    x, y = tl.placeholder("float32", [8, 3], "x"), tl.placeholder("float32", [8, 1], "y")
    w1 = tl.constant(rng.standard_normal((3, 4)).astype(np.float32) * 0.5, name="w1")
    b1 = tl.constant(np.full((1, 4), 0.1, np.float32), name="b1")
    w2 = tl.constant(rng.standard_normal((4, 1)).astype(np.float32) * 0.5, name="w2")
    pred = tl.tanh(x @ w1 + b1) @ w2
    return tl.Model({"loss": squared_error(pred, y), "pred": pred})


OPTIMIZERS: dict[str, Callable[[], train.Optimizer]] = {
    "sgd": lambda: train.sgd(0.05),
    "momentum": lambda: train.sgd(0.05, momentum=0.9),
    "nesterov": lambda: train.sgd(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: train.adam(0.05),
    "adamw": lambda: train.adamw(0.05, weight_decay=0.1),
}


def frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("make", [linear, mlp])
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_in_graph_step_equals_numpy_path(make: Callable[[], tl.Model], opt: str) -> None:
    model = make()
    names = [n for n in ("w", "b", "w1", "b1", "w2") if model.graph.holder(n) is not None]
    step = train.train_step(model, loss="loss", params=names, optimizer=OPTIMIZERS[opt]())
    # The NumPy path: the gradient model on the current weights, then Optimizer.update.
    grads_of = train.weights_as_variables(model, names).grad("loss", names).session()
    optimizer = OPTIMIZERS[opt]()
    params = {n: np.array(grads_of.state[n]) for n in names}
    state = optimizer.init(params)
    for _ in range(4):
        grads_of.state.update({n: frozen(p) for n, p in params.items()})
        out = grads_of.run(BATCH)
        updates, state = optimizer.update({n: out[f"{n}.grad"] for n in names}, state, params)
        loss = step.step(BATCH)
        assert loss == float(out["loss"])
        params = train.apply_updates(params, updates)
        for name, value in step.params().items():
            np.testing.assert_array_equal(value, params[name], err_msg=name)
        got = step.state()
        assert sorted(got) == sorted(state)
        for key, value in got.items():
            np.testing.assert_array_equal(value, state[key], err_msg=key)


def test_adam_brings_the_loss_down_and_the_trained_model_runs_in_onnxruntime(
    tmp_path: Path,
) -> None:
    model = mlp()
    step = train.train_step(model, loss="loss", params=None, optimizer=train.adam(0.05))
    assert step.names == ["w1", "b1", "w2"]  # every float constant of more than one element
    losses = [step.step(BATCH) for _ in range(50)]
    assert losses[-1] < 0.2 * losses[0]
    assert all(np.isfinite(losses))

    trained = step.trained_model()
    assert not trained.graph.variables
    assert [v.name for v in trained.inputs] == ["x", "y"]
    for name, value in step.params().items():
        np.testing.assert_array_equal(trained.graph.find(name).constant, value)
    ours = trained.run(BATCH)
    # All 50 updates went in: the trained model's loss is the one the next step starts from.
    np.testing.assert_allclose(float(ours["loss"]), step.step(BATCH), rtol=1e-6)
    np.testing.assert_array_equal(model.run(BATCH)["loss"], np.float32(losses[0]))  # untouched

    path = tmp_path / "trained.onnx"
    tl.save(trained, str(path))
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    loss, pred = theirs.run(["loss", "pred"], BATCH)
    np.testing.assert_allclose(loss, ours["loss"], rtol=1e-5)
    np.testing.assert_allclose(pred, ours["pred"], rtol=1e-5, atol=1e-6)


def test_variables_train_and_bake_back_as_constants() -> None:
    x, y = tl.placeholder("float32", [8, 3], "x"), tl.placeholder("float32", [8, 1], "y")
    w = tl.variable(np.zeros((3, 1), np.float32), "w")
    b = tl.variable(np.zeros((1,), np.float32), "b")
    model = tl.Model({"loss": squared_error(x @ w + b, y)})
    step = train.train_step(model, loss="loss", optimizer=train.sgd(0.1, momentum=0.5))
    assert step.names == ["w", "b"]
    first = step.step(BATCH)
    for _ in range(20):
        last = step.step(BATCH)
    assert last < 0.1 * first
    trained = step.trained_model()
    assert not trained.graph.variables
    assert not any(n.op == "ReadVariable" for n in trained.graph.nodes)
    np.testing.assert_array_equal(trained.graph.find("w").constant, step.params()["w"])
    step.reset()
    assert step.step(BATCH) == first


def test_weights_as_variables_keeps_names_and_results() -> None:
    model = mlp()
    stateful = train.weights_as_variables(model)
    assert sorted(stateful.graph.variables) == ["b1", "w1", "w2"]
    assert all(v.trainable for v in stateful.graph.variables.values())
    reads = {n.output.name for n in stateful.graph.nodes if n.op == "ReadVariable"}
    assert reads == {"b1", "w1", "w2"}
    assert not any(n.op == "Constant" and n.output.name in reads for n in stateful.graph.nodes)
    np.testing.assert_array_equal(stateful.run(BATCH)["pred"], model.run(BATCH)["pred"])
    only = train.weights_as_variables(model, ["w2"])
    assert list(only.graph.variables) == ["w2"]


def test_weights_as_variables_names_what_it_cannot_train() -> None:
    x = tl.placeholder("float32", [2, 3], "x")
    w = tl.constant(np.ones((3, 3), np.float32), name="w")
    shape = tl.constant(np.array([3, 2], np.int64), name="shape")
    model = tl.Model({"out": tl.reshape(x @ w, shape)})
    with pytest.raises(tl.GraphError, match=r"named 'v' \(float constants: w\)"):
        train.weights_as_variables(model, ["v"])
    with pytest.raises(tl.GraphError, match=r"constant 'shape' is typed i64\[2\]: only float"):
        train.weights_as_variables(model, ["shape"])
    with pytest.raises(tl.GraphError, match="'x' is an input"):
        train.weights_as_variables(model, ["x"])
    product = next(n.output.name for n in model.graph.nodes if n.op == "MatMul")
    with pytest.raises(tl.GraphError, match=f"'{product}' is computed by MatMul"):
        train.weights_as_variables(model, [product])
    with pytest.raises(tl.GraphError, match="'w' listed twice"):
        train.train_step(model, loss="out", params=["w", "w"], optimizer=train.sgd(0.1))


def test_a_variable_the_model_assigns_cannot_be_trained() -> None:
    x = tl.placeholder("float32", [3], "x")
    s = tl.variable(np.zeros(3, np.float32), "s")
    total = s + x
    tl.assign(s, total)
    model = tl.Model({"total": tl.reduce_sum(total)})
    with pytest.raises(tl.GraphError, match="'s' is assigned by the model"):
        train.train_step(model, loss="total", params=["s"], optimizer=train.sgd(0.1))
