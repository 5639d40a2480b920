"""The ai.onnx.ml tree ensembles against onnxruntime, on random forests, and the spec's answer
where onnxruntime parts from it (docs/onnx.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

import tensorloop as tl
from onnx_oracle import one_node, ort_run, tensorloop_run
from ops_harness import dyn, run
from tensorloop.errors import ExecutionError, FormatError, ShapeInferenceError
from tensorloop.formats.onnx import load_onnx

ML = "ai.onnx.ml"
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
GRID = [-1.5, -0.25, 0.0, 0.5, 1.0, 2.75]  # thresholds and features share it: ties happen


def _model(
    op: str, x: np.ndarray, attrs: dict[str, Any], ml: int, outputs: int = 1
) -> onnx.ModelProto:
    return one_node(op, [x], attrs, opset=19, outputs=outputs, domain=ML, domain_opset=ml)


def _both(
    op: str, x: np.ndarray, attrs: dict[str, Any], ml: int, outputs: int = 1
) -> tuple[list[Any], list[Any]]:
    model = _model(op, x, attrs, ml, outputs)
    return tensorloop_run(model, [x]), ort_run(model, [x])


@st.composite
def _trees(draw: Any, features: int, targets: int, member: bool = False) -> list[dict[str, Any]]:
    """Random trees as lists of nodes: each interior node {mode, feature, split, nan_true,
    true, false} (children are node dicts), each leaf {votes: [(target, weight)]}."""

    def node(depth: int) -> dict[str, Any]:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            count = draw(st.integers(1, targets))
            chosen = draw(st.permutations(range(targets)))[:count]
            weights = draw(
                st.lists(st.sampled_from([*GRID, 3.3, -7.1, 0.1]), min_size=count, max_size=count)
            )
            return {"votes": list(zip(chosen, weights, strict=True))}
        modes = len(MODES) + (1 if member else 0)
        mode = draw(st.integers(0, modes - 1))
        out = {
            "mode": mode,
            "feature": draw(st.integers(0, features - 1)),
            "split": draw(st.sampled_from(GRID)),
            "nan_true": draw(st.integers(0, 1)),
            # onnxruntime holds integer members only
            "members": draw(
                st.lists(st.sampled_from([0.0, 1.0, -2.0, 3.0]), min_size=1, max_size=3)
            ),
        }
        out["true"], out["false"] = node(depth - 1), node(depth - 1)
        return out

    return [node(draw(st.integers(0, 4))) for _ in range(draw(st.integers(1, 6)))]


def _v3(trees: list[dict[str, Any]], vote: str) -> dict[str, Any]:
    a: dict[str, list[Any]] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
        f"{vote}_treeids", f"{vote}_nodeids", f"{vote}_ids", f"{vote}_weights",
    )}  # fmt: skip
    for t, root in enumerate(trees):
        ids: dict[int, int] = {}

        def visit(n: dict[str, Any], t: int = t, ids: dict[int, int] = ids) -> int:
            nid = ids.setdefault(id(n), len(ids))
            leaf = "votes" in n
            a["nodes_treeids"].append(t + 10)  # tree ids need not start at 0
            a["nodes_nodeids"].append(nid)
            a["nodes_featureids"].append(0 if leaf else n["feature"])
            a["nodes_modes"].append("LEAF" if leaf else MODES[n["mode"]])
            a["nodes_values"].append(0.0 if leaf else n["split"])
            a["nodes_missing_value_tracks_true"].append(0 if leaf else n["nan_true"])
            at = len(a["nodes_truenodeids"])
            a["nodes_truenodeids"].append(0)
            a["nodes_falsenodeids"].append(0)
            if leaf:
                for target, w in n["votes"]:
                    a[f"{vote}_treeids"].append(t + 10)
                    a[f"{vote}_nodeids"].append(nid)
                    a[f"{vote}_ids"].append(target)
                    a[f"{vote}_weights"].append(w)
            else:
                a["nodes_truenodeids"][at] = visit(n["true"])
                a["nodes_falsenodeids"][at] = visit(n["false"])
            return nid

        visit(root)
    return a


def _v5(trees: list[dict[str, Any]], dtype: Any) -> dict[str, Any]:
    """TreeEnsemble's attributes: each leaf votes once (its first vote)."""
    nodes: list[dict[str, Any]] = []
    leaves: list[tuple[int, float]] = []
    roots: list[int] = []

    def ref(n: dict[str, Any]) -> tuple[int, int]:
        if "votes" in n:
            leaves.append(n["votes"][0])
            return len(leaves) - 1, 1
        at = len(nodes)
        nodes.append(n)
        n["_true"], n["_false"] = ref(n["true"]), ref(n["false"])
        return at, 0

    for root in trees:
        index, leaf = ref(root)
        if leaf:  # a one-leaf tree: a node whose branches are both that leaf
            nodes.append(
                {
                    "mode": 0,
                    "feature": 0,
                    "split": 0.0,
                    "nan_true": 0,
                    "_true": (index, 1),
                    "_false": (index, 1),
                }
            )
            index = len(nodes) - 1
        roots.append(index)
    members = [v for n in nodes if n["mode"] == 6 for v in [*n["members"], np.nan]]
    out = {
        "nodes_featureids": [n["feature"] for n in nodes],
        "nodes_modes": numpy_helper.from_array(np.array([n["mode"] for n in nodes], np.uint8)),
        "nodes_splits": numpy_helper.from_array(np.array([n["split"] for n in nodes], dtype)),
        "nodes_truenodeids": [n["_true"][0] for n in nodes],
        "nodes_trueleafs": [n["_true"][1] for n in nodes],
        "nodes_falsenodeids": [n["_false"][0] for n in nodes],
        "nodes_falseleafs": [n["_false"][1] for n in nodes],
        "nodes_missing_value_tracks_true": [n["nan_true"] for n in nodes],
        "leaf_targetids": [t for t, _ in leaves],
        "leaf_weights": numpy_helper.from_array(np.array([w for _, w in leaves], dtype)),
        "tree_roots": roots,
    }
    if members:
        out["membership_values"] = numpy_helper.from_array(np.array(members, dtype))
    return out


