"""GCP: zone names, reservation paths, label rules, Managed Lustre tiers, extra GPU networks, IAP."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from clusterfab import addressing
from clusterfab.blueprint.models import LustreSpec
from clusterfab.catalog.models import GcpMachineType
from clusterfab.clouds.base import FabricUnit, FieldProblem, MachineNaming, ReportChannel, zone_problems
from clusterfab.clouds.gcp import access, discovery, hostvars, store
from clusterfab.clouds.gcp.mocks import PLAN_MOCKS
from clusterfab.core.findings import FieldPath, Severity
from clusterfab.core.naming import GCP_STACK_NAMES
from clusterfab.core.vocab import (
    BILLING_ACCOUNT_KEY,
    BLUEPRINT_TAG,
    CONFIG_NAMESPACE,
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

_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
_RESERVATION = re.compile(
    r"(projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
    r"(/reservationBlocks/[a-z0-9-]+(/reservationSubBlocks/[a-z0-9-]+)?)?"
)
_SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
"""A Secret Manager secret id: at most 255 letters, digits, - and _ (secretmanager.v1 CreateSecretRequest:
"a string with a maximum length of 255 characters and can contain uppercase and lowercase letters,
numerals, and the hyphen (-) and underscore (_) characters")."""
_SECRET_PATH = re.compile(r"^projects/(?P<project>[^/]+)/secrets/(?P<name>[^/]+)$")
_KMS_KEY = re.compile(
    r"projects/[^/]+/locations/(?P<location>[a-z0-9-]+)/keyRings/[A-Za-z0-9_-]{1,63}"
    r"/cryptoKeys/[A-Za-z0-9_-]{1,63}"
)
"""A Cloud KMS key's resource name (key ring and key ids: letters, digits, _ and -, at most 63)."""
IAP_SOURCE_RANGE = "35.235.240.0/20"
"""Where Identity-Aware Proxy's TCP forwarding connects from (the firewall allows SSH only from it)."""


BILLING_ACCOUNT_EXAMPLE = "XXXXXX-XXXXXX-XXXXXX"
"""The form of a Cloud Billing account id (three groups of six hexadecimal digits)."""


INSTANCE_GROUP_MANAGER = "gcp:compute/instanceGroupManager:InstanceGroupManager"
"""A managed instance group: the instance group of a node group's nodes."""
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
"""A GKE node pool: a Kubernetes cluster's node group, or one TPU slice."""
TPU_QUEUED_RESOURCE = "pulumi-python:dynamic/gcp-tpu:QueuedResource"
"""A Cloud TPU queued resource: a multislice request (components/gcp/_queued_resource.py)."""
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
"""A single-host TPU slice's VM."""


class GcpProfile:
    """The GCP profile (see clusterfab.clouds.base.CloudProfile)."""

    name: Cloud = "gcp"
    title = "GCP"
    zone_example = "us-central1-a"
    lustre_product = "Managed Lustre"
    reserved_addresses = 4
    reserved_capacity_is_placed = False
    offers_tpus = True
    provider_region_setting = "gcp:region"
    stack_settings: tuple[str, ...] = ()
    reservation_example = "my-reservation"
    reservation_format = "a reservation name or projects/PROJECT/reservations/NAME"
    kms_key_example = "projects/my-project/locations/us-central1/keyRings/my-ring/cryptoKeys/my-key"
    inventory_plugin = "google.cloud.gcp_compute"
    inventory_collection = "google.cloud"
    inventory_suffix = ".gcp.yml"
    host_access_tools = ("gcloud",)
    stack_names = GCP_STACK_NAMES

    def reservation_valid(self, value: str) -> bool:
        return _RESERVATION.fullmatch(value) is not None

    def kms_key_problems(self, key: str, *, region: str, disk: bool) -> Iterator[FieldProblem]:
        """A key (not a key version: the services use its primary version and follow its rotation) in the
        resource's region: Managed Lustre ("The key must be in the same region as the instance", pulumi-gcp
        lustre.Instance kms_key), Filestore and Cloud Storage (cloud.google.com/filestore/docs/cmek,
        cloud.google.com/storage/docs/encryption/customer-managed-keys: the key's location matches the
        data's). Disks also take a global key (`gcloud compute disks update-kms-key`'s own example moves a
        zonal disk to a key with --kms-location=global)."""
        example = self.kms_key_example.replace("us-central1", region)
        if "/cryptoKeyVersions/" in key:
            yield FieldProblem(
                (),
                f"'{key}' names a key version, not a key",
                f"name the key: {key.split('/cryptoKeyVersions/', 1)[0]}",
            )
        elif (match := _KMS_KEY.fullmatch(key)) is None:
            yield FieldProblem(
                (),
                f"'{key}' is not a Cloud KMS key name",
                f"write projects/<project>/locations/{region}/keyRings/<ring>/cryptoKeys/<key>, e.g. "
                f"{example}",
            )
        elif match["location"] != region and not (disk and match["location"] == "global"):
            where = f"{region} or global" if disk else region
            yield FieldProblem(
                (),
                f"the key is in {match['location']}, where this resource cannot use it",
                f"use a key ring in {where} (the blueprint's region)",
            )

    def secret_problems(self, secret: str, *, region: str, project: str | None) -> Iterator[FieldProblem]:
        """A Secret Manager secret id, or projects/PROJECT/secrets/ID of the blueprint's project (the host
        asks for the secret in the project it runs in). The host's IAM binding is on that one secret."""
        del region  # a secret is a project's, replicated to the locations its policy names
        match = _SECRET_PATH.match(secret)
        name = match["name"] if match else secret
        if match is None and secret.startswith("projects/"):
            yield FieldProblem(
                (),
                f"'{secret}' is not a Secret Manager secret",
                "write projects/<project>/secrets/<name>, or the secret's name",
            )
        elif _SECRET_ID.match(name) is None:
            yield FieldProblem(
                (),
                f"'{name}' is not a Secret Manager secret name",
                "a name has 1-255 letters, digits, - and _ (no wildcard: the host may read exactly this "
                "secret)",
            )
        elif match is not None and project is not None and match["project"] != project:
            yield FieldProblem(
                (),
                f"the secret is in project {match['project']}, not in the blueprint's project {project}",
                f"use a secret of {project}, or write its name alone",
            )

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        return catalog.gcp_machine_types

    def region_of_zone(self, catalog: Catalog, zone: str) -> str | None:
        del catalog  # a GCP zone is its region plus a one-letter suffix
        region, _, suffix = zone.rpartition("-")
        return region if region and len(suffix) == 1 else None

    def regions(self, catalog: Catalog) -> set[str]:
        zones = {z for m in catalog.gcp_machine_types.values() for z in m.zones}
        zones |= {z for g in catalog.tpu_generations.values() for z in g.zones}
        return {r for z in zones if (r := self.region_of_zone(catalog, z))}

    def budget_problems(
        self, *, cluster: str, stack: str | None, billing_account: str | None, activate_cost_tags: bool
    ) -> Iterator[FieldProblem]:
        setting = f"{CONFIG_NAMESPACE}:{BILLING_ACCOUNT_KEY}"
        if stack is None:
            yield FieldProblem(
                ("budget",),
                f"a GCP budget is created under the billing account the stack names ({setting}); a stack "
                "without it gets no budget and no budget alerts",
                f"`pulumi config set {setting} {BILLING_ACCOUNT_EXAMPLE} --stack STACK`; "
                "`clusterfab validate --stack STACK` checks a stack's settings",
                at_key=True,
                code="BP410",
                severity=Severity.INFO,
            )
        elif not billing_account:
            yield FieldProblem(
                ("budget",),
                f"stack {stack} names no billing account ({setting}): `pulumi up` creates no GCP budget, and "
                "nothing alerts when the spend passes it",
                f"`pulumi config set {setting} {BILLING_ACCOUNT_EXAMPLE} --stack {stack}` with the id of the "
                "billing account that pays for the project",
                at_key=True,
                code="BP410",
            )

    def label_problems(self, key: str, value: str) -> Iterator[FieldProblem]:
        if not _LABEL_KEY.fullmatch(key):
            yield FieldProblem(
                (),
                f"label key '{key}' is not a valid GCP label key",
                "lowercase letters, digits, _ and -, starting with a letter, at most 63 characters",
                at_key=True,
            )
        if not _LABEL_VALUE.fullmatch(value):
            yield FieldProblem(
                (),
                f"label value '{value}' is not a valid GCP label value",
                "lowercase letters, digits, _ and -, at most 63 characters",
            )

    def storage_kinds(self) -> tuple[StorageKind, ...]:
        return ("lustre", "filestore")

    def lustre_tier(self, deployment: str, throughput_mbps_per_tib: int | None) -> str | None:
        del deployment  # Managed Lustre tiers are throughputs
        return None if throughput_mbps_per_tib is None else str(throughput_mbps_per_tib)

    def storage_title(self, kind: StorageKind, tier: str) -> str:
        return f"Filestore {tier}" if kind == "filestore" else f"Managed Lustre tier {tier}"

    def foreign_fields(self, blueprint: Blueprint) -> Iterator[FieldProblem]:
        for index, storage in enumerate(blueprint.storage):
            if not isinstance(storage, LustreSpec):
                continue
            if storage.import_path is not None:
                yield FieldProblem(
                    ("storage", index, "import_path"),
                    "import_path (an S3 or Blob data set linked at creation) is an AWS and Azure setting",
                    "remove it; load data into Managed Lustre from Cloud Storage instead",
                    at_key=True,
                )
            if storage.efa:
                yield FieldProblem(
                    ("storage", index, "efa"),
                    "efa (an EFA-enabled FSx file system) is an AWS setting",
                    "remove it",
                    at_key=True,
                )
            if storage.export_changes:
                yield FieldProblem(
                    ("storage", index, "export_changes"),
                    "export_changes (back to an S3 data repository) is an AWS setting",
                    "remove it",
                    at_key=True,
                )
            if storage.deployment == "scratch":
                yield FieldProblem(
                    ("storage", index, "deployment"),
                    "GCP Managed Lustre has no scratch deployment",
                    "remove `deployment`; pick a throughput tier instead",
                )

    def fabric_subnets(self, machine: MachineType) -> int:
        # One subnet per extra GPU VPC (TCPX / TCPXO) or per RDMA NIC (RoCE).
        if not isinstance(machine, GcpMachineType):
            return 0
        return machine.network.gpu_vpcs + machine.network.rdma_subnets

    def fabric_subnets_available(self, catalog: Catalog) -> int:
        # Every machine's general networks take their slots whether or not a group uses them.
        general = max(m.network.general_vpcs for m in catalog.gcp_machine_types.values())
        return addressing.gcp_fabric_slots(general)

    def node_selector(self, cluster: str, stack: str) -> dict[str, str]:
        # The keys are instances.list filter terms.
        return {f"labels.{BLUEPRINT_TAG}": cluster, f"labels.{STACK_TAG}": label_value(stack)}

    def inventory(self, outputs: StackOutputs) -> dict[str, Any]:
        project, zone = outputs.blueprint.project, outputs.blueprint.zone
        filters = [f"{key} = {value}" for key, value in outputs.node_selector.items()]
        tunnel = (
            f'-o ProxyCommand="gcloud compute start-iap-tunnel %h 22 --listen-on-stdin '
            f'--project={project} --zone={zone}"'
        )
        return {
            "plugin": self.inventory_plugin,
            "projects": [project],
            "zones": [zone],
            "filters": filters,
            "auth_kind": "application",
            "hostnames": ["name"],
            "keyed_groups": [
                {"key": f"labels['{NODE_GROUP_TAG}']", "prefix": INVENTORY_GROUP_PREFIX, "separator": "_"}
            ],
            "compose": {
                "ansible_host": "name",
                # Nodes have no external IP; IAP forwards SSH to the internal address (the firewall
                # allows port 22 only from IAP_SOURCE_RANGE).
                "ansible_ssh_common_args": f"'{tunnel}'",
                "ansible_become": "true",
            },
        }

    # At run time (see CloudProfile): the modules beside this one.
    health_store = staticmethod(store.health_store)
    run_command = staticmethod(access.run_command)
    forward_port = staticmethod(access.forward_port)
    scrape_discovery = staticmethod(discovery.scrape_discovery)
    discovery_needs_project = True
    service_location = staticmethod(hostvars.service_location)
    instance_location = staticmethod(hostvars.instance_location)
    controller_state_device = hostvars.CONTROLLER_STATE_DEVICE

    def slurm_units(
        self, group: str, machine: MachineType, count: int, static: int
    ) -> tuple[FabricUnit, ...] | None:
        return None  # the node sync names each instance

    def report_channel(self, outputs: StackOutputs) -> ReportChannel | None:
        return None  # the remote command's output carries the report

    def host_subnet(self, cidr: str) -> IPv4Network:
        return addressing.gcp_subnet(cidr, 0)  # general network 0: the nodes' and the controller's

    # --- What the catalog, the rules, the policy pack and the plan engine ask per cloud -----------

    def offering_problems(self, machine: MachineType, *, region: str, zone: str) -> Iterator[FieldProblem]:
        if isinstance(machine, GcpMachineType):
            note = machine.unconfirmed.get("zones")
            yield from zone_problems(machine.name, machine.zones, note, region=region, zone=zone)

    def compact_placement_problems(
        self, machine: MachineType, *, size: int, max_distance: int | None, size_field: FieldPath
    ) -> Iterator[FieldProblem]:
        if not isinstance(machine, GcpMachineType):
            return
        limits = machine.placement
        least = limits.min_max_distance
        if max_distance is not None and (least is None or max_distance < least):
            allowed = f"{least}-3" if least is not None else "none (it uses an accelerator topology)"
            yield FieldProblem(
                ("placement_max_distance",),
                f"{machine.name} does not support max distance {max_distance}",
                f"supported max distances: {allowed}",
            )
            return
        limit = limits.limit(max_distance)
        if size > limit:
            where = f" at max distance {max_distance}" if max_distance is not None else ""
            yield FieldProblem(
                size_field,
                f"compact placement holds at most {limit} {machine.name} VMs{where}; "
                f"the group can have {size}",
                "split the group, lower its size, or relax placement_max_distance",
            )

    database_machine = MachineNaming(
        re.compile(r"db-[a-z0-9]+(-[a-z0-9]+)*"), "a Cloud SQL machine type", "db-custom-4-16384"
    )

    node_group_types = (INSTANCE_GROUP_MANAGER,)
    # Instance templates are not here: the instance group applies a new one as nodes are recreated
    # (update policy OPPORTUNISTIC), never to running nodes.
    capacity_types: Mapping[str, bool] = MappingProxyType(
        {INSTANCE_GROUP_MANAGER: False, GKE_NODE_POOL: False, TPU_QUEUED_RESOURCE: True, TPU_VM: False}
    )
    plan_mocks = PLAN_MOCKS
