"""The node programs on Azure: the cluster's scale-set VMs through Azure Resource Manager's REST API, with
the controller's managed identity (`ArmFleet`), and what the node programs need of the settings
(`AzureNodes`).

Azure's GPU nodes claim their Slurm nodes themselves (a Uniform scale set's VMs carry no tags of their own,
so no program can name them): each VM's start program takes a free node of its scale set's fabric unit
and sets the node's NodeHostname to its host name. The node sync keeps the rest in step (reconcile's
`claims` rules): a claim held by a VM that no longer exists is released, a node drained by the health check
(or set aside by its spot watcher) has its VM deleted from the scale set, and each always-up unit's scale
set is brought back to its size (`keep_sizes`), which makes the VM that claims the freed node. An elastic
group's nodes are units of their own: the resume program grows a unit's scale set by one VM per node
(`create`: a scale set cannot make a VM for a node name, so each new VM claims one of the nodes Slurm is
powering up) and the suspend program deletes the VMs holding idle nodes (power.suspend_claimed).

Requests (Microsoft.Compute, api-version 2024-11-01, the version the stack's scale sets are created with):
- Virtual Machine Scale Sets - List (a resource group's scale sets, their tags, `sku.capacity` and
  `provisioningState`): GET .../resourceGroups/{group}/providers/Microsoft.Compute/virtualMachineScaleSets;
- Virtual Machine Scale Set VMs - List: GET .../virtualMachineScaleSets/{set}/virtualMachines, each VM's
  `instanceId`, `properties.osProfile.computerName` (its host name) and `properties.timeCreated`
  (learn.microsoft.com/rest/api/compute/virtual-machine-scale-set-vms/list);
- Virtual Machine Scale Sets - Delete Instances: POST .../virtualMachineScaleSets/{set}/delete with
  {"instanceIds": [...]}, 202 Accepted; the set's capacity drops by the instances deleted
  (learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/delete-instances);
- Virtual Machine Scale Sets - Update: PATCH .../virtualMachineScaleSets/{set} with {"sku": {...,
  "capacity": n}} (learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/update).
Lists page with `nextLink`. The token comes from the instance metadata service for the controller's
user-assigned identity (AZURE_CLIENT_ID, which the controller's role puts in the program's environment),
and so do the subscription and the resource group: the controller's own, where the stack puts everything.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import azure_mysql
from .bearer import Bearer, Http
from .fleet import BLUEPRINT_TAG, GROUP_TAG, STACK_TAG, CloudError, FlexRequest, Instance

ARM = "https://management.azure.com"
IMDS = "http://169.254.169.254"
API_VERSION = "2024-11-01"
"""Microsoft.Compute's API version of every request (the stack's scale sets are planned at it)."""
TOKEN_API_VERSION = "2018-02-01"
log = logging.getLogger("clusterfab-slurm-nodes")
IDENTITY_TAG = "clusterfab-identity"
"""The controller's tag naming the client id of its own identity (vocab.IDENTITY_TAG): besides it the VM has
the system-assigned identity Microsoft Entra sign-in needs, which the metadata service would pick."""
FABRIC_UNIT_TAG = "clusterfab-fabric-unit"
"""The scale set's fabric unit (kept in step with clusterfab.core.vocab by a test)."""
SETTLED = "Succeeded"
"""A scale set's provisioningState when no operation runs on it: only then is its capacity raised (a
delete of instances still running would make the update fail with a conflict)."""


