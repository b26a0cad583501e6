"""End to end: elastic nodes with Debian 13's real slurmctld, the controller's own power programs and node
sync (the package the stack ships, run by the chroot's python3 with its boto3) and moto standing in for
EC2 and Auto Scaling.

The cluster renders from a blueprint with `autoscaling: {min: 1, max: 3}`: h100-0 always up, h100-[1-2]
State=CLOUD. moto's server runs inside the lab's network namespace (a thread that entered it), so the
programs reach it at 127.0.0.1 as they would reach EC2's endpoint; the test plays the cloud's part of
booting: when an instance holds a node name, it starts that node's slurmd (`slurmd -b`: a fresh boot
time, as a new machine reports), and when an instance is terminated it stops it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.instances import InstanceBackend

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import SYNC_CONFIG, controller_files
from clusterfab.scheduler.slurm.render import POWER_PROGRAMS, render_slurm
from tests.factories import spec
from tests.slurm.lab import LabError, SlurmLab
from tests.slurm.labcloud import MOTO, InLabNet, LabMoto, client, enter_net
from tests.slurm.rendered import node_scripts
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm

FILES = "/var/lib/clusterfab/files/elastic-lab"
STACK = "lab"
COMMANDS = {"ResumeProgram": "resume", "SuspendProgram": "suspend", "ResumeFailProgram": "resume-fail"}
FLEET = "/etc/clusterfab-slurm/fleet.json"
"""The node groups' launch templates and instance profiles, where the role writes them."""
COUNTS = "/var/lib/clusterfab/slurm-nodes/counts.json"
"""The node programs' running totals, where the role keeps them (a directory SlurmUser owns)."""
SUSPEND_TIME_S = 20
"""The lab's SuspendTime (the blueprint's smallest idle time is a minute): an explicit lab override."""
SUSPEND_TIMEOUT_S = 10
"""The lab's SuspendTimeout (rendered 300 s, the time a real GPU instance takes to go): a lab override, so
that a suspended node may be created again within the test."""

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
HOSTNAME_JOB = "#!/bin/sh\nsrun hostname\n"


class ElasticLab(SlurmLab):
    """A lab whose elastic nodes' slurmd start when the cloud has an instance for them."""

    static: tuple[str, ...] = ()
    cluster_spec: Any = None

    def _install_files(self) -> None:
        super()._install_files()
        _install_programs(self, self.cluster_spec)  # before slurmctld starts: it checks them once, at start

    def _start_slurmds(self) -> None:
        for node in self.static:
            self.boot(node, fresh=False)
        self.wait_for(
            lambda: all(self.nodes_state()[n]["state"] == "IDLE" for n in self.static),
            timeout=self.start_timeout,
            what="the static nodes IDLE",
        )

    def boot(self, node: str, *, fresh: bool = True) -> None:
        self.run(f"mkdir -p /var/spool/slurmd/{node}")
        boot = " -b" if fresh else ""
        self._daemon(f"slurmd-{node}", self.slurmd_command(node, boot))

    def halt(self, node: str, *, fresh: bool = True) -> None:
        proc = self._daemons.pop(f"slurmd-{node}", None)
        if proc is not None:
            self.run(f"pkill -f 'slurmd -D{' -b' if fresh else ''} -N {node}$' || true")
            proc.wait(timeout=30)

    def halt_static(self, node: str) -> None:
        self.halt(node, fresh=False)


def _blueprint() -> Any:
    return spec(
        name="elastic-lab",
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "autoscaling": {"min": 1, "max": 3}}],
        scheduler={"kind": "slurm", "elastic": {"idle_minutes": 1, "resume_timeout_minutes": 5}},
        teams=[{"name": "research", "max_gpus": 64, "users": ["alice"]}],
    )


def _files(cluster: Any) -> dict[str, str]:
    files = {**render_slurm(cluster, load_catalog().slurm), **node_scripts()}
    conf = files["slurm.conf"].replace("SuspendTime=60\n", f"SuspendTime={SUSPEND_TIME_S}\n")
    files["slurm.conf"] = conf.replace("SuspendTimeout=300\n", f"SuspendTimeout={SUSPEND_TIMEOUT_S}\n")
    return files


