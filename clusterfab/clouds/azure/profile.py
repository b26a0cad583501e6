"""Azure: region names, numbered zones, tag rules, Azure Managed Lustre tiers, InfiniBand scale sets, and
hosts reached with the `az` CLI (Run Command, Bastion)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from clusterfab import addressing
from clusterfab.blueprint.models import LustreSpec
from clusterfab.catalog.azure_models import AzureMachineType
from clusterfab.clouds.azure import access, blob, discovery, fabric, hostvars, store, vault
from clusterfab.clouds.azure.mocks import PLAN_MOCKS
from clusterfab.clouds.base import FabricUnit, FieldProblem, MachineNaming
from clusterfab.core.findings import FieldPath, Severity
from clusterfab.core.hints import listing
from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    INVENTORY_GROUP_PREFIX,
    NODE_GROUP_TAG,
    STACK_TAG,
    Cloud,
    StorageKind,
    label_value,
)

if TYPE_CHECKING:
    from ipaddress import IPv4Network

    from clusterfab.blueprint.models import Blueprint
    from clusterfab.catalog import Catalog
    from clusterfab.catalog.models import MachineType
    from clusterfab.outputs import StackOutputs

TAG_NAME_MAX = 128
TAG_VALUE_MAX = 256
TAG_NAME_FORBIDDEN = frozenset("<>%&\\?/")
"""Azure tags (learn.microsoft.com/azure/azure-resource-manager/management/tag-resources#limitations; catalog
source S-AZ-TAGS): a name has at most 512 characters, 128 on a storage account (the cluster's bucket carries
the cluster's tags, so 128 everywhere), and none of < > % & \\ ? /; a value at most 256 characters."""
_KEY_URL = re.compile(
    r"^https://(?P<vault>[a-zA-Z][a-zA-Z0-9-]{1,22}[a-zA-Z0-9])\.vault\.azure\.net/keys/[A-Za-z0-9-]{1,127}$"
)
"""A Key Vault key, without a version (the disk encryption set follows the key's rotation): vault names are
3-24 letters, digits and dashes starting with a letter."""
_RESERVATION = re.compile(
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]{1,90}/providers/Microsoft\.Compute/"
    r"capacityReservationGroups/[-\w.]{1,80}$"
)

SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"
"""A virtual machine scale set: one fabric unit of a node group's nodes (replacing one recreates them)."""


