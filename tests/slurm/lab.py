"""SlurmLab: a whole Slurm cluster (MUNGE, MariaDB, slurmdbd, slurmctld, one slurmd per node) running
the rendered configuration with Debian 13's real daemons, in namespaces on this one machine.

Layout: a holder process owns new mount, UTS, network and PID namespaces (``unshare``); inside them
the lab mounts an overlay over the golden root file system (``rootfs.py``), ``/proc`` of the lab's PID
namespace, the host's ``/sys`` (for the cgroup hierarchies) and a private ``/dev`` with the fake GPUs,
then makes the overlay the mount namespace's root (``pivot_root``; a chroot would not do: the kernel
refuses a chrooted process a user namespace, and enroot starts every unprivileged container in one).
Every command and daemon enters those namespaces (``nsenter``), which puts it at that root. The UTS
name is the controller's (``SlurmctldHost``); each slurmd gets its own UTS namespace named after its
node, so ``hostname`` in a job prints the node name. The network namespace gives the lab its own
loopback, so the default Slurm/MariaDB ports never collide with anything on the host.

The lab also has its own cgroup namespace, rooted at one ``clusterfab-slurmlab-<id>`` cgroup per v1
hierarchy made under the test process's own cgroups, and mounts those hierarchies (not the host's
/sys/fs/cgroup) in the lab's root: slurmd's ``slurm_<node>/uid_*/job_*`` trees land inside the lab's
cgroup, two labs never share a ``slurm_trainers-0``, and jobs stay under the runner's memory limit.

Cleanup cannot leak: killing the holder (PID 1 of the lab's PID namespace) kills every process the
lab started, the mounts vanish with the mount namespace, and ``close`` then removes the lab's cgroup
trees (empty by then). Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.slurm import overrides as ov
from tests.slurm.rootfs import EXPECTED_SLURM_SERIES, GoldenRootfs

FAULT_DIR = "/run/clusterfab-lab/faults"
STORAGE_USER = "slurm"
NVIDIA_MAJOR = 195
LAB_ADDRESS = "10.217.0.1"
CGROUP_ROOT = Path("/sys/fs/cgroup")
ROLES = Path(__file__).resolve().parents[2] / "playbooks" / "roles"
ACCOUNTS_LOADER = "/usr/local/sbin/clusterfab-slurm-accounts"
ACCOUNTS_LOADER_SOURCE = ROLES / "slurm_controller" / "files" / "clusterfab_slurm_accounts.py"
_PR_SET_PDEATHSIG = 1
# The cgroup v1 hierarchies a lab gets (this VM mounts them one controller per hierarchy, beside a
# cgroup2 "unified" one). Slurm's autodetection picks cgroup/v1 when /sys/fs/cgroup is a tmpfs with a
# "systemd" hierarchy in it (it fails without: "can't stat /sys/fs/cgroup/systemd/").
V1_HIERARCHIES = {  # directory -> (key in /proc/self/cgroup, mount options)
    "cpuset": ("cpuset", "cpuset"),
    "cpu": ("cpu", "cpu"),
    "cpuacct": ("cpuacct", "cpuacct"),
    "memory": ("memory", "memory"),
    "devices": ("devices", "devices"),
    "freezer": ("freezer", "freezer"),
    "pids": ("pids", "pids"),
    "blkio": ("blkio", "blkio"),
    "systemd": ("name=systemd", "none,name=systemd"),
}
# PID 1 of the lab: reaps the orphans that are reparented to it, and nothing else.
_INIT = (
    "import os, time\n"
    "while True:\n"
    "    try:\n"
    "        os.wait()\n"
    "    except ChildProcessError:\n"
    "        time.sleep(0.2)\n"
)
# A stand-in for nvidia-smi (the nodes have no GPU): eight GPUs in the formats the health check reads, or
# failing like a GPU that fell off the bus when the lab put a fault file for this node under FAULT_DIR
# (tests/fixtures/health/standins/nvidia-smi, shared with the health check's own tests).
_NVIDIA_SMI = (Path(__file__).resolve().parents[1] / "fixtures/health/standins/nvidia-smi").read_text()


class LabError(RuntimeError):
    pass


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.steps[name] = round(time.monotonic() - started, 2)


def _qos_lines(text: str) -> list[tuple[str, list[str]]]:
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, *attrs = line.split()
            lines.append((name, attrs))
    return lines


def controller_addresses(files: Mapping[str, str]) -> list[str]:
    """IPv4 addresses the rendering gives the controller (SlurmctldHost's, AccountingStorageHost,
    slurmdbd.conf's DbdAddr), in that order, without repeats."""
    conf = ov.settings(files["slurm.conf"])
    dbd = ov.settings(files.get("slurmdbd.conf", ""))
    found = re.findall(r"\((\d+\.\d+\.\d+\.\d+)\)", conf.get("slurmctldhost", ""))
    found += [v for v in (conf.get("accountingstoragehost"), dbd.get("dbdaddr")) if v]
    return list(dict.fromkeys(a for a in found if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", a)))


def account_users(accounts_cfg: str) -> list[str]:
    """Users named in a ``sacctmgr load`` file (``User - 'alice':...``)."""
    return re.findall(r"^\s*User\s*-\s*'?([^':\s]+)'?", accounts_cfg, re.MULTILINE)


class SlurmLab:
    """Run the rendered Slurm files (``name -> content``) as a cluster; use as a context manager."""

    def __init__(
        self,
        files: Mapping[str, str],
        golden: GoldenRootfs,
        workdir: Path,
        *,
        start_timeout: float = 120.0,
        keep_rootfs: bool = False,
    ) -> None:
        if not golden.slurm_version.startswith(EXPECTED_SLURM_SERIES + "."):
            raise LabError(
                f"the lab must run Slurm {EXPECTED_SLURM_SERIES}, golden has {golden.slurm_version}"
            )
        self.rendered = dict(files)
        self.files, self.overrides = ov.apply_lab_overrides(files)
        self.golden = golden
        self.workdir = workdir
        self.start_timeout = start_timeout
        self.keep_rootfs = keep_rootfs
        self.nodes = ov.node_names(self.files["slurm.conf"])
        self.cluster = ov.settings(self.files["slurm.conf"])["clustername"]
        host = ov.settings(self.files["slurm.conf"])["slurmctldhost"]
        self.controller = host.split("(")[0]
        # The controller's fixed address (SlurmctldHost=name(addr), AccountingStorageHost, DbdAddr)
        # exists in the lab's network namespace, on lo, so the rendered addresses work as written.
        self.controller_addresses = controller_addresses(self.files)
        self.users = account_users(self.files["accounts.cfg"])
        self.timings = Timings()
        self.accounts_loads: list[str] = []
        """What each run of the accounts loader printed."""
        self.slurm_version = golden.slurm_version
        self.root = workdir / "root"
        self.logs = workdir / "logs"
        self._holder: subprocess.Popen[bytes] | None = None
        self._init_pid: int | None = None
        self._pidns: str | None = None
        self._daemons: dict[str, subprocess.Popen[bytes]] = {}
        self._cgroups: list[Path] = []

    # ----------------------------------------------------------------- lifecycle
    def __enter__(self) -> SlurmLab:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        with self.timings.step("namespaces_and_mounts"):
            self._make_namespaces()
            self._mount()
        with self.timings.step("files_and_users"):
            self._install_files()
        with self.timings.step("munge"):
            self._start_munge()
        with self.timings.step("mariadb"):
            self._start_mariadb()
        with self.timings.step("slurmdbd"):
            self._start_slurmdbd()
        with self.timings.step("slurmctld"):
            self._start_slurmctld()
        with self.timings.step("accounts"):
            self._load_accounts()
        with self.timings.step("slurmd_to_idle"):
            self._start_slurmds()

    def close(self) -> None:
        """Kill everything the lab started and undo what it did to the host; bounded, idempotent."""
        with self.timings.step("close"):
            self._save_logs()
            if self._init_pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._init_pid, signal.SIGKILL)
            for proc in [*self._daemons.values(), *([self._holder] if self._holder else [])]:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=5)
            self._wait_namespace_empty(timeout=15)
            self._remove_lab_cgroups()
            if not self.keep_rootfs:
                subprocess.run(["rm", "-rf", str(self.workdir / "upper")], check=False, timeout=120)
            self._init_pid = None
            self._holder = None

    @property
    def pid_namespace(self) -> str:
        """The lab's PID namespace as ``readlink /proc/PID/ns/pid`` shows it (``pid:[N]``)."""
        assert self._pidns is not None
        return self._pidns

    @property
    def cgroups(self) -> list[Path]:
        """The lab's cgroup directories on the host (none left after ``close``)."""
        return list(self._cgroups)

    def leftover_processes(self) -> list[str]:
        """Processes still in the lab's PID namespace (none after ``close``), as ``pid name``."""
        if self._pidns is None:
            return []
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                if os.readlink(proc / "ns/pid") == self._pidns:
                    found.append(f"{proc.name} {(proc / 'comm').read_text().strip()}")
            except OSError:
                continue
        return found

    # ----------------------------------------------------------------- commands
    def _enter(self) -> list[str]:
        assert self._init_pid is not None, "the lab is not running"
        return ["nsenter", "-t", str(self._init_pid), "-m", "-u", "-n", "-p", "-C", "--"]

    def _argv(self, command: str | list[str], user: str | None) -> list[str]:
        script = command if isinstance(command, str) else shlex.join(command)
        inner = ["sh", "-c", script]
        if user is not None and user != "root":
            inner = ["runuser", "-u", user, "--", *inner]
        env = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"]
        if user is not None and user != "root":
            env.append(f"HOME=/home/{user}")
        else:
            env.append("HOME=/root")
        return [*self._enter(), *env, *inner]

    def run(
        self, command: str | list[str], *, user: str | None = None, timeout: float = 60, check: bool = True
    ) -> Result:
        """Run a shell command (or an argv) inside the lab, as root or as ``user``."""
        argv = self._argv(command, user)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as err:
            raise LabError(f"timed out after {timeout}s: {command}") from err
        result = Result(argv, done.returncode, done.stdout, done.stderr)
        if check and done.returncode != 0:
            raise LabError(
                f"{command!r} as {user or 'root'} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return result

    def wait_for(
        self, predicate: Callable[[], Any], *, timeout: float = 60, interval: float = 0.5, what: str = ""
    ) -> Any:
        """Poll ``predicate`` until it returns something truthy; raise LabError after ``timeout``."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
            except LabError as err:
                last_error = err
            if time.monotonic() > deadline:
                raise LabError(f"timed out after {timeout}s waiting for {what or predicate}: {last_error}")
            time.sleep(interval)

    def path(self, inside: str) -> Path:
        """Where a path inside the lab can be read from the host (through the holder's root)."""
        assert self._init_pid is not None
        return Path(f"/proc/{self._init_pid}/root") / inside.lstrip("/")

    def log(self, name: str) -> str:
        """A daemon's log (``slurmctld``, ``slurmdbd``, ``slurmd-<node>``, ``mariadb``, ``munged``)."""
        saved = self.logs / f"{name}.log"
        if self._init_pid is None:
            return saved.read_text(errors="replace") if saved.exists() else ""
        inside = self._log_paths().get(name)
        if inside is not None and self.path(inside).exists():
            return self.path(inside).read_text(errors="replace")
        return saved.read_text(errors="replace") if saved.exists() else ""

    # ----------------------------------------------------------------- state helpers
    def nodes_state(self) -> dict[str, dict[str, str]]:
        """``scontrol show node --json``: node name -> {state: 'IDLE+DRAIN', reason: ...}."""
        data = json.loads(self.run("scontrol show node --json").stdout)
        return {
            node["name"]: {"state": "+".join(node["state"]), "reason": node.get("reason", "")}
            for node in data["nodes"]
        }

    def job(self, job_id: int) -> dict[str, Any]:
        """``scontrol show job --json`` for one job (the controller's view)."""
        data = json.loads(self.run(f"scontrol show job {job_id} --json").stdout)
        jobs: list[dict[str, Any]] = data["jobs"]
        return jobs[0]

    @staticmethod
    def job_state(job: Mapping[str, Any]) -> str:
        return "+".join(job["job_state"])

    def squeue(self) -> list[dict[str, str]]:
        out = self.run("squeue -h -o '%i|%u|%a|%q|%T|%r|%N'").stdout
        keys = ("id", "user", "account", "qos", "state", "reason", "nodes")
        return [dict(zip(keys, line.split("|"), strict=True)) for line in out.splitlines() if line]

    def sacct(self, *args: str) -> list[dict[str, str]]:
        fields = "JobID,JobName,Account,User,State,AllocTRES,NodeList,ExitCode"
        out = self.run(["sacct", "-a", "-X", "-n", "-P", f"--format={fields}", *args]).stdout
        return [
            dict(zip(fields.split(","), line.split("|"), strict=True)) for line in out.splitlines() if line
        ]

    def sbatch(self, script: str, *args: str, user: str) -> int:
        """Submit ``script`` (the batch script's text) as ``user``; return the job id."""
        home = f"/home/{user}"
        name = f"job-{secrets.token_hex(4)}.sh"
        target = self.path(f"{home}/{name}")
        target.write_text(script)
        os.chown(target, *self._ids(user))
        out = self.run(["sbatch", "--parsable", f"--chdir={home}", *args, f"{home}/{name}"], user=user).stdout
        return int(out.strip().split(";")[0])

    def wait_job(self, job_id: int, states: set[str], *, timeout: float = 60) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            job = self.job(job_id)
            return job if self.job_state(job).split("+")[0] in states else None

        result: dict[str, Any] = self.wait_for(reached, timeout=timeout, what=f"job {job_id} in {states}")
        return result

    def release(self, job_id: int) -> bool:
        """Make a requeued batch job eligible now, as an operator would (Slurm 24.11 holds it back until
        requeue + 121 s, see test_slurm_lab), once it is PENDING on that begin time: an update made while
        the requeue is still under way is overwritten by it. Whether the job is past waiting for that."""
        job = self.job(job_id)
        state = self.job_state(job).split("+")[0]
        if state == "PENDING" and job.get("state_reason") == "BeginTime":
            self.run(f"scontrol update JobId={job_id} StartTime=now", check=False)
            return False
        return state not in {"PENDING", "REQUEUED", "REQUEUE_HOLD"}

    def settled(self, node: str, *, timeout: float = 30) -> dict[str, str]:
        """The node's state once its jobs' epilogs are done: a job is COMPLETED while its node may
        still be COMPLETING."""

        def done() -> dict[str, str] | None:
            state = self.nodes_state()[node]
            return None if "COMPLETING" in state["state"].split("+") else state

        result: dict[str, str] = self.wait_for(done, timeout=timeout, what=f"{node} done completing")
        return result

    def wait_nodes_idle(self, *, timeout: float = 60) -> None:
        def idle() -> bool:
            self._daemons_alive()
            return all(n["state"] == "IDLE" for n in self.nodes_state().values())

        self.wait_for(idle, timeout=timeout, what="all nodes IDLE", interval=0.5)

    def set_fault(self, node: str, present: bool = True) -> None:
        """Make this node's GPU health check fail (the nvidia-smi stand-in reads the fault file)."""
        self.run(
            f"mkdir -p {FAULT_DIR} && "
            + (f"touch {FAULT_DIR}/{node}" if present else f"rm -f {FAULT_DIR}/{node}")
        )

    def reset(self, *, timeout: float = 60) -> None:
        """Back to a quiet cluster: no jobs, no faults, every node IDLE (for tests sharing a lab)."""
        self.run(f"scancel --full $(squeue -h -o %i) 2>/dev/null; rm -rf {FAULT_DIR}; true")
        self.wait_for(lambda: not self.squeue(), timeout=timeout, what="an empty queue")
        for name, node in self.nodes_state().items():
            if "DRAIN" in node["state"] or "DOWN" in node["state"]:
                self.run(f"scontrol update NodeName={name} State=RESUME")
        self.wait_nodes_idle(timeout=timeout)

    def _daemons_alive(self) -> None:
        for name, proc in self._daemons.items():
            if proc.poll() is not None:
                output = (self.logs / f"{name}.out").read_text(errors="replace")[-3000:]
                raise AssertionError(f"{name} exited {proc.returncode}:\n{output}")

    # ----------------------------------------------------------------- start-up steps
    def _make_namespaces(self) -> None:
        for sub in ("upper", "work", "root", "logs"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        self._make_lab_cgroups()
        self._holder = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--uts",
                "--net",
                "--pid",
                "--cgroup",
                "--fork",
                "--kill-child",
                "python3",
                "-c",
                _INIT,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=self._join_lab_cgroups,  # noqa: PLW1509 - no threads in the test process
        )
        holder = self._holder.pid

        def child() -> int | None:
            children = Path(f"/proc/{holder}/task/{holder}/children")
            pids = children.read_text().split() if children.exists() else []
            return int(pids[0]) if pids else None

        deadline = time.monotonic() + 10
        while (pid := child()) is None:
            if time.monotonic() > deadline or self._holder.poll() is not None:
                raise LabError("unshare did not start the lab's namespaces")
            time.sleep(0.05)
        self._init_pid = pid
        self._pidns = os.readlink(f"/proc/{pid}/ns/pid")

    def _host_in_ns(self, script: str, timeout: float = 60) -> None:
        """Run a shell script inside the lab's namespaces: before the pivot with the host's root and tools
        (the lab's set-up), after it at the lab's root."""
        done = subprocess.run(
            [*self._enter(), "sh", "-euc", script],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            # A set-up killed by SIGKILL (-9) means the lab's PID 1 went: say whether its holder still runs.
            holder = self._holder.poll() if self._holder is not None else "none"
            init = self._init_pid is not None and Path(f"/proc/{self._init_pid}").exists()
            raise LabError(
                f"lab set-up failed ({done.returncode}; holder exit status {holder}, PID 1 alive {init}):\n"
                f"{script}\n{done.stdout}\n{done.stderr}"
            )

    def _mount(self) -> None:
        root, w = shlex.quote(str(self.root)), self.workdir
        devices = "\n".join(
            f"mknod -m 666 {root}/dev/{name} c {major} {minor}"
            for name, major, minor in (
                ("null", 1, 3),
                ("zero", 1, 5),
                ("full", 1, 7),
                ("random", 1, 8),
                ("urandom", 1, 9),
                ("tty", 5, 0),
            )
        )
        cgroups = "\n".join(
            f"mkdir {mnt} && mount -t cgroup -o {V1_HIERARCHIES[d][1]} cgroup {mnt}"
            for d in (self._controller(lab) for lab in self._cgroups)
            for mnt in [f"{root}/sys/fs/cgroup/{d}"]
        )
        addresses = "\n".join(
            f"chroot {root} ip addr add {a}/32 dev lo" for a in self.controller_addresses or [LAB_ADDRESS]
        )
        gpus = "\n".join(f"mknod -m 666 {root}/dev/nvidia{i} c {NVIDIA_MAJOR} {i}" for i in range(8))
        self._host_in_ns(
            f"""
            mount --make-rprivate /
            mount -t overlay overlay -o lowerdir={self.golden.path},upperdir={w}/upper,workdir={w}/work {root}
            chroot {root} hostname {shlex.quote(self.controller)}
            chroot {root} ip link set lo up
            # The daemons listen with getaddrinfo(AI_ADDRCONFIG), which finds nothing where 127.0.0.1 is
            # the only IPv4 address (glibc's check_pf); this kernel has no dummy interfaces, so lo gets
            # one: the controller's rendered address, or a private one when the rendering names none.
            {addresses}
            mount -t proc proc {root}/proc
            mount -t sysfs -o nosuid,nodev,noexec sysfs {root}/sys
            mount -t tmpfs -o mode=755,nosuid,nodev,noexec cgroup {root}/sys/fs/cgroup
            {cgroups}
            mount -t tmpfs -o mode=755,nosuid dev {root}/dev
            {devices}
            {gpus}
            mknod -m 666 {root}/dev/nvidiactl c {NVIDIA_MAJOR} 255
            mkdir -p {root}/dev/pts {root}/dev/shm
            mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts {root}/dev/pts
            ln -s pts/ptmx {root}/dev/ptmx
            mount -t tmpfs -o mode=1777,nosuid,nodev shm {root}/dev/shm
            ln -s /proc/self/fd {root}/dev/fd
            # The overlay becomes the namespace's root (not a chroot): the kernel lets no chrooted process
            # create a user namespace, and enroot starts every container of an unprivileged job in one.
            # Whatever enters the namespace (nsenter -m) starts at this root; the host's is unmounted.
            mkdir -p {root}/.lab-host
            cd {root}
            pivot_root . .lab-host
            umount -l /.lab-host
            rmdir /.lab-host
            """
        )

    def _install_files(self) -> None:
        controller = self.controller_addresses[0] if self.controller_addresses else "127.0.0.1"
        hosts = f"127.0.0.1 localhost\n{controller} {self.controller}\n" + "".join(
            f"127.0.0.1 {name}\n" for name in self.nodes if name != self.controller
        )
        self.path("/etc/hosts").write_text(hosts)
        etc = self.path("/etc/slurm")
        for name, text in self.files.items():
            # An absolute name is a node program (the TaskProlog), installed where slurm.conf names it.
            target = self.path(name) if name.startswith("/") else etc / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            target.chmod(0o755 if name.startswith(("prolog.d/", "epilog.d/", "/")) else 0o644)
        for sub in ("prolog.d", "epilog.d"):
            (etc / sub).mkdir(exist_ok=True)
        smi = self.path("/usr/bin/nvidia-smi")
        smi.write_text(_NVIDIA_SMI)
        smi.chmod(0o755)
        conf = ov.settings(self.files["slurm.conf"])
        state = conf.get("statesavelocation", "/var/spool")
        users = " && ".join(f"useradd -m -U -s /bin/bash {shlex.quote(u)}" for u in self.users) or "true"
        self.run(
            f"""
            set -e
            {users}
            mkdir -p /var/log/slurm /run/slurm /run/slurmd /run/slurmctld /run/slurmdbd {state} {FAULT_DIR}
            mkdir -p /run/munge /run/mysqld
            chown slurm:slurm /var/log/slurm /run/slurmctld /run/slurmdbd {state}
            chown munge:munge /run/munge
            chown mysql:mysql /run/mysqld
            """
        )

    def _ids(self, user: str) -> tuple[int, int]:
        out = self.run(f"id -u {user}; id -g {user}").stdout.split()
        return int(out[0]), int(out[1])

    def _daemon(self, name: str, command: str) -> None:
        """Start a daemon in the foreground inside the lab; its output goes to logs/<name>.out."""
        out = (self.logs / f"{name}.out").open("wb")
        self._daemons[name] = subprocess.Popen(
            self._argv(command, None), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
        out.close()

    def _ready(self, name: str, probe: str, timeout: float | None = None) -> None:
        def ok() -> bool:
            proc = self._daemons[name]
            if proc.poll() is not None:
                output = (self.logs / f"{name}.out").read_text(errors="replace")[-3000:]
                raise AssertionError(f"{name} exited {proc.returncode}:\n{output}\n{self.log(name)[-3000:]}")
            return self.run(probe, check=False, timeout=20).returncode == 0

        self.wait_for(ok, timeout=timeout or self.start_timeout, what=f"{name} to answer `{probe}`")

    def _start_munge(self) -> None:
        self.run(
            "dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none"
            " && chown munge:munge /etc/munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key"
        )
        self._daemon("munged", "exec runuser -u munge -- munged --foreground")
        self._ready("munged", "munge -n | unmunge")

    def _start_mariadb(self) -> None:
        self._daemon(
            "mariadb",
            # No TCP (slurmdbd's StorageHost=localhost means the socket); the lock wait timeout slurmdbd
            # checks for. The buffer pool stays at MariaDB's default: slurmdbd warns about it whatever
            # its size (1 GiB still warned with MariaDB 11.8), and the machine is shared.
            "exec mariadbd --user=mysql --skip-networking --socket=/run/mysqld/mysqld.sock"
            " --innodb-lock-wait-timeout=900 --log-error=/var/log/mysql/error.log",
        )
        self._ready("mariadb", "mariadb -e 'select 1'")
        self.storage_pass = secrets.token_hex(16)
        db = ov.settings(self.files["slurmdbd.conf"]).get("storageloc", "slurm_acct_db")
        self.run(
            f'mariadb -e "CREATE DATABASE {db};'
            f" CREATE USER '{STORAGE_USER}'@'localhost' IDENTIFIED BY '{self.storage_pass}';"
            f" GRANT ALL ON {db}.* TO '{STORAGE_USER}'@'localhost';\""
        )

    def _write_slurmdbd_conf(self) -> None:
        """The rendered slurmdbd.conf with the database user and password filled in (as the role does)."""
        text = (
            self.files["slurmdbd.conf"]
            .replace("@SLURMDBD_STORAGE_USER@", STORAGE_USER)
            .replace("@SLURMDBD_STORAGE_PASS@", self.storage_pass)
        )
        conf = self.path("/etc/slurm/slurmdbd.conf")
        conf.write_text(text)
        self.run("chown slurm:slurm /etc/slurm/slurmdbd.conf && chmod 600 /etc/slurm/slurmdbd.conf")

    def _start_slurmdbd(self) -> None:
        self._write_slurmdbd_conf()
        self._daemon("slurmdbd", "exec slurmdbd -D")
        self._ready("slurmdbd", "sacctmgr -n show cluster")
        self.run(f"sacctmgr -i add cluster {self.cluster}")

    def _start_slurmctld(self) -> None:
        self._daemon("slurmctld", "exec slurmctld -D")
        self._ready("slurmctld", "scontrol ping | grep -q UP")
        # slurmctld adds the TRES of AccountingStorageTRES (gres/gpu) when it registers with slurmdbd;
        # QOS limits on gres/gpu can only be set once that TRES exists.
        self.wait_for(
            lambda: "gres|gpu" in self.run("sacctmgr -n -P show tres format=type,name").stdout,
            timeout=self.start_timeout,
            what="TRES gres/gpu in the database",
        )

    def _load_accounts(self) -> None:
        """The slurm_controller role's own loader (`clusterfab-slurm-accounts`) on the rendered files."""
        self.path(ACCOUNTS_LOADER).write_text(ACCOUNTS_LOADER_SOURCE.read_text())
        self.path(ACCOUNTS_LOADER).chmod(0o755)
        self.path("/root/qos.cfg").write_text(self.files.get("qos.cfg", ""))
        self.path("/root/accounts.cfg").write_text(self.files["accounts.cfg"])
        self.accounts_loads.append(self.load_accounts())

    def load_accounts(self) -> str:
        """Run the loader; what it printed (`changed` or `unchanged`)."""
        return self.run([ACCOUNTS_LOADER, self.cluster, "/root/qos.cfg", "/root/accounts.cfg"]).stdout.strip()

    @staticmethod
    def slurmd_command(node: str, options: str = "") -> str:
        """slurmd for ``node`` as on its own machine: its host name, and its own /tmp (Slurm's PMIx
        plugin makes per-step directories there whose names hold no node name)."""
        machine = f"hostname {node} && mount -t tmpfs -o mode=1777,size=64m tmpfs /tmp"
        return f"exec unshare --uts --mount sh -c '{machine} && exec slurmd -D{options} -N {node}'"

    def _start_slurmds(self) -> None:
        for node in self.nodes:
            self.run(f"mkdir -p /var/spool/slurmd/{node}")
            self._daemon(f"slurmd-{node}", self.slurmd_command(node))
        self.wait_nodes_idle(timeout=self.start_timeout)

    # ----------------------------------------------------------------- teardown helpers
    def _log_paths(self) -> dict[str, str]:
        paths = {
            "slurmctld": ov.settings(self.files["slurm.conf"]).get("slurmctldlogfile", ov.CONTROLLER_LOG),
            "slurmdbd": ov.settings(self.files["slurmdbd.conf"]).get("logfile", ""),
            "mariadb": "/var/log/mysql/error.log",
        }
        for node in self.nodes:
            paths[f"slurmd-{node}"] = f"/var/log/slurm/slurmd-{node}.log"
        return {name: path for name, path in paths.items() if path}

    def _save_logs(self) -> None:
        if self._init_pid is None:
            return
        for name, inside in self._log_paths().items():
            with contextlib.suppress(OSError):
                source = self.path(inside)
                if source.exists():
                    (self.logs / f"{name}.log").write_bytes(source.read_bytes())

    def _wait_namespace_empty(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.leftover_processes() and time.monotonic() < deadline:
            time.sleep(0.1)

    def _make_lab_cgroups(self) -> None:
        """One cgroup per v1 controller for the whole lab, under this process's own cgroup (so the lab
        stays inside whatever limits the test runner is under); the lab's cgroup namespace is rooted
        there, so slurmd's ``slurm_<node>`` trees of two labs (or of a real slurmd) never meet."""
        name = f"clusterfab-slurmlab-{secrets.token_hex(4)}"
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
        for directory, (key, _options) in V1_HIERARCHIES.items():
            hierarchy = CGROUP_ROOT / directory
            if key not in own or not (hierarchy / "cgroup.procs").exists():
                continue
            parent = hierarchy / own[key].lstrip("/")
            _sweep_stale_cgroups(parent)
            lab = parent / name
            lab.mkdir()
            self._cgroups.append(lab)
            if directory == "cpuset":
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    (lab / knob).write_text((parent / knob).read_text())

    @staticmethod
    def _controller(lab: Path) -> str:
        return lab.relative_to(CGROUP_ROOT).parts[0]

    def _join_lab_cgroups(self) -> None:
        """preexec_fn of the holder: enter the lab's cgroups before unshare makes them the ns root, and
        die with the test process (PR_SET_PDEATHSIG), so a killed pytest takes the lab with it
        (unshare --kill-child then kills the lab's PID 1, and with it every lab process)."""
        for lab in self._cgroups:
            (lab / "cgroup.procs").write_text(str(os.getpid()))
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def _remove_lab_cgroups(self) -> None:
        """Remove the lab's cgroups and everything slurmd made in them (empty once the lab is dead)."""
        for lab in self._cgroups:
            for dirpath, _dirs, _files in sorted(os.walk(lab), key=lambda item: -len(item[0])):
                with contextlib.suppress(OSError):
                    os.rmdir(dirpath)
        self._cgroups = [lab for lab in self._cgroups if lab.exists()]


def _sweep_stale_cgroups(parent: Path, min_age_s: float = 120) -> None:
    """Remove the cgroups a killed test process left (``clusterfab-slurmlab-*``, no process anywhere
    in the tree, untouched for ``min_age_s``: a lab being set up beside this one is never removed)."""
    for stale in parent.glob("clusterfab-slurmlab-*"):
        try:
            if time.time() - stale.stat().st_mtime < min_age_s:
                continue
            tree = sorted(os.walk(stale), key=lambda item: -len(item[0]))
            if any((Path(d) / "cgroup.procs").read_text().strip() for d, _, _ in tree):
                continue
            for dirpath, _dirs, _files in tree:
                os.rmdir(dirpath)
        except OSError:
            continue
