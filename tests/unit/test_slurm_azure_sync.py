"""The node sync where machines claim their Slurm nodes themselves (Azure's scale-set VMs): the decision as
data (reconcile's `claims` rules), the Slurm side against a recording scontrol, and the cloud side
(`ArmFleet`) against a stand-in for Azure Resource Manager whose answers and requests are checked against
Azure's REST API specification (the pinned bicep types of Microsoft.Compute 2024-11-01)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pytest

from clusterfab.core.vocab import BLUEPRINT_TAG, FABRIC_UNIT_TAG, NODE_GROUP_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes import azure as nodes_azure
from clusterfab.scheduler.slurm.nodes.actions import (
    MarkDown,
    PowerDown,
    Recreate,
    Release,
    Replace,
    Return,
    Terminate,
)
from clusterfab.scheduler.slurm.nodes.azure import ArmFleet, Unit
from clusterfab.scheduler.slurm.nodes.fleet import CloudError, Instance
from clusterfab.scheduler.slurm.nodes.nodesync import Counts, sync
from clusterfab.scheduler.slurm.nodes.power import claimed_holders, suspend_claimed
from clusterfab.scheduler.slurm.nodes.reconcile import (
    CLAIM_GRACE,
    GONE_REASON,
    HEALTH_PREFIX,
    LOST_REASON,
    REPLACING,
    plan_actions,
)
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol, SlurmNode
from tests.apimodels.azure_spec import body_problems, spec

T0 = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
NAMES = {"h100": ["h100-0", "h100-1", "h100-2"]}
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
GROUP = "clusterfab-hpc-prod"
GROUP_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
SETS = f"https://arm.test{GROUP_ID}/providers/Microsoft.Compute/virtualMachineScaleSets"
COMPUTE = spec("microsoft.compute@2024-11-01.json")
SCALE_SET = "Microsoft.Compute/virtualMachineScaleSets@2024-11-01"
SCALE_SET_VM = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines@2024-11-01"


def vm(host: str, *, minutes: int = 0, number: int = 0) -> Instance:
    return Instance(
        f"hpc-h100-0-vmss/{number}", "h100", "", T0 + dt.timedelta(minutes=minutes), None, host=host
    )


def node(name: str, host: str | None = None, *, down: bool = False, **kw: Any) -> SlurmNode:
    """A node as slurmctld has it: claimed by `host` (NodeHostname) or unclaimed (its own name)."""
    return SlurmNode(name, "10.20.0.9" if host else name, down, hostname=host or name, **kw)


def drained(name: str, host: str, reason: str, at: dt.datetime = T0, *, down: bool = False) -> SlurmNode:
    states = frozenset({"DOWN", "DRAIN"} if down else {"IDLE", "DRAIN"})
    return node(name, host, down=down, states=states, reason=reason, reason_at=at)


def test_a_settled_unit_needs_nothing_and_no_machine_is_named() -> None:
    nodes = {"h100-0": node("h100-0", "vmss000000"), "h100-1": node("h100-1", "vmss000001")}
    nodes["h100-2"] = node("h100-2", down=True)
    # A third VM still starting (no claim yet) is left to claim its node itself.
    instances = [vm("vmss000000"), vm("vmss000001", number=1), vm("vmss000002", number=2)]
    assert plan_actions(NAMES, instances, nodes, claims=True, now=T0) == []


def test_the_claim_of_a_vm_that_is_gone_is_released_for_the_next_one() -> None:
    nodes = {
        "h100-0": node("h100-0", "vmss000000"),
        "h100-1": node("h100-1", "vmss000001", down=True),  # slurmctld saw it stop answering
        "h100-2": node("h100-2", "vmss000002"),  # deleted by hand a moment ago
    }
    assert plan_actions(NAMES, [vm("vmss000000")], nodes, claims=True, now=T0) == [
        Release("h100-1", "vmss000001", GONE_REASON, down=True),
        Release("h100-2", "vmss000002", GONE_REASON, down=False),
    ]


def test_an_unclaimed_node_goes_down_only_when_no_vm_of_its_group_waits_to_claim() -> None:
    """A restarted slurmctld forgets every claim: its VMs look unclaimed until the claims are restored or
    re-asserted, and their nodes still run jobs; marking them DOWN would requeue those jobs."""
    nodes = {name: node(name) for name in NAMES["h100"]}
    instances = [vm("vmss000000"), vm("vmss000001", number=1)]
    assert plan_actions(NAMES, instances, nodes, claims=True, now=T0) == []
    assert plan_actions(NAMES, [], nodes, claims=True, now=T0) == [
        MarkDown(name, GONE_REASON) for name in NAMES["h100"]
    ]


def test_a_node_drained_for_its_hardware_has_its_vm_deleted_and_waits_drained() -> None:
    reason = f"{HEALTH_PREFIX} XID: Xid 79 on GPU 3"
    nodes = {"h100-0": drained("h100-0", "vmss000000", reason)}
    actions = plan_actions({"h100": ["h100-0"]}, [vm("vmss000000")], nodes, claims=True, now=T0)
    assert actions == [
        Recreate("hpc-h100-0-vmss/0", "h100", f"h100-0: {reason}"),
        Replace("h100-0", f"{REPLACING}hpc-h100-0-vmss/0 ({reason})"),
    ]


def test_a_node_its_spot_watcher_set_aside_is_replaced_at_once() -> None:
    reason = "clusterfab: spot interruption notice (Preempt, EventId 1)"
    nodes = {"h100-0": node("h100-0", "vmss000000", down=True, states=frozenset({"DOWN"}), reason=reason)}
    actions = plan_actions({"h100": ["h100-0"]}, [vm("vmss000000")], nodes, claims=True, now=T0)
    assert actions == [
        Recreate("hpc-h100-0-vmss/0", "h100", f"h100-0: {reason}"),
        Replace("h100-0", f"{REPLACING}hpc-h100-0-vmss/0 ({reason})"),
    ]


def test_a_replaced_node_is_released_keeping_its_drain_then_returned_to_the_vm_that_claims_it() -> None:
    replacing = f"{REPLACING}hpc-h100-0-vmss/0 (clusterfab-health: XID: Xid 79)"
    names = {"h100": ["h100-0"]}
    # The old VM is gone: its claim goes, the node stays DOWN and drained with its reason.
    gone = {"h100-0": drained("h100-0", "vmss000000", replacing, down=True)}
    assert plan_actions(names, [], gone, claims=True, now=T0) == [
        Release("h100-0", "vmss000000", GONE_REASON, down=True)
    ]
    # The scale set's new VM claimed it (and registered: IDLE+DRAIN): undrained.
    claimed = {"h100-0": drained("h100-0", "vmss000003", replacing)}
    new = vm("vmss000003", minutes=6, number=3)
    assert plan_actions(names, [new], claimed, claims=True, now=T0) == [
        Return("h100-0", "clusterfab: hpc-h100-0-vmss/3 started for it (" + replacing + ")", down=False)
    ]
    # A VM older than the drain that claims it is no new machine: it stays drained.
    old = vm("vmss000003", minutes=-6, number=3)
    assert plan_actions(names, [old], claimed, claims=True, now=T0) == []


class RecordingScontrol:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes, self.calls = nodes, []  # type: list[dict[str, Any]], list[list[str]]

    def __call__(self, argv: list[str], **_: Any) -> Any:
        self.calls.append(argv)
        out = json.dumps({"nodes": self.nodes}) if argv[:3] == ["scontrol", "show", "nodes"] else ""
        return type("Done", (), {"stdout": out, "returncode": 0})()


def test_a_release_puts_the_nodes_own_name_back_as_host_and_address() -> None:
    scontrol = RecordingScontrol([])
    Scontrol(run=scontrol).apply(Release("h100-2", "vmss000002", GONE_REASON, down=False))
    Scontrol(run=scontrol).apply(Release("h100-1", "vmss000001", GONE_REASON, down=True))
    assert scontrol.calls == [
        [
            "scontrol",
            "update",
            "NodeName=h100-2",
            "NodeAddr=h100-2",
            "NodeHostname=h100-2",
            "State=DOWN",
            f"Reason={GONE_REASON}",
        ],
        ["scontrol", "update", "NodeName=h100-1", "NodeAddr=h100-1", "NodeHostname=h100-1"],
    ]


def test_scontrol_reads_the_host_a_node_was_claimed_by() -> None:
    scontrol = RecordingScontrol(
        [
            {"name": "h100-0", "address": "10.20.0.4", "hostname": "vmss000000", "state": ["IDLE"]},
            {"name": "h100-1", "address": "h100-1", "hostname": "h100-1", "state": ["DOWN"]},
        ]
    )
    nodes = Scontrol(run=scontrol).nodes()
    assert (nodes["h100-0"].claimed_by, nodes["h100-1"].claimed_by) == ("vmss000000", None)


# --- The cloud side: a stand-in for Azure Resource Manager ----------------------------------------------


def _scale_set(
    name: str, unit: str, capacity: int, *, stack: str = "prod", state: str = "Succeeded"
) -> dict[str, Any]:
    tags = {BLUEPRINT_TAG: "hpc", STACK_TAG: stack, NODE_GROUP_TAG: "h100", FABRIC_UNIT_TAG: unit}
    return {
        "id": f"{GROUP_ID}/providers/Microsoft.Compute/virtualMachineScaleSets/{name}",
        "name": name,
        "type": "Microsoft.Compute/virtualMachineScaleSets",
        "location": "southcentralus",
        "tags": tags,
        "sku": {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": capacity},
        "properties": {"provisioningState": state, "singlePlacementGroup": True},
    }


def _vm(scale_set: str, number: int, host: str, created: str) -> dict[str, Any]:
    return {
        "id": f"{GROUP_ID}/providers/Microsoft.Compute/virtualMachineScaleSets/{scale_set}/virtualMachines/"
        f"{number}",
        "name": f"{scale_set}_{number}",
        "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
        "location": "southcentralus",
        "instanceId": str(number),
        "properties": {
            "provisioningState": "Succeeded",
            "osProfile": {"computerName": host, "adminUsername": "clusterfab"},
            "timeCreated": created,
        },
    }


class Arm:
    """Azure Resource Manager for one resource group: lists scale sets and their VMs (one item per page,
    with nextLink, as ARM pages), deletes instances, updates a scale set's sku."""

    def __init__(self, sets: list[dict[str, Any]], vms: Mapping[str, list[dict[str, Any]]]) -> None:
        self.sets, self.vms = sets, dict(vms)
        self.calls: list[tuple[str, str, Any]] = []

    def _page(self, items: list[dict[str, Any]], url: str) -> dict[str, Any]:
        base, _, query = url.partition("?")
        skip = int(dict(p.split("=") for p in query.split("&")).get("skip", "0"))
        page: dict[str, Any] = {"value": items[skip : skip + 1]}
        if skip + 1 < len(items):
            page["nextLink"] = f"{base}?api-version=2024-11-01&skip={skip + 1}"
        return page

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        self.calls.append((method, url, body))
        path = url.partition("?")[0]
        assert url.partition("?")[2].startswith("api-version=2024-11-01")
        if method == "GET" and path == SETS:
            return self._page(self.sets, url)
        if method == "GET" and path.endswith("/virtualMachines"):
            return self._page(self.vms[path.removeprefix(SETS + "/").partition("/")[0]], url)
        if method in ("POST", "PATCH"):
            return None  # 202 Accepted / an update running: the answers are not read
        raise AssertionError(f"unexpected {method} {url}")


