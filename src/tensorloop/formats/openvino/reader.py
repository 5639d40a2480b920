"""Parse OpenVINO IR XML (v10, v11) safely with defusedxml, and read weights from the .bin."""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path
from typing import Any

import defusedxml
import defusedxml.ElementTree as SafeET
import numpy as np

from ...errors import FormatError, ResourceLimitError, refuse_special_file
from ...limits import DEFAULT_LIMITS, Limits
from ...tensor.dtypes import DType, string_array
from ...tensor.types import UNKNOWN, Dim
from .document import Branch, Edge, Layer, Net, Port, PortMapEntry

ELEMENT_TYPES: dict[str, DType] = {
    "boolean": DType.bool, "bool": DType.bool,
    "i8": DType.int8, "i16": DType.int16, "i32": DType.int32, "i64": DType.int64,
    "u8": DType.uint8, "u16": DType.uint16, "u32": DType.uint32, "u64": DType.uint64,
    "f16": DType.float16, "bf16": DType.bfloat16, "f32": DType.float32, "f64": DType.float64,
    "string": DType.string,
    "u1": DType.bool, "f8e4m3": DType.float8e4m3fn, "f8e5m2": DType.float8e5m2,
}  # fmt: skip
PACKED_BITS = frozenset({"u1"})
"""Element types stored one bit per element, eight to a byte, the first in the high bit."""
PRECISIONS: dict[str, DType] = {
    "BOOL": DType.bool, "BOOLEAN": DType.bool,
    "I8": DType.int8, "I16": DType.int16, "I32": DType.int32, "I64": DType.int64,
    "U8": DType.uint8, "U16": DType.uint16, "U32": DType.uint32, "U64": DType.uint64,
    "FP16": DType.float16, "BF16": DType.bfloat16, "FP32": DType.float32, "FP64": DType.float64,
    "STRING": DType.string,
    "BIN": DType.bool, "F8E4M3": DType.float8e4m3fn, "F8E5M2": DType.float8e5m2,
}  # fmt: skip
SUPPORTED_VERSIONS = (10, 11)
MAX_XML_BYTES = 256 << 20
"""The largest .xml read: real IR keeps its weights in the .bin, so its XML stays megabytes."""
MAX_BODY_DEPTH = 100
"""How deep loop and branch bodies may nest in the XML (the model's Limits may allow less)."""
MAX_XML_DEPTH = 8 * MAX_BODY_DEPTH
"""How deep XML elements may nest; each body level takes a few (layers, layer, body)."""


def parse_dim(text: str, where: str) -> Dim:
    """An IR dim: an int, ``-1`` or ``?`` (dynamic), or an interval ``a..b`` (dynamic)."""
    text = text.strip()
    if text in ("-1", "?", "") or ".." in text:
        return UNKNOWN
    try:
        value = int(text)
    except ValueError:
        raise FormatError(f"{where}: bad dimension {text!r}") from None
    if value < 0:
        raise FormatError(f"{where}: bad dimension {value}")
    return value


def parse_shape(text: str, where: str) -> tuple[Dim, ...] | None:
    """A ``shape=`` attribute: comma-separated dims, ``""`` for a scalar, ``...`` for any rank."""
    text = text.strip()
    if text.startswith("["):
        text = text.strip("[]")
    if text == "...":
        return None
    if text == "":
        return ()
    return tuple(parse_dim(d, where) for d in text.split(","))


def split_names(text: str) -> tuple[str, ...]:
    """Tensor names of a port: comma-separated, with ``\\,`` escaping a comma inside a name."""
    parts = re.split(r"(?<!\\),", text)
    return tuple(p.replace("\\,", ",").strip() for p in parts if p.strip())


