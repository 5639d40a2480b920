"""ONNX's random ops in the IR (ops/random_std.py): libstdc++'s engine and distributions checked
against the C++ standard's own fact and against their laws, the type rules and errors, and how
runs draw: every run starts each op's stream at its seed, a loop's trips continue it, every
backend and thread alike. tests/formats/onnx/test_onnx_random.py compares with onnxruntime."""

from __future__ import annotations

import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from ops_harness import dyn, infer, run1
from tensorloop.builder.tracing import emit
from tensorloop.errors import ExecutionError, GraphError, ResourceLimitError, ShapeInferenceError
from tensorloop.ir.graph import Graph
from tensorloop.reference.kernels.random_std import (
    MinStd,
    c_log,
    canonical,
    engine_seed,
    normal,
    uniform,
)
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import TensorType

Array = np.ndarray[Any, Any]
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
DRAWN = {"f16": DType.float16, "bf16": DType.bfloat16, "f32": DType.float32, "f64": DType.float64}


def _bits(x: Array) -> Array:
    x = np.asarray(x)
    return (
        x.view(f"u{x.dtype.itemsize}")
        if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16
        else x
    )


# -- the engine and the distributions ------------------------------------------------------------


def test_the_engine_is_minstd_rand0_by_the_standards_check() -> None:
    """[rand.predef]: the 10000th invocation of a default-constructed minstd_rand0 (seed 1)
    produces 1043618065."""
    assert int(MinStd(1).take(10000)[-1]) == 1043618065


def test_words_come_from_one_jump_as_from_one_step_at_a_time() -> None:
    engine, stepped = MinStd(2024), []
    x = 2024
    for _ in range(300):
        x = x * 16807 % (2**31 - 1)
        stepped.append(x)
    first = engine.peek(300)
    np.testing.assert_array_equal(first, stepped)
    np.testing.assert_array_equal(engine.take(100), stepped[:100])  # peek does not move it
    np.testing.assert_array_equal(engine.take(200), stepped[100:])
    assert engine.state == stepped[-1]


@pytest.mark.parametrize(
    ("seed", "state"),
    [(0, 1), (2**31 - 1, 1), (2**32 - 1, 1), (5, 5), (2**31, 1), (2**31 + 7, 8)],
)
def test_seeding_takes_the_seed_modulo_the_modulus_zero_becoming_one(seed: int, state: int) -> None:
    assert MinStd(seed).state == state


@pytest.mark.parametrize(
    ("seed", "engine"),
    [
        (5.7, 5), (-5.0, 2**32 - 5), (-1.5, 2**32 - 1), (0.9, 0), (5e9, 705032704),
        (2**31, 2**31), (1e20, 0), (-1e20, 0), (float("inf"), 0), (float("nan"), 0),
        (16777217.0, 16777216),  # the attribute is a float32: 2**24 + 1 is 2**24
    ],
)  # fmt: skip
def test_a_float_seed_converts_as_onnxruntimes_narrow_cast(seed: float, engine: int) -> None:
    assert engine_seed(seed) == engine


def test_canonical_values_stay_below_one() -> None:
    top = np.array([2**31 - 2, 2**31 - 2], np.int64)  # the engine's largest word
    assert canonical(top[:1], F32)[0] == np.nextafter(np.float32(1), np.float32(0))
    assert canonical(top, F64)[0] == np.nextafter(1.0, 0.0)
    assert canonical(np.array([1, 1], np.int64), F64)[0] == 0.0
    # float32: (w - 1) / 2**31; float64: the first word low, the second high
    assert canonical(np.array([2**30 + 1], np.int64), F32)[0] == 0.5
    w = np.array([3, 2], np.int64)
    assert canonical(w, F64)[0] == (2 + 1 * (2**31 - 2)) / float((2**31 - 2) ** 2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 300),
    bounds=st.tuples(st.floats(-1e3, 1e3), st.floats(0.01, 1e3)),
    wide=st.booleans(),
)
def test_uniform_values_lie_in_low_high(
    seed: int, count: int, bounds: tuple[float, float], wide: bool
) -> None:
    dt = F64 if wide else F32
    low = float(np.float32(bounds[0]))
    high = float(np.float32(low + bounds[1]))
    values = uniform(MinStd(seed), count, dt, low, high)
    assert values.dtype == dt and values.shape == (count,)
    assert np.all(values >= dt.type(low)) and np.all(values <= dt.type(high))


