"""`clusterfab health --stack` on Azure: Run Command returns the last 4096 bytes of a script's output, so
the controller stores the deep check's report in the cluster's `clusterfab-health` container and the CLI
reads it back. The upload script runs for real here, in a network namespace of its own in which the
instance metadata address (169.254.169.254) and a blob endpoint are stand-ins served by this test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from clusterfab.clouds import profile
from clusterfab.clouds.azure.access import upload_command
from clusterfab.outputs import BlueprintOutput
from tests.labs import require

VM = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Compute"
WHERE = BlueprintOutput(
    name="c", file="c.yaml", digest="0", bundle_sha256="0", environment=None, catalog_version="1",
    cloud="azure", region="southcentralus", zone="1",
)  # fmt: skip
URL = "https://acct.blob.core.windows.net/clusterfab-health/health-reports/r1.json"

SERVER = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    log = open(sys.argv[1], "a")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            log.write(json.dumps({"get": self.path}) + "\\n")
            log.flush()
            if self.path.startswith("/metadata/instance/compute/tagsList?"):
                tags = [{"name": "clusterfab-slurm-role", "value": "controller"},
                        {"name": "clusterfab-identity", "value": "cid-1"}]
                self._answer(self.headers.get("Metadata") == "true", tags)
                return
            storage = "resource=https%3A%2F%2Fstorage.azure.com%2F&client_id=cid-1"
            ok = self.headers.get("Metadata") == "true" and self.path.endswith(storage)
            self._answer(ok, {"access_token": "tok-1"})

        def _answer(self, ok, body):
            self.send_response(200 if ok else 400)
            self.end_headers()
            self.wfile.write(json.dumps(body if ok else {}).encode())

        def do_PUT(self):
            data = self.rfile.read(int(self.headers["Content-Length"]))
            seen = {"path": self.path, "headers": dict(self.headers), "body": data.decode()}
            log.write(json.dumps(seen) + "\\n")
            log.flush()
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args):
            pass

    HTTPServer((sys.argv[2], 80), Handler).serve_forever()
    """
)


def test_run_command_prints_the_scripts_output_alone() -> None:
    controller = f"{VM}/virtualMachines/hpc-slurm-controller"
    assert profile("azure").run_command(WHERE, controller, "uptime") == [
        "az", "vm", "run-command", "invoke",
        "--subscription", "00000000-0000-0000-0000-000000000000", "--resource-group", "rg1",
        "--name", "hpc-slurm-controller",
        "--command-id", "RunShellScript", "--scripts", "uptime",
        "--query", "value[0].message", "--output", "tsv",
    ]  # fmt: skip


def test_the_upload_stores_the_commands_output_with_the_hosts_token_and_keeps_its_status(
    tmp_path: Path,
) -> None:
    require(
        shutil.which("unshare") is not None and shutil.which("ip") is not None and os.geteuid() == 0,
        "needs root, unshare and ip (a network namespace with the metadata address on its loopback)",
    )
    log = tmp_path / "requests.jsonl"
    command = "printf '%s\\n' '{\"nodes\": []}'; echo 'checking 2 nodes' >&2; exit 3"
    script = upload_command(command, "http://169.254.169.254/clusterfab-health/health-reports/r1.json")
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "upload.sh").write_text(script)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inside = (
        "ip link set lo up && ip addr add 169.254.169.254/32 dev lo && "
        f"{{ {sys.executable} {tmp_path}/server.py {log} 169.254.169.254 >/dev/null 2>&1 & }} && "
        "server=$! && "
        "for i in $(seq 50); do curl -s -o /dev/null http://169.254.169.254/ && break; sleep 0.1; done; "
        f'TMPDIR={scratch} bash {tmp_path}/upload.sh; echo "status=$?"; kill $server'
    )
    done = subprocess.run(
        ["unshare", "--net", "sh", "-c", inside], capture_output=True, text=True, timeout=60, check=False
    )
    assert "status=3" in done.stdout, done.stderr
    assert "checking 2 nodes" in done.stderr
    *gets, request = [json.loads(line) for line in log.read_text().splitlines()]
    # The controller has two identities: the token is its own, named by the client id its tag holds.
    # (the first GET of "/" is this test's own: it waits for the server)
    assert [g["get"] for g in gets if g["get"] != "/"] == [
        "/metadata/instance/compute/tagsList?api-version=2021-02-01",
        "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F"
        "&client_id=cid-1",
    ]
    assert request["path"] == "/clusterfab-health/health-reports/r1.json"
    assert request["body"] == '{"nodes": []}\n'
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert (headers["authorization"], headers["x-ms-blob-type"], headers["x-ms-version"]) == (
        "Bearer tok-1",
        "BlockBlob",
        "2021-08-06",
    )
    # The token never reached a command line: only a header file, removed with the report after the upload.
    assert list(scratch.iterdir()) == []


def test_the_channel_reads_the_report_back_from_the_health_container(tmp_path: Path, monkeypatch) -> None:
    from clusterfab.outputs import StackOutputs

    outputs = StackOutputs.model_validate(
        {
            "schema_version": 1,
            "blueprint": WHERE.model_dump(),
            "bucket": "acct/artifacts",
            "node_groups": {},
            "network": {},
            "node_selector": {},
        }
    )
    channel = profile("azure").report_channel(outputs)
    assert channel is not None
    wrapped = channel.wrap("sudo -n check --json", "health-reports/r1.json")
    assert wrapped == upload_command("sudo -n check --json", URL)
    calls: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if "show" in command:
            return subprocess.CompletedProcess(command, 0, '{"etag": "e1", "at": "2026-11-29T12:00:00Z"}', "")
        Path(command[command.index("--file") + 1]).write_text('{"nodes": []}')
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert channel.fetch("health-reports/r1.json") == b'{"nodes": []}'
    assert calls[0][:3] == ["az", "storage", "blob"]
    assert calls[0][calls[0].index("--account-name") + 1 :][:3] == [
        "acct",
        "--container-name",
        "clusterfab-health",
    ]