class Cloud(InLabNet):
    """The test's view of moto (every call runs on one thread inside the lab's network)."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.ec2: Any = self.call(lambda: client("ec2"))
        self.static_tags: list[dict[str, str]] = []
        self.subnet = self.image = self.template = self.profile = ""
        self.autoscaling: Any = self.call(lambda: client("autoscaling"))

    def instances(self) -> dict[str, tuple[str, str]]:
        """Node name -> (instance id, state) of the elastic instances."""

        def read() -> dict[str, tuple[str, str]]:
            found = {}
            for r in self.ec2.describe_instances(
                Filters=[{"Name": "tag:clusterfab-slurm-elastic", "Values": ["true"]}]
            )["Reservations"]:
                for i in r["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                    if "clusterfab-slurm-node" in tags and i["State"]["Name"] != "terminated":
                        found[tags["clusterfab-slurm-node"]] = (i["InstanceId"], i["State"]["Name"])
            return found

        return dict(self.call(read))

    def launch_static(self, name: str | None) -> str:
        """An instance of the static part, as the auto scaling group launches it (named if `name`)."""
        tags = [*self.static_tags, *([{"Key": "clusterfab-slurm-node", "Value": name}] if name else [])]

        def launch() -> str:
            return str(
                self.ec2.run_instances(
                    ImageId=self.image,
                    MinCount=1,
                    MaxCount=1,
                    SubnetId=self.subnet,
                    IamInstanceProfile={"Arn": self.profile},
                    TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
                )["Instances"][0]["InstanceId"]
            )

        return str(self.call(launch))

    def state(self, instance_id: str) -> str:
        def read() -> str:
            reservations = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
            return str(reservations[0]["Instances"][0]["State"]["Name"])

        return str(self.call(read))


def _node_group(cloud: Cloud, blueprint: str) -> None:
    """The h100 group as the stack creates it: launch template and auto scaling group, with its tags."""
    tags = {
        "clusterfab-blueprint": blueprint,
        "clusterfab-stack": STACK,
        "clusterfab-component": "h100",
        "clusterfab-node-group": "h100",
    }

    def create() -> None:
        ec2, autoscaling = cloud.ec2, cloud.autoscaling
        # In the lab's loopback network: whatever 127.0.0.x address moto gives a static instance, the node
        # sync sets it as the node's address, and the lab's lo answers it where its slurmd listens.
        vpc = ec2.create_vpc(CidrBlock="127.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="127.0.0.0/24", AvailabilityZone="us-east-1a")
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        tagged = [{"Key": k, "Value": v} for k, v in tags.items()]
        template = ec2.create_launch_template(
            LaunchTemplateName="h100",
            LaunchTemplateData={"ImageId": image, "InstanceType": "p5.48xlarge"},
            TagSpecifications=[{"ResourceType": "launch-template", "Tags": tagged}],
        )["LaunchTemplate"]["LaunchTemplateId"]
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName="h100",
            MinSize=0,
            MaxSize=0,
            LaunchTemplate={"LaunchTemplateId": template, "Version": "1"},
            VPCZoneIdentifier=subnet["Subnet"]["SubnetId"],
            Tags=[{**t, "PropagateAtLaunch": False} for t in tagged],
        )
        cloud.static_tags = tagged
        cloud.subnet = subnet["Subnet"]["SubnetId"]
        cloud.image = image
        cloud.template = template
        profile = client("iam").create_instance_profile(InstanceProfileName="h100-profile")
        cloud.profile = profile["InstanceProfile"]["Arn"]

    cloud.call(create)
    cloud.launch_static("h100-0")


def install_programs(
    lab: ElasticLab, files: Mapping[str, str], settings: Mapping[str, Any], environment: str = ""
) -> None:
    """The controller's files as the stack ships them (`files`: hostvars.controller_files), the node
    programs' settings with the lab's `settings` added (its stand-ins' endpoints), and the power programs as
    the role installs them (the role's wrapper, `environment` first: the stand-ins' credentials)."""
    for name, text in files.items():
        if name.startswith("lib/"):
            target = lab.path(f"{FILES}/{name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    config = json.loads(files[SYNC_CONFIG])
    lab.path(f"{FILES}/{SYNC_CONFIG}").write_text(json.dumps({**config, **settings}))
    # The role writes the fleet file on every cloud (`{}` but on AWS, whose fixture writes its own after).
    lab.path(FLEET).parent.mkdir(parents=True, exist_ok=True)
    lab.path(FLEET).write_text("{}\n")
    lab.run(f"install -d -o slurm -g slurm -m 0755 {os.path.dirname(COUNTS)}")
    for key, path in POWER_PROGRAMS.items():
        wrapper = lab.path(path)
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(
            f"#!/bin/sh\n{environment}"
            f"PYTHONPATH={FILES}/lib exec /usr/bin/python3 -m clusterfab_slurm_nodes {COMMANDS[key]}"
            f' --config {FILES}/{SYNC_CONFIG} --fleet {FLEET} --counts {COUNTS} "$@"'
            " >>/var/log/slurm/clusterfab-power.log 2>&1\n"
        )
        wrapper.chmod(0o755)


def _install_programs(lab: ElasticLab, cluster: Any) -> None:
    """The programs with moto's endpoint and credentials instead of the instance role's."""
    install_programs(
        lab,
        controller_files(cluster, load_catalog().slurm, stack=STACK),
        {"endpoint_url": MOTO, "retry_after_s": 0},
        "export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing\n",
    )


@pytest.fixture(scope="module")
def elastic(
    golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ElasticLab, Cloud]]:
    cluster = _blueprint()
    ElasticLab.static = ("h100-0",)
    ElasticLab.cluster_spec = cluster
    lab = ElasticLab(_files(cluster), golden, tmp_path_factory.mktemp("elasticlab"))
    moto: LabMoto | None = None
    cloud: Cloud | None = None
    try:
        lab.start()
        moto = LabMoto(lab._init_pid or 0)  # the lab's PID 1 holds its namespaces
        moto.start()
        cloud = Cloud(lab._init_pid or 0)
        _node_group(cloud, cluster.name)
        # What the role writes from the stack's outputs: the group's template and instance profile.
        lab.path(FLEET).parent.mkdir(parents=True, exist_ok=True)
        lab.path(FLEET).write_text(
            json.dumps({"h100": {"template": cloud.template, "profile": cloud.profile}})
        )
        yield lab, cloud
    finally:
        if cloud is not None:
            cloud.close()
        if moto is not None:
            moto.stop()
        lab.close()


def sync(lab: ElasticLab) -> str:
    return lab.run(
        f"AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing PYTHONPATH={FILES}/lib"
        f" python3 -m clusterfab_slurm_nodes sync --config {FILES}/{SYNC_CONFIG} --fleet {FLEET}"
        f" --counts {COUNTS}"
    ).stderr


def boot_while(
    lab: ElasticLab,
    running: Callable[[], set[str]],
    until: Callable[[], Any],
    *,
    timeout: float,
    what: str,
    tick: Callable[[], object] = lambda: None,
) -> Any:
    """Until `until` holds: `tick` (a node sync round, where the test runs them), then the cloud's part of
    booting: start the slurmd of every node the cloud now `running` has a machine for, stop those it has
    no more."""
    booted: set[str] = set()
    deadline = time.monotonic() + timeout
    while True:
        tick()
        machines = running()
        for node in sorted(machines - booted):
            lab.boot(node)
        for node in sorted(booted - machines):
            lab.halt(node)
        booted = machines
        value = until()
        if value:
            return value
        if time.monotonic() > deadline:
            log = lab.path("/var/log/slurm/clusterfab-power.log")
            power = log.read_text() if log.exists() else "(no power log)"
            raise AssertionError(
                f"timed out waiting for {what}\n{power}\n{lab.nodes_state()}\n{lab.squeue()}\n"
                f"{lab.log('slurmctld')[-4000:]}"
            )
        time.sleep(1)


def wait_booting(
    lab: ElasticLab, cloud: Cloud, until: Callable[[], Any], *, timeout: float, what: str
) -> Any:
    return boot_while(lab, lambda: set(cloud.instances()), until, timeout=timeout, what=what)


def test_a_queued_job_creates_exactly_its_nodes_and_idle_nodes_are_deleted(
    elastic: tuple[ElasticLab, Cloud],
) -> None:
    lab, cloud = elastic
    assert cloud.instances() == {}
    sync(lab)  # root starts the totals; slurmctld's programs (SlurmUser) add to them below
    job_id = lab.sbatch(
        HOSTNAME_JOB, "-N2", "--gpus-per-node=8", "-A", "research", "-o", "out-%j.txt", user="alice"
    )
    job = wait_booting(
        lab,
        cloud,
        lambda: (j := lab.job(job_id)) and lab.job_state(j).split("+")[0] in FINAL and j,
        timeout=120,
        what="the two-node job to finish",
    )
    assert lab.job_state(job).split("+")[0] == "COMPLETED"
    assert sorted(lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.split()) == ["h100-0", "h100-1"]
    # Exactly the one elastic node the job needed was created: h100-2 was never asked for.
    assert set(cloud.instances()) == {"h100-1"}
    # Idle for SuspendTime: slurmctld runs the suspend program, which deletes the instance.
    wait_booting(lab, cloud, lambda: cloud.instances() == {}, timeout=SUSPEND_TIME_S + 90, what="the suspend")
    # Powering down for SuspendTimeout, then powered down: either way no longer a node jobs may get.
    state = wait_powering_down(lab, "h100-1", timeout=60)
    assert "IDLE" in state.split("+")
    programs = json.loads(lab.path(COUNTS).read_text())["programs"]
    assert (programs["resume"]["done"], programs["resume"]["failed"]) == ({"create": 1}, {})
    assert programs["suspend"]["done"] == {"delete": 1}
    assert programs["sync"]["runs"] >= 1


def wait_powering_down(lab: ElasticLab, node: str, *, timeout: float) -> str:
    """The node's state once it is powering down or powered down: no longer a node jobs may get."""
    return str(
        lab.wait_for(
            lambda: (
                {"POWERING_DOWN", "POWERED_DOWN"} & set((s := lab.nodes_state()[node]["state"]).split("+"))
                and s
            ),
            timeout=timeout,
            what=f"{node} powering down",
        )
    )


def wait_job(lab: ElasticLab, cloud: Cloud, job_id: int, states: set[str], timeout: float = 120) -> Any:
    return wait_booting(
        lab,
        cloud,
        lambda: (j := lab.job(job_id)) and lab.job_state(j).split("+")[0] in states and j,
        timeout=timeout,
        what=f"job {job_id} {sorted(states)}",
    )


def wait_powered_down(lab: ElasticLab, cloud: Cloud, *nodes: str) -> None:
    def done() -> bool:
        states = lab.nodes_state()
        return all("POWERED_DOWN" in states[n]["state"].split("+") for n in nodes)

    wait_booting(
        lab, cloud, done, timeout=SUSPEND_TIME_S + SUSPEND_TIMEOUT_S + 90, what=f"{nodes} powered down"
    )


def test_no_capacity_returns_the_nodes_with_the_reason_and_the_job_waits(
    elastic: tuple[ElasticLab, Cloud], monkeypatch: pytest.MonkeyPatch
) -> None:
    lab, cloud = elastic
    wait_powered_down(lab, cloud, "h100-1", "h100-2")

    def no_capacity(*_: Any, **__: Any) -> Any:
        raise EC2ClientError(
            "InsufficientInstanceCapacity",
            "We currently do not have sufficient p5.48xlarge capacity in the Availability Zone.",
        )

    monkeypatch.setattr(InstanceBackend, "run_instances", no_capacity)
    job_id = lab.sbatch(
        HOSTNAME_JOB, "-N3", "--gpus-per-node=8", "-A", "research", "-o", "out-%j.txt", user="alice"
    )
    reason = "clusterfab: resume failed: InsufficientInstanceCapacity"

    def refused() -> dict[str, dict[str, str]] | None:
        nodes = {n: s for n, s in lab.nodes_state().items() if n in {"h100-1", "h100-2"}}
        return nodes if all(s["reason"] == reason for s in nodes.values()) else None

    nodes = wait_booting(lab, cloud, refused, timeout=60, what="the refusal as the nodes' reason")
    assert all("DOWN" in s["state"].split("+") for s in nodes.values()), nodes
    assert cloud.instances() == {}
    job = lab.wait_for(lambda: (j := lab.job(job_id)) and lab.job_state(j) == "PENDING" and j, timeout=30)
    assert lab.job_state(job) == "PENDING"  # back in the queue, not failed
    # Capacity is back; the node sync hands the nodes back to power saving (the lab's retry wait is 0).
    monkeypatch.undo()
    sync(lab)
    lab.wait_for(
        lambda: all("DOWN" not in lab.nodes_state()[n]["state"].split("+") for n in ("h100-1", "h100-2")),
        timeout=60,
        what=f"the nodes out of DOWN (after the sync: {lab.nodes_state()}, {lab.log('slurmctld')[-1500:]})",
    )
    # A requeued batch job waits before it is eligible again (Slurm 24.11: EligibleTime = requeue + 121 s,
    # see test_slurm_lab); the test releases it now, as an operator would, while the nodes boot.
    job = wait_booting(
        lab,
        cloud,
        lambda: lab.release(job_id) and lab.job_state(j := lab.job(job_id)).split("+")[0] in FINAL and j,
        timeout=180,
        what=f"job {job_id} released and finished",
    )
    assert lab.job_state(job).split("+")[0] == "COMPLETED"
    out = sorted(lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.split())
    assert out == ["h100-0", "h100-1", "h100-2"]


def test_a_vanished_instance_requeues_its_job_and_its_node_is_powered_down(
    elastic: tuple[ElasticLab, Cloud],
) -> None:
    """A spot interruption as the controller sees it: the instance is gone while its job runs."""
    lab, cloud = elastic
    wait_powered_down(lab, cloud, "h100-1", "h100-2")
    job_id = lab.sbatch("#!/bin/sh\nsleep 600\n", "-N1", "-w", "h100-1", "-A", "research", user="alice")
    wait_booting(
        lab, cloud, lambda: lab.job_state(lab.job(job_id)) == "RUNNING", timeout=120, what="the job running"
    )  # RUNNING alone: not RUNNING+CONFIGURING, while its node boots
    instance, _ = cloud.instances()["h100-1"]
    cloud.call(lambda: cloud.ec2.terminate_instances(InstanceIds=[instance]))
    lab.halt("h100-1")  # the machine is gone: so is its slurmd
    # The sync as its timer runs it, round after round: a round that sees the node between states (still
    # flagged POWERING_UP on a loaded machine) leaves it to the next, as on a controller.
    rounds: list[str] = []
    lost = "clusterfab: its instance is gone (interrupted or deleted)"
    try:
        lab.wait_for(
            lambda: rounds.append(sync(lab)) or lab.nodes_state()["h100-1"]["reason"] == lost,
            timeout=30,
            what="the lost node marked down",
        )
    except LabError as err:
        raise AssertionError(f"{err}\nlast sync rounds: {rounds[-3:]}\nnodes: {lab.nodes_state()}") from err
    job = lab.wait_for(lambda: (j := lab.job(job_id)) and j["restart_cnt"] >= 1 and j, timeout=30)
    assert lab.job_state(job) in {"PENDING", "REQUEUED"}
    sync(lab)  # the next round hands the node back to power saving
    state = wait_powering_down(lab, "h100-1", timeout=30)
    assert "DOWN" not in state.split("+")
    lab.run(f"scancel {job_id}")


def test_a_static_node_drained_for_hardware_gets_a_new_machine(elastic: tuple[ElasticLab, Cloud]) -> None:
    lab, cloud = elastic
    sync(lab)  # settled: h100-0 named, at its address
    old = next(i for i, (name, _) in _static(cloud).items() if name == "h100-0")
    reason = "clusterfab-health: XID: 79 on GPU 0000:53:00.0"
    lab.run(f"scontrol update NodeName=h100-0 State=DRAIN Reason='{reason}'")
    sync(lab)
    assert cloud.state(old) in {"shutting-down", "terminated"}
    assert lab.nodes_state()["h100-0"]["reason"] == f"clusterfab: replacing {old} ({reason})"
    # Meanwhile the old machine's slurmd still answers pings, and an answer may clear DOWN
    # (ReturnToService=2; CI saw IDLE+DRAIN within the second): DRAIN stays, so no job lands there.
    time.sleep(1)
    assert "DRAIN" in lab.nodes_state()["h100-0"]["state"].split("+")
    # The old machine goes (its slurmd with it); the auto scaling group launches a replacement, which the
    # sync names, addresses and undrains its node for.
    lab.halt_static("h100-0")
    new = cloud.launch_static(None)
    sync(lab)
    assert _static(cloud)[new] == ("h100-0", "running")
    back = lab.nodes_state()["h100-0"]  # undrained: DOWN until the new machine's slurmd registers
    assert back["reason"] == f"clusterfab: {new} started for it (clusterfab: replacing {old} ({reason}))"
    assert "DRAIN" not in back["state"].split("+")
    lab.boot("h100-0")
    state = lab.wait_for(lambda: (s := lab.nodes_state()["h100-0"])["state"] == "IDLE" and s, timeout=60)
    assert state["reason"] == ""


SPOT_WATCH = Path(__file__).resolve().parents[2] / "playbooks/roles/slurm_node/files/clusterfab_spot_watch.py"
IMDS = "http://127.0.0.1:5001"
NOTICE = {"action": "terminate", "time": "2026-11-26T12:02:00Z"}


class _Imds(BaseHTTPRequestHandler):
    """EC2's instance metadata service as the spot watcher sees it two minutes before an interruption:
    IMDSv2 tokens, and the instance-action item."""

    def log_message(self, *_: Any) -> None:
        pass

    def _send(self, status: int, body: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_PUT(self) -> None:
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        self._send(200, "lab-token") if self.path == "/latest/api/token" and ttl else self._send(400)

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != "lab-token":
            self._send(401)
        elif self.path == "/latest/meta-data/spot/instance-action":
            self._send(200, json.dumps(NOTICE))
        else:
            self._send(404)


class LabImds:
    """The stand-in IMDS, listening in the lab's network namespace (its socket made by a thread inside)."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._server: ThreadingHTTPServer | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise AssertionError("the lab's IMDS did not start")

    def _serve(self) -> None:
        enter_net(self._pid)
        self._server = ThreadingHTTPServer(("127.0.0.1", 5001), _Imds)
        self._ready.set()
        self._server.serve_forever()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def test_a_spot_interruption_notice_requeues_the_job_and_powers_the_node_down(
    elastic: tuple[ElasticLab, Cloud],
) -> None:
    """The node's own watcher (the slurm_node role's program) sees EC2's two-minute notice and sets its node
    DOWN: the job is requeued while the instance still runs; the next sync powers the node down and the
    suspend program deletes the instance before EC2 takes it."""
    lab, cloud = elastic
    wait_powered_down(lab, cloud, "h100-1", "h100-2")
    job_id = lab.sbatch("#!/bin/sh\nsleep 600\n", "-N1", "-w", "h100-1", "-A", "research", user="alice")
    wait_booting(
        lab, cloud, lambda: lab.job_state(lab.job(job_id)) == "RUNNING", timeout=120, what="the job running"
    )
    assert "h100-1" in cloud.instances()
    lab.path("/usr/local/sbin/clusterfab-spot-watch").write_text(SPOT_WATCH.read_text())
    imds = LabImds(lab._init_pid or 0)
    try:
        watched = lab.run(
            f"AWS_EC2_METADATA_SERVICE_ENDPOINT={IMDS} CLUSTERFAB_SPOT_CONFIG=/nonexistent"
            " CLUSTERFAB_SPOT_NODE=h100-1 CLUSTERFAB_SPOT_INTERVAL=0.2"
            " CLUSTERFAB_SPOT_STATE_DIR=/var/lib/clusterfab-spot-watch"
            " python3 /usr/local/sbin/clusterfab-spot-watch --rounds 3"
        )
    finally:
        imds.close()
    reason = "clusterfab: spot interruption notice (terminate at 2026-11-26T12:02:00Z)"
    assert f"h100-1: set DOWN: {reason}" in watched.stderr
    assert watched.stderr.count("set DOWN") == 1  # three looks, one action
    assert lab.nodes_state()["h100-1"]["reason"] == reason
    job = lab.wait_for(lambda: (j := lab.job(job_id)) and j["restart_cnt"] >= 1 and j, timeout=30)
    assert lab.job_state(job) in {"PENDING", "REQUEUED"}
    assert "h100-1" in cloud.instances()  # requeued before the machine is gone
    sync(lab)  # powered down at once: no retry wait for a node whose job is already requeued
    state = wait_powering_down(lab, "h100-1", timeout=30)
    assert "DOWN" not in state.split("+")
    # slurmctld's suspend program deletes the instance: nothing left for EC2 to take, nothing billed.
    wait_booting(lab, cloud, lambda: "h100-1" not in cloud.instances(), timeout=60, what="the suspend")
    lab.run(f"scancel {job_id}")
    powered = lab.wait_for(
        lambda: "POWERED_DOWN" in (s := lab.nodes_state()["h100-1"]["state"]).split("+") and s,
        timeout=SUSPEND_TIMEOUT_S + 30,
        what="h100-1 powered down",
    )
    assert "DRAIN" not in powered.split("+"), powered  # a clean power-saved node, free for the next job


def _static(cloud: Cloud) -> dict[str, tuple[str, str]]:
    """Instance id -> (node name, state) of the group's static instances."""

    def read() -> dict[str, tuple[str, str]]:
        found = {}
        for r in cloud.ec2.describe_instances(
            Filters=[{"Name": "tag:clusterfab-node-group", "Values": ["h100"]}]
        )["Reservations"]:
            for i in r["Instances"]:
                tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                if "clusterfab-slurm-elastic" not in tags:
                    found[i["InstanceId"]] = (tags.get("clusterfab-slurm-node", ""), i["State"]["Name"])
        return found

    return dict(cloud.call(read))


def test_slurmctld_takes_a_flex_start_partitions_long_resume_timeout(
    elastic: tuple[ElasticLab, Cloud],
) -> None:
    """The renderer gives partitions of flex-start elastic nodes ResumeTimeout up to 64,800 s (18 hours): the
    real slurmctld reads it from slurm.conf and keeps it (Slurm 24.11 refuses 70,000: "greater than 65535";
    scontrol cannot set it, so slurm.conf is rewritten and read again, then restored)."""
    lab, _ = elastic
    conf = lab.path("/etc/slurm/slurm.conf")
    rendered = conf.read_text()
    line = "PartitionName=flexwait Nodes=h100-2 Default=NO State=UP ResumeTimeout=64800\n"
    try:
        conf.write_text(rendered + line)
        lab.run("scontrol reconfigure")
        shown = lab.wait_for(
            lambda: (
                (r := lab.run("scontrol show partition flexwait", check=False)).returncode == 0 and r.stdout
            ),
            timeout=30,
            what="slurmctld to read the flex partition",
        )
        assert "ResumeTimeout=64800" in shown.split()
    finally:
        conf.write_text(rendered)
        lab.run("scontrol reconfigure")
        lab.wait_for(
            lambda: lab.run("scontrol show partition flexwait", check=False).returncode != 0,
            timeout=30,
            what="slurmctld to read the rendered slurm.conf again",
        )
