"""The controller's accounting program (managed accounting) piece by piece: finding the RDS instance and
its master credentials (moto), the CA bundle, the SQL and the client's options, the retries, and what it
says when it cannot. The whole program against a real MariaDB and slurmdbd runs in
tests/slurm/test_managed_accounting_lab.py."""

from __future__ import annotations

import io
import json
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.scheduler.slurm.nodes import accounting
from clusterfab.scheduler.slurm.nodes.__main__ import main as nodes_main
from clusterfab.scheduler.slurm.nodes.accounting import AccountingError, Master
from clusterfab.scheduler.slurm.nodes.aws_rds import aws_master
from tests.tls import certificate_authority, common_name, pem

CA = pem(certificate_authority(common_name("clusterfab test"))[1]).strip()
"""A real CA certificate: the program has OpenSSL read each one."""
PASSWORD = "0123456789abcdef" * 3


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _opener(body: bytes) -> Any:
    return lambda _url: _Response(body)


def _rds_instance(identifier: str, **master: Any) -> Any:
    """An RDS for MariaDB instance in moto as the stack makes it, but for how it keeps the master password."""
    rds = boto3.client("rds", region_name="us-east-1")
    rds.create_db_instance(
        DBInstanceIdentifier=identifier,
        Engine="mariadb",
        EngineVersion="11.8",
        DBInstanceClass="db.m7g.large",
        AllocatedStorage=50,
        MasterUsername="clusterfab",
        **master,
    )
    return rds


@mock_aws
def test_the_instance_is_found_by_name_with_its_master_credentials_from_the_rds_secret() -> None:
    rds = _rds_instance("clusterfab-acct-prod-slurmdb", ManageMasterUserPassword=True)
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    master = aws_master(rds, secrets, "clusterfab-acct-prod-slurmdb")
    # moto's secret holds admin / P@55w0rd! (RDS's holds the MasterUsername and a generated password).
    assert master == Master(
        host="clusterfab-acct-prod-slurmdb.aaaaaaaaaa.us-east-1.rds.amazonaws.com",
        port=3306,
        user="admin",
        password="P@55w0rd!",
    )
    assert "P@55w0rd!" not in repr(master)


@mock_aws
def test_an_instance_without_a_managed_master_secret_is_refused_with_the_reason() -> None:
    rds = _rds_instance("hand-made", MasterUserPassword="not-managed-1")
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    with pytest.raises(AccountingError, match="keeps no master user secret: it must be created with"):
        aws_master(rds, secrets, "hand-made")


class _FakeRds:
    def __init__(self, instance: dict[str, Any]) -> None:
        self.instance = instance

    def describe_db_instances(self, **_: Any) -> dict[str, Any]:
        return {"DBInstances": [self.instance]}


class _FakeSecrets:
    def __init__(self, value: str) -> None:
        self.value = value

    def get_secret_value(self, **_: Any) -> dict[str, Any]:
        return {"SecretString": self.value}


def test_an_instance_still_being_created_has_no_endpoint_yet() -> None:
    rds = _FakeRds({"DBInstanceStatus": "creating", "MasterUserSecret": {"SecretArn": "arn"}})
    with pytest.raises(AccountingError, match=r"has no endpoint yet \(status creating\)"):
        aws_master(rds, _FakeSecrets("{}"), "db")


def test_a_secret_without_credentials_is_refused_without_showing_it() -> None:
    rds = _FakeRds(
        {"Endpoint": {"Address": "db.example", "Port": 3306}, "MasterUserSecret": {"SecretArn": "a"}}
    )
    with pytest.raises(AccountingError, match="holds no username and password") as caught:
        aws_master(rds, _FakeSecrets('{"password": "hunter2"}'), "db")
    assert "hunter2" not in str(caught.value)


def test_the_ca_bundle_is_installed_once_and_only_certificates_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "ca.pem"
    body = f"# RDS us-east-1\n{CA}\n\n{CA}\n".encode()
    assert accounting.fetch_ca_bundle("https://example/bundle.pem", str(target), opener=_opener(body)) == 2
    assert target.read_text() == f"{CA}\n{CA}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    before = target.stat().st_mtime_ns
    accounting.fetch_ca_bundle("https://example/bundle.pem", str(target), opener=_opener(body))
    assert target.stat().st_mtime_ns == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>Access Denied</html>", "holds no PEM certificate"),
        (CA.replace("MII", "MI", 1).encode(), "holds a malformed certificate"),
        (b"-" * (accounting.CA_BUNDLE_MAX + 1), "answered more than"),
    ],
    ids=["html", "malformed", "too-large"],  # the certificate is made per process: no id from its text
)
def test_anything_but_a_bundle_of_certificates_is_refused(tmp_path: Path, body: bytes, message: str) -> None:
    target = tmp_path / "ca.pem"
    with pytest.raises(AccountingError, match=message):
        accounting.fetch_ca_bundle("https://example/bundle.pem", str(target), opener=_opener(body))
    assert not target.exists()


