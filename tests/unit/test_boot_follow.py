"""A host that follows the stack runs the stack's current boot script within a minute of a change.

The rendered scripts run for real in bash, under a temporary root (their absolute paths moved there), with
stand-ins at the process boundary only: `curl` answers as the instance metadata service, S3 / Cloud Storage
and the EC2 API would; `systemctl` and the venv's `ansible-playbook` record how they were called. `flock`,
`cmp`, `install`, `tar` and `sha256sum` are the real ones.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clusterfab.bootstrap import FOLLOW_PATH, NodeBootstrap, boot_script_key, render_boot_script

pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="needs util-linux's flock")

MOVED = (
    "/var/lib/clusterfab",
    "/var/lib/cloud",
    "/etc/systemd/system",
    "/etc/clusterfab",
    "/opt/clusterfab",
    "/var/log/",
    "/run/",
)
"""The absolute paths a boot script writes, moved under the test's root."""

CURL = r'''#!/usr/bin/env python3
"""curl as a node sees it: the metadata service, the bucket, the EC2 API. Logs every URL."""
import json, os, sys, urllib.parse
root = os.environ["FAKE_ROOT"]
args, out, url = sys.argv[1:], None, None
for i, arg in enumerate(args):
    if arg == "-o":
        out = args[i + 1]
    if arg.startswith("http"):
        url = arg
data = args[args.index("--data") + 1] if "--data" in args else None
with open(f"{root}/curl.log", "a") as log:
    log.write(url + (f" {data}" if data else "") + "\n")

def serve(path):
    with open(path, "rb") as f:
        body = f.read()
    if out:
        with open(out, "wb") as f:
            f.write(body)
    else:
        sys.stdout.buffer.write(body)

parsed = urllib.parse.urlparse(url)
if url.endswith("/latest/api/token"):
    print("token", end="")
elif url.endswith("/meta-data/iam/security-credentials/"):
    print("node-role", end="")
elif "/meta-data/iam/security-credentials/" in url:
    print(json.dumps({"AccessKeyId": "AKIA", "SecretAccessKey": "secret", "Token": "t"}))
elif url.endswith("/meta-data/instance-id"):
    print("i-0123", end="")
elif url.endswith("/instance/service-accounts/default/token"):
    print(json.dumps({"access_token": "t"}))
elif url.endswith("/instance/attributes/startup-script"):
    serve(f"{root}/metadata/startup-script")
elif ".s3." in parsed.netloc:
    serve(f"{root}/bucket/{parsed.path.lstrip('/')}")
elif parsed.netloc == "storage.googleapis.com":
    serve(f"{root}/bucket/{urllib.parse.unquote(parsed.path.split('/o/', 1)[1])}")
elif "CreateTags" in url or "guest-attributes" in url:
    pass
else:
    sys.exit(f"curl stand-in: no answer for {url}")
'''

RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_ROOT/calls.log"
if [ "$(basename "$0")" = ansible-playbook ] && [ -e "$FAKE_ROOT/playbook-fails" ]; then exit 2; fi
"""


def _bundle(root: Path) -> tuple[str, str]:
    """A playbook bundle in the fake bucket: (key, sha256)."""
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w:gz") as tar:
        info = tarfile.TarInfo("site.yml")
        info.size = 0
        tar.addfile(info, io.BytesIO(b""))
    data = stream.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    key = f"bundles/{sha}.tar.gz"
    (root / "bucket" / key).parent.mkdir(parents=True, exist_ok=True)
    (root / "bucket" / key).write_bytes(data)
    return key, sha


def _script(root: Path, cloud: str, key: str, sha: str, **playbook_vars: Any) -> str:
    boot = NodeBootstrap(
        cloud=cloud, cluster="llm", stack="prod", node_group="slurm-login", region="us-east-1",
        bucket="llm-bucket", bundle_key=key, bundle_sha256=sha, ansible_core_version="2.19.14",
        playbook="slurm_login.yml", playbook_vars=playbook_vars, follows=True,
    )  # fmt: skip
    script = render_boot_script(boot)
    for path in MOVED:
        script = script.replace(path, f"{root}{path}")
    return script


def _publish(root: Path, cloud: str, script: str) -> None:
    """What `up` does: the stack's current copy (AWS: the bucket's object; GCP: the startup-script)."""
    where = (
        root / "bucket" / boot_script_key("slurm-login")
        if cloud == "aws"
        else root / "metadata/startup-script"
    )
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(script)


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "root"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(CURL)
    (bin_dir / "systemctl").write_text(RECORDER)
    venv = Path(f"{root}/opt/clusterfab/venv")
    (venv / "bin").mkdir(parents=True)
    (venv / ".ansible-core").write_text("2.19.14\n")
    (venv / "bin" / "ansible-playbook").write_text(RECORDER)
    for path in MOVED:
        Path(f"{root}{path}").mkdir(parents=True, exist_ok=True)
    for exe in (bin_dir / "curl", bin_dir / "systemctl", venv / "bin" / "ansible-playbook"):
        exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_ROOT": str(root)}
    return {"root": root, "env": env}


def _run(host: dict[str, Any], script: Path, *args: str) -> None:
    subprocess.run(["/bin/bash", str(script), *args], env=host["env"], check=True, timeout=60)


def _log(root: Path, name: str) -> list[str]:
    path = root / name
    lines = path.read_text().splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    return lines


def _applied(root: Path) -> Path:
    return root / "var/lib/clusterfab/boot-applied.sh"


def _launch(host: dict[str, Any], tmp_path: Path, cloud: str, script: str) -> Path:
    """The first boot: the cloud runs the script it launched the host with; returns the timer's program."""
    _publish(host["root"], cloud, script)
    launch = tmp_path / "user-data.sh"
    launch.write_text(script)
    _run(host, launch)
    return Path(f"{host['root']}{FOLLOW_PATH}")


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_a_host_runs_the_stacks_new_script_once_and_only_when_it_changed(
    host: dict[str, Any], tmp_path: Path, cloud: str
) -> None:
    root = host["root"]
    key, sha = _bundle(root)
    first = _script(root, cloud, key, sha, slurm_version="24.11")
    follow = _launch(host, tmp_path, cloud, first)
    assert _applied(root).read_text() == first
    calls = _log(root, "calls.log")
    assert calls[0] == "systemctl daemon-reload"
    assert calls[1] == "systemctl enable --now clusterfab-follow.timer"
    assert calls[2].startswith("ansible-playbook -i localhost, -c local slurm_login.yml")
    service = (root / "etc/systemd/system/clusterfab-follow.service").read_text()
    assert f"ExecStart=/bin/bash {follow} --if-changed" in service
    assert "OnUnitActiveSec=1min" in (root / "etc/systemd/system/clusterfab-follow.timer").read_text()
    _log(root, "curl.log")

    _run(host, follow, "--if-changed")  # the timer, nothing changed: one fetch, nothing run
    assert _log(root, "calls.log") == []
    fetches = [url for url in _log(root, "curl.log") if "boot/" in url or "startup-script" in url]
    assert len(fetches) == 1

    second = _script(root, cloud, key, sha, slurm_version="24.11", partitions=["train"])
    _publish(root, cloud, second)  # `up` changed the blueprint
    _run(host, follow, "--if-changed")
    assert _applied(root).read_text() == second
    assert follow.read_text() == second
    calls = _log(root, "calls.log")
    assert [c.split()[0] for c in calls] == ["systemctl", "systemctl", "ansible-playbook"]
    log = (root / "var/log/clusterfab-bootstrap.log").read_text()
    assert log.count("the stack changed this host's boot script") == 1
    assert log.count("clusterfab bootstrap finished") == 2

    _run(host, follow, "--if-changed")  # the change is applied once
    assert _log(root, "calls.log") == []


def test_a_script_that_failed_is_tried_again_after_a_quarter_of_an_hour(
    host: dict[str, Any], tmp_path: Path
) -> None:
    root = host["root"]
    key, sha = _bundle(root)
    first = _script(root, "aws", key, sha)
    follow = _launch(host, tmp_path, "aws", first)
    second = _script(root, "aws", key, sha, partitions=["train"])
    _publish(root, "aws", second)
    (root / "playbook-fails").touch()
    with pytest.raises(subprocess.CalledProcessError):
        _run(host, follow, "--if-changed")
    failed = root / "var/lib/clusterfab/boot-failed.sh"
    assert failed.read_text() == second
    assert _applied(root).read_text() == first
    assert any(url.endswith("Tag.1.Value=failed") for url in _log(root, "curl.log"))
    _log(root, "calls.log")

    _run(host, follow, "--if-changed")  # a minute later: left alone
    assert _log(root, "calls.log") == []

    (root / "playbook-fails").unlink()
    sixteen_minutes_ago = failed.stat().st_mtime - 16 * 60
    os.utime(failed, (sixteen_minutes_ago, sixteen_minutes_ago))
    _run(host, follow, "--if-changed")
    assert [c.split()[0] for c in _log(root, "calls.log")][-1] == "ansible-playbook"
    assert _applied(root).read_text() == second
    assert not failed.exists()


def test_the_timer_leaves_a_run_under_way_alone(host: dict[str, Any], tmp_path: Path) -> None:
    root = host["root"]
    key, sha = _bundle(root)
    script = _script(root, "aws", key, sha)
    follow = _launch(host, tmp_path, "aws", script)
    _log(root, "curl.log")
    _publish(root, "aws", _script(root, "aws", key, sha, changed=True))
    lock = root / "run/clusterfab-boot.lock"
    holder = subprocess.Popen(["flock", str(lock), "sleep", "30"])
    try:
        for _ in range(100):  # until the holder has the lock
            if subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode:
                break
        _run(host, follow, "--if-changed")
    finally:
        holder.kill()
        holder.wait()
    assert _log(root, "curl.log") == []
    assert _applied(root).read_text() == script


def test_only_hosts_follow_the_stack() -> None:
    boot = NodeBootstrap(
        cloud="aws", cluster="llm", stack="prod", node_group="trainers", region="us-east-1", bucket="b",
        bundle_key="k", bundle_sha256="s", ansible_core_version="2.19.14", playbook="gpu_node.yml",
        playbook_vars={},
    )  # fmt: skip
    script = render_boot_script(boot)
    assert "--if-changed" not in script
    assert "fetch_boot_script" not in script
    assert textwrap.dedent(script).count("clusterfab bootstrap started") == 1
