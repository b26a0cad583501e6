"""End to end: managed accounting on Azure with Debian 13's real slurmdbd and MariaDB standing in for an
Azure Database for MySQL flexible server, tests/fakes/azure_mysql.py standing in for the instance metadata
service and Resource Manager, and the controller's own accounting program (the package the stack ships,
run by the chroot's python3: standard library only).

The lab's MariaDB plays the server as the stack creates it: on an address of its own under its host name
(`<server>.mysql.database.azure.com`, in the lab's /etc/hosts as the server's private DNS zone answers it
in the VNet), encrypted connections only (require_secure_transport), slurmdbd's database made (the stack's
dbformysql.Database), and the administrator `clusterfab` with the random password the stack created the
server with, which the controller never learns. Its certificate names the host and chains to one of the two
roots the catalog names (here the lab's stand-in for Microsoft RSA Root Certificate Authority 2017); the
program installs both roots from the host's trust store (here the lab's files). The fake Resource Manager
carries out the program's password update as ALTER USER on the lab's MariaDB. The program gives the server
its own administrator password, makes slurmdbd's user as that administrator, and slurmdbd runs the rendered
slurmdbd.conf with the endpoint and `StorageParameters=SSL_CA=` filled in as the role fills them.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_vars
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE
from clusterfab.scheduler.slurm.render import ACCOUNTING_CA_FILE
from tests.factories import spec
from tests.fakes.azure_mysql import AzureServer, FakeFlexibleServer
from tests.slurm.conftest import TIMINGS
from tests.slurm.dblab import PASSWORD_FILE, ManagedDatabaseLab, lab_files, sql_string
from tests.slurm.labcloud import InLabNet
from tests.slurm.rootfs import GoldenRootfs
from tests.tls import certificate_authority, common_name, pem, server_certificate

pytestmark = pytest.mark.slurm

STACK = "lab"
FILES = "/var/lib/clusterfab/files/azure-accounting-lab"
DB_ADDRESS = "10.217.0.73"
"""The server's private address in its delegated subnet."""
AZURE_PORT = 8081
"""Where the fake metadata service and Resource Manager listen, at 127.0.0.1 in the lab's network."""
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000a1"
RESOURCE_GROUP = "acct-lab-lab"
CLIENT_ID = "22222222-2222-2222-2222-222222222222"
ROOTS = "/srv/lab-trust-store"
"""The lab's stand-in for /usr/share/ca-certificates/mozilla."""
ADMINISTRATOR_FILE = f"{PASSWORD_FILE.rsplit('/', 1)[0]}/mysql-administrator.pass"


def _cluster() -> Any:
    return spec(
        "azure",
        name="acct-lab",
        node_groups=[{"name": "h100", "machine_type": "Standard_ND96isr_H100_v5", "count": 2}],
        scheduler={"kind": "slurm", "accounting": "managed"},
        teams=[{"name": "research", "max_gpus": 8, "users": ["alice"]}],
    )


