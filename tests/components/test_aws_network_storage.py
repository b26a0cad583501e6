"""AWS network, FSx for Lustre, cluster bucket, budget: exact children and their key inputs."""

from __future__ import annotations

import json
import re

import pytest

from tests.components.harness import all_of, aws_plan, children, one

NODES = "node_groups:\n  - {name: g, machine_type: p5.48xlarge, count: 2}\n"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def test_network_layout() -> None:
    plan = aws_plan("network: {cidr: 10.20.0.0/16}\n" + NODES, name="net")
    assert one(plan, "aws:ec2/vpc:Vpc").inputs["cidrBlock"] == "10.20.0.0/16"
    subnets = {r.name: r.inputs for r in all_of(plan, "aws:ec2/subnet:Subnet")}
    assert subnets["net-cluster-net-nodes"]["cidrBlock"] == "10.20.0.0/20"
    assert subnets["net-cluster-net-public"]["cidrBlock"] == "10.20.240.0/20"
    assert all(
        s["availabilityZoneId"] == "use1-az6" and s["mapPublicIpOnLaunch"] is False for s in subnets.values()
    )
    tables = {r.name: r.inputs["routes"] for r in all_of(plan, "aws:ec2/routeTable:RouteTable")}
    assert tables["net-cluster-net-private-rt"] == [
        {"cidrBlock": "0.0.0.0/0", "natGatewayId": "net-cluster-net-nat-id"}
    ]
    assert tables["net-cluster-net-public-rt"] == [
        {"cidrBlock": "0.0.0.0/0", "gatewayId": "net-cluster-net-igw-id"}
    ]
    endpoint = one(plan, "aws:ec2/vpcEndpoint:VpcEndpoint").inputs
    assert (endpoint["serviceName"], endpoint["vpcEndpointType"]) == ("com.amazonaws.us-east-1.s3", "Gateway")
    assert one(plan, "aws:ec2/natGateway:NatGateway").inputs["subnetId"] == "net-cluster-net-public-id"


def test_zone_name_uses_availability_zone() -> None:
    plan = aws_plan(NODES.replace("p5.48xlarge", "p5.48xlarge"), name="zn")
    assert (
        one(plan, "aws:ec2/subnet:Subnet", "zn-cluster-net-nodes").inputs["availabilityZoneId"] == "use1-az6"
    )


def test_efa_security_group_allows_all_traffic_to_and_from_itself_and_no_ssh() -> None:
    plan = aws_plan(NODES, name="efa")
    sg = "efa-cluster-net-nodes-sg-id"
    ingress = [r.inputs for r in all_of(plan, INGRESS) if r.inputs["securityGroupId"] == sg]
    egress = [r.inputs for r in all_of(plan, EGRESS) if r.inputs["securityGroupId"] == sg]
    assert [(i["ipProtocol"], i.get("referencedSecurityGroupId")) for i in ingress] == [("-1", sg)]
    assert sorted(
        (e["ipProtocol"], e.get("referencedSecurityGroupId", ""), e.get("cidrIpv4", "")) for e in egress
    ) == [("-1", "", "0.0.0.0/0"), ("-1", sg, "")]


def test_ssh_only_from_the_listed_ranges() -> None:
    plan = aws_plan("network: {ssh_ingress_cidrs: [192.0.2.0/24]}\n" + NODES, name="ssh")
    ssh = [r.inputs for r in all_of(plan, INGRESS) if r.inputs.get("fromPort") == 22]
    assert ssh == [
        {
            "securityGroupId": "ssh-cluster-net-nodes-sg-id",
            "ipProtocol": "tcp",
            "fromPort": 22,
            "toPort": 22,
            "cidrIpv4": "192.0.2.0/24",
            "description": "SSH from the blueprint's ssh_ingress_cidrs",
        }
    ]


