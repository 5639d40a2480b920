"""ONNX's random ops read from ONNX and drawn as onnxruntime draws them: bit for bit with the first
run of a fresh InferenceSession, for each op, output type, seed, shape and bound; inside a Loop;
written back and read again. Bernoulli follows the spec where onnxruntime (ONNX's function body)
does not, and the node suite's Bernoulli cases are checked for their laws (docs/onnx.md)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import tensorloop as tl
from tensorloop.formats.onnx import load_onnx
from tensorloop.formats.onnx.backend import TensorloopBackend, node_test_cases
from tensorloop.formats.onnx.writer import to_onnx

Array = np.ndarray[Any, Any]
OPSET = 21
"""onnxruntime 1.32 has CPU kernels for these ops up to opset 21 (their opset-22 versions, which
add bfloat16, and Bernoulli's body from opset 22 on, have none)."""
FLOAT, DOUBLE = TensorProto.FLOAT, TensorProto.DOUBLE
SEEDS = [0.0, 1.0, 7.5, 12345.0, -3.0, 3e9, 2.0**40]
SHAPES = [[1], [7], [3, 50], [2, 0, 3], [1001]]


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, Array], outputs: list[str]) -> Any:
    ins = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in inputs.items()
    ]
    outs = [helper.make_empty_tensor_value_info(o) for o in outputs]
    graph = helper.make_graph(nodes, "random", ins, outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _ort(model: onnx.ModelProto, feeds: dict[str, Array], runs: int = 1) -> list[list[Array]]:
    """The outputs of ``runs`` runs of one fresh onnxruntime session."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [[np.asarray(y) for y in session.run(None, feeds)] for _ in range(runs)]


def _tl(model: onnx.ModelProto, feeds: dict[str, Array], backend: str = "compiled") -> list[Array]:
    out = load_onnx(model).run(feeds, backend=backend)
    return [np.asarray(out[o.name]) for o in model.graph.output]


def _same_bits(got: Array, want: Array) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    bits = f"u{got.dtype.itemsize}"  # every bit, NaNs and float16's and bfloat16's too
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def _one(op: str, inputs: dict[str, Array], **attrs: Any) -> onnx.ModelProto:
    shape = attrs.pop("shape", None)
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    if shape is not None:  # typed, as an empty list cannot say its type
        node.attribute.append(
            helper.make_attribute("shape", shape, attr_type=onnx.AttributeProto.INTS)
        )
    return _model([node], inputs, ["y"])


# -- bit for bit with onnxruntime's first run -----------------------------------------------------


@pytest.mark.parametrize("dtype", [FLOAT, DOUBLE], ids=["f32", "f64"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_uniform_and_normal_are_onnxruntimes(
    dtype: int, seed: float, shape: list[int]
) -> None:
    for op, bounds in (
        ("RandomUniform", {"low": -2.5, "high": 7.25}),
        ("RandomNormal", {"mean": -1.5, "scale": 0.3}),
    ):
        model = _one(op, {}, shape=shape, dtype=dtype, seed=seed, **bounds)
        _same_bits(_tl(model, {})[0], _ort(model, {})[0][0])


@pytest.mark.parametrize("op", ["RandomUniformLike", "RandomNormalLike"])
@pytest.mark.parametrize("seed", [0.0, 99.0, -7.0])
def test_the_like_forms_are_onnxruntimes(op: str, seed: float) -> None:
    attrs = {"low": 3.0, "high": 3.5} if "Uniform" in op else {"mean": 100.0, "scale": 1e-3}
    for x, dtype in (
        (np.zeros((4, 33), np.float32), None),
        (np.ones((2, 3, 5), np.float64), None),
        (np.arange(12, dtype=np.int64).reshape(3, 4), DOUBLE),
        (np.zeros((5,), bool), FLOAT),
    ):
        extra = {} if dtype is None else {"dtype": dtype}
        model = _one(op, {"x": x}, seed=seed, **attrs, **extra)
        _same_bits(_tl(model, {"x": x})[0], _ort(model, {"x": x})[0][0])


def test_many_normals_match_the_c_librarys_logf() -> None:
    """40 000 float32 normals take 20 000 logs. glibc's logf is not correctly rounded (even the
    float64 log rounded to float differs from it in about 1 % of them): this fails unless the
    kernel calls it."""
    model = _one("RandomNormal", {}, shape=[200, 200], seed=5.0)
    _same_bits(_tl(model, {})[0], _ort(model, {})[0][0])


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(["RandomUniform", "RandomNormal"]),
    dtype=st.sampled_from([FLOAT, DOUBLE]),
    seed=st.floats(-(2.0**33), 2.0**33, width=32),
    shape=st.lists(st.integers(0, 9), max_size=3),
    a=st.floats(-1e4, 1e4, width=32),
    b=st.floats(2.0**-10, 1e4, width=32),
)
def test_onnxruntimes_draws_for_any_seed_shape_and_bounds(
    op: str, dtype: int, seed: float, shape: list[int], a: float, b: float
) -> None:
    bounds = {"low": a, "high": a + b} if op == "RandomUniform" else {"mean": a, "scale": b}
    model = _one(op, {}, shape=shape, dtype=dtype, seed=seed, **bounds)
    _same_bits(_tl(model, {}, "reference")[0], _ort(model, {})[0][0])


@pytest.mark.parametrize("out", [TensorProto.INT32, TensorProto.INT64])
@pytest.mark.parametrize("seed", [0.0, 2.0, 31337.0])
def test_multinomial_is_onnxruntimes(out: int, seed: float) -> None:
    rng = np.random.default_rng(int(seed))
    x = (rng.normal(size=(5, 12)) * 4).astype(np.float32)
    x[1, 3] = -np.inf
    x[2, 0] = np.nan
    x[3] = -np.inf  # no finite logit: every sample is the class count
    x[4, 5] = np.inf  # not finite: never drawn, as in onnxruntime
    model = _one("Multinomial", {"x": x}, seed=seed, sample_size=257, dtype=out)
    got, (want,) = _tl(model, {"x": x}), _ort(model, {"x": x})[0]
    _same_bits(got[0], want)
    assert set(np.unique(want[3])) == {12} and 5 not in want[4]


@pytest.mark.parametrize("p_type", [np.float32, np.float64])
@pytest.mark.parametrize("out", [None, TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT])
def test_bernoulli_is_onnxruntimes_uniform_stream_below_p(p_type: Any, out: int | None) -> None:
    """Bernoulli draws onnxruntime's RandomUniformLike stream u and gives u < p, 1 with
    probability p as the spec's text says; onnxruntime runs ONNX's function body, Greater(u, p):
    1 with probability 1 - p. So tensorloop's values are onnxruntime's flipped, where u != p."""
    p = np.random.default_rng(3).random((6, 41)).astype(p_type)
    extra = {} if out is None else {"dtype": out}
    model = _one("Bernoulli", {"p": p}, seed=9.0, **extra)
    uniform = _one("RandomUniformLike", {"p": p}, seed=9.0)
    u = _ort(uniform, {"p": p})[0][0]
    got, ort_values = _tl(model, {"p": p})[0], _ort(model, {"p": p})[0][0]
    assert got.dtype == ort_values.dtype
    np.testing.assert_array_equal(got, (u < p).astype(got.dtype))
    np.testing.assert_array_equal(ort_values, (u > p).astype(got.dtype))


def test_onnxruntimes_bernoulli_gives_one_with_probability_one_minus_p() -> None:
    p = np.full(20_000, 0.9, np.float32)
    model = _one("Bernoulli", {"p": p}, seed=1.0)
    assert abs(_ort(model, {"p": p})[0][0].mean() - 0.1) < 0.01
    assert abs(_tl(model, {"p": p})[0].mean() - 0.9) < 0.01


@pytest.mark.parametrize(("dtype", "narrow"), [(TensorProto.FLOAT16, np.float16)])
def test_float16_is_onnxruntimes_float_draw_rounded(dtype: int, narrow: Any) -> None:
    """onnxruntime's CPU kernels draw float and double only; tensorloop draws float16 (and
    bfloat16) as float, rounded once."""
    for op in ("RandomUniform", "RandomNormal"):
        wide = _ort(_one(op, {}, shape=[64], seed=4.0), {})[0][0]
        got = _tl(_one(op, {}, shape=[64], seed=4.0, dtype=dtype), {})[0]
        _same_bits(got, wide.astype(narrow))
    wide = _ort(_one("RandomNormal", {}, shape=[64], seed=4.0), {})[0][0]
    bf16 = _tl(_one("RandomNormal", {}, shape=[64], seed=4.0, dtype=TensorProto.BFLOAT16), {})[0]
    _same_bits(bf16, wide.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize(
    ("dtype", "opset"), [(TensorProto.FLOAT16, OPSET), (FLOAT, 22)], ids=["f16", "opset22"]
)
def test_onnxruntime_has_no_kernel_for_float16_or_opset_22(dtype: int, opset: int) -> None:
    """What docs/onnx.md says onnxruntime 1.32 lacks (tensorloop draws both); when a newer one
    has them, compare them bit for bit here."""
    model = _one("RandomNormal", {}, shape=[3], seed=1.0, dtype=dtype)
    model.opset_import[0].version = opset
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        _ort(model, {})
    assert _tl(model, {})[0].shape == (3,)


# -- runs, loops, names -------------------------------------------------------------------------


def _loop_model() -> onnx.ModelProto:
    """A Loop whose body draws a RandomNormal [5] and a RandomUniformLike of the carried value
    each trip, the normals stacked, the uniforms summed into the carried value."""
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [
            helper.make_node("RandomNormal", [], ["r"], shape=[5], seed=11.0, mean=1.0),
            helper.make_node("RandomUniformLike", ["c_in"], ["u"], seed=3.0),
            helper.make_node("Add", ["c_in", "u"], ["c_out"]),
            helper.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []), vi("c_in", FLOAT, [5])],
        [vi("cond_out", TensorProto.BOOL, []), vi("c_out", FLOAT, [5]), vi("r", FLOAT, [5])],
    )
    loop = helper.make_node("Loop", ["n", "", "c0"], ["c", "rs"], body=body)
    feeds = {"n": np.array(4, np.int64), "c0": np.zeros(5, np.float32)}
    return _model([loop], feeds, ["c", "rs"])


LOOP_FEEDS = {"n": np.array(4, np.int64), "c0": np.zeros(5, np.float32)}


@pytest.mark.handoff(reason="jax places the loop around the random ops on compiled")
@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
def test_a_loop_draws_what_onnxruntimes_first_run_draws(backend: str) -> None:
    """onnxruntime's Loop keeps its body's kernels, and their engines, from trip to trip, as
    tensorloop keeps a run's streams; it keeps them from run to run too, where tensorloop starts
    every run afresh: tensorloop's every run is onnxruntime's first."""
    model = _loop_model()
    first, second = _ort(model, LOOP_FEEDS, runs=2)
    for _ in range(2):
        got = _tl(model, LOOP_FEEDS, backend)
        for g, w in zip(got, first, strict=True):
            _same_bits(g, w)
    assert not np.array_equal(second[1], first[1])  # onnxruntime's engines went on


def test_onnxruntimes_second_run_continues_where_its_first_stopped() -> None:
    """What tensorloop does not do (by design): a fresh session's second run draws the values
    after the first run's, as one draw of twice the shape shows."""
    once = _one("RandomUniform", {}, shape=[6], seed=2.0)
    twice = _one("RandomUniform", {}, shape=[12], seed=2.0)
    first, second = _ort(once, {}, runs=2)
    both = _ort(twice, {})[0][0]
    np.testing.assert_array_equal(np.concatenate([first[0], second[0]]), both)
    np.testing.assert_array_equal(_tl(once, {})[0], first[0])
    np.testing.assert_array_equal(_tl(once, {})[0], first[0])


