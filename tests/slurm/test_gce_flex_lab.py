"""End to end on GCP's path: flex-start elastic nodes with Debian 13's real slurmctld, the controller's own
power programs and node sync (the package the stack ships, run by the chroot's python3) and a stand-in
Compute Engine: tests/unit's FakeCompute, which checks every request against the compute.v1 discovery
document, with a metadata server's token, served over HTTP inside the lab's network as the real ones are
reached from the controller.

The test plays the Dynamic Workload Scheduler (it grants a request's capacity: the MIG creates the VMs the
request named; or it fails the request) and the cloud's part of booting (a VM that holds a node name starts
that node's slurmd, a VM that is gone stops it).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import urllib.error
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, SLURM_NODE_TAG, STACK_TAG
from clusterfab.scheduler.slurm.hostvars import SYNC_CONFIG, controller_files
from clusterfab.scheduler.slurm.nodes.gcp import COMPUTE_API, GceGroup, gce_settings
from tests.components.harness import stacks_module
from tests.factories import spec
from tests.slurm.labcloud import enter_net
from tests.slurm.rootfs import GoldenRootfs
from tests.slurm.test_elastic_lab import (
    FILES,
    FINAL,
    HOSTNAME_JOB,
    SUSPEND_TIME_S,
    SUSPEND_TIMEOUT_S,
    ElasticLab,
    _files,
    boot_while,
    install_programs,
)
from tests.unit.test_slurm_nodesync import FakeCompute

pytestmark = pytest.mark.slurm

STACK = "lab"
PROJECT = "test-project"
PORT = 5002
API = f"http://127.0.0.1:{PORT}/compute/v1"
METADATA = f"http://127.0.0.1:{PORT}/computeMetadata/v1"
TEMPLATE = "flex-lab-h100-template"
NO_CAPACITY = "ZONE_RESOURCE_POOL_EXHAUSTED"


def _blueprint() -> Any:
    return spec(
        "gcp",
        name="flex-lab",
        node_groups=[
            {
                "name": "h100",
                "machine_type": "a3-megagpu-8g",
                "capacity": {"kind": "flex_start", "max_run_duration_hours": 24},
                "autoscaling": {"min": 0, "max": 2},
            }
        ],
        scheduler={
            "kind": "slurm",
            "elastic": {"idle_minutes": 1, "resume_timeout_minutes": 5, "flex_start_wait_minutes": 30},
        },
        teams=[{"name": "research", "max_gpus": 64, "users": ["alice"]}],
    )


class Compute:
    """FakeCompute and a metadata server's token over HTTP, listening in the lab's network namespace (its
    socket made by a thread inside); one lock serialises the programs' requests and the test's moves."""

    def __init__(self, pid: int, gce: FakeCompute) -> None:
        self.gce, self.lock = gce, threading.Lock()
        self.errors: list[str] = []
        """What FakeCompute refused as no compute.v1 request (an assertion): the test fails on it."""
        self._pid = pid
        self._server: ThreadingHTTPServer | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()
        if not self._ready.wait(10):
            raise AssertionError("the lab's Compute Engine did not start")

    def _serve(self) -> None:
        enter_net(self._pid)
        self._server = ThreadingHTTPServer(("127.0.0.1", PORT), _handler(self))
        self._ready.set()
        self._server.serve_forever()

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.startswith("/computeMetadata/v1/instance/service-accounts/default/token"):
            return 200, {"access_token": "lab-token", "expires_in": 3600}
        with self.lock:
            try:
                return 200, self.gce(method, COMPUTE_API + path.removeprefix("/compute/v1"), body)
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())
            except AssertionError as error:
                self.errors.append(f"{method} {path}: {error}")
                return 400, {"error": {"code": 400, "message": str(error)}}

    def flex_migs(self) -> list[dict[str, Any]]:
        with self.lock:
            return json.loads(json.dumps([m for m in self.gce.migs if m["name"] != "flex-lab-h100-mig"]))

    def nodes(self) -> set[str]:
        """The nodes a VM holds (by its node-name metadata)."""
        with self.lock:
            return {
                item["value"]
                for vm in self.gce.instances.values()
                for item in vm["metadata"]["items"]
                if item["key"] == SLURM_NODE_TAG
            }

    def calls(self) -> list[str]:
        with self.lock:
            return [method for method, _ in self.gce.calls]

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _handler(compute: Compute) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, answer = compute.answer(self.command, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _handle  # noqa: N815 - BaseHTTPRequestHandler's names

    return Handler


def _zone(cluster: Any, source: GceGroup) -> FakeCompute:
    """The zone as the stack leaves it: the h100 group's MIG (no static node) with its template, placed by
    the group's workload policy."""
    labels = {BLUEPRINT_TAG: cluster.name, STACK_TAG: STACK, NODE_GROUP_TAG: "h100"}
    link = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/instanceTemplates/{TEMPLATE}"
    return FakeCompute(
        [],
        migs=[
            {
                "name": "flex-lab-h100-mig",
                "baseInstanceName": source.base_instance_name,
                "versions": [{"name": "primary", "instanceTemplate": f"{link}?uniqueId=7"}],
                "resourcePolicies": {
                    "workloadPolicy": f"projects/{PROJECT}/regions/us-central1/resourcePolicies/flex-lab-wp"
                },
            }
        ],
        templates=[
            {
                "name": TEMPLATE,
                "selfLink": link,
                "properties": {
                    "labels": labels,
                    "metadata": {"items": [{"key": "startup-script", "value": "#!/bin/bash"}]},
                    "scheduling": {"provisioningModel": "FLEX_START", "instanceTerminationAction": "DELETE"},
                },
            }
        ],
    )


