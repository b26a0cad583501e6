"""The layering of architecture §10.1, checked on the source: who may import whom, and how long
functions in the Pulumi code may grow."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

MAX_FUNCTION_LINES = 60
"""No function in components/ or stacks/ longer than this (statements, not docstrings)."""


def _sources(*roots: str) -> list[Path]:
    return sorted(p for root in roots for p in (REPO / root).rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module `path` imports (absolute names), with its line."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _violations(roots: tuple[str, ...], allowed: tuple[str, ...], scope: str = "clusterfab") -> list[str]:
    found = []
    for path in _sources(*roots):
        for line, module in _imports(path):
            ours = module == scope or module.startswith(scope + ".")
            if ours and not any(module == a or module.startswith(a + ".") for a in allowed):
                found.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    return found


@pytest.mark.parametrize(
    ("layer", "allowed"),
    [
        ("clusterfab/core", ("clusterfab.core",)),
        ("clusterfab/blueprint", ("clusterfab.core", "clusterfab.blueprint")),
        ("clusterfab/catalog", ("clusterfab.core", "clusterfab.catalog")),
    ],
)
def test_the_bottom_layers_import_only_what_is_below_them(layer: str, allowed: tuple[str, ...]) -> None:
    assert _violations((layer,), allowed) == []


def test_components_import_only_pulumi_their_own_helpers_the_vocabulary_and_naming() -> None:
    # Naming is shared with the hosts' settings, which must name what a component creates (a controller
    # finds its accounting database by name).
    assert _violations(("components",), ("clusterfab.core.vocab", "clusterfab.core.naming")) == []
    third_party = {
        module.split(".")[0]
        for path in _sources("components")
        for _, module in _imports(path)
        if not module.startswith(("clusterfab", "components", "__future__"))
    }
    assert third_party <= {
        "pulumi",
        "pulumi_aws",
        "pulumi_gcp",
        "base64",
        "json",
        "re",
        "ipaddress",
        "hashlib",
        "collections",
        "dataclasses",
        "typing",
        "pathlib",
        "decimal",
        "time",
        # The health signing key's dynamic provider makes the key (at `pulumi up` only).
        "secrets",
        # The TPU queued resource's dynamic provider calls Google's API itself (at `pulumi up` only).
        "google",
    }


def test_the_library_never_imports_the_components() -> None:
    assert _violations(("clusterfab",), (), scope="components") == []


def _functions(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring does not count
            if body:
                yield node.name, (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def test_functions_in_the_pulumi_code_stay_short() -> None:
    long = [
        f"{path.relative_to(REPO)}: {name} has {lines} lines"
        for path in _sources("components", "stacks")
        for name, lines in _functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    assert long == []
