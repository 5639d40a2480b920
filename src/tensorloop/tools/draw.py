"""Pictures of a graph: Graphviz DOT with loop and branch bodies as nested clusters, rendered
to SVG, PNG or a self-contained HTML page whose bodies open and close on click.

A Loop is a cluster titled with its kind (``for``, ``scan`` or ``while``), its trip count or
bound and its roles. Inside, the body's parameters are port boxes fed by the loop's operands
(``init``, ``slice``, invariant values, the trip count), the body's results are port boxes that
feed whatever reads the loop's outputs, and each carried value's back edge (the body result
that becomes the parameter of the next iteration) is dashed, as is the ``continue`` edge of a
loop that can stop early. An If is a cluster holding its ``then`` and ``else`` bodies; each of
its outputs is a box that both branches feed. Constants are folded into the labels of the
nodes that read them (``constants="fold"``), left out (``"hide"``) or drawn (``"show"``).

In the HTML page every body starts expanded; clicking a cluster's title hides its body (its
port boxes stay, so the edges in and out remain) and clicking again shows it.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import graphviz
import numpy as np

from ..errors import TensorloopError
from ..ir.branch import If
from ..ir.graph import Graph, Node, Value
from ..ir.loop import Loop

ConstantStyle = Literal["fold", "hide", "show"]
SUFFIXES = (".dot", ".gv", ".svg", ".png", ".html")
MAX_NAME = 32
FONT = "Helvetica,Arial,sans-serif"
LOOP_FILLS = ("#eef4fc", "#dde9f8", "#cddff4")
IF_FILL = "#fdf5e6"
BRANCH_FILL = "#fffdf8"
PARAM_FILL = "#dcebdc"
RESULT_FILL = "#f8e3c8"
BACK_EDGE = "#b03a2e"


class DrawError(TensorloopError):
    """A drawing could not be made or written."""


def loop_kind(loop: Loop) -> str:
    """``while`` if a condition can stop the loop, else ``scan`` if it slices a source, else
    ``for``."""
    if loop.condition is not None or not loop.always_continues:
        return "while"
    return "scan" if loop.sliced else "for"


def loop_title(loop: Loop) -> str:
    """The cluster title: name, kind, trip count or bound, then the roles and body size."""
    kind = loop_kind(loop)
    trips = loop.static_trip_count
    bound = loop.trip_bound
    if trips is not None and kind != "while":
        count = f"{trips} trip{'s' if trips != 1 else ''}"
    elif bound is not None:
        count = f"at most {bound} trips"
    elif loop.trip_count is not None:
        count = "trip count known at run time"
    elif loop.sliced:
        count = "one trip per slice"
    else:
        count = "until the condition fails"
    c = loop.counts
    roles = (
        f"{c.carried} carried, {c.sliced} sliced, {c.invariant} invariant, {c.stacked} stacked; "
        f"{len(loop.body.nodes)} body nodes"
    )
    return f"{_titled('Loop', loop.name)}{kind}, {count}\n{roles}"


def digraph(graph: Graph, *, constants: ConstantStyle = "fold") -> graphviz.Digraph:
    """``graph`` as a ``graphviz.Digraph`` (a notebook shows it as SVG)."""
    if constants not in ("fold", "hide", "show"):
        raise DrawError(f"constants must be 'fold', 'hide' or 'show', got {constants!r}")
    return _Drawing(constants).draw(graph)


def to_dot(graph: Graph, *, constants: ConstantStyle = "fold") -> str:
    """The DOT text of ``graph``."""
    return str(digraph(graph, constants=constants).source)


def to_svg(graph: Graph, *, constants: ConstantStyle = "fold") -> str:
    """``graph`` rendered to SVG by Graphviz's ``dot``."""
    svg: str = _pipe(to_dot(graph, constants=constants), "svg").decode("utf-8")
    return svg


def to_png(graph: Graph, *, constants: ConstantStyle = "fold") -> bytes:
    """``graph`` rendered to PNG by Graphviz's ``dot``."""
    return _pipe(to_dot(graph, constants=constants), "png")


