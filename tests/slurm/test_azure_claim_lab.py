"""Azure's scale-set nodes claim their Slurm nodes themselves (slurm_node_name_source: azure), with Debian
13's real slurmctld and slurmd: slurm.conf lists each fabric unit's nodes as static nodes with the unit as
their Feature, and each "VM" runs the slurm_node role's start program (clusterfab-slurmd.sh.j2, rendered
as Ansible renders it) under its own host name and address, against a stand-in for Azure's instance
metadata service. The program claims a free node of its unit with scontrol (configless: a client
configuration of its own) and execs slurmd as that node.

The lab's main cluster (tests/fixtures/blueprints/slurm-lab.yaml, trainers-[0-2]) with its node line split
by fabric unit, as the Azure rendering writes it: trainers-[0-1] are unit trainers-0, trainers-2 is unit
trainers-1; gres.conf keeps the rendered `NodeName=trainers-[0-2] Name=gpu ...`. No slurmd starts with the
lab: each test starts its VMs. Every VM shares the lab's one network namespace; each gets its own address
on its loopback (10.217.1.x) and its node's own port (the lab's per-node Port), so slurmctld reaches each
slurmd at the NodeAddr the VM claimed. The tests run in order: each builds on the claims before it.

slurmctld forgets the claims when it restarts; the slurm_controller role's claims keeper
(clusterfab-slurm-claims, installed as the role installs it, its record where the role keeps it) records
and restores them, and each VM has the slurm_node role's re-assertion program (rendered per VM as the
start program is).

Why not Slurm's dynamic future nodes (`slurmd -F<unit>`): see the slurm_node role's README.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterfab.scheduler.slurm.nodes import clouds as node_programs
from tests.slurm.lab import ROLES, LabError, Result, SlurmLab
from tests.slurm.rendered import rendered_files
from tests.slurm.rootfs import GoldenRootfs
from tests.unit.test_slurm_claims import render_reassert
from tests.unit.test_slurmd_wrapper import render

pytestmark = pytest.mark.slurm

NODES = Path(node_programs.__file__).parent
RENDERED_NODES = "NodeName=trainers-[0-2] CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 State=UNKNOWN"
UNIT_NODES = (
    "NodeName=trainers-[0-1] CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 Feature=trainers-0 State=UNKNOWN\n"
    "NodeName=trainers-2 CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 Feature=trainers-1 State=UNKNOWN"
)
CONF_SERVER = "10.40.0.10:6817"
"""The lab blueprint's controller (SlurmctldHost=lab-controller(10.40.0.10), SlurmctldPort=6817)."""
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
# The scale-set VMs: host name (computer name prefix and instance number), fabric unit, private address.
VMS = {
    "trainers-vmss000000": ("trainers-0", "10.217.1.1"),
    "trainers-vmss000001": ("trainers-0", "10.217.1.2"),
    "trainers-vmss000002": ("trainers-0", "10.217.1.3"),
    "trainers1-vmss000000": ("trainers-1", "10.217.1.4"),
    "trainers-vmss000003": ("trainers-0", "10.217.1.5"),
}
TAGS = "/metadata/instance/compute/tagsList?api-version=2021-02-01"
ADDRESS = (
    "/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress"
    "?api-version=2021-02-01&format=text"
)
IMDS = "/usr/local/bin/clusterfab-lab-imds"
# The slurm_controller role's claims keeper, as it installs it, and its record on the state disk (the role's
# __slurm_controller_claims_script and __slurm_controller_claims_record with the default state mount).
CLAIMS = "/usr/local/sbin/clusterfab-slurm-claims"
RECORD = "/srv/clusterfab-slurm-state/node-claims.json"
# Azure's instance metadata service for one VM: its scale set's tags and its private address, only with the
# Metadata header (400 without, as Azure answers).
IMDS_PROGRAM = f"""import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, unit, address = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tags = [{{"name": "clusterfab-cluster", "value": "lab"}}, {{"name": "clusterfab-fabric-unit", "value": unit}}]
bodies = {{{TAGS!r}: json.dumps(tags), {ADDRESS!r}: address}}
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = bodies.get(self.path) if self.headers.get("Metadata") == "true" else None
        data = (body if body is not None else "bad request").encode()
        self.send_response(200 if body is not None else 400)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""
# The controller's side of Azure for the node sync: the instance metadata service (a token for the
# controller's identity, the VM's subscription and resource group) and Resource Manager, whose scale sets and
# VMs the test writes to ARM_STATE; every request is appended to ARM_LOG.
ARM_PORT = 18100
ARM_STATE = "/srv/lab-arm/state.json"
ARM_LOG = "/srv/lab-arm/requests.jsonl"
ARM_PROGRAM = f"""import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
GROUP = "/subscriptions/sub/resourceGroups/clusterfab-lab-lab"
SETS = GROUP + "/providers/Microsoft.Compute/virtualMachineScaleSets"
class Handler(BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with open({ARM_LOG!r}, "a") as log:
            log.write(json.dumps([self.command, self.path, body]) + "\\n")
        path, _, query = self.path.partition("?")
        if path.startswith("/metadata/"):
            if self.headers.get("Metadata") != "true":
                return self.answer(400, {{"error": "bad_request"}})
            if path == "/metadata/identity/oauth2/token":
                return self.answer(200, {{"access_token": "lab-token", "expires_in": "3599"}})
            return self.answer(200, {{"subscriptionId": "sub", "resourceGroupName": "clusterfab-lab-lab"}})
        if self.headers.get("Authorization") != "Bearer lab-token" or "api-version=2024-11-01" not in query:
            return self.answer(401, {{"error": {{"code": "AuthenticationFailed", "message": "no token"}}}})
        with open({ARM_STATE!r}) as handle:
            state = json.load(handle)
        if self.command == "GET" and path == SETS:
            return self.answer(200, {{"value": state["sets"]}})
        if self.command == "GET" and path.endswith("/virtualMachines"):
            return self.answer(200, {{"value": state["vms"][path.split("/")[-2]]}})
        # As Azure does: an update sets the scale set's capacity, a delete of instances removes them and
        # lowers it. The test plays the rest (a new VM for a raised capacity).
        name = path.split("/")[-2] if path.endswith("/delete") else path.split("/")[-1]
        [found] = [s for s in state["sets"] if s["name"] == name]
        if self.command == "PATCH":
            found["sku"]["capacity"] = body["sku"]["capacity"]
        else:
            gone = set(body["instanceIds"])
            state["vms"][name] = [v for v in state["vms"][name] if v["instanceId"] not in gone]
            found["sku"]["capacity"] -= len(gone)
        with open({ARM_STATE!r}, "w") as handle:
            json.dump(state, handle)
        return self.answer(202, None)
    do_GET = do_POST = do_PATCH = handle_any
HTTPServer(("127.0.0.1", {ARM_PORT}), Handler).serve_forever()
"""
NODES_LIB = "/opt/lab-nodes/lib"
SYNC_CONFIG = "/etc/lab-nodesync.json"
SYNC_SETTINGS = {
    "cloud": "azure",
    "groups": {"trainers": {"static": 3, "size": 3}},
    "blueprint": "lab",
    "stack": "lab",
    "units": {
        "trainers-0": {"group": "trainers", "first": 0, "nodes": 2, "static": 2},
        "trainers-1": {"group": "trainers", "first": 2, "nodes": 1, "static": 1},
    },
    "lock_file": "/run/lab-azure-capacity.lock",
    "imds_url": f"http://127.0.0.1:{ARM_PORT}",
    "arm_url": f"http://127.0.0.1:{ARM_PORT}",
}


class ClaimLab(SlurmLab):
    """The lab with Azure's static unit nodes and no slurmd at start; VMs started by the tests."""

    vms: dict[str, tuple[str, str]] = VMS
    """The scale sets' VMs the lab can run: host name -> (fabric unit, private address)."""
    sync_settings: dict[str, Any] = SYNC_SETTINGS
    conf_server: str = CONF_SERVER
    slurmd_options: str = "-D"
    """slurmd in the foreground (no systemd here); `-b` too where each VM must report a fresh boot, as a new
    machine does (one VM's boot time is the lab's)."""

    def _start_slurmds(self) -> None:
        self.path(IMDS).write_text(IMDS_PROGRAM)
        spools = " ".join(f"/var/spool/slurmd/{node}" for node in self.nodes)
        self.run(f"mkdir -p {spools}")
        for index, (vm, (unit, address)) in enumerate(self.vms.items()):
            self.run(f"ip addr add {address}/32 dev lo")
            self._daemon(f"imds-{vm}", f"exec python3 {IMDS} {18001 + index} {unit} {address}")
            # The role's program, with this VM's own name file and client configuration (one machine runs
            # every VM) and slurmd in the foreground (-D, no systemd here).
            wrapper = render(
                "azure",
                "clusterfab-fabric-unit",
                server=self.conf_server,
                cluster=self.cluster,
                name_file=f"/run/clusterfab-slurm-node-{vm}",
                claim_conf=f"/run/clusterfab-slurm-claim-{vm}.conf",
            ).replace("/usr/sbin/slurmd --systemd ", f"/usr/sbin/slurmd {self.slurmd_options} ")
            target = self.path(f"/usr/local/sbin/clusterfab-slurmd-{vm}")
            target.write_text(wrapper)
            target.chmod(0o755)
            reassert = self.path(f"/usr/local/sbin/clusterfab-slurm-reassert-{vm}")
            reassert.write_text(
                render_reassert(
                    server=self.conf_server,
                    name_file=f"/run/clusterfab-slurm-node-{vm}",
                    claim_conf=f"/run/clusterfab-slurm-claim-{vm}.conf",
                )
            )
            reassert.chmod(0o755)
        self.path(CLAIMS).write_text(
            (ROLES / "slurm_controller/files/clusterfab_slurm_claims.py").read_text()
        )
        self.path(CLAIMS).chmod(0o755)
        self.run(f"mkdir -p {shlex.quote(RECORD.rsplit('/', 1)[0])}")
        self._install_node_sync()
        for index, vm in enumerate(self.vms):
            imds = f"curl -fsS -H 'Metadata: true' 'http://127.0.0.1:{18001 + index}{TAGS}'"
            self._ready(f"imds-{vm}", imds)

    def _install_node_sync(self) -> None:
        """The node programs as the controller's playbook installs them (its lib directory), their settings,
        and the stand-in for Azure's metadata service and Resource Manager."""
        self.run(f"mkdir -p {NODES_LIB}/clusterfab_slurm_nodes /srv/lab-arm")
        for module in sorted(NODES.glob("*.py")):
            self.path(f"{NODES_LIB}/clusterfab_slurm_nodes/{module.name}").write_text(module.read_text())
        self.path(SYNC_CONFIG).write_text(json.dumps(self.sync_settings))
        self.path("/etc/lab-fleet.json").write_text("{}")
        self.arm_state([])
        self.path("/usr/local/bin/clusterfab-lab-arm").write_text(ARM_PROGRAM)
        self._daemon("arm", "exec python3 /usr/local/bin/clusterfab-lab-arm")
        probe = f"curl -fsS -H 'Metadata: true' http://127.0.0.1:{ARM_PORT}/metadata/instance/compute"
        self._ready("arm", probe)

    def arm_state(self, vms: list[tuple[str, str]], capacity: dict[str, int] | None = None) -> None:
        """Resource Manager's view: the scale sets of the two units (capacity: their sku.capacity, else their
        VMs' count) and their VMs, each (host name, timeCreated)."""
        units = self.sync_settings["units"]
        sets: dict[str, list[dict[str, Any]]] = {f"lab-{unit}-vmss": [] for unit in units}
        for host, created in vms:
            scale_set = f"lab-{self.vms[host][0]}-vmss"
            sets[scale_set].append(
                {
                    "name": f"{scale_set}_{int(host[-6:])}",
                    "instanceId": str(int(host[-6:])),
                    "properties": {"osProfile": {"computerName": host}, "timeCreated": created},
                }
            )
        state = {
            "sets": [
                {
                    "name": name,
                    "tags": {
                        "clusterfab-blueprint": "lab",
                        "clusterfab-stack": "lab",
                        "clusterfab-node-group": units[name.removeprefix("lab-").removesuffix("-vmss")][
                            "group"
                        ],
                        "clusterfab-fabric-unit": name.removeprefix("lab-").removesuffix("-vmss"),
                    },
                    "sku": {
                        "name": "Standard_ND96isr_H100_v5",
                        "capacity": (capacity or {}).get(name, len(vms)),
                    },
                    "properties": {"provisioningState": "Succeeded"},
                }
                for name, vms in sets.items()
            ],
            "vms": sets,
        }
        self.path(ARM_STATE).write_text(json.dumps(state))
        self.path(ARM_LOG).write_text("")

    def arm_requests(self) -> list[tuple[str, str, Any]]:
        """What the program asked of Resource Manager since the state was last written (not the metadata
        service)."""
        lines = self.path(ARM_LOG).read_text().splitlines()
        return [(m, p, b) for m, p, b in map(json.loads, lines) if not p.startswith("/metadata/")]

    def node_sync(self) -> Result:
        """One round of the controller's node sync, as its systemd unit runs it (root, the lib on the
        Python path)."""
        command = (
            f"PYTHONPATH={NODES_LIB} python3 -m clusterfab_slurm_nodes sync --config {SYNC_CONFIG} "
            "--fleet /etc/lab-fleet.json"
        )
        return self.run(command, check=False, timeout=60)

    def vm_command(self, vm: str, program: str = "clusterfab-slurmd") -> str:
        """The start program (or another of the role's) as systemd runs it on `vm`: its host name, its own
        /tmp."""
        imds = f"http://127.0.0.1:{18001 + list(self.vms).index(vm)}"
        machine = f"hostname {vm} && mount -t tmpfs -o mode=1777,size=64m tmpfs /tmp"
        inner = f"{machine} && exec /usr/local/sbin/{program}-{vm}"
        return f"CLUSTERFAB_AZURE_IMDS={imds} exec unshare --uts --mount sh -c {shlex.quote(inner)}"

    def reassert(self, vm: str) -> Result:
        """The node's re-assertion program on `vm`, as its timer runs it."""
        return self.run(self.vm_command(vm, "clusterfab-slurm-reassert"), check=False)

    def keep_claims(self, wait: int = 30) -> Result:
        """The controller's claims keeper as its timer (--wait 30) or slurmctld's ExecStartPost (--wait 60)
        runs it."""
        return self.run([CLAIMS, RECORD, "--wait", str(wait)], check=False, timeout=wait + 60)

    def record(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.path(RECORD).read_text())
        return loaded

    def restart_slurmctld(self) -> None:
        """Stop slurmctld (as systemd does: SIGTERM, it saves its state) and start it again."""
        proc = self._daemons.pop("slurmctld")
        self.run("kill -TERM $(cat /run/slurmctld/slurmctld.pid 2>/dev/null || pidof slurmctld)")
        proc.wait(timeout=60)
        self._start_slurmctld()

    def start_vm(self, vm: str) -> None:
        self._daemon(f"vm-{vm}", self.vm_command(vm))

    def run_vm(self, vm: str, timeout: float = 60) -> Result:
        """The start program in the foreground, for a VM whose program exits."""
        return self.run(self.vm_command(vm), check=False, timeout=timeout)

    def stop_vm(self, vm: str, node: str) -> None:
        """Stop the VM's slurmd, by the pid it wrote (the lab's SlurmdPidFile /run/slurmd/%n.pid)."""
        self.run(f"kill $(cat /run/slurmd/{node}.pid)")
        self._daemons.pop(f"vm-{vm}").wait(timeout=30)

    def vm_output(self, vm: str) -> str:
        return (self.logs / f"vm-{vm}.out").read_text(errors="replace")

    def node_records(self) -> dict[str, dict[str, Any]]:
        """``scontrol show node --json``: name -> the node."""
        data = json.loads(self.run("scontrol show node --json").stdout)
        return {node["name"]: node for node in data["nodes"]}

    def held_by(self, vm: str) -> str | None:
        """The node IDLE with `vm` as its NodeHostname, once its slurmd registered."""
        found = [
            n
            for n, node in self.node_records().items()
            if node["hostname"] == vm and node["state"] == ["IDLE"]
        ]
        return found[0] if found else None

    def wait_held(self, vm: str) -> str:
        try:
            name: str = self.wait_for(lambda: self.held_by(vm), timeout=90, what=f"a node IDLE as {vm}")
        except LabError as err:
            raise AssertionError(
                f"{err}\n{self.vm_output(vm)[-2000:]}\n{self.log('slurmctld')[-2500:]}"
            ) from err
        return name


def _files() -> dict[str, str]:
    files = rendered_files()
    assert files["slurm.conf"].count(RENDERED_NODES) == 1
    assert "NodeName=trainers-[0-2] Name=gpu Type=h100 File=/dev/nvidia[0-7]" in files["gres.conf"]
    return {**files, "slurm.conf": files["slurm.conf"].replace(RENDERED_NODES, UNIT_NODES)}


@pytest.fixture(scope="module")
def lab(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClaimLab]:
    with ClaimLab(_files(), golden, tmp_path_factory.mktemp("claimlab")) as running:
        yield running
    assert running.leftover_processes() == []


def _listed(lab: ClaimLab) -> list[str]:
    """What the claim reads (and the spot watcher): node, NodeHostname, NodeAddr."""
    return lab.run("sinfo -a -N -h -o '%N %n %o'").stdout.splitlines()


def test_an_unclaimed_static_node_has_its_own_name_as_host_name_and_address(lab: ClaimLab) -> None:
    assert _listed(lab) == [
        "trainers-0 trainers-0 trainers-0",
        "trainers-1 trainers-1 trainers-1",
        "trainers-2 trainers-2 trainers-2",
    ]


def test_two_vms_of_a_unit_started_together_claim_its_two_nodes(lab: ClaimLab) -> None:
    first, second = "trainers-vmss000000", "trainers-vmss000001"
    lab.start_vm(first)
    lab.start_vm(second)
    held = {lab.wait_held(first): first, lab.wait_held(second): second}
    assert sorted(held) == ["trainers-0", "trainers-1"]
    nodes = lab.node_records()
    for node, vm in held.items():
        assert nodes[node]["address"] == VMS[vm][1]
        assert nodes[node]["gres"] == "gpu:h100:8"
        # The name file the spot watcher reads.
        assert lab.path(f"/run/clusterfab-slurm-node-{vm}").read_text() == f"{node}\n"
        assert (
            f"this VM ({vm}, {VMS[vm][1]}) claimed node {node} of fabric unit trainers-0\n"
            in lab.vm_output(vm)
        )
    assert nodes["trainers-2"]["hostname"] == "trainers-2"


def test_a_third_vm_of_the_unit_finds_no_free_node_and_fails(lab: ClaimLab) -> None:
    before = _listed(lab)
    ran = lab.run_vm("trainers-vmss000002")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr == (
        "no free node of fabric unit trainers-0 in slurmctld: every node with Feature=trainers-0 is "
        "claimed by another VM or is an elastic node Slurm has not powered up\n"
    )
    assert _listed(lab) == before


def test_a_vm_of_the_other_unit_claims_its_node(lab: ClaimLab) -> None:
    vm = "trainers1-vmss000000"
    lab.start_vm(vm)
    assert lab.wait_held(vm) == "trainers-2"
    assert "trainers-2 trainers1-vmss000000 10.217.1.4" in _listed(lab)


def test_a_restarted_vm_takes_its_node_back_with_its_gpus(lab: ClaimLab) -> None:
    vm = "trainers-vmss000000"
    node = lab.held_by(vm)
    assert node is not None
    started = lab.node_records()[node]["slurmd_start_time"]
    lab.stop_vm(vm, node)
    lab.start_vm(vm)
    said = f"this VM ({vm}) is node {node} of fabric unit trainers-0\n"
    lab.wait_for(lambda: said in lab.vm_output(vm), timeout=60, what="the program to find its node")
    # The same node registers again (a new slurmd start time), IDLE.
    lab.wait_for(
        lambda: lab.node_records()[node]["slurmd_start_time"] != started and lab.held_by(vm) == node,
        timeout=60,
        what=f"{node} registered again",
    )
    state = lab.node_records()[node]
    assert (state["state"], state["gres"], state["address"]) == (["IDLE"], "gpu:h100:8", "10.217.1.1")
    assert "INVAL" not in lab.log("slurmctld")


def test_a_job_with_gpus_per_node_runs_on_a_claimed_node(lab: ClaimLab) -> None:
    vm = "trainers-vmss000001"
    node = lab.held_by(vm)
    assert node is not None
    script = "#!/bin/sh\nsrun sh -c 'echo \"$SLURMD_NODENAME $(hostname) $CUDA_VISIBLE_DEVICES\"'\n"
    job_id = lab.sbatch(
        script, "-N1", "-w", node, "--gpus-per-node=8", "-A", "research", "-o", "out-%j.txt", user="alice"
    )
    job = lab.wait_job(job_id, FINAL, timeout=90)
    assert lab.job_state(job).split("+")[0] == "COMPLETED", lab.log("slurmctld")[-3000:]
    assert lab.run(f"cat /home/alice/out-{job_id}.txt").stdout == f"{node} {vm} 0,1,2,3,4,5,6,7\n"


def _claims(lab: ClaimLab) -> dict[str, dict[str, str]]:
    """The claims as slurmctld holds them now (its own record of each node)."""
    return {
        name: {"host": node["hostname"], "address": node["address"]}
        for name, node in lab.node_records().items()
        if node["hostname"] != name
    }


HELD = {"trainers-vmss000000", "trainers-vmss000001", "trainers1-vmss000000"}


def test_the_controller_records_the_claims_on_its_state_disk(lab: ClaimLab) -> None:
    held = _claims(lab)
    assert sorted(held) == ["trainers-0", "trainers-1", "trainers-2"]
    assert {claim["host"] for claim in held.values()} == HELD
    assert {(claim["host"], claim["address"]) for claim in held.values()} == {(vm, VMS[vm][1]) for vm in HELD}
    done = lab.keep_claims()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    record = lab.record()
    assert record["claims"] == held
    boot = lab.run("scontrol show config | sed -n 's/^BOOT_TIME *= //p'").stdout.strip()
    pid = lab.run("cat /run/slurmctld/slurmctld.pid").stdout.strip()
    start = lab.run(f"cut -d ' ' -f 22 /proc/{pid}/stat").stdout.strip()
    assert record["slurmctld"] == f"{boot} pid {pid} start {start}"


def test_slurmctld_forgets_the_claims_when_it_restarts(lab: ClaimLab) -> None:
    """What the protocol does not survive: slurmctld keeps a static node's NodeAddr and NodeHostname only
    in memory; `scontrol reconfigure` (which restarts slurmctld in 24.11) or a restart of slurmctld sets
    them back to slurm.conf's (the node's name), so the claims are gone (see the slurm_node README)."""
    assert [line.split()[1] for line in _listed(lab)] == [
        lab.node_records()[n]["hostname"] for n in ("trainers-0", "trainers-1", "trainers-2")
    ]
    lab.run("scontrol reconfigure")
    lab.wait_for(
        lambda: (
            _listed(lab)
            == [
                "trainers-0 trainers-0 trainers-0",
                "trainers-1 trainers-1 trainers-1",
                "trainers-2 trainers-2 trainers-2",
            ]
        ),
        timeout=30,
        what="the claims forgotten",
    )


def test_the_claims_timer_restores_the_claims_a_reconfigure_forgot(lab: ClaimLab) -> None:
    """After the reconfigure above: the slurmctld that answers is not the record's, so the keeper's timer
    run re-applies every recorded claim."""
    recorded = lab.record()["claims"]
    done = lab.keep_claims()
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(
        f"restored node {name}: {claim['host']} at {claim['address']}" for name, claim in recorded.items()
    )
    assert done.stderr == ""
    assert _claims(lab) == recorded
    for vm in HELD:
        lab.wait_held(vm)


def test_a_restarted_slurmctld_gets_the_claims_back_and_its_nodes_answer(lab: ClaimLab) -> None:
    recorded = lab.record()["claims"]
    assert _claims(lab) == recorded
    lab.restart_slurmctld()
    assert _claims(lab) == {}
    # slurmctld's ExecStartPost, as the role's drop-in runs it.
    done = lab.keep_claims(wait=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3
    assert _claims(lab) == recorded
    assert lab.record()["claims"] == recorded
    for vm in HELD:
        lab.wait_held(vm)
    # slurmctld reaches each slurmd at its claimed address: no node stops responding.
    lab.run("scontrol ping && sleep 5")
    assert all("NOT_RESPONDING" not in node["state"] for node in lab.node_records().values())
    # A new VM of a full unit finds no free node: it takes none of the restored ones.
    ran = lab.run_vm("trainers-vmss000002")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr == (
        "no free node of fabric unit trainers-0 in slurmctld: every node with Feature=trainers-0 is "
        "claimed by another VM or is an elastic node Slurm has not powered up\n"
    )
    assert _claims(lab) == recorded
    # A job runs on a restored node, as its VM.
    node = lab.held_by("trainers1-vmss000000")
    assert node == "trainers-2"
    script = "#!/bin/sh\nsrun sh -c 'echo \"$SLURMD_NODENAME $(hostname) $CUDA_VISIBLE_DEVICES\"'\n"
    job_id = lab.sbatch(
        script, "-N1", "-w", node, "--gpus-per-node=8", "-A", "research", "-o", "out-%j.txt", user="alice"
    )
    job = lab.wait_job(job_id, FINAL, timeout=90)
    assert lab.job_state(job).split("+")[0] == "COMPLETED", lab.log("slurmctld")[-3000:]
    assert (
        lab.run(f"cat /home/alice/out-{job_id}.txt").stdout
        == f"{node} trainers1-vmss000000 0,1,2,3,4,5,6,7\n"
    )


def test_a_node_whose_claim_slurmctld_lost_reasserts_it(lab: ClaimLab) -> None:
    """A controller restored from an older record (or none) knows the node by its own name again."""
    vm = "trainers1-vmss000000"
    assert lab.reassert(vm).returncode == 0
    lab.run("scontrol update NodeName=trainers-2 NodeAddr=trainers-2 NodeHostname=trainers-2")
    done = lab.reassert(vm)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "this VM (trainers1-vmss000000, 10.217.1.4) re-asserted its claim of node trainers-2 "
        "(slurmctld had: trainers-2 trainers-2)\n"
    )
    assert "trainers-2 trainers1-vmss000000 10.217.1.4" in _listed(lab)
    assert lab.wait_held(vm) == "trainers-2"
    # Nothing to do once slurmctld knows it again.
    again = lab.reassert(vm)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_node_never_takes_back_a_node_another_host_holds(lab: ClaimLab) -> None:
    vm = "trainers1-vmss000000"
    lab.run("scontrol update NodeName=trainers-2 NodeAddr=10.217.1.9 NodeHostname=trainers1-vmss000009")
    try:
        done = lab.reassert(vm)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            "node trainers-2 is held by trainers1-vmss000009 now: "
            "this VM (trainers1-vmss000000) does not take it back\n"
        )
        assert "trainers-2 trainers1-vmss000009 10.217.1.9" in _listed(lab)
    finally:
        lab.run("scontrol update NodeName=trainers-2 NodeAddr=10.217.1.4 NodeHostname=trainers1-vmss000000")
    assert lab.wait_held(vm) == "trainers-2"


