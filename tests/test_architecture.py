"""The layering of architecture §10.1 and §11.1, checked on the source: who may import whom, no import
cycle between packages, no branch on a cloud outside its own modules, no question whether the scheduler is
Slurm outside the scheduler and the spec, and how long functions and modules may grow."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

MAX_FUNCTION_LINES = 60
"""No function in clusterfab/, components/ or stacks/ longer than this (statements, not docstrings)."""


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
        "pulumi_azure_native",
        "pulumi_kubernetes",
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
        "datetime",
        # The health signing key's dynamic provider makes the key (at `pulumi up` only).
        "secrets",
        # Azure's administrator key: its dynamic provider makes an Ed25519 key pair (at `pulumi up` only).
        "cryptography",
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


# --- Architecture §11.1: plugins, no cycles, size limits ------------------------------------------------

CLOUD_NAMES = ("aws", "gcp", "azure")
MAX_MODULE_LINES = 800
PLUGIN_ROOTS = ("clusterfab", "components", "stacks")


REGISTRIES = ("clusterfab/core/plugins.py", "clusterfab/scheduler/slurm/nodes/clouds.py")
"""The tables that name the clouds and the module behind each (the library's, and the standalone node
programs' own): a table keyed by cloud is what they are for."""


CLOUD_TABLES = ("clusterfab/rules/registry.py", "clusterfab/catalog/query.py")
"""The table of every rule module, and the catalog, which hold each cloud's among them."""


def _per_cloud(path: Path) -> bool:
    """A module of one cloud: under a folder named for it, or named for it itself."""
    rel = path.relative_to(REPO)
    if rel.as_posix() in REGISTRIES:
        return True
    return any(part in CLOUD_NAMES for part in rel.parts[:-1]) or any(
        cloud in rel.stem.split("_") for cloud in CLOUD_NAMES
    )


def _names_a_cloud(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in CLOUD_NAMES


def _cloud_branches(path: Path) -> Iterator[str]:
    """Comparisons with a cloud's name, `case "aws":`, tables keyed by cloud, isinstance on a cloud's
    class."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(
            _names_a_cloud(side) for side in (node.left, *node.comparators)
        ):
            yield f"{node.lineno}: compares with a cloud's name"
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            if _names_a_cloud(node.pattern.value):
                yield f"{node.pattern.lineno}: matches a cloud's name"
        elif isinstance(node, ast.Dict) and any(k is not None and _names_a_cloud(k) for k in node.keys):
            yield f"{node.lineno}: a table keyed by cloud"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            classes = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if any(c.lower().startswith(CLOUD_NAMES) for c in classes):
                yield f"{node.lineno}: isinstance on a cloud's class"


def test_no_code_outside_a_clouds_own_modules_branches_on_the_cloud() -> None:
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for path in _sources(*PLUGIN_ROOTS)
        if not _per_cloud(path)
        for where in _cloud_branches(path)
    ]
    assert found == []


def _cloud_imports(path: Path) -> Iterator[str]:
    """Imports of one cloud's modules (`clusterfab.clouds.azure...`, `...nodes.gcp`, `components.aws...`)."""
    for line, module in _imports(path):
        parts = module.split(".")
        if any(part in CLOUD_NAMES or part.split("_")[0] in CLOUD_NAMES for part in parts[:-1]):
            yield f"{line}: imports {module}"


def test_no_code_outside_a_clouds_own_modules_imports_them() -> None:
    """A cloud's setting, constant or type named in shared code is a branch on the cloud by other means:
    each cloud hands what shared code needs through its profile (e.g. `CloudProfile.stack_settings`)."""
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for path in _sources(*PLUGIN_ROOTS)
        if not _per_cloud(path) and path.relative_to(REPO).as_posix() not in CLOUD_TABLES
        for where in _cloud_imports(path)
    ]
    assert found == []


def _slurm_questions(path: Path) -> Iterator[str]:
    """`kind == "slurm"`, `case "slurm":`, isinstance on a Slurm type: a question only the scheduler's own
    code and the spec may ask (elsewhere the plugin found by kind answers)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(
            isinstance(s, ast.Constant) and s.value == "slurm" for s in (node.left, *node.comparators)
        ):
            yield f"{node.lineno}: compares with the kind slurm"
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            value = node.pattern.value
            if isinstance(value, ast.Constant) and value.value == "slurm":
                yield f"{node.pattern.lineno}: matches the kind slurm"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and any(isinstance(n, ast.Name) and n.id.startswith("Slurm") for n in ast.walk(node.args[1]))
        ):
            yield f"{node.lineno}: isinstance on a Slurm type"


def _slurms_own(path: Path) -> bool:
    """The scheduler packages, the spec, and modules named for Slurm (a realizer's slurm.py)."""
    rel = path.relative_to(REPO)
    return rel.as_posix().startswith(("clusterfab/scheduler/", "clusterfab/spec/")) or "slurm" in rel.stem


def test_only_the_scheduler_and_the_spec_ask_whether_the_scheduler_is_slurm() -> None:
    found = [
        f"{path.relative_to(REPO)}:{where}"
        for path in _sources(*PLUGIN_ROOTS)
        if not _slurms_own(path)
        for where in _slurm_questions(path)
    ]
    assert found == []


def test_the_question_finders_find_the_questions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    source = (
        'if blueprint.cloud == "gcp": pass\n'
        "match cloud:\n"
        '    case "aws": pass\n'
        'PORTS = {"aws": 1, "gcp": 2}\n'
        "ok = isinstance(machine, AwsMachineType)\n"
        'if spec.scheduler.kind == "slurm": pass\n'
        "ok = isinstance(spec.scheduler, Slurm)\n"
    )
    probe.write_text(source)
    assert list(_cloud_branches(probe)) == [
        "1: compares with a cloud's name",
        "3: matches a cloud's name",
        "4: a table keyed by cloud",
        "5: isinstance on a cloud's class",
    ]
    assert list(_slurm_questions(probe)) == [
        "6: compares with the kind slurm",
        "7: isinstance on a Slurm type",
    ]


def _package(module: str) -> str | None:
    """The package a module belongs to for the layer graph: clusterfab.<sub>, stacks, components."""
    parts = module.split(".")
    if parts[0] == "clusterfab" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0] if parts[0] in ("stacks", "components") else None


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _sources(*PLUGIN_ROOTS):
        here = _package(".".join(path.relative_to(REPO).with_suffix("").parts))
        if here is None:
            continue
        for _, module in _imports(path):
            there = _package(module)
            if there is not None and there != here:
                graph.setdefault(here, set()).add(there)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


LAYERS: tuple[tuple[str, ...], ...] = (
    ("clusterfab.core",),
    (
        "clusterfab.blueprint",
        "clusterfab.catalog",
        "clusterfab.addressing",
        "clusterfab.bootstrap",
        "clusterfab.outputs",
        "clusterfab.contract",
        "components",
    ),
    ("clusterfab.clouds",),
    ("clusterfab.spec", "clusterfab.health"),
    ("clusterfab.cost",),
    ("clusterfab.monitoring",),
    ("clusterfab.scheduler",),
    ("clusterfab.rules",),
    ("clusterfab.load",),
    ("clusterfab.stackinput",),
    ("clusterfab.plan", "clusterfab.provision"),
    ("clusterfab.policy", "clusterfab.deploy", "stacks"),
    ("clusterfab.cli",),
    ("clusterfab.__main__",),
)
"""Architecture §10.1 and §11.1, bottom first: a package imports only packages of the layers below its own
(the clouds and the schedulers are found by name at run time, so the layers below them never import them).
Cost and monitoring ask the scheduler's plugin through `clusterfab.core.plugins.load_scheduler`, not by
import, because the scheduler's packages build on them."""


def test_every_package_has_a_layer_and_imports_only_those_below() -> None:
    layer = {package: index for index, members in enumerate(LAYERS) for package in members}
    graph = _package_graph()
    unplaced = sorted({p for edge in graph.items() for p in (edge[0], *edge[1])} - set(layer))
    upward = [
        f"{here} imports {there}"
        for here, theirs in sorted(graph.items())
        for there in sorted(theirs)
        if here in layer and there in layer and layer[there] >= layer[here]
    ]
    assert unplaced + upward == []


def test_no_import_cycle_between_packages() -> None:
    assert _cycles(_package_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_functions_stay_short_and_modules_small() -> None:
    long = [
        f"{path.relative_to(REPO)}: {name} has {lines} lines"
        for path in _sources(*PLUGIN_ROOTS)
        for name, lines in _functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    big = [
        f"{path.relative_to(REPO)} has {n} lines"
        for path in _sources(*PLUGIN_ROOTS)
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long + big == []