def to_html(graph: Graph, *, constants: ConstantStyle = "fold", title: str = "") -> str:
    """One self-contained page: the SVG inline and a script that folds bodies on click."""
    svg = to_svg(graph, constants=constants)
    svg = svg[svg.index("<svg") :]
    name = html.escape(title or graph.name)
    return _PAGE.format(title=name, svg=svg, script=_SCRIPT)


def render(graph: Graph, path: str | Path, *, constants: ConstantStyle = "fold") -> Path:
    """Write ``graph`` to ``path``; the suffix (.dot/.gv, .svg, .png, .html) picks the form."""
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in SUFFIXES:
        raise DrawError(f"cannot draw to '{out}': the suffix must be one of {', '.join(SUFFIXES)}")
    data: str | bytes
    if suffix in (".dot", ".gv"):
        data = to_dot(graph, constants=constants)
    elif suffix == ".svg":
        data = to_svg(graph, constants=constants)
    elif suffix == ".png":
        data = to_png(graph, constants=constants)
    else:
        data = to_html(graph, constants=constants, title=out.stem)
    try:
        if isinstance(data, bytes):
            out.write_bytes(data)
        else:
            out.write_text(data, encoding="utf-8")
    except OSError as exc:
        raise DrawError(f"cannot write '{out}': {exc.strerror or exc}") from None
    return out


def _pipe(dot: str, fmt: str) -> bytes:
    try:
        data: bytes = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise DrawError(
            f"drawing to .{fmt} needs Graphviz's 'dot' program (Debian: apt-get install "
            "graphviz); .dot output works without it"
        ) from None
    except graphviz.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise DrawError(f"dot failed: {detail[-1] if detail else exc}") from None
    return data


# -- the drawing ---------------------------------------------------------------------------


@dataclass
class _Scope:
    """A cluster being filled: its Digraph and the clusters whose collapse hides its nodes."""

    dot: graphviz.Digraph
    hidden_by: tuple[str, ...]
    depth: int = 0
    ports: dict[str, list[str]] = field(default_factory=lambda: {"param": [], "result": []})


