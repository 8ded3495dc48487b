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
    deepinfer = {m for m, _ in resolved_imports(path) if m.startswith("deepinfer")}
    assert deepinfer <= {"deepinfer.resources", "deepinfer.envs", "deepinfer.errors", "deepinfer.native",
                         "deepinfer.native.build", "deepinfer.native.kernels"}


@pytest.mark.parametrize("subpackage", ["model", "engine", "kvcache", "sampling", "constraints",
                                        "server", "tokenizer", "native", "parallel",
                                        "router"])
def test_every_subpackage_says_what_it_owns(subpackage):
    init = PACKAGE / subpackage / "__init__.py"
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} needs a docstring"


# ---------------------------------------------------------------- the import graph
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def resolved_imports(path: Path) -> list[tuple[str, bool]]:
    """(absolute deepinfer module, imported inside a function) for every import in a file,
    relative imports resolved; `from package import submodule` names the submodule."""
    current = module_name(path)
    is_package = path.name == "__init__.py"
    found: list[tuple[str, bool]] = []

    def target(base: str, name: str) -> str:
        return f"{base}.{name}" if f"{base}.{name}" in MODULES else base

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, nested) for a in child.names if a.name.startswith("deepinfer"))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parts = current.split(".") if is_package else current.split(".")[:-1]
                    parts = parts[: len(parts) - (child.level - 1)]
                    base = ".".join(parts + ([child.module] if child.module else []))
                else:
                    base = child.module or ""
                if base.startswith("deepinfer"):
                    found.extend((target(base, a.name), nested) for a in child.names)
            visit(child, nested)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


GRAPH = {name: {m for m, _ in resolved_imports(path) if m in MODULES and m != name}
         for name, path in MODULES.items()}


def find_cycle() -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def test_no_import_cycle_anywhere():
    cycle = find_cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def stage_of(module: str) -> str:
    """The stage a module belongs to: a top-level subpackage, or within the constraint compiler
    one of its stages (`constraints.ir`, ...) or its public API (`constraints.api`)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "deepinfer"
    if parts[1] == "constraints" and len(parts) > 2:
        if parts[2] in ("ir", "regular", "cfg", "frontends"):
            return "constraints." + parts[2]
        if parts[2] in ("automaton", "errors", "vocab", "bitmask", "deadline"):
            return "constraints.base"
        return "constraints.api"
    return parts[1]


# Which stages each stage may import (besides itself). Anything not listed is upward.
FOUNDATION = {"errors", "types", "resources", "envs"}
ALLOWED = {
    "errors": set(), "resources": set(), "envs": set(), "memory": set(), "types": {"errors"},
    "native": {"resources", "envs", "errors"},
    "tokenizer": FOUNDATION,
    "sampling": FOUNDATION,
    "constraints.base": FOUNDATION | {"native"},
    "constraints.ir": FOUNDATION | {"constraints.base"},
    "constraints.regular": FOUNDATION | {"native", "constraints.base", "constraints.ir"},
    "constraints.cfg": FOUNDATION | {"native", "constraints.base", "constraints.ir", "constraints.regular"},
    "constraints.frontends": FOUNDATION | {"constraints.base", "constraints.ir", "constraints.regular"},
    "constraints.api": FOUNDATION | {"native", "constraints.base", "constraints.ir", "constraints.regular",
                                     "constraints.cfg", "constraints.frontends"},
    "constraints": FOUNDATION | {"constraints.base", "constraints.api", "constraints.regular"},
    "kvcache": FOUNDATION | {"native"},
    "model": FOUNDATION | {"native", "tokenizer"},
    # parallel runs engines per rank (disaggregation) and reshapes their models (expert parallelism)
    "parallel": FOUNDATION | {"native", "tokenizer", "model", "kvcache", "engine"},
    "router": FOUNDATION | {"engine", "kvcache", "tokenizer"},
}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) in ALLOWED))
def test_no_upward_import_between_stages(module):
    here = stage_of(module)
    upward = sorted(m for m in GRAPH[module] if stage_of(m) != here and stage_of(m) not in ALLOWED[here])
    assert upward == [], f"{module} ({here}) imports {upward}"


ENGINE_PUBLIC = {"deepinfer.engine", "deepinfer.constraints", "deepinfer.constraints.compose",
                 "deepinfer.constraints.errors"}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) == "server"))
def test_server_speaks_to_engine_and_constraints_only_through_their_public_api(module):
    inner = sorted(m for m in GRAPH[module]
                   if stage_of(m) in ("engine", "constraints", "constraints.api", "constraints.base",
                                      "constraints.ir", "constraints.regular", "constraints.cfg",
                                      "constraints.frontends", "model", "kvcache", "sampling")
                   and m not in ENGINE_PUBLIC)
    assert inner == [], f"{module} reaches into {inner}"


def matcher_methods() -> set[str]:
    tree = ast.parse((PACKAGE / "constraints" / "matcher.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Matcher")
    return {f.name for f in cls.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")}


GUIDED = "deepinfer.engine.guided"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) == "engine" and m != GUIDED))
def test_only_one_engine_module_drives_the_matcher(module):
    methods = matcher_methods() - {"reset", "state"}
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    touches = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "Matcher":
            touches.add("Matcher")
        elif isinstance(node, ast.alias) and node.name == "Matcher":
            touches.add("Matcher")
        elif isinstance(node, ast.Attribute) and node.attr in methods:
            touches.add(node.attr)
    assert not touches, f"{module} drives the Matcher ({sorted(touches)}); only {GUIDED} may"


# Function-level imports of the package's own modules are for start-up cost only: the CLI
# imports a subcommand's stack when that subcommand runs, the package root its heavy API lazily.
LAZY_IMPORTERS = ("deepinfer", "deepinfer.cli", "deepinfer.constraints")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_function_level_import_of_the_package(module):
    if module in LAZY_IMPORTERS or module.startswith("deepinfer.cli."):
        return
    lazy = sorted({m for m, nested in resolved_imports(MODULES[module]) if nested})
    assert lazy == [], f"{module} imports {lazy} inside a function"
