"""Flatten nested tuples, lists and dicts of tensors to leaves and back, as JAX pytrees do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PyTree = Any


def flatten(tree: PyTree) -> tuple[list[Any], Any]:
    """The leaves of ``tree`` in order, and a hashable description of its structure."""
    leaves: list[Any] = []

    def walk(node: Any) -> Any:
        if node is None:
            return None
        if isinstance(node, tuple | list):
            return (type(node).__name__, tuple(walk(x) for x in node))
        if isinstance(node, dict):
            keys = sorted(node)
            return ("dict", tuple(keys), tuple(walk(node[k]) for k in keys))
        leaves.append(node)
        return "*"

    return leaves, walk(tree)


def unflatten(structure: Any, leaves: Sequence[Any]) -> PyTree:
    """Rebuild a tree of ``structure`` (from ``flatten``) with new ``leaves``."""
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return None
        if s == "*":
            return next(it)
        if s[0] == "dict":
            return {k: build(v) for k, v in zip(s[1], s[2], strict=True)}
        items = [build(x) for x in s[1]]
        return tuple(items) if s[0] == "tuple" else items

    return build(structure)
