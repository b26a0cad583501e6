"""Slurm on AWS: the controller at its fixed address with a protected state volume, login nodes, the
munge key's secret and who may read it, and Slurm's ports open only between the cluster's groups."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tests.components.harness import all_of, aws_plan, boot_vars, one, user_data

READ_BOOT_DIGEST = {"Sid": "ReadBootDigest", "Effect": "Allow", "Action": "ec2:DescribeTags", "Resource": "*"}
"""What a following host's role needs to read its instance's digest tag: DescribeTags takes no resource
(the EC2 service authorization reference lists no resource type for it), so it is granted on `*`."""

INSTANCE = "aws:ec2/instance:Instance"
RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
POLICY = "aws:iam/rolePolicy:RolePolicy"

BODY = """network:
  cidr: 10.40.0.0/16
node_groups:
  - name: h100
    machine_type: p5.48xlarge
    count: 2
storage:
  - {name: shared, kind: lustre, deployment: scratch, capacity_gib: 1200, mount_point: /lustre}
scheduler:
  kind: slurm
  login: {count: 2}
teams:
  - {name: research, max_gpus: 16, users: [alice]}
environments:
  prod: {}
"""


EC2 = "arn:aws:ec2:us-east-1:123456789012"
"""The region's and the deployment's account's EC2 ARNs (the mock engine's caller is account 123456789012)."""
PROFILE = "arn:aws:mock:::instanceprofile/slm-cluster-h100-profile"
TEMPLATE = "arn:aws:ec2:mock:123456789012:launch-template/slm-cluster-h100-lt-id"
ELASTIC_SIDS = {
    "ReadNodeGroups",
    "LaunchFromNodeTemplates",
    "LaunchElasticNodes",
    "LaunchIntoClusterNetwork",
    "LaunchPrivateInterfaces",
    "NoPublicAddresses",
    "LaunchEncryptedVolumes",
    "LaunchWithTemplateResources",
    "TagAtLaunch",
    "TerminateClusterNodes",
    "PassNodeRoles",
}


def instance_script(resource: Any) -> str:
    return base64.b64decode(resource.inputs["userDataBase64"]).decode()


def policy(plan: Any, name: str) -> dict[str, Any]:
    document = one(plan, POLICY, name).inputs["policy"]
    return dict(json.loads(document))


def test_the_controller_sits_at_the_address_slurm_conf_names() -> None:
    plan = aws_plan(BODY, name="slm", env="prod")
    controller = one(plan, INSTANCE, "slm-cluster-slurm-controller")
    inputs = controller.inputs
    # 10.40.0.0/16: the nodes' subnet is 10.40.0.0/20; the controller is its host 10.
    assert inputs["privateIp"] == "10.40.0.10"
    assert inputs["instanceType"] == "c7i.4xlarge"
    assert inputs["associatePublicIpAddress"] is False
    assert inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    assert inputs["rootBlockDevice"]["encrypted"] is True
    assert inputs["vpcSecurityGroupIds"] == ["slm-cluster-slurm-sg-id"]
    assert inputs["tags"]["clusterfab-slurm-role"] == "controller"
    assert plan.outputs["scheduler"]["controller_address"] == "10.40.0.10"


def test_the_state_volume_is_encrypted_and_protected_where_the_environment_protects() -> None:
    for env, protected in (("prod", True), (None, False)):
        plan = aws_plan(BODY, name="slm", env=env)
        volume = one(plan, "aws:ebs/volume:Volume")
        assert (volume.inputs["encrypted"], volume.inputs["size"], volume.inputs["type"]) == (
            True,
            100,
            "gp3",
        )
        assert volume.inputs["finalSnapshot"] is True
        assert volume.protect is protected
        attachment = one(plan, "aws:ec2/volumeAttachment:VolumeAttachment").inputs
        assert attachment == {
            "deviceName": "/dev/sdf",
            "instanceId": "slm-cluster-slurm-controller-id",
            "volumeId": "slm-cluster-slurm-state-id",
        }


def test_the_state_volume_is_snapshotted_daily_by_its_tag_and_seven_are_kept() -> None:
    plan = aws_plan(BODY, name="slm", env="prod")
    volume = one(plan, "aws:ebs/volume:Volume")
    assert volume.inputs["tags"]["clusterfab-snapshots"] == "slm-cluster-slurm-state"
    lifecycle = one(plan, "aws:dlm/lifecyclePolicy:LifecyclePolicy", "slm-cluster-slurm-snapshots").inputs
    assert (
        lifecycle["executionRoleArn"]
        == one(plan, "aws:iam/role:Role", "slm-cluster-slurm-snapshots-role").computed["arn"]
    )
    assert (lifecycle["state"], lifecycle["description"]) == (
        "ENABLED",
        "clusterfab Slurm state of slm-cluster daily 7 kept",
    )
    assert lifecycle["policyDetails"] == {
        "policyType": "EBS_SNAPSHOT_MANAGEMENT",
        "resourceTypes": ["VOLUME"],
        # The volume's own tag: no other volume of the account is snapshotted by this policy.
        "targetTags": {"clusterfab-snapshots": "slm-cluster-slurm-state"},
        "schedules": [
            {
                "name": "daily",
                "createRule": {"interval": 24, "intervalUnit": "HOURS", "times": "03:00"},
                "retainRule": {"count": 7},
                "copyTags": True,
            }
        ],
    }
    role = one(plan, "aws:iam/role:Role", "slm-cluster-slurm-snapshots-role").inputs
    assert json.loads(role["assumeRolePolicy"])["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "dlm.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    # AWS's managed policy for Data Lifecycle Manager's default role, and nothing else.
    attachment = one(
        plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "slm-cluster-slurm-snapshots-service"
    )
    assert attachment.inputs == {
        "policyArn": "arn:aws:iam::aws:policy/service-role/AWSDataLifecycleManagerServiceRole",
        "role": "slm-cluster-slurm-snapshots-role",
    }
    assert not [p for p in all_of(plan, POLICY) if p.name.startswith("slm-cluster-slurm-snapshots")]


def test_login_nodes_join_the_nodes_group_to_reach_the_shared_file_systems() -> None:
    plan = aws_plan(BODY, name="slm")
    logins = sorted((r for r in all_of(plan, INSTANCE) if "login" in r.name), key=lambda r: r.name)
    assert [r.name for r in logins] == ["slm-cluster-slurm-login-0", "slm-cluster-slurm-login-1"]
    for login in logins:
        assert login.inputs["instanceType"] == "c7i.2xlarge"
        assert "privateIp" not in login.inputs
        assert login.inputs["associatePublicIpAddress"] is False
        assert login.inputs["vpcSecurityGroupIds"] == [
            "slm-cluster-slurm-sg-id",
            "slm-cluster-net-nodes-sg-id",
        ]
        assert login.inputs["tags"]["clusterfab-slurm-role"] == "login"
        script_vars = boot_vars(instance_script(login))
        assert script_vars["slurm_login_conf_server"] == "10.40.0.10:6817"
        assert (script_vars["munge_key_source"], script_vars["munge_key_server"]) == (
            "controller",
            "10.40.0.10",
        )
        assert script_vars["munge_key_port"] == 6816
        assert "munge_key_secret" not in script_vars
        assert [m["mount_point"] for m in script_vars["storage_mounts_list"]] == ["/lustre"]


def test_slurm_ports_are_open_only_between_the_clusters_groups() -> None:
    plan = aws_plan(BODY, name="slm")
    slurm, nodes = "slm-cluster-slurm-sg-id", "slm-cluster-net-nodes-sg-id"
    rules = {
        (
            r.inputs["securityGroupId"],
            r.inputs["referencedSecurityGroupId"],
            r.inputs["fromPort"],
            r.inputs["toPort"],
        )
        for r in all_of(plan, RULE)
        if r.name.startswith("slm-cluster-slurm-")
    }
    assert rules == {
        (slurm, nodes, 6817, 6817),  # slurmd registers with slurmctld
        (slurm, slurm, 6817, 6817),  # login clients to slurmctld
        (slurm, nodes, 6816, 6816),  # nodes fetch the munge key from the controller
        (slurm, slurm, 6816, 6816),  # login nodes fetch the munge key from the controller
        (slurm, slurm, 6819, 6819),  # sacct / sreport to slurmdbd
        (slurm, nodes, 60001, 63000),  # slurmd to srun on the login nodes
        (nodes, slurm, 6818, 6818),  # slurmctld and srun to slurmd
    }
    assert all(
        "cidrIpv4" not in r.inputs for r in all_of(plan, RULE) if r.name.startswith("slm-cluster-slurm-")
    )


def test_the_munge_key_is_read_and_written_by_the_controller_alone() -> None:
    """The attack: a job on a GPU node took the node's instance credentials and read the munge key, then
    forged credentials for uid 0 on every node. The nodes' and login nodes' roles now hold no right to any
    secret (they fetch the key from the controller's key service as root), and the secret's own policy
    refuses every principal but the controller's role, and every request from outside the cluster's NAT."""
    plan = aws_plan(BODY, name="slm")
    secret = one(plan, "aws:secretsmanager/secret:Secret").inputs
    assert (secret["name"], secret["recoveryWindowInDays"]) == ("clusterfab-slm-cluster-plan-munge-key", 0)
    arn = "arn:aws:mock:::secret/slm-cluster-slurm-munge-key"
    controller = policy(plan, "slm-cluster-slurm-role-policy")["Statement"]
    assert {s["Sid"]: (s["Action"], s["Resource"]) for s in controller if "Munge" in s["Sid"]} == {
        "ReadMungeKey": ("secretsmanager:GetSecretValue", arn),
        "WriteMungeKey": (["secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret"], arn),
    }
    others = [r.name for r in all_of(plan, POLICY) if "secretsmanager" in r.inputs["policy"]]
    assert others == ["slm-cluster-slurm-role-policy"]
    resource_policy = one(plan, "aws:secretsmanager/secretPolicy:SecretPolicy").inputs
    assert resource_policy["secretArn"] == arn
    assert resource_policy["blockPublicPolicy"] is True
    actions = ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"]
    assert json.loads(resource_policy["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "OnlyTheController",
                "Effect": "Deny",
                "Principal": "*",
                "Action": actions,
                "Resource": arn,
                "Condition": {
                    "StringNotEquals": {"aws:PrincipalArn": "arn:aws:mock:::role/slm-cluster-slurm-role"}
                },
            },
            {
                "Sid": "OnlyFromTheCluster",
                "Effect": "Deny",
                "Principal": "*",
                "Action": actions,
                "Resource": arn,
                # The NAT gateway's Elastic IP (the plan engine's documentation address).
                "Condition": {"NotIpAddress": {"aws:SourceIp": "198.51.100.7/32"}},
            },
        ],
    }
    # The key never passes through the stack: no secret version, nothing in any boot script.
    assert all_of(plan, "aws:secretsmanager/secretVersion:SecretVersion") == []


def test_the_controller_boots_with_the_rendered_files_and_generates_the_key() -> None:
    plan = aws_plan(BODY, name="slm")
    controller = one(plan, INSTANCE, "slm-cluster-slurm-controller")
    script = instance_script(controller)
    host_vars = boot_vars(script)
    assert host_vars["slurm_controller_hostname"] == "slm-cluster-controller"
    assert host_vars["munge_key_generate"] is True
    assert host_vars["munge_key_serve"] is True
    assert (host_vars["munge_key_port"], host_vars["munge_key_serve_networks"]) == (6816, ["10.40.0.0/16"])
    assert host_vars["metadata_guard_allowed_users"] == ["root", "slurm"]
    assert host_vars["slurm_controller_accounting"] == "embedded"
    # What the node sync checks an instance against before it acts: the group's template and profile.
    assert host_vars["slurm_controller_fleet"] == {
        "h100": {"template": "slm-cluster-h100-lt-id", "profile": PROFILE}
    }
    files = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2", "slm-cluster-slurm-files").inputs
    assert files["key"].startswith("slurm/")
    assert files["key"].endswith(".tar.gz")
    assert (
        files["key"].removeprefix("slurm/").removesuffix(".tar.gz")
        in host_vars["slurm_controller_config_dir"]
    )


def test_gpu_nodes_get_slurmd_configless_from_the_controller() -> None:
    plan = aws_plan(BODY, name="slm")
    node_vars = boot_vars(user_data(plan, "slm-cluster-h100-lt"))
    assert node_vars["clusterfab_slurm_enabled"] is True
    assert node_vars["slurm_node_conf_server"] == "10.40.0.10:6817"
    assert node_vars["slurm_node_gpus"] == 8
    assert node_vars["slurm_node_name_source"] == "aws"
    assert node_vars["slurm_node_version"] == "23.11.4-1.2ubuntu5"
    assert (node_vars["munge_key_source"], node_vars["munge_key_server"]) == ("controller", "10.40.0.10")
    assert "munge_key_secret" not in node_vars
    assert "metadata_guard_allowed_users" not in node_vars  # the role's default: root alone
    assert node_vars["slurm_users_accounts"] == [{"name": "alice", "uid": 40207}]
    assert node_vars["slurm_node_spot_watch"] is False  # on-demand: nothing to watch for


def test_gpu_nodes_on_spot_capacity_watch_for_the_interruption_notice() -> None:
    body = BODY.replace("    count: 2\n", "    count: 2\n    capacity: {kind: spot}\n")
    node_vars = boot_vars(user_data(aws_plan(body, name="slm"), "slm-cluster-h100-lt"))
    assert node_vars["slurm_node_spot_watch"] is True


def test_without_a_scheduler_there_is_no_slurm() -> None:
    plan = aws_plan(
        BODY.replace("scheduler:\n  kind: slurm\n  login: {count: 2}\n", "").replace(
            "teams:\n  - {name: research, max_gpus: 16, users: [alice]}\n", ""
        ),
        name="noslm",
    )
    assert [r for r in plan.resources if "slurm" in r.name] == []
    assert plan.outputs["scheduler"] is None
    assert "clusterfab_slurm_enabled" not in boot_vars(user_data(plan, "noslm-cluster-h100-lt"))


def test_the_controller_may_name_only_this_clusters_instances() -> None:
    plan = aws_plan(BODY, name="slm")
    statements = {s["Sid"]: s for s in policy(plan, "slm-cluster-slurm-role-policy")["Statement"]}
    assert statements["FindNodes"] == {
        "Sid": "FindNodes",
        "Effect": "Allow",
        "Action": "ec2:DescribeInstances",
        "Resource": "*",
    }
    # Only instances of the node group's instance profile (which only a principal that may pass its role
    # can attach, and which no other deployment shares) with the cluster's tags, only the node-name key.
    assert statements["NameNodes"] == {
        "Sid": "NameNodes",
        "Effect": "Allow",
        "Action": "ec2:CreateTags",
        "Resource": f"{EC2}:instance/*",
        "Condition": {
            "StringEquals": {
                "aws:ResourceTag/clusterfab-blueprint": "slm-cluster",
                "aws:ResourceTag/clusterfab-stack": "plan",
            },
            "ArnEquals": {"ec2:InstanceProfile": [PROFILE]},
            "ForAllValues:StringEquals": {"aws:TagKeys": ["clusterfab-slurm-node"]},
        },
    }


def test_the_controllers_archive_carries_the_node_sync_and_its_settings() -> None:
    import io
    import tarfile

    from tests.components.harness import stacks_module

    plan = aws_plan(BODY, name="slm")
    key = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2", "slm-cluster-slurm-files").inputs["key"]
    cache = stacks_module("cluster").BUNDLE_CACHE
    from tests.conftest import REPO

    archive = REPO / cache / f"slurm-{key.removeprefix('slurm/')}"
    with tarfile.open(fileobj=io.BytesIO(archive.read_bytes())) as tar:
        names = sorted(tar.getnames())
        settings = json.loads(tar.extractfile("nodesync.json").read())  # type: ignore[union-attr]
    assert [n for n in names if n.startswith("lib/")] == [
        f"lib/clusterfab_slurm_nodes/{module}"
        for module in (
            "__init__.py",
            "__main__.py",
            "accounting.py",
            "actions.py",
            "aws.py",
            "aws_rds.py",
            "azure.py",
            "azure_mysql.py",
            "bearer.py",
            "clouds.py",
            "counts.py",
            "files.py",
            "fleet.py",
            "gcp.py",
            "gcp_cloudsql.py",
            "gcp_http.py",
            "groups.py",
            "nodesync.py",
            "power.py",
            "reconcile.py",
            "scontrol.py",
        )
    ]
    assert "slurm.conf" in names
    assert settings == {
        "blueprint": "slm-cluster",
        "cloud": "aws",
        "groups": {"h100": {"size": 2, "static": 2}},
        "region": "us-east-1",
        "stack": "plan",
    }
    host_vars = boot_vars(instance_script(one(plan, INSTANCE, "slm-cluster-slurm-controller")))
    assert host_vars["slurm_controller_nodes_lib"].endswith("/lib")


def test_the_controller_hosts_monitoring_with_the_slurm_exporter() -> None:
    body = BODY.replace("environments:", "monitoring: {kind: prometheus}\nenvironments:")
    plan = aws_plan(body, name="slmon", env="prod")
    assert [r for r in plan.resources if r.type == "clusterfab:monitoring:AwsMonitoringNode"] == []
    access = one(plan, "clusterfab:monitoring:AwsMonitoringAccess", "slmon-cluster-monitoring-access")
    assert access is not None
    host_vars = boot_vars(instance_script(one(plan, INSTANCE, "slmon-cluster-slurm-controller")))
    assert host_vars["clusterfab_monitoring_enabled"] is True
    assert host_vars["monitoring_host_kind"] == "controller"
    assert host_vars["prometheus_files_dir"] == host_vars["slurm_controller_config_dir"] + "/monitoring"
    assert host_vars["slurm_controller_exporter_program"].endswith("/bin/clusterfab-slurm-exporter")
    assert host_vars["slurm_controller_exporter_listen"] == "127.0.0.1:8080"
    assert plan.outputs["monitoring"]["host"] == plan.outputs["scheduler"]["controller"]
    # Prometheus keeps its samples on the state disk, which grows by what the retention needs: 2 p5 nodes
    # expose 2 x (8 x 64 + 600 + 192 x 16) = 8,368 series; 30 days at 30 s, 2 bytes a sample, x1.5 is
    # 3 GiB, below the catalog's 50 GiB minimum. 100 GiB for Slurm + 50.
    assert host_vars["slurm_controller_state_services"] == [
        {"directory": "prometheus", "path": "/var/lib/prometheus", "unit": "prometheus.service"}
    ]
    assert one(plan, "aws:ebs/volume:Volume").inputs["size"] == 150
    import tarfile

    from tests.components.harness import stacks_module
    from tests.conftest import REPO

    key = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2", "slmon-cluster-slurm-files").inputs["key"]
    archive = REPO / stacks_module("cluster").BUNDLE_CACHE / f"slurm-{key.removeprefix('slurm/')}"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"monitoring/prometheus.yml", "bin/clusterfab-slurm-exporter", "slurm.conf"} <= names


def test_the_controller_may_create_and_delete_only_this_clusters_elastic_nodes() -> None:
    elastic = BODY.replace("    count: 2\n", "    autoscaling: {min: 1, max: 4}\n", 1)
    plan = aws_plan(elastic, name="slm")
    statements = [
        s for s in policy(plan, "slm-cluster-slurm-role-policy")["Statement"] if s["Sid"] in ELASTIC_SIDS
    ]
    owner = {"clusterfab-blueprint": "slm-cluster", "clusterfab-stack": "plan"}
    template = {"ec2:LaunchTemplate": [TEMPLATE]}
    subnet = f"{EC2}:subnet/slm-cluster-net-nodes-id"
    assert statements == [
        {
            # No resource type for either action (the EC2 and Auto Scaling service authorization reference).
            "Sid": "ReadNodeGroups",
            "Effect": "Allow",
            "Action": ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeLaunchTemplateVersions"],
            "Resource": "*",
        },
        {
            "Sid": "LaunchFromNodeTemplates",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": [TEMPLATE],
        },
        {
            "Sid": "LaunchElasticNodes",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": f"{EC2}:instance/*",
            "Condition": {
                "ArnEquals": {**template, "ec2:InstanceProfile": [PROFILE]},
                "StringEquals": {
                    "ec2:InstanceType": ["p5.48xlarge"],
                    "aws:RequestTag/clusterfab-slurm-elastic": "true",
                    **{f"aws:RequestTag/{k}": v for k, v in owner.items()},
                },
            },
        },
        {
            "Sid": "LaunchIntoClusterNetwork",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": [subnet, f"{EC2}:security-group/slm-cluster-net-nodes-sg-id"],
            "Condition": {"ArnEquals": template},
        },
        {
            "Sid": "LaunchPrivateInterfaces",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": f"{EC2}:network-interface/*",
            "Condition": {
                "ArnEquals": {**template, "ec2:Subnet": [subnet]},
                "BoolIfExists": {"ec2:AssociatePublicIpAddress": "false"},
            },
        },
        {
            "Sid": "NoPublicAddresses",
            "Effect": "Deny",
            "Action": "ec2:RunInstances",
            "Resource": f"{EC2}:network-interface/*",
            "Condition": {"Bool": {"ec2:AssociatePublicIpAddress": "true"}},
        },
        {
            "Sid": "LaunchEncryptedVolumes",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": f"{EC2}:volume/*",
            "Condition": {"ArnEquals": template, "Bool": {"ec2:Encrypted": "true"}},
        },
        {
            "Sid": "LaunchWithTemplateResources",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": [
                "arn:aws:ec2:us-east-1::image/*",
                f"{EC2}:placement-group/*",
                f"{EC2}:capacity-reservation/*",
            ],
            "Condition": {"ArnEquals": template, "Bool": {"ec2:IsLaunchTemplateResource": "true"}},
        },
        {
            "Sid": "TagAtLaunch",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": [f"{EC2}:instance/*", f"{EC2}:volume/*", f"{EC2}:network-interface/*"],
            "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}},
        },
        {
            "Sid": "TerminateClusterNodes",
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": f"{EC2}:instance/*",
            "Condition": {
                "StringEquals": {f"aws:ResourceTag/{k}": v for k, v in owner.items()},
                "ArnEquals": {"ec2:InstanceProfile": [PROFILE]},
                "Null": {"aws:ResourceTag/clusterfab-node-group": "false"},
            },
        },
        {
            # Only the node group's own role, its exact ARN (the mock engine names it by its resource name).
            "Sid": "PassNodeRoles",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": ["arn:aws:mock:::role/slm-cluster-h100-role"],
            "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        },
    ]
    # The group keeps `min` nodes up; the rest are Slurm's.
    group = one(plan, "aws:autoscaling/group:Group", "slm-cluster-h100-asg").inputs
    assert (group["minSize"], group["desiredCapacity"]) == (1, 1)
    # A cluster without elastic groups gives the controller none of these rights.
    static = {
        s["Sid"] for s in policy(aws_plan(BODY, name="slm"), "slm-cluster-slurm-role-policy")["Statement"]
    }
    assert not static & ELASTIC_SIDS


def test_the_controller_and_login_nodes_follow_the_stack_without_a_stop_and_start() -> None:
    """A changed Slurm configuration reaches the running hosts through the bucket's copy of their boot
    scripts: updating user data would stop and start the controller, and the started instance would not
    run the new script anyway."""
    from clusterfab.catalog import load_catalog
    from clusterfab.plan.diff import diff_plans

    plan = aws_plan(BODY, name="slm", env="prod")
    objects = {o.inputs["key"]: o for o in all_of(plan, "aws:s3/bucketObjectv2:BucketObjectv2")}
    for name, key in (("controller", "boot/slurm-controller.sh"), ("login-0", "boot/slurm-login.sh")):
        instance = one(plan, INSTANCE, f"slm-cluster-slurm-{name}")
        assert instance.ignore_changes == ("userDataBase64",)
        assert objects[key].inputs["content"] == instance_script(instance)
        assert objects[key].inputs["serverSideEncryption"] == "aws:kms"
        assert objects[key].urn in instance.dependencies
        assert "clusterfab-follow.timer" in instance_script(instance)
        # The host runs the bucket's copy only if it matches the digest the stack tags the instance with.
        digest = hashlib.sha256(objects[key].inputs["content"].encode()).hexdigest()
        assert instance.inputs["tags"]["clusterfab-boot-sha256"] == digest
    for role in ("slm-cluster-slurm-role-policy", "slm-cluster-slurm-login-role-policy"):
        assert READ_BOOT_DIGEST in policy(plan, role)["Statement"]
    assert (
        f"{objects['boot/slurm-login.sh'].urn}"
        in one(plan, INSTANCE, "slm-cluster-slurm-login-1").dependencies
    )
    # What a script fetches exists before a host runs it: the playbook bundle for every host and node,
    # the rendered files for the controller.
    bundle = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2", "slm-cluster-artifacts-bundle").urn
    files = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2", "slm-cluster-slurm-files").urn
    assert files in objects["boot/slurm-controller.sh"].dependencies
    for resource in (
        objects["boot/slurm-controller.sh"],
        objects["boot/slurm-login.sh"],
        one(plan, INSTANCE, "slm-cluster-slurm-controller"),
        one(plan, "aws:ec2/launchTemplate:LaunchTemplate"),
    ):
        assert bundle in resource.dependencies, resource.name
    # GPU nodes take a new script when they are replaced; they follow nothing.
    assert "clusterfab-follow" not in user_data(plan, "slm-cluster-h100-lt")

    grown = aws_plan(BODY.replace("count: 2\n", "count: 4\n", 1), name="slm", env="prod")
    diff = diff_plans(plan, grown, load_catalog())
    updated = {u.after.name: u.changed for u in diff.update}
    assert updated["slm-cluster-slurm-boot"] == ("content",)
    # The instance only gets the new digest: a tag, changed in place, with no stop and start.
    assert updated["slm-cluster-slurm-controller"] == ("tags.clusterfab-boot-sha256",)
    assert [u.restarts for u in diff.update if u.after.name == "slm-cluster-slurm-controller"] == [()]
    # The rendered files are content-addressed: a new object, which the new script names.
    assert {u.after.name for u in diff.update if u.replaces} == {"slm-cluster-slurm-files"}


def test_the_controllers_planned_rights_pass_the_policy_packs_iam_rules() -> None:
    """The statements exactly as planned, through the same rules `clusterfab policy` and CrossGuard run."""
    from clusterfab.policy import access
    from clusterfab.policy.resources import from_planned

    elastic = BODY.replace("    count: 2\n", "    autoscaling: {min: 1, max: 4}\n", 1)
    for plan in (aws_plan(elastic, name="slm"), aws_plan(BODY, name="slm")):
        role_policy = from_planned(one(plan, POLICY, "slm-cluster-slurm-role-policy"))
        for check in (access.unscoped_launches, access.unscoped_terminations, access.wildcard_secrets):
            assert check(role_policy) == []
