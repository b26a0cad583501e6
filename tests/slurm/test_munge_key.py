"""The munge role's key program (`clusterfab-munge-key`, from the role's template) against moto's Secrets
Manager over HTTP, signed by curl with credentials from a fake instance metadata service, run inside
Debian 13's root file system (its munge user, curl and python3): the controller makes the key once and
stores it, a second run changes nothing, a node installs the same key, and a node whose secret never
gets a key gives up with a message that says what to check. The same on GCP against a stand-in for the
metadata server's token and Secret Manager's access/addVersion, whose paths are checked against the
secretmanager.v1 discovery document (no Secret Manager emulator exists). The same on Azure against a
stand-in for the instance metadata service's managed identity token and Key Vault's Get Secret / Set Secret
(REST api-version 7.4), with a curl on PATH that logs every command line: neither the token nor the key
ever appears on one.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import boto3
import jinja2
import pytest
from moto.server import ThreadedMotoServer

from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm

ROLE = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "munge"
REGION = "us-east-1"
PROGRAM = "/usr/local/sbin/clusterfab-munge-key"
KEY = "/etc/munge/munge.key"
CREDENTIALS = {"AccessKeyId": "AKIDLAB", "SecretAccessKey": "lab-secret", "Token": "lab-token"}


class _Metadata(BaseHTTPRequestHandler):
    """IMDSv2 as the program uses it: a token, then the role's credentials with that token."""

    def do_PUT(self) -> None:
        self._answer("lab-imds-token" if self.path == "/latest/api/token" else None)

    def do_GET(self) -> None:
        if self.headers.get("X-aws-ec2-metadata-token") != "lab-imds-token":
            self._answer(None, 401)
            return
        base = "/latest/meta-data/iam/security-credentials/"
        answers = {base: "lab-role", base + "lab-role": json.dumps(CREDENTIALS)}
        self._answer(answers.get(self.path))

    def _answer(self, body: str | None, status: int = 200) -> None:
        if body is None:
            self.send_response(404 if status == 200 else status)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Aws:
    secrets_endpoint: str
    metadata_endpoint: str

    def client(self) -> Any:
        return boto3.client(
            "secretsmanager",
            region_name=REGION,
            endpoint_url=self.secrets_endpoint,
            aws_access_key_id="AKIDLAB",
            aws_secret_access_key="lab-secret",
        )


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    moto.start()
    metadata = ThreadingHTTPServer(("127.0.0.1", 0), _Metadata)
    thread = threading.Thread(target=metadata.serve_forever, daemon=True)
    thread.start()
    host, port = moto.get_host_and_port()
    try:
        yield Aws(f"http://{host}:{port}", f"http://127.0.0.1:{metadata.server_address[1]}")
    finally:
        metadata.shutdown()
        moto.stop()