def test_normal_draws_pairs_y_then_x_and_drops_a_spare() -> None:
    """Marsaglia's polar method as libstdc++ writes it, one pair at a time from the engine."""
    engine = MinStd(77)
    want: list[float] = []
    while len(want) < 5:
        u1, u2 = canonical(engine.take(2), F32)
        x, y = np.float32(2) * u1 - np.float32(1), np.float32(2) * u2 - np.float32(1)
        r2 = x * x + y * y
        if r2 > 1 or r2 == 0:
            continue
        m = np.sqrt(np.float32(-2) * c_log(np.array([r2]))[0] / r2)
        want += [y * m, x * m]
    got = MinStd(77)
    np.testing.assert_array_equal(normal(got, 5, F32, 0.0, 1.0), np.array(want[:5], np.float32))
    assert got.state == engine.state  # the fifth value's pair was drawn whole


def test_normal_values_have_the_mean_and_scale() -> None:
    for dt in (F32, F64):
        values = normal(MinStd(3), 200_000, dt, 2.5, 0.5).astype(np.float64)
        assert abs(values.mean() - 2.5) < 0.01 and abs(values.std() - 0.5) < 0.01


def test_the_c_log_is_within_an_ulp_of_numpys() -> None:
    x = np.random.default_rng(0).random(5000).astype(np.float32) + np.float32(1e-3)
    got, want = c_log(x), np.log(x.astype(np.float64))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-7)
    np.testing.assert_array_equal(c_log(x.astype(np.float64)), np.log(x.astype(np.float64)))


# -- type rules and errors ----------------------------------------------------------------------


def test_the_ops_type_their_outputs() -> None:
    assert infer("RandomUniform", [], {"shape": (2, 3)}) == ["f32[2,3]"]
    assert infer("RandomNormal", [], {"shape": [], "dtype": DType.float64}) == ["f64[]"]
    assert infer("RandomUniformLike", [TensorType(DType.float16, ["n", 4])]) == ["f16[n,4]"]
    x = TensorType(DType.int32, [5])
    assert infer("RandomNormalLike", [x], {"dtype": DType.bfloat16}) == ["bf16[5]"]
    p = TensorType(DType.float64, [3, 2])
    assert infer("Bernoulli", [p]) == ["f64[3,2]"]
    assert infer("Bernoulli", [p], {"dtype": DType.bool}) == ["bool[3,2]"]
    logits = TensorType(DType.float32, ["b", 6])
    assert infer("Multinomial", [logits], {"sample_size": 9}) == ["i32[b,9]"]
    assert infer("Multinomial", [logits], {"dtype": DType.int64}) == ["i64[b,1]"]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "match"),
    [
        ("RandomUniform", [], {"shape": (2,), "dtype": DType.int32}, "expected float16"),
        ("RandomNormal", [], {"shape": (2, -1)}, "negative size"),
        ("RandomUniformLike", [TensorType(DType.int64, [2])], {}, "must be a float type"),
        ("RandomNormalLike", [TensorType(DType.float32, [2])], {"dtype": DType.uint8}, "float16"),
        ("Bernoulli", [TensorType(DType.int32, [2])], {}, "expected one of"),
        ("Bernoulli", [TensorType(DType.float32, [2])], {"dtype": DType.string}, "cannot make"),
        ("Multinomial", [TensorType(DType.float32, [4])], {}, "2-D"),
        ("Multinomial", [TensorType(DType.float32, [1, 4])], {"dtype": DType.float32}, "int32"),
        ("Multinomial", [TensorType(DType.float32, [1, 4])], {"sample_size": 0}, "at least 1"),
        ("Multinomial", [TensorType(DType.float32, [3, 0])], {}, "no class"),
    ],
)
def test_the_type_rules_refuse_what_the_ops_cannot_draw(
    op: str, inputs: list[Any], attrs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ShapeInferenceError, match=match) as info:
        infer(op, inputs, attrs)
    assert op in str(info.value)


