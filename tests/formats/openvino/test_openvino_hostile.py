"""Hostile and broken OpenVINO IR: each refused with a FormatError naming the file, the layer, the
port and what was expected, never a Python-internal error or garbage (issue 14).

The files are the hostile corpus's (tests/data/hostile, scripts/make_hostile_corpus.py); these
tests pin the messages and the run-time checks on every numeric backend.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.errors import ExecutionError, FormatError, ResourceLimitError
from tensorloop.formats.openvino import reader
from tensorloop.limits import node_count

CORPUS = Path(__file__).parents[2] / "data" / "hostile"


def _load_error(name: str) -> str:
    with pytest.raises(FormatError) as info:
        tl.load(CORPUS / name)
    message = str(info.value)
    assert name in message
    return message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ov_ti_part_size_zero.xml", "port_map input 0: part_size=0"),
        ("ov_ti_stride_zero.xml", "stride=0 must be"),
        ("ov_ti_axis_out_of_range.xml", "axis 5"),
        ("ov_ti_start_beyond_axis.xml", "start=9 is outside axis 0 of length 4"),
        ("ov_ti_end_beyond_axis.xml", "end=9 is outside axis 0 of length 4"),
        ("ov_ti_unequal_lengths.xml", "port 0: 4, port 1: 5"),
        ("ov_ti_back_edge_not_result.xml", "must join a Result to a Parameter"),
        ("ov_ti_back_edge_not_parameter.xml", "must join a Result to a Parameter"),
        ("ov_ti_port_map_missing_port.xml", "external_port_id=42 names no input port"),
        ("ov_loop_no_condition.xml", "purpose='execution_condition'"),
        ("ov_version_future.xml", "IR version 99 is not supported"),
        ("ov_deep_xml.xml", "XML elements nest"),
        ("ov_deep_bodies.xml", "XML elements nest"),
        ("ov_no_result.xml", "has no Result layer"),
        ("ov_bin_offset_beyond.xml", "beyond the end of"),
        ("ov_bin_size_mismatch.xml", "does not match shape [2, 3]"),
    ],
)
def test_refused_with_a_message_naming_the_place(name: str, expected: str) -> None:
    message = _load_error(name)
    assert expected in message
    if name.startswith("ov_ti_"):
        assert "layer 3 'tensoriterator3' (TensorIterator)" in message


def test_deep_xml_is_refused_quickly() -> None:
    start = time.perf_counter()
    _load_error("ov_deep_bodies.xml")
    assert time.perf_counter() - start < 2.0


def test_body_depth_is_bounded_without_recursion_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_XML_DEPTH", 10**6)
    monkeypatch.setattr(reader, "MAX_BODY_DEPTH", 50)
    assert "nests bodies 51 deep" in _load_error("ov_deep_bodies.xml")


def test_huge_xml_is_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_XML_BYTES", 100)
    assert "more than the 100 bytes" in _load_error("ov_ok_relu.xml")


def test_undecodable_bytes_are_malformed_xml(tmp_path: Path) -> None:
    path = tmp_path / "m.xml"
    path.write_bytes(b'<?xml version="1.0" encoding="no-such-codec"?><net version="11"/>')
    with pytest.raises(FormatError, match=r"m\.xml: malformed XML"):
        tl.load(path)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_sliced_inputs_of_unequal_length_fail_at_run(backend: str) -> None:
    model = tl.load(CORPUS / "ov_ti_unequal_lengths_at_run.xml")
    x, y, h = (np.ones(s, np.float32) for s in ([4, 3], [5, 3], [1, 3]))
    with pytest.raises(ExecutionError, match=r"sliced inputs on ports 0, 1 .* one length"):
        model.run([x, y, h], backend=backend)
    out = model.run([x, x, h], backend=backend)  # equal lengths run as before
    np.testing.assert_allclose(out[model.output_names[1]], h + np.cumsum(x + x, axis=0))


def test_zero_trip_loop_returns_its_initial_values() -> None:
    """OpenVINO leaves a zero-trip Loop's outputs uninitialised; the spec's answer is the
    initial carried value."""
    model = tl.load(CORPUS / "ov_ok_loop_zero_trip.xml")
    x = np.array([1.5, -2.0], np.float32)
    (out,) = model.run([x]).values()
    np.testing.assert_array_equal(out, x)


def test_zero_trip_concatenation_is_empty(tmp_path: Path) -> None:
    """A TensorIterator over an empty axis concatenates nothing: shape [0, 3], not garbage."""
    model = tl.load(CORPUS / "ov_ok_tensor_iterator_dynamic.xml")
    empty = np.zeros((0, 3), np.float32)
    h = np.full((1, 3), 7.0, np.float32)
    final, stacked = model.run([empty, empty, h]).values()
    np.testing.assert_array_equal(final, h)
    assert stacked.shape == (0, 3)


def test_layers_past_max_nodes_are_refused_before_any_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Limits.max_nodes counts the layers that become nodes (all but Parameter and Result),
    bodies included, once the XML is parsed: no layer is read or converted past it."""
    consts = "".join(
        f'<layer id="{i}" name="c{i}" type="Const" version="opset1"/>' for i in range(3000)
    )
    path = tmp_path / "many.xml"
    path.write_text(
        f'<?xml version="1.0"?><net name="many" version="11"><layers>{consts}</layers></net>'
    )

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a layer was read")

    monkeypatch.setattr(reader, "_read_layer", never)
    with pytest.raises(ResourceLimitError) as info:
        tl.load(path, limits=tl.Limits(max_nodes=2999))
    assert "many.xml: the IR holds 3000 layers" in str(info.value)
    assert "more than the limit of 2999 nodes (Limits.max_nodes)" in str(info.value)
    monkeypatch.undo()
    loop = CORPUS / "ov_ok_loop.xml"
    kinds = [el.get("type") for el in ET.parse(loop).iter("layer")]
    layers = sum(kind not in ("Parameter", "Result") for kind in kinds)
    with pytest.raises(ResourceLimitError, match=f"holds {layers} layers"):
        tl.load(loop, limits=tl.Limits(max_nodes=layers - 1))
    nodes = node_count(tl.load(loop).graph)  # converters may make more nodes than layers
    assert tl.load(loop, limits=tl.Limits(max_nodes=nodes))
    with pytest.raises(ResourceLimitError, match=r"Limits\.max_nodes"):
        tl.load(loop, limits=tl.Limits(max_nodes=nodes - 1))
