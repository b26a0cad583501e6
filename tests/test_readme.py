"""The README's promises, checked: its YAML blocks are valid blueprints, and its first command installs
only what `plan` and `cost` need."""

from __future__ import annotations

import re
import tomllib

import pytest

from clusterfab.load import load_bytes
from tests.conftest import REPO
from tests.factories import TODAY

README = (REPO / "README.md").read_text()
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.S)


def test_the_readme_has_yaml_blocks() -> None:
    assert YAML_BLOCKS


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[f"block-{i}" for i in range(len(YAML_BLOCKS))])
def test_every_yaml_block_in_the_readme_validates(block: str) -> None:
    result = load_bytes(block.encode(), "README.md", today=TODAY)
    errors = [f for f in result.findings if f.severity.value != "info"]
    assert errors == []
    assert result.checked == [None, "dev", "prod"]


def test_the_first_command_installs_no_dev_tools_and_no_ansible() -> None:
    commands = re.findall(r"```sh\n(.*?)```", README, re.S)
    first, tests = commands[0], commands[1]
    uses = re.findall(r"uv run ([^&]*?)clusterfab", first)
    assert uses, first
    assert all("--no-dev" in flags for flags in uses), uses
    assert "pytest" in tests
    assert "--no-dev" not in tests
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]}
    assert not {"ansible", "ansible-core", "ansible-runner", "pytest", "mypy", "ruff"} & names, names
