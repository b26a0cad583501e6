"""End to end: managed accounting with Debian 13's real slurmdbd and MariaDB standing in for RDS, moto
standing in for RDS's and Secrets Manager's APIs, and the controller's own accounting program (the
package the stack ships, run by the chroot's python3 with its boto3).

The "RDS" instance is created in moto as the stack creates it (ManageMasterUserPassword: moto keeps the
master credentials in a Secrets Manager secret); the lab's MariaDB then plays the instance: it listens on
its own address under the endpoint name moto gives, with a server certificate for that name from a test
certificate authority, refuses unencrypted connections (require_secure_transport, as the stack's
parameter group sets it) and has the master user with moto's password. The accounting program finds the
instance, fetches the authority's bundle (here from a file: URL standing in for RDS's HTTPS trust store),
makes slurmdbd's database and user, and slurmdbd runs the rendered slurmdbd.conf with the endpoint and
`StorageParameters=SSL_CA=` filled in as the role fills them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_vars
from clusterfab.scheduler.slurm.render import ACCOUNTING_CA_FILE
from tests.factories import spec
from tests.slurm.conftest import TIMINGS
from tests.slurm.dblab import PASSWORD_FILE, ManagedDatabaseLab, lab_files, sql_string
from tests.slurm.labcloud import MOTO, InLabNet, LabMoto, client
from tests.slurm.rootfs import GoldenRootfs
from tests.tls import certificate_authority, common_name, pem, server_certificate

pytestmark = pytest.mark.slurm

STACK = "lab"
FILES = "/var/lib/clusterfab/files/accounting-lab"
DB_ADDRESS = "10.217.0.53"
"""Where the lab's "RDS" instance listens (its endpoint name resolves to it in the lab's /etc/hosts)."""
BUNDLE = "/srv/lab-truststore/bundle.pem"
"""The CA bundle the program fetches (RDS serves its regional bundle over HTTPS)."""
MASTER = "clusterfab"


def _cluster() -> Any:
    return spec(
        name="acct-lab",
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "count": 1}],
        scheduler={"kind": "slurm", "accounting": "managed"},
        teams=[{"name": "research", "max_gpus": 8, "users": ["alice"]}],
    )


class ManagedAccountingLab(ManagedDatabaseLab):
    """A lab whose accounting database is the "RDS" instance: moto's record of it, MariaDB behind it."""

    files_dir = FILES
    program_env = "AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing"
    """moto's credentials for the role's."""

    def _start_mariadb(self) -> None:
        assert self._init_pid is not None
        self.moto = LabMoto(self._init_pid)
        self.moto.start()
        self.net = InLabNet(self._init_pid)
        identifier = self.settings["identifier"]
        master = self.net.call(lambda: _create_instance(identifier))
        host = master["host"]
        ca = certificate_authority(common_name("clusterfab lab RDS Root CA"))
        server_key, server_cert = server_certificate(ca, common_name("lab rds instance"), [host])
        self.other_ca = pem(certificate_authority(common_name("someone else's CA"))[1])
        bundle = self.path(BUNDLE)
        bundle.parent.mkdir(parents=True)
        # As RDS's regional bundles: the root and, before it, something else (here another root).
        bundle.write_text(self.other_ca + pem(ca[1]))
        with self.path("/etc/hosts").open("a") as hosts:
            hosts.write(f"{DB_ADDRESS} {host}\n")
        self._serve_over_tls(DB_ADDRESS, ca[1], server_key, server_cert)
        # The master user RDS creates, as the secret moto keeps for it has it (moto's secret names the user
        # admin whatever MasterUsername says; RDS's names the MasterUsername).
        self.run(
            [
                "mariadb",
                "-e",
                f"CREATE USER '{master['username']}'@'%' IDENTIFIED BY '{sql_string(master['password'])}';"
                f" GRANT ALL PRIVILEGES ON *.* TO '{master['username']}'@'%' WITH GRANT OPTION;",
            ]
        )
        self._prepare_accounting()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if getattr(self, "moto", None) is not None:
                self.moto.stop()


def _create_instance(identifier: str) -> dict[str, Any]:
    """The RDS instance as the stack creates it; its endpoint and master password as RDS gives them."""
    rds, secretsmanager = client("rds"), client("secretsmanager")
    rds.create_db_instance(
        DBInstanceIdentifier=identifier,
        Engine="mariadb",
        EngineVersion="11.8",
        DBInstanceClass="db.m7g.large",
        AllocatedStorage=50,
        MasterUsername=MASTER,
        ManageMasterUserPassword=True,
    )
    instance = rds.describe_db_instances(DBInstanceIdentifier=identifier)["DBInstances"][0]
    secret = secretsmanager.get_secret_value(SecretId=instance["MasterUserSecret"]["SecretArn"])
    credentials = json.loads(secret["SecretString"])
    return {"host": instance["Endpoint"]["Address"], **credentials}


