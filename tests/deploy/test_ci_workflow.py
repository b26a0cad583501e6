"""The GitHub Actions template parses, and every `clusterfab` invocation in it is a real command line.

Each invocation is parsed by the CLI's own Click command (built from the Typer app), so an unknown
command, an unknown or misspelt option, a bad choice or a missing required option fails here, not
in a user's pipeline.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
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


def test_workflow_is_yaml_with_the_pr_and_deploy_stages() -> None:
    workflow = load(WORKFLOW)
    assert set(workflow["on"]) == {"pull_request", "push"}
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["permissions"] == {}  # nothing by default: each job names its own
    jobs = workflow["jobs"]
    assert set(jobs) == {"plan", "comment", "deploy-dev", "promote-prod"}
    assert jobs["plan"]["permissions"] == {"contents": "read"}
    assert jobs["comment"]["permissions"] == {"pull-requests": "write"}
    assert jobs["promote-prod"]["needs"] == "deploy-dev"
    assert jobs["deploy-dev"]["environment"] == "dev"
    assert jobs["promote-prod"]["environment"] == "production"  # required reviewers gate this job
    for deploying in ("deploy-dev", "promote-prod"):
        job = jobs[deploying]
        assert job["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
        assert job["permissions"] == {"contents": "read", "id-token": "write"}  # OIDC, no stored keys
        assert job["concurrency"]["cancel-in-progress"] is False  # never cancel an update half-way


def _expressions(node: Any) -> list[str]:
    text = json.dumps(node)
    return re.findall(r"\$\{\{\s*([^}]*?)\s*\}\}", text)


def test_secrets_only_reach_the_deploy_jobs() -> None:
    # The PR jobs run the PR's code (or handle its output): a secret there is a secret any PR can print.
    workflow = load(WORKFLOW)
    assert not [e for e in _expressions(workflow["env"]) if "secrets." in e]
    for name in ("plan", "comment"):
        job = workflow["jobs"][name]
        assert not [e for e in _expressions(job) if "secrets." in e or "vars." in e], name
        assert "id-token" not in job["permissions"], name
        assert "environment" not in job, name
    for name in ("deploy-dev", "promote-prod"):
        env = workflow["jobs"][name]["env"]
        assert env["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
        assert env["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"


def test_the_comment_job_runs_no_pr_code_and_skips_forks() -> None:
    job = load(WORKFLOW)["jobs"]["comment"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]
    steps = job["steps"]
    assert not [step for step in steps if "run" in step]
    assert [step["uses"].split("@")[0] for step in steps] == [
        "actions/download-artifact",
        "actions/github-script",
    ]


def test_checkouts_keep_no_credentials_and_pr_jobs_write_no_cache() -> None:
    for name, job in load(WORKFLOW)["jobs"].items():
        for step in job["steps"]:
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
            if uses.startswith("astral-sh/setup-uv@"):
                assert step["with"]["enable-cache"] is False, name
                assert step["with"]["version"] == "${{ env.UV_VERSION }}", name


ACTIONS = YAML(typ="safe").load((Path(__file__).parent / "data" / "github_actions.yaml").read_text())


def test_every_action_is_pinned_to_the_recorded_commit_of_its_tag() -> None:
    recorded = {a["repo"]: (a["commit"], a["tag"]) for a in ACTIONS["actions"]}
    lines = [line.strip() for line in WORKFLOW.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert lines
    used = set()
    for line in lines:
        match = re.fullmatch(r"(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v[\d.]+)", line)
        assert match, f"not pinned to a commit with its tag: {line}"
        repo, commit, tag = match.groups()
        assert recorded.get(repo) == (commit, tag), line
        used.add(repo)
    assert used == set(recorded), "recorded actions the template no longer uses"


def test_tools_are_pinned_to_exact_versions() -> None:
    env = load(WORKFLOW)["env"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", env["UV_VERSION"])
    lock = (REPO / "uv.lock").read_text()
    sdk = re.search(r'name = "pulumi"\nversion = "([^"]+)"', lock)
    assert sdk is not None
    assert env["PULUMI_VERSION"] == sdk.group(1)  # the CLI of the SDK the program runs on
    text = WORKFLOW.read_text()
    plugin = ACTIONS["session_manager_plugin"]["version"]
    assert f"session-manager-downloads/plugin/{plugin}/ubuntu_64bit/" in text
    assert "/latest/" not in text
    for name, job in load(WORKFLOW)["jobs"].items():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                if "uv run" in line:
                    assert "uv run --locked --no-dev clusterfab" in line, (name, line)


def test_deploy_jobs_install_what_configure_needs() -> None:
    # configure talks to the clouds through boto3 / google-auth and runs Ansible: with --no-dev, only the
    # runtime dependencies (and extras) are there, so they must carry them.
    job = load(WORKFLOW)["jobs"]["deploy-dev"]
    runs = [step.get("run", "") for step in job["steps"]]
    assert "uv sync --locked --no-dev --all-extras" in runs
    pyproject = (REPO / "pyproject.toml").read_text()
    runtime_and_extras = pyproject.split("[dependency-groups]")[0]
    for needed in ("boto3", "google-auth", "ansible-core", "ansible-runner"):
        assert f'"{needed}' in runtime_and_extras, needed


TRUST = {env: REPO / "examples" / "ci" / f"aws-oidc-trust-{env}.json" for env in ("dev", "production")}


@pytest.mark.parametrize("environment", sorted(TRUST))
def test_each_cloud_role_trusts_only_its_environment(environment: str) -> None:
    policy = json.loads(TRUST[environment].read_text())
    (statement,) = policy["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"]["Federated"].endswith(":oidc-provider/token.actions.githubusercontent.com")
    assert set(statement["Condition"]) == {"StringEquals"}  # no StringLike wildcards
    assert statement["Condition"]["StringEquals"] == {
        "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
        "token.actions.githubusercontent.com:sub": f"repo:OWNER/REPO:environment:{environment}",
    }
    jobs = load(WORKFLOW)["jobs"]
    assert environment in {job.get("environment") for job in jobs.values()}


FAKE_GH = """#!/usr/bin/env bash
# Records each `gh` call (arguments, then stdin when --input - is given) as one JSON line.
input=""
for arg in "$@"; do [ "$arg" = "--input" ] && input=$(cat); done
python3 -c 'import json,sys; print(json.dumps({"args": sys.argv[2:], "input": sys.argv[1]}))' \\
  "$input" "$@" >> "$GH_LOG"
