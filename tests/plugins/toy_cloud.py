"""The toy cloud: a CloudProfile written from scratch, and the catalog part that brings its machine
types and its rows of the catalog's tables: prices, images, ... (`register_cloud(..., catalog=)`). Its
parts of the nodes' boot script are `templates/cloud-toy.sh.j2` and `templates/files-toy.sh.j2`.

Its conventions are made up and small: zones are `<region>-<n>`, labels lowercase, reservations
`res-<digits>`, one storage kind, no TPUs, and a CLI `toyctl` that reaches hosts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from clusterfab import addressing
from clusterfab.catalog.models import Accelerator, LocalDisks, MachineType, OsImage, Price, SocketIfname
from clusterfab.clouds.base import (
    FabricUnit,
    FieldProblem,
    MachineNaming,
    PlanMocks,
    ReportChannel,
    StoredObject,
    zone_problems,
)
from clusterfab.core.findings import FieldPath
from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, STACK_TAG, StorageKind

if TYPE_CHECKING:
    from clusterfab.blueprint.models import Blueprint
    from clusterfab.catalog import Catalog
    from clusterfab.outputs import BlueprintOutput, StackOutputs
    from clusterfab.spec import ClusterSpec

NAME = "toy"
AS_OF = dt.date(2026, 11, 1)
_SOURCED: dict[str, Any] = {"source": ["toy-price-list"], "as_of": AS_OF, "confidence": "official"}
NODE_POOL = "toy:compute:NodePool"
"""The toy realizer's instance group: replacing one recreates its nodes."""


class ToyMachineType(MachineType):
    """A toy machine type: the zones that offer it are all it adds."""

    cloud: str = NAME
    zones: list[str]

    def listing(self, catalog: Catalog) -> dict[str, Any]:
        del catalog
        return {"locations": sorted(self.zones)}


MACHINE_TYPES: Mapping[str, MachineType] = MappingProxyType(
    {
        "toy.gpu8": ToyMachineType(
            name="toy.gpu8",
            accelerator=Accelerator(model="H100", architecture="hopper", count=8, memory_gib=80),
            vcpus=192,
            memory_gib=2048,
            cpu_architecture="x86_64",
            fabric="rdma",
            network_gbps=3200,
            nvswitch=True,
            purchase_options=["on_demand", "spot"],
            zones=["toy-east-1"],
            **_SOURCED,
        )
    }
)

_PRICES = {("toy.gpu8", "on_demand"): 20.0, ("toy.gpu8", "spot"): 8.0, ("toy.cpu4", "on_demand"): 0.25}


def rows() -> dict[str, tuple[Any, ...]]:
    """The toy's rows of the catalog's shared tables (clusterfab.catalog.parts.AddedPart)."""
    prices = tuple(
        Price(
            cloud=NAME,
            sku=sku,
            pricing_model=model,
            unit="hour",
            usd=usd,
            regions=["toy-east"],
            source="toy-price-list",
            as_of=AS_OF,
            confidence="official",
        )
        for (sku, model), usd in _PRICES.items()
    )
    image = OsImage(
        cloud=NAME,
        cpu_architecture="x86_64",
        image="toy-os-1",
        os="toy-os",
        root_device=None,
        **_SOURCED,
    )
    # What the GPU nodes' playbook variables read of the cloud (clusterfab.provision.extravars).
    disks = LocalDisks(cloud=NAME, patterns=["toy-nvme-*"], **_SOURCED)
    ifname = SocketIfname(machine_type="toy.gpu8", ifname="eth0", **_SOURCED)
    return {
        "prices": prices,
        "images": (image,),
        "local_disks": {NAME: disks},
        "socket_ifnames": {ifname.machine_type: ifname},
    }


def machine_types(catalog: Catalog) -> Mapping[str, MachineType]:
    del catalog  # the toy's machine types are its own; the catalog has no table for them
    return MACHINE_TYPES


_ZONE = re.compile(r"(?P<region>[a-z]+-[a-z]+)-\d")
_LABEL = re.compile(r"[a-z][a-z0-9-]{0,31}")
_LABEL_RULE = "lowercase letters, digits and -, starting with a letter, at most 32 characters"