@dataclass
class _Drawing:
    constants: ConstantStyle
    ids: itertools.count[int] = field(default_factory=itertools.count)
    clusters: itertools.count[int] = field(default_factory=itertools.count)
    source: dict[Value, str] = field(default_factory=dict)
    folded: dict[Value, str] = field(default_factory=dict)
    hidden_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def draw(self, graph: Graph) -> graphviz.Digraph:
        root = graphviz.Digraph(graph.name or "graph")
        root.attr(rankdir="TB", fontname=FONT, compound="true", newrank="true")
        root.attr("node", fontname=FONT, fontsize="10", shape="box", style="filled")
        root.attr("node", fillcolor="white", height="0.3")
        root.attr("edge", fontname=FONT, fontsize="8", arrowsize="0.6", color="#555555")
        if self.constants != "show":
            for g, node in graph.walk():
                value = node.outputs[0] if node.op == "Constant" else None
                if value is not None and not (g is graph and value in graph.outputs):
                    self.folded[value] = "" if self.constants == "hide" else _constant_text(value)
        scope = _Scope(root, ())
        for v in graph.inputs:
            self.source[v] = self._node(scope, _value_label("input", v), "#cfe2f3", "input")
        self._body(graph, scope)
        for i, v in enumerate(graph.outputs):
            name = f"output {_short(v.name)}" if v.name else f"output {i}"
            out = self._node(scope, f"{name}\n{v.type}", "#fff2cc", "output")
            self._link(v, out)
        for tail, head, attrs in self.edges:
            hidden = _classes(self.hidden_by[tail] + self.hidden_by[head])
            classes = " ".join(c for c in (attrs.get("class", ""), hidden) if c)
            if classes:
                attrs = {**attrs, "class": classes}
            root.edge(tail, head, **attrs)
        return root

    def _body(self, graph: Graph, scope: _Scope) -> None:
        for node in graph.nodes:
            if node.op == "Constant" and node.outputs[0] in self.folded:
                continue
            if node.op == "Loop":
                self._loop(Loop(node), scope)
            elif node.op == "If":
                self._if(If(node), scope)
            else:
                self._op(node, scope)

    # -- nodes and edges --------------------------------------------------------------------
    def _node(self, scope: _Scope, label: str, fill: str, role: str, tooltip: str = "") -> str:
        name = f"n{next(self.ids)}"
        attrs = {"id": name, "label": _dot_text(label), "fillcolor": fill}
        classes = _classes(scope.hidden_by, role)
        attrs["class"] = classes
        if role in ("param", "result", "input", "output"):
            attrs["style"] = "filled,rounded"
        if tooltip:
            attrs["tooltip"] = _dot_text(tooltip)
        scope.dot.node(name, **attrs)
        self.hidden_by[name] = scope.hidden_by
        if role in scope.ports:
            scope.ports[role].append(name)
        return name

    def _link(self, value: Value | None, head: str, **attrs: str) -> bool:
        """An edge from where ``value`` is drawn to ``head``; False if it is a folded constant
        (or absent), whose text the caller puts in the label instead."""
        if value is None or value in self.folded:
            return False
        tail = self.source.get(value)
        if tail is None:  # a value from outside a closed body: draw nothing rather than lie
            return False
        self.edges.append((tail, head, attrs))
        return True

    def _inline(self, values: Sequence[Value | None]) -> list[str]:
        """Label lines for the folded constants among ``values``."""
        return [f"← {self.folded[v]}" for v in values if v is not None and self.folded.get(v)]

    def _op(self, node: Node, scope: _Scope) -> None:
        lines = [node.op, *(_value_line(v) for v in node.outputs)]
        if node.op == "Constant":
            lines.append(_constant_text(node.outputs[0]))
        lines += self._inline(node.inputs)
        name = self._node(scope, "\n".join(lines), "white", "op", node.name)
        for v in node.inputs:
            self._link(v, name)
        for v in node.outputs:
            self.source[v] = name
        for key, sub in node.subgraphs.items():
            title = f"{_titled(node.op, node.name)}{key}"
            inner = self._cluster(scope, title, IF_FILL)
            for p in sub.inputs:
                self.source[p] = self._node(inner, _value_label("param", p), PARAM_FILL, "param")
            self._body(sub, self._interior(inner))
            for r in sub.outputs:
                self._link(r, self._node(inner, _value_label("result", r), RESULT_FILL, "result"))
            self._close(scope, inner)

    def _cluster(self, scope: _Scope, title: str, fill: str) -> _Scope:
        """A new cluster inside ``scope``; its own nodes (ports) hide with ``scope``'s."""
        cid = f"L{next(self.clusters)}"
        dot = graphviz.Digraph(f"cluster_{cid}")
        dot.attr(
            id=cid,
            label=_dot_text(title, "\\l") + "\\l",  # lines left-justified
            style="filled,rounded",
            fillcolor=fill,
            color="#6b8fb8",
            fontsize="11",
            labeljust="l",
            tooltip="click the title to fold or unfold this body",
        )
        classes = _classes(scope.hidden_by, "body")
        dot.attr(**{"class": classes})
        return _Scope(dot, scope.hidden_by, scope.depth + 1)

    @staticmethod
    def _close(parent: _Scope, scope: _Scope) -> None:
        """Put a cluster's parameters in one row at its top and its results in one row below,
        then add the cluster to ``parent``."""
        for names in scope.ports.values():
            if len(names) > 1:
                with scope.dot.subgraph() as row:
                    row.attr(rank="same")
                    for name in names:
                        row.node(name)
        parent.dot.subgraph(scope.dot)

    @staticmethod
    def _interior(scope: _Scope) -> _Scope:
        """The scope of a cluster's body nodes: hidden when the cluster is collapsed."""
        cid = str(scope.dot.name).removeprefix("cluster_")
        return _Scope(scope.dot, (*scope.hidden_by, cid), scope.depth)

    def _port(
        self, scope: _Scope, label: str, fill: str, role: str, value: Value | None, edge: str
    ) -> str:
        lines = [label, *self._inline([value])]
        name = self._node(scope, "\n".join(lines), fill, role)
        attrs = {"label": edge, "fontcolor": "#555555"} if edge else {}
        self._link(value, name, **attrs)
        return name

    # -- control flow -----------------------------------------------------------------------
    def _loop(self, loop: Loop, scope: _Scope) -> None:
        fill = LOOP_FILLS[min(scope.depth, len(LOOP_FILLS) - 1)]
        inner = self._cluster(scope, loop_title(loop), fill)
        it = loop.iteration
        controls = [("max_trip_count", loop.trip_count), ("initial_condition", loop.condition)]
        lines = [f"iteration %{_short(it.name)}"]
        lines += [f"{role} = {self.folded[v]}" for role, v in controls if v in self.folded]
        control = self._node(inner, "\n".join(lines), PARAM_FILL, "param")
        self.source[it] = control
        for role, v in controls:
            self._link(v, control, label=role, fontcolor="#555555")
        carried_params = []
        for c in loop.carried:
            label = f"carried %{_short(c.param.name)}\n{c.param.type}"
            p = self._port(inner, label, PARAM_FILL, "param", c.initial, "init")
            self.source[c.param] = p
            carried_params.append(p)
        for s in loop.sliced:
            how = f"axis {s.spec.axis}{', reversed' if s.spec.reverse else ''}"
            label = f"slice %{_short(s.param.name)} ({how})\n{s.param.type}"
            self.source[s.param] = self._port(inner, label, PARAM_FILL, "param", s.source, "slice")
        for iv in loop.invariants:
            label = f"invariant %{_short(iv.param.name)}\n{iv.param.type}"
            self.source[iv.param] = self._port(inner, label, PARAM_FILL, "param", iv.value, "")
        self._body(loop.body, self._interior(inner))
        cond = loop.continue_condition
        if not loop.always_continues:
            stop = self._port(inner, "continue?", RESULT_FILL, "result", cond, "")
            self.edges.append((stop, control, _back_edge("continue")))
        for c, param in zip(loop.carried, carried_params, strict=True):
            label = f"next %{_short(c.param.name)} → %{_short(c.final.name)}\n{c.final.type}"
            r = self._port(inner, label, RESULT_FILL, "result", c.next, "")
            self.edges.append((r, param, _back_edge("next")))
            self.source[c.final] = r
        for st in loop.stacked:
            how = f"axis {st.spec.axis}{', reversed' if st.spec.reverse else ''}"
            label = f"stack ({how}) → %{_short(st.output.name)}\n{st.output.type}"
            self.source[st.output] = self._port(inner, label, RESULT_FILL, "result", st.result, "")
        self._close(scope, inner)

    def _if(self, branch: If, scope: _Scope) -> None:
        node = branch.node
        n = len(node.outputs)
        title = f"{_titled('If', node.name)}{n} output{'s' if n != 1 else ''}"
        inner = self._cluster(scope, title, IF_FILL)
        self._port(inner, "if", PARAM_FILL, "param", branch.condition, "")
        branches = [("then", branch.then_branch), ("else", branch.else_branch)]
        outs = []
        for k, v in enumerate(node.outputs):
            lines = [_value_label("", v)]
            for word, graph in branches:
                results = graph.outputs[k : k + 1]
                lines += [f"{word}: {self.folded[r]}" for r in results if self.folded.get(r)]
            outs.append(self._node(inner, "\n".join(lines), RESULT_FILL, "result"))
        body = self._interior(inner)
        for word, graph in branches:
            count = len(graph.nodes)
            title = f"{word}: {count} node{'s' if count != 1 else ''}"
            sub = self._cluster(body, title, BRANCH_FILL)
            for p, captured in zip(graph.inputs, branch.captured, strict=False):
                label = f"captured %{_short(p.name)}\n{p.type}"
                self.source[p] = self._port(sub, label, PARAM_FILL, "param", captured, "")
            self._body(graph, self._interior(sub))
            for r, out in zip(graph.outputs, outs, strict=False):
                self._link(r, out, label=word, fontcolor="#555555")
            self._close(inner, sub)
        for v, out in zip(node.outputs, outs, strict=True):
            self.source[v] = out
        self._close(scope, inner)