def test_unnamed_unseeded_nodes_draw_their_own_reproducible_streams() -> None:
    """The reader names an unnamed random node after its first output, and an unseeded op
    draws the stream of its name's CRC-32: two such nodes differ, and every load and run gives
    the same values."""
    nodes = [helper.make_node("RandomNormal", [], [y], shape=[8]) for y in ("a", "b")]
    model = _model(nodes, {}, ["a", "b"])
    loaded = load_onnx(model)
    assert [n.name for n in loaded.graph.nodes if n.op == "RandomNormal"] == ["a", "b"]
    a, b = _tl(model, {})
    assert not np.array_equal(a, b)
    again = _tl(model, {}, "reference")
    np.testing.assert_array_equal(again[0], a)
    np.testing.assert_array_equal(again[1], b)


def _all_ops_model() -> tuple[onnx.ModelProto, dict[str, Array]]:
    x = np.random.default_rng(0).random((3, 6)).astype(np.float32)
    nodes = [
        helper.make_node("RandomUniform", [], ["a"], shape=[3, 4], dtype=DOUBLE, high=2.0),
        helper.make_node("RandomNormal", [], ["b"], shape=[5], seed=4.0, scale=0.5, name="rn"),
        helper.make_node("RandomUniformLike", ["x"], ["c"], seed=1.0),
        helper.make_node("RandomNormalLike", ["x"], ["d"], seed=8.0, dtype=DOUBLE),
        helper.make_node("Bernoulli", ["x"], ["e"], seed=2.0, dtype=TensorProto.INT32),
        helper.make_node("Multinomial", ["x"], ["f"], seed=3.0, sample_size=7),
    ]
    return _model(nodes, {"x": x}, list("abcdef")), {"x": x}


