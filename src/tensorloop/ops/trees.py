"""The ai.onnx.ml tree ensembles: TreeEnsemble (ai.onnx.ml 5), TreeEnsembleRegressor and
TreeEnsembleClassifier (ai.onnx.ml 1 and 3).

Each op's attributes are read into one ``Forest`` (``forest(op, attrs)``): interior nodes as
arrays (feature, split, mode, where NaN goes, the two children), leaves as runs of (target,
weight) votes, the trees' roots. Reading checks everything the attributes can get wrong (lengths,
modes, indices, a child in another tree, a cycle) and raises ValueError naming the attribute,
which the type rule reports as the node's error at load and the kernel at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType, from_numpy
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect_one_of, reported

Array = np.ndarray[Any, Any]

MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
MEMBER = 6  # TreeEnsemble's BRANCH_MEMBER (set membership), after the six comparisons
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble numbers them in this order
TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_LIST = (tuple, list)


@dataclass(frozen=True, eq=False)
class Forest:
    """Trees over a [N, F] input. A reference to a node is its index (>= 0); to a leaf, ``~leaf``
    (< 0). Leaf ``k``'s votes are ``targets[starts[k]:starts[k + 1]]`` with their ``weights``,
    added in that order."""

    roots: Array  # int64 [trees]: each tree's root, a node or ~leaf
    feature: Array  # int64 [nodes]
    split: Array  # [nodes], of the splits' type
    mode: Array  # int8 [nodes]: an index into MODES, or MEMBER
    true_next: Array  # int64 [nodes]: node or ~leaf
    false_next: Array  # int64 [nodes]
    nan_true: Array  # bool [nodes]: a NaN feature takes the true branch
    members: Array  # sorted distinct set members, of the splits' type
    member_keys: Array  # int64, sorted: node * len(members) + the member's index
    starts: Array  # int64 [leaves + 1]
    targets: Array  # int64 [votes]
    weights: Array  # [votes], of the weights' type
    n_targets: int
    aggregate: str
    transform: str
    base: Array | None  # [n_targets] added after aggregating, or None

    @property
    def features_read(self) -> int:
        """The number of features the reachable nodes read (the input needs at least these)."""
        return int(self.feature.max()) + 1 if self.feature.size else 0


def _ints(attrs: dict[str, Any], key: str) -> Array:
    value = attrs.get(key)
    return np.asarray([] if value is None else value, np.int64).reshape(-1)


def _floats(attrs: dict[str, Any], key: str, dtype: Any = None) -> Array | None:
    """A float attribute or its ``_as_tensor`` twin (TreeEnsemble's tensors are named plainly)."""
    tensor = attrs.get(key + "_as_tensor")
    value = attrs.get(key) if tensor is None else tensor
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.reshape(-1) if dtype is None else value.reshape(-1).astype(dtype)
    return np.asarray(value, np.float32 if dtype is None else dtype).reshape(-1)


def _same_lengths(attrs: dict[str, Any], keys: Sequence[str], got: dict[str, int]) -> int:
    lengths = {k: got[k] for k in keys if k in got}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"the {keys[0].split('_')[0]}_* attributes differ in length: {listed}")
    return next(iter(lengths.values()), 0)


def _refs(index: Array, is_leaf: Array, leaves: int, nodes: int, key: str) -> Array:
    """Child references (node or ~leaf), each checked to be in range."""
    bound = np.where(is_leaf, leaves, nodes)
    bad = np.flatnonzero((index < 0) | (index >= bound))
    if bad.size:
        k = int(bad[0])
        kind = "leaf" if is_leaf[k] else "node"
        raise ValueError(f"{key}[{k}] = {int(index[k])} is not a {kind} index (0..{bound[k] - 1})")
    return np.where(is_leaf, ~index, index)


def _check_acyclic(roots: Array, true_next: Array, false_next: Array) -> None:
    """Walk every tree level by level: a walk longer than there are nodes has met a cycle."""
    frontier = np.unique(roots[roots >= 0])
    for _ in range(true_next.size + 1):
        if frontier.size == 0:
            return
        children = np.concatenate([true_next[frontier], false_next[frontier]])
        frontier = np.unique(children[children >= 0])
    raise ValueError(f"the trees' branches form a cycle (through node {int(frontier[0])})")


