"""Hostile and broken ONNX models: each refused with a FormatError naming the file, the node or
value and what was expected, never a Python-internal error or garbage (issue 14).

Most files are the hostile corpus's (tests/data/hostile, scripts/make_hostile_corpus.py); these
tests pin the messages and the cases that need a temporary folder (external data, symlinks).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import onnx.inliner
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.errors import ExecutionError, FormatError, ResourceLimitError
from tensorloop.limits import node_count

CORPUS = Path(__file__).parents[2] / "data" / "hostile"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("onnx_empty.onnx", "the file is empty"),
        ("onnx_truncated.onnx", "not a readable ONNX model"),
        ("onnx_ir_version_future.onnx", "ir_version 99 is not one ONNX defines"),
        ("onnx_ir_version_zero.onnx", "ir_version 0"),
        ("onnx_opset_future.onnx", "default domain is version 99"),
        ("onnx_opset_zero.onnx", "default domain is version 0"),
        ("onnx_duplicate_graph_output.onnx", "lists output(s) 'y' more than once"),
        ("onnx_duplicate_graph_input.onnx", "lists input(s) 'x' more than once"),
        ("onnx_duplicate_node_output.onnx", "output 'y' is already defined"),
        ("onnx_output_shadows_input.onnx", "output 'x' is already defined"),
        ("onnx_negative_input_dim.onnx", "dim #1 is -5"),
        ("onnx_negative_output_dim.onnx", "dim #0 is -3"),
        ("onnx_negative_initializer_dim.onnx", "negative"),
        ("onnx_scan_unequal_lengths.onnx", "#0 has 4, #1 has 5"),
        ("onnx_external_absolute.onnx", "must be a relative path inside it"),
        ("onnx_external_dotdot.onnx", "must be a relative path inside it"),
        ("onnx_external_symlink.onnx", "leaves the model folder"),
        ("onnx_external_offset_beyond.onnx", "reads bytes"),
        ("onnx_external_length_mismatch.onnx", "needs 24 bytes"),
        ("onnx_nested_if_deep.onnx", "not a readable ONNX model"),
    ],
)
def test_refused_with_a_message_naming_the_place(name: str, expected: str) -> None:
    with pytest.raises(FormatError) as info:
        tl.load(CORPUS / name)
    assert name in str(info.value)
    assert expected in str(info.value)


def _external_model(folder: Path, location: str) -> Path:
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.append(onnx.StringStringEntryProto(key="location", value=location))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_external_data_through_a_symlink_inside_the_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    os.symlink("sub/w.bin", tmp_path / "w.link")
    model = tl.load(_external_model(tmp_path, "w.link"))
    (y,) = model.run([np.zeros((2, 3), np.float32)]).values()
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize("location", ["../w.bin", "sub/../../w.bin", "..\\w.bin", "/tmp/w.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "w.bin").write_bytes(bytes(24))
    with pytest.raises(FormatError, match="leaves the model folder: it must be a relative path"):
        tl.load(_external_model(inner, location))


def test_symlink_leaving_the_folder_is_refused(tmp_path: Path) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "w.bin").write_bytes(bytes(24))
    os.symlink(tmp_path / "w.bin", inner / "w.link")
    with pytest.raises(FormatError, match=r"leaves the model folder .*: it resolves to"):
        tl.load(_external_model(inner, "w.link"))


def test_dynamic_dim_minus_one_is_accepted() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = tl.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert str(model.inputs[0].type) == "f32[?,3]"


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_scan_inputs_of_unequal_length_fail_at_run(backend: str) -> None:
    model = tl.load(CORPUS / "onnx_scan_unequal_lengths_at_run.onnx")
    s0 = np.zeros(3, np.float32)
    a, b = np.ones((4, 3), np.float32), np.ones((5, 3), np.float32)
    with pytest.raises(ExecutionError, match=r"scan inputs #0 'A', #1 'B' differ in length"):
        model.run([s0, a, b], backend=backend)
    s, ys = model.run([s0, a, a], backend=backend).values()
    np.testing.assert_array_equal(s, np.full(3, 8.0, np.float32))
    assert ys.shape == (4, 3)


def test_unexpected_internal_errors_become_format_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence in tl.load: a loader bug surfaces as a FormatError."""
    from tensorloop.formats.onnx import reader

    def broken(*args: object) -> None:
        raise KeyError("internal")

    monkeypatch.setattr(reader, "_check_supported", broken)
    with pytest.raises(FormatError, match=r"onnx_ok_add.onnx: cannot read this model \(KeyError"):
        tl.load(CORPUS / "onnx_ok_add.onnx")


