"""The tables of OpenVINO opset-16 layer types and of their modes in docs/openvino.md: which ones
tensorloop reads, which the OpenVINO tests compare with the CPU plugin, and which they write back
as IR that the plugin runs alike (import -> export -> import).

    .venv/bin/python scripts/openvino_coverage.py            # run the tests, print the table
    .venv/bin/python scripts/openvino_coverage.py --write    # and replace it in docs/openvino.md

The tests log the layer types of every IR they check (``openvino_layer_checks.run_path`` and
``record_layer_types``, under ``TENSORLOOP_OV_COVERAGE``); the table is made from that log, so a
type counts as compared or written only where a passing test did it. The layer types are those of
``openvino.opset16``'s builder functions, spelled as OpenVINO's IR spells them (``SPELLINGS``
lists the names that are not the function's name in CamelCase).

A layer's modes are the values of its attributes that choose an algorithm (``MODES``, per the
opset-16 spec; an axis of several attributes counts their combinations); the log holds each logged
layer's attributes, so a mode counts as read where a test loaded an IR holding it, compared and
written as its layer type does.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import openvino.opset16 as opset16

from tensorloop.formats.openvino.convert import known_layer_types

ROOT = Path(__file__).resolve().parent.parent
COVERAGE_LOG = "TENSORLOOP_OV_COVERAGE"  # as in tests/formats/openvino/openvino_layer_checks.py
DOC = ROOT / "docs" / "openvino.md"
BEGIN, END = "<!-- opset16 table begins -->", "<!-- opset16 table ends -->"
MODES_BEGIN, MODES_END = "<!-- opset16 modes begins -->", "<!-- opset16 modes ends -->"
KINDS = ("read", "compared", "written")

BOOL = ("false", "true")
RNN_DIRECTIONS = ("forward", "reverse", "bidirectional")
NMS_SORTS = ("classid", "score", "none")
POOL_ROUNDING = ("floor", "ceil", "ceil_torch")
Axis = tuple[tuple[str, tuple[str, ...]], ...]
"""One mode axis: attributes and their values; a mode is one value of each."""


def _axes(*groups: dict[str, tuple[str, ...]]) -> list[Axis]:
    return [tuple(g.items()) for g in groups]


MODES: dict[str, list[Axis]] = {
    "AvgPool": _axes({"rounding_type": POOL_ROUNDING}, {"exclude-pad": BOOL}),
    "BinaryConvolution": _axes({"mode": ("xnor-popcount",)}),
    "Broadcast": _axes({"mode": ("numpy", "explicit", "bidirectional")}),
    "Bucketize": _axes({"with_right_bound": BOOL}),
    "CTCGreedyDecoder": _axes({"ctc_merge_repeated": BOOL}),
    "CTCGreedyDecoderSeqLen": _axes({"merge_repeated": BOOL}),
    "CTCLoss": _axes(
        {"preprocess_collapse_repeated": BOOL}, {"ctc_merge_repeated": BOOL}, {"unique": BOOL}
    ),
    "CumSum": _axes({"exclusive": BOOL, "reverse": BOOL}),
    "DeformableConvolution": _axes({"bilinear_interpolation_pad": BOOL}),
    "DeformablePSROIPooling": _axes({"mode": ("bilinear_deformable",)}),
    "DepthToSpace": _axes({"mode": ("blocks_first", "depth_first")}),
    "DetectionOutput": _axes(
        {"code_type": ("caffe.PriorBoxParameter.CORNER", "caffe.PriorBoxParameter.CENTER_SIZE")},
        {"share_location": BOOL},
        {"variance_encoded_in_target": BOOL},
        {"normalized": BOOL},
    ),
    "EmbeddingBagOffsets": _axes({"reduction": ("sum", "mean")}),
    "EmbeddingBagPacked": _axes({"reduction": ("sum", "mean")}),
    "ExtractImagePatches": _axes({"auto_pad": ("valid", "same_upper", "same_lower")}),
    "FakeConvert": _axes({"destination_type": ("f8e4m3", "f8e5m2")}),
    "Gelu": _axes({"approximation_mode": ("erf", "tanh")}),
    "GenerateProposals": _axes({"normalized": BOOL}),
    "GridSample": _axes(
        {"mode": ("bilinear", "bicubic", "nearest")},
        {"padding_mode": ("zeros", "border", "reflection")},
        {"align_corners": BOOL},
    ),
    "GRUCell": _axes({"linear_before_reset": BOOL}),
    "GRUSequence": _axes({"direction": RNN_DIRECTIONS}, {"linear_before_reset": BOOL}),
    "Interpolate": _axes(
        {
            "mode": (
                "nearest",
                "linear",
                "linear_onnx",
                "cubic",
                "bilinear_pillow",
                "bicubic_pillow",
            ),
            "antialias": BOOL,
        },
        {
            "coordinate_transformation_mode": (
                "half_pixel",
                "pytorch_half_pixel",
                "asymmetric",
                "tf_half_pixel_for_nn",
                "align_corners",
            )
        },
        {"nearest_mode": ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")},
        {"shape_calculation_mode": ("sizes", "scales")},
    ),
    "Inverse": _axes({"adjoint": BOOL}),
    "IsInf": _axes({"detect_negative": BOOL, "detect_positive": BOOL}),
    "LSTMSequence": _axes({"direction": RNN_DIRECTIONS}),
    "MatrixNms": _axes(
        {"decay_function": ("linear", "gaussian")},
        {"sort_result_type": NMS_SORTS},
        {"sort_result_across_batch": BOOL},
        {"normalized": BOOL},
    ),
    "MaxPool": _axes({"rounding_type": POOL_ROUNDING}),
    "MulticlassNms": _axes(
        {"sort_result_type": NMS_SORTS}, {"sort_result_across_batch": BOOL}, {"normalized": BOOL}
    ),
    "Multinomial": _axes({"with_replacement": BOOL}, {"log_probs": BOOL}),
    "MVN": _axes({"eps_mode": ("inside_sqrt", "outside_sqrt")}, {"normalize_variance": BOOL}),
    "NMSRotated": _axes({"clockwise": BOOL}, {"sort_result_descending": BOOL}),
    "NonMaxSuppression": _axes(
        {"box_encoding": ("corner", "center")}, {"sort_result_descending": BOOL}
    ),
    "NormalizeL2": _axes({"eps_mode": ("add", "max")}),
    "OneHot": _axes({"negative_indices_mode": ("ignore_negative", "normalize")}),
    "Pad": _axes({"pad_mode": ("constant", "edge", "reflect", "symmetric")}),
    "PriorBox": _axes(
        {"clip": BOOL},
        {"flip": BOOL},
        {"scale_all_sizes": BOOL},
        {"min_max_aspect_ratios_order": BOOL},
    ),
    "PriorBoxClustered": _axes({"clip": BOOL}),
    "Proposal": _axes(
        {"framework": ("", "tensorflow")},
        {"clip_before_nms": BOOL},
        {"clip_after_nms": BOOL},
        {"normalize": BOOL},
    ),
    "PSROIPooling": _axes({"mode": ("average", "bilinear")}),
    "RandomUniform": _axes({"alignment": ("tensorflow", "pytorch")}),
    "RegionYolo": _axes({"do_softmax": BOOL}),
    "RNNSequence": _axes({"direction": RNN_DIRECTIONS}),
    "ROIAlign": _axes(
        {"mode": ("avg", "max")},
        {"aligned_mode": ("asymmetric", "half_pixel_for_nn", "half_pixel")},
    ),
    "ROIAlignRotated": _axes({"clockwise_mode": BOOL}),
    "ROIPooling": _axes({"method": ("max", "bilinear")}),
    "Round": _axes({"mode": ("half_to_even", "half_away_from_zero")}),
    "ScaledDotProductAttention": _axes({"causal": BOOL}),
    "ScatterElementsUpdate": _axes(
        {"reduction": ("none", "sum", "prod", "min", "max", "mean")}, {"use_init_val": BOOL}
    ),
    "ScatterNDUpdate": _axes({"reduction": ("none", "sum", "sub", "prod", "min", "max")}),
    "SearchSorted": _axes({"right_mode": BOOL}),
    "SegmentMax": _axes({"fill_mode": ("zero", "lowest")}),
    "SpaceToDepth": _axes({"mode": ("blocks_first", "depth_first")}),
    "STFT": _axes({"transpose_frames": BOOL}),
    "ISTFT": _axes({"center": BOOL}, {"normalized": BOOL}),
    "TopK": _axes({"mode": ("max", "min")}, {"sort": ("value", "index", "none")}, {"stable": BOOL}),
    "Unique": _axes({"sorted": BOOL}),
}
"""Each layer type's mode axes: the attributes of its opset-16 version that choose an algorithm
(not shapes, output element types or layouts), with every value the spec allows, spelled as
OpenVINO's IR writes them (compared without case)."""

