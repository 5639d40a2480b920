"""The builder API: tensors, scalar promotion, Model extraction, inputs, errors, tl.cond."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop import DType
from tensorloop.errors import GraphError, InputError


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


# --------------------------------------------------------------------------------------------
# tensors
# --------------------------------------------------------------------------------------------


def test_placeholder_shape_dtype_name() -> None:
    x = tl.placeholder("float32", [2, "N", 3], name="x")
    assert x.shape == (2, "N", 3)
    assert x.dtype == DType.float32
    assert x.ndim == 3
    assert x.name == "x"
    assert str(x.type) == "f32[2,N,3]"
    y = tl.placeholder(np.int64, [], name="y")
    assert y.shape == () and y.dtype == DType.int64 and y.ndim == 0


def test_models_built_later_may_reuse_placeholder_names() -> None:
    x1 = tl.placeholder("float32", [2], name="x")
    m1 = tl.Model({"y": x1 * 2.0})
    x2 = tl.placeholder("float32", [2], name="x")  # same name, no tl.reset() in between
    m2 = tl.Model({"y": x2 + 1.0})
    assert m1.input_names == m2.input_names == ["x"]
    xv = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(m1.run({"x": xv})["y"], [2.0, 4.0])
    np.testing.assert_array_equal(m2.run({"x": xv})["y"], [2.0, 3.0])
    with pytest.raises(GraphError, match="two inputs of the model are named 'x'"):
        tl.Model({"y": x1 + x2})


def test_placeholder_inside_a_body_is_an_error() -> None:
    with pytest.raises(GraphError, match="placeholder"):
        tl.scan(
            lambda c, _: (c + tl.placeholder("float32", [], name="p"), c),
            tl.constant(np.float32(0)),
            length=2,
        )


def test_constant_default_dtypes() -> None:
    assert tl.constant(1.5).dtype == DType.float32
    assert tl.constant(3).dtype == DType.int64
    assert tl.constant(True).dtype == DType.bool
    assert tl.constant(np.float64(1.0)).dtype == DType.float64
    assert tl.constant(np.arange(3, dtype=np.int32)).dtype == DType.int32
    c = tl.constant([[1.0, 2.0]], dtype="float64")
    assert c.dtype == DType.float64 and c.shape == (1, 2)
    np.testing.assert_array_equal(tl.Model({"c": c}).run()["c"], [[1.0, 2.0]])


def test_op_results_are_typed() -> None:
    x = tl.placeholder("float32", [2, 3], name="x")
    w = tl.placeholder("float32", [3, 4], name="w")
    y = tl.matmul(x, w)
    assert y.shape == (2, 4) and y.dtype == DType.float32
    s = tl.reduce_sum(y, axes=1)
    assert s.shape == (2,)
    lt = x < 0.0
    assert lt.dtype == DType.bool and lt.shape == (2, 3)


@pytest.mark.parametrize(
    ("dtype", "np_dtype"),
    [("float64", np.float64), ("float32", np.float32), ("int32", np.int32), ("int64", np.int64)],
)
def test_python_scalars_take_the_tensor_dtype(dtype: str, np_dtype: Any) -> None:
    x = tl.placeholder(dtype, [3], name="x")
    one = 1.0 if np.dtype(np_dtype).kind == "f" else 1
    outs = {"add": x + one, "radd": one + x, "rsub": 10 - x, "mul": x * 2, "rmul": 3 * x}
    for t in outs.values():
        assert t.dtype == DType(dtype)
    res = tl.Model(outs).run({"x": np.array([1, 2, 3], np_dtype)})
    xv = np.array([1, 2, 3], np_dtype)
    want = {"add": xv + 1, "radd": 1 + xv, "rsub": 10 - xv, "mul": xv * 2, "rmul": 3 * xv}
    for key, w in want.items():
        assert res[key].dtype == np_dtype, key
        np.testing.assert_array_equal(res[key], w.astype(np_dtype), err_msg=key)


def test_bool_of_a_tensor_mentions_tl_cond() -> None:
    x = tl.placeholder("float32", [], name="x")
    with pytest.raises(GraphError, match=r"tl\.cond"):
        bool(x)
    with pytest.raises(GraphError, match=r"tl\.cond"):
        if x < 1.0:  # a Python `if` on a symbolic comparison
            pass


# --------------------------------------------------------------------------------------------
# Model: outputs, inputs, names
# --------------------------------------------------------------------------------------------


def test_model_single_output() -> None:
    x = tl.placeholder("float64", [2], name="x")
    y = x * 3.0
    m = tl.Model(y)
    assert m.input_names == ["x"]
    assert m.output_names == [y.name]
    res = m.run({"x": [1.0, 2.0]})
    assert list(res) == [y.name]
    np.testing.assert_array_equal(res[y.name], [3.0, 6.0])


def test_model_list_outputs_keep_order() -> None:
    x = tl.placeholder("float64", [2], name="x")
    a, b = x + 1.0, x * 2.0
    m = tl.Model([b, a])
    assert m.output_names == [b.name, a.name]
    res = m.run([np.array([1.0, 5.0])])
    np.testing.assert_array_equal(res[b.name], [2.0, 10.0])
    np.testing.assert_array_equal(res[a.name], [2.0, 6.0])


def test_model_dict_outputs_use_the_keys_in_order() -> None:
    x = tl.placeholder("float64", [2], name="x")
    t = x - 1.0
    m = tl.Model({"z": x * x, "a": t, "same": t})
    assert m.output_names == ["z", "a", "same"]
    res = m.run({"x": np.array([2.0, 3.0])})
    assert list(res) == ["z", "a", "same"]
    np.testing.assert_array_equal(res["z"], [4.0, 9.0])
    np.testing.assert_array_equal(res["a"], [1.0, 2.0])
    np.testing.assert_array_equal(res["same"], [1.0, 2.0])


def test_model_may_output_a_placeholder_that_another_output_uses() -> None:
    x = tl.placeholder("float32", [2], name="x")
    y = tl.placeholder("float32", [2], name="y")
    m = tl.Model({"x_out": x, "sum": x + y})
    assert m.input_names == ["x", "y"]
    res = m.run({"x": [1.0, 2.0], "y": [3.0, 4.0]})
    np.testing.assert_array_equal(res["x_out"], [1.0, 2.0])
    np.testing.assert_array_equal(res["sum"], [4.0, 6.0])


@pytest.mark.parametrize("form", ["single", "list", "dict"])
def test_model_may_output_a_placeholder_directly(form: str) -> None:
    x = tl.placeholder("float32", [2], name="x")
    outputs: Any = {"single": x, "list": [x], "dict": {"x_out": x}}[form]
    m = tl.Model(outputs)
    assert m.input_names == ["x"]
    res = m.run({"x": [1.0, 2.0]})
    (out,) = res.values()
    np.testing.assert_array_equal(out, [1.0, 2.0])


def test_input_names_follow_placeholder_creation_and_skip_unused() -> None:
    a = tl.placeholder("float32", [2], name="a")
    tl.placeholder("float32", [2], name="b")  # never used
    c = tl.placeholder("float32", [2], name="c")
    m = tl.Model({"r": c - a})
    assert m.input_names == ["a", "c"]
    res = m.run([np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)])
    np.testing.assert_array_equal(res["r"], [9.0, 18.0])


def test_explicit_inputs_order() -> None:
    a = tl.placeholder("float32", [2], name="a")
    b = tl.placeholder("float32", [2], name="b")
    c = tl.placeholder("float32", [2], name="c")
    m = tl.Model({"r": c - a}, inputs=[c, b, a])
    assert m.input_names == ["c", "b", "a"]
    av, bv, cv = (np.array(v, np.float32) for v in ([1, 2], [0, 0], [10, 20]))
    np.testing.assert_array_equal(m.run([cv, bv, av])["r"], [9.0, 18.0])
    np.testing.assert_array_equal(m.run({"a": av, "b": bv, "c": cv})["r"], [9.0, 18.0])


def test_explicit_inputs_missing_a_needed_placeholder() -> None:
    a = tl.placeholder("float32", [2], name="a")
    c = tl.placeholder("float32", [2], name="c")
    with pytest.raises(GraphError, match=r"depend on placeholder\(s\) a not listed in inputs"):
        tl.Model({"r": c - a}, inputs=[c])


def test_explicit_inputs_missing_a_placeholder_only_a_loop_body_uses() -> None:
    w = tl.placeholder("float32", [], name="w")
    xs = tl.placeholder("float32", [3], name="xs")
    c, _ = tl.scan(lambda c, x: (c + x * w, x), tl.constant(np.float32(0)), xs)
    with pytest.raises(GraphError, match=r"placeholder\(s\) w"):
        tl.Model({"c": c}, inputs=[xs])
    m = tl.Model({"c": c}, inputs=[w, xs])
    res = m.run([np.float32(2.0), np.array([1.0, 2.0, 3.0], np.float32)])
    assert res["c"] == np.float32(12.0)


def test_output_name_clashing_with_an_input_name_is_rejected() -> None:
    x = tl.placeholder("float32", [2], name="x")
    with pytest.raises(GraphError, match="'x'"):
        tl.Model({"x": x + 1.0})


def test_output_from_a_closed_body_is_rejected_by_model() -> None:
    leaked: list[Any] = []

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        leaked.append(x * 2.0)
        return c + x, x

    tl.scan(step, tl.constant(np.float32(0)), tl.placeholder("float32", [3], name="xs"))
    with pytest.raises(GraphError, match="loop or branch body"):
        tl.Model({"bad": leaked[0]})


def test_using_a_tensor_from_a_closed_body_raises() -> None:
    leaked: list[Any] = []

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        leaked.append(x * 2.0)
        return c + x, x

    xs = tl.placeholder("float32", [3], name="xs")
    tl.scan(step, tl.constant(np.float32(0)), xs)
    with pytest.raises(GraphError, match="closed"):
        _ = leaked[0] + 1.0
    # ... and inside a later body too
    with pytest.raises(GraphError, match="closed"):
        tl.scan(lambda c, x: (c + leaked[0], x), tl.constant(np.float32(0)), xs)
    # ... and in a branch
    with pytest.raises(GraphError, match="closed"):
        tl.cond(tl.constant(True), lambda: leaked[0], lambda: leaked[0])


# --------------------------------------------------------------------------------------------
# running: inputs as dict or list, and InputError
# --------------------------------------------------------------------------------------------


@pytest.fixture
def two_input_model() -> tl.Model:
    x = tl.placeholder("float32", [2, 3], name="x")
    n = tl.placeholder("int64", ["N"], name="n")
    return tl.Model({"s": tl.reduce_sum(x) + 1.0, "m": n * 2})


def test_run_with_dict_or_list(two_input_model: tl.Model) -> None:
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    nv = np.array([1, 2, 3], np.int64)
    for res in (two_input_model.run({"n": nv, "x": xv}), two_input_model.run([xv, nv])):
        assert res["s"] == np.float32(16.0)
        np.testing.assert_array_equal(res["m"], [2, 4, 6])
    # nested Python lists are converted to the input's type
    res = two_input_model.run({"x": [[0, 1, 2], [3, 4, 5]], "n": [7]})
    assert res["s"] == np.float32(16.0) and res["s"].dtype == np.float32
    np.testing.assert_array_equal(res["m"], [14])
    # a symbolic dim accepts any size, including 0
    assert two_input_model.run({"x": xv, "n": np.zeros(0, np.int64)})["m"].shape == (0,)


def test_input_error_wrong_dtype(two_input_model: tl.Model) -> None:
    with pytest.raises(InputError, match=r"input 'x': expected f32\[2,3\], got float64"):
        two_input_model.run({"x": np.zeros((2, 3)), "n": np.zeros(1, np.int64)})
    with pytest.raises(InputError, match=r"input 'n': expected i64\[N\], got int32"):
        two_input_model.run({"x": np.zeros((2, 3), np.float32), "n": np.zeros(1, np.int32)})


def test_input_error_wrong_shape(two_input_model: tl.Model) -> None:
    with pytest.raises(InputError, match=r"input 'x': expected f32\[2,3\], got float32\[3, 2\]"):
        two_input_model.run({"x": np.zeros((3, 2), np.float32), "n": np.zeros(1, np.int64)})
    with pytest.raises(InputError, match=r"input 'n': expected i64\[N\], got int64\[\]"):
        two_input_model.run({"x": np.zeros((2, 3), np.float32), "n": np.int64(1)})
    with pytest.raises(InputError, match=r"input 'x'"):
        two_input_model.run({"x": [1.0, 2.0], "n": [1]})


def test_input_error_missing_and_unknown(two_input_model: tl.Model) -> None:
    with pytest.raises(InputError, match=r"missing input\(s\) n"):
        two_input_model.run({"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(InputError, match=r"unknown input\(s\) bogus; the model takes x, n"):
        two_input_model.run(
            {"x": np.zeros((2, 3), np.float32), "n": np.zeros(1, np.int64), "bogus": 1}
        )
    with pytest.raises(InputError, match="takes 2 inputs, got 1"):
        two_input_model.run([np.zeros((2, 3), np.float32)])


def test_input_error_unconvertible(two_input_model: tl.Model) -> None:
    with pytest.raises(InputError, match=r"input 'x': cannot convert"):
        two_input_model.run({"x": "abc", "n": [1]})


# --------------------------------------------------------------------------------------------
# tl.cond
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [True, False])
def test_cond_captured_in_one_branch_only(p: bool) -> None:
    pred = tl.placeholder("bool", [], name="pred")
    a = tl.placeholder("float32", [2], name="a")
    c = tl.placeholder("float32", [2], name="c")
    out = tl.cond(pred, lambda: a * 2.0, lambda: c + 1.0)
    m = tl.Model({"out": out})
    (node,) = m.graph.nodes
    assert node.op == "If"
    assert len(node.inputs) == 3  # pred, then a and c, each captured by one branch
    then_b, else_b = node.attrs["then_branch"], node.attrs["else_branch"]
    assert len(then_b.inputs) == len(else_b.inputs) == 2
    av, cv = np.array([1.0, -2.0], np.float32), np.array([5.0, 7.0], np.float32)
    res = m.run({"pred": p, "a": av, "c": cv})
    np.testing.assert_array_equal(res["out"], av * 2 if p else cv + 1)


@pytest.mark.parametrize("p", [True, False])
def test_cond_branches_capture_in_different_orders(p: bool) -> None:
    pred = tl.placeholder("bool", [], name="pred")
    a = tl.placeholder("float64", [], name="a")
    b = tl.placeholder("float64", [], name="b")
    out = tl.cond(pred, lambda: a - b, lambda: b - a * 10.0)
    res = tl.Model({"out": out}).run({"pred": p, "a": 3.0, "b": 1.0})
    assert res["out"] == (2.0 if p else 1.0 - 30.0)


@pytest.mark.parametrize("p", [True, False])
def test_cond_with_operands_and_pytree_results(p: bool) -> None:
    pred = tl.placeholder("bool", [], name="pred")
    x = tl.placeholder("float64", [3], name="x")
    k = tl.placeholder("float64", [], name="k")
    out = tl.cond(
        pred,
        lambda v, s: {"sum": tl.reduce_sum(v) * k, "v": v + s},
        lambda v, s: {"sum": tl.reduce_sum(v * v), "v": v - s},
        x,
        tl.constant(2.0, "float64"),
    )
    assert set(out) == {"sum", "v"}
    res = tl.Model({"s": out["sum"], "v": out["v"]}).run(
        {"pred": p, "x": [1.0, 2.0, 3.0], "k": 0.5}
    )
    xv = np.array([1.0, 2.0, 3.0])
    assert res["s"] == (xv.sum() * 0.5 if p else (xv * xv).sum())
    np.testing.assert_array_equal(res["v"], xv + 2.0 if p else xv - 2.0)


def test_cond_with_python_bool_pred_and_constant_results() -> None:
    x = tl.placeholder("float32", [], name="x")
    out = tl.cond(True, lambda: x + 1.0, lambda: x - 1.0)
    assert tl.Model({"out": out}).run({"x": 1.0})["out"] == np.float32(2.0)


def test_cond_pred_must_be_a_bool_scalar() -> None:
    x = tl.placeholder("float32", [2], name="x")
    with pytest.raises(GraphError, match=r"tl\.cond: pred must be a bool scalar"):
        tl.cond(x, lambda: x, lambda: x)
    with pytest.raises(GraphError, match=r"tl\.cond: pred must be a bool scalar"):
        tl.cond(x < 0.0, lambda: x, lambda: x)  # a bool vector is not a scalar


def test_cond_branches_must_agree_on_structure() -> None:
    x = tl.placeholder("float32", [], name="x")
    with pytest.raises(GraphError, match="different structures"):
        tl.cond(x < 0.0, lambda: (x, x), lambda: x)


def test_cond_in_loop_uses_a_root_value_twice_in_one_branch() -> None:
    w = tl.placeholder("float64", [], name="w")
    xs = tl.placeholder("float64", [3], name="xs")

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        y = tl.cond(x < 0.0, lambda: x * w + w, lambda: x)
        return c + y, y

    c, ys = tl.scan(step, tl.constant(np.float64(0)), xs)
    res = tl.Model({"c": c, "ys": ys}).run({"w": 2.0, "xs": [-1.0, 3.0, -2.0]})
    np.testing.assert_array_equal(res["ys"], [0.0, 3.0, -2.0])


# --------------------------------------------------------------------------------------------
# loop builders: error paths and bound dtypes
# --------------------------------------------------------------------------------------------


def test_scan_errors() -> None:
    xs = tl.placeholder("float32", [4, 2], name="xs")
    init = tl.constant(np.zeros(2, np.float32))
    with pytest.raises(GraphError, match="needs xs or length"):
        tl.scan(lambda c, x: (c, c), init)
    with pytest.raises(GraphError, match=r"length=3 but xs leaf #0 has 4 elements on axis 0"):
        tl.scan(lambda c, x: (c + x, x), init, xs, length=3)
    with pytest.raises(GraphError, match=r"axis 2 is out of range"):
        tl.scan(lambda c, x: (c + x, x), init, xs, axis=2)
    with pytest.raises(GraphError, match="must return a pair"):
        tl.scan(lambda c, x: c + x, init, xs)
    with pytest.raises(GraphError, match="structure"):
        tl.scan(lambda c, x: ((c, c), x), init, xs)
    with pytest.raises(GraphError, match=r"carried #0 of tl\.scan: body yields i64\[2\]"):
        tl.scan(lambda c, x: (tl.cast(c, "int64"), x), init, xs)


def test_while_loop_errors() -> None:
    x = tl.placeholder("float32", [2], name="x")
    with pytest.raises(GraphError, match=r"tl\.while_loop: cond_fn must be a bool scalar"):
        tl.while_loop(lambda v: v < 1.0, lambda v: v + 1.0, x)  # cond is bool[2]
    with pytest.raises(GraphError, match="structure"):
        tl.while_loop(lambda v: tl.reduce_sum(v) < 1.0, lambda v: (v, v), x)


@pytest.mark.parametrize(
    ("lower_kind", "upper_kind"),
    [("int", "int32"), ("int32", "int"), ("int32", "int32"), ("int64", "int")],
)
def test_fori_loop_bound_dtypes(lower_kind: str, upper_kind: str) -> None:
    feeds: dict[str, Any] = {}

    def bound(kind: str, value: int, name: str) -> Any:
        if kind == "int":
            return value
        feeds[name] = np.asarray(value, kind)
        return tl.placeholder(kind, [], name=name)

    lo, hi = bound(lower_kind, 2, "lo"), bound(upper_kind, 6, "hi")
    out = tl.fori_loop(
        lo, hi, lambda i, acc: acc * 2.0 + tl.cast(i, "float64"), tl.constant(1.0, "float64")
    )
    res = tl.Model({"out": out}).run(feeds)
    want = 1.0
    for i in range(2, 6):
        want = want * 2 + i
    assert res["out"] == want


def test_assign_checks_target_and_type() -> None:
    state = tl.persistent_tensor(np.zeros(3, np.float32), name="h")
    x = tl.placeholder("float32", [3], name="x")
    with pytest.raises(GraphError, match=r"tl\.assign to 'h': expected f32\[3\], got f32\[2\]"):
        tl.assign(state, tl.constant(np.zeros(2, np.float32)))
    with pytest.raises(GraphError, match="is not a persistent tensor"):
        tl.assign(x, x)
    tl.assign(state, state + x)
    m = tl.Model({"h_before": state * 1.0})
    assert m.input_names == ["x"]
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(m.run({"x": xv})["h_before"], np.zeros(3))
    np.testing.assert_array_equal(m.run({"x": xv})["h_before"], xv)
    np.testing.assert_array_equal(m.state["h"], 2 * xv)


def test_named_body_tensor_can_be_traced() -> None:
    xs = tl.placeholder("float64", [2, 3], name="xs")

    def outer(c: Any, row: Any) -> tuple[Any, Any]:
        def inner(c2: Any, v: Any) -> tuple[Any, Any]:
            y = tl.name(v * 10.0 + c, "y_inner")
            return c2 + y, y

        c2, _ = tl.scan(inner, tl.constant(np.float64(0)), row)
        return c + c2, c2

    c, _ = tl.scan(outer, tl.constant(np.float64(0)), xs)
    xv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    res = tl.Model({"c": c}).run({"xs": xv}, trace=["y_inner"])
    want, c_ = [], 0.0
    for i in range(2):
        c2_ = 0.0
        for j in range(3):
            y = xv[i, j] * 10 + c_
            want.append(((i, j), y))
            c2_ += y
        c_ += c2_
    assert res["c"] == c_
    assert [(e.iteration, float(e.value)) for e in res.trace["y_inner"]] == want


def test_lossy_python_scalars_and_list_inputs_are_rejected() -> None:
    n = tl.placeholder("int64", (3,), name="n")
    with pytest.raises(tl.GraphError, match=r"2\.5 does not fit element type i64"):
        _ = n * 2.5
    doubled = tl.Model({"d": n * 2.0})  # integral floats are exact, so they are fine
    np.testing.assert_array_equal(doubled.run([[1, 2, 3]])["d"], [2, 4, 6])
    with pytest.raises(tl.InputError, match=r"input 'n': expected i64\[3\], got non-integral"):
        doubled.run([[1.5, 2, 3]])


def test_output_named_like_an_input_is_a_clear_error() -> None:
    x = tl.placeholder("float32", (2,), name="x")
    with pytest.raises(tl.GraphError, match="output name 'x' is already the name of an input"):
        tl.Model({"x": x + 1.0})


def test_scan_rejects_xs_of_different_lengths_and_names_its_loops() -> None:
    a = tl.placeholder("float32", (3, 2), name="a")
    b = tl.placeholder("float32", (4, 2), name="b")
    with pytest.raises(tl.GraphError, match=r"different lengths \[3, 4\] on axis 0"):
        tl.scan(lambda c, x: (c, x[0] + x[1]), tl.constant(np.zeros(2, np.float32)), (a, b))
    runaway = tl.while_loop(lambda v: v > -1.0, lambda v: v + 1.0, tl.constant(np.float32(0)))
    model = tl.Model({"v": runaway}, max_iterations=5)
    with pytest.raises(tl.LoopLimitError, match=r"Loop 'while[^']*': still running after 5"):
        model.run({})