def _back_edge(label: str) -> dict[str, str]:
    return {
        "label": label,
        "style": "dashed",
        "color": BACK_EDGE,
        "fontcolor": BACK_EDGE,
        "constraint": "false",
        "class": "tl-back",
    }


def _classes(hidden_by: Sequence[str], *extra: str) -> str:
    names = [f"tl-{e}" for e in extra] + [f"tl-in-{c}" for c in dict.fromkeys(hidden_by)]
    return " ".join(names)


def _titled(op: str, name: str) -> str:
    return f"{op} '{_short(name)}': " if name else f"{op}: "


def _short(name: str) -> str:
    return name if len(name) <= MAX_NAME else f"…{name[-(MAX_NAME - 1) :]}"


def _auto(name: str) -> bool:
    """Whether a name was made up by a numbering (``12``, ``const_3``), not given by a user."""
    return re.fullmatch(r"(const)?_?\d*", name) is not None


def _value_line(v: Value) -> str:
    return str(v.type) if _auto(v.name) else f"%{_short(v.name)}: {v.type}"


def _value_label(role: str, v: Value) -> str:
    head = f"{role} %{_short(v.name)}" if role else f"%{_short(v.name)}"
    return f"{head.strip()}\n{v.type}"


def _constant_text(value: Value) -> str:
    """A constant as a label shows it: small ones by value, large ones by name and type."""
    data = np.asarray(value.constant)
    if data.size <= 4:
        text = np.array2string(data, separator=",", formatter=_FORMATTER)
        return text if _auto(value.name) else f"{_short(value.name)} = {text}"
    return f"{value.type}" if _auto(value.name) else f"{_short(value.name)}: {value.type}"


