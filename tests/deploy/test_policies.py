"""The CrossGuard policies, run on the resources the offline plan records for the example blueprints.

The plans are what `pulumi preview` would send the policies (type token, camelCase inputs, protect),
modulo provider defaults and unknowns; each policy's `validate` is called directly, with the props
made as the analyzer makes them (through the wire's Struct, in CrossGuard's Mapping / Sequence
proxies). The compliant examples pass, and a violating variant of each resource trips its policy.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import subprocess
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from clusterfab.catalog import load_catalog
from clusterfab.cost import estimate_cost
from clusterfab.load import load
from clusterfab.plan.engine import PlannedResource
from clusterfab.policy import buckets, checks
from clusterfab.policy.pack import (
    BUCKET_ENCRYPTION,
    BUDGET,
    ENCRYPTION,
    IMDSV2,
    NO_PUBLIC_BUCKETS,
    NO_PUBLIC_IPS,
    PACK_NAME,
    PROTECT_STATEFUL,
    policies,
)
from clusterfab.policy.pricing import PricingError, price_resources
from clusterfab.policy.resources import Resource, from_planned
from tests.conftest import PLANNED_EXAMPLES, REPO
from tests.deploy.crossguard import LT, edited, planned, violations
from tests.factories import TODAY

CASES = [pytest.param(p.stem, env, id=f"{p.stem}-{env}") for p in PLANNED_EXAMPLES for env in ("dev", "prod")]
COST_CASES = CASES


# --- the examples comply -----------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "env"), CASES)
def test_example_plans_violate_no_policy(example: str, env: str) -> None:
    resources = planned(example, env)
    budget = {"maxHourlyUsd": 1_000_000, "maxMonthlyUsd": 1e9}
    for policy in policies():
        assert violations(policy.name, resources, budget if policy.name == BUDGET else None) == [], (
            policy.name
        )


@pytest.mark.parametrize(("example", "env"), COST_CASES)
def test_planned_resources_cost_what_the_blueprint_costs(example: str, env: str) -> None:
    """The budget policy prices resources with the estimator of `clusterfab cost`: same items, same money."""
    path = REPO / "blueprints" / "examples" / f"{example}.yaml"
    validated = load(path, display=str(path), environment=env, today=TODAY).blueprints[env]
    expected = estimate_cost(validated.spec, load_catalog(), today=TODAY)
    got = price_resources([from_planned(r) for r in planned(example, env)], load_catalog(), today=TODAY)
    assert got.skipped == ()
    assert (got.estimate.hourly_usd, got.estimate.monthly_usd) == (expected.hourly_usd, expected.monthly_usd)
    assert sorted((i.kind, i.sku, i.quantity, i.pricing_model) for i in got.estimate.items) == sorted(
        (i.kind, i.sku, i.quantity, i.pricing_model) for i in expected.items
    )
    assert got.estimate.region == expected.region


# --- violating variants ------------------------------------------------------------------------------


def test_imdsv1_on_a_launch_template() -> None:
    resources = edited(
        planned("aws-p5-efa-fsx", "prod"), LT, lambda i: i["metadataOptions"].update(httpTokens="optional")
    )
    assert violations(IMDSV2, resources) == [
        "launch template llm-pretrain-trainers-lt allows IMDSv1 (metadataOptions.httpTokens is "
        "'optional'): set it to 'required' so that instance metadata needs IMDSv2 session tokens"
    ]


def test_imdsv2_is_also_checked_on_instances_without_metadata_options() -> None:
    instance = Resource("aws:ec2/instance:Instance", "bastion", "urn:pulumi:prod::p::t::bastion", {})
    assert checks.imdsv2(instance) == [
        "instance bastion allows IMDSv1 (metadataOptions.httpTokens is 'unset'): set it to 'required' "
        "so that instance metadata needs IMDSv2 session tokens"
    ]
    off = Resource(instance.type, "x", instance.urn, {"metadataOptions": {"httpEndpoint": "disabled"}})
    assert checks.imdsv2(off) == []


@pytest.mark.parametrize(
    ("example", "type_", "edit", "expected"),
    [
        pytest.param(
            "aws-p5-efa-fsx",
            LT,
            lambda i: i["networkInterfaces"][3].update(associatePublicIpAddress="true"),
            "launch template llm-pretrain-trainers-lt gives network interface 3 a public IP",
            id="aws-launch-template-nic",
        ),
        pytest.param(
            "aws-p5-efa-fsx",
            "aws:ec2/subnet:Subnet",
            lambda i: i.update(mapPublicIpOnLaunch=True),
            "gives every instance a public IP (mapPublicIpOnLaunch)",
            id="aws-subnet",
        ),
        pytest.param(
            "gcp-a3ultra-roce-lustre",
            "gcp:compute/instanceTemplate:InstanceTemplate",
            lambda i: i["networkInterfaces"][0].update(accessConfigs=[{"networkTier": "PREMIUM"}]),
            "InstanceTemplate ultra-train-trainers-template gives network interface 0 an external IP",
            id="gcp-instance-template",
        ),
        pytest.param(
            "gcp-tpu-v6e-spot",
            "gcp:tpu/v2Vm:V2Vm",
            lambda i: i["networkConfig"].update(enableExternalIps=True),
            "TPU VM trillium-spot-trillium-0 has external IPs",
            id="gcp-tpu",
        ),
        pytest.param(
            "gcp-tpu-v5p-multislice",
            "pulumi-python:dynamic/gcp-tpu:QueuedResource",
            lambda i: i["body"]["tpu"]["nodeSpec"][0]["node"]["networkConfig"].update(enableExternalIps=True),
            "TPU queued resource v5p-pretrain-pretrain-slices gives its slices external IPs",
            id="gcp-tpu-queued",
        ),
    ],
)
def test_public_ips(example: str, type_: str, edit: Any, expected: str) -> None:
    (message,) = violations(NO_PUBLIC_IPS, edited(planned(example, "prod"), type_, edit))
    assert expected in message


def test_a_nat_gateway_elastic_ip_is_fine_but_one_on_an_instance_is_not() -> None:
    nat = Resource("aws:ec2/eip:Eip", "nat-ip", "urn:pulumi:prod::p::t::nat-ip", {"domain": "vpc"})
    assert checks.public_ips(nat) == []
    node = Resource("aws:ec2/eip:Eip", "node-ip", nat.urn, {"domain": "vpc", "instance": "i-123"})
    assert checks.public_ips(node) == [
        "Elastic IP node-ip is attached to an instance: nodes must not be reachable directly"
    ]


def test_unencrypted_boot_disk() -> None:
    resources = edited(
        planned("aws-p5-efa-fsx", "prod"),
        LT,
        lambda i: i["blockDeviceMappings"][0]["ebs"].update(encrypted="false"),
    )
    assert violations(ENCRYPTION, resources) == [
        "launch template llm-pretrain-trainers-lt has an unencrypted EBS volume (/dev/sda1): "
        "set ebs.encrypted to true"
    ]


@pytest.mark.parametrize(
    ("type_", "props", "fragment"),
    [
        ("aws:ebs/volume:Volume", {"size": 100}, "Volume v is not encrypted"),
        ("aws:efs/fileSystem:FileSystem", {"encrypted": False}, "FileSystem v is not encrypted"),
        ("aws:ec2/instance:Instance", {"rootBlockDevice": {"encrypted": False}}, "unencrypted root volume"),
    ],
)
def test_other_unencrypted_disks(type_: str, props: dict[str, Any], fragment: str) -> None:
    (message,) = checks.encryption(Resource(type_, "v", "urn:pulumi:dev::p::t::v", props))
    assert fragment in message


def test_a_bucket_without_default_encryption() -> None:
    sse = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    resources = [r for r in planned("aws-p6-b200-capacity-block", "prod") if r.type != sse]
    assert violations(BUCKET_ENCRYPTION, resources) == [
        "S3 bucket b200-finetune-artifacts-bucket has no default encryption configuration: add an "
        "aws.s3.BucketServerSideEncryptionConfiguration (aws:kms) for it"
    ]


def test_bucket_encryption_follows_property_dependencies_when_crossguard_knows_them() -> None:
    sse = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    bucket = Resource("aws:s3/bucket:Bucket", "b", "urn:b", {}, parent="urn:c1")
    config = Resource(sse, "e", "urn:e", {}, parent="urn:c2", dependencies={"bucket": ("urn:b",)})
    assert buckets.unencrypted_buckets([bucket, config]) == []
    assert len(buckets.unencrypted_buckets([bucket])) == 1


def test_bucket_rules_decide_during_a_preview_where_names_are_unknown() -> None:
    """In a preview a new bucket's name, and so the `bucket` of its configurations, is unknown, and
    CrossGuard's proxies raise when a rule reads it (the policy would be reported as not run). The stack
    rules match the configurations by their dependencies instead."""
    name = unknown_checking_proxy({"bucket": UNKNOWN_STRING_VALUE, "bucketPrefix": "b-"})
    bucket = Resource("aws:s3/bucket:Bucket", "b", "urn:b", name, parent="urn:c1")

    def block(urn: str, target: str) -> Resource:
        props = unknown_checking_proxy({"bucket": UNKNOWN_STRING_VALUE, "blockPublicAcls": True})
        access = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
        return Resource(access, urn, urn, props, parent="urn:c2", dependencies={"bucket": (target,)})

    assert buckets.unblocked_buckets([bucket, block("urn:other", "urn:x"), block("urn:p", "urn:b")]) == []
    assert [b.name for b, _ in buckets.unblocked_buckets([bucket, block("urn:other", "urn:x")])] == ["b"]


@pytest.mark.parametrize(
    ("example", "type_", "edit", "expected"),
    [
        pytest.param(
            "gcp-tpu-v6e-spot",
            "gcp:storage/bucket:Bucket",
            lambda i: i.update(publicAccessPrevention="inherited"),
            "bucket trillium-spot-artifacts-bucket does not enforce public access prevention",
            id="gcs",
        ),
        pytest.param(
            "aws-p5-efa-fsx",
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            lambda i: i.update(blockPublicPolicy=False),
            "public access block llm-pretrain-artifacts-public-access leaves blockPublicPolicy off",
            id="s3-block",
        ),
        pytest.param(
            "aws-p5-efa-fsx",
            "aws:s3/bucket:Bucket",
            lambda i: i.update(acl="public-read"),
            "Bucket llm-pretrain-artifacts-bucket has the public ACL 'public-read'",
            id="s3-acl",
        ),
    ],
)
def test_public_buckets(example: str, type_: str, edit: Any, expected: str) -> None:
    (message,) = violations(NO_PUBLIC_BUCKETS, edited(planned(example, "prod"), type_, edit))
    assert expected in message


def test_unprotected_state_in_prod() -> None:
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    resources = edited(planned("aws-p5-efa-fsx", "prod"), fsx, lambda i: None, protect=False)
    assert violations(PROTECT_STATEFUL, resources) == [
        f"llm-pretrain-datasets-fs ({fsx}) holds data but is not protected in stack prod: protect it "
        "(storage `protect: true` in the blueprint, or protect=True on the resource) so that no update or "
        "destroy can delete it"
    ]


def test_protected_stacks_can_be_added_in_the_policy_config() -> None:
    resources = planned("gcp-a3ultra-roce-lustre", "dev")
    assert violations(PROTECT_STATEFUL, resources) == []
    found = violations(PROTECT_STATEFUL, resources, {"protectedStacks": ["dev"]})
    assert sorted(m.split(" ")[0] for m in found) == [
        "ultra-train-artifacts-bucket",
        "ultra-train-lustre-fs",
        "ultra-train-slurm-state",
    ]


def test_protection_follows_the_blueprint_not_the_stack_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11 item 3: `production` and `prod-eu` were unprotected because only the literal name
    `prod` was. The policy reads the stack's own file and blueprint, as the program does."""
    (tmp_path / "Pulumi.yaml").write_text("name: clusterfab\nruntime: python\nmain: stacks/\n")
    (tmp_path / "stacks").mkdir()
    blueprint = (REPO / "blueprints/examples/aws-p5-efa-fsx.yaml").read_text()
    blueprint = blueprint.replace("  prod: {}", "  prod: {}\n  prod-eu: {protected: true}\n  scratchpad: {}")
    (tmp_path / "bp.yaml").write_text(blueprint)
    for stack in ("prod-eu", "scratchpad"):
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(
            f"config:\n  clusterfab:blueprint: bp.yaml\n  clusterfab:environment: {stack}\n"
        )
    monkeypatch.chdir(tmp_path)
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    unprotected = [
        PlannedResource(
            **{
                **r.__dict__,
                "urn": r.urn.replace("urn:pulumi:prod::", f"urn:pulumi:{stack}::"),
                "protect": False,
            }
        )
        for stack in ("prod-eu", "scratchpad")
        for r in planned("aws-p5-efa-fsx", "prod")
        if r.type == fsx
    ]
    found = violations(PROTECT_STATEFUL, unprotected)
    assert [m.split(" holds")[0] + " in " + m.rsplit(" in stack ", 1)[1].split(":")[0] for m in found] == [
        f"llm-pretrain-datasets-fs ({fsx}) in prod-eu"
    ]