def _membership(values: Array | None, mode: Array, dtype: Any) -> tuple[Array, Array]:
    """membership_values split at its NaNs, one set per BRANCH_MEMBER node in node order, as
    (sorted distinct members, sorted keys node * len(members) + member index)."""
    member_nodes = np.flatnonzero(mode == MEMBER)
    if values is None or values.size == 0:
        if member_nodes.size:
            raise ValueError(f"{member_nodes.size} BRANCH_MEMBER node(s) but no membership_values")
        return np.zeros(0, dtype), np.zeros(0, np.int64)
    values = values.astype(dtype)
    cuts = np.flatnonzero(np.isnan(values))
    sets = np.split(values, cuts)
    sets = [sets[0], *(s[1:] for s in sets[1:])]
    if sets and sets[-1].size == 0 and cuts.size and cuts[-1] == values.size - 1:
        sets.pop()  # the last set ended by a NaN too
    if len(sets) != member_nodes.size:
        raise ValueError(
            f"membership_values holds {len(sets)} NaN-delimited set(s), but there are "
            f"{member_nodes.size} BRANCH_MEMBER node(s)"
        )
    members = np.unique(values[~np.isnan(values)])
    keys = [
        node * members.size + np.searchsorted(members, s)
        for node, s in zip(member_nodes, sets, strict=True)
    ]
    flat = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    return members, np.unique(flat.astype(np.int64))


def _enum(attrs: dict[str, Any], key: str, names: Sequence[str], default: str) -> str:
    value = attrs.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        if value not in names:
            raise ValueError(f"{key} must be one of {', '.join(names)}, got {value!r}")
        return value
    if not 0 <= int(value) < len(names):
        listed = ", ".join(f"{i} ({n})" for i, n in enumerate(names))
        raise ValueError(f"{key} must be one of {listed}, got {value}")
    return names[int(value)]


def _base(attrs: dict[str, Any], n: int, dtype: Any) -> Array | None:
    base = _floats(attrs, "base_values", dtype)
    if base is None or base.size == 0:
        return None
    if base.size != n:
        raise ValueError(f"base_values has {base.size} values, expected none or {n}")
    return base


_V5_REQUIRED = (
    "leaf_targetids", "leaf_weights", "nodes_falseleafs", "nodes_falsenodeids",
    "nodes_featureids", "nodes_modes", "nodes_splits", "nodes_trueleafs", "nodes_truenodeids",
    "tree_roots",
)  # fmt: skip