class FlexLab(ElasticLab):
    gce_groups: dict[str, GceGroup] = {}  # noqa: RUF012 - set once by the fixture

    def _install_files(self) -> None:
        super(ElasticLab, self)._install_files()
        _install_programs(self, self.cluster_spec, self.gce_groups)


def _install_programs(lab: FlexLab, cluster: Any, gce_groups: dict[str, GceGroup]) -> None:
    """The programs pointed at the lab's Compute Engine and metadata server."""
    install_programs(
        lab,
        controller_files(
            cluster,
            load_catalog().slurm,
            stack=STACK,
            project=PROJECT,
            cloud_settings=gce_settings(gce_groups),
        ),
        {"compute_api": API, "metadata_url": METADATA, "retry_after_s": 0},
    )


@pytest.fixture(scope="module")
def flex(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FlexLab, Compute]]:
    cluster = _blueprint()
    gce_groups = stacks_module("stacks.gcp.slurm")._gce_groups(cluster, STACK)
    FlexLab.static = ()
    FlexLab.cluster_spec = cluster
    FlexLab.gce_groups = gce_groups
    lab = FlexLab(_files(cluster), golden, tmp_path_factory.mktemp("flexlab"))
    compute: Compute | None = None
    try:
        lab.start()
        compute = Compute(lab._init_pid or 0, _zone(cluster, gce_groups["h100"]))
        yield lab, compute
        assert compute.errors == []
    finally:
        if compute is not None:
            compute.close()
        lab.close()


def sync(lab: FlexLab) -> None:
    lab.run(f"PYTHONPATH={FILES}/lib python3 -m clusterfab_slurm_nodes sync --config {FILES}/{SYNC_CONFIG}")


def reservations(lab: FlexLab) -> dict[str, dt.datetime]:
    """slurmctld's reservations: name -> start."""
    listed = json.loads(lab.run("scontrol show reservation --json").stdout).get("reservations", [])
    return {r["name"]: dt.datetime.fromtimestamp(r["start_time"]["number"], dt.UTC) for r in listed}


