"""EKS (scheduler kind kubernetes on AWS): the cluster, its managed node groups and add-ons, exact inputs."""

from __future__ import annotations

import json

import pytest

from clusterfab.outputs import read_outputs
from clusterfab.scheduler.kubernetes.outputs import KubernetesOutput
from tests.components.harness import all_of, aws_plan, children, one

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"

EKS = "network: {cidr: 10.60.0.0/16}\nscheduler: {kind: kubernetes, version: '1.35'}\n"
P5 = "node_groups:\n  - name: g\n    machine_type: p5.48xlarge\n    count: 2\n"
P5_EFA = [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 32)]
"""p5.48xlarge's EFA layout, as the auto scaling groups' launch templates carry it (test_aws_node_group)."""


def _nics(interfaces: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces]


def test_a_p5_managed_node_group_carries_the_same_efa_layout_as_the_auto_scaling_group() -> None:
    eks = one(aws_plan(EKS + P5, name="efa"), LT, "efa-cluster-g-lt").inputs["networkInterfaces"]
    asg = one(aws_plan(P5, name="efa"), LT, "efa-cluster-g-lt").inputs["networkInterfaces"]
    assert _nics(eks) == _nics(asg) == P5_EFA
    # Every interface is in the node security group (EFA: all traffic within it) and the cluster's own
    # (EKS adds it only to templates that name no security groups).
    assert {tuple(i["securityGroups"]) for i in eks} == {
        ("efa-cluster-net-nodes-sg-id", "efa-cluster-eks-cluster-cluster-sg-id")
    }
    assert all(i["deleteOnTermination"] == "true" and "associatePublicIpAddress" not in i for i in eks)


def test_the_cluster_is_private_uses_access_entries_encrypts_secrets_and_logs_everything() -> None:
    plan = aws_plan(EKS + P5, name="eks")
    assert one(plan, CLUSTER).inputs == {
        "name": "eks-cluster-plan",
        "version": "1.35",
        "roleArn": "arn:aws:mock:::role/eks-cluster-eks-cluster-role",
        "vpcConfig": {
            "subnetIds": ["eks-cluster-eks-control-plane-0-id", "eks-cluster-eks-control-plane-1-id"],
            "endpointPrivateAccess": True,
            "endpointPublicAccess": False,
        },
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
        "encryptionConfig": {
            "resources": ["secrets"],
            "provider": {"keyArn": "arn:aws:mock:::key/eks-cluster-eks-secrets-key"},
        },
        "enabledClusterLogTypes": ["api", "audit", "authenticator", "controllerManager", "scheduler"],
        "bootstrapSelfManagedAddons": False,
        "tags": {
            "clusterfab-blueprint": "eks-cluster",
            "clusterfab-component": "kubernetes",
            "clusterfab-stack": "plan",
        },
    }
    key = one(plan, "aws:kms/key:Key").inputs
    assert (key["enableKeyRotation"], key["deletionWindowInDays"]) == (True, 30)
    logs = one(plan, "aws:cloudwatch/logGroup:LogGroup", "eks-cluster-eks-logs").inputs
    assert (logs["name"], logs["retentionInDays"]) == ("/aws/eks/eks-cluster-plan/cluster", 90)
    # Control plane subnets: blocks 12 and 13 of the range's 16, clear of the nodes' (0), the accounting
    # database's (14) and the NAT's (15).
    subnets = [
        one(plan, "aws:ec2/subnet:Subnet", f"eks-cluster-eks-control-plane-{i}").inputs for i in (0, 1)
    ]
    assert [s["cidrBlock"] for s in subnets] == ["10.60.208.0/20", "10.60.192.0/20"]
    assert all(s["mapPublicIpOnLaunch"] is False for s in subnets)


