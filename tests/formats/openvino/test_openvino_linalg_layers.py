"""OpenVINO linear-algebra layers (read_linalg.py: MatMul, Inverse) vs. the CPU plugin, the spec
where the plugin strays from it, and the core Inverse written back (write_linalg.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset16")

from openvino import opset13, opset14  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    ph,
    rand_f32,
    tl_const,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

# -- the writer: Inverse ---------------------------------------------------------------------------


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 5, 5), (1, 1)])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_writer_inverse(shape: tuple[int, ...], dt: Any, tmp_path: Path) -> None:
    n = shape[-1]
    x = (rand_f32(*shape) + 3 * np.eye(n, dtype=np.float32)).astype(dt)
    p, q = ph("x", x), ph("y", x, ("B", *x.shape[1:]) if len(shape) > 2 else None)
    outs = {"static": emit("Inverse", [p]), "dynamic": emit("Inverse", [q])}
    tol = 2e-3 if dt == np.float16 else 2e-5
    written_runs_alike(tl.Model(outs), {"x": x, "y": x}, tmp_path, rtol=tol, atol=tol)


# -- MatMul ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a_shape", "b_shape", "ta", "tb"),
    [
        ((2, 3), (3, 4), False, False),
        ((3, 2), (3, 4), True, False),
        ((2, 3), (4, 3), False, True),
        ((5, 3, 2), (1, 4, 3), True, True),
        ((3,), (3, 4), True, False),  # a 1-D operand ignores its transpose flag
        ((4, 3), (3,), False, True),
        ((3,), (3,), True, True),
    ],
)
def test_matmul(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], ta: bool, tb: bool, tmp_path: Path
) -> None:
    check(
        lambda a, b: opset13.matmul(a, b, ta, tb),
        rand_f32(*a_shape),
        rand_f32(*b_shape),
        tmp_path=tmp_path,
        rtol=1e-5,
    )


# -- Einsum and Trilu, written ---------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
def test_writer_einsum(tmp_path: Path) -> None:
    seq, a, b = rand_f32(4, 3, 2), rand_f32(2, 3), rand_f32(3, 4)
    s, x, y = ph("s", seq), ph("a", a), ph("b", b)
    outs = {
        "mm": emit("Einsum", [x, y], {"equation": "ij, jk -> ik"}),
        "tr": emit("Einsum", [s], {"equation": "...ij->...ji"}),
        "dot": emit("Einsum", [x, x], {"equation": "ij,ij"}),
    }
    written_runs_alike(tl.Model(outs), {"s": seq, "a": a, "b": b}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_trilu(tmp_path: Path) -> None:
    data = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]], np.float32)
    x = ph("x", data, (2, "M"))
    outs = {
        "up": emit("Trilu", [x]),
        "low": emit("Trilu", [x, tl_const(-1)], {"upper": 0}),
        "up2": emit("Trilu", [x, tl_const(1)]),
    }
    written_runs_alike(tl.Model(outs), {"x": data}, tmp_path)


# -- Inverse ---------------------------------------------------------------------------------------
def _invertible(*shape: int) -> Array:
    return rand_f32(*shape) + 3 * np.eye(shape[-1], dtype=np.float32)


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 3, 5, 5)])
def test_inverse(shape: tuple[int, ...], adjoint: bool, tmp_path: Path) -> None:
    check(lambda x: opset14.inverse(x, adjoint), _invertible(*shape), tmp_path=tmp_path, rtol=1e-4)


def test_inverse_dynamic_and_half(tmp_path: Path) -> None:
    check(lambda x: opset14.inverse(x), _invertible(3, 4, 4), tmp_path=tmp_path, dynamic=True)
    half = _invertible(2, 3, 3).astype(np.float16)
    check(lambda x: opset14.inverse(x, True), half, tmp_path=tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
def test_inverse_runs_on_every_backend_and_onnx_refuses_it(backend: str, tmp_path: Path) -> None:
    x = _invertible(2, 3, 3)
    model = tl.Model({"y": emit("Inverse", [tl.placeholder(np.float32, x.shape, name="x")])})
    got = model.run({"x": x}, backend=backend)["y"]
    np.testing.assert_allclose(got, np.linalg.inv(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    with pytest.raises(FormatError, match="ONNX has no op 'Inverse'"):
        tl.save(model, tmp_path / "m.onnx")


def test_inverse_of_a_singular_matrix_is_nan(tmp_path: Path) -> None:
    x = np.stack([np.eye(3), [[1, 2, 3], [2, 4, 6], [0, 0, 1]], np.zeros((3, 3))])
    got = check(lambda p: opset14.inverse(p), x.astype(np.float32), tmp_path=tmp_path, write=False)
    (value,) = got.values()
    np.testing.assert_array_equal(value[0], np.eye(3))
    assert np.isnan(value[1:]).all()