def _rows(
    draw: Any, n: int, features: int, dtype: Any, nan: bool = True, whole: bool = False
) -> np.ndarray:
    values = [0.0, 1.0, -2.0, 3.0, -9.0] if whole else [*GRID, 0.3, -9.0, -2.0, 3.0]
    values += [np.nan] if nan else []
    flat = draw(st.lists(st.sampled_from(values), min_size=n * features, max_size=n * features))
    return np.array(flat, dtype).reshape(n, features)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_tree_ensemble_matches_onnxruntime(data: st.DataObject) -> None:
    features, targets = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    trees = data.draw(_trees(features, targets, member=True))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    attrs = _v5(trees, dtype)
    # onnxruntime sends a NaN down BRANCH_NEQ's true branch whatever the node says (the spec:
    # where nodes_missing_value_tracks_true says); NaN is left out where a NEQ node is.
    modes = numpy_helper.to_array(attrs["nodes_modes"]).tolist()
    # onnxruntime tests membership of the feature cast to int32 (the spec: of the value itself),
    # so features are whole numbers where a BRANCH_MEMBER node is.
    x = _rows(data.draw, data.draw(st.integers(1, 7)), features, dtype, 5 not in modes, 6 in modes)
    attrs.update(n_targets=targets, aggregate_function=data.draw(st.integers(0, 3)))
    got, want = _both("TreeEnsemble", x, attrs, ml=5)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == want[0].dtype


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_tree_ensemble_regressor_matches_onnxruntime(data: st.DataObject) -> None:
    features, targets = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    trees = data.draw(_trees(features, targets))
    if targets == 1:  # onnxruntime reads only the first vote of a leaf of a one-target forest
        for n in _leaves(trees):
            n["votes"] = n["votes"][:1]
    attrs = _v3(trees, "target")
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))  # onnxruntime has no int kernel
    nan = "BRANCH_NEQ" not in attrs["nodes_modes"] and dtype != np.int64
    x = _rows(data.draw, data.draw(st.integers(1, 7)), features, np.float64, nan).astype(dtype)
    attrs.update(
        n_targets=targets,
        aggregate_function=data.draw(st.sampled_from(["SUM", "AVERAGE", "MIN", "MAX"])),
    )
    if data.draw(st.booleans()):
        # onnxruntime adds base values to the targets some vote reached only: all are reached
        for n in _leaves(trees):
            n["votes"] = [(t, w) for t in range(targets) for w in [n["votes"][0][1] + t]]
        attrs = {
            **_v3(trees, "target"),
            **{k: attrs[k] for k in ("n_targets", "aggregate_function")},
        }
        attrs["base_values"] = [0.5 * (k + 1) for k in range(targets)]
    got, want = _both("TreeEnsembleRegressor", x, attrs, ml=3)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == want[0].dtype == np.float32


