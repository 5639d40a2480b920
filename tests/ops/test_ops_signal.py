"""The signal and training ops agree with onnxruntime on one-node models and keep their laws."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from onnx_oracle import infer, one_node, ort_run, run_core, tensorloop_run
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.ir.graph import Graph
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import TensorType

FAST = settings(max_examples=40, deadline=None)


def assert_like_ort(
    model: onnx.ModelProto, inputs: Sequence[np.ndarray | None], rtol: float = 1e-4
) -> list[np.ndarray]:
    """tensorloop's outputs equal onnxruntime's (in dtype, shape and value, up to rounding:
    ``rtol``, and as much absolutely, for the bins and weights near zero: the signals here are
    of order one, so each transform's rounding is of order eps * length, far below it; never
    scaled by the output's largest value, which would excuse any error in the small bins)."""
    got, want = tensorloop_run(model, inputs), ort_run(model, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=rtol, atol=rtol)
    return got


def node_cases(module: str, op: str) -> list[Any]:
    """The ONNX node test cases of ``op`` that a module of onnx's generators makes (importing it
    runs them), without the ``_expanded`` twins."""
    import onnx.backend.test.case.node as node

    importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return [
        c
        for c in node._NodeTestCases
        if not str(c.name).endswith("_expanded") and c.model.graph.node[0].op_type == op
    ]


rng = np.random.default_rng(7)


# -- DFT -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis", "inverse", "onesided", "length"),
    [
        ((2, 8, 1), 1, 0, 0, None),
        ((2, 8, 2), 1, 1, 0, None),
        ((3, 5, 6, 1), 2, 0, 1, None),
        ((3, 5, 6, 1), -3, 0, 0, 9),
        ((2, 7, 2), -2, 1, 0, 4),
        ((4, 6, 3, 2), 0, 0, 0, 5),
        ((2, 5, 2), 1, 1, 1, None),
        ((2, 5, 2), 1, 1, 1, 6),
        ((1, 16, 1), 1, 0, 1, 10),
    ],
)
def test_dft_matches_onnxruntime(
    shape: tuple[int, ...], axis: int, inverse: int, onesided: int, length: int | None
) -> None:
    x = rng.standard_normal(shape).astype(np.float32)
    n = None if length is None else np.array(length, np.int64)
    attrs = {"inverse": inverse, "onesided": onesided}
    model = one_node("DFT", [x, n, np.array(axis, np.int64)], attrs, opset=20)
    assert_like_ort(model, [x, n, np.array(axis, np.int64)])


def test_an_inverse_onesided_dft_of_any_length_is_numpys_irfft() -> None:
    # onnxruntime 1.31 differs here for lengths other than 2 * (bins - 1) and its neighbour
    # 2 * (bins - 1) - 2; the ONNX reference and the spec's "use the first dft_length values or
    # zero-pad" agree with NumPy, which reads the first n // 2 + 1 bins.
    x = rng.standard_normal((3, 5, 2))
    for n in (4, 7, 10, 11):
        (y,) = run_core("DFT", [x, np.array(n, np.int64)], {"inverse": 1, "onesided": 1})
        np.testing.assert_allclose(y[..., 0], np.fft.irfft(x[..., 0] + 1j * x[..., 1], n, axis=1))


def test_dft_17_takes_axis_as_an_attribute() -> None:
    x = rng.standard_normal((2, 6, 5, 2)).astype(np.float32)
    model = one_node("DFT", [x], {"axis": 2, "inverse": 1}, opset=17)
    (y,) = tensorloop_run(model, [x])
    want = np.fft.ifft(x[..., 0] + 1j * x[..., 1], axis=2)
    np.testing.assert_allclose(y, np.stack([want.real, want.imag], -1), atol=1e-5)


@FAST
@given(st.integers(1, 12), st.integers(1, 3), st.sampled_from([np.float32, np.float64]))
def test_an_inverse_dft_undoes_a_dft(n: int, batch: int, dt: type) -> None:
    x = np.random.default_rng(n).standard_normal((batch, n, 2)).astype(dt)
    (spectrum,) = run_core("DFT", [x], {})
    (back,) = run_core("DFT", [spectrum], {"inverse": 1})
    (half,) = run_core("DFT", [x[..., :1]], {"onesided": 1})
    (real,) = run_core("DFT", [half, np.array(n, np.int64)], {"onesided": 1, "inverse": 1})
    tol = 1e-4 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(back, x, atol=tol)
    np.testing.assert_allclose(real, x[..., :1], atol=tol)