def test_listed_api_access_ranges_are_exactly_the_public_endpoints() -> None:
    scheduler = "scheduler: {kind: kubernetes, api_access_cidrs: [203.0.113.0/24, 198.51.100.7/32]}\n"
    vpc = one(aws_plan(scheduler + P5, name="pub"), CLUSTER).inputs["vpcConfig"]
    assert (vpc["endpointPrivateAccess"], vpc["endpointPublicAccess"]) == (True, True)
    assert vpc["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]


CAPACITY = {
    "capacity_block": (
        "{kind: capacity_block, reservation: cr-0123456789abcdef0, ends_at: '2027-07-22T11:30:00Z'}",
        "CAPACITY_BLOCK",
        {"marketType": "capacity-block"},
        "cr-0123456789abcdef0",
    ),
    "reservation": (
        "{kind: reservation, reservation: cr-0123456789abcdef1}",
        "ON_DEMAND",
        None,
        "cr-0123456789abcdef1",
    ),
    "spot": ("{kind: spot}", "SPOT", None, None),
    "on_demand": ("{kind: on_demand}", "ON_DEMAND", None, None),
}


@pytest.mark.parametrize("kind", sorted(CAPACITY))
def test_capacity_becomes_the_node_groups_capacity_type_and_the_templates_market(kind: str) -> None:
    capacity, capacity_type, market, reservation = CAPACITY[kind]
    plan = aws_plan(EKS + P5 + f"    capacity: {capacity}\n", name=f"cap-{kind.replace('_', '-')}")
    template = one(plan, LT, f"cap-{kind.replace('_', '-')}-cluster-g-lt").inputs
    group = one(plan, NODE_GROUP, f"cap-{kind.replace('_', '-')}-cluster-g-nodes").inputs
    assert group["capacityType"] == capacity_type
    # EKS refuses a template that asks for spot itself: spot is the node group's capacity type.
    assert template.get("instanceMarketOptions") == market
    target = template.get("capacityReservationSpecification")
    assert target == (
        None if reservation is None else {"capacityReservationTarget": {"capacityReservationId": reservation}}
    )


def test_gpu_node_groups_on_the_nvidia_ami_with_labels_taints_and_a_locked_down_template() -> None:
    plan = aws_plan(EKS + P5 + "    boot_disk_gib: 750\n", name="ng")
    group = one(plan, NODE_GROUP, "ng-cluster-g-nodes").inputs
    assert {
        k: group[k] for k in ("amiType", "version", "labels", "taints", "scalingConfig", "subnetIds")
    } == {
        "amiType": "AL2023_x86_64_NVIDIA",
        "version": "1.35",
        "labels": {"clusterfab.dev/node-group": "g"},
        "taints": [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}],
        "scalingConfig": {"minSize": 2, "maxSize": 2, "desiredSize": 2},
        "subnetIds": ["ng-cluster-net-nodes-id"],
    }
    assert group["launchTemplate"] == {"id": "ng-cluster-g-lt-id", "version": "1"}
    template = one(plan, LT, "ng-cluster-g-lt").inputs
    assert template["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
        "instanceMetadataTags": "enabled",
    }
    assert template["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": 750,
                "volumeType": "gp3",
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
    ]
    # EKS refuses templates with an instance profile or a subnet, and picks the AMI by its type.
    assert not {"iamInstanceProfile", "imageId", "userData"} & set(template)
    assert template["instanceType"] == "p5.48xlarge"
    placement = one(plan, "aws:ec2/placementGroup:PlacementGroup").inputs
    assert placement["strategy"] == "cluster"
    assert template["placement"] == {"groupName": "ng-cluster-g-placement"}


def test_the_system_node_group_and_the_node_role_with_exactly_three_policies() -> None:
    plan = aws_plan(EKS + P5, name="sys")
    system = one(plan, NODE_GROUP, "sys-cluster-system-nodes").inputs
    assert (system["amiType"], system["capacityType"], system["scalingConfig"]) == (
        "AL2023_x86_64_STANDARD",
        "ON_DEMAND",
        {"minSize": 2, "maxSize": 2, "desiredSize": 2},
    )
    assert "taints" not in system
    assert one(plan, LT, "sys-cluster-system-lt").inputs["instanceType"] == "c7i.2xlarge"
    node_role = sorted(r.inputs["policyArn"] for r in all_of(plan, ATTACHMENT) if "node-role" in r.name)
    assert node_role == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]