# --- The controller's node sync (clusterfab_slurm_nodes sync, cloud azure) against the claims ------------

SETS = (
    "/subscriptions/sub/resourceGroups/clusterfab-lab-lab/providers/Microsoft.Compute/virtualMachineScaleSets"
)
LISTS = [
    ("GET", f"{SETS}?api-version=2024-11-01", None),
    ("GET", f"{SETS}/lab-trainers-0-vmss/virtualMachines?api-version=2024-11-01", None),
    ("GET", f"{SETS}/lab-trainers-1-vmss/virtualMachines?api-version=2024-11-01", None),
]
"""One round's listing: the group's scale sets, then each unit's VMs."""
EARLIER = "2026-11-29T10:00:00+00:00"


def _now(lab: ClaimLab) -> str:
    return lab.run("date -u +%Y-%m-%dT%H:%M:%S+00:00").stdout.strip()


def test_the_node_sync_leaves_a_settled_cluster_alone(lab: ClaimLab) -> None:
    held = _claims(lab)
    lab.arm_state([(vm, EARLIER) for vm in sorted(HELD)])
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert lab.arm_requests() == [*LISTS, ("GET", f"{SETS}?api-version=2024-11-01", None)]
    assert _claims(lab) == held


def test_the_node_sync_releases_a_deleted_vms_claim_and_the_scale_sets_new_vm_claims_it(
    lab: ClaimLab,
) -> None:
    """A VM deleted by hand: its node is released (DOWN, its own name again) and the unit's scale set is
    raised back to its size; the VM the scale set makes claims the freed node."""
    gone = "trainers-vmss000001"
    node = lab.held_by(gone)
    assert node is not None
    lab.stop_vm(gone, node)
    lab.arm_state([(vm, EARLIER) for vm in sorted(HELD - {gone})], capacity={"lab-trainers-0-vmss": 1})
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert (
        f"Release(name='{node}', host='{gone}', reason='clusterfab: no instance holds this node', down=False)"
        in done.stderr
    )
    assert "scale set lab-trainers-0-vmss (unit trainers-0): capacity 1 -> 2" in done.stderr
    record = lab.node_records()[node]
    assert (record["hostname"], record["address"], record["state"]) == (node, node, ["DOWN"])
    assert record["reason"] == "clusterfab: no instance holds this node"
    assert lab.arm_requests()[-1] == (
        "PATCH",
        f"{SETS}/lab-trainers-0-vmss?api-version=2024-11-01",
        {"sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 2}},
    )
    # The scale set's new VM.
    new = "trainers-vmss000002"
    lab.start_vm(new)
    assert lab.wait_held(new) == node  # DOWN, then back in service when its slurmd registers
    lab.arm_state([(vm, EARLIER) for vm in sorted(HELD - {gone} | {new})])
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert [r for r in lab.arm_requests() if r[0] != "GET"] == []
    assert _claims(lab)[node] == {"host": new, "address": VMS[new][1]}


def test_a_node_drained_by_the_health_check_has_its_vm_replaced_and_returns_on_the_new_one(
    lab: ClaimLab,
) -> None:
    failing = "trainers-vmss000002"
    node = lab.held_by(failing)
    assert node is not None
    others = sorted(HELD - {"trainers-vmss000001"})
    lab.arm_state([(vm, EARLIER) for vm in [*others, failing]])
    reason = "clusterfab-health: XID: Xid 79 on GPU 3 (fallen off the bus)"
    lab.run(f"scontrol update NodeName={node} State=DRAIN Reason={shlex.quote(reason)}")
    # First round: the VM is deleted from its scale set, the node set aside (DOWN, still drained).
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert (
        "POST",
        f"{SETS}/lab-trainers-0-vmss/delete?api-version=2024-11-01",
        {"instanceIds": ["2"]},
    ) in lab.arm_requests()
    replacing = f"clusterfab: replacing lab-trainers-0-vmss/2 ({reason})"
    record = lab.node_records()[node]
    assert (set(record["state"]), record["reason"]) == ({"DOWN", "DRAIN"}, replacing)
    # Azure deletes the VM (its capacity drops): the next round releases the claim, keeping the drain, and
    # raises the scale set back to its size.
    lab.stop_vm(failing, node)
    lab.arm_state([(vm, EARLIER) for vm in others], capacity={"lab-trainers-0-vmss": 1})
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    record = lab.node_records()[node]
    assert (record["hostname"], set(record["state"]), record["reason"]) == (
        node,
        {"DOWN", "DRAIN"},
        replacing,
    )
    assert lab.arm_requests()[-1][0] == "PATCH"
    # The new VM claims the freed node and registers; the sync sees a VM created after the drain and
    # returns the node to service.
    new = "trainers-vmss000003"
    lab.start_vm(new)
    lab.wait_for(
        lambda: lab.node_records()[node]["hostname"] == new, timeout=90, what=f"{new} to claim {node}"
    )
    lab.arm_state([(vm, EARLIER) for vm in others] + [(new, _now(lab))])
    lab.wait_for(
        lambda: "DOWN" not in lab.node_records()[node]["state"], timeout=60, what=f"{node} registered"
    )
    done = lab.node_sync()
    assert done.returncode == 0, done.stderr
    assert f"Return(name='{node}'" in done.stderr
    assert lab.wait_held(new) == node
    assert lab.node_records()[node]["state"] == ["IDLE"]
