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
program never prints it; the SQL runs through MariaDB's own client (Ubuntu's mariadb-client).

Where the database is and who may create users on it is the cloud's part, in the module clouds.py finds by
the settings' `cloud`: aws_rds.py (RDS's DescribeDBInstances and the master user's secret in Secrets
Manager, with Ubuntu's python3-boto3), gcp_cloudsql.py (Cloud SQL for MySQL has no master password to
read: slurmdbd's user is made through its Admin API instead), azure_mysql.py (Azure Database for MySQL keeps
none either: the controller makes the administrator's password and gives it to the server through Resource
Manager).
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import clouds, files

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
    return make_user(settings, password_file, master(), sql=sql)


def make_user(
    settings: Mapping[str, Any],
    password_file: str,
    found: Master,
    *,
    sql: Callable[[Master, str, str], None] | None = None,
) -> dict[str, Any]:
    """As the master user, make slurmdbd's database and user with the password on the state disk; say where
    the database listens. The CA bundle is in place (settings' `ca_file`)."""
    ca_file = str(settings["ca_file"])
    statements = user_sql(read_password(password_file))
    if sql is None:
        attempts = int(settings.get("attempts", ATTEMPTS))  # a test shortens them; the stack never does
        wait_s = float(settings.get("retry_wait_s", WAIT_S))
        run_sql(found, statements, ca_file=ca_file, attempts=attempts, wait_s=wait_s)
    else:
        sql(found, statements, ca_file)
    return {"host": found.host, "port": found.port}


def main(settings: Mapping[str, Any], password_file: str) -> int:
    name = settings.get("cloud")
    if name not in clouds.CLOUDS:
        raise AccountingError(f"the accounting settings name no cloud this program knows ({name!r})")
    cloud = clouds.cloud(name)
    if not cloud.accounting_settings:
        raise AccountingError(f"managed accounting is not built on {name}")
    missing = [key for key in cloud.accounting_settings if key not in settings]
    if missing:
        raise AccountingError(f"the accounting settings lack {', '.join(missing)}")
    print(json.dumps(cloud.accounting(settings, password_file)))
    return 0
