"""The node programs on GCP: Compute Engine as the `Fleet` (`GceFleet`, JSON over HTTPS with the VM's
service account: gcp_http.py), and what the programs read of the settings there (`CLOUD`, found by
`clouds.py`): the project, the zone, and how each node group's MIG is found and its elastic VMs named and
placed (`gce_groups`); managed accounting on Cloud SQL (gcp_cloudsql.py).

A node's name is the instance metadata key `clusterfab-slurm-node`, not a label: a VM reads its metadata,
not its labels, from the metadata server.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import secrets
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from . import gcp_cloudsql
from .fleet import (
    BLUEPRINT_TAG,
    ELASTIC_TAG,
    GROUP_TAG,
    NODE_TAG,
    STACK_TAG,
    CloudError,
    ElasticInstance,
    FlexRequest,
    Instance,
)
from .gcp_http import HTTP_NOT_FOUND, METADATA, Http, MetadataTokenHttp

log = logging.getLogger("clusterfab-slurm-nodes")

COMPUTE_API = "https://compute.googleapis.com/compute/v1"
LIVE_STATES = ("PROVISIONING", "STAGING", "RUNNING")
CREATED_BY = "created-by"
"""The metadata key Compute Engine sets on a MIG's VMs: the MIG's partial URL."""
FLEX_TAG = "clusterfab-slurm-flex"
"""On a flex-start MIG's VMs (through its allInstancesConfig): the MIG's name. With the cluster's, stack's
and group's labels beside it on the MIG, a flex-start MIG is found by its labels, not by its group's name
prefix, so that a group gone from the blueprint still has its MIGs found and deleted."""
FAULTY_HOST_MACHINE_TYPES = frozenset(
    {"a4x-highgpu-4g", "a4-highgpu-8g", "a3-ultragpu-8g", "a3-megagpu-8g", "a3-highgpu-8g"}
)
"""The machine types whose hosts may be reported faulty (the guide's Limitations: A4X Max, A4X, A4, A3
Ultra, A3 Mega and A3 High with 8 GPUs; A4X Max is not in the catalog), and only for a running VM of the
reservation-bound provisioning model (`scheduling.provisioningModel` RESERVATION_BOUND); others are
refused (INSTANCES_WITHOUT_RESERVATION_NOT_SUPPORTED, the guide's troubleshooting page)."""
VM_NAME_MAX = 63
"""Compute Engine resource names: RFC 1035, at most 63 characters."""
OPERATION_WAITS = 5
"""zoneOperations.wait answers when the operation is DONE or after about 2 minutes: one bulkInsert is
waited for at most this many times (about 10 minutes, well inside ResumeTimeout) before the resume gives
up; a VM that still appears later never gets its node name, and the node sync deletes it after GRACE."""
_TEMPLATE_LINK = re.compile(r"projects/([^/]+)/(global|regions/[^/]+)/instanceTemplates/([^/?]+)")


@dataclass(frozen=True, slots=True)
class GceGroup:
    """A Slurm node group's MIG and, with elastic nodes, what their VMs are called: the config's
    `gce_groups`, computed by the stack (stacks/gcp/slurm.py), which conditions the controller's rights on
    the same names."""

    base_instance_name: str
    """The group's MIG's base instance name (components/gcp/node_group.py): the MIG, and through it the
    instance template its VMs boot from now, is found by it."""
    vm_prefix: str = ""
    """The elastic node `<group>-<i>` is the VM `<vm_prefix>-<i>`: one name per node, unique per cluster
    and stack, never one a MIG gives (those end in four random characters after the base name). Empty for
    a group without elastic nodes."""
    placement_prefix: str = ""
    """With compact placement, the elastic node `<group>-<i>` is placed by the compact placement policy
    `<placement_prefix>-<i // placement_chunk>` (the stack creates them: `placement_policies`), as a MIG's
    VMs are by its workload policy. Empty: no placement."""
    placement_chunk: int = 0
    """Most VMs one compact placement policy holds (the catalog's limit for the machine type)."""
    flex_prefix: str = ""
    """Flex-start capacity: each resume asks for its nodes' VMs through a MIG of its own, `<flex_prefix>-<8
    hex digits>` with `flex_prefix` as its base instance name (the controller's rights are conditioned on
    it), placed by the group's workload policy; empty for a group of other capacity."""
    run_seconds: int = 0
    """Flex-start: how long the VMs may run (the resize request's requestedRunDuration)."""

    def vm_name(self, node: str) -> str:
        if not self.vm_prefix:
            raise CloudError("NoElasticNodes", f"{self.base_instance_name}'s group has no elastic nodes")
        name = f"{self.vm_prefix}-{node.rpartition('-')[2]}"
        if len(name) > VM_NAME_MAX:
            raise CloudError("InvalidName", f"{name} is longer than {VM_NAME_MAX} characters")
        return name

    def node_number(self, vm: str) -> int | None:
        """The number of the elastic node whose VM this is (`vm_name`'s inverse), else None."""
        prefix, _, number = vm.rpartition("-")
        if not self.vm_prefix or prefix != self.vm_prefix or not number.isdigit():
            return None
        return int(number) if number == str(int(number)) else None

    def placement_policy(self, node: str) -> str | None:
        """The compact placement policy that places the node's VM, or None."""
        if not self.placement_prefix:
            return None
        return f"{self.placement_prefix}-{int(node.rpartition('-')[2]) // self.placement_chunk}"

    def placement_policies(self, static: int, size: int) -> list[str]:
        """Every policy that places a node numbered static..size-1 (the group's elastic nodes)."""
        if not self.placement_prefix or static >= size:
            return []
        chunks = range(static // self.placement_chunk, (size - 1) // self.placement_chunk + 1)
        return [f"{self.placement_prefix}-{chunk}" for chunk in chunks]


def gce_settings(groups: Mapping[str, GceGroup]) -> dict[str, Any]:
    """The node programs' settings that say how each group's VMs are found and named (`gce_groups`, the
    stack's `cloud_settings`); none without such groups."""
    return {"gce_groups": {name: asdict(group) for name, group in groups.items()}} if groups else {}


def gce_groups_from_config(value: Mapping[str, Any]) -> dict[str, GceGroup]:
    """The config's `gce_groups`: name -> {"base_instance_name": ..., "vm_prefix": ..., "placement_prefix":
    ..., "placement_chunk": ..., "flex_prefix": ..., "run_seconds": ...}."""
    return {
        name: GceGroup(
            str(item["base_instance_name"]),
            str(item.get("vm_prefix", "")),
            str(item.get("placement_prefix", "")),
            int(item.get("placement_chunk", 0)),
            str(item.get("flex_prefix", "")),
            int(item.get("run_seconds", 0)),
        )
        for name, item in value.items()
    }


class GceFleet:
    """The cluster's GPU VMs in a Compute Engine zone, found by the cluster's labels; a VM's node name is
    its instance metadata key `clusterfab-slurm-node` (labels cannot be read from inside the VM; metadata
    can, which is where the node's slurmd start program reads it).

    Elastic VMs are created with one zonal bulkInsert per request from the node group's own instance
    template, the one its MIG uses now (found through the MIG), with the template's labels plus
    `clusterfab-slurm-elastic=true`: they boot exactly like the group's static nodes, with its capacity
    (spot, a reservation's affinity) and service account (scheduler.md §A1: Cluster Toolkit's resume.py
    creates its nodes the same way)."""

    def __init__(
        self,
        http: Http,
        *,
        project: str,
        zone: str,
        blueprint: str,
        stack: str,
        groups: Mapping[str, GceGroup] | None = None,
        api: str = COMPUTE_API,
    ) -> None:
        self._http = http
        self._api = api
        self._zone = zone
        self._zonal = f"{api}/projects/{project}/zones/{zone}"
        self._base = f"{self._zonal}/instances"
        self._owner = {BLUEPRINT_TAG: blueprint, STACK_TAG: stack}
        self._filter = f'(labels.{BLUEPRINT_TAG} = "{blueprint}") (labels.{STACK_TAG} = "{stack}")'
        self._groups = dict(groups or {})
        self._templates: dict[str, dict[str, Any]] = {}
        self._policies: dict[str, str] = {}
        self._managers: dict[str, str] = {}
        """Flex-start VM -> the MIG that made it, from the last listing: such a VM is deleted through its
        MIG (a MIG recreates a VM deleted behind its back)."""

    def instances(self) -> list[Instance]:
        found = []
        for item in self._pages(self._base, self._filter):
            labels = item.get("labels", {})
            interfaces = item.get("networkInterfaces", [])
            if item.get("status") not in LIVE_STATES or GROUP_TAG not in labels:
                continue
            if not interfaces or "networkIP" not in interfaces[0]:
                continue  # no address yet: next round
            name = _metadata(item).get(NODE_TAG)
            elastic = labels.get(ELASTIC_TAG) == "true"
            manager = self._flex_manager(item) if elastic else ""
            group = labels[GROUP_TAG]
            found.append(
                Instance(
                    id=item["name"],
                    group=group,
                    address=interfaces[0]["networkIP"],
                    launched=dt.datetime.fromisoformat(item["creationTimestamp"]),
                    name=name,
                    elastic=elastic,
                    reportable=faulty_host_reportable(item),
                    started=_timestamp(item.get("lastStartTimestamp")),
                    intended=self._node(group, item["name"]) if manager and name is None else None,
                    ends=self._ends(item, group, flex=bool(manager)),
                )
            )
        return found

    def _ends(self, item: Mapping[str, Any], group: str, *, flex: bool) -> dt.datetime | None:
        """When Compute Engine deletes the VM: its terminationTime where the API gives one (any VM), else
        for a flex-start VM its run duration from its creation (the request's requestedRunDuration, which
        starts no earlier)."""
        given = _timestamp(item.get("scheduling", {}).get("terminationTime"))
        source = self._groups.get(group)
        if given is not None or not flex or source is None or not source.run_seconds:
            return given
        return dt.datetime.fromisoformat(item["creationTimestamp"]) + dt.timedelta(seconds=source.run_seconds)

    def _node(self, group: str, vm: str) -> str | None:
        """The elastic node of `group` whose VM this is named for (a flex-start VM: its MIG created it when
        capacity arrived, unnamed), else None."""
        source = self._groups.get(group)
        number = source.node_number(vm) if source is not None else None
        return f"{group}-{number}" if number is not None else None

    def _flex_manager(self, item: Mapping[str, Any]) -> str:
        """The flex-start MIG of ours that created this VM (its `created-by` metadata, which the MIG's
        label on the VM names too), else empty; noted for `terminate`."""
        manager = _metadata(item).get(CREATED_BY, "").rpartition("/instanceGroupManagers/")[2]
        if not manager or item.get("labels", {}).get(FLEX_TAG) != manager:
            return ""
        self._managers[item["name"]] = manager
        return manager

    def name(self, instance_id: str, name: str) -> None:
        # setMetadata replaces the whole set and must quote the fingerprint read with it.
        item = self._http("GET", f"{self._base}/{instance_id}")
        metadata = item.get("metadata", {})
        items = [i for i in metadata.get("items", []) if i["key"] != NODE_TAG] + [
            {"key": NODE_TAG, "value": name}
        ]
        self._http(
            "POST",
            f"{self._base}/{instance_id}/setMetadata",
            {"fingerprint": metadata.get("fingerprint", ""), "items": items},
        )

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """One VM per node name, all or none (minCount = count), then each named. A VM's metadata cannot
        differ within one bulkInsert (perInstanceProperties holds only names), so the node names are set
        afterwards, as the node sync names static nodes; if that fails, the VMs are deleted again."""
        source = self._groups.get(group)
        if source is None:
            raise CloudError("NoNodeGroup", f"the node sync's config has no gce_groups entry for {group}")
        template = self._template(group, source)
        if source.flex_prefix:
            return self._request(group, source, template, names)
        labels = template.get("properties", {}).get("labels", {})
        # One bulkInsert per placement policy (a request's VMs share their properties); the request
        # stands or falls as a whole: what one insert created is deleted again if a later one fails.
        by_policy: dict[str | None, list[str]] = {}
        for name in names:
            by_policy.setdefault(source.placement_policy(name), []).append(name)
        created: list[str] = []
        try:
            for policy, members in by_policy.items():
                vms = [source.vm_name(name) for name in members]
                # instanceProperties patch the template's (JSON merge patch, the bulkInsert reference):
                # only the labels and the placement policy (by name, as InstanceProperties.resourcePolicies
                # takes it), so the template's scheduling (spot, its termination action) and reservation
                # affinity hold as they are; the full label set, so the VMs carry the group's labels plus
                # ours whether the API merges labels or replaces them.
                properties: dict[str, Any] = {"labels": {**labels, ELASTIC_TAG: "true"}}
                if policy is not None:
                    properties["resourcePolicies"] = [policy]
                body = {
                    "count": str(len(vms)),
                    "minCount": str(len(vms)),
                    "sourceInstanceTemplate": template["selfLink"],
                    "perInstanceProperties": {vm: {} for vm in vms},
                    "instanceProperties": properties,
                }
                self._wait(self._call("POST", f"{self._base}/bulkInsert", body))
                created += vms
                for vm, name in zip(vms, members, strict=True):
                    self.name(vm, name)
        except Exception as error:
            if created:
                log.exception(
                    "creating the VMs of %s failed: deleting %s", ",".join(names), ",".join(created)
                )
                self._delete(created)
            raise _gce_error(error) from error
        return created

    def _request(
        self, group: str, source: GceGroup, template: Mapping[str, Any], names: Sequence[str]
    ) -> list[str]:
        """Flex-start VMs for these nodes: a MIG of their own (target size 0, the group's template and
        workload policy, our label on every VM it makes) and one resize request naming their VMs, which
        Compute Engine fulfils all at once when capacity arrives (Cluster Toolkit's slurm_files
        mig_flex.py does the same per job). Returns the VMs asked for: none exists yet; the node sync names
        them when they appear. If the request cannot be made, the MIG goes again."""
        vms = [source.vm_name(name) for name in names]
        mig = f"{source.flex_prefix}-{secrets.token_hex(4)}"
        body: dict[str, Any] = {
            "name": mig,
            "baseInstanceName": source.flex_prefix,
            "description": f"clusterfab flex-start VMs of node group {group}: {', '.join(names)}",
            "instanceTemplate": template["selfLink"],
            "targetSize": 0,
            # Patched onto the template's labels (the cluster's, stack's and group's again, so that the MIG
            # itself carries them): its VMs are elastic nodes of this MIG, deleted at teardown.
            "allInstancesConfig": {
                "properties": {
                    "labels": {**self._owner, GROUP_TAG: group, ELASTIC_TAG: "true", FLEX_TAG: mig}
                }
            },
        }
        if group in self._policies:
            body["resourcePolicies"] = {"workloadPolicy": self._policies[group]}
        managers = f"{self._zonal}/instanceGroupManagers"
        try:
            self._wait(self._call("POST", managers, body))
        except CloudError:
            self.withdraw(mig)  # a MIG whose creation failed late may exist; never one left behind
            raise
        request = {
            "name": "resume",
            "instances": [{"name": vm} for vm in vms],
            "requestedRunDuration": {"seconds": str(source.run_seconds)},
        }
        try:
            self._wait(self._call("POST", f"{managers}/{mig}/resizeRequests", request))
        except CloudError:
            log.exception("the resize request of %s failed: deleting it", mig)
            self.withdraw(mig)
            raise
        log.info("%s asks for %s (flex-start, up to %d s each)", mig, ",".join(vms), source.run_seconds)
        return vms

    def requests(self) -> list[FlexRequest]:
        """This cluster's and stack's flex-start MIGs, each with its resize request, found by the labels
        they give their VMs (matched here: compute.v1 documents no list filter on them). With node
        groups (the node sync's config), only those of its flex-start groups: a group the blueprint no
        longer has is not the controller's to act on (its rights name the config's groups). Without (the
        destroy hook), every one, those of a group gone from the blueprint too."""
        if self._groups and not any(g.flex_prefix for g in self._groups.values()):
            return []
        found = []
        for mig in self._pages(f"{self._zonal}/instanceGroupManagers"):
            mine = mig.get("allInstancesConfig", {}).get("properties", {}).get("labels", {})
            if mine.get(FLEX_TAG) != mig["name"] or any(mine.get(k) != v for k, v in self._owner.items()):
                continue  # not a MIG this stack's resume program made
            group = str(mine.get(GROUP_TAG, ""))
            if self._groups and group not in self._groups:
                continue
            url = f"{self._zonal}/instanceGroupManagers/{mig['name']}/resizeRequests"
            asked = list(self._call("GET", url).get("items", []))
            vms = [i["name"] for r in asked for i in r.get("instances", [])]
            errors = [e for r in asked for e in r.get("status", {}).get("error", {}).get("errors", [])]
            found.append(
                FlexRequest(
                    mig=mig["name"],
                    group=group,
                    nodes=tuple(node for vm in vms if (node := self._node(group, vm)) is not None),
                    state=str(asked[-1].get("state", "")) if asked else "",
                    error=str(errors[0].get("code", "")) if errors else "",
                    created=dt.datetime.fromisoformat(mig["creationTimestamp"]),
                    size=int(mig.get("targetSize", 0)),
                )
            )
        return found

    def keep_sizes(self) -> list[str]:
        """Nothing: each group's MIG keeps its target size itself."""
        return []

    def withdraw(self, mig: str) -> None:
        """Delete a flex-start MIG: its resize request and every VM it made go with it (Compute Engine lets
        a request being fulfilled finish first). One already gone is no error."""
        self._gone(f"{self._zonal}/instanceGroupManagers/{mig}")

    def terminate(self, instance_ids: Sequence[str]) -> None:
        by_manager: dict[str, list[str]] = {}
        for vm in instance_ids:
            by_manager.setdefault(self._managers.get(vm, ""), []).append(vm)
        failed = self._delete(by_manager.pop("", []))
        for mig, vms in by_manager.items():
            # Through the MIG, which lowers its target size: deleted alone, the MIG would recreate them.
            try:
                self._call(
                    "POST",
                    f"{self._zonal}/instanceGroupManagers/{mig}/deleteInstances",
                    {
                        "instances": [f"zones/{self._zone}/instances/{vm}" for vm in vms],
                        "skipInstancesOnValidationError": True,
                    },
                )
            except CloudError as error:
                log.exception("deleting %s through %s failed", ",".join(vms), mig)
                failed.append(error)
        if failed:
            raise CloudError(failed[0].code, "; ".join(f"{e.code}: {e.message}" for e in failed))

    def recreate(self, group: str, instance_id: str) -> None:
        """The group's MIG recreates the VM from its current template (instanceGroupManagers
        .recreateInstances): a MIG's VM is never deleted behind its back. Not waited for: the operation is
        done once the MIG has flagged the VM (its reference), and the next rounds see the new VM."""
        source = self._groups.get(group)
        if source is None:
            raise CloudError("NoNodeGroup", f"the node sync's config has no gce_groups entry for {group}")
        if not instance_id.startswith(f"{source.base_instance_name}-"):
            raise CloudError("NotInGroup", f"{instance_id} is no VM of {source.base_instance_name}")
        query = f'baseInstanceName = "{source.base_instance_name}"'
        migs = list(self._pages(f"{self._zonal}/instanceGroupManagers", query))
        if len(migs) != 1:
            raise CloudError(
                "NoNodeGroup", f"{len(migs)} managed instance groups named {source.base_instance_name}"
            )
        self._call(
            "POST",
            f"{self._zonal}/instanceGroupManagers/{migs[0]['name']}/recreateInstances",
            {"instances": [f"zones/{self._zone}/instances/{instance_id}"]},
        )

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        """instances.reportHostAsFaulty, IMMEDIATE (the one schedule the API allows now), one fault reason.
        Not waited for (10-12 minutes; REPORT_WAIT)."""
        self._call(
            "POST",
            f"{self._base}/{instance_id}/reportHostAsFaulty",
            {
                "disruptionSchedule": "IMMEDIATE",
                "faultReasons": [{"behavior": behavior, "description": description}],
            },
        )

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic VMs that still exist, in any status (a stopped, TERMINATED VM still holds
        its NICs' subnets); a VM being deleted is listed until it is gone."""
        return [
            ElasticInstance(
                item["name"],
                item.get("labels", {}).get(GROUP_TAG, ""),
                managed=bool(self._flex_manager(item)),
            )
            for item in self._pages(self._base, f'{self._filter} (labels.{ELASTIC_TAG} = "true")')
        ]

    def _delete(self, vms: Sequence[str]) -> list[CloudError]:
        """instances.delete for each VM (Compute Engine has no bulk delete of VMs outside a MIG), without
        waiting for the deletions: one already gone is no error, one that fails does not stop the rest."""
        failed = []
        for vm in vms:
            try:
                self._gone(f"{self._base}/{vm}")
            except CloudError as error:
                log.exception("deleting %s failed", vm)
                failed.append(error)
        return failed

    def _gone(self, url: str) -> None:
        """DELETE, not waited for; a resource already gone is no error."""
        try:
            self._http("DELETE", url)
        except Exception as error:
            if getattr(error, "code", None) != HTTP_NOT_FOUND:
                raise _gce_error(error) from error

    def _template(self, group: str, source: GceGroup) -> dict[str, Any]:
        """The instance template the group's MIG creates its VMs from, found through the MIG (the template
        has an auto-generated name, and a new one replaces it whenever the group changes): the zone's MIGs
        with the group's base instance name, of which exactly one has a template with this cluster's,
        stack's and group's labels (another stack of the blueprint may have a MIG of the same base name)."""
        if group in self._templates:
            return self._templates[group]
        wanted = {**self._owner, GROUP_TAG: group}
        found: list[dict[str, Any]] = []
        query = f'baseInstanceName = "{source.base_instance_name}"'
        for mig in self._pages(f"{self._zonal}/instanceGroupManagers", query):
            versions = mig.get("versions") or [{"instanceTemplate": mig.get("instanceTemplate", "")}]
            link = _TEMPLATE_LINK.search(versions[0].get("instanceTemplate", ""))
            if link is None:
                continue
            project, location, name = link.groups()
            template = self._call(
                "GET", f"{self._api}/projects/{project}/{location}/instanceTemplates/{name}"
            )
            labels = template.get("properties", {}).get("labels", {})
            if all(labels.get(key) == value for key, value in wanted.items()):
                found.append(template)
                policy = mig.get("resourcePolicies", {}).get("workloadPolicy")
                if policy:
                    # A flex-start MIG is placed as the group's own: one workload policy may serve many
                    # MIGs (Compute Engine's "About workload policies in MIGs").
                    self._policies[group] = policy
        if len(found) != 1:
            raise CloudError(
                "NoNodeGroup",
                f"{len(found)} managed instance groups named {source.base_instance_name} use a template "
                f"of node group {group} of this cluster and stack",
            )
        self._templates[group] = found[0]
        return found[0]

    def _wait(self, operation: Mapping[str, Any]) -> None:
        """Until the operation is DONE (bounded by OPERATION_WAITS); its first error as a CloudError
        (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED, ...)."""
        waits = 0
        while operation.get("status") != "DONE":
            if waits == OPERATION_WAITS:
                raise CloudError("OperationTimeout", f"{operation.get('name')} not done after {waits} waits")
            operation = self._call("POST", f"{self._zonal}/operations/{operation['name']}/wait")
            waits += 1
        errors = operation.get("error", {}).get("errors", [])
        if errors:
            raise CloudError(
                str(errors[0].get("code", "OperationFailed")),
                "; ".join(str(e.get("message", e.get("code", ""))) for e in errors),
            )

    def _call(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            return self._http(method, url, body)
        except Exception as error:
            raise _gce_error(error) from error

    def _pages(self, url: str, query: str = "") -> Iterable[dict[str, Any]]:
        """Every item of a list call with this filter (none: all), page after page."""
        token = ""
        while True:
            params = {**({"filter": query} if query else {}), **({"pageToken": token} if token else {})}
            page = self._call("GET", f"{url}?{urllib.parse.urlencode(params)}")
            yield from page.get("items", [])
            token = page.get("nextPageToken", "")
            if not token:
                return


def _gce_error(error: Exception) -> CloudError:
    """A Compute Engine refusal as a CloudError: the reason of its JSON error body (quotaExceeded,
    alreadyExists, ...) or its status, else the HTTP status; anything else by its exception type."""
    if isinstance(error, CloudError):
        return error
    status, read = getattr(error, "code", None), getattr(error, "read", None)
    if not isinstance(status, int) or not callable(read):
        return CloudError(type(error).__name__, str(error))
    try:
        detail = json.loads(read() or b"{}").get("error", {})
    except (ValueError, AttributeError):
        detail = {}
    reasons = [e.get("reason") for e in detail.get("errors", []) if e.get("reason")]
    code = reasons[0] if reasons else detail.get("status") or f"HTTP{status}"
    return CloudError(str(code), str(detail.get("message", error)))


def faulty_host_reportable(item: Mapping[str, Any]) -> bool:
    """Whether Compute Engine takes a faulty-host report for this VM (an instances.list item): its machine
    type and provisioning model (FAULTY_HOST_MACHINE_TYPES)."""
    machine_type = str(item.get("machineType", "")).rsplit("/", 1)[-1]
    model = item.get("scheduling", {}).get("provisioningModel")
    return machine_type in FAULTY_HOST_MACHINE_TYPES and model == "RESERVATION_BOUND"


def _metadata(item: Mapping[str, Any]) -> dict[str, str]:
    return {i["key"]: i.get("value", "") for i in item.get("metadata", {}).get("items", [])}


def _timestamp(value: Any) -> dt.datetime | None:
    """An RFC 3339 time in Compute Engine's answers (absent: never)."""
    return dt.datetime.fromisoformat(value) if isinstance(value, str) and value else None


class GcpNodes:
    """What the node programs need of the settings on GCP."""

    location = ("project", "zone")
    accounting_settings = gcp_cloudsql.REQUIRED
    claims = False
    creates_nodes = True

    def refusal(self, settings: Mapping[str, Any]) -> str | None:
        return None

    def fleet(self, settings: Mapping[str, Any]) -> GceFleet:
        # A test stands in for Compute Engine and the metadata server here; never set by the stack.
        return GceFleet(
            MetadataTokenHttp(settings.get("metadata_url", METADATA)),
            project=settings["project"],
            zone=settings["zone"],
            blueprint=settings["blueprint"],
            stack=settings["stack"],
            groups=gce_groups_from_config(settings.get("gce_groups", {})),
            api=settings.get("compute_api", COMPUTE_API),
        )

    def ending(self, settings: Mapping[str, Any]) -> bool:
        """Flex-start groups (their VMs live for a run duration), or groups the config gives `ends`."""
        flex = any(g.get("flex_prefix") for g in settings.get("gce_groups", {}).values())
        return flex or bool(settings.get("ends"))

    def accounting(self, settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
        cloud_sql = gcp_cloudsql.CloudSql(
            # A test stands in for the metadata server and the Admin API here; the stack sets neither.
            MetadataTokenHttp(settings.get("metadata_url", METADATA)),
            project=str(settings["project"]),
            instance=str(settings["identifier"]),
            api=str(settings.get("api_url", gcp_cloudsql.SQLADMIN_API)),
            poll_s=float(settings.get("retry_wait_s", gcp_cloudsql.POLL_S)),
        )
        return gcp_cloudsql.prepare_gcp(settings, password_file, cloud_sql=cloud_sql)


CLOUD = GcpNodes()
