"""What clusterfab needs to know about a cloud, as one interface.

A profile answers the questions whose answers differ per cloud: how zones and reservations are written,
which labels are valid, what a Lustre tier is called, which blueprint fields belong to it, how push mode
finds its nodes. Rules, resolution, cost and provisioning ask the profile instead of branching on the
cloud's name, so adding a cloud is a new module and a registry entry.

Profiles are stateless and cheap (no I/O, no Pulumi): `validate` and `cost` use them. What talks to the
cloud at run time (the cluster bucket's store) loads its client library only when it is used.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from clusterfab.core.errors import ClusterfabError
from clusterfab.core.findings import FieldPath, Severity
from clusterfab.core.hints import listing
from clusterfab.core.vocab import Cloud, StorageKind

if TYPE_CHECKING:
    from ipaddress import IPv4Network

    from clusterfab.blueprint.models import Blueprint
    from clusterfab.catalog import Catalog
    from clusterfab.catalog.models import MachineType
    from clusterfab.outputs import BlueprintOutput, StackOutputs


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """A blueprint value the cloud rejects: where, what, and how to fix it."""

    path: FieldPath
    message: str
    hint: str
    at_key: bool = False
    code: str = ""
    """For checks whose finding code the cloud decides (its budget's settings); else the rule's own."""
    severity: Severity | None = None
    """None: the code's own severity."""
    anchor: FieldPath | None = None
    """Where the finding points when `path` is not written (a blueprint path, not relative)."""


ComputedOutputs = Callable[[str, str], dict[str, Any]]
"""A mock's computed attributes of a resource, from its type token and name (an attribute's value may be a
function of its input value, for an output whose type differs from its input's)."""


@dataclass(frozen=True, slots=True)
class PlanMocks:
    """What the offline plan engine's mocks answer for one cloud's resources and calls."""

    outputs: Mapping[str, ComputedOutputs]
    """Computed attributes per type-token prefix. The first prefix that gives a property wins: a type's
    entry goes before its provider's."""
    call: Callable[[str, Mapping[str, Any]], dict[str, Any] | None]
    """The result of an invoke, from its token and arguments; None: not one of this cloud's."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """Stack settings (of `CloudProfile.stack_settings`) the offline plan sets where the stack names none:
    what the mock provider deploys to (Azure: the mock engine's subscription)."""


@dataclass(frozen=True, slots=True)
class MachineNaming:
    """How a cloud service names its machines: the form, what such a name is, and one of them."""

    pattern: re.Pattern[str]
    what: str
    """What a name of that form is, in words: an RDS instance class."""
    example: str


def zone_problems(
    what: str, zones: Sequence[str], note: str | None, *, region: str, zone: str
) -> Iterator[FieldProblem]:
    """Why `zone` is not one of the `zones` the catalog lists as offering `what` (a machine type, a TPU
    generation); `note` is the catalog's own word on an unconfirmed list. Path: the field naming `what`."""
    if not zones:
        hint = note or "check availability before deploying"
        yield FieldProblem((), f"the catalog lists no zones for {what}", hint, severity=Severity.WARNING)
        return
    if zone not in zones:
        in_region = [z for z in zones if z.startswith(region + "-")]
        hint = (
            f"zones of {region} that offer it: {listing(in_region)}"
            if in_region
            else f"zones that offer it: {listing(zones)}"
        )
        yield FieldProblem((), f"{what} is not offered in zone {zone}", hint)


def zone_region(cloud: CloudProfile, catalog: Catalog, *, region: str, zone: str) -> str | None:
    """The region of the blueprint's `zone`: read from the zone's name (`region_of_zone`), or, on a cloud
    whose zones are numbered within their region (Azure writes zone "1"), `region` when the cloud lists the
    zone there. Such a cloud's profile has `numbered_zones(catalog, region) -> list[str]` (optional, so the
    Protocol and the clouds whose zone names carry their region stay as they are)."""
    found = cloud.region_of_zone(catalog, zone)
    numbered: Callable[[Catalog, str], Sequence[str]] | None = getattr(cloud, "numbered_zones", None)
    if found is None and numbered is not None and zone in numbered(catalog, region):
        return region
    return found


@dataclass(frozen=True, slots=True)
class FabricUnit:
    """Nodes of a group that share one fabric and no other (an Azure scale set): Slurm's nodes
    `<group>-<first>` .. `<group>-<first + size - 1>`, which register by the unit's name."""

    name: str
    """The unit's name: the Slurm feature its nodes register by, the value of its fabric-unit tag."""
    first: int
    size: int

    def always_up(self, static: int) -> int:
        """How many of its nodes are always up when the group's first `static` nodes are (the rest are
        elastic): what its scale set runs when no job asked for more."""
        return max(0, min(self.first + self.size, static) - self.first)


@dataclass(frozen=True, slots=True)
class ReportChannel:
    """How a report leaves a host when the remote command's own output cannot carry it whole (Azure's Run
    Command returns the last 4096 bytes of it): the command stores it, and the caller reads it back."""

    wrap: Callable[[str, str], str]
    """(a shell command, a key) -> a shell command that runs it and stores its standard output under the
    key, with the command's exit status."""
    fetch: Callable[[str], bytes | None]
    """The report stored under a key (None: none was stored)."""


@dataclass(frozen=True, slots=True)
class StoredObject:
    body: bytes
    written_at: dt.datetime
    """The store's own time of the last write (timezone-aware)."""
    location: str
    """Where it is, for messages: s3://bucket/key, gs://bucket/key."""


class HealthStore(Protocol):
    """Where a stack's health records live: its cluster bucket, through the cloud's object store
    (`CloudProfile.health_store`)."""

    def location(self, key: str) -> str: ...

    def put(self, key: str, body: bytes) -> None: ...

    def get(self, key: str) -> StoredObject | None:
        """The object, or None when there is none."""
        ...


class HealthStoreError(ClusterfabError):
    """The bucket could not be read or written (exit 1); the message says which and why."""

    exit_code = 1


class Site(Protocol):
    """Where a cluster runs: its name, region and zone (a ClusterSpec or a Blueprint; the spec builds on
    the clouds, so the clouds ask only for this much of it)."""

    @property
    def name(self) -> str: ...

    @property
    def region(self) -> str: ...

    @property
    def zone(self) -> str: ...


class CloudProfile(Protocol):
    """One cloud's conventions (see the module docstring)."""

    @property
    def name(self) -> Cloud: ...

    @property
    def title(self) -> str:
        """How people write the cloud's name: AWS, GCP."""
        ...

    @property
    def zone_example(self) -> str:
        """A zone written the way the blueprint expects it, for hints."""
        ...

    @property
    def lustre_product(self) -> str:
        """The cloud's Lustre service: FSx for Lustre, Managed Lustre."""
        ...

    @property
    def reserved_addresses(self) -> int:
        """Addresses the cloud keeps in every subnet (network, gateway, DNS, ..., broadcast)."""
        ...

    @property
    def offers_tpus(self) -> bool: ...

    @property
    def provider_region_setting(self) -> str:
        """The stack setting that names the region of the cloud's Pulumi provider (`aws:region`,
        `azure-native:location`): the program builds its provider in the blueprint's region, so a stack
        that sets another is refused."""
        ...

    @property
    def stack_settings(self) -> tuple[str, ...]:
        """The settings of the cloud's Pulumi provider (`namespace:key`) that its program and rules read
        from a stack, besides the region (Azure: `azure-native:subscriptionId`); they reach them as
        `StackSettings.provider_settings`."""
        ...

    @property
    def reserved_capacity_is_placed(self) -> bool:
        """Whether reserved capacity (a targeted reservation, a capacity block) already decides where
        the nodes are, so that a placement group of our own can only strand part of it (AWS: yes)."""
        ...

    @property
    def reservation_example(self) -> str: ...

    @property
    def reservation_format(self) -> str:
        """What a reservation reference looks like, in words."""
        ...

    def reservation_valid(self, value: str) -> bool: ...

    @property
    def kms_key_example(self) -> str:
        """A customer-managed key written the way the blueprint expects it, for hints."""
        ...

    def kms_key_problems(self, key: str, *, region: str, disk: bool) -> Iterator[FieldProblem]:
        """What is wrong with a customer-managed key for a resource in `region` (`disk`: a VM's disk,
        which some clouds also encrypt with keys of other locations)."""
        ...

    def secret_problems(self, secret: str, *, region: str, project: str | None) -> Iterator[FieldProblem]:
        """What is wrong with a secret the cluster's hosts read from the cloud's secret store (by name, or
        by a full reference in the blueprint's `region` / `project`): it must name one secret, exactly."""
        ...

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]: ...

    def region_of_zone(self, catalog: Catalog, zone: str) -> str | None:
        """The region a zone belongs to, read from its name (None when the name has no known form)."""
        ...

    def regions(self, catalog: Catalog) -> set[str]:
        """Regions the catalog knows something to be offered in."""
        ...

    def label_problems(self, key: str, value: str) -> Iterator[FieldProblem]:
        """What is wrong with a label / tag (path relative to `labels.<key>`)."""
        ...

    def budget_problems(
        self, *, cluster: str, stack: str | None, billing_account: str | None, activate_cost_tags: bool
    ) -> Iterator[FieldProblem]:
        """What the cloud budget of a deployment of `stack` (None: the blueprint without a stack) will
        count, or why it is not created, from the stack's settings; each with its code (path: `budget`)."""
        ...

    @property
    def stack_names(self) -> Mapping[str, str]:
        """Names the cloud's stack gives its own resources after the cluster and stack, as it names a node
        group's or TPU slice's (`<cluster>-<stack>-<name>`), with what each names: a group may not take one
        (rule BP144)."""
        ...

    def storage_kinds(self) -> tuple[StorageKind, ...]: ...

    def lustre_tier(self, deployment: str, throughput_mbps_per_tib: int | None) -> str | None:
        """The catalog tier a Lustre file system of this cloud is, from the blueprint's fields."""
        ...

    def storage_title(self, kind: StorageKind, tier: str) -> str:
        """The product name of a storage tier, for messages: FSx for Lustre PERSISTENT_2."""
        ...

    def foreign_fields(self, blueprint: Blueprint) -> Iterator[FieldProblem]:
        """Blueprint fields that belong to another cloud (BP110)."""
        ...

    def fabric_subnets(self, machine: MachineType) -> int:
        """Subnets of the cluster range one fabric of `machine` needs besides the general one."""
        ...

    def fabric_subnets_available(self, catalog: Catalog) -> int:
        """Blocks of the cluster range left for fabric subnets."""
        ...

    def node_selector(self, cluster: str, stack: str) -> dict[str, str]:
        """The filter (tags / labels) that finds a stack's nodes in the cloud's API."""
        ...

    @property
    def inventory_collection(self) -> str:
        """The Ansible collection whose inventory plugin (and connection) push mode needs."""
        ...

    @property
    def inventory_suffix(self) -> str:
        """The inventory plugin reads only files whose names end like this."""
        ...

    @property
    def host_access_tools(self) -> tuple[str, ...]:
        """The command line tools that reach a host with no open port (SSM Session Manager, IAP), as
        `clusterfab dashboard` and `clusterfab health` run them."""
        ...

    def inventory(self, outputs: StackOutputs) -> dict[str, Any]:
        """The Ansible inventory plugin configuration for the nodes of a stack with these outputs."""
        ...

    def health_store(self, outputs: StackOutputs) -> HealthStore:
        """The stack's cluster bucket as the store of its health records."""
        ...

    # ------------------------------------------------------------------------------------------------------
    # At run time: the hosts' addresses and settings, reaching a host, finding the nodes (modules beside
    # each cloud's profile: addressing, access, discovery, hostvars, store).

    def host_subnet(self, cidr: str) -> IPv4Network:
        """The block of the cluster range the cluster's hosts (controller, login, nodes) take their
        addresses in, where the fixed host numbers of `clusterfab.addressing` are counted."""
        ...

    def run_command(self, where: BlueprintOutput, host: str, command: str) -> list[str]:
        """The local command that runs `command` (one shell line) on a stack's `host`, which has no open
        port, and streams its output (the cloud's CLI with `host_access_tools`)."""
        ...

    def report_channel(self, outputs: StackOutputs) -> ReportChannel | None:
        """Where a command's report goes when `run_command`'s output cannot carry it; None: on that output."""
        ...

    def forward_port(
        self, where: BlueprintOutput, host: str, port: int, *, loopback: str, local_port: int
    ) -> list[str]:
        """The local command that forwards `localhost:<local_port>` to `port` on the loopback address
        (`loopback`) of a stack's `host`, which has no open port."""
        ...

    def scrape_discovery(
        self,
        spec: Site,
        *,
        stack: str,
        port: int,
        project: str | None,
        component: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """A Prometheus scrape job's service discovery of the stack's GPU nodes (those with a node-group
        tag) through the cloud's API, and its relabeling: `instance` (the id or name that the node's
        exporters share), `node_group` and `machine_type`. `project`: where the nodes live, when the cloud
        has projects; `component`: the nodes whose component tag names it instead (a Kubernetes
        cluster's system nodes); `tag`: the nodes whose tag `tag[0]` is `tag[1]` instead (a Slurm
        cluster's login nodes)."""
        ...

    @property
    def discovery_needs_project(self) -> bool:
        """Whether `scrape_discovery` needs the project the nodes live in (the blueprint's `project`, or one
        given on the command line): the cloud scopes its resources by project."""
        ...

    def service_location(self, region: str, project: str | None) -> dict[str, str]:
        """Host settings: where a host finds the cloud's services it calls by name (secret store, managed
        database, mail), as the settings' keys name it (`region`, `project`)."""
        ...

    def instance_location(self, region: str, zone: str, project: str | None) -> dict[str, str]:
        """Host settings: where the controller's programs list and create the cluster's instances."""
        ...

    @property
    def controller_state_device(self) -> str:
        """Where the disk the controller keeps its state on appears on the host (the stack attaches it)."""
        ...

    def slurm_units(
        self, group: str, machine: MachineType, count: int, static: int
    ) -> tuple[FabricUnit, ...] | None:
        """How `count` Slurm nodes of a group, the first `static` of them always up, register. None: the
        node sync gives each instance its node name (a tag, a metadata key) and the groups' leaf switches
        hang under one root. Units: each node claims a free node of its unit itself before its slurmd
        starts (the unit is the nodes' feature), and no switch joins two units: the fabric does not span
        them, so neither may a job."""
        ...

    # --- What the catalog, the rules, the policy pack and the plan engine ask per cloud -----------

    def offering_problems(self, machine: MachineType, *, region: str, zone: str) -> Iterator[FieldProblem]:
        """Why the catalog does not offer `machine` in the blueprint's region and zone (path relative to
        the node group's `machine_type`)."""
        ...

    def compact_placement_problems(
        self, machine: MachineType, *, size: int, max_distance: int | None, size_field: FieldPath
    ) -> Iterator[FieldProblem]:
        """Why a compact placement cannot hold a group of `size` nodes of `machine` at `max_distance`
        (None: unspecified); paths relative to the node group, `size_field` the one that sets its size."""
        ...

    @property
    def database_machine(self) -> MachineNaming:
        """How the managed accounting database's service names its machines."""
        ...

    @property
    def node_group_types(self) -> tuple[str, ...]:
        """The resource types (Pulumi type tokens) of the instance groups that own a node group's nodes:
        replacing one recreates every node."""
        ...

    @property
    def capacity_types(self) -> Mapping[str, bool]:
        """The resource types (Pulumi type tokens) that hold a node group's or TPU slice's accelerators,
        each with whether it is a queued request for them: replacing one releases its GPUs or chips, and
        a queued request goes back into the queue (`clusterfab diff` says so)."""
        ...

    @property
    def plan_mocks(self) -> PlanMocks:
        """What the offline plan engine's mocks answer for the cloud's resources and calls."""
        ...
