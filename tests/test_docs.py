"""The documentation stays true to the tree.

- docs/architecture.md names every module of deepinfer/ (and every C kernel source), so a new
  module cannot land without its line;
- every file path the README or docs/ name in inline code exists, so a removed or renamed
  module cannot linger in the docs;
- every relative link resolves, and no editing markers are left behind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "deepinfer"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ROOT_FOLDERS = ("tests/", "benchmarks/", "examples/", "deepinfer/", "docs/", "grammars/", "constraints/README")
CODE_PATH = re.compile(r"`([\w./-]+\.(?:py|c|h))`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def package_modules() -> set[str]:
    sources = {p for p in PACKAGE.rglob("*.py")} | set((PACKAGE / "native" / "csrc").glob("*.[ch]"))
    return {p.relative_to(PACKAGE).as_posix() for p in sources if "__pycache__" not in p.parts}


def resolve(path: str) -> Path:
    """Paths in the docs are relative to deepinfer/, except those that name a top-level folder."""
    return ROOT / path if path.startswith(ROOT_FOLDERS) else PACKAGE / path


def named_paths(page: Path) -> set[str]:
    return set(CODE_PATH.findall(page.read_text(encoding="utf-8")))


def test_architecture_names_every_module():
    named = named_paths(ARCHITECTURE)
    missing = sorted(package_modules() - named)
    assert not missing, f"docs/architecture.md has no line for: {', '.join(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_named_paths_exist(page):
    gone = sorted(p for p in named_paths(page) if not resolve(p).exists())
    assert not gone, f"{page.relative_to(ROOT)} names files that do not exist: {', '.join(gone)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page):
    links = [link for link in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in link]
    broken = sorted(link for link in links if not (page.parent / link).exists())
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {', '.join(broken)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_editing_markers(page):
    text = page.read_text(encoding="utf-8")
    assert "<!-- section" not in text and "<!-- /section" not in text


def test_readme_lists_every_environment_variable():
    from deepinfer import envs

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert envs.markdown_table() in readme, "README's environment table differs from deepinfer.envs.markdown_table()"
