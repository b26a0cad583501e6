"""Slurm on GCP: the controller at the address slurm.conf names with a protected state disk, login nodes,
the munge key's secret and who may read or add to it, the node sync's rights limited to the cluster's
VMs, and the GPU nodes' slurmd wiring."""

from __future__ import annotations

import json
from typing import Any

from tests.components.harness import all_of, boot_vars, gcp_plan, one, startup_script

INSTANCE = "gcp:compute/instance:Instance"
SECRET_MEMBER = "gcp:secretmanager/secretIamMember:SecretIamMember"

BODY = """network:
  cidr: 10.60.0.0/16
node_groups:
  - name: h100
    machine_type: a3-highgpu-8g
    count: 2
scheduler:
  kind: slurm
  login: {count: 1}
teams:
  - {name: research, max_gpus: 16, users: [alice]}
environments:
  prod: {}
"""

GSE_H100 = "gse-cluster-prod-h100-aaea0b66"
GSN_H100 = "gsn-cluster-prod-h100-699ea339"
"""The group's names in the stack: the tag tells cluster, stack and group apart (gcp.names.group_name):
the first 8 hex digits of the sha256 of cluster, stack and group joined by NUL, e.g.
`printf 'gse-cluster\\0prod\\0h100' | sha256sum` starts aaea0b66."""


def test_the_controller_sits_at_the_address_slurm_conf_names_with_its_state_disk() -> None:
    plan = gcp_plan(BODY, name="gsl", env="prod")
    address = one(plan, "gcp:compute/address:Address", "gsl-cluster-slurm-address").inputs
    # 10.60.0.0/16: general network 0 (the system subnet) is 10.60.0.0/20; the controller is its host 10.
    assert (address["address"], address["addressType"]) == ("10.60.0.10", "INTERNAL")
    disk = one(plan, "gcp:compute/disk:Disk", "gsl-cluster-slurm-state")
    assert (disk.inputs["size"], disk.inputs["type"]) == (100, "pd-balanced")
    assert disk.protect is True
    controller = one(plan, INSTANCE, "gsl-cluster-slurm-controller").inputs
    assert controller["machineType"] == "e2-standard-8"
    # The guest sees it as /dev/disk/by-id/google-slurm-state (the controller role's state device).
    assert controller["attachedDisks"] == [
        {"deviceName": "slurm-state", "source": "https://mock.googleapis.com/gsl-cluster-slurm-state"}
    ]
    [nic] = controller["networkInterfaces"]
    assert "accessConfigs" not in nic  # no external address
    assert nic["networkIp"] == "10.60.0.10"
    assert controller["shieldedInstanceConfig"] == {
        "enableIntegrityMonitoring": True,
        "enableSecureBoot": True,
        "enableVtpm": True,
    }
    assert controller["metadata"]["enable-oslogin"] == "TRUE"
    assert controller["metadata"]["block-project-ssh-keys"] == "TRUE"
    assert controller["labels"]["clusterfab-slurm-role"] == "controller"
    assert plan.outputs["scheduler"]["controller_address"] == "10.60.0.10"


def test_the_state_disk_is_snapshotted_daily_in_the_region_and_the_snapshots_outlive_it() -> None:
    plan = gcp_plan(BODY, name="gsl", env="prod")
    policy = one(plan, "gcp:compute/resourcePolicy:ResourcePolicy", "gsl-cluster-slurm-snapshots").inputs
    assert policy["region"] == "us-central1"
    assert policy["snapshotSchedulePolicy"] == {
        "schedule": {"dailySchedule": {"daysInCycle": 1, "startTime": "03:00"}},
        "retentionPolicy": {"maxRetentionDays": 7, "onSourceDiskDelete": "KEEP_AUTO_SNAPSHOTS"},
        "snapshotProperties": {
            "labels": one(plan, "gcp:compute/disk:Disk", "gsl-cluster-slurm-state").inputs["labels"],
            "storageLocations": "us-central1",
        },
    }
    # Attached to the disk rather than set on it: an existing state disk is not recreated for it.
    attachment = one(
        plan,
        "gcp:compute/diskResourcePolicyAttachment:DiskResourcePolicyAttachment",
        "gsl-cluster-slurm-state-snapshots",
    ).inputs
    assert attachment == {
        "disk": one(plan, "gcp:compute/disk:Disk", "gsl-cluster-slurm-state").computed["name"],
        "name": one(
            plan, "gcp:compute/resourcePolicy:ResourcePolicy", "gsl-cluster-slurm-snapshots"
        ).computed["name"],
        "project": "test-project",
        "zone": "us-central1-b",
    }
    assert "resourcePolicies" not in one(plan, "gcp:compute/disk:Disk", "gsl-cluster-slurm-state").inputs