def _leaves(trees: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out, todo = [], list(trees)
    while todo:
        n = todo.pop()
        if "votes" in n:
            out.append(n)
        else:
            todo += [n["true"], n["false"]]
    return out


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_tree_ensemble_classifier_matches_onnxruntime(data: st.DataObject) -> None:
    """Forests as random forests write them: every leaf votes for every class."""
    features, classes = data.draw(st.integers(1, 3)), data.draw(st.integers(3, 4))
    trees = data.draw(_trees(features, classes))
    for n in _leaves(trees):
        n["votes"] = [
            (c, w)
            for c in range(classes)
            for w in [data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]))]
        ]
    attrs = _v3(trees, "class")
    nan = "BRANCH_NEQ" not in attrs["nodes_modes"]
    x = _rows(data.draw, data.draw(st.integers(1, 7)), features, np.float32, nan)
    labels = data.draw(st.sampled_from(["ints", "strings"]))
    if labels == "ints":
        attrs["classlabels_int64s"] = [7 * k - 3 for k in range(classes)]
    else:
        attrs["classlabels_strings"] = [f"c{k}" for k in range(classes)]
    attrs["post_transform"] = data.draw(st.sampled_from(["NONE", "SOFTMAX", "LOGISTIC"]))
    got, want = _both("TreeEnsembleClassifier", x, attrs, ml=3, outputs=2)
    z = got[1].astype(np.float64)
    ties = np.sum(z == z.max(axis=1, keepdims=True), axis=1) > 1
    np.testing.assert_array_equal(got[0][~ties], want[0][~ties])
    if attrs["post_transform"] == "NONE":
        np.testing.assert_array_equal(got[1], want[1])
    else:  # onnxruntime's float32 exp (MLAS's) is not NumPy's: a few ulp apart now and then
        np.testing.assert_array_max_ulp(got[1], want[1], maxulp=4)


# -- the spec's answers where onnxruntime parts from it -------------------------------------------


def _stump(mode: str, nan_true: int = 0, **extra: Any) -> dict[str, Any]:
    """One tree: x0 <mode> 0.5 ? leaf (weight 1, target 0) : leaf (weight 2, target 0)."""
    attrs = {
        "nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [0, 0, 0],
        "nodes_values": [0.5, 0, 0], "nodes_modes": [mode, "LEAF", "LEAF"],
        "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0],
        "nodes_missing_value_tracks_true": [nan_true, 0, 0], "target_treeids": [0, 0],
        "target_nodeids": [1, 2], "target_ids": [0, 0], "target_weights": [1.0, 2.0],
        "n_targets": 1,
    }  # fmt: skip
    return {**attrs, **extra}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nan_true", [0, 1])
def test_nan_takes_the_branch_the_node_names(mode: str, nan_true: int) -> None:
    x = np.array([[np.nan]], np.float32)
    (got,) = tensorloop_run(_model("TreeEnsembleRegressor", x, _stump(mode, nan_true), 3), [x])
    assert got.tolist() == [[1.0 if nan_true else 2.0]]


