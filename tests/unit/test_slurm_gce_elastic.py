"""Elastic Slurm nodes on Compute Engine: the resume program's bulkInsert from the node group's own
template (found through its MIG), the names it gives, the cloud's refusals as the nodes' reasons, the
suspend program's deletes, and the node sync's elastic rules with GCE VMs.

Every request goes through FakeCompute, which checks its method, path and body against the compute.v1
discovery document (tests/unit/test_slurm_nodesync.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, SLURM_ELASTIC_TAG, SLURM_NODE_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes.actions import MarkDown, PowerDown, Terminate
from clusterfab.scheduler.slurm.nodes.fleet import ELASTIC_TAG, CloudError
from clusterfab.scheduler.slurm.nodes.gcp import GceFleet, GceGroup
from clusterfab.scheduler.slurm.nodes.groups import Group
from clusterfab.scheduler.slurm.nodes.nodesync import sync
from clusterfab.scheduler.slurm.nodes.power import plan_resume, resume, suspend
from clusterfab.scheduler.slurm.nodes.reconcile import LOST_REASON, elastic_holders
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol
from tests.unit.test_slurm_nodesync import FakeCompute, RecordingScontrol, _vm

PROJECT, ZONE = "ml-prod", "us-central1-b"
GROUPS = {"h100": Group("h100", 2, 6)}
SOURCE = GceGroup(base_instance_name="llm-h100", vm_prefix="llm-prod-h100-elastic")
LABELS = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", NODE_GROUP_TAG: "h100", "clusterfab-component": "h100"}
TEMPLATE_LINK = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/instanceTemplates"


def _template(name: str, stack: str) -> dict[str, Any]:
    """An instance template as instanceTemplates.get returns it (components/gcp/node_group.py's)."""
    return {
        "name": name,
        "selfLink": f"{TEMPLATE_LINK}/{name}",
        "properties": {
            "machineType": "a3-megagpu-8g",
            "labels": {**LABELS, STACK_TAG: stack},
            "metadata": {"items": [{"key": "startup-script", "value": "#!/bin/bash"}]},
            "scheduling": {"provisioningModel": "SPOT", "instanceTerminationAction": "DELETE"},
        },
    }


def _mig(name: str, base: str, template: str) -> dict[str, Any]:
    # The MIG pins its template by the unique self link (components/gcp/node_group.py).
    link = f"{TEMPLATE_LINK}/{template}?uniqueId=4242"
    return {
        "name": name,
        "baseInstanceName": base,
        "versions": [{"name": "primary", "instanceTemplate": link}],
    }


def compute(*vms: dict[str, Any]) -> FakeCompute:
    """The zone: this stack's h100 MIG, another stack's MIG of the same base name (same blueprint), and
    another group's MIG."""
    return FakeCompute(
        list(vms),
        page=1,
        migs=[
            _mig("llm-h100-mig-dev", "llm-h100", "llm-h100-template-dev"),
            _mig("llm-b200-mig-prod", "llm-b200", "llm-b200-template-prod"),
            _mig("llm-h100-mig-prod", "llm-h100", "llm-h100-template-prod"),
        ],
        templates=[
            _template("llm-h100-template-dev", "dev"),
            _template("llm-h100-template-prod", "prod"),
            _template("llm-b200-template-prod", "prod"),
        ],
    )


def fleet(http: Callable[..., Any], source: GceGroup = SOURCE) -> GceFleet:
    """The h100 group's fleet over `http` (the FakeCompute, or a wrapper that meddles with it)."""
    return GceFleet(http, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod", groups={"h100": source})


def deleted_vms(gce: FakeCompute) -> list[str]:
    return [path.rsplit("/", 1)[-1] for method, path in gce.calls if method == "compute.instances.delete"]


def test_an_elastic_nodes_vm_name_is_its_groups_prefix_and_its_number() -> None:
    assert SOURCE.vm_name("h100-12") == "llm-prod-h100-elastic-12"
    with pytest.raises(CloudError, match="InvalidName"):
        GceGroup("b", "x" * 60).vm_name("h100-1234")


def test_elastic_vms_come_from_one_bulk_insert_of_the_groups_current_template() -> None:
    gce = compute(_vm("llm-h100-abcd", "h100", "prod", "10.50.0.20", 1, node="h100-0"))
    ids = fleet(gce).create("h100", ["h100-2", "h100-3"])
    assert ids == ["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"]
    assert gce.bodies["compute.instances.bulkInsert"] == [
        {
            "count": "2",
            "minCount": "2",  # all or nothing
            "sourceInstanceTemplate": f"{TEMPLATE_LINK}/llm-h100-template-prod",
            "perInstanceProperties": {"llm-prod-h100-elastic-2": {}, "llm-prod-h100-elastic-3": {}},
            "instanceProperties": {"labels": {**LABELS, SLURM_ELASTIC_TAG: "true"}},
        }
    ]
    zonal = f"projects/{PROJECT}/zones/{ZONE}"
    assert gce.calls == [
        # One MIG a page (page size 1 here): the pages are followed.
        ("compute.instanceGroupManagers.list", f"{zonal}/instanceGroupManagers"),
        (
            "compute.instanceTemplates.get",
            f"projects/{PROJECT}/global/instanceTemplates/llm-h100-template-dev",
        ),
        ("compute.instanceGroupManagers.list", f"{zonal}/instanceGroupManagers"),
        (
            "compute.instanceTemplates.get",
            f"projects/{PROJECT}/global/instanceTemplates/llm-h100-template-prod",
        ),
        ("compute.instances.bulkInsert", f"{zonal}/instances/bulkInsert"),
        ("compute.zoneOperations.wait", f"{zonal}/operations/operation-bulk/wait"),
        ("compute.instances.get", f"{zonal}/instances/llm-prod-h100-elastic-2"),
        ("compute.instances.setMetadata", f"{zonal}/instances/llm-prod-h100-elastic-2/setMetadata"),
        ("compute.instances.get", f"{zonal}/instances/llm-prod-h100-elastic-3"),
        ("compute.instances.setMetadata", f"{zonal}/instances/llm-prod-h100-elastic-3/setMetadata"),
    ]
    for vm, node in zip(ids, ["h100-2", "h100-3"], strict=True):
        created = gce.instances[vm]
        assert created["labels"] == {**LABELS, SLURM_ELASTIC_TAG: "true"}
        # The template's metadata (the boot) stays; the node name is added, where slurmd's start reads it.
        assert created["metadata"]["items"] == [
            {"key": "startup-script", "value": "#!/bin/bash"},
            {"key": SLURM_NODE_TAG, "value": node},
        ]


def test_the_next_request_reuses_the_template_it_found() -> None:
    gce = compute()
    gce.waits_needed = 2  # the operation is still RUNNING after the first wait
    elastic = fleet(gce)
    elastic.create("h100", ["h100-2"])
    gce.waits_needed = 1
    elastic.create("h100", ["h100-3"])
    methods = [method for method, _ in gce.calls]
    assert methods.count("compute.instanceGroupManagers.list") == 2  # two pages, once
    assert methods.count("compute.zoneOperations.wait") == 3


def test_the_resumed_vms_are_the_nodes_holders_and_suspend_deletes_only_them() -> None:
    static = _vm("llm-h100-abcd", "h100", "prod", "10.50.0.20", 1, node="h100-0")
    gce = compute(static)
    elastic = fleet(gce)
    report = resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), elastic, RecordingSlurm())
    assert report.created == {"no job": ["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"]}
    holders = elastic_holders(elastic.instances(), ["h100-0", "h100-2", "h100-3", "h100-4"])
    assert holders == {"h100-2": "llm-prod-h100-elastic-2", "h100-3": "llm-prod-h100-elastic-3"}
    # A repeated resume finds them and creates nothing.
    again = plan_resume(["h100-2", "h100-3"], [], GROUPS, holders)
    assert (again.units, again.existing) == ((), ("h100-2", "h100-3"))
    assert sorted(suspend(["h100-2", "h100-3", "h100-0"], elastic)) == sorted(holders.values())
    assert sorted(gce.instances) == ["llm-h100-abcd"]  # the static node (no elastic label) stays


