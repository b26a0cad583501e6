"""The Slurm roles (munge, slurm_users, slurm_controller, slurm_node, slurm_login) applied through their
playbooks (slurm_controller.yml, slurm_login.yml, gpu_node.yml's `slurm` tag) to Debian 13's real Slurm,
MUNGE and MariaDB packages in a chroot, twice each: what they install, write, enable and hold, and that a
second run changes nothing. The extravars are the ones the stack renders for the aws-p5-slurm example,
with three lab substitutions: the key comes from a file (no Secrets Manager here), the packages'
version string is Debian 13's (the example pins Ubuntu 24.04's), and the example's pyxis is left out
(test_pyxis_lab builds and runs it).

Daemons do not start in a chroot (the roles start them only on a live systemd host); the Slurm lab runs
the roles' own health check and accounts loader against the real daemons (test_rendered_example).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog.query import load_catalog
from clusterfab.scheduler.slurm.healthrun import CONTROLLER_PROGRAM
from clusterfab.scheduler.slurm.hostvars import (
    client_vars,
    controller_files,
    controller_vars,
    health_files,
    node_vars,
)
from clusterfab.scheduler.slurm.render import POWER_PROGRAMS, TASK_PROLOG
from clusterfab.spec.capacity import Spot
from tests.conftest import REPO
from tests.factories import example_spec
from tests.labs import CAP_SYS_RESOURCE, require
from tests.slurm.hosts import HostRun, apply_twice, copy_golden, debian_version
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm

BLUEPRINT = REPO / "blueprints" / "examples" / "aws-p5-slurm.yaml"
FILES_DIR = "/var/lib/clusterfab/files/slurm-test"
COMMANDS = {"ResumeProgram": "resume", "SuspendProgram": "suspend", "ResumeFailProgram": "resume-fail"}
KEY = "/root/cluster-munge.key"
STACK = "prod"


def _host(golden: GoldenRootfs, dest: Path) -> Path:
    root = copy_golden(golden, dest)
    (root / KEY.lstrip("/")).write_bytes(os.urandom(1024))
    return root


def _lab_vars(root: Path, extravars: dict[str, Any]) -> dict[str, Any]:
    """The stack's extravars with the lab's substitutions: the key file, Debian's version string, and no
    pyxis (its role downloads from GitHub, which CI cannot reach; test_pyxis_lab applies it to archives
    made from the fetched repositories)."""
    version = debian_version(root, "slurm-client")
    lab = {
        **extravars,
        "munge_key_source": "file",
        "munge_key_file": KEY,
        "clusterfab_pyxis_enabled": False,
    }
    for name in ("slurm_controller_version", "slurm_node_version", "slurm_login_version"):
        if name in lab:
            lab[name] = version
    return lab


@pytest.fixture(scope="module")
def spec() -> Any:
    return example_spec("aws-p5-slurm", env="prod")


def _controller(golden: GoldenRootfs, cluster: Any, dest: Path, **overrides: Any) -> HostRun:
    """slurm_controller.yml applied twice with the stack's vars (and `overrides`) and files for `cluster`."""
    catalog = load_catalog()
    root = _host(golden, dest)
    files = controller_files(cluster, catalog.slurm, stack=STACK) | health_files(
        cluster, catalog.pair_bandwidth
    )
    (root / "etc/cloud/cloud.cfg.d").mkdir(parents=True)  # as on the cloud images, which run cloud-init
    for name, text in files.items():
        target = root / FILES_DIR.lstrip("/") / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    extravars = _lab_vars(root, controller_vars(cluster, catalog.slurm, stack=STACK, files_dir=FILES_DIR))
    return apply_twice(root, "slurm_controller.yml", {**extravars, **overrides})


