"""Flex-start elastic nodes on Compute Engine: the resume program asks for a job's VMs through a MIG of its
own and one resize request (Cluster Toolkit's slurm_files mig_flex.py), capacity arrives later and the node
sync names the VMs for their nodes, a failed request puts its nodes back with the cloud's reason, suspend
deletes VMs through their MIG, resume-fail and the node sync withdraw MIGs no node waits for, and the destroy
hook deletes the MIGs with their VMs.

Every request goes through FakeCompute, which checks its method, path and body against the compute.v1
discovery document (tests/unit/test_slurm_nodesync.py)."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from typing import Any

import pytest

from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    NODE_GROUP_TAG,
    SLURM_ELASTIC_TAG,
    SLURM_NODE_TAG,
    STACK_TAG,
)
from clusterfab.scheduler.slurm.nodes.actions import MarkDown, NameInstance, PowerDown, Withdraw
from clusterfab.scheduler.slurm.nodes.fleet import CloudError, FlexRequest
from clusterfab.scheduler.slurm.nodes.gcp import GceFleet, GceGroup
from clusterfab.scheduler.slurm.nodes.nodesync import sync
from clusterfab.scheduler.slurm.nodes.power import plan_resume, requested, resume, suspend
from clusterfab.scheduler.slurm.nodes.reconcile import GRACE, plan_actions
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol, SlurmNode
from clusterfab.scheduler.slurm.teardown import delete_elastic, group_filter
from tests.unit.test_slurm_gce_elastic import (
    GROUPS,
    LABELS,
    PROJECT,
    TEMPLATE_LINK,
    ZONE,
    RecordingSlurm,
    compute,
)
from tests.unit.test_slurm_nodesync import FakeCompute, RecordingScontrol

FLEX = GceGroup(
    base_instance_name="llm-h100",
    vm_prefix="llm-prod-h100-elastic",
    flex_prefix="llm-prod-h100-flex",
    run_seconds=86400,
)
WORKLOAD_POLICY = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/us-central1/resourcePolicies/llm-h100-wp"
ZONAL = f"projects/{PROJECT}/zones/{ZONE}"
CREATED = dt.datetime.fromisoformat("2026-11-26T04:00:00.000-08:00")


def flex_compute() -> FakeCompute:
    """The zone of test_slurm_gce_elastic, this stack's h100 MIG placed by a workload policy."""
    gce = compute()
    for mig in gce.migs:
        if mig["name"] == "llm-h100-mig-prod":
            mig["resourcePolicies"] = {"workloadPolicy": WORKLOAD_POLICY}
    return gce


def fleet(gce: FakeCompute) -> GceFleet:
    return GceFleet(gce, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod", groups={"h100": FLEX})


def flex_migs(gce: FakeCompute) -> list[dict[str, Any]]:
    return [m for m in gce.migs if m.get("baseInstanceName") == FLEX.flex_prefix]


def test_a_flex_node_is_its_vms_number_and_nothing_else_is() -> None:
    assert FLEX.node_number(FLEX.vm_name("h100-12")) == 12
    for vm in ("llm-prod-h100-elastic-x", "llm-prod-h100-elastic-012", "llm-h100-abcd", "elastic-3"):
        assert FLEX.node_number(vm) is None


def test_a_jobs_flex_nodes_are_one_mig_and_one_resize_request_of_the_groups_template() -> None:
    gce = flex_compute()
    report = resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())

    assert report.created == {"no job": ["llm-prod-h100-elastic-2", "llm-prod-h100-elastic-3"]}
    [mig] = gce.bodies["compute.instanceGroupManagers.insert"]
    assert re.fullmatch(r"llm-prod-h100-flex-[0-9a-f]{8}", mig["name"])
    assert mig == {
        "name": mig["name"],
        "baseInstanceName": "llm-prod-h100-flex",
        "description": "clusterfab flex-start VMs of node group h100: h100-2, h100-3",
        "instanceTemplate": f"{TEMPLATE_LINK}/llm-h100-template-prod",  # this stack's, not dev's
        "targetSize": 0,
        # The MIG carries the cluster's, stack's and group's labels and its own name, which its VMs get
        # too: how the node sync and the destroy hook find it and its VMs.
        "allInstancesConfig": {
            "properties": {
                "labels": {
                    BLUEPRINT_TAG: "llm",
                    STACK_TAG: "prod",
                    NODE_GROUP_TAG: "h100",
                    SLURM_ELASTIC_TAG: "true",
                    "clusterfab-slurm-flex": mig["name"],
                }
            }
        },
        "resourcePolicies": {"workloadPolicy": WORKLOAD_POLICY},
    }
    assert gce.bodies["compute.instanceGroupManagerResizeRequests.insert"] == [
        {
            "name": "resume",
            "instances": [{"name": "llm-prod-h100-elastic-2"}, {"name": "llm-prod-h100-elastic-3"}],
            "requestedRunDuration": {"seconds": "86400"},
        }
    ]
    assert "compute.instances.bulkInsert" not in gce.bodies
    assert gce.calls[-4:] == [
        ("compute.instanceGroupManagers.insert", f"{ZONAL}/instanceGroupManagers"),
        ("compute.zoneOperations.wait", f"{ZONAL}/operations/operation-insert-mig/wait"),
        (
            "compute.instanceGroupManagerResizeRequests.insert",
            f"{ZONAL}/instanceGroupManagers/{mig['name']}/resizeRequests",
        ),
        ("compute.zoneOperations.wait", f"{ZONAL}/operations/operation-insert-request/wait"),
    ]
    assert not any(vm.startswith("llm-prod-h100-elastic") for vm in gce.instances)  # none until capacity


