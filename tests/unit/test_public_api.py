"""What docs/public-api.md calls public exists as it says, and the release is named consistently.

Every module the page's table names is imported; each has an `__all__` (the exact public
names), every name in it exists, and `from module import *` gives exactly those names. The
installed distribution's version, `pegboard.__version__` and the changelog's latest release agree.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from pathlib import Path

import pytest

import pegboard

REPO = Path(__file__).resolve().parents[2]


def documented_modules() -> list[str]:
    """The modules of the page's first column: `a.b.{c,d}` expands; `.x` is a submodule of the
    row's first module."""
    text = (REPO / "docs" / "public-api.md").read_text()
    modules: list[str] = []
    for row in re.findall(r"^\| (`pegboard[^|]*)\|", text, flags=re.M):
        first = None
        for name in re.findall(r"`(pegboard[\w.{},]*|\.[\w.]+)`", row):
            first = first or name
            if name.startswith("."):
                name = first + name
            elif "{" in name:
                stem, alternatives = re.fullmatch(r"([\w.]+)\{([\w,]+)\}", name).groups()  # type: ignore[union-attr]
                modules += [stem + alternative for alternative in alternatives.split(",")]
                continue
            modules.append(name)
    return modules


def test_the_page_names_the_modules_users_import() -> None:
    modules = documented_modules()
    for expected in (
        "pegboard.adapters.fakes",
        "pegboard.adapters.fakes.cluster.script",
        "pegboard.domain.squarepeg.render",
        "pegboard.domain.ports.cluster",
        "pegboard.domain.gpujob.spec",
    ):
        assert expected in modules, modules


@pytest.mark.parametrize("name", documented_modules())
def test_every_public_module_says_what_is_public(name: str) -> None:
    module = importlib.import_module(name)
    if name == "pegboard":
        assert module.__version__
        return
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list) and exported, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = [item for item in exported if not hasattr(module, item)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"
    assert not [item for item in exported if item.startswith("_")]
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(exported)


def test_version_changelog_and_distribution_agree() -> None:
    assert importlib.metadata.version("pegboard") == pegboard.__version__
    changelog = (REPO / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$", changelog, flags=re.M)
    assert releases, "CHANGELOG.md names no release"
    assert releases[0] == pegboard.__version__
    assert "## Unreleased" in changelog.split(f"## {releases[0]}")[0]


def test_the_users_suite_imports_only_the_public_api() -> None:
    """tests/public_api is written as a user would: pegboard's public modules, nothing else of
    the repository's (no helpers, no pegboard.app, no real adapters)."""
    import ast

    public = set(documented_modules())
    allowed_outside = {"pytest", "yaml", "__future__", "importlib", "shutil", "pathlib", "json"}
    offending = []
    for path in sorted((REPO / "tests" / "public_api").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                allowed = name in public if top == "pegboard" else top in allowed_outside
                if not allowed:
                    offending.append(f"{path.name}: {name}")
    assert not offending, offending
