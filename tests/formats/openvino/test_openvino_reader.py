"""The OpenVINO IR reader on hostile and malformed files: each gets a FormatError with its place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorloop as tl

HEADER = '<?xml version="1.0"?>\n'


def _net(layers: str, edges: str, version: int = 11) -> str:
    return (
        f'{HEADER}<net name="t" version="{version}"><layers>{layers}</layers>'
        f"<edges>{edges}</edges></net>"
    )


PARAM = (
    '<layer id="0" name="x" type="Parameter" version="opset1">'
    '<data shape="2,3" element_type="f32"/><output><port id="0" precision="FP32" names="x">'
    "<dim>2</dim><dim>3</dim></port></output></layer>"
)
CONST = (
    '<layer id="1" name="c" type="Const" version="opset1">'
    '<data element_type="f32" shape="2,3" offset="{offset}" size="{size}"/>'
    '<output><port id="0" precision="FP32" names="c"><dim>2</dim><dim>3</dim></port>'
    "</output></layer>"
)
RESULT = (
    '<layer id="{id}" name="out{id}" type="Result" version="opset1"><input>'
    '<port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input></layer>'
)


def _write(tmp_path: Path, xml: str, weights: bytes | None = None) -> Path:
    path = tmp_path / "m.xml"
    path.write_text(xml)
    if weights is not None:
        (tmp_path / "m.bin").write_bytes(weights)
    return path


def test_parameters_consts_and_results(tmp_path: Path) -> None:
    data = np.arange(6, dtype=np.float32)
    xml = _net(
        PARAM + CONST.format(offset=0, size=24) + RESULT.format(id=2) + RESULT.format(id=3),
        '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
        '<edge from-layer="1" from-port="0" to-layer="3" to-port="0"/>',
    )
    model = tl.load(_write(tmp_path, xml, data.tobytes()))
    assert model.input_names == ["x"] and model.output_names == ["x", "c"]
    x = np.ones((2, 3), np.float32)
    out = list(model.run({"x": x}).values())
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], data.reshape(2, 3))


@pytest.mark.parametrize(
    ("offset", "size", "message"),
    [(8, 24, r"offset=8 size=24 reaches byte 32, beyond the end of .*m\.bin \(24 bytes\)"),
     (0, 20, r"size=20 bytes does not match shape \[2, 3\] x f32 \(4 bytes\) = 24 bytes"),
     (-4, 24, "beyond the end|offset=-4")],
)  # fmt: skip
def test_weights_are_bounds_checked(tmp_path: Path, offset: int, size: int, message: str) -> None:
    xml = _net(
        CONST.format(offset=offset, size=size) + RESULT.format(id=2),
        '<edge from-layer="1" from-port="0" to-layer="2" to-port="0"/>',
    )
    path = _write(tmp_path, xml, np.zeros(6, np.float32).tobytes())
    with pytest.raises(tl.FormatError, match=r"m\.xml: layer 1 'c' \(Const\): " + message):
        tl.load(path)


def test_missing_bin_is_named(tmp_path: Path) -> None:
    xml = _net(
        CONST.format(offset=0, size=24) + RESULT.format(id=2),
        '<edge from-layer="1" from-port="0" to-layer="2" to-port="0"/>',
    )
    with pytest.raises(tl.FormatError, match=r"needs weights, but the \.bin file .*m\.bin"):
        tl.load(_write(tmp_path, xml))


def test_entities_and_doctypes_are_refused(tmp_path: Path) -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY a "aaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><net name="&b;" version="11"></net>'
    )
    with pytest.raises(tl.FormatError, match=r"refused unsafe XML"):
        tl.load(_write(tmp_path, bomb))
    external = (
        '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        '<net name="&e;" version="11"></net>'
    )
    with pytest.raises(tl.FormatError, match=r"refused unsafe XML"):
        tl.load(_write(tmp_path, external))


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<net version='11'><layers>", "malformed XML"),
        ("<model/>", "root element is <model>, expected <net>"),
        ("<net version='7'><layers/></net>", "IR version 7 is not supported"),
        ("<net version='11'></net>", "has no <layers> section"),
    ],
)
def test_malformed_documents(tmp_path: Path, xml: str, message: str) -> None:
    with pytest.raises(tl.FormatError, match=message):
        tl.load(_write(tmp_path, HEADER + xml))


def test_unknown_layer_types_are_all_listed(tmp_path: Path) -> None:
    layers = PARAM + "".join(
        f'<layer id="{i}" name="n{i}" type="{t}" version="opset1"><input><port id="0" '
        f'precision="FP32"><dim>2</dim><dim>3</dim></port></input><output><port id="1" '
        f'precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>'
        for i, t in ((1, "Frobnicate"), (2, "Zorble"))
    )
    with pytest.raises(
        tl.UnsupportedOpError,
        match=r"unsupported layer types: Frobnicate \(layer 1 'n1'\); "
        r"Zorble \(layer 2 'n2'\)",
    ) as caught:
        tl.load(_write(tmp_path, _net(layers, "")))
    assert isinstance(caught.value, tl.FormatError)  # the file is one tensorloop cannot read


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ('<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/>', "missing to-layer 9"),
        (
            '<edge from-layer="0" from-port="5" to-layer="2" to-port="0"/>',
            r"layer 0 'x' \(Parameter\) has no output port 5",
        ),
        (
            '<edge from-layer="0" from-port="0" to-layer="2" to-port="3"/>',
            r"layer 2 'out2' \(Result\) has no input port 3",
        ),
        (
            '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
            '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>',
            "two incoming edges",
        ),
        ("", r"layer 2 'out2' \(Result\): input port #0 is required but not connected"),
    ],
)
def test_bad_edges(tmp_path: Path, edges: str, message: str) -> None:
    with pytest.raises(tl.FormatError, match=message):
        tl.load(_write(tmp_path, _net(PARAM + RESULT.format(id=2), edges)))


def test_bad_attribute_names_layer_and_attribute(tmp_path: Path) -> None:
    xml = _net(
        PARAM.replace('element_type="f32"', 'element_type="f33"') + RESULT.format(id=2),
        '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>',
    )
    with pytest.raises(
        tl.FormatError,
        match=r"layer 0 'x' \(Parameter\): attribute "
        r"'element_type' is 'f33': unsupported element type",
    ):
        tl.load(_write(tmp_path, xml))


def test_ir_v10_and_unknown_rt_info(tmp_path: Path) -> None:
    rt = '<rt_info><attribute name="fused_names" version="0" value="x"/></rt_info>'
    layers = PARAM.replace("</output></layer>", f"</output>{rt}</layer>") + RESULT.format(id=2)
    edge = '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
    xml = _net(layers, edge, version=10).replace("</net>", f"{rt}</net>")
    model = tl.load(_write(tmp_path, xml))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(model.run({"x": x})["x"], x)