class AzureProfile:
    """The Azure profile (see clusterfab.clouds.base.CloudProfile)."""

    name: Cloud = "azure"
    title = "Azure"
    zone_example = '"1" (a zone of the blueprint\'s region)'
    lustre_product = "Azure Managed Lustre"
    reserved_addresses = 5
    """Azure keeps the first four and the last address of every subnet (catalog source S-AZ-VNET)."""
    reserved_capacity_is_placed = False
    offers_tpus = False
    provider_region_setting = "azure-native:location"
    stack_settings: tuple[str, ...] = (discovery.SUBSCRIPTION_SETTING,)
    reservation_example = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/my-group/providers/"
        "Microsoft.Compute/capacityReservationGroups/my-reservations"
    )
    reservation_format = "a capacity reservation group's resource id"
    kms_key_example = "https://my-vault.vault.azure.net/keys/my-key"
    inventory_plugin = "azure.azcollection.azure_rm"
    inventory_collection = "azure.azcollection"
    inventory_suffix = ".azure_rm.yml"
    host_access_tools = ("az",)
    stack_names: Mapping[str, str] = MappingProxyType({})
    """None: the realizer names its resources inside the stack's own resource group."""

    def reservation_valid(self, value: str) -> bool:
        return _RESERVATION.fullmatch(value) is not None

    def kms_key_problems(self, key: str, *, region: str, disk: bool) -> Iterator[FieldProblem]:
        """A Key Vault key URL without a version (its vault's region cannot be read from the URL); and any
        key at all is refused for now (BP234): the realizer builds no disk encryption set or
        customer-managed storage encryption, and a key it ignored would leave the data under platform keys
        while the blueprint says otherwise."""
        del region, disk
        if _KEY_URL.fullmatch(key) is None:
            yield FieldProblem(
                (),
                f"'{key}' is not a Key Vault key URL",
                f"write https://<vault>.vault.azure.net/keys/<key> (no version), e.g. {self.kms_key_example}",
            )
            return
        yield FieldProblem(
            (),
            "clusterfab does not encrypt with customer-managed keys on Azure yet: this key would be ignored",
            "remove kms_key: Azure encrypts managed disks and storage with platform keys, and the hosts use "
            "encryption at host",
            code="BP234",
        )

    def secret_problems(self, secret: str, *, region: str, project: str | None) -> Iterator[FieldProblem]:
        """A Key Vault secret's resource id: the controller's identity gets a role on that one secret (a
        name alone says neither the vault nor where to grant it)."""
        del region, project
        if vault.vault_secret(secret) is None:
            yield FieldProblem(
                (),
                f"'{secret}' is not a Key Vault secret's resource id",
                "write /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.KeyVault/vaults/"
                "<vault>/secrets/<name> (`echo $(az keyvault show --name VAULT --query id -o tsv)/secrets/"
                f"NAME`), e.g. {vault.SECRET_ID_EXAMPLE}",
            )

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        return catalog.azure.machine_types

    def region_of_zone(self, catalog: Catalog, zone: str) -> str | None:
        del catalog, zone  # an Azure zone is a number within its region: see numbered_zones
        return None

    def numbered_zones(self, catalog: Catalog, region: str) -> list[str]:
        """The zones of `region` ("1", "2", "3"; none where the region has no availability zones), read by
        clusterfab.clouds.base.zone_region."""
        return list(catalog.azure.regions.zones.get(region, []))

    def regions(self, catalog: Catalog) -> set[str]:
        found = set(catalog.azure.regions.zones)
        for machine in catalog.azure.machine_types.values():
            found |= set(machine.regions)
        return found

    def budget_problems(
        self, *, cluster: str, stack: str | None, billing_account: str | None, activate_cost_tags: bool
    ) -> Iterator[FieldProblem]:
        return iter(())  # the Azure realizer (stacks/azure) decides how its budget counts; nothing to set

    def label_problems(self, key: str, value: str) -> Iterator[FieldProblem]:
        forbidden = sorted(TAG_NAME_FORBIDDEN & set(key))
        if not 1 <= len(key) <= TAG_NAME_MAX:
            yield FieldProblem(
                (),
                f"tag name of {len(key)} characters",
                f"Azure tag names on a storage account have 1 to {TAG_NAME_MAX} characters",
                at_key=True,
            )
        elif forbidden:
            yield FieldProblem(
                (),
                f"tag name {key!r} has characters Azure does not take in a tag name: {' '.join(forbidden)}",
                "Azure tag names may not contain < > % & \\ ? /",
                at_key=True,
            )
        if len(value) > TAG_VALUE_MAX:
            yield FieldProblem(
                (), f"tag value is longer than {TAG_VALUE_MAX} characters", f"shorten it to {TAG_VALUE_MAX}"
            )

    def storage_kinds(self) -> tuple[StorageKind, ...]:
        return ("lustre",)

    def lustre_tier(self, deployment: str, throughput_mbps_per_tib: int | None) -> str | None:
        del deployment  # AMLFS tiers are throughputs
        if throughput_mbps_per_tib is None:
            return None
        return f"AMLFS-Durable-Premium-{throughput_mbps_per_tib}"

    def storage_title(self, kind: StorageKind, tier: str) -> str:
        return f"Azure Managed Lustre {tier}"

    def foreign_fields(self, blueprint: Blueprint) -> Iterator[FieldProblem]:
        if blueprint.project is not None:
            yield FieldProblem(
                ("project",),
                "project is a GCP setting",
                "remove it; the Azure subscription comes from your Azure credentials",
                at_key=True,
            )
        for index, group in enumerate(blueprint.node_groups):
            if group.placement_max_distance is not None:
                yield FieldProblem(
                    ("node_groups", index, "placement_max_distance"),
                    "placement_max_distance is a GCP setting",
                    "remove it; an Azure InfiniBand fabric is one scale set",
                    at_key=True,
                )
        for index, _ in enumerate(blueprint.tpu_slices):
            yield FieldProblem(
                ("tpu_slices", index), "TPU slices exist only on GCP", "set cloud: gcp, or remove tpu_slices"
            )
        for index, storage in enumerate(blueprint.storage):
            if isinstance(storage, LustreSpec):
                yield from _foreign_lustre(index, storage)

    def fabric_subnets(self, machine: MachineType) -> int:
        del machine  # InfiniBand is a network of its own, with no subnet in the cluster's range
        return 0

    def fabric_subnets_available(self, catalog: Catalog) -> int:
        del catalog
        return addressing.BLOCKS

    def node_selector(self, cluster: str, stack: str) -> dict[str, str]:
        # Tag names and values, as Azure Resource Graph and the inventory plugin filter on them.
        return {BLUEPRINT_TAG: cluster, STACK_TAG: label_value(stack)}

    def inventory(self, outputs: StackOutputs) -> dict[str, Any]:
        conditions = [f"tags['{key}'] == '{value}'" for key, value in outputs.node_selector.items()]
        return {
            "plugin": self.inventory_plugin,
            "auth_source": "cli",
            "include_vm_resource_groups": [],
            "include_vmss_resource_groups": ["*"],
            "include_host_filters": [" and ".join(conditions)],
            "plain_host_names": True,
            "keyed_groups": [
                {"key": f"tags['{NODE_GROUP_TAG}']", "prefix": INVENTORY_GROUP_PREFIX, "separator": "_"}
            ],
            "compose": {
                # No public IPs: push mode reaches the private addresses (through the stack's Bastion or
                # a network route of the operator's).
                "ansible_host": "private_ipv4_addresses[0]",
                "ansible_become": "true",
            },
        }

    # At run time (see CloudProfile): the modules beside this one.
    health_store = staticmethod(store.health_store)
    run_command = staticmethod(access.run_command)
    report_channel = staticmethod(access.report_channel)
    forward_port = staticmethod(access.forward_port)
    scrape_discovery = staticmethod(discovery.scrape_discovery)
    discovery_needs_project = True
    """The subscription the nodes live in (Azure service discovery lists one subscription's VMs)."""
    service_location = staticmethod(hostvars.service_location)
    instance_location = staticmethod(hostvars.instance_location)
    controller_state_device = hostvars.CONTROLLER_STATE_DEVICE

    def slurm_units(
        self, group: str, machine: MachineType, count: int, static: int
    ) -> tuple[FabricUnit, ...] | None:
        """A scale set's VMs cannot carry tags of their own (Uniform instances take no resource tags), so
        no node sync can name them: each VM joins as a free node of its scale set's unit."""
        return fabric.named_units(group, machine, count, static)

    def host_subnet(self, cidr: str) -> IPv4Network:
        """The controller subnet (the range's second block): the Slurm controller and login hosts."""
        return addressing.blocks(cidr)[hostvars.CONTROLLER_BLOCK]

    # --- What the catalog, the rules, the policy pack and the plan engine ask per cloud -----------

    def offering_problems(self, machine: MachineType, *, region: str, zone: str) -> Iterator[FieldProblem]:
        """By region only: no stored source lists an ND size's regions or zones."""
        del zone
        if not isinstance(machine, AzureMachineType):
            return
        note = machine.unconfirmed.get("regions")
        if not machine.regions:
            hint = note or "check availability before deploying"
            yield FieldProblem(
                (), f"the catalog lists no regions for {machine.name}", hint, severity=Severity.WARNING
            )
        elif region not in machine.regions:
            yield FieldProblem(
                (),
                f"{machine.name} is not offered in {region}",
                f"regions offering it: {listing(sorted(machine.regions))}",
            )

    def compact_placement_problems(
        self, machine: MachineType, *, size: int, max_distance: int | None, size_field: FieldPath
    ) -> Iterator[FieldProblem]:
        return iter(())  # a fabric unit is a scale set; its limit is rule BP225's (clusterfab.rules.azure)

    database_machine = MachineNaming(
        re.compile(r"Standard_[BDE][A-Za-z0-9]*(_v\d+)?"),
        "an Azure Database for MySQL flexible server SKU (Standard_B..., Standard_D..., Standard_E...)",
        "Standard_D2ads_v5",
    )
    """SKU names as the service's compute tiers list them: B for Burstable, D for General Purpose, E for
    Memory-Optimized (catalog source S-AZ-MYSQL; clusterfab.clouds.azure.database.mysql_tier)."""

    node_group_types = (SCALE_SET,)
    capacity_types: Mapping[str, bool] = MappingProxyType({SCALE_SET: False})
    plan_mocks = PLAN_MOCKS