def test_nodes_whose_request_waits_are_not_asked_for_again() -> None:
    gce = flex_compute()
    elastic = fleet(gce)
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), elastic, RecordingSlurm())
    assert requested(elastic) == ["h100-2", "h100-3"]
    again = plan_resume(["h100-2", "h100-3", "h100-4"], [], GROUPS, requested(elastic))
    assert again.existing == ("h100-2", "h100-3")
    assert [launch.names for unit in again.units for launch in unit] == [("h100-4",)]


def test_a_refused_request_takes_its_mig_back_and_sets_the_nodes_down_with_the_reason() -> None:
    gce = flex_compute()
    gce.refuse = (403, "quotaExceeded")
    slurm = RecordingSlurm()
    report = resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), slurm)
    assert report.failed == dict.fromkeys(["h100-2", "h100-3"], "clusterfab: resume failed: quotaExceeded")
    assert flex_migs(gce) == []  # the MIG went with its request
    assert [method for method, _ in gce.calls][-2:] == [
        "compute.instanceGroupManagerResizeRequests.insert",
        "compute.instanceGroupManagers.delete",
    ]


def test_a_refused_mig_is_the_nodes_reason() -> None:
    gce = flex_compute()
    gce.refuse_mig = (403, "QUOTA_EXCEEDED")
    report = resume(plan_resume(["h100-2"], [], GROUPS), fleet(gce), RecordingSlurm())
    assert report.failed == {"h100-2": "clusterfab: resume failed: QUOTA_EXCEEDED"}
    assert flex_migs(gce) == []


def _powering_up(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "address": n, "state": ["ALLOCATED", "CLOUD", "POWERING_UP"]} for n in names]


def _round(gce: FakeCompute, nodes: list[dict[str, Any]], now: dt.datetime) -> tuple[list[Any], Any]:
    scontrol = RecordingScontrol(nodes)
    group = GROUPS["h100"]
    done = sync(
        {"h100": group.static_names},
        fleet(gce),
        Scontrol(run=scontrol),
        elastic={"h100": group.elastic_names},
        now=now,
    )
    return done, scontrol


def test_capacity_arrives_and_the_node_sync_names_each_vm_for_its_node() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    [mig] = flex_migs(gce)
    vms = gce.grant(mig["name"])
    # Hours after the request: the VMs are new, the MIG is old; nothing is withdrawn or deleted.
    gce.clock = "2026-11-26T09:00:00.000-08:00"
    for vm in vms:
        gce.instances[vm]["creationTimestamp"] = gce.clock
    later = dt.datetime.fromisoformat(gce.clock) + GRACE * 2
    done, _ = _round(gce, _powering_up("h100-2", "h100-3"), later)

    assert done == [
        NameInstance("llm-prod-h100-elastic-2", "h100-2"),
        NameInstance("llm-prod-h100-elastic-3", "h100-3"),
    ]
    for vm, node in zip(vms, ["h100-2", "h100-3"], strict=True):
        created = gce.instances[vm]
        assert created["labels"] == {
            **LABELS,
            SLURM_ELASTIC_TAG: "true",
            "clusterfab-slurm-flex": mig["name"],
        }
        assert {"key": SLURM_NODE_TAG, "value": node} in created["metadata"]["items"]
    # Named: the next round has nothing to do.
    assert _round(gce, _powering_up("h100-2", "h100-3"), later)[0] == []