SPELLINGS = {
    "abs": "Abs", "absolute": None, "ceil": "Ceiling", "ceiling": None, "cumsum": None,
    "if_op": "If",
    "relu": "ReLU", "prelu": "PReLU", "hsigmoid": "HSigmoid", "hswish": "HSwish",
    "lrn": "LRN", "mvn": "MVN", "grn": "GRN", "dft": "DFT", "idft": "IDFT", "rdft": "RDFT",
    "irdft": "IRDFT", "stft": "STFT", "istft": "ISTFT", "topk": "TopK", "matmul": "MatMul",
    "softmax": "SoftMax", "softplus": "SoftPlus", "softsign": "SoftSign", "cum_sum": "CumSum",
    "avg_pool": "AvgPool", "max_pool": "MaxPool", "lstm_cell": "LSTMCell",
    "lstm_sequence": "LSTMSequence", "gru_cell": "GRUCell", "gru_sequence": "GRUSequence",
    "rnn_cell": "RNNCell", "rnn_sequence": "RNNSequence", "ctc_loss": "CTCLoss",
    "ctc_greedy_decoder": "CTCGreedyDecoder", "ctc_greedy_decoder_seq_len":
    "CTCGreedyDecoderSeqLen", "nms_rotated": "NMSRotated", "roi_align": "ROIAlign",
    "roi_align_rotated": "ROIAlignRotated", "roi_pooling": "ROIPooling",
    "psroi_pooling": "PSROIPooling", "deformable_psroi_pooling": "DeformablePSROIPooling",
    "i420_to_bgr": "I420toBGR", "i420_to_rgb": "I420toRGB", "nv12_to_bgr": "NV12toBGR",
    "nv12_to_rgb": "NV12toRGB", "gather_nd": "GatherND", "scatter_nd_update": "ScatterNDUpdate",
    "reduce_l1": "ReduceL1", "reduce_l2": "ReduceL2", "normalize_l2": "NormalizeL2",
    "embedding_bag_offsets_sum": "EmbeddingBagOffsetsSum",
    "embedding_bag_packed_sum": "EmbeddingBagPackedSum", "non_zero": "NonZero",
    "one_hot": "OneHot", "region_yolo": "RegionYolo", "reorg_yolo": "ReorgYolo",
    "log_softmax": "LogSoftmax", "constant": "Const", "parameter": "Parameter",
    "result": "Result", "tensor_iterator": "TensorIterator", "col2im": "Col2Im",
    "is_nan": "IsNaN",
}  # fmt: skip
"""Builder functions whose layer type is not their name in CamelCase (None: an alias)."""