def _forest_v5(attrs: dict[str, Any]) -> Forest:
    missing = [k for k in _V5_REQUIRED if attrs.get(k) is None]
    if missing:
        raise ValueError(f"missing required attribute(s): {', '.join(missing)}")
    split = _floats(attrs, "nodes_splits")
    weights = _floats(attrs, "leaf_weights")
    if split is None or weights is None:
        raise ValueError("nodes_splits and leaf_weights are required")
    if split.dtype != weights.dtype or not np.issubdtype(split.dtype, np.floating):
        raise ValueError(
            f"nodes_splits ({split.dtype}) and leaf_weights ({weights.dtype}) must be tensors "
            "of one float type"
        )
    mode = np.asarray(attrs["nodes_modes"]).reshape(-1).astype(np.int64)
    fields = {
        "nodes_featureids": _ints(attrs, "nodes_featureids"),
        "nodes_modes": mode,
        "nodes_splits": split,
        "nodes_truenodeids": _ints(attrs, "nodes_truenodeids"),
        "nodes_falsenodeids": _ints(attrs, "nodes_falsenodeids"),
        "nodes_trueleafs": _ints(attrs, "nodes_trueleafs"),
        "nodes_falseleafs": _ints(attrs, "nodes_falseleafs"),
    }
    lengths = {k: v.size for k, v in fields.items()}
    for optional in ("nodes_missing_value_tracks_true", "nodes_hitrates"):
        if attrs.get(optional) is not None:
            lengths[optional] = np.asarray(attrs[optional]).size
    nodes = _same_lengths(attrs, list(lengths), lengths)
    targets = _ints(attrs, "leaf_targetids")
    leaves = _same_lengths(
        attrs,
        ["leaf_targetids", "leaf_weights"],
        {"leaf_targetids": targets.size, "leaf_weights": weights.size},
    )
    bad = np.flatnonzero((mode < 0) | (mode > MEMBER))
    if bad.size:
        raise ValueError(f"nodes_modes[{int(bad[0])}] = {int(mode[bad[0]])} is not a mode (0..6)")
    n_targets = int(attrs.get("n_targets") or 0)
    _check_targets(targets, n_targets, "leaf_targetids")
    true_leaf, false_leaf = fields["nodes_trueleafs"] != 0, fields["nodes_falseleafs"] != 0
    true_next = _refs(fields["nodes_truenodeids"], true_leaf, leaves, nodes, "nodes_truenodeids")
    false_next = _refs(
        fields["nodes_falsenodeids"], false_leaf, leaves, nodes, "nodes_falsenodeids"
    )
    roots = _ints(attrs, "tree_roots")
    bad = np.flatnonzero((roots < 0) | (roots >= nodes))
    if bad.size:
        raise ValueError(f"tree_roots[{int(bad[0])}] = {int(roots[bad[0]])} is not a node index")
    # A root whose branches are one leaf is that leaf: its feature and split are never read.
    single = true_leaf[roots] & false_leaf[roots] & (true_next[roots] == false_next[roots])
    roots = np.where(single, true_next[roots], roots)
    _check_acyclic(roots, true_next, false_next)
    members, keys = _membership(_floats(attrs, "membership_values"), mode, split.dtype)
    return _forest(
        roots, fields["nodes_featureids"], split, mode, true_next, false_next,
        _ints(attrs, "nodes_missing_value_tracks_true"), members, keys,
        np.arange(leaves + 1, dtype=np.int64), targets, weights, n_targets,
        _enum(attrs, "aggregate_function", AGGREGATES, "SUM"),
        _enum(attrs, "post_transform", TRANSFORMS, "NONE"), None,
    )  # fmt: skip


def _check_targets(targets: Array, n: int, key: str) -> None:
    bad = np.flatnonzero((targets < 0) | (targets >= n))
    if bad.size:
        raise ValueError(
            f"{key}[{int(bad[0])}] = {int(targets[bad[0]])} is outside [0, {n}) "
            f"({'n_targets' if key != 'class_ids' else 'the class labels'})"
        )


def _forest(
    roots: Array, feature: Array, split: Array, mode: Array, true_next: Array,
    false_next: Array, nan_true: Array, members: Array, keys: Array, starts: Array,
    targets: Array, weights: Array, n_targets: int, aggregate: str, transform: str,
    base: Array | None,
) -> Forest:  # fmt: skip
    if nan_true.size == 0:
        nan_true = np.zeros(feature.size, bool)
    bad = np.flatnonzero(feature < 0)
    if bad.size:
        raise ValueError(f"nodes_featureids[{int(bad[0])}] = {int(feature[bad[0]])} is negative")
    return Forest(
        roots, feature, split, mode.astype(np.int8), true_next, false_next, nan_true != 0,
        members, keys, starts, targets, weights, n_targets, aggregate, transform, base,
    )  # fmt: skip


_V3_MODES = {name: k for k, name in enumerate(MODES)}


