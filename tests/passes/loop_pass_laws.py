"""Laws every loop pass keeps, checked on random canonical loops and on builder loops that do
invariant work: results unchanged, ``changed`` exactly when the printed graph changed."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

import tensorloop as tl
from loop_models import F64, I64
from tensorloop.errors import LoopLimitError
from tensorloop.ir.graph import Graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import Pass


def _run(graph: Graph, inputs: dict[str, Any], max_iterations: int | None) -> list[Any] | str:
    kw = {} if max_iterations is None else {"max_iterations": max_iterations}
    model = tl.Model(graph, backend="reference", **kw)  # the pass alone, not the pipeline
    try:
        res = model.run(inputs)
    except LoopLimitError:
        return "limit"
    return [res[name] for name in model.output_names]


def assert_pass_keeps_results(
    pass_: Pass, graph: Graph, inputs: dict[str, Any], max_iterations: int | None = None
) -> Graph:
    """Run ``pass_`` on a clone of ``graph``; the clone, returned, must give the same results
    and print differently exactly when the pass says it changed."""
    want = _run(graph, inputs, max_iterations)
    after = graph.clone()
    before_text = print_graph(after)
    result = pass_(after)
    verify(result.graph)
    assert result.changed == (print_graph(result.graph) != before_text)
    got = _run(result.graph, inputs, max_iterations)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return result.graph
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"output #{k}"
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, err_msg=f"output #{k}")
    text = print_graph(result.graph)
    again = pass_(result.graph)
    assert again.changed == (print_graph(again.graph) != text)
    return result.graph


@st.composite
def builder_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """A scan, while or fori loop (or a scan holding a fori loop) whose body does work that
    reads only invariants, some of its results left unused; with inputs to run it."""
    tl.reset()
    n, seed = draw(st.integers(0, 3)), draw(st.integers(0, 2**16))
    xs = tl.placeholder(F64, (n, 3), name="xs")
    w = tl.placeholder(F64, (3, 3), name="w")
    b = tl.placeholder(F64, (3,), name="b")
    rng = np.random.default_rng(seed)
    inputs: dict[str, Any] = {
        "xs": rng.uniform(-1, 1, (n, 3)),
        "w": rng.uniform(-1, 1, (3, 3)),
        "b": rng.uniform(-1, 1, 3),
    }

    def cell(h: Any, x: Any) -> Any:
        return tl.tanh(tl.matmul(x, w * 0.5) + h * tl.tanh(b) + b * 0.5)

    zeros = tl.constant(np.zeros(3))
    kind = draw(st.sampled_from(["scan", "while", "fori", "nested"]))
    outs: dict[str, Any]
    if kind == "scan":
        c, (ys, zs) = tl.scan(lambda h, x: (cell(h, x), (h * 2.0 + b * b, tl.tanh(w))), zeros, xs)
        outs = {"c": c, "ys": ys, "zs": zs}
    elif kind == "while":
        limit = tl.placeholder(I64, (), name="limit")
        inputs["limit"] = np.int64(draw(st.integers(-1, 3)))
        h, k, v = tl.while_loop(
            lambda s: s[1] < limit,
            lambda s: (cell(s[0], b), s[1] + 1, s[2] + tl.abs(w * 0.25)),
            (zeros, tl.constant(np.int64(0)), tl.constant(np.zeros((3, 3)))),
        )
        outs = {"h": h, "k": k, "v": v}
    elif kind == "fori":
        hi_: Any = draw(st.integers(-1, 3))
        if draw(st.booleans()):
            inputs["hi"] = np.int64(hi_)
            hi_ = tl.placeholder(I64, (), name="hi")
        h, acc = tl.fori_loop(
            0, hi_, lambda i, s: (cell(s[0], b * tl.cast(i, F64)), s[1] * 0.5 + w * 2.0), (zeros, w)
        )
        outs = {"h": h, "acc": acc}
    else:

        def step(h: Any, x: Any) -> Any:
            inner = tl.fori_loop(0, 2, lambda i, g: cell(g, x) + tl.tanh(b), h)
            return inner, inner * tl.reduce_sum(tl.tanh(w), 0)

        c, ys = tl.scan(step, zeros, xs)
        outs = {"c": c, "ys": ys}
    keep = draw(st.lists(st.sampled_from(sorted(outs)), min_size=1, unique=True))
    graph = tl.Model({k: outs[k] for k in keep}).graph
    return graph, {k: v for k, v in inputs.items() if k in {p.name for p in graph.inputs}}