def test_the_shape_attribute_is_required() -> None:
    with pytest.raises(GraphError, match="missing required attribute 'shape'"):
        infer("RandomUniform", [], {})


def test_the_kernels_check_what_the_type_rules_could_not_see() -> None:
    with pytest.raises(ExecutionError, match=r"Multinomial.*no class to draw"):
        run1("Multinomial", [dyn(np.zeros((2, 0), np.float32))], {"seed": 1.0})
    with pytest.raises(ExecutionError, match=r"Multinomial.*\[batch, classes\]"):
        run1("Multinomial", [(TensorType(DType.float32, None), np.zeros(3, np.float32))])


def test_empty_outputs_draw_nothing() -> None:
    assert run1("RandomNormal", [], {"shape": (0, 3), "seed": 1.0}).shape == (0, 3)
    assert run1("Bernoulli", [np.zeros((0,), np.float32)], {"seed": 1.0}).shape == (0,)
    out = run1("Multinomial", [np.zeros((0, 4), np.float32)], {"sample_size": 3, "seed": 1.0})
    assert out.shape == (0, 3) and out.dtype == np.int32


# -- the laws of each distribution ---------------------------------------------------------------


def test_bernoulli_gives_one_with_probability_p() -> None:
    for dt in (np.float16, np.float32, np.float64):
        p = np.repeat(np.array([0.0, 0.1, 0.9, 1.0], dt), 20_000)
        out = run1("Bernoulli", [p], {"seed": 4.0})
        assert out.dtype == dt and set(np.unique(out)) <= {0, 1}
        means = out.reshape(4, -1).astype(np.float64).mean(axis=1)
        np.testing.assert_allclose(means, [0.0, 0.1, 0.9, 1.0], atol=0.01)


def test_bernoulli_is_the_uniform_stream_below_p() -> None:
    p = np.random.default_rng(1).random((7, 9))
    u = run1("RandomUniformLike", [p], {"seed": 12.0})
    out = run1("Bernoulli", [p], {"seed": 12.0, "dtype": DType.int8})
    np.testing.assert_array_equal(out, (u < p).astype(np.int8))


def test_multinomial_draws_softmax_frequencies_and_skips_non_finite_logits() -> None:
    logits = np.log(np.array([[0.2, 0.5, 0.3, 1e-30], [1.0, 1.0, 1.0, 1.0]], np.float32))
    logits[0, 3] = -np.inf
    logits[1, 1] = np.nan
    logits[1, 3] = np.inf
    out = run1("Multinomial", [logits], {"sample_size": 60_000, "seed": 8.0})
    freq0 = np.bincount(out[0], minlength=4) / 60_000
    np.testing.assert_allclose(freq0, [0.2, 0.5, 0.3, 0.0], atol=0.01)
    assert set(np.unique(out[1])) == {0, 2}  # NaN and +inf are no class, as in onnxruntime


def test_a_row_of_no_finite_logit_gives_the_class_count() -> None:
    logits = np.full((1, 3), -np.inf, np.float32)
    out = run1("Multinomial", [logits], {"sample_size": 4, "seed": 1.0, "dtype": DType.int64})
    np.testing.assert_array_equal(out, [[3, 3, 3, 3]])


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_narrow_floats_are_the_float32_draw_rounded_once(dt: str) -> None:
    for op, attrs in (("RandomUniform", {"low": -2.0, "high": 3.0}), ("RandomNormal", {})):
        wide = run1(op, [], {"shape": (40,), "seed": 6.0, **attrs})
        narrow = run1(op, [], {"shape": (40,), "seed": 6.0, "dtype": DRAWN[dt], **attrs})
        np.testing.assert_array_equal(_bits(narrow), _bits(wide.astype(DRAWN[dt].numpy)))


