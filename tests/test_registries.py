"""Registry coverage: ops, type rules, kernels and the converters that emit core ops agree."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx
import pytest

import tensorloop
from tensorloop.formats.onnx.convert import find_converter
from tensorloop.formats.openvino.convert import known_layer_types
from tensorloop.ir.opdef import get_opdef, registered_ops
from tensorloop.reference.registry import kernel_ops

PACKAGE = Path(tensorloop.__file__).resolve().parent

# -- (a) every op has a type rule and a reference kernel -----------------------------------------


def test_every_registered_op_has_a_type_rule() -> None:
    ops = registered_ops()
    assert len(ops) > 100
    assert [name for name in ops if not callable(get_opdef(name).infer)] == []


def test_every_registered_op_has_a_reference_kernel() -> None:
    missing = sorted(set(registered_ops()) - set(kernel_ops()))
    assert missing == [], f"ops with no reference kernel: {missing}"


def test_every_reference_kernel_belongs_to_a_registered_op() -> None:
    orphans = sorted(set(kernel_ops()) - set(registered_ops()))
    assert orphans == [], f"kernels of ops no type rule defines: {orphans}"


# -- (b) the converter registries ----------------------------------------------------------------
# Domains whose ops the ONNX importer maps to the same-named core op when no converter is
# registered (see _CORE_DOMAINS in tensorloop/formats/onnx/reader.py).
SAME_NAMED_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview.training")


def _latest_opsets() -> dict[str, int]:
    latest: dict[str, int] = defaultdict(int)
    for schema in onnx.defs.get_all_schemas_with_history():
        latest[schema.domain] = max(latest[schema.domain], schema.since_version)
    return latest


LATEST = _latest_opsets()
SCHEMAS = {(s.domain, s.name): s for s in onnx.defs.get_all_schemas()}  # the newest of each


def _has_converter(domain: str, op_type: str) -> bool:
    return find_converter(domain, op_type, LATEST[domain]) is not None


def test_the_onnx_converter_registry_is_not_empty() -> None:
    converted = sorted(n for d, n in SCHEMAS if _has_converter(d, n))
    assert len(converted) >= 10, converted
    assert {"Loop", "If", "Scan"} <= set(converted)


def test_the_openvino_converter_registry_is_not_empty() -> None:
    layer_types = set(known_layer_types()) - {"Parameter", "Result", "Const"}
    assert len(layer_types) >= 10, sorted(layer_types)
    assert {"Loop", "TensorIterator"} <= layer_types


def _same_named_ops() -> list[tuple[str, str]]:
    core = set(registered_ops())
    return sorted(
        (d, n)
        for d, n in SCHEMAS
        if d in SAME_NAMED_DOMAINS and n in core and not _has_converter(d, n)
    )


# Attributes of the newest ONNX schema that the same-named core op does not take yet, by op
# (none today; a newer onnx may add some).
KNOWN_SCHEMA_GAPS: dict[str, set[str]] = {}


def test_ops_imported_as_their_same_named_core_op_exist() -> None:
    same = _same_named_ops()
    assert len(same) > 100, same
    assert set(KNOWN_SCHEMA_GAPS) <= {n for _, n in same}


def test_the_known_schema_gaps_are_still_open() -> None:
    """So the list above only shrinks: a gap that gets closed fails here until it is dropped."""
    closed = {op: gap & set(get_opdef(op).attrs) for op, gap in KNOWN_SCHEMA_GAPS.items()}
    assert {op: gap for op, gap in closed.items() if gap} == {}


@pytest.mark.parametrize(
    ("domain", "op_type"),
    [pytest.param(d, n, id=f"{d}.{n}" if d else n) for d, n in _same_named_ops()],
)
def test_a_same_named_core_op_takes_the_onnx_schema(domain: str, op_type: str) -> None:
    """With no converter, the importer hands the node's inputs and attributes to the core op as
    they are: the core op must take every attribute and input count the newest ONNX schema
    allows (an attribute it does not know is refused at import)."""
    schema, opdef = SCHEMAS[(domain, op_type)], get_opdef(op_type)
    known = KNOWN_SCHEMA_GAPS.get(op_type, set())
    unknown = sorted(set(schema.attributes) - set(opdef.attrs) - known)
    assert unknown == [], f"{op_type}: ONNX attributes the core op does not take: {unknown}"
    assert opdef.min_inputs <= schema.min_input, (opdef.min_inputs, schema.min_input)
    assert opdef.max_inputs is None or opdef.max_inputs >= schema.max_input, (
        opdef.max_inputs,
        schema.max_input,
    )


# -- (b) the core op names that converters, lowerings, passes and the builder emit ---------------
# Calls that add a core op, its name the first positional argument: Emitter.op/ops/node, the
# converters' ctx.op/op1, Graph.add_node and the builder's emit/emit_node. Names bound to these
# (``add = em.op``) and functions that pass a parameter on as the op name (``_binary(op, a, b)``,
# ``_core_binary(op)``) count too, as do literals a comprehension feeds them
# (``_unary(o) for o in ("Neg", "Abs")``), and class methods that add one op of a fixed name
# (``Loop.build(em, ...)``).
CORE_CALLEES = frozenset({"op", "op1", "ops", "node", "add_node", "emit", "emit_node"})
# The format writers (formats/*/export*.py, write*.py) are left out: their op/node/layer calls
# name ONNX or OpenVINO ops instead.
WRITER_PREFIXES = ("export", "write")
SCANNED = ("formats", "network", "passes", "builder")

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class OpUse:
    module: str
    line: int
    op: str
    call: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.call}({self.op!r}, ...)"


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _imports(module: str, is_package: bool, tree: ast.Module) -> dict[str, tuple[str, str]]:
    """``name -> (module, original name)`` for the module's ``from ... import`` statements."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = module.split(".") if is_package else module.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                out[alias.asname or alias.name] = (source, alias.name)
    return out


