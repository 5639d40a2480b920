"""The random ops: what the passes, the backends and the run state must know of them.

A random op's outputs are not a function of its inputs: each draws from a generator that
belongs to one run (``RunState.generator``), started afresh by every run from the op's seeds and
continued trip after trip inside a loop. So no pass folds, merges, hoists or copies one
(``fold_constants``, ``common_subexpressions``, ``hoist_invariants``, ``unroll``: a copy would
draw a stream of its own), the compiled backend calls their kernels with the run's state, and
the jax backend places them (and the loops around them) on the compiled backend.

The ops themselves: ``ops/philox.py`` (OpenVINO's Philox generator: RandomUniform-8 and
Multinomial-13) and ``ops/random_std.py`` (ONNX's RandomUniform/Normal, their ``Like`` forms,
Bernoulli and Multinomial, drawn as onnxruntime draws them).
"""

from __future__ import annotations

RANDOM_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}
    | {"Bernoulli", "Multinomial", "PhiloxUniform", "PhiloxMultinomial"}
)
"""Every op that draws random numbers (besides Dropout, which draws only when training)."""
