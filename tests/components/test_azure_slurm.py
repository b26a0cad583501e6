"""Slurm on Azure under the mock engine: the controller VM at its fixed address in the controller subnet
with a protected state disk at LUN 0, a login VM, the munge key's vault that the controller alone may use
and only from its subnet, the hosts' reach to the cluster bucket, the nodes' fabric-unit tag and the Slurm
variables each host's boot script carries."""

from __future__ import annotations

import base64
import json
import tarfile
from typing import Any

from clusterfab.plan.project import Plan
from tests.components.harness import all_of, boot_vars, one, plan_text

VM = "azure-native:compute:VirtualMachine"
ROLE = "azure-native:authorization:RoleAssignment"
SUBNET = "azure-native:network:Subnet"
BLUEPRINT = """version: 1
name: hpc
cloud: azure
region: southcentralus
zone: "1"
network: {cidr: 10.20.0.0/16}
node_groups:
  - name: h100
    machine_type: Standard_ND96isr_H100_v5
    count: 150
scheduler:
  kind: slurm
  login: {count: 1}
teams:
  - {name: research, max_gpus: 64, users: [alice]}
"""
SUBSCRIPTION = "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/"


def _plan() -> Plan:
    return plan_text(BLUEPRINT, None)


PLAN = _plan()


def _script(vm: dict[str, object]) -> str:
    data = vm["userData"]
    assert isinstance(data, str)
    return base64.b64decode(data).decode()


def test_the_controller_vm_has_its_fixed_address_its_state_disk_and_no_public_ip() -> None:
    controller = one(PLAN, VM, "hpc-slurm-controller").inputs
    assert controller["hardwareProfile"] == {"vmSize": "Standard_D16s_v5"}
    assert controller["osProfile"]["computerName"] == "hpc-controller"
    assert controller["zones"] == ["1"]
    assert controller["securityProfile"] == {"encryptionAtHost": True}
    assert controller["identity"]["userAssignedIdentities"] == ["hpc-slurm-controller-identity-id"]
    assert controller["storageProfile"]["imageReference"] == {
        "publisher": "Canonical",
        "offer": "ubuntu-24_04-lts",
        "sku": "server",
        "version": "latest",
    }
    assert controller["storageProfile"]["dataDisks"] == [
        {
            "lun": 0,
            "createOption": "Attach",
            "deleteOption": "Detach",
            "managedDisk": {"id": "hpc-slurm-state-id"},
        }
    ]
    nic = one(PLAN, "azure-native:network:NetworkInterface", "hpc-slurm-controller-nic").inputs
    assert nic["ipConfigurations"] == [
        {
            "name": "primary",
            "primary": True,
            "privateIPAddress": "10.20.16.10",
            "privateIPAllocationMethod": "Static",
            "subnet": {"id": "hpc-net-controller-id"},
        }
    ]
    disk = one(PLAN, "azure-native:compute:Disk", "hpc-slurm-state")
    assert disk.protect is False  # protected where the environment is (prod)
    assert (disk.inputs["diskSizeGB"], disk.inputs["sku"], disk.inputs["networkAccessPolicy"]) == (
        100,
        {"name": "Premium_LRS"},
        "DenyAll",
    )


def test_one_login_vm_with_the_nodes_identity_and_a_dynamic_address() -> None:
    logins = all_of(PLAN, VM)
    assert sorted(r.name for r in logins) == ["hpc-slurm-controller", "hpc-slurm-login-0"]
    login = one(PLAN, VM, "hpc-slurm-login-0").inputs
    assert login["hardwareProfile"] == {"vmSize": "Standard_D8s_v5"}
    assert login["identity"]["userAssignedIdentities"] == ["hpc-nodes-identity-id"]
    assert "dataDisks" not in login["storageProfile"]
    nic = one(PLAN, "azure-native:network:NetworkInterface", "hpc-slurm-login-0-nic").inputs
    assert nic["ipConfigurations"][0]["privateIPAllocationMethod"] == "Dynamic"


