"""Mutations of model files, and the one check every mutant must pass.

Each mutator takes the seed's files and a ``Choices`` (the source of every decision: Hypothesis
in the tests, a libFuzzer byte stream in the atheris harnesses) and returns the mutant's files
and whether the mutation keeps the model's meaning (then its outputs must equal the seed's).

``check(files, main)`` is the law: ``tl.load`` either raises a ``TensorloopError`` or returns a
model that, on small random inputs, under tight limits, either raises a ``TensorloopError`` or
completes; anything else (another exception, a hang, a run past the memory cap) is a finding.
"""

from __future__ import annotations

import contextlib
import copy
import re
import resource
import signal
import tempfile
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

import tensorloop as tl
from tensorloop.errors import TensorloopError

T = TypeVar("T")

MAX_ITERATIONS = 64
"""Iterations any loop of a mutant may run: enough for every seed, small enough to be quick."""
RUN_TIMEOUT = 5.0
"""Seconds a mutant's run may take (``Limits.timeout``)."""
HANG_SECONDS = 20
"""Wall-clock seconds one load-and-run may take before the check calls it a hang."""
MEMORY_CAP = 2 << 30
"""Bytes of address space a load-and-run may add before NumPy's allocations fail."""

INTERESTING_INTS = (
    0,
    1,
    -1,
    2,
    3,
    -2,
    7,
    64,
    255,
    256,
    -129,
    65535,
    2**31 - 1,
    -(2**31),
    2**32,
    2**40,
    2**62,
    2**63 - 1,
    -(2**63),
    100_000,
)
INTERESTING_TEXT = (
    "",
    "0",
    "1",
    "-1",
    "2",
    "-2",
    "3",
    "99999999999",
    "-99999999999",
    "18446744073709551616",
    "1.5",
    "nan",
    "inf",
    "abc",
    ",",
    "1,2,3",
    "-1,-1",
    "0,0",
    "?",
    "1e400",
    " ",
    "\x00",
    "f32",
    "i64",
    "boolean",
    "dynamic",
    "..",
    "../../etc/passwd",
)