# --- budget ----------------------------------------------------------------------------------------


def test_budget_policy_refuses_resources_over_the_configured_budget() -> None:
    (message,) = violations(BUDGET, planned("aws-p5-efa-fsx", "prod"), {"maxHourlyUsd": 500})
    assert message.startswith(
        "the planned resources are OVER BUDGET (hourly $887.79 over the $500.00 limit) at catalog "
    )
    assert (
        "(largest: trainers p5.48xlarge x 16 $880.64/h, datasets fsx-lustre/PERSISTENT_2/125 x 36,000"
        in message
    )
    assert message.endswith("make the cluster smaller or raise the budget in the policy config")


def test_budget_policy_within_budget_or_without_one() -> None:
    resources = planned("gcp-tpu-v5p-multislice", "prod")
    assert violations(BUDGET, resources, {"maxHourlyUsd": 600, "maxMonthlyUsd": 400_000}) == []
    assert violations(BUDGET, resources, {}) == []
    assert len(violations(BUDGET, resources, {"maxMonthlyUsd": 300_000})) == 1


def test_budget_policy_says_when_it_cannot_price() -> None:
    vm = PlannedResource(
        "urn:pulumi:prod::p::gcp:tpu/v2Vm:V2Vm::t", "gcp:tpu/v2Vm:V2Vm", "t", None, True, False, {}
    )
    assert violations(BUDGET, [vm], {"maxHourlyUsd": 1}) == [
        "cannot check the budget: cannot tell which region the resources are in: "
        "set `region` in the policy config"
    ]