def test_a_failed_request_sets_its_waiting_nodes_down_and_goes() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    [mig] = flex_migs(gce)
    gce.fail(mig["name"], "ZONE_RESOURCE_POOL_EXHAUSTED")
    reason = "clusterfab: resume failed: ZONE_RESOURCE_POOL_EXHAUSTED"

    done, scontrol = _round(gce, _powering_up("h100-2", "h100-3"), CREATED)  # at once, not after GRACE

    assert done == [
        MarkDown("h100-2", reason),
        MarkDown("h100-3", reason),
        Withdraw(mig["name"], "its resize request failed: ZONE_RESOURCE_POOL_EXHAUSTED"),
    ]
    assert flex_migs(gce) == []
    assert scontrol.updates == [
        ["scontrol", "update", f"NodeName={n}", "State=DOWN", f"Reason={reason}"]
        for n in ("h100-2", "h100-3")
    ]
    # DOWN with our reason: powered down after the retry wait, and Slurm asks again when it schedules the job.
    down = [
        {
            "name": "h100-2",
            "address": "h100-2",
            "state": ["DOWN", "CLOUD", "POWERING_UP"],
            "reason": reason,
            "reason_changed_at": {"set": True, "number": int(CREATED.timestamp())},
        }
    ]
    later = CREATED + dt.timedelta(minutes=3)
    assert _round(gce, down, later)[0] == [PowerDown("h100-2", reason)]


def test_suspend_deletes_flex_vms_through_their_mig_and_the_empty_mig_goes_after_grace() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    [mig] = flex_migs(gce)
    gce.grant(mig["name"])
    _round(gce, _powering_up("h100-2", "h100-3"), CREATED)  # named

    assert sorted(suspend(["h100-2"], fleet(gce))) == ["llm-prod-h100-elastic-2"]
    assert gce.bodies["compute.instanceGroupManagers.deleteInstances"] == [
        {
            "instances": [f"zones/{ZONE}/instances/llm-prod-h100-elastic-2"],
            "skipInstancesOnValidationError": True,
        }
    ]
    assert "compute.instances.delete" not in [method for method, _ in gce.calls]  # never behind the MIG
    assert mig["targetSize"] == 1
    suspend(["h100-3"], fleet(gce))
    assert mig["targetSize"] == 0

    idle = [
        {"name": n, "address": n, "state": ["IDLE", "CLOUD", "POWERED_DOWN"]} for n in ("h100-2", "h100-3")
    ]
    assert _round(gce, idle, CREATED + GRACE / 2)[0] == []
    done, _ = _round(gce, idle, CREATED + GRACE)
    assert done == [Withdraw(mig["name"], "it holds no VM and asks for none")]
    assert flex_migs(gce) == []


def test_resume_fail_withdraws_the_request_still_waiting_for_capacity() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    resume(plan_resume(["h100-4"], [], GROUPS), fleet(gce), RecordingSlurm())
    first, second = (m["name"] for m in flex_migs(gce))

    assert suspend(["h100-2", "h100-3"], fleet(gce)) == []  # no VM to delete

    assert [m["name"] for m in flex_migs(gce)] == [second]  # h100-4's request still waits
    assert ("compute.instanceGroupManagers.delete", f"{ZONAL}/instanceGroupManagers/{first}") in gce.calls


@pytest.mark.parametrize(
    ("states", "withdrawn"),
    [
        ({"h100-2": {"IDLE", "POWERED_DOWN"}, "h100-3": {"IDLE", "POWERED_DOWN"}}, True),
        ({"h100-2": {"IDLE", "POWERED_DOWN"}, "h100-3": {"ALLOCATED", "POWERING_UP"}}, False),
        ({"h100-2": {"ALLOCATED", "POWERING_UP"}, "h100-3": {"ALLOCATED", "POWERING_UP"}}, False),
    ],
)
def test_a_request_no_node_waits_for_goes_after_grace(states: dict[str, set[str]], withdrawn: bool) -> None:
    request = FlexRequest("m", "h100", ("h100-2", "h100-3"), "ACCEPTED", "", CREATED, 0)
    nodes = {n: SlurmNode(n, n, False, frozenset({"CLOUD", *s})) for n, s in states.items()}
    plan = {"requests": [request], "elastic": {"h100": ["h100-2", "h100-3"]}}
    assert plan_actions({}, [], nodes, now=CREATED + GRACE / 2, **plan) == []  # type: ignore[arg-type]
    late = plan_actions({}, [], nodes, now=CREATED + GRACE, **plan)  # type: ignore[arg-type]
    expected = [Withdraw("m", "no node waits for it (h100-2, h100-3 powered down)")] if withdrawn else []
    assert late == expected