# -- how runs draw ------------------------------------------------------------------------------


def _graph(op: str, attrs: dict[str, Any], name: str = "r") -> tl.Model:
    g = Graph("m")
    x = g.add_input("x", TensorType(DType.float32, [4, 5]))
    inputs = [x] if op.endswith("Like") or op in ("Bernoulli", "Multinomial") else []
    g.set_outputs([g.add_node(op, inputs, attrs, name=name).output])
    return tl.Model(g)


def _trips(op: str, count: int, trips: int = 4, **attrs: Any) -> tl.Model:
    """A loop of ``trips`` drawing [count] values of ``op`` a trip, stacked."""
    tl.reset()

    def step(carry: Any, _: Any) -> tuple[Any, Any]:
        return carry, emit(op, [], {"shape": (count,), "seed": 21.0, **attrs})

    _, draws = tl.scan(step, tl.constant(np.float32(0)), length=trips)
    return tl.Model({"draws": draws})


PROBS = np.random.default_rng(5).random((4, 5)).astype(np.float32)


@pytest.mark.parametrize("op", ["RandomUniform", "RandomNormal"])
def test_a_loops_trips_continue_the_stream(op: str) -> None:
    """Trip k draws what follows trip k - 1: [trips, count] values are one draw of trips * count
    (the normal's pairs align when the count is even)."""
    draws = _trips(op, 6).run()["draws"]
    once = run1(op, [], {"shape": (24,), "seed": 21.0})
    np.testing.assert_array_equal(draws.reshape(-1), once)


def test_each_trip_starts_a_fresh_normal_distribution() -> None:
    """An odd count leaves a pair's second value, which the next trip does not take (onnxruntime
    makes a new distribution at each execution): trip 1 starts where an even draw of 6 ends."""
    draws = _trips("RandomNormal", 5, trips=2).run()["draws"]
    once = run1("RandomNormal", [], {"shape": (12,), "seed": 21.0})
    np.testing.assert_array_equal(draws[0], once[:5])
    np.testing.assert_array_equal(draws[1], once[6:11])


@pytest.mark.handoff(reason="jax places the random ops, and the loops around them, on compiled")
@pytest.mark.parametrize("op", ["RandomUniform", "RandomNormal"])
def test_every_backend_draws_the_same_loop(op: str) -> None:
    model = _trips(op, 7, dtype=DType.float64)
    first = model.run(backend="reference")["draws"]
    for backend in ("compiled", "jax", "reference"):
        np.testing.assert_array_equal(model.run(backend=backend)["draws"], first, backend)


OPS = {
    "RandomUniform": {"shape": (3, 4), "low": -1.0, "high": 4.0},
    "RandomNormal": {"shape": (5,), "mean": 1.0, "scale": 3.0},
    "RandomUniformLike": {},
    "RandomNormalLike": {},
    "Bernoulli": {},
    "Multinomial": {"sample_size": 11},
}


@pytest.mark.handoff(reason="jax places the random ops on compiled")
@settings(max_examples=30, deadline=None)
@given(
    op=st.sampled_from(sorted(OPS)),
    seed=st.one_of(st.none(), st.floats(-(2.0**40), 2.0**40, width=32)),
    dt=st.sampled_from(sorted(DRAWN)),
)
def test_a_seeded_op_gives_the_same_values_in_every_run_on_every_backend(
    op: str, seed: float | None, dt: str
) -> None:
    attrs = {**OPS[op], "seed": seed}
    if op not in ("Bernoulli", "Multinomial"):
        attrs["dtype"] = DRAWN[dt]
    model = _graph(op, attrs)
    feeds = {"x": PROBS}
    first = next(iter(model.run(feeds, backend="reference").values()))
    for backend in ("compiled", "jax", "reference", "compiled"):
        got = next(iter(model.run(feeds, backend=backend).values()))
        np.testing.assert_array_equal(_bits(got), _bits(first), backend)


