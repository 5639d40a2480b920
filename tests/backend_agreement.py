"""How two backends' results are compared: the law every backend obeys against the reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorloop.reference.runtime import TraceEntry


def tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    """(rtol, atol scale) for a float dtype: passes may reorder sums (one batched GEMM instead of
    one per step), so floats agree to a few units in the last place, scaled by magnitude."""
    narrow = dtype.itemsize <= 2 or dtype.kind != "f"  # float16, bfloat16 and the float8s
    eps = 1e-3 if narrow else float(np.finfo(dtype).eps)
    return 1e3 * eps, 1e3 * eps


def assert_same_value(got: Any, want: Any, where: str) -> None:
    if isinstance(want, list):
        assert isinstance(got, list), f"{where}: got {type(got).__name__}, want a sequence"
        assert len(got) == len(want), f"{where}: sequence of {len(got)}, want {len(want)}"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_value(g, w, f"{where}[{k}]")
        return
    if want is None:
        assert got is None, f"{where}: got {type(got).__name__}, want none"
        return
    g, w = np.asarray(got), np.asarray(want)
    assert type(got) is type(want), (
        f"{where}: got a {type(got).__name__}, want a {type(want).__name__}"
    )
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, want {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape}, want {w.shape}"
    if w.dtype.kind in "fc" or w.dtype.kind == "V":
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        rtol, atol = tolerance(w.dtype)
        scale = float(np.nanmax(np.abs(wf[np.isfinite(wf)]), initial=1.0))
        np.testing.assert_allclose(gf, wf, rtol=rtol, atol=atol * scale, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)


def assert_same_outputs(got: Mapping[str, Any], want: Mapping[str, Any], where: str) -> None:
    assert list(got) == list(want), f"{where}: outputs {list(got)}, want {list(want)}"
    for name in want:
        assert_same_value(got[name], want[name], f"{where}: output '{name}'")


def assert_same_trace(
    got: Mapping[str, list[TraceEntry]], want: Mapping[str, list[TraceEntry]], where: str
) -> None:
    assert sorted(got) == sorted(want), f"{where}: traced {sorted(got)}, want {sorted(want)}"
    for name, entries in want.items():
        paths = [(e.loop, e.iteration) for e in got[name]]
        want_paths = [(e.loop, e.iteration) for e in entries]
        assert paths == want_paths, f"{where}: trace of '{name}' differs"
        for g, w in zip(got[name], entries, strict=True):
            assert_same_value(g.value, w.value, f"{where}: trace of '{name}' at {w.iteration}")
