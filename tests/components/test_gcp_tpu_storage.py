"""GCP TPU slices, Managed Lustre, Filestore, the cluster bucket and the budget."""

from __future__ import annotations

import pulumi
import pytest

from clusterfab.plan.project import Plan
from tests.components.harness import (
    GCP_HEAD,
    GCP_PROJECT,
    all_of,
    boot_vars,
    children,
    gcp_plan,
    one,
    plan_configured,
)

TPU = "gcp:tpu/v2Vm:V2Vm"
QUEUED = "pulumi-python:dynamic/gcp-tpu:QueuedResource"
LUSTRE = "gcp:lustre/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"
BUDGET = "gcp:billing/budget:Budget"


def slices(generation: str, topology: str, extra: str = "") -> str:
    return f"tpu_slices:\n  - name: s\n    generation: {generation}\n    topology: {topology}\n{extra}"


@pytest.mark.parametrize(
    ("generation", "topology", "accelerator_type", "zone"),
    [
        ("v5p", "2x2x1", "v5p-8", "us-central1-a"),
        ("v5p", "4x4x4", "v5p-128", "us-central1-a"),
        ("v6e", "4x4", "v6e-16", "us-central1-b"),
        ("v6e", "16x16", "v6e-256", "us-central1-b"),
    ],
)
def test_accelerator_type_from_the_catalog(
    generation: str, topology: str, accelerator_type: str, zone: str
) -> None:
    plan = gcp_plan(slices(generation, topology), name=f"{generation}-{topology.replace('x', '')}", zone=zone)
    node = one(plan, TPU).inputs
    assert node["acceleratorType"] == accelerator_type
    assert node["runtimeVersion"] == {"v5p": "v2-alpha-tpuv5", "v6e": "v2-alpha-tpuv6e"}[generation]
    assert node["zone"] == zone
    assert "schedulingConfig" not in node  # on demand


def test_multislice_is_one_queued_resource_with_a_node_count() -> None:
    """Audit item 15: N independent TPU VMs lose all-or-nothing provisioning and joint repair; Google
    provisions multislice as one queued resource with a node count (multislice-introduction)."""
    plan = gcp_plan(slices("v5p", "4x4x4", "    slices: 3\n"), name="multi", zone="us-central1-a")
    assert all_of(plan, TPU) == []
    queued = one(plan, QUEUED)
    assert (queued.inputs["project"], queued.inputs["zone"], queued.inputs["queued_resource_id"]) == (
        "test-project",
        "us-central1-a",
        "multi-cluster-plan-s",
    )
    body = queued.inputs["body"]
    assert set(body) == {"tpu", "guaranteed"}
    (spec,) = body["tpu"]["nodeSpec"]
    assert spec["parent"] == "projects/test-project/locations/us-central1-a"
    assert spec["multisliceParams"] == {"nodeCount": 3, "nodeIdPrefix": "multi-cluster-plan-s"}
    node = spec["node"]
    assert (node["acceleratorType"], node["runtimeVersion"]) == ("v5p-128", "v2-alpha-tpuv5")
    assert node["networkConfig"] == {
        "network": "multi-cluster-net-sys-id",
        "subnetwork": "multi-cluster-net-sys-subnet-id",
        "enableExternalIps": False,
        "canIpForward": False,
    }
    assert node["serviceAccount"] == {
        "email": "multi-cluster-s-sa@mock-project.iam.gserviceaccount.com",
        "scope": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    assert node["labels"] == {
        "clusterfab-blueprint": "multi-cluster",
        "clusterfab-stack": "plan",
        "clusterfab-component": "tpu-s",
        "clusterfab-node-group": "s",
        "clusterfab-slice-count": "3",
    }
    assert node["metadata"]["enable-oslogin"] == "TRUE"
    assert node["metadata"]["startup-script"].startswith("#!/bin/bash\n")
    outputs = plan.outputs["tpu_slices"]["s"]
    assert outputs["nodes"] == [f"multi-cluster-plan-s-{i}" for i in range(3)]
    assert (outputs["accelerator_type"], outputs["hosts_per_slice"]) == ("v5p-128", 16)


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        ("{kind: spot}", {"spot": {}}),
        (
            "{kind: reservation, reservation: tpu-res}",
            {
                "guaranteed": {},
                "reservationName": "projects/test-project/locations/us-central1-a/reservations/tpu-res",
            },
        ),
    ],
)
def test_queued_multislice_capacity(capacity: str, expected: dict[str, object]) -> None:
    kind = "spot" if "spot" in capacity else "reservation"
    plan = gcp_plan(
        slices("v5p", "4x4x4", f"    slices: 2\n    capacity: {capacity}\n"),
        name=f"q{kind[:4]}",
        zone="us-central1-a",
    )
    body = one(plan, QUEUED).inputs["body"]
    assert {k: v for k, v in body.items() if k != "tpu"} == expected
    scheduling = body["tpu"]["nodeSpec"][0]["node"].get("schedulingConfig")
    assert scheduling == ({"reserved": True} if kind == "reservation" else None)