def layer_types() -> list[str]:
    found = set()
    for fn in dir(opset16):
        if fn.startswith("_") or not callable(getattr(opset16, fn)):
            continue
        name = SPELLINGS.get(fn, "".join(p.capitalize() for p in fn.split("_")))
        if name is not None:
            found.add(name)
    return sorted(found)


def logged_types(log: Path) -> dict[str, set[str]]:
    """Run the OpenVINO tests with their layer-type log at ``log``: kind -> layer types."""
    env = {**os.environ, COVERAGE_LOG: str(log)}
    tests = str(ROOT / "tests" / "formats" / "openvino")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests], env=env)
    return read_log(log)


def read_log(log: Path) -> dict[str, set[str]]:
    """kind -> the layer types a test run logged under it."""
    kinds: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        kinds[entry["kind"]].update(entry["types"])
    return kinds


Mode = tuple[str, str, str]
"""(layer type, attributes, values): ``("Interpolate", "mode, antialias", "linear, true")``."""


def every_mode() -> list[Mode]:
    """Every mode of ``MODES``, in table order."""
    out = []
    for layer_type in sorted(MODES, key=str.lower):
        for axis in MODES[layer_type]:
            names = ", ".join(a for a, _ in axis)
            for values in itertools.product(*(v for _, v in axis)):
                out.append((layer_type, names, ", ".join(values)))
    return out