def test_dft_shapes_follow_a_constant_axis_and_length() -> None:
    x = TensorType("f32", ["N", 10, 6, 1])
    assert infer("DFT", [x, np.array(16, np.int64), np.array(1, np.int64)], {"onesided": 1}) == [
        "f32[N,9,6,2]"
    ]
    assert infer("DFT", [x, TensorType("i64", [])], {}) == ["f32[N,10,?,2]"]
    assert infer("DFT", [x, TensorType("i32", []), TensorType("i64", [])], {}) == ["f32[?,?,?,2]"]
    z = TensorType("f16", [4, 6, 2])
    assert infer("DFT", [z], {"inverse": 1, "onesided": 1}) == ["f16[4,10,1]"]


@pytest.mark.parametrize(
    ("types", "attrs", "message"),
    [
        ([TensorType("f32", [4, 3])], {}, "last dim must be 1 .real. or 2"),
        ([TensorType("f32", [4, 2])], {"onesided": 1}, "needs real input"),
        ([TensorType("f32", [4, 1])], {"onesided": 1, "inverse": 1}, "needs complex input"),
        ([TensorType("f32", [4, 1]), None, np.array(1, np.int64)], {}, r"axis 1 is outside"),
        ([TensorType("f32", [4, 1]), np.array(0, np.int64)], {}, "positive length, got 0"),
        ([TensorType("i32", [4, 1])], {}, "expected a floating-point tensor"),
    ],
)
def test_dft_rejects_bad_input(types: list[Any], attrs: dict[str, Any], message: str) -> None:
    g = Graph()
    values = [
        None
        if t is None
        else g.add_node("Constant", [], {"value": t}).output
        if isinstance(t, np.ndarray)
        else g.add_input(f"x{i}", t)
        for i, t in enumerate(types)
    ]
    with pytest.raises(GraphError, match=message):
        g.add_node("DFT", values, attrs)


def test_dft_reports_a_bad_axis_at_run_time() -> None:
    x = np.ones((4, 1), np.float32)
    with pytest.raises(ExecutionError, match="axis 3 is outside"):
        run_core("DFT", [x, np.array(4, np.int64), np.array(3, np.int64)], {})


# -- STFT ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "step", "frame", "window", "onesided"),
    [(64, 8, 16, False, 1), (50, 7, 12, True, 1), (40, 5, None, True, 0), (33, 4, 9, False, 0)],
)
def test_stft_matches_onnxruntime(
    length: int, step: int, frame: int | None, window: bool, onesided: int
) -> None:
    x = rng.standard_normal((2, length, 1)).astype(np.float32)
    size = frame or 10
    w = np.hanning(size).astype(np.float32) if window else None
    fl = None if frame is None else np.array(frame, np.int64)
    inputs = [x, np.array(step, np.int64), w, fl]
    assert_like_ort(one_node("STFT", inputs, {"onesided": onesided}, opset=17), inputs)


def test_stft_of_a_complex_signal() -> None:
    x = rng.standard_normal((1, 20, 2)).astype(np.float64)
    (y,) = run_core(
        "STFT", [x, np.array(5, np.int64), None, np.array(8, np.int64)], {"onesided": 0}
    )
    signal = x[0, :, 0] + 1j * x[0, :, 1]
    for f in range(3):
        want = np.fft.fft(signal[5 * f : 5 * f + 8])
        np.testing.assert_allclose(y[0, f], np.stack([want.real, want.imag], -1), atol=1e-12)
    # onnxruntime keeps the first bins of a complex signal's spectrum when asked for one side.
    inputs = [x.astype(np.float32), np.array(5, np.int64), None, np.array(8, np.int64)]
    (half,) = assert_like_ort(one_node("STFT", inputs, opset=17), inputs)
    np.testing.assert_allclose(half, y[:, :, :5], atol=1e-5)


def test_stft_shapes() -> None:
    x = TensorType("f32", [2, 128, 1])
    step = np.array(8, np.int64)
    assert infer("STFT", [x, step, TensorType("f32", [16])], {}) == ["f32[2,15,9,2]"]
    assert infer("STFT", [x, step, None, np.array(16, np.int64)], {"onesided": 0}) == [
        "f32[2,15,16,2]"
    ]
    with pytest.raises(GraphError, match="window length 8 differs from frame_length 16"):
        infer("STFT", [x, step, TensorType("f32", [8]), np.array(16, np.int64)], {})


# -- windows and the mel filterbank ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize(
    ("size", "dt"),
    [(10, onnx.TensorProto.FLOAT), (2, onnx.TensorProto.FLOAT), (17, onnx.TensorProto.DOUBLE),
     (9, onnx.TensorProto.FLOAT16), (12, onnx.TensorProto.INT32)],
)  # fmt: skip
def test_windows_match_onnxruntime(op: str, periodic: int, size: int, dt: int) -> None:
    n = np.array(size, np.int64)
    model = one_node(op, [n], {"periodic": periodic, "output_datatype": dt}, opset=17)
    assert_like_ort(model, [n], rtol=1e-3)


