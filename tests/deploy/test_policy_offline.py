"""`clusterfab policy`: the pack's rules on the offline plan, as a pull request runs them (no credentials).

The examples pass in every environment; a plan with one resource made to violate a rule fails with that
rule's name, the resource and the fix, through the same `checks` functions CrossGuard runs.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.core import dates
from clusterfab.load import load
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import plan_blueprint
from clusterfab.policy.names import (
    BUCKET_ENCRYPTION,
    BUDGET,
    IMDSV2,
    NO_PUBLIC_BUCKETS,
    NO_PUBLIC_IPS,
    NO_SSH_RDP_FROM_INTERNET,
    PROTECT_STATEFUL,
)
from clusterfab.policy.offline import POLICIES, Violation, check_resources
from clusterfab.policy.pack import policies
from tests.conftest import PLANNED_EXAMPLES, REPO
from tests.deploy.conftest import cached_plan
from tests.factories import example_spec

EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"
STATEFUL = load_catalog().stateful_types.keys()
CASES = [pytest.param(p.stem, env, id=f"{p.stem}-{env}") for p in PLANNED_EXAMPLES for env in ("dev", "prod")]


def _check(example: str, env: str, resources: list[PlannedResource] | None = None) -> list[Violation]:
    planned = cached_plan(example, env).resources if resources is None else resources
    protected = example_spec(example, env).protected
    return check_resources(planned, protected=protected, stateful_types=STATEFUL)


@pytest.mark.parametrize(("example", "env"), CASES)
def test_every_example_passes(example: str, env: str) -> None:
    assert _check(example, env) == []


def _violate(
    example: str, env: str, type_: str, change: Callable[[PlannedResource], PlannedResource]
) -> list[PlannedResource]:
    resources = list(cached_plan(example, env).resources)
    index = next(i for i, r in enumerate(resources) if r.type == type_)
    resources[index] = change(resources[index])
    return resources


def _inputs(edit: Callable[[dict[str, Any]], None]) -> Callable[[PlannedResource], PlannedResource]:
    def change(resource: PlannedResource) -> PlannedResource:
        inputs = copy.deepcopy(dict(resource.inputs))
        edit(inputs)
        return dataclasses.replace(resource, inputs=inputs)

    return change


def test_imdsv1_on_a_launch_template_is_named() -> None:
    bad = _violate(
        "aws-p5-efa-fsx",
        "prod",
        "aws:ec2/launchTemplate:LaunchTemplate",
        _inputs(lambda i: i["metadataOptions"].update(httpTokens="optional")),
    )
    assert [(v.policy, v.resource) for v in _check("aws-p5-efa-fsx", "prod", bad)] == [
        (IMDSV2, "llm-pretrain-trainers-lt")
    ]


def test_a_public_ip_on_a_gcp_template_is_named() -> None:
    def external(inputs: dict[str, Any]) -> None:
        inputs["networkInterfaces"][0]["accessConfigs"] = [{"natIp": ""}]

    bad = _violate(
        "gcp-a3mega-tcpxo-filestore",
        "dev",
        "gcp:compute/instanceTemplate:InstanceTemplate",
        _inputs(external),
    )
    found = _check("gcp-a3mega-tcpxo-filestore", "dev", bad)
    assert [(v.policy, v.resource) for v in found] == [(NO_PUBLIC_IPS, "mega-train-trainers-template")]


def test_an_unprotected_file_system_fails_only_where_the_environment_protects() -> None:
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"

    def unprotect(resource: PlannedResource) -> PlannedResource:
        return dataclasses.replace(resource, protect=False)

    prod = _check("aws-p5-efa-fsx", "prod", _violate("aws-p5-efa-fsx", "prod", fsx, unprotect))
    assert [(v.policy, v.resource) for v in prod] == [(PROTECT_STATEFUL, "llm-pretrain-datasets-fs")]
    assert _check("aws-p5-efa-fsx", "dev", _violate("aws-p5-efa-fsx", "dev", fsx, unprotect)) == []


@pytest.mark.parametrize(
    ("example", "type_", "name"),
    [
        (
            "aws-p5-efa-fsx",
            "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
            "llm-pretrain-datasets-s3",
        ),
        ("aws-p5-efa-fsx", "aws:s3/bucket:Bucket", "llm-pretrain-artifacts-bucket"),
        ("aws-p5-slurm", "aws:ebs/volume:Volume", "llm-slurm-slurm-state"),
        ("gcp-a3mega-tcpxo-filestore", "gcp:filestore/instance:Instance", "mega-train-shared-share"),
        ("gcp-a3mega-tcpxo-filestore", "gcp:storage/bucket:Bucket", "mega-train-artifacts-bucket"),
        ("gcp-a3ultra-roce-lustre", "gcp:lustre/instance:Instance", "ultra-train-lustre-fs"),
    ],
)
def test_every_other_stateful_resource_must_be_protected_too(example: str, type_: str, name: str) -> None:
    def unprotect(resource: PlannedResource) -> PlannedResource:
        return dataclasses.replace(resource, protect=False)

    found = _check(example, "prod", _violate(example, "prod", type_, unprotect))
    assert [(v.policy, v.resource, v.type) for v in found] == [(PROTECT_STATEFUL, name, type_)]


def test_the_command_runs_every_policy_of_the_pack_but_the_budget() -> None:
    """`validate` prices the blueprint against its budget; every other policy runs on the plan too."""
    assert {p.name for p in policies()} - {BUDGET} == POLICIES


def test_buckets_without_encryption_or_with_an_open_access_block_are_named() -> None:
    resources = [
        r
        for r in cached_plan("aws-p5-efa-fsx", "prod").resources
        if r.type != "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ]
    assert [v.policy for v in _check("aws-p5-efa-fsx", "prod", resources)] == [BUCKET_ENCRYPTION]
    opened = _violate(
        "aws-p5-efa-fsx",
        "prod",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        _inputs(lambda i: i.update(blockPublicPolicy=False)),
    )
    assert [v.policy for v in _check("aws-p5-efa-fsx", "prod", opened)] == [NO_PUBLIC_BUCKETS]


@pytest.mark.parametrize(
    ("example", "type_", "what", "widen"),
    [
        (
            "aws-p5-efa-fsx",
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "security group rule llm-pretrain-net-ssh-203.0.113.0-24",
            lambda inputs: inputs.update(cidrIpv4="0.0.0.0/0"),
        ),
        (
            "gcp-tpu-v6e-spot",
            "gcp:compute/firewall:Firewall",
            "firewall rule trillium-spot-net-sys-ssh",
            lambda inputs: inputs.update(sourceRanges=["0.0.0.0/0", "203.0.113.0/24"]),
        ),
    ],
)
def test_ssh_from_the_internet_is_refused_by_validate_at_its_line_and_by_the_pack(
    tmp_path: Path, example: str, type_: str, what: str, widen: Callable[[dict[str, Any]], None]
) -> None:
    """What the pack refuses, `validate` refuses first and located (BP111); the pack still refuses it in a
    plan that did not come through validate, and accepts the office range validate accepts."""
    text = (REPO / "blueprints" / "examples" / f"{example}.yaml").read_text()
    opened = tmp_path / f"{example}.yaml"
    opened.write_text(
        text.replace("network:\n", "network:\n  ssh_ingress_cidrs: [0.0.0.0/0, 203.0.113.0/24]\n")
    )
    result = load(opened, display=opened.name, environment="prod", today=dates.today())
    assert [(f.severity.value, f.code, f.field, f.line) for f in result.findings if f.code == "BP111"] == [
        ("error", "BP111", "network.ssh_ingress_cidrs[0]", text.splitlines().index("network:") + 2)
    ]
    office = tmp_path / "office.yaml"
    office.write_text(text.replace("network:\n", "network:\n  ssh_ingress_cidrs: [203.0.113.0/24]\n"))
    planned = list(plan_blueprint(office, env="prod", display=office.name).resources)
    assert check_resources(planned, protected=True, stateful_types=STATEFUL) == []
    rule = next(i for i, r in enumerate(planned) if r.type == type_ and r.name == what.rsplit(" ", 1)[1])
    planned[rule] = _inputs(widen)(planned[rule])
    found = check_resources(planned, protected=True, stateful_types=STATEFUL)
    assert [(v.policy, v.type, v.message) for v in found] == [
        (
            NO_SSH_RDP_FROM_INTERNET,
            type_,
            f"{what} opens SSH (port 22) to the whole internet: reach nodes through SSM Session Manager "
            "(AWS) or IAP (GCP), or allow only an office or VPN range (a /24 or narrower)",
        )
    ]


def test_the_command_checks_the_offline_plan() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clusterfab",
            "policy",
            "blueprints/examples/aws-p5-efa-fsx.yaml",
            "--env",
            "prod",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CLUSTERFAB_TODAY": "2026-11-23"},
    )
    assert (done.returncode, done.stdout.strip().splitlines()[-1]) == (
        0,
        f"{EXAMPLE} [prod]: passes the policy pack (0 violations, 51 resources checked)",
    )


def test_unprotected_storage_in_prod_is_refused_by_validate_before_the_pack(tmp_path: Path) -> None:
    text = (REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml").read_text()
    assert text.endswith("  prod: {}\n")
    unprotected = tmp_path / "unprotected.yaml"
    overlay = "  prod:\n    storage:\n      - name: datasets\n        protect: false\n"
    unprotected.write_text(text.removesuffix("  prod: {}\n") + overlay)
    result = load(unprotected, display=unprotected.name, environment="prod", today=dates.today())
    line = len(text.splitlines()) + 3
    assert [(f.severity.value, f.code, f.field, f.line, f.column) for f in result.findings] == [
        ("error", "BP155", "storage[0].protect", line, 18)
    ]
    # Saying that prod keeps nothing is what both accept.
    confirmed = tmp_path / "confirmed.yaml"
    confirmed.write_text(unprotected.read_text().replace("  prod:\n", "  prod:\n    protected: false\n"))
    assert load(confirmed, display=confirmed.name, environment="prod", today=dates.today()).ok
    planned = plan_blueprint(confirmed, env="prod", display=confirmed.name).resources
    assert check_resources(planned, protected=False, stateful_types=STATEFUL) == []
