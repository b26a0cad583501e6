"""The boot scripts the examples render, run for real by bash in copies of the Debian root file system,
with the cloud stubbed: ``curl`` answers as IMDS / S3 / EC2 or as the GCE metadata server / Cloud
Storage from files, and ``ansible-playbook`` and ``systemctl`` only record their calls. What is
checked is the script's own logic: the bundle it fetches and its digest, the inputs it hands the
playbooks, one reboot per bundle, the verdict it records, and (AWS) that it runs again at later boots.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusterfab.bootstrap.inert import plain
from clusterfab.provision.bundle import bundle_bytes
from tests.components.harness import boot_vars, plan_file, startup_script, user_data
from tests.conftest import REPO

pytestmark = pytest.mark.ansible

AWS_EXAMPLE = REPO / "blueprints/examples/aws-p5-efa-fsx.yaml"
GCP_EXAMPLE = REPO / "blueprints/examples/gcp-a3mega-tcpxo-filestore.yaml"
TPU_EXAMPLE = REPO / "blueprints/examples/gcp-tpu-v6e-spot.yaml"
USER_DATA = "/var/lib/cloud/instance/scripts/part-001"
PER_BOOT = "/var/lib/cloud/scripts/per-boot/clusterfab-bootstrap.sh"
STARTUP_SCRIPT = "/tmp/clusterfab-startup-script"
VENV = "/opt/clusterfab/venv"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Answers what the scripts ask the clouds; every call is logged (one line: the arguments, NUL-free).
CURL = r"""#!/bin/bash
printf '%s\n' "$*" >> /stub/curl.log
out= method=GET data= url=
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift ;;
    -X) method=$2; shift ;;
    --data) data=$2; shift ;;
    -H|--user|--aws-sigv4) shift ;;
    http*) url=$1 ;;
  esac
  shift
done
reply() { if [ -n "$out" ]; then printf '%s' "$1" > "$out"; else printf '%s' "$1"; fi; }
case $url in
  */latest/api/token) reply imds-token ;;
  */meta-data/iam/security-credentials/) reply node-role ;;
  */meta-data/iam/security-credentials/node-role)
    reply '{"AccessKeyId": "AKIDSTUB", "SecretAccessKey": "secret", "Token": "session-token"}' ;;
  */meta-data/instance-id) reply i-0stub ;;
  */instance/service-accounts/default/token) reply '{"access_token": "gce-token", "expires_in": 3599}' ;;
  *.s3.*.amazonaws.com/boot/*) cp /stub/boot.sh "$out" ;;
  */instance/attributes/startup-script) cat /stub/boot.sh ;;
  https://storage.googleapis.com/storage/v1/b/*/o/boot%2F*) cp /stub/boot.sh "$out" ;;
  *.s3.*.amazonaws.com/*|https://storage.googleapis.com/*) cp /stub/bundle.tar.gz "$out" ;;
  https://ec2.*.amazonaws.com/*Action=DescribeTags*)
    item="<resourceId>i-0stub</resourceId><key>clusterfab-boot-sha256</key>"
    item+="<value>$(cat /stub/boot.sha256)</value>"
    ns=http://ec2.amazonaws.com/doc/2016-11-15/
    reply "<DescribeTagsResponse xmlns=\"$ns\"><tagSet><item>$item</item></tagSet></DescribeTagsResponse>" ;;
  https://ec2.*.amazonaws.com/*) printf '%s\n' "$url" >> /stub/ec2.log ;;
  */guest-attributes/*)
    printf '%s %s=%s\n' "$method" "${url##*/guest-attributes/}" "$data" >> /stub/guest-attributes.log ;;
  *) echo "stub curl: no answer for $url" >&2; exit 22 ;;
esac
"""
# Records each run (working directory and arguments); the files under /stub steer the outcome.
ANSIBLE_PLAYBOOK = r"""#!/bin/bash
printf '%s %s\n' "$PWD" "$*" >> /stub/ansible.log
case $* in
  *gpu_node.yml*|*tpu_host.yml*)
    if [ -e /stub/driver-changed ]; then rm /stub/driver-changed; touch /run/reboot-required; fi ;;
  *healthcheck.yml*) [ ! -e /stub/unhealthy ] || exit 2 ;;
  *slurm_login.yml*) [ ! -e /stub/playbook-fails ] || exit 2 ;;