LOCK_FILE = "/tmp/clusterfab-test-azure-capacity.lock"
UNITS = {"h100-0": Unit("h100", 0, 2, 2), "h100-1": Unit("h100", 2, 1, 1)}


def _arm(**kw: Any) -> Arm:
    return Arm(
        [
            _scale_set("hpc-h100-0-vmss", "h100-0", 2, **kw),
            _scale_set("hpc-h100-1-vmss", "h100-1", 1),
            _scale_set("hpc-h100-0-vmss-dev", "h100-0", 2, stack="dev"),  # another stack's
        ],
        {
            "hpc-h100-0-vmss": [
                _vm("hpc-h100-0-vmss", 0, "hpc-h100-0000000", "2026-11-29T11:00:00.1234567+00:00"),
                _vm("hpc-h100-0-vmss", 3, "hpc-h100-0000003", "2026-11-29T11:30:00.5+00:00"),
            ],
            "hpc-h100-1-vmss": [_vm("hpc-h100-1-vmss", 1, "hpc-h100-1000001", "2026-11-29T11:00:00+00:00")],
        },
    )


def _fleet(arm: Any, units: Mapping[str, Unit] = UNITS, lock: str = "") -> ArmFleet:
    return ArmFleet(
        arm,
        lock=lock or LOCK_FILE,
        subscription=SUBSCRIPTION,
        resource_group=GROUP,
        blueprint="hpc",
        stack="prod",
        units=units,
        api="https://arm.test",
    )