def test_the_vault_admits_the_controller_subnet_alone_and_the_controller_alone_holds_a_role_on_it() -> None:
    vault = one(PLAN, "azure-native:keyvault:Vault", "hpc-slurm-vault-vault")
    assert vault.protect is False  # the blueprint protects nothing outside prod
    props = vault.inputs["properties"]
    assert props["enableRbacAuthorization"] is True
    assert props["softDeleteRetentionInDays"] == 7
    assert props["networkAcls"] == {
        "bypass": "None",
        "defaultAction": "Deny",
        "virtualNetworkRules": [{"id": "hpc-net-controller-id"}],
    }
    on_vault = [r for r in all_of(PLAN, ROLE) if r.inputs["scope"] == "hpc-slurm-vault-vault-id"]
    controller = one(PLAN, ROLE, "hpc-slurm-controller-bundle-reader").inputs["principalId"]
    assert [(r.name, r.inputs["roleDefinitionId"], r.inputs["principalId"]) for r in on_vault] == [
        (
            "hpc-slurm-vault-controller-secrets",
            # Key Vault Secrets Officer
            f"{SUBSCRIPTION}roleDefinitions/b86a8fe4-44ce-4948-aee5-eccb2c155cd7",
            controller,
        )
    ]
    assert controller != one(PLAN, ROLE, "hpc-nodes-bundle-reader").inputs["principalId"]


def test_the_controller_subnet_reaches_the_bucket_and_the_vault_through_service_endpoints() -> None:
    controller = one(PLAN, SUBNET, "hpc-net-controller").inputs
    assert controller["addressPrefix"] == "10.20.16.0/20"
    assert controller["serviceEndpoints"] == [
        {"service": "Microsoft.Storage"},
        {"service": "Microsoft.KeyVault"},
    ]
    account = one(PLAN, "azure-native:storage:StorageAccount").inputs
    assert [r["virtualNetworkResourceId"] for r in account["networkRuleSet"]["virtualNetworkRules"]] == [
        "hpc-net-nodes-id",
        "hpc-net-controller-id",
    ]


def test_each_scale_set_carries_its_fabric_unit_and_the_nodes_join_slurm_by_it() -> None:
    sets = {r.name: r.inputs for r in all_of(PLAN, "azure-native:compute:VirtualMachineScaleSet")}
    assert {name: inputs["tags"]["clusterfab-fabric-unit"] for name, inputs in sets.items()} == {
        "hpc-h100-0-vmss": "h100-0",
        "hpc-h100-1-vmss": "h100-1",
    }
    script = base64.b64decode(sets["hpc-h100-0-vmss"]["virtualMachineProfile"]["userData"]).decode()
    node = boot_vars(script)
    assert (node["slurm_node_name_source"], node["slurm_node_name_tag"]) == (
        "azure",
        "clusterfab-fabric-unit",
    )
    assert (node["munge_key_source"], node["munge_key_server"]) == ("controller", "10.20.16.10")
    assert node["slurm_node_conf_server"] == "10.20.16.10:6817"


def test_the_controller_keeps_the_munge_key_in_the_vault_and_runs_the_node_sync() -> None:
    script = _script(one(PLAN, VM, "hpc-slurm-controller").inputs)
    host = boot_vars(script)
    assert (host["munge_key_source"], host["munge_key_generate"], host["munge_key_serve"]) == (
        "azure",
        True,
        True,
    )
    assert host["munge_key_secret"] == "clusterfab-hpc-plan-munge-key"
    assert host["munge_key_vault_url"] == "https://hpc-slurm-vault-vault.vault.azure.net/"
    # The controller identity's client id, as the plan engine's mock gives it (a UUID of its name).
    assert host["munge_key_client_id"] == "0d1a7d49-ba2c-5273-8bd4-a3e81a6c0f47"
    assert host["slurm_controller_nodes_lib"].endswith("/lib")
    # The node sync's token is the controller identity's, the one the scale sets' grants name.
    assert host["slurm_controller_client_id"] == host["munge_key_client_id"]
    assert host["slurm_controller_node_claims"] is True
    assert host["slurm_controller_state_device_name"] == "/dev/disk/azure/data/by-lun/0"


