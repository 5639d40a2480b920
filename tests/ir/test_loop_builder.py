"""Loops through the builder (tl.scan, tl.while_loop, tl.fori_loop, tl.cond) vs. plain Python."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from loop_ir_builders import BOOL, F32, F64, I64

import tensorloop as tl
from tensorloop.errors import LoopLimitError


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


# --------------------------------------------------------------------------------------------
# the builder: tl.scan, tl.while_loop, tl.fori_loop, tl.cond
# --------------------------------------------------------------------------------------------


def model_loops(model: tl.Model) -> list[Any]:
    return [n for n in model.graph.nodes if n.op == "Loop"]


class TestScan:
    def test_scan_cumsum_with_pytree_carry_and_xs(self) -> None:
        xs = tl.placeholder(F64, [5, 2], name="xs")
        zs = tl.placeholder(F64, [5], name="zs")

        def step(carry: dict[str, Any], x: tuple[Any, Any]) -> tuple[Any, Any]:
            row, z = x
            total, count = carry["total"], carry["count"]
            new = {"total": total + row * z, "count": count + 1.0}
            return new, (new["total"], row - z)

        init = {"total": tl.constant(np.zeros(2)), "count": tl.constant(np.float64(0))}
        final, (totals, diffs) = tl.scan(step, init, (xs, zs))
        assert set(final) == {"total", "count"}
        m = tl.Model(
            {"total": final["total"], "count": final["count"], "totals": totals, "d": diffs}
        )
        rng = np.random.default_rng(3)
        xv, zv = rng.standard_normal((5, 2)), rng.standard_normal(5)
        res = m.run({"xs": xv, "zs": zv})
        total, want_totals, want_d = np.zeros(2), [], []
        for k in range(5):
            total = total + xv[k] * zv[k]
            want_totals.append(total)
            want_d.append(xv[k] - zv[k])
        np.testing.assert_allclose(res["total"], total, rtol=1e-12)
        assert res["count"] == 5.0
        np.testing.assert_allclose(res["totals"], want_totals, rtol=1e-12)
        np.testing.assert_array_equal(res["d"], want_d)

    @pytest.mark.parametrize("reverse", [False, True])
    @pytest.mark.parametrize("axis", [0, 1, -1])
    def test_scan_axis_and_reverse(self, axis: int, reverse: bool) -> None:
        xs = tl.placeholder(F64, [3, 4], name="xs")
        slice_len = 4 if axis == 0 else 3
        final, ys = tl.scan(
            lambda c, x: (c * 2.0 + x, c + x),
            tl.constant(np.zeros(slice_len)),
            xs,
            axis=axis,
            reverse=reverse,
        )
        res = tl.Model({"c": final, "ys": ys}).run({"xs": np.arange(12.0).reshape(3, 4)})
        xv = np.arange(12.0).reshape(3, 4)
        xm = np.moveaxis(xv, axis, 0)
        order = range(len(xm) - 1, -1, -1) if reverse else range(len(xm))
        c, ys_ = np.zeros(slice_len), [None] * len(xm)
        for k in order:
            ys_[k] = c + xm[k]
            c = c * 2 + xm[k]
        np.testing.assert_array_equal(res["c"], c)
        # ys[i] pairs with xs[i] along the scanned axis, also when reversed
        np.testing.assert_array_equal(res["ys"], np.stack(ys_, axis=axis))

    def test_scan_with_length_and_no_xs(self) -> None:
        c, ys = tl.scan(lambda c, _: (c * 3.0, c), tl.constant(np.float64(1.0)), None, length=4)
        res = tl.Model({"c": c, "ys": ys}).run()
        assert res["c"] == 81.0
        np.testing.assert_array_equal(res["ys"], [1.0, 3.0, 9.0, 27.0])

    def test_reverse_scan_with_length_only(self) -> None:
        c, ys = tl.scan(
            lambda c, _: (c * 2.0 + 1.0, c),
            tl.constant(np.float64(0)),
            None,
            length=4,
            reverse=True,
        )
        res = tl.Model({"c": c, "ys": ys}).run()
        want, c_ = [0.0] * 4, 0.0
        for k in reversed(range(4)):  # visited last to first; ys[k] pairs with step k
            want[k] = c_
            c_ = c_ * 2 + 1
        assert res["c"] == c_ == 15.0
        np.testing.assert_array_equal(res["ys"], want)

    def test_scan_zero_length(self) -> None:
        xs = tl.placeholder(F32, [0, 3], name="xs")
        c, ys = tl.scan(lambda c, x: (c + x, x * 2.0), tl.constant(np.ones(3, np.float32)), xs)
        res = tl.Model({"c": c, "ys": ys}).run({"xs": np.zeros((0, 3), np.float32)})
        np.testing.assert_array_equal(res["c"], np.ones(3))
        assert res["ys"].shape == (0, 3) and res["ys"].dtype == np.float32

    def test_identity_scan_returns_xs_even_when_empty(self) -> None:
        xs = tl.placeholder(F32, ["T", "N"], name="xs")
        _, ys = tl.scan(lambda c, x: (c, x), tl.constant(np.float32(0)), xs)
        m = tl.Model({"ys": ys})
        for t in (3, 0):
            xv = np.arange(t * 5, dtype=np.float32).reshape(t, 5)
            np.testing.assert_array_equal(m.run({"xs": xv})["ys"], xv)
            assert m.run({"xs": xv})["ys"].shape == (t, 5)

    def test_captured_outer_tensors_become_invariants(self) -> None:
        xs = tl.placeholder(F32, [4, 2], name="xs")
        scale = tl.placeholder(F32, [2], name="scale")
        bias = tl.placeholder(F32, [], name="bias")
        k = tl.constant(np.float32(10.0))  # constants are copied into the body, not passed

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            y = x * scale + bias + scale * k  # scale captured twice, once as an invariant
            return c + y, y

        c, ys = tl.scan(step, tl.constant(np.zeros(2, np.float32)), xs)
        m = tl.Model({"c": c, "ys": ys})
        (node,) = model_loops(m)
        # trip, cond, 1 carried, 1 sliced, 2 invariants (scale, bias)
        assert len(node.inputs) == 2 + 1 + 1 + 2
        assert node.inputs[0] is None and node.inputs[1] is None
        assert {v.name for v in node.inputs[4:]} == {"scale", "bias"}
        assert len(node.attrs["body"].inputs) == 1 + 1 + 1 + 2
        xv = np.arange(8, dtype=np.float32).reshape(4, 2)
        sv, bv = np.array([0.5, -1.0], np.float32), np.float32(0.25)
        res = m.run({"xs": xv, "scale": sv, "bias": bv})
        want_ys = xv * sv + bv + sv * np.float32(10)
        np.testing.assert_allclose(res["ys"], want_ys, rtol=1e-6)
        np.testing.assert_allclose(res["c"], want_ys.sum(axis=0), rtol=1e-6)

    def test_nested_scan_captures_from_two_levels_up(self) -> None:
        w = tl.placeholder(F64, [3], name="w")
        xs = tl.placeholder(F64, [2, 4, 3], name="xs")

        def outer(c: Any, plane: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * w  # w lives two levels up
                return c2 + y, y

            c_in, ys = tl.scan(inner, c, plane)
            return c_in, ys

        c, yss = tl.scan(outer, tl.constant(np.zeros(3)), xs)
        m = tl.Model({"c": c, "yss": yss})
        (outer_node,) = model_loops(m)
        (inner_node,) = [n for n in outer_node.attrs["body"].nodes if n.op == "Loop"]
        assert len(outer_node.inputs) == 2 + 1 + 1 + 1  # w is an invariant of the outer loop
        assert len(inner_node.inputs) == 2 + 1 + 1 + 1  # and, through it, of the inner loop
        rng = np.random.default_rng(4)
        wv, xv = rng.standard_normal(3), rng.standard_normal((2, 4, 3))
        res = m.run({"w": wv, "xs": xv})
        np.testing.assert_allclose(res["yss"], xv * wv, rtol=1e-12)
        np.testing.assert_allclose(res["c"], (xv * wv).sum(axis=(0, 1)), rtol=1e-12)

    def test_nested_scan_uses_a_two_levels_up_value_twice(self) -> None:
        w = tl.placeholder(F64, [3], name="w")
        xs = tl.placeholder(F64, [2, 4, 3], name="xs")

        def outer(c: Any, plane: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * w + w
                return c2 + y, y

            return tl.scan(inner, c, plane)

        c, yss = tl.scan(outer, tl.constant(np.zeros(3)), xs)
        m = tl.Model({"c": c, "yss": yss})
        wv, xv = np.array([1.0, 2.0, 3.0]), np.ones((2, 4, 3))
        res = m.run({"w": wv, "xs": xv})
        np.testing.assert_allclose(res["yss"], xv * wv + wv)

    def test_trace_body_value_through_builder(self) -> None:
        xs = tl.placeholder(F64, [2, 3], name="xs")
        names: list[str] = []

        def outer(c: Any, row: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * 2.0 + c
                names.append(y.name)
                return c2 + y, y

            c2, _ = tl.scan(inner, tl.constant(np.float64(0)), row)
            return c + c2, c2

        c, _ = tl.scan(outer, tl.constant(np.float64(0)), xs)
        m = tl.Model({"c": c})
        xv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        res = m.run({"xs": xv}, trace=[names[-1]])
        want, c_ = [], 0.0
        for i in range(2):
            c2_ = 0.0
            for j in range(3):
                y = xv[i, j] * 2 + c_
                want.append(((i, j), y))
                c2_ += y
            c_ += c2_
        assert res["c"] == c_
        entries = res.trace[names[-1]]
        assert [(e.iteration, float(e.value)) for e in entries] == want


class TestWhileAndFori:
    def test_while_loop_with_dict_state(self) -> None:
        x0 = tl.placeholder(F64, [], name="x0")
        init = {"x": x0, "n": tl.constant(np.int64(0))}
        out = tl.while_loop(
            lambda s: s["x"] < 100.0, lambda s: {"x": s["x"] * 3.0 + 1.0, "n": s["n"] + 1}, init
        )
        m = tl.Model({"x": out["x"], "n": out["n"]})
        for x0v in (1.0, 50.0, 150.0, 0.0):
            res = m.run({"x0": x0v})
            x, n = x0v, 0
            while x < 100:
                x, n = x * 3 + 1, n + 1
            assert (res["x"], res["n"]) == (x, n)
            assert res["n"].dtype == np.int64

    def test_while_loop_growing_carried_vector(self) -> None:
        """The builder widens f32[1] to f32[?] when the body grows the carried vector."""
        init = (tl.constant(np.zeros(1, np.float32)), tl.constant(np.int64(0)))

        def body(s: tuple[Any, Any]) -> tuple[Any, Any]:
            v, k = s
            return tl.concat([v, tl.reshape(tl.cast(k, F32), [1])]), k + 1

        v, k = tl.while_loop(lambda s: s[1] < 5, body, init)
        res = tl.Model({"v": v, "k": k}).run()
        np.testing.assert_array_equal(res["v"], [0.0, 0.0, 1.0, 2.0, 3.0, 4.0])
        assert res["k"] == 5

    @pytest.mark.parametrize(("lo", "hi"), [(0, 5), (2, 6), (3, 3), (5, 1), (-2, 2)])
    def test_fori_loop_with_tuple_state(self, lo: int, hi: int) -> None:
        init = (tl.constant(np.float64(1.0)), tl.constant(np.zeros(2)))

        def body(i: Any, s: tuple[Any, Any]) -> tuple[Any, Any]:
            a, v = s
            fi = tl.cast(i, F64)
            return a * 2.0 + fi, v + tl.concat([tl.reshape(fi, [1]), tl.reshape(a, [1])])

        a, v = tl.fori_loop(lo, hi, body, init)
        res = tl.Model({"a": a, "v": v}).run()
        a_, v_ = 1.0, np.zeros(2)
        for i in range(lo, hi):
            a_, v_ = a_ * 2 + i, v_ + np.array([i, a_])
        assert res["a"] == a_
        np.testing.assert_array_equal(res["v"], v_)

    @pytest.mark.parametrize(("lo", "hi"), [(0, 4), (3, 7), (5, 2)])
    def test_fori_loop_tensor_bounds(self, lo: int, hi: int) -> None:
        lower = tl.placeholder(I64, [], name="lower")
        upper = tl.placeholder(I64, [], name="upper")
        out = tl.fori_loop(lower, upper, lambda i, acc: acc * 10 + i, tl.constant(np.int64(0)))
        res = tl.Model({"out": out}).run({"lower": lo, "upper": hi})
        want = 0
        for i in range(lo, hi):
            want = want * 10 + i
        assert res["out"] == want

    def test_fori_loop_int_lower_int32_upper(self) -> None:
        upper = tl.placeholder("int32", [], name="upper")
        out = tl.fori_loop(0, upper, lambda i, acc: acc + tl.cast(i, F64), tl.constant(0.0, F64))
        res = tl.Model({"out": out}).run({"upper": np.int32(4)})
        assert res["out"] == 6.0

    def test_fori_loop_body_sees_lower_offset(self) -> None:
        out = tl.fori_loop(
            3,
            6,
            lambda i, acc: tl.concat([acc, tl.reshape(i, [1])]),
            tl.constant(np.zeros(0, np.int64)),
        )
        res = tl.Model({"out": out}).run()
        np.testing.assert_array_equal(res["out"], [3, 4, 5])

    def test_builder_loop_limit(self) -> None:
        out = tl.while_loop(lambda x: x > -1.0, lambda x: x + 1.0, tl.constant(np.float64(0)))
        m = tl.Model({"out": out}, max_iterations=50)
        with pytest.raises(LoopLimitError, match="50"):
            m.run()


class TestCondAndLoops:
    def test_cond_inside_scan(self) -> None:
        xs = tl.placeholder(F32, [6], name="xs")
        thresh = tl.placeholder(F32, [], name="thresh")

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            # thresh captured by one branch only, two levels up from the branch body
            y = tl.cond(x < 0.0, lambda: -x, lambda: x * thresh)
            return c + y, y

        c, ys = tl.scan(step, tl.constant(np.float32(0)), xs)
        res = tl.Model({"c": c, "ys": ys}).run(
            {"xs": np.array([1.0, -2.0, 3.0, -4.0, 0.0, 5.0], np.float32), "thresh": 2.0}
        )
        xv = np.array([1.0, -2.0, 3.0, -4.0, 0.0, 5.0], np.float32)
        want = np.where(xv < 0, -xv, xv * np.float32(2.0))
        np.testing.assert_array_equal(res["ys"], want)
        assert res["c"] == want.sum()

    @pytest.mark.parametrize("p", [True, False])
    def test_scan_inside_cond(self, p: bool) -> None:
        pred = tl.placeholder(BOOL, [], name="pred")
        xs = tl.placeholder(F64, [4], name="xs")

        def cumsum() -> Any:
            return tl.scan(lambda c, x: (c + x, c + x), tl.constant(np.float64(0)), xs)[1]

        out = tl.cond(pred, cumsum, lambda: xs * -1.0)
        xv = np.array([1.0, 2.0, 3.0, 4.0])
        res = tl.Model({"out": out}).run({"pred": p, "xs": xv})
        np.testing.assert_array_equal(res["out"], np.cumsum(xv) if p else -xv)

    def test_max_iterations_inside_nested_loop(self) -> None:
        xs = tl.placeholder(F64, [3], name="xs")

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            inner = tl.while_loop(lambda v: v < x, lambda v: v + 1.0, c)
            return inner, inner

        c, _ = tl.scan(step, tl.constant(np.float64(0)), xs)
        m = tl.Model({"c": c}, max_iterations=10)
        np.testing.assert_array_equal(m.run({"xs": [3.0, 5.0, 9.0]})["c"], 9.0)
        with pytest.raises(LoopLimitError):
            m.run({"xs": [3.0, 50.0, 9.0]})


class TestStreamingRNN:
    H, D = 3, 2

    def _build(self) -> tuple[tl.Model, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(5)
        wx = rng.standard_normal((self.D, self.H)).astype(np.float32)
        wh = (rng.standard_normal((self.H, self.H)) * 0.5).astype(np.float32)
        state = tl.persistent_tensor(np.zeros(self.H, np.float32), name="h")
        xs = tl.placeholder(F32, ["T", self.D], name="xs")
        wx_t, wh_t = tl.constant(wx), tl.constant(wh)

        def step(h: Any, x: Any) -> tuple[Any, Any]:
            h2 = tl.tanh(tl.matmul(x, wx_t) + tl.matmul(h, wh_t))
            return h2, h2

        h_last, hs = tl.scan(step, state, xs)
        tl.assign(state, h_last)
        return tl.Model({"hs": hs}), wx, wh

    @staticmethod
    def _reference(h: np.ndarray, xs: np.ndarray, wx: np.ndarray, wh: np.ndarray) -> np.ndarray:
        out = []
        for x in xs:
            h = np.tanh(x @ wx + h @ wh)
            out.append(h)
        return np.array(out, np.float32).reshape(len(xs), len(h))

    def test_state_carries_across_runs_and_resets(self) -> None:
        m, wx, wh = self._build()
        seq = np.random.default_rng(6).standard_normal((7, self.D)).astype(np.float32)
        full = self._reference(np.zeros(self.H, np.float32), seq, wx, wh)
        a = m.run({"xs": seq[:3]})["hs"]
        b = m.run({"xs": seq[3:]})["hs"]
        np.testing.assert_allclose(np.concatenate([a, b]), full, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.state["h"], full[-1], rtol=1e-5, atol=1e-6)
        # an empty chunk leaves the state alone
        empty = m.run({"xs": np.zeros((0, self.D), np.float32)})["hs"]
        assert empty.shape == (0, self.H)
        np.testing.assert_allclose(m.state["h"], full[-1], rtol=1e-5, atol=1e-6)
        m.reset_state()
        np.testing.assert_array_equal(m.state["h"], np.zeros(self.H))
        again = m.run({"xs": seq[:3]})["hs"]
        np.testing.assert_array_equal(again, a)

    def test_persistent_tensor_captured_by_a_body(self) -> None:
        """A persistent tensor read inside the body is an invariant; its update lands after."""
        bias = tl.persistent_tensor(np.ones(2, np.float32), name="bias")
        xs = tl.placeholder(F32, [3, 2], name="xs")
        c, ys = tl.scan(
            lambda c, x: (c + x + bias, x * bias), tl.constant(np.zeros(2, np.float32)), xs
        )
        tl.assign(bias, bias * 2.0)
        m = tl.Model({"c": c, "ys": ys})
        (node,) = model_loops(m)
        assert len(node.inputs) == 2 + 1 + 1 + 1  # the bias read is one invariant input
        xv = np.arange(6, dtype=np.float32).reshape(3, 2)
        b = np.ones(2, np.float32)
        for _ in range(3):
            res = m.run({"xs": xv})
            np.testing.assert_array_equal(res["ys"], xv * b)
            np.testing.assert_array_equal(res["c"], xv.sum(axis=0) + 3 * b)
            b = b * 2
            np.testing.assert_array_equal(m.state["bias"], b)

    def test_sessions_are_independent(self) -> None:
        m, wx, wh = self._build()
        seq = np.random.default_rng(7).standard_normal((4, self.D)).astype(np.float32)
        m.run({"xs": seq})
        after_default = m.state["h"].copy()
        s = m.session()
        np.testing.assert_array_equal(s.state["h"], np.zeros(self.H))
        hs = s.run({"xs": seq[:2]})["hs"]
        np.testing.assert_allclose(
            hs, self._reference(np.zeros(self.H, np.float32), seq[:2], wx, wh), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_array_equal(m.state["h"], after_default)  # default session untouched
        s2 = m.session()
        hs2 = s2.run({"xs": seq[:2]})["hs"]
        np.testing.assert_array_equal(hs2, hs)
        s.reset()
        np.testing.assert_array_equal(s.state["h"], np.zeros(self.H))
        np.testing.assert_array_equal(s.run({"xs": seq[:2]})["hs"], hs)
