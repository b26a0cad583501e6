"""End to end: managed accounting on GCP with Debian 13's real slurmdbd and MariaDB standing in for a Cloud
SQL for MySQL instance, tests/fakes/cloudsql.py standing in for the Cloud SQL Admin API and the metadata
server, and the controller's own accounting program (the package the stack ships, run by the chroot's
python3: standard library only).

The lab's MariaDB plays the instance as the stack creates it: a private address only, encrypted connections
only (sslMode ENCRYPTED_ONLY: require_secure_transport), slurmdbd's database made (the stack's
gcp.sql.Database), and a server certificate from the instance's own CA (serverCaMode
GOOGLE_MANAGED_INTERNAL_CA), which names the instance (`<project>:<instance>`) and not the address clients
connect to, as Cloud SQL's do. The fake Admin API listens in the lab's network namespace (at 127.0.0.1,
where the program's test seams point it), answers instances.get with the lab database's address as the
PRIVATE address and the test CA as serverCaCert, and carries out users.insert and users.update as SQL on the
lab's MariaDB. The program finds the instance, installs the CA, makes slurmdbd's user, and slurmdbd runs the
rendered slurmdbd.conf with the endpoint and `StorageParameters=SSL_CA=` filled in as the role fills them.

slurmdbd runs on the controllers' own MariaDB Connector/C, Ubuntu 24.04's (tests/slurm/nodeslib.py): it
checks the chain against SSL_CA and not the name. Debian 13's Connector/C 3.4 also checks the name, which
such a certificate does not give for the address: a recorded hazard for a controller on a later Ubuntu
(`test_connector_c_3_4_refuses_...`).
"""

from __future__ import annotations

import json
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_vars
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE
from clusterfab.scheduler.slurm.render import ACCOUNTING_CA_FILE
from tests.factories import spec
from tests.fakes.cloudsql import FakeCloudSql, GoogleServer, OperationFailedError
from tests.labs import unavailable
from tests.slurm.conftest import TIMINGS
from tests.slurm.dblab import PASSWORD_FILE, ManagedDatabaseLab, lab_files, sql_string
from tests.slurm.labcloud import InLabNet
from tests.slurm.nodeslib import (
    LIBRARY_DIR,
    NOBLE_LIBMARIADB3,
    NOBLE_LIBMARIADB3_SHA256,
    UnavailableError,
    noble_libmariadb3,
)
from tests.slurm.rootfs import GoldenRootfs
from tests.tls import certificate_authority, google_name, pem, server_certificate

pytestmark = pytest.mark.slurm

STACK = "lab"
PROJECT = "acct-lab-project"
FILES = "/var/lib/clusterfab/files/cloudsql-lab"
DB_ADDRESS = "10.217.0.63"
"""The instance's private address (Cloud SQL's from the private services access range)."""
GOOGLE_PORT = 8080
"""Where the fake metadata server and Admin API listen, at 127.0.0.1 in the lab's network."""
DEBIAN_SLURMDBD = "exec slurmdbd -D"
"""slurmdbd on Debian 13's own Connector/C (3.4)."""
NOBLE_LIB = "/opt/noble-libmariadb3"
"""Ubuntu 24.04's libmariadb3, unpacked in the lab: slurmdbd's library path starts there."""


def _cluster() -> Any:
    return spec(
        "gcp",
        name="acct-lab",
        project=PROJECT,
        node_groups=[{"name": "h100", "machine_type": "a3-megagpu-8g", "count": 1}],
        scheduler={"kind": "slurm", "accounting": "managed"},
        teams=[{"name": "research", "max_gpus": 8, "users": ["alice"]}],
    )