def booting(lab: FlexLab, compute: Compute, until: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Run the node sync and boot what the cloud runs until `until` holds."""
    return boot_while(lab, compute.nodes, until, timeout=timeout, what=what, tick=lambda: sync(lab))


def test_a_flex_job_waits_for_capacity_then_runs_on_the_vms_its_request_named(
    flex: tuple[FlexLab, Compute],
) -> None:
    lab, compute = flex
    assert "ResumeTimeout=1800" in lab.run("scontrol show partition h100").stdout.split()
    job_id = lab.sbatch(HOSTNAME_JOB, "-N2", "-A", "research", "-o", "out-%j.txt", user="alice")
    [mig] = lab.wait_for(compute.flex_migs, timeout=60, what="slurmctld's resume to ask for the job's VMs")
    [request] = mig["resizeRequests"]
    prefix = lab.gce_groups["h100"].vm_prefix
    assert prefix == "flex-lab-lab-h100-f1927c9a-elastic"  # sha256 of 'flex-lab\0lab\0h100': f1927c9a...
    assert [i["name"] for i in request["instances"]] == [f"{prefix}-0", f"{prefix}-1"]
    assert request["requestedRunDuration"] == {"seconds": "86400"}
    # No capacity yet: the job waits, its nodes power up, nothing is withdrawn or created.
    sync(lab)
    assert [m["name"] for m in compute.flex_migs()] == [mig["name"]]
    # Allocated, CONFIGURING until its nodes register (sbatch_wait_nodes): its script has not started.
    assert set(lab.job_state(lab.job(job_id)).split("+")) == {"RUNNING", "CONFIGURING", "POWER_UP_NODE"}
    assert all("POWERING_UP" in lab.nodes_state()[n]["state"] for n in ("h100-0", "h100-1"))

    with compute.lock:
        # Capacity arrives now: the MIG creates the VMs, unnamed. (The MIGs were made long ago, as far as
        # the node sync's grace is concerned: FakeCompute's clock.)
        made, compute.gce.clock = compute.gce.clock, dt.datetime.now(dt.UTC).isoformat()
        compute.gce.grant(mig["name"])
        compute.gce.clock = made
    job = booting(
        lab,
        compute,
        lambda: (j := lab.job(job_id)) and lab.job_state(j).split("+")[0] in FINAL and j,
        timeout=120,
        what="the two-node job to finish",
    )
    assert lab.job_state(job).split("+")[0] == "COMPLETED"
    assert sorted(lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.split()) == ["h100-0", "h100-1"]
    # Each VM ends 24 hours after it came (the request's run duration): its node is reserved from 10
    # minutes before. h100-0's VM ends in 20 minutes: no job that would outlive it starts there.
    starts = reservations(lab)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=24, minutes=-10)
    assert sorted(starts) == ["clusterfab-end-h100-0", "clusterfab-end-h100-1"]
    assert all(abs(start - later) < dt.timedelta(minutes=3) for start in starts.values()), starts
    with compute.lock:
        soon = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=20)
        compute.gce.instances[f"{prefix}-0"]["scheduling"] = {"terminationTime": soon.isoformat()}
    sync(lab)
    assert abs(reservations(lab)["clusterfab-end-h100-0"] - (soon - dt.timedelta(minutes=10))) < dt.timedelta(
        minutes=1
    )
    # Submitted first, the short job starts at once (before the idle nodes' SuspendTime), the long one never.
    short = lab.sbatch(HOSTNAME_JOB, "-N1", "-w", "h100-0", "-t", "5", "-A", "research", user="alice")
    too_long = lab.sbatch(HOSTNAME_JOB, "-N1", "-w", "h100-0", "-t", "30", "-A", "research", user="alice")
    assert lab.job_state(lab.wait_job(short, FINAL, timeout=60)).split("+")[0] == "COMPLETED"
    waiting = lab.job(too_long)
    assert lab.job_state(waiting) == "PENDING"
    assert waiting["state_reason"] == "ReqNodeNotAvail", waiting["state_reason"]
    assert "h100-0" not in lab.run(f"squeue -h -j {too_long} -o %N").stdout
    lab.run(f"scancel {too_long}")

    # Idle for SuspendTime: the suspend program deletes the VMs through their MIG; the sync deletes the
    # empty MIG (created long enough ago).
    booting(
        lab,
        compute,
        lambda: not compute.flex_migs() and not compute.nodes(),
        timeout=SUSPEND_TIME_S + SUSPEND_TIMEOUT_S + 90,
        what="the VMs and their MIG gone",
    )
    calls = compute.calls()
    assert "compute.instanceGroupManagers.deleteInstances" in calls
    assert "compute.instances.delete" not in calls  # never behind the MIG's back
    sync(lab)  # a round that sees the VMs gone (the last may have listed them just before)
    assert reservations(lab) == {}  # their machines gone, the nodes take any job again


def test_a_failed_request_puts_the_nodes_back_with_the_reason_and_the_job_waits(
    flex: tuple[FlexLab, Compute],
) -> None:
    lab, compute = flex
    lab.wait_for(
        lambda: all("POWERED_DOWN" in lab.nodes_state()[n]["state"] for n in ("h100-0", "h100-1")),
        timeout=SUSPEND_TIMEOUT_S + 60,
        what="the nodes powered down",
    )
    job_id = lab.sbatch(HOSTNAME_JOB, "-N1", "-A", "research", user="alice")
    [mig] = lab.wait_for(compute.flex_migs, timeout=60, what="the job's request")
    [node] = [n for n, s in lab.nodes_state().items() if "POWERING_UP" in s["state"]]
    with compute.lock:
        compute.gce.fail(mig["name"], NO_CAPACITY)
    sync(lab)
    reason = f"clusterfab: resume failed: {NO_CAPACITY}"
    assert lab.nodes_state()[node] == {"state": lab.nodes_state()[node]["state"], "reason": reason}
    assert "DOWN" in lab.nodes_state()[node]["state"].split("+")
    assert compute.flex_migs() == []  # the failed request's MIG is gone
    assert lab.job_state(lab.job(job_id)).split("+")[0] == "PENDING"  # back in the queue, not failed
    # The next round hands the node back to power saving (the lab's retry wait is 0), and Slurm asks again
    # (a requeued job is eligible 121 s later in Slurm 24.11: released now, as an operator would).
    sync(lab)
    lab.wait_for(
        lambda: "DOWN" not in lab.nodes_state()[node]["state"].split("+"),
        timeout=60,
        what="the node out of DOWN",
    )
    again = lab.wait_for(
        lambda: lab.release(job_id) and compute.flex_migs(), timeout=90, what="a new request for the job"
    )
    assert again[0]["name"] != mig["name"]
    # The job is cancelled while its capacity is queued: the next round withdraws the request and powers
    # the node down, instead of leaving it powering up for the partition's 30 minutes.
    [waiting] = [n for n, s in lab.nodes_state().items() if "POWERING_UP" in s["state"].split("+")]
    assert "ALLOCATED" in lab.nodes_state()[waiting]["state"].split("+")
    lab.run(f"scancel {job_id}")
    lab.wait_for(
        lambda: "IDLE" in lab.nodes_state()[waiting]["state"].split("+"), timeout=30, what="the node freed"
    )
    sync(lab)
    assert compute.flex_migs() == []
    lab.wait_for(
        lambda: "POWERED_DOWN" in lab.nodes_state()[waiting]["state"].split("+"),
        timeout=SUSPEND_TIMEOUT_S + 60,
        what="the node powered down",
    )