def test_the_stand_in_answers_as_azure_specifies_them() -> None:
    """Every answer of the stand-in is a VirtualMachineScaleSet or a VirtualMachineScaleSetVM of the
    specification (read-only properties allowed: they are answers)."""
    arm = _arm()
    for item in arm.sets:
        problems = body_problems(COMPUTE, COMPUTE.body(SCALE_SET), item)
        assert [p for p in problems if "read-only" not in p] == []
    for items in arm.vms.values():
        for item in items:
            problems = body_problems(COMPUTE, COMPUTE.body(SCALE_SET_VM), item)
            assert [p for p in problems if "read-only" not in p] == []
    # What the fleet reads is read-only in the specification: the API sets it.
    read_only = {
        p.split(":")[0]
        for p in body_problems(COMPUTE, COMPUTE.body(SCALE_SET_VM), arm.vms["hpc-h100-1-vmss"][0])
        if "read-only" in p
    }
    assert {"instanceId", "properties.timeCreated"} <= read_only


def test_the_fleet_lists_each_units_vms_by_their_host_names_across_pages() -> None:
    arm = _arm()
    assert _fleet(arm).instances() == [
        Instance(
            "hpc-h100-0-vmss/0",
            "h100",
            "",
            dt.datetime(2026, 11, 29, 11, 0, 0, 123456, dt.UTC),
            None,
            host="hpc-h100-0000000",
        ),
        Instance(
            "hpc-h100-0-vmss/3",
            "h100",
            "",
            dt.datetime(2026, 11, 29, 11, 30, 0, 500000, dt.UTC),
            None,
            host="hpc-h100-0000003",
        ),
        Instance(
            "hpc-h100-1-vmss/1",
            "h100",
            "",
            dt.datetime(2026, 11, 29, 11, 0, tzinfo=dt.UTC),
            None,
            host="hpc-h100-1000001",
        ),
    ]
    gets = [url for method, url, _ in arm.calls if method == "GET"]
    assert gets[:3] == [
        f"{SETS}?api-version=2024-11-01",
        f"{SETS}?api-version=2024-11-01&skip=1",
        f"{SETS}?api-version=2024-11-01&skip=2",
    ]
    assert f"{SETS}/hpc-h100-0-vmss/virtualMachines?api-version=2024-11-01&skip=1" in gets
    assert not any("hpc-h100-0-vmss-dev" in url for url in gets)  # another stack's scale set