def _params(fn: Function, method: bool) -> list[str]:
    """The positional parameters a call passes arguments to (a method's self or cls bound)."""
    names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    return names[1:] if method and not static else names


def _literal_strings(node: ast.expr) -> list[str]:
    """The strings of a tuple or list written out as string literals, else []."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List) else []
    values = [e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return values if items and len(values) == len(items) else []


class _Scanner:
    """Finds the string literals that calls pass as core op names, in modules given as source."""

    def __init__(self, sources: Mapping[str, tuple[str, bool]]) -> None:
        """``sources``: module name -> (source text, whether it is a package's __init__)."""
        self.trees = {m: ast.parse(text) for m, (text, _) in sources.items()}
        self.imports = {m: _imports(m, sources[m][1], t) for m, t in self.trees.items()}
        self.defs: dict[str, dict[str, list[Function]]] = {}
        self.classes: dict[str, dict[str, ast.ClassDef]] = {}
        self.methods: set[Function] = set()
        for m, tree in self.trees.items():
            self.defs[m], self.classes[m] = defaultdict(list), {}
            for node in ast.walk(tree):
                if isinstance(node, Function):
                    self.defs[m][node.name].append(node)
                elif isinstance(node, ast.ClassDef):
                    self.classes[m][node.name] = node
                    self.methods.update(n for n in node.body if isinstance(n, Function))
        self.forwards: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.aliases: dict[str, dict[str, set[int]]] = {m: {} for m in self.trees}
        self.method_ops: dict[tuple[str, str, str], list[str]] = {}
        changed = True
        while changed:  # to a fixed point: helpers that call helpers
            changed = self._find_aliases() | self._find_forwarders()

    def _resolve(self, module: str, name: str, table: Mapping[str, Mapping[str, object]]) -> str:
        """The module that defines ``name`` as seen from ``module`` ("" if none scanned does)."""
        if name in table[module]:
            return module
        source, original = self.imports[module].get(name, ("", ""))
        return source if source in table and original in table[source] else ""

    def positions(self, module: str, func: ast.expr) -> set[int]:
        """Which positional arguments of a call to ``func`` name a core op."""
        if isinstance(func, ast.Attribute):
            return {0} if func.attr in CORE_CALLEES else set()
        if not isinstance(func, ast.Name):
            return set()
        name = func.id
        where = self._resolve(module, name, self.defs)
        if where:
            original = self.imports[module][name][1] if where != module else name
            return self.forwards[(where, original)]
        if name in self.aliases[module]:
            return self.aliases[module][name]
        original = self.imports[module].get(name, ("", name))[1]
        return {0} if original in CORE_CALLEES else set()

    def fixed_ops(self, module: str, func: ast.expr) -> list[str]:
        """The op names a class method adds whatever its arguments (``Loop.build``: Loop)."""
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return []
        where = self._resolve(module, func.value.id, self.classes)
        if not where:
            return []
        cls = self.imports[module][func.value.id][1] if where != module else func.value.id
        key = (where, cls, func.attr)
        if key not in self.method_ops:
            self.method_ops[key] = []  # a method that calls itself adds nothing more
            methods = [
                n
                for n in self.classes[where][cls].body
                if isinstance(n, Function) and n.name == func.attr
            ]
            self.method_ops[key] = [u.op for m in methods for u in self._visit(where, m, {})]
        return self.method_ops[key]

    def _find_aliases(self) -> bool:
        changed = False
        for m, tree in self.trees.items():
            for node in ast.walk(tree):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    pairs = (
                        zip(target.elts, node.value.elts, strict=False)
                        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                        else [(target, node.value)]
                    )
                    for t, v in pairs:
                        if isinstance(t, ast.Name) and isinstance(v, ast.Attribute | ast.Name):
                            known = self.aliases[m].get(t.id, set())
                            found = self.positions(m, v)
                            if found - known:
                                self.aliases[m][t.id] = known | found
                                changed = True
        return changed

    def _find_forwarders(self) -> bool:
        changed = False
        for m, defs in self.defs.items():
            for name, fns in defs.items():
                for fn in fns:
                    params = _params(fn, fn in self.methods)
                    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                        for pos in self.positions(m, call.func):
                            arg = call.args[pos] if pos < len(call.args) else None
                            if isinstance(arg, ast.Name) and arg.id in params:
                                index = params.index(arg.id)
                                if index not in self.forwards[(m, name)]:
                                    self.forwards[(m, name)].add(index)
                                    changed = True
        return changed

    def uses(self, module: str) -> list[OpUse]:
        """Every string literal that a call in ``module`` passes as a core op name."""
        return list(self._visit(module, self.trees[module], {}))

    def _visit(self, module: str, node: ast.AST, bound: dict[str, list[str]]) -> Iterator[OpUse]:
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            bound = dict(bound)
            for gen in node.generators:
                if isinstance(gen.target, ast.Name) and _literal_strings(gen.iter):
                    bound[gen.target.id] = _literal_strings(gen.iter)
        if isinstance(node, ast.Call):
            call = ast.unparse(node.func)
            for pos in sorted(self.positions(module, node.func)):
                arg = node.args[pos] if pos < len(node.args) else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield OpUse(module, node.lineno, arg.value, call)
                elif isinstance(arg, ast.Name) and arg.id in bound:
                    for value in bound[arg.id]:
                        yield OpUse(module, node.lineno, value, call)
            for op in self.fixed_ops(module, node.func):
                yield OpUse(module, node.lineno, op, call)
        for child in ast.iter_child_nodes(node):
            yield from self._visit(module, child, bound)


def _package_sources() -> dict[str, tuple[str, bool]]:
    return {
        _module_name(path, PACKAGE, "tensorloop"): (
            path.read_text(encoding="utf-8"),
            path.name == "__init__.py",
        )
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _scanned(module: str) -> str | None:
    """The area of the package a module belongs to, or None when it is not scanned."""
    parts = module.split(".")[1:]
    if not parts or parts[0] not in SCANNED:
        return None
    if parts[0] != "formats":
        return parts[0]
    if parts[-1].startswith(WRITER_PREFIXES):
        return None
    sub = len(parts) > 2 or (len(parts) == 2 and (PACKAGE / "formats" / parts[1]).is_dir())
    return f"formats.{parts[1]}" if sub else "formats"


def _collect_uses() -> dict[str, list[OpUse]]:
    uses: dict[str, list[OpUse]] = defaultdict(list)
    for module in SCANNER.trees:
        area = _scanned(module)
        if area is not None:
            uses[area].extend(SCANNER.uses(module))
    return uses


SCANNER = _Scanner(_package_sources())
USES = _collect_uses()
AREAS = ["formats", "formats.onnx", "formats.openvino", "network", "passes", "builder"]


@pytest.mark.parametrize("area", AREAS)
def test_every_core_op_name_emitted_is_registered(area: str) -> None:
    uses = USES[area]
    assert len(uses) >= 3, f"the scan found almost no op names in {area}: {uses}"
    registered = set(registered_ops())
    unknown = [str(u) for u in uses if u.op not in registered]
    assert unknown == [], "calls that name no registered op:\n" + "\n".join(unknown)


@pytest.mark.parametrize(
    ("area", "ops"),
    [
        ("formats.onnx", {"Loop", "If"}),
        ("formats.openvino", {"Loop"}),
        ("formats", {"Loop"}),  # formats/rnn.py
        ("network", {"Loop"}),
        ("builder", {"Loop", "If"}),
    ],
)
def test_the_scan_sees_the_calls_that_build_loops_and_branches(area: str, ops: set[str]) -> None:
    assert ops <= {u.op for u in USES[area]}


def test_the_scan_follows_aliases_helpers_comprehensions_and_builders() -> None:
    sources = {
        "pkg.helpers": (
            "def binary(op, a, b):\n"
            "    return emit(op, [a, b])\n"
            "def layer(name):\n"
            "    return lambda ctx, x: ctx.em.op(name, [x])\n"
            "class Thing:\n"
            "    @staticmethod\n"
            "    def build(em, x):\n"
            "        return em.node('NoSuchOpG', [x])\n",
            False,
        ),
        "pkg.user": (
            "from .helpers import Thing, binary, layer\n"
            "def build(em, g, x):\n"
            "    add = em.op\n"
            "    add('NoSuchOpA', [x])\n"
            "    g.add_node('NoSuchOpB', [x], {})\n"
            "    binary('NoSuchOpC', x, x)\n"
            "    table = {'Plus': layer('NoSuchOpD')}\n"
            "    fns = [layer(o) for o in ('NoSuchOpE', 'NoSuchOpF')]\n"
            "    net.layer('NotACoreCall', [x])\n"
            "    return em.ops('Loop', [x]), Thing.build(em, x), table, fns\n",
            False,
        ),
    }
    found = [(u.op, u.line) for u in _Scanner(sources).uses("pkg.user")]
    assert found == [
        ("NoSuchOpA", 4),
        ("NoSuchOpB", 5),
        ("NoSuchOpC", 6),
        ("NoSuchOpD", 7),
        ("NoSuchOpE", 8),
        ("NoSuchOpF", 8),
        ("Loop", 10),
        ("NoSuchOpG", 10),
    ]