class Choices(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...

    def raw(self, max_size: int) -> bytes: ...


class HypothesisChoices:
    """Decisions drawn from Hypothesis's ``st.data()``, so failures shrink and replay."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data, self._st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return int(self._data.draw(self._st.integers(lo, hi)))

    def choice(self, options: Sequence[T]) -> T:
        return options[self.integer(0, len(options) - 1)]

    def raw(self, max_size: int) -> bytes:
        return bytes(self._data.draw(self._st.binary(max_size=max_size)))


class StreamChoices:
    """Decisions read from a byte string (an atheris input); zeros once it runs out."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def _take(self, n: int) -> int:
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return int.from_bytes(chunk.ljust(n, b"\0"), "little")

    def integer(self, lo: int, hi: int) -> int:
        span = hi - lo + 1
        return lo + self._take(max(1, (span.bit_length() + 7) // 8)) % span

    def choice(self, options: Sequence[T]) -> T:
        return options[self.integer(0, len(options) - 1)]

    def raw(self, max_size: int) -> bytes:
        n = self.integer(0, max_size)
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk


Files = dict[str, bytes]


@dataclass(frozen=True)
class Mutant:
    files: Files
    keeps_meaning: bool
    what: str


# --------------------------------------------------------------------------------------------
# byte mutations (any format)
# --------------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, c: Choices, count: int = 3) -> tuple[bytes, str]:
    """Up to ``count`` byte-level edits: bit flips, byte sets, truncation, insertion, deletion
    and duplication of a range."""
    buf = bytearray(data)
    done = []
    for _ in range(c.integer(1, count)):
        kind = c.choice(("flip", "set", "truncate", "insert", "delete", "duplicate"))
        pos = c.integer(0, max(len(buf) - 1, 0))
        if kind == "flip" and buf:
            buf[pos] ^= 1 << c.integer(0, 7)
        elif kind == "set" and buf:
            buf[pos] = c.choice((0, 0xFF, 0x7F, 0x80, ord("<"), ord(">"), ord('"'), ord("-")))
        elif kind == "truncate":
            del buf[pos:]
        elif kind == "insert":
            buf[pos:pos] = c.raw(16)
        elif kind == "delete":
            del buf[pos : pos + c.integer(1, 64)]
        elif kind == "duplicate":
            buf[pos:pos] = buf[pos : pos + c.integer(1, 64)]
        done.append(f"{kind}@{pos}")
    return bytes(buf), "bytes " + " ".join(done)


def mutate_file_bytes(files: Files, c: Choices) -> Mutant:
    name = c.choice(sorted(files))
    data, what = mutate_bytes(files[name], c)
    return Mutant({**files, name: data}, False, f"{name}: {what}")


# --------------------------------------------------------------------------------------------
# ONNX
# --------------------------------------------------------------------------------------------


def _onnx_graphs(g: Any) -> Iterator[Any]:
    """``g`` and every body inside it, depth first."""
    from onnx import AttributeProto

    yield g
    for node in g.node:
        for a in node.attribute:
            if a.type == AttributeProto.GRAPH:
                yield from _onnx_graphs(a.g)
            for sub in a.graphs:
                yield from _onnx_graphs(sub)


def _onnx_value_infos(graphs: Sequence[Any]) -> list[Any]:
    return [vi for g in graphs for vi in (*g.input, *g.output, *g.value_info)]


def _onnx_names(graphs: Sequence[Any]) -> list[str]:
    names = {vi.name for vi in _onnx_value_infos(graphs)}
    names |= {n for g in graphs for node in g.node for n in (*node.input, *node.output)}
    names |= {t.name for g in graphs for t in g.initializer}
    return sorted(n for n in names if n)


def _mutate_onnx_attribute(node: Any, graphs: Sequence[Any], c: Choices) -> str:
    from onnx import AttributeProto, helper

    if not node.attribute or c.integer(0, 9) == 0:
        node.attribute.append(helper.make_attribute(c.choice(("axis", "to", "body", "zz")), 1))
        return f"add attribute to {node.op_type}"
    a = c.choice(list(node.attribute))
    if c.integer(0, 7) == 0:
        node.attribute.remove(a)
        return f"drop {node.op_type}.{a.name}"
    if a.type == AttributeProto.INT:
        a.i = c.choice(INTERESTING_INTS)
    elif a.type == AttributeProto.INTS:
        values = list(a.ints)
        edit = c.choice(("set", "drop", "append"))
        if edit == "set" and values:
            values[c.integer(0, len(values) - 1)] = c.choice(INTERESTING_INTS)
        elif edit == "drop" and values:
            values.pop(c.integer(0, len(values) - 1))
        else:
            values.append(c.choice(INTERESTING_INTS))
        del a.ints[:]
        a.ints.extend(values)
    elif a.type == AttributeProto.FLOAT:
        a.f = c.choice((float("nan"), float("inf"), -1.0, 0.0, 1e30))
    elif a.type == AttributeProto.STRING:
        a.s = c.choice(INTERESTING_TEXT).encode()
    elif a.type == AttributeProto.GRAPH:
        other = c.choice(list(graphs))
        if other is a.g or c.integer(0, 1):
            del a.g.node[:]
        else:
            a.g.ParseFromString(other.SerializeToString())  # other may contain a.g
    elif a.type == AttributeProto.TENSOR:
        _mutate_onnx_tensor(a.t, c)
    return f"set {node.op_type}.{a.name}"


def _mutate_onnx_tensor(t: Any, c: Choices) -> None:
    edit = c.choice(("dims", "dtype", "data", "external"))
    if edit == "dims":
        dims = list(t.dims) or [1]
        dims[c.integer(0, len(dims) - 1)] = c.choice(INTERESTING_INTS)
        del t.dims[:]
        t.dims.extend(d for d in dims if -(2**63) <= d < 2**63)
    elif edit == "dtype":
        t.data_type = c.integer(0, 27)
    elif edit == "data":
        raw = t.raw_data
        t.raw_data = raw[: c.integer(0, len(raw))] + c.raw(8)
    else:
        from onnx import TensorProto

        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        entry = t.external_data.add()
        entry.key, entry.value = "location", c.choice(("w.bin", "../w.bin", "/etc/passwd", ""))


def _mutate_onnx_external(m: Any, c: Choices) -> str:
    tensors = [t for g in _onnx_graphs(m.graph) for t in g.initializer if t.external_data]
    if not tensors:
        return "no external data"
    t = c.choice(tensors)
    entry = c.choice(list(t.external_data))
    entry.value = c.choice(
        (
            "w.bin",
            "../w.bin",
            "/etc/passwd",
            "/proc/self/mem",
            "sub/../w.bin",
            "nope.bin",
            "",
            ".",
            "w.bin\0x",
            "-1",
            "0",
            "12",
            "13",
            "99999999999",
            "abc",
        )
    )
    return f"external {entry.key}={entry.value!r}"


def _mutate_onnx_value_info(graphs: Sequence[Any], c: Choices) -> str:
    vis = _onnx_value_infos(graphs)
    if not vis:
        return "no value infos"
    vi = c.choice(vis)
    tt = vi.type.tensor_type
    edit = c.choice(("dim", "dim", "rank", "dtype", "param", "unset"))
    dims = tt.shape.dim
    if edit == "dim" and len(dims):
        d = dims[c.integer(0, len(dims) - 1)]
        value = c.choice(INTERESTING_INTS)
        if -(2**63) <= value < 2**63:
            d.dim_value = value
    elif edit == "rank":
        if len(dims) and c.integer(0, 1):
            del dims[c.integer(0, len(dims) - 1)]
        else:
            for _ in range(c.choice((1, 2, 100, 5000))):
                dims.add().dim_value = 1
    elif edit == "dtype":
        tt.elem_type = c.integer(0, 27)
    elif edit == "param" and len(dims):
        dims[c.integer(0, len(dims) - 1)].dim_param = c.choice(("N", "M", "", "?"))
    else:
        vi.ClearField("type")
    return f"{edit} of value {vi.name!r}"


def _mutate_onnx_structure(m: Any, graphs: Sequence[Any], c: Choices) -> str:
    g = c.choice(list(graphs))
    names = _onnx_names(graphs)
    edit = c.choice(
        (
            "rewire",
            "rewire",
            "rename_output",
            "remove_node",
            "duplicate_node",
            "swap_nodes",
            "remove_output",
            "duplicate_output",
            "remove_input",
            "duplicate_input",
            "op_type",
            "extra_input",
        )
    )
    nodes = g.node
    if edit in ("rewire", "rename_output", "remove_node", "duplicate_node", "op_type") and nodes:
        node = nodes[c.integer(0, len(nodes) - 1)]
        if edit == "rewire" and node.input:
            node.input[c.integer(0, len(node.input) - 1)] = c.choice([*names, "", "nope"])
        elif edit == "rename_output" and node.output:
            node.output[c.integer(0, len(node.output) - 1)] = c.choice([*names, ""])
        elif edit == "remove_node":
            nodes.remove(node)
        elif edit == "duplicate_node":
            nodes.append(copy.deepcopy(node))
        elif edit == "op_type":
            node.op_type = c.choice(("Loop", "Scan", "If", "Add", "Nope", "Identity", "Range"))
        return f"{edit} {node.op_type} in {g.name}"
    if edit == "swap_nodes" and len(nodes) > 1:
        i, j = c.integer(0, len(nodes) - 1), c.integer(0, len(nodes) - 1)
        a, b = copy.deepcopy(nodes[i]), copy.deepcopy(nodes[j])
        nodes[i].CopyFrom(b)
        nodes[j].CopyFrom(a)
    elif edit in ("remove_output", "duplicate_output") and g.output:
        k = c.integer(0, len(g.output) - 1)
        if edit == "remove_output":
            del g.output[k]
        else:
            g.output.append(copy.deepcopy(g.output[k]))
    elif edit in ("remove_input", "duplicate_input") and g.input:
        k = c.integer(0, len(g.input) - 1)
        if edit == "remove_input":
            del g.input[k]
        else:
            g.input.append(copy.deepcopy(g.input[k]))
    elif edit == "extra_input" and nodes:
        nodes[c.integer(0, len(nodes) - 1)].input.append(c.choice([*names, ""]))
    return f"{edit} in {g.name}"


def _mutate_onnx_model(m: Any, c: Choices) -> str:
    edit = c.choice(("ir_version", "opset", "domain", "extra_opset"))
    if edit == "ir_version":
        m.ir_version = c.choice((0, 1, 3, 7, 10, 11, 12, 99, -1, 2**40))
    elif edit == "opset":
        m.opset_import[0].version = c.choice((0, 1, 7, 11, 13, 16, 21, 22, 23, 99, -5, 2**40))
    elif edit == "domain":
        m.opset_import[0].domain = c.choice(("ai.onnx", "com.microsoft", "nope", "ai.onnx.ml"))
    else:
        m.opset_import.add(domain=c.choice(("", "custom", "ai.onnx")), version=c.integer(-1, 99))
    return f"model {edit}"


def _mutate_onnx_loop_bounds(graphs: Sequence[Any], c: Choices) -> str:
    """Make a Loop run for 2**40 trips, none, or forever (no trip count, condition true)."""
    from onnx import helper, numpy_helper

    loops = [(g, n) for g in graphs for n in g.node if n.op_type == "Loop"]
    if not loops:
        return "no loop"
    g, loop = c.choice(loops)
    trip = c.choice((2**40, 0, -1, None, 2**63 - 1))
    if trip is None:
        loop.input[0] = ""
    else:
        name = "fuzz_trip"
        g.node.insert(
            0,
            helper.make_node(
                "Constant",
                [],
                [name],
                value=numpy_helper.from_array(np.asarray(trip, np.int64), name),
            ),
        )
        loop.input[0] = name
    return f"loop trips {trip}"


def _fresh(stem: str, taken: set[str]) -> str:
    k = 0
    while f"{stem}_{k}" in taken:
        k += 1
    return f"{stem}_{k}"


def _rename_onnx_tensor(m: Any, graphs: Sequence[Any], c: Choices) -> str:
    """Rename one interior tensor everywhere it is named (meaning kept)."""
    outer = {vi.name for vi in (*m.graph.input, *m.graph.output)}
    interior = [o for g in graphs for n in g.node for o in n.output if o and o not in outer]
    if not interior:
        return "nothing to rename"
    old, new = c.choice(interior), _fresh("renamed", set(_onnx_names(graphs)))
    for g in graphs:
        for n in g.node:
            n.input[:] = [new if x == old else x for x in n.input]
            n.output[:] = [new if x == old else x for x in n.output]
        for vi in (*g.input, *g.output, *g.value_info):
            if vi.name == old:
                vi.name = new
    return f"rename {old} -> {new}"


def _insert_onnx_identity(graphs: Sequence[Any], c: Choices) -> str:
    """Route one node output through a new Identity (meaning kept)."""
    from onnx import helper

    sites = [(g, k) for g in graphs for k, n in enumerate(g.node) if n.output and n.output[0]]
    g, k = c.choice(sites)
    node = g.node[k]
    old = node.output[0]
    pre = _fresh(f"{old}_pre", set(_onnx_names(graphs)))
    node.output[0] = pre
    g.node.insert(k + 1, helper.make_node("Identity", [pre], [old]))
    return f"identity after {old}"


def mutate_onnx(files: Files, main: str, c: Choices) -> Mutant:
    """One mutation of an ONNX model: bytes, or a structured edit of the parsed proto."""
    import onnx

    kind = c.choice(
        (
            "bytes",
            "attribute",
            "value_info",
            "structure",
            "structure",
            "model",
            "loop_bounds",
            "external",
            "rename",
            "identity",
        )
    )
    if kind == "bytes":
        return mutate_file_bytes(files, c)
    m = onnx.ModelProto.FromString(files[main])
    graphs = list(_onnx_graphs(m.graph))
    if kind == "attribute":
        nodes = [n for g in graphs for n in g.node]
        what = _mutate_onnx_attribute(c.choice(nodes), graphs, c)
    elif kind == "value_info":
        what = _mutate_onnx_value_info(graphs, c)
    elif kind == "structure":
        what = _mutate_onnx_structure(m, graphs, c)
    elif kind == "model":
        what = _mutate_onnx_model(m, c)
    elif kind == "loop_bounds":
        what = _mutate_onnx_loop_bounds(graphs, c)
    elif kind == "external":
        what = _mutate_onnx_external(m, c)
    elif kind == "rename":
        what = _rename_onnx_tensor(m, graphs, c)
    else:
        what = _insert_onnx_identity(graphs, c)
    keeps = kind in ("rename", "identity")
    return Mutant({**files, main: m.SerializeToString()}, keeps, what)


# --------------------------------------------------------------------------------------------
# OpenVINO IR
# --------------------------------------------------------------------------------------------

PORT_MAP_ATTRS = (
    "axis",
    "start",
    "end",
    "stride",
    "part_size",
    "external_port_id",
    "internal_layer_id",
    "purpose",
)


def _xml(root: ET.Element) -> bytes:
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _set_or_drop(el: ET.Element, key: str, c: Choices) -> str:
    if c.integer(0, 5) == 0:
        el.attrib.pop(key, None)
        return f"drop {el.tag}.{key}"
    el.set(key, c.choice(INTERESTING_TEXT))
    return f"set {el.tag}.{key}={el.get(key)!r}"


def _siblings(root: ET.Element, path: str) -> list[tuple[ET.Element, ET.Element]]:
    """(parent, child) for every child element matching ``path`` under some parent."""
    return [(p, ch) for p in root.iter() for ch in p.findall(path)]


def _mutate_ov_xml(root: ET.Element, c: Choices) -> tuple[str, bool]:
    edit = c.choice(
        (
            "data",
            "data",
            "dim",
            "dim",
            "port",
            "edge",
            "edge",
            "port_map",
            "port_map",
            "back_edge",
            "layer",
            "net",
            "const",
            "shuffle_layers",
            "shuffle_edges",
        )
    )
    layers = list(root.iter("layer"))
    if edit == "data":
        datas = [d for d in root.iter("data") if d.attrib]
        d = c.choice(datas)
        return _set_or_drop(d, c.choice(sorted(d.attrib)), c), False
    if edit == "dim":
        dims = list(root.iter("dim"))
        d = c.choice(dims)
        d.text = c.choice(INTERESTING_TEXT)
        return f"dim={d.text!r}", False
    if edit == "port":
        pairs = _siblings(root, "port")
        parent, port = c.choice(pairs)
        action = c.choice(("remove", "duplicate", "id", "precision", "add_dim"))
        if action == "remove":
            parent.remove(port)
        elif action == "duplicate":
            parent.append(copy.deepcopy(port))
        elif action == "add_dim":
            for _ in range(c.choice((1, 3, 200))):
                ET.SubElement(port, "dim").text = "1"
        else:
            _set_or_drop(port, action, c)
        return f"port {action}", False
    if edit in ("edge", "back_edge"):
        tag = "edges" if edit == "edge" else "back_edges"
        pairs = [(p, ch) for p in root.iter(tag) for ch in p.findall("edge")]
        if not pairs:
            return f"no {tag}", False
        parent, e = c.choice(pairs)
        action = c.choice(("remove", "duplicate", "from-layer", "from-port", "to-layer", "to-port"))
        if action == "remove":
            parent.remove(e)
        elif action == "duplicate":
            parent.append(copy.deepcopy(e))
        else:
            ids = [la.get("id", "") for la in layers]
            e.set(action, c.choice([*ids, *INTERESTING_TEXT[:8]]))
        return f"{tag} {action}", False
    if edit == "port_map":
        entries = _siblings(root, "port_map/*")
        if not entries:
            return "no port_map", False
        parent, entry = c.choice(entries)
        action = c.choice(("attr", "attr", "attr", "remove", "duplicate"))
        if action == "remove":
            pm = next(p for p in root.iter("port_map") if entry in list(p))
            pm.remove(entry)
            return "port_map remove", False
        if action == "duplicate":
            pm = next(p for p in root.iter("port_map") if entry in list(p))
            pm.append(copy.deepcopy(entry))
            return "port_map duplicate", False
        return "port_map " + _set_or_drop(entry, c.choice(PORT_MAP_ATTRS), c), False
    if edit == "layer":
        pairs = _siblings(root, "layer")
        parent, layer = c.choice(pairs)
        action = c.choice(("remove", "duplicate", "id", "type", "version", "name"))
        if action == "remove":
            parent.remove(layer)
        elif action == "duplicate":
            parent.append(copy.deepcopy(layer))
        elif action == "id":
            layer.set("id", c.choice([la.get("id", "") for la in layers] + ["-1", "abc"]))
        elif action == "type":
            kinds = sorted({la.get("type", "") for la in layers} | {"Nope", "Loop"})
            layer.set("type", c.choice(kinds))
        elif action == "version":
            layer.set("version", c.choice(("opset1", "opset5", "opset99", "", "nope")))
        else:
            layer.set("name", c.choice([la.get("name", "") for la in layers] + [""]))
        return f"layer {action}", False
    if edit == "net":
        return _set_or_drop(root, "version", c), False
    if edit == "const":
        consts = [la.find("data") for la in layers if la.get("type") == "Const"]
        datas = [d for d in consts if d is not None]
        d = c.choice(datas)
        key = c.choice(("offset", "size", "shape", "element_type"))
        d.set(key, c.choice(INTERESTING_TEXT))
        return f"Const {key}={d.get(key)!r}", False
    # Layer and edge order carry no meaning: the mutant must give the seed's outputs.
    tag = "layers" if edit == "shuffle_layers" else "edges"
    for parent in root.iter(tag):
        children = list(parent)
        for child in children:
            parent.remove(child)
        order = sorted(range(len(children)), key=lambda k: (c.integer(0, 7), k))
        for k in order:
            parent.append(children[k])
    return edit, True


def mutate_openvino(files: Files, main: str, c: Choices) -> Mutant:
    """One mutation of an OpenVINO IR (.xml + .bin): bytes, or a structured XML edit."""
    if c.integer(0, 3) == 0:
        return mutate_file_bytes(files, c)
    root = ET.fromstring(files[main])
    what, keeps = _mutate_ov_xml(root, c)
    return Mutant({**files, main: _xml(root)}, keeps, what)


# --------------------------------------------------------------------------------------------
# text IR
# --------------------------------------------------------------------------------------------

TOKEN = re.compile(r"%[\w.]+|@[\w.]+|-?\d+(?:\.\d+)?|[A-Za-z_]\w*|\S")


def mutate_text_ir(files: Files, main: str, c: Choices) -> Mutant:
    """One mutation of a text-IR file: bytes, a token, a line, or a consistent rename."""
    kind = c.choice(("bytes", "token", "token", "token", "line", "rename"))
    if kind == "bytes":
        return mutate_file_bytes(files, c)
    text = files[main].decode()
    if kind == "line":
        lines = text.split("\n")
        k = c.integer(0, len(lines) - 1)
        action = c.choice(("delete", "duplicate", "swap"))
        if action == "delete":
            del lines[k]
        elif action == "duplicate":
            lines.insert(k, lines[k])
        else:
            j = c.integer(0, len(lines) - 1)
            lines[k], lines[j] = lines[j], lines[k]
        return Mutant({**files, main: "\n".join(lines).encode()}, False, f"line {action} {k}")
    tokens = list(TOKEN.finditer(text))
    if kind == "rename":
        header = text.partition("\n")[0]
        outer = set(re.findall(r"%[\w.]+", header)) | set(
            re.findall(r"%[\w.]+", text.rstrip().rsplit("\n", 2)[-2])
        )
        names = sorted({t.group() for t in tokens if t.group().startswith("%")} - outer)
        if names:
            old = c.choice(names)
            new = _fresh("%renamed", {t.group() for t in tokens})
            renamed = re.sub(re.escape(old) + r"(?![\w.])", new, text)
            return Mutant({**files, main: renamed.encode()}, True, f"rename {old} -> {new}")
    t = c.choice(tokens)
    s = t.group()
    if s.startswith("%"):
        pool = sorted({x.group() for x in tokens if x.group().startswith("%")})
        new = c.choice(pool)
    elif s.lstrip("-")[:1].isdigit():
        new = str(c.choice(INTERESTING_INTS)) if c.integer(0, 3) else c.choice(("1.5", "-0.0"))
    elif s[:1].isalpha() or s[:1] == "_":
        pool = sorted({x.group() for x in tokens if x.group()[:1].isalpha()})
        new = c.choice([*pool, "N", "f64", "i8", "bool", "none", "true"])
    else:
        new = c.choice(("", "[", "]", "{", "}", "(", ")", ",", "=", ":", "%", "<", ">", '"'))
    mutated = text[: t.start()] + new + text[t.end() :]
    return Mutant({**files, main: mutated.encode()}, False, f"token {s!r} -> {new!r}")


MUTATORS: dict[str, Callable[[Files, str, Choices], Mutant]] = {
    "onnx": mutate_onnx,
    "openvino": mutate_openvino,
    "text_ir": mutate_text_ir,
}


def mutate(fmt: str, files: Files, main: str, c: Choices, most: int = 3) -> Mutant:
    """One to ``most`` mutations of format ``fmt`` in a row; the mutant keeps the seed's
    meaning only if each of them does."""
    mutant = Mutant(files, True, "")
    for _ in range(c.integer(1, most)):
        try:
            step = MUTATORS[fmt](mutant.files, main, c)
        except Exception:  # an earlier step left a file this mutator cannot parse
            step = mutate_file_bytes(mutant.files, c)
        what = f"{mutant.what}; {step.what}" if mutant.what else step.what
        mutant = Mutant(step.files, mutant.keeps_meaning and step.keeps_meaning, what)
    return mutant


# --------------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------------


class HangError(Exception):
    """A load or run went on past ``HANG_SECONDS``."""


@contextlib.contextmanager
def guarded(seconds: float = HANG_SECONDS, memory: int = MEMORY_CAP) -> Iterator[None]:
    """Raise ``HangError`` after ``seconds`` (main thread only), and cap the address space at its
    current size plus ``memory`` so a runaway allocation fails instead of taking the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = _address_space()
    cap = used + memory
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    capped = used > 0 and (soft == resource.RLIM_INFINITY or cap < soft)
    if capped:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))

    def on_alarm(signum: int, frame: Any) -> None:
        raise HangError(f"still going after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if capped:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space() -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * resource.getpagesize()


def load_options() -> dict[str, Any]:
    """``tl.load`` options for tight limits."""
    limits = tl.Limits(
        max_iterations=MAX_ITERATIONS,
        timeout=RUN_TIMEOUT,
        max_tensor_bytes=64 << 20,
        max_stacked_bytes=256 << 20,
    )
    return {"limits": limits}


def random_inputs(model: tl.Model, seed: int = 0) -> dict[str, Any]:
    """Small inputs for ``model``, each drawn from its name alone: symbolic dims 3, declared
    dims kept when small (else 2, which the model must refuse as an ``InputError``); ints
    (trip counts among them) in [0, 6)."""
    feeds: dict[str, Any] = {}
    for v in model.inputs:
        rng = np.random.default_rng([seed, zlib.crc32(v.name.encode())])  # order-independent
        t = v.type
        if not isinstance(t, tl.TensorType) or t.shape is None:
            feeds[v.name] = np.zeros((), np.float32)
            continue
        shape = tuple(_small_dim(d) for d in t.shape)
        dtype = t.dtype.numpy
        if dtype.kind == "f":
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[v.name] = rng.integers(0, 6, shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[v.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[v.name] = np.zeros(shape, dtype)
    return feeds


def _small_dim(d: object) -> int:
    if isinstance(d, int):
        return d if 0 <= d <= 8 else 2
    return 3


@dataclass(frozen=True)
class Outcome:
    stage: str  # "load" or "run": where a TensorloopError stopped it; "ok" when it ran
    error: TensorloopError | None
    outputs: dict[str, Any] | None


def load_and_run(
    files: Files,
    main: str,
    backends: Sequence[str | None] = (None,),
    seed: int = 0,
    guard: bool = True,
) -> Outcome:
    """Write the files to a fresh folder, ``tl.load`` the main one and run it on each backend
    (``None``: the model's own) with ``random_inputs``; a TensorloopError ends it, any other
    exception propagates. Where several backends run, their outputs must agree. ``guard``:
    under ``guarded()`` (off in the atheris harnesses, where libFuzzer's own -timeout and
    -rss_limit_mb do that job)."""
    from backend_agreement import assert_same_outputs

    with tempfile.TemporaryDirectory() as tmp, guarded() if guard else contextlib.nullcontext():
        folder = Path(tmp) / "model"
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        try:
            model = tl.load(folder / main, **load_options())
        except TensorloopError as exc:
            return Outcome("load", exc, None)
        feeds = random_inputs(model, seed)
        first: dict[str, Any] | None = None
        for backend in backends:
            try:
                got = dict(model.run(feeds, backend=backend))
            except TensorloopError as exc:
                if first is not None:
                    raise AssertionError(
                        f"{backend} raised {exc!r}, the first backend ran"
                    ) from exc
                return Outcome("run", exc, None)
            if first is None:
                first = got
            else:
                where, pair = f"{backend} vs the first backend", (str(backend), str(backends[0]))
                assert_same_outputs(got, first, where, backends=pair)
        return Outcome("ok", None, first)


def assert_same_meaning(got: Outcome, want: Outcome, what: str) -> None:
    """A mutant that keeps the seed's meaning loads, runs, and gives the seed's outputs (by
    name: reordering layers may reorder an OpenVINO model's outputs, as it does in OpenVINO)."""
    from backend_agreement import assert_same_outputs

    assert got.stage == "ok", f"{what}: the seed ran, the mutant raised {got.error!r}"
    assert got.outputs is not None and want.outputs is not None
    assert_same_outputs(dict(sorted(got.outputs.items())), dict(sorted(want.outputs.items())), what)


UNDECLARED_TYPES = (
    "Field 'type' of 'value_info' is required but missing.",
    "Field 'shape' of 'type' is required but missing.",
)
"""The checker's refusals of undeclared output types and shapes, which tensorloop infers."""


def onnx_checker_refusal(files: Files, main: str) -> str | None:
    """Why ``onnx.checker`` refuses the model, or None. Not its full check: strict shape
    inference also refuses declared dims that disagree with inference, which tensorloop reads as
    hints (docs/onnx.md), computing the real shapes itself; and not its demand that graph
    outputs declare a type and a shape, which onnxruntime does not make either (both infer)."""
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        try:
            onnx.checker.check_model(str(Path(tmp) / main))
        except Exception as exc:  # the checker's own errors, protobuf's, shape inference's
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            if first in UNDECLARED_TYPES:
                return None
            return f"{type(exc).__name__}: {first}"
    return None
