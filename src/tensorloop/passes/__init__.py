"""Graph passes: named objects ``pass_(graph) -> PassResult(graph, changed)``, verified after."""

from .base import Pass, PassResult, run_passes
from .common_subexpressions import eliminate_common_subexpressions
from .dead_code import eliminate_dead_code
from .dead_loop_values import eliminate_dead_loop_values
from .fold_constants import fold_constants
from .hoist_invariants import hoist_loop_invariants
from .hoist_sliced import hoist_sliced_work
from .inline_branches import inline_constant_branches
from .merge_split_elementwise import merge_split_elementwise
from .prefix_sums import loop_prefix_sums
from .sequences import lower_sequences
from .unroll import static_trip_count, unroll_loops

__all__ = [
    "Pass",
    "PassResult",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "eliminate_dead_loop_values",
    "fold_constants",
    "hoist_loop_invariants",
    "hoist_sliced_work",
    "inline_constant_branches",
    "loop_prefix_sums",
    "lower_sequences",
    "merge_split_elementwise",
    "run_passes",
    "static_trip_count",
    "unroll_loops",
]