def _forest_v3(attrs: dict[str, Any], classifier: bool) -> Forest:
    """TreeEnsembleRegressor's or TreeEnsembleClassifier's nodes, found by (tree id, node id);
    each tree's root is its one node no other node of the tree branches to, and the trees come
    in the order of their roots in the node list."""
    wide = any(attrs.get(k + "_as_tensor") is not None for k in _V3_FLOATS)
    dtype = np.float64 if wide else np.float32
    vote = "class" if classifier else "target"
    tree, node = _ints(attrs, "nodes_treeids"), _ints(attrs, "nodes_nodeids")
    names = list(attrs.get("nodes_modes") or ())
    split = _floats(attrs, "nodes_values", dtype)
    fields = {
        "nodes_treeids": tree.size,
        "nodes_nodeids": node.size,
        "nodes_featureids": _ints(attrs, "nodes_featureids").size,
        "nodes_modes": len(names),
        "nodes_values": 0 if split is None else split.size,
        "nodes_truenodeids": _ints(attrs, "nodes_truenodeids").size,
        "nodes_falsenodeids": _ints(attrs, "nodes_falsenodeids").size,
    }
    for optional in ("nodes_missing_value_tracks_true", "nodes_hitrates"):
        got = attrs.get(optional, attrs.get(optional + "_as_tensor"))
        if got is not None and np.asarray(got).size:
            fields[optional] = np.asarray(got).size
    count = _same_lengths(attrs, list(fields), fields)
    if split is None:
        split = np.zeros(count, dtype)
    for k, name in enumerate(names):
        if name != "LEAF" and name not in _V3_MODES:
            raise ValueError(f"nodes_modes[{k}] = {name!r} is not one of {', '.join(MODES)}, LEAF")
    is_leaf = np.array([name == "LEAF" for name in names], bool)
    mode = np.array([_V3_MODES.get(name, 0) for name in names], np.int64)
    # One key per (tree id, node id): its position in the sorted keys finds the node.
    ids = np.stack([tree, node], axis=1) if count else np.zeros((0, 2), np.int64)
    order = np.lexsort((node, tree))
    sorted_ids = ids[order]
    dup = np.flatnonzero(np.all(sorted_ids[1:] == sorted_ids[:-1], axis=1))
    if dup.size:
        t, n = sorted_ids[dup[0]]
        raise ValueError(f"tree {t} has two nodes with node id {n} (nodes_treeids, nodes_nodeids)")

    def find(t: Array, n: Array, what: str) -> Array:
        """The positions of nodes (t, n); ValueError naming ``what`` for one that is missing."""
        want, have = _combined(np.stack([t, n], axis=1)), _combined(sorted_ids)
        pos = np.minimum(np.searchsorted(have, want), max(count - 1, 0))
        hit = have[pos] == want if count else np.zeros(t.size, bool)
        bad = np.flatnonzero(~hit)
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"{what}[{k}] names node {int(n[k])} of tree {int(t[k])}, which does not exist"
            )
        return order[pos]

    interior = np.flatnonzero(~is_leaf)
    true_pos = find(
        tree[interior], _ints(attrs, "nodes_truenodeids")[interior], "nodes_truenodeids"
    )
    false_pos = find(
        tree[interior], _ints(attrs, "nodes_falsenodeids")[interior], "nodes_falsenodeids"
    )
    # Interior nodes keep their order and become nodes 0..; leaves become leaves 0.. in order.
    slot = np.zeros(count, np.int64)
    slot[interior] = np.arange(interior.size)
    leaves = np.flatnonzero(is_leaf)
    slot[leaves] = ~np.arange(leaves.size)
    true_next, false_next = slot[true_pos], slot[false_pos]
    has_parent = np.zeros(count, bool)
    has_parent[true_pos] = has_parent[false_pos] = True
    root_pos = np.flatnonzero(~has_parent)
    trees_seen = np.unique(tree)
    if root_pos.size != trees_seen.size:
        extra = np.unique(tree[root_pos], return_counts=True)
        many = extra[0][extra[1] > 1]
        raise ValueError(
            f"tree {int(many[0]) if many.size else int(trees_seen[0])} does not have exactly "
            "one root (a node no other node of the tree branches to)"
        )
    roots = slot[root_pos]
    _check_acyclic(roots, true_next, false_next)
    # Votes: each names a leaf by (tree id, node id).
    if classifier:
        labels = attrs.get("classlabels_strings") or attrs.get("classlabels_int64s") or ()
        n_targets = len(labels)
    else:
        n_targets = int(attrs.get("n_targets") or 0)
    vt, vn = _ints(attrs, f"{vote}_treeids"), _ints(attrs, f"{vote}_nodeids")
    vid = _ints(attrs, f"{vote}_ids")
    vw = _floats(attrs, f"{vote}_weights", dtype)
    vw = np.zeros(0, dtype) if vw is None else vw
    keys_v = [f"{vote}_treeids", f"{vote}_nodeids", f"{vote}_ids", f"{vote}_weights"]
    _same_lengths(
        attrs, keys_v, dict(zip(keys_v, (vt.size, vn.size, vid.size, vw.size), strict=True))
    )
    _check_targets(vid, n_targets, f"{vote}_ids")
    at = find(vt, vn, f"{vote}_nodeids")
    leaf_of = ~slot[at]
    bad = np.flatnonzero(leaf_of < 0)
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{vote}_nodeids[{k}] names node {int(vn[k])} of tree {int(vt[k])}, which is not a LEAF"
        )
    by_leaf = np.argsort(leaf_of, kind="stable")  # each leaf's votes in attribute order
    starts = np.searchsorted(leaf_of[by_leaf], np.arange(leaves.size + 1))
    feature = _ints(attrs, "nodes_featureids")[interior]
    nan_true = _ints(attrs, "nodes_missing_value_tracks_true")
    return _forest(
        roots, feature, split[interior], mode[interior], true_next, false_next,
        nan_true[interior] if nan_true.size else nan_true, np.zeros(0, dtype),
        np.zeros(0, np.int64),
        starts.astype(np.int64), vid[by_leaf], vw[by_leaf], n_targets,
        "SUM" if classifier else _enum(attrs, "aggregate_function", AGGREGATES, "SUM"),
        _enum(attrs, "post_transform", TRANSFORMS, "NONE"), _base(attrs, n_targets, dtype),
    )  # fmt: skip