def test_a_mig_whose_nodes_power_down_is_left_to_their_suspend_while_it_holds_vms() -> None:
    """slurmctld runs the suspend program as the nodes start powering down; it deletes their VMs through
    the MIG. A sync round meanwhile would race it (the lab saw the MIG deleted first); once the VMs are
    gone, or the nodes are powered down (a suspend that failed), the MIG goes."""
    request = FlexRequest("m", "h100", ("h100-2", "h100-3"), "SUCCEEDED", "", CREATED, 2)
    going = {n: SlurmNode(n, n, False, frozenset({"CLOUD", "IDLE", "POWERING_DOWN"})) for n in request.nodes}
    gone = {n: SlurmNode(n, n, False, frozenset({"CLOUD", "IDLE", "POWERED_DOWN"})) for n in request.nodes}
    now = CREATED + GRACE

    assert plan_actions({}, [], going, requests=[request], now=now) == []
    assert plan_actions({}, [], gone, requests=[request], now=now) == [
        Withdraw("m", "no node waits for it (h100-2, h100-3 powered down)")
    ]
    emptied = replace(request, size=0)
    assert plan_actions({}, [], going, requests=[emptied], now=now) == [
        Withdraw("m", "it holds no VM and asks for none")
    ]


def test_a_request_whose_job_went_while_it_waited_goes_and_its_nodes_power_down() -> None:
    request = FlexRequest("m", "h100", ("h100-2", "h100-3"), "ACCEPTED", "", CREATED, 0)
    reason = "clusterfab: no job waits for its flex-start request"

    def nodes(*states: str) -> dict[str, SlurmNode]:
        return {
            n: SlurmNode(n, n, False, frozenset({"CLOUD", "POWERING_UP", *states})) for n in request.nodes
        }

    # Cancelled: IDLE while powering up (slurmctld keeps the nodes powering up for nobody).
    assert plan_actions({}, [], nodes("IDLE"), requests=[request], now=CREATED + GRACE) == [
        Withdraw("m", "no job waits for it"),
        PowerDown("h100-2", reason),
        PowerDown("h100-3", reason),
    ]
    assert plan_actions({}, [], nodes("IDLE"), requests=[request], now=CREATED + GRACE / 2) == []
    # Its job still holds them: the request waits.
    assert plan_actions({}, [], nodes("ALLOCATED"), requests=[request], now=CREATED + GRACE * 10) == []


def test_a_request_whose_vms_run_stays() -> None:
    request = FlexRequest("m", "h100", ("h100-2",), "SUCCEEDED", "", CREATED, 1)
    nodes = {"h100-2": SlurmNode("h100-2", "10.0.0.2", False, frozenset({"ALLOCATED", "CLOUD"}))}
    assert plan_actions({}, [], nodes, requests=[request], now=CREATED + GRACE * 10) == []


def test_the_destroy_hook_deletes_the_flex_migs_with_their_vms() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    resume(plan_resume(["h100-4"], [], GROUPS), fleet(gce), RecordingSlurm())
    granted, waiting = (m["name"] for m in flex_migs(gce))
    vms = gce.grant(granted)

    deleted = delete_elastic(fleet(gce), group_filter("h100", {"h100"}), sleep=lambda _: None)

    assert deleted == sorted([granted, waiting])
    assert flex_migs(gce) == []
    assert not set(vms) & set(gce.instances)
    methods = [method for method, _ in gce.calls]
    assert "compute.instances.delete" not in methods  # the VMs went with their MIG
    assert "compute.instanceGroupManagers.deleteInstances" not in methods


