"""ONNX converters: SequenceMap lowered to the canonical Loop; the other sequence ops are core."""

from __future__ import annotations

import numpy as np

from ...ir.emit import Emitter
from ...ir.graph import Value
from ...ir.loop import ITERATION_TYPE, Loop
from ...tensor.types import SequenceType, TensorType, Type
from .convert import NodeContext, converter


@converter("SequenceMap", since=1)
def _sequence_map(ctx: NodeContext) -> list[Value]:
    """SequenceMap as a Loop over the first sequence's length. Sequence inputs are invariants
    read with SequenceAt(iteration) in the body, tensor inputs invariants passed as they are;
    each output is a carried sequence, initially empty, that the body SequenceInserts into."""
    inputs = [ctx.input(i, "input_sequence" if i == 0 else "") for i in range(len(ctx.inputs))]
    if not isinstance(inputs[0].type, SequenceType):
        raise ctx.error(f"input #0 (input_sequence) must be a sequence, got {inputs[0].type}")
    outer: list[Type] = [v.type for v in inputs]
    body, captured = ctx.subgraph(
        "body", [t.element if isinstance(t, SequenceType) else t for t in outer]
    )
    results = list(body.outputs)
    for j, r in enumerate(results):
        if not isinstance(r.type, TensorType):
            raise ctx.error(f"body output #{j} must be a tensor, got {r.type}")
    formals, caps = body.inputs[: len(inputs)], body.inputs[len(inputs) :]
    iteration = body.add_input("iteration", ITERATION_TYPE)
    accs = [body.add_input(f"{r.name}_seq", SequenceType(r.type)) for r in results]
    params = [body.add_input(f.name, t) for f, t in zip(formals, outer, strict=True)]
    em = Emitter(body, anchor=body.nodes[0] if body.nodes else None)
    for formal, param in zip(formals, params, strict=True):
        if isinstance(param.type, SequenceType):
            formal.replace_all_uses_with(em.op("SequenceAt", [param, iteration]))
        else:
            formal.replace_all_uses_with(param)
    tail = Emitter(body)
    nexts = [tail.op("SequenceInsert", [acc, r]) for acc, r in zip(accs, results, strict=True)]
    body.inputs = [iteration, *accs, *params, *caps]
    body.set_outputs([tail.const(np.bool_(True)), *nexts])
    empties = [ctx.op1("SequenceEmpty", [], {"dtype": r.tensor_type.dtype}) for r in results]
    loop_inputs, attrs = Loop.operands(
        body,
        max_trip_count=ctx.op1("SequenceLength", [inputs[0]]),
        carried=empties,
        invariants=[*inputs, *captured],
    )
    return ctx.op("Loop", loop_inputs, attrs, num_outputs=len(results))
