"""Valid seed models with loops, as the bytes of their files, for the fuzz tests and harnesses.

A seed is a ``Seed(main, files)``: ``files`` maps each file name of the model (the ``.onnx``
and its external data, the ``.xml`` and its ``.bin``, the ``.tl``) to its bytes, and ``main``
is the one ``tl.load`` opens. Each builder makes its model from scratch, so the fuzzers need no
checked-in binaries; ``fuzz/make_corpus.py`` writes them out as the atheris seed corpora.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Seed:
    name: str
    main: str
    files: dict[str, bytes]

    def write(self, folder: Path, files: dict[str, bytes] | None = None) -> Path:
        """Write ``files`` (the seed's own by default) into ``folder``; the main file's path."""
        for name, data in (self.files if files is None else files).items():
            (folder / name).write_bytes(data)
        return folder / self.main


SEPARATOR = b"\n--tensorloop-fuzz-side-file--\n"
MAIN_FILE = {"onnx": "m.onnx", "openvino": "m.xml", "text_ir": "m.tl"}
SIDE_FILE = {"onnx": "w.bin", "openvino": "m.bin", "text_ir": None}


def bundle(fmt: str, files: dict[str, bytes]) -> bytes:
    """One byte string for a model's files (what the atheris harnesses and the regression
    files hold): the main file, then ``SEPARATOR`` and the side file if there is one."""
    main, side = files[MAIN_FILE[fmt]], SIDE_FILE[fmt]
    return main + SEPARATOR + files[side] if side and side in files else main


def unbundle(fmt: str, data: bytes) -> dict[str, bytes]:
    main, sep, side = data.partition(SEPARATOR)
    files = {MAIN_FILE[fmt]: main}
    side_name = SIDE_FILE[fmt]
    if sep and side_name:
        files[side_name] = side
    return files


# --------------------------------------------------------------------------------------------
# ONNX
# --------------------------------------------------------------------------------------------


def _onnx_loop() -> Any:
    """acc = acc * 0.5 + x + i while sum(acc) < 100, at most M times; stacks acc each trip."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    def c(name: str, v: Any, dt: Any = np.float32) -> Any:
        return h.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(
            np.asarray(v, dt), name))  # fmt: skip

    body = h.make_graph(
        [
            c("half", 0.5),
            c("limit", 100.0),
            h.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            h.make_node("Mul", ["acc", "half"], ["scaled"]),
            h.make_node("Add", ["scaled", "x"], ["shifted"]),
            h.make_node("Add", ["shifted", "fi"], ["acc_out"]),
            h.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            h.make_node("Less", ["total", "limit"], ["cond_out"]),
            h.make_node("Identity", ["acc_out"], ["seen"]),
        ],
        "body",
        [
            h.make_tensor_value_info("i", TensorProto.INT64, []),
            h.make_tensor_value_info("cond", TensorProto.BOOL, []),
            h.make_tensor_value_info("acc", TensorProto.FLOAT, [3]),
        ],
        [
            h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            h.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3]),
            h.make_tensor_value_info("seen", TensorProto.FLOAT, [3]),
        ],
    )
    graph = h.make_graph(
        [
            c("cond0", True, np.bool_),
            h.make_node("Loop", ["M", "cond0", "acc0"], ["acc_final", "stacked"], body=body),
        ],
        "onnx_loop",
        [
            h.make_tensor_value_info("M", TensorProto.INT64, []),
            h.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            h.make_tensor_value_info("acc0", TensorProto.FLOAT, [3]),
        ],
        [
            h.make_tensor_value_info("acc_final", TensorProto.FLOAT, [3]),
            h.make_tensor_value_info("stacked", TensorProto.FLOAT, [None, 3]),
        ],
    )
    return graph


def _onnx_scan() -> Any:
    """A Scan carrying s (f32[2]) over xs (axis 0) and zs (axis 1); stacks s + x * z."""
    from onnx import TensorProto
    from onnx import helper as h

    body = h.make_graph(
        [
            h.make_node("Mul", ["x", "z"], ["xz"]),
            h.make_node("Add", ["s", "xz"], ["s_out"]),
            h.make_node("Tanh", ["s_out"], ["y"]),
        ],
        "scan_body",
        [
            h.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
            h.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            h.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
        ],
        [
            h.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
            h.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
        ],
    )
    scan = h.make_node(
        "Scan",
        ["s0", "xs", "zs"],
        ["s_final", "ys"],
        body=body,
        num_scan_inputs=2,
        scan_input_axes=[0, 1],
        scan_input_directions=[0, 1],
        scan_output_axes=[0],
        scan_output_directions=[0],
    )
    return h.make_graph(
        [scan],
        "onnx_scan",
        [
            h.make_tensor_value_info("s0", TensorProto.FLOAT, [2]),
            h.make_tensor_value_info("xs", TensorProto.FLOAT, ["N", 2]),
            h.make_tensor_value_info("zs", TensorProto.FLOAT, [2, "N"]),
        ],
        [
            h.make_tensor_value_info("s_final", TensorProto.FLOAT, [2]),
            h.make_tensor_value_info("ys", TensorProto.FLOAT, ["N", 2]),
        ],
    )