def test_the_destroy_hook_finds_the_flex_migs_of_a_group_the_blueprint_no_longer_has() -> None:
    """The group's prefix is gone with it from the program's config: its MIGs are found by their labels,
    one waiting for capacity and one whose VMs run, and deleted whole (a VM deleted on its own would be
    made again by its MIG). Another stack's MIG of the same group stays."""
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    resume(plan_resume(["h100-4"], [], GROUPS), fleet(gce), RecordingSlurm())
    granted, waiting = (m["name"] for m in flex_migs(gce))
    vms = gce.grant(granted)
    dev_group = replace(FLEX, vm_prefix="llm-dev-h100-elastic", flex_prefix="llm-dev-h100-flex")
    dev = GceFleet(gce, project=PROJECT, zone=ZONE, blueprint="llm", stack="dev", groups={"h100": dev_group})
    resume(plan_resume(["h100-5"], [], GROUPS), dev, RecordingSlurm())
    [theirs] = [m["name"] for m in gce.migs if m.get("baseInstanceName") == "llm-dev-h100-flex"]
    # The destroy hook's fleet (teardown.gce_fleet): no node groups of its own.
    hook = GceFleet(gce, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod")

    assert {r.mig: r.group for r in hook.requests()} == {granted: "h100", waiting: "h100"}
    deleted = delete_elastic(hook, group_filter(None, {"a100"}), sleep=lambda _: None)

    assert deleted == sorted([granted, waiting])
    assert flex_migs(gce) == []
    assert [m["name"] for m in gce.migs if "-flex-" in m["name"]] == [theirs]
    assert not set(vms) & set(gce.instances)
    assert "compute.instances.delete" not in [method for method, _ in gce.calls]


def test_the_node_sync_leaves_the_migs_of_a_group_its_config_no_longer_has() -> None:
    """Its rights are conditioned on its config's groups: a MIG of another group is not its to delete."""
    gce = flex_compute()
    resume(plan_resume(["h100-2"], [], GROUPS), fleet(gce), RecordingSlurm())
    a100 = GceGroup(
        base_instance_name="llm-a100", vm_prefix="llm-prod-a100-elastic", flex_prefix="llm-prod-a100-flex"
    )
    only_a100 = GceFleet(
        gce, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod", groups={"a100": a100}
    )
    assert only_a100.requests() == []
    calls = len(gce.calls)
    no_flex = GceFleet(
        gce,
        project=PROJECT,
        zone=ZONE,
        blueprint="llm",
        stack="prod",
        groups={"h100": replace(FLEX, flex_prefix="")},
    )
    assert no_flex.requests() == []
    assert len(gce.calls) == calls  # a config without flex-start groups lists no MIGs


def test_a_vm_of_a_mig_not_ours_is_no_flex_node() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2"], [], GROUPS), fleet(gce), RecordingSlurm())
    [mig] = flex_migs(gce)
    [vm] = gce.grant(mig["name"])
    items = gce.instances[vm]["metadata"]["items"]
    items[-1] = {"key": "created-by", "value": "projects/1234/zones/z/instanceGroupManagers/someone-else"}
    [found] = [i for i in fleet(gce).instances() if i.id == vm]
    assert (found.elastic, found.intended) == (True, None)


def test_a_request_that_cannot_be_read_fails_the_round_not_silently() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2"], [], GROUPS), fleet(gce), RecordingSlurm())

    def broken(method: str, url: str, body: Any = None) -> Any:
        if url.endswith("/resizeRequests"):
            raise CloudError("backendError", "try again")
        return gce(method, url, body)

    with pytest.raises(CloudError, match="backendError"):
        GceFleet(
            broken, project=PROJECT, zone=ZONE, blueprint="llm", stack="prod", groups={"h100": FLEX}
        ).requests()


# --- reservations before a flex-start VM's end -------------------------------------------------------


def test_a_flex_vm_ends_at_its_termination_time_else_its_run_duration_after_creation() -> None:
    gce = flex_compute()
    resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet(gce), RecordingSlurm())
    [mig] = flex_migs(gce)
    first, second = gce.grant(mig["name"])
    gce.instances[second]["scheduling"] = {"terminationTime": "2026-11-26T20:00:00.000-08:00"}
    ends = {i.id: i.ends for i in fleet(gce).instances()}
    assert ends == {
        first: CREATED + dt.timedelta(days=1),  # FLEX.run_seconds after the VM's creation
        second: dt.datetime.fromisoformat("2026-11-26T20:00:00.000-08:00"),
    }