def test_the_stack_exports_the_controller_for_health_runs() -> None:
    scheduler = PLAN.outputs["scheduler"]
    assert (scheduler["kind"], scheduler["controller"], scheduler["controller_address"]) == (
        "slurm",
        "hpc-slurm-controller-id",
        "10.20.16.10",
    )
    assert scheduler["login"] == ["hpc-slurm-login-0-id"]
    assert (
        scheduler["munge_secret"]
        == "https://hpc-slurm-vault-vault.vault.azure.net/secrets/clusterfab-hpc-plan-munge-key"
    )


def _controller_file(plan: Plan, name: str) -> str:
    """A file of the controller's archive (what its boot fetches from the bucket)."""
    from tests.components.harness import stacks_module
    from tests.conftest import REPO

    key = one(plan, "azure-native:storage:Blob", "hpc-artifacts-files").inputs["blobName"]
    archive = REPO / stacks_module("cluster").BUNDLE_CACHE / f"slurm-{key.removeprefix('slurm/')}"
    with tarfile.open(archive) as tar:
        member = tar.extractfile(name)
        assert member is not None
        return member.read().decode()


def _nodesync_config(plan: Plan | None = None) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(_controller_file(plan or PLAN, "nodesync.json"))
    return config


def test_the_node_sync_finds_each_fabric_unit_by_its_tag_and_keeps_it_at_its_size() -> None:
    """150 ND H100 v5 nodes: two scale sets of 75 (at most 100 with a single placement group, balanced)."""
    assert _nodesync_config() == {
        "cloud": "azure",
        "groups": {"h100": {"static": 150, "size": 150}},
        "blueprint": "hpc",
        "stack": "plan",
        "region": "southcentralus",
        "zone": "1",
        "units": {
            "h100-0": {"group": "h100", "first": 0, "nodes": 75, "static": 75},
            "h100-1": {"group": "h100", "first": 75, "nodes": 75, "static": 75},
        },
    }


ELASTIC = BLUEPRINT.replace("    count: 150\n", "    autoscaling: {min: 2, max: 6}\n")


def test_an_elastic_group_has_an_always_up_unit_and_an_elastic_one_that_slurm_sizes() -> None:
    plan = plan_text(ELASTIC, None)
    sets = {r.name: r for r in all_of(plan, "azure-native:compute:VirtualMachineScaleSet")}
    assert {name: (r.inputs["sku"]["capacity"], r.ignore_changes) for name, r in sets.items()} == {
        "hpc-h100-0-vmss": (2, ()),
        # The resume program grows it and the suspend program shrinks it: a deploy leaves it alone.
        "hpc-h100-1-vmss": (0, ("sku.capacity",)),
    }
    conf = _controller_file(plan, "slurm.conf").splitlines()
    hardware = "CPUs=96 RealMemory=1848320 Gres=gpu:h100:8"  # as the static group renders it
    assert [line for line in conf if line.startswith("NodeName=")] == [
        f"NodeName=h100-[0-1] {hardware} Feature=h100-0 State=UNKNOWN",
        f"NodeName=h100-[2-5] {hardware} Feature=h100-1 State=CLOUD",
    ]
    assert "SuspendExcNodes=h100-[0-1]" in conf
    assert "ResumeProgram=/usr/local/sbin/clusterfab-slurm-resume" in conf
    assert _nodesync_config(plan)["units"] == {
        "h100-0": {"group": "h100", "first": 0, "nodes": 2, "static": 2},
        "h100-1": {"group": "h100", "first": 2, "nodes": 4, "static": 0},
    }
    assert _nodesync_config(plan)["groups"] == {"h100": {"static": 2, "size": 6}}
    # No switch joins the two units: a job runs on always-up nodes or on elastic ones.
    topology = _controller_file(plan, "topology.conf").splitlines()
    assert [line for line in topology if line.startswith("SwitchName=")] == [
        "SwitchName=h100-0 Nodes=h100-[0-1]",
        "SwitchName=h100-1 Nodes=h100-[2-5]",
    ]