def _onnx_model(graph: Any) -> Any:
    import onnx
    from onnx import helper as h

    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def _with_external_weights(graph: Any) -> Any:
    """The Loop seed with its start value an initializer (in external data ``w.bin``)."""
    import onnx

    graph = onnx.GraphProto.FromString(graph.SerializeToString())
    weights = onnx.numpy_helper.from_array(np.array([0.25, -1.0, 2.0], np.float32), "acc0")
    graph.initializer.append(weights)
    del graph.input[2]
    return graph


@functools.cache
def function_seeds() -> tuple[Seed, ...]:
    """An ONNX model whose model-local functions nest three deep, each calling the one below
    twice, one call in an If branch: a seed of the atheris corpus (``fuzz/make_corpus.py``) to
    mutate into deeper, wider or recursive call trees (``Limits.max_nodes``, issue 26), kept out
    of ``onnx_seeds`` so the test suite's examples stay as they are."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    opsets = [h.make_opsetid("", 17), h.make_opsetid("local", 1)]
    body = [h.make_node("Neg", ["x"], ["t"]), h.make_node("Sin", ["t"], ["y"])]
    functions = [h.make_function("local", "f0", ["x"], ["y"], body, opsets)]
    for k in (1, 2):
        calls = [
            h.make_node(f"f{k - 1}", ["x"], ["t"], domain="local"),
            h.make_node(f"f{k - 1}", ["t"], ["y"], domain="local"),
        ]
        functions.append(h.make_function("local", f"f{k}", ["x"], ["y"], calls, opsets))
    vi = h.make_tensor_value_info
    then = h.make_graph(
        [h.make_node("f1", ["x"], ["a"], domain="local")], "then", [], [vi("a", 1, [3])]
    )
    other = h.make_graph([h.make_node("Identity", ["x"], ["b"])], "else", [], [vi("b", 1, [3])])
    nodes = [
        h.make_node("f2", ["x"], ["y"], domain="local"),
        h.make_node("If", ["c"], ["z"], then_branch=then, else_branch=other),
    ]
    inputs = [vi("x", TensorProto.FLOAT, [3]), vi("c", TensorProto.BOOL, [])]
    outputs = [vi("y", TensorProto.FLOAT, [3]), vi("z", TensorProto.FLOAT, [3])]
    graph = h.make_graph(nodes, "functions", inputs, outputs)
    m = h.make_model(graph, opset_imports=opsets, functions=functions)
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return (Seed("onnx_functions", "m.onnx", {"m.onnx": m.SerializeToString()}),)


@functools.cache
def onnx_seeds() -> tuple[Seed, ...]:
    import onnx

    loop, scan = _onnx_model(_onnx_loop()), _onnx_model(_onnx_scan())
    external = _onnx_model(_with_external_weights(_onnx_loop()))
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save_model(
            external,
            str(Path(tmp) / "m.onnx"),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="w.bin",
            size_threshold=0,
        )
        ext = {n: (Path(tmp) / n).read_bytes() for n in ("m.onnx", "w.bin")}
    return (
        Seed("onnx_loop", "m.onnx", {"m.onnx": loop.SerializeToString()}),
        Seed("onnx_scan", "m.onnx", {"m.onnx": scan.SerializeToString()}),
        Seed("onnx_external", "m.onnx", ext),
    )


@functools.cache
def budget_seeds() -> tuple[Seed, ...]:
    """ONNX models for the run-wide budgets (issue 26): three Loops of 10 trips nested (a
    mutated trip count makes 10**9 body runs: ``Limits.max_total_iterations``), and a Loop
    whose carried value doubles by ``Concat`` beside a sequence grown by ``SequenceInsert``
    (``Limits.max_run_bytes``): seeds of the atheris corpus (``fuzz/make_corpus.py``), kept out
    of ``onnx_seeds`` so the test suite's examples stay as they are."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    vi = h.make_tensor_value_info

    def trips(name: str, n: int) -> Any:
        return h.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.int64(n)))

    def nested(depth: int) -> Any:
        d = str(depth)
        nodes = [h.make_node("Identity", ["c" + d], ["co" + d])]
        if depth == 0:
            nodes.append(h.make_node("Neg", ["v" + d], ["vo" + d]))
        else:
            inner = nested(depth - 1)
            nodes += [
                trips("n" + d, 10),
                h.make_node("Loop", ["n" + d, "", "v" + d], ["vo" + d], body=inner),
            ]
        ins = [vi("i" + d, I64, []), vi("c" + d, B, []), vi("v" + d, F, [2])]
        return h.make_graph(nodes, "b" + d, ins, [vi("co" + d, B, []), vi("vo" + d, F, [2])])

    loops = h.make_graph(
        [trips("n", 10), h.make_node("Loop", ["n", "", "x"], ["y"], body=nested(2))],
        "nested",
        [vi("x", F, [2])],
        [vi("y", F, [2])],
    )
    body = h.make_graph(
        [
            h.make_node("Identity", ["c"], ["co"]),
            h.make_node("Concat", ["v", "v"], ["vo"], axis=0),
            h.make_node("SequenceInsert", ["s", "v"], ["so"]),
        ],
        "grow",
        [
            vi("i", I64, []),
            vi("c", B, []),
            vi("v", F, ["len"]),
            h.make_tensor_sequence_value_info("s", F, None),
        ],
        [vi("co", B, []), vi("vo", F, ["len2"]), h.make_tensor_sequence_value_info("so", F, None)],
    )
    growing = h.make_graph(
        [
            trips("n", 8),
            h.make_node("SequenceEmpty", [], ["e"], dtype=F),
            h.make_node("Loop", ["n", "", "x", "e"], ["y", "seq"], body=body),
            h.make_node("SequenceLength", ["seq"], ["k"]),
        ],
        "growing",
        [vi("x", F, [2])],
        [vi("y", F, ["out"]), vi("k", I64, [])],
    )
    seeds = []
    for name, graph in (("onnx_nested_loops", loops), ("onnx_growing", growing)):
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        seeds.append(Seed(name, "m.onnx", {"m.onnx": m.SerializeToString()}))
    return tuple(seeds)