class CloudSqlAccountingLab(ManagedDatabaseLab):
    """A lab whose accounting database is the "Cloud SQL" instance: the fake Admin API's record of it,
    MariaDB behind it, and slurmdbd on the controllers' own Connector/C."""

    files_dir = FILES
    slurmdbd_command = f"exec env LD_LIBRARY_PATH={NOBLE_LIB}/{LIBRARY_DIR} slurmdbd -D"
    """slurmdbd on Ubuntu 24.04's Connector/C (the controllers')."""
    ca = ""
    server_cert: x509.Certificate
    noble_lib: Path

    def _start_mariadb(self) -> None:
        assert self._init_pid is not None
        instance = self.settings["identifier"]
        ca = certificate_authority(google_name("Google Cloud SQL Server CA"))
        # As Cloud SQL's per-instance CA signs it: the instance in the CN, no subjectAltName (neither the
        # private address nor a DNS name).
        server_key, self.server_cert = server_certificate(ca, google_name(f"{PROJECT}:{instance}"))
        self.ca = pem(ca[1])
        self.other_ca = pem(certificate_authority(google_name("Google Cloud SQL Server CA"))[1])
        self._serve_over_tls(DB_ADDRESS, ca[1], server_key, self.server_cert)
        # The stack's gcp.sql.Database: slurmdbd finds its database made.
        self.run(f"mariadb -e 'CREATE DATABASE {DATABASE}'")
        self.fake = FakeCloudSql(
            project=PROJECT,
            instance=instance,
            private_ip=DB_ADDRESS,
            server_ca=self.ca,
            set_password=self._set_password,
        )
        self.net = InLabNet(self._init_pid)
        # Made on a thread inside the lab's network: its socket listens there.
        self.google = self.net.call(lambda: GoogleServer(self.fake, "127.0.0.1", GOOGLE_PORT))
        shutil.copytree(self.noble_lib, self.path(NOBLE_LIB))
        self._prepare_accounting()

    def _set_password(self, name: str, host: str, password: str, created: bool) -> None:
        """users.insert / users.update as Cloud SQL carries them out, as root on the lab's MariaDB. Cloud
        SQL gives a user made through the API the cloudsqlsuperuser role; ALL PRIVILEGES ON *.* WITH GRANT
        OPTION approximates it (the role lacks SUPER, FILE and a few more, which slurmdbd does not use)."""
        user = f"'{sql_string(name)}'@'{sql_string(host)}'"
        sql = (
            f"CREATE USER {user} IDENTIFIED BY '{sql_string(password)}';"
            f" GRANT ALL PRIVILEGES ON *.* TO {user} WITH GRANT OPTION;"
            if created
            else f"ALTER USER {user} IDENTIFIED BY '{sql_string(password)}';"
        )
        done = self.run(["mariadb", "-e", sql], check=False)
        if done.returncode != 0:
            raise OperationFailedError("ERROR_RDBMS", done.stderr.strip())

    def sign_in(self, password: str, *, verify: bool = False) -> Any:
        """MariaDB's client as slurmdbd's user over TLS (require_secure_transport), the server checked
        against the installed CA with `verify` (Connector/C 3.4, as slurmdbd: the chain and the name)."""
        check = [f"--ssl-ca={ACCOUNTING_CA_FILE}", "--ssl-verify-server-cert"]
        return self.run(
            [
                "mariadb",
                *("-h", DB_ADDRESS, "-u", "slurm", f"-p{password}", "--ssl"),
                *(check if verify else ["--disable-ssl-verify-server-cert"]),
                *("-N", "-B", "-e", "SELECT CURRENT_USER()"),
            ],
            check=False,
        )

    def slurmdbd_libraries(self) -> set[str]:
        """The MariaDB Connector/C files the running slurmdbd has mapped."""
        maps = self.run("cat /proc/$(pidof slurmdbd)/maps").stdout
        return {line.split()[-1] for line in maps.splitlines() if "libmariadb" in line}

    def close(self) -> None:
        try:
            super().close()
        finally:
            if getattr(self, "google", None) is not None:
                self.google.close()