def test_a_unit_whose_scale_set_cannot_be_seen_fails_the_round() -> None:
    """Not an empty list: every claim of its VMs would be released."""
    with pytest.raises(CloudError) as info:
        _fleet(_arm(), {**UNITS, "h100-2": Unit("h100", 3, 1, 1)}).instances()
    assert (info.value.code, info.value.message) == ("NoScaleSet", "no scale set of fabric unit h100-2 found")


def test_deleting_vms_names_each_scale_sets_instances_once() -> None:
    arm = _arm()
    _fleet(arm).terminate(["hpc-h100-0-vmss/0", "hpc-h100-1-vmss/1", "hpc-h100-0-vmss/3"])
    _fleet(arm).recreate("h100", "hpc-h100-0-vmss/5")
    assert [(m, u, b) for m, u, b in arm.calls if m == "POST"] == [
        ("POST", f"{SETS}/hpc-h100-0-vmss/delete?api-version=2024-11-01", {"instanceIds": ["0", "3"]}),
        ("POST", f"{SETS}/hpc-h100-1-vmss/delete?api-version=2024-11-01", {"instanceIds": ["1"]}),
        ("POST", f"{SETS}/hpc-h100-0-vmss/delete?api-version=2024-11-01", {"instanceIds": ["5"]}),
    ]