def test_pricing_reads_autoscaled_groups_at_their_max_and_counts_unreadable_ones() -> None:
    parent = "urn:pulumi:dev::clusterfab::clusterfab:compute:AwsGpuNodeGroup::g"
    asg = Resource(
        "aws:autoscaling/group:Group", "g-asg", "urn:asg", {"minSize": 0, "maxSize": 4}, parent=parent
    )
    lt = Resource(LT, "g-lt", "urn:lt", {"instanceType": "p5.48xlarge"}, parent=parent)
    lonely = Resource("aws:autoscaling/group:Group", "x-asg", "urn:x", {"maxSize": 2}, parent="urn:other")
    cost = price_resources([asg, lt, lonely], load_catalog(), today=TODAY, region="us-east-1")
    (item,) = cost.estimate.items
    assert (item.quantity, item.min_quantity, item.sku) == (4, 0, "p5.48xlarge")
    assert cost.skipped == ("x-asg: no launch template with an instance type, or no max size",)
    with pytest.raises(PricingError):
        price_resources([asg, lt], load_catalog(), today=TODAY)


# --- the pack, served ------------------------------------------------------------------------------


def test_the_pack_serves_every_policy_and_analyzes_a_resource() -> None:
    """Start policy/__main__.py as the Pulumi engine would, and talk to it over the analyzer protocol."""
    pack = subprocess.Popen(
        [sys.executable, str(REPO / "policy" / "__main__.py")], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert pack.stdout is not None
        port = pack.stdout.readline().strip()
        assert port.isdigit(), port
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
            info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
            assert info.name == PACK_NAME
            assert {p.name for p in info.policies} == {p.name for p in policies()}
            lt = next(r for r in planned("aws-p5-efa-fsx", "prod") if r.type == LT)

            def analyze(inputs: Mapping[str, Any]) -> Any:
                props = struct_pb2.Struct()
                props.update(inputs)
                request = analyzer_pb2.AnalyzeRequest(
                    type=lt.type,
                    properties=props,
                    urn=lt.urn,
                    name=lt.name,
                    options=analyzer_pb2.AnalyzerResourceOptions(protect=False),
                )
                return analyzer.Analyze(request, timeout=30)

            compliant = analyze(lt.inputs)
            options = {**lt.inputs["metadataOptions"], "httpTokens": "optional"}
            optional = {**copy.deepcopy(lt.inputs), "metadataOptions": options}
            response = analyze(optional)
        # The served pack sees the props in CrossGuard's proxies: the example's template passes.
        assert [d.message for d in compliant.diagnostics] == []
        assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [(IMDSV2, 1)]
        assert "allows IMDSv1" in response.diagnostics[0].message
    finally:
        pack.terminate()
        pack.wait(10)


def test_the_policy_page_names_every_policy() -> None:
    page = (REPO / "docs" / "policies.md").read_text()
    assert [p.name for p in policies() if f"| `{p.name}` |" not in page] == []


def _newline_tagged(resource: Resource) -> Resource:
    """The resource with every tag value it has followed by a newline (as a hostile program could set)."""
    props = dict(resource.props)
    tags = props.get("tags")
    if isinstance(tags, dict):
        props["tags"] = {k: f"{v}\n" for k, v in tags.items()}
    elif isinstance(tags, list):
        props["tags"] = [{**t, "value": f"{t.get('value', '')}\n"} for t in tags]
    return dataclasses.replace(resource, props=props)


def test_names_taken_from_tags_must_be_whole_names() -> None:
    """A cluster or node group name read from a tag is a name only if all of it is (no trailing newline):
    otherwise the budget policy names the estimate and its items as it does for untagged resources."""
    resources = [_newline_tagged(from_planned(r)) for r in planned("aws-p5-efa-fsx", "prod")]
    got = price_resources(resources, load_catalog(), today=TODAY)
    assert got.estimate.name == "planned"
    assert not any("\n" in item.name for item in got.estimate.items)


def test_a_capacity_block_is_priced_for_what_is_left_of_its_term_as_cost_prices_it() -> None:
    """The policy sees resources, not the blueprint: the block's end comes from the tag the stack puts on its
    group. Ten days and 11.5 hours before the prod block ends (2027-07-22T11:30Z), 251.5 hours are left."""
    today = dt.date(2027, 7, 12)
    resources = [from_planned(r) for r in planned("aws-p6-b200-capacity-block", "prod")]
    (asg,) = [r for r in resources if r.type == "aws:autoscaling/group:Group"]
    assert asg.tags()["clusterfab-capacity-ends-at"] == "2027-07-22T11:30:00Z"
    got = price_resources(resources, load_catalog(), today=today)
    (group,) = [i for i in got.estimate.items if i.kind == "node_group"]
    assert (group.ends_at, group.term_hours) == (
        dt.datetime(2027, 7, 22, 11, 30, tzinfo=dt.UTC),
        Decimal("251.5"),
    )
    assert group.hourly_usd is not None
    assert group.monthly_usd == group.hourly_usd * Decimal("251.5")
    path = REPO / "blueprints" / "examples" / "aws-p6-b200-capacity-block.yaml"
    spec = load(path, display=str(path), environment="prod", today=today).blueprints["prod"].spec
    expected = estimate_cost(spec, load_catalog(), today=today)
    assert (got.estimate.hourly_usd, got.estimate.monthly_usd) == (expected.hourly_usd, expected.monthly_usd)


ENDS = "clusterfab-capacity-ends-at"


def test_a_capacity_end_tag_that_is_no_utc_time_prices_the_whole_month() -> None:
    resources = edited(
        planned("aws-p6-b200-capacity-block", "prod"),
        "aws:autoscaling/group:Group",
        lambda inputs: [t.update(value="summer") for t in inputs["tags"] if t["key"] == ENDS],
    )
    got = price_resources([from_planned(r) for r in resources], load_catalog(), today=dt.date(2027, 7, 12))
    (group,) = [i for i in got.estimate.items if i.kind == "node_group"]
    assert (group.ends_at, group.term_hours) == (None, None)
    assert group.hourly_usd is not None
    assert group.monthly_usd == group.hourly_usd * 730