def test_one_target_post_transforms_follow_the_spec() -> None:
    """onnxruntime leaves a one-target regressor's scores as they are under LOGISTIC and SOFTMAX."""
    x = np.array([[0.2], [0.9]], np.float32)
    for transform, want in [
        ("LOGISTIC", [1 / (1 + np.exp(-1.0)), 1 / (1 + np.exp(-2.0))]),
        ("SOFTMAX", [1.0, 1.0]),
        ("SOFTMAX_ZERO", [1.0, 1.0]),
    ]:
        attrs = _stump("BRANCH_LEQ", post_transform=transform)
        (got,) = tensorloop_run(_model("TreeEnsembleRegressor", x, attrs, 3), [x])
        np.testing.assert_allclose(got[:, 0], want, rtol=1e-7)


def test_probit_is_the_inverse_normal_cdf() -> None:
    """PROBIT is sqrt(2) erfinv(2p - 1), rounded once (onnxruntime's approximation is off by up to
    about 5e-5): pinned, the inverse normal CDF (scipy's ndtri) of the float32 weights 0.3 and
    0.975."""
    x = np.array([[0.2], [0.9]], np.float32)
    attrs = _stump("BRANCH_LEQ", post_transform="PROBIT", target_weights=[0.3, 0.975])
    (got,) = tensorloop_run(_model("TreeEnsembleRegressor", x, attrs, 3), [x])
    np.testing.assert_array_equal(got[:, 0], np.array([-0.52440048, 1.95996439], np.float32))


def test_base_values_reach_every_target() -> None:
    """A target no vote reached is 0 plus its base value (onnxruntime writes 0)."""
    x = np.array([[0.2]], np.float32)
    attrs = _stump("BRANCH_LEQ", n_targets=2, base_values=[10.0, 20.0])
    (got,) = tensorloop_run(_model("TreeEnsembleRegressor", x, attrs, 3), [x])
    assert got.tolist() == [[11.0, 20.0]]


# -- attributes checked when the model is read ---------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nodes_truenodeids": [1, 0]}, "nodes_\\* attributes differ in length"),
        ({"nodes_truenodeids": [5, 0, 0]}, "nodes_truenodeids\\[0\\] names node 5 of tree 0"),
        ({"target_ids": [0, 3]}, "target_ids\\[1\\] = 3 is outside \\[0, 1\\)"),
        ({"nodes_modes": ["BRANCH_XX", "LEAF", "LEAF"]}, "nodes_modes\\[0\\] = 'BRANCH_XX'"),
        (
            {"target_nodeids": [0, 2]},
            "target_nodeids\\[0\\] names node 0 of tree 0, which is not a LEAF",
        ),
        ({"nodes_nodeids": [0, 1, 1]}, "tree 0 has two nodes with node id 1"),
        ({"base_values": [1.0, 2.0]}, "base_values has 2 values, expected none or 1"),
        ({"aggregate_function": "MEDIAN"}, "aggregate_function must be one of"),
    ],
)
def test_bad_attributes_are_refused_at_load(change: dict[str, Any], message: str) -> None:
    x = np.array([[0.2]], np.float32)
    with pytest.raises(FormatError, match=message):
        load_onnx(_model("TreeEnsembleRegressor", x, {**_stump("BRANCH_LEQ"), **change}, 3))


def test_a_cycle_is_refused() -> None:
    x = np.array([[0.2]], np.float32)
    attrs = _v5([{"votes": [(0, 1.0)]}], np.float32)
    attrs.update(
        nodes_featureids=[0, 0], nodes_modes=numpy_helper.from_array(np.zeros(2, np.uint8)),
        nodes_splits=numpy_helper.from_array(np.zeros(2, np.float32)),
        nodes_truenodeids=[1, 0], nodes_trueleafs=[0, 0], nodes_falsenodeids=[0, 0],
        nodes_falseleafs=[1, 1], nodes_missing_value_tracks_true=[0, 0], tree_roots=[0],
        n_targets=1,
    )  # fmt: skip
    with pytest.raises(FormatError, match="form a cycle"):
        load_onnx(_model("TreeEnsemble", x, attrs, 5))


