"""The plan engine itself: repeatable runs, duplicate URNs, secrets, outputs, invalid blueprints."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pulumi
import pytest

from clusterfab.outputs import NodeGroupOutput, read_outputs
from clusterfab.plan.engine import PlanError, run_program
from clusterfab.plan.project import plan_blueprint
from clusterfab.provision.bundle import bundle_digest
from tests.components.harness import PROJECT, normalized, plan_file
from tests.conftest import PLANNED_EXAMPLES, REPO, assert_golden

P5_EFA_FSX = REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml"
"""The p5 EFA example, whose plan the tests of one plan's shape read."""


def _program(names: list[str], secret: bool = False) -> None:
    import pulumi_aws as aws

    for name in names:
        aws.ec2.PlacementGroup(name, strategy="cluster")
    if secret:
        aws.ssm.Parameter("p", type="SecureString", value=pulumi.Output.secret("hunter2"))
    pulumi.export("names", names)


def test_runs_repeat_in_one_process_with_their_own_stack() -> None:
    first = run_program(lambda: _program(["a", "b"]), project="p", stack="one")
    second = run_program(lambda: _program(["c"]), project="p", stack="two")
    assert [r.urn for r in first.resources] == [
        "urn:pulumi:one::p::aws:ec2/placementGroup:PlacementGroup::a",
        "urn:pulumi:one::p::aws:ec2/placementGroup:PlacementGroup::b",
    ]
    assert [r.urn for r in second.resources] == [
        "urn:pulumi:two::p::aws:ec2/placementGroup:PlacementGroup::c"
    ]
    assert second.outputs == {"names": ["c"]}


def test_duplicate_urns_are_an_error() -> None:
    with pytest.raises(PlanError, match="registered the same resource twice"):
        run_program(lambda: _program(["a", "a"]), project="p", stack="dup")


def test_secrets_are_redacted() -> None:
    run = run_program(lambda: _program([], secret=True), project="p", stack="s")
    (param,) = run.resources
    assert param.inputs == {"type": "SecureString", "value": "[secret]"}


def test_nested_components_get_the_engines_urns() -> None:
    plan = plan_file(P5_EFA_FSX, "dev")
    node = next(r for r in plan.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate")
    assert node.urn == (
        "urn:pulumi:dev::clusterfab::clusterfab:compute:AwsGpuNodeGroup$"
        "aws:ec2/launchTemplate:LaunchTemplate::llm-pretrain-trainers-lt"
    )
    assert (
        node.parent == "urn:pulumi:dev::clusterfab::clusterfab:compute:AwsGpuNodeGroup::llm-pretrain-trainers"
    )


def test_outputs_describe_the_cluster() -> None:
    outputs = read_outputs(plan_file(P5_EFA_FSX, "dev").outputs)
    assert outputs.node_groups == {
        "trainers": NodeGroupOutput(
            machine_type="p5.48xlarge",
            min_size=2,
            max_size=2,
            capacity="spot",
            placement="compact",
            fabric="efa",
            group="llm-pretrain-trainers-asg",
            template="llm-pretrain-trainers-lt-id",
            identity="arn:aws:mock:::role/llm-pretrain-trainers-role",
            interfaces=33,
            fabric_interfaces=32,
        )
    }
    assert outputs.node_selector == {
        "tag:clusterfab-blueprint": "llm-pretrain",
        "tag:clusterfab-stack": "dev",
    }
    assert outputs.storage["datasets"].mount_point == "/lustre"
    assert outputs.blueprint.file == "blueprints/examples/aws-p5-efa-fsx.yaml"
    assert outputs.blueprint.project is None
    assert len(outputs.blueprint.digest) == 64


def _archived(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _checkout_playbooks() -> dict[str, bytes]:
    """The playbooks git tracks (and those not yet added), as files: what a checkout of this revision has."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "playbooks"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    paths = [REPO / name for name in listed if name and (REPO / name).is_file()]
    return {str(p.relative_to(REPO / "playbooks")): p.read_bytes() for p in paths if not p.is_symlink()}


@pytest.mark.parametrize("path", PLANNED_EXAMPLES, ids=[p.stem for p in PLANNED_EXAMPLES])
def test_every_example_exports_the_outputs_push_mode_and_promotion_read(path: Path) -> None:
    outputs = read_outputs(plan_file(path, "dev").outputs)
    assert set(outputs.node_groups) | set(outputs.tpu_slices) | set(outputs.storage)
    assert outputs.blueprint.cloud in path.stem
    # The bundle the nodes boot from is the one promotion compares with the checkout's playbooks.
    assert outputs.blueprint.bundle_sha256 == bundle_digest(REPO / "playbooks")
    # ... and, checked without the bundle code: the digest names the archive the plan uploads, and that
    # archive holds the checkout's playbooks, byte for byte.
    digest = outputs.blueprint.bundle_sha256
    [upload] = [r for r in plan_file(path, "dev").resources if r.name.endswith("-artifacts-bundle")]
    assert upload.inputs["source"] == f"[asset {digest}.tar.gz]"
    named = upload.inputs.get("key") or upload.inputs.get("name") or upload.inputs.get("blobName")
    assert named == f"bundles/{digest}.tar.gz"
    archive = (REPO / ".cache" / "bundles" / f"{digest}.tar.gz").read_bytes()
    assert hashlib.sha256(archive).hexdigest() == digest
    assert _archived(archive) == _checkout_playbooks()


def test_an_invalid_blueprint_fails_the_program_with_its_findings(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nname: bad\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
        "node_groups: [{name: g, machine_type: p5.48xlarg, count: 1}]\n"
    )
    with pytest.raises(PlanError) as info:
        plan_blueprint(bad, env=None, project=PROJECT)
    assert "error[BP201] node_groups[0].machine_type: no AWS machine type 'p5.48xlarg' in the catalog" in str(
        info.value
    )


@pytest.mark.parametrize("path", PLANNED_EXAMPLES, ids=[p.stem for p in PLANNED_EXAMPLES])
@pytest.mark.parametrize("env", [None, "dev", "prod"])
def test_golden_plans(path: Path, env: str | None) -> None:
    payload = normalized(plan_file(path, env))
    assert_golden(f"plans/{path.stem}.{env or 'base'}.json", json.dumps(payload, indent=2) + "\n")


def test_normalizing_a_plan_for_its_golden_file_leaves_the_plan_alone() -> None:
    """Plans are cached for the session: a golden test that rewrote the cached plan's boot scripts in
    place left the placeholder `<bundle-sha256>` for the next test of its worker (CI saw the boot-script
    tests read it once the modules shared a worker)."""
    plan = plan_file(P5_EFA_FSX, "dev")
    before = json.dumps(plan.to_json(), sort_keys=True)
    normalized(plan)
    assert json.dumps(plan.to_json(), sort_keys=True) == before