def test_a_written_model_draws_the_same_values_in_tensorloop_and_onnxruntime() -> None:
    model, feeds = _all_ops_model()
    want = _tl(model, feeds)
    for opset in (OPSET, 26):
        back = to_onnx(load_onnx(model), opset=opset)
        onnx.checker.check_model(back, full_check=True)
        for g, w in zip(_tl(back, feeds), want, strict=True):
            _same_bits(g, w)
    back = to_onnx(load_onnx(model), opset=OPSET)
    ort_values = _ort(back, feeds)[0]
    for name, g, w in zip("abcdef", ort_values, want, strict=True):
        if name == "e":  # Bernoulli: onnxruntime's is flipped (see above)
            continue
        if name == "a":  # unseeded: onnxruntime seeds from the clock
            assert g.shape == w.shape and g.dtype == w.dtype
            continue
        _same_bits(w, g)


def test_the_written_nodes_keep_their_attributes_and_names() -> None:
    model, _ = _all_ops_model()
    back = to_onnx(load_onnx(model), opset=OPSET)
    written = {n.output[0]: n for n in back.graph.node}
    assert written["b"].name == "rn" and written["a"].name == "a"
    attrs = {k: helper.get_attribute_value(a) for a in written["f"].attribute for k in [a.name]}
    assert attrs == {"seed": 3.0, "sample_size": 7}  # dtype int32, the default, left out
    assert not any(a.name == "seed" for a in written["a"].attribute)