def test_an_unprotected_environment_may_delete_the_state_disk() -> None:
    plan = gcp_plan(BODY, name="gsu")
    assert one(plan, "gcp:compute/disk:Disk", "gsu-cluster-slurm-state").protect is False


def test_the_munge_key_secret_is_empty_and_readable_by_the_controller_alone() -> None:
    """The attack: a job on a GPU node took the node's service-account token and read the munge key. GPU
    and login nodes now hold no grant on the secret: they fetch the key from the controller as root."""
    plan = gcp_plan(BODY, name="gsk", env="prod")
    secret = one(plan, "gcp:secretmanager/secret:Secret", "gsk-cluster-slurm-munge-key").inputs
    assert secret["secretId"] == "clusterfab-gsk-cluster-prod-munge-key"
    assert secret["replication"] == {"userManaged": {"replicas": [{"location": "us-central1"}]}}
    assert not all_of(plan, "gcp:secretmanager/secretVersion:SecretVersion")  # the controller adds it
    grants = sorted((m.name, m.inputs["role"].rsplit(".", 1)[-1]) for m in all_of(plan, SECRET_MEMBER))
    assert grants == [
        ("gsk-cluster-slurm-controller-reads-key", "secretAccessor"),
        ("gsk-cluster-slurm-controller-writes-key", "secretVersionAdder"),
    ]
    # Nor through the project: no member of the project gets a Secret Manager role.
    assert [
        m.name
        for m in all_of(plan, "gcp:projects/iAMMember:IAMMember")
        if "secretmanager" in m.inputs["role"]
    ] == []


def test_the_node_sync_may_rename_only_the_clusters_vms() -> None:
    plan = gcp_plan(BODY, name="gsn", env="prod")
    roles = {r.name: r.inputs for r in all_of(plan, "gcp:projects/iAMCustomRole:IAMCustomRole")}
    assert roles["gsn-cluster-slurm-list-role"]["permissions"] == [
        "compute.instanceGroupManagers.list",
        "compute.instances.list",
    ]
    assert roles["gsn-cluster-slurm-name-role"]["permissions"] == [
        "compute.instances.get",
        "compute.instances.setMetadata",
    ]
    naming = one(plan, "gcp:projects/iAMMember:IAMMember", "gsn-cluster-slurm-name").inputs
    assert naming["condition"]["expression"] == (
        f'resource.name.startsWith("projects/test-project/zones/us-central1-b/instances/{GSN_H100}-")'
    )
    listing = one(plan, "gcp:projects/iAMMember:IAMMember", "gsn-cluster-slurm-list").inputs
    assert "condition" not in listing


def test_the_node_sync_may_have_only_the_clusters_migs_recreate_a_vm() -> None:
    plan = gcp_plan(BODY, name="gsn", env="prod")
    roles = {r.name: r.inputs for r in all_of(plan, "gcp:projects/iAMCustomRole:IAMCustomRole")}
    # instanceGroupManagers.recreateInstances needs this one permission, on the MIG.
    assert roles["gsn-cluster-slurm-mig-role"]["permissions"] == ["compute.instanceGroupManagers.update"]
    # The mock engine names the MIG by its logical name (the cloud adds a random suffix to it).
    assert one(plan, "gcp:projects/iAMMember:IAMMember", "gsn-cluster-slurm-mig").inputs["condition"] == {
        "title": "clusterfab node MIGs only",
        "expression": (
            'resource.name == "projects/test-project/zones/us-central1-b/instanceGroupManagers/'
            'gsn-cluster-h100-mig"'
        ),
    }
    # No node group's VMs are reservation-bound: no right to report a host (compute.instances.update).
    assert "gsn-cluster-slurm-host-role" not in roles