class RecordingSlurm:
    def __init__(self) -> None:
        self.updates: list[tuple[list[str], Any]] = []

    def update(self, names: Any, action: Any) -> None:
        self.updates.append((list(names), action))


@pytest.mark.parametrize(
    ("refusal", "code"),
    [
        ((None, "ZONE_RESOURCE_POOL_EXHAUSTED"), "ZONE_RESOURCE_POOL_EXHAUSTED"),
        ((None, "QUOTA_EXCEEDED"), "QUOTA_EXCEEDED"),
        ((403, "quotaExceeded"), "quotaExceeded"),
        ((409, "alreadyExists"), "alreadyExists"),
    ],
)
def test_the_clouds_refusal_becomes_the_nodes_reason(refusal: tuple[int | None, str], code: str) -> None:
    """An operation error (the bulkInsert ran and could not create them all) or an HTTP error (refused
    up front): the job's nodes go DOWN with the code, and no VM is left."""
    gce = compute()
    gce.refuse = refusal
    slurm = RecordingSlurm()
    report = resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), slurm)
    reason = f"clusterfab: resume failed: {code}"
    assert slurm.updates == [(["h100-2", "h100-3"], MarkDown("h100-2", reason))]
    assert report.failed == {"h100-2": reason, "h100-3": reason}
    assert gce.instances == {}


