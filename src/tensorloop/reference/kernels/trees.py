"""Reference kernels of the ai.onnx.ml tree ensembles (TreeEnsemble, TreeEnsembleRegressor,
TreeEnsembleClassifier) over the ``Forest`` that ``ops/trees.py`` reads from the attributes.

All rows walk all trees at once, one level a step (a step per level of the deepest tree, not a
loop per row or node). The votes are then added tree by tree, each leaf's in attribute order, in
the weights' type (the order and type onnxruntime sums in, so sums agree bit for bit); the post
transforms follow onnxruntime's formulas in that type, except PROBIT, the exact inverse normal
CDF (docs/onnx.md lists where the spec and onnxruntime part).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ops.trees import MEMBER, Forest, forest
from ..registry import KernelContext, kernel
from .elementwise import Array, fail
from .math import _erf


def _features(ctx: KernelContext, trees: Forest, x: Array) -> Array:
    """X as [N, F] in the type its features are compared in: an integer X as the splits' type
    (as C++ converts it), a float X and the splits in the wider of the two."""
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise fail(ctx, f"input #0: expected [N, F] or [F], got shape {list(x.shape)}")
    x = x.reshape(1, -1) if x.ndim == 1 else x
    if x.shape[1] < trees.features_read:
        raise fail(
            ctx,
            f"input #0: the trees read feature {trees.features_read - 1}, but X has "
            f"{x.shape[1]} features",
        )
    if np.issubdtype(x.dtype, np.integer):
        return x.astype(trees.split.dtype)
    return x.astype(np.result_type(x.dtype, trees.split.dtype), copy=False)


def _goes_true(trees: Forest, node: Array, v: Array) -> Array:
    split, mode = trees.split[node].astype(v.dtype), trees.mode[node]
    with np.errstate(invalid="ignore"):
        tests = [v <= split, v < split, v >= split, v > split, v == split, v != split]
    out = np.select([mode == k for k in range(6)], tests, default=False)
    member = np.flatnonzero(mode == MEMBER)
    if member.size and trees.members.size:
        values = v[member].astype(trees.members.dtype)
        at = np.minimum(np.searchsorted(trees.members, values), trees.members.size - 1)
        keys = node[member].astype(np.int64) * trees.members.size + at
        found = np.minimum(np.searchsorted(trees.member_keys, keys), trees.member_keys.size - 1)
        out[member] = (trees.members[at] == values) & (trees.member_keys[found] == keys)
    # A NaN feature goes where nodes_missing_value_tracks_true says, in every mode.
    return np.where(np.isnan(v), trees.nan_true[node], out)


def leaves_reached(trees: Forest, x: Array) -> Array:
    """The leaf each row reaches in each tree, [N, trees]: every (row, tree) walks down one
    level a step while it stands on an interior node."""
    n, t = x.shape[0], trees.roots.size
    at = np.tile(trees.roots, n)
    row = np.repeat(np.arange(n), t)
    active = np.flatnonzero(at >= 0)
    while active.size:  # ends: the trees were checked to be acyclic when read
        node = at[active]
        go = _goes_true(trees, node, x[row[active], trees.feature[node]])
        at[active] = np.where(go, trees.true_next[node], trees.false_next[node])
        active = active[at[active] >= 0]
    return (~at).reshape(n, t)


def _accumulator(trees: Forest, x_dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type votes are summed in: the weights' (a float16 tree's in float32), widened to
    float64 for a float64 X as onnxruntime does."""
    dtype = np.result_type(trees.weights.dtype, np.float32)
    return np.result_type(dtype, np.float64) if x_dtype == np.float64 else dtype


def scores(trees: Forest, x: Array, acc: np.dtype[Any]) -> Array:
    """The aggregated votes per row and target, [N, n_targets], base values added."""
    reached = leaves_reached(trees, x)
    n = reached.shape[0]
    out = np.zeros((n, trees.n_targets), acc)
    hit = np.zeros((n, trees.n_targets), bool)
    weights = trees.weights.astype(acc)
    lowest = trees.aggregate == "MIN"
    for leaf in reached.T:  # tree by tree, in order: the order onnxruntime sums in
        first, count = trees.starts[leaf], np.diff(trees.starts)[leaf]
        for j in range(int(count.max(initial=0))):
            rows = np.flatnonzero(count > j)
            vote = first[rows] + j
            target, w = trees.targets[vote], weights[vote]
            if trees.aggregate in ("SUM", "AVERAGE"):
                out[rows, target] += w
            else:
                now = out[rows, target]
                better = (w < now) if lowest else (w > now)
                out[rows, target] = np.where(~hit[rows, target] | better, w, now)
            hit[rows, target] = True
    if trees.aggregate == "AVERAGE":
        out /= acc.type(trees.roots.size)
    if trees.base is not None:
        out += trees.base.astype(acc)
    return out