_FORMATTER: Any = {
    "float_kind": lambda x: f"{x:.4g}",
    "bool": lambda x: "true" if x else "false",
}


def _dot_text(text: str, newline: str = "\\n") -> str:
    """Text for a DOT string: backslashes kept literal, lines joined by DOT's ``\\n`` (centred)
    or ``\\l`` (left-justified)."""
    return newline.join(line.replace("\\", "\\\\") for line in text.split("\n"))


# -- the HTML page -------------------------------------------------------------------------

_SCRIPT = """
(() => {
  const svg = document.querySelector("svg");
  const collapsed = new Set();
  const members = [...svg.querySelectorAll("[class*='tl-in-']")];
  const bodies = [...svg.querySelectorAll("g.tl-body")];
  function hiddenBy(el) {
    return [...el.classList].some((c) => c.startsWith("tl-in-") && collapsed.has(c.slice(6)));
  }
  function refresh() {
    for (const el of members) el.style.display = hiddenBy(el) ? "none" : "";
    for (const body of bodies) {
      const shut = collapsed.has(body.id);
      body.classList.toggle("tl-collapsed", shut);
      body.setAttribute("data-collapsed", shut ? "true" : "false");
      body.querySelector("path, polygon").style.fill = shut ? "#e4e4e4" : "";
      const title = body.querySelector("text");
      title.textContent = (shut ? "\\u25b8 " : "\\u25be ") + title.textContent.slice(2);
    }
  }
  function toggle(id) {
    if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
    refresh();
  }
  for (const body of bodies) {
    const title = body.querySelector("text");
    title.textContent = "  " + title.textContent;
    for (const text of body.querySelectorAll("text")) {
      text.classList.add("tl-title");
      text.addEventListener("click", () => toggle(body.id));
    }
  }
  document.getElementById("tl-expand").addEventListener("click", () => {
    collapsed.clear(); refresh();
  });
  document.getElementById("tl-collapse").addEventListener("click", () => {
    for (const body of bodies) collapsed.add(body.id);
    refresh();
  });
  window.tensorloopToggle = toggle;
  refresh();
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 1em; }}
.tl-title {{ cursor: pointer; }}
g.edge {{ pointer-events: none; }}  /* an edge drawn over a title never takes its click */
.tl-title:hover {{ text-decoration: underline; }}
</style>
</head>
<body>
<p>{title}: click a loop's or branch's title to fold or unfold its body
(bodies start unfolded).
<button id="tl-collapse">fold all</button> <button id="tl-expand">unfold all</button></p>
{svg}
<script>{script}</script>
</body>
</html>
"""