def test_too_few_features_is_an_error_naming_the_node() -> None:
    x = np.array([[0.2]], np.float32)
    attrs = _stump("BRANCH_LEQ", nodes_featureids=[2, 0, 0])
    with pytest.raises(FormatError, match=r"read feature 2, but f32\[1,1\] has 1 features"):
        load_onnx(_model("TreeEnsembleRegressor", x, attrs, 3))
    core = {**attrs, "nodes_modes": attrs["nodes_modes"]}
    with pytest.raises(ExecutionError, match=r"TreeEnsembleRegressor.*read feature 2, but X has 1"):
        run("TreeEnsembleRegressor", [dyn(x)], core)


@pytest.mark.parametrize(
    ("op", "ml", "attrs", "outputs"),
    [
        ("TreeEnsembleRegressor", 3, _stump("BRANCH_GT", 1, base_values=[0.25]), 1),
        (
            "TreeEnsembleClassifier",
            3,
            {
                **{k: v for k, v in _stump("BRANCH_LT").items() if k.startswith("nodes")},
                "class_treeids": [0, 0], "class_nodeids": [1, 2], "class_ids": [0, 2],
                "class_weights": [1.0, 2.0], "classlabels_strings": ["a", "b", "c"],
            },
            2,
        ),
    ],
)  # fmt: skip
def test_the_onnx_writer_writes_them_back(
    op: str, ml: int, attrs: dict[str, Any], outputs: int, tmp_path: Any
) -> None:
    x = np.array([[0.2], [0.9], [np.nan]], np.float32)
    model = load_onnx(_model(op, x, attrs, ml, outputs))
    path = tmp_path / "m.onnx"
    tl.save(model, path)
    written = onnx.load(path)
    assert [n.op_type for n in written.graph.node] == [op]
    # TreeEnsembleRegressor and TreeEnsembleClassifier left ai.onnx.ml in opset 5: written in 4
    assert {i.domain: i.version for i in written.opset_import}[ML] == 4
    want = model.run({"x0": x})
    back = tl.load(path).run({"x0": x})
    for k, name in enumerate(want):
        np.testing.assert_array_equal(back[name], want[name])
        np.testing.assert_array_equal(ort_run(written, [x])[k], want[name])


def test_two_classes_are_labelled_by_the_top_score() -> None:
    """Y is the label of the highest score with two classes too. onnxruntime labels a two-class
    forest by its own binary rule (the second label wherever a score is positive): here it says
    'b' for the first row, whose scores are [1, 0]."""
    x = np.array([[0.2], [0.9]], np.float32)
    attrs = {
        **{k: v for k, v in _stump("BRANCH_LT").items() if k.startswith("nodes")},
        "class_treeids": [0, 0], "class_nodeids": [1, 2], "class_ids": [0, 1],
        "class_weights": [1.0, 2.0], "classlabels_strings": ["a", "b"],
    }  # fmt: skip
    labels, z = tensorloop_run(_model("TreeEnsembleClassifier", x, attrs, 3, 2), [x])
    assert labels.tolist() == ["a", "b"]
    assert z.tolist() == [[1.0, 0.0], [0.0, 2.0]]


def test_float16_trees_sum_in_float32_and_round_once() -> None:
    trees: list[dict[str, Any]] = [{"votes": [(0, w)]} for w in (0.1, 0.2, 0.3, 1e-4)]
    attrs = {**_v5(trees, np.float16), "n_targets": 1}
    x = np.array([[0.0]], np.float16)
    (got,) = tensorloop_run(_model("TreeEnsemble", x, attrs, 5), [x])
    votes = np.array([0.1, 0.2, 0.3, 1e-4], np.float16).astype(np.float32)
    want = np.float16(((votes[0] + votes[1]) + votes[2]) + votes[3])
    assert got.dtype == np.float16 and got.tolist() == [[want]]


def test_a_missing_required_attribute_is_named() -> None:
    x = np.array([[0.2]], np.float32)
    attrs = {**_v5([{"votes": [(0, 1.0)]}], np.float32), "n_targets": 1}
    del attrs["nodes_modes"]
    attrs = {
        k: numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
        for k, v in attrs.items()
    }
    with pytest.raises(ShapeInferenceError, match="missing required attribute\\(s\\): nodes_modes"):
        run("TreeEnsemble", [dyn(x)], attrs)
