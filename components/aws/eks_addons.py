"""EKS managed add-ons, each at a given version (or EKS's default for the cluster's minor), and the Pod
Identity roles of those that call AWS.

An add-on whose controller calls AWS gets a role of its own that only EKS Pod Identity may assume, with
only what the controller does here, associated with the controller's service account through the add-on.
The FSx for Lustre CSI driver's controller provisions statically here (the stack creates the file systems,
a PersistentVolume names each): it only describes file systems. The driver's documented policy also lets
it create, update, delete and tag file systems and link S3 buckets, for dynamic provisioning, which this
cluster does not use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components._naming import child

TYPE = "clusterfab:kubernetes:AwsEksAddons"

FSX_CSI_DRIVER = "aws-fsx-csi-driver"
FSX_CSI_CONTROLLER_ACCOUNT = "fsx-csi-controller-sa"
"""The controller's service account in kube-system (aws-fsx-csi-driver docs/install.md)."""
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""What EKS Pod Identity needs of a role's trust policy (EKS User Guide, "Create IAM role with trust policy
required by EKS Pod Identity")."""


@dataclass(frozen=True)
class AddonIdentity:
    """The service account an add-on's controller runs as and what it may do in AWS."""

    service_account: str
    statements: tuple[dict[str, Any], ...]


IDENTITIES: Mapping[str, AddonIdentity] = {
    FSX_CSI_DRIVER: AddonIdentity(
        FSX_CSI_CONTROLLER_ACCOUNT,
        (
            {
                "Sid": "DescribeFileSystems",
                "Effect": "Allow",
                "Action": "fsx:DescribeFileSystems",
                "Resource": "*",
            },
        ),
    ),
}
"""The add-ons that call AWS, and the least they need here."""


@dataclass(frozen=True)
class ManagedAddon:
    name: str
    version: str | None = None
    """None: EKS installs its default version for the cluster's minor."""


@dataclass(frozen=True, kw_only=True)
class AwsEksAddonsArgs:
    cluster_name: pulumi.Input[str]
    cluster: str
    """The EKS cluster's name, for the roles' descriptions."""
    addons: Sequence[ManagedAddon]
    depends_on: Sequence[pulumi.Resource] = ()
    """What must exist first: the node groups, for add-ons that run as Deployments (EKS marks them
    active once their pods run)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def pod_identity_trust_policy() -> str:
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
        "Action": list(POD_IDENTITY_ACTIONS),
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


class AwsEksAddons(pulumi.ComponentResource):
    """One aws.eks.Addon per add-on; a Pod Identity role for each that calls AWS."""

    def __init__(self, name: str, args: AwsEksAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self.addons: dict[str, aws.eks.Addon] = {}
        for addon in args.addons:
            identity = IDENTITIES.get(addon.name)
            associations = None
            if identity is not None:
                associations = [
                    aws.eks.AddonPodIdentityAssociationArgs(
                        role_arn=self._role(addon.name, identity).arn,
                        service_account=identity.service_account,
                    )
                ]
            self.addons[addon.name] = aws.eks.Addon(
                child(name, addon.name),
                cluster_name=args.cluster_name,
                addon_name=addon.name,
                addon_version=addon.version,
                # The cluster has no self-managed copies (bootstrap_self_managed_addons is off): nothing
                # to keep on create; an update keeps what someone changed in the cluster.
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="PRESERVE",
                pod_identity_associations=associations,
                tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
            )
        self.register_outputs({})

    def _role(self, addon: str, identity: AddonIdentity) -> aws.iam.Role:
        name, args = self._name, self._args
        own = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            child(name, f"{addon}-role"),
            assume_role_policy=pod_identity_trust_policy(),
            description=f"clusterfab EKS add-on {addon} of {args.cluster}",
            tags=args.tags,
            opts=own,
        )
        aws.iam.RolePolicy(
            child(name, f"{addon}-policy"),
            role=role.id,
            policy=json.dumps({"Version": "2012-10-17", "Statement": list(identity.statements)}),
            opts=own,
        )
        return role
