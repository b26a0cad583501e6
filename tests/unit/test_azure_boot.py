"""The Azure parts of a node's boot script, run by bash against a stand-in `curl` that answers as the
instance metadata service and Blob storage document they answer: the requests are the documented ones
(learn.microsoft.com/azure/virtual-machines/instance-metadata-service, .../user-data, the managed
identity token endpoint, Blob storage's Get Blob and Put Blob with an OAuth token), written out here."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
from pathlib import Path

from clusterfab.bootstrap import NodeBootstrap, render_boot_fetch, render_boot_script

TOKEN_URL = (
    "http://169.254.169.254/metadata/identity/oauth2/token"
    "?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F"
)
USER_DATA_URL = "http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
NAME_URL = "http://169.254.169.254/metadata/instance/compute/name?api-version=2021-02-01&format=text"
TAGS_URL = "http://169.254.169.254/metadata/instance/compute/tagsList?api-version=2021-02-01"
IMDS = ["-fsS", "--noproxy", "*", "-H", "Metadata: true"]

# The stand-in curl: logs its arguments one per line (a blank line between calls), answers by URL, and
# writes -o FILE when asked to.
FAKE_CURL = r"""#!/bin/bash
printf '%s\n' "$@" >>"$CURL_LOG"; echo >>"$CURL_LOG"
out=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift 2 ;;
    -H|-X|--data-binary|--noproxy|--retry) shift 2 ;;
    *) url=$1; shift ;;
  esac
done
case "$url" in
  *identity/oauth2/token*) body='{"access_token": "tok-123", "expires_in": "3599"}' ;;
  *compute/userData*) body=$USER_DATA_B64 ;;
  *compute/name*) body=llm-prod-h100-0_3 ;;
  *compute/tagsList*) body=$TAGS_JSON ;;
  *blob.core.windows.net*) body="blob of $url" ;;
  *) exit 22 ;;
esac
if [ -n "$out" ]; then printf '%s' "$body" >"$out"; else printf '%s' "$body"; fi
"""


def _boot(follows: bool) -> NodeBootstrap:
    return NodeBootstrap(
        cloud="azure", cluster="llm", stack="prod", node_group="h100", region="southcentralus",
        bucket="llmprodartifacts/bundles", bundle_key="bundles/abc.tar.gz", bundle_sha256="abc",
        ansible_core_version="2.19.14", playbook="gpu_node.yml", playbook_vars={}, follows=follows,
    )  # fmt: skip


def _cloud_part(script: str) -> str:
    """The script up to its own work: its settings and the cloud's functions."""
    start = script.index("readonly BUCKET=")
    marks = ("# This host follows the stack", 'echo "clusterfab bootstrap started')
    ends = [script.find(mark) for mark in marks]
    return script[start : min(end for end in ends if end >= 0)]


NODE_TAGS = '[{"name": "clusterfab-node-group", "value": "h100"}]'
"""A scale set VM's tags: no identity tag (its one identity is named by none)."""


def _run(tmp_path: Path, script: str, calls: str, tags: str = NODE_TAGS) -> tuple[str, list[list[str]]]:
    fake = tmp_path / "bin" / "curl"
    fake.parent.mkdir()
    fake.write_text(FAKE_CURL)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "curl.log"
    program = f"set -euo pipefail\n{_cloud_part(script)}\n{calls}\n"
    env = {
        **os.environ,
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "CURL_LOG": str(log),
        "USER_DATA_B64": base64.b64encode(b"#!/bin/bash\necho current\n").decode(),
        "TAGS_JSON": tags,
    }
    done = subprocess.run(
        ["bash", "-c", program], check=False, env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    requests = [call.split("\n") for call in log.read_text().strip("\n").split("\n\n")]
    return done.stdout, requests


def test_the_bundle_is_read_with_the_nodes_identity_token(tmp_path: Path) -> None:
    script = render_boot_script(_boot(follows=False))
    out, requests = _run(tmp_path, script, "fetch_bundle bundle.tgz; cat bundle.tgz")
    assert requests == [
        [*IMDS, TAGS_URL],
        [*IMDS, TOKEN_URL],
        [
            "-fsS", "-H", "Authorization: Bearer tok-123", "-H", "x-ms-version: 2021-08-06",
            "-o", "bundle.tgz", "https://llmprodartifacts.blob.core.windows.net/bundles/bundles/abc.tar.gz",
        ],
    ]  # fmt: skip
    assert out == "blob of https://llmprodartifacts.blob.core.windows.net/bundles/bundles/abc.tar.gz"


def test_the_verdict_is_a_blob_named_after_the_vm_in_the_health_container(tmp_path: Path) -> None:
    script = render_boot_script(_boot(follows=False))
    _, requests = _run(tmp_path, script, "record_health passed")
    assert requests[:3] == [[*IMDS, NAME_URL], [*IMDS, TAGS_URL], [*IMDS, TOKEN_URL]]
    assert requests[3] == [
        "-fsS", "-X", "PUT", "-H", "Authorization: Bearer tok-123", "-H", "x-ms-version: 2021-08-06",
        "-H", "x-ms-blob-type: BlockBlob", "-H", "Content-Type: text/plain", "--data-binary", "passed",
        "https://llmprodartifacts.blob.core.windows.net/clusterfab-health/llm-prod-h100-0_3",
    ]  # fmt: skip


def test_a_host_with_two_identities_names_its_own_by_the_client_id_in_its_tag(tmp_path: Path) -> None:
    """The Slurm controller also has the system-assigned identity Microsoft Entra sign-in needs, which the
    metadata service would issue a token for by default: its tag names the client id of its own."""
    script = render_boot_script(_boot(follows=False))
    tags = (
        '[{"name": "clusterfab-slurm-role", "value": "controller"}, '
        '{"name": "clusterfab-identity", "value": "c1d"}]'
    )
    _, requests = _run(tmp_path, script, "fetch_bundle bundle.tgz", tags=tags)
    assert requests[:2] == [[*IMDS, TAGS_URL], [*IMDS, f"{TOKEN_URL}&client_id=c1d"]]


def test_a_host_that_follows_the_stack_reads_its_current_user_data(tmp_path: Path) -> None:
    script = render_boot_script(_boot(follows=True))
    out, requests = _run(tmp_path, script, "fetch_boot_script current.sh; cat current.sh")
    assert requests == [["-fsS", "--noproxy", "*", "-H", "Metadata: true", USER_DATA_URL]]
    assert out == "#!/bin/bash\necho current\n"
    assert "fetch_boot_script" not in render_boot_script(_boot(follows=False))


def test_the_launcher_runs_the_user_data_at_every_boot_and_names_no_bucket() -> None:
    launcher = render_boot_fetch(cloud="azure", cluster="llm", stack="prod", node_group="h100", bucket="x/y")
    assert "readonly PER_BOOT=/var/lib/cloud/scripts/per-boot/clusterfab-launch.sh" in launcher
    assert USER_DATA_URL in launcher
    assert "x/y" not in launcher  # a bucket change must not change the custom data, which recreates VMs
    subprocess.run(["bash", "-n"], input=launcher, text=True, check=True)