esac
"""
SYSTEMCTL = """#!/bin/bash
printf '%s\\n' "$*" >> /stub/systemctl.log
"""


@dataclass
class Node:
    rootfs: Path
    script: str

    def path(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def log(self, name: str) -> list[str]:
        path = self.path(f"/stub/{name}.log")
        return path.read_text().splitlines() if path.exists() else []

    def boot(self, script_path: str, *args: str) -> subprocess.CompletedProcess[str]:
        """One boot: what cloud-init or the GCE script runner does with the script at `script_path` (with
        `args`: what a systemd unit runs)."""
        self.path("/run/reboot-required").unlink(missing_ok=True)
        return subprocess.run(
            [
                "chroot",
                str(self.rootfs),
                "/usr/bin/env",
                "-i",
                f"PATH={PATH}",
                "/bin/bash",
                script_path,
                *args,
            ],
            capture_output=True,
            text=True,
            check=False,
        )

    def bootstrap_log(self) -> str:
        return self.path("/var/log/clusterfab-bootstrap.log").read_text()


def _install(rootfs: Path, inside: str, text: str | bytes, mode: int = 0o755) -> None:
    path = rootfs / inside.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    path.chmod(mode)


def _digest(script: str) -> str:
    found = re.search(r"^readonly BUNDLE_SHA256=([0-9a-f]{64})$", script, re.MULTILINE)
    assert found is not None, "the script names its bundle digest"
    return found.group(1)


def _ansible_core(script: str) -> str:
    found = re.search(r"^readonly ANSIBLE_CORE=(\S+)$", script, re.MULTILINE)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module")
def bundle() -> bytes:
    return bundle_bytes(REPO / "playbooks")


@pytest.fixture
def make_node(fresh_rootfs: Callable[[str], Path], bundle: bytes) -> Callable[..., Node]:
    def make(name: str, script: str, at: str, *, served: bytes | None = None) -> Node:
        rootfs = fresh_rootfs(name)
        _install(rootfs, at, script, 0o700)
        _install(rootfs, "/usr/local/bin/curl", CURL)
        _install(rootfs, "/usr/local/bin/systemctl", SYSTEMCTL)
        _install(rootfs, f"{VENV}/bin/ansible-playbook", ANSIBLE_PLAYBOOK)
        # The pinned ansible-core is "installed" already: the venv step is pip, which needs PyPI.
        _install(rootfs, f"{VENV}/.ansible-core", _ansible_core(script) + "\n", 0o644)
        _install(rootfs, "/stub/bundle.tar.gz", bundle if served is None else served, 0o644)
        return Node(rootfs, script)

    return make


@pytest.fixture(scope="module")
def aws_script() -> str:
    return user_data(plan_file(AWS_EXAMPLE, "dev"), "llm-pretrain-trainers-lt")


@pytest.fixture(scope="module")
def gcp_script() -> str:
    plan = plan_file(GCP_EXAMPLE, "dev")
    return startup_script(
        plan, "gcp:compute/instanceTemplate:InstanceTemplate", "mega-train-trainers-template"
    )


def test_the_script_names_the_bundle_the_stack_uploads(
    aws_script: str, gcp_script: str, bundle: bytes
) -> None:
    assert _digest(aws_script) == _digest(gcp_script) == hashlib.sha256(bundle).hexdigest()


def test_aws_first_boot_configures_reboots_once_then_checks_health_at_the_next(
    make_node: Callable[..., Node], aws_script: str
) -> None:
    node = make_node("aws-boot", aws_script, USER_DATA)
    digest = _digest(aws_script)
    bundle_dir = f"/opt/clusterfab/bundles/{digest}"
    node.path("/stub/driver-changed").touch()

    first = node.boot(USER_DATA)

    assert first.returncode == 0, node.bootstrap_log()
    assert node.log("ansible") == [
        f"{bundle_dir} -i localhost, -c local gpu_node.yml -e @/etc/clusterfab/node-vars.json"
    ]
    assert node.log("systemctl") == ["reboot"]
    assert node.log("ec2") == [], "no verdict before the health check"
    assert plain(json.loads(node.path("/etc/clusterfab/node-vars.json").read_text())) == boot_vars(aws_script)
    assert plain(json.loads(node.path("/etc/clusterfab/healthcheck-vars.json").read_text())) == boot_vars(
        aws_script, "healthcheck-vars"
    )
    assert node.path("/etc/clusterfab/node-vars.json").stat().st_mode & 0o777 == 0o600
    assert (
        node.path(f"{bundle_dir}/gpu_node.yml").read_bytes() == (REPO / "playbooks/gpu_node.yml").read_bytes()
    )
    fetches = [line for line in node.log("curl") if ".s3." in line]
    assert fetches == [
        "-fsS --aws-sigv4 aws:amz:us-east-1:s3 --user AKIDSTUB:secret "
        "-H x-amz-security-token: session-token "
        f"-o {_download(node, '.s3.')} "
        f"https://llm-pretrain-artifacts-bucket-mock.s3.us-east-1.amazonaws.com/bundles/{digest}.tar.gz"
    ]
    # cloud-init runs user data once per instance: the script keeps a copy that runs at every boot.
    assert node.path(PER_BOOT).read_text() == aws_script
    assert node.path(PER_BOOT).stat().st_mode & 0o777 == 0o700

    second = node.boot(PER_BOOT)

    assert second.returncode == 0, node.bootstrap_log()
    assert [line.split(" ", 1)[1].split(" -e ")[0] for line in node.log("ansible")] == [
        "-i localhost, -c local gpu_node.yml",
        "-i localhost, -c local gpu_node.yml",
        "-i localhost, -c local healthcheck.yml",
    ]
    assert node.log("ansible")[2].endswith(" -e @/etc/clusterfab/healthcheck-vars.json")
    assert len([line for line in node.log("curl") if ".s3." in line]) == 1, "the bundle is fetched once"
    assert node.log("ec2") == [
        "https://ec2.us-east-1.amazonaws.com/?Action=CreateTags&Version=2016-11-15&ResourceId.1=i-0stub"
        "&Tag.1.Key=clusterfab-health&Tag.1.Value=passed"
    ]
    assert node.log("systemctl") == ["reboot"]

    # Another reboot request from the same bundle (a module that will not load) does not loop.
    node.path("/stub/driver-changed").touch()
    node.path("/stub/unhealthy").touch()
    third = node.boot(PER_BOOT)

    assert third.returncode == 0, node.bootstrap_log()
    assert node.log("systemctl") == ["reboot"]
    assert node.log("ec2")[-1].endswith("&Tag.1.Key=clusterfab-health&Tag.1.Value=failed")


def test_a_bundle_with_another_digest_is_refused_and_the_node_marked_failed(
    make_node: Callable[..., Node], aws_script: str
) -> None:
    node = make_node("aws-tampered", aws_script, USER_DATA, served=b"not the bundle the stack uploaded")

    booted = node.boot(USER_DATA)

    assert booted.returncode != 0
    assert node.log("ansible") == []
    assert node.log("ec2") == [
        "https://ec2.us-east-1.amazonaws.com/?Action=CreateTags&Version=2016-11-15&ResourceId.1=i-0stub"
        "&Tag.1.Key=clusterfab-health&Tag.1.Value=failed"
    ]
    assert not node.path(f"/opt/clusterfab/bundles/{_digest(aws_script)}/.complete").exists()


def test_gcp_boot_fetches_with_the_metadata_token_and_records_a_guest_attribute(
    make_node: Callable[..., Node], gcp_script: str
) -> None:
    node = make_node("gcp-boot", gcp_script, STARTUP_SCRIPT)
    digest = _digest(gcp_script)

    booted = node.boot(STARTUP_SCRIPT)

    assert booted.returncode == 0, node.bootstrap_log()
    assert [line for line in node.log("curl") if "storage.googleapis.com" in line] == [
        f"-fsS -H Authorization: Bearer gce-token -o {_download(node, 'storage.googleapis.com')} "
        f"https://storage.googleapis.com/storage/v1/b/mega-train-artifacts-bucket/o/bundles%2F{digest}.tar.gz?alt=media"
    ]
    assert [line.split(" ", 1)[1].split(" -e ")[0] for line in node.log("ansible")] == [
        "-i localhost, -c local gpu_node.yml",
        "-i localhost, -c local healthcheck.yml",
    ]
    assert plain(json.loads(node.path("/etc/clusterfab/node-vars.json").read_text())) == boot_vars(gcp_script)
    assert node.log("guest-attributes") == ["PUT clusterfab/health=passed"]
    # A startup script runs at every boot already; nothing is copied for cloud-init.
    assert not node.path(PER_BOOT).exists()


def test_tpu_hosts_run_their_playbook_and_record_configured(make_node: Callable[..., Node]) -> None:
    plan = plan_file(TPU_EXAMPLE, "dev")
    # The TPU VM's startup script fetches the slice group's boot script from the bucket and runs it.
    stub = startup_script(plan, "gcp:tpu/v2Vm:V2Vm", "trillium-spot-trillium-0")
    script = startup_script(plan, "gcp:storage/bucketObject:BucketObject", "trillium-spot-trillium-boot")
    node = make_node("tpu-boot", script, "/stub/boot.sh")
    node.path(STARTUP_SCRIPT).parent.mkdir(parents=True, exist_ok=True)
    node.path(STARTUP_SCRIPT).write_text(stub)
    node.path(STARTUP_SCRIPT).chmod(0o700)

    booted = node.boot(STARTUP_SCRIPT)

    assert booted.returncode == 0, node.bootstrap_log()
    assert [line for line in node.log("curl") if "/o/boot%2F" in line] == [
        "-fsS --retry 10 --retry-connrefused -H Authorization: Bearer gce-token "
        "-o /var/lib/clusterfab/boot.sh https://storage.googleapis.com/storage/v1/b/trillium-spot-artifacts-bucket/o/boot%2Ftrillium.sh?alt=media"
    ]
    assert [line.split(" ", 1)[1] for line in node.log("ansible")] == [
        "-i localhost, -c local tpu_host.yml -e @/etc/clusterfab/node-vars.json"
    ]
    assert node.log("guest-attributes") == ["PUT clusterfab/health=configured"]


def _download(node: Node, host: str) -> str:
    line = next(line for line in node.log("curl") if host in line)
    return line.split(" -o ")[1].split(" ")[0]


# --- hosts that follow the stack (Slurm controller and login nodes, the monitoring node) -------------

FOLLOW = "/var/lib/clusterfab/follow.sh"
APPLIED = "/var/lib/clusterfab/boot-applied.sh"
FAILED = "/var/lib/clusterfab/boot-failed.sh"
SLURM_EXAMPLES = {
    "aws": REPO / "blueprints/examples/aws-p5-slurm.yaml",
    "gcp": REPO / "blueprints/examples/gcp-a3ultra-roce-lustre.yaml",
}


@pytest.fixture(scope="module")
def login_scripts() -> dict[str, str]:
    """The login node's boot script as each cloud's Slurm example plans it."""
    aws = plan_file(SLURM_EXAMPLES["aws"], "dev")
    gcp = plan_file(SLURM_EXAMPLES["gcp"], "dev")
    (aws_login,) = [r for r in aws.resources if r.name.endswith("-slurm-login-0") and r.custom]
    return {
        "aws": base64.b64decode(aws_login.inputs["userDataBase64"]).decode(),
        "gcp": startup_script(gcp, "gcp:compute/instance:Instance", "ultra-train-slurm-login-0"),
    }


def _revised(script: str, revision: int) -> str:
    """The script as a later `up` renders it (any change of the text is one)."""
    return script.replace("#!/bin/bash\n", f"#!/bin/bash\n# revision {revision}\n", 1)


def _publish(node: Node, script: str, *, tagged: bool = True) -> None:
    """What `up` does: the stack's current copy (AWS: the bucket's object; GCP: the startup-script) and
    (AWS, `tagged`) its digest in the instance's tag."""
    _install(node.rootfs, "/stub/boot.sh", script, 0o644)
    if tagged:
        _install(node.rootfs, "/stub/boot.sha256", hashlib.sha256(script.encode()).hexdigest(), 0o644)