# -- the node suite's Bernoulli cases: their laws ------------------------------------------------


@pytest.mark.parametrize("case", node_test_cases("bernoulli"), ids=lambda c: str(c.name))
def test_the_node_suites_bernoulli_cases_keep_the_laws(case: Any) -> None:
    """Their expected data come from NumPy's generator (the spec leaves the generator open), so
    they cannot match (onnx_node_expected_failures.txt); the output has their shape and type,
    holds only 0 and 1, and a seeded case gives the same values every run."""
    rep = TensorloopBackend.prepare(case.model)
    for inputs, expected in case.data_sets:
        got = [np.asarray(y) for y in rep.run(list(inputs))]
        assert len(got) == len(expected) == 1
        assert got[0].shape == expected[0].shape and got[0].dtype == expected[0].dtype
        assert set(np.unique(got[0]).tolist()) <= {0, 1}
        again = [np.asarray(y) for y in rep.run(list(inputs))]
        np.testing.assert_array_equal(again[0], got[0])


def test_the_node_suite_has_its_six_bernoulli_cases() -> None:
    assert len(node_test_cases("bernoulli")) == 6


def test_a_model_of_the_tensorloop_api_holds_the_ops_too() -> None:
    tl.reset()
    x = tl.placeholder("float32", [2, 3], name="x")
    from tensorloop.builder.tracing import emit

    y = emit("RandomNormalLike", [x], {"seed": 3.0}, name="noise")
    model = tl.Model({"y": y})
    back = to_onnx(model, opset=OPSET)
    xv = np.zeros((2, 3), np.float32)
    _same_bits(np.asarray(model.run({"x": xv})["y"]), _ort(back, {"x": xv})[0][0])