def test_boot_vars_of_every_slurm_host() -> None:
    plan = gcp_plan(BODY, name="gsb", env="prod")
    controller = boot_vars(startup_script(plan, INSTANCE, "gsb-cluster-slurm-controller"))
    assert controller["munge_key_source"] == "gcp"
    assert controller["munge_key_project"] == "test-project"
    assert controller["munge_key_generate"] is True
    assert (controller["munge_key_serve"], controller["munge_key_serve_networks"]) == (True, ["10.60.0.0/16"])
    assert controller["slurm_controller_state_device_name"] == "/dev/disk/by-id/google-slurm-state"
    assert "munge_key_region" not in controller
    login = boot_vars(startup_script(plan, INSTANCE, "gsb-cluster-slurm-login-0"))
    assert login["slurm_login_conf_server"] == "10.60.0.10:6817"
    assert (login["munge_key_source"], login["munge_key_server"], login["munge_key_port"]) == (
        "controller",
        "10.60.0.10",
        6816,
    )
    node = boot_vars(
        startup_script(plan, "gcp:compute/instanceTemplate:InstanceTemplate", "gsb-cluster-h100-template")
    )
    assert node["clusterfab_slurm_enabled"] is True
    assert node["slurm_node_name_source"] == "gcp"
    assert node["slurm_node_gpus"] == 8
    assert (node["munge_key_source"], node["munge_key_server"]) == ("controller", "10.60.0.10")
    assert "munge_key_project" not in node


def test_the_state_device_the_controller_role_looks_for_is_the_one_attached() -> None:
    from clusterfab.clouds import profile
    from components.aws.slurm import STATE_DEVICE
    from components.gcp.slurm import STATE_DEVICE_NAME

    # GCE's guest environment links each attached disk as /dev/disk/by-id/google-<device name>.
    assert (STATE_DEVICE, STATE_DEVICE_NAME) == ("/dev/sdf", "slurm-state")
    state_devices = {cloud: profile(cloud).controller_state_device for cloud in ("aws", "gcp")}
    assert state_devices == {"aws": "/dev/sdf", "gcp": "/dev/disk/by-id/google-slurm-state"}


def test_a_monitored_clusters_state_disk_also_holds_the_samples() -> None:
    """Prometheus on the controller keeps its samples on the state disk (the slurm_controller role binds
    /var/lib/prometheus from it), which grows by what the retention needs: 50 GiB, the catalog's minimum,
    for two a3-highgpu-8g nodes kept 30 days."""
    body = BODY.replace("environments:", "monitoring: {kind: prometheus}\nenvironments:")
    disk = one(gcp_plan(body, name="gsm", env="prod"), "gcp:compute/disk:Disk", "gsm-cluster-slurm-state")
    assert disk.inputs["size"] == 150


def test_a_customer_key_encrypts_the_controllers_disks() -> None:
    key = "projects/test-project/locations/us-central1/keyRings/ml/cryptoKeys/slurm"
    body = BODY.replace("  login: {count: 1}\n", f"  login: {{count: 1}}\n  controller: {{kms_key: {key}}}\n")
    plan = gcp_plan(body, name="gsc", env="prod")
    disk = one(plan, "gcp:compute/disk:Disk", "gsc-cluster-slurm-state").inputs
    assert disk["diskEncryptionKey"] == {"kmsKeySelfLink": key}
    for vm in ("gsc-cluster-slurm-controller", "gsc-cluster-slurm-login-0"):
        assert one(plan, INSTANCE, vm).inputs["bootDisk"]["kmsKeySelfLink"] == key
    plain = one(gcp_plan(BODY, name="gsl", env="prod"), "gcp:compute/disk:Disk", "gsl-cluster-slurm-state")
    assert "diskEncryptionKey" not in plain.inputs