def _combined(ids: Array) -> Array:
    """(tree id, node id) pairs as one sortable key each (a structured view)."""
    ids = np.ascontiguousarray(ids, np.int64)
    return ids.view([("t", np.int64), ("n", np.int64)]).reshape(-1)


_V3_FLOATS = ("nodes_values", "nodes_hitrates", "base_values", "target_weights", "class_weights")


def forest(op_name: str, attrs: dict[str, Any]) -> Forest:
    """The op's attributes as a checked ``Forest``; ValueError naming the faulty attribute."""
    if op_name == "TreeEnsemble":
        return _forest_v5(attrs)
    return _forest_v3(attrs, classifier=op_name == "TreeEnsembleClassifier")


def ensemble_rows(shape: Sequence[int]) -> int:
    """The rows of an input of ``shape``: [F] is one row, [N, F] is N."""
    if len(shape) not in (1, 2):
        raise ValueError(f"expected [N, F] or [F], got {len(shape)} dims")
    return 1 if len(shape) == 1 else int(shape[0])


def ensemble_outputs(attrs: dict[str, Any]) -> tuple[int, bool]:
    """(the width of the scores, whether a label output comes first): the class labels for a
    classifier, else n_targets."""
    labels = attrs.get("classlabels_strings") or attrs.get("classlabels_int64s")
    if labels is not None:
        return len(labels), True
    return int(attrs.get("n_targets") or 0), False


_X_TYPES = {DType.float32, DType.float64, DType.int64, DType.int32}


def _type_rule(ctx: InferContext, name: str, x_types: set[DType]) -> tuple[TensorType, Forest, Dim]:
    x = expect_one_of(ctx, 0, x_types)
    with reported(ctx):
        trees = forest(name, ctx.attrs)
    rows: Dim = UNKNOWN
    if x.shape is not None:
        if len(x.shape) not in (1, 2):
            raise ctx.error(f"input #0: expected [N, F] or [F], got {x}")
        rows = 1 if len(x.shape) == 1 else x.shape[0]
        features = x.shape[-1]
        if isinstance(features, int) and features < trees.features_read:
            raise ctx.error(
                f"input #0: the trees read feature {trees.features_read - 1}, but {x} has "
                f"{features} features"
            )
    return x, trees, rows


