"""Properties every example plan must have, whatever the blueprint: secure defaults and tags/labels."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from clusterfab.plan.project import Plan
from tests.components.harness import gcp_plan, plan_file
from tests.conftest import EXAMPLES

AWS_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("aws-")]
UNTAGGABLE = {
    "pulumi:providers:",
    # No cloud holds it: the health signing key lives in the stack's state alone.
    "pulumi-python:dynamic/clusterfab:HealthSigningKey",
    "aws:vpc/",
    "aws:iam/rolePolicy",
    "aws:iam/rolePolicyAttachment",
    "aws:ec2/routeTableAssociation",
    "aws:s3/bucketVersioning",
    "aws:s3/bucketServerSideEncryption",
    "aws:s3/bucketPublicAccessBlock",
    "aws:s3/bucketOwnershipControls",
    "aws:s3/bucketPolicy",
    "aws:secretsmanager/secretPolicy",
    "aws:budgets/",
    # An account setting (a tag key's cost allocation status), not a resource that could carry tags.
    "aws:costexplorer/",
    "aws:ec2/routeTable",
    "aws:autoscaling/",
    "aws:ec2/volumeAttachment",
    # Objects in a Kubernetes cluster: no cloud resource, labelled by the render (team namespaces).
    "kubernetes:",
}


@pytest.mark.parametrize("path", AWS_EXAMPLES, ids=[p.stem for p in AWS_EXAMPLES])
@pytest.mark.parametrize("env", ["dev", "prod"])
def test_nothing_is_public_and_everything_is_tagged(path: Path, env: str) -> None:
    plan = plan_file(path, env)
    for resource in plan.resources:
        inputs = resource.inputs
        assert inputs.get("mapPublicIpOnLaunch") in (None, False), resource.name
        # Launch templates take the string "false"; an instance (the monitoring node) the boolean.
        assert inputs.get("associatePublicIpAddress") in (None, "false", False), resource.name
        for nic in inputs.get("networkInterfaces", []):
            # EC2 refuses the field on multi-interface launches; the subnet keeps public IPs off.
            assert "associatePublicIpAddress" not in nic
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


GCP_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("gcp-")]
STANDARD_LABELS = ("clusterfab-blueprint", "clusterfab-stack", "clusterfab-component")


def _label_field(type_token: str) -> str | None:
    """The input that holds a GCP resource's labels (None: the resource takes no labels)."""
    if not type_token.startswith("gcp:"):  # providers, dynamic resources, Kubernetes objects
        return None
    _, module_path, class_name = type_token.split(":")
    module = module_path.partition("/")[0]
    cls = getattr(importlib.import_module(f"pulumi_gcp.{module}"), class_name)
    params = inspect.signature(cls._internal_init).parameters
    if "user_labels" in params:  # notification channels: `labels` configures the channel itself
        return "userLabels"
    if "resource_labels" in params:  # a GKE cluster: `labels` are not its own
        return "resourceLabels"
    return "labels" if "labels" in params else None


NODE_ROLES = {
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/storage.objectViewer",
    # GKE's least role for a node service account (logs, metrics, node status), as GKE's docs name it.
    "roles/container.defaultNodeServiceAccount",
}
SECRET_ROLES = {"roles/secretmanager.secretAccessor", "roles/secretmanager.secretVersionAdder"}
CONDITIONED_PERMISSIONS = {
    # The node sync's naming, and the Slurm controller's elastic VMs (create, name, delete; their boot
    # disks and their groups' templates): only with a condition on the resources' names.
    "compute.instances.get",
    "compute.instances.setMetadata",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.setLabels",
    "compute.instances.setServiceAccount",
    "compute.instances.updateShieldedVmConfig",
    "compute.disks.create",
    "compute.disks.setLabels",
    "compute.instanceTemplates.get",
    "compute.instanceTemplates.useReadOnly",
    # Naming the compact placement policy an elastic VM is created in.
    "compute.resourcePolicies.use",
    # A node group's MIG recreating a failed node's VM; reporting a reservation-bound VM's host faulty.
    "compute.instanceGroupManagers.update",
    "compute.instances.update",
}
CUSTOM_PERMISSIONS = {
    # Prometheus' GCE discovery and the Slurm node sync's reads.
    "compute.instances.list",
    # What elastic VMs launch with, naming no one VM (as on AWS).
    "compute.images.useReadOnly",
    "compute.instanceGroupManagers.list",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
    # Elastic VMs run as their node group's account: granted on that account only.
    "iam.serviceAccounts.actAs",
    *CONDITIONED_PERMISSIONS,
}


def _assert_least_privilege(inputs: dict[str, Any], custom_roles: dict[str, set[str]], name: str) -> None:
    """Every grant is a node's basic role, a secret's read or write (on the secret alone), or one of the
    cluster's custom roles with the few permissions it needs; instance writes only under a condition,
    acting as a service account only on that account."""
    role = inputs["role"]
    if role in SECRET_ROLES:
        assert "secretId" in inputs, name  # granted on one secret, not the project
        return
    if role in custom_roles:
        assert custom_roles[role] <= CUSTOM_PERMISSIONS, name
        if custom_roles[role] & CONDITIONED_PERMISSIONS:
            # Every alternative of the condition names resources: by a name prefix or an exact name.
            terms = inputs["condition"]["expression"].split(" || ")
            assert all(t.startswith(("resource.name.startsWith(", "resource.name == ")) for t in terms), name
        if "iam.serviceAccounts.actAs" in custom_roles[role]:
            assert inputs["serviceAccountId"].startswith("projects/"), name  # one account, not the project
        return
    assert role in NODE_ROLES, name