def test_a_scale_set_below_its_units_size_is_raised_back_once_it_is_settled() -> None:
    arm = _arm()
    arm.sets[0]["sku"]["capacity"] = 1  # a VM was deleted from it
    arm.sets[1]["sku"]["capacity"] = 3  # raised by hand: never lowered
    assert _fleet(arm).keep_sizes() == ["scale set hpc-h100-0-vmss (unit h100-0): capacity 1 -> 2"]
    [(method, url, body)] = [c for c in arm.calls if c[0] == "PATCH"]
    assert (method, url) == ("PATCH", f"{SETS}/hpc-h100-0-vmss?api-version=2024-11-01")
    assert body == {"sku": {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 2}}
    # The update's body is a scale set's as the specification has it (the name and location are the
    # resource's own).
    assert (
        body_problems(COMPUTE, COMPUTE.body(SCALE_SET), body, provided=frozenset({"name", "location"})) == []
    )
    # While a delete still runs on it (Updating), the capacity waits for the next round.
    busy = _arm(state="Updating")
    busy.sets[0]["sku"]["capacity"] = 1
    assert _fleet(busy).keep_sizes() == []
    assert [c for c in busy.calls if c[0] == "PATCH"] == []


def test_one_round_reads_slurmctld_before_the_cloud_releases_a_gone_vms_claim_and_keeps_sizes() -> None:
    arm = _arm()
    arm.sets[1]["sku"]["capacity"] = 0
    order: list[str] = []
    scontrol = RecordingScontrol(
        [
            {"name": "h100-0", "address": "10.20.0.4", "hostname": "hpc-h100-0000000", "state": ["IDLE"]},
            {"name": "h100-1", "address": "10.20.0.5", "hostname": "hpc-h100-0000001", "state": ["DOWN"]},
            {"name": "h100-2", "address": "10.20.0.6", "hostname": "hpc-h100-1000001", "state": ["IDLE"]},
        ]
    )

    def recording(argv: list[str], **kw: Any) -> Any:
        order.append(" ".join(argv[:3]))
        return scontrol(argv, **kw)

    def listing(method: str, url: str, body: Any = None) -> Any:
        order.append(f"{method} {url.removeprefix(SETS)[:30]}")
        return arm(method, url, body)

    counts = Counts()
    done = sync(NAMES, _fleet(listing), Scontrol(run=recording), claims=True, counts=counts, now=T0)  # type: ignore[arg-type]
    assert order[0] == "scontrol show nodes"
    assert done == [Release("h100-1", "hpc-h100-0000001", GONE_REASON, down=True)]
    assert scontrol.calls[-1] == [
        "scontrol",
        "update",
        "NodeName=h100-1",
        "NodeAddr=h100-1",
        "NodeHostname=h100-1",
    ]
    assert [c[:2] for c in arm.calls if c[0] == "PATCH"] == [
        ("PATCH", f"{SETS}/hpc-h100-1-vmss?api-version=2024-11-01")
    ]
    assert (dict(counts.done), dict(counts.failed)) == ({"Release": 1, "KeepSize": 1}, {})