PLACED = GceGroup("llm-h100", "llm-prod-h100-elastic", "llm-prod-h100-placement", 4)
"""With compact placement; four VMs a policy here (the stack takes the catalog's limit)."""


def test_the_placement_policies_cover_the_elastic_nodes_numbers() -> None:
    assert PLACED.placement_policies(2, 10) == [f"llm-prod-h100-placement-{k}" for k in (0, 1, 2)]
    assert PLACED.placement_policies(4, 8) == [f"llm-prod-h100-placement-{k}" for k in (1,)]
    assert PLACED.placement_policies(3, 3) == []
    assert SOURCE.placement_policies(2, 6) == []  # no compact placement
    assert (PLACED.placement_policy("h100-7"), SOURCE.placement_policy("h100-7")) == (
        "llm-prod-h100-placement-1",
        None,
    )


def test_elastic_vms_are_created_in_their_nodes_placement_policy() -> None:
    gce = compute()
    ids = fleet(gce, PLACED).create("h100", ["h100-2", "h100-3", "h100-4"])
    assert ids == ["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3", "llm-prod-h100-elastic-4"]
    # One bulkInsert per policy, the policy by name (InstanceProperties.resourcePolicies takes names).
    assert [
        (list(b["perInstanceProperties"]), b["instanceProperties"]["resourcePolicies"])
        for b in gce.bodies["compute.instances.bulkInsert"]
    ] == [
        (["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"], ["llm-prod-h100-placement-0"]),
        (["llm-prod-h100-elastic-4"], ["llm-prod-h100-placement-1"]),
    ]
    assert {vm: gce.instances[vm]["resourcePolicies"] for vm in ids} == {
        "llm-prod-h100-elastic-2": ["llm-prod-h100-placement-0"],
        "llm-prod-h100-elastic-3": ["llm-prod-h100-placement-0"],
        "llm-prod-h100-elastic-4": ["llm-prod-h100-placement-1"],
    }