@pytest.fixture(scope="module")
def cloudsql(
    golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CloudSqlAccountingLab]:
    try:
        noble_lib = noble_libmariadb3()
    except UnavailableError as error:
        unavailable(f"Ubuntu 24.04's libmariadb3 (the controllers' Connector/C) cannot be fetched: {error}")
    cluster = _cluster()
    catalog = load_catalog()
    files = lab_files(cluster, stack=STACK, files_dir=FILES)
    lab = CloudSqlAccountingLab(files, golden, tmp_path_factory.mktemp("cloudsqllab"))
    lab.noble_lib = noble_lib
    settings = controller_vars(cluster, catalog.slurm, stack=STACK, files_dir=FILES, project=PROJECT)[
        "slurm_controller_database"
    ]
    # The lab's stand-ins for the metadata server and the Admin API, and a short poll; the stack sets none.
    google = f"http://127.0.0.1:{GOOGLE_PORT}"
    lab.settings = {
        **settings,
        "metadata_url": f"{google}/computeMetadata/v1",
        "api_url": f"{google}/v1",
        "retry_wait_s": 0.2,
    }
    try:
        lab.start()
        TIMINGS["cloudsql_accounting_lab_start"] = dict(lab.timings.steps)
        yield lab
    finally:
        lab.close()
    assert lab.fake.violations == []
    assert lab.leftover_processes() == []


def test_the_program_finds_the_instance_and_prints_its_private_address(
    cloudsql: CloudSqlAccountingLab,
) -> None:
    assert cloudsql.settings["identifier"] == "clusterfab-acct-lab-lab-slurmdb"
    assert cloudsql.endpoint == {"host": DB_ADDRESS, "port": 3306}
    # The password the program gave the user is nowhere in what it printed.
    assert cloudsql.storage_pass not in cloudsql.program_output
    # The instance's server CA, where slurmdbd.conf names it, readable by slurmdbd (SlurmUser).
    installed = cloudsql.path(ACCOUNTING_CA_FILE)
    assert installed.read_text() == cloudsql.ca
    assert stat.S_IMODE(installed.stat().st_mode) == 0o644
    conf = cloudsql.path("/etc/slurm/slurmdbd.conf").read_text()
    assert f"StorageHost={DB_ADDRESS}\n" in conf
    assert "StoragePort=3306\n" in conf
    assert f"StorageParameters=SSL_CA={ACCOUNTING_CA_FILE}\n" in conf


def test_the_api_made_slurmdbds_user_with_the_password_from_the_state_disk(
    cloudsql: CloudSqlAccountingLab,
) -> None:
    assert cloudsql.sign_in(cloudsql.storage_pass).stdout.strip() == "slurm@%"
    grants = cloudsql.run("mariadb -N -B -e \"SHOW GRANTS FOR 'slurm'@'%'\"").stdout.splitlines()
    assert [g.split(" IDENTIFIED BY ")[0] + g[g.index(" WITH ") :] for g in grants] == [
        "GRANT ALL PRIVILEGES ON *.* TO `slurm`@`%` WITH GRANT OPTION"
    ]
    # The server takes nothing but TLS (sslMode ENCRYPTED_ONLY).
    assert cloudsql.run("mariadb -N -B -e 'SELECT @@require_secure_transport'").stdout.strip() == "1"


def test_a_second_run_keeps_the_password_and_a_new_password_file_gives_the_user_the_new_one(
    cloudsql: CloudSqlAccountingLab,
) -> None:
    cloudsql.fake.calls.clear()
    again = cloudsql.accounting()
    assert json.loads(again.stdout) == cloudsql.endpoint
    # The user exists: the program gives it its password again (users.update), it inserts nothing.
    assert [c.method for c in cloudsql.fake.calls if c.method != "sql.operations.get"] == [
        "sql.instances.get",
        "sql.users.get",
        "sql.users.update",
    ]
    assert cloudsql.sign_in(cloudsql.storage_pass).stdout.strip() == "slurm@%"
    # A new state disk makes a new password: the next run gives it to the user, the old one is refused.
    fresh = secrets.token_hex(24)
    cloudsql.path(PASSWORD_FILE).write_text(fresh + "\n")
    try:
        cloudsql.accounting()
        assert cloudsql.sign_in(fresh).stdout.strip() == "slurm@%"
        refused = cloudsql.sign_in(cloudsql.storage_pass)
        assert refused.returncode == 1
        assert "ERROR 1045 (28000): Access denied for user 'slurm'@" in refused.stderr, refused.stderr
    finally:
        cloudsql.path(PASSWORD_FILE).write_text(cloudsql.storage_pass + "\n")
        cloudsql.accounting()
    assert cloudsql.sign_in(cloudsql.storage_pass).stdout.strip() == "slurm@%"


