"""Managed accounting: make the cloud's database ready for slurmdbd
(`python3 -m clusterfab_slurm_nodes accounting --config FILE --password-file FILE`).

The controller's playbook runs it as root at every boot, before slurmdbd starts. It finds the database the
stack created by its name (its endpoint and the secret in which the cloud keeps the master user's
credentials), fetches the bundle of the certificate authority that signs the server's certificate over
HTTPS, and, signed in as the master user over a connection that verifies the server against that bundle,
creates slurmdbd's database and user with the password kept on the controller's state disk (made there at
the first boot; a restored state disk keeps it, a new one gets a new password and the user is given it).
It prints `{"host": ..., "port": ...}` for slurmdbd.conf. Running it again changes nothing.

The master password never reaches a command line or a file outside a 0600 temporary option file, and the
program never prints it. AWS: RDS (DescribeDBInstances) and Secrets Manager with Ubuntu's python3-boto3,
the SQL through MariaDB's own client (Ubuntu's mariadb-client).

GCP: Cloud SQL for MySQL has no master password to read. The stack creates the instance (private IP only,
TLS only) and slurmdbd's database; the program reads the instance's private address and its server CA
certificate from the Cloud SQL Admin API and creates slurmdbd's user, or sets its password, through the
same API (users.insert / users.update), with the VM's service account and nothing but the standard library.
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from . import files
from .nodesync import METADATA as METADATA_URL
from .nodesync import Http, MetadataTokenHttp

DATABASE = "slurm_acct_db"
"""slurmdbd.conf StorageLoc: render.py writes it, the stack makes it on Cloud SQL, this program on RDS."""
USER = "slurm"
"""slurmdbd.conf StorageUser."""
PORT = 3306
"""MySQL's and MariaDB's port (Cloud SQL's, and RDS's unless the endpoint says otherwise)."""
CA_BUNDLE_MAX = 1 << 20
"""A regional RDS bundle is a few KiB (the global one about 160 KiB): more is not a bundle."""
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----")
_PASSWORD = re.compile(r"[0-9a-f]{32,}")
"""What the controller makes (secrets.token_hex): safe inside an SQL string literal."""
ATTEMPTS = 10
WAIT_S = 15.0
"""A database just created may not take connections for a while (DNS, the parameter group): the SQL is
tried this many times, this far apart, before the program gives up."""


class AccountingError(Exception):
    """The database cannot be made ready; the message says why (never a secret)."""


@dataclass(frozen=True)
class Master:
    """Where the database listens and who may create users on it."""

    host: str
    port: int
    user: str
    password: str

    def __repr__(self) -> str:  # the password stays out of tracebacks and logs
        return f"Master(host={self.host!r}, port={self.port}, user={self.user!r})"


class Rds(Protocol):
    def describe_db_instances(self, **kwargs: Any) -> Mapping[str, Any]: ...


class SecretsManager(Protocol):
    def get_secret_value(self, **kwargs: Any) -> Mapping[str, Any]: ...


def aws_master(rds: Rds, secrets: SecretsManager, identifier: str) -> Master:
    """The RDS instance's endpoint and master credentials (from the secret RDS manages for it)."""
    found = rds.describe_db_instances(DBInstanceIdentifier=identifier)["DBInstances"]
    if not found:
        raise AccountingError(f"RDS has no DB instance {identifier}")
    instance = found[0]
    endpoint = instance.get("Endpoint") or {}
    if "Address" not in endpoint:
        raise AccountingError(
            f"RDS instance {identifier} has no endpoint yet (status {instance.get('DBInstanceStatus')})"
        )
    secret = (instance.get("MasterUserSecret") or {}).get("SecretArn")
    if not secret:
        raise AccountingError(
            f"RDS instance {identifier} keeps no master user secret: it must be created with "
            "ManageMasterUserPassword"
        )
    value = secrets.get_secret_value(SecretId=secret)
    try:
        credentials = json.loads(value["SecretString"])
        user, password = str(credentials["username"]), str(credentials["password"])
    except (KeyError, TypeError, ValueError) as error:
        raise AccountingError(
            f"the master user secret of {identifier} holds no username and password"
        ) from error
    return Master(
        host=str(endpoint["Address"]), port=int(endpoint.get("Port", PORT)), user=user, password=password
    )