def test_tpu_network_identity_and_startup_script() -> None:
    body = (
        slices("v6e", "4x4")
        + "storage:\n  - {name: ckpt, kind: filestore, tier: BASIC_SSD, capacity_gib: 2560}\n"
    )
    plan = gcp_plan(body, name="tpunet")
    node = one(plan, TPU).inputs
    assert node["networkConfig"] == {
        "network": "tpunet-cluster-net-sys-id",
        "subnetwork": "tpunet-cluster-net-sys-subnet-id",
        "enableExternalIps": False,
        "canIpForward": False,
    }
    assert node["serviceAccount"] == {
        "email": "tpunet-cluster-s-sa@mock-project.iam.gserviceaccount.com",
        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    assert node["metadata"]["enable-oslogin"] == "TRUE"
    # The startup script fetches the boot script from the bucket; the script itself is an object there.
    stub = node["metadata"]["startup-script"]
    assert "readonly BUCKET=tpunet-cluster-artifacts-bucket\n" in stub
    assert "readonly OBJECT=boot%2Fs.sh\n" in stub
    assert "exec /bin/bash /var/lib/clusterfab/boot.sh\n" in stub
    boot = one(plan, "gcp:storage/bucketObject:BucketObject", name="tpunet-cluster-s-boot").inputs
    assert (boot["bucket"], boot["name"], boot["contentType"]) == (
        "tpunet-cluster-artifacts-bucket",
        "boot/s.sh",
        "text/x-shellscript",
    )
    variables = boot_vars(boot["source"])
    assert variables == {
        # Unmonitored: no node exporter on the hosts.
        "clusterfab_monitoring_enabled": False,
        "storage_mounts_list": [
            {
                "name": "ckpt",
                "fstype": "nfs",
                "source": "10.255.0.2:/share",
                "mount_point": "/mnt/ckpt",
                "options": "defaults",
            }
        ],
    }
    assert "-c local tpu_host.yml" in boot["source"]
    group = one(plan, "clusterfab:compute:GcpTpuSlices")
    assert [t for t, _ in children(plan, group)] == [
        "gcp:projects/iAMMember:IAMMember",
        "gcp:projects/iAMMember:IAMMember",
        "gcp:serviceaccount/account:Account",
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        "gcp:storage/bucketObject:BucketObject",
        TPU,
    ]


@pytest.mark.parametrize(
    ("kind", "scheduling"), [("spot", {"spot": True}), ("reservation", {"reserved": True})]
)
def test_tpu_capacity(kind: str, scheduling: dict[str, bool]) -> None:
    extra = f"    capacity: {{kind: {kind}{', reservation: tpu-res' if kind == 'reservation' else ''}}}\n"
    plan = gcp_plan(slices("v6e", "16x16", extra), name=f"tpu-{kind}")
    assert one(plan, TPU).inputs["schedulingConfig"] == scheduling


def test_managed_lustre_inputs() -> None:
    body = slices("v6e", "4x4") + (
        "storage:\n  - {name: scratch-1, kind: lustre, capacity_gib: 36000, throughput_mbps_per_tib: 250,"
        " mount_point: /lustre}\n"
    )
    plan = gcp_plan(body, name="lfs")
    fs = one(plan, LUSTRE)
    assert fs.inputs == {
        "project": "test-project",
        "location": "us-central1-b",
        "instanceId": "lfs-cluster-plan-scratch-1",
        "filesystem": "scratch1",
        "capacityGib": "36000",
        "perUnitStorageThroughput": "250",
        "network": "lfs-cluster-net-sys-id",
        "labels": {
            "clusterfab-blueprint": "lfs-cluster",
            "clusterfab-stack": "plan",
            "clusterfab-component": "storage-scratch-1",
        },
        "description": "clusterfab lfs-cluster-scratch-1",
    }
    assert fs.protect is False
    assert plan.outputs["storage"]["scratch-1"] == {
        "fs_type": "lustre",
        "id": "lfs-cluster-scratch-1-fs",
        "source": "10.255.0.3@tcp:/mocklfs",
        "mount_point": "/lustre",
        "options": "defaults",
    }


@pytest.mark.parametrize(
    ("tier", "capacity", "location"),
    [
        ("ZONAL", 1024, "us-central1-b"),
        ("BASIC_SSD", 2560, "us-central1-b"),
        ("REGIONAL", 1024, "us-central1"),
    ],
)
def test_filestore_inputs(tier: str, capacity: int, location: str) -> None:
    body = slices("v6e", "4x4") + (
        f"storage:\n  - {{name: home, kind: filestore, tier: {tier}, capacity_gib: {capacity},"
        " share_name: homes}\n"
    )
    plan = gcp_plan(body, name=f"fs-{tier.lower().replace('_', '-')}")
    share = one(plan, FILESTORE).inputs
    assert (share["location"], share["tier"]) == (location, tier)
    # Only the nodes' subnet (the system subnet: first NICs, TPU VMs) may mount it; root stays root, as the
    # share's top directory is root's (755) and nothing could be created there otherwise.
    assert share["fileShares"] == {
        "capacityGb": capacity,
        "name": "homes",
        "nfsExportOptions": [
            {"ipRanges": ["10.0.0.0/20"], "accessMode": "READ_WRITE", "squashMode": "NO_ROOT_SQUASH"}
        ],
    }
    assert share["networks"] == [
        {
            "network": f"{plan.outputs['blueprint']['name']}-net-sys",
            "modes": ["MODE_IPV4"],
            "connectMode": "PRIVATE_SERVICE_ACCESS",
            "reservedIpRange": f"{plan.outputs['blueprint']['name']}-net-psa-range",
        }
    ]
    assert share["deletionProtectionEnabled"] is False
    assert plan.outputs["storage"]["home"]["source"] == "10.255.0.2:/homes"


ROOT_SQUASHED = slices("v6e", "4x4") + (
    "network: {cidr: 10.40.0.0/16}\n"
    "storage:\n  - {name: home, kind: filestore, tier: ZONAL, capacity_gib: 1024, root_squash: true}\n"
)


def root_squashed() -> Plan:
    return gcp_plan(ROOT_SQUASHED, name="squash")


def test_filestore_root_squash_maps_root_to_nobody_for_the_nodes_subnet() -> None:
    exports = one(root_squashed(), FILESTORE).inputs["fileShares"]["nfsExportOptions"]
    assert exports == [
        {
            "ipRanges": ["10.40.0.0/20"],
            "accessMode": "READ_WRITE",
            "squashMode": "ROOT_SQUASH",
            "anonUid": 65534,
            "anonGid": 65534,
        }
    ]


# No `protect: false` here: in a protected environment it is refused before any plan (BP155).
STATEFUL = slices("v6e", "4x4") + (
    "storage:\n"
    "  - {name: data, kind: lustre, capacity_gib: 18000, throughput_mbps_per_tib: 500}\n"
    "  - {name: home, kind: filestore, tier: ZONAL, capacity_gib: 1024}\n"
    "  - {name: keep, kind: filestore, tier: ZONAL, capacity_gib: 1024, protect: true}\n"
    "environments:\n  dev: {}\n  prod: {}\n"
)


@pytest.mark.parametrize(
    ("env", "protected"),
    [
        (
            "prod",
            {
                "st-cluster-artifacts-bucket",
                "st-cluster-data-fs",
                "st-cluster-home-share",
                "st-cluster-keep-share",
            },
        ),
        ("dev", {"st-cluster-keep-share"}),
    ],
)
def test_stateful_resources_are_protected_in_prod_or_when_flagged(env: str, protected: set[str]) -> None:
    plan = gcp_plan(STATEFUL, name="st", env=env)
    assert {r.name for r in plan.resources if r.protect} == protected
    shares = {r.name: r.inputs["deletionProtectionEnabled"] for r in all_of(plan, FILESTORE)}
    assert {n for n, on in shares.items() if on} == protected & set(shares)


def test_cluster_bucket_is_private_uniform_and_versioned() -> None:
    plan = gcp_plan(slices("v6e", "4x4"), name="bk")
    bucket = one(plan, "gcp:storage/bucket:Bucket").inputs
    assert {
        k: bucket[k]
        for k in (
            "location",
            "uniformBucketLevelAccess",
            "publicAccessPrevention",
            "versioning",
            "forceDestroy",
        )
    } == {
        "location": "US-CENTRAL1",
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "versioning": {"enabled": True},
        # An unprotected stack's bucket goes with it, versions and all (issue 11 item 2).
        "forceDestroy": True,
    }
    assert "encryption" not in bucket  # Google-managed keys
    prod = gcp_plan(slices("v6e", "4x4") + "environments:\n  prod: {}\n", name="bkp", env="prod")
    assert one(prod, "gcp:storage/bucket:Bucket").inputs["forceDestroy"] is False


BUDGETED = (
    GCP_HEAD.format(name="bud-cluster", zone="us-central1-b")
    + GCP_PROJECT
    + slices("v6e", "4x4")
    + "budget: {max_hourly_usd: 100, alert_emails: [a@example.com, ops@example.org]}\n"
)


def test_budget_needs_a_billing_account_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    plan = gcp_plan(
        slices("v6e", "4x4") + "budget: {max_monthly_usd: 50000, alert_emails: [a@example.com]}\n",
        name="nobud",
    )
    assert all_of(plan, BUDGET) == []
    assert all_of(plan, "gcp:monitoring/notificationChannel:NotificationChannel") == []
    # A located warning of the stack's blueprint (BP410), no longer an info line of the program's own.
    assert [m.split(": ", 1)[1] for m in warned if " BP410 " in m] == [
        "BP410 stack plan names no billing account (clusterfab:billingAccount): `pulumi up` creates no GCP "
        "budget, and nothing alerts when the spend passes it"
    ]


def test_budget_with_a_billing_account() -> None:
    plan = plan_configured(BUDGETED, (("clusterfab:billingAccount", "000000-AAAAAA-BBBBBB"),))
    budget = one(plan, BUDGET).inputs
    assert budget["billingAccount"] == "000000-AAAAAA-BBBBBB"
    assert budget["amount"] == {"specifiedAmount": {"currencyCode": "USD", "units": "73000"}}
    assert budget["thresholdRules"] == [{"thresholdPercent": 0.8}, {"thresholdPercent": 1}]
    assert budget["budgetFilter"] == {
        "projects": ["projects/123456789"],
        "labels": {"clusterfab-stack": "plan"},
        "calendarPeriod": "MONTH",
    }
    channels = {
        r.name: r.inputs for r in all_of(plan, "gcp:monitoring/notificationChannel:NotificationChannel")
    }
    assert {n: (c["type"], c["labels"]) for n, c in channels.items()} == {
        "bud-cluster-budget-email-a-example-com": ("email", {"email_address": "a@example.com"}),
        "bud-cluster-budget-email-ops-example-org": ("email", {"email_address": "ops@example.org"}),
    }
    assert budget["allUpdatesRule"] == {
        "monitoringNotificationChannels": [f"{n}-id" for n in sorted(channels)],
    }