def _following(make_node: Callable[..., Node], name: str, cloud: str, script: str) -> Node:
    """A host after its first boot, with the stack's current copy (served by the stub) equal to it."""
    at = USER_DATA if cloud == "aws" else STARTUP_SCRIPT
    node = make_node(name, script, at)
    _publish(node, script)
    booted = node.boot(at)
    assert booted.returncode == 0, node.bootstrap_log()
    return node


def _fetches(node: Node) -> list[str]:
    return [line for line in node.log("curl") if "/boot/" in line or "startup-script" in line]


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_a_host_runs_the_stacks_changed_script_within_a_minute_and_once(
    make_node: Callable[..., Node], login_scripts: dict[str, str], cloud: str
) -> None:
    script = login_scripts[cloud]
    node = _following(make_node, f"{cloud}-follow", cloud, script)
    assert node.log("systemctl") == ["daemon-reload", "enable --now clusterfab-follow.timer"]
    assert len(node.log("ansible")) == 1
    service = node.path("/etc/systemd/system/clusterfab-follow.service").read_text()
    assert f"ExecStart=/bin/bash {FOLLOW} --if-changed" in service
    timer = node.path("/etc/systemd/system/clusterfab-follow.timer").read_text()
    assert "OnUnitActiveSec=1min" in timer
    assert node.path(APPLIED).read_text() == node.path(FOLLOW).read_text() == script

    unchanged = node.boot(FOLLOW, "--if-changed")  # the timer: one fetch, nothing run
    assert unchanged.returncode == 0, node.bootstrap_log()
    assert len(_fetches(node)) == 1
    assert len(node.log("ansible")) == 1

    changed = _revised(script, 2)
    _publish(node, changed)  # `up` changed the blueprint
    applied = node.boot(FOLLOW, "--if-changed")
    assert applied.returncode == 0, node.bootstrap_log()
    assert [line.split(" ", 1)[1].split(" -e ")[0] for line in node.log("ansible")] == [
        "-i localhost, -c local slurm_login.yml",
        "-i localhost, -c local slurm_login.yml",
    ]
    assert node.path(APPLIED).read_text() == node.path(FOLLOW).read_text() == changed
    assert node.bootstrap_log().count("the stack changed this host's boot script") == 1
    if cloud == "aws":  # a later stop and start runs the script the host follows now
        assert node.path(PER_BOOT).read_text() == changed

    again = node.boot(FOLLOW, "--if-changed")
    assert again.returncode == 0, node.bootstrap_log()
    assert len(node.log("ansible")) == 2, "a change runs once"