class ImdsTokenHttp:
    """JSON over HTTPS to Azure Resource Manager with a token for the VM's user-assigned identity from the
    instance metadata service (GET /metadata/identity/oauth2/token with the Metadata header, never through
    a proxy; `client_id` names the identity: learn.microsoft.com/entra/identity/managed-identities-azure-
    resources/how-to-use-vm-token). Ubuntu's python3 alone: no SDK."""

    def __init__(self, imds: str = IMDS, client_id: str = "", resource: str = ARM) -> None:
        self._imds, self._client_id, self._resource = imds, client_id, resource
        self._direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._bearer = Bearer(self._token)
        self.operation: str | None = None
        """The last answer's Azure-AsyncOperation header: where a long-running operation it started says
        how it went (learn.microsoft.com/azure/azure-resource-manager/management/async-operations)."""

    def _token(self) -> Any:
        query = {"api-version": TOKEN_API_VERSION, "resource": f"{self._resource}/"}
        if self._client_id:
            query["client_id"] = self._client_id
        url = f"{self._imds}/metadata/identity/oauth2/token?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(url, headers={"Metadata": "true"})
        with self._direct.open(request, timeout=10) as response:
            return json.load(response)

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self._bearer()}", "Content-Type": "application/json"}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                self.operation = response.headers.get("Azure-AsyncOperation")
        except urllib.error.HTTPError as error:
            raise _arm_error(error) from None
        return json.loads(text) if text.strip() else None


def _arm_error(error: urllib.error.HTTPError) -> CloudError:
    """ARM's error body: {"error": {"code": ..., "message": ...}}."""
    try:
        detail = json.loads(error.read()).get("error", {})
    except (ValueError, AttributeError):
        detail = {}
    return CloudError(str(detail.get("code") or error.code), str(detail.get("message") or error.reason))


def where_am_i(imds: str = IMDS) -> dict[str, Any]:
    """This VM's compute metadata (subscriptionId, resourceGroupName, ...) from the instance metadata
    service: GET /metadata/instance/compute?api-version=2021-02-01 with the Metadata header, never through
    a proxy (learn.microsoft.com/azure/virtual-machines/instance-metadata-service)."""
    request = urllib.request.Request(
        f"{imds}/metadata/instance/compute?api-version=2021-02-01", headers={"Metadata": "true"}
    )
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(request, timeout=10) as response:
        found: dict[str, Any] = json.load(response)
    return found


def own_client_id(compute: Mapping[str, Any]) -> str:
    """The client id of the identity the programs act as: AZURE_CLIENT_ID where the service sets it (the node
    sync's unit), else the controller's IDENTITY_TAG (slurmctld runs the resume and suspend programs without
    it); empty on a VM with one identity, which the metadata service picks by itself."""
    given = os.environ.get("AZURE_CLIENT_ID", "")
    if given:
        return given
    tags = compute.get("tagsList") or []
    return next((str(t.get("value", "")) for t in tags if t.get("name") == IDENTITY_TAG), "")


@dataclass(frozen=True, slots=True)
class Unit:
    """One fabric unit of a node group, its scale set found by the unit's tag: the nodes `<group>-<first>`
    and the `nodes` - 1 after it, of which `static` are always up (all of them, or none: an elastic unit's
    set grows by one VM for each node a job is given)."""

    group: str
    first: int
    nodes: int
    static: int

    def holds(self, name: str) -> bool:
        prefix, _, number = name.rpartition("-")
        return (
            prefix == self.group and number.isdigit() and self.first <= int(number) < self.first + self.nodes
        )


def units_from_config(value: Mapping[str, Any]) -> dict[str, Unit]:
    """The config's `units`: unit name -> {"group": ..., "first": ..., "nodes": ..., "static": ...}."""
    return {
        name: Unit(str(item["group"]), int(item["first"]), int(item["nodes"]), int(item["static"]))
        for name, item in value.items()
    }


LOCK = "/run/lock/clusterfab-azure-capacity.lock"
"""Held while a scale set's capacity is read and raised: the node sync (root) and the resume programs
(SlurmUser, several at once) would otherwise each add to the same old capacity. Opened read-only, so
either user may take it whoever made it."""