@pytest.fixture(scope="module")
def managed(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedAccountingLab]:
    cluster = _cluster()
    catalog = load_catalog()
    files = lab_files(cluster, stack=STACK, files_dir=FILES)
    lab = ManagedAccountingLab(files, golden, tmp_path_factory.mktemp("accountinglab"))
    settings = controller_vars(cluster, catalog.slurm, stack=STACK, files_dir=FILES)[
        "slurm_controller_database"
    ]
    # The lab's stand-ins for AWS's endpoints and a short retry; the stack sets none of them.
    lab.settings = {
        **settings,
        "ca_bundle_url": f"file://{BUNDLE}",
        "endpoint_url": MOTO,
        "attempts": 2,
        "retry_wait_s": 1,
    }
    try:
        lab.start()
        TIMINGS["accounting_lab_start"] = dict(lab.timings.steps)
        yield lab
    finally:
        lab.close()
    assert lab.leftover_processes() == []


def test_the_program_finds_the_instance_and_prints_its_endpoint(managed: ManagedAccountingLab) -> None:
    host = managed.endpoint["host"]
    assert host.startswith(f"{managed.settings['identifier']}.")
    assert host.endswith(".us-east-1.rds.amazonaws.com")
    assert managed.endpoint == {"host": host, "port": 3306}
    # The password the program used is nowhere in what it printed.
    assert managed.storage_pass not in managed.program_output


def test_slurmdbd_keeps_the_accounting_in_the_managed_database_over_verified_tls(
    managed: ManagedAccountingLab,
) -> None:
    conf = managed.path("/etc/slurm/slurmdbd.conf").read_text()
    assert f"StorageHost={managed.endpoint['host']}\n" in conf
    assert f"StorageParameters=SSL_CA={ACCOUNTING_CA_FILE}\n" in conf
    # The program installed the bundle where slurmdbd.conf names it.
    assert managed.path(ACCOUNTING_CA_FILE).read_text() == managed.path(BUNDLE).read_text()
    # The cluster and the teams' accounts went into it through slurmdbd.
    clusters = managed.run("sacctmgr -n -P show cluster format=cluster").stdout.split()
    assert managed.cluster in clusters
    assert "research" in managed.run("sacctmgr -n -P show account format=account").stdout.split()
    # slurmdbd holds its connection over TCP as the user the program made; the server takes no other
    # than TLS (require_secure_transport), and the user is made to require it too, on its database only.
    sessions = managed.run(
        "mariadb -N -B -e \"SELECT db FROM information_schema.processlist WHERE user='slurm'\"",
    ).stdout.split()
    assert "slurm_acct_db" in sessions, "slurmdbd holds no connection to its database"
    assert managed.run("mariadb -N -B -e 'SELECT @@require_secure_transport'").stdout.strip() == "1"
    grants = managed.run("mariadb -N -B -e \"SHOW GRANTS FOR 'slurm'@'%'\"").stdout.splitlines()
    assert [
        g.split(" IDENTIFIED BY ")[0] + (" REQUIRE SSL" if "REQUIRE SSL" in g else "") for g in grants
    ] == [
        "GRANT USAGE ON *.* TO `slurm`@`%` REQUIRE SSL",
        "GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO `slurm`@`%`",
    ]


def test_a_second_run_changes_nothing_and_a_new_password_is_given_to_the_user(
    managed: ManagedAccountingLab,
) -> None:
    again = managed.accounting()
    assert json.loads(again.stdout) == managed.endpoint
    # A new state disk makes a new password: the next run gives it to the user.
    fresh = secrets.token_hex(24)
    managed.path(PASSWORD_FILE).write_text(fresh + "\n")
    try:
        managed.accounting()
        check = managed.run(
            f"mariadb -h {managed.endpoint['host']} -u slurm -p{fresh} --ssl --ssl-ca={ACCOUNTING_CA_FILE}"
            " --ssl-verify-server-cert -N -B -e 'SELECT CURRENT_USER()'",
        )
        assert check.stdout.strip() == "slurm@%"
    finally:
        managed.path(PASSWORD_FILE).write_text(managed.storage_pass + "\n")
        managed.accounting()


def test_a_server_the_bundle_does_not_vouch_for_is_refused(managed: ManagedAccountingLab) -> None:
    """The program signs in as the master user only to a server its CA bundle vouches for."""
    bundle = managed.path(BUNDLE)
    good = bundle.read_text()
    bundle.write_text(managed.other_ca)
    try:
        failed = managed.accounting(check=False)
        assert failed.returncode == 1
        assert "clusterfab_slurm_nodes accounting: mariadb as admin@" in failed.stderr
        assert "certificate" in failed.stderr.lower() or "ssl" in failed.stderr.lower(), failed.stderr
    finally:
        bundle.write_text(good)
        managed.accounting()


def test_slurmdbd_refuses_a_database_its_ca_bundle_does_not_vouch_for(managed: ManagedAccountingLab) -> None:
    """slurmdbd itself checks the server against StorageParameters=SSL_CA: with a bundle of another
    authority it does not keep the accounting there."""
    ca = managed.path(ACCOUNTING_CA_FILE)
    good = ca.read_text()
    managed.restart_slurmdbd(ca_bundle=managed.other_ca)
    try:
        managed.wait_for(
            lambda: "certificate" in managed.log("slurmdbd").lower(),
            timeout=30,
            what="slurmdbd to log the certificate error",
        )
        assert managed.run("sacctmgr -n show cluster", check=False, timeout=30).returncode != 0
    finally:
        managed.restart_slurmdbd(ca_bundle=good)
    managed.wait_for(
        lambda: managed.run("sacctmgr -n show cluster", check=False, timeout=30).returncode == 0,
        timeout=60,
        what="slurmdbd back with the right bundle",
    )