def fetch_ca_bundle(url: str, destination: str, *, opener: Callable[[str], Any] | None = None) -> int:
    """Fetch the CA bundle at `url` (HTTPS: the system's authorities vouch for the server) and install it
    at `destination` (0644) when it differs; returns the number of certificates in it."""
    open_url = opener or (lambda u: urllib.request.urlopen(u, timeout=30))
    with open_url(url) as response:
        body = response.read(CA_BUNDLE_MAX + 1)
    if len(body) > CA_BUNDLE_MAX:
        raise AccountingError(f"{url} answered more than {CA_BUNDLE_MAX} bytes: not a CA bundle")
    return install_ca_bundle(body.decode("ascii", errors="replace"), destination, origin=url)


def install_ca_bundle(text: str, destination: str, *, origin: str) -> int:
    """Install the PEM certificates of `text` (nothing else of it) at `destination` (0644) when they
    differ from what is there; returns how many there are. `origin` names where they came from."""
    certificates = _PEM.findall(text)
    if not certificates:
        raise AccountingError(f"{origin} holds no PEM certificate")
    for certificate in certificates:
        try:
            # OpenSSL's own reading, as slurmdbd's client will read the file: valid base64 that is no
            # X.509 certificate is refused too.
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=certificate)
        except (ValueError, ssl.SSLError) as error:
            raise AccountingError(f"{origin} holds a malformed certificate") from error
    _install(destination, "\n".join(certificates) + "\n", 0o644)
    return len(certificates)


def _install(path: str, content: str, mode: int) -> None:
    try:
        with open(path, encoding="ascii") as handle:
            if handle.read() == content:
                return
    except FileNotFoundError:
        pass
    files.replace(path, content, mode)


def checked_password(password: str) -> str:
    """`password` if it is what the controller makes (safe in an SQL literal and an API body)."""
    if not _PASSWORD.fullmatch(password):
        raise AccountingError("slurmdbd's password must be the hex string the controller made")
    return password


