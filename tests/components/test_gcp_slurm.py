"""Slurm on GCP: the controller at the address slurm.conf names with a protected state disk, login nodes,
the munge key's secret and who may read or add to it, the node sync's rights limited to the cluster's
VMs, and the GPU nodes' slurmd wiring."""

from __future__ import annotations

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


def test_an_unprotected_environment_may_delete_the_state_disk() -> None:
    plan = gcp_plan(BODY, name="gsu")
    assert one(plan, "gcp:compute/disk:Disk", "gsu-cluster-slurm-state").protect is False


def test_the_munge_key_secret_is_empty_and_readable_only_by_the_clusters_accounts() -> None:
    plan = gcp_plan(BODY, name="gsk", env="prod")
    secret = one(plan, "gcp:secretmanager/secret:Secret", "gsk-cluster-slurm-munge-key").inputs
    assert secret["secretId"] == "clusterfab-gsk-cluster-prod-munge-key"
    assert secret["replication"] == {"userManaged": {"replicas": [{"location": "us-central1"}]}}
    assert not all_of(plan, "gcp:secretmanager/secretVersion:SecretVersion")  # the controller adds it
    grants = sorted((m.name, m.inputs["role"].rsplit(".", 1)[-1]) for m in all_of(plan, SECRET_MEMBER))
    assert grants == [
        ("gsk-cluster-h100-slurm-munge", "secretAccessor"),
        ("gsk-cluster-slurm-controller-reads-key", "secretAccessor"),
        ("gsk-cluster-slurm-controller-writes-key", "secretVersionAdder"),
        ("gsk-cluster-slurm-login-reads-key", "secretAccessor"),
    ]


def test_the_node_sync_may_rename_only_the_clusters_vms() -> None:
    plan = gcp_plan(BODY, name="gsn", env="prod")
    roles = {r.name: r.inputs for r in all_of(plan, "gcp:projects/iAMCustomRole:IAMCustomRole")}
    assert roles["gsn-cluster-slurm-list-role"]["permissions"] == ["compute.instances.list"]
    assert roles["gsn-cluster-slurm-name-role"]["permissions"] == [
        "compute.instances.get",
        "compute.instances.setMetadata",
    ]
    naming = one(plan, "gcp:projects/iAMMember:IAMMember", "gsn-cluster-slurm-name").inputs
    assert naming["condition"]["expression"] == (
        'resource.name.startsWith("projects/test-project/zones/us-central1-b/instances/gsn-cluster-h100-")'
    )
    listing = one(plan, "gcp:projects/iAMMember:IAMMember", "gsn-cluster-slurm-list").inputs
    assert "condition" not in listing


def test_boot_vars_of_every_slurm_host() -> None:
    plan = gcp_plan(BODY, name="gsb", env="prod")
    controller = boot_vars(startup_script(plan, INSTANCE, "gsb-cluster-slurm-controller"))
    assert controller["munge_key_source"] == "gcp"
    assert controller["munge_key_project"] == "test-project"
    assert controller["munge_key_generate"] is True
    assert controller["slurm_controller_state_device_name"] == "/dev/disk/by-id/google-slurm-state"
    assert "munge_key_region" not in controller
    login = boot_vars(startup_script(plan, INSTANCE, "gsb-cluster-slurm-login-0"))
    assert login["slurm_login_conf_server"] == "10.60.0.10:6817"
    assert login["munge_key_generate"] is False
    node = boot_vars(
        startup_script(plan, "gcp:compute/instanceTemplate:InstanceTemplate", "gsb-cluster-h100-template")
    )
    assert node["clusterfab_slurm_enabled"] is True
    assert node["slurm_node_name_source"] == "gcp"
    assert node["slurm_node_gpus"] == 8
    assert node["munge_key_project"] == "test-project"


def test_the_state_device_the_controller_role_looks_for_is_the_one_attached() -> None:
    from clusterfab.scheduler.slurm.hostvars import STATE_DEVICES
    from components.aws.slurm import STATE_DEVICE
    from components.gcp.slurm import STATE_DEVICE_NAME

    # GCE's guest environment links each attached disk as /dev/disk/by-id/google-<device name>.
    assert {"aws": STATE_DEVICE, "gcp": f"/dev/disk/by-id/google-{STATE_DEVICE_NAME}"} == STATE_DEVICES


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