def test_the_azure_program_finds_its_subscription_and_group_where_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def where(imds: str) -> dict[str, Any]:
        asked.append(imds)
        return {"subscriptionId": SUBSCRIPTION, "resourceGroupName": GROUP, "name": "hpc-controller"}

    monkeypatch.setattr(nodes_azure, "where_am_i", where)
    settings = {
        "cloud": "azure",
        "blueprint": "hpc",
        "stack": "prod",
        "units": {"h100-0": {"group": "h100", "first": 0, "nodes": 2, "static": 2}},
        "arm_url": "https://arm.test",
        "imds_url": "http://imds.test",
    }
    fleet = nodes_azure.CLOUD.fleet(settings)
    assert asked == ["http://imds.test"]
    assert fleet._sets_url == SETS  # where its requests go
    assert nodes_azure.CLOUD.refusal(settings) is None


SYNC_UNIT = "playbooks/roles/slurm_controller/templates/clusterfab-slurm-sync.service.j2"


def _sync_unit(client_id: str) -> str:
    import jinja2

    from tests.conftest import REPO

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    return env.from_string((REPO / SYNC_UNIT).read_text()).render(
        ansible_managed="Ansible managed",
        slurm_controller_nodes_lib="/opt/files/lib",
        slurm_controller_sync_config="/opt/files/nodesync.json",
        slurm_controller_client_id=client_id,
        __slurm_controller_fleet_file="/etc/clusterfab-slurm/fleet.json",
        __slurm_controller_nodes_counts="/var/lib/clusterfab/slurm-nodes/counts.json",
    )


def test_the_sync_unit_names_the_controllers_identity_on_azure_alone() -> None:
    client = "0d1a7d49-ba2c-5273-8bd4-a3e81a6c0f47"
    environment = [line for line in _sync_unit(client).splitlines() if line.startswith("Environment=")]
    assert environment == ["Environment=PYTHONPATH=/opt/files/lib", f"Environment=AZURE_CLIENT_ID={client}"]
    assert [line for line in _sync_unit("").splitlines() if line.startswith("Environment=")] == [
        "Environment=PYTHONPATH=/opt/files/lib"
    ]


# --- Elastic units: the scale set grows by one VM per node a job is given --------------------------------


ELASTIC = {"h100": ["h100-2", "h100-3"]}
"""h100 with 2 always-up nodes (unit h100-0) and 2 elastic ones (unit h100-1)."""
UP = frozenset({"IDLE"})


def test_a_vm_holding_an_elastic_node_is_elastic_and_a_gone_one_loses_its_node() -> None:
    nodes = {
        "h100-0": node("h100-0", "vmss000000"),
        "h100-1": node("h100-1", "vmss000001"),
        "h100-2": node("h100-2", "vmss100000", states=UP),
        "h100-3": node("h100-3", "vmss100001", states=UP),  # its VM is gone
    }
    instances = [vm("vmss000000"), vm("vmss000001", number=1), vm("vmss100000", number=5)]
    actions = plan_actions(
        {"h100": ["h100-0", "h100-1"]}, instances, nodes, elastic=ELASTIC, claims=True, now=T0
    )
    assert actions == [Release("h100-3", "vmss100001", LOST_REASON, down=False)]
    # Next round: DOWN with the lost reason, its claim gone: powered down at once.
    nodes["h100-3"] = node("h100-3", down=True, states=frozenset({"DOWN"}), reason=LOST_REASON, reason_at=T0)
    assert plan_actions(
        {"h100": ["h100-0", "h100-1"]}, instances, nodes, elastic=ELASTIC, claims=True, now=T0
    ) == [PowerDown("h100-3", LOST_REASON)]


def test_a_powered_down_node_keeps_its_state_when_its_stale_claim_goes() -> None:
    nodes = {"h100-2": node("h100-2", "vmss100000", states=frozenset({"IDLE", "POWERED_DOWN"}))}
    assert plan_actions({"h100": []}, [], nodes, elastic={"h100": ["h100-2"]}, claims=True, now=T0) == [
        Release("h100-2", "vmss100000", LOST_REASON, down=True)
    ]