TLS_REFUSAL = "error: mysql_real_connect failed: 2026 TLS/SSL error: "
"""How slurmdbd logs a TLS failure of MariaDB Connector/C (CR_SSL_CONNECTION_ERROR) and why."""
HOST_NAME_REFUSAL = TLS_REFUSAL + "Hostname verification failed"


def test_slurmdbd_keeps_the_accounting_in_the_instance_over_tls_checked_against_its_ca(
    cloudsql: CloudSqlAccountingLab,
) -> None:
    # On the controllers' Connector/C, Ubuntu 24.04's, not Debian 13's.
    assert cloudsql.slurmdbd_libraries() == {f"{NOBLE_LIB}/{LIBRARY_DIR}/libmariadb.so.3"}
    # The cluster and the teams' accounts went into it through slurmdbd.
    assert cloudsql.cluster in cloudsql.run("sacctmgr -n -P show cluster format=cluster").stdout.split()
    assert "research" in cloudsql.run("sacctmgr -n -P show account format=account").stdout.split()
    # slurmdbd holds its connection as the user the API made (TLS: the server takes nothing else).
    sessions = cloudsql.run(
        "mariadb -N -B -e \"SELECT db FROM information_schema.processlist WHERE user='slurm'\"",
    )
    assert DATABASE in sessions.stdout.split(), sessions.stdout


def test_slurmdbd_refuses_a_database_its_ca_does_not_vouch_for(cloudsql: CloudSqlAccountingLab) -> None:
    """slurmdbd checks the server against StorageParameters=SSL_CA: another authority's certificate there
    is refused."""
    good = cloudsql.path(ACCOUNTING_CA_FILE).read_text()
    try:
        refusal = cloudsql.restart_slurmdbd(ca_bundle=cloudsql.other_ca)
        # OpenSSL's verdict on the chain (the server sends its CA after its certificate).
        assert refusal == TLS_REFUSAL + "self-signed certificate in certificate chain"
    finally:
        back = cloudsql.restart_slurmdbd(ca_bundle=good)
    assert back == ""


def test_connector_c_3_4_refuses_the_instance_because_its_certificate_does_not_name_the_address(
    cloudsql: CloudSqlAccountingLab,
) -> None:
    """A hazard, recorded: MariaDB Connector/C 3.4 (Debian 13's libmariadb3 1:11.8; MariaDB 11.4 and later)
    verifies, with StorageParameters=SSL_CA= (mysql_ssl_set), the server's chain AND its name against
    StorageHost by default, and Slurm has no parameter to turn the name check off. Cloud SQL's per-instance
    CA signs a certificate naming `<project>:<instance>`, not the private address: slurmdbd on 3.4 cannot
    connect. Ubuntu 24.04's 3.3 checks the name only when asked (the test above): a controller image with
    Connector/C 3.4 needs a certificate that names what slurmdbd connects to (Cloud SQL's shared CA and the
    instance's DNS name)."""
    assert cloudsql.server_cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == (
        f"{PROJECT}:{cloudsql.settings['identifier']}"
    )
    assert [e.oid for e in cloudsql.server_cert.extensions] == []  # no subjectAltName: no address, no DNS
    good = cloudsql.path(ACCOUNTING_CA_FILE).read_text()
    try:
        assert cloudsql.restart_slurmdbd(ca_bundle=good, command=DEBIAN_SLURMDBD) == HOST_NAME_REFUSAL
    finally:
        back = cloudsql.restart_slurmdbd(ca_bundle=good)
    assert back == ""
    # MariaDB's own client, on Debian 13's libraries, says the same when told to check the server.
    checked = cloudsql.sign_in(cloudsql.storage_pass, verify=True)
    assert (checked.returncode, checked.stderr.strip()) == (
        1,
        "ERROR 2026 (HY000): TLS/SSL error: Hostname verification failed",
    )


def test_the_lab_runs_slurmdbd_on_the_connector_the_catalog_records() -> None:
    source = load_catalog().sources["S-UBUNTU-LIBMARIADB"]
    assert source.url == NOBLE_LIBMARIADB3
    assert f"sha256 {NOBLE_LIBMARIADB3_SHA256}" in source.title
