"""The OpenVINO op families: the one list of reading and writing modules, and the writer's table.

Each family reads a set of OpenVINO layer types as core ops (``read_<family>.py``, whose
``@converter`` functions register when it is imported) and writes the matching core ops back as
layers (``write_<family>.py``, whose ``EMITTERS`` table maps each core op to its emitter)."""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

from ...errors import FormatError
from . import (
    read_control,
    read_ctc,
    read_detection,
    read_elementwise,
    read_image,
    read_indexing,
    read_linalg,
    read_nms,
    read_nn,
    read_quant,
    read_random,
    read_reduce,
    read_rnn,
    read_shape,
    read_signal,
    read_sparse,
    read_state,
    read_strings,
    write_control,
    write_detection,
    write_elementwise,
    write_image,
    write_indexing,
    write_linalg,
    write_nms,
    write_nn,
    write_quant,
    write_random,
    write_reduce,
    write_shape,
    write_signal,
    write_sparse,
    write_state,
    write_strings,
)
from .write_net import Emitter


class Family(NamedTuple):
    """An op family's reading and writing modules (None where it is not written back)."""

    name: str
    reading: ModuleType
    writing: ModuleType | None


FAMILIES: tuple[Family, ...] = (
    Family("elementwise", read_elementwise, write_elementwise),
    Family("reduce", read_reduce, write_reduce),
    Family("linalg", read_linalg, write_linalg),
    Family("shape", read_shape, write_shape),
    Family("indexing", read_indexing, write_indexing),
    Family("quant", read_quant, write_quant),
    Family("nn", read_nn, write_nn),
    Family("image", read_image, write_image),
    Family("signal", read_signal, write_signal),
    Family("detection", read_detection, write_detection),
    Family("nms", read_nms, write_nms),
    Family("strings", read_strings, write_strings),
    Family("sparse", read_sparse, write_sparse),
    Family("state", read_state, write_state),
    Family("control", read_control, write_control),
    Family("random", read_random, write_random),
    Family("rnn", read_rnn, None),
    Family("ctc", read_ctc, None),
)
"""Every op family, reading and writing side by side."""


def _emitters() -> dict[str, Emitter]:
    table: dict[str, Emitter] = {}
    for family in FAMILIES:
        written: dict[str, Emitter] = {} if family.writing is None else family.writing.EMITTERS
        for op, emit in written.items():
            if op in table:
                raise FormatError(f"core op '{op}' has two OpenVINO emitters")
            table[op] = emit
    return table


EMITTERS: dict[str, Emitter] = _emitters()
"""How each core op is written, gathered from the families' ``EMITTERS``."""