def test_addons_at_the_user_guides_versions_and_the_fsx_driver_on_pod_identity() -> None:
    plan = aws_plan(EKS + P5, name="add")
    versions = {r.inputs["addonName"]: r.inputs.get("addonVersion") for r in all_of(plan, ADDON)}
    # The EKS User Guide's tables of the latest add-on version per Kubernetes version, 1.35 rows (read
    # 2026-11-29); the others unpinned (eks_addons.yaml says why).
    assert versions == {
        "vpc-cni": None,
        "kube-proxy": "v1.35.3-eksbuild.2",
        "eks-pod-identity-agent": None,
        "coredns": "v1.14.2-eksbuild.4",
        "aws-fsx-csi-driver": None,
        "eks-node-monitoring-agent": None,
    }
    fsx = one(plan, ADDON, "add-cluster-addons-aws-fsx-csi-driver").inputs
    assert fsx["podIdentityAssociations"] == [
        {
            "roleArn": "arn:aws:mock:::role/add-cluster-addons-aws-fsx-csi-driver-role",
            "serviceAccount": "fsx-csi-controller-sa",
        }
    ]
    role = one(plan, "aws:iam/role:Role", "add-cluster-addons-aws-fsx-csi-driver-role").inputs
    assert json.loads(role["assumeRolePolicy"])["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    policy = one(plan, "aws:iam/rolePolicy:RolePolicy", "add-cluster-addons-aws-fsx-csi-driver-policy").inputs
    assert json.loads(policy["policy"])["Statement"] == [
        {
            "Sid": "DescribeFileSystems",
            "Effect": "Allow",
            "Action": "fsx:DescribeFileSystems",
            "Resource": "*",
        }
    ]


def test_the_stack_exports_the_cluster_for_kubeconfig_and_the_node_groups() -> None:
    plan = aws_plan(EKS + P5, name="out")
    outputs = read_outputs(plan.outputs)
    scheduler = KubernetesOutput.model_validate(plan.outputs["scheduler"])
    assert scheduler.model_dump() == {
        "kind": "kubernetes",
        "controller": "out-cluster-plan",
        "controller_address": "https://out-cluster-eks-cluster.mock.eks.amazonaws.com",
        "login": [],
        "service": "EKS",
        "location": "us-east-1",
        "version": "1.35",
        "certificate_authority": "bW9jay1jYQ==",
    }
    group = outputs.node_groups["g"]
    assert (group.group, group.template, group.identity) == (
        "arn:aws:mock:::nodegroup/out-cluster-g-nodes",
        "out-cluster-g-lt-id",
        "arn:aws:mock:::role/out-cluster-eks-node-role",
    )
    assert (group.interfaces, group.fabric_interfaces) == (33, 32)
    # No auto scaling groups of the realizer's own: the node groups are EKS's.
    assert all_of(plan, "aws:autoscaling/group:Group") == []
    objects = one(plan, "clusterfab:kubernetes:Objects")
    assert ("pulumi:providers:kubernetes", "out-cluster-objects-provider") in children(plan, objects)


def test_gpu_node_groups_repair_their_unhealthy_nodes() -> None:
    # The node monitoring agent reports a GPU's XID errors as AcceleratedHardwareReady false; EKS reboots
    # or replaces the node after 10 minutes (Amazon EKS UG, node-repair).
    plan = aws_plan(EKS + P5, name="repair")
    groups = all_of(plan, "aws:eks/nodeGroup:NodeGroup")
    assert {g.name: g.inputs["nodeRepairConfig"] for g in groups} == {
        g.name: {"enabled": True} for g in groups
    }
    assert len(groups) == 2


def test_gpu_nodes_carry_the_tag_the_monitoring_host_finds_them_by() -> None:
    plan = aws_plan(EKS + P5, name="found")
    tags = {
        t.name: {spec["resourceType"]: spec["tags"] for spec in t.inputs["tagSpecifications"]}
        for t in all_of(plan, "aws:ec2/launchTemplate:LaunchTemplate")
    }
    assert {name: specs["instance"].get("clusterfab-node-group") for name, specs in tags.items()} == {
        "found-cluster-g-lt": "g",
        "found-cluster-system-lt": None,
    }
