"""The documentation site (docs/, mkdocs.yml) holds what it promises: it builds with no broken link or
anchor, its blueprint reference is what the schema says today, the repository paths it names exist, and
every clusterfab command of its shell examples runs as written, except those marked as needing a stack.

A ```sh block whose commands need a deployed stack, a cloud's CLI or credentials carries a mark on the
line before it, which says why it is not run; its command lines are still parsed as clusterfab parses
them:

    <!-- not run: needs the Pulumi CLI, cloud credentials and deployed stacks -->
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import typer
import typer.core
import typer.main

from clusterfab import cli
from tests.conftest import REPO

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
README = REPO / "README.md"
SHELL_BLOCK = re.compile(r"(?:^(?P<mark>[^\n]*)\n)?^```(?:sh|bash|shell)\n(?P<body>.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>.+?) -->")
NEEDS_A_STACK = {
    "preview",
    "up",
    "destroy",
    "promote",
    "inventory",
    "configure",
    "dashboard",
    "health",
    "kubeconfig",
}
"""The commands that act on a deployed stack (the Pulumi CLI, the cloud's CLI, credentials)."""
OUT_OPTIONS = {"--out", "-o", "--output"}
SEPARATORS = {"&&", "||", ";", "|"}
TODAY = "2026-11-22"
"""Prices are judged stale against a fixed date, so an example's findings do not change with the calendar."""


@dataclass(frozen=True)
class Example:
    """One clusterfab command of a page's shell examples, as `clusterfab` would get it."""

    where: str
    argv: tuple[str, ...]
    not_run: str | None


def _commands(line: str) -> list[list[str]]:
    """The commands of a shell line (`a && b | c`), each without its redirections."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    redirect = False
    for token in lexer:
        if token in SEPARATORS:
            commands.append([])
        elif token in {">", ">>", "<", "2>"}:
            redirect = True
        elif redirect:
            redirect = False
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _clusterfab_argv(command: list[str]) -> tuple[str, ...] | None:
    """The arguments after `clusterfab` when the command runs it (`uv run clusterfab`, an environment
    assignment first), else None."""
    words = [w for w in command if not re.fullmatch(r"[A-Z_]+=\S*", w)]
    while words[:1] == ["python3"] and words[1:3] == ["-m", "uv"]:
        words = words[3:]
    if words[:2] == ["uv", "run"]:
        words = words[2:]
        while words and words[0].startswith("-"):
            words = words[1:]
    return tuple(words[1:]) if words[:1] == ["clusterfab"] else None


def _examples(path: Path) -> list[Example]:
    text = path.read_text()
    found = []
    for block in SHELL_BLOCK.finditer(text):
        mark = NOT_RUN.search(block.group("mark") or "")
        first = text.count("\n", 0, block.start("body")) + 1
        lines = block.group("body").replace("\\\n", "  \n").splitlines()
        for offset, line in enumerate(lines):
            for command in _commands(line):
                argv = _clusterfab_argv(command)
                if argv:
                    where = f"{path.relative_to(REPO)}:{first + offset}"
                    found.append(Example(where, argv, mark.group("reason") if mark else None))
    return found


EXAMPLES = [example for page in PAGES for example in _examples(page)]


def _distinct(examples: list[Example]) -> dict[tuple[str, ...], Example]:
    """Each command line once (the first place it is written), so a command shown twice runs once."""
    seen: dict[tuple[str, ...], Example] = {}
    for example in examples:
        seen.setdefault(example.argv, example)
    return seen


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_with_no_broken_link_or_anchor(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(REPO / ".venv" / "bin")) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.fail("mkdocs is not installed; it is a dev dependency (uv sync installs it)")
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    assert (tmp_path / "site" / "blueprint" / "index.html").is_file()


def test_the_blueprint_reference_is_not_stale() -> None:
    script = _load_script("blueprint_reference")
    assert (DOCS / "blueprint.md").read_text() == script.generated(), (
        "docs/blueprint.md is stale; regenerate it with `uv run python scripts/blueprint_reference.py`"
    )


def test_the_reference_names_every_field_of_a_node_group_with_its_type_and_default() -> None:
    page = (DOCS / "blueprint.md").read_text()
    assert "At `node_groups[].capacity`, `tpu_slices[].capacity`. How the capacity is bought." in page
    assert (
        "- **`kind`** (one of `on_demand`, `spot`, `reservation`, `capacity_block`, `flex_start`; "
        "default `on_demand`): on_demand | spot | reservation (consume an existing reservation) | "
        "capacity_block (AWS Capacity Blocks for ML; fixed size) | flex_start (GCP DWS flex-start)."
    ) in page
    assert (
        "- **`count`** (integer; 1 to 10000): Fixed number of nodes. Set this or `autoscaling`, not both."
        in page
    )


def test_the_readme_example_is_the_language_pages() -> None:
    def first_yaml(text: str) -> str:
        return str(re.findall(r"```yaml\n(.*?)```", text, re.S)[0])

    assert first_yaml(README.read_text()) == first_yaml((DOCS / "language.md").read_text())


def test_the_readmes_links_lead_to_files() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local
    assert [link for link in local if not (REPO / link).exists()] == []


def test_the_repository_paths_the_pages_name_exist() -> None:
    """A path in a code span that starts at a top-level directory of the repository and names a file (an
    extension) or a directory (a trailing slash) exists; placeholders (`<stack>`, `*`) are left out."""
    tops = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")} | {".ci"}
    missing = []
    for page in [*PAGES, README]:
        for span in re.findall(r"`([^`\s]+)`", page.read_text()):
            path = span.split("::")[0]
            if path.split("/")[0] not in tops or re.search(r"[<>*{}\[\]…]|\.\.\.", path):
                continue
            if (path.endswith("/") or Path(path).suffix) and not (REPO / path).exists():
                missing.append(f"{page.relative_to(REPO)}: {span}")
    assert missing == []


def test_the_pages_have_examples_to_run_and_mark_those_they_do_not_run() -> None:
    run = {e.argv[0] for e in EXAMPLES if e.not_run is None}
    assert {"validate", "cost", "plan", "policy", "catalog", "schema", "render"} <= run, run
    unmarked = [
        f"{e.where}: clusterfab {' '.join(e.argv)}"
        for e in EXAMPLES
        if e.not_run is None and e.argv[0] in NEEDS_A_STACK
    ]
    assert unmarked == [], "mark these blocks <!-- not run: why -->"


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=e.where) for e in _distinct(EXAMPLES).values() if e.not_run is None]
)
def test_the_example_runs_as_written(
    example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from the repository's root as a reader would; what a command writes (`--out DIR`) goes to a
    temporary directory instead, and redirected output is only read."""
    monkeypatch.setenv("CLUSTERFAB_TODAY", TODAY)
    argv = list(example.argv)
    for i, word in enumerate(argv[:-1]):
        if word in OUT_OPTIONS:
            argv[i + 1] = str(tmp_path / argv[i + 1])
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", *argv], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, (
        f"{example.where}: clusterfab {' '.join(example.argv)}\n{proc.stdout}{proc.stderr}"
    )
    assert proc.stdout


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=e.where) for e in _distinct(EXAMPLES).values() if e.not_run is not None]
)
def test_an_example_not_run_is_a_command_line_clusterfab_accepts(example: Example) -> None:
    """What cannot run here is still parsed as clusterfab parses it: a renamed command or option, or a
    value it refuses, fails here."""
    group = typer.main.get_command(cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    root = typer.Context(group, info_name="clusterfab")
    name, command, rest = group.resolve_command(root, list(example.argv))
    assert name is not None
    assert command is not None
    try:
        command.make_context(name, list(rest), parent=root)
    except typer.TyperException as exc:
        pytest.fail(f"{example.where}: clusterfab {' '.join(example.argv)}: {exc.format_message()}")