"""


def test_the_environment_setup_script_restricts_both_to_main(tmp_path: Path) -> None:
    (tmp_path / "gh").write_text(FAKE_GH)
    (tmp_path / "gh").chmod(0o755)
    log = tmp_path / "calls.jsonl"
    script = REPO / "examples" / "ci" / "setup-github-environments.sh"
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "GH_LOG": str(log)}

    def setup(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(script), *args], env=env, capture_output=True, text=True, check=False
        )

    done = setup("acme/infra", "101", "202")
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line)["args"] + [json.loads(line)["input"]] for line in log.read_text().splitlines()]
    puts = {c[3]: json.loads(c[-1]) for c in calls if c[:3] == ["api", "--method", "PUT"]}
    branch_only = {"protected_branches": False, "custom_branch_policies": True}
    assert puts == {
        "repos/acme/infra/environments/dev": {"deployment_branch_policy": branch_only},
        "repos/acme/infra/environments/production": {
            "deployment_branch_policy": branch_only,
            "reviewers": [{"type": "User", "id": 101}, {"type": "User", "id": 202}],
            "prevent_self_review": True,
        },
    }
    policy = ["-f", "name=main", "-f", "type=branch"]
    posts = [c[3:-1] for c in calls if c[:3] == ["api", "--method", "POST"]]
    assert posts == [
        [f"repos/acme/infra/environments/{e}/deployment-branch-policies", *policy]
        for e in ("dev", "production")
    ]
    assert setup("acme/infra").returncode == 2  # production without a reviewer


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
        "policy $BLUEPRINT --env dev",
        "policy $BLUEPRINT --env prod",
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


def test_the_readme_points_at_the_template() -> None:
    readme = (REPO / "README.md").read_text()
    assert "examples/ci/github-actions.yml" in readme


def test_the_pull_request_check_fails_when_the_diff_exits_1() -> None:
    # `clusterfab diff` exits 1 on a stateful replacement (architecture §10.3); the diff is kept for the
    # comment job, then the check fails on the diff's status, without --allow-replace anywhere.
    steps = load(WORKFLOW)["jobs"]["plan"]["steps"]
    (diff,) = [s for s in steps if s.get("id") == "diff"]
    assert "--allow-replace" not in diff["run"]
    assert 'echo "status=$status" >> "$GITHUB_OUTPUT"' in diff["run"]
    last = steps[-1]
    assert (last["if"], last["run"].strip()) == ("steps.diff.outputs.status != '0'", "exit 1")