def test_an_unseeded_op_draws_the_stream_of_its_names_crc() -> None:
    feeds = {"x": PROBS}
    got = next(iter(_graph("RandomUniform", {"shape": (9,)}, "noise").run(feeds).values()))
    want = uniform(MinStd(zlib.crc32(b"noise")), 9, F32, 0.0, 1.0)
    np.testing.assert_array_equal(got, want)
    other = next(iter(_graph("RandomUniform", {"shape": (9,)}, "noise2").run(feeds).values()))
    assert not np.array_equal(got, other)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_runs_from_many_threads_draw_what_runs_one_by_one_draw(backend: str) -> None:
    model = _trips("RandomNormal", 101, trips=6)
    want = model.run(backend=backend)["draws"]
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: model.run(backend=backend)["draws"], range(24)))
    for got in runs:
        np.testing.assert_array_equal(got, want)


def test_a_large_draw_crosses_chunks_as_one() -> None:
    """Draws of more values than a chunk (65536) continue the stream across the chunks."""
    big = run1("RandomNormal", [], {"shape": (70_001,), "seed": 2.0, "dtype": DType.float64})
    engine = MinStd(engine_seed(2.0))
    head = normal(engine, 70_000, F64, 0.0, 1.0)
    np.testing.assert_array_equal(big[:70_000], head)
    u = run1("RandomUniform", [], {"shape": (3, 40_000), "seed": 2.0})
    np.testing.assert_array_equal(u.reshape(-1), uniform(MinStd(2), 120_000, F32, 0.0, 1.0))


def test_a_huge_shape_attribute_is_refused_at_load() -> None:
    g = Graph("m")
    g.set_outputs(
        [g.add_node("RandomUniform", [], {"shape": (1 << 20, 1 << 10)}, name="big").output]
    )
    with pytest.raises(ResourceLimitError, match="RandomUniform 'big'"):
        tl.Model(g, limits=tl.Limits(max_tensor_bytes=1 << 20))


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_a_huge_multinomial_is_refused_before_allocating(backend: str) -> None:
    """batch x sample_size, the batch known at run time only, is checked before the kernel."""
    g = Graph("m")
    x = g.add_input("x", TensorType(DType.float32, ["b", 3]))
    node = g.add_node("Multinomial", [x], {"sample_size": 1 << 16, "seed": 1.0}, name="big")
    g.set_outputs([node.output])
    model = tl.Model(g, backend=backend, limits=tl.Limits(max_tensor_bytes=1 << 20))
    assert model.run({"x": np.zeros((2, 3), np.float32)})[model.output_names[0]].shape == (
        2,
        1 << 16,
    )
    with pytest.raises(ResourceLimitError, match="Multinomial 'big' output #0"):
        model.run({"x": np.zeros((64, 3), np.float32)})


def test_two_unnamed_ops_of_one_seed_draw_the_same_values() -> None:
    tl.reset()
    a = emit("RandomUniform", [], {"shape": (4,), "seed": 3.0})
    b = emit("RandomUniform", [], {"shape": (4,), "seed": 3.0})
    out = tl.Model({"a": a, "b": b}).run()
    np.testing.assert_array_equal(out["a"], out["b"])


def test_the_like_forms_take_only_the_inputs_shape() -> None:
    for x in (np.zeros((2, 3), np.float32), np.full((2, 3), 7.0, np.float32)):
        out = run1("RandomUniformLike", [x], {"seed": 1.0})
        assert out.shape == (2, 3)
        np.testing.assert_array_equal(out.reshape(-1), uniform(MinStd(1), 6, F32, 0.0, 1.0))
    strings = np.array(["a", "b"], object)
    out = run1("RandomNormalLike", [strings], {"seed": 1.0, "dtype": DType.float64})
    assert out.shape == (2,) and out.dtype == np.float64