@pytest.fixture(scope="module")
def root(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("munge") / "root"
    subprocess.run(["cp", "-a", "--reflink=auto", str(golden.path), str(dest)], check=True, timeout=600)
    (dest / KEY.lstrip("/")).unlink(missing_ok=True)
    return dest


def _program(
    secret: str,
    *,
    generate: bool,
    wait_seconds: int = 1800,
    source: str = "aws",
    project: str = "",
    vault_url: str = "",
) -> str:
    """The role's template rendered as Ansible would for these inputs."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    env.filters["quote"] = shlex.quote
    env.filters["bool"] = bool
    template = env.from_string((ROLE / "templates" / "clusterfab-munge-key.sh.j2").read_text())
    return template.render(
        ansible_managed="Ansible managed",
        munge_key_source=source,
        munge_key_project=project,
        munge_key_vault_url=vault_url,
        munge_key_client_id=AZURE_CLIENT_ID,
        munge_key_secret=secret,
        munge_key_region=REGION,
        munge_key_generate=generate,
        munge_key_wait_seconds=wait_seconds,
        __munge_key=KEY,
    )


def _run(
    root: Path, aws: Aws, program: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = root / PROGRAM.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(program)
    path.chmod(0o700)
    env = env or {
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": aws.metadata_endpoint,
        "AWS_ENDPOINT_URL_SECRETS_MANAGER": aws.secrets_endpoint,
    }
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **env}
    return subprocess.run(
        ["chroot", str(root), PROGRAM], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_the_controller_makes_the_key_once_and_a_node_installs_it(root: Path, aws: Aws) -> None:
    secret = "clusterfab-llm-slurm-prod-munge-key"
    aws.client().create_secret(Name=secret, Description="created empty, as AwsSlurmController does")

    first = _run(root, aws, _program(secret, generate=True))
    assert (first.returncode, first.stdout) == (0, "changed\n"), first.stderr
    stored = base64.b64decode(aws.client().get_secret_value(SecretId=secret)["SecretString"])
    key = root / KEY.lstrip("/")
    assert len(stored) == 1024
    assert key.read_bytes() == stored
    assert oct(key.stat().st_mode & 0o777) == "0o400"
    owner = subprocess.run(
        ["chroot", str(root), "stat", "-c", "%U:%G", KEY], capture_output=True, text=True, check=True
    )
    assert owner.stdout.strip() == "munge:munge"

    again = _run(root, aws, _program(secret, generate=True))
    assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
    assert base64.b64decode(aws.client().get_secret_value(SecretId=secret)["SecretString"]) == stored

    key.unlink()
    node = _run(root, aws, _program(secret, generate=False))
    assert (node.returncode, node.stdout) == (0, "changed\n"), node.stderr
    assert key.read_bytes() == stored


def test_a_node_whose_secret_holds_no_key_gives_up_and_says_why(root: Path, aws: Aws) -> None:
    secret = "clusterfab-empty-prod-munge-key"
    aws.client().create_secret(Name=secret)
    result = _run(root, aws, _program(secret, generate=False, wait_seconds=0))
    assert result.returncode == 1
    assert result.stderr.strip() == f"{secret} holds no MUNGE key after 0s: has the Slurm controller booted?"


def test_a_short_key_is_refused(root: Path, aws: Aws) -> None:
    secret = "clusterfab-short-prod-munge-key"
    aws.client().create_secret(Name=secret, SecretString=base64.b64encode(b"x" * 16).decode())
    result = _run(root, aws, _program(secret, generate=False))
    assert result.returncode == 1
    assert result.stderr.strip() == f"{secret} holds a key of 16 bytes; MUNGE needs at least 32"


class _Google(BaseHTTPRequestHandler):
    """The metadata server's token and Secret Manager's access / addVersion, as the program calls them;
    every Secret Manager path is checked against the secretmanager.v1 discovery document."""

    secrets: ClassVar[dict[str, list[bytes]]] = {}
    methods: ClassVar[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        if self.path == "/computeMetadata/v1/instance/service-accounts/default/token":
            ok = self.headers.get("Metadata-Flavor") == "Google"
            self._json({"access_token": "lab-token", "expires_in": 3599} if ok else None, 200 if ok else 403)
            return
        name = self._secret("GET", "projects.secrets.versions.access")
        if name is None:
            return
        versions = self.secrets.get(name)
        if not versions:
            self._json({"error": {"code": 404, "status": "NOT_FOUND"}}, 404)
            return
        data = base64.b64encode(versions[-1]).decode()
        self._json({"name": f"{name}/versions/{len(versions)}", "payload": {"data": data}}, 200)

    def do_POST(self) -> None:
        name = self._secret("POST", "projects.secrets.addVersion")
        if name is None:
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if name not in self.secrets:
            self._json({"error": {"code": 404, "status": "NOT_FOUND"}}, 404)
            return
        self.secrets[name].append(base64.b64decode(body["payload"]["data"]))
        self._json({"name": f"{name}/versions/{len(self.secrets[name])}", "state": "ENABLED"}, 200)

    def _secret(self, verb: str, method: str) -> str | None:
        import re

        if self.headers.get("Authorization") != "Bearer lab-token":
            self._json({"error": {"code": 401}}, 401)
            return None
        pattern = dict(self.methods)[method]
        assert re.fullmatch(pattern, self.path.lstrip("/")), (verb, self.path, pattern)
        return self.path.lstrip("/").removeprefix("v1/").split("/versions/")[0].split(":")[0]

    def _json(self, body: Any, status: int) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _secretmanager_methods() -> list[tuple[str, str]]:
    import re

    import googleapiclient

    document = json.loads(
        (
            Path(googleapiclient.__file__).parent / "discovery_cache/documents/secretmanager.v1.json"
        ).read_text()
    )
    secrets = document["resources"]["projects"]["resources"]["secrets"]
    found = []
    for method in (secrets["methods"]["addVersion"], secrets["resources"]["versions"]["methods"]["access"]):
        found.append(
            (method["id"].removeprefix("secretmanager."), re.sub(r"\{[^}]+\}", "[^/:]+", method["flatPath"]))
        )
    return found


@pytest.fixture(scope="module")
def google() -> Iterator[str]:
    _Google.methods = _secretmanager_methods()
    _Google.secrets = {"projects/ml/secrets/clusterfab-ultra-prod-munge-key": []}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Google)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_on_gcp_the_controller_adds_the_first_version_and_a_node_reads_it(
    root: Path, aws: Aws, google: str
) -> None:
    secret = "clusterfab-ultra-prod-munge-key"
    env = {"GCE_METADATA_HOST": google, "CLOUDSDK_API_ENDPOINT_OVERRIDES_SECRETMANAGER": f"http://{google}/"}
    key = root / KEY.lstrip("/")
    key.unlink(missing_ok=True)
    first = _run(root, aws, _program(secret, generate=True, source="gcp", project="ml"), env)
    assert (first.returncode, first.stdout) == (0, "changed\n"), first.stderr
    [stored] = _Google.secrets[f"projects/ml/secrets/{secret}"]
    assert len(stored) == 1024
    assert key.read_bytes() == stored
    again = _run(root, aws, _program(secret, generate=True, source="gcp", project="ml"), env)
    assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
    assert len(_Google.secrets[f"projects/ml/secrets/{secret}"]) == 1
    key.unlink()
    node = _run(root, aws, _program(secret, generate=False, source="gcp", project="ml"), env)
    assert (node.returncode, node.stdout) == (0, "changed\n"), node.stderr
    assert key.read_bytes() == stored


AZURE_CLIENT_ID = "6a9c2f4e-1b7d-4c3a-9e8f-0d5b7a1c2e3f"
AZURE_TOKEN = "lab-key-vault-token"
AZURE_TOKEN_QUERY = {
    "api-version": "2018-02-01",
    "resource": "https://vault.azure.net",
    "client_id": AZURE_CLIENT_ID,
}


class _Azure(BaseHTTPRequestHandler):
    """The instance metadata service's managed identity token and Key Vault's secrets as the program calls
    them: the token for the client id's identity, Get Secret (404 SecretNotFound while absent) and Set
    Secret (a new version), each at api-version 7.4."""

    secrets: ClassVar[dict[str, list[str]]] = {}
    requests: ClassVar[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        self.requests.append(("GET", self.path))
        if url.path == "/metadata/identity/oauth2/token":
            ok = (
                self.headers.get("Metadata") == "true"
                and dict(urllib.parse.parse_qsl(url.query)) == AZURE_TOKEN_QUERY
            )
            token = {"access_token": AZURE_TOKEN, "expires_in": "86399", "token_type": "Bearer"}
            self._json(token if ok else {"error": "invalid_request"}, 200 if ok else 400)
            return
        name = self._secret(url)
        if name is None:
            return
        versions = self.secrets.get(name)
        if not versions:
            message = f"A secret with (name/id) {name} was not found in this key vault."
            self._json({"error": {"code": "SecretNotFound", "message": message}}, 404)
            return
        self._json(
            {"value": versions[-1], "id": f"https://lab.vault.azure.net/secrets/{name}/v{len(versions)}"}, 200
        )

    def do_PUT(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        self.requests.append(("PUT", self.path))
        name = self._secret(url)
        if name is None:
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.secrets.setdefault(name, []).append(body["value"])
        self._json({"value": body["value"], "id": f"https://lab.vault.azure.net/secrets/{name}/v1"}, 200)

    def _secret(self, url: urllib.parse.SplitResult) -> str | None:
        if self.headers.get("Authorization") != f"Bearer {AZURE_TOKEN}":
            self._json({"error": {"code": "Unauthorized"}}, 401)
            return None
        match = re.fullmatch(r"/secrets/([0-9A-Za-z-]+)", url.path)
        if match is None or url.query != "api-version=7.4":
            self._json({"error": {"code": "BadParameter"}}, 400)
            return None
        return match.group(1)

    def _json(self, body: Any, status: int) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def azure() -> Iterator[str]:
    _Azure.secrets, _Azure.requests = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Azure)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_on_azure_the_controller_sets_the_secret_once_and_a_host_reads_it(
    root: Path, aws: Aws, azure: str
) -> None:
    """The stand-in answers as both the metadata service (CLUSTERFAB_AZURE_IMDS) and the vault (the
    program's munge_key_vault_url); a curl spy logs every command line the program runs."""
    secret = "clusterfab-llm-prod-munge-key"
    env = {"PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "CLUSTERFAB_AZURE_IMDS": azure}
    key = root / KEY.lstrip("/")
    key.unlink(missing_ok=True)
    spy = root / "usr/local/bin/curl"
    spy.parent.mkdir(parents=True, exist_ok=True)
    spy.write_text(SPY)
    spy.chmod(0o755)
    (root / "var/log/curl-argv.log").unlink(missing_ok=True)
    try:
        first = _run(root, aws, _program(secret, generate=True, source="azure", vault_url=azure), env)
        assert (first.returncode, first.stdout) == (0, "changed\n"), first.stderr
        [stored] = _Azure.secrets[secret]
        assert len(base64.b64decode(stored)) == 1024
        assert key.read_bytes() == base64.b64decode(stored)
        again = _run(root, aws, _program(secret, generate=True, source="azure", vault_url=azure), env)
        assert (again.returncode, again.stdout) == (0, "unchanged\n"), again.stderr
        assert len(_Azure.secrets[secret]) == 1
        key.unlink()
        host = _run(root, aws, _program(secret, generate=False, source="azure", vault_url=azure), env)
        assert (host.returncode, host.stdout) == (0, "changed\n"), host.stderr
        assert key.read_bytes() == base64.b64decode(stored)
        argv = (root / "var/log/curl-argv.log").read_text()
    finally:
        spy.unlink()
    token = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fvault.azure.net"
    get, put = ("GET", f"/secrets/{secret}?api-version=7.4"), ("PUT", f"/secrets/{secret}?api-version=7.4")
    token_call = ("GET", f"{token}&client_id={AZURE_CLIENT_ID}")
    # First run: absent, set, read back; second: read; the host: read. A token before each call.
    assert _Azure.requests == [token_call, get, token_call, put, token_call, get] + [token_call, get] * 2
    assert AZURE_TOKEN not in argv
    assert stored not in argv
    assert "Authorization" not in argv


def test_on_azure_a_host_whose_secret_is_absent_gives_up_and_says_why(
    root: Path, aws: Aws, azure: str
) -> None:
    secret = "clusterfab-none-prod-munge-key"
    env = {"CLUSTERFAB_AZURE_IMDS": azure}
    result = _run(
        root, aws, _program(secret, generate=False, wait_seconds=0, source="azure", vault_url=azure), env
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"{secret} holds no MUNGE key after 0s: has the Slurm controller booted?"


ALERTMANAGER = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "alertmanager"
PASSWORD_FILE = "/etc/prometheus/alertmanager-smtp-password"
SPY = """#!/bin/sh
# Logs every curl command line (what any user of the host could read in the process list), then runs curl.
printf '%s\\n' "$*" >> /var/log/curl-argv.log
exec /usr/bin/curl "$@"
"""


def _smtp_program(secret: str, **cloud: str) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    env.filters["quote"] = shlex.quote
    template = env.from_string((ALERTMANAGER / "templates" / "smtp-password.sh.j2").read_text())
    return template.render(
        ansible_managed="Ansible managed",
        alertmanager_smtp_password_secret=secret,
        **({"alertmanager_cloud": "aws", "alertmanager_region": REGION, "alertmanager_project": ""} | cloud),
        __alertmanager_password_file=PASSWORD_FILE,
    )


def test_the_smtp_password_helper_keeps_credentials_off_command_lines(root: Path, aws: Aws) -> None:
    """The monitoring host's SMTP password helper (the alertmanager role's template) against moto: it reads
    the password, builds its request with a JSON encoder (it pasted the secret's name into JSON text), and
    hands the role's credentials to curl in a file (they were on curl's command line, readable by every
    user in the process list)."""
    secret, password = "team/smtp-password", 'p"a\\ss word'
    aws.client().create_secret(Name=secret, SecretString=password)
    subprocess.run(["chroot", str(root), "groupadd", "-f", "prometheus"], check=True)
    (root / "etc/prometheus").mkdir(parents=True, exist_ok=True)
    spy = root / "usr/local/bin/curl"
    spy.parent.mkdir(parents=True, exist_ok=True)
    spy.write_text(SPY)
    spy.chmod(0o755)
    env = {
        "PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": aws.metadata_endpoint,
        "AWS_ENDPOINT_URL_SECRETS_MANAGER": aws.secrets_endpoint,
    }
    try:
        first = _run(root, aws, _smtp_program(secret), env)
        assert (first.returncode, first.stdout) == (0, "updated\n"), first.stderr
        assert (root / PASSWORD_FILE.lstrip("/")).read_text() == password
        again = _run(root, aws, _smtp_program(secret), env)
        assert (again.returncode, again.stdout) == (0, ""), again.stderr
        argv = (root / "var/log/curl-argv.log").read_text()
        assert "aws:amz:us-east-1:secretsmanager" in argv  # the spy saw the signed request
        for credential in CREDENTIALS.values():
            assert credential not in argv
    finally:
        spy.unlink()


def test_on_azure_the_smtp_password_comes_from_the_operators_vault_with_the_controllers_identity(
    root: Path, aws: Aws, azure: str
) -> None:
    """The same helper on Azure: a token for the client id's identity from the metadata service, Get Secret
    of the name the resource id ends in, from the vault the stack derived from it (here the stand-in); the
    token never on a command line."""
    secret_id = (
        "/subscriptions/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/ops/providers/Microsoft.KeyVault/"
        "vaults/ops-mail/secrets/smtp-password"
    )
    password = 'p"a\\ss word'
    _Azure.secrets["smtp-password"] = ["old", password]
    _Azure.requests.clear()
    subprocess.run(["chroot", str(root), "groupadd", "-f", "prometheus"], check=True)
    (root / "etc/prometheus").mkdir(parents=True, exist_ok=True)
    (root / PASSWORD_FILE.lstrip("/")).unlink(missing_ok=True)
    spy = root / "usr/local/bin/curl"
    spy.parent.mkdir(parents=True, exist_ok=True)
    spy.write_text(SPY)
    spy.chmod(0o755)
    (root / "var/log/curl-argv.log").unlink(missing_ok=True)
    env = {"PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "CLUSTERFAB_AZURE_IMDS": azure}
    program = _smtp_program(
        secret_id,
        alertmanager_cloud="azure",
        alertmanager_vault_url=f"{azure}/",
        alertmanager_client_id=AZURE_CLIENT_ID,
    )
    try:
        first = _run(root, aws, program, env)
        assert (first.returncode, first.stdout) == (0, "updated\n"), first.stderr
        written = root / PASSWORD_FILE.lstrip("/")
        assert written.read_text() == password
        assert oct(written.stat().st_mode & 0o777) == "0o640"
        again = _run(root, aws, program, env)
        assert (again.returncode, again.stdout) == (0, ""), again.stderr
        argv = (root / "var/log/curl-argv.log").read_text()
    finally:
        spy.unlink()
    token = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fvault.azure.net"
    read = [
        ("GET", f"{token}&client_id={AZURE_CLIENT_ID}"),
        ("GET", "/secrets/smtp-password?api-version=7.4"),
    ]
    assert _Azure.requests == read * 2
    assert AZURE_TOKEN not in argv
    assert password not in argv