def test_a_vm_that_claims_no_node_within_the_grace_is_deleted() -> None:
    """A scale-out whose job went before the VM booted: no node powers up for it, and it would bill."""
    nodes = {"h100-2": node("h100-2", states=frozenset({"IDLE", "POWERED_DOWN"}))}
    late = vm("vmss100000", minutes=-int(CLAIM_GRACE.total_seconds() // 60), number=4)
    booting = vm("vmss100001", minutes=-5, number=5)
    assert plan_actions(
        {"h100": []}, [late, booting], nodes, elastic={"h100": ["h100-2"]}, claims=True, now=T0
    ) == [Terminate("hpc-h100-0-vmss/4", "it claimed no node in 1:00:00 (its unit is full)")]


ELASTIC_UNITS = {"h100-0": Unit("h100", 0, 2, 2), "h100-1": Unit("h100", 2, 2, 0)}


def test_resume_grows_the_elastic_units_scale_set_by_one_vm_per_node(tmp_path: Any) -> None:
    arm = _arm()
    arm.sets[1]["tags"][FABRIC_UNIT_TAG] = "h100-1"
    arm.sets[1]["sku"]["capacity"] = 1
    fleet = _fleet(arm, ELASTIC_UNITS, lock=str(tmp_path / "lock"))
    assert fleet.create("h100", ["h100-2", "h100-3"]) == []
    [(method, url, body)] = [c for c in arm.calls if c[0] == "PATCH"]
    assert (method, url) == ("PATCH", f"{SETS}/hpc-h100-1-vmss?api-version=2024-11-01")
    assert body == {"sku": {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 3}}
    # An always-up node, or another group's, is no node a scale-out makes.
    for name in ("h100-1", "b200-2"):
        with pytest.raises(CloudError) as info:
            fleet.create("h100", [name])
        assert info.value.code == "NoElasticUnit"
    # The sync never raises an elastic unit (its size is Slurm's), nor lowers one.
    arm.calls.clear()
    assert fleet.keep_sizes() == []
    assert [c for c in arm.calls if c[0] == "PATCH"] == []


def test_suspend_deletes_the_vms_holding_the_nodes_and_resume_skips_held_ones(tmp_path: Any) -> None:
    arm = _arm()
    fleet = _fleet(arm, lock=str(tmp_path / "lock"))
    nodes = {
        "h100-0": node("h100-0", "hpc-h100-0000003"),
        "h100-1": node("h100-1", "hpc-h100-9999999"),  # its VM is gone already
        "h100-2": node("h100-2"),
    }
    assert claimed_holders(fleet.instances(), nodes, ["h100-0", "h100-1", "h100-2"]) == {
        "h100-0": "hpc-h100-0-vmss/3"
    }
    arm.calls.clear()
    assert suspend_claimed(["h100-0", "h100-1", "h100-2"], fleet, nodes) == ["hpc-h100-0-vmss/3"]
    assert [c for c in arm.calls if c[0] == "POST"] == [
        ("POST", f"{SETS}/hpc-h100-0-vmss/delete?api-version=2024-11-01", {"instanceIds": ["3"]})
    ]


def test_the_programs_act_as_the_controllers_own_identity_named_by_its_tag(monkeypatch) -> None:
    """slurmctld runs the resume and suspend programs without AZURE_CLIENT_ID; the controller's second,
    system-assigned identity (for Microsoft Entra sign-in) is the metadata service's default, so the client id
    of its own comes from its tag. A VM with one identity names none."""
    from clusterfab.core import vocab
    from clusterfab.scheduler.slurm.nodes.azure import IDENTITY_TAG, own_client_id

    assert IDENTITY_TAG == vocab.IDENTITY_TAG
    monkeypatch.delenv("AZURE_CLIENT_ID", raising=False)
    controller = {"tagsList": [{"name": "clusterfab-slurm-role", "value": "controller"},
                               {"name": "clusterfab-identity", "value": "c1d"}]}  # fmt: skip
    assert own_client_id(controller) == "c1d"
    assert own_client_id({"tagsList": [{"name": "clusterfab-slurm-role", "value": "controller"}]}) == ""
    assert own_client_id({}) == ""
    monkeypatch.setenv("AZURE_CLIENT_ID", "from-the-unit")
    assert own_client_id(controller) == "from-the-unit"