def test_a_copy_that_failed_is_tried_again_after_a_quarter_of_an_hour(
    make_node: Callable[..., Node], login_scripts: dict[str, str]
) -> None:
    script = login_scripts["aws"]
    node = _following(make_node, "aws-follow-fails", "aws", script)
    changed = _revised(script, 2)
    _publish(node, changed)
    node.path("/stub/playbook-fails").touch()

    failed = node.boot(FOLLOW, "--if-changed")

    assert failed.returncode != 0
    assert node.path(FAILED).read_text() == changed
    assert node.path(APPLIED).read_text() == script
    assert node.log("ec2")[-1].endswith("&Tag.1.Key=clusterfab-health&Tag.1.Value=failed")
    runs = len(node.log("ansible"))

    assert node.boot(FOLLOW, "--if-changed").returncode == 0  # a minute later: left alone
    assert len(node.log("ansible")) == runs

    node.path("/stub/playbook-fails").unlink()
    sixteen_minutes_ago = node.path(FAILED).stat().st_mtime - 16 * 60
    os.utime(node.path(FAILED), (sixteen_minutes_ago, sixteen_minutes_ago))
    retried = node.boot(FOLLOW, "--if-changed")
    assert retried.returncode == 0, node.bootstrap_log()
    assert len(node.log("ansible")) == runs + 1
    assert node.path(APPLIED).read_text() == changed
    assert not node.path(FAILED).exists()
    assert node.log("ec2")[-1].endswith("&Tag.1.Key=clusterfab-health&Tag.1.Value=configured")