def modes_of(layer_type: str, attrs: dict[str, str]) -> set[Mode]:
    """The modes one layer of the IR is in: per axis, its attributes' values (an axis whose
    attributes the layer's version lacks gives none)."""
    found = set()
    for axis in MODES.get(layer_type, []):
        if not all(a in attrs for a, _ in axis):
            continue
        values = []
        for attr, allowed in axis:
            given = attrs[attr].strip().lower()
            given = {"1": "true", "0": "false"}.get(given, given) if allowed == BOOL else given
            values.append(next((v for v in allowed if v.lower() == given), given))
        found.add((layer_type, ", ".join(a for a, _ in axis), ", ".join(values)))
    return found


def read_mode_log(log: Path) -> dict[str, set[Mode]]:
    """kind -> the modes of the layers a test run logged under it."""
    kinds: dict[str, set[Mode]] = {kind: set() for kind in KINDS}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        for layer_type, attrs in entry.get("layers", []):
            kinds[entry["kind"]].update(modes_of(layer_type, attrs))
    return kinds


def mode_table(kinds: dict[str, set[Mode]]) -> str:
    modes = every_mode()
    counts = [sum(m in kinds[k] for m in modes) for k in KINDS]
    lines = [
        MODES_BEGIN,
        "",
        f"Of the {len(modes)} modes of the layer types above that have them (the values of the "
        "attributes that choose an algorithm; an axis of several attributes counts their "
        f"combinations), {counts[0]} are read in the tests, {counts[1]} are compared with the "
        f"CPU plugin, and {counts[2]} are also written back as IR that the plugin runs alike "
        "(generated by `scripts/openvino_coverage.py`, from the attributes of the IR the passing "
        "tests check).",
        "",
        "| layer type | attributes | mode | read | compared with the CPU plugin | written back |",
        "|---|---|---|---|---|---|",
    ]
    for mode in modes:
        marks = ["yes" if mode in kinds[k] else "no" for k in KINDS]
        shown = ", ".join(f"`{v}`" if v else '`""`' for v in mode[2].split(", "))
        lines.append(f"| {mode[0]} | {mode[1]} | {shown} | {' | '.join(marks)} |")
    lines += ["", MODES_END]
    return "\n".join(lines)


def replace_section(doc: str, begin: str, end: str, text: str, heading: str) -> str:
    if begin in doc:
        return doc[: doc.index(begin)] + text + doc[doc.index(end) + len(end) :]
    return doc.rstrip("\n") + f"\n\n## {heading}\n\n" + text + "\n"


def table(kinds: dict[str, set[str]]) -> str:
    read = set(known_layer_types())
    types = layer_types()
    compared = {t for t in types if t in read and t in kinds["compared"]}
    written = {t for t in compared if t in kinds["written"]}
    lines = [
        BEGIN,
        "",
        f"Of the {len(types)} layer types of opset 16, {sum(t in read for t in types)} are read, "
        f"{len(compared)} are compared with the CPU plugin in the tests, and {len(written)} are "
        "also written back as IR that the plugin runs alike and tensorloop reads back alike "
        "(generated by `scripts/openvino_coverage.py`, from what the passing tests check).",
        "",
        "| layer type | read | compared with the CPU plugin | written back |",
        "|---|---|---|---|",
    ]
    for t in types:
        marks = ["yes" if t in group else "no" for group in (read, compared, written)]
        lines.append(f"| {t} | {' | '.join(marks)} |")
    lines += ["", END]
    return "\n".join(lines)


@click.command()
@click.option("--write", is_flag=True, help="Replace the table in docs/openvino.md.")
@click.option(
    "--from-log",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=f"Use the layer-type log of a test run made with {COVERAGE_LOG}=FILE instead of running "
    "the OpenVINO tests.",
)
def main(write: bool, from_log: Path | None) -> None:
    if from_log is not None:
        text, modes = table(read_log(from_log)), mode_table(read_mode_log(from_log))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "layers.jsonl"
            text = table(logged_types(log))
            modes = mode_table(read_mode_log(log))
    if not write:
        click.echo(text + "\n\n" + modes)
        return
    doc = DOC.read_text(encoding="utf-8")
    doc = replace_section(doc, BEGIN, END, text, "Every layer type of opset 16")
    doc = replace_section(doc, MODES_BEGIN, MODES_END, modes, "Every mode of opset 16")
    DOC.write_text(doc, encoding="utf-8")


if __name__ == "__main__":
    main()
