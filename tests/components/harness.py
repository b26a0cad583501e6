"""Plan blueprints through the real Pulumi program under the mock engine, for component tests."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import runpy
import sys
import tempfile
from pathlib import Path
from typing import Any

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.plan.project import Plan, find_project, plan_blueprint
from clusterfab.stackinput import BLUEPRINT_KEY, CONFIG_NAMESPACE, ENVIRONMENT_KEY
from tests.conftest import REPO

PROJECT = find_project(REPO)

AWS_HEAD = """version: 1
name: {name}
cloud: aws
region: us-east-1
zone: use1-az6
"""


@functools.cache
def plan_text(text: str, env: str | None = None) -> Plan:
    """Plan blueprint text (cached: each distinct blueprint is planned once per test session)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bp.yaml"
        path.write_text(text)
        return plan_blueprint(path, env=env, project=PROJECT, display="bp.yaml")


@functools.cache
def plan_file(path: Path, env: str | None) -> Plan:
    return plan_blueprint(path, env=env, project=PROJECT, display=str(path.relative_to(REPO)))


GCP_HEAD = """version: 1
name: {name}
cloud: gcp
region: us-central1
zone: {zone}
"""
GCP_PROJECT = "project: test-project\n"


def aws_plan(body: str, *, name: str = "t", env: str | None = None) -> Plan:
    return plan_text(AWS_HEAD.format(name=f"{name}-cluster") + body, env)


def gcp_plan(
    body: str, *, name: str = "t", env: str | None = None, zone: str = "us-central1-b", project: bool = True
) -> Plan:
    """Plan a GCP blueprint body (cluster `<name>-cluster` in project test-project unless told not to)."""
    head = GCP_HEAD.format(name=f"{name}-cluster", zone=zone) + (GCP_PROJECT if project else "")
    return plan_text(head + body, env)


@functools.cache
def plan_configured(text: str, config: tuple[tuple[str, str], ...], env: str | None = None) -> Plan:
    """Plan blueprint text with extra stack config (e.g. gcp:project, clusterfab:billingAccount)."""
    program_dir = PROJECT.program_dir

    def program() -> None:
        sys.modules.pop("compose", None)  # the program's own module, fresh for this run
        runpy.run_path(str(program_dir), run_name="__main__")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bp.yaml"
        path.write_text(text)
        stack_config = {
            f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}": str(path),
            f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}": env or "",
            **dict(config),
        }
        stack = env or "plan"
        run = run_program(program, project=PROJECT.name, stack=stack, config=stack_config)
    return Plan(
        blueprint="bp.yaml", env=env, stack=stack, resources=run.resources, outputs=run.outputs, logs=run.logs
    )


def one(plan: Plan, type_: str, name: str | None = None) -> PlannedResource:
    """The single resource of a type (and logical name), failing clearly when it is not exactly one."""
    found = [r for r in plan.resources if r.type == type_ and (name is None or r.name == name)]
    assert len(found) == 1, f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
    return found[0]


def all_of(plan: Plan, type_: str) -> list[PlannedResource]:
    return [r for r in plan.resources if r.type == type_]


def children(plan: Plan, parent: PlannedResource) -> list[tuple[str, str]]:
    """(type, name) of a component's direct children, sorted."""
    return sorted((r.type, r.name) for r in plan.resources if r.parent == parent.urn)


def user_data(plan: Plan, launch_template: str) -> str:
    encoded = one(plan, "aws:ec2/launchTemplate:LaunchTemplate", launch_template).inputs["userData"]
    return base64.b64decode(encoded).decode()


def startup_script(plan: Plan, type_: str, name: str) -> str:
    """The startup-script metadata of a GCP instance template or TPU VM, or the script a boot object in
    the bucket holds (a TPU slice's)."""
    inputs = one(plan, type_, name).inputs
    script = (
        inputs["source"]
        if type_ == "gcp:storage/bucketObject:BucketObject"
        else inputs["metadata"]["startup-script"]
    )
    assert isinstance(script, str)
    return script


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


BUNDLE_PLACEHOLDER = "<bundle-sha256>"


_BUNDLE_DIGEST = re.compile(r"(bundles/|asset |BUNDLE_SHA256=)[0-9a-f]{64}")


def stable(text: str) -> str:
    """Text with the playbook bundle's digest replaced: golden files pin the plan, not the roles
    (which change the digest with every edit and have tests of their own)."""
    return _BUNDLE_DIGEST.sub(rf"\1{BUNDLE_PLACEHOLDER}", text)


def _stabilize(value: Any) -> Any:
    if isinstance(value, str):
        return stable(value)
    if isinstance(value, dict):
        return {k: _stabilize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stabilize(v) for v in value]
    return value


STACK_PLACEHOLDER = "STACK"


def _stack_free(urn: str | None, stack: str) -> str | None:
    """A URN with its stack name replaced, so the plans of two environments differ only in inputs."""
    if urn is None:
        return None
    urn = urn.replace(f"urn:pulumi:{stack}::", f"urn:pulumi:{STACK_PLACEHOLDER}::", 1)
    return urn.replace(
        f"pulumi:pulumi:Stack::clusterfab-{stack}", f"pulumi:pulumi:Stack::clusterfab-{STACK_PLACEHOLDER}"
    )


def normalized(plan: Plan) -> dict[str, Any]:
    """The plan JSON with boot scripts replaced by their digest (they have golden files of their own),
    the bundle digest by a placeholder and the stack name in URNs by STACK. Plan.to_json gives a copy: the
    plans are cached for the session, and another test of the same worker reads the real scripts."""
    payload = plan.to_json()
    for resource in payload["resources"]:
        resource["urn"] = _stack_free(resource["urn"], plan.stack)
        resource["parent"] = _stack_free(resource["parent"], plan.stack)
        if isinstance(resource["inputs"].get("userData"), str):
            script = base64.b64decode(resource["inputs"]["userData"]).decode()
            resource["inputs"]["userData"] = base64.b64encode(stable(script).encode()).decode()
        resource["inputs"] = _stabilize(resource["inputs"])
        inputs = resource["inputs"]
        for key in ("userData", "metadataStartupScript"):
            if isinstance(inputs.get(key), str):
                inputs[key] = _digest(inputs[key])
        metadata = inputs.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("startup-script"), str):
            metadata["startup-script"] = _digest(metadata["startup-script"])
    return payload


def boot_vars(script: str, name: str = "node-vars") -> dict[str, Any]:
    """The Ansible extravars a boot script writes (`/etc/clusterfab/<name>.json`), as Ansible reads them;
    every string in the file must be marked unsafe (never templated)."""
    import json

    from clusterfab.bootstrap.inert import inert, plain

    start = script.index(f"cat > /etc/clusterfab/{name}.json <<'CLUSTERFAB_VARS'\n")
    body = script[script.index("\n", start) + 1 :]
    written = json.loads(body[: body.index("\nCLUSTERFAB_VARS\n")])
    values = plain(written)
    assert written == inert(values), f"{name}.json holds a string Ansible would template"
    return dict(values)


def stacks_module(name: str) -> Any:
    """A module of the Pulumi program (`compose`, `cluster`, `stacks.gcp.network`, ...), as it imports it."""
    import importlib

    program = str(PROJECT.program_dir)
    if program not in sys.path:
        sys.path.append(program)
    return importlib.import_module(name)