# -- model-local functions and Limits.max_nodes (issue 26) -------------------------------------

LOCAL_OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def _doubling(levels: int) -> onnx.ModelProto:
    """Functions f0 .. f{levels-1}: f0 is Neg then Sin, each next one calls the one before twice
    in a row; the graph calls the last once, so inlined it holds 2**levels nodes."""
    f0 = helper.make_function(
        "local",
        "f0",
        ["x"],
        ["y"],
        [helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Sin", ["t"], ["y"])],
        LOCAL_OPSETS,
    )
    functions = [f0]
    for k in range(1, levels):
        body = [
            helper.make_node(f"f{k - 1}", ["x"], ["t"], domain="local"),
            helper.make_node(f"f{k - 1}", ["t"], ["y"], domain="local"),
        ]
        functions.append(helper.make_function("local", f"f{k}", ["x"], ["y"], body, LOCAL_OPSETS))
    call = helper.make_node(f"f{levels - 1}", ["x"], ["y"], domain="local")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([call], "doubling", [x], [y])
    return helper.make_model(graph, opset_imports=LOCAL_OPSETS, functions=functions)


def _load_in_thread(model: onnx.ModelProto, **options: object) -> BaseException | tl.Model:
    """``tl.load(model)`` in a thread given 10 s: what it returned or raised, so that a
    regression fails the test (the thread is left behind) instead of hanging the suite."""
    box: list[BaseException | tl.Model] = []

    def load() -> None:
        try:
            box.append(tl.load(model, **options))
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "tl.load still running after 10 s"
    return box[0]


def test_functions_doubling_64_deep_are_refused_before_inlining() -> None:
    """2**64 nodes once inlined (onnx's inliner and onnxruntime hang): refused at once, from
    the size predicted before anything is inlined."""
    model = _doubling(64)
    started = time.perf_counter()
    error = _load_in_thread(model)
    assert time.perf_counter() - started < 1.0
    assert isinstance(error, ResourceLimitError), error
    message = str(error)
    assert "<ONNX model 'doubling'>" in message
    assert "would make 18446744073709551616 nodes" in message
    assert "more than the limit of 1000000 (Limits.max_nodes)" in message
    assert (
        "function 'f63' (domain 'local') expands to 18446744073709551616 nodes through 'f62' x2, "
        "'f62' to 9223372036854775808 through 'f61' x2" in message
    )
    assert "a chain of 64 function(s); graph 'doubling' calls 'f63' x1" in message


def test_functions_nested_a_few_deep_load_and_agree_with_onnxruntime() -> None:
    model = _doubling(4)
    loaded = _load_in_thread(model)
    assert isinstance(loaded, tl.Model), loaded
    assert node_count(loaded.graph) == 16
    x = np.array([0.5, -1.0, 2.0], np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(loaded.run({"x": x})["y"], expected, rtol=1e-6, atol=1e-6)


def test_max_nodes_bounds_inlined_functions_and_plain_graphs() -> None:
    with pytest.raises(ResourceLimitError, match=r"would make 16 nodes, more than the limit of 15"):
        tl.load(_doubling(4), limits=tl.Limits(max_nodes=15))
    assert node_count(tl.load(_doubling(4), limits=tl.Limits(max_nodes=16)).graph) == 16
    with pytest.raises(ResourceLimitError) as info:
        tl.load(CORPUS / "onnx_ok_add.onnx", limits=tl.Limits(max_nodes=0))
    assert "onnx_ok_add.onnx" in str(info.value)
    assert "holds 1 nodes, bodies included, more than the limit of 0 (Limits.max_nodes)" in str(
        info.value
    )
    assert tl.load(CORPUS / "onnx_ok_add.onnx", limits=tl.Limits(max_nodes=1))


@pytest.mark.parametrize("mutual", [False, True], ids=["self", "mutual"])
def test_recursive_functions_are_refused(mutual: bool) -> None:
    other = "g" if mutual else "f"
    call = helper.make_node(other, ["x"], ["y"], domain="local")
    functions = [helper.make_function("local", "f", ["x"], ["y"], [call], LOCAL_OPSETS)]
    if mutual:
        back = helper.make_node("f", ["x"], ["y"], domain="local")
        functions.append(helper.make_function("local", "g", ["x"], ["y"], [back], LOCAL_OPSETS))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("f", ["x"], ["y"], domain="local")], "r", [x], [y])
    model = helper.make_model(graph, opset_imports=LOCAL_OPSETS, functions=functions)
    cycle = "'f' -> 'g' -> 'f'" if mutual else "'f' -> 'f'"
    with pytest.raises(FormatError, match=f"calls itself \\({cycle}\\); .* must not be recursive"):
        tl.load(model)


