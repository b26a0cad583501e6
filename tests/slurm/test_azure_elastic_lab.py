"""End to end: elastic nodes on Azure with Debian 13's real slurmctld, the controller's own power programs
(the package the stack ships, cloud azure) against the stand-in for Azure's metadata service and Resource
Manager of the claim lab, and the slurm_node role's start program on each "VM".

The cluster renders from the elastic lab's blueprint (`autoscaling: {min: 1, max: 3}`), its node lines cut
into fabric units as the Azure rendering writes them: h100-0 (unit h100-0, always up) and h100-[1-2] (unit
h100-1, State=CLOUD, its scale set empty). When slurmctld resumes a node, the resume program grows the
unit's scale set; the test plays Azure's part: for each VM the capacity asks for, it adds one to Resource
Manager's view and starts the VM, whose start program claims the node Slurm is powering up. When the
suspend program deletes a VM (the stand-in removes it and lowers the capacity), the test stops it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import SYNC_CONFIG, controller_files
from tests.slurm.rootfs import GoldenRootfs
from tests.slurm.test_azure_claim_lab import ARM_LOG, ARM_PORT, ClaimLab
from tests.slurm.test_elastic_lab import (
    COUNTS,
    FINAL,
    HOSTNAME_JOB,
    STACK,
    SUSPEND_TIME_S,
    _blueprint,
    install_programs,
)
from tests.slurm.test_elastic_lab import _files as elastic_files

pytestmark = pytest.mark.slurm

HARDWARE = "CPUs=192 RealMemory=1992294 Gres=gpu:h100:8"
RENDERED = f"NodeName=h100-0 {HARDWARE} State=UNKNOWN\nNodeName=h100-[1-2] {HARDWARE} State=CLOUD"
UNITS = (
    f"NodeName=h100-0 {HARDWARE} Feature=h100-0 State=UNKNOWN\n"
    f"NodeName=h100-[1-2] {HARDWARE} Feature=h100-1 State=CLOUD"
)
VMS = {
    "h100-vmss000000": ("h100-0", "10.217.2.1"),
    "h1001-vmss000000": ("h100-1", "10.217.2.2"),
    "h1001-vmss000001": ("h100-1", "10.217.2.3"),
}
"""The VMs the lab can run: the always-up unit's one, and the elastic unit's, in the order Azure numbers
them."""
SETTINGS = {
    "cloud": "azure",
    "blueprint": "lab",
    "stack": "lab",
    "units": {
        "h100-0": {"group": "h100", "first": 0, "nodes": 1, "static": 1},
        "h100-1": {"group": "h100", "first": 1, "nodes": 2, "static": 0},
    },
    "lock_file": "/run/lab-azure-capacity.lock",
    "imds_url": f"http://127.0.0.1:{ARM_PORT}",
    "arm_url": f"http://127.0.0.1:{ARM_PORT}",
    "retry_after_s": 0,
}
EARLIER = "2026-11-29T10:00:00+00:00"


def _files(cluster: Any) -> dict[str, str]:
    files = elastic_files(cluster)
    assert files["slurm.conf"].count(RENDERED) == 1
    topology = "SwitchName=h100-0 Nodes=h100-0\nSwitchName=h100-1 Nodes=h100-[1-2]\n"
    return {**files, "slurm.conf": files["slurm.conf"].replace(RENDERED, UNITS), "topology.conf": topology}


class AzureElasticLab(ClaimLab):
    cluster_spec: Any = None
    # A powered-up node counts as booted only with a boot time after its resume: each VM reports its own.
    slurmd_options = "-D -b"

    def _install_files(self) -> None:
        super()._install_files()
        # Before slurmctld starts (it checks the power programs once, at start); the programs' lock exists
        # already, as root's: SlurmUser opens it read-only.
        files = controller_files(self.cluster_spec, load_catalog().slurm, stack=STACK)
        install_programs(self, files, SETTINGS)
        self.path(str(SETTINGS["lock_file"])).write_text("")


@pytest.fixture(scope="module")
def lab(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzureElasticLab]:
    cluster = _blueprint()
    AzureElasticLab.cluster_spec = cluster
    AzureElasticLab.vms = VMS
    config = json.loads(controller_files(cluster, load_catalog().slurm, stack=STACK)[SYNC_CONFIG])
    AzureElasticLab.sync_settings = {**config, **SETTINGS}
    AzureElasticLab.conf_server = "10.0.0.10:6817"
    with AzureElasticLab(_files(cluster), golden, tmp_path_factory.mktemp("azelastic")) as running:
        yield running
    assert running.leftover_processes() == []


def _sets(lab: AzureElasticLab) -> dict[str, dict[str, Any]]:
    state = json.loads(lab.path("/srv/lab-arm/state.json").read_text())
    return {
        s["name"]: {"capacity": s["sku"]["capacity"], "vms": state["vms"][s["name"]]} for s in state["sets"]
    }


def _play_azure(lab: AzureElasticLab, running: set[str]) -> None:
    """Azure's part: a VM for each the elastic scale set's capacity asks for (the next host names), and the
    deleted ones stopped."""
    state_path = lab.path("/srv/lab-arm/state.json")
    state = json.loads(state_path.read_text())
    [elastic] = [s for s in state["sets"] if s["name"] == "lab-h100-1-vmss"]
    vms = state["vms"]["lab-h100-1-vmss"]
    listed = {vm["properties"]["osProfile"]["computerName"] for vm in vms}
    pool = [host for host, (unit, _) in VMS.items() if unit == "h100-1"]
    while len(vms) < elastic["sku"]["capacity"]:
        host = next(h for h in pool if h not in listed and h not in running)
        now = lab.run("date -u +%Y-%m-%dT%H:%M:%S+00:00").stdout.strip()
        number = int(host[-6:])
        vms.append(
            {
                "name": f"lab-h100-1-vmss_{number}",
                "instanceId": str(number),
                "properties": {"osProfile": {"computerName": host}, "timeCreated": now},
            }
        )
        listed.add(host)
        state_path.write_text(json.dumps(state))
        lab.start_vm(host)
        running.add(host)
    for host in sorted(running - listed):
        node = lab.run(f"cat /run/clusterfab-slurm-node-{host}", check=False).stdout.strip()
        lab.stop_vm(host, node)
        running.discard(host)


def _until(lab: AzureElasticLab, running: set[str], done: Any, *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        _play_azure(lab, running)
        value = done()
        if value:
            return value
        if time.monotonic() > deadline:
            log = lab.path("/var/log/slurm/clusterfab-power.log")
            power = log.read_text() if log.exists() else "(no power log)"
            raise AssertionError(
                f"timed out waiting for {what}\n{power}\n{lab.node_records()}\n{lab.log('slurmctld')[-3000:]}"
            )
        time.sleep(1)


def test_a_queued_job_grows_the_elastic_scale_set_its_vm_claims_the_node_and_idle_goes(
    lab: AzureElasticLab,
) -> None:
    lab.arm_state([("h100-vmss000000", EARLIER)])
    lab.start_vm("h100-vmss000000")
    assert lab.wait_held("h100-vmss000000") == "h100-0"
    running: set[str] = set()
    # Two nodes of the elastic unit (no job spans two units: topology.conf joins none).
    job_id = lab.sbatch(
        HOSTNAME_JOB, "-N2", "--constraint=h100-1", "-A", "research", "-o", "out-%j.txt", user="alice"
    )

    def finished() -> Any:
        job = lab.job(job_id)
        return lab.job_state(job).split("+")[0] in FINAL and job

    job = _until(lab, running, finished, timeout=180, what="the two-node job to finish")
    assert lab.job_state(job).split("+")[0] == "COMPLETED", lab.log("slurmctld")[-3000:]
    # The job ran on the two elastic nodes, as the two VMs the scale set grew by.
    assert sorted(lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.split()) == [
        "h1001-vmss000000",
        "h1001-vmss000001",
    ]
    patches = [(p, b) for m, p, b in lab.arm_requests() if m == "PATCH"]
    assert patches == [
        (
            "/subscriptions/sub/resourceGroups/clusterfab-lab-lab/providers/Microsoft.Compute/"
            "virtualMachineScaleSets/lab-h100-1-vmss?api-version=2024-11-01",
            {"sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 2}},
        )
    ]
    assert running == {"h1001-vmss000000", "h1001-vmss000001"}
    claimed = {lab.node_records()[n]["hostname"] for n in ("h100-1", "h100-2")}
    assert claimed == running
    # Idle for SuspendTime: the suspend program deletes exactly the VMs that hold the two nodes.
    _until(lab, running, lambda: not running, timeout=SUSPEND_TIME_S + 120, what="the suspend")
    deleted = sorted(i for m, p, b in lab.arm_requests() if m == "POST" for i in b["instanceIds"])
    assert deleted == ["0", "1"]
    assert _sets(lab)["lab-h100-1-vmss"] == {"capacity": 0, "vms": []}
    # Powered down, Slurm gives each node its own name back: free for the next VM of its unit.
    for node in ("h100-1", "h100-2"):
        lab.wait_for(
            lambda node=node: "POWERED_DOWN" in lab.node_records()[node]["state"],
            timeout=60,
            what=f"{node} powered down",
        )
        record = lab.node_records()[node]
        assert (record["hostname"], record["address"]) == (node, node)
    assert lab.node_records()["h100-0"]["hostname"] == "h100-vmss000000"
    programs = json.loads(lab.path(COUNTS).read_text())["programs"]
    assert sum(programs["suspend"]["done"].values()) == 2
    assert (programs["resume"]["done"], programs["resume"]["failed"]) == ({"create": 2}, {})


def test_the_node_sync_leaves_the_elastic_unit_to_slurm(lab: AzureElasticLab) -> None:
    """The elastic unit's empty scale set is the size Slurm wants; the always-up one is whole."""
    lab.path(ARM_LOG).write_text("")
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert [r for r in lab.arm_requests() if r[0] != "GET"] == []
    assert _sets(lab) == {
        "lab-h100-0-vmss": {"capacity": 1, "vms": _sets(lab)["lab-h100-0-vmss"]["vms"]},
        "lab-h100-1-vmss": {"capacity": 0, "vms": []},
    }
