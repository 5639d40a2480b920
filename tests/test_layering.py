"""The import direction between tensorloop's layers, read from the source with ``ast``."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def names(imported: str, target: str) -> bool:
    """An import of ``imported`` is one of ``target``; the bare package names only itself."""
    return imported == target if target == ROOT else in_layer(imported, target)


@dataclass(frozen=True)
class Rule:
    layer: str  # the importing modules: this package and its submodules (all, for tensorloop)
    allowed: tuple[str, ...] | None = None  # if given, the only tensorloop modules it may import
    forbidden: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()  # importing modules the rule leaves out

    def breaks(self, imp: Import) -> bool:
        if not in_layer(imp.module, self.layer) or any(
            in_layer(imp.module, e) for e in self.exempt
        ):
            return False
        if self.allowed is not None and not any(names(imp.name, a) for a in self.allowed):
            return True
        return any(names(imp.name, f) for f in self.forbidden)

    def violations(self, imports: list[Import]) -> list[Import]:
        return [imp for imp in imports if self.breaks(imp)]


_FRONT = ("formats", "builder", "network", "model", "io", "cli")
RULES = {
    # The bare "tensorloop" (its __init__ imports every layer) counts as a layer of its own.
    "tensor imports only errors": Rule(
        "tensorloop.tensor", allowed=("tensorloop.errors", "tensorloop.tensor")
    ),
    "ir imports only errors and tensor": Rule(
        "tensorloop.ir", allowed=("tensorloop.errors", "tensorloop.tensor", "tensorloop.ir")
    ),
    "ops imports only errors, tensor and ir": Rule(
        "tensorloop.ops",
        allowed=("tensorloop.errors", "tensorloop.tensor", "tensorloop.ir", "tensorloop.ops"),
    ),
    "passes imports no front end and not the reference backend": Rule(
        "tensorloop.passes",
        forbidden=(ROOT, *(f"{ROOT}.{p}" for p in _FRONT), "tensorloop.backends.reference"),
    ),
    "backends import no front end": Rule(
        "tensorloop.backends", forbidden=(ROOT, *(f"{ROOT}.{p}" for p in _FRONT))
    ),
    "only the command line imports the command line": Rule(
        ROOT, forbidden=("tensorloop.cli",), exempt=("tensorloop.cli", "tensorloop.__main__")
    ),
}


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_imports_go_one_way(rule: Rule) -> None:
    assert any(in_layer(i.module, rule.layer) for i in IMPORTS), f"no module in {rule.layer}"
    bad = rule.violations(IMPORTS)
    assert not bad, f"{len(bad)} import(s) against the layering:\n" + "\n".join(map(str, bad))


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
    bad = RULES["ir imports only errors and tensor"].violations(found)
    assert [(i.name, i.line) for i in bad] == [
        ("tensorloop.ops", 9),
        ("tensorloop.ops", 10),
        ("tensorloop", 11),
        ("tensorloop.cli", 12),
    ]
    cli = RULES["only the command line imports the command line"]
    assert [(i.module, i.line) for i in cli.violations(found)] == [("tensorloop.ir.opdef", 12)]
    assert cli.violations([Import("tensorloop.__main__", "tensorloop.cli", 1)]) == []
    assert cli.violations([Import("tensorloop", "tensorloop.cli.main", 1)]) != []