# Random call trees for the law: the predicted size is the size onnx's inliner makes. A body is
# a few items: a plain op, a call of an earlier function (passing its graph attribute a body of
# its own, this function's attribute by reference, or nothing), an If with bodies of its own, or
# an If whose branches are this function's graph attribute.
def _ref(name: str) -> onnx.AttributeProto:
    return onnx.AttributeProto(name=name, ref_attr_name="g", type=onnx.AttributeProto.GRAPH)


@st.composite
def _body(
    draw: st.DrawFn, callable_: list[tuple[str, str, bool]], refs: bool, depth: int
) -> list[onnx.NodeProto]:
    nodes = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["op"] + ["call"] * bool(callable_) + ["if"] * (depth < 2) + ["ref"] * refs
        kind = draw(st.sampled_from(kinds))
        if kind == "op":
            nodes.append(helper.make_node("Relu", ["x"], ["x"]))
        elif kind == "call":
            domain, name, takes_graph = draw(st.sampled_from(callable_))
            if domain in ("", "ai.onnx"):
                domain = draw(st.sampled_from(["", "ai.onnx"]))
            node = helper.make_node(name, ["x"], ["x"], domain=domain)
            passed = draw(st.sampled_from(["body", "ref", "none"] if refs else ["body", "none"]))
            if takes_graph and passed == "body" and depth < 2:
                sub = draw(_body(callable_, refs, depth + 1))
                node.attribute.append(
                    helper.make_attribute("g", helper.make_graph(sub, "b", [], []))
                )
            elif takes_graph and passed == "ref":
                node.attribute.append(_ref("g"))
            nodes.append(node)
        elif kind == "if":
            branches = [
                helper.make_graph(draw(_body(callable_, refs, depth + 1)), "b", [], [])
                for _ in range(2)
            ]
            nodes.append(
                helper.make_node(
                    "If", ["c"], ["x"], then_branch=branches[0], else_branch=branches[1]
                )
            )
        else:
            node = helper.make_node("If", ["c"], ["x"])
            node.attribute.extend([_ref("then_branch"), _ref("else_branch")])
            nodes.append(node)
    return nodes


@st.composite
def _call_trees(draw: st.DrawFn) -> onnx.ModelProto:
    functions, callable_ = [], []
    for k in range(draw(st.integers(0, 5))):
        domain = draw(st.sampled_from(["local", "", "ai.onnx"]))
        takes_graph = draw(st.booleans())
        version = draw(st.sampled_from([17, 17, 17, 16]))  # 16: onnx's inliner leaves it a call
        fn = helper.make_function(
            domain,
            f"f{k}",
            ["x"],
            ["x"],
            draw(_body(callable_, takes_graph, 0)),
            [helper.make_opsetid("", version), helper.make_opsetid("local", 1)],
            attributes=["g"] if takes_graph else [],
        )
        functions.append(fn)
        callable_.append((domain, f"f{k}", takes_graph))
    graph = helper.make_graph(draw(_body(callable_, False, 0)), "tree", [], [])
    return helper.make_model(graph, opset_imports=LOCAL_OPSETS, functions=functions)


def _proto_nodes(graph: onnx.GraphProto) -> int:
    count, stack = 0, [graph]
    while stack:
        g = stack.pop()
        count += len(g.node)
        stack += [
            s for n in g.node for a in n.attribute for s in [*a.graphs, *[a.g] * a.HasField("g")]
        ]
    return count


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(_call_trees())
def test_predicted_size_is_the_inlined_size(model: onnx.ModelProto) -> None:
    from tensorloop.formats.onnx import reader

    functions, sizes = reader.function_sizes(model, "tree")
    predicted = reader.expand(model.graph.node, functions, sizes).nodes
    actual = _proto_nodes(onnx.inliner.inline_local_functions(model).graph)
    assert predicted == actual
    reader._check_inlined_size(model, "tree", tl.Limits(max_nodes=actual))
    with pytest.raises(ResourceLimitError, match=f"would make {actual} nodes|holds {actual} nodes"):
        reader._check_inlined_size(model, "tree", tl.Limits(max_nodes=actual - 1))