ELASTIC = BODY.replace("    count: 2\n", "    autoscaling: {min: 1, max: 4}\n", 1)
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"


def test_the_controller_may_create_and_delete_only_this_clusters_elastic_vms() -> None:
    plan = gcp_plan(ELASTIC, name="gse", env="prod")
    roles = {r.name: r.inputs for r in all_of(plan, "gcp:projects/iAMCustomRole:IAMCustomRole")}
    # What names no one VM, as on AWS: find the MIG, wait for the operation, use its subnets and images.
    assert roles["gse-cluster-slurm-use-role"]["permissions"] == [
        "compute.images.useReadOnly",
        "compute.subnetworks.use",
        "compute.zoneOperations.get",
    ]
    assert "condition" not in one(plan, IAM_MEMBER, "gse-cluster-slurm-use").inputs
    assert roles["gse-cluster-slurm-vms-role"]["permissions"] == [
        "compute.disks.create",
        "compute.disks.setLabels",
        "compute.instanceTemplates.get",
        "compute.instanceTemplates.useReadOnly",
        "compute.instances.create",
        "compute.instances.delete",
        "compute.instances.get",
        "compute.instances.setLabels",
        "compute.instances.setMetadata",
        "compute.instances.setServiceAccount",
        "compute.instances.updateShieldedVmConfig",
        "compute.resourcePolicies.use",
    ]
    assert roles["gse-cluster-slurm-vms-role"]["roleId"] == "gse_cluster_prod_sync_vms"
    zonal = "projects/test-project/zones/us-central1-b"
    # Only this stack's elastic VMs of the group and their boot disks, and the group's template.
    assert one(plan, IAM_MEMBER, "gse-cluster-slurm-vms").inputs["condition"] == {
        "title": "clusterfab elastic VMs and node templates only",
        "expression": (
            f'resource.name.startsWith("{zonal}/instances/{GSE_H100}-elastic-") || '
            f'resource.name.startsWith("{zonal}/disks/{GSE_H100}-elastic-") || '
            'resource.name == "projects/test-project/global/instanceTemplates/gse-cluster-h100-template" || '
            'resource.name.startsWith("projects/test-project/regions/us-central1/resourcePolicies/'
            f'{GSE_H100}-placement-")'
        ),
    }
    # The VMs it creates may run as the group's own service account, and only that one.
    assert roles["gse-cluster-slurm-act-role"]["permissions"] == ["iam.serviceAccounts.actAs"]
    act = one(plan, "gcp:serviceaccount/iAMMember:IAMMember").inputs
    assert act == {
        "member": "serviceAccount:gse-cluster-slurm-sa-sa@mock-project.iam.gserviceaccount.com",
        "role": "gse-cluster-slurm-act-role",
        "serviceAccountId": (
            "projects/test-project/serviceAccounts/gse-cluster-h100-sa@mock-project.iam.gserviceaccount.com"
        ),
    }
    # The MIG keeps the `min` static nodes; Slurm owns the rest (the size is left alone on updates).
    mig = one(plan, "gcp:compute/instanceGroupManager:InstanceGroupManager", "gse-cluster-h100-mig")
    assert (mig.inputs["targetSize"], mig.inputs["baseInstanceName"]) == (1, GSE_H100)
    # A cluster without elastic groups gives the controller none of these rights.
    static = {
        r.name
        for r in all_of(gcp_plan(BODY, name="gse", env="prod"), "gcp:projects/iAMCustomRole:IAMCustomRole")
    }
    assert static == {
        "gse-cluster-slurm-list-role",
        "gse-cluster-slurm-name-role",
        "gse-cluster-slurm-mig-role",
    }


