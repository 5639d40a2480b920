"""The public API: every name in ``__all__`` is importable, documented and listed once."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib
import inspect
import re
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The packages whose __all__ is the public API (tensorloop.network only if it defines one).
MODULES = ["tensorloop", "tensorloop.network", "tensorloop.batch", "tensorloop.ray"]


def public_names(module: ModuleType) -> list[Any]:
    names = getattr(module, "__all__", None)
    if names is None and module.__name__ == "tensorloop":
        pytest.fail("tensorloop defines no __all__")
    if names is None:
        pytest.skip(f"{module.__name__} defines no __all__")
    return list(names)


def _cases() -> list[Any]:
    return [
        pytest.param(module_name, name, id=f"{module_name}.{name}")
        for module_name in MODULES
        for name in getattr(importlib.import_module(module_name), "__all__", ())
    ]


def _docs_text() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


def _generated_docstrings(obj: type) -> set[str]:
    """Docstrings Python writes for a class that has none of its own."""
    generated = {enum.Enum("Probe", "A").__doc__ or ""}
    if dataclasses.is_dataclass(obj):
        with contextlib.suppress(TypeError, ValueError):  # no signature: nothing generated
            generated.add(obj.__name__ + str(inspect.signature(obj)).replace(" -> None", ""))
    fields = getattr(obj, "_fields", None)
    if issubclass(obj, tuple) and fields is not None:  # a namedtuple
        args = ", ".join(fields) + ("," if len(fields) == 1 else "")
        generated.add(f"{obj.__name__}({args})")
    return generated


def own_docstring(obj: Any) -> str:
    """The docstring written for ``obj`` itself: not inherited, not generated."""
    if isinstance(obj, type):
        doc = vars(obj).get("__doc__") or ""
        return "" if doc in _generated_docstrings(obj) else doc.strip()
    return (getattr(obj, "__doc__", None) or "").strip()


def test_the_documentation_pages_exist() -> None:
    assert (ROOT / "README.md").is_file()
    assert list((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("module_name", MODULES)
def test_all_lists_strings_once(module_name: str) -> None:
    names = public_names(importlib.import_module(module_name))
    assert names, f"{module_name}.__all__ is empty"
    assert all(isinstance(n, str) for n in names), [n for n in names if not isinstance(n, str)]
    repeated = sorted(n for n, count in Counter(names).items() if count > 1)
    assert not repeated, f"{module_name}.__all__ lists these more than once: {repeated}"


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_is_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = public_names(module)
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"in {module_name}.__all__ but not defined: {missing}"
    namespace: dict[str, Any] = {}
    exec(f"from {module_name} import *", namespace)
    assert set(names) <= set(namespace)
    for name in names:
        assert namespace[name] is getattr(module, name)


@pytest.mark.parametrize(("module_name", "name"), _cases())
def test_every_public_name_is_documented(module_name: str, name: str) -> None:
    obj = getattr(importlib.import_module(module_name), name)
    if inspect.isroutine(obj) or (isinstance(obj, type) and not issubclass(obj, enum.Enum)):
        kind = "class" if isinstance(obj, type) else "function"
        assert own_docstring(obj), f"{module_name}.{name}: a {kind} without a docstring"
        return
    # Constants and enums: a docstring of their own (enums), or a mention in the docs.
    if isinstance(obj, type) and own_docstring(obj):
        return
    mentioned = re.search(rf"\b{re.escape(name)}\b", _docs_text())
    assert mentioned, (
        f"{module_name}.{name}: a constant or enum with no docstring that neither README.md "
        "nor docs/*.md mentions"
    )