REGEX_PATTERNS = (
    "(a+)+$",  # exponential in a backtracking engine, linear in RE2
    r"(?i)[\w.]+@\w+\.(com|org)",
    r"\d{2,3}\s\pL+",
    r"(a|aa|a*)*(a*)*b",
)
"""RegexFullMatch patterns of the regex seed: RE2 syntax the harnesses mutate (into
backreferences, lookaround, possessive quantifiers, which RE2 and tensorloop refuse)."""


@functools.cache
def regex_seeds() -> tuple[Seed, ...]:
    """An ONNX model (opset 20) matching REGEX_PATTERNS against constant strings: a seed of
    the atheris corpus (``fuzz/make_corpus.py``), kept out of ``onnx_seeds`` so the test
    suite's examples stay as they are."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    items = ["a" * 40 + "!", "Me.Too@Example.COM", "42 élan", "aaab", ""]
    text = onnx.numpy_helper.from_array(np.array(items, dtype=object), "text")
    nodes = [h.make_node("Constant", [], ["s"], value=text)]
    outputs = []
    for k, pattern in enumerate(REGEX_PATTERNS):
        nodes.append(h.make_node("RegexFullMatch", ["s"], [f"m{k}"], pattern=pattern))
        outputs.append(h.make_tensor_value_info(f"m{k}", TensorProto.BOOL, [len(items)]))
    graph = h.make_graph(nodes, "regex", [], outputs)
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    m.ir_version = 9
    onnx.checker.check_model(m, full_check=True)
    return (Seed("onnx_regex", "m.onnx", {"m.onnx": m.SerializeToString()}),)


# --------------------------------------------------------------------------------------------
# OpenVINO IR
# --------------------------------------------------------------------------------------------


def _ov_tensor_iterator() -> Any:
    """A TensorIterator: h = tanh(x_t @ W + h) over axis 1 of X (f32[2, 4, 3]), stride 1;
    yields the last h and every h concatenated on axis 1."""
    import openvino as ov
    import openvino.opset13 as ops

    X = ops.parameter([2, 4, 3], np.float32, name="X")
    H = ops.parameter([2, 3], np.float32, name="H")
    xi = ops.parameter([2, 1, 3], np.float32, name="xi")
    hi = ops.parameter([2, 3], np.float32, name="hi")
    w = np.linspace(-1.0, 1.0, 9, dtype=np.float32).reshape(3, 3)
    x2 = ops.squeeze(xi, ops.constant(np.array([1], np.int64)))
    h_new = ops.tanh(ops.add(ops.matmul(x2, ops.constant(w), False, False), hi))
    r_h = ops.result(h_new)
    r_y = ops.result(ops.unsqueeze(h_new, ops.constant(np.array([1], np.int64))))
    body = ov.Model([r_h, r_y], [xi, hi], "body")
    ti = ops.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hi, H.output(0), r_h.output(0))
    outs = [
        ti.get_iter_value(r_h.output(0), -1),
        ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1),
    ]
    return ov.Model(outs, [X, H], "ov_tensor_iterator")


def _ov_loop() -> Any:
    """A Loop-5: acc += x * (i + 1) while sum(acc) < 50, at most T (an input) trips; stacks acc."""
    import openvino as ov
    import openvino.opset13 as ops

    X = ops.parameter([3], np.float32, name="X")
    T = ops.parameter([], np.int64, name="T")
    it = ops.parameter([], np.int64, name="it")
    acc = ops.parameter([3], np.float32, name="acc")
    xb = ops.parameter([3], np.float32, name="xb")
    scale = ops.convert(ops.add(it, ops.constant(np.int64(1))), "f32")
    new = ops.add(acc, ops.multiply(xb, scale))
    keep = ops.less(
        ops.reduce_sum(new, ops.constant(np.array([0], np.int64)), False),
        ops.constant(np.float32(50.0)),
    )
    r_cond, r_acc = ops.result(keep), ops.result(new)
    r_y = ops.result(ops.unsqueeze(new, ops.constant(np.array([0], np.int64))))
    body = ov.Model([r_cond, r_acc, r_y], [it, acc, xb], "body")
    loop = ops.loop(T, ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(acc, ops.constant(np.zeros(3, np.float32)).output(0), r_acc.output(0))
    loop.set_invariant_input(xb, X.output(0))
    outs = [
        loop.get_iter_value(r_acc.output(0), -1),
        loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0),
    ]
    return ov.Model(outs, [X, T], "ov_loop")


@functools.cache
def openvino_seeds() -> tuple[Seed, ...]:
    import openvino as ov

    seeds = []
    for build in (_ov_tensor_iterator, _ov_loop):
        model = build()
        with tempfile.TemporaryDirectory() as tmp:
            ov.save_model(model, str(Path(tmp) / "m.xml"), compress_to_fp16=False)
            files = {n: (Path(tmp) / n).read_bytes() for n in ("m.xml", "m.bin")}
        seeds.append(Seed(model.get_friendly_name(), "m.xml", files))
    return tuple(seeds)


# --------------------------------------------------------------------------------------------
# text IR
# --------------------------------------------------------------------------------------------


def _tl_scan() -> Any:
    import tensorloop as tl

    xs = tl.placeholder("float32", ("N", 3), name="xs")
    w = tl.constant(np.array([0.5, -0.25, 1.0], np.float32))

    def step(c: Any, x: Any) -> Any:
        new = tl.tanh(c * 0.5 + x * w)
        return new, (new, tl.reduce_sum(x, 0, keepdims=True))

    init = tl.constant(np.zeros(3, np.float32))
    final, (ys, sums) = tl.scan(step, init, xs)
    return tl.Model({"final": final, "ys": ys, "sums": sums})


def _tl_nested() -> Any:
    """A while loop around a fori_loop: v grows until sum(v) >= limit; n counts the trips."""
    import tensorloop as tl

    x = tl.placeholder("float32", (3,), name="x")
    limit = tl.placeholder("float32", (), name="limit")

    def inner(i: Any, v: Any) -> Any:
        return v + tl.cast(i, "float32") * 0.125

    def body(state: Any) -> Any:
        v, n = state
        return tl.fori_loop(0, 3, inner, v * 1.5 + 0.25), n + 1

    v, n = tl.while_loop(lambda s: tl.reduce_sum(s[0]) < limit, body, (x, tl.constant(np.int64(0))))
    return tl.Model({"v": v, "n": n})


@functools.cache
def text_ir_seeds() -> tuple[Seed, ...]:
    import tensorloop as tl
    from tensorloop.ir.printer import print_graph

    seeds = []
    for name, build in (("tl_scan", _tl_scan), ("tl_nested", _tl_nested)):
        tl.reset()
        text = print_graph(build().graph) + "\n"
        tl.reset()
        seeds.append(Seed(name, "m.tl", {"m.tl": text.encode()}))
    return tuple(seeds)


def all_seeds() -> dict[str, tuple[Seed, ...]]:
    return {"onnx": onnx_seeds(), "openvino": openvino_seeds(), "text_ir": text_ir_seeds()}