GCP_LABELLED = {
    "gcp-a3mega-tcpxo-filestore": [
        "mega-train-artifacts-bucket", "mega-train-net-psa-range", "mega-train-shared-share",
        "mega-train-trainers-template",
    ],
    "gcp-a3ultra-roce-lustre": [
        "ultra-train-artifacts-bucket", "ultra-train-lustre-fs", "ultra-train-net-psa-range",
        "ultra-train-slurm-address", "ultra-train-slurm-controller", "ultra-train-slurm-login-0",
        "ultra-train-slurm-munge-key", "ultra-train-slurm-state", "ultra-train-trainers-template",
    ],
    "gcp-tpu-v5p-multislice": [
        "v5p-pretrain-artifacts-bucket", "v5p-pretrain-checkpoints-share", "v5p-pretrain-net-psa-range",
        "v5p-pretrain-pretrain-0",
    ],
    "gcp-tpu-v6e-spot": ["trillium-spot-artifacts-bucket", "trillium-spot-trillium-0"],
    "gcp-gke-a3mega": [
        "gke-mega-artifacts-bucket", "gke-mega-gke-cluster", "gke-mega-net-psa-range",
        "gke-mega-shared-share",
    ],
}  # fmt: skip
"""The labelled resources of each example's plan. In prod the v5p slices are a queued resource, whose nodes'
labels are checked in its node spec."""


def _assert_no_public_address(type_: str, name: str, inputs: dict[str, Any]) -> None:
    """No NIC with an external address; GKE's nodes private, its API never open to Google's ranges."""
    for nic in inputs.get("networkInterfaces", []):
        assert "accessConfigs" not in nic, name
        assert "ipv6AccessConfigs" not in nic, name
    if type_ == "gcp:container/nodePool:NodePool":
        assert inputs["networkConfig"]["enablePrivateNodes"] is True, name
    elif type_ == "gcp:container/cluster:Cluster":
        assert inputs["privateClusterConfig"]["enablePrivateNodes"] is True, name
        assert inputs["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False, name
    elif "networkConfig" in inputs:
        assert inputs["networkConfig"]["enableExternalIps"] is False, name


@pytest.mark.parametrize("path", GCP_EXAMPLES, ids=[p.stem for p in GCP_EXAMPLES])
@pytest.mark.parametrize("env", ["dev", "prod"])
def test_gcp_nothing_is_public_and_everything_is_labelled(path: Path, env: str) -> None:
    plan = plan_file(path, env)
    labelled: list[str] = []
    custom_roles = _custom_roles(plan)
    for resource in plan.resources:
        inputs = resource.inputs
        _assert_no_public_address(resource.type, resource.name, inputs)
        for spec in inputs.get("body", {}).get("tpu", {}).get("nodeSpec", []):  # a TPU queued resource
            assert spec["node"]["networkConfig"]["enableExternalIps"] is False, resource.name
            assert all(spec["node"]["labels"].get(key) for key in STANDARD_LABELS), resource.name
        if resource.type == "gcp:compute/firewall:Firewall":
            assert inputs["direction"] == "INGRESS"
            assert "0.0.0.0/0" not in inputs["sourceRanges"], resource.name
            if any("22" in a.get("ports", []) for a in inputs["allows"]):
                assert inputs["sourceRanges"] == ["35.235.240.0/20"], resource.name
        if resource.type == "gcp:compute/instanceTemplate:InstanceTemplate":
            assert inputs["shieldedInstanceConfig"] == {
                "enableSecureBoot": False,
                "enableVtpm": True,
                "enableIntegrityMonitoring": True,
            }
            assert inputs["scheduling"]["onHostMaintenance"] == "TERMINATE"
            assert inputs["metadata"]["enable-oslogin"] == "TRUE"
            assert inputs["serviceAccount"]["email"].endswith("-sa@mock-project.iam.gserviceaccount.com")
        if resource.type == "gcp:storage/bucket:Bucket":
            assert inputs["publicAccessPrevention"] == "enforced"
            assert inputs["uniformBucketLevelAccess"] is True
        if resource.type.startswith("gcp:") and "member" in inputs:
            assert inputs["member"].startswith("serviceAccount:"), resource.name
            _assert_least_privilege(inputs, custom_roles, resource.name)
        field = _label_field(resource.type) if resource.custom else None
        if field is not None:
            labels = inputs.get(field, {})
            assert all(labels.get(key) for key in STANDARD_LABELS), resource.name
            assert labels["clusterfab-stack"] == env, resource.name
            labelled.append(resource.name)
    queued = "v5p-pretrain-pretrain-0" if env == "prod" else None
    assert sorted(labelled) == [name for name in GCP_LABELLED[path.stem] if name != queued]


def _custom_roles(plan: Plan) -> dict[str, set[str]]:
    return {
        r.name: set(r.inputs["permissions"])
        for r in plan.resources
        if r.type == "gcp:projects/iAMCustomRole:IAMCustomRole"
    }


def test_gcp_elastic_slurm_grants_are_least_privilege() -> None:
    """No example has an elastic GCP group: the Slurm controller's rights over elastic VMs, checked here."""
    from tests.components.test_gcp_slurm import ELASTIC

    plan = gcp_plan(ELASTIC, name="gse", env="prod")
    grants = [r for r in plan.resources if r.type.startswith("gcp:") and "member" in r.inputs]
    for resource in grants:
        _assert_least_privilege(resource.inputs, _custom_roles(plan), resource.name)
    assert "gcp:serviceaccount/iAMMember:IAMMember" in {r.type for r in grants}