def test_slurmdbds_user_gets_its_database_only_and_must_use_tls() -> None:
    assert accounting.user_sql(PASSWORD) == (
        "CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;\n"
        f"CREATE USER IF NOT EXISTS 'slurm'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n"
        f"ALTER USER 'slurm'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n"
        "GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'%';\n"
    )
    for bad in ("short", "0123456789ABCDEF" * 2, f"{PASSWORD}'; DROP DATABASE x; --"):
        with pytest.raises(AccountingError, match="must be the hex string"):
            accounting.user_sql(bad)


def test_the_client_options_quote_the_master_password_and_verify_the_server() -> None:
    master = Master(host="db.example", port=3306, user="admin", password='p#s"w\\d')
    assert accounting.option_file(master, "/etc/slurm/accounting-db-ca.pem") == (
        "[client]\n"
        'host="db.example"\n'
        "port=3306\n"
        'user="admin"\n'
        'password="p#s\\"w\\\\d"\n'
        "ssl\n"
        'ssl-ca="/etc/slurm/accounting-db-ca.pem"\n'
        "ssl-verify-server-cert\n"
    )


def _client(tmp_path: Path, failures: int) -> Path:
    """A stand-in for the mariadb client: fails `failures` times, then records its options and SQL."""
    script = tmp_path / "mariadb"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"count = pathlib.Path({str(tmp_path / 'count')!r})\n"
        "n = int(count.read_text()) if count.exists() else 0\n"
        "count.write_text(str(n + 1))\n"
        f"if n < {failures}:\n"
        "    sys.exit(\"ERROR 2002 (HY000): Can't connect to server on 'db.example' (115)\")\n"
        "options = sys.argv[1].split('=', 1)[1]\n"
        f"pathlib.Path({str(tmp_path / 'seen')!r}).write_text(\n"
        "    repr(sys.argv[2:]) + '\\n' + oct(pathlib.Path(options).stat().st_mode & 0o777) + '\\n'\n"
        "    + pathlib.Path(options).read_text() + sys.stdin.read())\n"
    )
    script.chmod(0o755)
    return script


def test_the_sql_is_retried_while_the_database_does_not_answer(tmp_path: Path) -> None:
    client = _client(tmp_path, failures=2)
    waits: list[float] = []
    master = Master(host="db.example", port=3306, user="admin", password="secret!")
    accounting.run_sql(
        master, "SELECT 1;\n", ca_file="/ca.pem", client=str(client), wait_s=7, sleep=waits.append
    )
    assert waits == [7, 7]
    seen = (tmp_path / "seen").read_text().splitlines()
    assert seen[0] == "['--batch', '--connect-timeout=10']"
    assert seen[1] == "0o600"
    assert 'password="secret!"' in seen
    assert seen[-1] == "SELECT 1;"
    # The option file is gone afterwards: no copy of the master password stays behind.
    assert not list(Path(tempfile.gettempdir()).glob("clusterfab-db-*"))


def test_a_database_that_never_answers_is_reported_after_the_last_attempt(tmp_path: Path) -> None:
    client = _client(tmp_path, failures=99)
    master = Master(host="db.example", port=3306, user="admin", password="secret!")
    with pytest.raises(AccountingError) as caught:
        accounting.run_sql(
            master, "SELECT 1;\n", ca_file="/ca.pem", client=str(client), attempts=3, sleep=lambda _: None
        )
    assert str(caught.value) == (
        f"{client} as admin@db.example:3306 failed 3 times: "
        "ERROR 2002 (HY000): Can't connect to server on 'db.example' (115)"
    )
    assert "secret!" not in str(caught.value)


def test_prepare_fetches_the_bundle_then_makes_the_user_and_says_where_the_database_is(
    tmp_path: Path,
) -> None:
    password = tmp_path / "slurmdbd.pass"
    password.write_text(PASSWORD + "\n")
    calls: list[tuple[str, str]] = []
    master = Master(host="db.example", port=3306, user="admin", password="x")
    endpoint = accounting.prepare(
        {"ca_bundle_url": "https://example/b.pem", "ca_file": str(tmp_path / "ca.pem")},
        str(password),
        master=lambda: master,
        opener=_opener(CA.encode()),
        sql=lambda found, sql, ca: calls.append((sql, ca)),
    )
    assert endpoint == {"host": "db.example", "port": 3306}
    user_sql = (
        "CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;\n"
        f"CREATE USER IF NOT EXISTS 'slurm'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n"
        f"ALTER USER 'slurm'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n"
        "GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'%';\n"
    )
    assert calls == [(user_sql, str(tmp_path / "ca.pem"))]


def test_the_command_needs_its_password_file_and_says_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "accounting.json"
    config.write_text(json.dumps({"cloud": "aws", "identifier": "x", "ca_bundle_url": "u", "ca_file": "f"}))
    with pytest.raises(SystemExit) as usage:
        nodes_main(["accounting", "--config", str(config)])
    assert usage.value.code == 2
    assert "accounting needs --password-file" in capsys.readouterr().err
    assert nodes_main(["accounting", "--config", str(config), "--password-file", "/nonexistent"]) == 1
    assert capsys.readouterr().err == (
        "clusterfab_slurm_nodes accounting: the accounting settings lack region\n"
    )
