"""pyproject.toml's runtime dependencies are what the package imports: every third-party module
deepinfer/ imports comes from a runtime dependency (or one it requires), and every runtime
dependency is imported somewhere. Test-only helpers (deepinfer/testing.py) may use dev tools."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_ONLY = {"testing.py"}
# Optional extras (besides dev): their modules are imported inside functions only, by these files,
# so the base install imports deepinfer without them.
OPTIONAL_IMPORTS = {"ray": {"router/ray_env.py"}}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {canonical(re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]}


def imported_modules() -> set[str]:
    names = set()
    for path in (ROOT / "deepinfer").rglob("*.py"):
        if path.name in TEST_ONLY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n != "deepinfer" and n not in sys.stdlib_module_names and n not in OPTIONAL_IMPORTS}


def optional_extras() -> set[str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return {canonical(re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0])
            for name, deps in extras.items() if name != "dev" for dep in deps}


def top_level_imports(path: Path) -> set[str]:
    """Third-party modules a file imports at module level (run on `import deepinfer...`)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_optional_extras_are_imported_lazily_and_only_where_declared():
    extras = optional_extras()
    for module, files in OPTIONAL_IMPORTS.items():
        assert canonical(module) in extras, f"{module} is imported as optional but no extra provides it"
        dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
        assert any(canonical(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) == canonical(module) for d in dev), \
            f"the dev extra must include {module}: its tests need it"
    for path in (ROOT / "deepinfer").rglob("*.py"):
        rel = path.relative_to(ROOT / "deepinfer").as_posix()
        tree_names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tree_names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tree_names.add(node.module.split(".")[0])
        for module, files in OPTIONAL_IMPORTS.items():
            if module in tree_names:
                assert rel in files, f"{rel} imports optional {module}; only {sorted(files)} may"
                assert module not in top_level_imports(path), f"{rel} imports optional {module} at module level"


def required_by(distributions: set[str]) -> set[str]:
    """The distributions these require directly (their own runtime requirements, no extras)."""
    required = set()
    for dist in distributions:
        for requirement in metadata.requires(dist) or []:
            if "extra ==" not in requirement:
                required.add(canonical(re.split(r"[<>=!~\[; (]", requirement, maxsplit=1)[0]))
    return required


def test_every_imported_module_comes_from_a_runtime_dependency():
    runtime = runtime_dependencies()
    allowed = runtime | required_by(runtime)
    providers = metadata.packages_distributions()
    missing = {module: sorted(providers.get(module, ["?"])) for module in imported_modules()
               if not {canonical(d) for d in providers.get(module, [])} & allowed}
    assert not missing, f"imported by deepinfer/ but not a runtime dependency: {missing}"


def test_every_runtime_dependency_is_imported():
    providers = metadata.packages_distributions()
    provided = {canonical(d) for module in imported_modules() for d in providers.get(module, [])}
    unused = sorted(runtime_dependencies() - provided)
    assert not unused, f"runtime dependencies nothing in deepinfer/ imports: {unused}"