class ToyStore:
    """A health store in memory: the toy cloud's bucket."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.objects: dict[str, StoredObject] = {}

    def location(self, key: str) -> str:
        return f"toy://{self.bucket}/{key}"

    def put(self, key: str, body: bytes) -> None:
        self.objects[key] = StoredObject(body, dt.datetime.now(dt.UTC), self.location(key))

    def get(self, key: str) -> StoredObject | None:
        return self.objects.get(key)


def _mock_outputs(typ: str, name: str) -> dict[str, Any]:
    return {"address": f"{name}.{typ.split(':')[1]}.toy.mock"}


class ToyProfile:
    """The toy cloud (see clusterfab.clouds.base.CloudProfile)."""

    name = NAME
    title = "Toy"
    zone_example = "toy-east-1"
    lustre_product = "Toy Lustre"
    reserved_addresses = 3
    offers_tpus = False
    provider_region_setting = "toy:region"
    stack_settings: tuple[str, ...] = ()
    reserved_capacity_is_placed = False
    reservation_example = "res-42"
    reservation_format = "res- followed by digits, e.g. res-42"
    kms_key_example = "toykms:toy-east:my-key"
    stack_names: Mapping[str, str] = MappingProxyType({})
    inventory_collection = "toy.cloud"
    inventory_suffix = ".toy.yml"
    host_access_tools = ("toyctl",)
    controller_state_device = "/dev/toy1"

    def slurm_units(
        self, group: str, machine: MachineType, count: int, static: int
    ) -> tuple[FabricUnit, ...] | None:
        return None  # the node sync names each instance

    def report_channel(self, outputs: StackOutputs) -> ReportChannel | None:
        return None  # the remote command's output carries the report

    database_machine = MachineNaming(re.compile(r"toydb\.[a-z0-9]+"), "a toy database size", "toydb.small")
    node_group_types = (NODE_POOL,)
    capacity_types: Mapping[str, bool] = MappingProxyType({NODE_POOL: False})
    plan_mocks = PlanMocks(outputs={"toy:": _mock_outputs}, call=lambda _token, _args: None)

    def reservation_valid(self, value: str) -> bool:
        return re.fullmatch(r"res-\d+", value) is not None

    def kms_key_problems(self, key: str, *, region: str, disk: bool) -> Iterator[FieldProblem]:
        del disk
        if not key.startswith(f"toykms:{region}:"):
            yield FieldProblem((), f"'{key}' is not a toy key of {region}", f"write toykms:{region}:<name>")

    def secret_problems(self, secret: str, *, region: str, project: str | None) -> Iterator[FieldProblem]:
        del region, project
        if not _LABEL.fullmatch(secret):
            yield FieldProblem((), f"'{secret}' is not a toy secret name", _LABEL_RULE)

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        return machine_types(catalog)

    def region_of_zone(self, catalog: Catalog, zone: str) -> str | None:
        del catalog
        match = _ZONE.fullmatch(zone)
        return match["region"] if match else None

    def regions(self, catalog: Catalog) -> set[str]:
        return {
            r
            for m in MACHINE_TYPES.values()
            for z in m.listing(catalog)["locations"]
            if (r := self.region_of_zone(catalog, z))
        }

    def label_problems(self, key: str, value: str) -> Iterator[FieldProblem]:
        if not _LABEL.fullmatch(key):
            yield FieldProblem(
                (),
                f"label key '{key}' is not a toy label key",
                _LABEL_RULE,
                at_key=True,
            )
        if value and not _LABEL.fullmatch(value):
            yield FieldProblem((), f"label value '{value}' is not a toy label value", _LABEL_RULE)

    def budget_problems(
        self, *, cluster: str, stack: str | None, billing_account: str | None, activate_cost_tags: bool
    ) -> Iterator[FieldProblem]:
        return iter(())  # the toy cloud has no budgets to set up

    def storage_kinds(self) -> tuple[StorageKind, ...]:
        return ("lustre",)

    def lustre_tier(self, deployment: str, throughput_mbps_per_tib: int | None) -> str | None:
        return None  # the catalog has no toy storage tiers

    def storage_title(self, kind: StorageKind, tier: str) -> str:
        return f"Toy Lustre {tier}"

    def foreign_fields(self, blueprint: Blueprint) -> Iterator[FieldProblem]:
        if blueprint.project is not None:
            yield FieldProblem(("project",), "project is not a toy setting", "remove it", at_key=True)

    def fabric_subnets(self, machine: MachineType) -> int:
        return 0

    def fabric_subnets_available(self, catalog: Catalog) -> int:
        return addressing.BLOCKS

    def node_selector(self, cluster: str, stack: str) -> dict[str, str]:
        return {BLUEPRINT_TAG: cluster, STACK_TAG: stack}

    def inventory(self, outputs: StackOutputs) -> dict[str, Any]:
        return {
            "plugin": "toy.cloud.nodes",
            "filters": dict(outputs.node_selector),
            "group_by": NODE_GROUP_TAG,
        }

    def health_store(self, outputs: StackOutputs) -> ToyStore:
        return ToyStore(outputs.bucket)

    def host_subnet(self, cidr: str) -> ipaddress.IPv4Network:
        return addressing.blocks(cidr)[0]

    def run_command(self, where: BlueprintOutput, host: str, command: str) -> list[str]:
        return ["toyctl", "ssh", "--region", where.region, host, "--", command]

    def forward_port(
        self, where: BlueprintOutput, host: str, port: int, *, loopback: str, local_port: int
    ) -> list[str]:
        return ["toyctl", "forward", "--region", where.region, host, f"{local_port}:{loopback}:{port}"]

    def scrape_discovery(
        self,
        spec: ClusterSpec,
        *,
        stack: str,
        port: int,
        project: str | None,
        component: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        name = f"toy-{stack}" if component is None else f"toy-{stack}-{component}"
        if tag is not None:
            name = f"toy-{stack}-{tag[0]}-{tag[1]}"
        return {"file_sd_configs": [{"files": [f"/etc/prometheus/{name}.json"]}]}

    def service_location(self, region: str, project: str | None) -> dict[str, str]:
        return {"region": region}

    def instance_location(self, region: str, zone: str, project: str | None) -> dict[str, str]:
        return {"region": region, "zone": zone}

    def offering_problems(self, machine: MachineType, *, region: str, zone: str) -> Iterator[FieldProblem]:
        if isinstance(machine, ToyMachineType):
            yield from zone_problems(machine.name, machine.zones, None, region=region, zone=zone)

    def compact_placement_problems(
        self, machine: MachineType, *, size: int, max_distance: int | None, size_field: FieldPath
    ) -> Iterator[FieldProblem]:
        return iter(())


PROFILE = ToyProfile()
