"""The node programs ship alone (`clusterfab_slurm_nodes` under the controller's `lib/`) and run on Ubuntu's
python3: the standard library, relative imports, and boto3 only where the AWS program calls EC2 or RDS."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfab.core import plugins
from clusterfab.scheduler.slurm.nodes import clouds

NODES = Path(clouds.__file__).parent
MODULES = sorted(NODES.glob("*.py"))
LAZY = {"boto3", "botocore"}
"""Ubuntu's python3-boto3: imported inside the functions that need it, so the GCP programs run without."""


def _imports(statements: list[ast.stmt], *, in_functions: bool) -> set[str]:
    """The packages these statements import absolutely (relative imports are the package's own)."""
    found: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement) if in_functions else _outside_functions(statement):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add((node.module or "").partition(".")[0])
    return found


def _outside_functions(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    return [node, *(n for child in ast.iter_child_nodes(node) for n in _outside_functions(child))]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_a_module_imports_the_standard_library_and_its_own_package_only(path: Path) -> None:
    body = ast.parse(path.read_text()).body
    everywhere, at_load = _imports(body, in_functions=True), _imports(body, in_functions=False)
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    assert everywhere - allowed <= LAZY
    assert at_load - allowed == set()


def test_the_shipped_package_loads_every_cloud_without_clusterfab_or_boto3(tmp_path: Path) -> None:
    package = tmp_path / "clusterfab_slurm_nodes"
    package.mkdir()
    for module in MODULES:
        (package / module.name).write_text(module.read_text())
    names = ", ".join(f"'clusterfab_slurm_nodes.{m.stem}'" for m in MODULES if m.stem != "__main__")
    script = (
        f"import importlib, sys\nLAZY = {sorted(LAZY)}\n"
        f"for name in [{names}]: importlib.import_module(name)\n"
        "from clusterfab_slurm_nodes import clouds\n"
        "for name in clouds.CLOUDS: clouds.cloud(name)\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in {'clusterfab', *LAZY}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout == "[]\n"


def test_the_node_programs_know_the_clouds_the_library_knows() -> None:
    assert tuple(clouds.CLOUDS) == tuple(plugins.BUILTIN_CLOUDS)
    # Managed accounting (its settings) is built on every cloud; Azure's machines claim their nodes
    # themselves.
    found = {
        name: (bool(c.location), bool(c.accounting_settings), c.claims, c.creates_nodes)
        for name in clouds.CLOUDS
        for c in [clouds.cloud(name)]
    }
    assert found == {
        "aws": (True, True, False, True),
        "gcp": (True, True, False, True),
        "azure": (True, True, True, True),
    }