def test_the_timer_leaves_a_run_under_way_alone(
    make_node: Callable[..., Node], login_scripts: dict[str, str]
) -> None:
    script = login_scripts["aws"]
    node = _following(make_node, "aws-follow-busy", "aws", script)
    _publish(node, _revised(script, 2))
    lock = node.path("/run/clusterfab-boot.lock")
    fetched = len(_fetches(node))
    with subprocess.Popen(["flock", str(lock), "sleep", "60"]) as holder:
        try:
            while subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0:
                time.sleep(0.05)  # until the holder has the lock
            busy = node.boot(FOLLOW, "--if-changed")
        finally:
            holder.kill()
    assert busy.returncode == 0, node.bootstrap_log()
    assert len(_fetches(node)) == fetched
    assert node.path(APPLIED).read_text() == script


def test_an_aws_host_runs_only_the_copy_its_instance_tag_pins(
    make_node: Callable[..., Node], login_scripts: dict[str, str]
) -> None:
    """Writing the bucket is not enough to run code on the host: the copy must match the sha256 in the
    instance's tag, which only who may tag the instance (the stack) changes."""
    script = login_scripts["aws"]
    node = _following(make_node, "aws-follow-pinned", "aws", script)
    tampered = _revised(script, 666)
    _publish(node, tampered, tagged=False)

    refused = node.boot(FOLLOW, "--if-changed")

    assert refused.returncode != 0
    assert len(node.log("ansible")) == 1
    assert node.path(APPLIED).read_text() == script
    assert not node.path("/var/lib/clusterfab/boot-next.sh").exists()
    describe = [line for line in node.log("curl") if "Action=DescribeTags" in line]
    assert describe[-1].endswith(
        "https://ec2.us-east-1.amazonaws.com/?Action=DescribeTags&Version=2016-11-15"
        "&Filter.1.Name=resource-id&Filter.1.Value.1=i-0stub"
        "&Filter.2.Name=key&Filter.2.Value.1=clusterfab-boot-sha256"
    )