def test_persistent_lustre_with_s3_link() -> None:
    body = NODES + (
        "storage:\n  - {name: data, kind: lustre, capacity_gib: 36000, throughput_mbps_per_tib: 500,"
        " import_path: 's3://bucket/prefix/'}\n"
    )
    plan = aws_plan(body, name="fsx")
    fs = one(plan, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert {
        k: fs[k]
        for k in (
            "deploymentType",
            "storageCapacity",
            "perUnitStorageThroughput",
            "subnetIds",
            "storageType",
            "fileSystemTypeVersion",
            "securityGroupIds",
        )
    } == {
        "deploymentType": "PERSISTENT_2",
        "storageCapacity": 36000,
        "perUnitStorageThroughput": 500,
        "subnetIds": "fsx-cluster-net-nodes-id",
        "storageType": "SSD",
        "fileSystemTypeVersion": "2.15",
        "securityGroupIds": ["fsx-cluster-data-sg-id"],
    }
    assert fs["metadataConfiguration"] == {"mode": "AUTOMATIC"}
    assert "importPath" not in fs
    dra = one(plan, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").inputs
    assert (dra["dataRepositoryPath"], dra["fileSystemPath"], dra["fileSystemId"]) == (
        "s3://bucket/prefix/",
        "/",
        "fsx-cluster-data-fs-id",
    )
    assert dra["s3"]["autoImportPolicy"] == {"events": ["NEW", "CHANGED", "DELETED"]}
    # Import only by default: an `rm -rf` on a node must not delete the source data set (audit 14).
    assert "autoExportPolicy" not in dra["s3"]
    # Automatic daily backups and a final backup when the file system is deleted (audit 21).
    assert (fs["automaticBackupRetentionDays"], fs["skipFinalBackup"]) == (7, False)
    expected = [
        (988, 988, "fsx-cluster-data-sg-id"),
        (988, 988, "fsx-cluster-net-nodes-sg-id"),
        (1018, 1023, "fsx-cluster-data-sg-id"),
        (1018, 1023, "fsx-cluster-net-nodes-sg-id"),
    ]
    # The Lustre ports must be open in both directions between the file system and its clients
    # (audit 13: the group allowed egress only to itself; ParallelCluster checks outbound too).
    for kind in (INGRESS, EGRESS):
        rules = sorted(
            (
                r.inputs["ipProtocol"],
                r.inputs["fromPort"],
                r.inputs["toPort"],
                r.inputs["referencedSecurityGroupId"],
            )
            for r in all_of(plan, kind)
            if r.inputs["securityGroupId"] == "fsx-cluster-data-sg-id"
        )
        assert rules == [("tcp", *rule) for rule in expected], kind


def test_exporting_changes_back_to_s3_is_opt_in_and_never_deletes() -> None:
    body = NODES + (
        "storage:\n  - {name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 250,"
        " import_path: 's3://bucket/p/', export_changes: true}\n"
    )
    dra = one(
        aws_plan(body, name="exp"), "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    ).inputs
    assert dra["s3"]["autoExportPolicy"] == {"events": ["NEW", "CHANGED"]}


def test_an_efa_enabled_file_system_and_its_security_group() -> None:
    body = NODES + (
        "storage:\n  - {name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 250,"
        " efa: true}\n"
    )
    plan = aws_plan(body, name="efafs")
    fs = one(plan, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert (fs["efaEnabled"], fs["deploymentType"], fs["metadataConfiguration"]) == (
        True,
        "PERSISTENT_2",
        {"mode": "AUTOMATIC"},
    )
    group, nodes = "efafs-cluster-data-sg-id", "efafs-cluster-net-nodes-sg-id"
    for kind in (INGRESS, EGRESS):
        rules = sorted(
            (r.inputs["ipProtocol"], r.inputs["referencedSecurityGroupId"])
            for r in all_of(plan, kind)
            if r.inputs["securityGroupId"] == group
        )
        # All traffic to and from itself and the clients' group (FSx "EFA-enabled security groups").
        assert rules == [("-1", group), ("-1", nodes)], kind


def test_scratch_lustre_has_no_throughput_and_links_s3_on_the_file_system() -> None:
    body = NODES + (
        "storage:\n  - {name: tmp, kind: lustre, deployment: scratch, capacity_gib: 2400,"
        " import_path: 's3://bucket/in/'}\n"
    )
    plan = aws_plan(body, name="scr")
    fs = one(plan, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert (fs["deploymentType"], fs["storageCapacity"], fs["importPath"]) == (
        "SCRATCH_2",
        2400,
        "s3://bucket/in/",
    )
    assert "perUnitStorageThroughput" not in fs
    assert "metadataConfiguration" not in fs
    assert all_of(plan, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation") == []


# No `protect: false` here: in a protected environment it is refused before any plan (BP155).
STATEFUL = NODES + (
    "storage:\n  - {name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 125}\n"
    "  - {name: keep, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 125, protect: true}\n"
    "environments:\n  dev: {}\n  prod: {}\n  production: {protected: true}\n  prod-eu: {}\n"
    "  lab: {protected: false}\n"
)
EVERYTHING = {
    "st-cluster-artifacts-bucket",
    "st-cluster-data-fs",
    "st-cluster-keep-fs",
    "st-cluster-net-flow-logs",
}


@pytest.mark.parametrize(
    ("env", "protected"),
    [
        ("prod", EVERYTHING),
        ("production", EVERYTHING),  # protected by the blueprint, not by its name (issue 11 item 3)
        ("dev", {"st-cluster-keep-fs"}),
        ("prod-eu", {"st-cluster-keep-fs"}),
        ("lab", {"st-cluster-keep-fs"}),
    ],
)
def test_stateful_resources_are_protected_in_protected_environments_or_when_flagged(
    env: str, protected: set[str]
) -> None:
    plan = aws_plan(STATEFUL, name="st", env=env)
    assert {r.name for r in plan.resources if r.protect} == protected


@pytest.mark.parametrize(("env", "force"), [("dev", True), ("prod", False)])
def test_an_unprotected_bucket_can_be_destroyed_with_its_versions(env: str, force: bool) -> None:
    """Issue 11 item 2: destroying a dev stack failed on the versioned cluster bucket."""
    plan = aws_plan(STATEFUL, name="st", env=env)
    assert one(plan, "aws:s3/bucket:Bucket").inputs["forceDestroy"] is force


def test_cluster_bucket_is_private_encrypted_and_versioned() -> None:
    plan = aws_plan(NODES, name="bk")
    bucket = one(plan, "clusterfab:storage:AwsClusterBucket")
    assert [t for t, _ in children(plan, bucket)] == [
        "aws:s3/bucket:Bucket",
        "aws:s3/bucketObjectv2:BucketObjectv2",
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketVersioning:BucketVersioning",
    ]
    bundle = one(plan, "aws:s3/bucketObjectv2:BucketObjectv2").inputs
    assert re.fullmatch(r"bundles/[0-9a-f]{64}\.tar\.gz", bundle["key"])
    assert bundle["source"] == f"[asset {bundle['key'].removeprefix('bundles/')}]"
    assert (bundle["bucket"], bundle["serverSideEncryption"]) == ("bk-cluster-artifacts-bucket-id", "aws:kms")
    block = one(plan, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(
        block[k] is True
        for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    sse = one(plan, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "aws:kms"}
    assert one(plan, "aws:s3/bucketVersioning:BucketVersioning").inputs["versioningConfiguration"] == {
        "status": "Enabled"
    }


def test_cluster_bucket_refuses_requests_without_tls_1_2_and_health_records_but_the_deployers() -> None:
    # S3 answers plain HTTP unless a bucket policy denies it (CIS AWS Foundations 3.1.1, Security Hub S3.5).
    plan = aws_plan(NODES, name="tls")
    policy = one(plan, "aws:s3/bucketPolicy:BucketPolicy")
    assert policy.inputs["bucket"] == "tls-cluster-artifacts-bucket-id"
    arn = "arn:aws:mock:::bucket/tls-cluster-artifacts-bucket"
    deny = {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [arn, f"{arn}/*"]}
    assert json.loads(policy.inputs["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "DenyInsecureTransport", **deny, "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
            {"Sid": "DenyOutdatedTls", **deny, "Condition": {"NumericLessThan": {"s3:TlsVersion": "1.2"}}},
            {
                # The attack: anyone who could write the dev bucket (a node's role, another pipeline) put a
                # passing health record there and satisfied `promote`'s health gate. Now only the identity
                # that deploys the stack (the plan engine's caller, a user) writes under health/.
                "Sid": "OnlyItsWritersWriteHealth",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion"],
                "Resource": f"{arn}/health/*",
                "Condition": {"ArnNotEquals": {"aws:PrincipalArn": ["arn:aws:iam::123456789012:user/mock"]}},
            },
        ],
    }


def test_budget_from_monthly_limit_with_email_alerts() -> None:
    plan = aws_plan(NODES + "budget: {max_monthly_usd: 120000, alert_emails: [a@example.com]}\n", name="bud")
    budget = one(plan, "aws:budgets/budget:Budget").inputs
    assert (budget["limitAmount"], budget["limitUnit"], budget["timeUnit"], budget["budgetType"]) == (
        "120000.00",
        "USD",
        "MONTHLY",
        "COST",
    )
    # Its own blueprint AND its own stack (the plan's stack, `plan`): the legacy CostFilters on the
    # blueprint tag alone counted every stack of the blueprint in the account.
    assert budget["filterExpression"] == {
        "ands": [
            {"tags": {"key": "clusterfab-blueprint", "matchOptions": ["EQUALS"], "values": ["bud-cluster"]}},
            {"tags": {"key": "clusterfab-stack", "matchOptions": ["EQUALS"], "values": ["plan"]}},
        ]
    }
    assert budget["metrics"] == "UnblendedCost"
    assert "costFilters" not in budget
    assert [
        (n["notificationType"], n["threshold"], n["subscriberEmailAddresses"])
        for n in budget["notifications"]
    ] == [("ACTUAL", 80, ["a@example.com"]), ("FORECASTED", 100, ["a@example.com"])]


def test_no_budget_without_limits() -> None:
    assert all_of(aws_plan(NODES, name="nobud"), "aws:budgets/budget:Budget") == []


FLOW_LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]


def test_vpc_flow_logs_of_all_traffic_to_a_log_group_kept_30_days() -> None:
    plan = aws_plan(NODES, name="flow")
    group = one(plan, "aws:cloudwatch/logGroup:LogGroup").inputs
    assert (group["namePrefix"], group["retentionInDays"]) == (
        "/clusterfab/flow-cluster-net/vpc-flow-logs-",
        30,
    )
    flow_log = one(plan, "aws:ec2/flowLog:FlowLog").inputs
    assert {k: v for k, v in flow_log.items() if k != "tags"} == {
        "vpcId": "flow-cluster-net-vpc-id",
        "trafficType": "ALL",
        "logDestinationType": "cloud-watch-logs",
        "logDestination": "arn:aws:mock:::loggroup/flow-cluster-net-flow-logs",
        "iamRoleArn": "arn:aws:mock:::role/flow-cluster-net-flow-logs-role",
        "maxAggregationInterval": 600,
    }
    assert flow_log["tags"]["Name"] == "flow-cluster-net-flow-log"


def test_flow_logs_role_is_for_vpc_flow_logs_of_this_account_and_writes_only_its_group() -> None:
    plan = aws_plan(NODES, name="flow")
    role = one(plan, "aws:iam/role:Role", "flow-cluster-net-flow-logs-role").inputs
    assert json.loads(role["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": "123456789012"},
                    "ArnLike": {"aws:SourceArn": "arn:aws:ec2:us-east-1:123456789012:vpc-flow-log/*"},
                },
            }
        ],
    }
    policy = one(plan, "aws:iam/rolePolicy:RolePolicy", "flow-cluster-net-flow-logs-policy").inputs
    group = "arn:aws:mock:::loggroup/flow-cluster-net-flow-logs"
    assert policy["role"] == "flow-cluster-net-flow-logs-role-id"
    assert json.loads(policy["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DeliverFlowLogs",
                "Effect": "Allow",
                "Action": FLOW_LOG_ACTIONS,
                "Resource": [group, f"{group}:*"],
            }
        ],
    }


@pytest.mark.parametrize(("env", "protected"), [("dev", False), ("prod", True)])
def test_flow_logs_are_kept_from_deletion_in_protected_environments(env: str, protected: bool) -> None:
    plan = aws_plan(STATEFUL, name="st", env=env)
    assert one(plan, "aws:cloudwatch/logGroup:LogGroup").protect is protected
