"""The GitHub Actions template parses, and every `clusterfab` invocation in it is a real command line.

Each invocation is parsed by the CLI's own Click command (built from the Typer app), so an unknown
command, an unknown or misspelt option, a bad choice or a missing required option fails here, not
in a user's pipeline.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from ruamel.yaml import YAML
from typer.core import TyperGroup

from clusterfab.cli import app
from tests.conftest import REPO

WORKFLOW = REPO / "examples" / "ci" / "github-actions.yml"
_SHELL_OPERATORS = {">", ">>", "<", "|", "||", "&&", ";", "2>", "2>&1", "&"}


def load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


def run_scripts(workflow: dict[str, Any]) -> list[tuple[str, str]]:
    """(job, script) of every `run:` step."""
    return [
        (name, step["run"])
        for name, job in workflow["jobs"].items()
        for step in job.get("steps", [])
        if "run" in step
    ]


def invocations(script: str) -> list[list[str]]:
    """The arguments after `clusterfab` on every line of a shell script that calls it."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        if "clusterfab" not in line or line.strip().startswith("#"):
            continue
        tokens = shlex.split(line, comments=True)
        for index, token in enumerate(tokens):
            if token == "clusterfab":
                args = []
                for arg in tokens[index + 1 :]:
                    if arg in _SHELL_OPERATORS:
                        break
                    args.append(arg)
                found.append(args)
    return found


def test_workflow_is_yaml_with_the_three_stages() -> None:
    workflow = load(WORKFLOW)
    assert set(workflow["on"]) == {"pull_request", "push"}
    assert workflow["on"]["push"]["branches"] == ["main"]
    jobs = workflow["jobs"]
    assert set(jobs) == {"pull-request", "deploy-dev", "promote-prod"}
    assert jobs["pull-request"]["permissions"]["pull-requests"] == "write"
    assert jobs["deploy-dev"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert jobs["promote-prod"]["needs"] == "deploy-dev"
    assert jobs["promote-prod"]["environment"] == "production"  # required reviewers gate this job
    for deploying in ("deploy-dev", "promote-prod"):
        assert jobs[deploying]["permissions"]["id-token"] == "write"  # OIDC, no stored cloud keys


def test_every_clusterfab_invocation_is_a_valid_command_line() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    seen = []
    for job, script in run_scripts(load(WORKFLOW)):
        for args in invocations(script):
            assert args, f"{job}: `clusterfab` without a command"
            name, rest = args[0], args[1:]
            command = group.commands.get(name)
            assert command is not None, f"{job}: `clusterfab {name}` is not a command"
            try:
                command.make_context(f"clusterfab {name}", list(rest))
            except Exception as exc:  # Click's usage errors (Typer vendors Click, so no public class)
                pytest.fail(f"{job}: `clusterfab {' '.join(args)}`: {exc}")
            seen.append(" ".join(args))
    assert seen == [
        "validate $BLUEPRINT",
        "plan $BLUEPRINT --env dev",
        "plan $BLUEPRINT --env prod",
        "diff $BLUEPRINT --base-ref origin/$BASE_REF --format markdown --env prod",
        "up --stack dev --yes",
        "configure --stack dev",
        "promote --from dev --to prod --yes",
    ]


def test_the_check_catches_bad_invocations() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    with pytest.raises(Exception, match="Missing parameter: target"):
        group.commands["promote"].make_context("clusterfab promote", ["--from", "dev", "--yes"])
    with pytest.raises(Exception, match="'html' is not one of"):
        group.commands["diff"].make_context("clusterfab diff", ["x.yaml", "--format", "html"])
    with pytest.raises(Exception, match="No such option: --stak"):
        group.commands["up"].make_context("clusterfab up", ["--stak", "dev"])
    assert invocations('a && uv run clusterfab up --stack "dev" --yes > log # c') == [
        ["up", "--stack", "dev", "--yes"]
    ]


def test_no_secret_values_in_the_file() -> None:
    text = WORKFLOW.read_text()
    assert not re.search(r"AKIA[0-9A-Z]{16}", text)
    assert "-----BEGIN" not in text
    assert not re.search(r"(?i)(password|token|passphrase|secret)\s*:\s*[\"']?[A-Za-z0-9/+]{12,}", text)
    env = load(WORKFLOW)["env"]
    assert env["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert env["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"


def test_the_readme_points_at_the_template() -> None:
    readme = (REPO / "README.md").read_text()
    assert "examples/ci/github-actions.yml" in readme


def test_the_pull_request_check_fails_when_the_diff_exits_1() -> None:
    # `clusterfab diff` exits 1 on a stateful replacement (architecture §10.3); the comment is posted
    # first, then the check fails on the diff's status, without --allow-replace anywhere.
    steps = load(WORKFLOW)["jobs"]["pull-request"]["steps"]
    (diff,) = [s for s in steps if s.get("id") == "diff"]
    assert "--allow-replace" not in diff["run"]
    assert 'echo "status=$?" >> "$GITHUB_OUTPUT"' in diff["run"]
    last = steps[-1]
    assert (last["if"], last["run"].strip()) == ("steps.diff.outputs.status != '0'", "exit 1")
