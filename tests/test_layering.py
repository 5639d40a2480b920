"""The import direction between tensorloop's layers, read from the source with ``ast``."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

_SPEC = importlib.util.find_spec("tensorloop")  # where the package is, without importing it
assert _SPEC is not None and _SPEC.origin is not None
PACKAGE = Path(_SPEC.origin).resolve().parent
ROOT = "tensorloop"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    name: str  # the tensorloop module it imports
    line: int

    def __str__(self) -> str:
        return f"{self.module} imports {self.name} (line {self.line})"


def module_name(path: Path, package_dir: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([ROOT, *parts])


def is_module(name: str, package_dir: Path = PACKAGE) -> bool:
    """Whether ``name`` (tensorloop.x.y) is a module or package of the source tree."""
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (package_dir / rel).with_suffix(".py").is_file() or (package_dir / rel).is_dir()


def imports_of(
    module: str, source: str, is_package: bool, package_dir: Path = PACKAGE
) -> list[Import]:
    """The tensorloop modules ``module`` imports, at any depth (in functions, under
    TYPE_CHECKING, in try blocks), relative imports resolved; ``from a import b`` names a.b if
    that is a module, else a."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source_module = node.module or ""
            for alias in node.names:
                sub = f"{source_module}.{alias.name}"
                if sub.startswith(f"{ROOT}.") and is_module(sub, package_dir):
                    found.append(Import(module, sub, node.lineno))
                else:
                    found.append(Import(module, source_module, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(Import(module, node.args[0].value, node.lineno))
    return [i for i in found if i.name == ROOT or i.name.startswith(f"{ROOT}.")]


def _all_imports() -> list[Import]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out += imports_of(module_name(path), text, path.name == "__init__.py")
    return out


IMPORTS = _all_imports()


def in_layer(module: str, layer: str) -> bool:
    """``module`` is ``layer`` or inside it."""
    return module == layer or module.startswith(f"{layer}.")


LAYERS: tuple[tuple[str, ...], ...] = (
    ("tensorloop.errors",),
    ("tensorloop.tensor",),
    ("tensorloop.ir",),
    ("tensorloop.ops", "tensorloop.limits"),
    ("tensorloop.reference",),
    ("tensorloop.passes",),
    ("tensorloop.autodiff",),
    ("tensorloop.backends",),
    ("tensorloop.builder",),
    ("tensorloop.model",),
    ("tensorloop.train",),
    ("tensorloop.formats", "tensorloop.network"),
    ("tensorloop.io",),
    ("tensorloop.tools",),
    ("tensorloop.batch",),
    ("tensorloop.ray",),
    ("tensorloop.cli",),
    ("tensorloop.__main__",),
)
"""tensorloop's layers, lowest first (docs/architecture.md draws them). A module may import its
own layer's package and any lower layer; packages that share a layer do not import each other.
The bare ``tensorloop`` (its ``__init__`` gathers the public API) sits above all but the
command line, which ``python -m tensorloop`` (``__main__``) runs."""


def layer_of(module: str) -> int | None:
    for k, layer in enumerate(LAYERS):
        if any(in_layer(module, p) for p in layer):
            return k
    return None


def package_of(module: str) -> str | None:
    return next((p for layer in LAYERS for p in layer if in_layer(module, p)), None)


def against_the_layers(imp: Import) -> bool:
    """Whether ``imp`` goes upwards, sideways between packages of one layer, or (from anywhere
    but the command line) into the bare package."""
    if imp.name == ROOT:
        return imp.module != ROOT
    low, high = layer_of(imp.module), layer_of(imp.name)
    if imp.module == ROOT:
        return high is None or high >= layer_of("tensorloop.cli")
    assert low is not None, f"{imp.module} is in no layer: add it to LAYERS"
    assert high is not None, f"{imp.name} is in no layer: add it to LAYERS"
    return high > low or (high == low and package_of(imp.module) != package_of(imp.name))


def test_imports_go_one_way() -> None:
    bad = [imp for imp in IMPORTS if against_the_layers(imp)]
    assert not bad, f"{len(bad)} import(s) against the layering:\n" + "\n".join(map(str, bad))


def test_every_module_is_in_a_layer() -> None:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")} - {ROOT}
    assert [m for m in sorted(modules) if layer_of(m) is None] == []


def test_the_layer_rule_refuses_what_it_should() -> None:
    def imp(module: str, name: str) -> Import:
        return Import(module, name, 1)

    assert against_the_layers(imp("tensorloop.ir.graph", "tensorloop.ops.math"))
    assert against_the_layers(imp("tensorloop.passes.fold_constants", "tensorloop.backends.base"))
    assert against_the_layers(imp("tensorloop.reference.interpreter", "tensorloop.passes"))
    assert against_the_layers(imp("tensorloop.model", "tensorloop.tools.trace"))
    assert against_the_layers(imp("tensorloop.ops.math", "tensorloop.limits"))  # one layer, two
    assert against_the_layers(imp("tensorloop.formats.onnx", "tensorloop"))
    assert against_the_layers(imp("tensorloop", "tensorloop.cli"))
    assert not against_the_layers(imp("tensorloop.passes.fold_constants", "tensorloop.reference"))
    assert not against_the_layers(imp("tensorloop.backends.jax", "tensorloop.backends.compiled"))
    assert not against_the_layers(imp("tensorloop", "tensorloop.model"))
    assert not against_the_layers(imp("tensorloop.__main__", "tensorloop.cli"))


def test_the_scan_reads_every_module() -> None:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    assert {"tensorloop", "tensorloop.cli", "tensorloop.ir.graph"} <= modules
    importers = {i.module for i in IMPORTS}
    assert len(importers) > len(modules) // 2
    assert ("tensorloop.ir.graph", "tensorloop.errors") in {(i.module, i.name) for i in IMPORTS}


def test_imports_are_found_at_any_depth_and_resolved(tmp_path: Path) -> None:
    pkg = tmp_path / "tensorloop"
    for sub in ("ir", "ops", "tensor"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "ir" / "graph.py").write_text("")
    source = (
        "from typing import TYPE_CHECKING\n"  # 1
        "import numpy\n"  # 2
        "from ..errors import GraphError\n"  # 3
        "from . import graph\n"  # 4
        "from .graph import Graph\n"  # 5
        "if TYPE_CHECKING:\n"  # 6
        "    from ..tensor import types\n"  # 7
        "def load():\n"  # 8
        "    from .. import ops\n"  # 9
        "    import tensorloop.ops\n"  # 10
        "    from tensorloop import Model\n"  # 11
        "    return importlib.import_module('tensorloop.cli')\n"  # 12
    )
    found = imports_of("tensorloop.ir.opdef", source, False, pkg)
    assert [(i.name, i.line) for i in found] == [
        ("tensorloop.errors", 3),
        ("tensorloop.ir.graph", 4),
        ("tensorloop.ir.graph", 5),
        ("tensorloop.tensor", 7),
        ("tensorloop.ops", 9),
        ("tensorloop.ops", 10),
        ("tensorloop", 11),
        ("tensorloop.cli", 12),
    ]
    bad = [i for i in found if against_the_layers(i)]
    assert [(i.name, i.line) for i in bad] == [
        ("tensorloop.ops", 9),
        ("tensorloop.ops", 10),
        ("tensorloop", 11),
        ("tensorloop.cli", 12),
    ]
