"""Push mode: the configure flow over a stack's outputs, with the stack and ansible-runner faked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from ruamel.yaml import YAML

from clusterfab.clouds.aws.store import S3HealthStore
from clusterfab.core.errors import UsageError
from clusterfab.outputs import read_outputs
from clusterfab.provision import push
from clusterfab.provision.runner import HostStats, PlaybookResult
from clusterfab.stackinput import load_stack_input
from tests.components.harness import plan_file
from tests.conftest import REPO
from tests.factories import signed_record

EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"
PLAYBOOKS = REPO / "playbooks"


class FakeStack:
    def __init__(self, outputs: dict[str, Any]) -> None:
        self._outputs = outputs
        self.values: dict[str, str] = {}

    def outputs(self) -> dict[str, Any]:
        return self._outputs

    def config(self) -> Mapping[str, str]:
        return self.values

    def set_config(self, key: str, value: str) -> None:
        self.values[key] = value


class FakeRunner:
    """ansible-runner's stand-in: every run reaches `hosts` hosts; a failing playbook fails on the first."""

    def __init__(self, failing: set[str] | None = None, hosts: int = 2) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failing = failing or set()
        self.hosts = hosts
        self.inventories: list[str] = []

    def __call__(self, playbook: Path, **kwargs: Any) -> PlaybookResult:
        self.calls.append({"playbook": playbook.name, **kwargs})
        self.inventories.append(Path(kwargs["inventory"]).read_text())
        failed = playbook.name in self.failing
        stats = {
            f"i-0abc{n}": HostStats(ok=5, failed=1 if failed and n == 0 else 0) for n in range(self.hosts)
        }
        return PlaybookResult(
            playbook=playbook,
            rc=2 if failed else 0,
            status="failed" if failed else "successful",
            hosts=stats,
            failed_tasks=(),
            duration_s=1.0,
        )


GPU_NODE_VARS = {
    "gpu_node_fabric": "efa",
    "nvidia_driver_version": "580.95.05",
    "nvidia_driver_open_kernel_modules": True,
    "nvidia_driver_source": "cuda_repository",
    "cuda_toolkit_version": "13.0",
    "nccl_version": "2.28.9",
    "nccl_cuda_version": "13.0",
    "nccl_tests_version": "2.19.6",
    "nccl_tests_checksum": "sha256:adbd3d27ba6c00bd7b7cf98cc8811c6ad860427ecd5de59527466b21472c0d93",
    "nccl_tests_mpi_packages": [
        "libopenmpi-dev=4.1.6-7ubuntu2",
        "openmpi-bin=4.1.6-7ubuntu2",
        "libopenmpi3t64=4.1.6-7ubuntu2",
        "openmpi-common=4.1.6-7ubuntu2",
        "libpmix2t64=5.0.1-4.1build1",
    ],
    "dcgm_version": "4.4.2",
    "dcgm_cuda_major_version": "13",
    "dcgm_exporter_version": "4.5.0",
    "dcgm_node_exporter_version": "1.7.0-1ubuntu0.3",
    "efa_installer_version": "1.51.0",
    "efa_installer_key_fingerprint": "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC",
    "gdrcopy_enabled": True,
    "gdrcopy_version": "2.5.1",
    "gdrcopy_checksum": "sha256:c6d5ebb7dabb89d798f27609511735595004da73af28d93ac041bb5290c4cbec",
    "gpu_node_container_runtime": False,
    "gpu_node_nvlink_services": ["fabric_manager"],
    "nvidia_fabricmanager_version": "580.95.05",
    "nvidia_fabricmanager_nvlsm": False,
    "gpudirect_storage_enabled": True,
    "gpudirect_storage_nvidia_fs_version": "2.26.6-1",
    "local_scratch_enabled": True,
    "local_scratch_device_patterns": ["nvme-Amazon_EC2_NVMe_Instance_Storage_*"],
    "local_scratch_mount_point": "/mnt/localssd",
    "storage_mounts_list": [
        {
            "name": "datasets",
            "fstype": "lustre",
            "source": "llm-pretrain-datasets-fs.fsx.mock@tcp:/mockmnt",
            "mount_point": "/lustre",
            "options": "relatime,flock",
        }
    ],
    "storage_mounts_lustre_packages": ["lustre-client-modules-{kernel}"],
    "storage_mounts_lustre_repo_url": "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu",
    "storage_mounts_lustre_repo_suite": "noble",
    "storage_mounts_lustre_repo_components": ["main"],
    "storage_mounts_lustre_repo_key_url": (
        "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"
    ),
    "storage_mounts_lustre_repo_key_fingerprint": "9C36DD9C515F10DBC3AA835C5D5CCC3383A962E1",
}
"""The node playbook's variables for aws-p5-efa-fsx's trainers in the dev stack, written out."""


COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def bucket() -> Iterator[S3HealthStore]:
    """The dev stack's cluster bucket, in moto's S3."""
    outputs = read_outputs(plan_file(REPO / EXAMPLE, "dev").outputs)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=outputs.bucket)
        yield S3HealthStore(outputs.bucket, "us-east-1", client)


def _stack() -> tuple[FakeStack, Any]:
    outputs = plan_file(REPO / EXAMPLE, "dev").outputs
    return FakeStack(outputs), load_stack_input(EXAMPLE, "dev", REPO)


def _health(store: S3HealthStore, stack: FakeStack, bundle: str | None = None) -> push.HealthTarget:
    deployed = stack.outputs()["blueprint"]["bundle_sha256"]
    return push.HealthTarget(
        store=store, stack="dev", commit=COMMIT, bundle_sha256=bundle or deployed, signing_key=SIGNING_KEY
    )


SIGNING_KEY = "5" * 64
"""The stack's `health_signing_key` output."""


def _record(store: S3HealthStore) -> dict[str, Any] | None:
    stored = store.get("health/dev.json")
    return None if stored is None else dict(json.loads(stored.body))


def test_configure_runs_each_node_group_then_the_health_check_and_records_it(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    health = _health(bucket, stack)
    result = push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS, health=health)
    assert [(c["playbook"], c["limit"]) for c in runner.calls] == [
        ("gpu_node.yml", "node_group_trainers"),
        ("healthcheck.yml", "node_group_trainers"),
    ]
    # What the example's trainers (p5.48xlarge, EFA, FSx for Lustre) get, written out: the catalog's pins
    # and the stack's file system, as the node playbook and the health check read them.
    assert runner.calls[0]["extravars"] == GPU_NODE_VARS
    assert runner.calls[1]["extravars"] == {
        "gpu_healthcheck_expected_gpu_count": 8,
        "gpu_healthcheck_min_busbw_gbps": 3200.0,
        "gpu_healthcheck_expected_driver_version": "580.95.05",
    }
    inventory = YAML(typ="safe").load(runner.inventories[0])
    assert inventory["plugin"] == "amazon.aws.aws_ec2"
    assert str(runner.calls[0]["inventory"]).endswith("clusterfab.aws_ec2.yml")
    record = _record(bucket)
    assert record is not None
    # Signed with the stack's key (the signature computed independently, from the scheme).
    signature = record.pop("signature")
    assert signature == signed_record(record, SIGNING_KEY)["signature"]
    blueprint = stack.outputs()["blueprint"]
    assert {k: v for k, v in record.items() if k != "checked_at"} == {
        "status": "passed",
        "stack": "dev",
        "blueprint_digest": blueprint["digest"],
        "bundle_sha256": blueprint["bundle_sha256"],
        "catalog_version": blueprint["catalog_version"],
        "commit": COMMIT,
        "hosts": {"trainers": 2},
        "required": {"trainers": 2},
        "reason": "",
    }
    assert result.succeeded
    assert result.location == "s3://llm-pretrain-artifacts-bucket-mock/health/dev.json"
    # Nothing lands in the stack config: anyone who can `pulumi config set` could forge it there.
    assert stack.values == {}


