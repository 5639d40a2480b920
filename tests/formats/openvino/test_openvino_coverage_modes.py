"""scripts/openvino_coverage.py's modes: every attribute and value it lists is one OpenVINO's
opset-16 builders accept for that layer type (so the list cannot drift from OpenVINO), and the
mode table counts what the layer-test log holds."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("openvino")
from openvino.utils.node_factory import NodeFactory

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "openvino_coverage.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openvino_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("openvino_coverage", module)
    spec.loader.exec_module(module)
    return module


COVERAGE = _script()
FACTORY = NodeFactory("opset16")


def _settable(layer_type: str, attr: str, value: str) -> Any:
    """The attribute of a fresh opset-16 ``layer_type`` after setting ``attr`` to ``value``, as
    the builders take it (a bool for true/false; an enum under its name in either case)."""
    node = FACTORY.create(layer_type)
    assert attr in node.get_attributes(), (layer_type, attr, sorted(node.get_attributes()))
    default = node.get_attributes()[attr]
    if isinstance(default, bool):
        assert value in COVERAGE.BOOL, (layer_type, attr, value)
        node.set_attribute(attr, value == "true")
    else:
        try:
            node.set_attribute(attr, value)
        except RuntimeError:
            node.set_attribute(attr, value.upper())  # Gelu's and MVN's enums are upper case
    return node.get_attributes()[attr]


@pytest.mark.parametrize("layer_type", sorted(COVERAGE.MODES))
def test_every_listed_mode_is_one_the_opset16_builders_accept(layer_type: str) -> None:
    assert layer_type in COVERAGE.layer_types()
    for axis in COVERAGE.MODES[layer_type]:
        for attr, values in axis:
            assert len(set(values)) == len(values) > 0, (layer_type, attr)
            for value in values:
                got = _settable(layer_type, attr, value)
                assert str(got).lower() == value.lower(), (layer_type, attr, value, got)


def test_a_value_outside_an_enum_is_refused() -> None:
    """The check above can tell: an enum attribute refuses a value that is not among its names."""
    with pytest.raises(RuntimeError, match="not a member of enum"):
        _settable("Interpolate", "mode", "bilinear_pillows")


def test_the_mode_table_counts_what_the_log_holds(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    interpolate = {"mode": "linear", "antialias": "true", "nearest_mode": "floor"}
    entries = [
        {"kind": "read", "types": ["Interpolate"], "layers": [["Interpolate", interpolate]]},
        {"kind": "compared", "types": ["Pad"], "layers": [["Pad", {"pad_mode": "SYMMETRIC"}]]},
        {"kind": "written", "types": ["Pad"], "layers": [["Pad", {"pad_mode": "symmetric"}]]},
        {"kind": "read", "types": ["TopK"], "layers": [["TopK", {"mode": "max", "sort": "none"}]]},
        {"kind": "read", "types": ["Gelu"], "layers": [["Gelu", {"approximation_mode": "ERF"}]]},
        {"kind": "read", "types": ["CumSum"], "layers": [["CumSum", {"exclusive": "1"}]]},
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    kinds = COVERAGE.read_mode_log(log)
    assert kinds["read"] == {
        ("Interpolate", "mode, antialias", "linear, true"),
        ("Interpolate", "nearest_mode", "floor"),
        ("TopK", "mode", "max"),
        ("TopK", "sort", "none"),
        ("Gelu", "approximation_mode", "erf"),
    }  # CumSum's axis needs both exclusive and reverse
    assert kinds["compared"] == kinds["written"] == {("Pad", "pad_mode", "symmetric")}
    table = COVERAGE.mode_table(kinds).splitlines()
    assert table[0] == COVERAGE.MODES_BEGIN and table[-1] == COVERAGE.MODES_END
    assert "| Interpolate | mode, antialias | `linear`, `true` | yes | no | no |" in table
    assert "| Pad | pad_mode | `symmetric` | no | yes | yes |" in table
    assert '| Proposal | framework | `""` | no | no | no |' in table
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| layer")]
    assert len(rows) == len(COVERAGE.every_mode())
    interpolate_modes = [m for m in COVERAGE.every_mode() if m[1] == "mode, antialias"]
    assert len(interpolate_modes) == 6 * 2