def read_xml(xml_path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> Net:
    """The IR document, read safely: at most MAX_XML_BYTES, no DTD or entities, elements nested
    at most MAX_XML_DEPTH deep, and at most ``limits.max_nodes`` layers (bodies included) that
    become nodes, counted before any is converted."""
    where = str(xml_path)
    refuse_special_file(xml_path, where)  # a FIFO or a device: refused, not read (it may block)
    try:
        size = Path(xml_path).stat().st_size
        if size > MAX_XML_BYTES:
            raise FormatError(
                f"{where}: the XML is {size} bytes, more than the {MAX_XML_BYTES} bytes "
                "tensorloop reads (IR keeps its weights in the .bin)"
            )
        data = Path(xml_path).read_bytes()
    except OSError as exc:
        raise FormatError(f"{where}: cannot read: {exc.strerror}") from None
    try:
        root = SafeET.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as exc:
        raise FormatError(f"{where}: refused unsafe XML ({type(exc).__name__}): {exc}") from None
    except (ET.ParseError, ValueError, LookupError) as exc:  # bytes or an encoding it can't read
        raise FormatError(f"{where}: malformed XML: {exc}") from None
    _check_depth(root, where)
    _check_layer_count(root, where, limits)
    if root.tag != "net":
        raise FormatError(f"{where}: root element is <{root.tag}>, expected <net>")
    version_text = root.get("version", "")
    if not version_text.isdigit() or int(version_text) not in SUPPORTED_VERSIONS:
        raise FormatError(
            f"{where}: IR version {version_text or '(missing)'} is not supported; "
            f"tensorloop reads versions {', '.join(map(str, SUPPORTED_VERSIONS))}"
        )
    return _read_net(root, root.get("name", "model"), int(version_text), where)


def _check_depth(root: Any, where: str) -> None:
    """Refuse elements nested deeper than MAX_XML_DEPTH (walked without recursion)."""
    stack = [(root, 1)]
    while stack:
        el, depth = stack.pop()
        if depth > MAX_XML_DEPTH:
            raise FormatError(
                f"{where}: XML elements nest {depth} deep at <{el.tag}>, more than the "
                f"{MAX_XML_DEPTH} tensorloop reads"
            )
        stack.extend((child, depth + 1) for child in el)


def _check_layer_count(root: Any, where: str, limits: Limits) -> None:
    """Refuse a document whose layers that become nodes (all but Parameter and Result, which
    become a graph's inputs and outputs), bodies included, are more than ``max_nodes``."""
    count = sum(1 for el in root.iter("layer") if el.get("type") not in ("Parameter", "Result"))
    if count > limits.max_nodes:
        raise ResourceLimitError(
            f"{where}: the IR holds {count} layers (bodies included, Parameter and Result "
            f"left out), more than the limit of {limits.max_nodes} nodes (Limits.max_nodes)"
        )


def _read_net(element: Any, name: str, version: int, where: str, depth: int = 0) -> Net:
    if depth > MAX_BODY_DEPTH:
        raise FormatError(
            f"{where}: '{name}' nests bodies {depth} deep, more than the {MAX_BODY_DEPTH} "
            "tensorloop reads"
        )
    layers_el = element.find("layers")
    if layers_el is None:
        raise FormatError(f"{where}: <{element.tag}> '{name}' has no <layers> section")
    layers: dict[str, Layer] = {}
    for layer_el in layers_el.findall("layer"):
        layer = _read_layer(layer_el, version, where, depth)
        if layer.id in layers:
            raise FormatError(f"{where}: two layers have id {layer.id}")
        layers[layer.id] = layer
    edges: list[Edge] = []
    edges_el = element.find("edges")
    for edge_el in [] if edges_el is None else edges_el.findall("edge"):
        try:
            edges.append(
                Edge(
                    edge_el.attrib["from-layer"],
                    int(edge_el.attrib["from-port"]),
                    edge_el.attrib["to-layer"],
                    int(edge_el.attrib["to-port"]),
                )
            )
        except (KeyError, ValueError) as exc:
            raise FormatError(f"{where}: malformed <edge {edge_el.attrib}>: {exc}") from None
    return Net(name, version, layers, edges)


def _read_ports(section: Any, where: str) -> list[Port]:
    ports: list[Port] = []
    for port_el in [] if section is None else section.findall("port"):
        pid = port_el.get("id", "")
        if not pid.lstrip("-").isdigit():
            raise FormatError(f"{where}: port id {pid!r} is not an integer")
        dims = tuple(parse_dim(d.text or "", f"{where} port {pid}") for d in port_el.findall("dim"))
        rank_dynamic = port_el.find("rank") is not None  # unusual, but means unknown rank
        ports.append(
            Port(
                int(pid),
                port_el.get("precision", ""),
                None if rank_dynamic else dims,
                split_names(port_el.get("names", "")),
            )
        )
    return ports


def _int_or_none(value: str | None, where: str, key: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise FormatError(f"{where}: attribute '{key}' is {value!r}, expected an integer") from None


def _read_layer(el: Any, version: int, where: str, depth: int = 0) -> Layer:
    lid, name, ltype = el.get("id"), el.get("name", ""), el.get("type")
    if lid is None or ltype is None:
        raise FormatError(f"{where}: a <layer> lacks its id or type: {dict(el.attrib)}")
    here = f"{where}: layer {lid} '{name}' ({ltype})"
    data_el = el.find("data")
    layer = Layer(
        id=lid,
        name=name,
        type=ltype,
        version=el.get("version", ""),
        data=dict(data_el.attrib) if data_el is not None else {},
        inputs=_read_ports(el.find("input"), here),
        outputs=_read_ports(el.find("output"), here),
    )
    ids = [p.id for p in (*layer.inputs, *layer.outputs)]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise FormatError(
            f"{here}: port id(s) {', '.join(map(str, twice))} appear more than once; "
            "edges name a port by its id, so each must be unique in its layer"
        )
    body_el = el.find("body")
    if body_el is not None:
        layer.body = _read_net(body_el, f"{name}/body", version, where, depth + 1)
    _read_port_map(el.find("port_map"), layer.input_map, layer.output_map, here)
    layer.then_branch = _read_branch(el, "then", name, version, where, here, depth)
    layer.else_branch = _read_branch(el, "else", name, version, where, here, depth)
    be = el.find("back_edges")
    if be is not None:
        for edge in be.findall("edge"):
            if "from-layer" not in edge.attrib or "to-layer" not in edge.attrib:
                raise FormatError(f"{here}: malformed back edge {dict(edge.attrib)}")
            layer.back_edges.append((edge.attrib["from-layer"], edge.attrib["to-layer"]))
    return layer


def _read_port_map(
    pm: Any, inputs: list[PortMapEntry], outputs: list[PortMapEntry], here: str
) -> None:
    if pm is None:
        return
    for kind, target in (("input", inputs), ("output", outputs)):
        for entry in pm.findall(kind):
            a = entry.attrib
            try:
                target.append(
                    PortMapEntry(
                        external_port_id=int(a["external_port_id"]),
                        internal_layer_id=a["internal_layer_id"],
                        axis=_int_or_none(a.get("axis"), here, "axis"),
                        start=_int_or_none(a.get("start"), here, "start"),
                        end=_int_or_none(a.get("end"), here, "end"),
                        stride=_int_or_none(a.get("stride"), here, "stride"),
                        part_size=_int_or_none(a.get("part_size"), here, "part_size"),
                        purpose=a.get("purpose"),
                    )
                )
            except (KeyError, ValueError) as exc:
                raise FormatError(f"{here}: malformed {pm.tag} {kind} {a}: {exc}") from None


def _read_branch(
    el: Any, tag: str, name: str, version: int, where: str, here: str, depth: int
) -> Branch | None:
    """An If layer's ``<then_body>`` with its ``<then_port_map>`` (or else), if it has one."""
    body_el = el.find(f"{tag}_body")
    if body_el is None:
        return None
    branch = Branch(_read_net(body_el, f"{name}/{tag}_body", version, where, depth + 1))
    _read_port_map(el.find(f"{tag}_port_map"), branch.input_map, branch.output_map, here)
    return branch


class Weights:
    """The .bin file, memory-mapped; every read is bounds- and size-checked."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else str(path)
        self._data: np.ndarray[Any, Any] | None = None
        if path is not None:
            refuse_special_file(path, str(path))  # a FIFO, a device or a folder as the .bin
        if path is not None and Path(path).is_file() and Path(path).stat().st_size > 0:
            self._data = np.memmap(path, dtype=np.uint8, mode="r")

    @property
    def size(self) -> int:
        return 0 if self._data is None else int(self._data.size)

    def read(
        self,
        offset: int,
        size: int,
        dtype: DType,
        shape: tuple[int, ...],
        where: str,
        packed: bool = False,
    ) -> np.ndarray[Any, Any]:
        """``shape`` elements of ``dtype`` at ``offset``; ``packed``: one bit each (PACKED_BITS),
        read as bools."""
        if size > 0 and self._data is None:
            raise FormatError(
                f"{where}: needs weights, but the .bin file "
                f"{self.path or '(none)'} is missing or empty"
            )
        count = math.prod(shape)  # Python ints: a hostile shape must not wrap around to 0
        if dtype is DType.string:
            return self._read_strings(offset, size, shape, where)
        expected = (count + 7) // 8 if packed else count * dtype.itemsize
        unit = "1 bit" if packed else f"{dtype.itemsize} bytes"
        # OpenVINO writes an empty constant with one byte of padding (size="1").
        if size != expected and not (count == 0 and size <= 1):
            raise FormatError(
                f"{where}: size={size} bytes does not match shape {list(shape)} x "
                f"{'u1' if packed else dtype} ({unit}) = {expected} bytes"
            )
        if offset < 0 or size < 0 or offset + size > self.size:
            raise FormatError(
                f"{where}: offset={offset} size={size} reaches byte {offset + size}, beyond the "
                f"end of {self.path} ({self.size} bytes)"
            )
        if count == 0:
            try:
                return np.zeros(shape, dtype.numpy)
            except ValueError:  # dims beside the 0 whose product numpy cannot index
                raise FormatError(f"{where}: shape {list(shape)} is too large") from None
        assert self._data is not None
        raw = np.array(self._data[offset : offset + size])  # copy out of the map
        if packed:
            return np.unpackbits(raw, count=count).astype(np.bool_).reshape(shape)
        return raw.view(dtype.numpy).reshape(shape)

    def _read_strings(
        self, offset: int, size: int, shape: tuple[int, ...], where: str
    ) -> np.ndarray[Any, Any]:
        """A string Const as OpenVINO stores it: an i32 count, count + 1 i32 byte offsets into
        the UTF-8 text that follows (the first 0), then the text."""
        count = math.prod(shape)
        head = 4 * (count + 2)
        if offset < 0 or size < head or offset + size > self.size:
            raise FormatError(
                f"{where}: offset={offset} size={size} cannot hold {count} strings (at least "
                f"{head} bytes) inside {self.path} ({self.size} bytes)"
            )
        assert self._data is not None
        raw = bytes(self._data[offset : offset + size])
        stored, *ends = np.frombuffer(raw[:head], dtype="<i4").tolist()
        text = raw[head:]
        if stored != count or ends[0] != 0 or ends != sorted(ends) or ends[-1] != len(text):
            raise FormatError(
                f"{where}: malformed string data: {stored} strings (expected {count}) at byte "
                f"offsets {ends[:8]}{'...' if len(ends) > 8 else ''} into {len(text)} bytes"
            )
        items = [text[a:b].decode("utf-8", "surrogateescape") for a, b in pairwise(ends)]
        return string_array(items, shape)