class AzureAccountingLab(ManagedDatabaseLab):
    """A lab whose accounting database is the "flexible server": the fake Resource Manager's record of it,
    MariaDB behind it."""

    files_dir = FILES
    fake: FakeFlexibleServer
    host: str

    def _start_mariadb(self) -> None:
        assert self._init_pid is not None
        self.host = f"{self.settings['identifier']}.mysql.database.azure.com"
        g2 = certificate_authority(common_name("DigiCert Global Root G2"))
        microsoft = certificate_authority(common_name("Microsoft RSA Root Certificate Authority 2017"))
        server_key, server_cert = server_certificate(microsoft, common_name(self.host), [self.host])
        self.roots = {"g2": pem(g2[1]), "microsoft": pem(microsoft[1])}
        self.other_ca = self.roots["g2"]
        store = self.path(ROOTS)
        store.mkdir(parents=True)
        (store / "DigiCert_Global_Root_G2.crt").write_text(self.roots["g2"])
        (store / "Microsoft_RSA_Root_Certificate_Authority_2017.crt").write_text(self.roots["microsoft"])
        with self.path("/etc/hosts").open("a") as hosts:
            hosts.write(f"{DB_ADDRESS} {self.host}\n")
        self._serve_over_tls(DB_ADDRESS, microsoft[1], server_key, server_cert)
        # The server as the stack creates it: slurmdbd's database, and the administrator with the stack's
        # random password (Azure's administrator may create users and grant on any database).
        self.run(
            [
                "mariadb",
                "-e",
                f"CREATE DATABASE {DATABASE}; CREATE USER 'clusterfab'@'%' IDENTIFIED BY 'Stack-Random-1';"
                " GRANT ALL PRIVILEGES ON *.* TO 'clusterfab'@'%' WITH GRANT OPTION;",
            ]
        )
        self.fake = FakeFlexibleServer(
            subscription=SUBSCRIPTION,
            resource_group=RESOURCE_GROUP,
            name=str(self.settings["identifier"]),
            host=self.host,
            client_id=CLIENT_ID,
            set_password=self._set_password,
        )
        self.net = InLabNet(self._init_pid)
        self.azure = self.net.call(lambda: AzureServer(self.fake, "127.0.0.1", AZURE_PORT))
        self._prepare_accounting()

    def _set_password(self, password: str) -> None:
        """Servers - Update of the administrator password, as the service carries it out."""
        self.run(["mariadb", "-e", f"ALTER USER 'clusterfab'@'%' IDENTIFIED BY '{sql_string(password)}'"])

    def sign_in(self, user: str, password: str) -> Any:
        """MariaDB's client over TLS, the server checked against the installed bundle by chain and name."""
        return self.run(
            [
                "mariadb",
                *("-h", self.host, "-u", user, f"-p{password}", "--ssl"),
                f"--ssl-ca={ACCOUNTING_CA_FILE}",
                "--ssl-verify-server-cert",
                *("-N", "-B", "-e", "SELECT CURRENT_USER()"),
            ],
            check=False,
        )

    def close(self) -> None:
        try:
            super().close()
        finally:
            if getattr(self, "azure", None) is not None:
                self.azure.close()


@pytest.fixture(scope="module")
def azure(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzureAccountingLab]:
    cluster = _cluster()
    catalog = load_catalog()
    files = lab_files(cluster, stack=STACK, files_dir=FILES)
    lab = AzureAccountingLab(files, golden, tmp_path_factory.mktemp("azureacctlab"))
    settings = controller_vars(cluster, catalog.slurm, stack=STACK, files_dir=FILES)[
        "slurm_controller_database"
    ]
    # The lab's stand-ins for the trust store, the metadata service and Resource Manager, and a short wait;
    # the stack sets none of them.
    azure = f"http://127.0.0.1:{AZURE_PORT}"
    lab.settings = {
        **settings,
        "ca_certificates": [f"{ROOTS}/{path.rsplit('/', 1)[1]}" for path in settings["ca_certificates"]],
        "imds_url": azure,
        "arm_url": azure,
        "retry_wait_s": 0.2,
        "attempts": 10,
    }
    try:
        lab.start()
        TIMINGS["azure_accounting_lab_start"] = dict(lab.timings.steps)
        yield lab
    finally:
        lab.close()
    assert lab.fake.violations == []
    assert lab.leftover_processes() == []


