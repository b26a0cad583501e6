"""The base side of `clusterfab diff --base-ref REF`: the blueprint as it was at REF, planned by the code
that was there too.

A pull request changes code, catalog and playbooks as well as blueprints: an IAM policy or a security
group edited in `components/` changes what `pulumi up` will do without touching the blueprint. Planning
both sides with the PR's code would show "no changes" for exactly the changes a reviewer most needs to
see, so the base side runs in a tree exported from REF (`git archive`, which leaves the repository and
its worktree list untouched), in a child Python whose import path puts that tree first. The two sides
meet at the documented `clusterfab plan --format json` contract, which is what lets an older base speak to
a newer head.

When REF holds no clusterfab project (a repository of blueprints that installs clusterfab as a package),
the code cannot differ between the sides except through the lock file: the running code plans both, and
the report says so.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from clusterfab.core.errors import RefusedError, UsageError
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import PROJECT_NAME, Plan

GIT_TIMEOUT_S = 120
PLAN_TIMEOUT_S = 900


@dataclass(frozen=True)
class GitLocation:
    top: Path
    """The repository's top level."""
    relative: str
    """The blueprint's path inside the repository, as git names it."""


@dataclass(frozen=True)
class BaseTree:
    """What REF holds: the blueprint's text (None: not there) and whether a clusterfab project is."""

    blueprint: bytes | None
    has_project: bool


def _git(top: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(
        ["git", *args], cwd=top, capture_output=True, text=not binary, check=False, timeout=GIT_TIMEOUT_S
    )


def locate(path: Path) -> GitLocation:
    folder = path.resolve().parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
            timeout=GIT_TIMEOUT_S,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        raise UsageError(f"--base-ref needs {path} to be inside a git repository") from None
    relative = path.resolve().relative_to(Path(top).resolve()).as_posix()
    return GitLocation(top=Path(top), relative=relative)


def verify_ref(location: GitLocation, ref: str) -> str:
    """The commit `ref` names; a usage error when it names none."""
    verify = _git(location.top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if verify.returncode != 0:
        raise UsageError(f"unknown git ref {ref!r}")
    return str(verify.stdout).strip()


def _is_project(settings_text: bytes) -> bool:
    try:
        settings = YAML(typ="safe").load(settings_text)
    except YAMLError:  # an unreadable Pulumi.yaml is simply not our project
        return False
    return isinstance(settings, dict) and settings.get("name") == PROJECT_NAME


def inspect_ref(location: GitLocation, ref: str) -> BaseTree:
    blueprint = _git(location.top, "show", f"{ref}:{location.relative}", binary=True)
    settings = _git(location.top, "show", f"{ref}:Pulumi.yaml", binary=True)
    package = _git(location.top, "cat-file", "-e", f"{ref}:clusterfab/__init__.py")
    has_project = settings.returncode == 0 and _is_project(bytes(settings.stdout)) and package.returncode == 0
    return BaseTree(
        blueprint=bytes(blueprint.stdout) if blueprint.returncode == 0 else None, has_project=has_project
    )


def export_tree(location: GitLocation, commit: str, into: Path) -> None:
    """Write the tree of `commit` under `into` (no .git: the base code cannot touch the repository)."""
    archive = _git(location.top, "archive", "--format=tar", commit, binary=True)
    if archive.returncode != 0:
        raise UsageError(
            f"git archive {commit} failed: {bytes(archive.stderr).decode(errors='replace').strip()}"
        )
    with tarfile.open(fileobj=io.BytesIO(bytes(archive.stdout))) as tar:
        tar.extractall(into, filter="data")


def _resource(raw: dict[str, Any]) -> PlannedResource:
    return PlannedResource(
        urn=str(raw["urn"]),
        type=str(raw["type"]),
        name=str(raw["name"]),
        parent=raw.get("parent"),
        custom=bool(raw.get("custom", True)),
        protect=bool(raw.get("protect", False)),
        inputs=dict(raw.get("inputs") or {}),
    )


def parse_plan_json(text: str, *, display: str, env: str | None, stack: str) -> Plan:
    """A Plan from `clusterfab plan --format json` output (the documented keys; extra keys ignored)."""
    payload = json.loads(text)
    resources = [_resource(raw) for raw in payload["resources"]]
    return Plan(blueprint=display, env=env, stack=stack, resources=resources)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def plan_in_tree(tree: Path, relative: str, *, env: str | None, stack: str, display: str) -> Plan:
    """Plan the blueprint at `tree/relative` with the code of `tree`, in a child Python."""
    command = [sys.executable, "-m", "clusterfab", "plan", relative, "--stack", stack, "--format", "json"]
    if env is not None:
        command += ["--env", env]
    # The tree's packages (clusterfab, components) shadow the installed ones; its stacks/ program is found
    # from the working directory. Third-party packages come from this environment.
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    child_env.pop("PYTHONSAFEPATH", None)
    try:
        done = subprocess.run(
            command,
            cwd=tree,
            env=child_env,
            capture_output=True,
            text=True,
            check=False,
            timeout=PLAN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise RefusedError(f"planning the base side {display} took over {PLAN_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise RefusedError(
            f"the base side {display} could not be planned with its own code (exit {done.returncode}):\n"
            + _tail(done.stderr or done.stdout)
        )
    try:
        return parse_plan_json(done.stdout, display=display, env=env, stack=stack)
    except (ValueError, KeyError, TypeError) as exc:
        raise RefusedError(f"the base side {display}: unreadable plan output ({exc})") from None


def plan_at_ref(location: GitLocation, commit: str, *, env: str | None, stack: str, display: str) -> Plan:
    with tempfile.TemporaryDirectory(prefix="clusterfab-base-") as tmp:
        tree = Path(tmp)
        export_tree(location, commit, tree)
        return plan_in_tree(tree, location.relative, env=env, stack=stack, display=display)