def test_the_controllers_programs_find_the_groups_mig_and_name_its_vms_as_the_rights_allow() -> None:
    import tarfile

    from tests.components.harness import stacks_module
    from tests.conftest import REPO

    plan = gcp_plan(ELASTIC, name="gse", env="prod")
    key = one(plan, "gcp:storage/bucketObject:BucketObject", "gse-cluster-slurm-files").inputs["name"]
    archive = REPO / stacks_module("cluster").BUNDLE_CACHE / f"slurm-{key.removeprefix('slurm/')}"
    with tarfile.open(archive) as tar:
        member = tar.extractfile("nodesync.json")
        assert member is not None
        config = json.loads(member.read())
    assert config["groups"] == {"h100": {"static": 1, "size": 4}}
    assert config["gce_groups"] == {
        "h100": {
            "base_instance_name": GSE_H100,
            "vm_prefix": f"{GSE_H100}-elastic",
            # a3-highgpu-8g: one compact placement policy holds 1,500 VMs (the catalog's limit)
            "placement_prefix": f"{GSE_H100}-placement",
            "placement_chunk": 1500,
            "flex_prefix": "",  # on-demand: bulkInsert (flex-start: test_gcp_slurm_flex.py)
            "run_seconds": 0,
        }
    }
    assert (config["project"], config["zone"], config["stack"]) == ("test-project", "us-central1-b", "prod")


def test_an_elastic_vm_name_fits_63_characters_at_the_groups_highest_node() -> None:
    body = ELASTIC.replace("- name: h100", "- name: " + "g" * 30).replace("max: 4", "max: 1000")
    plan = gcp_plan(body, name="e" * 20, env="prod")
    condition = one(plan, IAM_MEMBER, f"{'e' * 20}-cluster-slurm-vms").inputs["condition"]["expression"]
    prefix = condition.split("/instances/", 1)[1].split('"', 1)[0]
    assert len(prefix + "999") == 63  # <group>-999, the last of 1000 nodes


POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"


def placement_policies(plan: Any) -> list[Any]:
    """The resource policies that place VMs (the state disk's snapshot schedule is one too)."""
    return [r for r in all_of(plan, POLICY) if "snapshotSchedulePolicy" not in r.inputs]


def test_elastic_vms_get_compact_placement_policies_of_their_own() -> None:
    """A MIG's workload policy places only the MIG's VMs: the elastic VMs a controller bulk-inserts are
    placed by compact placement policies, deleted only after the MIG (whose hook deletes those VMs)."""
    plan = gcp_plan(ELASTIC, name="gse", env="prod")
    policies = {r.name: r.inputs for r in placement_policies(plan)}
    assert policies["gse-cluster-h100-elastic-placement-0"] == {
        "name": f"{GSE_H100}-placement-0",
        "project": "test-project",
        "region": "us-central1",
        "description": "compact placement of gse-cluster/h100's elastic nodes",
        "groupPlacementPolicy": {"collocation": "COLLOCATED"},
    }
    assert set(policies) == {"gse-cluster-h100-placement", "gse-cluster-h100-elastic-placement-0"}
    mig = one(plan, "gcp:compute/instanceGroupManager:InstanceGroupManager", "gse-cluster-h100-mig")
    assert one(plan, POLICY, "gse-cluster-h100-elastic-placement-0").urn in mig.dependencies
    # Without elastic nodes, or without compact placement, none.
    assert {r.name for r in placement_policies(gcp_plan(BODY, name="gse", env="prod"))} == {
        "gse-cluster-h100-placement"
    }
    spread = ELASTIC.replace("    autoscaling:", "    placement: none\n    autoscaling:", 1)
    assert placement_policies(gcp_plan(spread, name="gse", env="prod")) == []