_V5_TENSORS = ("leaf_weights", "membership_values", "nodes_hitrates", "nodes_modes", "nodes_splits")
_V3_ATTRS = {
    **{
        k: AttrSpec(_LIST, None)
        for k in (
            "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
            "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
            "nodes_hitrates", "base_values",
        )
    },
    **{
        f"{k}_as_tensor": AttrSpec(np.ndarray, None)
        for k in ("nodes_values", "nodes_hitrates", "base_values")
    },
    "post_transform": AttrSpec(str, "NONE"),
}  # fmt: skip


@op(
    "TreeEnsemble",
    attrs={
        **{k: AttrSpec(np.ndarray, None) for k in _V5_TENSORS},
        **{
            k: AttrSpec(_LIST, None)
            for k in (
                "leaf_targetids", "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids",
                "nodes_missing_value_tracks_true", "nodes_trueleafs", "nodes_truenodeids",
                "tree_roots",
            )
        },
        "aggregate_function": AttrSpec(int, 1),
        "n_targets": AttrSpec(int, None),
        "post_transform": AttrSpec(int, 0),
    },
)  # fmt: skip
def _tree_ensemble(ctx: InferContext) -> list[Type]:
    """Each row of X [N, F] walked down every tree (a NaN feature takes the branch
    nodes_missing_value_tracks_true says, in every mode); the leaves' weights aggregated per
    target (SUM, AVERAGE over the trees, MIN or MAX; 0 for a target no leaf reached), then
    post_transformed over the targets: Y [N, n_targets] of X's type."""
    x, trees, rows = _type_rule(ctx, "TreeEnsemble", {DType.float32, DType.float64, DType.float16})
    if from_numpy(trees.split) != x.dtype:
        raise ctx.error(f"nodes_splits and leaf_weights are {trees.split.dtype}, X is {x}")
    return [TensorType(x.dtype, [rows, trees.n_targets])]


@op(
    "TreeEnsembleRegressor",
    attrs={
        **_V3_ATTRS,
        **{
            f"target_{k}": AttrSpec(_LIST, None)
            for k in ("treeids", "nodeids", "ids", "weights")
        },
        "target_weights_as_tensor": AttrSpec(np.ndarray, None),
        "aggregate_function": AttrSpec(str, "SUM"),
        "n_targets": AttrSpec(int, None),
    },
)  # fmt: skip
def _tree_ensemble_regressor(ctx: InferContext) -> list[Type]:
    """As TreeEnsemble, the nodes named by (tree id, node id) and the leaves' votes by
    target_*; base_values added after aggregating, before post_transform: Y [N, n_targets] f32."""
    _, trees, rows = _type_rule(ctx, "TreeEnsembleRegressor", _X_TYPES)
    return [TensorType(DType.float32, [rows, trees.n_targets])]


@op(
    "TreeEnsembleClassifier",
    attrs={
        **_V3_ATTRS,
        **{
            k: AttrSpec(_LIST, None)
            for k in (
                "class_treeids", "class_nodeids", "class_ids", "class_weights",
                "classlabels_strings", "classlabels_int64s",
            )
        },
        "class_weights_as_tensor": AttrSpec(np.ndarray, None),
    },
)  # fmt: skip
def _tree_ensemble_classifier(ctx: InferContext) -> list[Type]:
    """Each class's score Z [N, classes] f32: the class votes of the leaves reached, summed,
    plus base_values, post_transformed; Y [N]: the label of the highest score (the first
    on ties), from classlabels_strings or classlabels_int64s (exactly one is given)."""
    strings, ints = ctx.attr("classlabels_strings"), ctx.attr("classlabels_int64s")
    if (strings is None) == (ints is None) or not (strings or ints):
        raise ctx.error("exactly one of classlabels_strings, classlabels_int64s must be given")
    _, trees, rows = _type_rule(ctx, "TreeEnsembleClassifier", _X_TYPES)
    label = DType.string if strings is not None else DType.int64
    return [TensorType(label, [rows]), TensorType(DType.float32, [rows, trees.n_targets])]