@pytest.fixture(scope="module")
def controller(
    golden: GoldenRootfs, spec: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostRun]:
    run = _controller(golden, spec, tmp_path_factory.mktemp("controller") / "root")
    yield run
    shutil.rmtree(run.root.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def managed_controller(
    golden: GoldenRootfs, spec: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostRun]:
    """The example's controller with `accounting: managed` (RDS): no database of its own; and keeping its
    nodes' claims, as an Azure controller does."""
    database = load_catalog().slurm.managed_database("aws")
    managed = replace(spec, scheduler=replace(spec.scheduler, accounting="managed", database=database))
    dest = tmp_path_factory.mktemp("managed-controller") / "root"
    run = _controller(golden, managed, dest, slurm_controller_node_claims=True)
    yield run
    shutil.rmtree(run.root.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def login(golden: GoldenRootfs, spec: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostRun]:
    root = _host(golden, tmp_path_factory.mktemp("login") / "root")
    extravars = _lab_vars(root, client_vars(spec, load_catalog().slurm, stack=STACK))
    yield apply_twice(root, "slurm_login.yml", extravars)
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def node(golden: GoldenRootfs, spec: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostRun]:
    root = _host(golden, tmp_path_factory.mktemp("node") / "root")
    [group] = [g for g in spec.node_groups if g.name == "h100"]
    # On spot capacity, so that the role installs the spot interruption watcher too.
    spot = replace(group, capacity=Spot())
    extravars = _lab_vars(root, node_vars(spec, load_catalog().slurm, spot, stack=STACK))
    yield apply_twice(root, "gpu_node.yml", extravars, tags=["slurm"])
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture(params=["controller", "managed_controller", "login", "node"])
def host(request: pytest.FixtureRequest) -> HostRun:
    run: HostRun = request.getfixturevalue(request.param)
    return run


def test_first_run_converges_and_the_second_changes_nothing(host: HostRun) -> None:
    host.assert_converged()


def test_every_host_has_the_teams_users_at_one_uid(host: HostRun, spec: Any) -> None:
    # aws-p5-slurm's teams' users at their derived uids (20000 + sha256 of the name mod 30000).
    expected = {"alice": 40207, "bob": 38650, "carol": 26302, "dave": 46851}
    assert [user for team in spec.teams for user in team.users] == list(expected)
    passwd = {
        line.split(":")[0]: line.split(":") for line in host.path("/etc/passwd").read_text().splitlines()
    }
    for name, uid in expected.items():
        assert passwd[name][2:4] == [str(uid), str(uid)], name
        assert passwd[name][6] == "/bin/bash"
        assert host.path(f"/home/{name}").is_dir()


def test_every_host_has_the_clusters_munge_key(host: HostRun) -> None:
    key = host.path("/etc/munge/munge.key")
    assert key.read_bytes() == host.path(KEY).read_bytes()
    assert oct(key.stat().st_mode & 0o777) == "0o400"
    assert host.chroot("stat", "-c", "%U:%G", "/etc/munge/munge.key").strip() == "munge:munge"
    assert _enabled(host, "munge.service")


def _enabled(host: HostRun, unit: str, target: str = "multi-user.target") -> bool:
    """Whether `systemctl enable` linked the unit (the link's target lies inside the chroot)."""
    return host.path(f"/etc/systemd/system/{target}.wants/{unit}").is_symlink()


def _held(host: HostRun) -> set[str]:
    out = host.chroot("dpkg", "--get-selections")
    return {line.split()[0] for line in out.splitlines() if line.split()[-1] == "hold"}


def test_the_controller_runs_the_rendered_files(controller: HostRun, spec: Any) -> None:
    files = controller_files(spec, load_catalog().slurm, stack=STACK)
    for name in ("slurm.conf", "gres.conf", "cgroup.conf", "topology.conf"):
        assert controller.path(f"/etc/slurm/{name}").read_text() == files[name], name
    assert controller.path("/etc/hostname").read_text() == "llm-slurm-controller\n"
    assert (
        "preserve_hostname: true"
        in controller.path("/etc/cloud/cloud.cfg.d/99-clusterfab-hostname.cfg").read_text()
    )
    assert _held(controller) >= {"slurmctld", "slurmdbd", "slurm-client"}
    for unit in (
        "slurmctld.service",
        "slurmdbd.service",
        "mariadb.service",
        "clusterfab-slurm-state.service",
    ):
        assert _enabled(controller, unit), unit
    assert _enabled(controller, "clusterfab-slurm-sync.timer", "timers.target")
    sync = controller.path("/etc/systemd/system/clusterfab-slurm-sync.service").read_text()
    counts = "/var/lib/clusterfab/slurm-nodes/counts.json"
    fleet = "/etc/clusterfab-slurm/fleet.json"
    assert f"sync --config {FILES_DIR}/nodesync.json --fleet {fleet} --counts {counts}" in sync
    # The stack's node groups (templates and instance profiles), written by root for the programs to read.
    assert controller.chroot("stat", "-c", "%U %a", fleet).strip() == "root 644"
    # resume and suspend run as SlurmUser and add to the same totals
    assert controller.chroot("stat", "-c", "%U %a", "/var/lib/clusterfab/slurm-nodes").strip() == "slurm 755"
    assert f"PYTHONPATH={FILES_DIR}/lib" in sync
    assert json.loads(controller.path(f"{FILES_DIR}/nodesync.json").read_text())["groups"] == {
        "h100": {"static": 8, "size": 8}
    }
    for key, path in POWER_PROGRAMS.items():
        program = controller.path(path)
        assert oct(program.stat().st_mode & 0o777) == "0o755", key
        assert (
            f"-m clusterfab_slurm_nodes {COMMANDS[key]} --config {FILES_DIR}/nodesync.json --fleet {fleet}"
            f" --counts {counts}" in program.read_text()
        ), key


def test_the_controller_has_the_deep_check_where_clusterfab_health_runs_it(controller: HostRun) -> None:
    program = controller.path(CONTROLLER_PROGRAM)
    assert oct(program.stat().st_mode & 0o777) == "0o750"
    assert controller.chroot("stat", "-c", "%U:%G", CONTROLLER_PROGRAM).strip() == "root:root"
    # The wrapper runs the shipped program with the shipped settings; --help proves the whole chain.
    assert f"{FILES_DIR}/bin/clusterfab-slurm-healthcheck --config {FILES_DIR}/healthcheck.json" in (
        program.read_text()
    )
    assert "deep GPU health check" in controller.chroot(CONTROLLER_PROGRAM, "--help")


def test_slurmdbd_conf_holds_credentials_only_slurm_can_read(controller: HostRun) -> None:
    conf = controller.path("/etc/slurm/slurmdbd.conf")
    password = controller.path("/srv/clusterfab-slurm-state/slurmdbd.pass").read_text().strip()
    assert len(password) == 48
    text = conf.read_text()
    assert f"StoragePass={password}\n" in text
    assert "StorageUser=slurm\n" in text
    assert "@SLURMDBD" not in text
    assert oct(conf.stat().st_mode & 0o777) == "0o600"
    assert controller.chroot("stat", "-c", "%U", "/etc/slurm/slurmdbd.conf").strip() == "slurm"
    assert oct(controller.path("/srv/clusterfab-slurm-state/slurmdbd.pass").stat().st_mode & 0o777) == "0o600"
    # The password is on no command line the role runs and in no file the boot script keeps.
    assert password not in json.dumps(controller.extravars)


def test_the_state_disk_comes_before_the_daemons_that_keep_state(controller: HostRun) -> None:
    for unit in ("mariadb", "slurmdbd", "slurmctld"):
        dropin = controller.path(f"/etc/systemd/system/{unit}.service.d/clusterfab-state.conf").read_text()
        assert "Requires=clusterfab-slurm-state.service" in dropin
        assert "After=clusterfab-slurm-state.service" in dropin
    script = controller.path("/usr/local/sbin/clusterfab-slurm-state").read_text()
    # The example is monitored: Prometheus' samples live on the state disk too.
    assert "slurmctld:/var/spool/slurmctld mysql:/var/lib/mysql prometheus:/var/lib/prometheus" in script
    dropin = controller.path("/etc/systemd/system/prometheus.service.d/clusterfab-state.conf").read_text()
    assert "Requires=clusterfab-slurm-state.service" in dropin
    # Formatting only a disk without a file system.
    assert 'if [ -z "$(blkid -o value -s TYPE "$disk" || true)" ]; then' in script
    mariadb = controller.path("/etc/mysql/mariadb.conf.d/60-clusterfab-slurm.cnf").read_text()
    assert "skip-networking" in mariadb
    assert "innodb_lock_wait_timeout=900" in mariadb


def test_a_managed_accounting_controller_keeps_no_database_of_its_own(managed_controller: HostRun) -> None:
    """(The lab's root file system has MariaDB's server installed for the Slurm labs: the role neither
    tunes it nor puts its data on the state disk.)"""
    host = managed_controller
    assert not host.path("/etc/mysql/mariadb.conf.d/60-clusterfab-slurm.cnf").exists()
    # The accounting program's settings, as the stack rendered them.
    settings = json.loads(host.path("/etc/slurm/clusterfab-accounting.json").read_text())
    assert settings == host.extravars["slurm_controller_database"]
    assert settings["identifier"] == "clusterfab-llm-slurm-prod-slurmdb"
    # The state disk keeps slurmctld's state (and Prometheus'), no database files.
    script = host.path("/usr/local/sbin/clusterfab-slurm-state").read_text()
    assert "slurmctld:/var/spool/slurmctld prometheus:/var/lib/prometheus" in script
    assert "mysql" not in script
    assert not host.path("/etc/systemd/system/mariadb.service.d/clusterfab-state.conf").exists()
    # No cloud in a chroot: the endpoint stays a placeholder, the credentials are filled in, the CA bundle
    # is named.
    conf = host.path("/etc/slurm/slurmdbd.conf").read_text()
    assert "StorageHost=@SLURMDBD_STORAGE_HOST@\nStoragePort=@SLURMDBD_STORAGE_PORT@\n" in conf
    assert "StorageParameters=SSL_CA=/etc/slurm/accounting-db-ca.pem\n" in conf
    assert "StorageUser=slurm\n" in conf
    assert "@SLURMDBD_STORAGE_PASS@" not in conf


STATE_RUN = r"""
set -eu
# Private mounts, and tmpfs over the directories the program binds into: nothing reaches the host.
mount --make-rprivate /
for dir in /var/spool /var/lib; do mount -t tmpfs tmpfs "$dir"; done
sh "$1"
for dir in /var/spool/slurmctld /var/lib/mysql /var/lib/prometheus; do
    echo "$dir $(findmnt -no SOURCE "$dir")"
done
touch /var/lib/prometheus/kept
first=$(findmnt -bno SIZE "$2")
if [ "$5" = grow ]; then truncate -s 256M "$3" && losetup -c "$4"; fi
sh "$1"
echo "$first $(findmnt -bno SIZE "$2") $(ls "$2/prometheus")"
"""


def _state_program(controller: HostRun, tmp_path: Path, step: str) -> list[str]:
    """The role's state program for real, on a loop device in a mount namespace of its own, run twice
    (with `step` grow, the disk grows between the runs): what it bound, and the file system's size
    before and after the second run."""
    image = tmp_path / "state.img"
    subprocess.run(["truncate", "-s", "128M", str(image)], check=True)
    device = subprocess.run(
        ["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    mount = tmp_path / "state"
    program = tmp_path / "clusterfab-slurm-state"
    text = controller.path("/usr/local/sbin/clusterfab-slurm-state").read_text()
    text = text.replace("want=/dev/sdf", f"want={device}")
    program.write_text(text.replace("mount_point=/srv/clusterfab-slurm-state", f"mount_point={mount}"))
    try:
        argv = [str(program), str(mount), str(image), device, step]
        done = subprocess.run(
            ["unshare", "--mount", "sh", "-c", STATE_RUN, "state", *argv],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"/var/spool/slurmctld {device}[/slurmctld]",
        f"/var/lib/mysql {device}[/mysql]",
        f"/var/lib/prometheus {device}[/prometheus]",
    ]
    return lines[3].split()


def test_the_state_program_mounts_the_disk_and_binds_the_services_data(
    controller: HostRun, tmp_path: Path
) -> None:
    """Formats the empty disk, mounts it, binds slurmctld's, MariaDB's and (monitoring on the controller)
    Prometheus' directories from it; run again, it formats nothing and the data stays."""
    before, after, kept = _state_program(controller, tmp_path, "again")
    assert before == after
    assert kept == "kept"


def _can_grow_mounted_ext4() -> bool:
    # ext4's online resize (EXT4_IOC_RESIZE_FS) needs CAP_SYS_RESOURCE, which some containers drop.
    status = Path("/proc/self/status").read_text()
    return bool(int(status.split("CapEff:")[1].split()[0], 16) >> 24 & 1)


def test_the_state_program_grows_the_file_system_with_the_disk(controller: HostRun, tmp_path: Path) -> None:
    require(
        _can_grow_mounted_ext4(),
        "this machine lacks CAP_SYS_RESOURCE, which growing a mounted ext4 file system needs",
        ci_exempt=CAP_SYS_RESOURCE,
    )
    before, after, kept = _state_program(controller, tmp_path, "grow")
    assert int(after) > int(before)
    assert kept == "kept"


def test_the_login_node_is_configless_through_sackd(login: HostRun, spec: Any) -> None:
    assert (
        login.path("/etc/default/sackd")
        .read_text()
        .endswith(f'SACKD_OPTIONS="--conf-server {login.extravars["slurm_login_conf_server"]}"\n')
    )
    assert login.extravars["slurm_login_conf_server"] == "10.30.0.10:6817"
    assert not login.path("/etc/slurm/slurm.conf").exists()
    assert _held(login) >= {"slurm-client", "sackd"}
    assert _enabled(login, "sackd.service")


def test_the_node_runs_slurmd_configless_with_the_health_check(node: HostRun) -> None:
    dropin = node.path("/etc/systemd/system/slurmd.service.d/clusterfab.conf").read_text()
    assert "ExecStart=\nExecStart=/usr/local/sbin/clusterfab-slurmd\n" in dropin
    wrapper = node.path("/usr/local/sbin/clusterfab-slurmd").read_text()
    assert "meta-data/tags/instance/clusterfab-slurm-node" in wrapper
    assert "exec /usr/sbin/slurmd --systemd --conf-server 10.30.0.10:6817" in wrapper
    assert node.path("/etc/default/clusterfab-slurm-health").read_text().splitlines()[-2:] == [
        "CLUSTERFAB_HEALTH_GPUS=8",
        "CLUSTERFAB_HEALTH_TIMEOUT=20",
    ]
    for kind in ("prolog", "epilog"):
        script = node.path(f"/etc/slurm/{kind}.d/50-clusterfab-health")
        assert os.readlink(script) == "/usr/local/sbin/clusterfab-slurm-health"
    health = node.path("/usr/local/sbin/clusterfab-slurm-health")
    source = REPO / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
    assert health.read_text() == source.read_text()
    assert health.stat().st_mode & 0o777 == 0o755
    # slurm.conf's TaskProlog, where the rendered file names it.
    task_env = node.path(TASK_PROLOG)
    assert task_env.read_text() == source.with_name("clusterfab_task_env.py").read_text()
    assert task_env.stat().st_mode & 0o777 == 0o755
    assert _held(node) >= {"slurmd", "slurm-client"}
    assert _enabled(node, "slurmd.service")
    assert not node.path("/etc/slurm/slurm.conf").exists()


def test_a_spot_node_runs_the_interruption_watcher(node: HostRun) -> None:
    assert node.extravars["slurm_node_spot_watch"] is True
    watcher = node.path("/usr/local/sbin/clusterfab-spot-watch")
    assert (
        watcher.read_text()
        == (REPO / "playbooks/roles/slurm_node/files/clusterfab_spot_watch.py").read_text()
    )
    assert watcher.stat().st_mode & 0o777 == 0o755
    settings = node.path("/etc/default/clusterfab-spot-watch").read_text().splitlines()
    assert settings[-3:] == [
        "CLUSTERFAB_SPOT_CLOUD=aws",
        "CLUSTERFAB_SPOT_INTERVAL=5",
        "CLUSTERFAB_SPOT_NODE_FILE=/run/clusterfab-slurm-node",
    ]
    unit = node.path("/etc/systemd/system/clusterfab-spot-watch.service").read_text()
    assert "ExecStart=/usr/bin/python3 /usr/local/sbin/clusterfab-spot-watch\n" in unit
    assert _enabled(node, "clusterfab-spot-watch.service")


def test_the_wrapper_is_valid_shell(node: HostRun, controller: HostRun) -> None:
    for host, script in (
        (node, "/usr/local/sbin/clusterfab-slurmd"),
        (controller, "/usr/local/sbin/clusterfab-slurm-state"),
    ):
        subprocess.run(["sh", "-n", str(host.path(script))], check=True)


def _uid(host: HostRun, user: str) -> str:
    return host.chroot("id", "-u", user).strip()


def test_the_controller_serves_the_munge_key_to_root_on_the_cluster_alone(controller: HostRun) -> None:
    program = controller.path("/usr/local/sbin/clusterfab-munge-key-serve")
    assert (
        program.read_bytes() == (REPO / "playbooks/roles/munge/files/clusterfab-munge-key-serve").read_bytes()
    )
    assert oct(program.stat().st_mode & 0o777) == "0o700"
    socket = controller.path("/etc/systemd/system/clusterfab-munge-key.socket").read_text()
    assert "\nListenStream=6816\nAccept=yes\n" in socket
    service = controller.path("/etc/systemd/system/clusterfab-munge-key@.service").read_text()
    assert (
        "\nExecStart=/usr/local/sbin/clusterfab-munge-key-serve /etc/munge/munge.key 10.30.0.0/16\n"
        "StandardInput=socket\nStandardOutput=socket\nStandardError=journal\n"
    ) in service
    assert _enabled(controller, "clusterfab-munge-key.socket", "sockets.target")


def test_only_root_and_the_daemons_that_call_the_cloud_reach_the_metadata_service(
    controller: HostRun, login: HostRun
) -> None:
    for host, users in ((login, ["root"]), (controller, ["root", "slurm"])):
        uids = ", ".join(sorted((_uid(host, u) for u in users), key=int))
        rules = host.path("/etc/clusterfab/metadata-guard.nft").read_text()
        assert f"\t\tip daddr {{ 169.254.169.254 }} meta skuid != {{ {uids} }} reject\n" in rules
        assert f"\t\tip6 daddr {{ fd00:ec2::254 }} meta skuid != {{ {uids} }} reject\n" in rules
        # nft itself accepts the file (--check parses without touching the kernel's rules).
        host.chroot("nft", "--check", "-f", "/etc/clusterfab/metadata-guard.nft")
        assert _enabled(host, "clusterfab-metadata-guard.service", "sysinit.target")


def test_the_controller_runs_the_accounts_loader_again_every_quarter_hour(controller: HostRun) -> None:
    """Removals that wait for jobs to end (clusterfab_slurm_accounts.py) happen at a later run."""
    loader = "/usr/local/sbin/clusterfab-slurm-accounts"
    source = REPO / "playbooks/roles/slurm_controller/files/clusterfab_slurm_accounts.py"
    assert controller.path(loader).read_text() == source.read_text()
    assert controller.chroot("stat", "-c", "%U:%G %a", loader).strip() == "root:root 755"
    controller.chroot("python3", "-c", f"import ast; ast.parse(open({loader!r}).read())")
    service = controller.path("/etc/systemd/system/clusterfab-slurm-accounts.service").read_text()
    assert f"ExecStart={loader} llm-slurm {FILES_DIR}/qos.cfg {FILES_DIR}/accounts.cfg\n" in service
    timer = controller.path("/etc/systemd/system/clusterfab-slurm-accounts.timer").read_text()
    assert "OnUnitActiveSec=15min\n" in timer
    assert _enabled(controller, "clusterfab-slurm-accounts.timer", "timers.target")


def test_a_controller_whose_nodes_claim_keeps_the_claims(
    managed_controller: HostRun, controller: HostRun
) -> None:
    keeper = "/usr/local/sbin/clusterfab-slurm-claims"
    source = REPO / "playbooks/roles/slurm_controller/files/clusterfab_slurm_claims.py"
    assert managed_controller.path(keeper).read_text() == source.read_text()
    assert managed_controller.chroot("stat", "-c", "%U:%G %a", keeper).strip() == "root:root 755"
    managed_controller.chroot("python3", "-c", f"import ast; ast.parse(open({keeper!r}).read())")
    record = "/srv/clusterfab-slurm-state/node-claims.json"
    units = managed_controller.path("/etc/systemd/system")
    service = (units / "clusterfab-slurm-claims.service").read_text()
    assert "ExecCondition=/bin/systemctl is-active --quiet slurmctld.service\n" in service
    assert f"ExecStart={keeper} {record} --wait 30\n" in service
    assert "OnUnitActiveSec=1min\n" in (units / "clusterfab-slurm-claims.timer").read_text()
    assert _enabled(managed_controller, "clusterfab-slurm-claims.timer", "timers.target")
    dropin = (units / "slurmctld.service.d/clusterfab-claims.conf").read_text()
    assert dropin.endswith(f"[Service]\nExecStartPost=-+{keeper} {record} --wait 60\n")
    # Off by default: nothing of it on a controller whose nodes do not claim.
    assert not controller.path(keeper).exists()
    assert not controller.path("/etc/systemd/system/slurmctld.service.d/clusterfab-claims.conf").exists()