def test_a_failed_health_check_is_recorded_as_failed(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    runner = FakeRunner({"healthcheck.yml"})
    result = push.configure(
        stack, stack_input, runner=runner, playbooks=PLAYBOOKS, health=_health(bucket, stack)
    )
    record = _record(bucket)
    assert record is not None
    assert (record["status"], record["reason"], record["hosts"]) == (
        "failed",
        "the health check failed on at least one host",
        {"trainers": 1},
    )
    assert not result.succeeded


def test_a_pass_on_fewer_hosts_than_the_group_minimum_is_recorded_as_failed(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    health = _health(bucket, stack)
    push.configure(stack, stack_input, runner=FakeRunner(hosts=1), playbooks=PLAYBOOKS, health=health)
    record = _record(bucket)
    assert record is not None
    assert (record["status"], record["reason"]) == (
        "failed",
        "partial fleet: trainers: 1 of at least 2 host(s) passed",
    )
    # An empty inventory (no instance running yet) passes every play in Ansible: never a pass here.
    push.configure(stack, stack_input, runner=FakeRunner(hosts=0), playbooks=PLAYBOOKS, health=health)
    record = _record(bucket)
    assert record is not None
    assert (record["status"], record["reason"]) == (
        "failed",
        "partial fleet: trainers: 0 of at least 2 host(s) passed",
    )


def test_a_pass_with_playbooks_other_than_the_stacks_bundle_is_recorded_as_failed(
    bucket: S3HealthStore,
) -> None:
    stack, stack_input = _stack()
    health = _health(bucket, stack, bundle="f" * 64)
    push.configure(stack, stack_input, runner=FakeRunner(), playbooks=PLAYBOOKS, health=health)
    record = _record(bucket)
    assert record is not None
    deployed = stack.outputs()["blueprint"]["bundle_sha256"]
    assert (record["status"], record["reason"]) == (
        "failed",
        f"the nodes were configured with playbooks (bundle ffffffffffff) other than the stack's own "
        f"(bundle {deployed[:12]}): run `clusterfab up` first",
    )


def test_a_failed_configuration_skips_the_health_check_and_records_nothing(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    runner = FakeRunner({"gpu_node.yml"})
    result = push.configure(
        stack, stack_input, runner=runner, playbooks=PLAYBOOKS, health=_health(bucket, stack)
    )
    assert [c["playbook"] for c in runner.calls] == ["gpu_node.yml"]
    assert _record(bucket) is None
    assert (result.succeeded, result.health) == (False, None)


def test_a_partial_run_records_only_a_failure(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    health = _health(bucket, stack)
    passing = push.configure(
        stack,
        stack_input,
        runner=FakeRunner(),
        playbooks=PLAYBOOKS,
        only=["trainers"],
        tags=["nccl"],
        health=health,
    )
    assert passing.health is None
    assert _record(bucket) is None
    failing = push.configure(
        stack,
        stack_input,
        runner=FakeRunner({"healthcheck.yml"}),
        playbooks=PLAYBOOKS,
        only=["trainers"],
        health=health,
    )
    assert failing.health is not None
    assert failing.health.status == "failed"


def test_a_host_limit_narrows_each_group_and_records_only_a_failure(bucket: S3HealthStore) -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    health = _health(bucket, stack)
    result = push.configure(
        stack, stack_input, runner=runner, playbooks=PLAYBOOKS, limit="i-0abc*", health=health
    )
    assert [(c["playbook"], c["limit"]) for c in runner.calls] == [
        ("gpu_node.yml", "node_group_trainers:&i-0abc*"),
        ("healthcheck.yml", "node_group_trainers:&i-0abc*"),
    ]
    assert (result.health, _record(bucket)) == (None, None)
    failing = push.configure(
        stack,
        stack_input,
        runner=FakeRunner({"healthcheck.yml"}),
        playbooks=PLAYBOOKS,
        limit="i-0abc*",
        health=health,
    )
    assert failing.health is not None
    assert failing.health.status == "failed"


def test_tags_reach_the_node_playbook() -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS, tags=["nccl"], health=None)
    assert [(c["playbook"], c["tags"]) for c in runner.calls] == [("gpu_node.yml", ["nccl"])]


def test_unknown_node_groups_and_missing_outputs_are_usage_errors() -> None:
    stack, stack_input = _stack()
    with pytest.raises(
        UsageError,
        match=r"no node group eval in blueprints/examples/aws-p5-efa-fsx.yaml \(node groups: trainers\)",
    ):
        push.push_targets(stack_input, read_outputs(stack.outputs()), ["eval"])
    with pytest.raises(UsageError, match="the stack has no output for storage datasets"):
        push.push_targets(stack_input, read_outputs({**stack.outputs(), "storage": {}}))


def test_missing_ansible_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # validate, plan and cost do not need Ansible: it is the `configure` extra (README's first command).
    monkeypatch.setattr(push.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"install it with clusterfab's `configure` extra"):
        push.require_collection("aws")


def test_missing_collection_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    found = push.importlib.util.find_spec
    monkeypatch.setattr(
        push.importlib.util,
        "find_spec",
        lambda name: None if name.startswith("ansible_collections.") else found(name),
    )
    with pytest.raises(
        UsageError,
        match=r"needs the Ansible collection google.cloud: `ansible-galaxy collection install google.cloud`",
    ):
        push.require_collection("gcp")


def test_the_bundled_collections_are_found() -> None:
    push.require_collection("aws")
    push.require_collection("gcp")