def test_windows_have_their_textbook_values() -> None:
    n = np.array(9, np.int32)
    (hann,) = run_core("HannWindow", [n], {"periodic": 0, "output_datatype": DType.float64})
    (blackman,) = run_core("BlackmanWindow", [n], {"periodic": 0, "output_datatype": DType.float64})
    np.testing.assert_allclose(hann, np.hanning(9), atol=1e-15)
    np.testing.assert_allclose(blackman, np.blackman(9), atol=1e-15)
    # A symmetric window of one point is [1] (onnxruntime gives 0/0 = NaN).
    (one,) = run_core("HammingWindow", [np.array(1)], {"periodic": 0})
    np.testing.assert_array_equal(one, np.ones(1, np.float32))
    assert infer("HammingWindow", [TensorType("i64", [])], {}) == ["f32[?]"]
    with pytest.raises(GraphError, match="output_datatype: expected a numeric type"):
        infer("HannWindow", [np.array(4)], {"output_datatype": DType.bool})


@pytest.mark.parametrize(
    ("mels", "length", "rate", "lo", "hi"),
    [(8, 16, 8192, 0.0, 4096.0), (20, 512, 16000, 20.0, 7600.0), (5, 64, 22050, 300.0, 8000.0)],
)
def test_mel_weight_matrix_matches_onnxruntime(
    mels: int, length: int, rate: int, lo: float, hi: float
) -> None:
    inputs = [np.array(v, np.int64) for v in (mels, length, rate)]
    inputs += [np.array(v, np.float32) for v in (lo, hi)]
    (w,) = assert_like_ort(one_node("MelWeightMatrix", inputs, opset=17), inputs)
    assert w.shape == (length // 2 + 1, mels) and w.max() == 1


# -- training ops (ai.onnx.preview.training, which onnxruntime does not run) ------------------


@pytest.mark.parametrize("op", ["Adagrad", "Adam", "Momentum"])
def test_optimizers_match_the_onnx_test_data(op: str) -> None:
    cases = node_cases(op.lower(), op)
    assert cases
    for case in cases:
        node = case.model.graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        for inputs, outputs in case.data_sets:
            got = run_core(node.op_type, [np.asarray(x) for x in inputs], attrs)
            for g, w in zip(got, outputs, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7, err_msg=case.name)


@pytest.mark.parametrize("op", ["Adagrad", "Adam", "Momentum"])
def test_an_optimizer_step_on_two_tensors_is_two_steps(op: str) -> None:
    attrs: dict[str, Any] = {"norm_coefficient": 0.01}
    if op == "Momentum":
        attrs.update(alpha=0.9, beta=0.5, mode="nesterov")
    kinds = {"Adagrad": 3, "Adam": 4, "Momentum": 3}[op]
    r, t = np.array(0.1), np.array(3, np.int64)
    a = [np.abs(rng.standard_normal((2, 3))) for _ in range(kinds)]
    b = [np.abs(rng.standard_normal(4)) for _ in range(kinds)]
    joint = run_core(op, [r, t, *(x for pair in zip(a, b, strict=True) for x in pair)], attrs)
    alone_a, alone_b = run_core(op, [r, t, *a], attrs), run_core(op, [r, t, *b], attrs)
    for k, (ya, yb) in enumerate(zip(alone_a, alone_b, strict=True)):
        np.testing.assert_array_equal(joint[2 * k], ya)
        np.testing.assert_array_equal(joint[2 * k + 1], yb)


def test_optimizers_reject_bad_input() -> None:
    r, t = TensorType("f32", []), TensorType("i64", [])
    x = TensorType("f32", [3])
    with pytest.raises(GraphError, match=r"3 inputs \(X, G, H\) per optimized tensor, got 2"):
        infer("Adagrad", [r, t, x, x], {})
    with pytest.raises(GraphError, match="tensor #0: X, G, V must share one shape"):
        infer("Momentum", [r, t, x, TensorType("f32", [4]), x],
              {"alpha": 0.9, "beta": 1.0, "mode": "standard", "norm_coefficient": 0.0})  # fmt: skip
    with pytest.raises(GraphError, match="mode: expected one of"):
        infer("Momentum", [r, t, x, x, x],
              {"alpha": 0.9, "beta": 1.0, "mode": "fast", "norm_coefficient": 0.0})  # fmt: skip
    assert infer("Adam", [r, t, x, x, x, x], {}) == ["f32[3]"] * 3