def _ending(node: str, ends: dt.datetime) -> Any:
    from clusterfab.scheduler.slurm.nodes.fleet import Instance

    return Instance(f"vm-{node}", "h100", "10.0.0.2", CREATED, node, elastic=True, ends=ends)


def test_an_ending_machines_node_is_reserved_before_its_end_and_the_reservation_follows_it() -> None:
    from clusterfab.scheduler.slurm.nodes.actions import END_MARGIN, Reserve, Unreserve

    end = CREATED + dt.timedelta(hours=24)
    plan = {"elastic": {"h100": ["h100-2", "h100-3", "h100-4"]}, "now": CREATED}
    vms = [_ending("h100-2", end), _ending("h100-3", end)]
    assert plan_actions({}, vms, {}, reservations={}, **plan) == [  # type: ignore[arg-type]
        Reserve("h100-2", end - END_MARGIN),
        Reserve("h100-3", end - END_MARGIN),
    ]
    kept = {
        "clusterfab-end-h100-2": end - END_MARGIN + dt.timedelta(seconds=59),  # scontrol's rounding: kept
        "clusterfab-end-h100-3": end - dt.timedelta(hours=3),  # a machine before this one: moved
        "clusterfab-end-h100-4": end,  # its machine is gone: the node may take any job again
    }
    assert plan_actions({}, vms, {}, reservations=kept, **plan) == [  # type: ignore[arg-type]
        Unreserve("clusterfab-end-h100-3"),
        Unreserve("clusterfab-end-h100-4"),
        Reserve("h100-3", end - END_MARGIN),
    ]
    # Without ending machines (`reservations` not read), nothing is reserved.
    assert plan_actions({}, vms, {}, **plan) == []  # type: ignore[arg-type]
    # A static node's machine that ends (a VM with a termination time) is reserved the same way.
    static = replace(_ending("h100-0", end), elastic=False)
    assert plan_actions({"h100": ["h100-0"]}, [static], {}, reservations={}, now=CREATED)[-1:] == [
        Reserve("h100-0", end - END_MARGIN)
    ]  # after its address is set (no node in Slurm's view here)


def test_scontrol_reads_our_reservations_and_makes_one_relative_to_its_own_clock() -> None:
    from clusterfab.scheduler.slurm.nodes.actions import Reserve, Unreserve

    listed = {
        "reservations": [
            {"name": "clusterfab-end-h100-2", "start_time": {"set": True, "number": 1796300000}},
            {"name": "team-maintenance", "start_time": {"set": True, "number": 1796300000}},
        ]
    }

    class Run(RecordingScontrol):
        def __call__(self, command: list[str], **kwargs: Any) -> Any:
            if command[:3] == ["scontrol", "show", "reservation"]:
                import subprocess

                return subprocess.CompletedProcess(command, 0, json.dumps(listed), "")
            return super().__call__(command, **kwargs)

    run = Run([])
    slurm = Scontrol(run=run)
    assert slurm.reservations() == {
        "clusterfab-end-h100-2": dt.datetime.fromtimestamp(1796300000, dt.UTC)
    }  # an operator's reservation is not ours
    slurm.reserve(Reserve("h100-3", CREATED + dt.timedelta(hours=2)), CREATED)
    slurm.reserve(Reserve("h100-4", CREATED - dt.timedelta(minutes=1)), CREATED)  # already past: now
    slurm.unreserve(Unreserve("clusterfab-end-h100-2"))
    common = ["Duration=15", "Users=root", "Flags=MAINT,IGNORE_JOBS"]
    assert run.updates == [
        ["scontrol", "create", "reservation", "ReservationName=clusterfab-end-h100-3",
         "StartTime=now+7200seconds", common[0], "Nodes=h100-3", *common[1:]],
        ["scontrol", "create", "reservation", "ReservationName=clusterfab-end-h100-4",
         "StartTime=now+0seconds", common[0], "Nodes=h100-4", *common[1:]],
        ["scontrol", "delete", "ReservationName=clusterfab-end-h100-2"],
    ]  # fmt: skip


def test_bp141_allows_jobs_the_run_duration_less_the_node_syncs_reservation_margin() -> None:
    """The rule cannot import the controller's program (validate's import path): the two margins agree."""
    from clusterfab.scheduler.slurm.nodes.actions import END_MARGIN
    from clusterfab.scheduler.slurm.rules import FLEX_END_MARGIN_MINUTES

    assert dt.timedelta(minutes=FLEX_END_MARGIN_MINUTES) == END_MARGIN