def _blob_prerequisites(base: FieldPath, found: blob.BlobImport) -> FieldProblem:
    """What the operator's storage account must allow before `up` (learn.microsoft.com/azure/
    azure-managed-lustre/amlfs-prerequisites): the HPC Cache Resource Provider holds Storage Account
    Contributor and Storage Blob Data Contributor on it, which a stack cannot grant (the provider's
    service principal has an object id of its own in each tenant), and it creates SAS tokens, so the
    account allows shared key access. The stack makes the logging container beside the data one."""
    account, scope = found.account, found.account_id
    return FieldProblem(
        (*base, "import_path"),
        f"Azure Managed Lustre imports {found.container}{found.prefix if found.prefix != '/' else ''} from "
        f"storage account {account}, where the stack makes a container for its logs: the account must "
        "let the HPC Cache Resource Provider in first",
        f"`az role assignment create --assignee {blob.HPC_CACHE_PROVIDER_APP} --role 'Storage Account "
        f"Contributor' --scope {scope}`, the same with 'Storage Blob Data Contributor', and `az storage "
        f"account update --name {account} --allow-shared-key-access true`; `up` fails until they exist",
        code="BP256",
        severity=Severity.INFO,
    )


def _foreign_lustre(index: int, storage: LustreSpec) -> Iterator[FieldProblem]:
    base = ("storage", index)
    if storage.import_path is not None:
        found = blob.blob_import(storage.import_path)
        if found is None:
            yield FieldProblem(
                (*base, "import_path"),
                f"'{storage.import_path}' is not a Blob container's resource id: Azure Managed Lustre "
                "imports from a Blob container",
                "write /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Storage/"
                "storageAccounts/<account>/blobServices/default/containers/<container>, optionally followed "
                "by /<prefix>, "
                f"e.g. {blob.CONTAINER_PATH_EXAMPLE}",
                code="BP255",
            )
        else:
            yield _blob_prerequisites(base, found)
    if storage.efa:
        yield FieldProblem(
            (*base, "efa"), "efa (an EFA-enabled FSx file system) is an AWS setting", "remove it", at_key=True
        )
    if storage.export_changes:
        yield FieldProblem(
            (*base, "export_changes"),
            "export_changes (back to an S3 data repository) is an AWS setting",
            "remove it",
            at_key=True,
        )
    if storage.deployment == "scratch":
        yield FieldProblem(
            (*base, "deployment"),
            "Azure Managed Lustre has no scratch deployment",
            "remove `deployment`; pick a throughput tier instead",
        )
