"""Gradients of PyTorch-exported models equal PyTorch autograd's.

``tests/data/make_torch_grads.py`` exported three float64 modules with a scalar output
``loss`` (a GRU with h0 an input, a two-layer bidirectional LSTM, a scripted ``for`` loop over a
run-time count, an ONNX Loop) and saved torch's gradients of the loss with respect to every
float input and every weight as the ONNX file holds it (the RNNs' W, R and B gate-reordered
from torch's parameters). ``tl.grad`` of the loaded model must give the same numbers.

Tolerance: both sides compute in float64 the same functions in a different order (the GRU's
gates are one MatMul or three, the sums run in another order), so they differ by rounding
alone: about 1e-15 on gradients of magnitude up to ~20 (the loop's, after three steps). rtol
1e-10 with atol 1e-12 (for entries near zero) leaves four orders of magnitude for rounding and
none for a mistake: a wrong gate order or a missing term changes gradients by 1e-2 or more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import tensorloop as tl

DATA = Path(__file__).resolve().parent.parent / "data" / "torch_grads"
MODELS = ["gru", "lstm", "loop"]
RTOL, ATOL = 1e-10, 1e-12


def oracle(name: str) -> tuple[dict[str, np.ndarray], list[str], dict[str, np.ndarray], Any]:
    """The feeds, the initializers' names, torch's gradients by name, torch's loss."""
    with np.load(DATA / f"{name}.npz") as saved:
        record = {k: saved[k] for k in saved.files}
    feeds = {k.removeprefix("input:"): v for k, v in record.items() if k.startswith("input:")}
    grads = {k.removeprefix("grad:"): v for k, v in record.items() if k.startswith("grad:")}
    return feeds, [str(n) for n in record["initializers"]], grads, record["loss"]


def float_inputs(feeds: dict[str, np.ndarray]) -> list[str]:
    return [k for k, v in feeds.items() if v.dtype.kind == "f"]


def compare(got: dict[str, np.ndarray], want: dict[str, np.ndarray], names: list[str]) -> None:
    for name in names:
        have = got[f"{name}.grad"]
        assert have.shape == want[name].shape, f"{name}: {have.shape} vs {want[name].shape}"
        np.testing.assert_allclose(have, want[name], rtol=RTOL, atol=ATOL, err_msg=f"dloss/d{name}")


def test_the_oracle_covers_every_weight() -> None:
    for name in MODELS:
        feeds, inits, grads, _ = oracle(name)
        proto = onnx.load(DATA / f"{name}.onnx")
        floats = [i.name for i in proto.graph.initializer if i.data_type == onnx.TensorProto.DOUBLE]
        assert sorted(inits) == sorted(floats), name
        assert set(grads) == set(float_inputs(feeds)) | set(inits), name
        assert all(np.abs(g).max() > 1e-3 for g in grads.values()), name  # none trivially zero


@pytest.mark.parametrize("name", MODELS)
def test_input_gradients_equal_torch(name: str) -> None:
    feeds, _, grads, loss = oracle(name)
    wrt = float_inputs(feeds)
    got = tl.grad(tl.load(DATA / f"{name}.onnx"), of="loss", wrt=wrt).run(feeds)
    np.testing.assert_allclose(got["loss"], loss, rtol=RTOL)
    compare(got, grads, wrt)


@pytest.mark.parametrize("name", MODELS)
def test_initializer_gradients_equal_torch(name: str) -> None:
    """Loaded with ``trainable=True``, the initializers are variables under their names: the
    gradients with respect to them equal torch's, gates reordered."""
    feeds, inits, grads, _ = oracle(name)
    wrt = [*float_inputs(feeds), *inits]
    model = tl.load(DATA / f"{name}.onnx", trainable=True)
    got = tl.grad(model, of="loss", wrt=wrt).run(feeds)
    compare(got, grads, wrt)


@pytest.mark.parametrize("name", MODELS)
def test_a_folded_initializer_is_refused_not_zero(name: str) -> None:
    """Loaded as constants, an initializer that loading folded away (sliced per gate, copied
    into a loop body) is read by nothing: asking for its gradient is an error that says how
    to load the model, never a silent zero."""
    _, inits, _, _ = oracle(name)
    model = tl.load(DATA / f"{name}.onnx")
    dead = [n for n in inits if not any(v.name == n and v.uses for v in model.graph.values())]
    assert dead, "the loader folds some initializer of every one of these models"
    with pytest.raises(tl.GradientError, match="trainable=True"):
        tl.grad(model, of="loss", wrt=dead[:1])


def initializers_as_inputs(proto: onnx.ModelProto, names: list[str]) -> dict[str, np.ndarray]:
    """Make the initializers ``names`` graph inputs of ``proto`` (in place); their values."""
    values = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer if i.name in names}
    kept = [i for i in proto.graph.initializer if i.name not in values]
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)
    for n, v in values.items():
        proto.graph.input.append(
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        )
    return values


@pytest.mark.parametrize("name", MODELS)
def test_weight_gradients_equal_torch_with_the_weights_as_inputs(name: str) -> None:
    """The weights fed as inputs (nothing to fold): the RNN and Loop lowerings' gradients with
    respect to W, R, B and the loop's captured weights equal torch's, gates reordered."""
    feeds, inits, grads, loss = oracle(name)
    proto = onnx.load(DATA / f"{name}.onnx")
    weights = initializers_as_inputs(proto, inits)
    wrt = [*float_inputs(feeds), *inits]
    got = tl.grad(tl.load(proto), of="loss", wrt=wrt).run({**feeds, **weights})
    np.testing.assert_allclose(got["loss"], loss, rtol=RTOL)
    compare(got, grads, wrt)