DEPLOYER = "c7ba6e8c-84c8-5b4d-b32e-cd41724dfc37"
"""The plan engine's mock deployer (getClientConfig's objectId: a UUID of its name)."""


def test_a_bastion_in_its_own_subnet_reaches_the_controller_named_where_dashboard_looks() -> None:
    """`clusterfab dashboard` tunnels to Grafana over the Bastion's native client SSH (clouds/azure/access.py
    looks for `<resource group>-bastion`); its subnet is the first /26 of the cluster range's last block,
    clear of the Lustre subnets."""
    bastion = one(PLAN, "azure-native:network:BastionHost", "hpc-bastion-host").inputs
    assert (bastion["bastionHostName"], bastion["sku"], bastion["enableTunneling"]) == (
        "clusterfab-hpc-plan-bastion",
        {"name": "Standard"},
        True,
    )
    assert bastion["ipConfigurations"][0]["subnet"] == {"id": "hpc-net-bastion-id"}
    subnet = one(PLAN, SUBNET, "hpc-net-bastion").inputs
    assert (subnet["subnetName"], subnet["addressPrefix"]) == ("AzureBastionSubnet", "10.20.240.0/26")


def test_the_deployer_signs_in_to_the_controller_with_entra_id_and_its_programs_keep_their_identity() -> None:
    """Entra sign-in needs the VM's system-assigned identity, which the metadata service then picks by
    default: the controller's tag names the client id of its own identity (the boot script, the node
    programs and the report upload name it); the system-assigned identity gets the group's Reader alone,
    for Prometheus' discovery, whose configuration is written before any identity exists."""
    controller = one(PLAN, VM, "hpc-slurm-controller").inputs
    host = boot_vars(_script(controller))
    assert controller["identity"]["type"] == "SystemAssigned, UserAssigned"
    assert controller["tags"]["clusterfab-identity"] == host["munge_key_client_id"]
    login = one(PLAN, VM, "hpc-slurm-login-0").inputs
    assert (login["identity"]["type"], "clusterfab-identity" in login["tags"]) == ("UserAssigned", False)
    extension = one(PLAN, "azure-native:compute:VirtualMachineExtension", "hpc-slurm-entra-login").inputs
    assert {k: v for k, v in extension.items() if k != "tags"} == {
        "autoUpgradeMinorVersion": True,
        "location": "southcentralus",
        "publisher": "Microsoft.Azure.ActiveDirectory",
        "resourceGroupName": "hpc-rg-rg",
        "type": "AADSSHLoginForLinux",
        "typeHandlerVersion": "1.0",
        "vmExtensionName": "AADSSHLoginForLinux",
        "vmName": "hpc-slurm-controller",
    }
    admin = one(PLAN, ROLE, "hpc-slurm-admin-login").inputs
    assert (admin["scope"], admin["roleDefinitionId"], admin["principalId"], admin["principalType"]) == (
        "hpc-slurm-controller-id",
        # Virtual Machine Administrator Login
        f"{SUBSCRIPTION}roleDefinitions/1c0163c0-47e6-4577-8991-ea5c82e286e4",
        DEPLOYER,
        "User",
    )
    reader = one(PLAN, ROLE, "hpc-slurm-system-reader").inputs
    assert (reader["scope"], reader["roleDefinitionId"].rpartition("/")[2]) == (
        one(PLAN, ROLE, "hpc-controller-access-reader").inputs["scope"],
        "acdd72a7-3385-48ef-bd42-f606fba81ae7",  # Reader
    )
    assert reader["principalId"] not in {
        admin["principalId"],
        one(PLAN, ROLE, "hpc-controller-access-reader").inputs["principalId"],
    }