def test_the_migs_base_instance_name_carries_the_stack_within_58_characters() -> None:
    """Two stacks of one blueprint in one project name their VMs apart (and each controller's rights, by
    these names, reach its own VMs only); a MIG adds `-xxxx` to the base name, VM names stop at 63."""
    body = BODY.replace("- name: h100", "- name: " + "g" * 30).replace("prod: {}", "prod: {}\n  staging: {}")
    names = {}
    for env in ("prod", "staging"):
        plan = gcp_plan(body, name="b" * 20, env=env)
        [mig] = all_of(plan, "gcp:compute/instanceGroupManager:InstanceGroupManager")
        names[env] = mig.inputs["baseInstanceName"]
    assert {len(name) for name in names.values()} == {58}
    assert names["prod"] != names["staging"]
    assert names["prod"].startswith(f"{'b' * 20}-cluster-prod-")
    short = one(
        gcp_plan(BODY, name="gsn", env="prod"), "gcp:compute/instanceGroupManager:InstanceGroupManager"
    )
    assert short.inputs["baseInstanceName"] == GSN_H100
    static = gcp_plan(BODY, name="gsn", env="prod")
    key = one(static, "gcp:storage/bucketObject:BucketObject", "gsn-cluster-slurm-files").inputs["name"]
    assert _nodesync_config(key)["gce_groups"] == {  # static: MIG only
        "h100": {
            "base_instance_name": GSN_H100,
            "vm_prefix": "",
            "placement_prefix": "",
            "placement_chunk": 0,
            "flex_prefix": "",
            "run_seconds": 0,
        }
    }


def _nodesync_config(key: str) -> dict[str, object]:
    import tarfile

    from tests.components.harness import stacks_module
    from tests.conftest import REPO

    archive = REPO / stacks_module("cluster").BUNDLE_CACHE / f"slurm-{key.removeprefix('slurm/')}"
    with tarfile.open(archive) as tar:
        member = tar.extractfile("nodesync.json")
        assert member is not None
        config: dict[str, object] = json.loads(member.read())
    return config


def test_a_controller_may_report_only_the_named_groups_hosts_faulty() -> None:
    """compute.instances.update, the report's one permission, on the VMs of the groups named reportable."""
    from clusterfab.plan.engine import run_program
    from components.gcp.slurm import GcpSlurmController, GcpSlurmControllerArgs

    def program() -> None:
        GcpSlurmController(
            "c",
            GcpSlurmControllerArgs(
                cluster="c",
                project="p",
                region="us-central1",
                zone="us-central1-b",
                subnetwork_id="sub",
                bucket_name="b",
                image="ubuntu",
                private_ip="10.0.0.10",
                munge_secret_id="munge",
                instance_name="c-ctl",
                service_account_id="c-ctl",
                login_service_account_id="c-login",
                role_id_prefix="c_sync",
                node_instance_prefixes=["c-prod-a3u", "c-prod-h100"],
                faulty_host_prefixes=["c-prod-a3u"],
            ),
        )

    run = run_program(program, project="team-infra", stack="dev")
    roles = {r.name: r.inputs for r in run.resources if r.type == "gcp:projects/iAMCustomRole:IAMCustomRole"}
    assert roles["c-host-role"]["permissions"] == ["compute.instances.update"]
    [member] = [r for r in run.resources if r.type == IAM_MEMBER and r.name == "c-host"]
    assert member.inputs["condition"] == {
        "title": "clusterfab reportable node VMs only",
        "expression": 'resource.name.startsWith("projects/p/zones/us-central1-b/instances/c-prod-a3u-")',
    }
    assert "c-mig-role" not in roles  # no MIGs named: no right on any


def test_the_controller_and_login_nodes_follow_their_startup_scripts() -> None:
    """GCE changes metadata in place: the running hosts' timer runs a changed startup-script."""
    plan = gcp_plan(BODY, name="gsb", env="prod")
    for name in ("controller", "login-0"):
        script = startup_script(plan, INSTANCE, f"gsb-cluster-slurm-{name}")
        assert 'fetch_boot_script() { metadata instance/attributes/startup-script >"$1"; }' in script
        assert "systemctl enable --now clusterfab-follow.timer" in script
    node = startup_script(plan, "gcp:compute/instanceTemplate:InstanceTemplate", "gsb-cluster-h100-template")
    assert "clusterfab-follow" not in node
    # The metadata changes only once what the script fetches is uploaded.
    (bundle,) = [
        o.urn for o in all_of(plan, "gcp:storage/bucketObject:BucketObject") if o.name.endswith("-bundle")
    ]
    assert bundle in one(plan, INSTANCE, "gsb-cluster-slurm-controller").dependencies
    assert bundle in one(plan, "gcp:compute/instanceTemplate:InstanceTemplate").dependencies