def test_the_program_gives_the_server_its_own_administrator_password_and_prints_the_host(
    azure: AzureAccountingLab,
) -> None:
    assert azure.settings["identifier"] == "clusterfab-acct-lab-lab-slurmdb"
    assert azure.endpoint == {"host": azure.host, "port": 3306}
    administrator = azure.path(ADMINISTRATOR_FILE)
    password = administrator.read_text().strip()
    assert stat.S_IMODE(administrator.stat().st_mode) == 0o600
    # Get, Update (the controller's password, not the stack's), Get: with the controller's own identity.
    assert azure.fake.passwords[:1] == [password]
    # The update is a long-running operation: the program waited for it before signing in.
    server, operation = azure.fake.path, azure.fake.operation_path
    calls = [c for c in azure.fake.calls if not c[1].startswith("/metadata/")]
    assert calls[:4] == [("GET", server), ("PATCH", server), ("GET", operation), ("GET", server)]
    assert azure.sign_in("clusterfab", password).stdout.strip() == "clusterfab@%"
    refused = azure.sign_in("clusterfab", "Stack-Random-1")
    assert refused.returncode == 1
    # Neither password is in what the program printed.
    assert password not in azure.program_output
    assert azure.storage_pass not in azure.program_output
    # The two roots, where slurmdbd.conf names the bundle, readable by slurmdbd.
    installed = azure.path(ACCOUNTING_CA_FILE)
    assert installed.read_text() == azure.roots["g2"] + azure.roots["microsoft"]
    assert stat.S_IMODE(installed.stat().st_mode) == 0o644
    conf = azure.path("/etc/slurm/slurmdbd.conf").read_text()
    assert f"StorageHost={azure.host}\n" in conf
    assert f"StorageParameters=SSL_CA={ACCOUNTING_CA_FILE}\n" in conf


def test_slurmdbds_user_signs_in_over_tls_on_its_database_alone(azure: AzureAccountingLab) -> None:
    assert azure.sign_in("slurm", azure.storage_pass).stdout.strip() == "slurm@%"
    grants = azure.run("mariadb -N -B -e \"SHOW GRANTS FOR 'slurm'@'%'\"").stdout.splitlines()
    assert [g.split(" IDENTIFIED BY ")[0] for g in grants] == [
        "GRANT USAGE ON *.* TO `slurm`@`%`",
        f"GRANT ALL PRIVILEGES ON `{DATABASE}`.* TO `slurm`@`%`",
    ]
    assert all("REQUIRE SSL" in g for g in grants[:1]), grants


def test_a_second_run_gives_the_same_administrator_password_again(azure: AzureAccountingLab) -> None:
    before = azure.path(ADMINISTRATOR_FILE).read_text()
    azure.fake.passwords.clear()
    azure.fake.calls.clear()
    again = azure.accounting()
    assert json.loads(again.stdout) == azure.endpoint
    assert azure.path(ADMINISTRATOR_FILE).read_text() == before
    assert azure.fake.passwords == [before.strip()]
    # Its own identity's token, from the metadata service, for Resource Manager; the server's four calls.
    assert [c for c in azure.fake.calls if c[1].startswith("/metadata/")] == [
        ("GET", "/metadata/instance/compute"),
        ("GET", "/metadata/identity/oauth2/token"),
    ]
    assert [method for method, path in azure.fake.calls if not path.startswith("/metadata/")] == [
        "GET",
        "PATCH",
        "GET",
        "GET",
    ]
    assert azure.sign_in("slurm", azure.storage_pass).stdout.strip() == "slurm@%"


def test_slurmdbd_keeps_the_accounting_in_the_server_over_tls_checked_against_the_roots(
    azure: AzureAccountingLab,
) -> None:
    assert azure.cluster in azure.run("sacctmgr -n -P show cluster format=cluster").stdout.split()
    assert "research" in azure.run("sacctmgr -n -P show account format=account").stdout.split()
    sessions = azure.run(
        "mariadb -N -B -e \"SELECT db FROM information_schema.processlist WHERE user='slurm'\"",
    )
    assert DATABASE in sessions.stdout.split(), sessions.stdout


def test_slurmdbd_refuses_the_server_without_the_root_it_chains_to(azure: AzureAccountingLab) -> None:
    """The DigiCert root alone does not vouch for a server certificate Microsoft's root signed: both roots
    go in the bundle (Microsoft moves servers between them)."""
    good = azure.path(ACCOUNTING_CA_FILE).read_text()
    try:
        refusal = azure.restart_slurmdbd(ca_bundle=azure.roots["g2"])
        assert refusal.startswith("error: mysql_real_connect failed: 2026 TLS/SSL error: "), refusal
    finally:
        back = azure.restart_slurmdbd(ca_bundle=good)
    assert back == ""
