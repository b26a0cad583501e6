"""Properties every AWS example plan must have, whatever the blueprint: secure defaults and tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.components.harness import plan_file
from tests.conftest import EXAMPLES

AWS_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("aws-")]
UNTAGGABLE = {
    "aws:vpc/",
    "aws:iam/rolePolicy",
    "aws:iam/rolePolicyAttachment",
    "aws:ec2/routeTableAssociation",
    "aws:s3/bucketVersioning",
    "aws:s3/bucketServerSideEncryption",
    "aws:s3/bucketPublicAccessBlock",
    "aws:s3/bucketOwnershipControls",
    "aws:budgets/",
    "aws:ec2/routeTable",
    "aws:autoscaling/",
}


@pytest.mark.parametrize("path", AWS_EXAMPLES, ids=[p.stem for p in AWS_EXAMPLES])
@pytest.mark.parametrize("env", ["dev", "prod"])
def test_nothing_is_public_and_everything_is_tagged(path: Path, env: str) -> None:
    plan = plan_file(path, env)
    for resource in plan.resources:
        inputs = resource.inputs
        assert inputs.get("mapPublicIpOnLaunch") in (None, False), resource.name
        assert inputs.get("associatePublicIpAddress") in (None, "false"), resource.name
        for nic in inputs.get("networkInterfaces", []):
            assert nic["associatePublicIpAddress"] == "false"
        if resource.type.endswith("SecurityGroupIngressRule"):
            assert inputs.get("cidrIpv4") != "0.0.0.0/0", resource.name
        if resource.custom and not any(resource.type.startswith(p) for p in UNTAGGABLE):
            tags = inputs.get("tags", {})
            assert tags.get("clusterfab-blueprint"), resource.name
            assert tags.get("clusterfab-stack") == env, resource.name
            assert tags.get("clusterfab-component"), resource.name
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            assert inputs["metadataOptions"]["httpTokens"] == "required"
            assert all(m["ebs"]["encrypted"] == "true" for m in inputs["blockDeviceMappings"])