def _probit(p: Array) -> Array:
    """sqrt(2) * erfinv(2p - 1), the inverse of the standard normal CDF, in float64: Winitzki's
    approximation (within 2e-3) refined by Newton steps on erf; NaN outside [0, 1], -inf at 0,
    inf at 1. 2p - 1 is rounded to float64, so p within about 1e-10 of 0 or 1 loses digits."""
    y = 2 * p.astype(np.float64) - 1
    inside = np.abs(y) < 1
    y = np.where(inside, y, 0.0)
    log = np.log((1 - y) * (1 + y))
    a = 0.147
    t = 2 / (math.pi * a) + log / 2
    guess = np.sign(y) * np.sqrt(np.sqrt(t * t - log / a) - t)
    for _ in range(4):  # quadratic convergence: two steps reach float64 from 2e-3
        guess = guess - (_erf(guess) - y) / (2 / math.sqrt(math.pi) * np.exp(-guess * guess))
    edge = np.where(np.abs(2 * p - 1) == 1, np.sign(2 * p - 1) * np.inf, np.nan)
    return np.where(inside, math.sqrt(2) * guess, edge)


def post_transform(kind: str, z: Array) -> Array:
    """``kind`` applied to each row of scores z [N, K], in z's type (PROBIT in float64, rounded
    once): the formulas onnxruntime uses, sums taken left to right."""
    if kind == "NONE" or z.shape[1] == 0:
        return z
    one = z.dtype.type(1)
    if kind == "LOGISTIC":
        v = one / (one + np.exp(-np.abs(z)))
        logistic: Array = np.where(z < 0, one - v, v)
        return logistic
    if kind == "PROBIT":
        with np.errstate(all="ignore"):
            return _probit(z).astype(z.dtype)
    zero = z == 0
    keep = ~zero if kind == "SOFTMAX_ZERO" else np.ones_like(zero)
    e = np.where(keep, np.exp(z - z.max(axis=1, keepdims=True)), z.dtype.type(0))
    total = e[:, 0].copy()
    for j in range(1, e.shape[1]):
        total += e[:, j]
    with np.errstate(invalid="ignore", divide="ignore"):
        softmax: Array = np.where(keep, e / total[:, None], z.dtype.type(0))
    return softmax


def _run(ctx: KernelContext, x: Any) -> tuple[Forest, Array]:
    try:
        trees = forest(ctx.node.op, ctx.attrs)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    x = np.asarray(x)
    features = _features(ctx, trees, x)
    with np.errstate(over="ignore", invalid="ignore"):
        return trees, scores(trees, features, _accumulator(trees, x.dtype))


@kernel("TreeEnsemble")
def tree_ensemble(ctx: KernelContext, x: Any) -> Array:
    trees, z = _run(ctx, x)
    with np.errstate(over="ignore", invalid="ignore"):
        return post_transform(trees.transform, z).astype(np.asarray(x).dtype)


@kernel("TreeEnsembleRegressor")
def tree_ensemble_regressor(ctx: KernelContext, x: Any) -> Array:
    trees, z = _run(ctx, x)
    with np.errstate(over="ignore", invalid="ignore"):
        return post_transform(trees.transform, z).astype(np.float32)


@kernel("TreeEnsembleClassifier")
def tree_ensemble_classifier(ctx: KernelContext, x: Any) -> tuple[Array, Array]:
    trees, z = _run(ctx, x)
    strings = ctx.attr("classlabels_strings")
    labels = np.array(strings if strings is not None else ctx.attr("classlabels_int64s"))
    if strings is not None:
        labels = labels.astype(object)
    # The top class of the scores before the transform: the first of equal scores.
    top = labels[np.argmax(z, axis=1)] if z.shape[1] else labels[:0]
    with np.errstate(over="ignore", invalid="ignore"):
        return top, post_transform(trees.transform, z).astype(np.float32)