def test_a_refused_second_placement_takes_back_the_first() -> None:
    """The nodes of one request stand or fall together, across placement policies too."""
    gce = compute()
    inserts = 0

    def second_refused(method: str, url: str, body: Any = None) -> Any:
        nonlocal inserts
        if url.endswith("/bulkInsert"):
            inserts += 1
            if inserts == 2:
                gce.refuse = (None, "ZONE_RESOURCE_POOL_EXHAUSTED")
        return gce(method, url, body)

    with pytest.raises(CloudError, match="ZONE_RESOURCE_POOL_EXHAUSTED"):
        fleet(second_refused, PLACED).create("h100", ["h100-3", "h100-4"])
    assert gce.instances == {}
    assert deleted_vms(gce) == ["llm-prod-h100-elastic-3"]


def test_a_bulk_insert_that_does_not_finish_is_given_up() -> None:
    """Five waits of about 2 minutes each (zoneOperations.wait's own bound): about 10 minutes, well inside
    the partition's ResumeTimeout; an operation done on the fifth wait is not given up."""
    gce = compute()
    gce.waits_needed = 6
    with pytest.raises(CloudError, match=r"^OperationTimeout: operation-bulk not done after 5 waits$"):
        fleet(gce).create("h100", ["h100-2"])
    assert [m for m, _ in gce.calls].count("compute.zoneOperations.wait") == 5
    done = compute()
    done.waits_needed = 5
    fleet(done).create("h100", ["h100-2"])
    assert [m for m, _ in done.calls].count("compute.zoneOperations.wait") == 5


def test_vms_that_cannot_be_named_are_deleted_again() -> None:
    gce = compute()

    def stale(method: str, url: str, body: Any = None) -> Any:
        if url.endswith("/llm-prod-h100-elastic-3/setMetadata"):
            gce.instances["llm-prod-h100-elastic-3"]["metadata"]["fingerprint"] = "changed-meanwhile"
        return gce(method, url, body)

    with pytest.raises(CloudError, match="RuntimeError"):
        fleet(stale).create("h100", ["h100-2", "h100-3"])
    assert gce.instances == {}
    assert deleted_vms(gce) == ["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"]


@pytest.mark.parametrize(
    ("migs", "found"),
    [
        ([_mig("llm-h100-mig-dev", "llm-h100", "llm-h100-template-dev")], 0),  # only another stack's
        (
            [
                _mig("a", "llm-h100", "llm-h100-template-prod"),
                _mig("b", "llm-h100", "llm-h100-template-prod"),
            ],
            2,
        ),
    ],
)
def test_the_template_comes_from_exactly_one_mig_of_this_stack(
    migs: list[dict[str, Any]], found: int
) -> None:
    gce = compute()
    gce.migs = migs
    with pytest.raises(CloudError, match=f"NoNodeGroup: {found} managed instance groups named llm-h100"):
        fleet(gce).create("h100", ["h100-2"])
    assert "compute.instances.bulkInsert" not in {m for m, _ in gce.calls}