def user_sql(password: str) -> str:
    """slurmdbd's database, and its user with this password, allowed only over TLS, on that database only."""
    checked_password(password)
    return (
        f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`;\n"
        f"CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{password}' REQUIRE SSL;\n"
        f"ALTER USER '{USER}'@'%' IDENTIFIED BY '{password}' REQUIRE SSL;\n"
        f"GRANT ALL PRIVILEGES ON `{DATABASE}`.* TO '{USER}'@'%';\n"
    )


def option_file(master: Master, ca_file: str) -> str:
    """The MariaDB client's [client] options: the master user, TLS verified against the CA bundle and the
    server's name. Values are quoted (an RDS password may hold '#'); backslashes and quotes escaped."""

    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (
        "[client]\n"
        f"host={quoted(master.host)}\n"
        f"port={master.port}\n"
        f"user={quoted(master.user)}\n"
        f"password={quoted(master.password)}\n"
        "ssl\n"
        f"ssl-ca={quoted(ca_file)}\n"
        "ssl-verify-server-cert\n"
    )


def run_sql(
    master: Master,
    sql: str,
    *,
    ca_file: str,
    client: str = "mariadb",
    attempts: int = ATTEMPTS,
    wait_s: float = WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Run `sql` as the master user with MariaDB's client, retrying while the server does not answer."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="clusterfab-db-", suffix=".cnf", encoding="utf-8"
    ) as options:
        options.write(option_file(master, ca_file))
        options.flush()
        error = ""
        for attempt in range(1, attempts + 1):
            done = subprocess.run(
                [client, f"--defaults-extra-file={options.name}", "--batch", "--connect-timeout=10"],
                input=sql,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if done.returncode == 0:
                return
            error = done.stderr.strip()
            if attempt < attempts:
                sleep(wait_s)
    raise AccountingError(
        f"{client} as {master.user}@{master.host}:{master.port} failed {attempts} times: {error}"
    )


def read_password(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise AccountingError(f"slurmdbd's password cannot be read from {path}: {error}") from error


def prepare(
    settings: Mapping[str, Any],
    password_file: str,
    *,
    master: Callable[[], Master],
    opener: Callable[[str], Any] | None = None,
    sql: Callable[[Master, str, str], None] | None = None,
) -> dict[str, Any]:
    """Fetch the CA bundle, make slurmdbd's database and user, and say where the database listens."""
    ca_file = str(settings["ca_file"])
    fetch_ca_bundle(str(settings["ca_bundle_url"]), ca_file, opener=opener)
    found = master()
    statements = user_sql(read_password(password_file))
    if sql is None:
        attempts = int(settings.get("attempts", ATTEMPTS))  # a test shortens them; the stack never does
        wait_s = float(settings.get("retry_wait_s", WAIT_S))
        run_sql(found, statements, ca_file=ca_file, attempts=attempts, wait_s=wait_s)
    else:
        sql(found, statements, ca_file)
    return {"host": found.host, "port": found.port}


def aws_clients(settings: Mapping[str, Any]) -> tuple[Rds, SecretsManager]:
    # Ubuntu's python3-boto3 on the controller.
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    config = Config(region_name=settings["region"], retries={"mode": "standard", "max_attempts": 8})
    endpoint = settings.get("endpoint_url")  # a test stands in for AWS here; never set by the stack
    return (
        boto3.client("rds", config=config, endpoint_url=endpoint),
        boto3.client("secretsmanager", config=config, endpoint_url=endpoint),
    )


# --- GCP: Cloud SQL for MySQL through its Admin API ----------------------------------------------------

SQLADMIN_API = "https://sqladmin.googleapis.com/v1"
OPERATION_POLLS = 60
POLL_S = 5.0
"""A user insert or update is an operation of a few seconds, and maintenance leaves the instance for
minutes: polled this many times, this far apart."""
WAITING_STATES = ("PENDING_CREATE", "MAINTENANCE")
HTTP_NOT_FOUND = 404


class CloudSql:
    """The instance and its users through the Cloud SQL Admin API (v1), with the VM's service account:
    the controller's role may get this one instance and list, create and update its users, nothing else."""

    def __init__(
        self,
        http: Http,
        *,
        project: str,
        instance: str,
        api: str = SQLADMIN_API,
        polls: int = OPERATION_POLLS,
        poll_s: float = POLL_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http, self._project, self._instance = http, project, instance
        self._root = f"{api}/projects/{urllib.parse.quote(project)}"
        self._polls, self._poll_s, self._sleep = polls, poll_s, sleep

    def where(self) -> tuple[str, str]:
        """The instance's private address and its server CA certificate (PEM)."""
        url = f"{self._root}/instances/{self._instance}"
        found = self._call("GET", url)
        polls = 0
        # Being created or under maintenance, the instance comes back RUNNABLE on its own.
        while found.get("state") in WAITING_STATES and polls < self._polls:
            self._sleep(self._poll_s)
            found = self._call("GET", url)
            polls += 1
        if found.get("state") != "RUNNABLE":
            raise AccountingError(
                f"Cloud SQL instance {self._instance} is {found.get('state')}, not RUNNABLE"
            )
        private = [a["ipAddress"] for a in found.get("ipAddresses", []) if a.get("type") == "PRIVATE"]
        if not private:
            raise AccountingError(
                f"Cloud SQL instance {self._instance} has no private IP: it must be created on the "
                "cluster's network (private services access)"
            )
        certificate = (found.get("serverCaCert") or {}).get("cert")
        if not certificate:
            raise AccountingError(f"Cloud SQL instance {self._instance} names no server CA certificate")
        return str(private[0]), str(certificate)

    def set_password(self, user: str, password: str) -> None:
        """Create `user`@'%' with this password, or give the existing user this password."""
        users = f"{self._root}/instances/{self._instance}/users"
        body = {"name": user, "host": "%", "password": password}
        try:
            self._http("GET", f"{users}/{user}?host=%25")
        except Exception as error:
            if getattr(error, "code", None) != HTTP_NOT_FOUND:
                raise _refused(error) from error
            self._wait(self._call("POST", users, body))
            return
        self._wait(self._call("PUT", f"{users}?name={user}&host=%25", body))

    def _wait(self, operation: Mapping[str, Any]) -> None:
        polls = 0
        while operation.get("status") != "DONE":
            if polls == self._polls:
                raise AccountingError(
                    f"Cloud SQL operation {operation.get('name')} not done after {polls} polls"
                )
            self._sleep(self._poll_s)
            operation = self._call("GET", f"{self._root}/operations/{operation['name']}")
            polls += 1
        errors = (operation.get("error") or {}).get("errors", [])
        if errors:
            raise AccountingError(
                "Cloud SQL refused: " + "; ".join(f"{e.get('code')}: {e.get('message', '')}" for e in errors)
            )

    def _call(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            return self._http(method, url, body)
        except Exception as error:
            raise _refused(error) from error


def _refused(error: Exception) -> AccountingError:
    status = getattr(error, "code", None)
    reason = getattr(error, "reason", None) or error
    if status is None:  # no answer: the metadata server's token, DNS, the network
        return AccountingError(f"the Cloud SQL Admin API could not be called: {reason}")
    return AccountingError(f"the Cloud SQL Admin API refused ({status}): {reason}")


def prepare_gcp(settings: Mapping[str, Any], password_file: str, *, cloud_sql: CloudSql) -> dict[str, Any]:
    """Install the instance's server CA certificate, give slurmdbd's user its password (the Admin API
    makes the user; Cloud SQL takes no SQL from us), and say where the database listens."""
    host, certificate = cloud_sql.where()
    install_ca_bundle(certificate, str(settings["ca_file"]), origin="the instance's serverCaCert")
    cloud_sql.set_password(USER, checked_password(read_password(password_file)))
    return {"host": host, "port": PORT}


REQUIRED = {
    "aws": ("identifier", "region", "ca_bundle_url", "ca_file"),
    "gcp": ("identifier", "project", "ca_file"),
}


def main(settings: Mapping[str, Any], password_file: str) -> int:
    cloud = settings.get("cloud")
    if cloud not in REQUIRED:
        raise AccountingError(f"the accounting settings name no cloud this program knows ({cloud!r})")
    missing = [key for key in REQUIRED[cloud] if key not in settings]
    if missing:
        raise AccountingError(f"the accounting settings lack {', '.join(missing)}")
    if cloud == "gcp":
        cloud_sql = CloudSql(
            # A test stands in for the metadata server and the Admin API here; the stack sets neither.
            MetadataTokenHttp(settings.get("metadata_url", METADATA_URL)),
            project=str(settings["project"]),
            instance=str(settings["identifier"]),
            api=str(settings.get("api_url", SQLADMIN_API)),
            poll_s=float(settings.get("retry_wait_s", POLL_S)),
        )
        endpoint = prepare_gcp(settings, password_file, cloud_sql=cloud_sql)
    else:
        endpoint = _prepare_aws(settings, password_file)
    print(json.dumps(endpoint))
    return 0


def _prepare_aws(settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
    rds, secrets = aws_clients(settings)
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    def master() -> Master:
        try:
            return aws_master(rds, secrets, str(settings["identifier"]))
        except (BotoCoreError, ClientError) as error:
            raise AccountingError(f"AWS refused: {error}") from error

    return prepare(settings, password_file, master=master)