@contextlib.contextmanager
def _capacity_lock(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class ArmFleet:
    """The cluster's scale sets in the stack's resource group, one per fabric unit, found by the cluster's
    tags and the unit's; their VMs are the node groups' instances."""

    def __init__(
        self,
        http: Http,
        *,
        subscription: str,
        resource_group: str,
        blueprint: str,
        stack: str,
        units: Mapping[str, Unit],
        api: str = ARM,
        lock: str = LOCK,
    ) -> None:
        self._http, self._units, self._lock = http, dict(units), lock
        self._tags = {BLUEPRINT_TAG: blueprint, STACK_TAG: stack}
        self._sets_url = (
            f"{api}/subscriptions/{subscription}/resourceGroups/{resource_group}"
            "/providers/Microsoft.Compute/virtualMachineScaleSets"
        )

    def _list(self, url: str) -> Iterator[dict[str, Any]]:
        next_url: str | None = f"{url}?api-version={API_VERSION}"
        while next_url:
            page = self._http("GET", next_url) or {}
            yield from page.get("value", [])
            next_url = page.get("nextLink")

    def scale_sets(self) -> dict[str, dict[str, Any]]:
        """Each unit's scale set (the resource as ARM lists it). A unit without one fails the round: a
        scale set that cannot be seen must not look like VMs that are gone (their claims released)."""
        found: dict[str, dict[str, Any]] = {}
        for item in self._list(self._sets_url):
            tags = item.get("tags") or {}
            unit = tags.get(FABRIC_UNIT_TAG, "")
            ours = all(tags.get(k) == v for k, v in self._tags.items())
            if ours and unit in self._units and tags.get(GROUP_TAG) == self._units[unit].group:
                found[unit] = item
        missing = sorted(set(self._units) - set(found))
        if missing:
            raise CloudError("NoScaleSet", f"no scale set of fabric unit {', '.join(missing)} found")
        return found

    def instances(self) -> list[Instance]:
        """Every VM of the units' scale sets, whatever its state (one being deleted still holds its node
        until it is gone): its id is `<scale set>/<instance id>`, its host name the VM's computer name."""
        found = []
        for unit, scale_set in sorted(self.scale_sets().items()):
            name = scale_set["name"]
            for vm in self._list(f"{self._sets_url}/{name}/virtualMachines"):
                properties = vm.get("properties", {})
                host = properties.get("osProfile", {}).get("computerName")
                created = properties.get("timeCreated")
                if not host or not created:
                    continue  # not created yet: it claims nothing before it exists
                found.append(
                    Instance(
                        id=f"{name}/{vm['instanceId']}",
                        group=self._units[unit].group,
                        address="",
                        launched=dt.datetime.fromisoformat(created),
                        name=None,
                        host=host,
                    )
                )
        return found

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Delete these VMs from their scale sets (the sets' capacity drops; `keep_sizes` restores it)."""
        by_set: dict[str, list[str]] = {}
        for instance_id in instance_ids:
            scale_set, _, number = instance_id.rpartition("/")
            by_set.setdefault(scale_set, []).append(number)
        for scale_set, numbers in sorted(by_set.items()):
            url = f"{self._sets_url}/{scale_set}/delete?api-version={API_VERSION}"
            self._http("POST", url, {"instanceIds": numbers})

    def recreate(self, group: str, instance_id: str) -> None:
        """A new machine for a failed one: the VM is deleted, and its scale set gets a new one when
        `keep_sizes` raises the set's capacity back (a scale set has no in-place replacement that moves the
        VM to new hardware and keeps it inside the set's placement group)."""
        del group
        self.terminate([instance_id])

    def _resize(self, scale_set: Mapping[str, Any], capacity: int) -> None:
        sku = dict(scale_set.get("sku") or {})
        url = f"{self._sets_url}/{scale_set['name']}?api-version={API_VERSION}"
        self._http("PATCH", url, {"sku": {**sku, "capacity": capacity}})

    def keep_sizes(self) -> list[str]:
        """Raise each always-up unit's scale set back to the unit's size where it has fewer (its VMs deleted
        by the node sync, or by hand), once no other operation runs on it; never lower one (VMs that run
        jobs are not chosen by a count). Elastic units are Slurm's to size."""
        changes = []
        with _capacity_lock(self._lock):
            for unit, scale_set in sorted(self.scale_sets().items()):
                have, want = int((scale_set.get("sku") or {}).get("capacity", 0)), self._units[unit].static
                state = scale_set.get("properties", {}).get("provisioningState")
                if have >= want or state != SETTLED:
                    continue
                self._resize(scale_set, want)
                changes.append(f"scale set {scale_set['name']} (unit {unit}): capacity {have} -> {want}")
        return changes

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """Grow each elastic unit's scale set by one VM per node: a scale set cannot make a VM for a node
        name, so each new VM claims one of the nodes Slurm powers up in its unit (the slurm_node role's
        start program takes no powered-down node). The ids are not known until the VMs exist: none."""
        wanted: dict[str, int] = {}
        for name in names:
            unit = next(
                (u for u, spec in self._units.items() if spec.group == group and spec.holds(name)), None
            )
            if unit is None or self._units[unit].static:
                raise CloudError("NoElasticUnit", f"{name} is no elastic node of a fabric unit of {group}")
            wanted[unit] = wanted.get(unit, 0) + 1
        with _capacity_lock(self._lock):
            sets = self.scale_sets()
            for unit, count in sorted(wanted.items()):
                have = int((sets[unit].get("sku") or {}).get("capacity", 0))
                self._resize(sets[unit], have + count)
                log.info(
                    "scale set %s (unit %s): capacity %d -> %d", sets[unit]["name"], unit, have, have + count
                )
        return []

    def name(self, instance_id: str, name: str) -> None:
        raise CloudError("NotSupported", "Azure's scale-set VMs claim their Slurm nodes themselves")

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        raise CloudError("NotSupported", "no faulty-host report for Azure scale-set VMs")

    def requests(self) -> list[FlexRequest]:
        return []

    def withdraw(self, mig: str) -> None:
        raise CloudError("NotSupported", "Azure has no flex-start MIGs")


class AzureNodes:
    """What the node programs need of the settings on Azure."""

    location = ("units",)
    accounting_settings = azure_mysql.REQUIRED
    claims = True
    creates_nodes = True

    def refusal(self, settings: Mapping[str, Any]) -> str | None:
        return None

    def fleet(self, settings: Mapping[str, Any]) -> ArmFleet:
        # A test stands in for the metadata service and Resource Manager here; the stack sets neither.
        imds = str(settings.get("imds_url", IMDS))
        # Every resource of the stack lives in the controller's own resource group and subscription.
        compute = where_am_i(imds)
        http = ImdsTokenHttp(imds, client_id=own_client_id(compute), resource=ARM)
        return ArmFleet(
            http,
            subscription=str(compute["subscriptionId"]),
            resource_group=str(compute["resourceGroupName"]),
            blueprint=str(settings["blueprint"]),
            stack=str(settings["stack"]),
            units=units_from_config(settings["units"]),
            api=str(settings.get("arm_url", ARM)),
            lock=str(settings.get("lock_file", LOCK)),
        )

    def ending(self, settings: Mapping[str, Any]) -> bool:
        return False

    def accounting(self, settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
        # A test stands in for the metadata service and Resource Manager here; the stack sets neither.
        imds = str(settings.get("imds_url", IMDS))
        compute = where_am_i(imds)
        server = azure_mysql.FlexibleServer(
            ImdsTokenHttp(imds, client_id=own_client_id(compute), resource=ARM),
            subscription=str(compute["subscriptionId"]),
            resource_group=str(compute["resourceGroupName"]),
            name=str(settings["identifier"]),
            api=str(settings.get("arm_url", ARM)),
            poll_s=float(settings.get("retry_wait_s", azure_mysql.POLL_S)),
        )
        return azure_mysql.prepare_azure(settings, password_file, server=server)


CLOUD = AzureNodes()