def test_a_group_without_gce_settings_is_refused_before_any_call() -> None:
    gce = compute()
    with pytest.raises(CloudError, match="NoNodeGroup"):
        GceFleet(gce, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod").create("h100", ["h100-2"])
    assert gce.calls == []


def test_terminate_deletes_each_vm_and_a_vm_already_gone_is_no_error() -> None:
    gce = compute(
        _vm("llm-prod-h100-elastic-2", "h100", "prod", "10.50.1.2", 1, node="h100-2"),
        _vm("llm-prod-h100-elastic-3", "h100", "prod", "10.50.1.3", 1, node="h100-3"),
    )
    fleet(gce).terminate(["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-9", "llm-prod-h100-elastic-3"])
    assert gce.instances == {}
    assert [m for m, _ in gce.calls] == ["compute.instances.delete"] * 3


def test_a_refused_delete_is_raised_after_the_others_were_tried() -> None:
    gce = compute(
        _vm("llm-prod-h100-elastic-2", "h100", "prod", "10.50.1.2", 1, node="h100-2"),
        _vm("llm-prod-h100-elastic-3", "h100", "prod", "10.50.1.3", 1, node="h100-3"),
    )
    from tests.unit.test_slurm_nodesync import _http_error

    def forbidden(method: str, url: str, body: Any = None) -> Any:
        if url.endswith("/llm-prod-h100-elastic-2"):
            raise _http_error(url, 403, "forbidden", "Required 'compute.instances.delete' permission")
        return gce(method, url, body)

    elastic = GceFleet(forbidden, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod")
    with pytest.raises(CloudError, match=r"forbidden: Required 'compute\.instances\.delete' permission"):
        elastic.terminate(["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"])
    assert sorted(gce.instances) == ["llm-prod-h100-elastic-2"]


# --- the node sync's elastic rules, with GCE VMs ------------------------------------------------------

T0 = dt.datetime(2026, 11, 25, 20, 30, tzinfo=dt.UTC)  # _vm's creation times are 12:MM -08:00


def test_one_sync_round_deletes_a_powered_down_nodes_vm_and_marks_a_lost_one_down() -> None:
    gce = compute(
        _vm("llm-h100-abcd", "h100", "prod", "10.50.0.20", 1, node="h100-0"),
        _vm("llm-h100-efgh", "h100", "prod", "10.50.0.21", 2, node="h100-1"),
        _vm("llm-prod-h100-elastic-3", "h100", "prod", "10.50.1.3", 3, node="h100-3"),
        _vm("llm-prod-h100-elastic-5", "h100", "prod", "10.50.1.5", 4, node=None),  # resume died half way
    )
    for vm in ("llm-prod-h100-elastic-3", "llm-prod-h100-elastic-5"):
        gce.instances[vm]["labels"][SLURM_ELASTIC_TAG] = "true"
    scontrol = RecordingScontrol(
        [
            {"name": "h100-0", "address": "10.50.0.20", "state": ["IDLE"]},
            {"name": "h100-1", "address": "10.50.0.21", "state": ["IDLE"]},
            {"name": "h100-2", "address": "10.50.1.2", "state": ["ALLOCATED", "CLOUD"]},  # VM gone
            {"name": "h100-3", "address": "h100-3", "state": ["IDLE", "CLOUD", "POWERED_DOWN"]},
            {"name": "h100-4", "address": "h100-4", "state": ["IDLE", "CLOUD", "POWERED_DOWN"]},
            {"name": "h100-5", "address": "h100-5", "state": ["IDLE", "CLOUD", "POWERED_DOWN"]},
        ]
    )
    group = GROUPS["h100"]
    done = sync(
        {"h100": group.static_names},
        fleet(gce),
        Scontrol(run=scontrol),
        elastic={"h100": group.elastic_names},
        now=T0,
    )
    assert done == [
        Terminate("llm-prod-h100-elastic-5", "no node name (its resume failed)"),
        MarkDown("h100-2", LOST_REASON),
        Terminate("llm-prod-h100-elastic-3", "h100-3 is powered down"),
    ]
    assert sorted(gce.instances) == ["llm-h100-abcd", "llm-h100-efgh"]
    assert scontrol.updates == [
        ["scontrol", "update", "NodeName=h100-2", "State=DOWN", f"Reason={LOST_REASON}"]
    ]
    down = RecordingScontrol(
        [{"name": "h100-2", "address": "10.50.1.2", "state": ["DOWN", "CLOUD"], "reason": LOST_REASON}]
    )
    assert sync({"h100": []}, fleet(gce), Scontrol(run=down), elastic={"h100": ["h100-2"]}, now=T0) == [
        PowerDown("h100-2", LOST_REASON)
    ]


def test_the_elastic_label_is_the_shipped_constant() -> None:
    assert ELASTIC_TAG == SLURM_ELASTIC_TAG
