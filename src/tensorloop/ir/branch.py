"""The canonical If: its meaning, a typed view over its nodes and its one constructor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..errors import GraphError
from ..tensor.types import TensorType, Type
from .emit import Emitter
from .graph import Graph, Node, Value
from .opdef import AttrSpec, InferContext, Roles, op

T = TypeVar("T")


class If:
    """Run one of two closed branches, as a typed view over an ``If`` node.

    Inputs ``(cond, *captured)``; both branches take ``captured`` as parameters and yield the
    same number of results, which are the node's outputs::

        def if_(cond, *captured):
            return then_branch(*captured) if bool(cond) else else_branch(*captured)

    ``cond`` holds one element (of any rank). Build one with ``If.build``; read one with
    ``If(node)``.
    """

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        if node.op != "If":
            raise GraphError(f"{node.describe()} is not an If")
        self.node = node

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def condition(self) -> Value | None:
        return self.node.inputs[0]

    @property
    def captured(self) -> list[Value | None]:
        return list(self.node.inputs[1:])

    @property
    def then_branch(self) -> Graph:
        branch: Graph = self.node.attrs["then_branch"]
        return branch

    @property
    def else_branch(self) -> Graph:
        branch: Graph = self.node.attrs["else_branch"]
        return branch

    def branch(self, cond: bool) -> Graph:
        """The branch that runs when the condition is ``cond``."""
        return self.then_branch if cond else self.else_branch

    @staticmethod
    def operands(
        condition: T, then_branch: Graph, else_branch: Graph, captured: Sequence[T] = ()
    ) -> tuple[list[T], dict[str, Any]]:
        """The flat inputs and attributes of an If node; ``If.build`` adds the node."""
        return [condition, *captured], {"then_branch": then_branch, "else_branch": else_branch}

    @staticmethod
    def build(
        em: Emitter,
        condition: Value,
        then_branch: Graph,
        else_branch: Graph,
        captured: Sequence[Value] = (),
        *,
        name: str = "",
    ) -> If:
        """Add a typed If node where ``em`` adds nodes; both branches take ``captured``."""
        inputs, attrs = If.operands(condition, then_branch, else_branch, captured)
        return If(em.node("If", list(inputs), attrs, name=name))

    @property
    def outputs(self) -> list[Value]:
        return list(self.node.outputs)


_IF_ATTRS = {
    "then_branch": AttrSpec(Graph, doc="closed graph run when cond is true"),
    "else_branch": AttrSpec(Graph, doc="closed graph run when cond is false"),
}


def _split_roles(inputs: Sequence[T | None], attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {"cond": inputs[0] if inputs else None, "captured": list(inputs[1:])}


def _join_roles(roles: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return [roles.get("cond"), *roles.get("captured", [])], {}


_IF_ROLES = Roles(singles=("cond",), lists=("captured",), split=_split_roles, join=_join_roles)


def _verify_if(node: Node, where: str, root: Graph) -> list[str]:
    view = If(node)
    problems: list[str] = []
    cond = view.condition
    if cond is None or not (isinstance(cond.type, TensorType) and cond.type.dtype.value == "bool"):
        problems.append(f"{where}: cond: expected a bool tensor, got {cond.type if cond else None}")
    captured = view.captured
    for key, branch in (("then_branch", view.then_branch), ("else_branch", view.else_branch)):
        if len(branch.inputs) != len(captured):
            problems.append(
                f"{where}: {key} takes {len(branch.inputs)} parameters, "
                f"the node passes {len(captured)}"
            )
            continue
        for c, (v, p) in enumerate(zip(captured, branch.inputs, strict=True)):
            if v is None or not p.type.compatible(v.type):
                problems.append(
                    f"{where}: {key} parameter #{c} expects {p.type}, "
                    f"got {v.type if v else 'nothing'}"
                )
    return problems


@op("If", inputs=(1, None), attrs=_IF_ATTRS, verify=_verify_if, roles=_IF_ROLES)
def _infer_if(ctx: InferContext) -> list[Type]:
    """The canonical branch; its meaning is the docstring of ``tensorloop.ir.branch.If``."""
    then_b: Graph = ctx.attr("then_branch")
    else_b: Graph = ctx.attr("else_branch")
    if len(then_b.outputs) != len(else_b.outputs):
        raise ctx.error(
            f"then_branch yields {len(then_b.outputs)} results, "
            f"else_branch yields {len(else_b.outputs)}"
        )
    out: list[Type] = []
    for i, (a, b) in enumerate(zip(then_b.outputs, else_b.outputs, strict=True)):
        try:
            out.append(a.type.join(b.type))
        except Exception:
            raise ctx.error(
                f"output #{i}: then_branch yields {a.type}, else_branch yields {b.type}"
            ) from None
    return out
