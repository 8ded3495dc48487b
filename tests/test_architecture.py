"""The package tree is the architecture: check the dependency rules between stages."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deepinfer"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules_under(subpackage: str):
    return sorted((PACKAGE / subpackage).rglob("*.py"))


def imports_any(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("path", modules_under("constraints"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_constraint_compiler_is_independent_of_engine_model_server(path):
    forbidden = ("deepinfer.engine", "deepinfer.model", "deepinfer.server", "deepinfer.kvcache",
                 "deepinfer.sampling", "deepinfer.cli")
    assert imports_any(imported_modules(path), forbidden) == []


@pytest.mark.parametrize("path", modules_under("constraints"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_bitmask_module_imports_torch(path):
    if path.name == "bitmask.py":
        return
    assert imports_any(imported_modules(path), ("torch",)) == []


@pytest.mark.parametrize("path", modules_under("model"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_model_code_knows_nothing_of_engine_or_constraints(path):
    forbidden = ("deepinfer.engine", "deepinfer.server", "deepinfer.constraints", "deepinfer.sampling")
    assert imports_any(imported_modules(path), forbidden) == []


@pytest.mark.parametrize("path", modules_under("native"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_native_kernels_know_nothing_of_the_stages_that_call_them(path):
    deepinfer = {m for m in imported_modules(path) if m.startswith("deepinfer")}
    assert deepinfer <= {"deepinfer.resources", "deepinfer.native", "deepinfer.native.build"}


@pytest.mark.parametrize("subpackage", ["model", "engine", "kvcache", "sampling", "constraints",
                                        "server", "tokenizer", "native"])
def test_every_subpackage_says_what_it_owns(subpackage):
    init = PACKAGE / subpackage / "__init__.py"
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} needs a docstring"
